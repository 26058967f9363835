"""Generates scan_cases.txt: IR graphs of the index and scan ops (`iota`, `cumsum`, `cumprod`,
`cumprod_grad`, `argmin`), their inputs and the outputs NumPy computes for them, in the format
of interp_cases.txt (read by `ir/tests/interp_cases.rs`).

Run from this directory with `python3 gen_scan_cases.py` (needs numpy).

- cumsum/cumprod: every dim of ranks 1-4, every exclusive/reverse combination, f32 f64 i32 i64
  (NumPy's `cumsum`/`cumprod` with `dtype=` accumulate sequentially in that dtype; integers
  wrap), NaN/inf, an empty scanned axis and an empty other axis.
- cumprod_grad: the gradient of each cumprod variant, by the definition
  `dx_i = sum_j g_j * d y_j / d x_i` with the derivative a product over `k != i` (no division),
  on inputs with no zero, one zero and several zeros in a lane.
- argmin: the first index of the minimum; a NaN is the minimum and the first NaN wins
  (`np.argmin`); ties; keepdim; an axis of size 0 is an error (as NumPy's ValueError).
- iota: the index along each axis of ranks 1-4 in every numeric dtype, with and without an
  operand whose shape it copies.
"""
import itertools
import math
import numpy as np

np.seterr(all="ignore")
rng = np.random.default_rng(4321)
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


def b(v):
    return "true" if v else "false"


class G:
    def __init__(self):
        self.params, self.lines, self.n = [], [], 0

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
        return "func f(" + ps + ") -> (" + rs + ") {\n" + "\n".join(self.lines) + f"\n  return {', '.join(outs)}\n}}"


def case(name, g, outs, inputs, expected=None, error=None):
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


def sample(dt, shape, lo=-3, hi=4):
    if dt in ("f32", "f64"):
        return rng.uniform(-1.5, 1.5, shape).astype(DT[dt])
    return rng.integers(lo, hi, shape).astype(DT[dt])


# ---------------------------------------------------------------- cumsum / cumprod
def np_scan(op, x, axis, exclusive, reverse):
    """Sequential scan in x's dtype, NumPy's accumulate; exclusive/reverse by flips and shifts."""
    f = np.cumsum if op == "cumsum" else np.cumprod
    y = np.flip(x, axis) if reverse else x
    r = f(y, axis=axis, dtype=x.dtype)
    if exclusive:
        ident = np.zeros_like if op == "cumsum" else np.ones_like
        first = ident(np.take(r, [0], axis=axis)) if r.shape[axis] > 0 else np.take(r, [], axis=axis)
        r = np.concatenate([first, np.take(r, range(r.shape[axis] - 1), axis=axis)], axis=axis)
        r = r[tuple(slice(0, x.shape[i]) for i in range(x.ndim))]
    return np.flip(r, axis) if reverse else r


def scan_case(name, op, dt, x, axis, exclusive, reverse):
    g = G()
    p = g.param("x", dt, x.shape)
    r = g.node(f"{op} {p} {{axis={axis}, exclusive={b(exclusive)}, reverse={b(reverse)}}}", dt, x.shape)
    case(name, g, [r], [x], [np_scan(op, x, axis, exclusive, reverse).astype(DT[dt])])


SHAPES = {1: (5,), 2: (3, 4), 3: (2, 3, 4), 4: (2, 3, 2, 3)}
for op in ["cumsum", "cumprod"]:
    for dt in ["f32", "f64", "i32", "i64"]:
        for rank, shape in SHAPES.items():
            x = sample(dt, shape)
            for axis in range(rank):
                for exclusive, reverse in itertools.product([False, True], repeat=2):
                    tag = f"{'ex' if exclusive else 'in'}{'_rev' if reverse else ''}"
                    scan_case(f"{op}_{dt}_rank{rank}_axis{axis}_{tag}", op, dt, x, axis, exclusive, reverse)
        # an empty scanned axis, an empty other axis
        z = np.zeros((2, 0, 3), dtype=DT[dt])
        scan_case(f"{op}_{dt}_empty_axis", op, dt, z, 1, False, False)
        scan_case(f"{op}_{dt}_empty_other", op, dt, z, 2, True, True)
    # integers wrap
    for dt in ["i32", "i64"]:
        info = np.iinfo(DT[dt])
        w = np.array([[info.max, 1, 2, info.max], [info.min, -1, 5, 3]], dtype=DT[dt])
        scan_case(f"{op}_{dt}_wraps", op, dt, w, 1, False, False)
        scan_case(f"{op}_{dt}_wraps_rev", op, dt, w, 1, False, True)
    # NaN and infinities propagate
    for dt in ["f32", "f64"]:
        n = np.array([[1.0, math.nan, 2.0, 3.0], [math.inf, -1.0, -math.inf, 0.0], [0.0, math.inf, 2.0, -0.0]],
                     dtype=DT[dt])
        scan_case(f"{op}_{dt}_specials", op, dt, n, 1, False, False)
        scan_case(f"{op}_{dt}_specials_ex_rev", op, dt, n, 1, True, True)
        scan_case(f"{op}_{dt}_specials_axis0", op, dt, n, 0, False, True)


