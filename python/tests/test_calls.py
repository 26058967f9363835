"""Every argument form of a call, checked against NumPy: positional, keyword, defaults,
keyword-only, Scalar as int or float, overloads in order, dtypes, lists, tuples, strides."""

import numpy as np
import pytest

import tfn
from conftest import gelu_ref, layernorm_ref, softmax_ref, tol


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_softmax_layernorm_match_numpy(lib, rng, dtype):
    x = rng.standard_normal((7, 33)).astype(dtype)
    g = rng.standard_normal(33).astype(dtype)
    b = rng.standard_normal(33).astype(dtype)
    np.testing.assert_allclose(lib.gelu(x), gelu_ref(x), **tol(dtype))
    np.testing.assert_allclose(lib.softmax(x), softmax_ref(x), **tol(dtype))
    np.testing.assert_allclose(lib.layernorm(x, g, b), layernorm_ref(x, g, b), **tol(dtype))
    assert lib.gelu(x).dtype == dtype


def test_positional_keyword_and_defaults(lib, rng):
    x = rng.standard_normal((4, 5))
    np.testing.assert_allclose(lib.softmax(x), softmax_ref(x, -1))
    np.testing.assert_allclose(lib.softmax(x, dim=0), softmax_ref(x, 0))
    np.testing.assert_allclose(lib.softmax(x=x, dim=0), softmax_ref(x, 0))
    np.testing.assert_allclose(lib.clip(x), np.clip(x, -1, 1))
    np.testing.assert_allclose(lib.clip(x, hi=0.5), np.clip(x, -1, 0.5))
    np.testing.assert_allclose(lib.clip(x, lo=0, hi=2), np.clip(x, 0, 2))  # Int fills Float


def test_keyword_only_is_keyword_only(lib, rng):
    x = rng.standard_normal((4, 5))
    with pytest.raises(TypeError, match="positional"):
        lib.softmax(x, 0)


def test_scalar_takes_int_or_float(lib, rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(lib.add_scalar(x), x + 1)
    np.testing.assert_allclose(lib.add_scalar(x, 2), x + 2)
    np.testing.assert_allclose(lib.add_scalar(x, alpha=1.5), x + 1.5)
    np.testing.assert_allclose(lib.add_scalar(x, np.int64(3)), x + 3)
    np.testing.assert_allclose(lib.add_scalar(x, np.float32(0.25)), x + 0.25)
    assert lib.add_scalar(x, 2).dtype == np.float32


def test_overloads_in_declaration_order(lib, rng):
    x = rng.standard_normal((3, 4))
    s = rng.standard_normal(4)
    np.testing.assert_allclose(lib.scale(x, s), x * s)  # `scale`
    np.testing.assert_allclose(lib.scale(x, 3), x * 3)  # `scale.scalar`
    np.testing.assert_allclose(lib.scale(x, 0.5), x * 0.5)
    np.testing.assert_allclose(lib["scale.scalar"](x, 2), x * 2)
    assert "scale.scalar" in lib and "nope" not in lib


@pytest.mark.parametrize("dt", ["f64", "float64", np.float64, np.dtype("float64"), float])
def test_dtype_arguments(lib, dt):
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    y = lib.to(x, dt)
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y, x.astype(np.float64))
    assert lib.to(x, dtype="bool").dtype == np.bool_


