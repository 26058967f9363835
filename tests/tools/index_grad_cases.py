"""The `grad` file tests of the indexed ops (written by `gen_grad_cases.py`): `gather`,
`index_select`, `scatter_add` (its `x` and its `src`) and `index_add`, with duplicate and
negative indices, an index smaller than `x` (gather), an embedding-shaped index of rank 2, and
a cross-entropy. Every expected gradient is written with NumPy from the ops' definitions and
checked against central differences (`nnref.numeric_vjp`) before it is saved.
"""

import numpy as np

import nnref as ref
from casegen import Case, f64, normal, rng

F32, F64 = np.float32, np.float64

SOURCE = """
use "std:nn"

// gather along the last axis, duplicates and negative indices; the square makes the
// gradient depend on x (and the rules move the gather onto x).
fn g_last(Tensor x, Tensor<i64> i) -> Tensor { return gather(x * x, i, dim=1) }
// gather along axis 0 with an index smaller than x on axis 1.
fn g_first(Tensor x, Tensor<i64> i) -> Tensor { return exp(gather(x, i, dim=0)) }
// An embedding: a rank-2 index into the rows of a table.
fn embed(Tensor table, Tensor<i64> tokens) -> Tensor { return sin(index_select(table, tokens)) }
fn take_cols(Tensor x, Tensor<i64> i) -> Tensor { return index_select(x, i, dim=1) * slice(x, dim=0, start=0, end=1) }
// scatter_add: gradients for x and src.
fn scatter(Tensor x, Tensor<i64> i, Tensor src) -> Tensor {
    let y = scatter_add(x, i, src, dim=1)
    return y * y
}
fn add_rows(Tensor x, Tensor<i64> i, Tensor src) -> Tensor {
    let y = index_add(x, i, src, dim=0)
    return y * y
}
// cross_entropy is std:nn's: -mean(gather(log_softmax(logits), unsqueeze(targets, -1))).
"""


def resolve(index, n):
    return np.where(index < 0, index + n, index)


def gather(x, index, axis):
    sl = tuple(slice(0, n) if a != axis else slice(None) for a, n in enumerate(index.shape))
    return np.take_along_axis(x[sl], resolve(index, x.shape[axis]), axis)


def scatter_add(x, index, src, axis):
    out = x.copy()
    idx = resolve(index, x.shape[axis])
    for pos in np.ndindex(*index.shape):
        target = list(pos)
        target[axis] = idx[pos]
        out[tuple(target)] += src[pos]
    return out


def index_add(x, index, src, axis):
    out = x.copy()
    idx = resolve(index, x.shape[axis])
    r = index.ndim
    for pos in np.ndindex(*src.shape):
        q = pos[axis:axis + r]
        target = pos[:axis] + (idx[q],) + pos[axis + r:]
        out[target] += src[pos]
    return out


def checked(f, args, k, g, analytic, what):
    numeric = ref.numeric_vjp(f, [np.array(a, copy=True) for a in args], k, g)
    assert np.allclose(analytic, numeric, rtol=1e-5, atol=1e-6), (what, analytic, numeric)
    return analytic


