"""The spec's errors: TypeError listing every candidate and why, ValueError naming the argument
and both shapes, tfn.CompileError carrying the rustc-style diagnostic."""

import warnings

import numpy as np
import pytest

import tfn
from conftest import DATA


def test_no_overload_lists_every_candidate(lib):
    x = np.zeros((2, 2))
    with pytest.raises(TypeError) as e:
        lib.scale(x, "f32")
    text = str(e.value)
    assert "no overload of `scale`" in text
    assert "scale(Tensor x, Tensor s)" in text and "scale.scalar(Tensor x, Scalar s)" in text
    assert text.count("is not a match") == 2
    assert isinstance(e.value, tfn.DispatchError) and isinstance(e.value, tfn.Error)


@pytest.mark.parametrize(
    "value, described",
    [
        ("two", 'the string "two" (argument 2), which is not a dtype'),
        ({"s": 2}, "a Python `dict` (argument 2)"),
        ([1, "x"], 'the string "x" (argument 2 (item 1))'),
        ([1, 2.5, np.zeros(2)], "a list mixing kinds of items (argument 2)"),
    ],
)
def test_a_value_of_no_tfn_type_lists_every_candidate(lib, value, described):
    # The call is one no overload accepts: the function and each candidate are named, each
    # with why it rejects the value.
    with pytest.raises(TypeError) as e:
        lib.scale(np.zeros((2, 2)), value)
    text = str(e.value)
    assert "no overload of `scale`" in text, text
    assert "scale(Tensor x, Tensor s)" in text and "scale.scalar(Tensor x, Scalar s)" in text
    assert text.count("is not a match") == 2, text
    assert text.count(described) == 2, text
    assert isinstance(e.value, tfn.DispatchError)
    # The same through a vjp, by keyword too.
    with pytest.raises(tfn.DispatchError, match="no overload of `scale`"):
        lib.vjp("scale", (np.zeros(2),), np.zeros(2), s=value)


@pytest.mark.parametrize(
    "call, reason",
    [
        (lambda lib, x: lib.softmax(x, 0), "takes 1 positional argument but 2 were given"),
        (lambda lib, x: lib.softmax(x, axis=0), "unknown keyword argument `axis`"),
        (lambda lib, x: lib.linear(x, x), "missing required argument `b`"),
        (lambda lib, x: lib.softmax(x, dim=1.5), "argument `dim` must be Int"),
        (lambda lib, x: lib.softmax(x, x=x), "given twice"),
        (lambda lib, x: lib.vjp("softmax", (x,), x, out=x), r"vjp\(\) takes no `out=`"),
        (lambda lib, x: lib.value_and_vjp("softmax", (x,), x, out=x), r"value_and_vjp\(\) takes"),
        (lambda lib, x: lib.softmax.vjp((x,), x, out=x), r"vjp\(\) takes no `out=`"),
    ],
)
def test_arity_and_kind_errors(lib, call, reason):
    with pytest.raises(TypeError, match=reason):
        call(lib, np.zeros((2, 3)))


def test_a_list_of_tensors_has_one_dtype(lib):
    with pytest.raises(tfn.DTypeError, match="item 0 is f32 and item 1 is f64"):
        lib.concat([np.zeros(2, np.float32), np.zeros(2)])
    with pytest.raises(tfn.DispatchError, match="got an empty list"):
        lib.concat([])


def test_membership_and_overload_attributes(lib):
    assert "gelu" in lib and 5 not in lib and None not in lib
    # getattr with a dotted name is the overload, as lib["..."] is.
    x = np.ones(3)
    np.testing.assert_array_equal(getattr(lib, "scale.scalar")(x, 2.0), lib["scale.scalar"](x, 2.0))


def test_dtype_errors_are_type_and_value_errors(lib):
    x32 = np.zeros(3, np.float32)
    with pytest.raises(tfn.DTypeError, match="is f64 but `T` is f32"):
        lib.iadd(x32, np.zeros(3))
    with pytest.raises(TypeError, match="`T` must be one of f32, f64"):
        lib.add_scalar(np.zeros(3, np.int32), 1)
    with pytest.raises(ValueError):  # a dtype clash inside the body
        lib.mixed(x32, np.zeros(3))
    with pytest.raises(TypeError, match="complex64"):
        lib.gelu(np.zeros(3, np.complex64))
    with pytest.raises(tfn.Error, match="cannot be u8"):  # gelu's 0.5 is not a u8
        lib.gelu(np.zeros(3, np.uint8))


def test_storage_dtypes_cross_both_ways(lib):
    x = np.linspace(-3, 3, 11).astype(np.float16)
    y = lib.gelu(x)
    assert y.dtype == np.float16
    want = (0.5 * x.astype(np.float64) * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x.astype(np.float64) ** 3))))
    np.testing.assert_allclose(y.astype(np.float64), want, rtol=2e-3, atol=2e-3)


