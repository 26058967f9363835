//! `log` and `log1p`.
//!
//! `frexp` by bit manipulation: denormal inputs are first scaled by `2^mantissa_bits`; the
//! exponent field gives `e`, and the mantissa with the exponent of 0.5 gives `m ∈ [0.5, 1)`,
//! renormalised to `[√½, √2)` so that `f = m − 1 ∈ [−0.29, 0.41]`. Then `log x = e·ln2 + log1p(f)`
//! with `e·ln2` split in two parts:
//! - `f32`: Cephes `logf`, `log1p(f) = f − f²/2 + f³·P(f)` (degree-8 minimax, no division);
//! - `f64`: fdlibm `log`, `s = f/(2+f)` and a degree-14 odd polynomial in `s`.
//!
//! `log1p(x)` computes `u = 1 + x` and corrects the rounding of `u` with `(x − (u − 1))/u`.

use super::lanes::Lanes;
use super::FloatCC;

/// Cephes `logf` polynomial `P`, ascending.
const LOG_P_F32: [f64; 9] = [
    3.333_333_117_4e-1,
    -2.499_999_399_3e-1,
    2.000_071_476_5e-1,
    -1.666_805_766_5e-1,
    1.424_932_278_7e-1,
    -1.242_014_084_6e-1,
    1.167_699_874_0e-1,
    -1.151_461_031_0e-1,
    7.037_683_629_2e-2,
];

/// fdlibm `Lg1..Lg7`: `R(z) = Lg1·z + Lg2·z² + … + Lg7·z⁷` with `z = s²`.
const LG: [f64; 7] = [
    6.666_666_666_666_735_130e-01,
    3.999_999_999_940_941_908e-01,
    2.857_142_874_366_239_149e-01,
    2.222_219_843_214_978_396e-01,
    1.818_357_216_161_805_012e-01,
    1.531_383_769_920_937_332e-01,
    1.479_819_860_511_658_591e-01,
];

const SQRT_HALF: f64 = std::f64::consts::FRAC_1_SQRT_2;

/// `log x` for finite `x > 0` (denormals included); other inputs give unspecified values.
#[inline(always)]
fn log_positive<L: Lanes>(cx: &mut L, x: L::F) -> L::F {
    let (f, e) = reduce(cx, x);
    log1p_reduced(cx, f, e)
}

/// `log₂ x` for finite `x > 0`: `e + log(1 + f)·log₂e`, exact at powers of two (`f = 0`).
/// `|log(1 + f)| < 0.35`, so where `e ≠ 0` the sum is at least 0.5 and nothing cancels.
#[inline(always)]
fn log2_positive<L: Lanes>(cx: &mut L, x: L::F) -> L::F {
    let (f, e) = reduce(cx, x);
    let zero = cx.c(0.0);
    let l = log1p_reduced(cx, f, zero);
    let log2_e = cx.c(std::f64::consts::LOG2_E);
    cx.mul_add(l, log2_e, e)
}

/// `e·ln2 + log1p(f)` for the format's width.
#[inline(always)]
fn log1p_reduced<L: Lanes>(cx: &mut L, f: L::F, e: L::F) -> L::F {
    if cx.fmt().is_f32() {
        log1p_reduced_f32(cx, f, e)
    } else {
        log1p_reduced_f64(cx, f, e)
    }
}

/// `(f, e)` with `x = 2ᵉ·(1 + f)`, `1 + f ∈ [√½, √2)`, for finite `x > 0` (denormals
/// included); `e` is an integer-valued float.
#[inline(always)]
fn reduce<L: Lanes>(cx: &mut L, x: L::F) -> (L::F, L::F) {
    let mant = cx.fmt().mantissa_bits;
    let bias = cx.fmt().bias;
    // Scale denormals into the normal range.
    let denormal = cx.fcmp_c(FloatCC::LessThan, x, cx.fmt().min_normal());
    let up = cx.c(f64::from(mant).exp2());
    let scaled = cx.mul(x, up);
    let xs = cx.select(denormal, scaled, x);
    let bits = cx.bits_of(xs);
    // Exponent e with x = m·2^e, m ∈ [0.5, 1), converted to float via the rounding magic.
    let biased = cx.ushr(bits, mant);
    let magic_bits = cx.fmt().round_magic_bits();
    let e_bits = cx.iadd_c(biased, magic_bits - (bias - 1));
    let e_magic = cx.float_of_bits(e_bits);
    let magic = cx.c(cx.fmt().round_magic());
    let e = cx.sub(e_magic, magic);
    let zero = cx.c(0.0);
    let den_adj = cx.select_c(denormal, f64::from(mant), zero);
    let e = cx.sub(e, den_adj);
    // Mantissa m ∈ [0.5, 1).
    let m_bits = cx.band_c(bits, (1i64 << mant) - 1);
    let half_bits = (bias - 1) << mant;
    let half = cx.ci(half_bits);
    let m_bits = cx.bor(m_bits, half);
    let m = cx.float_of_bits(m_bits);
    // Renormalise to [√½, √2): if m < √½ use 2m and e − 1.
    let low = cx.fcmp_c(FloatCC::LessThan, m, SQRT_HALF);
    let one = cx.c(1.0);
    let e_adj = cx.select(low, one, zero);
    let e = cx.sub(e, e_adj);
    let m_adj = cx.select(low, m, zero);
    let m2 = cx.add(m, m_adj);
    let f = cx.sub(m2, one);
    (f, e)
}

