"""Python call overhead and large calls, against NumPy, jax.jit and the same calls from Rust.

    python python/bench/bench.py [--tfnc target/release/tfnc] [--threads N]

1. Overhead on a cache hit: a 1-element f32 `gelu` with `out=` (the issue's target: <= 2 us),
   beside a NumPy ufunc with `out=` and, when jax is installed, a jitted 1-element gelu.
2. gelu / softmax / layer_norm of examples/nn.tfn at 256K f32 elements with `out=`, beside
   `tfnc bench` (the same `Session::call_into_kw` from Rust) when --tfnc is given.
Medians of many repetitions; numbers, not assertions.
"""

import argparse
import json
import pathlib
import subprocess
import time

import numpy as np

import tfn

ROOT = pathlib.Path(__file__).resolve().parents[2]
NN = ROOT / "examples" / "nn.tfn"


def median_us(fn, number, repeat=15):
    """Median over `repeat` loops of `number` calls, per call."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return sorted(times)[len(times) // 2] * 1e6


def median_call_us(fn, calls=1000):
    """Median of single calls (what `tfnc bench` reports)."""
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2] * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tfnc", help="a release tfnc binary, for the Rust side")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()

    session = tfn.Session(threads=args.threads)
    lib = session.load(NN)
    x1 = np.ones(1, np.float32)
    y1 = np.empty(1, np.float32)
    lib.gelu(x1, out=y1)
    print("call overhead, 1 element, cache hit (median of 15 x 20000 calls)")
    print(f"  tfn  lib.gelu(x, out=y)      {median_us(lambda: lib.gelu(x1, out=y1), 20000):7.3f} us")
    print(f"  tfn  lib.gelu(x)             {median_us(lambda: lib.gelu(x1), 20000):7.3f} us")
    print(f"  numpy np.tanh(x, out=y)      {median_us(lambda: np.tanh(x1, out=y1), 20000):7.3f} us")
    try:
        import jax
        import jax.numpy as jnp

        jgelu = jax.jit(lambda v: 0.5 * v * (1.0 + jnp.tanh(0.7978845608 * (v + 0.044715 * v**3))))
        jx = jnp.ones(1, jnp.float32)
        jgelu(jx).block_until_ready()
        print(f"  jax.jit gelu(x)              "
              f"{median_us(lambda: jgelu(jx).block_until_ready(), 5000):7.3f} us")
    except ImportError:
        print("  jax.jit                      (jax not installed)")

    n = 256 * 1024
    rng = np.random.default_rng(0)
    x = rng.standard_normal((512, 512)).astype(np.float32)
    g = rng.standard_normal(512).astype(np.float32)
    b = rng.standard_normal(512).astype(np.float32)
    y = np.empty_like(x)
    calls = {
        "gelu": (lambda: lib.gelu(x, out=y), ["x=f32[512,512]"]),
        "softmax": (lambda: lib.softmax(x, out=y), ["x=f32[512,512]"]),
        "layer_norm": (lambda: lib.layer_norm(x, g, b, out=y),
                       ["x=f32[512,512]", "gamma=f32[512]", "beta=f32[512]"]),
    }
    print(f"\n{n} f32 elements ([512, 512]), out=, threads={args.threads}: median us per call")
    print(f"  {'function':<11} {'python':>9} {'rust':>9} {'python/rust':>12}")
    for name, (call, shapes) in calls.items():
        call()
        py = median_call_us(call)
        rust = None
        if args.tfnc:
            cmd = [args.tfnc, "bench", str(NN), name, "--json", "--threads", str(args.threads)]
            for s in shapes:
                cmd += ["--arg", s]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            rust = json.loads(out.strip().splitlines()[-1])["median_us"]
        ratio = f"{py / rust:12.3f}" if rust else f"{'':12}"
        rust_s = f"{rust:9.2f}" if rust else f"{'-':>9}"
        print(f"  {name:<11} {py:9.2f} {rust_s} {ratio}")
    print(f"\nstats: {session.stats()}")


if __name__ == "__main__":
    main()
