#!/usr/bin/env python3
"""Malformed-input sweep of `tfnc`: every bad input must fail cleanly.

    cargo build --bin tfnc
    python3 tests/tools/badinput.py --seed 1 --count 500 [--only npy|cli|source] [--tfnc PATH]

Three families of inputs, each run with a timeout:
- `npy`: valid `.npy` files truncated, with bytes flipped, or with edited headers (dtype,
  shape, fortran order, version, header length), passed to `tfnc run --arg`;
- `cli`: bad command lines (`--arg` syntax, unknown or duplicate names, missing files,
  directories as files, bad literals, thread counts, backends, stages, shapes for `ir`/`bench`);
- `source`: the `.tfn` files of `tests/cases/` mutated by deleting, duplicating, swapping or
  replacing tokens, then given to `tfnc check` and `tfnc ir --stage optimized`.

A failure is an exit code other than 0, 1 or 2 (a panic is 101, an abort 134, a segfault 139),
a timeout (`--timeout`, default 10 s), more than 1 MB of output, or a silent failure (exit 1 or
2 with nothing on stderr). Failing cases are copied under `--keep` (default
`$TMPDIR/tfn-badinput-failures/`) with a `cmd.txt`. Not run by CI: it needs Python, NumPy and
a built `tfnc`.
"""

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
MAX_OUT = 1 << 20
PROG = """fn f(Tensor x) -> Tensor {
    return x * 2.0
}
fn g(Tensor x, Tensor y, *, Int k = 1) -> (Tensor, Tensor) {
    return (x + y, sum(x, dims=[0]))
}
fn h(Tensor x, Int[] dims, Bool keep) -> Tensor {
    return sum(x, dims=dims, keepdim=keep)
}
"""


def run(cmd, timeout):
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None, b"", b""
    return p.returncode, p.stdout, p.stderr


def verdict(rc, out, err):
    if rc is None:
        return "timeout"
    if rc not in (0, 1, 2):
        return f"exit {rc}"
    if len(out) + len(err) > MAX_OUT:
        return f"{len(out) + len(err)} bytes of output"
    if rc in (1, 2) and not err.strip():
        return f"exit {rc} with an empty stderr"
    return None


def npy_bytes(arr):
    import io
    b = io.BytesIO()
    np.save(b, arr)
    return b.getvalue()


def header_variants(rng):
    """Hand-edited headers: (descr, fortran, shape) text pieces."""
    descr = ["'<f4'", "'<f8'", "'<i4'", "'<i8'", "'|b1'", "'>f4'", "'<f2'", "'<c8'", "'|O'",
             "'<U3'", "'|i1'", "'<u4'", "'f4'", "''", "'<f4<f4'", "[('a', '<f4')]", "0", "None"]
    shape = ["()", "(3,)", "(2, 3)", "(0,)", "(-1,)", "(3, -2)", "(1e3,)", "(,)", "(2, 3",
             "(18446744073709551615,)", "(4294967296, 4294967296)", "(10000000000,)",
             "(2**3,)", "('a',)", "(True,)", "[2, 3]", "(1,)*40", "(" + "1, " * 40 + ")"]
    fortran = ["False", "True", "0", "'no'"]
    d = descr[int(rng.integers(len(descr)))]
    s = shape[int(rng.integers(len(shape)))]
    f = fortran[int(rng.integers(len(fortran)))] if rng.random() < 0.3 else "False"
    return "{'descr': %s, 'fortran_order': %s, 'shape': %s, }" % (d, f, s)


def make_npy(rng):
    kind = int(rng.integers(5))
    arr = rng.standard_normal((2, 3)).astype(np.float32)
    good = npy_bytes(arr)
    if kind == 0:  # truncated
        return good[: int(rng.integers(0, len(good)))], "truncated"
    if kind == 1:  # flipped bytes
        b = bytearray(good)
        for _ in range(int(rng.integers(1, 4))):
            i = int(rng.integers(0, min(len(b), 128)))
            b[i] = int(rng.integers(256))
        return bytes(b), "flipped"
    if kind == 2:  # edited header, valid framing
        h = header_variants(rng)
        h = h + " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
        body = arr.tobytes()[: int(rng.integers(0, 25))]
        return b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h.encode() + body, "header"
    if kind == 3:  # bad framing: version, header length
        b = bytearray(good)
        which = int(rng.integers(3))
        if which == 0:
            b[6] = int(rng.choice([0, 2, 3, 9]))
        elif which == 1:
            b[8:10] = int(rng.integers(0, 65536)).to_bytes(2, "little")
        else:
            b = b[:8] + (0xFFFFFFF0).to_bytes(4, "little") + b[12:]
            b[6] = 2
        return bytes(b), "framing"
    # trailing junk or a non-npy file
    return good + bytes(rng.integers(0, 256, size=int(rng.integers(1, 9)), dtype=np.uint8)), "trailing"


