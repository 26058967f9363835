"""Generates interp_cases.txt: IR graphs, inputs and the outputs NumPy computes for them.

Run from this directory with `python3 gen_interp_cases.py` (needs numpy). The Rust test
(`ir/tests/interp_cases.rs`) reads the generated file and needs neither Python nor NumPy.
Where NumPy leaves a result undefined (float -> int casts of NaN/inf/out-of-range values,
integer powers with negative exponents) the expected value follows the interpreter's documented
rule, written out below independently of the Rust code.
"""
import math
import numpy as np

np.seterr(all="ignore")
rng = np.random.default_rng(1234)
out = []

DT = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64, "bool": np.bool_}


def dtname(a):
    return {np.dtype(v): k for k, v in DT.items()}[a.dtype]


def fmt_vals(a):
    flat = np.asarray(a).reshape(-1)
    if flat.dtype == np.bool_:
        return " ".join("true" if v else "false" for v in flat)
    if flat.dtype.kind == "f":
        return " ".join(
            "nan" if math.isnan(v) else ("inf" if v == math.inf else "-inf" if v == -math.inf else repr(float(v)))
            for v in flat)
    return " ".join(str(int(v)) for v in flat)


def shape_text(shape):
    return "[" + ", ".join(str(d) for d in shape) + "]"


class G:
    def __init__(self, syms=()):
        self.params, self.lines, self.n, self.syms = [], [], 0, list(syms)

    def param(self, name, dtype, shape):
        idx = len(self.params)
        self.params.append((name, dtype, shape))
        return self.node(f"param {idx}", dtype, shape)

    def node(self, text, dtype, shape):
        v = f"%{self.n}"
        self.lines.append(f"  {v} = {text} : {dtype}{shape_text(shape)}")
        self.n += 1
        return v

    def text(self, outs):
        types = {v: l.rsplit(" : ", 1)[1] for v, l in ((l.split(" = ")[0].strip(), l) for l in self.lines)}
        ps = ", ".join(f"{n}: {d}{shape_text(s)}" for n, d, s in self.params)
        rs = ", ".join(types[o] for o in outs)
        body = [f"  sym s{i} = {d}" for i, d in enumerate(self.syms)] + self.lines
        return "func f(" + ps + ") -> (" + rs + ") {\n" + "\n".join(body) + f"\n  return {', '.join(outs)}\n}}"


# Cases outside the op table (`Op::operand_dtypes` in ir/src/op.rs, the prelude's constraints):
# the interpreter must refuse them rather than define a meaning nobody can call.
OUTSIDE_OP_TABLE = set("""
logical_not_f32 logical_not_f64 floor_i32 ceil_i32 round_i32 logical_not_i32 floor_i64 ceil_i64
round_i64 logical_not_i64 logical_and_f32 logical_or_f32 logical_and_f64 logical_or_f64
logical_and_i32 logical_or_i32 pow_i32 pow_i32_wraps logical_and_i64 logical_or_i64 pow_i64
pow_i64_wraps lt_bool le_bool gt_bool ge_bool maximum_bool minimum_bool max_bool min_bool
argmax_bool
bitwise_not_f32 bitwise_not_f64 bitwise_and_f32 bitwise_and_f64 shift_left_f32 shift_left_f64 shift_left_bool
shift_right_bool floor_div_bool remainder_bool""".split())


def case(name, g, outs, inputs, expected=None, error=None):
    if name in OUTSIDE_OP_TABLE:
        expected, error = None, "is not defined for"
    out.append(f"=== {name}")
    out.append(g.text(outs))
    for a in inputs:
        a = np.asarray(a)
        out.append(f"--- in {dtname(a)} {shape_text(a.shape)}")
        out.append(fmt_vals(a))
    if error is not None:
        out.append(f"--- error {error}")
    for a in expected or []:
        a = np.asarray(a)
        out.append(f"--- out {dtname(a)} {shape_text(a.shape)}")
        out.append(fmt_vals(a))


def unary_case(name, op, dtype, x, expected, out_dtype=None):
    g = G()
    p = g.param("x", dtype, x.shape)
    r = g.node(f"{op} {p}", out_dtype or dtype, x.shape)
    case(name, g, [r], [x], [expected])


def binary_case(name, op, dtype, a, b, expected, out_dtype=None):
    g = G()
    pa = g.param("a", dtype, a.shape)
    pb = g.param("b", dtype, b.shape)
    r = g.node(f"{op} {pa}, {pb}", out_dtype or dtype, np.asarray(expected).shape)
    case(name, g, [r], [a, b], [expected])


# ---------------------------------------------------------------- unary, floats
special = [-2.5, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5, 3.7, -3.7, math.inf, -math.inf, math.nan, 1e-3, 20.0, -20.0, 0.3, -0.7]
merf = np.vectorize(math.erf)
FLOAT_UNARY = {
    "neg": np.negative, "abs": np.abs, "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
    "rsqrt": lambda x: (1.0 / np.sqrt(x.astype(np.float64))).astype(x.dtype),
    "tanh": np.tanh,
    "sigmoid": lambda x: (1.0 / (1.0 + np.exp(-x.astype(np.float64)))).astype(x.dtype),
    "sin": np.sin, "cos": np.cos,
    "erf": lambda x: merf(x.astype(np.float64)).astype(x.dtype),
    "floor": np.floor, "ceil": np.ceil, "round": np.round, "sign": np.sign,
    "reciprocal": lambda x: (1.0 / x).astype(x.dtype), "log1p": np.log1p, "expm1": np.expm1,
}
for dt in ["f32", "f64"]:
    x = np.array(special, dtype=DT[dt]).reshape(3, 6)
    for op, f in FLOAT_UNARY.items():
        unary_case(f"{op}_{dt}", op, dt, x, f(x))
    unary_case(f"logical_not_{dt}", "logical_not", dt, x, np.logical_not(x), "bool")

