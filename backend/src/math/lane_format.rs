//! [`LaneFormat`] (the float lane formats the approximations compute on) and, without the
//! JIT, the comparison predicates [`FloatCC`] and [`IntCC`] with Cranelift's variants and
//! meaning (with the JIT they are Cranelift's own), so that the wide routines build without
//! Cranelift (the AOT runtime).

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

/// Float comparisons, as Cranelift's `FloatCC` (IEEE predicates; "unordered" holds when an
/// operand is NaN).
#[cfg(not(feature = "jit"))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FloatCC {
    Ordered,
    Unordered,
    Equal,
    NotEqual,
    OrderedNotEqual,
    UnorderedOrEqual,
    LessThan,
    LessThanOrEqual,
    GreaterThan,
    GreaterThanOrEqual,
    UnorderedOrLessThan,
    UnorderedOrLessThanOrEqual,
    UnorderedOrGreaterThan,
    UnorderedOrGreaterThanOrEqual,
}

/// Integer comparisons, as Cranelift's `IntCC`.
#[cfg(not(feature = "jit"))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IntCC {
    Equal,
    NotEqual,
    SignedLessThan,
    SignedGreaterThanOrEqual,
    SignedGreaterThan,
    SignedLessThanOrEqual,
    UnsignedLessThan,
    UnsignedGreaterThanOrEqual,
    UnsignedGreaterThan,
    UnsignedLessThanOrEqual,
}
