#!/usr/bin/env python3
"""Generates the `run` file tests: `tests/cases/run/*.tfn` and their `.npy` inputs and
expected outputs, computed independently with NumPy (`nnref.py`).

    pip install numpy && python3 tests/tools/gen_run_cases.py

The tests themselves never need Python: the generated files are checked in. Run this again
after changing a case here, and check the diff of `tests/cases/run/`.
"""

import numpy as np

import nnref as ref
from conv_cases import conv_runs
from random_cases import random_run
from casegen import DT, Case, f32, f64, normal, rng, uniform, write_all

F32, F64, I32, I64 = np.float32, np.float64, np.int32, np.int64

SPEC_NN = """
fn relu(Tensor x) -> Tensor {
    return maximum(x, 0.0)
}

fn gelu(Tensor x) -> Tensor {
    let inner = 0.7978845608 * (x + 0.044715 * x * x * x)
    return 0.5 * x * (1.0 + tanh(inner))
}

fn linear(Tensor x, Tensor w, Tensor b, *, Bool activate = false) -> Tensor {
    let y = matmul(x, w) + b
    if activate {
        return relu(y)
    }
    return y
}

fn softmax(Tensor x, *, Int dim = -1) -> Tensor {
    let e = exp(x - max(x, dims=[dim], keepdim=true))
    return e / sum(e, dims=[dim], keepdim=true)
}

fn layer_norm(Tensor x, Tensor gamma, Tensor beta, *, Float eps = 1e-5) -> Tensor {
    let mu = mean(x, dims=[-1], keepdim=true)
    let xc = x - mu
    let var = mean(xc * xc, dims=[-1], keepdim=true)
    return xc * rsqrt(var + eps) * gamma + beta
}

fn moments(Tensor x, *, Int[] dims) -> (Tensor, Tensor) {
    let mu = mean(x, dims=dims, keepdim=true)
    let d = x - mu
    return (mu, mean(d * d, dims=dims, keepdim=true))
}

fn axpy<T: {f32, f64}>(Tensor<T> x, Tensor<T> y, *, Scalar a = 1) -> Tensor<T> {
    return a * x + y
}

fn mlp(Tensor x, Tensor w1, Tensor b1, Tensor w2, Tensor b2) -> Tensor {
    let h = gelu(linear(x, w1, b1))
    let (m, v) = moments(h, dims=[-1])
    return linear((h - m) * rsqrt(v + 1e-5), w2, b2)
}

fn softplus(Tensor x) -> Tensor {
    return log1p(exp(x))
}
grad softplus(x) {
    x: grad * sigmoid(x)
}
"""


def cast(a, dtype):
    return np.asarray(a).astype(dtype)


def spec_nn():
    r = rng(1)
    c = Case("run", "spec_nn", "Every composed function of spec/language.md, on both dtypes, with\n"
             "default and non-default attributes.", SPEC_NN)
    # relu: zeros and negatives, rank 0, size 0, f64.
    x = f32([[-2.0, -0.0, 0.0, 1.5], [3.0, -0.25, 0.5, -7.0], [0.125, 2.0, -1.0, 4.0]])
    c.run("relu", "relu_f32", {"x": x}, [cast(ref.relu(x), F32)])
    x = normal(r, [5], F64)
    c.run("relu", "relu_f64", {"x": x}, [ref.relu(x)])
    x = f32(-3.5)
    c.run("relu", "relu_rank0", {"x": x}, [f32(0.0)])
    x = np.zeros((0, 3), F32)
    c.run("relu", "relu_empty", {"x": x}, [x])
    # gelu
    x = uniform(r, [2, 5], -4, 4)
    c.run("gelu", "gelu_f32", {"x": x}, [cast(ref.gelu(f64(x)), F32)])
    x = uniform(r, [7], -5, 5, F64)
    c.run("gelu", "gelu_f64", {"x": x}, [ref.gelu(x)])
    # linear, with the static `if` both ways, and a batched input
    x, w, b = normal(r, [3, 4]), normal(r, [4, 5]), normal(r, [5])
    c.run("linear", "linear", {"x": x, "w": w, "b": b}, [cast(ref.linear(f64(x), f64(w), f64(b)), F32)])
    c.run("linear", "linear_activate", {"x": x, "w": w, "b": b, "activate": True},
          [cast(ref.linear(f64(x), f64(w), f64(b), True), F32)])
    c.run("linear", "linear_no_activate", {"x": x, "w": w, "b": b, "activate": False},
          [cast(ref.linear(f64(x), f64(w), f64(b)), F32)])
    xb = normal(r, [2, 3, 4])
    c.run("linear", "linear_batched", {"x": xb, "w": w, "b": b, "activate": True},
          [cast(ref.linear(f64(xb), f64(w), f64(b), True), F32)])
    # softmax over the default (last), first and a middle axis
    x = normal(r, [3, 4], scale=3.0)
    c.run("softmax", "softmax_default", {"x": x}, [cast(ref.softmax(f64(x)), F32)])
    c.run("softmax", "softmax_dim0", {"x": x, "dim": 0}, [cast(ref.softmax(f64(x), 0), F32)])
    x3 = normal(r, [2, 3, 4], F64, scale=3.0)
    c.run("softmax", "softmax_dim1_f64", {"x": x3, "dim": 1}, [ref.softmax(x3, 1)])
    c.run("softmax", "softmax_dim_neg2", {"x": x3, "dim": -2}, [ref.softmax(x3, -2)])
    # large logits: the max subtraction must keep this finite
    x = f32([[1000.0, 1001.0, 999.0]])
    c.run("softmax", "softmax_large", {"x": x}, [cast(ref.softmax(f64(x) - 1000.0), F32)])
    # layer_norm, default and non-default eps
    x, g, b = normal(r, [2, 3, 6]), normal(r, [6]), normal(r, [6])
    c.run("layer_norm", "layer_norm", {"x": x, "gamma": g, "beta": b},
          [cast(ref.layer_norm(f64(x), f64(g), f64(b)), F32)])
    c.run("layer_norm", "layer_norm_eps", {"x": x, "gamma": g, "beta": b, "eps": 0.5},
          [cast(ref.layer_norm(f64(x), f64(g), f64(b), 0.5), F32)])
    x, g, b = normal(r, [4, 5], F64), normal(r, [5], F64), normal(r, [5], F64)
    c.run("layer_norm", "layer_norm_f64", {"x": x, "gamma": g, "beta": b}, [ref.layer_norm(x, g, b)])
    # moments: a tuple, two outputs
    x = normal(r, [3, 4, 5])
    for label, dims in [("moments_last", [-1]), ("moments_outer", [0, 2]), ("moments_all", [0, 1, 2])]:
        mu, var = ref.moments(f64(x), dims)
        c.run("moments", label, {"x": x, "dims": dims}, [cast(mu, F32), cast(var, F32)])
    # axpy: f32 and f64, default `a`, an int `a`, a float `a`, broadcasting
    x, y = normal(r, [6]), normal(r, [6])
    c.run("axpy", "axpy_default", {"x": x, "y": y}, [cast(f64(x) + f64(y), F32)])
    c.run("axpy", "axpy_f32_float", {"x": x, "y": y, "a": 2.5}, [cast(2.5 * f64(x) + f64(y), F32)])
    x, y = normal(r, [2, 3], F64), normal(r, [2, 3], F64)
    c.run("axpy", "axpy_f64_int", {"x": x, "y": y, "a": -3}, [-3 * x + y])
    c.run("axpy", "axpy_f64_float", {"x": x, "y": y, "a": 0.5}, [0.5 * x + y])
    x, y = normal(r, [3, 1], F64), normal(r, [1, 4], F64)
    c.run("axpy", "axpy_broadcast", {"x": x, "y": y, "a": 2}, [2 * x + y])
    # mlp: everything together
    args = {"x": normal(r, [4, 8]), "w1": normal(r, [8, 16], scale=0.5), "b1": normal(r, [16]),
            "w2": normal(r, [16, 3], scale=0.5), "b2": normal(r, [3])}
    c.run("mlp", "mlp", args, [cast(ref.mlp(*(f64(v) for v in args.values())), F32)])
    args64 = {k: f64(v) for k, v in args.items()}
    c.run("mlp", "mlp_f64", args64, [ref.mlp(*args64.values())])
    # softplus (custom grad; the forward is the body)
    x = uniform(r, [6], -6, 6)
    c.run("softplus", "softplus_f32", {"x": x}, [cast(ref.softplus(f64(x)), F32)])
    x = uniform(r, [2, 2], -3, 3, F64)
    c.run("softplus", "softplus_f64", {"x": x}, [ref.softplus(x)])
    return c


