#!/usr/bin/env python3
"""Generates the file tests of the index and scan primitives (spec section 7): the `run` case
`tests/cases/run/scans.tfn` and the `grad` case `tests/cases/grad/scan_grads.tfn`, with their
`.npy` inputs and the outputs NumPy computes.

    pip install numpy && python3 tests/tools/gen_scan_cases.py

Writes only these two cases (the other generators own the rest of `tests/cases`).
Conformance-style functions: triangular masks from `iota_like` comparisons, a causal softmax,
hardmax (`one_hot(argmax(x))`), `arange` with a dtype, `one_hot` with negative indices.
"""

import itertools

import numpy as np

import nnref as ref
from casegen import Case, f64, normal, rng, uniform

F32, F64, I32, I64 = np.float32, np.float64, np.int32, np.int64

RUN_SOURCE = """
use "std:nn"

fn scans(Tensor x) -> (Tensor, Tensor, Tensor, Tensor) {
    return (cumsum(x, dim=0), cumsum(x, dim=-1, exclusive=true), cumprod(x, dim=1, reverse=true),
            cumprod(x, dim=-1, exclusive=true, reverse=true))
}

fn scan_dim(Tensor x, *, Int dim, Bool exclusive, Bool reverse) -> (Tensor, Tensor) {
    return (cumsum(x, dim=dim, exclusive=exclusive, reverse=reverse),
            cumprod(x, dim=dim, exclusive=exclusive, reverse=reverse))
}

fn scan_between(Tensor x) -> Tensor {
    return cumsum(exp(x) * 0.5, dim=-1) + x
}

fn mins(Tensor x) -> (Tensor, Tensor, Tensor) {
    return (argmin(x), argmin(x, dim=0, keepdim=true), argmax(x, dim=0))
}

fn tril(Tensor x) -> Tensor {
    return where(iota_like(x, dim=-1) <= iota_like(x, dim=-2), x, 0.0)
}

fn triu(Tensor x, *, Int k) -> Tensor {
    return where(iota_like(x, dim=-1) - iota_like(x, dim=-2) >= k, x, 0.0)
}

fn causal_softmax(Tensor s) -> Tensor {
    return softmax(where(iota_like(s, dim=-1) <= iota_like(s, dim=-2), s, -inf))
}

fn positions(Tensor x) -> (Tensor, Tensor, Tensor) {
    return (iota_like(x, dim=0), iota_like(x, dim=1, dtype=f32) * x, iota_like(x, dim=-1, dtype=i32))
}

fn ranges(Tensor x, *, Int n) -> (Tensor, Tensor, Tensor) {
    return (arange(n), arange(n, dtype=f64) * 0.5 + x, arange(n, dtype=i32) * 2)
}

fn hardmax(Tensor x, *, Int classes) -> Tensor {
    return one_hot(argmax(x, dim=-1), classes=classes, dtype=f32)
}

fn onehot(Tensor index, *, Int classes) -> Tensor {
    return one_hot(index, classes=classes)
}

fn specials(Tensor x) -> (Tensor, Tensor) {
    return (maximum(x, -inf) + minimum(x, inf), where(x > 0.0, nan, x))
}
"""

GRAD_SOURCE = """
fn cs(Tensor x, *, Int dim, Bool exclusive, Bool reverse) -> Tensor {
    return cumsum(x, dim=dim, exclusive=exclusive, reverse=reverse)
}

fn cp(Tensor x, *, Int dim, Bool exclusive, Bool reverse) -> Tensor {
    return cumprod(x, dim=dim, exclusive=exclusive, reverse=reverse)
}

fn chain(Tensor x) -> Tensor {
    return cumprod(x * x, dim=-1) * cumsum(x, dim=0, reverse=true)
}
"""


def np_scan(op, x, axis, exclusive, reverse):
    """Sequential scan in x's dtype; exclusive/reverse by flips and shifts."""
    f = np.cumsum if op == "cumsum" else np.cumprod
    y = np.flip(x, axis) if reverse else x
    r = f(y, axis=axis, dtype=x.dtype)
    if exclusive:
        ident = np.zeros_like if op == "cumsum" else np.ones_like
        first = ident(np.take(r, [0], axis=axis))
        r = np.concatenate([first, np.take(r, range(r.shape[axis] - 1), axis=axis)], axis=axis)
    return np.flip(r, axis) if reverse else r