def test_int_lists_and_bools(lib, rng):
    x = rng.standard_normal((2, 3, 4))
    np.testing.assert_allclose(lib.total(x), x.sum())
    np.testing.assert_allclose(lib.total(x, dims=[0, 2]), x.sum(axis=(0, 2)))
    np.testing.assert_allclose(lib.total(x, dims=(1,), keepdim=True), x.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(lib.total(x, dims=[np.int64(-1)], keepdim=np.bool_(True)),
                               x.sum(axis=-1, keepdims=True))


def test_tensor_lists(lib, rng):
    a = rng.standard_normal((2, 3)).astype(np.float32)
    b = rng.standard_normal((4, 3)).astype(np.float32)
    np.testing.assert_array_equal(lib.stack2([a, b]), np.concatenate([a, b]))
    np.testing.assert_array_equal(lib.stack2((a, a.T.copy().T), dim=1), np.concatenate([a, a], 1))


def test_tuple_results(lib, rng):
    x = rng.standard_normal((3, 5))
    s, mx, mn = lib.split_stats(x)
    np.testing.assert_allclose(s, x.sum(-1))
    np.testing.assert_array_equal(mx, x.max(-1))
    np.testing.assert_array_equal(mn, x.min(-1))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
def test_every_numeric_dtype(lib, dtype):
    x = np.arange(12, dtype=dtype).reshape(3, 4)
    y = (np.arange(12, dtype=dtype) * 3).reshape(3, 4)
    z = lib.iadd(x, y)
    assert z.dtype == dtype
    np.testing.assert_array_equal(z, x + y)


def test_bool_and_fixed_dtypes(lib):
    m = np.array([[True, False, True], [False, False, True]])
    c = lib.count_true(m)
    assert c.dtype == np.int64 and c.shape == () and int(c) == 3
    x = np.ones(3, np.float32)
    np.testing.assert_array_equal(lib.only_f32(x), x + 1)


def test_integer_index(lib, rng):
    x = rng.standard_normal((5, 2))
    idx = np.array([4, 0, 0, -1], dtype=np.int64)
    np.testing.assert_array_equal(lib.pick(x, idx), x[idx])


def test_index_out_of_range_is_a_run_error(lib):
    x = np.zeros((3, 2))
    with pytest.raises(tfn.RunError, match="5"):
        lib.pick(x, np.array([0, 5], dtype=np.int64))


STRIDED = {
    "transposed": lambda a: a.T,
    "every_other_column": lambda a: a[:, ::2],
    "reversed_rows": lambda a: a[::-1],
    "reversed_both": lambda a: a[::-1, ::-3],
    "fortran": np.asfortranarray,
    "broadcast_zero_stride": lambda a: np.broadcast_to(a[:1], a.shape),
    "big_endian": lambda a: a.astype(a.dtype.newbyteorder(">")),
    "read_only": lambda a: _readonly(a),
}


def _readonly(a):
    a = a.copy()
    a.flags.writeable = False
    return a


@pytest.mark.parametrize("layout", sorted(STRIDED))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_any_strides(lib, rng, layout, dtype):
    base = rng.standard_normal((6, 9)).astype(dtype)
    x = STRIDED[layout](base)
    expected = softmax_ref(np.ascontiguousarray(x).astype(dtype))
    np.testing.assert_allclose(lib.softmax(x), expected, **tol(dtype))
    np.testing.assert_allclose(lib.gelu(x), gelu_ref(np.ascontiguousarray(x).astype(dtype)), **tol(dtype))


def test_misaligned_input(lib):
    raw = np.zeros(8 * 10 + 1, dtype=np.uint8)
    x = raw[1:].view(np.float64)
    assert not x.flags.aligned
    x[:] = np.arange(10)
    np.testing.assert_allclose(lib.add_scalar(x, 1), np.arange(10) + 1)


def test_rank0_empty_and_sizes(lib, rng):
    assert lib.gelu(np.ones((), np.float32)).shape == ()
    assert lib.gelu(np.zeros((0, 3))).shape == (0, 3)
    for n in (1, 2, 17, 1000):  # new sizes reuse the kernel
        x = rng.standard_normal((n, 8))
        np.testing.assert_allclose(lib.softmax(x), softmax_ref(x))


def test_array_likes_are_converted(lib):
    class Wrapped:
        def __init__(self, a):
            self.a = a

        def __array__(self, dtype=None, copy=None):
            return self.a

    x = np.linspace(-2, 2, 5)
    np.testing.assert_allclose(lib.gelu(Wrapped(x)), gelu_ref(x))


def test_results_are_owned_numpy_arrays(lib):
    x = np.ones((2, 2))
    y = lib.gelu(x)
    assert isinstance(y, np.ndarray) and y.flags.writeable and y.flags.c_contiguous
    y[0, 0] = 5.0  # writable, independent of x
    assert x[0, 0] == 1.0


def test_reshape_derived_size(lib):
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(lib.flat(x), x.reshape(-1))
    np.testing.assert_array_equal(lib.flat(x[:1]), x[:1].reshape(-1))


def test_prelude_functions_are_reachable(lib):
    x = np.linspace(0, 1, 4)
    np.testing.assert_allclose(lib.exp(x), np.exp(x))
    assert "exp" not in dir(lib) and "gelu" in dir(lib)
    assert "gelu" in lib.functions
