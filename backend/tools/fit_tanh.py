"""Fits the f32 `tanh` rational used by `backend/src/math/tanh.rs` and checks it bit for bit.

Form (see `tanh.rs`): with `x` clamped to `±CLAMP`, `t = x²`,

    A = x·P(t) = fma(x·t, P'(t), x)      P(t) = 1 + p1·t + p2·t²        (P' = p1 + p2·t)
    Q = Q(t)                             Q(t) = 2 + q1·t + q2·t² + q3·t³
    s = A/Q ≈ tanh(x/2)                  (never formed)
    y = 2s/(1 + s²) = A · ((Q + Q) / fma(Q, Q, A·A)) = tanh(x)

The half-angle step is what makes this accurate with so few operations: an error `δ` in `s`
(fit error or rounding in the `P`/`Q` Horner chains) moves `y` by only `δ·sech(x)`, so near
saturation, where `y ≈ 1` has the finest relative ULP, the chains hardly matter and only the last
few operations count. (A plain `x·P4(t)/Q4(t)` of the same cost, also tried, is 5–6 ULP at
`x ∈ [6, 9]` from the rounding in its long Horner chains; `y = 2AQ/(Q² + A²)` as one quotient
instead of `A·(2Q/…)` has 179 inputs at 4 ULP instead of 7.) The fit therefore minimises the
*weighted* relative error `|s̃/s − 1|·sech(x)` on `[0, FIT_END]`: Lawson's iteratively reweighted
least squares on the linearised problem `P − g·Q` (`g = tanh(x/2)/x`), with `P(0) = 1`,
`Q(0) = 2` fixed so that tiny and denormal `x` give `y = x` exactly. The coefficients are then
rounded to f32 one at a time, lowest degree first, refitting the remaining ones after each.
Degrees (2, 3) are the smallest that fit: (2, 2) and (1, 3) leave weighted errors of 3.7 and
7.9 u (`u = 2⁻²⁴`), (2, 3) 0.12 u and (3, 2) 0.23 u.

Finally every f32 input in `[2⁻¹⁴, 9.5]` (below that `y = x·(1 + O(x²))` is exact or within
1 ULP; above, the clamp makes the output constant) is evaluated exactly as the JIT does —
f32 `fma` emulated through f64 (a product of two f32 is exact in f64; the sum's double rounding
is off by at most 1 ULP in rare ties, which does not matter here), and with `fma` split into
`mul` + `add` for ISAs without it — and compared with the correctly rounded `tanh` (`np.tanh`
in f64, rounded to f32). The authoritative check is `tests/math_accuracy.rs` with
`TFN_MATH_STRIDE=1`, which runs the real JIT code over all 2³² inputs (it agreed: 4 ULP at
x = 0.125174 with fma, 4 ULP at x = 0.0600124 without).

Rerun (about 20 s for the fit and 2 min for the check on 2 cores; numpy only):

    /path/to/python backend/tools/fit_tanh.py [--no-check]

It printed (2026-11-21):

    fit (2, 3) on [0, 9.02]: weighted rel err 7.41e-09 (0.124 u), after f32 rounding 7.69e-09
    P  = ['1.0', '0.02977743372321129', '0.00011432909377617761']
    Q  = ['2.0', '0.2262214720249176', '0.00241384981200099', '2.460999439790612e-06']
    y(CLAMP) with fma: 1.0, without: 1.0
    fma    max 4 ULP at x = 0.125174  histogram {0: 80285940, 1: 58901045, 2: 4959176, 3: 33032, 4: 7}  outputs > 1: 1
    no fma max 4 ULP at x = 0.0600124  histogram {0: 76981080, 1: 60113667, 2: 6913164, 3: 169905, 4: 1384}  outputs > 1: 1281

The 4-ULP cases sit at `x` just above a power of two, where `y` is just below one: `A`, `Q` and
the denominator all have mantissas near 1 (relative rounding up to `u`) while the result has a
mantissa near 2 (its ULP is `u` relative), so each rounding costs up to a full ULP. "outputs > 1"
are `1 + 2⁻²³` for inputs whose correctly rounded result is 1 or `1 − 2⁻²⁴`.
"""

import sys

import numpy as np

f32 = np.float32

FIT_END = 9.02  # the fit interval is [0, FIT_END]
CLAMP = 9.05  # tanh(x) rounds to 1 in f32 for x > 9.0109; y(CLAMP) evaluates to exactly 1
P_DEGREE, Q_DEGREE = 2, 3
P0, Q0 = 1.0, 2.0


def half_target(x):
    """g(x) = tanh(x/2)/x (1/2 at 0): the function P/Q approximates."""
    out = np.full_like(x, 0.5)
    nz = x != 0
    out[nz] = np.tanh(x[nz] / 2) / x[nz]
    return out


