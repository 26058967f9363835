"""NumPy references for conv2d, conv_transpose2d, max_pool2d, avg_pool2d and pad, written
from PyTorch's definitions (NCHW activations, OIHW weights) with no shared code with tfn:
direct sums over the window, in float64 unless the inputs are float32.

Used by `gen_run_cases.py` / `gen_grad_cases.py` (via `conv_cases.py`) and checked against
`jax.lax.conv_general_dilated` where jax is installed (`python3 convref.py`).
"""

import math

import numpy as np


def pair(v):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return (v[0], v[0]) if len(v) == 1 else (v[0], v[1])


def conv2d(x, w, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1):
    (sh, sw), (ph, pw), (dh, dw) = pair(stride), pair(padding), pair(dilation)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    assert c == cg * groups and o % groups == 0
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sw if False else (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    xp = np.zeros((n, c, h + 2 * ph, wd + 2 * pw), dtype=np.float64)
    xp[:, :, ph:ph + h, pw:pw + wd] = x
    out = np.zeros((n, o, oh, ow), dtype=np.float64)
    og = o // groups
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        ws = w[g * og:(g + 1) * og].astype(np.float64)
        for a in range(kh):
            for b in range(kw):
                patch = xs[:, :, a * dh:a * dh + sh * (oh - 1) + 1:sh, b * dw:b * dw + sw * (ow - 1) + 1:sw]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, ws[:, :, a, b])
    return out.astype(x.dtype)


