#!/usr/bin/env python3
"""Generates the `grad` file tests: `tests/cases/grad/*.tfn` with `vjp` directives, their
inputs, cotangents and the expected gradients, derived by hand (`nnref.py`) and computed with
NumPy.

    pip install numpy && python3 tests/tools/gen_grad_cases.py
"""

import numpy as np

import nnref as ref
from conv_cases import conv_grads
from casegen import Case, f64, normal, rng, uniform, write_all
from gen_run_cases import SPEC_NN
from index_grad_cases import index_grads
from random_cases import dropout_grads
from slice_grad_cases import concat_grads, slice_grads

F32, F64 = np.float32, np.float64


def cast(a, dtype):
    return np.asarray(a).astype(dtype)


def spec_grads():
    r = rng(11)
    c = Case("grad", "spec_nn", "Gradients of the composed functions of spec/language.md, derived\n"
             "from their bodies (softplus: its custom `grad` block).", SPEC_NN)
    x = uniform(r, [3, 4], -3, 3)
    g = normal(r, [3, 4])
    c.vjp("relu", "relu", {"x": x}, [g], [cast(g * (x > 0), F32)])
    c.vjp("gelu", "gelu", {"x": x}, [g], [cast(f64(g) * ref.gelu_grad(f64(x)), F32)])
    xd = uniform(r, [5], -4, 4, F64)
    gd = normal(r, [5], F64)
    c.vjp("gelu", "gelu_f64", {"x": xd}, [gd], [gd * ref.gelu_grad(xd)])
    # softmax
    x = normal(r, [3, 4], scale=2.0)
    c.vjp("softmax", "softmax_default", {"x": x}, [g], [cast(ref.softmax_grad(f64(x), f64(g)), F32)])
    c.vjp("softmax", "softmax_dim0", {"x": x, "dim": 0}, [g], [cast(ref.softmax_grad(f64(x), f64(g), 0), F32)])
    # linear, both branches of the static if; b broadcasts over the batch
    x, w, b = normal(r, [3, 4]), normal(r, [4, 5]), normal(r, [5])
    gl = normal(r, [3, 5])
    xd, wd, bd, gd = f64(x), f64(w), f64(b), f64(gl)
    c.vjp("linear", "linear", {"x": x, "w": w, "b": b}, [gl],
          [cast(gd @ wd.T, F32), cast(xd.T @ gd, F32), cast(gd.sum(0), F32)])
    ga = gd * ((xd @ wd + bd) > 0)
    c.vjp("linear", "linear_activate", {"x": x, "w": w, "b": b, "activate": True}, [gl],
          [cast(ga @ wd.T, F32), cast(xd.T @ ga, F32), cast(ga.sum(0), F32)])
    # layer_norm: x, gamma and beta
    x, gm, bt = normal(r, [3, 6], F64), normal(r, [6], F64), normal(r, [6], F64)
    gn = normal(r, [3, 6], F64)
    c.vjp("layer_norm", "layer_norm_f64", {"x": x, "gamma": gm, "beta": bt}, [gn],
          list(ref.layer_norm_grads(x, gm, bt, gn)))
    x32, gm32, bt32, gn32 = (v.astype(F32) for v in (x, gm, bt, gn))
    c.vjp("layer_norm", "layer_norm_eps", {"x": x32, "gamma": gm32, "beta": bt32, "eps": 0.25}, [gn32],
          [cast(v, F32) for v in ref.layer_norm_grads(*(f64(v) for v in (x32, gm32, bt32, gn32)), eps=0.25)])
    # moments: a tuple result, one cotangent per result
    x = normal(r, [3, 5])
    cm, cv = normal(r, [3, 1]), normal(r, [3, 1])
    xd = f64(x)
    mu = xd.mean(-1, keepdims=True)
    dx = f64(cm) / 5 + f64(cv) * 2 * (xd - mu) / 5
    c.vjp("moments", "moments_last", {"x": x, "dims": [-1]}, [cm, cv], [cast(dx, F32)])
    # axpy: x and y both differentiable; broadcasting sums back
    x, y = normal(r, [3, 1], F64), normal(r, [1, 4], F64)
    ga = normal(r, [3, 4], F64)
    c.vjp("axpy", "axpy_broadcast_f64", {"x": x, "y": y, "a": 2.5}, [ga],
          [2.5 * ga.sum(1, keepdims=True), ga.sum(0, keepdims=True)])
    x, y, ga = normal(r, [4]), normal(r, [4]), normal(r, [4])
    c.vjp("axpy", "axpy_default", {"x": x, "y": y}, [ga], [ga, ga])
    # mlp: every parameter
    args = {"x": normal(r, [4, 6]), "w1": normal(r, [6, 8], scale=0.5), "b1": normal(r, [8]),
            "w2": normal(r, [8, 3], scale=0.5), "b2": normal(r, [3])}
    gm = normal(r, [4, 3])
    grads = ref.mlp_grads(*(f64(v) for v in args.values()), f64(gm))
    c.vjp("mlp", "mlp", args, [gm], [cast(v, F32) for v in grads])
    args64 = {k: f64(v) for k, v in args.items()}
    c.vjp("mlp", "mlp_f64", args64, [f64(gm)], list(ref.mlp_grads(*args64.values(), f64(gm))))
    # softplus: the custom grad block
    x, gs = uniform(r, [6], -5, 5), normal(r, [6])
    c.vjp("softplus", "softplus", {"x": x}, [gs], [cast(f64(gs) * ref.sigmoid(f64(x)), F32)])
    return c


