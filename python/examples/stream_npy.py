"""Streams a .npy array larger than the memory it may use through a fused tfn kernel, with
Dask and a progress bar.

    python python/examples/stream_npy.py                       # a 1 GiB input, 256 MiB allowed
    python python/examples/stream_npy.py --size-mb 4096 --memory-mb 512 --keep

The input is a memory map (`np.load(..., mmap_mode="r")`) cut into row blocks by
`dask.array.from_array` (through `Blocks`, so that each block is read when it is needed); `tfn.dask.map_blocks` runs the kernel on each block (after checking
that the kernel is blockwise along the rows) and `dask.array.store` writes every result block
into an output memory map. Only a few blocks are in memory at a time: the pages of the maps
are the file's (the kernel drops them under memory pressure, a cgroup limit included), and
the memory the process allocates itself (anonymous memory, `RssAnon`) is sampled throughout
and must stay under `--memory-mb`, or the script fails. It then checks random blocks against
one in-process call on the same rows.
"""

import argparse
import os
import tempfile
import threading
import time

import numpy as np

KERNEL = """use "std:nn"
// One pass over the data: scale and shift, GELU, times a sigmoid gate, clipped.
fn fused(Tensor x) -> Tensor {
    let h = gelu(x * 0.5 + 0.1) * sigmoid(x)
    return minimum(maximum(h, -4.0), 4.0)
}
"""


def rss_anon_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) / 1024
    return 0.0


class PeakSampler(threading.Thread):
    """Samples anonymous memory every few milliseconds; `peak` is the highest seen."""

    def __init__(self):
        super().__init__(daemon=True)
        self.peak = rss_anon_mb()
        self.stop = threading.Event()

    def run(self):
        while not self.stop.wait(0.005):
            self.peak = max(self.peak, rss_anon_mb())


class Blocks:
    """The memory map as a plain array-like: `da.from_array` on an `np.memmap` (a NumPy array)
    slices it into every block up front, and they stay alive until the graph finishes
    (measured: storing a copy of a 256 MiB map peaked at 335 MiB); on this object each block is
    a read task whose memory is freed once the block is stored."""

    def __init__(self, array):
        self.array, self.shape, self.dtype, self.ndim = array, array.shape, array.dtype, array.ndim

    def __getitem__(self, index):
        # A copy: the block is read here, into memory freed when its result is stored.
        return np.array(self.array[index])


def write_input(path, rows, cols, seed=0):
    """A float32 .npy of [rows, cols], written block by block (never whole in memory)."""
    rng = np.random.default_rng(seed)
    header = {"descr": np.lib.format.dtype_to_descr(np.dtype(np.float32)), "fortran_order": False, "shape": (rows, cols)}
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, header)
        step = max(1, (8 << 20) // (4 * cols))
        for lo in range(0, rows, step):
            n = min(step, rows - lo)
            f.write(rng.standard_normal((n, cols), dtype=np.float32).tobytes())


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size-mb", type=int, default=1024, help="input size (MiB)")
    p.add_argument("--memory-mb", type=int, default=256, help="anonymous memory allowed (MiB)")
    p.add_argument("--cols", type=int, default=1024)
    p.add_argument("--block-mb", type=int, default=16, help="rows per block, in MiB")
    p.add_argument("--workers", type=int, default=2, help="Dask threads (1 kernel thread each)")
    p.add_argument("--dir", default=None, help="where the files go (default: a temporary directory)")
    p.add_argument("--keep", action="store_true", help="keep the files")
    a = p.parse_args(argv)

    import dask
    import dask.array as da
    from dask.diagnostics import ProgressBar

    import tfn
    import tfn.dask

    sampler = PeakSampler()
    sampler.start()
    base = rss_anon_mb()
    lib = tfn.Session(threads=1).loads(KERNEL, name="stream.tfn")
    work = a.dir or tempfile.mkdtemp(prefix="tfn-stream-")
    src, dst = os.path.join(work, "input.npy"), os.path.join(work, "output.npy")
    rows = (a.size_mb << 20) // (4 * a.cols)
    block_rows = max(1, (a.block_mb << 20) // (4 * a.cols))
    print(f"stream_npy: writing {rows} x {a.cols} float32 ({a.size_mb} MiB) to {src}", flush=True)
    write_input(src, rows, a.cols)

    x = np.load(src, mmap_mode="r")
    out = np.lib.format.open_memmap(dst, mode="w+", dtype=np.float32, shape=x.shape)
    meta = np.empty((0, 0), x.dtype)
    # A name, so that Dask does not tokenize the object (it would pickle the whole map).
    name = f"npy-{os.path.abspath(src)}-{os.stat(src).st_mtime_ns}"
    dx = da.from_array(Blocks(x), chunks=(block_rows, -1), meta=meta, name=name)
    y = tfn.dask.map_blocks(lib.fused, dx)
    t0 = time.perf_counter()
    with dask.config.set(scheduler="threads", num_workers=a.workers), ProgressBar(dt=0.5):
        da.store(y, out, lock=False)
    seconds = time.perf_counter() - t0
    out.flush()
    sampler.stop.set()
    sampler.join()
    gbs = (a.size_mb / 1024) / seconds
    print(
        f"stream_npy: {dx.numblocks[0]} blocks in {seconds:.2f} s ({gbs:.2f} GiB/s in); "
        f"anonymous memory peaked at {sampler.peak:.0f} MiB ({base:.0f} MiB before tfn and Dask), "
        f"allowed {a.memory_mb} MiB"
    )

    rng = np.random.default_rng(1)
    result = np.load(dst, mmap_mode="r")
    for b in rng.choice(dx.numblocks[0], size=min(4, dx.numblocks[0]), replace=False):
        lo, hi = b * block_rows, min(rows, (b + 1) * block_rows)
        expect = lib.fused(np.ascontiguousarray(x[lo:hi]))
        if not np.array_equal(result[lo:hi], expect):
            raise SystemExit(f"stream_npy: block {b} differs from one in-process call")
    print("stream_npy: sampled blocks are identical to one in-process call")
    del x, out, result
    if not a.keep and a.dir is None:
        for f in (src, dst):
            os.remove(f)
        os.rmdir(work)
    if sampler.peak > a.memory_mb:
        raise SystemExit(f"stream_npy: anonymous memory {sampler.peak:.0f} MiB > allowed {a.memory_mb} MiB")


if __name__ == "__main__":
    main()
