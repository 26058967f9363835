#!/usr/bin/env python3
"""Differential tester: random `.tfn` programs run by `tfnc`, checked against NumPy.

    cargo build --bin tfnc
    python3 tests/tools/difftest.py --seed 1 --count 200 [--vjp] [--steps N] [--keep DIR]
        [--tfnc PATH]

Each program is a short chain of `let` bindings over random inputs (f32, f64, i32, i64, bool;
ranks 0-4, axes of size 0 and 1 included) using the prelude's primitives: elementwise unary and
binary ops with NumPy broadcasting and scalar literals, comparisons and `where`, casts,
reductions `sum mean max min prod` (dims, keepdim) and `argmax`, `matmul` (1-D, 2-D, batched),
and the shape ops `reshape transpose unsqueeze squeeze concat slice broadcast_to`. The same
program is evaluated here in NumPy (f32 values are computed in f64 and rounded to f32 after
every op, which is what a correctly rounded f32 kernel does), and run by
`tfnc run --backend jit` and `--backend interp`, and on the JIT with `--no-optimize` and with
`--threads 3`; `tfnc ir --stage lowered|optimized|fused` must print it too. With `--vjp`, half
the programs are f64 programs, also differentiated (`tfnc run --vjp`) and checked against
central finite differences; the other half (any dtypes) are differentiated by both backends,
whose gradients must agree.

A failure is a wrong answer (f32: rtol/atol 2e-5 scaled by the program's largest intermediate
value; f64: 1e-9; ints and bools exact), an exit code other than 0, or a run longer than
`--timeout` seconds. Inputs near a discontinuity (floor, round, comparisons, casts to ints,
argmax ties) are avoided while generating, so a failure is a real one. Failing programs are
written under `--keep` (default `$TMPDIR/tfn-difftest-failures/`) with their inputs and a
`repro.sh`. Not run by CI: it needs Python, NumPy and a built `tfnc`.
"""

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from difftest_gen import generate

ROOT = Path(__file__).resolve().parents[2]


def run_tfnc(tfnc, src, fn, args, outs, extra, timeout):
    cmd = [str(tfnc), "run", str(src), fn]
    for name, path in args:
        cmd += ["--arg", f"{name}={path}"]
    for o in outs:
        cmd += ["--out", str(o)]
    cmd += extra
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return cmd, None, "timeout"
    err = p.stderr.decode(errors="replace")
    return cmd, p.returncode, err


def brief(err):
    """The error lines of tfnc's stderr (warnings dropped), bounded."""
    lines = err.strip().splitlines()
    keep = [i for i, l in enumerate(lines) if l.startswith("error") or "panicked" in l]
    text = "\n".join(lines[keep[0]:keep[0] + 6]) if keep else "\n".join(lines[-6:])
    return text[:800]


def close(got, want, rtol, atol):
    """Whether `got` matches `want` (same dtype and shape; NaNs and infinities equal)."""
    if got.dtype != want.dtype or got.shape != want.shape:
        return f"dtype/shape {got.dtype}{list(got.shape)} != {want.dtype}{list(want.shape)}"
    if want.dtype.kind in "biu":
        bad = got != want
    else:
        g, w = got.astype(np.float64), want.astype(np.float64)
        both_nan = np.isnan(g) & np.isnan(w)
        same_inf = np.isinf(w) & (g == w)
        ok = both_nan | same_inf | (np.abs(g - w) <= atol + rtol * np.abs(w))
        bad = ~ok
    if bad.any():
        idx = np.argwhere(bad)[0]
        i = tuple(int(v) for v in idx)
        return f"{int(bad.sum())} of {bad.size} differ; first at {list(i)}: got {got[i]!r}, want {want[i]!r}"
    return None


def tolerances(prog, dtype):
    if dtype == np.float32 or prog.has_f32:
        return 2e-5, 2e-5 * prog.scale
    return 1e-9, 1e-9 * prog.scale


