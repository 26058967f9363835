//! Conversions between `f32`/`f64` and the 16-bit floats `f16` and `bf16`, on bit patterns.
//!
//! One definition for both backends: the interpreter calls these functions and the JIT
//! (`backend/src/codegen/storage.rs`) emits the same steps on `i32x4` lanes, so the two agree
//! bit for bit. Rounding is to nearest, ties to even; overflow gives ±inf; results below the
//! smallest normal are subnormals; a NaN stays a NaN of the same sign with its leading payload
//! bits kept and the quiet bit set (what x86's F16C and the `half` crate do; NumPy keeps a
//! signalling NaN signalling, ml_dtypes replaces a NaN by the canonical one — for the quiet
//! NaNs arithmetic produces, all agree).
//!
//! `f64` → 16-bit rounds `f64` → `f32` *to odd* first: a value with at least two more bits
//! than the target, rounded to odd, then to nearest even, is rounded to nearest even once
//! (NumPy's direct conversion), never twice.

/// `f16` bits → `f32` (exact). A NaN gets the quiet bit.
pub fn f16_to_f32(h: u16) -> f32 {
    let h = u32::from(h);
    let sign = (h & 0x8000) << 16;
    let exp = (h >> 10) & 0x1f;
    let man = h & 0x3ff;
    let normal = ((exp + 112) << 23) | (man << 13);
    let special = 0x7f80_0000 | (man << 13) | if man != 0 { 0x0040_0000 } else { 0 };
    // A subnormal is `man * 2^-24`, exactly.
    let subnormal = (man as f32 * f32::from_bits(0x3380_0000)).to_bits();
    let bits = match exp {
        0 => subnormal,
        31 => special,
        _ => normal,
    };
    f32::from_bits(sign | bits)
}

/// `f32` → `f16` bits, round to nearest even.
pub fn f32_to_f16(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = (bits >> 16) & 0x8000;
    let f = bits & 0x7fff_ffff;
    let out = if f >= 0x4780_0000 {
        // |x| >= 65536, inf or NaN (65520..65536 rounds to inf on the normal path).
        if f > 0x7f80_0000 {
            0x7e00 | ((f >> 13) & 0x3ff)
        } else {
            0x7c00
        }
    } else if f < 0x3880_0000 {
        // Below the smallest normal 2^-14: adding 0.5 rounds to a multiple of 2^-24 (the
        // subnormal step) in hardware, and the low bits are then the result.
        let sum = f32::from_bits(f) + 0.5;
        sum.to_bits().wrapping_sub(0x3f00_0000)
    } else {
        let odd = (f >> 13) & 1;
        // Rebias the exponent (-112) and round half to even on the 13 dropped bits.
        f.wrapping_add(0xc800_0fff).wrapping_add(odd) >> 13
    };
    (sign | out) as u16
}

/// `bf16` bits → `f32` (exact: the high half of the `f32`).
pub fn bf16_to_f32(b: u16) -> f32 {
    f32::from_bits(u32::from(b) << 16)
}

/// `f32` → `bf16` bits, round to nearest even.
pub fn f32_to_bf16(x: f32) -> u16 {
    let bits = x.to_bits();
    if bits & 0x7fff_ffff > 0x7f80_0000 {
        ((bits >> 16) | 0x0040) as u16
    } else {
        (bits.wrapping_add(0x7fff).wrapping_add((bits >> 16) & 1) >> 16) as u16
    }
}

/// `f64` → `f32` rounded to odd: the truncation of `x`, with its last bit set if inexact.
pub fn f64_to_f32_odd(x: f64) -> f32 {
    let r = x as f32;
    let back = f64::from(r);
    if back == x || x.is_nan() {
        return r;
    }
    let bits = r.to_bits();
    let truncated = if back.abs() > x.abs() { bits - 1 } else { bits };
    f32::from_bits(truncated | 1)
}

/// `f64` → `f16` bits, rounded once.
pub fn f64_to_f16(x: f64) -> u16 {
    f32_to_f16(f64_to_f32_odd(x))
}

/// `f64` → `bf16` bits, rounded once.
pub fn f64_to_bf16(x: f64) -> u16 {
    f32_to_bf16(f64_to_f32_odd(x))
}