def npy_case(rng, tfnc, work, timeout):
    prog = work / "p.tfn"
    prog.write_text(PROG)
    data, kind = make_npy(rng)
    x = work / "x.npy"
    x.write_bytes(data)
    backend = ["jit", "interp"][int(rng.integers(2))]
    cmd = [tfnc, "run", str(prog), "f", "--arg", f"x={x}", "--backend", backend, "--out", str(work / "o.npy")]
    if rng.random() < 0.3:
        ct = work / "ct.npy"
        ct.write_bytes(make_npy(rng)[0])
        np.save(work / "x.npy", np.ones((2, 3), np.float32)) if rng.random() < 0.5 else None
        cmd += ["--vjp", str(ct)]
    return kind, cmd


CLI_ARGS = ["x", "=x", "x=", "x==1", "x=1=2", "y=1.0", "x=[1,2", "x=[1,,2]", "x=[[1]]", "x=f32[2,3]",
            "x=1e999", "x=nan", "x=-inf", "x=true", "x=f64", "x=99999999999999999999", "x=-0",
            "x=0x10", "x= 1", "x=[]", "x=[1.5, 2]", "x=[true]", "x=/nonexistent.npy", "x=/tmp",
            "x=/dev/null", "x=/dev/zero", "x=%s", "k=2.5", "k=[1]", "dims=[0,0]", "dims=[5]",
            "dims=[-9]", "keep=1", "keep=yes", "x=\u00e9.npy", "\u00e9=1"]
CLI_OPTS = [["--threads", "0"], ["--threads", "-1"], ["--threads", "99999999999999999999"],
            ["--threads", "100000"], ["--backend", "gpu"], ["--out", "/tmp"], ["--out", "/nonexistent/o.npy"],
            ["--out", ""], ["--vjp", "/tmp"], ["--vjp", "/nonexistent.npy"], ["--no-optimize"],
            ["--arg"], ["--out"], ["--bogus"], ["--vjp", "%s"]]


def cli_case(rng, tfnc, work, timeout):
    prog = work / "p.tfn"
    prog.write_text(PROG)
    x = work / "x.npy"
    np.save(x, rng.standard_normal((2, 3)).astype(np.float32))
    sub = ["run", "run", "run", "ir", "bench", "check"][int(rng.integers(6))]
    fn = ["f", "g", "h", "nope", "f.x", "", "sum", "add.scalar"][int(rng.integers(8))]
    files = [str(prog), str(prog), "/nonexistent.tfn", "/tmp", "/dev/null", str(x)]
    file = files[int(rng.integers(len(files)))]
    cmd = [tfnc, sub, file]
    if sub == "run":
        cmd.append(fn)
    elif sub == "bench":
        cmd.append(fn)
    elif sub == "ir" and rng.random() < 0.7:
        cmd += ["--fn", fn, "--stage", ["parsed", "lowered", "optimized", "fused", "bogus"][int(rng.integers(5))]]
    for _ in range(int(rng.integers(0, 4))):
        if sub in ("ir", "bench") and rng.random() < 0.6:
            shapes = ["x=f32[2,3]", "x=f32[]", "x=f32[,]", "x=f32[-1]", "x=f32[2", "x=q32[2]",
                      "x=f32[100000000000]", "x=f64[4294967296,4294967296]", "x=f32[0,3]",
                      "y=i32[3]", "x=f32[18446744073709551616]", "dims=[0]", "keep=true", "k=1"]
            cmd += ["--arg", shapes[int(rng.integers(len(shapes)))]]
        else:
            a = CLI_ARGS[int(rng.integers(len(CLI_ARGS)))].replace("%s", str(x))
            cmd += ["--arg", a]
    if rng.random() < 0.5:
        cmd += ["--arg", f"x={x}"]
    for _ in range(int(rng.integers(0, 3))):
        cmd += [o.replace("%s", str(x)) for o in CLI_OPTS[int(rng.integers(len(CLI_OPTS)))]]
    return sub, cmd


TOKEN = re.compile(r"//[^\n]*|/\*.*?\*/|\"[^\"\n]*\"|[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?"
                   r"|->|=>|==|!=|<=|>=|\*\*|\?[A-Za-z_]+|\s+|.", re.S)
EXTRA = ["(", ")", "[", "]", "{", "}", ",", "=", "*", "let", "return", "fn", "op", "grad", "if",
         "-1", "9223372036854775807", "1e308", "0.0", "Tensor", "Tensor<T>", "Int[]", "<", ">",
         "x", "result", "\n", ";", "use", "\"std:nn\"", "rewrite", "?x", "dims=[]", "inf", "nan"]


def mutate(src, rng):
    toks = TOKEN.findall(src)
    idx = [i for i, t in enumerate(toks) if not t.isspace() and not t.startswith("//")]
    if not idx:
        return src
    for _ in range(int(rng.choice([1, 1, 1, 2, 3]))):
        i = idx[int(rng.integers(len(idx)))]
        m = int(rng.integers(5))
        if m == 0:
            toks[i] = ""
        elif m == 1:
            toks[i] = toks[i] + " " + toks[i]
        elif m == 2:
            j = idx[int(rng.integers(len(idx)))]
            toks[i], toks[j] = toks[j], toks[i]
        elif m == 3:
            toks[i] = toks[idx[int(rng.integers(len(idx)))]]
        else:
            toks[i] = toks[i] + " " + EXTRA[int(rng.integers(len(EXTRA)))]
    return "".join(toks)


