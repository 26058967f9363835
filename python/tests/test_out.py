"""`out=`: results written into caller arrays (any strides), checked, never aliasing inputs."""

import numpy as np
import pytest

import tfn
from conftest import gelu_ref


def test_out_single(lib, rng):
    x = rng.standard_normal((4, 8)).astype(np.float32)
    y = np.empty_like(x)
    r = lib.gelu(x, out=y)
    assert r is y
    np.testing.assert_allclose(y, gelu_ref(x), rtol=1e-5, atol=1e-6)


def test_out_tuple_and_strided(lib, rng):
    x = rng.standard_normal((3, 5))
    outs = (np.empty(3), np.empty((3, 2))[:, 0], np.empty(6)[::2])
    r = lib.split_stats(x, out=outs)
    assert r is outs
    np.testing.assert_allclose(outs[0], x.sum(-1))
    np.testing.assert_array_equal(outs[1], x.max(-1))
    np.testing.assert_array_equal(outs[2], x.min(-1))


def test_out_with_keywords(lib, rng):
    x = rng.standard_normal((4, 5))
    y = np.empty((4, 5))
    lib.softmax(x, dim=0, out=y)
    e = np.exp(x - x.max(0))
    np.testing.assert_allclose(y, e / e.sum(0))
    lib.softmax(x, out=None)  # None is "allocate"


@pytest.mark.parametrize(
    "bad, what",
    [
        (np.empty((4, 4), np.float32), r"f32\[4, 8\].*f32\[4, 4\]"),
        (np.empty((4, 8), np.float64), "f64"),
        (np.empty((4, 8), np.float16), "f16|float16|<f2"),
    ],
)
def test_out_mismatch_is_value_error(lib, bad, what):
    x = np.zeros((4, 8), np.float32)
    with pytest.raises(ValueError, match=what):
        lib.gelu(x, out=bad)


def test_out_count_must_match(lib):
    with pytest.raises(ValueError):
        lib.split_stats(np.zeros((2, 2)), out=np.empty(2))


def test_out_read_only(lib):
    y = np.empty(3)
    y.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        lib.gelu(np.zeros(3), out=y)


def test_out_may_not_alias_an_input(lib):
    x = np.ones(8)
    with pytest.raises(ValueError, match="share memory"):
        lib.gelu(x, out=x)
    with pytest.raises(ValueError, match="share memory"):
        lib.gelu(x[:4], out=x[2:6])
    lib.gelu(x[:4], out=x[4:])  # disjoint halves are fine
    np.testing.assert_allclose(x[4:], gelu_ref(np.ones(4)))


def test_out_must_be_an_array(lib):
    with pytest.raises(tfn.ShapeError):
        lib.gelu(np.zeros(3), out=[1.0, 2.0, 3.0])


def test_out_may_not_share_memory_with_a_weights_array():
    # An array bound through `weights=` (a dict, or tfn.weights of a dict) is an input like
    # any other: an `out=` over it would be read while written (the JIT gave wrong values).
    lib = tfn.Session(threads=1).loads(
        "fn rv(Tensor a) -> Tensor { return transpose(a, [1, 0]) * 1.0 }", name="rv.tfn"
    )
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    for weights in ({"a": a}, tfn.weights({"a": a})):
        with pytest.raises(tfn.ShapeError, match=r'out\[0\] may share memory with weights\["a"\]'):
            lib.rv(weights=weights, out=a[::-1])
    np.testing.assert_array_equal(a, np.arange(16, dtype=np.float32).reshape(4, 4))
    y = np.empty_like(a)
    lib.rv(weights={"a": a}, out=y)
    np.testing.assert_array_equal(y, a.T)


def test_out_whose_elements_overlap_each_other_is_refused(lib):
    x = np.ones(4, np.float32)
    y = np.lib.stride_tricks.as_strided(np.empty(8, np.float32), shape=(4,), strides=(0,))
    with pytest.raises(tfn.ShapeError, match=r"out\[0\] has elements that may share memory"):
        lib.gelu(x, out=y)
    z = np.lib.stride_tricks.as_strided(np.empty(8, np.float32), shape=(2, 3), strides=(8, 4))
    with pytest.raises(tfn.ShapeError, match=r"out\[0\] has elements that may share memory"):
        lib.gelu(np.ones((2, 3), np.float32), out=z)
