"""Generates storage_cases.txt: storage-dtype (f16, bf16, i8, u8) graphs as lowering produces
them (widening casts, the op in f32/i32, one rounding cast), their inputs, and the outputs NumPy
computes. Run from this directory with `python3 gen_storage_cases.py` (needs numpy only).

- f16: NumPy's float16 (its ufuncs compute in float32 and round once, as these graphs do).
- bf16: NumPy has no bfloat16; the expected bits come from float32 bit manipulation here (round
  to nearest even on the dropped 16 bits, NaN kept quiet), no ml_dtypes.
- i8/u8: NumPy's int8/uint8 ufuncs, which wrap per op.
Excess precision (docs/language.md, "Storage dtypes"): `x * y + 1` on f16/bf16 is one graph
whose only rounding is the final cast; the expectation rounds once too.
Only correctly rounded f32 ops are used (+ - * / sqrt, comparisons, ...), so the f32 result
and therefore its rounding is unique.
"""
import math
import sys
import numpy as np

sys.path.insert(0, ".")
np.seterr(all="ignore")
rng = np.random.default_rng(99)
out = []


def bf16_bits(x32):
    """float32 array -> bf16 bit patterns (uint16), round to nearest even, NaN quiet."""
    b = np.asarray(x32, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF
    nan = np.isnan(np.asarray(x32, dtype=np.float32))
    quiet = ((b | 0x00400000) >> 16) & 0xFFFF
    return np.where(nan, quiet, rounded).astype(np.uint16)


def bf16_to_f32(bits):
    return (np.asarray(bits, dtype=np.uint32) << 16).view(np.float32)


def round_bf16(x32):
    """float32 -> the nearest bf16 value, as float32."""
    return bf16_to_f32(bf16_bits(x32))


def fmt(dt, a):
    flat = np.asarray(a).reshape(-1)
    if dt == "bool":
        return " ".join("true" if v else "false" for v in flat)
    if dt in ("i8", "u8", "i32"):
        return " ".join(str(int(v)) for v in flat)

    def one(v):
        v = float(v)
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)

    return " ".join(one(v) for v in flat)


def shape_text(shape):
    return "[" + ", ".join(str(d) for d in shape) + "]"


COMPUTE = {"f16": "f32", "bf16": "f32", "i8": "i32", "u8": "i32"}


def case(name, dt, params, body, out_dt, inputs, expected, shape):
    """`body(p)` gives the lines after the params (p: the widened param names) and the result."""
    lines = []
    for i, _ in enumerate(params):
        lines.append(f"  %{i} = param {i} : {dt}{shape_text(shape)}")
    n = len(params)
    wide = []
    for i in range(n):
        lines.append(f"  %{n + i} = cast %{i} {{to={COMPUTE[dt]}}} : {COMPUTE[dt]}{shape_text(shape)}")
        wide.append(f"%{n + i}")
    more, res = body(wide, 2 * n)
    lines += more
    ps = ", ".join(f"{p}: {dt}{shape_text(shape)}" for p in params)
    text = f"func f({ps}) -> ({out_dt}{shape_text(shape)}) {{\n" + "\n".join(lines) + f"\n  return {res}\n}}"
    out.append(f"=== {name}")
    out.append(text)
    for a in inputs:
        out.append(f"--- in {dt} {shape_text(shape)}")
        out.append(fmt(dt, a))
    out.append(f"--- out {out_dt} {shape_text(shape)}")
    out.append(fmt(out_dt, expected))


def op_then_round(op, dt, shape, binary=True, out_dt=None):
    """One op in the compute dtype, then the rounding cast back (none for comparisons)."""
    c = COMPUTE[dt]
    out_dt = out_dt or dt

    def body(w, k):
        args = ", ".join(w if binary else w[:1])
        if out_dt == "bool":
            return [f"  %{k} = {op} {args} : bool{shape_text(shape)}"], f"%{k}"
        return [f"  %{k} = {op} {args} : {c}{shape_text(shape)}",
                f"  %{k + 1} = cast %{k} {{to={dt}}} : {dt}{shape_text(shape)}"], f"%{k + 1}"

    return body


def fma_body(dt, shape):
    c = COMPUTE[dt]

    def body(w, k):
        s = shape_text(shape)
        one = "1.0" if c == "f32" else "1"
        return [f"  %{k} = mul {w[0]}, {w[1]} : {c}{s}",
                f"  %{k + 1} = const {one} : {c}[]",
                f"  %{k + 2} = add %{k}, %{k + 1} : {c}{s}",
                f"  %{k + 3} = cast %{k + 2} {{to={dt}}} : {dt}{s}"], f"%{k + 3}"

    return body