# ---------------------------------------------------------------- unary, ints and bool
for dt in ["i32", "i64"]:
    info = np.iinfo(DT[dt])
    x = np.array([info.min, info.min + 1, -7, -1, 0, 1, 5, info.max], dtype=DT[dt])
    unary_case(f"neg_{dt}", "neg", dt, x, np.negative(x))
    unary_case(f"abs_{dt}", "abs", dt, x, np.abs(x))
    unary_case(f"sign_{dt}", "sign", dt, x, np.sign(x))
    for op in ["floor", "ceil", "round"]:
        unary_case(f"{op}_{dt}", op, dt, x, x)
    unary_case(f"logical_not_{dt}", "logical_not", dt, x, np.logical_not(x), "bool")
b = np.array([[True, False, True], [False, False, True]])
unary_case("logical_not_bool", "logical_not", "bool", b, np.logical_not(b))

# ---------------------------------------------------------------- binary, floats (broadcast [3,1] x [8])
def fmax(a, b):
    return np.maximum(a, b)


for dt in ["f32", "f64"]:
    a = np.array([[-1.5], [0.0], [math.nan]], dtype=DT[dt])
    a2 = np.array([[-1.5], [2.0], [3.0]], dtype=DT[dt])
    bb = np.array([-2.0, -0.5, 0.0, 0.5, 1.0, 2.5, math.nan, math.inf], dtype=DT[dt])
    for op, f in {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
                  "maximum": np.maximum, "minimum": np.minimum}.items():
        binary_case(f"{op}_{dt}_broadcast", op, dt, a, bb, f(a, bb))
    binary_case(f"pow_{dt}", "pow", dt, a2, bb, np.power(a2, bb))
    for op, f in {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
                  "gt": np.greater, "ge": np.greater_equal,
                  "logical_and": np.logical_and, "logical_or": np.logical_or}.items():
        binary_case(f"{op}_{dt}", op, dt, a, bb, f(a, bb), "bool")
    # rank-0 operand and size-0 / size-1 broadcasting
    s = np.array(2.0, dtype=DT[dt])
    m = rng.standard_normal((2, 3)).astype(DT[dt])
    binary_case(f"mul_{dt}_scalar", "mul", dt, s, m, s * m)
    e = np.zeros((0, 3), dtype=DT[dt])
    one = np.ones((1, 1), dtype=DT[dt])
    binary_case(f"add_{dt}_size0", "add", dt, e, one, e + one)
    c = rng.standard_normal((2, 1, 4)).astype(DT[dt])
    d = rng.standard_normal((3, 1)).astype(DT[dt])
    binary_case(f"sub_{dt}_both_broadcast", "sub", dt, c, d, c - d)

# ---------------------------------------------------------------- binary, ints
def ipow(base, e):
    if e < 0:
        return 1 if base == 1 else ((1 if e % 2 == 0 else -1) if base == -1 else 0)
    return base ** e


for dt in ["i32", "i64"]:
    info = np.iinfo(DT[dt])
    a = np.array([[info.max], [-7], [3], [info.min]], dtype=DT[dt])
    bb = np.array([-3, 0, 2, info.max], dtype=DT[dt])
    for op, f in {"add": np.add, "sub": np.subtract, "mul": np.multiply,
                  "maximum": np.maximum, "minimum": np.minimum}.items():
        binary_case(f"{op}_{dt}", op, dt, a, bb, f(a, bb))
    for op, f in {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
                  "gt": np.greater, "ge": np.greater_equal,
                  "logical_and": np.logical_and, "logical_or": np.logical_or}.items():
        binary_case(f"{op}_{dt}", op, dt, a, bb, f(a, bb), "bool")
    pa = np.array([[2], [-1], [1], [0], [3], [-2]], dtype=DT[dt])
    pe = np.array([-2, -1, 0, 1, 3, 7], dtype=DT[dt])
    bits = 32 if dt == "i32" else 64
    wrap = lambda v: ((v + 2 ** (bits - 1)) % 2 ** bits) - 2 ** (bits - 1)
    expected = np.array([[wrap(ipow(int(x), int(y))) for y in pe] for x in pa.reshape(-1)], dtype=DT[dt])
    binary_case(f"pow_{dt}", "pow", dt, pa, pe, expected)
    big = np.array([7, 3], dtype=DT[dt])
    huge = np.array([bits - 1, 100], dtype=DT[dt])
    binary_case(f"pow_{dt}_wraps", "pow", dt, big, huge,
                np.array([wrap(7 ** (bits - 1)), wrap(3 ** 100)], dtype=DT[dt]))

