"""tfn functions on a dask.distributed LocalCluster of worker processes: the same bits as one
in-process call; a chunking that splits an axis the function reduces is an error; a worker's
compile error reaches the client with its diagnostic."""

import numpy as np
import pytest

import tfn

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("dask.distributed")
import tfn.dask  # noqa: E402

SOURCE = """use "std:nn"
fn fused(Tensor x, Tensor y) -> Tensor { return exp(sin(x) * 0.5) + tanh(y) * x }
fn rows(Tensor x) -> Tensor { return softmax(x, dim=-1) }
fn row_norm(Tensor x) -> Tensor { return sqrt(sum(x * x, dims=[1])) }
fn cols(Tensor x) -> Tensor { return x - mean(x, dims=[0], keepdim=true) }
fn positions(Tensor x) -> Tensor { return x + iota_like(x, dim=0, dtype=f32) }
fn ints(Tensor x) -> Tensor { return sqrt(x) }
fn trailing(Tensor x) -> Tensor { return reshape(x, [size(x, 0), size(x, 1), 1]) }
fn leading(Tensor x) -> Tensor { return unsqueeze(x, 0) }
fn pairs(Tensor x) -> Tensor { return reshape(x, [size(x, 0) / 2, 2, size(x, 1)]) }
fn col_sums(Tensor x) -> Tensor { return sum(x, dims=[0]) }
"""


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=2,
        processes=True,
        dashboard_address=None,
        env={"TFN_THREADS": "1"},
    )
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="module")
def lib():
    return tfn.Session(threads=1).loads(SOURCE, name="blocks.tfn")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((600, 250)).astype(np.float32), rng.standard_normal(
        (600, 250)
    ).astype(np.float32)


def test_elementwise_on_worker_processes_is_one_call(client, lib, data):
    x, y = data
    dx, dy = da.from_array(x, chunks=(100, 60)), da.from_array(y, chunks=(100, 60))
    out = tfn.dask.map_blocks(lib.fused, dx, dy).compute()
    np.testing.assert_array_equal(out, lib.fused(x, y))
    # Plain dask.array.map_blocks works too (the function pickles to the workers).
    out = da.map_blocks(lib.fused, dx, dy, dtype=np.float32).compute()
    np.testing.assert_array_equal(out, lib.fused(x, y))
    # Each worker made one session for the library and compiled `fused` once.
    compiles = client.run(
        lambda: sorted(s.stats().compiles for s, _ in __import__("tfn._pickle").__dict__["_pickle"]._sessions.values())
    )
    assert all(c == [1] for c in compiles.values()), compiles


def test_row_wise_with_whole_rows(client, lib, data):
    x, _ = data
    dx = da.from_array(x, chunks=(75, -1))
    np.testing.assert_array_equal(tfn.dask.map_blocks(lib.rows, dx).compute(), lib.rows(x))
    norms = tfn.dask.map_blocks(lib.row_norm, dx)
    assert norms.chunks == ((75,) * 8,)
    np.testing.assert_array_equal(norms.compute(), lib.row_norm(x))


@pytest.mark.parametrize(
    "name, chunks, axis",
    [("rows", (100, 50), 1), ("row_norm", (600, 125), 1), ("cols", (300, 250), 0), ("positions", (200, 250), 0)],
)
def test_splitting_an_axis_the_function_is_not_blockwise_along_is_an_error(lib, data, name, chunks, axis):
    x, _ = data
    with pytest.raises(tfn.dask.ChunkError, match=f"not blockwise along axis {axis}") as e:
        tfn.dask.map_blocks(lib[name], da.from_array(x, chunks=chunks))
    assert f"rechunk({{{axis}: -1}})" in str(e.value)


def test_attributes_and_whole_operands_go_to_every_block(client, lib, data):
    x, y = data
    w = y[0].copy()  # a NumPy operand: every block gets it whole
    dx = da.from_array(x, chunks=(-1, 50))
    out = tfn.dask.map_blocks(lib.softmax, dx, dim=0).compute()
    np.testing.assert_array_equal(out, lib.softmax(x, dim=0))
    with pytest.raises(tfn.dask.ChunkError, match="axis 1"):
        tfn.dask.map_blocks(lib.softmax, dx, dim=1)
    rows = da.from_array(x, chunks=(100, -1))
    np.testing.assert_array_equal(tfn.dask.map_blocks(lib.fused, rows, w).compute(), lib.fused(x, w))
    with pytest.raises(TypeError, match="same number of axes"):
        tfn.dask.map_blocks(lib.fused, rows, da.from_array(w))


def test_the_other_axes_may_be_split(client, lib, data):
    x, _ = data
    out = tfn.dask.map_blocks(lib.cols, da.from_array(x, chunks=(-1, 50))).compute()
    np.testing.assert_array_equal(out, lib.cols(x))