def broadcasting():
    r = rng(2)
    c = Case("run", "broadcasting", "NumPy broadcasting: size-1 axes, rank 0, size-0 axes, rank\n"
             "extension, int dtypes; a literal keeps the tensor's dtype.", """
fn add2(Tensor x, Tensor y) -> Tensor {
    return x + y
}

fn mul2(Tensor x, Tensor y) -> Tensor {
    return x * y
}

fn affine(Tensor x, Tensor s) -> Tensor {
    return x * s + 1.0
}

fn int_affine(Tensor x, Tensor s) -> Tensor {
    return x * s + 1
}
""")
    cases = [
        ("col_row", [3, 1], [1, 4]),
        ("rank0_left", [], [2, 3]),
        ("rank0_right", [2, 3], []),
        ("rank0_both", [], []),
        ("size0", [0, 3], [3]),
        ("size0_ones", [0, 3], [1, 1]),
        ("rank_extend", [2, 1, 3], [4, 1]),
        ("one_vs_many", [1], [5]),
        ("same", [2, 3], [2, 3]),
    ]
    for label, xs, ys in cases:
        x, y = normal(r, xs), normal(r, ys)
        c.run("add2", f"add_{label}", {"x": x, "y": y}, [cast(f64(x) + f64(y), F32)])
        c.run("mul2", f"mul_{label}", {"x": x, "y": y}, [cast(f64(x) * f64(y), F32)])
    x, s = normal(r, [2, 1, 4], F64), normal(r, [3, 1], F64)
    c.run("affine", "affine_f64", {"x": x, "s": s}, [x * s + 1.0])
    x, s = f32(normal(r, [4])), f32(2.0)
    c.run("affine", "affine_rank0_scale", {"x": x, "s": s}, [cast(f64(x) * 2.0 + 1.0, F32)])
    x, s = r.integers(-9, 9, [3, 1]).astype(I32), r.integers(-9, 9, [4]).astype(I32)
    c.run("int_affine", "int_affine_i32", {"x": x, "s": s}, [x * s + 1])
    x, s = r.integers(-9, 9, [2, 3]).astype(I64), np.array(3, I64)
    c.run("int_affine", "int_affine_i64", {"x": x, "s": s}, [x * s + 1])
    return c


def reductions():
    r = rng(3)
    c = Case("run", "reductions", "sum/mean/max/min/prod over negative axes, several axes, all axes\n"
             "(`dims=[]`), keepdim; argmax; int dtypes; a size-0 sum.", """
fn sum_of(Tensor x, *, Int[] dims = [], Bool keepdim = false) -> Tensor {
    return sum(x, dims=dims, keepdim=keepdim)
}

fn mean_of(Tensor x, *, Int[] dims = [], Bool keepdim = false) -> Tensor {
    return mean(x, dims=dims, keepdim=keepdim)
}

fn max_of(Tensor x, *, Int[] dims = [], Bool keepdim = false) -> Tensor {
    return max(x, dims=dims, keepdim=keepdim)
}

fn min_of(Tensor x, *, Int[] dims = [], Bool keepdim = false) -> Tensor {
    return min(x, dims=dims, keepdim=keepdim)
}

fn prod_of(Tensor x, *, Int[] dims = [], Bool keepdim = false) -> Tensor {
    return prod(x, dims=dims, keepdim=keepdim)
}

fn argmax_of(Tensor x, *, Int dim = -1, Bool keepdim = false) -> Tensor {
    return argmax(x, dim=dim, keepdim=keepdim)
}

fn stats(Tensor x) -> (Tensor, Tensor, Tensor) {
    return (sum(x, dims=[1]), max(x, dims=[-1], keepdim=true), mean(x))
}
""")
    x = normal(r, [2, 3, 4])
    xd = f64(x)
    c.run("sum_of", "sum_last", {"x": x, "dims": [-1]}, [cast(xd.sum(-1), F32)])
    c.run("sum_of", "sum_outer_keep", {"x": x, "dims": [0, 2], "keepdim": True},
          [cast(xd.sum((0, 2), keepdims=True), F32)])
    c.run("sum_of", "sum_all", {"x": x}, [cast(xd.sum(), F32)])
    c.run("sum_of", "sum_all_keep", {"x": x, "keepdim": True}, [cast(xd.sum(keepdims=True), F32)])
    c.run("mean_of", "mean_mid", {"x": x, "dims": [1]}, [cast(xd.mean(1), F32)])
    c.run("mean_of", "mean_neg_keep", {"x": x, "dims": [-3, -1], "keepdim": True},
          [cast(xd.mean((0, 2), keepdims=True), F32)])
    c.run("max_of", "max_neg2_keep", {"x": x, "dims": [-2], "keepdim": True}, [x.max(1, keepdims=True)])
    c.run("max_of", "max_all", {"x": x}, [x.max()])
    c.run("min_of", "min_first", {"x": x, "dims": [0]}, [x.min(0)])
    p = uniform(r, [3, 4], 0.5, 1.5)
    c.run("prod_of", "prod_last", {"x": p, "dims": [1]}, [cast(f64(p).prod(1), F32)])
    xi = r.integers(-20, 20, [3, 4]).astype(I32)
    c.run("sum_of", "sum_i32", {"x": xi, "dims": [0]}, [xi.sum(0).astype(I32)])
    c.run("prod_of", "prod_i32", {"x": xi[:, :2] % 5, "dims": [1]}, [(xi[:, :2] % 5).prod(1).astype(I32)])
    xl = r.integers(-1000, 1000, [2, 5]).astype(I64)
    c.run("max_of", "max_i64", {"x": xl, "dims": [-1]}, [xl.max(-1)])
    c.run("min_of", "min_i64_keep", {"x": xl, "dims": [0], "keepdim": True}, [xl.min(0, keepdims=True)])
    xf = normal(r, [3, 5], F64)
    c.run("sum_of", "sum_f64", {"x": xf, "dims": [1]}, [xf.sum(1)])
    c.run("argmax_of", "argmax_default", {"x": x}, [x.argmax(-1).astype(I64)])
    c.run("argmax_of", "argmax_dim0_keep", {"x": x, "dim": 0, "keepdim": True},
          [np.expand_dims(x.argmax(0), 0).astype(I64)])
    c.run("argmax_of", "argmax_i32", {"x": xi, "dim": 1}, [xi.argmax(1).astype(I64)])
    e = np.zeros((0, 3), F32)
    c.run("sum_of", "sum_size0", {"x": e, "dims": [0]}, [np.zeros(3, F32)])
    s = normal(r, [2, 3])
    sd = f64(s)
    c.run("stats", "stats", {"x": s}, [cast(sd.sum(1), F32), s.max(-1, keepdims=True), cast(sd.mean(), F32)])
    return c


def matmul():
    r = rng(4)
    c = Case("run", "matmul", "matmul with NumPy semantics: 2-D, batched, broadcast batch axes,\n"
             "1-D operands, ints.", """
fn mm(Tensor a, Tensor b) -> Tensor {
    return matmul(a, b)
}
""")
    shapes = [
        ("2d", [3, 4], [4, 5], F32),
        ("batched", [2, 3, 4], [2, 4, 5], F32),
        ("batch_left", [2, 3, 4], [4, 5], F32),
        ("batch_right", [3, 4], [2, 4, 5], F32),
        ("batch_broadcast", [1, 3, 4], [2, 4, 5], F32),
        ("batch_4d_f64", [2, 1, 3, 4], [3, 4, 2], F64),
        ("vec_mat", [4], [4, 5], F32),
        ("mat_vec", [3, 4], [4], F32),
        ("vec_vec", [4], [4], F64),
        ("inner_size1", [3, 1], [1, 2], F32),
    ]
    for label, sa, sb, dt in shapes:
        a, b = normal(r, sa, dt), normal(r, sb, dt)
        c.run("mm", label, {"a": a, "b": b}, [cast(np.matmul(f64(a), f64(b)), dt)])
    a, b = r.integers(-5, 5, [2, 3]).astype(I32), r.integers(-5, 5, [3, 2]).astype(I32)
    c.run("mm", "int32", {"a": a, "b": b}, [(a @ b).astype(I32)])
    a, b = r.integers(-5, 5, [2, 2, 3]).astype(I64), r.integers(-5, 5, [3, 4]).astype(I64)
    c.run("mm", "int64_batched", {"a": a, "b": b}, [(a @ b).astype(I64)])
    return c