# ---------------------------------------------------------------- binary, bool
ba = np.array([[False], [True]])
bbv = np.array([False, True])
for op, f in {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
              "gt": np.greater, "ge": np.greater_equal, "logical_and": np.logical_and,
              "logical_or": np.logical_or, "maximum": np.maximum, "minimum": np.minimum}.items():
    binary_case(f"{op}_bool", op, "bool", ba, bbv, f(ba, bbv))

# ---------------------------------------------------------------- predicates, division, bitwise
for dt in ["f32", "f64"]:
    x = np.array(special, dtype=DT[dt]).reshape(3, 6)
    for op, f in {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite}.items():
        unary_case(f"{op}_{dt}", op, dt, x, f(x), "bool")
    for op in ["bitwise_not", "bitwise_and", "shift_left"]:
        if op == "bitwise_not":
            unary_case(f"{op}_{dt}", op, dt, x, x)
        else:
            binary_case(f"{op}_{dt}", op, dt, x, x, x)
    # NumPy's divmod: exact fmod moved to the divisor's sign, signed zeros, x // 0 == x / 0.
    fa = np.array([-7.5, -5.3, -1.0, -0.0, 0.0, 0.1, 1.0, 5.3, 1e30, math.inf, math.nan, 3e-41],
                  dtype=DT[dt]).reshape(-1, 1)
    fb = np.array([-2.0, -0.1, -0.0, 0.0, 0.1, 0.3, 2.5, 1e-30, math.inf, -math.inf, math.nan, 1e-44],
                  dtype=DT[dt])
    binary_case(f"floor_div_{dt}", "floor_div", dt, fa, fb, np.floor_divide(fa, fb))
    binary_case(f"remainder_{dt}", "remainder", dt, fa, fb, np.remainder(fa, fb))
for dt in ["i32", "i64", "bool"]:
    x = np.array([0, 1, 0, 1], dtype=DT[dt]) if dt == "bool" else \
        np.array([np.iinfo(DT[dt]).min, -7, 0, 5, np.iinfo(DT[dt]).max], dtype=DT[dt])
    for op, f in {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite}.items():
        unary_case(f"{op}_{dt}", op, dt, x, f(x), "bool")
    unary_case(f"bitwise_not_{dt}", "bitwise_not", dt, x, np.invert(x))
    a = x.reshape(-1, 1)
    for op, f in {"bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
                  "bitwise_xor": np.bitwise_xor}.items():
        binary_case(f"{op}_{dt}", op, dt, a, x, f(a, x))
for dt in ["i32", "i64"]:
    info, bits = np.iinfo(DT[dt]), np.iinfo(DT[dt]).bits
    # Python's // and %; NumPy gives 0 for a zero divisor and wraps MIN // -1.
    a = np.array([[info.min], [-7], [-1], [0], [6], [7], [info.max]], dtype=DT[dt])
    d = np.array([-3, -2, -1, 0, 1, 2, 3, info.min, info.max], dtype=DT[dt])
    binary_case(f"floor_div_{dt}", "floor_div", dt, a, d, np.floor_divide(a, d))
    binary_case(f"remainder_{dt}", "remainder", dt, a, d, np.remainder(a, d))
    # Counts outside [0, bits), negative included, shift everything out (NumPy).
    v = np.array([[info.min], [-8], [-1], [1], [5], [info.max]], dtype=DT[dt])
    c = np.array([-65, -1, 0, 1, 3, bits - 2, bits - 1, bits, bits + 1, 100], dtype=DT[dt])
    binary_case(f"shift_left_{dt}", "shift_left", dt, v, c, np.left_shift(v, c))
    binary_case(f"shift_right_{dt}", "shift_right", dt, v, c, np.right_shift(v, c))
bb2 = np.array([True, False])
for op in ["shift_left", "shift_right", "floor_div", "remainder"]:
    binary_case(f"{op}_bool", op, "bool", bb2, bb2, bb2)

# ---------------------------------------------------------------- where
for dt in DT:
    cond = rng.random((2, 1, 3)) > 0.5
    a = (rng.standard_normal((4, 1)) * 10).astype(DT[dt])
    bb = (rng.standard_normal((3,)) * 10).astype(DT[dt])
    g = G()
    pc, pa, pb = g.param("cond", "bool", cond.shape), g.param("a", dt, a.shape), g.param("b", dt, bb.shape)
    r = g.node(f"where {pc}, {pa}, {pb}", dt, (2, 4, 3))
    case(f"where_{dt}", g, [r], [cond, a, bb], [np.where(cond, a, bb)])

# ---------------------------------------------------------------- mul_add
# `a*b + c` rounded once (IEEE fma). NumPy has no fma: the expected values are the exact
# rational a*b + c (Fractions) rounded to nearest-even in the dtype, computed here.
from fractions import Fraction


def round_f32(fr):
    f = float(fr)  # correctly rounded to f64, then fixed up for double rounding
    c = np.float32(f)
    if not np.isfinite(c):
        return c
    best = c
    for n in (np.nextafter(c, np.float32(-np.inf)), np.nextafter(c, np.float32(np.inf))):
        if not np.isfinite(n):
            continue
        dn, db = abs(Fraction(float(n)) - fr), abs(Fraction(float(best)) - fr)
        if dn < db or (dn == db and int(n.view(np.int32)) % 2 == 0):
            best = n
    return best


