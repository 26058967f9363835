//! `tanh` and `sigmoid`.
//!
//! `tanh` for `f32`: a rational approximation of `tanh(x/2)` followed by the double-angle
//! formula, fitted by `backend/tools/fit_tanh.py` (which also checks every input bit for bit).
//! With `x` clamped to `±9.05` (beyond `9.0109` `tanh` rounds to `±1`) and `t = x²`:
//!
//! ```text
//! A = x·P(t) = fma(x·t, P′(t), x)      P = 1 + p₁t + p₂t²
//! Q = Q(t) = 2 + q₁t + q₂t² + q₃t³     A/Q ≈ tanh(x/2)
//! tanh x = 2s/(1 + s²), s = A/Q  =  A · (Q + Q)/fma(Q, Q, A·A)
//! ```
//!
//! The double-angle step damps every error in `s` (fit error and rounding in the Horner chains)
//! by `sech x`, so near saturation, where `tanh x ≈ 1` has the finest relative ULP, only the
//! last few operations count; a plain `x·P(t)/Q(t)` of the same cost is 5–6 ULP there. The
//! result is 14 vector instructions with one division and no selects beyond the clamp (the old
//! `expm1`-based version took ~25). `P(0) = 1` and `Q(0) = 2` make tiny and denormal `x` come
//! out exactly (`t = 0` gives `A = x`, `Q = 2`, `(Q+Q)/(Q·Q) = 1`), including `tanh(±0) = ±0`.
//! The clamp is `max`/`min` that keep NaN lanes NaN, and `±inf` clamps to `±9.05 → ±1`.
//! Over all 2³² inputs the error is at most 4 ULP with `fma` (7 positive inputs reach 4, all
//! near ⅛ and ¼) and without it (1384 reach 4, all below 1): at `x` just above a power of two
//! every intermediate has a mantissa near 1 while the result's is near 2. A few inputs near
//! saturation return `1 + 2⁻²³` (1 with `fma`, ~1.3K without), 1–2 ULP above the exact result.
//!
//! `tanh` for `f64`: on `a = |x|` (clamped to 22, where `tanh` rounds to 1),
//! `tanh a = m/(m + 2)` with `m = expm1(2a)`. One formula for the whole range, accurate near 0
//! because `expm1` is, with no small-argument branch: `m = 2ⁿ·expm1(r) + (2ⁿ − 1)` after the
//! usual `ln2` reduction, `expm1(r)` being the same polynomial `exp` uses. The sign of `x` is
//! copied onto the result (so `tanh(−0) = −0`, NaN stays NaN).
//!
//! `sigmoid`: with `e = e^{−|x|}` (never overflows), `σ(x) = 1/(1 + e)` for `x ≥ 0` and
//! `e/(1 + e)` for `x < 0`, which keeps full relative accuracy (down to denormals) for very
//! negative `x`.

use super::exp::{exp, expm1_poly, reduce_ln2};
use super::lanes::Lanes;
use super::FloatCC;

/// Inputs beyond `±TANH_F32_CLAMP` are clamped to it; `tanh` of it evaluates to exactly 1.
const TANH_F32_CLAMP: f64 = 9.05;

/// `P′(t) = (P(t) − 1)/t`, ascending, with `P(t) = 1 + p₁t + p₂t²` (from `fit_tanh.py`).
const TANH_F32_P_TAIL: [f64; 2] = [0.02977743372321129, 0.00011432909377617761];

/// `Q(t)`, ascending (from `fit_tanh.py`): `x·P(x²)/Q(x²)` approximates `tanh(x/2)` on
/// `[0, 9.02]` with relative error `< 7.7e-9·cosh x` after rounding the coefficients to `f32`.
const TANH_F32_Q: [f64; 4] = [2.0, 0.2262214720249176, 0.00241384981200099, 2.460999439790612e-06];

/// Hyperbolic tangent.
#[inline(always)]
pub(crate) fn tanh<L: Lanes>(cx: &mut L, x: L::F) -> L::F {
    if cx.fmt().is_f32() {
        tanh_rational(cx, x)
    } else {
        tanh_expm1(cx, x)
    }
}

/// `f32` `tanh`: the half-angle rational and the double-angle formula (see the module docs).
#[inline(always)]
fn tanh_rational<L: Lanes>(cx: &mut L, x: L::F) -> L::F {
    let above = cx.max_c(x, -TANH_F32_CLAMP);
    let xc = cx.min_c(above, TANH_F32_CLAMP);
    let t = cx.mul(xc, xc);
    let xt = cx.mul(xc, t);
    let p_tail = cx.poly(t, &TANH_F32_P_TAIL);
    let a = cx.mul_add(xt, p_tail, xc);
    let q = cx.poly(t, &TANH_F32_Q);
    let aa = cx.mul(a, a);
    let den = cx.mul_add(q, q, aa);
    let two_q = cx.add(q, q);
    let ratio = cx.div(two_q, den);
    cx.mul(a, ratio)
}

/// `f64` `tanh`: `m/(m + 2)` with `m = expm1(2|x|)` (see the module docs).
#[inline(always)]
fn tanh_expm1<L: Lanes>(cx: &mut L, x: L::F) -> L::F {
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
#[inline(always)]
pub(crate) fn sigmoid<L: Lanes>(cx: &mut L, x: L::F) -> L::F {
    let a = cx.abs(x);
    let minus_a = cx.neg(a);
    let e = exp(cx, minus_a);
    let one = cx.c(1.0);
    let negative = cx.fcmp_c(FloatCC::LessThan, x, 0.0);
    let num = cx.select(negative, e, one);
    let den = cx.add(one, e);
    cx.div(num, den)
}
