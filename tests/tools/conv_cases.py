"""The `run` and `grad` file tests of conv2d, conv_transpose2d, max_pool2d, avg_pool2d and
pad (written by `gen_run_cases.py` / `gen_grad_cases.py`), against the NumPy definitions of
`convref.py`; every expected gradient is also checked by central differences before it is
saved.
"""

import numpy as np

import convref as R
import nnref as ref
from casegen import Case, normal, rng

F32, F64 = np.float32, np.float64

SOURCE = """
fn conv(Tensor x, Tensor w, *, Int[] stride = [1, 1], Int[] padding = [0, 0], Int[] dilation = [1, 1], Int groups = 1) -> Tensor {
    return conv2d(x, w, stride=stride, padding=padding, dilation=dilation, groups=groups)
}
// A bias and a relu: the epilogue fused into the convolution's kernel.
fn conv_relu(Tensor x, Tensor w, Tensor b) -> Tensor {
    return maximum(conv2d(x, w, padding=[1, 1]) + b, 0.0)
}
fn convt(Tensor x, Tensor w, *, Int[] stride = [1, 1], Int[] padding = [0, 0], Int[] output_padding = [0, 0], Int[] dilation = [1, 1], Int groups = 1) -> Tensor {
    return conv_transpose2d(x, w, stride=stride, padding=padding, output_padding=output_padding, dilation=dilation, groups=groups)
}
fn maxpool(Tensor x, *, Int[] kernel, Int[] stride = [], Int[] padding = [0, 0], Int[] dilation = [1, 1], Bool ceil_mode = false) -> Tensor {
    return max_pool2d(x, kernel=kernel, stride=stride, padding=padding, dilation=dilation, ceil_mode=ceil_mode)
}
fn avgpool(Tensor x, *, Int[] kernel, Int[] stride = [], Int[] padding = [0, 0], Bool ceil_mode = false, Bool count_include_pad = true) -> Tensor {
    return avg_pool2d(x, kernel=kernel, stride=stride, padding=padding, ceil_mode=ceil_mode, count_include_pad=count_include_pad)
}
fn padded(Tensor x, *, Int[] pads, Scalar value = 0) -> Tensor {
    return pad(x, pads, value=value)
}
// Global average pooling, and a small CNN block: conv, relu, pool, conv.
fn global_pool(Tensor x) -> Tensor { return mean(x, dims=[2, 3]) }
fn block(Tensor x, Tensor w1, Tensor w2) -> Tensor {
    let h = max_pool2d(maximum(conv2d(x, w1, padding=[1, 1]), 0.0), kernel=[2, 2])
    return conv2d(h, w2, groups=2)
}
"""

CONVS = [
    # (label, x shape, w shape, stride, padding, dilation, groups)
    ("plain", (2, 3, 6, 5), (4, 3, 3, 3), (1, 1), (0, 0), (1, 1), 1),
    ("strided_padded", (2, 2, 7, 8), (3, 2, 3, 2), (2, 3), (1, 2), (1, 1), 1),
    ("dilated", (1, 2, 9, 7), (2, 2, 2, 3), (1, 2), (2, 1), (3, 2), 1),
    ("groups", (2, 4, 5, 6), (6, 2, 3, 3), (1, 2), (1, 1), (1, 1), 2),
    ("depthwise", (2, 3, 6, 6), (6, 1, 3, 3), (2, 1), (1, 1), (2, 1), 3),
    ("one_by_one", (1, 5, 4, 3), (2, 5, 1, 1), (1, 1), (0, 0), (1, 1), 1),
]

CONVTS = [
    # (label, x shape, w shape, stride, padding, output_padding, dilation, groups)
    ("plain", (2, 3, 4, 3), (3, 2, 3, 3), (1, 1), (0, 0), (0, 0), (1, 1), 1),
    ("strided", (1, 2, 3, 4), (2, 3, 3, 2), (2, 3), (1, 0), (1, 2), (1, 1), 1),
    ("groups_dilated", (2, 4, 3, 3), (4, 1, 2, 3), (2, 1), (1, 1), (0, 0), (2, 2), 2),
]

POOLS = [
    # (label, x shape, kernel, stride, padding, dilation, ceil_mode)
    ("k2", (2, 3, 6, 6), (2, 2), (), (0, 0), (1, 1), False),
    ("overlap_pad", (1, 2, 7, 5), (3, 3), (2, 2), (1, 1), (1, 1), False),
    ("ceil", (2, 2, 7, 8), (3, 2), (2, 2), (1, 1), (1, 1), True),
    ("dilated_ceil", (1, 2, 9, 9), (2, 3), (3, 2), (1, 0), (2, 2), True),
    ("rank3", (3, 5, 6), (2, 3), (1, 2), (0, 1), (1, 1), False),
]