def test_a_worker_that_cannot_compile_reports_the_diagnostic(client, lib):
    x = da.from_array(np.arange(40, dtype=np.int32).reshape(4, 10), chunks=(2, 10))
    future = da.map_blocks(lib.ints, x, dtype=np.float32, meta=np.empty((0, 0), np.float32))
    with pytest.raises(tfn.Error) as e:
        future.compute()
    # The same exception, and the same text, as the call in this process raises.
    with pytest.raises(type(e.value)) as here:
        lib.ints(np.arange(20, dtype=np.int32).reshape(2, 10))
    assert str(e.value) == str(here.value)
    assert "blocks.tfn" in str(e.value)


def test_the_streaming_example_stays_within_its_memory(tmp_path):
    import pathlib
    import subprocess
    import sys

    script = pathlib.Path(__file__).resolve().parents[1] / "examples" / "stream_npy.py"
    args = ["--size-mb", "192", "--memory-mb", "160", "--block-mb", "8", "--dir", str(tmp_path)]
    out = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "identical to one in-process call" in out.stdout
    assert "100% Completed" in out.stdout


def test_an_int_or_bool_scan_is_caught_whatever_the_leading_values():
    # A left-padded mask: its leading elements are all 0, so a probe made of them alone
    # showed no dependence between blocks, and the cumulative sum came out wrong.
    lib = tfn.Session(threads=1).loads(
        "fn positions(Tensor mask) -> Tensor { return cumsum(mask, dim=1) }\n"
        "fn from_bools(Tensor mask) -> Tensor { return cumsum(cast(mask, i64), dim=1) }",
        name="mask.tfn",
    )
    mask = np.zeros((4, 12), np.int64)
    mask[:, 5:] = 1
    with pytest.raises(tfn.dask.ChunkError, match="not blockwise along axis 1"):
        tfn.dask.map_blocks(lib.positions, da.from_array(mask, chunks=(-1, 6)))
    with pytest.raises(tfn.dask.ChunkError, match="not blockwise along axis 1"):
        tfn.dask.map_blocks(lib.from_bools, da.from_array(mask.astype(np.bool_), chunks=(-1, 6)))
    # Split along the rows only, it is blockwise: one call's answer.
    out = tfn.dask.map_blocks(lib.positions, da.from_array(mask, chunks=(2, -1))).compute()
    np.testing.assert_array_equal(out, lib.positions(mask))


def test_keywords_named_like_dasks_own_go_to_the_function():
    lib = tfn.Session(threads=1).loads(
        "fn tk(Tensor x, *, Int token = 0, Int name = 0, Int chunks = 0) -> Tensor "
        "{ return x + token + name + chunks }",
        name="kw.tfn",
    )
    x = np.zeros((4, 6), np.float32)
    out = tfn.dask.map_blocks(
        lib.tk, da.from_array(x, chunks=(2, 3)), token=5, name=2, chunks=1
    ).compute()
    np.testing.assert_array_equal(out, lib.tk(x, token=5, name=2, chunks=1))


def test_a_new_axis_is_declared_to_dask(lib, data):
    x, _ = data
    dx = da.from_array(x[:12, :10], chunks=(5, 4))
    up = tfn.dask.map_blocks(lib.trailing, dx)  # a trailing new axis: the default
    assert up.shape == (12, 10, 1)
    np.testing.assert_array_equal(up.compute(scheduler="sync"), x[:12, :10, None])
    assert (up + np.ones(10, np.float32)[:, None]).compute(scheduler="sync").shape == (12, 10, 1)
    with pytest.raises(tfn.dask.ChunkError, match=r"new_axis"):
        tfn.dask.map_blocks(lib.leading, dx)
    lead = tfn.dask.map_blocks(lib.leading, dx, new_axis=0)
    assert lead.shape == (1, 12, 10)
    np.testing.assert_array_equal(lead.compute(scheduler="sync"), x[None, :12, :10])


def test_the_probe_has_the_blocks_sizes(lib, data):
    x, _ = data
    # Along an unsplit axis the function may change the size: blocks of 4 rows pair up.
    dx = da.from_array(x[:8, :6], chunks=(-1, 3))
    out = tfn.dask.map_blocks(lib.pairs, dx, new_axis=1)
    np.testing.assert_array_equal(out.compute(scheduler="sync"), x[:8, :6].reshape(4, 2, 6))
    # Along a split axis it may not, and the error says so (not a size the user never gave).
    with pytest.raises(tfn.dask.ChunkError, match="has 4 elements for 8") as e:
        tfn.dask.map_blocks(lib.pairs, da.from_array(x[:8, :6], chunks=(4, 4)), new_axis=1)
    assert "5 / 2" not in str(e.value)


def test_a_reduced_leading_axis_is_named(lib, data):
    x, _ = data
    dx = da.from_array(x[:74, :10], chunks=(37, 5))
    with pytest.raises(tfn.dask.ChunkError, match=r"drops the trailing axes \[1\]"):
        tfn.dask.map_blocks(lib.col_sums, dx)
    with pytest.raises(tfn.dask.ChunkError, match="not blockwise along axis 0"):
        tfn.dask.map_blocks(lib.col_sums, dx, drop_axis=0)
    cols = tfn.dask.map_blocks(lib.col_sums, da.from_array(x[:74, :10], chunks=(-1, 5)), drop_axis=0)
    np.testing.assert_array_equal(cols.compute(scheduler="sync"), lib.col_sums(x[:74, :10]))
