"""vjp against analytic NumPy gradients, central differences, and jax where installed."""

import numpy as np
import pytest

from conftest import gelu_ref, softmax_ref


def central_differences(f, args, ct, i, eps=1e-6):
    x = args[i]
    g = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        hi = [a.copy() for a in args]
        lo = [a.copy() for a in args]
        hi[i][idx] += eps
        lo[i][idx] -= eps
        g[idx] = (np.sum(f(*hi) * ct) - np.sum(f(*lo) * ct)) / (2 * eps)
    return g


def test_vjp_linear_is_analytic(lib, rng):
    x, w, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2)), rng.standard_normal(2)
    ct = rng.standard_normal((3, 2))
    dx, dw, db = lib.vjp("linear", (x, w, b), ct)
    np.testing.assert_allclose(dx, ct @ w.T, rtol=1e-12)
    np.testing.assert_allclose(dw, x.T @ ct, rtol=1e-12)
    np.testing.assert_allclose(db, ct.sum(0), rtol=1e-12)
    dx2, dw2, db2 = lib.linear.vjp((x, w, b), ct)
    np.testing.assert_array_equal(dx, dx2)


def test_vjp_matches_central_differences(lib, rng):
    x = rng.standard_normal((3, 5))
    ct = rng.standard_normal((3, 5))
    (dx,) = lib.vjp("softmax", (x,), ct, dim=0)
    fd = central_differences(lambda a: softmax_ref(a, 0), [x], ct, 0)
    np.testing.assert_allclose(dx, fd, rtol=1e-6, atol=1e-8)
    (dg,) = lib.vjp("gelu", x, ct)  # a single array for args
    fd = central_differences(gelu_ref, [x], ct, 0)
    np.testing.assert_allclose(dg, fd, rtol=1e-6, atol=1e-8)


def test_vjp_tuple_results_take_a_cotangent_each(lib, rng):
    x = rng.standard_normal((2, 4))
    cts = [rng.standard_normal(2) for _ in range(3)]
    (dx,) = lib.vjp("split_stats", (x,), cts)
    expected = cts[0][:, None] + (x == x.max(-1, keepdims=True)) * cts[1][:, None] \
        + (x == x.min(-1, keepdims=True)) * cts[2][:, None]
    np.testing.assert_allclose(dx, expected)
    with pytest.raises(ValueError, match="3 cotangent"):
        lib.vjp("split_stats", (x,), cts[:2])


def test_value_and_vjp(lib, rng):
    x = rng.standard_normal((2, 3))
    ct = np.ones((2, 3))
    y, (dx,) = lib.value_and_vjp("gelu", (x,), ct)
    np.testing.assert_allclose(y, gelu_ref(x), rtol=1e-12)
    np.testing.assert_allclose(dx, lib.vjp("gelu", (x,), ct)[0], rtol=1e-12)


def test_vjp_matches_jax(lib, rng):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    x, g, b = rng.standard_normal((4, 6)), rng.standard_normal(6), rng.standard_normal(6)
    ct = rng.standard_normal((4, 6))

    def layernorm(x, g, b):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / jnp.sqrt(var + 1e-5) * g + b

    _, pullback = jax.vjp(layernorm, x, g, b)
    for ours, theirs in zip(lib.vjp("layernorm", (x, g, b), ct), pullback(ct)):
        np.testing.assert_allclose(ours, np.asarray(theirs), rtol=1e-9, atol=1e-12)

    def gelu(x):
        return jax.nn.gelu(x, approximate=False)

    _, pullback = jax.vjp(gelu, x)
    np.testing.assert_allclose(lib.vjp("gelu", (x,), ct)[0], np.asarray(pullback(ct)[0]),
                               rtol=1e-9, atol=1e-12)
    _, pullback = jax.vjp(lambda a: jax.nn.softmax(a, axis=0), x)
    np.testing.assert_allclose(lib.vjp("softmax", (x,), ct, dim=0)[0],
                               np.asarray(pullback(ct)[0]), rtol=1e-9, atol=1e-12)


def test_the_cotangent_of_a_rank_0_result_may_be_a_numpy_scalar():
    import tfn

    lib = tfn.Session(threads=1).loads("fn tot(Tensor x) -> Tensor { return sum(x * x) }", name="tot.tfn")
    x = np.array([1.0, 2.0, 3.0], np.float32)
    for ct in (np.float32(1.0), np.array(1.0, np.float32), (np.float32(1.0),)):
        (dx,) = lib.vjp("tot", (x,), ct)
        np.testing.assert_array_equal(dx, 2 * x)
    # A number is no tensor (its dtype is unknown): a DTypeError, which is a TypeError.
    with pytest.raises(tfn.DTypeError, match="cotangent 0 must be a tensor"):
        lib.vjp("tot", (x,), 1.0)
    with pytest.raises(TypeError):
        lib.vjp("tot", (x,), 1.0)


def test_a_cotangent_of_another_dtype_is_a_dtype_error():
    import tfn

    lib = tfn.Session(threads=1).loads("fn sq(Tensor x) -> Tensor { return x * x }", name="sq.tfn")
    x = np.ones(3, np.float32)
    with pytest.raises(tfn.DTypeError, match="must have dtype f32, got f64"):
        lib.vjp("sq", (x,), np.ones(3, np.float64))
    with pytest.raises(tfn.ShapeError):
        lib.vjp("sq", (x,), np.ones(4, np.float32))
