//! `pow`. `f64` `pow` is fdlibm's algorithm with the logarithm in extended precision
//! ([`super::pow_f64`]: under 1 ULP, exact powers exact). `f32` `pow` is `exp(y·log|x|)` plus
//! the C99 special cases, computed in `f64` (each `f32x4` is split into two `f64x2` halves and
//! the results narrowed back), so `y·log x` carries ~29 spare bits and the result is within
//! 1 ULP. The special cases below are those of the `f32` path; `pow_f64` has the same.
//!
//! Special cases (all of C99 Annex F): `pow(x, ±0) = 1` and `pow(1, y) = 1` even for NaN;
//! `pow(−1, ±inf) = 1`; negative finite `x` with non-integer `y` is NaN; an odd integer `y`
//! keeps the sign of `x` (including `−0` and `−inf`); zeros and infinities of `x` and `y` fall
//! out of `log` and `exp` (`log 0 = −inf`, `exp(±inf) = inf / 0`).

use cranelift::codegen::ir::{types, Endianness, InstBuilder, MemFlagsData, Value};

use super::exp::exp;
use super::lanes::Lanes;
use super::log::log;
use super::ops::{Ctx, FloatCC, IntCC, LaneFormat};
use super::pow_f64::pow_f64;

/// `xʸ` for the context's type.
pub(crate) fn pow(cx: &mut Ctx, x: Value, y: Value) -> Value {
    let f64_fmt = LaneFormat::F64;
    match cx.ty {
        types::F32 => {
            let xd = cx.b.ins().fpromote(types::F64, x);
            let yd = cx.b.ins().fpromote(types::F64, y);
            let rd = pow_same_precision(&mut cx.with_type(types::F64, f64_fmt), xd, yd);
            cx.b.ins().fdemote(types::F32, rd)
        }
        types::F32X4 => {
            let (x_lo, x_hi) = split_f32x4(cx, x);
            let (y_lo, y_hi) = split_f32x4(cx, y);
            let mut wide = cx.with_type(types::F64X2, f64_fmt);
            let r_lo = pow_same_precision(&mut wide, x_lo, y_lo);
            let r_hi = pow_same_precision(&mut wide, x_hi, y_hi);
            join_f32x4(cx, r_lo, r_hi)
        }
        _ => pow_f64(cx, x, y),
    }
}

/// Flags for bitcasts that change the lane count (Cranelift requires an explicit byte order).
fn lane_change_flags() -> MemFlagsData {
    MemFlagsData::new().with_endianness(Endianness::Little)
}

/// Lanes `[0, 1]` and `[2, 3]` of an `f32x4`, each widened to `f64x2`.
fn split_f32x4(cx: &mut Ctx, v: Value) -> (Value, Value) {
    let lo = cx.b.ins().fvpromote_low(v);
    let bytes = cx.b.ins().bitcast(types::I8X16, lane_change_flags(), v);
    let mask: Vec<u8> = (8..16).chain(8..16).collect();
    let mask = cx.b.func.dfg.immediates.push(mask.into());
    let high_bytes = cx.b.ins().shuffle(bytes, bytes, mask);
    let high = cx.b.ins().bitcast(types::F32X4, lane_change_flags(), high_bytes);
    let hi = cx.b.ins().fvpromote_low(high);
    (lo, hi)
}

/// The inverse of [`split_f32x4`]: narrows both halves and packs them into one `f32x4`.
fn join_f32x4(cx: &mut Ctx, lo: Value, hi: Value) -> Value {
    let lo = cx.b.ins().fvdemote(lo);
    let hi = cx.b.ins().fvdemote(hi);
    let lo_bytes = cx.b.ins().bitcast(types::I8X16, lane_change_flags(), lo);
    let hi_bytes = cx.b.ins().bitcast(types::I8X16, lane_change_flags(), hi);
    let mask: Vec<u8> = (0..8).chain(16..24).collect();
    let mask = cx.b.func.dfg.immediates.push(mask.into());
    let packed = cx.b.ins().shuffle(lo_bytes, hi_bytes, mask);
    cx.b.ins().bitcast(types::F32X4, lane_change_flags(), packed)
}

/// `xʸ` as `exp(y·log|x|)` in the context's own precision (`f64` lanes: used for `f32` `pow`).
fn pow_same_precision(cx: &mut Ctx, x: Value, y: Value) -> Value {
    let ax = cx.abs(x);
    let log_ax = log(cx, ax);
    let p = cx.mul(y, log_ax);
    let magnitude = exp(cx, p);

    let ay = cx.abs(y);
    let (is_int, odd) = integer_and_odd(cx, ay);
    let zero_i = cx.ci(0);

    // Sign: an odd integer power keeps the sign of x.
    let x_bits = cx.bits_of(x);
    let x_sign = cx.band_c(x_bits, cx.fmt.sign_mask());
    let sign = cx.select(odd, x_sign, zero_i);
    let m_bits = cx.bits_of(magnitude);
    let r_bits = cx.bor(m_bits, sign);
    let r = cx.float_of_bits(r_bits);

    // Negative finite x with a non-integer y: NaN.
    let negative = cx.fcmp_c(FloatCC::LessThan, x, 0.0);
    let finite = cx.fcmp_c(FloatCC::NotEqual, ax, f64::INFINITY);
    let neg_finite = cx.mask_and(negative, finite);
    let bad = cx.b.ins().band_not(neg_finite, is_int);
    let r = cx.select_c(bad, f64::NAN, r);

    // Results that are 1 whatever the other operand.
    let y_zero = cx.fcmp_c(FloatCC::Equal, y, 0.0);
    let x_one = cx.fcmp_c(FloatCC::Equal, x, 1.0);
    let x_minus_one = cx.fcmp_c(FloatCC::Equal, x, -1.0);
    let y_inf = cx.fcmp_c(FloatCC::Equal, ay, f64::INFINITY);
    let minus_one_inf = cx.mask_and(x_minus_one, y_inf);
    let one_case = cx.mask_or(y_zero, x_one);
    let one_case = cx.mask_or(one_case, minus_one_inf);
    cx.select_c(one_case, 1.0, r)
}

/// Lane masks `(y is an integer, y is an odd integer)` for `ay = |y|`: floats ≥ 2^mant are
/// integers; below, adding 2^mant rounds to an integer whose parity is the last mantissa bit.
pub(crate) fn integer_and_odd(cx: &mut Ctx, ay: Value) -> (Value, Value) {
    let mant = f64::from(cx.fmt.mantissa_bits);
    let big = cx.fcmp_c(FloatCC::GreaterThanOrEqual, ay, mant.exp2());
    let shift = cx.c(mant.exp2());
    let t = cx.add(ay, shift);
    let rounded = cx.sub(t, shift);
    let integral_small = cx.fcmp(FloatCC::Equal, rounded, ay);
    let is_int = cx.mask_or(big, integral_small);
    let t_bits = cx.bits_of(t);
    let parity_small = cx.band_c(t_bits, 1);
    let ay_bits = cx.bits_of(ay);
    let parity_big = cx.band_c(ay_bits, 1);
    // Above 2^(mant+1) the spacing is ≥ 2: even.
    let below_even_only = cx.fcmp_c(FloatCC::LessThan, ay, (mant + 1.0).exp2());
    let zero_i = cx.ci(0);
    let parity_big = cx.select(below_even_only, parity_big, zero_i);
    let parity = cx.select(big, parity_big, parity_small);
    let odd_bit = cx.icmp(IntCC::NotEqual, parity, zero_i);
    let odd = cx.mask_and(is_int, odd_bit);
    (is_int, odd)
}
