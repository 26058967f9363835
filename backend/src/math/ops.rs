//! Type-generic emission helpers shared by every math function.
//!
//! [`Ctx`] wraps a [`FunctionBuilder`] together with the float type being computed on (`F32X4`,
//! `F64X2`, `F32` or `F64`) and exposes the handful of operations the approximations need —
//! arithmetic, `fma`-or-`mul+add`, Horner polynomials, lane-wise selects and integer
//! reinterpretation — so that each function is written once for all four types. Every helper is
//! branch-free: conditions are lane masks (`fcmp`/`icmp` results) consumed by `bitselect`
//! (vectors) or `select` (scalars).

use cranelift::codegen::ir::{types, InstBuilder, MemFlagsData, Type, Value};
use cranelift::frontend::FunctionBuilder;

use super::consts::{ConstKey, MathConsts};

pub use cranelift::codegen::ir::condcodes::{FloatCC, IntCC};

/// Numeric properties of a float lane type that the bit-manipulating algorithms depend on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LaneFormat {
    /// Width of the lane in bits (32 or 64).
    pub bits: u32,
    /// Number of explicit mantissa bits (23 or 52).
    pub mantissa_bits: u32,
    /// Exponent bias (127 or 1023).
    pub bias: i64,
}

impl LaneFormat {
    /// IEEE binary32.
    pub const F32: Self = Self { bits: 32, mantissa_bits: 23, bias: 127 };
    /// IEEE binary64.
    pub const F64: Self = Self { bits: 64, mantissa_bits: 52, bias: 1023 };

    /// The format of `ty`'s lanes, or `None` when the lanes are not `f32`/`f64`.
    pub fn of(ty: Type) -> Option<Self> {
        match ty.lane_type() {
            types::F32 => Some(Self::F32),
            types::F64 => Some(Self::F64),
            _ => None,
        }
    }

    /// Whether the lanes are single precision.
    pub fn is_f32(self) -> bool {
        self.bits == 32
    }

    /// `1.5 · 2^mantissa_bits`: adding it to a float of magnitude `< 2^(mantissa_bits-1)` rounds
    /// to an integer and leaves that integer in the low bits of the sum's representation.
    pub fn round_magic(self) -> f64 {
        1.5 * (self.mantissa_bits as f64).exp2()
    }

    /// Bit pattern of [`Self::round_magic`] in this format.
    pub fn round_magic_bits(self) -> i64 {
        if self.is_f32() {
            i64::from((self.round_magic() as f32).to_bits())
        } else {
            self.round_magic().to_bits() as i64
        }
    }

    /// The sign bit as an integer of the lane width.
    pub fn sign_mask(self) -> i64 {
        if self.is_f32() {
            0x8000_0000
        } else {
            i64::MIN
        }
    }

    /// All bits of a lane set, as an integer of the lane width.
    pub fn all_ones(self) -> i64 {
        if self.is_f32() {
            0xffff_ffff
        } else {
            -1
        }
    }

    /// Smallest positive normal number.
    pub fn min_normal(self) -> f64 {
        if self.is_f32() {
            f64::from(f32::MIN_POSITIVE)
        } else {
            f64::MIN_POSITIVE
        }
    }
}

/// Emission context: the builder, the float type, the hoisted constants and the ISA features.
pub(crate) struct Ctx<'a, 'f> {
    pub b: &'a mut FunctionBuilder<'f>,
    consts: &'a MathConsts,
    /// Float type of every value this context computes on.
    pub ty: Type,
    /// Integer type with the same lane layout as `ty`.
    pub ity: Type,
    pub fmt: LaneFormat,
    fma: bool,
}

impl<'a, 'f> Ctx<'a, 'f> {
    /// A context for `ty`, which must be a float type with `f32` or `f64` lanes (checked by the
    /// caller through [`LaneFormat::of`]).
    pub fn new(
        b: &'a mut FunctionBuilder<'f>,
        consts: &'a MathConsts,
        fmt: LaneFormat,
        ty: Type,
    ) -> Self {
        let fma = consts.features().fma;
        Self { b, consts, ty, ity: ty.as_int(), fmt, fma }
    }

