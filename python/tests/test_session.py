"""Sessions: backends, threads, stats, the cache, several Python threads at once."""

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import tfn
from conftest import OPS, softmax_ref


def test_session_options_and_repr():
    s = tfn.Session(backend="interp", threads=1)
    assert s.backend == "interp" and s.threads == 1
    assert "interp" in repr(s)
    lib = s.load(OPS)
    assert lib.session is s or lib.session.backend == "interp"


def test_stats_count_compiles_and_hits():
    s = tfn.Session(threads=1)
    lib = s.load(OPS)
    st = s.stats()
    assert st.compiles == 0 and st["cache_hits"] == 0
    x = np.ones((4, 8), np.float32)
    lib.gelu(x)
    lib.gelu(x)
    lib.gelu(np.ones((9, 3), np.float32))  # a new size is a cache hit
    st = s.stats()
    assert (st.compiles, st.cache_hits) == (1, 2)
    assert st.compile_time > 0
    assert st.optimizer_fallbacks == 0 and st.interpreted_kernels == 0
    lib.gelu(np.ones((4, 8), np.float64))  # a new dtype compiles
    assert s.stats().compiles == 2
    d = dict(s.stats())
    assert set(d) == {"compiles", "cache_hits", "compile_time", "optimizer_fallbacks",
                      "interpreted_kernels"}
    assert s.stats().as_dict()["compiles"] == 2


def test_default_session_and_loads():
    lib = tfn.loads("fn twice(Tensor x) -> Tensor {\n    return x + x\n}\n", name="inline.tfn")
    np.testing.assert_array_equal(lib.twice(np.arange(3)), [0, 2, 4])
    assert lib.session.stats().compiles >= 1
    assert isinstance(tfn.default_session(), tfn.Session)


def test_libraries_share_their_session():
    s = tfn.Session()
    a = s.loads("fn one(Tensor x) -> Tensor {\n    return x + 1\n}\n", name="a.tfn")
    b = s.loads("fn two(Tensor x) -> Tensor {\n    return one(one(x))\n}\n", name="b.tfn")
    np.testing.assert_array_equal(b.two(np.zeros(2)), [2.0, 2.0])
    assert a.functions == ["one"] and b.functions == ["two"]


def test_loading_a_file_again_unchanged_gives_the_same_library(tmp_path):
    # Re-running a notebook cell: the second load adds nothing and keeps the compiled code.
    (tmp_path / "dep.tfn").write_text("fn dep(Tensor x) -> Tensor {\n    return x * 2.0\n}\n")
    main = tmp_path / "main.tfn"
    main.write_text('use "dep.tfn"\n\nfn top(Tensor x) -> Tensor {\n    return dep(x) + 1.0\n}\n')
    s = tfn.Session()
    a = s.load(main)
    np.testing.assert_array_equal(a.top(np.ones(3)), [3.0, 3.0, 3.0])
    b = s.load(main)
    c = s.load(tmp_path / "dep.tfn")
    assert b.functions == a.functions and "top" in dir(b) and c.functions == ["dep"]
    np.testing.assert_array_equal(b.top(np.ones(3)), [3.0, 3.0, 3.0])
    assert s.stats().compiles == 1
    # A changed file defining the same names again is a CompileError that says so.
    main.write_text(main.read_text().replace("1.0", "5.0"))
    with pytest.raises(tfn.CompileError, match="has changed since"):
        s.load(main)
    np.testing.assert_array_equal(a.top(np.ones(3)), [3.0, 3.0, 3.0])


def test_many_python_threads_share_a_session(jit_lib):
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal((rng.integers(1, 40), 16)) for _ in range(64)]

    def work(x):
        return jit_lib.softmax(x), jit_lib.softmax(x.astype(np.float32))

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(work, inputs))
    for x, (y64, y32) in zip(inputs, results):
        np.testing.assert_allclose(y64, softmax_ref(x))
        np.testing.assert_allclose(y32, softmax_ref(x.astype(np.float32)), rtol=1e-5, atol=1e-6)


def test_threads_write_their_own_out(jit_lib):
    xs = [np.full((1000, 8), float(i)) for i in range(16)]
    outs = [np.empty((1000, 8)) for _ in xs]
    threads = [threading.Thread(target=jit_lib.softmax, args=(x,), kwargs={"out": o})
               for x, o in zip(xs, outs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for o in outs:
        np.testing.assert_allclose(o, 1 / 8)
