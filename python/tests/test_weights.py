"""Checkpoints: tfn.weights (a safetensors path or a dict of arrays, with a mapping),
weights= on calls and vjps, tfn.save_safetensors round trips, and corrupt files."""

import json
import struct

import numpy as np
import pytest

import tfn

SOURCE = """
fn layer(Tensor x, Tensor w, Tensor b) -> Tensor {
    return matmul(x, w) + b
}

fn deep(Tensor x, Tensor ws) -> Tensor {
    return matmul(x, sum(ws, dims=[0]))
}

fn widen(Tensor<bf16> w) -> Tensor<f32> {
    return cast(w, f32)
}

fn only_f64(Tensor<f64> v) -> Tensor<f64> {
    return v * 2.0
}
"""


@pytest.fixture(scope="module", params=["jit", "interp"])
def wlib(request):
    return tfn.Session(backend=request.param, threads=2).loads(SOURCE, name="weights.tfn")


@pytest.fixture
def ckpt(tmp_path, rng):
    tensors = {
        "lin.weight": rng.standard_normal((4, 3)).astype(np.float32),  # [out, in]
        "lin.bias": rng.standard_normal(4).astype(np.float32),
        "b": rng.standard_normal(4).astype(np.float32),
        **{f"l.{i}.w": rng.standard_normal((3, 4)).astype(np.float32) for i in range(3)},
    }
    path = tmp_path / "m.safetensors"
    tfn.save_safetensors(path, tensors)
    return path, tensors