def exact_fma(a, b, c, dt):
    out = np.empty(np.broadcast(a, b, c).shape, DT[dt])
    for idx, (x, y, z) in zip(np.ndindex(out.shape), np.broadcast(a, b, c)):
        x, y, z = float(x), float(y), float(z)
        if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
            out[idx] = x * y + z  # inf/NaN: the same in f64 without intermediate rounding issues
            continue
        fr = Fraction(x) * Fraction(y) + Fraction(z)
        try:
            out[idx] = round_f32(fr) if dt == "f32" else float(fr)
        except OverflowError:
            out[idx] = math.inf if fr > 0 else -math.inf
    return out


fma_rng = np.random.default_rng(14)  # its own stream: the later cases keep their values
for dt in ["f32", "f64"]:
    t = DT[dt]
    e = 2.0 ** (-20 if dt == "f32" else -40)
    # Cancellation: a*b rounded loses the low bits that a*b + c keeps.
    a = np.array([1 + e, 1 - e, 3.0, 0.1, -0.7, 1e30 if dt == "f32" else 1e300, math.inf, 0.0,
                  math.nan, 2.5, -0.0, 0.0], t)
    b = np.array([1 + e, 1 + e, 1 / 3, 0.3, 0.7, 1e10 if dt == "f32" else 1e10, 0.0, math.inf,
                  1.0, math.inf, 5.0, -5.0], t)
    c = np.array([0, 0, -1.0, 0, 0, -3e38 if dt == "f32" else -1.7e308, 1.0, -1.0, 1.0,
                  -math.inf, 0.0, 0.0], t)
    # Scaled so that the residual a*b - fl(a*b) is far above the test tolerance (mul then
    # add gives 0 there; the exact answer is >= 1e-3).
    for i in (0, 1, 3, 4):
        a[i] *= t(2.0 ** (40 if dt == "f32" else 80))
    c[0] = -t(a[0] * b[0])
    c[1] = -t(a[1] * b[1])
    c[3] = -t(a[3] * b[3])
    c[4] = -t(a[4] * b[4])
    binary_like = G()
    pa, pb, pc = (binary_like.param(n, dt, v.shape) for n, v in (("a", a), ("b", b), ("c", c)))
    r = binary_like.node(f"mul_add {pa}, {pb}, {pc}", dt, a.shape)
    case(f"mul_add_{dt}", binary_like, [r], [a, b, c], [exact_fma(a, b, c, dt)])
    # Broadcasting, random values with the product's rounding error as the answer.
    a = fma_rng.standard_normal((2, 1)).astype(t)
    b = fma_rng.standard_normal((3,)).astype(t)
    c = -(a * b).astype(t)
    g = G()
    pa, pb, pc = g.param("a", dt, a.shape), g.param("b", dt, b.shape), g.param("c", dt, c.shape)
    r = g.node(f"mul_add {pa}, {pb}, {pc}", dt, (2, 3))
    case(f"mul_add_broadcast_{dt}", g, [r], [a, b, c], [exact_fma(a, b, c, dt)])
for dt in ["i32", "i64", "bool"]:
    v = np.array([1, 0], DT[dt])
    g = G()
    pa, pb, pc = g.param("a", dt, v.shape), g.param("b", dt, v.shape), g.param("c", dt, v.shape)
    r = g.node(f"mul_add {pa}, {pb}, {pc}", dt, v.shape)
    case(f"mul_add_{dt}", g, [r], [v, v, v], error="is not defined for")

# ---------------------------------------------------------------- cast
def sat_cast(v, dt):
    info = np.iinfo(DT[dt])
    if math.isnan(v):
        return 0
    if v == math.inf:
        return info.max
    if v == -math.inf:
        return info.min
    return max(info.min, min(info.max, math.trunc(v)))


float_src = [-2.7, -0.5, -0.0, 0.5, 2.7, math.nan, math.inf, -math.inf, 3e9, -3e9, 1e20, 16777217.0]
int_src = [-(2 ** 40) - 5, -3, -1, 0, 1, 2 ** 31 + 7, 16777217, 2 ** 62]
for src in DT:
    if src in ("f32", "f64"):
        x = np.array(float_src, dtype=DT[src])
    elif src == "bool":
        x = np.array([True, False, True])
    else:
        x = np.array(int_src, dtype=np.int64).astype(DT[src])
    for dst in DT:
        if src in ("f32", "f64") and dst in ("i32", "i64"):
            expected = np.array([sat_cast(float(v), dst) for v in x], dtype=DT[dst])
        else:
            expected = x.astype(DT[dst])
        unary_case(f"cast_{src}_{dst}", "cast", src, x, expected, dst)
        out[-5] = out[-5].replace(f"cast %0 :", f"cast %0 {{to={dst}}} :")

