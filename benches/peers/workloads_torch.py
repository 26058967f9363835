#!/usr/bin/env python3
"""The workloads of benches/workloads.tfn in torch eager and torch.compile (Inductor), timed as
benches/peers/workloads_jax.py times jax.jit: warm-up, samples of >= 1 ms, median µs per call.
Prints one JSON object with both engines' medians (`eager_us`, `compile_us`) and the compile
time of torch.compile's first call (`compile_first_ms`).

    benches/peers/.venv/bin/python benches/peers/workloads_torch.py --threads 1 gelu 262144

torch is several GB: `bash benches/peers/setup.sh --torch` installs it (never CI). Used by
benches/vs_peers.sh, which runs tfn, jax and torch side by side, cell by cell.
"""
import argparse
import json
import time

ap = argparse.ArgumentParser()
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--budget", type=float, default=0.6)
ap.add_argument("--min-samples", type=int, default=15)
ap.add_argument("--no-compile", action="store_true", help="torch eager only")
ap.add_argument("workload")
ap.add_argument("elements", type=int)
ARGS = ap.parse_args()

import torch  # noqa: E402
from timing import bench, inputs  # noqa: E402

torch.set_num_threads(ARGS.threads)
G0, G1 = 0.7978845608, 0.044715
EPS = 1e-5


def saxpy(x, z):
    return 2.5 * x + -1.25 * z + 0.5


def gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(G0 * (x + G1 * x * x * x)))


def bias_relu(x, bias):
    return torch.clamp_min(x + bias, 0.0)


def softmax(x):
    e = torch.exp(x - x.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


def layernorm(x):
    mu = x.mean(dim=-1, keepdim=True)
    d = x - mu
    return d * torch.rsqrt((d * d).mean(dim=-1, keepdim=True) + EPS)


def total(x):
    return x.sum()


FNS = dict(saxpy=saxpy, gelu=gelu, bias_relu=bias_relu, softmax=softmax, layernorm=layernorm,
           total=total)


def main():
    n, w = ARGS.elements, ARGS.workload
    targs = [torch.from_numpy(a) for a in inputs(w, n)]
    fn = FNS[w]
    median = lambda f: bench(f, ARGS.budget, ARGS.min_samples)[0]  # noqa: E731
    result = dict(workload=w, elements=n, threads=ARGS.threads, torch=torch.__version__)
    with torch.inference_mode():
        result["eager_us"] = median(lambda: fn(*targs))
        if not ARGS.no_compile:
            compiled = torch.compile(fn, dynamic=False)
            t0 = time.perf_counter()
            compiled(*targs)
            result["compile_first_ms"] = (time.perf_counter() - t0) * 1e3
            result["compile_us"] = median(lambda: compiled(*targs))
    print(json.dumps(result))


main()
