//! `exp` and `expm1`.
//!
//! Range reduction (Cody–Waite): `n = round(x·log₂e)`, `r = x − n·ln2_hi − n·ln2_lo` with
//! `|r| ≤ ln2/2`; `ln2_hi` has trailing zero bits so `n·ln2_hi` is exact even without `fma`.
//! Then `expm1(r) = r + r²·P(r)` — a degree-4 near-minimax `P` for `f32`, the Taylor series to
//! `r¹³` for `f64` — and `exp(x) = 2ⁿ·(1 + expm1(r))`.
//!
//! `n` is obtained without float→int conversion: adding `1.5·2^mantissa_bits` rounds to an
//! integer and leaves `n` in the low bits of the sum, from which `2ⁿ` is built by shifting it into
//! the exponent field. To reach denormal results and overflow to `inf` correctly, `exp` scales by
//! `2^⌊n/2⌋ · 2^(n−⌊n/2⌋)` (two normal factors; only the last multiply rounds).

use super::lanes::Lanes;

const LOG2E: f64 = std::f64::consts::LOG2_E;

/// `expm1(r) = r + r²·P(r)` on `|r| ≤ ln2/2`, ascending: degree-4 near-minimax fit of
/// `(expm1(r) − r)/r²` (relative error of the result `< 3e-8` with coefficients rounded to `f32`).
const EXPM1_P_F32: [f64; 5] = [
    0.5,
    0.166_665_762_662_887_57,
    0.041_666_857_898_235_32,
    0.008_363_313_041_627_407,
    0.001_390_129_444_189_369_7,
];

/// Taylor coefficients `1/k!` for `k = 2..=13` (`|r|¹⁴/14! < 2⁻⁵⁸` on `|r| ≤ ln2/2`).
const EXPM1_P_F64: [f64; 12] = [
    1.0 / 2.0,
    1.0 / 6.0,
    1.0 / 24.0,
    1.0 / 120.0,
    1.0 / 720.0,
    1.0 / 5040.0,
    1.0 / 40320.0,
    1.0 / 362880.0,
    1.0 / 3628800.0,
    1.0 / 39916800.0,
    1.0 / 479001600.0,
    1.0 / 6227020800.0,
];

/// `(ln2_hi, ln2_lo)`: `ln2_hi` with enough trailing zeros that `n·ln2_hi` is exact.
#[inline(always)]
fn ln2_parts<L: Lanes>(cx: &L) -> (f64, f64) {
    if cx.fmt().is_f32() {
        (0.693_359_375, -2.121_944_4e-4)
    } else {
        (6.931_471_803_691_238_164_9e-1, 1.908_214_929_270_587_700_02e-10)
    }
}

/// `(x clamped, lowest useful input, highest useful input)` bounds for `exp`: below `lo` the
/// result rounds to `+0`, above `hi` it overflows to `+inf`; both still yield a representable
/// split scale `2^⌊n/2⌋`.
#[inline(always)]
fn exp_bounds<L: Lanes>(cx: &L) -> (f64, f64) {
    if cx.fmt().is_f32() {
        (-104.0, 88.8)
    } else {
        (-746.0, 709.9)
    }
}

/// Reduces `x` to `r = x − n·ln2`; returns `(r, n as float, round bits of n)`.
#[inline(always)]
pub(crate) fn reduce_ln2<L: Lanes>(cx: &mut L, x: L::F) -> (L::F, L::F, L::I) {
    let (hi, lo) = ln2_parts(cx);
    let (n, bits) = cx.round_int_of_product(x, LOG2E);
    // `n·(−ln2)` rather than `(−n)·ln2`: the same exact product (negation is exact), but a NaN
    // `x` stays one NaN through `n` and `r` (a negated `n` would be a second NaN of the other
    // sign, and which of two NaN operands an `fma` returns depends on the operand order the
    // code generator picks).
    let khi = cx.c(-hi);
    let r = cx.mul_add(n, khi, x);
    let klo = cx.c(-lo);
    let r = cx.mul_add(n, klo, r);
    (r, n, bits)
}

/// `expm1(r)` for `|r| ≤ ln2/2`.
#[inline(always)]
pub(crate) fn expm1_poly<L: Lanes>(cx: &mut L, r: L::F) -> L::F {
    let coeffs: &[f64] = if cx.fmt().is_f32() { &EXPM1_P_F32 } else { &EXPM1_P_F64 };
    let p = cx.poly(r, coeffs);
    let r2 = cx.mul(r, r);
    cx.mul_add(r2, p, r)
}