def custom_grads():
    r = rng(12)
    c = Case("grad", "custom_grads", "A custom `grad` block wins over the derived gradient, also when\n"
             "the function is inlined into another; a straight-through estimator makes it visible.", """
// round() has a zero derivative; the straight-through estimator passes the gradient on.
fn ste_round(Tensor x) -> Tensor {
    return round(x)
}
grad ste_round(x) {
    x: grad
}

fn ste_times(Tensor x) -> Tensor {
    return ste_round(x) * x
}

fn plain_round_times(Tensor x) -> Tensor {
    return round(x) * x
}

fn scaled_tanh(Tensor x, Tensor s) -> Tensor {
    return tanh(x) * s
}
grad scaled_tanh(x, s) {
    x: grad * s * (1.0 - result * result / (s * s))
    s: grad * tanh(x)
}

fn twice_scaled_tanh(Tensor x, Tensor s) -> Tensor {
    return scaled_tanh(x, s) + scaled_tanh(x, s)
}

// Bodies that compute nothing: the block still wins (gradient reversal, stop-gradient).
fn reverse_grad(Tensor x) -> Tensor {
    return x
}
grad reverse_grad(x) {
    x: -grad
}

fn stop_grad(Tensor x) -> Tensor {
    return cast(x, f32)
}
grad stop_grad(x) {
    x: grad * 0.0
}

fn stopped_times(Tensor x) -> Tensor {
    return stop_grad(x) * reverse_grad(x)
}
""")
    x = f64([-1.7, -0.2, 0.3, 1.4, 2.6])  # no exact halves
    g = normal(r, [5], F64)
    c.vjp("ste_round", "ste", {"x": x}, [g], [g])
    c.vjp("ste_times", "ste_inlined", {"x": x}, [g], [g * (x + np.round(x))])
    c.vjp("plain_round_times", "derived_round", {"x": x}, [g], [g * np.round(x)])
    x, s = normal(r, [2, 3]), uniform(r, [3], 0.5, 2)
    g = normal(r, [2, 3])
    xd, sd, gd = f64(x), f64(s), f64(g)
    t = np.tanh(xd)
    dx = gd * (1 - t * t) * sd
    ds = (gd * t).sum(0)
    c.vjp("scaled_tanh", "custom_two_inputs", {"x": x, "s": s}, [g], [cast(dx, F32), cast(ds, F32)])
    c.vjp("twice_scaled_tanh", "custom_twice", {"x": x, "s": s}, [g], [cast(2 * dx, F32), cast(2 * ds, F32)])
    x, g = normal(r, [4]), normal(r, [4])
    c.vjp("reverse_grad", "reversed", {"x": x}, [g], [-g])
    c.vjp("stop_grad", "stopped", {"x": x}, [g], [g * 0])
    # d/dx stop(x) * rev(x) = 0 * x * g + x * (-g)
    c.vjp("stopped_times", "stopped_times", {"x": x}, [g], [-(x * g)])
    return c


