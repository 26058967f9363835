#!/usr/bin/env python3
"""The workloads of benches/workloads.tfn under jax.jit, timed as the peer script
(shared/bench/peers.py) times them: warm-up, samples of >= 1 ms, median µs per call,
block_until_ready after every call. Prints one JSON object per workload and size.

    benches/peers/.venv/bin/python benches/peers/workloads_jax.py --threads 1 gelu 262144

Used by benches/vs_peers.sh, which runs tfn, jax and torch side by side, cell by cell.
"""
import argparse
import gc
import json
import os
import statistics
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--budget", type=float, default=0.6)
ap.add_argument("--min-samples", type=int, default=15)
ap.add_argument("workload")
ap.add_argument("elements", type=int)
ARGS = ap.parse_args()
if ARGS.threads == 1:
    os.environ["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
else:
    os.environ["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=true"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

K = 1024
G0, G1 = 0.7978845608, 0.044715
EPS = 1e-5


def saxpy(x, z):
    return 2.5 * x + -1.25 * z + 0.5


def gelu(x):
    return 0.5 * x * (1.0 + jnp.tanh(G0 * (x + G1 * x * x * x)))


def bias_relu(x, bias):
    return jnp.maximum(x + bias, 0.0)


def softmax(x):
    e = jnp.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layernorm(x):
    mu = x.mean(axis=-1, keepdims=True)
    d = x - mu
    return d * jax.lax.rsqrt((d * d).mean(axis=-1, keepdims=True) + EPS)


def total(x):
    return x.sum()


FNS = dict(saxpy=saxpy, gelu=gelu, bias_relu=bias_relu, softmax=softmax, layernorm=layernorm,
           total=total)


def bench(fn, sample_s=1e-3):
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
        if len(samples) >= ARGS.min_samples and time.perf_counter() - w0 >= ARGS.budget:
            break
        if len(samples) >= 5000:
            break
    gc.enable()
    return statistics.median(samples), min(samples)


def main():
    n, w = ARGS.elements, ARGS.workload
    rng = np.random.default_rng(0)
    rows = max(1, n // K)
    if w in ("saxpy",):
        args = [rng.standard_normal(n, dtype=np.float32) for _ in range(2)]
    elif w in ("gelu", "total"):
        args = [rng.standard_normal(n, dtype=np.float32)]
    elif w == "bias_relu":
        args = [rng.standard_normal((rows, K), dtype=np.float32),
                rng.standard_normal(K, dtype=np.float32)]
    elif w in ("softmax", "layernorm"):
        args = [rng.standard_normal((rows, K), dtype=np.float32)]
    else:
        sys.exit(f"unknown workload {w}")
    dargs = [jax.device_put(a) for a in args]
    f = jax.jit(FNS[w])
    median, best = bench(lambda: f(*dargs).block_until_ready())
    print(json.dumps(dict(workload=w, elements=n, threads=ARGS.threads, median_us=median,
                          min_us=best, jax=jax.__version__)))


main()
