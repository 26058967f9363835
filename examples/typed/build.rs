//! Checks the `.tfn` files at build time and generates their typed modules into `OUT_DIR`.

fn main() {
    tfn_build::compile("ops/nn.tfn").unwrap();
    tfn_build::compile("ops/api.tfn").unwrap();
}
