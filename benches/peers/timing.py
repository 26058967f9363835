"""Shared by the peer scripts of benches/peers: the timing loop (warm-up, samples of >= 1 ms,
median µs per call) and the inputs of benches/workloads.tfn's workloads, so that every peer is
timed on the same data the same way."""
import gc
import statistics
import sys
import time

import numpy as np

K = 1024


def bench(fn, budget, min_samples, sample_s=1e-3):
    """Median and minimum µs per call of `fn`: warm-up, then samples of >= `sample_s` (several
    calls per sample when a call is shorter) until `min_samples` and `budget` seconds."""
    t_end = time.perf_counter() + 0.05
    k = 0
    while k < 3 or time.perf_counter() < t_end:
        fn()
        k += 1
    t0 = time.perf_counter()
    for _ in range(3):
        fn()
    one = (time.perf_counter() - t0) / 3
    inner = max(1, int(sample_s / max(one, 1e-9)))
    samples = []
    gc.disable()
    w0 = time.perf_counter()
    while True:
        s = time.perf_counter_ns()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter_ns() - s) / inner / 1e3)
        if len(samples) >= min_samples and time.perf_counter() - w0 >= budget:
            break
        if len(samples) >= 5000:
            break
    gc.enable()
    return statistics.median(samples), min(samples)


def inputs(workload, n):
    """The NumPy f32 inputs of `workload` at `n` elements (rows of 1024 where it has rows)."""
    rng = np.random.default_rng(0)
    rows = max(1, n // K)
    if workload == "saxpy":
        return [rng.standard_normal(n, dtype=np.float32) for _ in range(2)]
    if workload in ("gelu", "total"):
        return [rng.standard_normal(n, dtype=np.float32)]
    if workload == "bias_relu":
        return [rng.standard_normal((rows, K), dtype=np.float32),
                rng.standard_normal(K, dtype=np.float32)]
    if workload in ("softmax", "layernorm"):
        return [rng.standard_normal((rows, K), dtype=np.float32)]
    sys.exit(f"unknown workload {workload}")