def checked(f, args, k, g, analytic, what):
    numeric = ref.numeric_vjp(f, [np.array(a, copy=True) for a in args], k, g)
    assert np.allclose(analytic, numeric, rtol=1e-5, atol=1e-6), (what, analytic, numeric)
    return analytic


def conv_runs():
    r = rng(71)
    c = Case("run", "conv_ops", "conv2d, conv_transpose2d, max/avg pooling (also global) and pad\n"
             "against the NumPy definitions of tests/tools/convref.py: strides, padding, dilation,\n"
             "groups and depthwise, ceil_mode, count_include_pad, negative pads, f32 and f64.", SOURCE)
    for label, xs, ws, s, p, d, g in CONVS:
        for dt in (F64, F32):
            x, w = normal(r, xs, dt), normal(r, ws, dt)
            kw = {"stride": list(s), "padding": list(p), "dilation": list(d), "groups": g}
            c.run("conv", f"conv_{label}_{np.dtype(dt).name}", {"x": x, "w": w, **kw},
                  [R.conv2d(x, w, s, p, d, g)])
    x, w, b = normal(r, (2, 6, 5, 6)), normal(r, (12, 6, 3, 3)), normal(r, (12, 1, 1))
    c.run("conv_relu", "conv_relu", {"x": x, "w": w, "b": b},
          [np.maximum(R.conv2d(x, w, padding=(1, 1)) + b, 0).astype(F32)])
    for label, xs, ws, s, p, op, d, g in CONVTS:
        x, w = normal(r, xs, F64), normal(r, ws, F64)
        kw = {"stride": list(s), "padding": list(p), "output_padding": list(op), "dilation": list(d), "groups": g}
        c.run("convt", f"convt_{label}", {"x": x, "w": w, **kw}, [R.conv_transpose2d(x, w, s, p, op, d, g)])
    for label, xs, k, s, p, d, ceil in POOLS:
        x = normal(r, xs, F64)
        c.run("maxpool", f"max_{label}", {"x": x, "kernel": list(k), "stride": list(s), "padding": list(p),
                                         "dilation": list(d), "ceil_mode": ceil},
              [R.max_pool2d(x, k, s, p, d, ceil)])
        for cip in (True, False):
            c.run("avgpool", f"avg_{label}_{int(cip)}", {"x": x.astype(F32), "kernel": list(k), "stride": list(s),
                                                        "padding": list(p), "ceil_mode": ceil, "count_include_pad": cip},
                  [R.avg_pool2d(x.astype(F32), k, s, p, ceil, cip)])
    # Ties and -inf: the first maximum; a NaN wins.
    x = np.array([[[[1.0, 1.0, -np.inf], [np.nan, 0.5, 2.0], [2.0, 2.0, 0.0]]]])
    c.run("maxpool", "max_special", {"x": x, "kernel": [2, 2], "stride": [1, 1]}, [R.max_pool2d(x, (2, 2), (1, 1))])
    x = normal(r, (2, 3, 4, 5), F64)
    c.run("global_pool", "global_pool", {"x": x}, [x.mean(axis=(2, 3))])
    x = normal(r, (2, 3, 4), F32)
    for label, pads, v in [("both", [0, 0, 1, 2, 3, 0], 0), ("value", [1, 0, 0, 1, 2, 2], 2.5),
                           ("crop", [0, 0, -1, 1, 2, -3], -1)]:
        c.run("padded", f"pad_{label}", {"x": x, "pads": pads, "value": v}, [R.pad(x, pads, v)])
    return c