def shape_ops():
    r = rng(5)
    c = Case("run", "shape_ops", "reshape (with -1), transpose (reversed, permuted, swapped),\n"
             "unsqueeze/squeeze (negative axes), concat, slice (negative start, step),\n"
             "broadcast_to, and the creation ops.", """
fn flat_pairs(Tensor x) -> Tensor {
    return reshape(x, [-1, 2])
}

fn mid_auto(Tensor x) -> Tensor {
    return reshape(x, [2, -1, 3])
}

fn reversed(Tensor x) -> Tensor {
    return transpose(x)
}

fn permuted(Tensor x, *, Int[] perm) -> Tensor {
    return transpose(x, perm)
}

fn swapped(Tensor x) -> Tensor {
    return transpose(x, 0, -1)
}

fn unsqueezed(Tensor x, *, Int dim) -> Tensor {
    return unsqueeze(x, dim)
}

fn squeezed(Tensor x) -> Tensor {
    return squeeze(x)
}

fn squeezed_at(Tensor x, *, Int[] dims) -> Tensor {
    return squeeze(x, dims=dims)
}

fn joined(Tensor x, Tensor y, *, Int dim = 0) -> Tensor {
    return concat([x, y], dim=dim)
}

fn joined3(Tensor x, Tensor y, Tensor z) -> Tensor {
    return concat([x, y, z], dim=-1)
}

fn sliced(Tensor x, *, Int dim, Int start = 0, Int end = 9223372036854775807, Int step = 1) -> Tensor {
    return slice(x, dim=dim, start=start, end=end, step=step)
}

fn widened(Tensor x) -> Tensor {
    return broadcast_to(x, [2, 3, 4])
}

fn filled() -> Tensor {
    return full([2, 3], 1.5)
}

fn filled_as(Tensor x) -> (Tensor, Tensor, Tensor) {
    return (zeros_like(x), ones_like(x), full_like(x, 2.5))
}

fn filled_i32() -> Tensor {
    return full([4], 7, dtype=i32)
}

fn round_trip(Tensor x) -> Tensor {
    return reshape(transpose(reshape(x, [-1, 4])), [2, -1])
}
""")
    x = normal(r, [3, 4])
    c.run("flat_pairs", "reshape_auto", {"x": x}, [x.reshape(-1, 2)])
    x12 = np.arange(12, dtype=I32).reshape(3, 4)
    c.run("mid_auto", "reshape_mid_i32", {"x": x12}, [x12.reshape(2, -1, 3)])
    x3 = normal(r, [2, 3, 4])
    c.run("reversed", "transpose_default", {"x": x3}, [x3.transpose()])
    c.run("permuted", "transpose_perm", {"x": x3, "perm": [1, 0, 2]}, [x3.transpose(1, 0, 2)])
    c.run("permuted", "transpose_perm_cycle", {"x": x3, "perm": [2, 0, 1]}, [x3.transpose(2, 0, 1)])
    c.run("swapped", "transpose_swap", {"x": x3}, [np.swapaxes(x3, 0, -1)])
    c.run("unsqueezed", "unsqueeze_front", {"x": x, "dim": 0}, [np.expand_dims(x, 0)])
    c.run("unsqueezed", "unsqueeze_last", {"x": x, "dim": -1}, [np.expand_dims(x, -1)])
    c.run("unsqueezed", "unsqueeze_mid", {"x": x, "dim": 1}, [np.expand_dims(x, 1)])
    xs = normal(r, [1, 3, 1, 2])
    c.run("squeezed", "squeeze_all", {"x": xs}, [xs.squeeze()])
    c.run("squeezed_at", "squeeze_neg", {"x": xs, "dims": [-2]}, [xs.squeeze(-2)])
    a, b = normal(r, [2, 3]), normal(r, [2, 2])
    c.run("joined", "concat_dim1", {"x": a, "y": b, "dim": 1}, [np.concatenate([a, b], 1)])
    a2 = normal(r, [1, 3])
    c.run("joined", "concat_dim0", {"x": a, "y": a2}, [np.concatenate([a, a2], 0)])
    bi, bj = np.array([True, False]), np.array([False])
    c.run("joined", "concat_bool", {"x": bi, "y": bj}, [np.concatenate([bi, bj])])
    z = normal(r, [2, 1])
    c.run("joined3", "concat_three", {"x": a, "y": b, "z": z}, [np.concatenate([a, b, z], -1)])
    x6 = normal(r, [4, 6])
    c.run("sliced", "slice_neg_start", {"x": x6, "dim": 1, "start": -3}, [x6[:, -3:]])
    c.run("sliced", "slice_range", {"x": x6, "dim": 0, "start": 1, "end": 3}, [x6[1:3]])
    c.run("sliced", "slice_step", {"x": x6, "dim": -1, "start": 0, "end": -1, "step": 2}, [x6[:, 0:-1:2]])
    c.run("sliced", "slice_clamped", {"x": x6, "dim": 0, "start": -10, "end": 100}, [x6[-10:100]])
    c.run("sliced", "slice_empty", {"x": x6, "dim": 1, "start": 4, "end": 2}, [x6[:, 4:2]])
    xb = normal(r, [3, 1])
    c.run("widened", "broadcast_to", {"x": xb}, [np.broadcast_to(xb, (2, 3, 4))])
    c.run("filled", "full_default", {}, [np.full((2, 3), 1.5, F32)])
    c.run("filled_i32", "full_i32", {}, [np.full(4, 7, I32)])
    xf = normal(r, [2, 2], F64)
    c.run("filled_as", "like_f64", {"x": xf}, [np.zeros_like(xf), np.ones_like(xf), np.full_like(xf, 2.5)])
    xr = normal(r, [2, 2, 4])
    c.run("round_trip", "reshape_transpose_reshape", {"x": xr}, [xr.reshape(-1, 4).T.reshape(2, -1)])
    return c


