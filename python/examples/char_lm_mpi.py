"""Data-parallel training of examples/char_lm/model.tfn from Python over MPI (mpi4py).

    mpirun -np 2 python python/examples/char_lm_mpi.py --steps 200      # 2 ranks
    python python/examples/char_lm_mpi.py --steps 200                   # 1 rank, same result

Every rank holds the whole model. Rank 0 initialises the parameters and broadcasts them; each
step every rank draws the same global batch (one seeded generator), takes its slice of the
rows, runs `value_and_vjp` on the mean cross-entropy of its slice, and the gradients,
flattened into one buffer, are summed with one in-place `Allreduce` and divided by the number
of ranks: with equal slices that is the gradient of the full batch's mean loss, so N ranks
follow the same trajectory as one rank on the whole batch (up to rounding). Each rank then
applies std:optim's fused `adamw` to its own copy. Kernel threads per rank default to
cores / ranks on the node (`--threads`), so ranks x threads stays within the cores.

A rank that raises prints its traceback and calls `MPI.COMM_WORLD.Abort`, so the other ranks
(blocked in a collective) are terminated instead of waiting forever; a rank that dies is
noticed by `mpirun`, which terminates the others. docs/distributed.md has the numbers and a
model of the step time on more machines.
"""

import argparse
import os
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MODEL = os.path.join(REPO, "examples", "char_lm", "model.tfn")
TEXT = os.path.join(REPO, "examples", "char_lm", "data", "shakespeare.txt")


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=16, help="global sequences per step (all ranks)")
    p.add_argument("--block", type=int, default=64)
    p.add_argument("--channels", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    p.add_argument("--threads", type=int, default=None, help="kernel threads per rank")
    p.add_argument("--save", default=None, help="write the final parameters to this .npz (rank 0)")
    p.add_argument("--log-every", type=int, default=50)
    p.add_argument("--timing", action="store_true", help="print the mean step time (steps 3..)")
    p.add_argument("--allreduce-bench", action="store_true", help="time Allreduce alone and exit")
    p.add_argument("--fail-rank", type=int, default=None, help="(testing) this rank fails ...")
    p.add_argument("--fail-step", type=int, default=None, help="(testing) ... at this step")
    p.add_argument("--fail-how", choices=["raise", "kill"], default="raise")
    return p.parse_args(argv)


def abort_on_exception(comm):
    """An uncaught exception on any rank: print it with the rank, then abort every rank
    (the others may be blocked in a collective that would never complete)."""

    def hook(kind, value, tb):
        sys.stderr.write(f"char_lm_mpi: rank {comm.Get_rank()} failed; aborting all ranks\n")
        traceback.print_exception(kind, value, tb)
        sys.stderr.flush()
        comm.Abort(1)

    sys.excepthook = hook


def layout(vocab, a):
    """(name, shape, init std or 'ones'/'zeros', decays) in model.tfn's parameter order."""
    v, t, c, l = vocab, a.block, a.channels, a.layers
    std, residual = 0.02, 0.02 / np.sqrt(2.0 * l)
    return [
        ("wte", (v, c), std), ("wpe", (t, c), std),
        ("ln1_g", (l, c), "ones"), ("ln1_b", (l, c), "zeros"),
        ("wq", (l, c, c), std), ("wk", (l, c, c), std), ("wv", (l, c, c), std),
        ("wo", (l, c, c), residual), ("bo", (l, c), "zeros"),
        ("ln2_g", (l, c), "ones"), ("ln2_b", (l, c), "zeros"),
        ("w1", (l, c, 4 * c), std), ("b1", (l, 4 * c), "zeros"),
        ("w2", (l, 4 * c, c), residual), ("b2", (l, c), "zeros"),
        ("lnf_g", (c,), "ones"), ("lnf_b", (c,), "zeros"),
    ]


def allreduce_bench(comm, MPI):
    """Median time of an in-place float32 Allreduce from 4 bytes to 16 MB (docs/distributed.md
    fits its latency and bandwidth)."""
    for n in [1, 256, 16384, 131072, 409600, 1048576, 4194304]:
        buf = np.ones(n, np.float32)
        runs = []
        for _ in range(30 if n < 1 << 20 else 10):
            comm.Barrier()
            t = time.perf_counter()
            comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
            runs.append(time.perf_counter() - t)
        if comm.Get_rank() == 0:
            print(f"allreduce {4 * n:>9} bytes on {comm.Get_size()} ranks: {np.median(runs) * 1e6:9.1f} us")


def main(argv=None):
    from mpi4py import MPI

    a = parse(argv)
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    abort_on_exception(comm)
    if a.batch % size:
        raise SystemExit(f"--batch {a.batch} must be a multiple of the {size} ranks")
    if a.allreduce_bench:
        return allreduce_bench(comm, MPI)
    local = comm.Split_type(MPI.COMM_TYPE_SHARED).Get_size()
    threads = a.threads or max(1, (os.cpu_count() or 1) // local)

    import tfn

    session = tfn.Session(threads=threads)
    lib = session.load(MODEL)
    dtype = np.dtype(a.dtype)

    text = open(TEXT, encoding="utf-8").read()
    alphabet = sorted(set(text))
    index = {ch: i for i, ch in enumerate(alphabet)}
    ids = np.fromiter((index[ch] for ch in text), dtype=np.int64, count=len(text))
    train = ids[: len(ids) * 9 // 10]

    # Rank 0 draws the initial weights; the others start from garbage and receive them.
    specs = layout(len(alphabet), a)
    init = np.random.default_rng(a.seed if rank == 0 else 10_000 + rank)
    params = []
    for _, shape, how in specs:
        if how == "ones":
            p = np.ones(shape, dtype)
        elif how == "zeros":
            p = np.zeros(shape, dtype)
        else:
            p = (init.standard_normal(shape) * how).astype(dtype)
        params.append(p)
    for p in params:
        comm.Bcast(p, root=0)
    sizes = [p.size for p in params]
    offsets = np.cumsum([0] + sizes)
    grad_buf = np.empty(offsets[-1], dtype)
    moments = [(np.zeros_like(p), np.zeros_like(p)) for p in params]
    count = int(offsets[-1])
    if rank == 0:
        print(
            f"char_lm_mpi: {size} rank(s) x {threads} thread(s), {count} parameters "
            f"({grad_buf.nbytes / 1e6:.1f} MB of gradients per allreduce), global batch "
            f"{a.batch} x {a.block} tokens",
            flush=True,
        )

    rows = a.batch // size
    mine = slice(rank * rows, (rank + 1) * rows)
    batches = np.random.default_rng(a.seed + 1)
    attrs = dict(heads=a.heads, scale=1.0 / np.sqrt(a.channels // a.heads), p=0.0)
    key = np.array([a.seed, 0], np.int64)
    seed_ct = np.array(1.0, dtype)
    beta1, beta2 = 0.9, 0.99
    times = []
    for step in range(1, a.steps + 1):
        t0 = time.perf_counter()
        starts = batches.integers(0, len(train) - a.block - 1, size=a.batch)[mine]
        tokens = np.stack([train[s : s + a.block] for s in starts])
        targets = np.stack([train[s + 1 : s + a.block + 1] for s in starts])
        if rank == a.fail_rank and step == a.fail_step:
            if a.fail_how == "kill":
                os.kill(os.getpid(), 9)
            raise RuntimeError(f"injected failure at step {step}")
        loss, grads = lib.value_and_vjp("loss", (tokens, targets, key, *params), seed_ct, **attrs)
        for g, lo, hi in zip(grads, offsets[:-1], offsets[1:]):
            grad_buf[lo:hi] = g.reshape(-1)
        t1 = time.perf_counter()
        comm.Allreduce(MPI.IN_PLACE, grad_buf, op=MPI.SUM)
        t2 = time.perf_counter()
        grad_buf /= size
        lr = a.lr * min(1.0, step / 10)
        lr_t = np.array(lr, dtype)
        bc1 = np.array(1 - beta1**step, dtype)
        bc2 = np.array(1 - beta2**step, dtype)
        for i, ((_, shape, how), (m, v)) in enumerate(zip(specs, moments)):
            g = grad_buf[offsets[i] : offsets[i + 1]].reshape(shape)
            decay = a.weight_decay if len(shape) == 3 else 0.0
            params[i], m2, v2 = lib.adamw(
                params[i], g, m, v, lr_t, bc1, bc2, beta1=beta1, beta2=beta2, decay=decay
            )
            moments[i] = (m2, v2)
        times.append((time.perf_counter() - t0, t1 - t0, t2 - t1))
        if step % a.log_every == 0 or step == a.steps:
            mean = comm.allreduce(float(loss), op=MPI.SUM) / size  # every rank, same steps
            if rank == 0:
                print(f"step {step}: loss {mean:.4f}", flush=True)
    if a.timing and rank == 0:
        steady = np.array(times[2:] or times) * 1e3
        steady = np.column_stack([steady, steady[:, 0] - steady[:, 1] - steady[:, 2]])
        ms, grad_ms, allreduce_ms, update_ms = np.median(steady, axis=0)
        tokens = a.batch * a.block / (ms / 1e3)
        print(
            f"timing: {size} ranks x {threads} threads: {ms:.2f} ms/step (medians; gradients "
            f"{grad_ms:.2f} ms, allreduce {allreduce_ms:.3f} ms of {grad_buf.nbytes / 1e6:.2f} MB, "
            f"update {update_ms:.2f} ms), {tokens:.0f} tokens/s"
        )
    if a.save and rank == 0:
        np.savez(a.save, **{name: p for (name, _, _), p in zip(specs, params)})
    comm.Barrier()


if __name__ == "__main__":
    main()
