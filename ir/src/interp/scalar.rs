//! The meaning of every elementwise op on one element: the single definition that the
//! interpreter maps over arrays and that the optimiser's constant folding calls, so a folded
//! constant is bit for bit what the interpreter would have computed.
//!
//! Floats: `f32` math uses libm's single-precision functions, `f64` libm; `maximum`/`minimum`
//! propagate NaN (the first NaN operand); `sign` of ±0 is +0 and of NaN is NaN; `round` is
//! half to even; `sigmoid` is evaluated in the form that does not overflow; `atan2(y, x)` is
//! libm's (quadrants and signed zeros as C's `atan2`). Integers wrap;
//! `sign` is `signum`.
//!
//! Predicates, division and bitwise ops follow NumPy: `isnan`/`isinf` are false and `isfinite`
//! true for integers and bools; `floor_div`/`remainder` on floats are NumPy's `divmod` (`fmod`
//! corrected to the divisor's sign, the quotient snapped to an integer), on integers floor
//! division with `x // 0 == x % 0 == 0` and `MIN // -1 == MIN`; shifts by a count outside
//! `[0, bits)` (negative included) give 0, or the sign fill for right shifts.
//! by squaring (negative exponents give `0` except for bases `±1`). Casts follow Rust's `as`.
//!
//! Each function returns `None` for an (op, dtype) pair outside the op table
//! ([`crate::op::UnaryOp::dtypes`] and friends); the verifier rules those out before anything
//! runs.

use crate::op::{BinaryOp, UnaryOp};