def selection():
    r = rng(6)
    c = Case("run", "selection", "Comparisons, where (with a literal branch), logical ops, cast\n"
             "between every kind of dtype, counting with a bool cast.", """
fn compare(Tensor x, Tensor y) -> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor) {
    return (x == y, x != y, x < y, x <= y, x > y, x >= y)
}

fn select(Tensor c, Tensor a, Tensor b) -> Tensor {
    return where(c, a, b)
}

fn positive_part(Tensor x) -> Tensor {
    return where(x > 0.0, x, 0.0)
}

fn logic(Tensor a, Tensor b) -> (Tensor, Tensor, Tensor) {
    return (logical_and(a, b), logical_or(a, b), logical_not(a))
}

fn to(Tensor x, *, DType dtype) -> Tensor {
    return cast(x, dtype)
}

fn count_positive(Tensor x) -> Tensor {
    return sum(cast(x > 0.0, i64))
}

fn in_range(Tensor x, *, Float lo, Float hi) -> Tensor {
    return logical_and(x >= lo, x < hi)
}
""")
    x = f32([[1.0, 2.0, -1.0], [0.0, 5.0, 3.0]])
    y = f32([1.0, 3.0, -2.0])
    c.run("compare", "compare_f32", {"x": x, "y": y}, [x == y, x != y, x < y, x <= y, x > y, x >= y])
    xi = r.integers(-3, 3, [4, 1]).astype(I32)
    yi = r.integers(-3, 3, [3]).astype(I32)
    c.run("compare", "compare_i32", {"x": xi, "y": yi}, [xi == yi, xi != yi, xi < yi, xi <= yi, xi > yi, xi >= yi])
    xb, yb = np.array([True, True, False, False]), np.array([True, False, True, False])
    c.run("logic", "logic", {"a": xb, "b": yb}, [xb & yb, xb | yb, ~xb])
    cond = r.random([3, 4]) > 0.5
    a, b = normal(r, [3, 4]), normal(r, [4])
    c.run("select", "where_broadcast", {"c": cond, "a": a, "b": b}, [np.where(cond, a, b)])
    ai, bi = r.integers(0, 9, [3, 4]).astype(I64), np.array(-1, I64)
    c.run("select", "where_i64", {"c": cond, "a": ai, "b": bi}, [np.where(cond, ai, bi)])
    c.run("select", "where_bool_values", {"c": cond, "a": cond, "b": ~cond[0]}, [np.where(cond, cond, ~cond[0])])
    x = normal(r, [2, 5])
    c.run("positive_part", "where_literal", {"x": x}, [np.where(x > 0, x, 0).astype(F32)])
    v = f32([-2.75, -1.0, -0.5, 0.0, 0.25, 1.9, 3.0])
    c.run("to", "f32_to_i32", {"x": v, "dtype": DT("i32")}, [v.astype(I32)])
    c.run("to", "f32_to_i64", {"x": v, "dtype": DT("i64")}, [v.astype(I64)])
    c.run("to", "f32_to_bool", {"x": v, "dtype": DT("bool")}, [v.astype(bool)])
    c.run("to", "f32_to_f64", {"x": v, "dtype": DT("f64")}, [v.astype(F64)])
    c.run("to", "f32_to_f32", {"x": v, "dtype": DT("f32")}, [v])
    bl = np.array([[True, False], [False, True]])
    c.run("to", "bool_to_f32", {"x": bl, "dtype": DT("f32")}, [bl.astype(F32)])
    c.run("to", "bool_to_i32", {"x": bl, "dtype": DT("i32")}, [bl.astype(I32)])
    iv = np.array([-7, 0, 3, 100000], I32)
    c.run("to", "i32_to_f64", {"x": iv, "dtype": DT("f64")}, [iv.astype(F64)])
    c.run("to", "i32_to_i64", {"x": iv, "dtype": DT("i64")}, [iv.astype(I64)])
    c.run("to", "i32_to_bool", {"x": iv, "dtype": DT("bool")}, [iv.astype(bool)])
    lv = np.array([-(2**40), -5, 5, 2**31 - 1], I64)
    c.run("to", "i64_to_f32", {"x": lv, "dtype": DT("f32")}, [lv.astype(F32)])
    dv = f64([1.0 / 3.0, -2.5e10, 1e-3])
    c.run("to", "f64_to_f32", {"x": dv, "dtype": DT("f32")}, [dv.astype(F32)])
    x = normal(r, [3, 7])
    c.run("count_positive", "count", {"x": x}, [np.array((x > 0).sum(), I64)])
    c.run("in_range", "in_range", {"x": x, "lo": -0.5, "hi": 0.5}, [(x >= -0.5) & (x < 0.5)])
    return c


def integers():
    r = rng(7)
    c = Case("run", "integers", "Integer arithmetic (i32 and i64): operators, int literals promoted\n"
             "to the tensor's dtype, abs/sign/maximum/minimum.", """
fn int_ops(Tensor x, Tensor y) -> (Tensor, Tensor, Tensor, Tensor) {
    return (x + y, x - y, x * y, -x)
}

fn int_literals(Tensor x) -> Tensor {
    return x * 3 + 1 - 2 * x
}

fn int_misc(Tensor x) -> (Tensor, Tensor, Tensor, Tensor) {
    return (abs(x), sign(x), maximum(x, 0), minimum(x, 2))
}
""")
    for dt, name in [(I32, "i32"), (I64, "i64")]:
        x, y = r.integers(-50, 50, [3, 4]).astype(dt), r.integers(-50, 50, [4]).astype(dt)
        c.run("int_ops", f"ops_{name}", {"x": x, "y": y}, [x + y, x - y, x * y, -x])
        c.run("int_literals", f"literals_{name}", {"x": x}, [(x * 3 + 1 - 2 * x).astype(dt)])
        c.run("int_misc", f"misc_{name}", {"x": x},
              [np.abs(x), np.sign(x).astype(dt), np.maximum(x, 0).astype(dt), np.minimum(x, 2).astype(dt)])
    return c


def elementwise():
    r = rng(8)
    c = Case("run", "elementwise", "Every elementwise unary primitive and the binary ones, f32 and f64;\n"
             "literal operands on either side.", """
fn unary_any(Tensor x) -> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor) {
    return (neg(x), abs(x), exp(x), tanh(x), sigmoid(x), sin(x), cos(x), erf(x), floor(x), ceil(x), round(x), sign(x), expm1(x))
}

fn unary_positive(Tensor x) -> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor) {
    return (log(x), sqrt(x), rsqrt(x), reciprocal(x), log1p(x), log2(x))
}

fn binary(Tensor x, Tensor y) -> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor) {
    return (x - y, x / y, x ** y, maximum(x, y), minimum(x, y), x * y + x / 2.0)
}

fn with_literals(Tensor x) -> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor) {
    return (x ** 2, x ** 0.5, 2.0 ** x, 1.0 / x, 3 - x, -x * 0.25)
}

fn square(Tensor x) -> Tensor {
    return x ** 2
}
""")
    for dt, name in [(F32, "f32"), (F64, "f64")]:
        # avoid exact halves (round-half-even vs away from zero is left open by the spec)
        x = uniform(r, [3, 5], -3, 3, dt)
        xd = f64(x)
        outs = [-xd, np.abs(xd), np.exp(xd), np.tanh(xd), ref.sigmoid(xd), np.sin(xd), np.cos(xd),
                ref.erf(xd), np.floor(xd), np.ceil(xd), np.round(xd), np.sign(xd), np.expm1(xd)]
        c.run("unary_any", f"unary_any_{name}", {"x": x}, [cast(o, dt) for o in outs])
        p = uniform(r, [2, 4], 0.1, 4, dt)
        pd = f64(p)
        outs = [np.log(pd), np.sqrt(pd), 1 / np.sqrt(pd), 1 / pd, np.log1p(pd), np.log2(pd)]
        c.run("unary_positive", f"unary_positive_{name}", {"x": p}, [cast(o, dt) for o in outs])
        x, y = uniform(r, [2, 3], 0.5, 2, dt), uniform(r, [3], 0.5, 2, dt)
        xd, yd = f64(x), f64(y)
        outs = [xd - yd, xd / yd, xd**yd, np.maximum(xd, yd), np.minimum(xd, yd), xd * yd + xd / 2]
        c.run("binary", f"binary_{name}", {"x": x, "y": y}, [cast(o, dt) for o in outs])
        outs = [xd**2, xd**0.5, 2.0**xd, 1 / xd, 3 - xd, -xd * 0.25]
        c.run("with_literals", f"literals_{name}", {"x": x}, [cast(o, dt) for o in outs])
    # `** 2` of negative bases is an integer power, defined everywhere
    x = f32([-3.0, -0.5, 0.0, 2.0])
    c.run("square", "square_negative_base", {"x": x}, [x * x])
    return c


def literal_math():
    r = rng(12)
    c = Case("run", "literal_math", "Literal-only expressions (`sqrt(4.0) * exp(0.0)`, spec section 3) are\n"
             "float literals: they take their dtype from where they are used, else f32.", """
fn scaled(Tensor x) -> Tensor {
    let k = sqrt(4.0) * exp(0.0)
    return x * k
}

fn shifted(Tensor x) -> Tensor {
    return tanh(x) + log(2.0) - sigmoid(0) * floor(2.5)
}

fn standalone() -> Tensor {
    return full([3], sqrt(2.0))
}
""")
    for dt, name in [(F32, "f32"), (F64, "f64")]:
        x = uniform(r, [2, 3], -2, 2, dt)
        xd = f64(x)
        c.run("scaled", f"scaled_{name}", {"x": x}, [cast(xd * 2.0, dt)])
        c.run("shifted", f"shifted_{name}", {"x": x},
              [cast(np.tanh(xd) + np.log(2.0) - 0.5 * 2.0, dt)])
    c.run("standalone", "standalone", {}, [f32([np.sqrt(2.0)] * 3)])
    return c


