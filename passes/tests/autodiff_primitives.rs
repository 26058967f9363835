//! Every differentiable primitive's gradient (from the prelude's `grad` blocks) against
//! central finite differences in f64, at random points, broadcasting included.

use crate::autodiff_common;

use autodiff_common::{check, library, Arg, Rng};

const SOURCE: &str = r#"
fn u_neg(Tensor x) -> Tensor { return -x }
fn u_abs(Tensor x) -> Tensor { return abs(x) }
fn u_sign(Tensor x) -> Tensor { return sign(x) * x }
fn u_exp(Tensor x) -> Tensor { return exp(x) }
fn u_log(Tensor x) -> Tensor { return log(x) }
fn u_sqrt(Tensor x) -> Tensor { return sqrt(x) }
fn u_rsqrt(Tensor x) -> Tensor { return rsqrt(x) }
fn u_tanh(Tensor x) -> Tensor { return tanh(x) }
fn u_sigmoid(Tensor x) -> Tensor { return sigmoid(x) }
fn u_sin(Tensor x) -> Tensor { return sin(x) }
fn u_cos(Tensor x) -> Tensor { return cos(x) }
fn u_erf(Tensor x) -> Tensor { return erf(x) }
fn u_floor(Tensor x) -> Tensor { return floor(x) + x }
fn u_ceil(Tensor x) -> Tensor { return ceil(x) * x }
fn u_round(Tensor x) -> Tensor { return round(x) * x }
fn u_reciprocal(Tensor x) -> Tensor { return reciprocal(x) }
fn u_log1p(Tensor x) -> Tensor { return log1p(x) }
fn u_expm1(Tensor x) -> Tensor { return expm1(x) }

fn b_add(Tensor x, Tensor y) -> Tensor { return x + y }
fn b_sub(Tensor x, Tensor y) -> Tensor { return x - y }
fn b_mul(Tensor x, Tensor y) -> Tensor { return x * y }
fn b_div(Tensor x, Tensor y) -> Tensor { return x / y }
fn b_pow(Tensor x, Tensor y) -> Tensor { return x ** y }
fn b_maximum(Tensor x, Tensor y) -> Tensor { return maximum(x, y) }
fn b_minimum(Tensor x, Tensor y) -> Tensor { return minimum(x, y) }
fn b_where(Tensor x, Tensor y) -> Tensor { return where(x > y, x * y, y - x) }
fn s_scalars(Tensor x) -> Tensor { return (2.0 - x) * 3.0 / 4.0 + x ** 3 + 2 ** x }
fn s_pow_scalar(Tensor x, Float p) -> Tensor { return x ** p }
fn c_cast(Tensor x) -> Tensor { return cast(cast(x, f32), f64) * x }

fn r_sum(Tensor x) -> Tensor { return sum(x, dims=[1]) }
fn r_sum_all(Tensor x) -> Tensor { return sum(x * x) }
fn r_sum_keep(Tensor x) -> Tensor { return sum(x, dims=[0, 2], keepdim=true) * x }
fn r_mean(Tensor x) -> Tensor { return mean(x, dims=[-1]) }
fn r_mean_keep(Tensor x) -> Tensor { return x - mean(x, dims=[0], keepdim=true) }
fn r_max(Tensor x) -> Tensor { return max(x, dims=[1]) }
fn r_min(Tensor x) -> Tensor { return min(x, dims=[0, 1], keepdim=true) * x }
fn r_prod(Tensor x) -> Tensor { return prod(x, dims=[1]) }

fn m_matmul(Tensor a, Tensor b) -> Tensor { return matmul(a, b) }

