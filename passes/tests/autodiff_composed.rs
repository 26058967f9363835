//! Composed functions (the spec's gelu, softmax, layer_norm, mlp), custom `grad` blocks that
//! override the derived gradient, and second-order derivatives (a VJP of a VJP).

use crate::autodiff_common;

use autodiff_common::{check, fd_error, library, run, second_order, spec, Arg, Rng};
use ndarray::{ArrayD, IxDyn};
use tfn_passes::autodiff::vjp;

/// The spec's composed functions (the one copy, `examples/nn.tfn`) and a few more.
const SOURCE: &str = concat!(
    include_str!("../../examples/nn.tfn"),
    r#"
fn softmax_loss(Tensor x) -> Tensor {
    return sum(softmax(x) * softmax(x, dim=0))
}

fn softplus(Tensor x) -> Tensor {
    return log1p(exp(x))
}
grad softplus(x) {
    x: grad * sigmoid(x)
}

// A deliberately wrong custom gradient: proves the block is used instead of the derived one.
fn twice(Tensor x) -> Tensor {
    return 2.0 * x
}
grad twice(x) {
    x: grad * 3.0
}
fn uses_twice(Tensor x, Tensor y) -> Tensor {
    return twice(x * y) + x
}

fn cube(Tensor x) -> Tensor {
    return x * x * x
}
fn tanh_of(Tensor x) -> Tensor {
    return tanh(x)
}
fn softplus_sq(Tensor x) -> Tensor {
    return softplus(x) * softplus(x)
}
fn mixed(Tensor x, Tensor y) -> Tensor {
    return sum(exp(x) * matmul(x, y), dims=[1])
}
fn join(Tensor x, Tensor y) -> Tensor {
    return concat([x, y], dim=0)
}
fn positions(Tensor x) -> Tensor {
    return cast(argmax(x), f64) + x * 0.0
}
extern op scaled(Tensor x, Int k) -> Tensor
    shape: x
    dtype: x
fn external(Tensor x) -> Tensor {
    return scaled(x, 2) * x
}

// Stepped and reversed slices, and a concat at a runtime offset, differentiated twice.
fn moved_cube(Tensor x, Tensor y) -> Tensor {
    let s = slice(x, dim=0, start=1, step=2) * slice(x, dim=0, start=-1, step=-2)
    return concat([s * s, y * y * y], dim=0)
}
"#
);

fn tensors(rng: &mut Rng, shapes: &[&[usize]]) -> Vec<Arg> {
    shapes.iter().map(|s| Arg::Tensor(rng.array(s, -1.5, 1.5))).collect()
}

#[test]
fn composed_functions_match_finite_differences() {
    let lib = library(SOURCE);
    let cases: &[(&str, &[&[usize]])] = &[
        ("relu", &[&[3, 4]]),
        ("gelu", &[&[3, 4]]),
        ("softmax", &[&[3, 5]]),
        ("softmax_loss", &[&[4, 4]]),
        ("layer_norm", &[&[3, 6], &[6], &[6]]),
        ("mlp", &[&[4, 3], &[3, 5], &[5], &[5, 2], &[2]]),
        ("softplus", &[&[3, 4]]),
        ("softplus_sq", &[&[3, 4]]),
        ("mixed", &[&[3, 3], &[3, 3]]),
    ];
    for (seed, (name, shapes)) in cases.iter().enumerate() {
        let mut rng = Rng::new(seed as u64 + 7);
        check(&lib, name, &tensors(&mut rng, shapes), 1e-6, seed as u64);
    }
}

/// The gradient of `uses_twice` with `twice`'s custom block: d/dx = 3*y + 1, d/dy = 3*x.
#[test]
fn custom_grad_blocks_win_over_derived_gradients() {
    let lib = library(SOURCE);
    let mut rng = Rng::new(3);
    let (x, y) = (rng.array(&[2, 3], -1.0, 1.0), rng.array(&[2, 3], -1.0, 1.0));
    let args = [Arg::Tensor(x.clone()), Arg::Tensor(y.clone())];
    let instance = tfn_ir::instantiate(&lib, "uses_twice", &spec(&args), &[]).expect("lowers");
    let v = vjp(&lib, &instance).expect("vjp");
    let cot = ArrayD::from_elem(IxDyn(&[2, 3]), 1.0);
    let grads = run(&v.graph, &[x.clone(), y.clone(), cot]);
    let want_dx = y.mapv(|y| 3.0 * y + 1.0);
    let want_dy = x.mapv(|x| 3.0 * x);
    assert!((&grads[0] - &want_dx).iter().all(|e| e.abs() < 1e-12), "dx {:?}", grads[0]);
    assert!((&grads[1] - &want_dy).iter().all(|e| e.abs() < 1e-12), "dy {:?}", grads[1]);

    // Called at the top level, the block is used too.
    let instance = tfn_ir::instantiate(&lib, "twice", &spec(&args[..1]), &[]).expect("lowers");
    let v = vjp(&lib, &instance).expect("vjp");
    let cot = ArrayD::from_elem(IxDyn(&[2, 3]), 1.0);
    let grads = run(&v.graph, &[x, cot]);
    assert!(grads[0].iter().all(|g| (g - 3.0).abs() < 1e-12), "{:?}", grads[0]);
}