def conv_grads():
    r = rng(72)
    c = Case("grad", "conv_grads", "Gradients of conv2d (x and w: conv_transpose2d and the weight\n"
             "correlation), conv_transpose2d, max pooling (to the first maximum), average pooling\n"
             "and pad, from convref.py's NumPy adjoints checked by central differences.", SOURCE)
    for label, xs, ws, s, p, d, g in CONVS[:5]:
        x, w = normal(r, xs, F64), normal(r, ws, F64)
        y = R.conv2d(x, w, s, p, d, g)
        gy = normal(r, y.shape, F64)
        dx = R.conv_transpose2d(gy, w, s, p, (0, 0), d, g, size=xs[2:])
        dw = R.conv2d_weight(x, gy, ws, s, p, d, g)
        f = lambda a, b: R.conv2d(a, b, s, p, d, g)
        checked(f, [x, w], 0, gy, dx, label)
        checked(f, [x, w], 1, gy, dw, label)
        kw = {"stride": list(s), "padding": list(p), "dilation": list(d), "groups": g}
        c.vjp("conv", f"conv_{label}", {"x": x, "w": w, **kw}, [gy], [dx, dw])
    for label, xs, ws, s, p, op, d, g in CONVTS:
        x, w = normal(r, xs, F64), normal(r, ws, F64)
        f = lambda a, b: R.conv_transpose2d(a, b, s, p, op, d, g)
        y = f(x, w)
        gy = normal(r, y.shape, F64)
        dx = R.conv2d(gy, w, s, p, d, g)[:, :, :xs[2], :xs[3]]
        dw = R.conv2d_weight(gy, x, ws, s, p, d, g)
        checked(f, [x, w], 0, gy, dx, label)
        checked(f, [x, w], 1, gy, dw, label)
        kw = {"stride": list(s), "padding": list(p), "output_padding": list(op), "dilation": list(d), "groups": g}
        c.vjp("convt", f"convt_{label}", {"x": x, "w": w, **kw}, [gy], [dx, dw])
    for label, xs, k, s, p, d, ceil in POOLS:
        x = normal(r, xs, F64)
        kw = dict(kernel=k, stride=s, padding=p, dilation=d, ceil_mode=ceil)
        y = R.max_pool2d(x, **kw)
        gy = normal(r, y.shape, F64)
        dx = checked(lambda a: R.max_pool2d(a, **kw), [x], 0, gy, R.max_pool2d_vjp(x, gy, **kw), label)
        c.vjp("maxpool", f"max_{label}", {"x": x, "kernel": list(k), "stride": list(s), "padding": list(p),
                                         "dilation": list(d), "ceil_mode": ceil}, [gy], [dx])
        for cip in (True, False):
            akw = dict(kernel=k, stride=s, padding=p, ceil_mode=ceil, count_include_pad=cip)
            ga = normal(r, R.avg_pool2d(x, **akw).shape, F64)
            dx = checked(lambda a: R.avg_pool2d(a, **akw), [x], 0, ga, R.avg_pool2d_vjp(x, ga, **akw), label)
            c.vjp("avgpool", f"avg_{label}_{int(cip)}", {"x": x, "kernel": list(k), "stride": list(s),
                                                        "padding": list(p), "ceil_mode": ceil,
                                                        "count_include_pad": cip}, [ga], [dx])
    x = normal(r, (2, 3, 4), F64)
    pads = [0, 0, 1, -1, 2, 3]
    gy = normal(r, R.pad(x, pads).shape, F64)
    dx = checked(lambda a: R.pad(a, pads), [x], 0, gy, np.pad(gy[:, 1:, 2:6], [(0, 0), (0, 1), (0, 0)]), "pad")
    c.vjp("padded", "pad", {"x": x, "pads": pads}, [gy], [dx])
    # A conv-relu-pool-conv block: every gradient through the chain.
    x, w1, w2 = normal(r, (1, 2, 6, 6), F64), normal(r, (4, 2, 3, 3), F64), normal(r, (2, 2, 2, 2), F64)

    def block(a, b, e):
        h = R.max_pool2d(np.maximum(R.conv2d(a, b, padding=(1, 1)), 0), (2, 2))
        return R.conv2d(h, e, groups=2)

    y = block(x, w1, w2)
    gy = normal(r, y.shape, F64)
    h1 = R.conv2d(x, w1, padding=(1, 1))
    h = R.max_pool2d(np.maximum(h1, 0), (2, 2))
    gh = R.conv_transpose2d(gy, w2, groups=2, size=h.shape[2:])
    gh1 = R.max_pool2d_vjp(np.maximum(h1, 0), gh, kernel=(2, 2)) * (h1 > 0)
    grads = [R.conv_transpose2d(gh1, w1, padding=(1, 1), size=x.shape[2:]),
             R.conv2d_weight(x, gh1, w1.shape, padding=(1, 1)), R.conv2d_weight(h, gy, w2.shape, groups=2)]
    for i in range(3):
        checked(block, [x, w1, w2], i, gy, grads[i], "block")
    c.vjp("block", "block", {"x": x, "w1": w1, "w2": w2}, [gy], grads)
    return c
