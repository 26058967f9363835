//! `sinh` and `cosh`, from one `exp` reduction of `a = |x|`.
//!
//! `a` is reduced once as `exp` does (`a = n·ln2 + r`, `expm1(r)` by the same polynomial), and
//! two values are built from it:
//! - `h = eᵃ/2 = 2ⁿ⁻¹·(1 + expm1(r))`, scaled in two normal factors like `exp`, so it stays
//!   finite up to `ln(2·MAX)` (where `sinh`/`cosh` overflow, later than `exp`) and is `+inf`
//!   beyond (`a` is clamped to just past that point; NaN stays NaN);
//! - `t = expm1(a) = 2ⁿ·(expm1(r) + 1 − 2⁻ⁿ)`, used only for `a < 1`, where `n ∈ {0, 1}`.
//!
//! Then, as fdlibm does, `sinh a = (t + t/(t + 1))/2` for `a < 1` (no cancellation near 0: both
//! terms are positive and tiny `a` comes out exactly) and `h − ¼/h` above; `cosh a =
//! 1 + t²/(2(t + 1))` for `a < ln2/2` and `h + ¼/h` above. Each picks its numerator and
//! denominator per lane first, so each function has one division. `sinh` copies the sign of
//! `x` (`sinh(−0) = −0`); `cosh` is even.

use super::exp::{expm1_poly, reduce_ln2, split_scale};
use super::lanes::Lanes;
use super::FloatCC;

/// Just past `ln(2·MAX)`, where `eᵃ/2` overflows; `2ⁿ⁻¹` still splits into two normal factors.
#[inline(always)]
fn clamp<L: Lanes>(cx: &L) -> f64 {
    if cx.fmt().is_f32() {
        89.5
    } else {
        710.6
    }
}

/// `(t, h)` for `a ≥ 0` (see the module docs): `t = expm1(a)` valid for `a < 1`, `h = eᵃ/2`.
#[inline(always)]
fn exp_parts<L: Lanes>(cx: &mut L, a: L::F) -> (L::F, L::F) {
    let hi = clamp(cx);
    let ac = cx.min_c(a, hi);
    let (r, n, bits) = reduce_ln2(cx, ac);
    let em = expm1_poly(cx, r);
    let one = cx.c(1.0);
    let p = cx.add(em, one);
    let half_bits = cx.iadd_c(bits, -1);
    let (s1, s2) = split_scale(cx, half_bits);
    let h = cx.mul(p, s1);
    let h = cx.mul(h, s2);
    // n = 1: t = 2·(em + ½); n = 0: t = em.
    let n_one = cx.fcmp_c(FloatCC::GreaterThan, n, 0.5);
    let zero = cx.c(0.0);
    let offset = cx.select_c(n_one, 0.5, zero);
    let scale = cx.select_c(n_one, 2.0, one);
    let t = cx.add(em, offset);
    let t = cx.mul(t, scale);
    (t, h)
}

/// Hyperbolic sine.
#[inline(always)]
pub(crate) fn sinh<L: Lanes>(cx: &mut L, x: L::F) -> L::F {
    let a = cx.abs(x);
    let (t, h) = exp_parts(cx, a);
    let small = cx.fcmp_c(FloatCC::LessThan, a, 1.0);
    let one = cx.c(1.0);
    let t_plus_1 = cx.add(t, one);
    let quarter = cx.c(0.25);
    let num = cx.select(small, t, quarter);
    let den = cx.select(small, t_plus_1, h);
    let q = cx.div(num, den);
    let sum = cx.add(t, q);
    let half = cx.c(0.5);
    let small_v = cx.mul(sum, half);
    let large_v = cx.sub(h, q);
    let y = cx.select(small, small_v, large_v);
    cx.with_sign_of(y, x)
}

/// Hyperbolic cosine.
#[inline(always)]
pub(crate) fn cosh<L: Lanes>(cx: &mut L, x: L::F) -> L::F {
    let a = cx.abs(x);
    let (t, h) = exp_parts(cx, a);
    let small = cx.fcmp_c(FloatCC::LessThan, a, 0.5 * std::f64::consts::LN_2);
    let one = cx.c(1.0);
    let tt = cx.mul(t, t);
    let t_plus_1 = cx.add(t, one);
    let two_t_plus_2 = cx.add(t_plus_1, t_plus_1);
    let quarter = cx.c(0.25);
    let num = cx.select(small, tt, quarter);
    let den = cx.select(small, two_t_plus_2, h);
    let q = cx.div(num, den);
    let base = cx.select(small, one, h);
    cx.add(base, q)
}