# ---------------------------------------------------------------- reductions
def reduce_case(name, op, dt, x, axes, keepdim, expected=None, error=None):
    g = G()
    p = g.param("x", dt, x.shape)
    if expected is not None:
        oshape = np.asarray(expected).shape
    else:
        oshape = tuple(1 if i in axes else d for i, d in enumerate(x.shape)) if keepdim else \
            tuple(d for i, d in enumerate(x.shape) if i not in axes)
    odt = "i64" if op == "argmax" else dt
    if op == "argmax":
        attrs = f"{{axis={axes[0]}, keepdim={'true' if keepdim else 'false'}}}"
    else:
        attrs = f"{{axes=[{', '.join(map(str, axes))}], keepdim={'true' if keepdim else 'false'}}}"
    r = g.node(f"{op} {p} {attrs}", odt, oshape)
    case(name, g, [r], [x], None if expected is None else [expected], error)


NP_RED = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "mean": np.mean}
for dt in ["f32", "f64", "i32", "i64"]:
    if dt in ("f32", "f64"):
        x = rng.standard_normal((2, 3, 4)).astype(DT[dt])
    else:
        x = rng.integers(-9, 9, (2, 3, 4)).astype(DT[dt])
    for op, f in NP_RED.items():
        if op == "mean" and dt in ("i32", "i64"):
            continue
        for axes in [(1,), (0, 2), (0, 1, 2), (2,)]:
            for keepdim in [False, True]:
                kw = {"dtype": DT[dt]} if op in ("sum", "prod") else {}
                e = f(x.astype(np.float64) if dt == "f32" and op in ("sum", "mean", "prod") else x,
                      axis=axes, keepdims=keepdim, **kw).astype(DT[dt])
                reduce_case(f"{op}_{dt}_axes{''.join(map(str, axes))}_{'keep' if keepdim else 'drop'}",
                            op, dt, x, list(axes), keepdim, e)
    # size-0 axis: identities, NaN mean, max/min error
    z = np.zeros((2, 0, 3), dtype=DT[dt])
    reduce_case(f"sum_{dt}_size0", "sum", dt, z, [1], False, np.sum(z, axis=1, dtype=DT[dt]))
    reduce_case(f"prod_{dt}_size0", "prod", dt, z, [1], True, np.prod(z, axis=1, keepdims=True, dtype=DT[dt]))
    reduce_case(f"max_{dt}_size0", "max", dt, z, [1], False, error="zero-size reduction")
    reduce_case(f"min_{dt}_size0", "min", dt, z, [0, 1], False, error="zero-size reduction")
    reduce_case(f"argmax_{dt}_size0", "argmax", dt, z, [1], False, error="zero-size reduction")
    if dt in ("f32", "f64"):
        reduce_case(f"mean_{dt}_size0", "mean", dt, z, [1], False, np.mean(z, axis=1).astype(DT[dt]))
    # integer overflow wraps
    if dt in ("i32", "i64"):
        info = np.iinfo(DT[dt])
        w = np.array([[info.max, 1, 2], [info.min, -1, 5]], dtype=DT[dt])
        reduce_case(f"sum_{dt}_wraps", "sum", dt, w, [1], False, np.sum(w, axis=1, dtype=DT[dt]))
        reduce_case(f"prod_{dt}_wraps", "prod", dt, w, [0, 1], False, np.prod(w, dtype=DT[dt]))
    # argmax with ties
    t = np.array([[1, 3, 3, 0], [2, 2, 2, 2], [0, 5, 1, 5]], dtype=DT[dt])
    for axis in [0, 1]:
        for keepdim in [False, True]:
            reduce_case(f"argmax_{dt}_ties_axis{axis}_{keepdim}", "argmax", dt, t, [axis], keepdim,
                        np.argmax(t, axis=axis, keepdims=keepdim).astype(np.int64))

for dt in ["f32", "f64"]:
    n = np.array([[1.0, math.nan, 3.0], [-math.inf, 2.0, math.inf], [math.nan, math.nan, 0.0]], dtype=DT[dt])
    for op in ["max", "min", "sum"]:
        reduce_case(f"{op}_{dt}_nan", op, dt, n, [1], False, NP_RED[op](n, axis=1))
    reduce_case(f"argmax_{dt}_nan", "argmax", dt, n, [1], False, np.argmax(n, axis=1).astype(np.int64))
    reduce_case(f"argmax_{dt}_nan_axis0", "argmax", dt, n, [0], True, np.argmax(n, axis=0, keepdims=True).astype(np.int64))

bx = np.array([[True, False, True], [True, True, True], [False, False, False]])
reduce_case("max_bool", "max", "bool", bx, [1], False, np.max(bx, axis=1))
reduce_case("min_bool", "min", "bool", bx, [0, 1], True, np.min(bx, axis=(0, 1), keepdims=True))
reduce_case("argmax_bool", "argmax", "bool", bx, [1], False, np.argmax(bx, axis=1).astype(np.int64))
one = rng.standard_normal((1, 3, 1)).astype(np.float32)
reduce_case("sum_f32_size1_axes", "sum", "f32", one, [0, 2], False, np.sum(one, axis=(0, 2)))

# ---------------------------------------------------------------- matmul
def matmul_case(name, dt, a, bm):
    e = np.matmul(a, bm)
    g = G()
    pa, pb = g.param("a", dt, a.shape), g.param("b", dt, bm.shape)
    r = g.node(f"matmul {pa}, {pb}", dt, e.shape)
    case(name, g, [r], [a, bm], [e.astype(DT[dt])])