def broadcast_grads():
    r = rng(13)
    c = Case("grad", "broadcast_grads", "Gradients of broadcast operands are summed back to their own\n"
             "shape: size-1 axes, rank extension, rank 0.", """
fn add2(Tensor x, Tensor y) -> Tensor {
    return x + y
}

fn mul2(Tensor x, Tensor y) -> Tensor {
    return x * y
}

fn div2(Tensor x, Tensor y) -> Tensor {
    return x / y
}
""")
    for label, xs, ys in [("col_row", [3, 1], [1, 4]), ("rank_extend", [2, 1, 3], [4, 1]),
                          ("rank0", [], [2, 3]), ("same", [2, 2], [2, 2])]:
        x, y = normal(r, xs), uniform(r, ys, 0.5, 2)
        out_shape = np.broadcast_shapes(tuple(xs), tuple(ys))
        g = normal(r, out_shape)
        xd, yd, gd = f64(x), f64(y), f64(g)
        c.vjp("add2", f"add_{label}", {"x": x, "y": y}, [g],
              [cast(ref.sum_to(gd, xs), F32), cast(ref.sum_to(gd, ys), F32)])
        c.vjp("mul2", f"mul_{label}", {"x": x, "y": y}, [g],
              [cast(ref.sum_to(gd * yd, xs), F32), cast(ref.sum_to(gd * xd, ys), F32)])
        c.vjp("div2", f"div_{label}", {"x": x, "y": y}, [g],
              [cast(ref.sum_to(gd / yd, xs), F32), cast(ref.sum_to(-gd * xd / yd**2, ys), F32)])
    return c


def matmul_grads():
    r = rng(14)
    c = Case("grad", "matmul_grads", "matmul gradients: 2-D, batched, broadcast batch axes.", """
fn mm(Tensor a, Tensor b) -> Tensor {
    return matmul(a, b)
}
""")
    for label, sa, sb, dt in [("2d", [3, 4], [4, 5], F32), ("batched", [2, 3, 4], [2, 4, 5], F32),
                              ("batch_left", [2, 3, 4], [4, 5], F32),
                              ("batch_broadcast", [1, 3, 4], [2, 4, 2], F64)]:
        a, b = normal(r, sa, dt), normal(r, sb, dt)
        g = normal(r, np.matmul(a, b).shape, dt)
        da, db = ref.matmul_grads(f64(a), f64(b), f64(g))
        c.vjp("mm", label, {"a": a, "b": b}, [g], [cast(da, dt), cast(db, dt)])
    return c


