//! From Philox words to floats: the one definition of `rand_like` and `randn_like`'s values,
//! generic over [`FloatOps`] so the interpreter ([`Scalar`]) and the JIT (Cranelift scalars and
//! vectors) run the same sequence of operations.
//!
//! # Bit-identical on both backends
//!
//! Every operation below is either exact (shifts, masks, integer-to-float conversions of
//! values that fit the significand, multiplications by powers of two, selects, `frexp`) or one
//! IEEE-754 basic operation rounded to nearest (`+ − × ÷ sqrt`) in a fixed order, never fused
//! (no FMA), never a libm call. Both backends therefore produce the same bits for every
//! element, on every CPU; constants are rounded once from their `f64` value to the dtype (Rust
//! `as f32`).
//!
//! # Uniform (`rand_like`), in `[0, 1)`
//!
//! With the element's words `w0..w3` ([`crate::philox`]):
//! - `f32`: `(w0 >> 8) · 2^-24` (24 random bits);
//! - `f64`: `((w0 >> 5) · 2^26 + (w1 >> 6)) · 2^-53` (53 random bits; MT19937's `res53`).
//!
//! # Normal (`randn_like`): Box–Muller, the cosine branch
//!
//! `z = sqrt(−2 ln u) · cos(2π t)` with
//! - `f32`: `u = ((w0 >> 8) + 1) · 2^-24 ∈ (0, 1]` (so `ln` never sees 0; `|z| ≤ 5.77`), the
//!   turn `t` from the top 24 bits of `w1`;
//! - `f64`: `u = (((w0 >> 5) · 2^26 + (w1 >> 6)) + 1) · 2^-53` (`|z| ≤ 8.58`), `t` from the 32
//!   bits of `w2` (`w3` is unused).
//!
//! `ln u = e·ln 2 + 2s(1 + s²/3 + … + s^2K/(2K+1))` with `u = m·2^e`, `m ∈ [√½, √2)`,
//! `s = (m−1)/(m+1)` (`K` = 5 for `f32`, 10 for `f64`). The turn is split exactly into the nearest
//! quarter `q` and a remainder `θ ∈ [−π/4, π/4)`: `cos(2πt) = ±cos θ` or `±sin θ` by `q`, each
//! by its Taylor polynomial (to `θ^10`/`θ^11` for `f32`, `θ^18`/`θ^19` for `f64`). The
//! polynomials' truncation errors are below half an ULP, so `z` is within a few ULP of the
//! exact Box–Muller value of these bits (tested against libm below).

use crate::philox::WordOps;

/// The float side of the transforms, on the same lanes as the [`WordOps`] words.
pub trait FloatOps: WordOps {
    /// Floats of the result dtype, one per element (the lanes of [`WordOps::Word`]).
    type Float: Copy;
    /// `f64` results (else `f32`).
    fn double(&self) -> bool;
    /// Logical shift right by `bits` (1..=31).
    fn shr(&mut self, a: Self::Word, bits: u32) -> Self::Word;
    /// Bitwise and with the constant `mask`.
    fn and(&mut self, a: Self::Word, mask: u32) -> Self::Word;
    /// The word (below `2^24` for `f32`, `2^31` for `f64`: exact) as a float.
    fn to_float(&mut self, a: Self::Word) -> Self::Float;
    /// The constant `c` rounded to the dtype.
    fn constant(&mut self, c: f64) -> Self::Float;
    fn fadd(&mut self, a: Self::Float, b: Self::Float) -> Self::Float;
    fn fsub(&mut self, a: Self::Float, b: Self::Float) -> Self::Float;
    fn fmul(&mut self, a: Self::Float, b: Self::Float) -> Self::Float;
    fn fdiv(&mut self, a: Self::Float, b: Self::Float) -> Self::Float;
    fn fsqrt(&mut self, a: Self::Float) -> Self::Float;
    /// `(e, m)` with `x = m · 2^e`, `m ∈ [1, 2)`, for a positive normal `x` (exact).
    fn frexp(&mut self, x: Self::Float) -> (Self::Float, Self::Float);
    /// `a > b ? x : y`, per lane.
    fn select_gt(
        &mut self,
        a: Self::Float,
        b: Self::Float,
        x: Self::Float,
        y: Self::Float,
    ) -> Self::Float;
}

