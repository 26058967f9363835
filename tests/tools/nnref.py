"""NumPy reference implementations (forward and hand-derived backward) of the functions the
file tests call. Everything is computed in float64; callers cast to the dtype under test.
"""

import math

import numpy as np

GELU_C = 0.7978845608
GELU_K = 0.044715


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(GELU_C * (x + GELU_K * x**3)))


def gelu_grad(x):
    t = np.tanh(GELU_C * (x + GELU_K * x**3))
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * GELU_C * (1.0 + 3.0 * GELU_K * x**2)


def relu(x):
    return np.maximum(x, 0.0)


def linear(x, w, b, activate=False):
    y = np.matmul(x, w) + b
    return relu(y) if activate else y


def softmax(x, dim=-1):
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def softmax_grad(x, g, dim=-1):
    s = softmax(x, dim)
    return s * (g - (g * s).sum(axis=dim, keepdims=True))


def layer_norm(x, gamma, beta, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    xc = x - mu
    var = (xc * xc).mean(axis=-1, keepdims=True)
    return xc / np.sqrt(var + eps) * gamma + beta


def normalize_grad(x, g, eps):
    """Gradient of (x - mean(x)) / sqrt(var(x) + eps) over the last axis, given dL/d(out)."""
    mu = x.mean(axis=-1, keepdims=True)
    r = 1.0 / np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + eps)
    xhat = (x - mu) * r
    return r * (g - g.mean(axis=-1, keepdims=True) - xhat * (g * xhat).mean(axis=-1, keepdims=True))


def layer_norm_grads(x, gamma, beta, g, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    xhat = (x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + eps)
    batch = tuple(range(x.ndim - 1))
    dgamma = (g * xhat).sum(axis=batch)
    dbeta = g.sum(axis=batch)
    dx = normalize_grad(x, g * gamma, eps)
    return dx, dgamma, dbeta


def moments(x, dims):
    dims = tuple(dims)
    mu = x.mean(axis=dims, keepdims=True)
    return mu, ((x - mu) ** 2).mean(axis=dims, keepdims=True)


def mlp(x, w1, b1, w2, b2):
    h = gelu(linear(x, w1, b1))
    m, v = moments(h, [-1])
    return linear((h - m) / np.sqrt(v + 1e-5), w2, b2)


def mlp_grads(x, w1, b1, w2, b2, g):
    y1 = x @ w1 + b1
    h = gelu(y1)
    m, v = moments(h, [-1])
    n = (h - m) / np.sqrt(v + 1e-5)
    dw2 = n.T @ g
    db2 = g.sum(axis=0)
    dn = g @ w2.T
    dh = normalize_grad(h, dn, 1e-5)
    dy1 = dh * gelu_grad(y1)
    return dy1 @ w1.T, x.T @ dy1, dy1.sum(axis=0), dw2, db2


def softplus(x):
    return np.log1p(np.exp(x))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


erf = np.vectorize(math.erf, otypes=[np.float64])


def sum_to(g, shape):
    """Sums a broadcast gradient back to `shape` (NumPy broadcasting rules)."""
    shape = tuple(shape)
    lead = g.ndim - len(shape)
    g = g.sum(axis=tuple(range(lead))) if lead > 0 else g
    axes = tuple(i for i, d in enumerate(shape) if d == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True) if axes else g


def matmul_grads(a, b, g):
    """Gradients of np.matmul for operands of rank >= 2 (batch axes broadcast)."""
    da = np.matmul(g, np.swapaxes(b, -1, -2))
    db = np.matmul(np.swapaxes(a, -1, -2), g)
    return sum_to(da, a.shape), sum_to(db, b.shape)


def linear_op_grad(shape, forward, g):
    """Gradient of a linear index-moving op (reshape, transpose, slice, ...): applies `forward`
    to an array of flat indices and scatters `g` back through it."""
    index = np.arange(int(np.prod(shape))).reshape(shape)
    moved = forward(index)
    dx = np.zeros(index.size, dtype=np.float64)
    np.add.at(dx, moved.ravel(), g.ravel())
    return dx.reshape(shape)


def numeric_vjp(f, args, index, g, h=1e-6):
    """<g, d f(args) / d args[index]> by central differences (float64), to check the
    hand-derived gradients above."""
    x = args[index]
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        plus = [a.copy() for a in args]
        minus = [a.copy() for a in args]
        plus[index][i] += h
        minus[index][i] -= h
        out[i] = ((f(*plus) - f(*minus)) * g).sum() / (2 * h)
    return out


def self_check():
    """Checks every hand-derived gradient here against central differences."""
    r = np.random.default_rng(0)

    def close(analytic, f, args, index, g, what):
        numeric = numeric_vjp(f, args, index, g)
        assert np.allclose(analytic, numeric, rtol=1e-5, atol=1e-6), (what, analytic, numeric)

    x = r.standard_normal((3, 4))
    g = r.standard_normal((3, 4))
    close(g * gelu_grad(x), gelu, [x], 0, g, "gelu")
    close(softmax_grad(x, g, 0), lambda a: softmax(a, 0), [x], 0, g, "softmax")
    gm, bt = r.standard_normal(4), r.standard_normal(4)
    grads = layer_norm_grads(x, gm, bt, g, eps=0.1)
    for i in range(3):
        close(grads[i], lambda *a: layer_norm(*a, eps=0.1), [x, gm, bt], i, g, f"layer_norm {i}")
    args = [r.standard_normal(s) for s in [(4, 5), (5, 6), (6,), (6, 3), (3,)]]
    gy = r.standard_normal((4, 3))
    grads = mlp_grads(*args, gy)
    for i in range(5):
        close(grads[i], mlp, args, i, gy, f"mlp {i}")
    a, b = r.standard_normal((1, 3, 4)), r.standard_normal((2, 4, 5))
    gy = r.standard_normal((2, 3, 5))
    grads = matmul_grads(a, b, gy)
    for i in range(2):
        close(grads[i], np.matmul, [a, b], i, gy, f"matmul {i}")
