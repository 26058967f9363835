//! `atan`, `atan2`, `asin` and `acos`.
//!
//! One kernel, [`atan_nonneg`], computes `atan a` for `a ≥ 0` (or NaN) by fdlibm's method made
//! branch-free with two intervals instead of four: `a > tan(3π/8)` reduces to
//! `π/2 + atan(−1/a)`, `a > tan(π/8)` to `π/4 + atan((a − 1)/(a + 1))`, so the reduced argument
//! `t` has `|t| ≤ tan(π/8) ≈ 0.4142`; the reduction is one division `num/den` whose operands are
//! selected per lane (`a/1` below `tan(π/8)`, exact). Then, with `z = t²`,
//! `atan t = t − t·z·P(z)` (fdlibm's `aT` for `f64`, musl's `atanf` coefficients for `f32`,
//! both fitted on `|t| ≤ 7/16`), added to the interval's offset split in a high and a low part
//! as fdlibm does: `hi − ((t·zP − lo) − t)`. `±inf` is clamped to `2⁶⁰` (whose `atan` rounds to
//! `π/2` in both precisions), NaN fails every comparison and stays NaN.
//!
//! `atan2(y, x)`: `t = min(|x|, |y|)/max(|x|, |y|) ∈ [0, 1]` (`0/0 → 0`, `inf/inf → 1`),
//! `r = atan t`, then the octant: `π/2 − r` when `|y| > |x|`, and `π − ·` when `x` has its
//! sign bit set (so `−0` counts as negative, as in C), each with the constant's low part added
//! first; finally the sign of `y` is copied on. Every C99 special case (signed zeros, infinite
//! operands, `(±inf, ±inf) = ±π/4, ±3π/4`) falls out of these rules; NaN in either operand
//! gives NaN.
//!
//! `asin x = atan2(x, √((1 − |x|)(1 + |x|)))` and `acos x = atan2(√((1 − x)(1 + x)), x)`: the
//! factored `1 − x²` is exact up to one rounding where it cancels (`1 − |x|` is exact for
//! `|x| ≥ ½`), and `|x| > 1` makes the square root, and so the result, NaN.

use super::lanes::Lanes;
use super::{FloatCC, IntCC};

const TAN_PI_8: f64 = 0.414_213_562_373_095_03;
const TAN_3PI_8: f64 = 2.414_213_562_373_095;
/// `|a|` clamp: `atan` of anything above rounds to `π/2` in `f32` and `f64`.
const ATAN_CLAMP: f64 = 1_152_921_504_606_846_976.0; // 2⁶⁰

const PI_4: f64 = std::f64::consts::FRAC_PI_4;
const PI_2: f64 = std::f64::consts::FRAC_PI_2;
const PI: f64 = std::f64::consts::PI;
/// `π/4 − fl(π/4)`, `π/2 − fl(π/2)` and `π − fl(π)` in `f64` (fdlibm's `atanlo`, `pi_lo`).
const PI_4_LO: f64 = 3.061_616_997_868_383_017_93e-17;
const PI_2_LO: f64 = 6.123_233_995_736_766_035_87e-17;
const PI_LO: f64 = 1.224_646_799_147_353_177_2e-16;

/// fdlibm `aT[0..=10]`: `atan t = t − t·z·P(z)` with `P` alternating, `|t| ≤ 7/16`.
const AT_F64: [f64; 11] = [
    3.333_333_333_333_293_180_27e-01,
    -1.999_999_999_987_648_324_76e-01,
    1.428_571_427_250_346_637_11e-01,
    -1.111_111_040_546_235_578_80e-01,
    9.090_887_133_436_506_561_96e-02,
    -7.691_876_205_044_829_994_95e-02,
    6.661_073_137_387_531_206_69e-02,
    -5.833_570_133_790_573_486_45e-02,
    4.976_877_994_615_932_360_17e-02,
    -3.653_157_274_421_691_552_70e-02,
    1.628_582_011_536_578_236_23e-02,
];
/// musl `atanf` `aT[0..=4]`, same form.
const AT_F32: [f64; 5] = [
    3.333_332_836_6e-01,
    -1.999_915_838_2e-01,
    1.425_363_570_5e-01,
    -1.064_801_737_7e-01,
    6.168_760_731_8e-02,
];

/// `(hi, lo)`: `v` rounded to the lane precision and the rest (`v_lo` being the part of `v`
/// beyond `f64`).
#[inline(always)]
fn split<L: Lanes>(cx: &L, v: f64, v_lo: f64) -> (f64, f64) {
    if cx.fmt().is_f32() {
        let hi = f64::from(v as f32);
        (hi, (v - hi) + v_lo)
    } else {
        (v, v_lo)
    }
}

