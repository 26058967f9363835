//! [`Lanes`]: the vocabulary every approximation is written in, so one source has several
//! instantiations.
//!
//! The functions in `exp.rs`, `log.rs`, `tanh.rs`, … are generic over a `Lanes` implementation
//! and never name a concrete type. Two kinds of implementation exist:
//! - [`super::ops::Ctx`], which *emits* Cranelift IR (`F`, `I` and `M` are all `Value`s): the
//!   inline code of every JIT kernel (`f32x4`/`f64x2` bodies and scalar tails);
//! - the SIMD implementations in `crate::wide` (`__m512`, `__m256`, …), which *compute*: each
//!   method is one `#[inline(always)]` intrinsic, so a generic function instantiated inside a
//!   `#[target_feature]` routine compiles to straight AVX-512/AVX2 code.
//!
//! Both run the same operations in the same order on the same constants, so a routine is bit
//! for bit the inline code (NaN payloads aside, which `math::canonical_nan` settles): every
//! method is a single IEEE operation or an
//! exact bit manipulation, `mul_add` is one fused rounding exactly where [`Lanes::has_fma`]
//! says so, comparisons are IEEE predicates with Cranelift's [`FloatCC`]/[`IntCC`] meaning,
//! and `min_c`/`max_c` keep a NaN operand as `minps`/`maxps` with the constant first do. The
//! provided methods below are the shared compositions (Horner, rounding to an integer, `2ⁿ`
//! from bits, sign copies): implementations must not override them with anything but the same
//! operation sequence.

use super::{Fallback, FloatCC, IntCC, LaneFormat};

/// Lane-wise float (`F`), integer (`I`, same lane width) and mask (`M`) arithmetic.
///
/// Every operation is element-wise; no method mixes lanes.
pub(crate) trait Lanes {
    /// A vector (or scalar) of floats.
    type F: Copy;
    /// Integers with the float lanes' width and count (the float bits reinterpreted).
    type I: Copy;
    /// A lane mask, the result of a comparison.
    type M: Copy;

    /// The lanes' float format.
    fn fmt(&self) -> LaneFormat;
    /// Whether [`Self::mul_add`] is a single rounding (changes which reduction constants are
    /// exact).
    fn has_fma(&self) -> bool;

    /// A float constant in every lane (rounded to the lane precision).
    fn c(&mut self, v: f64) -> Self::F;
    /// An integer constant in every lane (truncated to the lane width).
    fn ci(&mut self, v: i64) -> Self::I;

    fn add(&mut self, x: Self::F, y: Self::F) -> Self::F;
    fn sub(&mut self, x: Self::F, y: Self::F) -> Self::F;
    fn mul(&mut self, x: Self::F, y: Self::F) -> Self::F;
    fn div(&mut self, x: Self::F, y: Self::F) -> Self::F;
    /// `|x|` (clears the sign bit, NaN included).
    fn abs(&mut self, x: Self::F) -> Self::F;
    /// `−x` (flips the sign bit, NaN included).
    fn neg(&mut self, x: Self::F) -> Self::F;
    fn sqrt(&mut self, x: Self::F) -> Self::F;
    /// `x·y + z`: one rounding when [`Self::has_fma`], otherwise a rounded `mul` then `add`.
    fn mul_add(&mut self, x: Self::F, y: Self::F, z: Self::F) -> Self::F;

    /// Lane mask of `x <cc> y` on floats.
    fn fcmp(&mut self, cc: FloatCC, x: Self::F, y: Self::F) -> Self::M;
    /// Lane mask of `x <cc> y` on integers.
    fn icmp(&mut self, cc: IntCC, x: Self::I, y: Self::I) -> Self::M;
    /// Lane-wise `mask ? x : y`.
    fn select(&mut self, mask: Self::M, x: Self::F, y: Self::F) -> Self::F;
    fn mask_and(&mut self, m: Self::M, n: Self::M) -> Self::M;
    fn mask_or(&mut self, m: Self::M, n: Self::M) -> Self::M;
    fn mask_xor(&mut self, m: Self::M, n: Self::M) -> Self::M;

    /// Reinterprets float bits as integers.
    fn bits_of(&mut self, x: Self::F) -> Self::I;
    /// Reinterprets integer bits as floats.
    fn float_of_bits(&mut self, i: Self::I) -> Self::F;
    fn iadd(&mut self, x: Self::I, y: Self::I) -> Self::I;
    fn isub(&mut self, x: Self::I, y: Self::I) -> Self::I;
    fn band(&mut self, x: Self::I, y: Self::I) -> Self::I;
    fn bor(&mut self, x: Self::I, y: Self::I) -> Self::I;
    fn bxor(&mut self, x: Self::I, y: Self::I) -> Self::I;
    /// `x << amount` (`amount` below the lane width).
    fn shl(&mut self, x: Self::I, amount: u32) -> Self::I;
    /// Logical `x >> amount` (`amount` below the lane width).
    fn ushr(&mut self, x: Self::I, amount: u32) -> Self::I;

    /// `y` with the lanes `mask` sets replaced by `f` of the same lanes of `x`, computed by
    /// the scalar [`Fallback`] (`fallback.rs`): the slow path for lanes outside an
    /// approximation's accurate range. Implementations pay a test of `mask` when no lane is
    /// set, and branch (never computing anything else differently) when one is.
    fn fallback(&mut self, f: Fallback, mask: Self::M, x: Self::F, y: Self::F) -> Self::F;

