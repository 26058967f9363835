"""Random `.tfn` programs and their NumPy meaning, for `difftest.py`.

`generate(rng)` returns a `Program`: the source of `fn f(...)`, its inputs, and a NumPy
evaluator (`Program.evaluate`) that replays the same steps on any inputs (finite differences
need that). Values of dtype f32 are computed in f64 and rounded to f32 after each op. Guards
reject a step whose operands sit near a discontinuity (floor, round, sign, comparisons, casts
to integers, ties of max/min/argmax) or whose result is huge, so the reference is stable under
the last-ulp differences of transcendental functions and under finite-difference steps.
"""

import numpy as np

from difftest_ops import BIG, BOOL, F32, F64, I32, I64, Done, Ops, Reject, Val, bcast_ok, isfloat


class Program:
    def __init__(self):
        self.params = []      # (name, array)
        self.steps = []       # (name, src, fn(env) -> array)
        self.outputs_names = []
        self.expect_error = None
        self.scale = 1.0
        self.differentiable = True
        self.has_f32 = False  # any f32 value: f64 results are then only f32-accurate

    @property
    def inputs(self):
        return self.params

    def evaluate(self, xs):
        env = {name: x for (name, _), x in zip(self.params, xs)}
        for name, _, fn in self.steps:
            env[name] = fn(env)
        return [env[n] for n in self.outputs_names]

    @property
    def outputs(self):
        return self.evaluate([a for _, a in self.params])

    @property
    def source(self):
        params = ", ".join(f"Tensor {n}" for n, _ in self.params)
        rets = ", ".join("Tensor" for _ in self.outputs_names)
        rets = rets if len(self.outputs_names) == 1 else f"({rets})"
        body = "".join(f"    let {n} = {src}\n" for n, src, _ in self.steps)
        outs = ", ".join(self.outputs_names)
        outs = outs if len(self.outputs_names) == 1 else f"({outs})"
        return f"fn f({params}) -> {rets} {{\n{body}    return {outs}\n}}\n"


class Gen(Ops):
    def __init__(self, rng, vjp):
        self.rng, self.vjp = rng, vjp
        self.p = Program()
        self.pool = []

    # ---- inputs --------------------------------------------------------------------------
    def rand_shape(self, rank=None):
        r = self.rng
        rank = int(r.integers(0, 5)) if rank is None else rank
        sizes = [1, 1, 2, 2, 3, 3, 4] if not self.vjp else [1, 2, 2, 3]
        shape = [int(r.choice(sizes)) for _ in range(rank)]
        if rank and not self.vjp and r.random() < 0.1:  # vector tails, threads
            shape[int(r.integers(rank))] = int(r.choice([5, 17, 33, 67]))
        if rank and not self.vjp and r.random() < 0.1:
            shape[int(r.integers(rank))] = 0
        return shape

    def rand_array(self, dt, shape):
        r = self.rng
        if isfloat(dt):
            return (r.standard_normal(shape) * r.choice([1.0, 3.0])).astype(dt)
        if dt == BOOL:
            return r.random(shape) < 0.5
        if r.random() < 0.1:  # wrapping arithmetic near the limits
            info = np.iinfo(dt)
            return r.integers(info.max - 3, info.max, size=shape, endpoint=True).astype(dt)
        return r.integers(-5, 6, size=shape).astype(dt)

    def new_input(self, dt, shape):
        name = f"x{len(self.p.params)}"
        arr = np.asarray(self.rand_array(dt, shape))
        self.p.params.append((name, arr))
        v = Val(name, arr)
        self.pool.append(v)
        return v

    # ---- steps ----------------------------------------------------------------------------
    def emit(self, src, fn, deps):
        """Adds `let tN = src`; fn takes the dep arrays. Checks the result on the current inputs."""
        name = f"t{len(self.p.steps)}"
        names = [d.name for d in deps]
        try:
            arr = fn(*[d.arr for d in deps])
        except ValueError:  # e.g. `where` operands that do not broadcast together
            raise Reject() from None
        if arr.dtype == F32 or any(d.dt == F32 for d in deps):
            self.p.has_f32 = True
        if isfloat(arr.dtype):
            finite = arr[np.isfinite(arr)]
            if finite.size != arr.size or (finite.size and np.abs(finite).max() > BIG):
                raise Reject()
            if arr.size:
                self.p.scale = max(self.p.scale, float(np.abs(arr).max()))
        self.p.steps.append((name, src, lambda env, fn=fn, names=names: fn(*[env[n] for n in names])))
        v = Val(name, arr)
        self.pool.append(v)
        return v

    def pick(self, pred=lambda v: True):
        cands = [v for v in self.pool if pred(v)]
        if not cands:
            return None
        if self.rng.random() < 0.5:  # mostly chain on the latest values
            return cands[-1]
        return cands[int(self.rng.integers(len(cands)))]

    def partner(self, x, dt=None):
        """A value broadcastable with x (same dtype): from the pool, or a new input."""
        r = self.rng
        dt = dt or x.dt
        fit = [v for v in self.pool if v.dt == dt and v is not x and bcast_ok(v.arr.shape, x.arr.shape)]
        if fit and r.random() < 0.4:
            return fit[int(r.integers(len(fit)))]
        shape = list(x.arr.shape)
        k = int(r.integers(0, len(shape) + 1))
        shape = shape[k:] if r.random() < 0.5 else shape
        shape = [1 if r.random() < 0.3 else s for s in shape]
        if r.random() < 0.2 and len(x.arr.shape) <= len(shape) < 4:
            shape = [int(r.choice([1, 2]))] + shape
        return self.new_input(dt, shape)

    def literal(self, dt):
        r = self.rng
        if isfloat(dt):
            return float(r.choice([0.5, 1.5, -2.0, 3.0, 0.25]))
        return int(r.choice([1, 2, -3, 7]))

    def step(self):
        r = self.rng
        kinds = ["unary", "binary", "binary", "scalar", "cmp_where", "cast", "reduce", "matmul",
                 "reshape", "transpose", "unsqueeze", "squeeze", "concat", "slice", "bcast", "like", "full"]
        if self.vjp:
            kinds.remove("cast")
        kind = kinds[int(r.integers(len(kinds)))]
        return getattr(self, "op_" + kind)()


def generate(rng, vjp=False, max_steps=7):
    g = Gen(rng, vjp)
    dt = F64 if vjp else [F32, F32, F64, I32, I64, BOOL][int(rng.integers(6))]
    g.new_input(dt, g.rand_shape())
    nsteps = int(rng.integers(2, max_steps + 1))
    tries = 0
    while len(g.p.steps) < nsteps and tries < 200:
        tries += 1
        try:
            g.step()
        except Reject:
            # a rejected step may have added inputs; that is harmless (unused parameters)
            continue
        except Done:
            g.p.outputs_names = [g.p.steps[-1][0]]
            return g.p
    if not g.p.steps:
        return None
    last = g.p.steps[-1][0]
    outs = [last]
    if not vjp and len(g.p.steps) > 1 and rng.random() < 0.25:
        outs.insert(0, g.p.steps[int(rng.integers(len(g.p.steps) - 1))][0])
    if not vjp and rng.random() < 0.1:
        outs.append(outs[-1] if rng.random() < 0.5 else g.p.params[0][0])
    g.p.outputs_names = outs
    if vjp:
        g.p.differentiable = all(a.dtype == F64 for _, a in g.p.params) and \
            g.p.outputs[0].dtype == F64
    return g.p