/// Cephes `logf` tail: `e·ln2 + log1p(f)`.
#[inline(always)]
fn log1p_reduced_f32<L: Lanes>(cx: &mut L, f: L::F, e: L::F) -> L::F {
    let z = cx.mul(f, f);
    let p = cx.poly(f, &LOG_P_F32);
    let fz = cx.mul(f, z);
    let y = cx.mul(fz, p);
    let ln2_lo = cx.c(-2.121_944_4e-4);
    let y = cx.mul_add(e, ln2_lo, y);
    let minus_half = cx.c(-0.5);
    let y = cx.mul_add(z, minus_half, y);
    let r = cx.add(f, y);
    let ln2_hi = cx.c(0.693_359_375);
    cx.mul_add(e, ln2_hi, r)
}

/// fdlibm `log` tail: `e·ln2_hi − ((hfsq − (s·(hfsq + R) + e·ln2_lo)) − f)`.
#[inline(always)]
fn log1p_reduced_f64<L: Lanes>(cx: &mut L, f: L::F, e: L::F) -> L::F {
    let two = cx.c(2.0);
    let denom = cx.add(f, two);
    let s = cx.div(f, denom);
    let z = cx.mul(s, s);
    let w = cx.mul(z, z);
    let odd = cx.poly(w, &[LG[1], LG[3], LG[5]]);
    let t1 = cx.mul(w, odd);
    let even = cx.poly(w, &[LG[0], LG[2], LG[4], LG[6]]);
    let t2 = cx.mul(z, even);
    let r = cx.add(t1, t2);
    let ff = cx.mul(f, f);
    let half = cx.c(0.5);
    let hfsq = cx.mul(ff, half);
    let hr = cx.add(hfsq, r);
    let ln2_lo = cx.c(1.908_214_929_270_587_700_02e-10);
    let elo = cx.mul(e, ln2_lo);
    let shr = cx.mul_add(s, hr, elo);
    let inner = cx.sub(hfsq, shr);
    let inner = cx.sub(inner, f);
    let ln2_hi = cx.c(6.931_471_803_691_238_164_90e-01);
    let ehi = cx.mul(e, ln2_hi);
    cx.sub(ehi, inner)
}

/// Natural logarithm with IEEE special cases.
#[inline(always)]
pub(crate) fn log<L: Lanes>(cx: &mut L, x: L::F) -> L::F {
    let y = log_positive(cx, x);
    with_specials(cx, x, y)
}

/// Base-2 logarithm with IEEE special cases, exact at powers of two.
#[inline(always)]
pub(crate) fn log2<L: Lanes>(cx: &mut L, x: L::F) -> L::F {
    let y = log2_positive(cx, x);
    with_specials(cx, x, y)
}

/// `y` (a logarithm of finite `x > 0`) with the IEEE results elsewhere: NaN below zero and
/// for NaN, `−inf` at `±0`, `+inf` at `+inf`.
#[inline(always)]
fn with_specials<L: Lanes>(cx: &mut L, x: L::F, y: L::F) -> L::F {
    // NaN unless `x >= 0` (false for NaN). Not `UnorderedOrLessThan`: aarch64 has no vector
    // form of it, and Cranelift panics there.
    let not_below = cx.fcmp_c(FloatCC::GreaterThanOrEqual, x, 0.0);
    let nan = cx.c(f64::NAN);
    let y = cx.select(not_below, y, nan);
    let zero = cx.fcmp_c(FloatCC::Equal, x, 0.0);
    let y = cx.select_c(zero, f64::NEG_INFINITY, y);
    let inf = cx.fcmp_c(FloatCC::Equal, x, f64::INFINITY);
    cx.select_c(inf, f64::INFINITY, y)
}

/// `log(1 + x)`, accurate near zero.
#[inline(always)]
pub(crate) fn log1p<L: Lanes>(cx: &mut L, x: L::F) -> L::F {
    let one = cx.c(1.0);
    let u = cx.add(one, x);
    let log_u = log(cx, u);
    // Rounding error of u, relative to u.
    let u_minus_one = cx.sub(u, one);
    let err = cx.sub(x, u_minus_one);
    let corr = cx.div(err, u);
    let y = cx.add(log_u, corr);
    // Where u is ±0 or inf the correction is NaN; log(u) is then already the answer.
    let inf = cx.fcmp_c(FloatCC::Equal, x, f64::INFINITY);
    let minus_one = cx.fcmp_c(FloatCC::Equal, x, -1.0);
    let special = cx.mask_or(inf, minus_one);
    let y = cx.select(special, log_u, y);
    cx.keep_zero(x, y)
}
