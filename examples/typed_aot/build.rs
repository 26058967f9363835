//! Compiles the signatures `src/main.rs` calls of `examples/typed/ops/nn.tfn` into an object
//! at build time, links it as a static library and generates the typed module `nn`.

fn main() {
    let xy = ["x=f32[?, ?]", "y=f32[?, ?]"];
    tfn_build::Aot::new("../typed/ops/nn.tfn")
        .function("gelu", &["x=f32[?, ?]"])
        .vjp("gelu", &["x=f32[?, ?]"])
        // One signature per value of a keyword parameter the program passes.
        .function("softmax", &["x=f32[?, ?]"])
        .function("softmax", &["x=f32[?, ?]", "dim=0"])
        .function("linear", &["x=f32[?, ?]", "w=f32[?, ?]", "b=f32[?]", "activate=true"])
        .function("moments", &["x=f32[?, ?]", "dims=[-1]"])
        .function("axpy", &[xy[0], xy[1], "a=2"])
        .function("scale.scalar", &["x=f32[?, ?]", "s=0.5"])
        .compile()
        .unwrap();
}