/// `(2^⌊n/2⌋, 2^(n−⌊n/2⌋))` from the round bits of `n`; both normal for the clamped inputs.
#[inline(always)]
pub(crate) fn split_scale<L: Lanes>(cx: &mut L, bits: L::I) -> (L::F, L::F) {
    let mant = cx.fmt().mantissa_bits;
    let one_bits = cx.fmt().bias << mant;
    // `bits = M + n` with the magic `M` even and `M/2 << mant ≡ 0`, so the unsigned shift halves n.
    let half = cx.ushr(bits, 1);
    let half_exp = cx.shl(half, mant);
    let full_exp = cx.shl(bits, mant);
    let rest_exp = cx.isub(full_exp, half_exp);
    let s1 = cx.iadd_c(half_exp, one_bits);
    let s2 = cx.iadd_c(rest_exp, one_bits);
    (cx.float_of_bits(s1), cx.float_of_bits(s2))
}

/// `eˣ` over the whole domain: `+inf` above `ln(MAX)`, denormals and then `+0` below
/// `ln(MIN_POSITIVE)`, NaN for NaN.
#[inline(always)]
pub(crate) fn exp<L: Lanes>(cx: &mut L, x: L::F) -> L::F {
    let (lo, hi) = exp_bounds(cx);
    let xc = cx.max_c(x, lo);
    let xc = cx.min_c(xc, hi);
    let (r, _, bits) = reduce_ln2(cx, xc);
    let em = expm1_poly(cx, r);
    let one = cx.c(1.0);
    let p = cx.add(em, one);
    let (s1, s2) = split_scale(cx, bits);
    let p = cx.mul(p, s1);
    cx.mul(p, s2)
}

/// `eˣ` for `x ≤ 0` (or NaN): the caller guarantees the sign, e.g. softmax's `x − max(x)`.
/// Nothing can overflow, so one scale suffices: `2^(n+K)` is normal for every `n` down to the
/// underflow bound and the final multiply by `2^−K` rounds once into the denormals, exactly as
/// [`exp`] does with its two-factor split — same results on the domain, five fewer
/// instructions. On `x > 0` the result is unspecified (finite and deterministic).
#[inline(always)]
pub(crate) fn exp_non_positive<L: Lanes>(cx: &mut L, x: L::F) -> L::F {
    let (lo, _) = exp_bounds(cx);
    // `n ≥ lo·log₂e − 1`: −151 (f32), −1077 (f64); `n + K` must stay ≥ the lowest normal exponent.
    let k: i64 = if cx.fmt().is_f32() { 32 } else { 64 };
    let xc = cx.max_c(x, lo);
    let (r, _, bits) = reduce_ln2(cx, xc);
    let em = expm1_poly(cx, r);
    let one = cx.c(1.0);
    let p = cx.add(em, one);
    let mant = cx.fmt().mantissa_bits;
    let shifted = cx.shl(bits, mant);
    let scale_bits = cx.iadd_c(shifted, (cx.fmt().bias + k) << mant);
    let scale = cx.float_of_bits(scale_bits);
    let p = cx.mul(p, scale);
    let unscale = cx.c((-k as f64).exp2());
    cx.mul(p, unscale)
}

/// `eˣ` for inputs whose result is a normal number (`x ∈ [−(bias−2)·ln2, bias·ln2]`, e.g.
/// `[−87, 88]` for `f32`); the caller guarantees the range. Cheaper than [`exp`].
#[inline(always)]
pub(crate) fn exp_normal_range<L: Lanes>(cx: &mut L, x: L::F) -> L::F {
    let (r, _, bits) = reduce_ln2(cx, x);
    let em = expm1_poly(cx, r);
    let one = cx.c(1.0);
    let p = cx.add(em, one);
    let s = cx.exp2_of_round_bits(bits);
    cx.mul(p, s)
}

/// `eˣ − 1`, accurate near zero: `expm1(x) = 2ⁿ·(expm1(r) + 1 − 2⁻ⁿ)`, which for `n = 0` is the
/// polynomial itself.
#[inline(always)]
pub(crate) fn expm1<L: Lanes>(cx: &mut L, x: L::F) -> L::F {
    let (_, hi) = exp_bounds(cx);
    // Below `lo` the result rounds to −1; `2⁻ⁿ` stays a normal number.
    let lo = if cx.fmt().is_f32() { -18.0 } else { -40.0 };
    let xc = cx.max_c(x, lo);
    let xc = cx.min_c(xc, hi);
    let (r, n, bits) = reduce_ln2(cx, xc);
    let em = expm1_poly(cx, r);
    // 2⁻ⁿ, clamped where `1 − 2⁻ⁿ` rounds to 1 anyway.
    let neg_n = cx.neg(n);
    let floor = -f64::from(cx.fmt().mantissa_bits + 3);
    let neg_n = cx.max_c(neg_n, floor);
    let (_, neg_bits) = cx.round_int(neg_n);
    let inv_scale = cx.exp2_of_round_bits(neg_bits);
    let one = cx.c(1.0);
    let offset = cx.sub(one, inv_scale);
    let sum = cx.add(em, offset);
    let (s1, s2) = split_scale(cx, bits);
    let y = cx.mul(sum, s1);
    let y = cx.mul(y, s2);
    cx.keep_zero(x, y)
}