def overloads():
    r = rng(9)
    c = Case("run", "overloads", "Call-time dispatch between user overloads (a tensor or a scalar\n"
             "`s`), an `Int` attribute used in a static `if`, and `use \"std:nn\"`.", """
use "std:nn"

fn scale(Tensor x, Tensor s) -> Tensor {
    return x * s
}

// Marked by +100 so the test sees which overload ran.
fn scale.scalar(Tensor x, Scalar s) -> Tensor {
    return x * s + 100.0
}

fn power(Tensor x, *, Int n) -> Tensor {
    if n == 0 {
        return ones_like(x)
    } else if n == 1 {
        return x
    }
    return x * power_rest(x, n=n - 1)
}

fn power_rest(Tensor x, *, Int n) -> Tensor {
    if n == 1 {
        return x
    }
    return x * x
}

fn std_softmax(Tensor x) -> Tensor {
    return softmax(x, dim=0)
}
""")
    x, s = normal(r, [2, 3]), normal(r, [3])
    c.run("scale", "scale_tensor", {"x": x, "s": s}, [cast(f64(x) * f64(s), F32)])
    c.run("scale", "scale_scalar", {"x": x, "s": 0.5}, [cast(f64(x) * 0.5 + 100.0, F32)])
    c.run("scale", "scale_int_scalar", {"x": x, "s": 3}, [cast(f64(x) * 3 + 100.0, F32)])
    xd = f64(x)
    c.run("power", "power0", {"x": x, "n": 0}, [np.ones_like(x)])
    c.run("power", "power1", {"x": x, "n": 1}, [x])
    c.run("power", "power2", {"x": x, "n": 2}, [cast(xd * xd, F32)])
    c.run("power", "power3", {"x": x, "n": 3}, [cast(xd * xd * xd, F32)])
    c.run("std_softmax", "std_softmax", {"x": x}, [cast(ref.softmax(xd, 0), F32)])
    return c


def odd_sizes():
    r = rng(10)
    c = Case("run", "odd_sizes", "Sizes that are not multiples of any vector width (main loops plus\n"
             "tails), a reduction over a leading axis, and a large broadcast intermediate (512 x 256,\n"
             "from small inputs) big enough for a kernel to be split across threads.", SPEC_NN + """
fn outer_gelu_sum(Tensor a, Tensor b) -> Tensor {
    return sum(gelu(a * b), dims=[0])
}

fn leading_mean(Tensor x) -> Tensor {
    return mean(exp(x) - 1.0, dims=[0])
}
""")
    x = normal(r, [5, 67])
    c.run("gelu", "gelu_5x67", {"x": x}, [cast(ref.gelu(f64(x)), F32)])
    c.run("softmax", "softmax_5x67", {"x": x}, [cast(ref.softmax(f64(x)), F32)])
    c.run("softmax", "softmax_5x67_dim0", {"x": x, "dim": 0}, [cast(ref.softmax(f64(x), 0), F32)])
    g, b = normal(r, [67]), normal(r, [67])
    c.run("layer_norm", "layer_norm_5x67", {"x": x, "gamma": g, "beta": b},
          [cast(ref.layer_norm(f64(x), f64(g), f64(b)), F32)])
    c.run("leading_mean", "leading_mean", {"x": x}, [cast((np.exp(f64(x)) - 1).mean(0), F32)])
    xd = normal(r, [3, 131], F64)
    c.run("gelu", "gelu_f64_3x131", {"x": xd}, [ref.gelu(xd)])
    a, w, bias = normal(r, [17, 33]), normal(r, [33, 9], scale=0.3), normal(r, [9])
    c.run("linear", "linear_17x33x9", {"x": a, "w": w, "b": bias, "activate": True},
          [cast(ref.linear(f64(a), f64(w), f64(bias), True), F32)])
    a, b = normal(r, [512, 1]), normal(r, [1, 256])
    c.run("outer_gelu_sum", "outer_gelu_sum", {"a": a, "b": b}, [cast(ref.gelu(f64(a) * f64(b)).sum(0), F32)])
    return c