fn s_reshape(Tensor x) -> Tensor { return reshape(x, [-1]) * reshape(x, [-1]) }
fn s_transpose(Tensor x, Tensor y) -> Tensor { return transpose(x, [2, 0, 1]) * y }
fn s_transpose_rev(Tensor x) -> Tensor { return transpose(x) * sum(x) }
fn s_swap(Tensor x) -> Tensor { return transpose.swap(x, 0, 1) }
fn s_broadcast(Tensor x) -> Tensor { return broadcast_to(x, [2, 3, 4]) * broadcast_to(x, [2, 3, 4]) }
fn s_unsqueeze(Tensor x) -> Tensor { return unsqueeze(x, 1) * unsqueeze(x, 0) }
fn s_squeeze(Tensor x) -> Tensor { return squeeze(x) * 2.0 }
fn s_concat(Tensor x, Tensor y) -> Tensor { return concat([x * x, unsqueeze(y, 0)], dim=0) }
fn s_slice(Tensor x) -> Tensor {
    let a = slice(x, dim=1, start=1, end=3)
    let b = slice(x, dim=1, start=-2)
    return sum(a * a, dims=[1]) * sum(b, dims=[1]) + sum(slice(x, dim=0, start=0, end=1))
}
fn s_slice_steps(Tensor x) -> Tensor {
    let a = slice(x, dim=1, start=-1, step=-2)
    let b = slice(x, dim=0, start=1, end=4, step=2)
    return sum(a * a, dims=[1]) + sum(b * b * b)
}
fn s_slice_step_vector(Tensor x) -> Tensor { return slice(x, dim=0, step=3) * slice(x, dim=0, start=-1, end=-8, step=-3) }
fn s_concat_runtime(Tensor x, Tensor y, Tensor z) -> Tensor {
    return concat([x, y * y, z], dim=1) * concat([z, x, y], dim=1)
}
fn s_concat_vectors(Tensor x, Tensor y) -> Tensor { return concat([x * x, y], dim=0) * concat([y, x], dim=0) }
"#;