def test_path_with_mapping_matches_numpy(wlib, ckpt, rng):
    path, t = ckpt
    x = rng.standard_normal((2, 3)).astype(np.float32)
    w = tfn.weights(path, {"w": "lin.weight:T"})
    assert w.path == str(path) and len(w) == 6 and "lin.bias" in w
    y = wlib.layer(x, weights=w)
    np.testing.assert_allclose(y, x @ t["lin.weight"].T + t["b"], rtol=1e-5, atol=1e-6)
    # Explicit arguments win over the checkpoint.
    b2 = np.ones(4, np.float32)
    np.testing.assert_allclose(wlib.layer(x, b=b2, weights=w), x @ t["lin.weight"].T + 1, rtol=1e-5)
    assert wlib.layer.unused_weights(x, weights=w) == ["l.0.w", "l.1.w", "l.2.w", "lin.bias"]
    # `{i}` stacks the layers; the mapping may also be a list of strings.
    deep = wlib.deep(x, weights=tfn.weights(path, ["ws=l.{i}.w"]))
    want = x @ (t["l.0.w"] + t["l.1.w"] + t["l.2.w"])
    np.testing.assert_allclose(deep, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(w["lin.weight"], t["lin.weight"])


def test_dict_of_arrays(wlib, ckpt, rng):
    _, t = ckpt
    x = rng.standard_normal((2, 3)).astype(np.float32)
    w_in = np.ascontiguousarray(t["lin.weight"].T)
    y = wlib.layer(x, weights={"w": w_in, "b": t["b"]})
    np.testing.assert_allclose(y, x @ w_in + t["b"], rtol=1e-5, atol=1e-6)
    mapped = tfn.weights(t, {"w": "lin.weight:T", "ws": "l.{i}.w"})
    np.testing.assert_allclose(wlib.layer(x, weights=mapped), y, rtol=1e-5, atol=1e-6)
    assert mapped.path is None and len(mapped) == 6


def test_vjp_with_weights(wlib, ckpt, rng):
    path, t = ckpt
    x = rng.standard_normal((2, 3)).astype(np.float32)
    ct = rng.standard_normal((2, 4)).astype(np.float32)
    w = tfn.weights(path, {"w": "lin.weight:T"})
    dx, dw, db = wlib.layer.vjp((x,), ct, weights=w)
    np.testing.assert_allclose(dx, ct @ t["lin.weight"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dw, x.T @ ct, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(db, ct.sum(0), rtol=1e-5, atol=1e-5)
    y, grads = wlib.value_and_vjp("layer", (x,), ct, weights=w)
    np.testing.assert_allclose(y, x @ t["lin.weight"].T + t["b"], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(grads[2], db)


def test_every_numpy_dtype_round_trips(tmp_path):
    arrays = {
        "bool": np.array([[True, False, True]]),
        "i8": np.array([-3, 0, 127], np.int8),
        "u8": np.array([0, 200, 255], np.uint8),
        "i32": np.arange(6, dtype=np.int32).reshape(2, 3) - 2,
        "i64": np.array([1 << 40, -5], np.int64),
        "f16": np.array([0.5, -1.25], np.float16),
        "f32": np.arange(12, dtype=np.float32).reshape(3, 4).T,  # strided
        "f64": np.array(3.5),  # rank 0
        "empty": np.zeros((0, 3), np.float32),
    }
    path = tmp_path / "all.safetensors"
    tfn.save_safetensors(path, arrays)
    w = tfn.weights(path)
    assert sorted(w.names()) == sorted(arrays)
    for name, a in arrays.items():
        back = w[name]
        assert back.dtype == a.dtype and back.shape == a.shape, name
        np.testing.assert_array_equal(back, a)


def test_bf16_tensors_bind(wlib, tmp_path):
    # bf16 bits written by hand (NumPy has no bfloat16): 1.0, -2.0, 0.5.
    bits = np.array([0x3F80, 0xC000, 0x3F00], np.uint16).tobytes()
    header = json.dumps({"w": {"dtype": "BF16", "shape": [3], "data_offsets": [0, 6]}}).encode()
    path = tmp_path / "bf16.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + bits)
    np.testing.assert_array_equal(wlib.widen(weights=tfn.weights(path)), [1.0, -2.0, 0.5])


def test_bf16_lookups_and_membership(tmp_path):
    bits = np.array([0x3F80], np.uint16).tobytes()
    header = json.dumps({"w": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}}).encode()
    path = tmp_path / "bf16.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + bits)
    w = tfn.weights(path)
    with pytest.raises(tfn.DTypeError, match="tensor `w` is bf16, which NumPy has no dtype for"):
        w["w"]
    # Membership is by name: anything else is simply not in the file.
    assert "w" in w and "v" not in w and 5 not in w and None not in w


def test_an_empty_tensor_too_large_to_describe_is_refused(wlib, tmp_path):
    # Zero bytes of data, but NumPy cannot make an array of these sizes: refused when the
    # file is read (it used to crash the interpreter when it became an array).
    shape = [0, 2**62]
    header = json.dumps({"w": {"dtype": "F32", "shape": shape, "data_offsets": [0, 0]}}).encode()
    path = tmp_path / "huge.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header)
    with pytest.raises(tfn.CheckpointError, match="no array can describe"):
        tfn.weights(path)["w"]
    lib = tfn.Session(threads=1).loads(
        "fn r(Tensor x, *, Int n) -> Tensor { return reshape(x, [0, n]) }", name="r.tfn")
    assert lib.r(np.zeros(0, np.float32), n=2**60).shape == (0, 2**60)
    with pytest.raises(tfn.ShapeError, match="too large for a NumPy array|no array can describe"):
        lib.r(np.zeros(0, np.float32), n=2**61)


def test_errors_name_tensor_and_parameter(wlib, ckpt, tmp_path, rng):
    path, _ = ckpt
    x = rng.standard_normal((2, 3)).astype(np.float32)
    with pytest.raises(tfn.CheckpointError, match="parameter `w` of `layer`.*no tensor `w`"):
        wlib.layer(x, weights=tfn.weights(path))
    with pytest.raises(tfn.ShapeError, match="tensor `lin.weight` of"):
        wlib.layer(x, weights=tfn.weights(path, {"w": "lin.weight"}))
    with pytest.raises(tfn.CheckpointError, match="parameter `v`.*f64"):
        wlib.only_f64(weights={"v": np.ones(3, np.float32)})
    with pytest.raises(tfn.CheckpointError, match="tensor `nope`.*does not exist"):
        tfn.weights(path, {"w": "nope"})
    with pytest.raises(tfn.CheckpointError, match="no `=`"):
        tfn.weights(path, ["w"])
    # A mapping entry for a parameter the function does not have is an error, not ignored
    # (here while the parameter's own name would bind).
    named = tfn.weights({"w": np.ones((3, 3), np.float32), "q": np.ones((3, 3), np.float32)},
                        {"nope": "q"})
    with pytest.raises(tfn.CheckpointError, match="`layer` has no parameter `nope`"):
        wlib.layer(x, weights=named)
    with pytest.raises(TypeError):
        wlib.layer(x, weights=[1, 2])
    good = path.read_bytes()
    for name, data in [
        ("cut", good[:-3]),
        ("short", good[:5]),
        ("lying", struct.pack("<Q", 1 << 50) + good[8:]),
        ("garbage", struct.pack("<Q", 4) + b"{{{{"),
    ]:
        bad = tmp_path / f"{name}.safetensors"
        bad.write_bytes(data)
        with pytest.raises(tfn.CheckpointError, match=f"{name}.safetensors"):
            tfn.weights(bad)
    with pytest.raises(OSError):
        tfn.weights(tmp_path / "missing.safetensors")
    with pytest.raises(tfn.CheckpointError, match="two tensors|reserved"):
        tfn.save_safetensors(tmp_path / "x.safetensors", {"__metadata__": np.ones(2)})
