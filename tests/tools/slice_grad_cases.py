"""The `grad` file tests of `slice` and `concat` (written by `gen_grad_cases.py`): every kind of
slice (empty, `start > end`, negative and oversized steps, size-1 and zero-size axes, runtime
sizes) and `concat` items at runtime offsets, against NumPy's own slicing; plus gradients on
about a million elements, which must run in linear time and memory.

The expected gradients are NumPy index assignments (`dx[idx] = g`), so they are exact, and so
must tfn's be: a non-finite cotangent element moves to its place and nowhere else.
"""

import numpy as np

from casegen import Case, normal, rng

F32 = np.float32
I64_MAX = 2**63 - 1

SLICE_SOURCE = """
fn sliced(Tensor x, *, Int dim, Int start = 0, Int end = 9223372036854775807, Int step = 1) -> Tensor {
    return slice(x, dim=dim, start=start, end=end, step=step) * 1.5
}

fn stepped_row(Tensor x) -> Tensor {
    return slice(reshape(x, [1, 5]), dim=1, step=2)
}

fn twice(Tensor x) -> Tensor {
    return slice(slice(x, dim=0, start=-1, step=-2), dim=0, start=1, step=3)
}

// About a million elements (an outer product flattened) sliced with a step: a scalar result,
// so the data stay small.
fn big_stepped(Tensor a, Tensor b) -> Tensor {
    return sum(slice(reshape(unsqueeze(a, 1) * unsqueeze(b, 0), [-1]), dim=0, start=1, step=3))
}

fn big_reversed(Tensor a, Tensor b) -> Tensor {
    return sum(slice(reshape(unsqueeze(a, 1) * unsqueeze(b, 0), [-1]), dim=0, start=-2, step=-7))
}
"""


def slice_index(ndim, dim, start, end, step):
    """NumPy's index for tfn's `slice` (`end` omitted: to the end in the step's direction)."""
    idx = [slice(None)] * ndim
    idx[dim] = slice(start, None if end == I64_MAX else end, step)
    return tuple(idx)


def slice_grads():
    r = rng(23)
    c = Case("grad", "slice_grads", "The gradient of `slice`, the cotangent placed back into zeros: empty\n"
             "slices, start > end, negative and oversized steps, size-1 and zero-size axes, a\n"
             "non-finite cotangent (moved exactly), and a million elements (linear time), against\n"
             "NumPy's own slicing.", SLICE_SOURCE)
    cases = [
        # label, shape, dim, start, end, step
        ("empty", [7], 0, 3, 3, 1),
        ("empty_stepped", [5], 0, 5, I64_MAX, 2),
        ("start_after_end", [3, 4], 1, 2, 1, 1),
        ("start_after_end_stepped", [6], 0, 5, 1, 2),
        ("start_after_end_reversed", [6], 0, 1, 4, -1),
        ("prefix", [3, 5], 1, 0, 2, 1),
        ("middle", [7, 2], 0, 2, -2, 1),
        ("step2_odd", [9], 0, 0, I64_MAX, 2),
        ("step3_offset", [4, 10], 1, 1, I64_MAX, 3),
        ("step2_bounded", [11, 2], 0, -9, 8, 2),
        ("reversed", [7], 0, -1, I64_MAX, -1),
        ("reversed_step3", [3, 8], 1, -2, I64_MAX, -3),
        ("reversed_bounded", [8], 0, 5, 1, -2),
        ("reversed_default_start", [4, 3], 0, 0, I64_MAX, -1),
        ("step_past_axis", [2, 4], 1, 0, I64_MAX, 10),
        ("step_max", [5], 0, 1, I64_MAX, I64_MAX),
        ("step_min", [5], 0, -1, I64_MAX, -I64_MAX),
        ("start_past_end", [6], 0, 10, I64_MAX, 2),
        ("start_before_front", [6], 0, -100, I64_MAX, 2),
        ("reversed_start_before_front", [6], 0, -100, I64_MAX, -2),
        ("size1_axis", [1, 5], 0, 0, I64_MAX, 2),
        ("size1_axis_empty", [1, 5], 0, 1, I64_MAX, 1),
        ("size1_axis_reversed", [5, 1], 0, -1, I64_MAX, -2),
        ("zero_size", [0, 3], 0, 0, I64_MAX, 2),
        ("zero_size_reversed", [3, 0], 0, -1, I64_MAX, -2),
    ]
    for label, shape, dim, start, end, step in cases:
        x = normal(r, shape)
        idx = slice_index(len(shape), dim, start, end, step)
        g = normal(r, x[idx].shape)
        dx = np.zeros_like(x)
        dx[idx] = 1.5 * g
        args = {"x": x, "dim": dim, "start": start, "end": end, "step": step}
        c.vjp("sliced", label, args, [g], [dx])
    # Non-finite cotangent elements move like any other (no arithmetic on them).
    x = normal(r, [8])
    g = np.array([np.inf, np.nan, -np.inf, 2.0], dtype=F32)
    dx = np.zeros_like(x)
    dx[1::2] = 1.5 * g
    c.vjp("sliced", "non_finite", {"x": x, "dim": 0, "start": 1, "step": 2}, [g], [dx])
    # The cases of issue 10: a stepped slice of a reshaped [1, 5]; a slice of a slice.
    x = normal(r, [5])
    g = normal(r, [1, 3])
    dx = np.zeros_like(x)
    dx[::2] = g[0]
    c.vjp("stepped_row", "stepped_row", {"x": x}, [g], [dx])
    x = normal(r, [20])
    g = normal(r, x[-1::-2][1::3].shape)
    dx = np.zeros_like(x)
    dx[np.arange(20)[-1::-2][1::3]] = g
    c.vjp("twice", "twice", {"x": x}, [g], [dx])
    # About a million elements: d/da_i = sum of b_j over the selected flat indices i * B + j.
    for fn, start, step in [("big_stepped", 1, 3), ("big_reversed", -2, -7)]:
        a, b = normal(r, [1000]), normal(r, [1001])
        ga = normal(r, [])
        picked = np.zeros(a.size * b.size, dtype=bool)
        picked[start::step] = True
        picked = picked.reshape(a.size, b.size)
        da = (picked * b.astype(np.float64)).sum(1) * ga
        db = (picked * a.astype(np.float64)[:, None]).sum(0) * ga
        c.vjp(fn, fn, {"a": a, "b": b}, [ga], [da.astype(F32), db.astype(F32)])
    return c