def reduction_grads():
    r = rng(15)
    c = Case("grad", "reduction_grads", "Gradients of sum, mean, max (unique maxima), prod; keepdim and\n"
             "negative axes.", """
fn sum_of(Tensor x, *, Int[] dims = [], Bool keepdim = false) -> Tensor {
    return sum(x, dims=dims, keepdim=keepdim)
}

fn mean_of(Tensor x, *, Int[] dims = [], Bool keepdim = false) -> Tensor {
    return mean(x, dims=dims, keepdim=keepdim)
}

fn max_of(Tensor x, *, Int[] dims = [], Bool keepdim = false) -> Tensor {
    return max(x, dims=dims, keepdim=keepdim)
}

fn prod_of(Tensor x, *, Int[] dims = [], Bool keepdim = false) -> Tensor {
    return prod(x, dims=dims, keepdim=keepdim)
}

fn sum_squares(Tensor x) -> Tensor {
    return sum(x * x, dims=[0])
}
""")
    x = normal(r, [2, 3, 4])
    xd = f64(x)
    g = normal(r, [2, 3])
    c.vjp("sum_of", "sum_last", {"x": x, "dims": [-1]}, [g], [cast(np.broadcast_to(f64(g)[..., None], x.shape), F32)])
    g = normal(r, [])
    c.vjp("sum_of", "sum_all", {"x": x}, [g], [cast(np.full(x.shape, f64(g)), F32)])
    g = normal(r, [1, 3, 1])
    c.vjp("mean_of", "mean_keep", {"x": x, "dims": [0, -1], "keepdim": True}, [g],
          [cast(np.broadcast_to(f64(g) / 8, x.shape), F32)])
    g = normal(r, [2, 4])
    mask = xd == xd.max(1, keepdims=True)
    c.vjp("max_of", "max_mid", {"x": x, "dims": [1]}, [g], [cast(mask * f64(g)[:, None, :], F32)])
    p = uniform(r, [3, 4], 0.5, 1.5)
    g = normal(r, [3, 1])
    pd = f64(p)
    c.vjp("prod_of", "prod_keep", {"x": p, "dims": [-1], "keepdim": True}, [g],
          [cast(f64(g) * pd.prod(-1, keepdims=True) / pd, F32)])
    x2 = normal(r, [3, 2], F64)
    g2 = normal(r, [2], F64)
    c.vjp("sum_squares", "sum_squares", {"x": x2}, [g2], [2 * x2 * g2])
    return c


def shape_grads():
    r = rng(16)
    c = Case("grad", "shape_grads", "Gradients through reshape, transpose, slice, concat, squeeze,\n"
             "unsqueeze and broadcast_to (computed by scattering through the same index moves).", """
fn moved(Tensor x) -> Tensor {
    return slice(transpose(reshape(x, [2, -1])), dim=0, start=-4, step=2)
}

fn moved_step1(Tensor x) -> Tensor {
    return slice(transpose(reshape(x, [2, -1])), dim=0, start=-4)
}

fn joined(Tensor x, Tensor y) -> Tensor {
    return concat([x, y * 2.0], dim=-1)
}

fn reshaped(Tensor x) -> Tensor {
    return unsqueeze(squeeze(x, dims=[1]), 0)
}

fn widened(Tensor x) -> Tensor {
    return broadcast_to(x, [2, 3, 4]) * 3.0
}

fn swapped(Tensor x) -> Tensor {
    return transpose(x, 0, 2)
}
""")
    x = normal(r, [3, 4])
    fwd = lambda a: a.reshape(2, -1).T[-4::2]  # noqa: E731
    g = normal(r, fwd(x).shape)
    c.vjp("moved", "moved", {"x": x}, [g], [cast(ref.linear_op_grad(x.shape, fwd, f64(g)), F32)])
    fwd = lambda a: a.reshape(2, -1).T[-4:]  # noqa: E731
    g = normal(r, fwd(x).shape)
    c.vjp("moved_step1", "moved_step1", {"x": x}, [g], [cast(ref.linear_op_grad(x.shape, fwd, f64(g)), F32)])
    a, b = normal(r, [2, 3]), normal(r, [2, 2])
    g = normal(r, [2, 5])
    c.vjp("joined", "concat", {"x": a, "y": b}, [g], [g[:, :3], 2 * g[:, 3:]])
    b1 = normal(r, [2, 1])
    g = normal(r, [2, 4])
    c.vjp("joined", "concat_static_item", {"x": a, "y": b1}, [g], [g[:, :3], 2 * g[:, 3:]])
    x = normal(r, [3, 1, 2])
    g = normal(r, [1, 3, 2])
    c.vjp("reshaped", "squeeze_unsqueeze", {"x": x}, [g], [g.reshape(3, 1, 2)])
    x = normal(r, [3, 1])
    g = normal(r, [2, 3, 4])
    c.vjp("widened", "broadcast_to", {"x": x}, [g], [cast(3 * f64(g).sum((0, 2))[:, None], F32)])
    x = normal(r, [2, 3, 4], F64)
    g = normal(r, [4, 3, 2], F64)
    c.vjp("swapped", "transpose_swap", {"x": x}, [g], [np.swapaxes(g, 0, 2)])
    return c