    /// The same context retargeted to another float type (used to compute `f32` pow in `f64`).
    pub fn with_type<'c>(&'c mut self, ty: Type, fmt: LaneFormat) -> Ctx<'c, 'f> {
        Ctx { b: &mut *self.b, consts: self.consts, ty, ity: ty.as_int(), fmt, fma: self.fma }
    }

    /// A float constant of type `ty` (rounded to the lane precision), hoisted when available.
    pub fn c(&mut self, v: f64) -> Value {
        let bits = if self.fmt.is_f32() { u64::from((v as f32).to_bits()) } else { v.to_bits() };
        self.consts.get_or_emit(self.b, ConstKey { ty: self.ty, bits })
    }

    /// An integer constant of type `ity` (truncated to the lane width), hoisted when available.
    pub fn ci(&mut self, v: i64) -> Value {
        let bits = if self.fmt.is_f32() { u64::from(v as u32) } else { v as u64 };
        self.consts.get_or_emit(self.b, ConstKey { ty: self.ity, bits })
    }

    pub fn add(&mut self, x: Value, y: Value) -> Value {
        self.b.ins().fadd(x, y)
    }
    pub fn sub(&mut self, x: Value, y: Value) -> Value {
        self.b.ins().fsub(x, y)
    }
    pub fn mul(&mut self, x: Value, y: Value) -> Value {
        self.b.ins().fmul(x, y)
    }
    pub fn div(&mut self, x: Value, y: Value) -> Value {
        self.b.ins().fdiv(x, y)
    }
    /// `|x|`. On vectors this clears the sign bits with a hoisted mask: Cranelift's `fabs`
    /// rebuilds its mask (`pcmpeqd` + `psrld`) at every use.
    pub fn abs(&mut self, x: Value) -> Value {
        if !self.ty.is_vector() {
            return self.b.ins().fabs(x);
        }
        let bits = self.bits_of(x);
        let magnitude_mask = !self.fmt.sign_mask() & self.fmt.all_ones();
        let magnitude = self.band_c(bits, magnitude_mask);
        self.float_of_bits(magnitude)
    }
    pub fn neg(&mut self, x: Value) -> Value {
        self.b.ins().fneg(x)
    }
    pub fn sqrt(&mut self, x: Value) -> Value {
        self.b.ins().sqrt(x)
    }

    /// `x·y + z`, fused when the ISA has a native `fma`, otherwise a rounded `mul` then `add`.
    pub fn mul_add(&mut self, x: Value, y: Value, z: Value) -> Value {
        if self.fma {
            self.b.ins().fma(x, y, z)
        } else {
            let p = self.b.ins().fmul(x, y);
            self.b.ins().fadd(p, z)
        }
    }

    /// Whether [`Self::mul_add`] is a single rounding (changes which reduction constants are
    /// exact).
    pub fn has_fma(&self) -> bool {
        self.fma
    }

    /// Horner evaluation of `coeffs[0] + coeffs[1]·t + … + coeffs[n]·tⁿ`.
    pub fn poly(&mut self, t: Value, coeffs: &[f64]) -> Value {
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

    /// Lane mask of `x <cc> y` on floats.
    pub fn fcmp(&mut self, cc: FloatCC, x: Value, y: Value) -> Value {
        self.b.ins().fcmp(cc, x, y)
    }

    /// Lane mask of `x <cc> c` for a float constant `c`.
    pub fn fcmp_c(&mut self, cc: FloatCC, x: Value, c: f64) -> Value {
        let k = self.c(c);
        self.b.ins().fcmp(cc, x, k)
    }

    /// Lane mask of `x <cc> y` on integers of type `ity`.
    pub fn icmp(&mut self, cc: IntCC, x: Value, y: Value) -> Value {
        self.b.ins().icmp(cc, x, y)
    }

    /// Lane-wise `mask ? x : y` for float or integer values of this context's lane layout.
    pub fn select(&mut self, mask: Value, x: Value, y: Value) -> Value {
        if self.ty.is_vector() {
            let vty = self.b.func.dfg.value_type(x);
            let m = if self.b.func.dfg.value_type(mask) == vty {
                mask
            } else {
                self.b.ins().bitcast(vty, MemFlagsData::new(), mask)
            };
            self.b.ins().bitselect(m, x, y)
        } else {
            self.b.ins().select(mask, x, y)
        }
    }

    /// Lane-wise `mask ? c : y` for a float constant `c`.
    pub fn select_c(&mut self, mask: Value, c: f64, y: Value) -> Value {
        let k = self.c(c);
        self.select(mask, k, y)
    }

    pub fn mask_and(&mut self, m: Value, n: Value) -> Value {
        self.b.ins().band(m, n)
    }
    pub fn mask_or(&mut self, m: Value, n: Value) -> Value {
        self.b.ins().bor(m, n)
    }

    /// `x` clamped to `≤ hi`; NaN lanes stay NaN. Written as `hi < x ? hi : x` so that on
    /// `f32x4`/`f64x2` Cranelift lowers it to one `minps(hi, x)` (which returns `x` for NaN).
    pub fn min_c(&mut self, x: Value, hi: f64) -> Value {
        let k = self.c(hi);
        let m = self.b.ins().fcmp(FloatCC::LessThan, k, x);
        self.select(m, k, x)
    }

    /// `x` clamped to `≥ lo`; NaN lanes stay NaN (`x < lo ? lo : x`, one `maxps(lo, x)` on
    /// vectors).
    pub fn max_c(&mut self, x: Value, lo: f64) -> Value {
        let m = self.fcmp_c(FloatCC::LessThan, x, lo);
        self.select_c(m, lo, x)
    }

    /// Reinterprets float bits as the integer type `ity`.
    pub fn bits_of(&mut self, x: Value) -> Value {
        self.b.ins().bitcast(self.ity, MemFlagsData::new(), x)
    }

    /// Reinterprets integer bits of type `ity` as the float type `ty`.
    pub fn float_of_bits(&mut self, i: Value) -> Value {
        self.b.ins().bitcast(self.ty, MemFlagsData::new(), i)
    }

    pub fn isub(&mut self, x: Value, y: Value) -> Value {
        self.b.ins().isub(x, y)
    }
    pub fn bor(&mut self, x: Value, y: Value) -> Value {
        self.b.ins().bor(x, y)
    }
    pub fn bxor(&mut self, x: Value, y: Value) -> Value {
        self.b.ins().bxor(x, y)
    }
    pub fn shl(&mut self, x: Value, amount: u32) -> Value {
        self.b.ins().ishl_imm_u(x, i64::from(amount))
    }
    pub fn ushr(&mut self, x: Value, amount: u32) -> Value {
        self.b.ins().ushr_imm_u(x, i64::from(amount))
    }

    /// `x + c` on integers for a constant `c`.
    pub fn iadd_c(&mut self, x: Value, c: i64) -> Value {
        let k = self.ci(c);
        self.b.ins().iadd(x, k)
    }

    /// `x & c` on integers for a constant `c`.
    pub fn band_c(&mut self, x: Value, c: i64) -> Value {
        let k = self.ci(c);
        self.b.ins().band(x, k)
    }

    /// Rounds `x` to the nearest integer (ties to even), valid for `|x| < 2^(mantissa_bits-1)`.
    ///
    /// Returns `(n, bits)`: `n` is the rounded value as a float, `bits` the integer
    /// representation of `x + 1.5·2^mantissa_bits`, whose low bits hold `n` in two's complement
    /// (so `bits << mantissa_bits` is `n << mantissa_bits`, and `bits & 3` is `n mod 4`).
    pub fn round_int(&mut self, x: Value) -> (Value, Value) {
        let magic = self.c(self.fmt.round_magic());
        let t = self.add(x, magic);
        let n = self.sub(t, magic);
        let bits = self.bits_of(t);
        (n, bits)
    }

    /// Like [`Self::round_int`] for `x·y`, fusing the multiply into the magic-number add.
    pub fn round_int_of_product(&mut self, x: Value, y: f64) -> (Value, Value) {
        let magic = self.c(self.fmt.round_magic());
        let ky = self.c(y);
        let t = self.mul_add(x, ky, magic);
        let n = self.sub(t, magic);
        let bits = self.bits_of(t);
        (n, bits)
    }

    /// `2^n` for the integer `n` encoded in `round_bits` as returned by [`Self::round_int`];
    /// valid when `2^n` is a normal number.
    pub fn exp2_of_round_bits(&mut self, round_bits: Value) -> Value {
        let shifted = self.shl(round_bits, self.fmt.mantissa_bits);
        let one_bits = self.fmt.bias << self.fmt.mantissa_bits;
        let scale_bits = self.iadd_c(shifted, one_bits);
        self.float_of_bits(scale_bits)
    }

    /// Copies the sign bit of `sign_source` onto the non-negative value `magnitude`.
    pub fn with_sign_of(&mut self, magnitude: Value, sign_source: Value) -> Value {
        let sign_bits = self.bits_of(sign_source);
        let sign = self.band_c(sign_bits, self.fmt.sign_mask());
        let mag_bits = self.bits_of(magnitude);
        let out = self.bor(mag_bits, sign);
        self.float_of_bits(out)
    }

    /// Returns `x` itself in lanes where `x` is `±0` (keeps the sign of zero for odd functions)
    /// and `y` elsewhere.
    pub fn keep_zero(&mut self, x: Value, y: Value) -> Value {
        let zero = self.fcmp_c(FloatCC::Equal, x, 0.0);
        self.select(zero, x, y)
    }
}