def cumprod_grad_ref(x, g, axis, exclusive, reverse):
    """dx_i = sum_j g_j * prod_{k in S_j, k != i} x_k (S_j: the indices y_j multiplies), in
    float64 without division."""
    xm = np.moveaxis(f64(x), axis, -1)
    gm = np.moveaxis(f64(g), axis, -1)
    n = xm.shape[-1]
    dx = np.zeros_like(xm)
    for j in range(n):
        if reverse:
            s = range(j + 1, n) if exclusive else range(j, n)
        else:
            s = range(0, j) if exclusive else range(0, j + 1)
        for i in s:
            p = np.ones(xm.shape[:-1])
            for k in s:
                if k != i:
                    p = p * xm[..., k]
            dx[..., i] += gm[..., j] * p
    return np.moveaxis(dx, -1, axis)


def tag(exclusive, reverse):
    return f"{'ex' if exclusive else 'in'}{'_rev' if reverse else ''}"


def scans():
    r = rng(71)
    c = Case("run", "scans", "cumsum, cumprod, argmin, iota_like, arange, one_hot, inf/nan literals\n"
             "(spec section 7) against NumPy: every dim and exclusive/reverse combination, int and\n"
             "float dtypes (ints wrap), vector bodies and scalar tails, triangular masks, a causal\n"
             "softmax (the mask is computed inside the softmax kernel), hardmax, ranges.", RUN_SOURCE)
    for dt, name in [(F32, "f32"), (F64, "f64"), (I32, "i32"), (I64, "i64")]:
        if dt in (F32, F64):
            x = uniform(r, [3, 4], -1.5, 1.5, dt)
        else:
            x = r.integers(-4, 5, [3, 4]).astype(dt)
        c.run("scans", f"scans_{name}", {"x": x},
              [np_scan("cumsum", x, 0, False, False), np_scan("cumsum", x, 1, True, False),
               np_scan("cumprod", x, 1, False, True), np_scan("cumprod", x, 1, True, True)])
    # rank 3, every dim and combination; 3 x 5 x 9 columns: vector blocks and scalar tails
    x3 = uniform(r, [3, 5, 9], 0.5, 1.5, F32)
    for dim in [0, 1, 2, -1]:
        for exclusive, reverse in itertools.product([False, True], repeat=2):
            axis = dim % 3
            c.run("scan_dim", f"scan_dim{dim}_{tag(exclusive, reverse)}",
                  {"x": x3, "dim": dim, "exclusive": exclusive, "reverse": reverse},
                  [np_scan("cumsum", x3, axis, exclusive, reverse), np_scan("cumprod", x3, axis, exclusive, reverse)])
    big = np.array([[2**31 - 1, 1, 2**30, 2**30]], dtype=I32)
    c.run("scan_dim", "scan_wraps_i32", {"x": big, "dim": 1, "exclusive": False, "reverse": False},
          [np_scan("cumsum", big, 1, False, False), np_scan("cumprod", big, 1, False, False)])
    x = normal(r, [4, 11])
    c.run("scan_between", "scan_between", {"x": x},
          [(np.cumsum(f64(np.exp(x) * F32(0.5)), axis=-1) + f64(x)).astype(F32)])
    x = np.array([[3.0, np.nan, 1.0, 1.0], [0.5, 0.5, np.nan, -2.0], [1.0, -7.0, 1.0, -7.0]], F32)
    c.run("mins", "mins_nan", {"x": x},
          [np.argmin(x, -1), np.argmin(x, 0, keepdims=True), np.argmax(x, 0)])
    xi = r.integers(-3, 3, [5, 6]).astype(I64)
    c.run("mins", "mins_ties_i64", {"x": xi},
          [np.argmin(xi, -1), np.argmin(xi, 0, keepdims=True), np.argmax(xi, 0)])
    for shape in [[5, 5], [2, 3, 9], [4, 6]]:
        x = normal(r, shape)
        c.run("tril", f"tril_{'x'.join(map(str, shape))}", {"x": x}, [np.tril(x)])
    x = normal(r, [6, 7], F64)
    for k in [-2, 0, 3]:
        c.run("triu", f"triu_k{k}", {"x": x, "k": k}, [np.triu(x, k)])
    s = normal(r, [2, 7, 7], scale=2.0)
    masked = np.where(np.tril(np.ones((7, 7), bool)), f64(s), -np.inf)
    c.run("causal_softmax", "causal_softmax", {"s": s}, [ref.softmax(masked).astype(F32)])
    x = normal(r, [3, 6])
    c.run("positions", "positions", {"x": x},
          [np.indices(x.shape)[0].astype(I64), np.indices(x.shape)[1].astype(F32) * x,
           np.indices(x.shape)[1].astype(I32)])
    xr = normal(r, [2, 1], F64)
    for n in [0, 1, 6]:
        c.run("ranges", f"ranges_{n}", {"x": xr, "n": n},
              [np.arange(n, dtype=I64), np.arange(n, dtype=F64) * 0.5 + xr, np.arange(n, dtype=I32) * 2])
    x = normal(r, [4, 5])
    c.run("hardmax", "hardmax", {"x": x, "classes": 5}, [np.eye(5, dtype=F32)[np.argmax(x, -1)]])
    idx = np.array([[0, 3, -1], [2, -4, 1]], dtype=I32)
    c.run("onehot", "onehot_negative", {"index": idx, "classes": 4}, [np.eye(4, dtype=I64)[idx]])
    idx = np.array([1, 0, 2], dtype=I64)
    c.run("onehot", "onehot_i64", {"index": idx, "classes": 3}, [np.eye(3, dtype=I64)[idx]])
    x = np.array([-np.inf, -1.0, 0.0, 2.0, np.inf, np.nan], F32)
    c.run("specials", "specials", {"x": x},
          [np.maximum(x, -np.inf) + np.minimum(x, np.inf), np.where(x > 0, np.nan, x).astype(F32)])
    return c


