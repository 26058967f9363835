//! Typed calls into `ops/nn.tfn`: `build.rs` checks the file at `cargo build` time and
//! generates `nn::Lib`, whose methods take typed `ndarray` views and return owned arrays.
//! Prints each result as `tfnc run examples/typed/ops/nn.tfn FN --arg ...` summarises it.
//!
//! `cargo run -p tfn-example-typed`

#![deny(warnings)]

use ndarray::{array, ArrayD, IxDyn};
use tfn_example_typed::{api, nn};

fn main() -> Result<(), tfn::Error> {
    let lib = nn::Lib::new()?;
    let x = array![[-1.0f32, 0.0, 0.5], [2.0, -0.5, 1.0]];

    // `fn gelu(Tensor x) -> Tensor`: any dtype in, so a `tfn::Tensor` out.
    let y = lib.gelu(x.view())?;
    println!("gelu: {y:?}");

    // Keyword-only parameters with defaults live in an args struct.
    let p = lib.softmax(x.view(), nn::SoftmaxArgs { dim: 0 })?;
    println!("softmax(dim=0): {p:?}");

    // A fixed dtype in the signature gives typed arrays out.
    let w = ArrayD::<f32>::from_elem(IxDyn(&[3, 2]), 0.25);
    let b = array![0.5f32, -1.0];
    let h = lib.linear(x.view(), w.view(), b.view(), nn::LinearArgs { activate: true })?;
    println!("linear(activate=true): {h:?}");

    // Tuples come back as tuples; a required keyword-only parameter is a method parameter.
    let (mu, var) = lib.moments(x.view(), &[-1])?;
    println!("moments: {mu:?} {var:?}");

    // `Tensor<T>` is generic over tfn's element types; `Scalar` takes ints or floats.
    let z = lib.axpy(x.view(), x.view(), nn::AxpyArgs { a: 2.into() })?;
    println!("axpy(a=2): {z:?}");
    let s = lib.scale_scalar(x.view(), 0.5)?;
    println!("scale.scalar(0.5): {s:?}");

    // No allocation of outputs; gradients by `vjp_`.
    let mut out = ArrayD::<f32>::zeros(IxDyn(&[2, 3]));
    lib.gelu_into(x.view(), out.view_mut())?;
    let ones = ArrayD::<f32>::ones(IxDyn(&[2, 3]));
    let dx = lib.vjp_gelu(x.view(), ones.view())?;
    println!("vjp gelu: {dx:?}");

    let api = api::Lib::new()?;
    println!("square: {:?}", api.square(x.view())?);
    println!("stats: {:?}", api.stats(x.view(), &[1])?);
    println!("compiles: {}", lib.session().stats().compiles);
    Ok(())
}