    /// `x` clamped to `≤ hi`; NaN lanes stay NaN: `hi < x ? hi : x` (one `minps(hi, x)`).
    #[inline(always)]
    fn min_c(&mut self, x: Self::F, hi: f64) -> Self::F {
        let k = self.c(hi);
        let m = self.fcmp(FloatCC::LessThan, k, x);
        self.select(m, k, x)
    }

    /// `x` clamped to `≥ lo`; NaN lanes stay NaN: `x < lo ? lo : x` (one `maxps(lo, x)`).
    #[inline(always)]
    fn max_c(&mut self, x: Self::F, lo: f64) -> Self::F {
        let m = self.fcmp_c(FloatCC::LessThan, x, lo);
        self.select_c(m, lo, x)
    }

    /// Horner evaluation of `coeffs[0] + coeffs[1]·t + … + coeffs[n]·tⁿ`.
    #[inline(always)]
    fn poly(&mut self, t: Self::F, coeffs: &[f64]) -> Self::F {
        let Some((&last, rest)) = coeffs.split_last() else {
            return self.c(0.0);
        };
        let mut acc = self.c(last);
        for &k in rest.iter().rev() {
            let ck = self.c(k);
            acc = self.mul_add(acc, t, ck);
        }
        acc
    }

    /// Lane mask of `x <cc> c` for a float constant `c`.
    #[inline(always)]
    fn fcmp_c(&mut self, cc: FloatCC, x: Self::F, c: f64) -> Self::M {
        let k = self.c(c);
        self.fcmp(cc, x, k)
    }

    /// Lane-wise `mask ? c : y` for a float constant `c`.
    #[inline(always)]
    fn select_c(&mut self, mask: Self::M, c: f64, y: Self::F) -> Self::F {
        let k = self.c(c);
        self.select(mask, k, y)
    }

    /// `x + c` on integers for a constant `c`.
    #[inline(always)]
    fn iadd_c(&mut self, x: Self::I, c: i64) -> Self::I {
        let k = self.ci(c);
        self.iadd(x, k)
    }

    /// `x & c` on integers for a constant `c`.
    #[inline(always)]
    fn band_c(&mut self, x: Self::I, c: i64) -> Self::I {
        let k = self.ci(c);
        self.band(x, k)
    }

    /// Rounds `x` to the nearest integer (ties to even), valid for `|x| < 2^(mantissa_bits-1)`.
    ///
    /// Returns `(n, bits)`: `n` is the rounded value as a float, `bits` the integer
    /// representation of `x + 1.5·2^mantissa_bits`, whose low bits hold `n` in two's complement
    /// (so `bits << mantissa_bits` is `n << mantissa_bits`, and `bits & 3` is `n mod 4`).
    #[inline(always)]
    fn round_int(&mut self, x: Self::F) -> (Self::F, Self::I) {
        let magic = self.c(self.fmt().round_magic());
        let t = self.add(x, magic);
        let n = self.sub(t, magic);
        let bits = self.bits_of(t);
        (n, bits)
    }

    /// Like [`Self::round_int`] for `x·y`, fusing the multiply into the magic-number add.
    #[inline(always)]
    fn round_int_of_product(&mut self, x: Self::F, y: f64) -> (Self::F, Self::I) {
        let magic = self.c(self.fmt().round_magic());
        let ky = self.c(y);
        let t = self.mul_add(x, ky, magic);
        let n = self.sub(t, magic);
        let bits = self.bits_of(t);
        (n, bits)
    }

    /// `2^n` for the integer `n` encoded in `round_bits` as returned by [`Self::round_int`];
    /// valid when `2^n` is a normal number.
    #[inline(always)]
    fn exp2_of_round_bits(&mut self, round_bits: Self::I) -> Self::F {
        let fmt = self.fmt();
        let shifted = self.shl(round_bits, fmt.mantissa_bits);
        let one_bits = fmt.bias << fmt.mantissa_bits;
        let scale_bits = self.iadd_c(shifted, one_bits);
        self.float_of_bits(scale_bits)
    }

    /// Copies the sign bit of `sign_source` onto the non-negative value `magnitude`.
    #[inline(always)]
    fn with_sign_of(&mut self, magnitude: Self::F, sign_source: Self::F) -> Self::F {
        let sign_bits = self.bits_of(sign_source);
        let sign = self.band_c(sign_bits, self.fmt().sign_mask());
        let mag_bits = self.bits_of(magnitude);
        let out = self.bor(mag_bits, sign);
        self.float_of_bits(out)
    }

    /// `x` with every NaN lane replaced by the canonical NaN: the x86 default NaN (negative,
    /// quiet, no payload: `0xffc0_0000` for `f32`), what an invalid operation such as `0/0`
    /// produces. An implementation may override this with one instruction of the same meaning
    /// (AVX-512's `vfixupimmps`).
    #[inline(always)]
    fn canonical_nan(&mut self, x: Self::F) -> Self::F {
        let nan = self.fcmp(FloatCC::Unordered, x, x);
        let bits = if self.fmt().is_f32() { 0xffc0_0000 } else { 0xfff8_0000_0000_0000u64 as i64 };
        let q = self.ci(bits);
        let q = self.float_of_bits(q);
        self.select(nan, q, x)
    }

    /// Returns `x` itself in lanes where `x` is `±0` (keeps the sign of zero for odd functions)
    /// and `y` elsewhere.
    #[inline(always)]
    fn keep_zero(&mut self, x: Self::F, y: Self::F) -> Self::F {
        let zero = self.fcmp_c(FloatCC::Equal, x, 0.0);
        self.select(zero, x, y)
    }
}