CONCAT_SOURCE = """
fn joined(Tensor x, Tensor y, Tensor z, *, Int dim) -> Tensor {
    return concat([x, y * 2.0, z * 3.0], dim=dim)
}

fn repeated(Tensor x, Tensor y) -> Tensor {
    return concat([y, x, y * 2.0, x * 3.0], dim=0)
}

// A million-element cotangent split at runtime offsets; a scalar result keeps the data small.
fn big_joined(Tensor a, Tensor b) -> Tensor {
    let flat = reshape(unsqueeze(a, 1) * unsqueeze(b, 0), [-1])
    return sum(slice(concat([flat, b * 2.0, flat * 3.0], dim=0), dim=0, start=1, step=2))
}
"""


def concat_grads():
    r = rng(24)
    c = Case("grad", "concat_grads", "The gradient of `concat`: each item's part of the cotangent, cut at\n"
             "offsets that are sums of runtime sizes (any item may be empty), against NumPy.",
             CONCAT_SOURCE)
    for label, dim, sizes, other in [
        ("runtime_sizes", 1, [2, 3, 4], 3),
        ("empty_middle", 0, [3, 0, 2], 2),
        ("empty_first", 1, [0, 4, 2], 2),
        ("empty_last", 0, [2, 3, 0], 3),
        ("all_empty", 0, [0, 0, 0], 2),
        ("size1_middle", 1, [3, 1, 2], 2),
        ("size1_ends", 0, [1, 4, 1], 3),
    ]:
        shapes = [[s, other] if dim == 0 else [other, s] for s in sizes]
        x, y, z = (normal(r, s) for s in shapes)
        g = normal(r, np.concatenate([x, y, z], axis=dim).shape)
        x_part, y_part, z_part = np.split(g, np.cumsum(sizes)[:2], axis=dim)
        c.vjp("joined", label, {"x": x, "y": y, "z": z, "dim": dim}, [g],
              [x_part, 2 * y_part, 3 * z_part])
    x, y = normal(r, [3, 2]), normal(r, [4, 2])
    g = normal(r, [14, 2])
    parts = np.split(g, [4, 7, 11], axis=0)
    c.vjp("repeated", "repeated", {"x": x, "y": y}, [g],
          [parts[1] + 3 * parts[3], parts[0] + 2 * parts[2]])
    a, b = normal(r, [1000]), normal(r, [999])
    ga = normal(r, [])
    n = a.size * b.size
    picked = np.zeros(2 * n + b.size, dtype=bool)
    picked[1::2] = True
    first, mid, last = picked[:n].reshape(a.size, b.size), picked[n:n + b.size], picked[n + b.size:]
    weight = first + 3.0 * last.reshape(a.size, b.size)
    da = (weight * b.astype(np.float64)).sum(1) * ga
    db = ((weight * a.astype(np.float64)[:, None]).sum(0) + 2.0 * mid) * ga
    c.vjp("big_joined", "big_joined", {"a": a, "b": b}, [ga], [da.astype(F32), db.astype(F32)])
    return c