/// Second order: the VJP graph is differentiated again with respect to the forward inputs
/// (its cotangent input held fixed), and checked against finite differences of the VJP.
#[test]
fn second_order_gradients_match_finite_differences() {
    let lib = library(SOURCE);
    for (seed, (name, shapes)) in [
        ("cube", &[&[3, 4][..]][..]),
        ("tanh_of", &[&[3, 4]]),
        ("gelu", &[&[5]]),
        ("softplus", &[&[4]]),
        ("softmax", &[&[2, 3]]),
        ("mixed", &[&[2, 2], &[2, 2]]),
        ("moved_cube", &[&[6], &[4]]),
    ]
    .into_iter()
    .enumerate()
    {
        let mut rng = Rng::new(seed as u64 + 40);
        let args = tensors(&mut rng, shapes);
        let instance = tfn_ir::instantiate(&lib, name, &spec(&args), &[]).expect("lowers");
        let first = vjp(&lib, &instance).expect("first order");
        let second = second_order(&lib, &first);
        let mut inputs: Vec<ArrayD<f64>> = args
            .iter()
            .map(|a| match a {
                Arg::Tensor(t) => t.clone(),
                Arg::Attr(_) => unreachable!("tensors only"),
            })
            .collect();
        let outs = run(&instance.graph, &inputs);
        inputs.extend(outs.iter().map(|o| rng.array(o.shape(), -1.0, 1.0)));
        let (err, at) = fd_error(&first.graph, &second, &inputs, seed as u64);
        assert!(err < 1e-5, "second order of `{name}`: error {err:e} at {at}");
    }
}

/// d²/dx² x³ = 6x exactly, as a number.
#[test]
fn second_derivative_of_cube_is_6x() {
    let lib = library(SOURCE);
    let x = ArrayD::from_shape_vec(IxDyn(&[3]), vec![-1.0, 0.5, 2.0]).expect("shape");
    let args = [Arg::Tensor(x.clone())];
    let instance = tfn_ir::instantiate(&lib, "cube", &spec(&args), &[]).expect("lowers");
    let first = vjp(&lib, &instance).expect("first");
    let second = second_order(&lib, &first);
    let ones = ArrayD::from_elem(IxDyn(&[3]), 1.0);
    // Second-order graph parameters: x, the first cotangent, the second cotangent.
    let out = run(&second.graph, &[x.clone(), ones.clone(), ones]);
    assert_eq!(second.differentiated, vec![0, 1]);
    let want = x.mapv(|x| 6.0 * x);
    assert!((&out[0] - &want).iter().all(|e| e.abs() < 1e-12), "{:?}", out[0]);
}

/// What cannot be differentiated is an error naming the op, never a wrong gradient; integer
/// paths simply carry no gradient.
#[test]
fn unsupported_gradients_are_errors() {
    let lib = library(SOURCE);
    let mut rng = Rng::new(9);
    let args = tensors(&mut rng, &[&[2, 3]]);
    let instance = tfn_ir::instantiate(&lib, "external", &spec(&args), &[]).expect("lowers");
    let err = vjp(&lib, &instance).expect_err("an extern op without a `grad` block");
    assert!(err.to_string().contains("`scaled` is not differentiable"), "{err}");
    assert_eq!(err.diagnostics()[0].code, "E0801");

    // A `concat` of items whose sizes are all runtime sizes (this used to be an error).
    let args = tensors(&mut rng, &[&[2, 3], &[4, 3]]);
    check(&lib, "join", &args, 1e-9, 2);

    let args = tensors(&mut rng, &[&[3, 3]]);
    check(&lib, "positions", &args, 1e-9, 1);
}