for dt in ["f32", "f64", "i32", "i64"]:
    def arr(*shape):
        if dt in ("f32", "f64"):
            return rng.standard_normal(shape).astype(DT[dt])
        return rng.integers(-5, 5, shape).astype(DT[dt])
    matmul_case(f"matmul_{dt}_2d", dt, arr(2, 3), arr(3, 4))
    matmul_case(f"matmul_{dt}_batched_broadcast", dt, arr(2, 1, 3, 4), arr(5, 4, 2))
    matmul_case(f"matmul_{dt}_batch_rhs_2d", dt, arr(4, 2, 3), arr(3, 5))
    matmul_case(f"matmul_{dt}_m0", dt, arr(0, 3), arr(3, 2))
    matmul_case(f"matmul_{dt}_k0", dt, arr(2, 0), arr(0, 3))
    matmul_case(f"matmul_{dt}_size1", dt, arr(1, 1, 1), arr(3, 1, 2))
info = np.iinfo(np.int32)
matmul_case("matmul_i32_wraps", "i32", np.array([[info.max, 2]], dtype=np.int32), np.array([[2], [info.max]], dtype=np.int32))

# ---------------------------------------------------------------- shape ops
for dt in ["f32", "i64", "bool"]:
    x = (rng.standard_normal((2, 3, 4)) * 5).astype(DT[dt])
    g = G()
    p = g.param("x", dt, x.shape)
    r1 = g.node(f"reshape {p}", dt, (4, 6))
    r2 = g.node(f"transpose {p} {{perm=[2, 0, 1]}}", dt, (4, 2, 3))
    r3 = g.node(f"reshape {r2}", dt, (24,))  # reshape of a transposed value: row-major order
    r4 = g.node(f"transpose {r1} {{perm=[1, 0]}}", dt, (6, 4))
    case(f"reshape_transpose_{dt}", g, [r1, r2, r3, r4], [x],
         [x.reshape(4, 6), x.transpose(2, 0, 1), x.transpose(2, 0, 1).reshape(24), x.reshape(4, 6).T])
    y = (rng.standard_normal((3, 1)) * 5).astype(DT[dt])
    g = G()
    p = g.param("y", dt, y.shape)
    r = g.node(f"broadcast_to {p}", dt, (2, 3, 4))
    r0 = g.node(f"reshape {p}", dt, (1, 3))
    case(f"broadcast_to_{dt}", g, [r, r0], [y], [np.broadcast_to(y, (2, 3, 4)), y.reshape(1, 3)])
    a = (rng.standard_normal((2, 3)) * 5).astype(DT[dt])
    b0 = (rng.standard_normal((0, 3)) * 5).astype(DT[dt])
    c = (rng.standard_normal((1, 3)) * 5).astype(DT[dt])
    g = G()
    pa, pb, pc = g.param("a", dt, a.shape), g.param("b", dt, b0.shape), g.param("c", dt, c.shape)
    r = g.node(f"concat {pa}, {pb}, {pc} {{axis=0}}", dt, (3, 3))
    r2 = g.node(f"concat {pa}, {pa} {{axis=1}}", dt, (2, 6))
    case(f"concat_{dt}", g, [r, r2], [a, b0, c], [np.concatenate([a, b0, c], 0), np.concatenate([a, a], 1)])

scalar = np.array(7.5, dtype=np.float32)
g = G()
p = g.param("s", "f32", ())
r = g.node(f"broadcast_to {p}", "f32", (2, 2))
r2 = g.node(f"reshape {p}", "f32", (1, 1))
r3 = g.node(f"reshape {r2}", "f32", ())
case("broadcast_scalar_f32", g, [r, r2, r3], [scalar], [np.broadcast_to(scalar, (2, 2)), scalar.reshape(1, 1), scalar])

x = np.arange(10, dtype=np.int32)
x2 = np.arange(12, dtype=np.float64).reshape(3, 4)
for i, (start, end, step) in enumerate([(0, None, 1), (2, 7, 2), (-3, None, 1), (8, 2, -2), (-1, None, -1),
                                         (5, None, -3), (100, -100, -1), (-100, 100, 3), (3, 3, 1),
                                         (7, 2, 1), (0, -1, -1), (-2, -12, -4)]):
    g = G()
    p = g.param("x", "i32", x.shape)
    e = x[slice(start, end, step)]
    r = g.node(f"slice {p} {{axis=0, start={start}, end={'none' if end is None else end}, step={step}}}", "i32", e.shape)
    p2 = g.param("y", "f64", x2.shape)
    e2 = x2[:, slice(start, end, step)]
    r2 = g.node(f"slice {p2} {{axis=1, start={start}, end={'none' if end is None else end}, step={step}}}", "f64", e2.shape)
    case(f"slice_{i}", g, [r, r2], [x, x2], [e, e2])

for dt, value, vtext in [("f32", 1.5, "1.5"), ("i32", 2.7, "2.7"), ("i64", -3, "-3"), ("bool", True, "true"),
                          ("f64", math.inf, "-inf"), ("bool", 0.0, "0.0")]:
    g = G()
    p = g.param("like", "f32", (2, 3))
    r = g.node(f"full {{value={vtext}}}", dt, (3, 2))
    r2 = g.node(f"full {p} {{value={vtext}}}", dt, (2, 3))
    v = -math.inf if vtext == "-inf" else value
    ev = np.array(v).astype(np.float64)
    ev = (np.trunc(ev) if dt in ("i32", "i64") else ev).astype(DT[dt])
    case(f"full_{dt}_{vtext}", g, [r, r2], [np.zeros((2, 3), dtype=np.float32)],
         [np.full((3, 2), ev, dtype=DT[dt]), np.full((2, 3), ev, dtype=DT[dt])])