/// (function, tensor shapes, input range, tolerance)
type Case = (&'static str, &'static [&'static [usize]], (f64, f64), f64);

const CASES: &[Case] = &[
    ("u_neg", &[&[3, 4]], (-2.0, 2.0), 1e-6),
    ("u_abs", &[&[3, 4]], (-2.0, 2.0), 1e-6),
    ("u_sign", &[&[3, 4]], (-2.0, 2.0), 1e-6),
    ("u_exp", &[&[3, 4]], (-2.0, 2.0), 1e-6),
    ("u_log", &[&[3, 4]], (0.5, 3.0), 1e-6),
    ("u_sqrt", &[&[3, 4]], (0.5, 3.0), 1e-6),
    ("u_rsqrt", &[&[3, 4]], (0.5, 3.0), 1e-6),
    ("u_tanh", &[&[3, 4]], (-2.0, 2.0), 1e-6),
    ("u_sigmoid", &[&[3, 4]], (-3.0, 3.0), 1e-6),
    ("u_sin", &[&[3, 4]], (-3.0, 3.0), 1e-6),
    ("u_cos", &[&[3, 4]], (-3.0, 3.0), 1e-6),
    ("u_erf", &[&[3, 4]], (-2.0, 2.0), 1e-6),
    ("u_floor", &[&[3, 4]], (-2.0, 2.0), 1e-6),
    ("u_ceil", &[&[3, 4]], (-2.0, 2.0), 1e-6),
    ("u_round", &[&[3, 4]], (-2.0, 2.0), 1e-6),
    ("u_reciprocal", &[&[3, 4]], (0.5, 3.0), 1e-6),
    ("u_log1p", &[&[3, 4]], (-0.5, 3.0), 1e-6),
    ("u_expm1", &[&[3, 4]], (-2.0, 2.0), 1e-6),
    ("b_add", &[&[3, 4], &[4]], (-2.0, 2.0), 1e-6),
    ("b_sub", &[&[3, 1], &[1, 4]], (-2.0, 2.0), 1e-6),
    ("b_mul", &[&[2, 3, 4], &[3, 1]], (-2.0, 2.0), 1e-6),
    ("b_div", &[&[3, 4], &[4]], (0.5, 2.0), 1e-6),
    ("b_pow", &[&[3, 4], &[3, 1]], (0.5, 2.0), 1e-6),
    ("b_maximum", &[&[3, 4], &[4]], (-2.0, 2.0), 1e-6),
    ("b_minimum", &[&[3, 4], &[3, 4]], (-2.0, 2.0), 1e-6),
    ("b_where", &[&[3, 4], &[1, 4]], (-2.0, 2.0), 1e-6),
    ("s_scalars", &[&[3, 4]], (-2.0, 2.0), 1e-6),
    ("c_cast", &[&[3, 4]], (-2.0, 2.0), 0.1),
    ("r_sum", &[&[3, 4]], (-2.0, 2.0), 1e-6),
    ("r_sum_all", &[&[3, 4]], (-2.0, 2.0), 1e-6),
    ("r_sum_keep", &[&[2, 3, 4]], (-2.0, 2.0), 1e-6),
    ("r_mean", &[&[3, 4]], (-2.0, 2.0), 1e-6),
    ("r_mean_keep", &[&[3, 4]], (-2.0, 2.0), 1e-6),
    ("r_max", &[&[3, 4]], (-2.0, 2.0), 1e-6),
    ("r_min", &[&[3, 4]], (-2.0, 2.0), 1e-6),
    ("r_prod", &[&[3, 4]], (0.5, 2.0), 1e-6),
    ("m_matmul", &[&[3, 4], &[4, 5]], (-2.0, 2.0), 1e-6),
    ("m_matmul", &[&[2, 3, 4], &[4, 5]], (-2.0, 2.0), 1e-6),
    ("m_matmul", &[&[2, 1, 3, 4], &[3, 4, 2]], (-2.0, 2.0), 1e-6),
    ("m_matmul", &[&[4], &[4, 5]], (-2.0, 2.0), 1e-6),
    ("m_matmul", &[&[3, 4], &[4]], (-2.0, 2.0), 1e-6),
    ("s_reshape", &[&[3, 4]], (-2.0, 2.0), 1e-6),
    ("s_transpose", &[&[2, 3, 4], &[4, 2, 3]], (-2.0, 2.0), 1e-6),
    ("s_transpose_rev", &[&[2, 3, 4]], (-2.0, 2.0), 1e-6),
    ("s_swap", &[&[3, 4]], (-2.0, 2.0), 1e-6),
    ("s_broadcast", &[&[3, 1]], (-2.0, 2.0), 1e-6),
    ("s_unsqueeze", &[&[3]], (-2.0, 2.0), 1e-6),
    ("s_squeeze", &[&[3, 1, 4]], (-2.0, 2.0), 1e-6),
    ("s_concat", &[&[2, 4], &[4]], (-2.0, 2.0), 1e-6),
    ("s_slice", &[&[3, 5]], (-2.0, 2.0), 1e-6),
    ("s_slice_steps", &[&[5, 6]], (-2.0, 2.0), 1e-6),
    ("s_slice_step_vector", &[&[7]], (-2.0, 2.0), 1e-6),
    ("s_concat_runtime", &[&[2, 3], &[2, 2], &[2, 4]], (-2.0, 2.0), 1e-6),
    ("s_concat_vectors", &[&[3], &[4]], (-2.0, 2.0), 1e-6),
];

#[test]
fn primitive_gradients_match_finite_differences() {
    let lib = library(SOURCE);
    for (seed, (name, shapes, (lo, hi), tol)) in CASES.iter().enumerate() {
        let mut rng = Rng::new(seed as u64 + 1);
        let args: Vec<Arg> = shapes.iter().map(|s| Arg::Tensor(rng.array(s, *lo, *hi))).collect();
        check(&lib, name, &args, *tol, seed as u64);
    }
}

#[test]
fn scalar_exponents_are_attributes() {
    let lib = library(SOURCE);
    for (i, p) in [2.0, 0.5, -1.5].into_iter().enumerate() {
        let mut rng = Rng::new(100 + i as u64);
        let args = [Arg::Tensor(rng.array(&[3, 4], 0.5, 2.0)), Arg::Attr(tfn_ir::Attr::Float(p))];
        check(&lib, "s_pow_scalar", &args, 1e-6, i as u64);
    }
}