/// `rand_like`'s value from an element's four words.
pub fn uniform<O: FloatOps>(o: &mut O, w: [O::Word; 4]) -> O::Float {
    if o.double() {
        let bits = bits53(o, w[0], w[1]);
        let scale = o.constant(2f64.powi(-53));
        o.fmul(bits, scale)
    } else {
        let top = o.shr(w[0], 8);
        let bits = o.to_float(top);
        let scale = o.constant(2f64.powi(-24));
        o.fmul(bits, scale)
    }
}

/// `randn_like`'s value from an element's four words.
pub fn normal<O: FloatOps>(o: &mut O, w: [O::Word; 4]) -> O::Float {
    let one = o.constant(1.0);
    let (u, cos) = if o.double() {
        let bits = bits53(o, w[0], w[1]);
        let bits = o.fadd(bits, one);
        let scale = o.constant(2f64.powi(-53));
        (o.fmul(bits, scale), cos_turn(o, w[2], 32))
    } else {
        let top = o.shr(w[0], 8);
        let bits = o.to_float(top);
        let bits = o.fadd(bits, one);
        let scale = o.constant(2f64.powi(-24));
        let turn = o.shr(w[1], 8);
        (o.fmul(bits, scale), cos_turn(o, turn, 24))
    };
    let l = ln(o, u);
    let minus_two = o.constant(-2.0);
    let r2 = o.fmul(l, minus_two);
    let r = o.fsqrt(r2);
    o.fmul(r, cos)
}

/// `(a >> 5) · 2^26 + (b >> 6)`: a 53-bit integer, exactly.
fn bits53<O: FloatOps>(o: &mut O, a: O::Word, b: O::Word) -> O::Float {
    let (a, b) = (o.shr(a, 5), o.shr(b, 6));
    let (a, b) = (o.to_float(a), o.to_float(b));
    let shift = o.constant(2f64.powi(26));
    let a = o.fmul(a, shift);
    o.fadd(a, b)
}

/// Horner: `c[0] + z·(c[1] + z·(…))`.
fn poly<O: FloatOps>(o: &mut O, z: O::Float, c: &[f64]) -> O::Float {
    let Some((&last, rest)) = c.split_last() else { return o.constant(0.0) };
    let mut p = o.constant(last);
    for &k in rest.iter().rev() {
        let pz = o.fmul(p, z);
        let k = o.constant(k);
        p = o.fadd(pz, k);
    }
    p
}

/// Natural log of `u ∈ (0, 1]` (normal floats only).
fn ln<O: FloatOps>(o: &mut O, u: O::Float) -> O::Float {
    let coefs = if o.double() { &LN_SERIES[..] } else { &LN_SERIES[..6] };
    let (e, m) = o.frexp(u);
    let sqrt2 = o.constant(std::f64::consts::SQRT_2);
    let (half, one) = (o.constant(0.5), o.constant(1.0));
    let m_half = o.fmul(m, half);
    let e_next = o.fadd(e, one);
    let e = o.select_gt(m, sqrt2, e_next, e);
    let m = o.select_gt(m, sqrt2, m_half, m);
    let num = o.fsub(m, one);
    let den = o.fadd(m, one);
    let s = o.fdiv(num, den);
    let z = o.fmul(s, s);
    let p = poly(o, z, coefs);
    let two_s = o.fadd(s, s);
    let tail = o.fmul(two_s, p);
    let ln2 = o.constant(std::f64::consts::LN_2);
    let head = o.fmul(e, ln2);
    o.fadd(head, tail)
}

/// `cos(2π t)` for the turn `t = v / 2^bits` (`v < 2^bits`, `bits` = 24 or 32).
fn cos_turn<O: FloatOps>(o: &mut O, v: O::Word, bits: u32) -> O::Float {
    // t = (q + d / 2^(bits-2)) / 4 with q the nearest quarter (mod 4), d ∈ [-2^(bits-3), 2^(bits-3)).
    let half_quarter = o.word(1 << (bits - 3));
    let shifted = o.add(v, half_quarter);
    let q = o.shr(shifted, bits - 2);
    let q = o.and(q, 3);
    let rem = o.and(shifted, (1u32 << (bits - 2)) - 1);
    let rem = o.to_float(rem);
    let offset = o.constant(f64::from(1u32 << (bits - 3)));
    let d = o.fsub(rem, offset);
    let step = o.constant(std::f64::consts::FRAC_PI_2 * 2f64.powi(-(bits as i32 - 2)));
    let theta = o.fmul(d, step);
    let z = o.fmul(theta, theta);
    let terms = if o.double() { COS_SERIES.len() } else { 6 };
    let cos = poly(o, z, &COS_SERIES[..terms]);
    let sin_over = poly(o, z, &SIN_SERIES[..terms]);
    let sin = o.fmul(theta, sin_over);
    // q = 0: cos θ, 1: −sin θ, 2: −cos θ, 3: sin θ.
    let odd = o.and(q, 1);
    let odd = o.to_float(odd);
    let q1 = o.word(1);
    let flip = o.add(q, q1);
    let flip = o.shr(flip, 1);
    let flip = o.and(flip, 1);
    let flip = o.to_float(flip);
    let half = o.constant(0.5);
    let pick = o.select_gt(odd, half, sin, cos);
    let zero = o.constant(0.0);
    let neg = o.fsub(zero, pick);
    o.select_gt(flip, half, neg, pick)
}