def conv_transpose2d(x, w, stride=(1, 1), padding=(0, 0), output_padding=(0, 0), dilation=(1, 1), groups=1, size=None):
    """The adjoint of conv2d in its input; `size` = the result's (h, w) if given."""
    (sh, sw), (ph, pw), (dh, dw) = pair(stride), pair(padding), pair(dilation)
    oph, opw = pair(output_padding)
    n, c, h, wd = x.shape
    ci, og, kh, kw = w.shape
    assert ci == c and c % groups == 0
    cg = c // groups
    if size is None:
        size = ((h - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1, (wd - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1)
    H, W = size
    big = np.zeros((n, og * groups, H + 2 * ph + dh * kh + sh * h, W + 2 * pw + dw * kw + sw * wd), dtype=np.float64)
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg].astype(np.float64)
        ws = w[g * cg:(g + 1) * cg].astype(np.float64)
        for a in range(kh):
            for b in range(kw):
                contrib = np.einsum("nchw,co->nohw", xs, ws[:, :, a, b])
                big[:, g * og:(g + 1) * og, a * dh:a * dh + sh * (h - 1) + 1:sh, b * dw:b * dw + sw * (wd - 1) + 1:sw] += contrib
    return big[:, :, ph:ph + H, pw:pw + W].astype(x.dtype)


def conv2d_weight(x, gy, wshape, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1):
    (sh, sw), (ph, pw), (dh, dw) = pair(stride), pair(padding), pair(dilation)
    n, c, h, wd = x.shape
    o, cg, kh, kw = wshape
    _, _, oh, ow = gy.shape
    xp = np.zeros((n, c, h + 2 * ph + dh * kh + sh * oh, wd + 2 * pw + dw * kw + sw * ow), dtype=np.float64)
    xp[:, :, ph:ph + h, pw:pw + wd] = x
    og = o // groups
    dw_ = np.zeros(wshape, dtype=np.float64)
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        gs = gy[:, g * og:(g + 1) * og].astype(np.float64)
        for a in range(kh):
            for b in range(kw):
                patch = xs[:, :, a * dh:a * dh + sh * (oh - 1) + 1:sh, b * dw:b * dw + sw * (ow - 1) + 1:sw]
                dw_[g * og:(g + 1) * og, :, a, b] = np.einsum("nchw,nohw->oc", patch, gs)
    return dw_.astype(x.dtype)


def pool_len(size, k, s, p, d, ceil):
    room = size + 2 * p - d * (k - 1) - 1
    assert room >= 0
    out = (-(-room // s) if ceil else room // s) + 1
    if ceil and (out - 1) * s >= size + p:
        out -= 1
    return out


def _windows(x, kernel, stride, padding, dilation, ceil_mode):
    kh, kw = pair(kernel)
    sh, sw = pair(stride) if stride else (kh, kw)
    ph, pw = pair(padding)
    dh, dw = pair(dilation)
    h, w = x.shape[-2:]
    oh = pool_len(h, kh, sh, ph, dh, ceil_mode)
    ow = pool_len(w, kw, sw, pw, dw, ceil_mode)
    return (kh, kw), (sh, sw), (ph, pw), (dh, dw), (h, w), (oh, ow)


def max_pool2d(x, kernel, stride=(), padding=(0, 0), dilation=(1, 1), ceil_mode=False, want_argmax=False):
    (kh, kw), (sh, sw), (ph, pw), (dh, dw), (h, w), (oh, ow) = _windows(x, kernel, stride, padding, dilation, ceil_mode)
    lead = x.shape[:-2]
    flat = x.reshape(-1, h, w)
    out = np.empty((flat.shape[0], oh, ow), dtype=x.dtype)
    arg = np.full((flat.shape[0], oh, ow), -1, dtype=np.int64)
    for p in range(flat.shape[0]):
        for i in range(oh):
            for j in range(ow):
                best, at = -math.inf, -1
                for a in range(kh):
                    r = i * sh - ph + a * dh
                    if not 0 <= r < h:
                        continue
                    for b in range(kw):
                        c = j * sw - pw + b * dw
                        if not 0 <= c < w:
                            continue
                        v = flat[p, r, c]
                        if at < 0 or v > best or math.isnan(v):
                            best, at = v, r * w + c
                out[p, i, j], arg[p, i, j] = best, at
    out = out.reshape(lead + (oh, ow))
    return (out, arg.reshape(lead + (oh, ow))) if want_argmax else out


def max_pool2d_vjp(x, gy, **kw):
    _, arg = max_pool2d(x, want_argmax=True, **kw)
    h, w = x.shape[-2:]
    gx = np.zeros((int(np.prod(x.shape[:-2])), h * w), dtype=np.float64)
    a = arg.reshape(gx.shape[0], -1)
    g = gy.reshape(gx.shape[0], -1)
    for p in range(gx.shape[0]):
        np.add.at(gx[p], a[p], g[p])
    return gx.reshape(x.shape).astype(x.dtype)


def _avg_windows(x, kernel, stride, padding, ceil_mode, count_include_pad):
    (kh, kw), (sh, sw), (ph, pw), _, (h, w), (oh, ow) = _windows(x, kernel, stride, padding, (1, 1), ceil_mode)
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * sh - ph, j * sw - pw
            r1, c1 = min(r0 + kh, h + ph), min(c0 + kw, w + pw)
            padded = (r1 - r0) * (c1 - c0)
            r0, c0, r1, c1 = max(r0, 0), max(c0, 0), min(r1, h), min(c1, w)
            div = padded if count_include_pad else (r1 - r0) * (c1 - c0)
            yield i, j, slice(r0, r1), slice(c0, c1), div
    return


def avg_pool2d(x, kernel, stride=(), padding=(0, 0), ceil_mode=False, count_include_pad=True):
    (kh, kw), (sh, sw), (ph, pw), _, (h, w), (oh, ow) = _windows(x, kernel, stride, padding, (1, 1), ceil_mode)
    out = np.empty(x.shape[:-2] + (oh, ow), dtype=np.float64)
    for i, j, rs, cs, div in _avg_windows(x, kernel, stride, padding, ceil_mode, count_include_pad):
        out[..., i, j] = x[..., rs, cs].astype(np.float64).sum(axis=(-1, -2)) / div
    return out.astype(x.dtype)


def avg_pool2d_vjp(x, gy, kernel, stride=(), padding=(0, 0), ceil_mode=False, count_include_pad=True):
    gx = np.zeros(x.shape, dtype=np.float64)
    for i, j, rs, cs, div in _avg_windows(x, kernel, stride, padding, ceil_mode, count_include_pad):
        gx[..., rs, cs] += (gy[..., i, j].astype(np.float64) / div)[..., None, None]
    return gx.astype(x.dtype)


def pad(x, pads, value=0):
    widths = [(pads[2 * i], pads[2 * i + 1]) for i in range(x.ndim)]
    crop = tuple(slice(max(-b, 0), x.shape[i] - max(-a, 0)) for i, (b, a) in enumerate(widths))
    x = x[crop]
    return np.pad(x, [(max(b, 0), max(a, 0)) for b, a in widths], constant_values=value)


if __name__ == "__main__":
    # Cross-check against jax where it is installed.
    import jax
    from jax import lax

    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(0)
    for (n, c, h, w, o, k, s, p, d, g) in [(2, 4, 9, 7, 6, 3, 2, 1, 1, 2), (1, 3, 8, 8, 3, 2, 1, 2, 2, 3), (2, 2, 6, 5, 4, 3, 3, 0, 1, 1)]:
        x = rng.standard_normal((n, c, h, w))
        wt = rng.standard_normal((o, c // g, k, k))
        ours = conv2d(x, wt, (s, s), (p, p), (d, d), g)
        theirs = lax.conv_general_dilated(x, wt, (s, s), [(p, p), (p, p)], rhs_dilation=(d, d), feature_group_count=g)
        assert np.allclose(ours, theirs), "conv2d"
        gy = rng.standard_normal(ours.shape)
        _, vjp = jax.vjp(lambda x, w: lax.conv_general_dilated(x, w, (s, s), [(p, p), (p, p)], rhs_dilation=(d, d), feature_group_count=g), x, wt)
        gx, gw = vjp(gy)
        assert np.allclose(conv_transpose2d(gy, wt, (s, s), (p, p), (0, 0), (d, d), g, size=(h, w)), gx), "input grad"
        assert np.allclose(conv2d_weight(x, gy, wt.shape, (s, s), (p, p), (d, d), g), gw), "weight grad"
    print("convref agrees with jax")
