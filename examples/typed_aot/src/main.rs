//! Typed calls into `examples/typed/ops/nn.tfn` compiled ahead of time: `build.rs` builds the
//! listed signatures into an object with `tfn-build`'s AOT mode and generates `nn::Lib`,
//! whose methods are those of the JIT example (`examples/typed`) — typed `ndarray` views in,
//! owned arrays out — running the object's kernels through the `tfn-rt` runtime. The binary
//! contains no compiler: nothing is compiled when it runs.
//!
//! `cargo run -p tfn-example-typed-aot`

#![deny(warnings)]

use ndarray::{array, ArrayD, IxDyn};
use tfn_example_typed_aot::{nn, summarize};

fn show(name: &str, result: impl Into<tfn_rt::Tensor>) {
    println!("{}", summarize(name, &result.into()));
}

fn main() -> Result<(), tfn_rt::Error> {
    let lib = nn::Lib::new()?;
    let x = array![[-1.0f32, 0.0, 0.5], [2.0, -0.5, 1.0]];

    // `fn gelu(Tensor x) -> Tensor`: any dtype in, so a `tfn_rt::Tensor` out.
    show("gelu", lib.gelu(x.view())?);

    // Keyword parameters: the object holds a signature per value (`dim=0` and the default).
    show("softmax(dim=0)", lib.softmax(x.view(), nn::SoftmaxArgs { dim: 0 })?);

    // A fixed dtype in the signature gives typed arrays out.
    let w = ArrayD::<f32>::from_elem(IxDyn(&[3, 2]), 0.25);
    let b = array![0.5f32, -1.0];
    let h = lib.linear(x.view(), w.view(), b.view(), nn::LinearArgs { activate: true })?;
    show("linear(activate=true)", h);

    let (mu, var) = lib.moments(x.view(), &[-1])?;
    show("moments: mean", mu);
    show("moments: variance", var);

    let z = lib.axpy(x.view(), x.view(), nn::AxpyArgs { a: 2.into() })?;
    show("axpy(a=2)", z);
    show("scale.scalar(0.5)", lib.scale_scalar(x.view(), 0.5)?);

    // No allocation of outputs; gradients by `vjp_`.
    let mut out = ArrayD::<f32>::zeros(IxDyn(&[2, 3]));
    lib.gelu_into(x.view(), out.view_mut())?;
    show("gelu_into", out);
    let ones = ArrayD::<f32>::ones(IxDyn(&[2, 3]));
    for dx in lib.vjp_gelu(x.view(), ones.view())? {
        show("vjp gelu: dx", dx);
    }

    // A signature the object was not built for is an error naming the built ones.
    let x64 = x.mapv(f64::from);
    match lib.gelu(x64.view()) {
        Err(e) => println!("gelu(f64): {e}"),
        Ok(_) => println!("gelu(f64): built"),
    }
    Ok(())
}