/// `1/(2k+1)`: `ln m = 2s·Σ s^2k/(2k+1)` (the first 6 for `f32`).
const LN_SERIES: [f64; 11] = [
    1.0,
    1.0 / 3.0,
    1.0 / 5.0,
    1.0 / 7.0,
    1.0 / 9.0,
    1.0 / 11.0,
    1.0 / 13.0,
    1.0 / 15.0,
    1.0 / 17.0,
    1.0 / 19.0,
    1.0 / 21.0,
];

/// Taylor coefficients of `cos θ` in `θ²`: `(−1)^k/(2k)!` (the first 6 for `f32`).
const COS_SERIES: [f64; 10] = [
    1.0,
    -1.0 / 2.0,
    1.0 / 24.0,
    -1.0 / 720.0,
    1.0 / 40_320.0,
    -1.0 / 3_628_800.0,
    1.0 / 479_001_600.0,
    -1.0 / 87_178_291_200.0,
    1.0 / 20_922_789_888_000.0,
    -1.0 / 6_402_373_705_728_000.0,
];

/// Taylor coefficients of `sin θ / θ` in `θ²`: `(−1)^k/(2k+1)!` (the first 6 for `f32`).
const SIN_SERIES: [f64; 10] = [
    1.0,
    -1.0 / 6.0,
    1.0 / 120.0,
    -1.0 / 5_040.0,
    1.0 / 362_880.0,
    -1.0 / 39_916_800.0,
    1.0 / 6_227_020_800.0,
    -1.0 / 1_307_674_368_000.0,
    1.0 / 355_687_428_096_000.0,
    -1.0 / 121_645_100_408_832_000.0,
];

/// [`FloatOps`] on plain `f32`/`f64` values: the interpreter's instantiation.
#[derive(Clone, Copy, Debug, Default)]
pub struct Scalar<F>(std::marker::PhantomData<F>);

impl<F> Scalar<F> {
    pub fn new() -> Scalar<F> {
        Scalar(std::marker::PhantomData)
    }
}

impl<F> WordOps for Scalar<F> {
    type Word = u32;
    fn word(&mut self, c: u32) -> u32 {
        c
    }
    fn add(&mut self, a: u32, b: u32) -> u32 {
        crate::philox::U32.add(a, b)
    }
    fn xor(&mut self, a: u32, b: u32) -> u32 {
        a ^ b
    }
    fn mul_hi_lo(&mut self, m: u32, a: u32) -> (u32, u32) {
        crate::philox::U32.mul_hi_lo(m, a)
    }
}

macro_rules! scalar_float_ops {
    ($t:ty, $double:expr, $mant:expr, $bias:expr, $one:expr) => {
        impl FloatOps for Scalar<$t> {
            type Float = $t;
            fn double(&self) -> bool {
                $double
            }
            fn shr(&mut self, a: u32, bits: u32) -> u32 {
                a >> bits
            }
            fn and(&mut self, a: u32, mask: u32) -> u32 {
                a & mask
            }
            fn to_float(&mut self, a: u32) -> $t {
                a as $t
            }
            fn constant(&mut self, c: f64) -> $t {
                c as $t
            }
            fn fadd(&mut self, a: $t, b: $t) -> $t {
                a + b
            }
            fn fsub(&mut self, a: $t, b: $t) -> $t {
                a - b
            }
            fn fmul(&mut self, a: $t, b: $t) -> $t {
                a * b
            }
            fn fdiv(&mut self, a: $t, b: $t) -> $t {
                a / b
            }
            fn fsqrt(&mut self, a: $t) -> $t {
                a.sqrt()
            }
            fn frexp(&mut self, x: $t) -> ($t, $t) {
                let bits = x.to_bits();
                let e = (bits >> $mant) as i64 - $bias;
                let m = <$t>::from_bits((bits & ((1 << $mant) - 1)) | $one);
                (e as $t, m)
            }
            fn select_gt(&mut self, a: $t, b: $t, x: $t, y: $t) -> $t {
                if a > b {
                    x
                } else {
                    y
                }
            }
        }
    };
}