def elementwise_grads():
    r = rng(17)
    c = Case("grad", "elementwise_grads", "The prelude's `grad` blocks of the elementwise primitives, one\n"
             "function each, against hand-written derivatives.", """
fn f_sin(Tensor x) -> Tensor { return sin(x) }
fn f_cos(Tensor x) -> Tensor { return cos(x) }
fn f_erf(Tensor x) -> Tensor { return erf(x) }
fn f_exp(Tensor x) -> Tensor { return exp(x) }
fn f_tanh(Tensor x) -> Tensor { return tanh(x) }
fn f_sigmoid(Tensor x) -> Tensor { return sigmoid(x) }
fn f_expm1(Tensor x) -> Tensor { return expm1(x) }
fn f_neg(Tensor x) -> Tensor { return -x }
fn f_abs(Tensor x) -> Tensor { return abs(x) }
fn f_cube(Tensor x) -> Tensor { return x ** 3 }
fn f_log(Tensor x) -> Tensor { return log(x) }
fn f_sqrt(Tensor x) -> Tensor { return sqrt(x) }
fn f_rsqrt(Tensor x) -> Tensor { return rsqrt(x) }
fn f_reciprocal(Tensor x) -> Tensor { return reciprocal(x) }
fn f_log1p(Tensor x) -> Tensor { return log1p(x) }
fn f_log2(Tensor x) -> Tensor { return log2(x) }
fn f_pow(Tensor x, Tensor y) -> Tensor { return x ** y }
fn f_sub(Tensor x, Tensor y) -> Tensor { return x - y }
fn f_maximum(Tensor x, Tensor y) -> Tensor { return maximum(x, y) }
fn f_minimum(Tensor x, Tensor y) -> Tensor { return minimum(x, y) }
fn f_where(Tensor c, Tensor x, Tensor y) -> Tensor { return where(c, x, y) }
fn f_masked(Tensor x, Tensor y) -> Tensor { return where(x > y, x * y, exp(y)) }
fn f_cast(Tensor x) -> Tensor { return cast(x, f64) * 2.0 }
""")
    x = uniform(r, [2, 5], -2, 2, F64)
    x[x == 0] = 0.5
    g = normal(r, [2, 5], F64)
    t, s = np.tanh(x), ref.sigmoid(x)
    for fn, d in [("f_sin", np.cos(x)), ("f_cos", -np.sin(x)),
                  ("f_erf", 2 / np.sqrt(np.pi) * np.exp(-x * x)), ("f_exp", np.exp(x)),
                  ("f_tanh", 1 - t * t), ("f_sigmoid", s * (1 - s)), ("f_expm1", np.exp(x)),
                  ("f_neg", -np.ones_like(x)), ("f_abs", np.sign(x)), ("f_cube", 3 * x * x)]:
        c.vjp(fn, fn[2:], {"x": x}, [g], [g * d])
    p = uniform(r, [2, 5], 0.2, 3, F64)
    for fn, d in [("f_log", 1 / p), ("f_sqrt", 0.5 / np.sqrt(p)), ("f_rsqrt", -0.5 * p**-1.5),
                  ("f_reciprocal", -1 / p**2), ("f_log1p", 1 / (1 + p)),
                  ("f_log2", 1 / (p * np.log(2)))]:
        c.vjp(fn, fn[2:], {"x": p}, [g], [g * d])
    # f32 versions of a few, so the f32 grads are exercised too
    x32, g32 = x.astype(F32), g.astype(F32)
    c.vjp("f_tanh", "tanh_f32", {"x": x32}, [g32], [cast(f64(g32) * (1 - np.tanh(f64(x32)) ** 2), F32)])
    c.vjp("f_erf", "erf_f32", {"x": x32}, [g32],
          [cast(f64(g32) * 2 / np.sqrt(np.pi) * np.exp(-f64(x32) ** 2), F32)])
    y = uniform(r, [5], 0.2, 3, F64)
    gy = g
    c.vjp("f_pow", "pow", {"x": p, "y": y}, [gy],
          [gy * y * p ** (y - 1), (gy * p**y * np.log(p)).sum(0)])
    c.vjp("f_sub", "sub", {"x": p, "y": y}, [gy], [gy, -gy.sum(0)])
    a, b = normal(r, [2, 5], F64), normal(r, [2, 5], F64)
    c.vjp("f_maximum", "maximum", {"x": a, "y": b}, [g], [g * (a > b), g * (a < b)])
    c.vjp("f_minimum", "minimum", {"x": a, "y": b}, [g], [g * (a < b), g * (a > b)])
    cond = a > 0
    c.vjp("f_where", "where", {"c": cond, "x": a, "y": b}, [g], [g * cond, g * ~cond])
    c.vjp("f_masked", "masked", {"x": a, "y": b}, [g],
          [g * b * (a > b), g * a * (a > b) + g * np.exp(b) * (a <= b)])
    x32 = normal(r, [3])
    g64 = normal(r, [3], F64)
    c.vjp("f_cast", "cast_f32_to_f64", {"x": x32}, [g64], [cast(2 * g64, F32)])
    return c