g = G()
c1 = g.node("const 0.5", "f32", ())
c2 = g.node("const -3", "i64", ())
c3 = g.node("const true", "bool", ())
c4 = g.node("const 1e300", "f64", ())
case("consts", g, [c1, c2, c3, c4], [],
     [np.array(0.5, dtype=np.float32), np.array(-3, dtype=np.int64), np.array(True), np.array(1e300)])

# ---------------------------------------------------------------- symbolic sizes (binding)
g = G(syms=["input(param 0 axis 0)", "input(param 0 axis 1, param 1 axis 0)", "(s0 * s1)", "slice_len(s1, 1, none, 2)"])
px = g.param("x", "f32", ("s0", "s1"))
pb = g.param("bias", "f32", ("s1",))
h = g.node(f"add {px}, {pb}", "f32", ("s0", "s1"))
c = g.node("const 0.5", "f32", ())
m = g.node(f"mul {c}, {h}", "f32", ("s0", "s1"))
fl = g.node(f"reshape {m}", "f32", ("s2",))
sl = g.node(f"slice {m} {{axis=1, start=1, end=none, step=2}}", "f32", ("s0", "s3"))
sm = g.node(f"sum {m} {{axes=[1], keepdim=true}}", "f32", ("s0", 1))
for i, (rows, cols) in enumerate([(2, 5), (1, 1), (0, 3), (3, 0)]):
    xv = rng.standard_normal((rows, cols)).astype(np.float32)
    bv = rng.standard_normal((cols,)).astype(np.float32)
    mv = np.float32(0.5) * (xv + bv)
    case(f"symbolic_{i}", g, [fl, sl, sm], [xv, bv], [mv.reshape(-1), mv[:, 1::2], mv.sum(axis=1, keepdims=True)])
case("symbolic_mismatch", g, [fl, sl, sm], [np.zeros((2, 3), np.float32), np.zeros((4,), np.float32)],
     error="`x` has shape [2, 3] but `bias` has shape [4]: axis 1 of `x` must match axis 0 of `bias` (3 vs 4)")

g = G(syms=["input(param 0 axis 0)"])
px = g.param("x", "f32", ("s0",))
r = g.node(f"reshape {px}", "f32", (3, 4))
case("reshape_wrong_count", g, [r], [np.zeros(10, np.float32)], error="cannot reshape [10] (10 elements) to [3, 4]")
case("reshape_right_count", g, [r], [np.arange(12, dtype=np.float32)], [np.arange(12, dtype=np.float32).reshape(3, 4)])
case("wrong_dtype", g, [r], [np.zeros(12, np.float64)], error="`x` must have dtype f32, got f64")
case("wrong_rank", g, [r], [np.zeros((3, 4), np.float32)], error="`x` must have rank 1, but has shape [3, 4] (rank 2)")

# ---------------------------------------------------------------- inverse trig, hyperbolic, atan2
# (spec section 7). Domain edges: asin/acos of |x| > 1 and of +-inf are NaN; atan(+-inf) = +-pi/2;
# sinh/cosh overflow to inf past ln(2 * MAX) (~89.4 for f32, ~710.5 for f64).
trig = [-1.0, -0.75, -0.5, -0.0, 0.0, 1e-3, 0.5, 0.7071067811865476, 0.99, 1.0, 1.5, -2.0,
        math.inf, -math.inf, math.nan, 2.4142135623730951, 20.0, -3.0]
hyper = [-0.0, 0.0, 1e-4, -0.3, 0.5, 1.0, -2.5, 10.0, -20.0, 88.0, 89.3, -89.6, 700.0, 711.0,
         math.inf, -math.inf, math.nan, 0.34]
for dt in ["f32", "f64"]:
    for op, f, vals in [("asin", np.arcsin, trig), ("acos", np.arccos, trig), ("atan", np.arctan, trig),
                        ("sinh", np.sinh, hyper), ("cosh", np.cosh, hyper)]:
        x = np.array(vals, dtype=DT[dt]).reshape(3, 6)
        unary_case(f"{op}_{dt}", op, dt, x, f(x))
    # Every quadrant, axis and signed zero; y [8, 1] against x [8] (broadcast).
    axis_vals = [-math.inf, -2.0, -0.0, 0.0, 0.5, 3.0, math.inf, math.nan]
    yv = np.array(axis_vals, dtype=DT[dt]).reshape(8, 1)
    xv = np.array(axis_vals, dtype=DT[dt])
    binary_case(f"atan2_{dt}_broadcast", "atan2", dt, yv, xv, np.arctan2(yv, xv))

# ---------------------------------------------------------------- indexed ops (ir/src/op_index.rs)
# gather = torch.gather (np.take_along_axis when the sizes match), index_select = np.take,
# scatter_add / index_add out of place; negative and duplicate indices; out of range is an error.
def resolve(i, n):
    return np.where(i < 0, i + n, i)