def index_grads():
    r = rng(41)
    c = Case("grad", "index_grads", "Gradients of gather, index_select, scatter_add (x and src) and\n"
             "index_add: duplicate and negative indices, an index smaller than x, an embedding,\n"
             "a cross-entropy; NumPy definitions checked by central differences.", SOURCE)
    # gather along axis 1: [3, 4] -> [3, 5], duplicates in every row, negatives.
    x = normal(r, [3, 4], F64)
    i = np.array([[0, 0, 3, -1, 2], [1, 1, 1, -4, 0], [3, 2, -2, 2, 2]], dtype=np.int64)
    g = normal(r, [3, 5], F64)
    dx = 2 * x * scatter_add(np.zeros_like(x), i, g, 1)
    dx = checked(lambda a: gather(a * a, i, 1), [x], 0, g, dx, "g_last")
    c.vjp("g_last", "gather_last", {"x": x, "i": i}, [g], [dx])
    x32, g32 = x.astype(F32), g.astype(F32)
    c.vjp("g_last", "gather_last_f32", {"x": x32, "i": i}, [g32],
          [(2 * f64(x32) * scatter_add(np.zeros((3, 4)), i, f64(g32), 1)).astype(F32)])
    # gather along axis 0, index [2, 2] into x [4, 3] (smaller on axis 1).
    x = normal(r, [4, 3], F64)
    i = np.array([[3, -4], [3, 1]], dtype=np.int64)
    g = normal(r, [2, 2], F64)
    e = np.exp(gather(x, i, 0))
    dx = checked(lambda a: np.exp(gather(a, i, 0)), [x], 0, g,
                 scatter_add(np.zeros_like(x), i, g * e, 0), "g_first")
    c.vjp("g_first", "gather_first_smaller", {"x": x, "i": i}, [g], [dx])
    # embedding: table [5, 3], tokens [2, 4] with repeats and a negative token.
    table = normal(r, [5, 3], F64)
    tokens = np.array([[0, 4, 4, 1], [-1, 2, 0, 0]], dtype=np.int64)
    g = normal(r, [2, 4, 3], F64)
    d = g * np.cos(np.take(table, resolve(tokens, 5), axis=0))
    dt = checked(lambda a: np.sin(np.take(a, resolve(tokens, 5), axis=0)), [table], 0, g,
                 index_add(np.zeros_like(table), tokens, d, 0), "embed")
    c.vjp("embed", "embed", {"table": table, "tokens": tokens}, [g], [dt])
    t32, g32 = table.astype(F32), g.astype(F32)
    d32 = f64(g32) * np.cos(np.take(f64(t32), resolve(tokens, 5), axis=0))
    c.vjp("embed", "embed_f32", {"table": t32, "tokens": tokens}, [g32],
          [index_add(np.zeros((5, 3)), tokens, d32, 0).astype(F32)])
    # index_select along axis 1 times x's first row: x is used twice.
    x = normal(r, [3, 4], F64)
    i = np.array([2, -1, 2, 0], dtype=np.int64)

    def take_cols(a):
        return np.take(a, resolve(i, 4), axis=1) * a[0:1]

    g = normal(r, [3, 4], F64)
    sel = np.take(x, resolve(i, 4), axis=1)
    dx = index_add(np.zeros_like(x), i, g * x[0:1], 1)
    dx[0] += (g * sel).sum(0)
    c.vjp("take_cols", "take_cols", {"x": x, "i": i}, [g], [checked(take_cols, [x], 0, g, dx, "take_cols")])
    # scatter_add: y = scatter_add(x, i, src, dim=1); f = y * y.
    x = normal(r, [3, 4], F64)
    i = np.array([[1, 1, -1], [0, 3, 3], [2, 2, 2]], dtype=np.int64)
    src = normal(r, [3, 3], F64)
    g = normal(r, [3, 4], F64)
    y = scatter_add(x, i, src, 1)
    dx = checked(lambda a, b: scatter_add(a, i, b, 1) ** 2, [x, src], 0, g, 2 * y * g, "scatter x")
    ds = checked(lambda a, b: scatter_add(a, i, b, 1) ** 2, [x, src], 1, g, gather(2 * y * g, i, 1),
                 "scatter src")
    c.vjp("scatter", "scatter_dups", {"x": x, "i": i, "src": src}, [g], [dx, ds])
    # index_add along axis 0 with a repeated row.
    x = normal(r, [4, 2], F64)
    i = np.array([3, -1, 0], dtype=np.int64)
    src = normal(r, [3, 2], F64)
    g = normal(r, [4, 2], F64)
    y = index_add(x, i, src, 0)
    dx = checked(lambda a, b: index_add(a, i, b, 0) ** 2, [x, src], 0, g, 2 * y * g, "index_add x")
    ds = checked(lambda a, b: index_add(a, i, b, 0) ** 2, [x, src], 1, g,
                 np.take(2 * y * g, resolve(i, 4), axis=0), "index_add src")
    c.vjp("add_rows", "index_add_dups", {"x": x, "i": i, "src": src}, [g], [dx, ds])
    # cross-entropy: d z = (softmax(z) - onehot(t)) * g / n.
    z = normal(r, [5, 6], F64, scale=2.0)
    t = np.array([0, 5, -1, 2, 2], dtype=np.int64)
    g = np.array(0.75)

    def ce(a):
        m = a.max(-1, keepdims=True)
        logp = a - m - np.log(np.exp(a - m).sum(-1, keepdims=True))
        return -gather(logp, t[:, None], 1).mean()

    p = np.exp(z - z.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    onehot = np.zeros_like(z)
    onehot[np.arange(5), resolve(t, 6)] = 1.0
    dz = checked(ce, [z], 0, g, g * (p - onehot) / 5, "cross_entropy")
    c.vjp("cross_entropy", "cross_entropy", {"logits": z, "targets": t}, [g], [dz])
    return c