/// `atan a` for `a ≥ 0` or NaN (see the module docs).
#[inline(always)]
pub(crate) fn atan_nonneg<L: Lanes>(cx: &mut L, a: L::F) -> L::F {
    let a = cx.min_c(a, ATAN_CLAMP);
    let big = cx.fcmp_c(FloatCC::GreaterThan, a, TAN_3PI_8);
    let mid = cx.fcmp_c(FloatCC::GreaterThan, a, TAN_PI_8);
    let one = cx.c(1.0);
    let a_minus_1 = cx.sub(a, one);
    let a_plus_1 = cx.add(a, one);
    let num = cx.select(mid, a_minus_1, a);
    let num = cx.select_c(big, -1.0, num);
    let den = cx.select(mid, a_plus_1, one);
    let den = cx.select(big, a, den);
    let t = cx.div(num, den);
    let (pi4_hi, pi4_lo) = split(cx, PI_4, PI_4_LO);
    let (pi2_hi, pi2_lo) = split(cx, PI_2, PI_2_LO);
    let zero = cx.c(0.0);
    let hi = cx.select_c(mid, pi4_hi, zero);
    let hi = cx.select_c(big, pi2_hi, hi);
    let lo = cx.select_c(mid, -pi4_lo, zero);
    let lo = cx.select_c(big, -pi2_lo, lo);
    let z = cx.mul(t, t);
    let coeffs: &[f64] = if cx.fmt().is_f32() { &AT_F32 } else { &AT_F64 };
    let p = cx.poly(z, coeffs);
    let zp = cx.mul(z, p);
    // hi − ((t·zP − lo) − t), with `lo` stored negated so the first step is one `mul_add`.
    let u = cx.mul_add(t, zp, lo);
    let u = cx.sub(u, t);
    cx.sub(hi, u)
}

/// `atan x`.
#[inline(always)]
pub(crate) fn atan<L: Lanes>(cx: &mut L, x: L::F) -> L::F {
    let a = cx.abs(x);
    let r = atan_nonneg(cx, a);
    cx.with_sign_of(r, x)
}

/// `atan2(y, x)`, C99 special cases included (see the module docs).
#[inline(always)]
pub(crate) fn atan2<L: Lanes>(cx: &mut L, y: L::F, x: L::F) -> L::F {
    let ax = cx.abs(x);
    let ay = cx.abs(y);
    let swap = cx.fcmp(FloatCC::GreaterThan, ay, ax);
    let num = cx.select(swap, ax, ay);
    let den = cx.select(swap, ay, ax);
    let q = cx.div(num, den);
    // 0/0 (both zero) → 0, inf/inf (both infinite) → 1; NaN operands are handled at the end.
    let den_zero = cx.fcmp_c(FloatCC::Equal, den, 0.0);
    let q = cx.select_c(den_zero, 0.0, q);
    let both_inf = cx.fcmp_c(FloatCC::Equal, num, f64::INFINITY);
    let q = cx.select_c(both_inf, 1.0, q);
    let r = atan_nonneg(cx, q);
    // The octant: r, π/2 − r, π − r or π/2 + r, as `hi + (±r + lo)`.
    let (pi2_hi, pi2_lo) = split(cx, PI_2, PI_2_LO);
    let (pi_hi, pi_lo) = split(cx, PI, PI_LO);
    let x_bits = cx.bits_of(x);
    let zero_i = cx.ci(0);
    let x_neg = cx.icmp(IntCC::SignedLessThan, x_bits, zero_i);
    // −r in exactly one of the two corrections (π − (π/2 − r) = π/2 + r).
    let flip = cx.mask_xor(swap, x_neg);
    let minus_r = cx.neg(r);
    let signed_r = cx.select(flip, minus_r, r);
    let zero = cx.c(0.0);
    let hi = cx.select_c(x_neg, pi_hi, zero);
    let hi = cx.select_c(swap, pi2_hi, hi);
    let lo = cx.select_c(x_neg, pi_lo, zero);
    let lo = cx.select_c(swap, pi2_lo, lo);
    let s = cx.add(signed_r, lo);
    let angle = cx.add(hi, s);
    let angle = cx.with_sign_of(angle, y);
    let unordered = cx.fcmp(FloatCC::Unordered, x, y);
    let nan = cx.add(x, y);
    cx.select(unordered, nan, angle)
}

/// `√((1 − a)(1 + a))` for `a = |x|` or `x` itself: `√(1 − x²)` without the cancellation.
#[inline(always)]
fn cos_of_asin<L: Lanes>(cx: &mut L, x: L::F) -> L::F {
    let one = cx.c(1.0);
    let m = cx.sub(one, x);
    let p = cx.add(one, x);
    let prod = cx.mul(m, p);
    cx.sqrt(prod)
}

/// `asin x`; NaN for `|x| > 1`.
#[inline(always)]
pub(crate) fn asin<L: Lanes>(cx: &mut L, x: L::F) -> L::F {
    let a = cx.abs(x);
    let c = cos_of_asin(cx, a);
    atan2(cx, x, c)
}

/// `acos x`; NaN for `|x| > 1`.
#[inline(always)]
pub(crate) fn acos<L: Lanes>(cx: &mut L, x: L::F) -> L::F {
    let s = cos_of_asin(cx, x);
    atan2(cx, s, x)
}