def derived_ones():
    r = rng(11)
    c = Case("run", "derived_ones", "Sizes the graph derives (reshape with -1, slice lengths, concat sums)\n"
             "that come out as 1 (or 0) at run time broadcast and squeeze as in NumPy. Each function\n"
             "is called with sizes that make the derived size 1 and sizes that do not, in one\n"
             "session: the instances must not be mixed up.", """
fn reshaped_plus(Tensor x, Tensor y) -> Tensor {
    return reshape(x, [4, -1]) + y
}

fn leading_times(Tensor x, Tensor y) -> Tensor {
    return reshape(x, [-1, 4]) * y
}

fn rows_plus(Tensor x, Tensor y, *, Int n) -> Tensor {
    return reshape(x, [n, -1]) + y
}

fn grid_plus(Tensor x, Tensor y) -> Tensor {
    return reshape(x, [-1, 6]) + y
}

fn first_col_plus(Tensor y) -> Tensor {
    return slice(y, dim=1, start=0, end=1) + y
}

fn tail_plus(Tensor x, Tensor y) -> Tensor {
    return slice(x, dim=0, start=2) + y
}

fn joined_plus(Tensor x, Tensor y, Tensor z) -> Tensor {
    return concat([x, y], dim=0) + z
}

fn squeeze_derived(Tensor x) -> Tensor {
    return squeeze(reshape(x, [-1, 4]), dims=[0])
}

fn squeeze_all(Tensor x) -> Tensor {
    return squeeze(reshape(x, [2, -1])) * 2.0
}

fn widened(Tensor x) -> Tensor {
    return broadcast_to(reshape(x, [2, -1]), [2, 3])
}

fn batched(Tensor a, Tensor b) -> Tensor {
    return matmul(reshape(a, [-1, 2, 2]), b)
}

fn picked(Tensor c, Tensor x, Tensor y) -> Tensor {
    return where(reshape(c, [-1, 3]), x, y)
}

fn flat3(Tensor x) -> Tensor {
    return reshape(x, [-1, 3])
}

fn cols_auto(Tensor x) -> Tensor {
    return reshape(x, [3, -1])
}

fn to_empty(Tensor x) -> Tensor {
    return reshape(x, [0, 3])
}

fn emptied(Tensor x, *, Int[] shape) -> Tensor {
    let e = slice(unsqueeze(x, 0), dim=0, start=1)
    return reshape(e, shape)
}
""")
    # A cached instance for a derived size of 3 must not serve a call where it is 1, and back.
    x4, y43, x12 = normal(r, [4]), normal(r, [4, 3]), normal(r, [12])
    c.run("reshaped_plus", "reshape_to_3", {"x": x12, "y": y43}, [x12.reshape(4, -1) + y43])
    c.run("reshaped_plus", "reshape_to_1", {"x": x4, "y": y43}, [x4.reshape(4, -1) + y43])
    x8, y42 = normal(r, [8]), normal(r, [4, 2])
    c.run("reshaped_plus", "reshape_to_2", {"x": x8, "y": y42}, [x8.reshape(4, -1) + y42])
    x4b, y34 = normal(r, [4]), normal(r, [3, 4])
    c.run("leading_times", "leading_1", {"x": x4b, "y": y34}, [x4b.reshape(-1, 4) * y34])
    x8b, y24 = normal(r, [8]), normal(r, [2, 4])
    c.run("leading_times", "leading_2", {"x": x8b, "y": y24}, [x8b.reshape(-1, 4) * y24])
    x12b, y12x5 = normal(r, [12]), normal(r, [12, 5])
    c.run("rows_plus", "rows_12", {"x": x12b, "y": y12x5, "n": 12}, [x12b.reshape(12, -1) + y12x5])
    y3x4 = normal(r, [3, 4])
    c.run("rows_plus", "rows_3", {"x": x12b, "y": y3x4, "n": 3}, [x12b.reshape(3, -1) + y3x4])
    x23, y56 = normal(r, [2, 3]), normal(r, [5, 6])
    c.run("grid_plus", "grid_1", {"x": x23, "y": y56}, [x23.reshape(-1, 6) + y56])
    x46, y26 = normal(r, [4, 3]), normal(r, [2, 6])
    c.run("grid_plus", "grid_2", {"x": x46, "y": y26}, [x46.reshape(-1, 6) + y26])
    y = normal(r, [4, 3])
    c.run("first_col_plus", "first_col_4x3", {"y": y}, [y[:, 0:1] + y])
    y = normal(r, [2, 5])
    c.run("first_col_plus", "first_col_2x5", {"y": y}, [y[:, 0:1] + y])
    x3, y5 = normal(r, [3]), normal(r, [5])
    c.run("tail_plus", "tail_1", {"x": x3, "y": y5}, [x3[2:] + y5])
    x7 = normal(r, [7])
    c.run("tail_plus", "tail_5", {"x": x7, "y": y5}, [x7[2:] + y5])
    x2, y0 = normal(r, [2]), normal(r, [0])
    c.run("tail_plus", "tail_0", {"x": x2, "y": y0}, [x2[2:] + y0])
    x0, y1, z5 = normal(r, [0]), normal(r, [1]), normal(r, [5])
    x4c, z5b = normal(r, [4]), normal(r, [5])
    c.run("joined_plus", "concat_to_5", {"x": x4c, "y": y1, "z": z5b}, [np.concatenate([x4c, y1]) + z5b])
    c.run("joined_plus", "concat_to_1", {"x": x0, "y": y1, "z": z5}, [np.concatenate([x0, y1]) + z5])
    x = normal(r, [4])
    c.run("squeeze_derived", "squeeze_derived", {"x": x}, [np.squeeze(x.reshape(-1, 4), 0)])
    x = normal(r, [2])
    c.run("squeeze_all", "squeeze_all_1", {"x": x}, [np.squeeze(x.reshape(2, -1)) * 2])
    x = normal(r, [6])
    c.run("squeeze_all", "squeeze_all_3", {"x": x}, [np.squeeze(x.reshape(2, -1)) * 2])
    x = normal(r, [2])
    c.run("widened", "broadcast_to_derived_1", {"x": x}, [np.broadcast_to(x.reshape(2, -1), (2, 3))])
    a, b = normal(r, [4]), normal(r, [3, 2, 2])
    c.run("batched", "matmul_batch_1", {"a": a, "b": b}, [a.reshape(-1, 2, 2) @ b])
    a = normal(r, [12])
    c.run("batched", "matmul_batch_3", {"a": a, "b": b}, [a.reshape(-1, 2, 2) @ b])
    cond, x, y = r.standard_normal(3) > 0, normal(r, [4, 3]), normal(r, [4, 3])
    c.run("picked", "where_cond_1", {"c": cond, "x": x, "y": y}, [np.where(cond.reshape(-1, 3), x, y)])
    c.run("flat3", "zero_rows", {"x": np.zeros((0, 3), F32)}, [np.zeros((0, 3), F32).reshape(-1, 3)])
    c.run("flat3", "zero_cols", {"x": np.zeros((3, 0), F32)}, [np.zeros((3, 0), F32).reshape(-1, 3)])
    c.run("cols_auto", "zero_to_3x0", {"x": np.zeros((0, 5), F32)}, [np.zeros((0, 5), F32).reshape(3, -1)])
    c.run("to_empty", "zero_to_0x3", {"x": np.zeros((0, 5), F32)}, [np.zeros((0, 5), F32).reshape(0, 3)])
    # A constant 0 size beside one symbolic size: no element, whatever the symbolic size is.
    x4 = np.arange(4, dtype=F32)
    for label, shape in [("emptied_to_0", [0]), ("emptied_to_5x0", [5, 0]), ("emptied_to_0x2x3", [0, 2, 3])]:
        c.run("emptied", label, {"x": x4, "shape": shape}, [x4[None][1:].reshape(shape)])
    return c


def views():
    r = rng(11)
    c = Case("run", "views", "Transposes and slices read in place by fused kernels (fusion's views) when\n"
             "size-1 axes sit behind the axis the loop walks: the JIT once walked the last\n"
             "non-size-1 axis with unit stride although its source stride was not 1.", """
fn neg_swapped(Tensor x) -> Tensor {
    return neg(transpose(x, 0, 1))
}

fn neg_permuted(Tensor x, *, Int[] perm) -> Tensor {
    return -transpose(x, perm)
}

fn cast_swapped(Tensor x) -> Tensor {
    return cast(transpose(x, 0, 1), f64)
}

fn above_swapped(Tensor x) -> Tensor {
    return transpose(x, 0, 1) > 1.5
}

fn twice_sliced(Tensor x, *, Int dim, Int start = 0, Int end = 9223372036854775807, Int step = 1) -> Tensor {
    return slice(x, dim=dim, start=start, end=end, step=step) * 2.0
}

fn sum_sliced(Tensor x, *, Int dim, Int start = 0, Int end = 9223372036854775807, Int step = 1) -> Tensor {
    return sum(exp(slice(x, dim=dim, start=start, end=end, step=step)), dims=[0])
}
""")
    x = np.arange(6, dtype=F32).reshape(2, 3, 1)
    c.run("neg_swapped", "neg_swapped_2x3x1", {"x": x}, [-x.transpose(1, 0, 2)])
    c.run("cast_swapped", "cast_swapped_2x3x1", {"x": x}, [x.transpose(1, 0, 2).astype(F64)])
    c.run("above_swapped", "above_swapped_2x3x1", {"x": x}, [x.transpose(1, 0, 2) > 1.5])
    for label, shape, perm in [
        ("perm_2x1x3x1", [2, 1, 3, 1], [2, 1, 0, 3]),
        ("perm_1x2x3x1", [1, 2, 3, 1], [0, 2, 1, 3]),
        ("perm_2x3x1_last_to_front", [2, 3, 1], [2, 0, 1]),
        ("perm_3x1x2_reversed", [3, 1, 2], [2, 1, 0]),
        ("perm_2x3x1x1", [2, 3, 1, 1], [1, 0, 3, 2]),
        ("perm_4x1x3x2", [4, 1, 3, 2], [2, 1, 0, 3]),
        ("perm_1x3x1x2_i32", [1, 3, 1, 2], [3, 1, 2, 0]),
    ]:
        xp = np.arange(np.prod(shape)).reshape(shape)
        xp = xp.astype(I32) if label.endswith("i32") else xp.astype(F32)
        c.run("neg_permuted", label, {"x": xp, "perm": perm}, [-xp.transpose(perm)])
    x12 = normal(r, [12, 1])
    c.run("twice_sliced", "reversed_12x1", {"x": x12, "dim": 0, "start": -1, "step": -1}, [x12[::-1] * 2])
    x5 = normal(r, [5, 1, 1])
    c.run("twice_sliced", "reversed_step2_5x1x1", {"x": x5, "dim": 0, "start": -1, "step": -2}, [x5[::-2] * 2])
    x3 = normal(r, [3, 4, 1])
    c.run("twice_sliced", "reversed_mid_3x4x1", {"x": x3, "dim": 1, "start": -1, "step": -1},
          [x3[:, ::-1] * 2])
    c.run("twice_sliced", "column_4x3", {"x": x3[:, :3, 0].copy(), "dim": 1, "start": 1, "end": 2},
          [x3[:, 1:2, 0] * 2])
    c.run("sum_sliced", "sum_reversed_6x2x1", {"x": x12.reshape(6, 2, 1), "dim": 1, "start": -1, "step": -1},
          [np.exp(f64(x12.reshape(6, 2, 1)[:, ::-1])).sum(0).astype(F32)])
    return c