def test_shape_mismatch_names_argument_and_both_shapes(lib):
    with pytest.raises(ValueError) as e:
        lib.iadd(np.zeros((3, 4)), np.zeros((5, 4)))
    text = str(e.value)
    assert "`x`" in text and "`y`" in text and "[3, 4]" in text and "[5, 4]" in text
    assert isinstance(e.value, tfn.ShapeError)
    with pytest.raises(ValueError, match=r"\[2, 3\].*\[4, 5\]|\[4, 5\].*\[2, 3\]"):
        lib.linear(np.zeros((2, 3)), np.zeros((4, 5)), np.zeros(5))


def test_compile_error_carries_the_diagnostic():
    src = "fn f(Tensor x) -> Tensor {\n    return x + y\n}\n"
    with pytest.raises(tfn.CompileError) as e:
        tfn.loads(src, name="bad.tfn")
    text = str(e.value)
    assert "error[E0202]" in text and "bad.tfn:2:16" in text and "unknown variable `y`" in text


def test_compile_error_from_a_file(tmp_path):
    p = tmp_path / "broken.tfn"
    p.write_text("fn g(Tensor x) -> Tensor {\n  return x +\n}\n")
    with pytest.raises(tfn.CompileError, match="broken.tfn:"):
        tfn.Session().load(p)


def test_missing_file():
    with pytest.raises(FileNotFoundError):
        tfn.load(DATA / "no_such_file.tfn")
    with pytest.raises(FileNotFoundError, match="no_such_file.safetensors"):
        tfn.weights(DATA / "no_such_file.safetensors")
    with pytest.raises(tfn.CheckpointError, match="is a directory"):
        tfn.weights(DATA)


def test_unknown_function_suggests(lib):
    with pytest.raises(AttributeError, match="did you mean `softmax`"):
        lib.softmx
    with pytest.raises(KeyError):
        lib["softmx"]
    with pytest.raises(AttributeError):
        lib.vjp("softmx", (np.zeros(2),), np.zeros(2))
    assert not hasattr(lib, "__array__")


def test_unsupported_python_values(lib):
    with pytest.raises(TypeError, match="argument 2"):
        lib.scale(np.zeros(2), object())
    with pytest.raises(TypeError, match="not a dtype"):
        lib.to(np.zeros(2), "float17")
    with pytest.raises(ValueError, match="64-bit"):
        lib.scale(np.zeros(2), 2**70)


def test_masked_overload_warns():
    src = (
        "fn h(Tensor x, Scalar s) -> Tensor {\n    return x * s\n}\n"
        "fn h.int(Tensor x, Int s) -> Tensor {\n    return x + s\n}\n"
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lib = tfn.Session().loads(src, name="masked.tfn")
    assert any(issubclass(w.category, tfn.TfnWarning) and "W0101" in str(w.message) for w in caught)
    np.testing.assert_allclose(lib.h(np.ones(2), 3), [3.0, 3.0])  # the first overload wins


def test_bad_session_arguments():
    with pytest.raises(ValueError, match="backend"):
        tfn.Session(backend="gpu")
    with pytest.raises(ValueError, match="threads"):
        tfn.Session(threads=0)


def test_arrays_of_more_than_32_axes_are_a_shape_error():
    # NumPy 2 allows 64 axes, rust-numpy's views 32: past that the call is refused with a
    # catchable error (it was a Rust panic, a BaseException), and the session stays usable.
    lib = tfn.Session(threads=1).loads("fn twice(Tensor x) -> Tensor { return x * 2.0 }")
    if np.lib.NumpyVersion(np.__version__) < "2.0.0":
        pytest.skip("NumPy < 2 allows at most 32 axes")
    deep = np.ones((1,) * 33, np.float32)
    with pytest.raises(tfn.ShapeError, match="33 axes"):
        lib.twice(deep)
    ok = np.ones((1,) * 32, np.float32)
    with pytest.raises(tfn.ShapeError, match=r"out\[0\] has 33 axes"):
        lib.twice(ok.reshape((1,) * 32), out=deep)
    assert np.array_equal(lib.twice(ok), ok * 2)
    # A result of more than 32 axes (from a reshape, or a checkpoint's tensor) likewise.
    ones = ", ".join(["1"] * 33)
    deeper = tfn.Session(threads=1).loads(
        f"fn up(Tensor x) -> Tensor {{\n    return reshape(x, [{ones}])\n}}\n", name="up.tfn"
    )
    with pytest.raises(tfn.ShapeError, match="a result has 33 axes"):
        deeper.up(np.ones(1, np.float32))


def test_ctrl_c_stops_a_long_loop():
    # A call releases the GIL, so Python's SIGINT handler used to wait for a loop of 10^12
    # trips to end; the loop now polls it between trips and the call raises KeyboardInterrupt.
    import os
    import signal
    import threading
    import time

    s = tfn.Session()
    lib = s.loads(
        "fn spin(Tensor x, *, Int n) -> Tensor {\n"
        "    var h = x\n"
        "    for _i in 0..n {\n"
        "        h = h * 0.5 + 1.0\n"
        "    }\n"
        "    return h\n"
        "}\n",
        name="spin.tfn",
    )
    x = np.zeros(4, np.float32)
    assert np.allclose(lib.spin(x, n=3), 1.75)
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            lib.spin(x, n=10**12)
    finally:
        timer.cancel()
    assert time.monotonic() - started < 10
    # The session still works.
    assert np.allclose(lib.spin(x, n=2), 1.5)