# ---------------------------------------------------------------- cumprod_grad
def cumprod_grad_ref(x, g, axis, exclusive, reverse):
    """dx_i = sum_j g_j * prod_{k in S_j, k != i} x_k where S_j is the index set of y_j (exact in
    float64, no division, then rounded to x's dtype)."""
    xm = np.moveaxis(x.astype(np.float64), axis, -1)
    gm = np.moveaxis(g.astype(np.float64), axis, -1)
    n = xm.shape[-1]
    dx = np.zeros_like(xm)
    for j in range(n):
        if reverse:
            s = range(j + 1, n) if exclusive else range(j, n)
        else:
            s = range(0, j) if exclusive else range(0, j + 1)
        for i in s:
            p = np.ones(xm.shape[:-1])
            for k in s:
                if k != i:
                    p = p * xm[..., k]
            dx[..., i] += gm[..., j] * p
    return np.moveaxis(dx, -1, axis).astype(x.dtype)


def grad_case(name, dt, x, gr, axis, exclusive, reverse):
    g = G()
    px = g.param("x", dt, x.shape)
    pg = g.param("g", dt, gr.shape)
    r = g.node(f"cumprod_grad {px}, {pg} {{axis={axis}, exclusive={b(exclusive)}, reverse={b(reverse)}}}",
               dt, x.shape)
    case(name, g, [r], [x, gr], [cumprod_grad_ref(x, gr, axis, exclusive, reverse)])


for dt in ["f32", "f64"]:
    base = rng.uniform(0.5, 1.5, (3, 5)).astype(DT[dt])
    base[1, 2] = 0.0                      # one zero in a lane
    base[2, 1] = 0.0                      # several zeros in a lane
    base[2, 3] = 0.0
    gr = rng.uniform(-1, 1, (3, 5)).astype(DT[dt])
    for exclusive, reverse in itertools.product([False, True], repeat=2):
        tag = f"{'ex' if exclusive else 'in'}{'_rev' if reverse else ''}"
        grad_case(f"cumprod_grad_{dt}_axis1_{tag}", dt, base, gr, 1, exclusive, reverse)
        grad_case(f"cumprod_grad_{dt}_axis0_{tag}", dt, base, gr, 0, exclusive, reverse)
    x3 = rng.uniform(-1.5, 1.5, (2, 3, 4)).astype(DT[dt])
    x3[0, 1, :2] = 0.0
    g3 = rng.uniform(-1, 1, (2, 3, 4)).astype(DT[dt])
    for axis in range(3):
        grad_case(f"cumprod_grad_{dt}_rank3_axis{axis}", dt, x3, g3, axis, False, False)


# ---------------------------------------------------------------- argmin
def argmin_case(name, dt, x, axis, keepdim, error=None):
    g = G()
    p = g.param("x", dt, x.shape)
    if error is None:
        e = np.argmin(x, axis=axis, keepdims=keepdim).astype(np.int64)
        oshape = e.shape
    else:
        e = None
        oshape = tuple(d for i, d in enumerate(x.shape) if i != axis)
    r = g.node(f"argmin {p} {{axis={axis}, keepdim={b(keepdim)}}}", "i64", oshape)
    case(name, g, [r], [x], None if e is None else [e], error)


for dt in ["f32", "f64", "i32", "i64"]:
    for rank, shape in SHAPES.items():
        x = sample(dt, shape)
        for axis in range(rank):
            argmin_case(f"argmin_{dt}_rank{rank}_axis{axis}", dt, x, axis, axis % 2 == 1)
    t = np.array([[1, 0, 0, 3], [2, 2, 2, 2], [5, -1, 1, -1]], dtype=DT[dt])
    for axis in [0, 1]:
        for keepdim in [False, True]:
            argmin_case(f"argmin_{dt}_ties_axis{axis}_{keepdim}", dt, t, axis, keepdim)
    argmin_case(f"argmin_{dt}_size0", dt, np.zeros((2, 0, 3), dtype=DT[dt]), 1, False,
                error="zero-size reduction")
for dt in ["f32", "f64"]:
    n = np.array([[1.0, math.nan, -3.0, math.nan], [-math.inf, 2.0, -math.inf, math.inf],
                  [math.nan, 0.0, math.nan, -0.0], [0.0, -0.0, 1.0, -0.0]], dtype=DT[dt])
    argmin_case(f"argmin_{dt}_nan", dt, n, 1, False)
    argmin_case(f"argmin_{dt}_nan_axis0", dt, n, 0, True)
bx = np.array([[True, False], [True, True]])
argmin_case("argmin_bool", "bool", bx, 1, False, error="is not defined for")

# ---------------------------------------------------------------- iota
for dt in ["i32", "i64", "f32", "f64"]:
    for rank, shape in SHAPES.items():
        for axis in range(rank):
            g = G()
            r = g.node(f"iota {{axis={axis}}}", dt, shape)
            idx = np.indices(shape)[axis].astype(DT[dt])
            case(f"iota_{dt}_rank{rank}_axis{axis}", g, [r], [], [idx])
    # copying an operand's shape (of another dtype)
    like = np.zeros((3, 4), dtype=np.bool_)
    g = G()
    p = g.param("x", "bool", like.shape)
    r = g.node(f"iota {p} {{axis=1}}", dt, like.shape)
    case(f"iota_{dt}_like", g, [r], [like], [np.indices(like.shape)[1].astype(DT[dt])])
g = G()
r = g.node("iota {axis=0}", "i64", (0,))
case("iota_empty", g, [r], [], [np.zeros(0, np.int64)])

with open("scan_cases.txt", "w") as fh:
    fh.write("# Generated by gen_scan_cases.py from NumPy " + np.__version__ + "; do not edit by hand.\n")
    fh.write("\n".join(out) + "\n")
print(len([l for l in out if l.startswith("===")]), "cases")
