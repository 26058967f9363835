//! Typed calls into `ops/nn.tfn`: `build.rs` checks the file at `cargo build` time and
//! generates `nn::Lib`, whose methods take typed `ndarray` views and return owned arrays.
//! Prints each result as `tfnc run` summarises one: dtype, shape, range, mean and the first
//! values (`tfn::cli::summary::summarize`).
//!
//! `cargo run -p tfn-example-typed`

#![deny(warnings)]

use ndarray::{array, ArrayD, IxDyn};
use tfn::cli::summary::summarize;
use tfn_example_typed::{api, nn};

/// `name: f32[2, 3] min=-0.1588 max=1.955 mean=0.4734 [-0.1588, 0, 0.3457, ...]`.
fn show(name: &str, result: impl Into<tfn::Tensor>) {
    println!("{}", summarize(name, &result.into()));
}

fn main() -> Result<(), tfn::Error> {
    let lib = nn::Lib::new()?;
    let x = array![[-1.0f32, 0.0, 0.5], [2.0, -0.5, 1.0]];

    // `fn gelu(Tensor x) -> Tensor`: any dtype in, so a `tfn::Tensor` out.
    let y = lib.gelu(x.view())?;
    show("gelu", y);

    // Keyword-only parameters with defaults live in an args struct.
    let p = lib.softmax(x.view(), nn::SoftmaxArgs { dim: 0 })?;
    show("softmax(dim=0)", p);

    // A fixed dtype in the signature gives typed arrays out.
    let w = ArrayD::<f32>::from_elem(IxDyn(&[3, 2]), 0.25);
    let b = array![0.5f32, -1.0];
    let h = lib.linear(x.view(), w.view(), b.view(), nn::LinearArgs { activate: true })?;
    show("linear(activate=true)", h);

    // Tuples come back as tuples; a required keyword-only parameter is a method parameter.
    let (mu, var) = lib.moments(x.view(), &[-1])?;
    show("moments: mean", mu);
    show("moments: variance", var);

    // `Tensor<T>` is generic over tfn's element types; `Scalar` takes ints or floats.
    let z = lib.axpy(x.view(), x.view(), nn::AxpyArgs { a: 2.into() })?;
    show("axpy(a=2)", z);
    let s = lib.scale_scalar(x.view(), 0.5)?;
    show("scale.scalar(0.5)", s);

    // No allocation of outputs; gradients by `vjp_`.
    let mut out = ArrayD::<f32>::zeros(IxDyn(&[2, 3]));
    lib.gelu_into(x.view(), out.view_mut())?;
    show("gelu_into", out);
    let ones = ArrayD::<f32>::ones(IxDyn(&[2, 3]));
    // One gradient per float tensor argument: here `x`'s.
    for dx in lib.vjp_gelu(x.view(), ones.view())? {
        show("vjp gelu: dx", dx);
    }

    let api = api::Lib::new()?;
    show("square", api.square(x.view())?);
    let (mean, max, argmax) = api.stats(x.view(), &[1])?;
    show("stats: mean", mean);
    show("stats: max", max);
    show("stats: argmax", argmax);
    println!("compiles: {}", lib.session().stats().compiles);
    Ok(())
}