def derived_one_grads():
    r = rng(17)
    c = Case("grad", "derived_one_grads", "Gradients where a size the graph derives (reshape with -1, a slice\n"
             "length) is 1 at run time and broadcasts: summed back over the broadcast axis, as for an\n"
             "input of size 1; the same functions with sizes where it is not 1, in one session.", """
fn reshaped_plus(Tensor x, Tensor y) -> Tensor {
    return reshape(x, [4, -1]) * y
}

fn first_col_times(Tensor y) -> Tensor {
    return slice(y, dim=1, start=0, end=1) * y
}

fn joined_twice(Tensor y, Tensor z) -> Tensor {
    return concat([y, z], dim=1) * full([2, 3], 2.0)
}

fn ones_joined(Tensor y) -> Tensor {
    return concat([full([3], 1.0), y]) * full([3], 2.0)
}
""")
    for label, n, m in [("to_1", 4, 3), ("to_3", 12, 3)]:
        x, y = normal(r, [n]), normal(r, [4, m])
        g = normal(r, [4, m])
        xd, yd, gd = f64(x).reshape(4, -1), f64(y), f64(g)
        c.vjp("reshaped_plus", f"reshape_{label}", {"x": x, "y": y}, [g],
              [cast(ref.sum_to(gd * yd, xd.shape).reshape(n), F32), cast(gd * xd, F32)])
    for label, shape in [("4x3", [4, 3]), ("2x1", [2, 1])]:
        y, g = normal(r, shape), normal(r, shape)
        yd, gd = f64(y), f64(g)
        gy = gd * yd[:, 0:1]
        gy[:, 0:1] += (gd * yd).sum(1, keepdims=True)
        c.vjp("first_col_times", f"first_col_{label}", {"y": y}, [g], [cast(gy, F32)])
    # A concat whose derived size the call decides equal to a static one (the `full`): each
    # item's part of the cotangent must still take the item's own (runtime) size.
    for label, ny in [("1_2", 1), ("2_1", 2), ("0_3", 0)]:
        y, z, g = normal(r, [2, ny]), normal(r, [2, 3 - ny]), normal(r, [2, 3])
        c.vjp("joined_twice", f"concat_decided_{label}", {"y": y, "z": z}, [g],
              [2 * g[:, :ny], 2 * g[:, ny:]])
    g = normal(r, [3])
    c.vjp("ones_joined", "concat_decided_empty", {"y": np.zeros(0, F32)}, [g], [np.zeros(0, F32)])
    return c