/// Float element types and their libm functions.
pub trait FloatElem: Copy + PartialOrd + std::ops::Neg<Output = Self> {
    const ZERO: Self;
    const ONE: Self;
    fn add(self, y: Self) -> Self;
    fn sub(self, y: Self) -> Self;
    fn mul(self, y: Self) -> Self;
    fn div(self, y: Self) -> Self;
    fn is_nan(self) -> bool;
    fn abs(self) -> Self;
    fn sqrt(self) -> Self;
    fn floor(self) -> Self;
    fn ceil(self) -> Self;
    fn round_even(self) -> Self;
    fn exp(self) -> Self;
    fn log(self) -> Self;
    fn log2(self) -> Self;
    fn tanh(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn erf(self) -> Self;
    fn log1p(self) -> Self;
    fn expm1(self) -> Self;
    fn pow(self, y: Self) -> Self;
    fn is_infinite(self) -> bool;
    fn fmod(self, y: Self) -> Self;
    fn copysign(self, sign: Self) -> Self;
    fn asin(self) -> Self;
    fn acos(self) -> Self;
    fn atan(self) -> Self;
    fn sinh(self) -> Self;
    fn cosh(self) -> Self;
    fn atan2(self, x: Self) -> Self;
    /// `self·y + z` rounded once (IEEE 754 fusedMultiplyAdd; Rust's `mul_add`, a libm call
    /// where the CPU has no FMA instruction: correctly rounded either way).
    fn mul_add(self, y: Self, z: Self) -> Self;
}

macro_rules! float_elem {
    ($t:ty, $exp:path, $log:path, $log2:path, $tanh:path, $sin:path, $cos:path, $erf:path, $log1p:path,
     $expm1:path, $pow:path, $fmod:path, $asin:path, $acos:path, $atan:path, $sinh:path,
     $cosh:path, $atan2:path) => {
        impl FloatElem for $t {
            const ZERO: $t = 0.0;
            const ONE: $t = 1.0;
            #[inline(always)]
            fn add(self, y: $t) -> $t {
                self + y
            }
            #[inline(always)]
            fn sub(self, y: $t) -> $t {
                self - y
            }
            #[inline(always)]
            fn mul(self, y: $t) -> $t {
                self * y
            }
            #[inline(always)]
            fn div(self, y: $t) -> $t {
                self / y
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            #[inline(always)]
            fn abs(self) -> $t {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn sqrt(self) -> $t {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn floor(self) -> $t {
                <$t>::floor(self)
            }
            #[inline(always)]
            fn ceil(self) -> $t {
                <$t>::ceil(self)
            }
            #[inline(always)]
            fn round_even(self) -> $t {
                <$t>::round_ties_even(self)
            }
            #[inline(always)]
            fn exp(self) -> $t {
                $exp(self)
            }
            #[inline(always)]
            fn log(self) -> $t {
                $log(self)
            }
            #[inline(always)]
            fn tanh(self) -> $t {
                $tanh(self)
            }
            #[inline(always)]
            fn sin(self) -> $t {
                $sin(self)
            }
            #[inline(always)]
            fn cos(self) -> $t {
                $cos(self)
            }
            #[inline(always)]
            fn log2(self) -> $t {
                $log2(self)
            }
            #[inline(always)]
            fn erf(self) -> $t {
                $erf(self)
            }
            #[inline(always)]
            fn log1p(self) -> $t {
                $log1p(self)
            }
            #[inline(always)]
            fn expm1(self) -> $t {
                $expm1(self)
            }
            #[inline(always)]
            fn pow(self, y: $t) -> $t {
                $pow(self, y)
            }
            #[inline(always)]
            fn is_infinite(self) -> bool {
                <$t>::is_infinite(self)
            }
            #[inline(always)]
            fn fmod(self, y: $t) -> $t {
                $fmod(self, y)
            }
            #[inline(always)]
            fn copysign(self, sign: $t) -> $t {
                <$t>::copysign(self, sign)
            }
            #[inline(always)]
            fn asin(self) -> $t {
                $asin(self)
            }
            #[inline(always)]
            fn acos(self) -> $t {
                $acos(self)
            }
            #[inline(always)]
            fn atan(self) -> $t {
                $atan(self)
            }
            #[inline(always)]
            fn sinh(self) -> $t {
                $sinh(self)
            }
            #[inline(always)]
            fn cosh(self) -> $t {
                $cosh(self)
            }
            #[inline(always)]
            fn atan2(self, x: $t) -> $t {
                $atan2(self, x)
            }
            #[inline(always)]
            fn mul_add(self, y: $t, z: $t) -> $t {
                <$t>::mul_add(self, y, z)
            }
        }
    };
}

float_elem!(
    f32,
    libm::expf,
    libm::logf,
    libm::log2f,
    libm::tanhf,
    libm::sinf,
    libm::cosf,
    libm::erff,
    libm::log1pf,
    libm::expm1f,
    libm::powf,
    libm::fmodf,
    libm::asinf,
    libm::acosf,
    libm::atanf,
    libm::sinhf,
    libm::coshf,
    libm::atan2f
);
float_elem!(
    f64,
    libm::exp,
    libm::log,
    libm::log2,
    libm::tanh,
    libm::sin,
    libm::cos,
    libm::erf,
    libm::log1p,
    libm::expm1,
    libm::pow,
    libm::fmod,
    libm::asin,
    libm::acos,
    libm::atan,
    libm::sinh,
    libm::cosh,
    libm::atan2
);

/// `mul_add(a, b, c) = a·b + c` with one rounding ([`crate::op::Op::MulAdd`]): NaN if any
/// operand is NaN or for `0·inf`, `inf - inf`; no intermediate overflow of `a·b`.
#[inline(always)]
pub fn float_mul_add<T: FloatElem>(a: T, b: T, c: T) -> T {
    a.mul_add(b, c)
}

/// A unary op on a float; `None` for `logical_not`, `bitwise_not` and the predicates (see
/// [`predicate`]).
#[inline(always)]
pub fn float_unary<T: FloatElem>(op: UnaryOp, x: T) -> Option<T> {
    use UnaryOp::*;
    Some(match op {
        Neg => -x,
        Abs => x.abs(),
        Exp => x.exp(),
        Log => x.log(),
        Log2 => x.log2(),
        Sqrt => x.sqrt(),
        Rsqrt => T::ONE.div(x.sqrt()),
        Tanh => x.tanh(),
        Sigmoid => {
            if x >= T::ZERO {
                T::ONE.div(T::ONE.add((-x).exp()))
            } else {
                let e = x.exp();
                e.div(T::ONE.add(e))
            }
        }
        Sin => x.sin(),
        Cos => x.cos(),
        Erf => x.erf(),
        Floor => x.floor(),
        Ceil => x.ceil(),
        Round => x.round_even(),
        Sign => {
            if x > T::ZERO {
                T::ONE
            } else if x < T::ZERO {
                -T::ONE
            } else if x == T::ZERO {
                T::ZERO
            } else {
                x
            }
        }
        Reciprocal => T::ONE.div(x),
        Log1p => x.log1p(),
        Expm1 => x.expm1(),
        LogicalNot | IsNan | IsInf | IsFinite | BitwiseNot => return None,
        Asin => x.asin(),
        Acos => x.acos(),
        Atan => x.atan(),
        Sinh => x.sinh(),
        Cosh => x.cosh(),
    })
}

/// A predicate (`isnan isinf isfinite`) of an element that is NaN (`nan`), infinite (`inf`)
/// or neither; `None` for other ops. Integers and bools are neither, as in NumPy.
#[inline(always)]
pub fn predicate(op: UnaryOp, nan: bool, inf: bool) -> Option<bool> {
    use UnaryOp::*;
    match op {
        IsNan => Some(nan),
        IsInf => Some(inf),
        IsFinite => Some(!nan && !inf),
        Neg | Abs | Exp | Log | Log2 | Sqrt | Rsqrt | Tanh | Sigmoid | Sin | Cos | Erf | Floor
        | Ceil | Round | Sign | Reciprocal | Log1p | Expm1 | LogicalNot | BitwiseNot => None,
        Asin | Acos | Atan | Sinh | Cosh => None,
    }
}

/// [`predicate`] of a float.
#[inline(always)]
pub fn float_predicate<T: FloatElem>(op: UnaryOp, x: T) -> Option<bool> {
    predicate(op, x.is_nan(), x.is_infinite())
}

/// NumPy's `divmod` of floats (`npy_divmod`): `(floor_div, remainder)`. The remainder is the
/// exact `fmod` moved to the divisor's sign, the quotient `(x - fmod) / y` snapped to an
/// integer; `y == 0` gives `(x / y, NaN)`.
#[inline(always)]
pub fn float_divmod<T: FloatElem>(x: T, y: T) -> (T, T) {
    let half = T::ONE.div(T::ONE.add(T::ONE));
    let mut m = x.fmod(y);
    if y == T::ZERO {
        return (x.div(y), m);
    }
    let mut div = x.sub(m).div(y);
    if m != T::ZERO {
        if (y < T::ZERO) != (m < T::ZERO) {
            m = m.add(y);
            div = div.sub(T::ONE);
        }
    } else {
        m = T::ZERO.copysign(y);
    }
    let q = if div != T::ZERO {
        let f = div.floor();
        if div.sub(f) > half {
            f.add(T::ONE)
        } else {
            f
        }
    } else {
        T::ZERO.copysign(x.div(y))
    };
    (q, m)
}

/// A non-comparison binary op on floats; `None` for comparisons and logical ops.
#[inline(always)]
pub fn float_binary<T: FloatElem>(op: BinaryOp, x: T, y: T) -> Option<T> {
    use BinaryOp::*;
    Some(match op {
        Add => x.add(y),
        Sub => x.sub(y),
        Mul => x.mul(y),
        Div => x.div(y),
        Pow => x.pow(y),
        Maximum => {
            if x >= y || x.is_nan() {
                x
            } else {
                y
            }
        }
        Minimum => {
            if x <= y || x.is_nan() {
                x
            } else {
                y
            }
        }
        FloorDiv => float_divmod(x, y).0,
        Remainder => float_divmod(x, y).1,
        Eq | Ne | Lt | Le | Gt | Ge | LogicalAnd | LogicalOr | BitwiseAnd | BitwiseOr
        | BitwiseXor | ShiftLeft | ShiftRight => return None,
        Atan2 => x.atan2(y),
    })
}

/// Integer element types (wrapping arithmetic).
pub trait IntElem: Copy + Ord {
    const ZERO: Self;
    const ONE: Self;
    fn wrapping_add(self, y: Self) -> Self;
    fn wrapping_sub(self, y: Self) -> Self;
    fn wrapping_mul(self, y: Self) -> Self;
    fn wrapping_neg(self) -> Self;
    fn wrapping_abs(self) -> Self;
    fn signum(self) -> Self;
    /// NumPy `floor_divide`: floor of the quotient; `x // 0 == 0`, `MIN // -1 == MIN`.
    fn floor_div(self, y: Self) -> Self;
    /// NumPy `remainder`: the sign of the divisor; `x % 0 == 0`.
    fn remainder(self, y: Self) -> Self;
    fn not(self) -> Self;
    fn and(self, y: Self) -> Self;
    fn or(self, y: Self) -> Self;
    fn xor(self, y: Self) -> Self;
    /// `x << y`, 0 for `y` outside `[0, bits)`.
    fn shift_left(self, y: Self) -> Self;
    /// Arithmetic `x >> y`, the sign fill for `y` outside `[0, bits)`.
    fn shift_right(self, y: Self) -> Self;
}

macro_rules! int_elem {
    ($t:ty) => {
        impl IntElem for $t {
            const ZERO: $t = 0;
            const ONE: $t = 1;
            #[inline(always)]
            fn wrapping_add(self, y: $t) -> $t {
                <$t>::wrapping_add(self, y)
            }
            #[inline(always)]
            fn wrapping_sub(self, y: $t) -> $t {
                <$t>::wrapping_sub(self, y)
            }
            #[inline(always)]
            fn wrapping_mul(self, y: $t) -> $t {
                <$t>::wrapping_mul(self, y)
            }
            #[inline(always)]
            fn wrapping_neg(self) -> $t {
                <$t>::wrapping_neg(self)
            }
            #[inline(always)]
            fn wrapping_abs(self) -> $t {
                <$t>::wrapping_abs(self)
            }
            #[inline(always)]
            fn signum(self) -> $t {
                <$t>::signum(self)
            }
            #[inline(always)]
            fn floor_div(self, y: $t) -> $t {
                if y == 0 {
                    return 0;
                }
                let (q, r) = (self.wrapping_div(y), self.wrapping_rem(y));
                if r != 0 && (r < 0) != (y < 0) {
                    q - 1
                } else {
                    q
                }
            }
            #[inline(always)]
            fn remainder(self, y: $t) -> $t {
                if y == 0 {
                    return 0;
                }
                let r = self.wrapping_rem(y);
                if r != 0 && (r < 0) != (y < 0) {
                    r + y
                } else {
                    r
                }
            }
            #[inline(always)]
            fn not(self) -> $t {
                !self
            }
            #[inline(always)]
            fn and(self, y: $t) -> $t {
                self & y
            }
            #[inline(always)]
            fn or(self, y: $t) -> $t {
                self | y
            }
            #[inline(always)]
            fn xor(self, y: $t) -> $t {
                self ^ y
            }
            #[inline(always)]
            fn shift_left(self, y: $t) -> $t {
                if (0..<$t>::BITS as $t).contains(&y) {
                    self << y
                } else {
                    0
                }
            }
            #[inline(always)]
            fn shift_right(self, y: $t) -> $t {
                if (0..<$t>::BITS as $t).contains(&y) {
                    self >> y
                } else {
                    self >> (<$t>::BITS - 1)
                }
            }
        }
    };
}

int_elem!(i32);
int_elem!(i64);

/// A unary op on an integer; `None` where the op table has no integer entry.
#[inline(always)]
pub fn int_unary<T: IntElem>(op: UnaryOp, x: T) -> Option<T> {
    use UnaryOp::*;
    match op {
        Neg => Some(x.wrapping_neg()),
        Abs => Some(x.wrapping_abs()),
        Sign => Some(x.signum()),
        BitwiseNot => Some(x.not()),
        Floor | Ceil | Round | Exp | Log | Log2 | Sqrt | Rsqrt | Tanh | Sigmoid | Sin | Cos
        | Erf | Reciprocal | Log1p | Expm1 | LogicalNot | IsNan | IsInf | IsFinite => None,
        Asin | Acos | Atan | Sinh | Cosh => None,
    }
}

/// A unary op on a bool: `logical_not` and `bitwise_not` (the same); `None` for the rest
/// (the predicates are [`predicate`]).
#[inline(always)]
pub fn bool_unary(op: UnaryOp, x: bool) -> Option<bool> {
    use UnaryOp::*;
    match op {
        LogicalNot | BitwiseNot => Some(!x),
        Neg | Abs | Exp | Log | Log2 | Sqrt | Rsqrt | Tanh | Sigmoid | Sin | Cos | Erf | Floor
        | Ceil | Round | Sign | Reciprocal | Log1p | Expm1 | IsNan | IsInf | IsFinite => None,
        Asin | Acos | Atan | Sinh | Cosh => None,
    }
}

/// A non-comparison binary op on integers; `None` outside the op table (`div`, `pow`, logical ops)
/// and for comparisons.
#[inline(always)]
pub fn int_binary<T: IntElem>(op: BinaryOp, x: T, y: T) -> Option<T> {
    use BinaryOp::*;
    Some(match op {
        Add => x.wrapping_add(y),
        Sub => x.wrapping_sub(y),
        Mul => x.wrapping_mul(y),
        Maximum => x.max(y),
        Minimum => x.min(y),
        FloorDiv => x.floor_div(y),
        Remainder => x.remainder(y),
        BitwiseAnd => x.and(y),
        BitwiseOr => x.or(y),
        BitwiseXor => x.xor(y),
        ShiftLeft => x.shift_left(y),
        ShiftRight => x.shift_right(y),
        Div | Pow | Eq | Ne | Lt | Le | Gt | Ge | LogicalAnd | LogicalOr => return None,
        Atan2 => return None,
    })
}

/// A comparison (`eq ne lt le gt ge`) of two elements of one dtype; `None` for other ops.
#[inline(always)]
pub fn compare<T: PartialOrd>(op: BinaryOp, x: T, y: T) -> Option<bool> {
    use BinaryOp::*;
    Some(match op {
        Eq => x == y,
        Ne => x != y,
        Lt => x < y,
        Le => x <= y,
        Gt => x > y,
        Ge => x >= y,
        Add | Sub | Mul | Div | Pow | Maximum | Minimum | LogicalAnd | LogicalOr | FloorDiv
        | Remainder | BitwiseAnd | BitwiseOr | BitwiseXor | ShiftLeft | ShiftRight => return None,
        Atan2 => return None,
    })
}

/// A binary op on bools: logical and bitwise ops (the same on bools), `eq`, `ne`.
#[inline(always)]
pub fn bool_binary(op: BinaryOp, x: bool, y: bool) -> Option<bool> {
    use BinaryOp::*;
    match op {
        LogicalAnd | BitwiseAnd => Some(x & y),
        LogicalOr | BitwiseOr => Some(x | y),
        BitwiseXor => Some(x ^ y),
        Eq | Ne => compare(op, x, y),
        Lt | Le | Gt | Ge | Maximum | Minimum | Add | Sub | Mul | Div | Pow | FloorDiv
        | Remainder | ShiftLeft | ShiftRight => None,
        Atan2 => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::op::{ALL_BINARY, ALL_UNARY};

    /// The op table ([`UnaryOp::dtypes`], [`BinaryOp::dtypes`]) and these definitions agree:
    /// `Some` exactly for the dtypes the table lists.
    #[test]
    fn definitions_cover_exactly_the_op_table() {
        for &op in ALL_UNARY {
            let t = op.dtypes();
            if op.is_predicate() {
                assert!(predicate(op, false, false).is_some(), "{op}");
                assert!(t.contains(DType::F32) && t.contains(DType::I32), "{op}");
                continue;
            }
            assert_eq!(float_unary(op, 0.5f32).is_some(), t.contains(DType::F32), "{op}");
            assert_eq!(float_unary(op, 0.5f64).is_some(), t.contains(DType::F64), "{op}");
            assert_eq!(int_unary(op, 3i32).is_some(), t.contains(DType::I32), "{op}");
            assert_eq!(int_unary(op, 3i64).is_some(), t.contains(DType::I64), "{op}");
            assert_eq!(bool_unary(op, true).is_some(), t.contains(DType::Bool), "{op}");
        }
        for &op in ALL_BINARY {
            let t = op.dtypes();
            let cmp = op.is_comparison();
            let f = if cmp {
                compare(op, 1.0f32, 2.0).is_some()
            } else {
                float_binary(op, 1.0f32, 2.0).is_some()
            };
            assert_eq!(f, t.contains(DType::F32), "{op}");
            let i = if cmp {
                compare(op, 1i64, 2).is_some()
            } else {
                int_binary(op, 1i64, 2).is_some()
            };
            assert_eq!(i, t.contains(DType::I64), "{op}");
            assert_eq!(bool_binary(op, true, false).is_some(), t.contains(DType::Bool), "{op}");
        }
    }

    #[test]
    fn edge_cases() {
        // sign(-0.0) is +0.0, not -0.0.
        let s = float_unary(UnaryOp::Sign, -0.0f32).unwrap();
        assert!(s == 0.0 && s.is_sign_positive());
        // f32 sigmoid(-90) is a subnormal, not 0.
        let v = float_unary(UnaryOp::Sigmoid, -90.0f32).unwrap();
        assert!(v > 0.0 && v < 1e-38);
        assert_eq!(int_binary(BinaryOp::Add, i32::MAX, 1), Some(i32::MIN));
        // Python's `//` and `%`, NumPy's values where Python raises.
        assert_eq!(int_binary(BinaryOp::FloorDiv, -7i32, 2), Some(-4));
        assert_eq!(int_binary(BinaryOp::Remainder, -7i32, 2), Some(1));
        assert_eq!(int_binary(BinaryOp::Remainder, 7i64, -2), Some(-1));
        assert_eq!(int_binary(BinaryOp::FloorDiv, i32::MIN, -1), Some(i32::MIN));
        assert_eq!(int_binary(BinaryOp::Remainder, i32::MIN, -1), Some(0));
        assert_eq!(int_binary(BinaryOp::FloorDiv, 5i64, 0), Some(0));
        assert_eq!(int_binary(BinaryOp::Remainder, 5i64, 0), Some(0));
        assert_eq!(float_divmod(1.0f64, 0.1), (9.0, 0.09999999999999995));
        assert_eq!(float_divmod(-5.0f64, f64::INFINITY), (-1.0, f64::INFINITY));
        let (q, r) = float_divmod(5.0f32, 0.0);
        assert!(q == f32::INFINITY && r.is_nan());
        assert_eq!(int_binary(BinaryOp::ShiftLeft, 1i32, 31), Some(i32::MIN));
        assert_eq!(int_binary(BinaryOp::ShiftLeft, 1i32, 32), Some(0));
        assert_eq!(int_binary(BinaryOp::ShiftLeft, 1i64, -1), Some(0));
        assert_eq!(int_binary(BinaryOp::ShiftRight, -8i32, 32), Some(-1));
        assert_eq!(int_binary(BinaryOp::ShiftRight, -8i64, -1), Some(-1));
        assert_eq!(int_binary(BinaryOp::ShiftRight, 8i64, 64), Some(0));
        assert_eq!(float_predicate(UnaryOp::IsFinite, f64::NAN), Some(false));
        assert_eq!(float_predicate(UnaryOp::IsInf, f32::NEG_INFINITY), Some(true));
    }
}