def np_gather(x, i, axis):
    sl = tuple(slice(0, n) if a != axis else slice(None) for a, n in enumerate(i.shape))
    return np.take_along_axis(x[sl], resolve(i, x.shape[axis]), axis)


def np_scatter_add(x, i, src, axis):
    out = x.copy()
    for pos in np.ndindex(*i.shape):
        t = list(pos)
        t[axis] = resolve(i[pos], x.shape[axis])
        out[tuple(t)] += src[pos]
    return out


def np_index_add(x, i, src, axis):
    out = x.copy()
    r = i.ndim
    for pos in np.ndindex(*src.shape):
        q = pos[axis:axis + r]
        t = pos[:axis] + (resolve(i[q], x.shape[axis]),) + pos[axis + r:]
        out[t] += src[pos]
    return out


def index_case(name, op, x, i, axis, src=None, expected=None, error=None):
    g = G()
    px = g.param("x", dtname(x), x.shape)
    pi = g.param("i", dtname(i), i.shape)
    if op == "gather":
        shape = i.shape
    elif op == "index_select":
        shape = x.shape[:axis] + i.shape + x.shape[axis + 1:]
    else:
        shape = x.shape
    inputs = [x, i]
    operands = f"{px}, {pi}"
    if src is not None:
        ps = g.param("src", dtname(src), src.shape)
        operands += f", {ps}"
        inputs.append(src)
    r = g.node(f"{op} {operands} {{axis={axis}}}", dtname(x), shape)
    case(name, g, [r], inputs, None if expected is None else [expected], error)


for dt in ["f32", "f64", "i32", "i64", "bool"]:
    x = (rng.standard_normal((3, 4)) * 5).astype(DT[dt])
    for it in ["i32", "i64"]:
        i = np.array([[0, 3, -1, 3, -4], [1, 1, 2, -2, 0], [2, 0, 0, 3, 1]], dtype=DT[it])
        index_case(f"gather_{dt}_{it}_axis1", "gather", x, i, 1, expected=np_gather(x, i, 1))
        i0 = np.array([[2, -3], [0, 0]], dtype=DT[it])  # smaller than x on axis 1
        index_case(f"gather_{dt}_{it}_axis0_smaller", "gather", x, i0, 0, expected=np_gather(x, i0, 0))
        k = np.array([[3, -1], [0, 3], [-4, 2]], dtype=DT[it])  # rank 2: [3, 3, 2]
        index_case(f"index_select_{dt}_{it}_axis1_rank2", "index_select", x, k, 1,
                   expected=np.take(x, resolve(k, 4), axis=1))
        k0 = np.array(-1, dtype=DT[it])  # rank 0 removes the axis
        index_case(f"index_select_{dt}_{it}_axis0_rank0", "index_select", x, k0, 0,
                   expected=np.take(x, resolve(k0, 3), axis=0))
        if dt == "bool":
            continue
        src = (rng.standard_normal(i.shape) * 3).astype(DT[dt])
        index_case(f"scatter_add_{dt}_{it}_axis1", "scatter_add", x, i, 1, src,
                   expected=np_scatter_add(x, i, src, 1))
        ks = np.array([2, -1, 2, 0, 2], dtype=DT[it])
        src = (rng.standard_normal((5, 4)) * 3).astype(DT[dt])
        index_case(f"index_add_{dt}_{it}_axis0", "index_add", x, ks, 0, src,
                   expected=np_index_add(x, ks, src, 0))
# integer accumulation wraps like `add`
info = np.iinfo(np.int32)
x = np.array([info.max, 0], dtype=np.int32)
i = np.array([0, 0, 1], dtype=np.int64)
src = np.array([1, info.max, -1], dtype=np.int32)
with np.errstate(over="ignore"):
    index_case("scatter_add_i32_wraps", "scatter_add", x, i, 0, src, expected=np_scatter_add(x, i, src, 0))
# empty index
x = rng.standard_normal((3, 4)).astype(np.float32)
e = np.zeros((3, 0), dtype=np.int64)
index_case("gather_empty_index", "gather", x, e, 1, expected=np_gather(x, e, 1))
index_case("index_select_empty_index", "index_select", x, np.zeros(0, np.int64), 0,
           expected=np.take(x, np.zeros(0, np.int64), axis=0))
# out of range (positive, negative), and a gather index larger than x on another axis
for op in ["gather", "index_select", "scatter_add", "index_add"]:
    for bad in [4, -5]:
        i = np.array([[0, bad], [1, 2]], dtype=np.int64)
        src = None
        if op == "scatter_add":
            src = np.ones((2, 2), np.float32)
        if op == "index_add":
            src = np.ones((3, 2, 2), np.float32)
        index_case(f"{op}_out_of_range_{bad}", op, x, i, 1, src,
                   error=f"index {bad} is out of range for an axis of size 4 (valid: -4 to 3)")
index_case("gather_index_larger_than_x", "gather", x, np.zeros((4, 2), np.int64), 1,
           error="the index has size 4 on axis 0, larger than x's 3")

with open("interp_cases.txt", "w") as fh:
    fh.write("# Generated by gen_interp_cases.py from NumPy " + np.__version__ + "; do not edit by hand.\n")
    fh.write("\n".join(out) + "\n")
print(len([l for l in out if l.startswith("===")]), "cases")