def check_forward(tfnc, prog, work, timeout, configs):
    fails = []
    want = prog.outputs
    args = []
    for name, arr in prog.inputs:
        path = work / f"{name}.npy"
        np.save(path, arr)
        args.append((name, path))
    src = work / "prog.tfn"
    src.write_text(prog.source)
    for label, extra in configs:
        outs = [work / f"out_{label}_{i}.npy" for i in range(len(want))]
        for o in outs:
            if o.exists():
                o.unlink()
        cmd, rc, err = run_tfnc(tfnc, src, "f", args, outs, extra, timeout)
        if rc != 0:
            if prog.expect_error and rc == 1:
                continue
            fails.append((label, cmd, f"exit {rc}: {brief(err)}"))
            continue
        if prog.expect_error:
            fails.append((label, cmd, f"exit 0, expected an error: {prog.expect_error}"))
            continue
        for i, w in enumerate(want):
            got = np.load(outs[i])
            rtol, atol = tolerances(prog, w.dtype)
            msg = close(got, w, rtol, atol)
            if msg:
                fails.append((label, cmd, f"output {i}: {msg}"))
    if not fails:
        fails += check_ir(tfnc, prog, src, timeout)
    return fails


def check_ir(tfnc, prog, src, timeout):
    """`tfnc ir --stage S` for the program's input types must work (exit 0) at every stage."""
    args = []
    for name, arr in prog.inputs:
        dt = {"float32": "f32", "float64": "f64", "int32": "i32", "int64": "i64", "bool": "bool"}[arr.dtype.name]
        args += ["--arg", f"{name}={dt}[{','.join(map(str, arr.shape))}]"]
    fails = []
    for stage in ("lowered", "optimized", "fused"):
        cmd = [str(tfnc), "ir", str(src), "--fn", "f", "--stage", stage] + args
        try:
            p = subprocess.run(cmd, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            fails.append((f"ir-{stage}", cmd, "timeout"))
            continue
        if p.returncode != 0 and not (prog.expect_error and p.returncode == 1):
            fails.append((f"ir-{stage}", cmd, f"exit {p.returncode}: {brief(p.stderr.decode(errors='replace'))}"))
    return fails


def numeric_vjp(prog, ct):
    """Central differences of <f(x), ct> in f64, with two step sizes; NaN where they disagree."""
    grads = []
    inputs = [a for _, a in prog.inputs]
    for k, (_, a) in enumerate(prog.inputs):
        if a.dtype != np.float64:
            continue
        g = np.zeros_like(a)
        for j in range(a.size):
            idx = np.unravel_index(j, a.shape)
            ests = []
            for h in (1e-5, 1e-6):
                vals = []
                for s in (h, -h):
                    xs = [np.array(x) for x in inputs]
                    xs[k][idx] += s
                    out = prog.evaluate(xs)[0]
                    vals.append(float(np.sum(out.astype(np.float64) * ct)))
                ests.append((vals[0] - vals[1]) / (2 * h))
            e1, e2 = ests
            g[idx] = e2 if abs(e1 - e2) <= 1e-4 * (1 + abs(e1)) else np.nan
        grads.append(g)
    return grads


def check_vjp(tfnc, prog, work, timeout, rng):
    fails = []
    out = prog.outputs[0]
    ct = rng.standard_normal(out.shape).astype(np.float64)
    ct_path = work / "ct.npy"
    np.save(ct_path, ct)
    want = numeric_vjp(prog, ct)
    args = [(name, work / f"{name}.npy") for name, _ in prog.inputs]
    for label, extra in (("vjp-jit", ["--backend", "jit"]), ("vjp-interp", ["--backend", "interp"])):
        outs = [work / f"grad_{label}_{i}.npy" for i in range(len(want))]
        cmd, rc, err = run_tfnc(tfnc, work / "prog.tfn", "f", args, outs,
                                extra + ["--vjp", str(ct_path)], timeout)
        if rc != 0:
            fails.append((label, cmd, f"exit {rc}: {brief(err)}"))
            continue
        for i, w in enumerate(want):
            got = np.load(outs[i])
            if got.shape != w.shape:
                fails.append((label, cmd, f"gradient {i}: shape {got.shape} != {w.shape}"))
                continue
            ok = np.isnan(w) | (np.abs(got - w) <= 1e-4 * (1 + np.abs(w)) * max(1.0, prog.scale))
            if not ok.all():
                j = tuple(int(v) for v in np.argwhere(~ok)[0])
                fails.append((label, cmd, f"gradient {i} at {list(j)}: got {got[j]!r}, "
                              f"finite differences {w[j]!r}"))
    return fails


def check_vjp_backends(tfnc, prog, work, timeout, rng):
    """Programs with f32 or integer inputs: the JIT's gradients against the interpreter's."""
    out = prog.outputs[-1]
    ct = rng.standard_normal(out.shape).astype(out.dtype)
    ct_path = work / "ct.npy"
    np.save(ct_path, ct)
    args = [(name, work / f"{name}.npy") for name, _ in prog.inputs]
    nfloat = sum(a.dtype.kind == "f" for _, a in prog.inputs)
    got = {}
    for label in ("jit", "interp"):
        outs = [work / f"grad_{label}_{i}.npy" for i in range(nfloat)]
        cmd, rc, err = run_tfnc(tfnc, work / "prog.tfn", "f", args, outs,
                                ["--backend", label, "--vjp", str(ct_path)], timeout)
        if rc != 0:
            if nfloat == 0 and rc == 1:
                return []
            return [(f"vjp-{label}", cmd, f"exit {rc}: {brief(err)}")]
        got[label] = [np.load(o) for o in outs]
    fails = []
    for i, (a, b) in enumerate(zip(got["jit"], got["interp"])):
        msg = close(a, b, 1e-4, 1e-4 * prog.scale)
        if msg:
            fails.append(("vjp-jit-vs-interp", cmd, f"gradient {i}: {msg}"))
    return fails


def save_failure(keep, n, prog, work, fails):
    dest = keep / f"prog{n:04d}"
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(work, dest)
    lines = ["#!/bin/sh", f"# seed program {n}", "cd \"$(dirname \"$0\")\""]
    for label, cmd, msg in fails:
        rel = [c.replace(str(work) + "/", "") for c in map(str, cmd)]
        lines.append(f"# {label}: {msg.splitlines()[0] if msg else ''}")
        lines.append(" ".join(rel))
    (dest / "repro.sh").write_text("\n".join(lines) + "\n")
    return dest


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--vjp", action="store_true",
                    help="also check gradients: f64 programs against finite differences, "
                         "others JIT against interpreter (the forward programs stay the same)")
    ap.add_argument("--steps", type=int, default=7, help="most `let` steps per program")
    ap.add_argument("--tfnc", default=str(ROOT / "target" / "debug" / "tfnc"))
    ap.add_argument("--keep", default=str(Path(tempfile.gettempdir()) / "tfn-difftest-failures"))
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--verbose", "-v", action="store_true")
    a = ap.parse_args()
    configs = [("jit", ["--backend", "jit"]), ("interp", ["--backend", "interp"]),
               ("jit-noopt", ["--backend", "jit", "--no-optimize"]),
               ("jit-threads3", ["--backend", "jit", "--threads", "3"])]
    keep = Path(a.keep)
    passed = failed = skipped = 0
    with tempfile.TemporaryDirectory(prefix="tfn-difftest-") as tmp:
        for n in range(a.count):
            rng = np.random.default_rng([a.seed, n])
            fd = a.vjp and n % 2 == 0  # half f64 programs vs finite differences
            prog = generate(rng, vjp=fd, max_steps=a.steps)
            if prog is None:
                skipped += 1
                continue
            work = Path(tmp) / f"p{n}"
            work.mkdir()
            fails = check_forward(a.tfnc, prog, work, a.timeout, configs)
            if a.vjp and not fails and not prog.expect_error:
                if fd and prog.differentiable:
                    fails += check_vjp(a.tfnc, prog, work, a.timeout, rng)
                elif not fd and len(prog.outputs) == 1 and prog.outputs[0].dtype.kind == "f":
                    fails += check_vjp_backends(a.tfnc, prog, work, a.timeout, rng)
            if fails:
                failed += 1
                dest = save_failure(keep, n, prog, work, fails)
                print(f"FAIL program {n} (seed {a.seed}) -> {dest}")
                for label, _, msg in fails:
                    print(f"  [{label}] {msg}")
                if a.verbose:
                    print(prog.source)
            else:
                passed += 1
            shutil.rmtree(work)
    print(f"{passed} passed, {failed} failed, {skipped} skipped (seed {a.seed}, count {a.count})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