scalar_float_ops!(f32, false, 23, 127, 0x3f80_0000);
scalar_float_ops!(f64, true, 52, 1023, 0x3ff0_0000_0000_0000);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix;

    fn words(r: &mut SplitMix) -> [u32; 4] {
        let (a, b) = (r.next_u64(), r.next_u64());
        [a as u32, (a >> 32) as u32, b as u32, (b >> 32) as u32]
    }

    /// The exact Box–Muller value of the words (f64 libm), and the radius.
    fn exact(w: [u32; 4], double: bool) -> (f64, f64) {
        let (u, t) = if double {
            let bits = f64::from(w[0] >> 5) * 2f64.powi(26) + f64::from(w[1] >> 6);
            ((bits + 1.0) * 2f64.powi(-53), f64::from(w[2]) * 2f64.powi(-32))
        } else {
            (f64::from((w[0] >> 8) + 1) * 2f64.powi(-24), f64::from(w[1] >> 8) * 2f64.powi(-24))
        };
        let r = (-2.0 * libm::log(u)).sqrt();
        (r * libm::cos(2.0 * std::f64::consts::PI * t), r)
    }

    /// The polynomial log and cosine keep `randn` within a few units of the last place of
    /// the exact Box–Muller value (relative to the radius, since `cos` crosses zero).
    #[test]
    fn normal_is_box_muller_within_a_few_ulp() {
        let mut r = SplitMix(5);
        let (mut worst32, mut worst64) = (0f64, 0f64);
        for _ in 0..200_000 {
            let w = words(&mut r);
            let (z, radius) = exact(w, false);
            let got = f64::from(normal(&mut Scalar::<f32>::new(), w));
            worst32 = worst32.max((got - z).abs() / (radius.max(1e-3) * f64::from(f32::EPSILON)));
            let (z, radius) = exact(w, true);
            let got = normal(&mut Scalar::<f64>::new(), w);
            worst64 = worst64.max((got - z).abs() / (radius.max(1e-3) * f64::EPSILON));
        }
        assert!(worst32 < 4.0 && worst64 < 4.0, "f32 {worst32} ulp, f64 {worst64} ulp");
    }

    /// Edges: the smallest and largest `u`, every quarter of the turn, and the uniform range.
    #[test]
    fn edges() {
        let single = |w: [u32; 4]| normal(&mut Scalar::<f32>::new(), w);
        let double = |w: [u32; 4]| normal(&mut Scalar::<f64>::new(), w);
        // u = 1 (all ones in w0): radius 0, a zero of either sign, never NaN.
        assert_eq!(single([u32::MAX, 0, 0, 0]).abs(), 0.0);
        assert_eq!(double([u32::MAX, u32::MAX, 0, 0]).abs(), 0.0);
        // u = 2^-24 / 2^-53 at turn 0: the largest values.
        assert_eq!(single([0, 0, 0, 0]), (48.0 * std::f32::consts::LN_2).sqrt());
        assert!((double([0, 0, 0, 0]) - (106.0 * std::f64::consts::LN_2).sqrt()).abs() < 1e-14);
        // Quarter turns: cos = 0, -1, 0 (to rounding of θ = 0).
        let q = |k: u32| single([0, k << 30, 0, 0]) / single([0, 0, 0, 0]);
        assert_eq!([q(1), q(2), q(3)].map(|v| (v * 1e6).round() / 1e6), [0.0, -1.0, 0.0]);
        let lo = uniform(&mut Scalar::<f32>::new(), [0; 4]);
        let hi = uniform(&mut Scalar::<f32>::new(), [u32::MAX; 4]);
        assert_eq!((lo, hi), (0.0, 1.0 - f32::EPSILON / 2.0));
        let hi = uniform(&mut Scalar::<f64>::new(), [u32::MAX; 4]);
        assert_eq!(hi, 1.0 - f64::EPSILON / 2.0);
    }
}
