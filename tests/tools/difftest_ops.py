"""The steps of `difftest_gen`'s random programs: one `op_*` method per kind of primitive.

Each method picks operands from the generator's pool (or new inputs that fit), and calls
`self.emit(source, numpy_fn, operands)`, or raises `Reject` when the operands sit near a
discontinuity of the op (see `difftest_gen`), so that the NumPy reference is stable.
"""

import math

import numpy as np

F32, F64, I32, I64, BOOL = (np.dtype(t) for t in ("float32", "float64", "int32", "int64", "bool"))
NAMES = {F32: "f32", F64: "f64", I32: "i32", I64: "i64", BOOL: "bool"}
NUMERIC = (F32, F64, I32, I64)
MARGIN = 1e-3
BIG = 1e4
ERF = np.vectorize(math.erf, otypes=[np.float64])


class Val:
    def __init__(self, name, arr):
        self.name, self.arr = name, arr

    @property
    def dt(self):
        return self.arr.dtype


class Reject(Exception):
    """The candidate step is unstable on these inputs; try another."""


def isfloat(dt):
    return dt in (F32, F64)


def rounded(dt, f):
    """f computed in f64 (floats) or natively (ints, bools), the result in dtype `dt`."""
    def g(*xs):
        if isfloat(dt):
            with np.errstate(all="ignore"):
                return np.asarray(f(*[np.asarray(x, dtype=F64) if isfloat(np.asarray(x).dtype) else x
                                      for x in xs])).astype(dt)
        return np.asarray(f(*xs)).astype(dt)
    return g


def apart(a, b):
    """All pairs of a and b (broadcast) at least MARGIN (relative) apart."""
    a, b = (np.asarray(v, dtype=F64) for v in np.broadcast_arrays(a, b))
    return bool(np.all(np.abs(a - b) > MARGIN * (1 + np.abs(a) + np.abs(b))))


def far_from(x, points_fn):
    """All of x at least MARGIN (relative) away from the discontinuities points_fn(x)."""
    x = np.asarray(x, dtype=F64)
    return bool(np.all(np.abs(x - points_fn(x)) > MARGIN * (1 + np.abs(x))))


UNARY_F = {
    "neg": np.negative, "abs": np.abs, "exp": np.exp, "tanh": np.tanh, "sin": np.sin, "cos": np.cos,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "erf": ERF, "expm1": np.expm1,
    "floor": np.floor, "ceil": np.ceil, "round": np.round, "sign": np.sign,
    # domain-restricted: applied to `abs(x) + 0.5`
    "log": np.log, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "reciprocal": lambda x: 1 / x,
    "log1p": np.log1p,
}
POSITIVE_ONLY = {"log", "sqrt", "rsqrt", "reciprocal", "log1p"}
GUARDS = {
    "floor": lambda x: np.round(x), "ceil": lambda x: np.round(x),
    "round": lambda x: np.floor(x) + 0.5, "sign": lambda x: 0 * x,
}
BINARY = {
    "add": ("+", np.add), "sub": ("-", np.subtract), "mul": ("*", np.multiply),
    "div": ("/", np.divide), "pow": ("**", np.power),
    "maximum": (None, np.maximum), "minimum": (None, np.minimum),
}
CMP = {"eq": ("==", np.equal), "ne": ("!=", np.not_equal), "lt": ("<", np.less),
       "le": ("<=", np.less_equal), "gt": (">", np.greater), "ge": (">=", np.greater_equal)}



class Done(Exception):
    """The step just emitted must fail (e.g. `max` over an empty axis): the program ends there."""


def _lead(a, axes):
    keep = [i for i in range(a.ndim) if i not in axes]
    return tuple(a.shape[i] for i in keep) + (-1,)


def bcast_ok(a, b):
    for x, y in zip(reversed(a), reversed(b)):
        if x != y and x != 1 and y != 1:
            return False
    return True