def scan_grads():
    r = rng(72)
    c = Case("grad", "scan_grads", "Gradients of cumsum (a reversed cumsum) and cumprod (exact where\n"
             "elements are zero: one zero and several zeros in a lane; no division), every\n"
             "exclusive/reverse combination, against sums of products in float64.", GRAD_SOURCE)
    x = uniform(r, [3, 6], -1.5, 1.5, F64)
    g = normal(r, [3, 6], F64)
    for dim in [0, 1]:
        for exclusive, reverse in itertools.product([False, True], repeat=2):
            attrs = {"dim": dim, "exclusive": exclusive, "reverse": reverse}
            c.vjp("cs", f"cs_dim{dim}_{tag(exclusive, reverse)}", {"x": x, **attrs}, [g],
                  [np_scan("cumsum", g, dim, exclusive, not reverse)])
    xz = uniform(r, [3, 6], 0.5, 1.5, F64)
    xz[1, 2] = 0.0
    xz[2, 1] = 0.0
    xz[2, 4] = 0.0
    for dim in [0, 1]:
        for exclusive, reverse in itertools.product([False, True], repeat=2):
            attrs = {"dim": dim, "exclusive": exclusive, "reverse": reverse}
            c.vjp("cp", f"cp_dim{dim}_{tag(exclusive, reverse)}", {"x": xz, **attrs}, [g],
                  [cumprod_grad_ref(xz, g, dim, exclusive, reverse)])
    xf = uniform(r, [2, 9], -1.2, 1.2, F32)
    xf[0, 3] = 0.0
    gf = normal(r, [2, 9], F32)
    c.vjp("cp", "cp_f32_zero", {"x": xf, "dim": -1, "exclusive": False, "reverse": False}, [gf],
          [cumprod_grad_ref(xf, gf, 1, False, False).astype(F32)])
    # chain: d/dx [cumprod(x*x, -1) * cumsum(x, 0, reverse)]
    x = uniform(r, [3, 4], -1.2, 1.2, F64)
    x[1, 1] = 0.0
    g = normal(r, [3, 4], F64)
    p, s = np.cumprod(x * x, axis=-1), np.flip(np.cumsum(np.flip(x, 0), axis=0), 0)
    dp = cumprod_grad_ref(x * x, g * s, 1, False, False) * 2 * x
    ds = np.cumsum(g * p, axis=0)
    c.vjp("chain", "chain", {"x": x}, [g], [dp + ds])
    return c


if __name__ == "__main__":
    for case in [scans(), scan_grads()]:
        case.write("gen_scan_cases.py")
