//! `tanh` and `sigmoid`.
//!
//! `tanh`: on `a = |x|` (clamped to 22, where `tanh` rounds to 1 in both precisions),
//! `tanh a = m/(m + 2)` with `m = expm1(2a)`. One formula for the whole range, accurate near 0
//! because `expm1` is, with no small-argument branch: `m = 2ⁿ·expm1(r) + (2ⁿ − 1)` after the
//! usual `ln2` reduction, `expm1(r)` being the same polynomial `exp` uses. This is the hot path
//! of `gelu`, hence the single division and no selects beyond the clamp. The sign of `x` is
//! copied onto the result (so `tanh(−0) = −0`, NaN stays NaN).
//!
//! `sigmoid`: with `e = e^{−|x|}` (never overflows), `σ(x) = 1/(1 + e)` for `x ≥ 0` and
//! `e/(1 + e)` for `x < 0`, which keeps full relative accuracy (down to denormals) for very
//! negative `x`.

use cranelift::codegen::ir::Value;

use super::exp::{exp, expm1_poly, reduce_ln2};
use super::ops::{Ctx, FloatCC};

/// Hyperbolic tangent.
pub(crate) fn tanh(cx: &mut Ctx, x: Value) -> Value {
    let a = cx.abs(x);
    let ac = cx.min_c(a, 22.0);
    let two_a = cx.add(ac, ac);
    let (r, _, bits) = reduce_ln2(cx, two_a);
    let em_r = expm1_poly(cx, r);
    let scale = cx.exp2_of_round_bits(bits);
    let one = cx.c(1.0);
    let scale_minus_one = cx.sub(scale, one);
    let m = cx.mul_add(scale, em_r, scale_minus_one);
    let two = cx.c(2.0);
    let den = cx.add(m, two);
    let y = cx.div(m, den);
    cx.with_sign_of(y, x)
}

/// Logistic sigmoid `1/(1 + e^{−x})`.
pub(crate) fn sigmoid(cx: &mut Ctx, x: Value) -> Value {
    let a = cx.abs(x);
    let minus_a = cx.neg(a);
    let e = exp(cx, minus_a);
    let one = cx.c(1.0);
    let negative = cx.fcmp_c(FloatCC::LessThan, x, 0.0);
    let num = cx.select(negative, e, one);
    let den = cx.add(one, e);
    cx.div(num, den)
}