def view_grads():
    c = Case("grad", "view_grads", "Gradients that slice the cotangent along an axis of size 1 behind another:\n"
             "the slices are read in place by the fused kernels (fusion's views).", """
fn tripled(Tensor x) -> Tensor {
    return concat([x, x, x], dim=1)
}

fn reversed(Tensor x) -> Tensor {
    return slice(x, dim=0, start=-1, step=-1) * 2.0
}
""")
    x = np.arange(6, dtype=F32).reshape(6, 1)
    g = np.arange(18, dtype=F32).reshape(6, 3)
    c.vjp("tripled", "concat_6x1", {"x": x}, [g], [g.sum(1, keepdims=True)])
    x12 = np.arange(12, dtype=F32).reshape(12, 1)
    g12 = np.arange(12, dtype=F32).reshape(12, 1) - 5
    c.vjp("reversed", "reversed_12x1", {"x": x12}, [g12], [2 * g12[::-1]])
    return c


def division_grads():
    r = rng(23)
    c = Case("grad", "division_grads", "`remainder` (and `%`): `grad` for x, `-grad * floor_div(x, y)` for y;\n"
             "`floor_div`: zero. Operands away from the jumps at integer quotients.", """
fn f_rem(Tensor x, Tensor y) -> Tensor { return x % y }
fn f_rem_scalar(Tensor x) -> Tensor { return remainder(x, 0.75) * x }
fn f_floor_div(Tensor x, Tensor y) -> Tensor { return floor_div(x, y) * y + x }
""")
    x = uniform(r, [3, 4], -6, 6, F64)
    y = np.array([-1.7, -0.9, 1.3, 2.2], dtype=F64)
    q = np.floor_divide(x, y)
    # keep every quotient well inside its integer interval (no jump within finite differences)
    frac = x / y - q
    x = np.where((frac < 0.1) | (frac > 0.9), (q + 0.5) * y, x)
    q = np.floor_divide(x, y)
    g = normal(r, [3, 4], F64)
    c.vjp("f_rem", "rem", {"x": x, "y": y}, [g], [g, (-g * q).sum(0)])
    x32, y32, g32 = x.astype(F32), y.astype(F32), g.astype(F32)
    c.vjp("f_rem", "rem_f32", {"x": x32, "y": y32}, [g32],
          [g32, cast((-f64(g32) * np.floor_divide(x32, y32)).sum(0), F32)])
    c.vjp("f_rem_scalar", "rem_scalar", {"x": x}, [g], [g * x + g * np.remainder(x, 0.75)])
    c.vjp("f_floor_div", "floor_div", {"x": x, "y": y}, [g], [g, (g * q).sum(0)])
    return c