class Ops:
    """Mixin of `difftest_gen.Gen`: needs `rng`, `vjp`, `p`, `pick`, `partner`, `new_input`,
    `literal` and `emit`."""

    def op_unary(self):
        x = self.pick(lambda v: v.dt != BOOL) or self.pick()
        if x.dt == BOOL:
            return self.emit(f"logical_not({x.name})", np.logical_not, [x])
        if not isfloat(x.dt):
            op = ["neg", "abs", "sign"][int(self.rng.integers(3))]
            f = {"neg": np.negative, "abs": np.abs, "sign": np.sign}[op]
            return self.emit(f"{op}({x.name})", lambda a: f(a).astype(a.dtype), [x])
        names = list(UNARY_F)
        op = names[int(self.rng.integers(len(names)))]
        f = UNARY_F[op]
        dt = x.dt
        if op in GUARDS and not far_from(x.arr, GUARDS[op]):
            raise Reject()
        if self.vjp and op == "abs" and not far_from(x.arr, lambda a: 0 * a):
            raise Reject()
        if op in POSITIVE_ONLY:
            inner = rounded(dt, lambda a: np.abs(a) + 0.5)
            return self.emit(f"{op}(abs({x.name}) + 0.5)", lambda a: rounded(dt, f)(inner(a)), [x])
        if op == "neg" and self.rng.random() < 0.5:
            return self.emit(f"-{x.name}", rounded(dt, f), [x])
        return self.emit(f"{op}({x.name})", rounded(dt, f), [x])

    def op_binary(self):
        x = self.pick(lambda v: v.dt in NUMERIC)
        b = self.pick(lambda v: v.dt == BOOL)
        if b is not None and (x is None or self.rng.random() < 0.3):
            y = self.partner(b)
            op = ["logical_and", "logical_or", "eq", "ne"][int(self.rng.integers(4))]
            f = {"logical_and": np.logical_and, "logical_or": np.logical_or, "eq": np.equal,
                 "ne": np.not_equal}[op]
            return self.emit(f"{op}({b.name}, {y.name})", f, [b, y])
        if x is None:
            raise Reject()
        ops = ["add", "sub", "mul", "maximum", "minimum"] + (["div", "pow"] if isfloat(x.dt) else [])
        op = ops[int(self.rng.integers(len(ops)))]
        y = self.partner(x)
        sym, f = BINARY[op]
        dt = x.dt
        if self.rng.random() < 0.5:
            x, y = y, x
        if op in ("maximum", "minimum") and isfloat(dt) and not apart(x.arr, y.arr):
            raise Reject()
        if op == "div" and not np.all(np.abs(y.arr) > 0.1):
            raise Reject()
        if op == "pow":
            base = rounded(dt, lambda a: np.abs(a) + 0.5)
            return self.emit(f"pow(abs({x.name}) + 0.5, {y.name})",
                             lambda a, b: rounded(dt, f)(base(a), b), [x, y])
        src = f"{x.name} {sym} {y.name}" if sym and self.rng.random() < 0.6 else f"{op}({x.name}, {y.name})"
        return self.emit(src, rounded(dt, f), [x, y])

    def op_scalar(self):
        x = self.pick(lambda v: v.dt in NUMERIC)
        if x is None:
            raise Reject()
        dt = x.dt
        c = self.literal(dt)
        if isfloat(dt) and self.rng.random() < 0.2:
            c = int(c)  # an integer literal takes the float tensor's dtype
        op = ["+", "-", "*", "/", "**"][int(self.rng.integers(5 if isfloat(dt) else 3))]
        cs = repr(c) if isfloat(dt) else str(c)
        cs = f"({cs})" if c < 0 else cs
        if op == "**":
            c = abs(c)
            cs = repr(c)
            return self.emit(f"(abs({x.name}) + 0.5) ** {cs}",
                             rounded(dt, lambda a: (np.abs(a.astype(dt)).astype(F64) + 0.5).astype(dt).astype(F64) ** c), [x])
        f = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}[op]
        if self.rng.random() < 0.5:
            return self.emit(f"{x.name} {op} {cs}", rounded(dt, lambda a: f(a, c)), [x])
        if op == "/":
            if not np.all(np.abs(x.arr) > 0.1):
                raise Reject()
        return self.emit(f"{cs} {op} {x.name}", rounded(dt, lambda a: f(c, a)), [x])

    def op_cmp_where(self):
        x = self.pick(lambda v: v.dt in NUMERIC)
        if x is None:
            raise Reject()
        y = self.partner(x)
        if isfloat(x.dt) and not apart(x.arr, y.arr):
            raise Reject()
        op = list(CMP)[int(self.rng.integers(len(CMP)))]
        sym, f = CMP[op]
        src = f"{x.name} {sym} {y.name}" if self.rng.random() < 0.5 else f"{op}({x.name}, {y.name})"
        c = self.emit(src, f, [x, y])
        if self.rng.random() < 0.3:
            return c
        a = self.pick(lambda v: v.dt != BOOL and bcast_ok(v.arr.shape, c.arr.shape)) or x
        b = self.partner(a)
        return self.emit(f"where({c.name}, {a.name}, {b.name})", lambda c_, a_, b_: np.where(c_, a_, b_), [c, a, b])

    def op_cast(self):
        x = self.pick()
        to = [F32, F64, I32, I64, BOOL][int(self.rng.integers(5))]
        if isfloat(x.dt) and to in (I32, I64) and not far_from(x.arr, np.trunc):
            raise Reject()
        if isfloat(x.dt) and to == BOOL and not far_from(x.arr, lambda a: 0 * a):
            raise Reject()
        return self.emit(f"cast({x.name}, {NAMES[to]})", lambda a: a.astype(to), [x])

    def op_reduce(self):
        r = self.rng
        x = self.pick(lambda v: v.dt in NUMERIC)
        if x is None:
            raise Reject()
        shape = x.arr.shape
        rank = len(shape)
        ops = ["sum", "prod", "max", "min", "argmax"] + (["mean"] if isfloat(x.dt) else [])
        op = ops[int(r.integers(len(ops)))]
        keep = bool(r.random() < 0.5)
        kd = ", keepdim=true" if keep else (", keepdim=false" if r.random() < 0.2 else "")
        if op == "argmax":
            if rank == 0:
                raise Reject()
            d = int(r.integers(-rank, rank))
            if shape[d] == 0 or x.arr.size == 0:
                raise Reject()
            if isfloat(x.dt):
                srt = np.sort(x.arr.astype(F64), axis=d)
                if shape[d] > 1 and not np.all(np.abs(np.diff(srt, axis=d)).take(-1, axis=d) > MARGIN):
                    raise Reject()
            return self.emit(f"argmax({x.name}, dim={d}{kd})",
                             lambda a: np.argmax(a, axis=d, keepdims=keep).astype(I64), [x])
        dims = sorted(int(i) for i in np.flatnonzero(r.random(rank) < 0.5))
        axes = tuple(dims) if dims else tuple(range(rank))
        spell = [d - rank if r.random() < 0.3 else d for d in dims]
        ds = f"dims=[{', '.join(map(str, spell))}]" if dims or r.random() < 0.5 else None
        args = ", ".join(a for a in [x.name, ds] if a) + kd
        if op in ("max", "min") and x.arr.size > 0 and isfloat(x.dt) and self.vjp:
            groups = np.sort(np.moveaxis(x.arr, axes, range(rank - len(axes), rank)).reshape(_lead(x.arr, axes)))
            if groups.shape[-1] > 1 and not (np.all(groups[..., -1] - groups[..., -2] > MARGIN)
                                             and np.all(groups[..., 1] - groups[..., 0] > MARGIN)):
                raise Reject()
        if op in ("max", "min") and any(shape[a] == 0 for a in axes):
            out_size = int(np.prod([s for i, s in enumerate(shape) if i not in axes]))
            if out_size == 0:
                raise Reject()
            self.p.expect_error = f"{op} over an empty axis"
            self.p.steps.append((f"t{len(self.p.steps)}", f"{op}({args})", lambda env: None))
            raise Done()
        if op == "mean":
            if any(shape[a] == 0 for a in axes):
                raise Reject()
            f = rounded(x.dt, lambda a: np.mean(a, axis=axes, keepdims=keep))
        elif isfloat(x.dt):
            nf = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}[op]
            f = rounded(x.dt, lambda a: nf(a, axis=axes, keepdims=keep))
        else:
            nf = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}[op]
            f = lambda a: np.asarray(nf(a, axis=axes, keepdims=keep, dtype=a.dtype) if op in ("sum", "prod")
                                     else nf(a, axis=axes, keepdims=keep)).astype(a.dtype)
        return self.emit(f"{op}({args})", f, [x])

    def op_matmul(self):
        r = self.rng
        x = self.pick(lambda v: v.dt in NUMERIC and 1 <= v.arr.ndim <= 3)
        if x is None:
            x = self.new_input(self.pick(lambda v: v.dt in NUMERIC).dt if self.pick(lambda v: v.dt in NUMERIC) else F32,
                               self.rand_shape(int(r.integers(1, 4))))
        s = list(x.arr.shape)
        k = s[-1]
        n = int(r.choice([1, 2, 3]))
        if len(s) == 1:
            bshape = [[k], [k, n], [2, k, n]][int(r.integers(3))]
        else:
            batch = s[:-2]
            bb = [1 if r.random() < 0.3 else d for d in batch]
            bshape = ([k] if r.random() < 0.2 else bb + [k, n])
            if r.random() < 0.2 and len(bshape) == 2 and len(s) == 2:
                bshape = [2, k, n]
        y = self.new_input(x.dt, bshape)
        if x.dt in (I32, I64):
            f = lambda a, b: np.matmul(a, b).astype(a.dtype)
        else:
            f = rounded(x.dt, np.matmul)
        return self.emit(f"matmul({x.name}, {y.name})", f, [x, y])

    def op_reshape(self):
        r = self.rng
        x = self.pick()
        n = x.arr.size
        dims = []
        if n == 0:
            dims = [int(r.choice([0, 1, 2, 3])) for _ in range(int(r.integers(1, 4)))]
            dims[int(r.integers(len(dims)))] = 0
        else:
            m = n
            while m > 1 and len(dims) < 3:
                f = [d for d in range(1, m + 1) if m % d == 0]
                d = int(r.choice(f))
                dims.append(d)
                m //= d
            dims.append(m)
            if r.random() < 0.3:
                dims.insert(int(r.integers(len(dims) + 1)), 1)
            r.shuffle(dims)
            if r.random() < 0.5:
                dims = [d for d in dims if d != 1] if r.random() < 0.5 else dims
            spell = list(dims)
            if spell and r.random() < 0.4:
                spell[int(r.integers(len(spell)))] = -1
            return self.emit(f"reshape({x.name}, [{', '.join(map(str, spell))}])",
                             lambda a: a.reshape(dims), [x])
        return self.emit(f"reshape({x.name}, [{', '.join(map(str, dims))}])", lambda a: a.reshape(dims), [x])

    def op_transpose(self):
        r = self.rng
        x = self.pick(lambda v: v.arr.ndim >= 1)
        if x is None:
            raise Reject()
        rank = x.arr.ndim
        c = r.random()
        if c < 0.4 and rank >= 2:
            i, j = (int(v) for v in r.integers(-rank, rank, size=2))
            perm = list(range(rank))
            perm[i % rank], perm[j % rank] = perm[j % rank], perm[i % rank]
            return self.emit(f"transpose({x.name}, {i}, {j})", lambda a: np.transpose(a, perm), [x])
        if c < 0.5:
            return self.emit(f"transpose({x.name})", lambda a: np.transpose(a), [x])
        perm = [int(p) for p in r.permutation(rank)]
        return self.emit(f"transpose({x.name}, [{', '.join(map(str, perm))}])",
                         lambda a: np.transpose(a, perm), [x])

    def op_unsqueeze(self):
        x = self.pick(lambda v: v.arr.ndim < 4)
        if x is None:
            raise Reject()
        d = int(self.rng.integers(-x.arr.ndim - 1, x.arr.ndim + 1))
        return self.emit(f"unsqueeze({x.name}, {d})", lambda a: np.expand_dims(a, d), [x])

    def op_squeeze(self):
        x = self.pick(lambda v: 1 in v.arr.shape)
        if x is None:
            raise Reject()
        ones = [i for i, s in enumerate(x.arr.shape) if s == 1]
        rank = x.arr.ndim
        if self.rng.random() < 0.25:  # every axis of size 1, as NumPy
            return self.emit(f"squeeze({x.name})", lambda a: np.squeeze(a), [x])
        dims = sorted(i for i in ones if self.rng.random() < 0.6) or ones[:1]
        spell = [d - rank if self.rng.random() < 0.3 else d for d in dims]
        return self.emit(f"squeeze({x.name}, dims=[{', '.join(map(str, spell))}])",
                         lambda a: np.squeeze(a, axis=tuple(dims)), [x])

    def op_concat(self):
        r = self.rng
        x = self.pick(lambda v: v.arr.ndim >= 1)
        if x is None:
            raise Reject()
        rank = x.arr.ndim
        d = int(r.integers(-rank, rank))
        parts = [x]
        for _ in range(int(r.integers(1, 3))):
            if r.random() < 0.3:
                parts.append(x)
            else:
                shape = list(x.arr.shape)
                shape[d] = int(r.choice([0, 1, 2, 3]))
                parts.append(self.new_input(x.dt, shape))
        r.shuffle(parts)
        names = ", ".join(p.name for p in parts)
        spell = f", dim={d}" if d != 0 or r.random() < 0.5 else ""
        return self.emit(f"concat([{names}]{spell})", lambda *a: np.concatenate(a, axis=d), parts)

    def op_slice(self):
        r = self.rng
        x = self.pick(lambda v: v.arr.ndim >= 1)
        if x is None:
            raise Reject()
        rank = x.arr.ndim
        d = int(r.integers(-rank, rank))
        n = x.arr.shape[d]
        step = int(r.choice([1, 1, 2, 3, -1, -1, -2]))
        start = int(r.integers(-n - 2, n + 3)) if r.random() < 0.8 else None
        end = int(r.integers(-n - 2, n + 3)) if r.random() < 0.6 else None
        if step < 0 and start is None:
            start = -1
        parts = [x.name, f"dim={d}"]
        if start is not None:
            parts.append(f"start={start}")
        if end is not None:
            parts.append(f"end={end}")
        if step != 1 or r.random() < 0.2:
            parts.append(f"step={step}")
        st = 0 if start is None else start
        sl = [slice(None)] * rank
        sl[d] = slice(st, end, step)
        sl = tuple(sl)
        return self.emit(f"slice({', '.join(parts)})", lambda a: a[sl], [x])

    def op_bcast(self):
        r = self.rng
        x = self.pick(lambda v: v.arr.ndim < 4)
        if x is None:
            raise Reject()
        shape = [int(r.choice([2, 3])) if s == 1 and r.random() < 0.6 else s for s in x.arr.shape]
        if r.random() < 0.5 and len(shape) < 4:
            shape = [int(r.choice([1, 2, 3]))] + shape
        return self.emit(f"broadcast_to({x.name}, [{', '.join(map(str, shape))}])",
                         lambda a: np.broadcast_to(a, shape).copy(), [x])

    def op_like(self):
        x = self.pick()
        c = int(self.rng.integers(3))
        if c == 0:
            return self.emit(f"zeros_like({x.name})", lambda a: np.zeros_like(a), [x])
        if c == 1:
            return self.emit(f"ones_like({x.name})", lambda a: np.ones_like(a), [x])
        if x.dt == BOOL:
            raise Reject()
        v = self.literal(x.dt)
        return self.emit(f"full_like({x.name}, {v!r})", lambda a: np.full_like(a, v), [x])


    def op_full(self):
        """A value meets a constant of static shape: runtime sizes unify with static ones."""
        x = self.pick(lambda v: v.dt in NUMERIC)
        if x is None:
            raise Reject()
        r = self.rng
        shape = [1 if r.random() < 0.2 else s for s in x.arr.shape]
        if r.random() < 0.3 and len(shape) < 4:
            shape = [int(r.choice([1, 2]))] + shape
        c = self.literal(x.dt)
        dt = x.dt
        sh = ", ".join(map(str, shape))
        lit = repr(c) if isfloat(dt) else str(c)
        f = rounded(dt, lambda a: a * np.full(shape, c, dtype=dt))
        return self.emit(f"{x.name} * full([{sh}], {lit}, dtype={NAMES[dt]})", f, [x])