# ---------------------------------------------------------------- f16 and bf16
shape = (4, 6)
special = [0.0, -0.0, 1.0, -1.5, 65504.0, -65504.0, 6.1e-5, 5.96e-8, 3.0e-8, math.inf, -math.inf, math.nan]
for dt in ["f16", "bf16"]:
    to = (lambda v: np.asarray(v, dtype=np.float32).astype(np.float16).astype(np.float32)) if dt == "f16" \
        else (lambda v: round_bf16(np.asarray(v, dtype=np.float32)))
    x = to(np.concatenate([special, rng.standard_normal(12) * 50]).astype(np.float32)).reshape(shape)
    y = to(np.concatenate([rng.standard_normal(12) * 3, special]).astype(np.float32)).reshape(shape)
    yp = to(np.abs(y) + 0.25)
    rnd = (lambda v: np.asarray(v, dtype=np.float32).astype(np.float16)) if dt == "f16" else \
        (lambda v: round_bf16(np.asarray(v, dtype=np.float32)))
    x16 = x.astype(np.float16) if dt == "f16" else x
    y16 = y.astype(np.float16) if dt == "f16" else y
    for op, f in {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
                  "maximum": np.maximum, "minimum": np.minimum}.items():
        if dt == "f16":
            want = f(x16, y16)  # NumPy's float16 arithmetic
        else:
            want = rnd(f(x, y))
        case(f"{op}_{dt}", dt, ["a", "b"], op_then_round(op, dt, shape), dt, [x, y], want, shape)
    for op, f in {"lt": np.less, "eq": np.equal, "ge": np.greater_equal}.items():
        case(f"{op}_{dt}", dt, ["a", "b"], op_then_round(op, dt, shape, out_dt="bool"), "bool",
             [x, y], f(x, y), shape)
    for op, f in {"neg": np.negative, "abs": np.abs, "floor": np.floor, "sqrt": np.sqrt}.items():
        want = f(x16) if dt == "f16" else rnd(f(x))
        case(f"{op}_{dt}", dt, ["a"], op_then_round(op, dt, shape, binary=False), dt, [x], want, shape)
    # Excess precision: x * y + 1 rounds once (NumPy's float16 would round twice).
    want = rnd(x.astype(np.float32) * y.astype(np.float32) + np.float32(1.0))
    case(f"fma_once_{dt}", dt, ["a", "b"], fma_body(dt, shape), dt, [x, y], want, shape)
    # Products and quotients that overflow / underflow the 16-bit range.
    big = to(np.array([300.0, 1e4, -2e4, 1e-3, 3e-5, 255.9] * 4, dtype=np.float32)).reshape(shape)
    want = (big.astype(np.float16) * yp.astype(np.float16)) if dt == "f16" else rnd(big * yp)
    case(f"mul_range_{dt}", dt, ["a", "b"], op_then_round("mul", dt, shape), dt, [big, yp], want, shape)

# ---------------------------------------------------------------- i8 and u8
shape = (3, 8)
for dt, npt in [("i8", np.int8), ("u8", np.uint8)]:
    info = np.iinfo(npt)
    a = np.array(list(range(info.min, info.max + 1, 11))[:24], dtype=npt).reshape(shape)
    b = np.array(list(range(info.max, info.min - 1, -7))[:24], dtype=npt).reshape(shape)
    bnz = np.where(b == 0, npt(3), b).astype(npt)
    for op, f in {"add": np.add, "sub": np.subtract, "mul": np.multiply, "maximum": np.maximum,
                  "bitwise_and": np.bitwise_and, "bitwise_xor": np.bitwise_xor}.items():
        case(f"{op}_{dt}", dt, ["a", "b"], op_then_round(op, dt, shape), dt, [a, b], f(a, b), shape)
    for op, f in {"floor_div": np.floor_divide, "remainder": np.remainder}.items():
        case(f"{op}_{dt}", dt, ["a", "b"], op_then_round(op, dt, shape), dt, [a, bnz], f(a, bnz), shape)
    for op, f in {"lt": np.less, "ne": np.not_equal}.items():
        case(f"{op}_{dt}", dt, ["a", "b"], op_then_round(op, dt, shape, out_dt="bool"), "bool",
             [a, b], f(a, b), shape)
    # a * b + 1 with the i32 value carried into `add` (wrapping commutes with + and *).
    case(f"fma_wraps_{dt}", dt, ["a", "b"], fma_body(dt, shape), dt, [a, b],
         (a * b + npt(1)).astype(npt), shape)
    if dt == "i8":
        case("neg_i8", dt, ["a"], op_then_round("neg", dt, shape, binary=False), dt, [a], np.negative(a), shape)
        case("abs_i8", dt, ["a"], op_then_round("abs", dt, shape, binary=False), dt, [a], np.abs(a), shape)

with open("storage_cases.txt", "w") as f:
    f.write("# Generated by gen_storage_cases.py; do not edit.\n")
    f.write("\n".join(out) + "\n")
print(f"{sum(1 for l in out if l.startswith('==='))} cases")
