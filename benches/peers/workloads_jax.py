#!/usr/bin/env python3
"""The workloads of benches/workloads.tfn under jax.jit, timed as the peer script
(shared/bench/peers.py) times them: warm-up, samples of >= 1 ms, median µs per call,
block_until_ready after every call. Prints one JSON object per workload and size.

    benches/peers/.venv/bin/python benches/peers/workloads_jax.py --threads 1 gelu 262144

Used by benches/vs_peers.sh, which runs tfn, jax and torch side by side, cell by cell.
"""
import argparse
import json
import os

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
# PEERS_XLA_ISA=AVX2 (benches/vs_peers.sh's ISA=avx2): XLA's code held to that instruction set.
if os.environ.get("PEERS_XLA_ISA"):
    os.environ["XLA_FLAGS"] += " --xla_cpu_max_isa=" + os.environ["PEERS_XLA_ISA"]

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from timing import bench, inputs  # noqa: E402
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


def main():
    n, w = ARGS.elements, ARGS.workload
    dargs = [jax.device_put(a) for a in inputs(w, n)]
    f = jax.jit(FNS[w])
    median, best = bench(lambda: f(*dargs).block_until_ready(), ARGS.budget, ARGS.min_samples)
    print(json.dumps(dict(workload=w, elements=n, threads=ARGS.threads, median_us=median,
                          min_us=best, jax=jax.__version__)))


main()