def int_ops():
    r = rng(21)
    c = Case("run", "int_ops", "Predicates, Python's `//` and `%` (NumPy's floor_divide/remainder:\n"
             "integer zero divisors give 0, MIN // -1 wraps; floats with NaN, inf, signed zeros),\n"
             "bitwise ops and shifts (counts outside [0, bits) shift everything out), with\n"
             "literals and broadcasting.", """
fn div_mod(Tensor x, Tensor y) -> (Tensor, Tensor, Tensor, Tensor) {
    return (floor_div(x, y), x % y, x % 3 - floor_div(x, -4), -7 % y)
}

fn bits(Tensor x, Tensor y) -> (Tensor, Tensor, Tensor, Tensor) {
    return (bitwise_and(x, y), bitwise_or(x, y), bitwise_xor(x, bitwise_not(y)), bitwise_not(x))
}

fn shifts(Tensor x, Tensor n) -> (Tensor, Tensor, Tensor) {
    return (shift_left(x, n), shift_right(x, n), shift_right(x, 2) + shift_left(x, 1))
}

fn classify(Tensor x) -> (Tensor, Tensor, Tensor, Tensor) {
    let ok = isfinite(x)
    return (isnan(x), isinf(x), ok, where(ok, x, 0.0))
}

fn masks(Tensor x, Tensor y) -> (Tensor, Tensor) {
    let a = x > 0.0
    let b = y > x
    return (bitwise_xor(a, b), bitwise_and(bitwise_not(a), bitwise_or(a, b)))
}

fn never_nan(Tensor x) -> (Tensor, Tensor, Tensor) {
    return (isnan(x), isinf(x), isfinite(x))
}

fn attr_mod(Tensor x, *, Int n) -> Tensor {
    if n % 2 == 1 {
        return x * (n % 3)
    }
    return x * floor_div(n, -4) + 0.5 % 0.375
}
""")
    for dt, name in [(I32, "i32"), (I64, "i64")]:
        info, nbits = np.iinfo(dt), np.iinfo(dt).bits
        x = np.array([[info.min], [-7], [-1], [0], [5], [info.max]], dtype=dt)
        y = np.array([-3, -1, 0, 2, 7], dtype=dt)
        with np.errstate(all="ignore"):
            c.run("div_mod", f"div_mod_{name}", {"x": x, "y": y},
                  [np.floor_divide(x, y), np.remainder(x, y),
                   (np.remainder(x, dt(3)) - np.floor_divide(x, dt(-4))).astype(dt),
                   np.remainder(dt(-7), y)])
        a, b = r.integers(-100, 100, [3, 4]).astype(dt), r.integers(-100, 100, [4]).astype(dt)
        c.run("bits", f"bits_{name}", {"x": a, "y": b},
              [a & b, a | b, a ^ ~b, ~a])
        n = np.array([-1, 0, 1, nbits - 1, nbits, nbits + 3], dtype=dt)
        v = np.array([[info.min], [-5], [3], [info.max]], dtype=dt)
        c.run("shifts", f"shifts_{name}", {"x": v, "n": n},
              [np.left_shift(v, n), np.right_shift(v, n),
               (np.right_shift(v, dt(2)) + np.left_shift(v, dt(1))).astype(dt)])
        c.run("never_nan", f"never_nan_{name}", {"x": a}, [np.isnan(a), np.isinf(a), np.isfinite(a)])
    bools = np.array([[True, False], [False, False]])
    c.run("bits", "bits_bool", {"x": bools, "y": np.array([True, False])},
          [bools & [True, False], bools | [True, False], bools ^ ~np.array([True, False]), ~bools])
    for dt, name in [(F32, "f32"), (F64, "f64")]:
        x = np.array([[-5.3], [-1.0], [-0.0], [1.0], [7.5], [np.inf], [np.nan]], dtype=dt)
        y = np.array([-2.0, -0.1, 0.0, 0.1, 3.0, np.inf], dtype=dt)
        with np.errstate(all="ignore"):
            c.run("div_mod", f"div_mod_{name}", {"x": x, "y": y},
                  [np.floor_divide(x, y), np.remainder(x, y),
                   np.remainder(x, dt(3)) - np.floor_divide(x, dt(-4)), np.remainder(dt(-7), y)])
        x = np.array([[1.5, np.nan, -np.inf], [np.inf, -0.0, -2.0]], dtype=dt)
        ok = np.isfinite(x)
        c.run("classify", f"classify_{name}", {"x": x},
              [np.isnan(x), np.isinf(x), ok, np.where(ok, x, dt(0))])
    xa = normal(r, [4])
    c.run("attr_mod", "attr_mod_odd", {"x": xa, "n": -7}, [xa * F32(-7 % 3)])
    c.run("attr_mod", "attr_mod_even", {"x": xa, "n": 6}, [xa * F32(6 // -4) + F32(0.5 % 0.375)])
    xm, ym = normal(r, [3, 5]), normal(r, [5])
    a, b = xm > 0, ym > xm
    c.run("masks", "masks_f32", {"x": xm, "y": ym}, [a ^ b, ~a & (a | b)])
    return c


def trig():
    r = rng(21)
    c = Case("run", "trig", "asin acos atan sinh cosh atan2 (spec section 7), f32 and f64: random\n"
             "inputs, domain edges (NaN outside [-1, 1], +-inf, signed zeros, overflow), atan2's\n"
             "quadrants with broadcasting, keyword arguments by the declared names, a fused chain,\n"
             "and literal-only calls evaluated at compile time.", """
fn inverse(Tensor x) -> (Tensor, Tensor, Tensor) {
    return (asin(x), acos(x), atan(x))
}

fn hyperbolic(Tensor x) -> (Tensor, Tensor) {
    return (sinh(x), cosh(x))
}

fn angle(Tensor y, Tensor x) -> Tensor {
    return atan2(y, x)
}

fn angle_by_name(Tensor a, Tensor b) -> Tensor {
    return atan2(x=a, y=b)
}

fn chain(Tensor x, Tensor y) -> Tensor {
    return cosh(x) * cosh(x) - sinh(x) * sinh(x) + atan2(sinh(y), cosh(x)) * atan(y) + acos(tanh(x))
}

fn literal_angles(Tensor x) -> Tensor {
    let k = atan2(1.0, -1.0) + asin(1.0) - cosh(0)
    return x * k + atan2(x, 2.0)
}
""")
    edges = [-1.0, 1.0, -0.0, 0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 0.5, -0.99, 1e-6, 3.0, -30.0]
    hyper_edges = [-0.0, 0.0, 1e-6, -0.2, 0.9, 1.1, -5.0, 30.0, 88.5, -89.3, 89.6, 709.0, 711.0,
                   np.inf, -np.inf, np.nan]
    for dt, name in [(F32, "f32"), (F64, "f64")]:
        # 3 x 7: vector bodies and scalar tails
        x = uniform(r, [3, 7], -1, 1, dt)
        xd = f64(x)
        c.run("inverse", f"inverse_{name}", {"x": x},
              [cast(o, dt) for o in (np.arcsin(xd), np.arccos(xd), np.arctan(xd))])
        x = np.asarray(edges, dtype=dt)
        xd = f64(x)
        with np.errstate(invalid="ignore"):
            outs = (np.arcsin(xd), np.arccos(xd), np.arctan(xd))
        c.run("inverse", f"inverse_edges_{name}", {"x": x}, [cast(o, dt) for o in outs])
        x = uniform(r, [2, 9], -6, 6, dt)
        xd = f64(x)
        c.run("hyperbolic", f"hyperbolic_{name}", {"x": x}, [cast(np.sinh(xd), dt), cast(np.cosh(xd), dt)])
        x = np.asarray(hyper_edges, dtype=dt)
        xd = f64(x)
        with np.errstate(over="ignore"):
            outs = (cast(np.sinh(xd), dt), cast(np.cosh(xd), dt))
        c.run("hyperbolic", f"hyperbolic_edges_{name}", {"x": x}, list(outs))
        # every quadrant, both axes, signed zeros and infinities: y [9, 1] against x [9]
        axis = [-np.inf, -2.5, -1.0, -0.0, 0.0, 0.75, 4.0, np.inf, np.nan]
        y, x = np.asarray(axis, dtype=dt).reshape(9, 1), np.asarray(axis, dtype=dt)
        c.run("angle", f"angle_quadrants_{name}", {"y": y, "x": x}, [np.arctan2(y, x)])
        y, x = normal(r, [2, 5], dt), normal(r, [5], dt)
        c.run("angle", f"angle_random_{name}", {"y": y, "x": x}, [cast(np.arctan2(f64(y), f64(x)), dt)])
        c.run("angle_by_name", f"angle_by_name_{name}", {"a": x, "b": y}, [cast(np.arctan2(f64(y), f64(x)), dt)])
        x, y = uniform(r, [4, 3], -2, 2, dt), uniform(r, [3], -2, 2, dt)
        xd, yd = f64(x), f64(y)
        out = (np.cosh(xd) ** 2 - np.sinh(xd) ** 2 + np.arctan2(np.sinh(yd), np.cosh(xd)) * np.arctan(yd)
               + np.arccos(np.tanh(xd)))
        c.run("chain", f"chain_{name}", {"x": x, "y": y}, [cast(out, dt)])
        k = np.arctan2(1.0, -1.0) + np.arcsin(1.0) - np.cosh(0.0)
        c.run("literal_angles", f"literal_angles_{name}", {"x": x}, [cast(f64(x) * k + np.arctan2(f64(x), 2.0), dt)])
    return c


def take_along(x, index, axis):
    """torch.gather: `index` no larger than `x` on the other axes (NumPy needs equal sizes)."""
    sl = tuple(slice(0, n) if a != axis else slice(None) for a, n in enumerate(index.shape))
    return np.take_along_axis(x[sl], np.where(index < 0, index + x.shape[axis], index), axis)


def scatter_add(x, index, src, axis):
    out = x.copy()
    idx = np.where(index < 0, index + x.shape[axis], index)
    for pos in np.ndindex(*index.shape):
        target = list(pos)
        target[axis] = idx[pos]
        out[tuple(target)] += src[pos]
    return out


def index_ops():
    r = rng(31)
    c = Case("run", "index_ops", "gather (torch.gather), index_select (np.take) and scatter_add /\n"
             "index_add (out of place) against NumPy: every axis, rank 1-4, negative and duplicate\n"
             "indices, empty indices, i32 and i64 indices, an index smaller than x (gather),\n"
             "int and bool data, an embedding lookup fused with an add and a cross-entropy.", """
fn gather1(Tensor x, Tensor i, *, Int dim) -> Tensor {
    return gather(x, i, dim=dim)
}

fn take(Tensor x, Tensor i, *, Int dim) -> Tensor {
    return index_select(x, i, dim=dim)
}

fn scatter(Tensor x, Tensor i, Tensor s, *, Int dim) -> Tensor {
    return scatter_add(x, i, s, dim=dim)
}

fn add_index(Tensor x, Tensor i, Tensor s, *, Int dim) -> Tensor {
    return index_add(x, i, s, dim=dim)
}

fn embed(Tensor table, Tensor tokens, Tensor positional) -> Tensor {
    return index_select(table, tokens) + positional
}

fn cross_entropy(Tensor z, Tensor t) -> Tensor {
    let m = max(z, dims=[-1], keepdim=true)
    let logp = z - m - log(sum(exp(z - m), dims=[-1], keepdim=true))
    return -mean(gather(logp, t, dim=-1))
}

fn gather_strided(Tensor x, Tensor i) -> Tensor {
    return gather(transpose(x), i, dim=0) * 2.0
}
""")
    shapes = [[7], [3, 5], [2, 3, 4], [2, 1, 3, 5]]
    for xs in shapes:
        for dim in range(len(xs)):
            for it, iname in [(I64, "i64"), (I32, "i32")]:
                dt = F32 if len(xs) % 2 else F64
                x = normal(r, xs, dt)
                n = xs[dim]
                ishape = list(xs)
                ishape[dim] = 4
                i = r.integers(-n, n, size=ishape).astype(it)
                label = f"r{len(xs)}_d{dim}_{iname}"
                c.run("gather1", f"gather_{label}", {"x": x, "i": i, "dim": dim}, [take_along(x, i, dim)])
                ti = r.integers(-n, n, size=[2, 3][: 1 + dim % 2]).astype(it)
                c.run("take", f"take_{label}", {"x": x, "i": ti, "dim": dim}, [np.take(x, np.where(ti < 0, ti + n, ti), axis=dim)])
                s = normal(r, ishape, dt)
                c.run("scatter", f"scatter_{label}", {"x": x, "i": i, "s": s, "dim": dim}, [scatter_add(x, i, s, dim)])
                sel = list(np.take(x, np.where(ti < 0, ti + n, ti), axis=dim).shape)
                s2 = normal(r, sel, dt)
                want = x.copy()
                tix = np.where(ti < 0, ti + n, ti).ravel()
                s2m = np.moveaxis(s2.reshape(xs[:dim] + [tix.size] + xs[dim + 1:]), dim, 0)
                wm = np.moveaxis(want, dim, 0)
                for q, k in enumerate(tix):
                    wm[k] += s2m[q]
                c.run("add_index", f"index_add_{label}", {"x": x, "i": ti, "s": s2, "dim": dim}, [want])
    # index smaller than x on another axis (torch.gather), empty index, rank-0 index_select
    x = normal(r, [4, 6], F32)
    i = np.array([[5, -1], [0, 0]], dtype=I64)
    c.run("gather1", "gather_smaller_index", {"x": x, "i": i, "dim": 1}, [take_along(x, i, 1)])
    c.run("gather1", "gather_empty", {"x": x, "i": np.zeros([4, 0], I64), "dim": 1}, [np.zeros([4, 0], F32)])
    c.run("take", "take_empty", {"x": x, "i": np.zeros([0], I32), "dim": 0}, [np.zeros([0, 6], F32)])
    c.run("take", "take_rank0_index", {"x": x, "i": np.array(-2, I64), "dim": 0}, [x[-2]])
    # int and bool data
    xi = r.integers(-100, 100, size=[3, 4]).astype(I32)
    ii = np.array([[0, 3, 3, -4], [1, 1, 1, 1], [2, 0, -1, 3]], dtype=I64)
    c.run("gather1", "gather_i32_data", {"x": xi, "i": ii, "dim": 1}, [take_along(xi, ii, 1)])
    c.run("scatter", "scatter_i32_dups", {"x": xi, "i": ii, "s": xi, "dim": 1}, [scatter_add(xi, ii, xi, 1)])
    xb = r.integers(0, 2, size=[3, 4]).astype(bool)
    c.run("gather1", "gather_bool", {"x": xb, "i": ii, "dim": 1}, [take_along(xb, ii, 1)])
    c.run("take", "take_bool", {"x": xb, "i": np.array([2, 0, -1], I32), "dim": 0}, [xb[[2, 0, 2]]])
    # embedding + positional (one kernel), vector bodies and tails
    table = normal(r, [11, 9], F32)
    tokens = r.integers(-11, 11, size=[2, 5]).astype(I64)
    pos = normal(r, [5, 9], F32)
    c.run("embed", "embed_f32", {"table": table, "tokens": tokens, "positional": pos},
          [table[np.where(tokens < 0, tokens + 11, tokens)] + pos])
    z = normal(r, [6, 10], F32)
    t = r.integers(0, 10, size=[6, 1]).astype(I64)
    zd = f64(z)
    logp = zd - zd.max(-1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(-1, keepdims=True))
    c.run("cross_entropy", "cross_entropy_f32", {"z": z, "t": t}, [cast(-np.take_along_axis(logp, t, -1).mean(), F32)])
    x = normal(r, [5, 3], F32)
    i = r.integers(-3, 3, size=[2, 5]).astype(I32)
    c.run("gather_strided", "gather_transposed", {"x": x, "i": i}, [take_along(x.T, i, 0) * 2])
    return c


if __name__ == "__main__":
    write_all([conv_runs(), spec_nn(), broadcasting(), reductions(), matmul(), shape_ops(), selection(), integers(),
               elementwise(), overloads(), odd_sizes(), derived_ones(), literal_math(), views(), int_ops(),
               trig(), index_ops(), random_run()], "gen_run_cases.py")