def lawson(p, q, c, fixed=None, iters=300, npts=4000):
    """Weighted minimax fit of g ≈ P(t)/Q(t), t = x², on [0, c] with P(0) = P0, Q(0) = Q0.

    Error measure: |P/(Q·g) − 1|·sech(x). `fixed` maps an index into the unknowns
    [p1..pp, q1..qq] (coefficients of t^j) to a value held fixed. Returns (max error, P, Q).
    """
    fixed = fixed or {}
    k = np.arange(npts)
    x = np.sort(np.concatenate([c * np.sin(np.pi / 2 * (k + 0.5) / npts), np.linspace(0, c, npts)]))
    big_t = c * c
    s = (x / c) ** 2  # scaled variable for conditioning
    g = half_target(x)
    weight = 1 / np.cosh(x)
    a = np.hstack([s[:, None] ** np.arange(1, p + 1), -g[:, None] * s[:, None] ** np.arange(1, q + 1)])
    rhs = g * Q0 - P0
    scale = np.concatenate([big_t ** np.arange(1, p + 1), big_t ** np.arange(1, q + 1)])
    fidx = sorted(fixed)
    free = [i for i in range(p + q) if i not in fixed]
    fvals = np.array([fixed[i] * scale[i] for i in fidx])
    w = np.ones_like(x)
    q_prev = np.ones_like(x)
    best = None
    for _ in range(iters):
        row_w = np.sqrt(w) * weight / (g * q_prev)
        r = rhs - (a[:, fidx] @ fvals if fidx else 0)
        sol, *_ = np.linalg.lstsq(a[:, free] * row_w[:, None], r * row_w, rcond=None)
        coef = np.zeros(p + q)
        coef[free] = sol
        if fidx:
            coef[fidx] = fvals
        pv = P0 + (s[:, None] ** np.arange(1, p + 1)) @ coef[:p]
        qv = Q0 + (s[:, None] ** np.arange(1, q + 1)) @ coef[p:]
        e = (pv / qv / g - 1) * weight
        m = np.max(np.abs(e))
        if best is None or m < best[0]:
            best = (m, coef / scale)
        q_prev = qv
        w = np.maximum(w * np.abs(e) / np.sum(w * np.abs(e)), 1e-30)
    m, ct = best
    return m, np.concatenate([[P0], ct[:p]]), np.concatenate([[Q0], ct[p:]])


def fit_and_round(p, q, c):
    m, pc, qc = lawson(p, q, c)
    print(f"fit ({p}, {q}) on [0, {c}]: weighted rel err {m:.3g} ({m / 2**-24:.3f} u)", end="")
    coef = np.concatenate([pc[1:], qc[1:]])
    order = [i for j in range(max(p, q)) for i in ((j,) if j < p else ()) + ((p + j,) if j < q else ())]
    fixed = {}
    for i in order:
        fixed[i] = float(f32(coef[i]))
        if len(fixed) < p + q:
            m, pc, qc = lawson(p, q, c, fixed=fixed, iters=100)
            coef = np.concatenate([pc[1:], qc[1:]])
    print(f", after f32 rounding {m:.3g}")
    return [float(f32(v)) for v in pc], [float(f32(v)) for v in qc]


def madd(a, b, c, fma):
    """f32 `a·b + c`: one rounding (emulated exactly through f64) or two."""
    if fma:
        return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(f32)
    return ((a * b).astype(f32) + c).astype(f32)


def horner(t, coeffs, fma):
    acc = np.full_like(t, f32(coeffs[-1]))
    for k in coeffs[-2::-1]:
        acc = madd(acc, t, np.full_like(t, f32(k)), fma)
    return acc


def tanh_f32(x, pc, qc, fma):
    """The JIT's instruction sequence, operation for operation."""
    x = x.astype(f32)
    xc = np.minimum(np.maximum(x, f32(-CLAMP)), f32(CLAMP))
    t = (xc * xc).astype(f32)
    xt = (xc * t).astype(f32)
    a = madd(xt, horner(t, pc[1:], fma), xc, fma)
    q = horner(t, qc, fma)
    den = madd(q, q, (a * a).astype(f32), fma)
    r = ((q + q).astype(f32) / den).astype(f32)
    return (a * r).astype(f32)


def ordered(v):
    b = v.view(np.int32).astype(np.int64)
    return np.where(b < 0, -(b & 0x7FFFFFFF), b)


def check(pc, qc, fma, lo=2.0**-14, hi=9.5, chunk=1 << 22):
    lo_bits = int(np.array([lo], dtype=f32).view(np.uint32)[0])
    hi_bits = int(np.array([hi], dtype=f32).view(np.uint32)[0])
    worst, at, above_one, hist = 0, 0.0, 0, {}
    for b0 in range(lo_bits, hi_bits, chunk):
        x = np.arange(b0, min(b0 + chunk, hi_bits), dtype=np.uint32).view(f32)
        y = tanh_f32(x, pc, qc, fma)
        want = np.tanh(x.astype(np.float64)).astype(f32)
        e = np.abs(ordered(y) - ordered(want))
        above_one += int(np.sum(y > 1))
        for v, n in zip(*np.unique(e, return_counts=True)):
            hist[int(v)] = hist.get(int(v), 0) + int(n)
        i = int(np.argmax(e))
        if e[i] > worst:
            worst, at = int(e[i]), float(x[i])
    return worst, at, hist, above_one


def main():
    pc, qc = fit_and_round(P_DEGREE, Q_DEGREE, FIT_END)
    print("P  =", [repr(v) for v in pc])
    print("Q  =", [repr(v) for v in qc])
    ends = [float(tanh_f32(np.array([CLAMP], dtype=f32), pc, qc, fma)[0]) for fma in (True, False)]
    print(f"y(CLAMP) with fma: {ends[0]}, without: {ends[1]}")
    if "--no-check" in sys.argv:
        return
    for fma in (True, False):
        worst, at, hist, above_one = check(pc, qc, fma)
        label = "fma   " if fma else "no fma"
        print(f"{label} max {worst} ULP at x = {at:.6g}  histogram {hist}  outputs > 1: {above_one}",
              flush=True)


if __name__ == "__main__":
    main()
