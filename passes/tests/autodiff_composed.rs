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

// f16/bf16 gradients: values used twice and three times, a broadcast and a `where` that
// broadcasts its storage-dtype operands (their gradients are summed back).
fn exp_sin(Tensor x) -> Tensor {
    return exp(x) + sin(x)
}
fn spread(Tensor x, Tensor y) -> Tensor {
    return broadcast_to(x, [4, 5]) * y
}
fn pick(Tensor x, Tensor y) -> Tensor {
    return where(y > 0.0, x, y)
}
fn spread_twice(Tensor x, Tensor y) -> Tensor {
    return broadcast_to(broadcast_to(x, [6, 5]), [40, 6, 5]) * y
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

/// `values` rounded to `dtype` (f16 or bf16) as a tensor, or as f32 when `dtype` is f32.
fn half_tensor(dtype: tfn_ir::DType, values: &ArrayD<f64>) -> tfn_ir::Tensor {
    use tfn_ir::half::{bf16, f16};
    match dtype {
        tfn_ir::DType::F16 => tfn_ir::Tensor::F16(values.mapv(f16::from_f64)),
        tfn_ir::DType::BF16 => tfn_ir::Tensor::BF16(values.mapv(bf16::from_f64)),
        _ => tfn_ir::Tensor::F32(values.mapv(|v| v as f32)),
    }
}

fn as_f32(t: &tfn_ir::Tensor) -> ArrayD<f32> {
    match t {
        tfn_ir::Tensor::F16(a) => a.mapv(|v| v.to_f32()),
        tfn_ir::Tensor::BF16(a) => a.mapv(|v| v.to_f32()),
        tfn_ir::Tensor::F32(a) => a.clone(),
        other => panic!("not an f16, bf16 or f32 tensor: {other:?}"),
    }
}

/// The gradients of `name` for `dtype` inputs (and cotangents) holding `values` (rounded to
/// `dtype` first), by the interpreter.
fn half_vjp(
    lib: &tfn_ir::Library,
    name: &str,
    dtype: tfn_ir::DType,
    values: &[ArrayD<f64>],
    cots: &[ArrayD<f64>],
) -> Vec<ArrayD<f32>> {
    let specs: Vec<tfn_ir::ArgSpec> = values
        .iter()
        .map(|v| tfn_ir::ArgSpec::Tensor {
            dtype,
            dims: v
                .shape()
                .iter()
                .map(|&d| if d == 1 { tfn_ir::DimSpec::One } else { tfn_ir::DimSpec::Dyn })
                .collect(),
        })
        .collect();
    let instance = tfn_ir::instantiate(lib, name, &specs, &[])
        .unwrap_or_else(|e| panic!("`{name}` for {dtype}: {e}"));
    let v = vjp(lib, &instance).unwrap_or_else(|e| panic!("vjp of `{name}` for {dtype}: {e}"));
    let inputs: Vec<tfn_ir::Tensor> =
        values.iter().chain(cots).map(|a| half_tensor(dtype, a)).collect();
    let out = tfn_ir::run(&v.graph, &inputs)
        .unwrap_or_else(|e| panic!("vjp of `{name}` for {dtype} fails: {e}"));
    for g in &out {
        assert_eq!(g.dtype(), dtype, "`{name}`: a gradient has the argument's dtype");
    }
    out.iter().map(as_f32).collect()
}

/// f16 and bf16 gradients are the f32 gradient (of the same, exactly representable inputs)
/// rounded: the contributions of a value used several times add in f32 and round once, and
/// summing a broadcast gradient back (`broadcast_to`'s `sum_to`, a broadcasting `where`) sums
/// in f32.
#[test]
fn half_gradients_are_the_f32_gradients_rounded() {
    use tfn_ir::DType;
    let lib = library(SOURCE);
    let cases: &[(&str, &[&[usize]])] = &[
        ("exp_sin", &[&[64]]),
        ("cube", &[&[3, 4]]),
        ("spread", &[&[5], &[4, 5]]),
        ("pick", &[&[5], &[4, 5]]),
        ("spread_twice", &[&[6, 1], &[40, 6, 5]]),
        // (Not functions that call functions: a function's result is rounded where it
        // returns, so their f16 forward is not the f32 one rounded.)
        ("layer_norm", &[&[3, 6], &[6], &[6]]),
    ];
    for dtype in [DType::F16, DType::BF16] {
        // One ulp at 1.0, relative.
        let ulp = if dtype == DType::F16 { 1.0 / 1024.0 } else { 1.0 / 128.0 };
        for (seed, (name, shapes)) in cases.iter().enumerate() {
            let mut rng = Rng::new(seed as u64 + 70);
            // Values exactly representable in both 16-bit formats (multiples of 1/64).
            let mut grid =
                |s: &[usize]| rng.array(s, -1.5, 1.5).mapv(|v| (v * 64.0).round() / 64.0);
            let values: Vec<ArrayD<f64>> = shapes.iter().map(|s| grid(s)).collect();
            let wide: Vec<tfn_ir::Tensor> =
                values.iter().map(|v| half_tensor(DType::F32, v)).collect();
            let instance =
                tfn_ir::instantiate(&lib, name, &spec(&tensors_of(&values)), &[]).expect("lowers");
            let outs = tfn_ir::run(&instance.graph, &wide_f64(&wide)).expect("runs");
            let cots: Vec<ArrayD<f64>> = outs.iter().map(|o| grid(o.shape())).collect();
            let half = half_vjp(&lib, name, dtype, &values, &cots);
            let full = half_vjp(&lib, name, DType::F32, &values, &cots);
            for (k, (h, f)) in half.iter().zip(&full).enumerate() {
                let scale = f.iter().fold(0f32, |m, v| m.max(v.abs()));
                for (a, b) in h.iter().zip(f) {
                    let rounded =
                        as_f32(&half_tensor(dtype, &ArrayD::from_elem(IxDyn(&[]), *b as f64)))[[]];
                    let tol = ulp * b.abs() + 1e-4 * scale;
                    assert!(
                        (a - rounded).abs() <= tol,
                        "`{name}` for {dtype}, gradient {k}: {a} but the f32 gradient is {b}"
                    );
                }
            }
            // Two contributions, added in f32 and rounded once; a gradient summed back through
            // two broadcasts, not rounded between them: exactly the rounded f32 gradient.
            if ["exp_sin", "spread_twice"].contains(name) {
                let exact = half[0].iter().zip(&full[0]).all(|(a, b)| {
                    let r = half_tensor(dtype, &ArrayD::from_elem(IxDyn(&[]), *b as f64));
                    *a == as_f32(&r)[[]]
                });
                assert!(exact, "`{name}` for {dtype}: {:?} vs {:?}", half[0], full[0]);
            }
        }
    }
}

fn tensors_of(values: &[ArrayD<f64>]) -> Vec<Arg> {
    values.iter().map(|v| Arg::Tensor(v.clone())).collect()
}

fn wide_f64(ts: &[tfn_ir::Tensor]) -> Vec<tfn_ir::Tensor> {
    ts.iter().map(|t| tfn_ir::Tensor::F64(as_f32(t).mapv(f64::from))).collect()
}

/// A parameter no gradient reaches (a loop body's whole `w` beside its row `w[i]`): the
/// whole-graph VJP still returns its zeros, but the split one used across a program's pieces
/// leaves it out, with no residual, so a loop's reverse pass computes and keeps nothing the
/// size of `w` per trip.
#[test]
fn unreached_parameters_are_left_out_of_split_gradients() {
    let lib = library("fn unread(Tensor x, Tensor w, Tensor b) -> Tensor { return x * 2.0 + b }");
    let mut rng = Rng::new(5);
    let args = [
        Arg::Tensor(rng.array(&[3], -1.0, 1.0)),
        Arg::Tensor(rng.array(&[4, 3], -1.0, 1.0)),
        Arg::Tensor(rng.array(&[3], -1.0, 1.0)),
    ];
    let instance = tfn_ir::instantiate(&lib, "unread", &spec(&args), &[]).expect("lowers");
    let whole = vjp(&lib, &instance).expect("vjp");
    assert_eq!(
        (whole.differentiated.as_slice(), whole.unreached.as_slice()),
        (&[0, 1, 2][..], &[1][..])
    );
    let split =
        tfn_passes::autodiff::split_vjp(&lib, &instance.graph, &instance.regions).expect("split");
    assert_eq!(split.differentiated, [0, 2]);
    assert_eq!((split.residuals, split.backward.outputs.len()), (0, 2));
}