def trig_grads():
    r = rng(23)
    c = Case("grad", "trig_grads", "Gradients of asin acos atan sinh cosh atan2 (their prelude `grad`\n"
             "blocks), against derivatives checked by central differences; atan2 with broadcasting\n"
             "(y's gradient summed back over the broadcast axis).", """
fn f_asin(Tensor x) -> Tensor { return asin(x) }
fn f_acos(Tensor x) -> Tensor { return acos(x) }
fn f_atan(Tensor x) -> Tensor { return atan(x) }
fn f_sinh(Tensor x) -> Tensor { return sinh(x) }
fn f_cosh(Tensor x) -> Tensor { return cosh(x) }
fn f_atan2(Tensor y, Tensor x) -> Tensor { return atan2(y, x) }
fn f_chain(Tensor x) -> Tensor { return atan(sinh(x)) * acos(0.5 * x) }
""")

    def checked(f, args, index, g, analytic, what):
        numeric = ref.numeric_vjp(f, [a.copy() for a in args], index, g)
        assert np.allclose(analytic, numeric, rtol=1e-5, atol=1e-6), (what, analytic, numeric)
        return analytic

    x = uniform(r, [2, 5], -0.9, 0.9, F64)
    g = normal(r, [2, 5], F64)
    w = uniform(r, [2, 5], -3, 3, F64)
    for fn, f, arg, d in [("f_asin", np.arcsin, x, 1 / np.sqrt(1 - x * x)),
                          ("f_acos", np.arccos, x, -1 / np.sqrt(1 - x * x)),
                          ("f_atan", np.arctan, w, 1 / (1 + w * w)),
                          ("f_sinh", np.sinh, w, np.cosh(w)),
                          ("f_cosh", np.cosh, w, np.sinh(w))]:
        c.vjp(fn, fn[2:], {"x": arg}, [g], [checked(f, [arg], 0, g, g * d, fn)])
        a32, g32 = arg.astype(F32), g.astype(F32)
        d32 = {"f_asin": lambda v: 1 / np.sqrt(1 - v * v), "f_acos": lambda v: -1 / np.sqrt(1 - v * v),
               "f_atan": lambda v: 1 / (1 + v * v), "f_sinh": np.cosh, "f_cosh": np.sinh}[fn]
        c.vjp(fn, f"{fn[2:]}_f32", {"x": a32}, [g32], [cast(f64(g32) * d32(f64(a32)), F32)])
    # atan2: y [2, 1] broadcast against x [2, 5], every quadrant
    y = np.array([[1.3], [-0.7]])
    xa = uniform(r, [2, 5], -2, 2, F64)
    den = xa * xa + y * y
    gy = checked(np.arctan2, [np.broadcast_to(y, xa.shape).copy(), xa], 0, g, g * xa / den, "atan2 y")
    gx = checked(np.arctan2, [y, xa], 1, g, -g * y / den, "atan2 x")
    c.vjp("f_atan2", "atan2", {"y": y, "x": xa}, [g], [gy.sum(1, keepdims=True), gx])
    y32, x32, g32 = y.astype(F32), xa.astype(F32), g.astype(F32)
    den32 = f64(x32) ** 2 + f64(y32) ** 2
    c.vjp("f_atan2", "atan2_f32", {"y": y32, "x": x32}, [g32],
          [cast((f64(g32) * f64(x32) / den32).sum(1, keepdims=True), F32),
           cast(-f64(g32) * f64(y32) / den32, F32)])
    # a chain: the product and chain rules through three of them
    v = uniform(r, [2, 5], -1.5, 1.5, F64)

    def chain(a):
        return np.arctan(np.sinh(a)) * np.arccos(0.5 * a)

    d = (np.cosh(v) / (1 + np.sinh(v) ** 2) * np.arccos(0.5 * v)
         - np.arctan(np.sinh(v)) * 0.5 / np.sqrt(1 - 0.25 * v * v))
    c.vjp("f_chain", "chain", {"x": v}, [g], [checked(chain, [v], 0, g, g * d, "chain")])
    return c


if __name__ == "__main__":
    ref.self_check()  # the hand-derived gradients agree with finite differences
    write_all([conv_grads(), spec_grads(), custom_grads(), broadcast_grads(), matmul_grads(), reduction_grads(),
               shape_grads(), elementwise_grads(), derived_one_grads(), slice_grads(), concat_grads(),
               view_grads(), division_grads(), trig_grads(), index_grads(), dropout_grads()],
              "gen_grad_cases.py")
