#!/usr/bin/env python3
"""The MLP of benches/workloads.tfn (batch 256, 1024 -> 1024 -> 1024, gelu) forward and
forward+backward through jax.jit, to compare with `cargo bench --bench workloads -- mlp`.

    pip install "jax[cpu]"
    taskset -c 0 python3 benches/peers/mlp_jax.py

Prints compile time (first call) and the median time per call.
"""
import os
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
import time
import jax
import jax.numpy as jnp
import numpy as np


def gelu(h):
    return 0.5 * h * (1.0 + jnp.tanh(0.7978845608 * (h + 0.044715 * h * h * h)))


def mlp(x, w1, b1, w2, b2):
    return gelu(x @ w1 + b1) @ w2 + b2


def vjp(x, w1, b1, w2, b2, ct):
    _, pullback = jax.vjp(mlp, x, w1, b1, w2, b2)
    return pullback(ct)


def median_time(f, args, reps=30):
    f(*args)
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        jax.block_until_ready(f(*args))
        times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2]


rng = np.random.default_rng(0)
x = rng.standard_normal((256, 1024), dtype=np.float32)
w1 = rng.standard_normal((1024, 1024), dtype=np.float32) * 0.03
b1 = rng.standard_normal(1024, dtype=np.float32)
w2 = rng.standard_normal((1024, 1024), dtype=np.float32) * 0.03
b2 = rng.standard_normal(1024, dtype=np.float32)
ct = rng.standard_normal((256, 1024), dtype=np.float32)
for name, f, args in [("forward", mlp, (x, w1, b1, w2, b2)), ("vjp", vjp, (x, w1, b1, w2, b2, ct))]:
    jf = jax.jit(f)
    t = time.perf_counter()
    jax.block_until_ready(jf(*args))
    first = time.perf_counter() - t
    print(f"jax.jit mlp {name}: first call {first * 1e3:.1f} ms, median {median_time(jf, args) * 1e3:.3f} ms")