def source_case(rng, tfnc, work, timeout, sources):
    runnable = [p for p in sources if "// tfn-test: run" in p.read_text() or "// tfn-test: vjp" in p.read_text()]
    pool = runnable if rng.random() < 0.6 else sources
    src = pool[int(rng.integers(len(pool)))]
    text = mutate(src.read_text(errors="replace"), rng)
    f = work / src.name
    f.write_text(text)
    # `use "..."` of the case's neighbours must resolve as in the original directory
    for aux in src.parent.glob("*.tfn"):
        if aux.name != src.name and not (work / aux.name).exists():
            shutil.copy(aux, work / aux.name)
    if (src.parent / "aux").is_dir() and not (work / "aux").exists():
        shutil.copytree(src.parent / "aux", work / "aux")
    directives = [d.split() for d in re.findall(r"// tfn-test: ((?:run|vjp) [^\n]*)", src.read_text())]
    c = rng.random()
    if c < 0.3 or not directives:
        return "check", [tfnc, "check", str(f)]
    d = directives[int(rng.integers(len(directives)))]
    data = src.parent / "data"
    all_npy = sorted(src.parent.parent.glob("*/data/*/*.npy"))
    cmd = [tfnc, "run", str(f), d[1], "--backend", ["jit", "interp"][int(rng.integers(2))]]
    ir_args = []
    args = d[2:d.index("->")] if "->" in d else d[2:]
    for a in args:
        name, _, value = a.partition("=")
        if value.endswith(".npy"):
            value = str(data / value)
            if c > 0.8:  # wrong data: another case's file (other dtype or shape)
                value = str(all_npy[int(rng.integers(len(all_npy)))])
        if name == "cotangent":
            cmd += ["--vjp", value]
        else:
            cmd += ["--arg", f"{name}={value}"]
            arr = np.load(value) if value.endswith(".npy") else None
            ir_args += ["--arg", f"{name}={arr.dtype.name.replace('float', 'f').replace('int', 'i')}"
                        f"[{','.join(map(str, arr.shape))}]" if arr is not None else f"{name}={value}"]
    if c < 0.55:
        return "ir", [tfnc, "ir", str(f), "--fn", d[1], "--stage", ["lowered", "optimized", "fused"][int(rng.integers(3))]] + \
            ir_args
    return ("run" if c <= 0.8 else "wrongdata"), cmd


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--only", choices=["npy", "cli", "source"])
    ap.add_argument("--tfnc", default=str(ROOT / "target" / "debug" / "tfnc"))
    ap.add_argument("--keep", default=str(Path(tempfile.gettempdir()) / "tfn-badinput-failures"))
    ap.add_argument("--timeout", type=float, default=10.0)
    a = ap.parse_args()
    sources = sorted((ROOT / "tests" / "cases").glob("*/*.tfn"))
    counts = {}
    failed = 0
    with tempfile.TemporaryDirectory(prefix="tfn-badinput-") as tmp:
        for n in range(a.count):
            rng = np.random.default_rng([a.seed, n])
            family = a.only or ["npy", "cli", "source"][n % 3]
            work = Path(tmp) / f"c{n}"
            work.mkdir()
            if family == "npy":
                kind, cmd = npy_case(rng, a.tfnc, work, a.timeout)
            elif family == "cli":
                kind, cmd = cli_case(rng, a.tfnc, work, a.timeout)
            else:
                kind, cmd = source_case(rng, a.tfnc, work, a.timeout, sources)
            rc, out, err = run(cmd, a.timeout)
            bad = verdict(rc, out, err)
            key = f"{family}/{kind}"
            counts.setdefault(key, {}).setdefault(rc, 0)
            counts[key][rc] += 1
            if bad:
                failed += 1
                dest = Path(a.keep) / f"case{n:04d}"
                if dest.exists():
                    shutil.rmtree(dest)
                shutil.copytree(work, dest)
                (dest / "cmd.txt").write_text(" ".join(map(str, cmd)).replace(str(work), str(dest)) + "\n")
                (dest / "stderr.txt").write_bytes(err[-20000:])
                tail = err.decode(errors="replace").strip().splitlines()[-3:]
                print(f"FAIL case {n} [{key}] {bad} -> {dest}")
                for line in tail:
                    print(f"    {line[:200]}")
            shutil.rmtree(work)
    for key in sorted(counts):
        print(f"{key:16} exit codes {dict(sorted(counts[key].items(), key=lambda kv: str(kv[0])))}")
    print(f"{a.count - failed} clean, {failed} failed (seed {a.seed}, count {a.count})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
