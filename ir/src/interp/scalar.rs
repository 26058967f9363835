//! The meaning of every elementwise op on one element: the single definition that the
//! interpreter maps over arrays and that the optimiser's constant folding calls, so a folded
//! constant is bit for bit what the interpreter would have computed.
//!
//! Floats: `f32` math uses libm's single-precision functions, `f64` libm; `maximum`/`minimum`
//! propagate NaN (the first NaN operand); `sign` of ±0 is +0 and of NaN is NaN; `round` is
//! half to even; `sigmoid` is evaluated in the form that does not overflow; `atan2(y, x)` is
//! libm's (quadrants and signed zeros as C's `atan2`). Integers wrap;
//! `sign` is `signum`.
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
    fn tanh(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn erf(self) -> Self;
    fn log1p(self) -> Self;
    fn expm1(self) -> Self;
    fn pow(self, y: Self) -> Self;
    fn asin(self) -> Self;
    fn acos(self) -> Self;
    fn atan(self) -> Self;
    fn sinh(self) -> Self;
    fn cosh(self) -> Self;
    fn atan2(self, x: Self) -> Self;
}

macro_rules! float_elem {
    ($t:ty, $exp:path, $log:path, $tanh:path, $sin:path, $cos:path, $erf:path, $log1p:path,
     $expm1:path, $pow:path, $asin:path, $acos:path, $atan:path, $sinh:path, $cosh:path,
     $atan2:path) => {
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
        }
    };
}

float_elem!(
    f32,
    libm::expf,
    libm::logf,
    libm::tanhf,
    libm::sinf,
    libm::cosf,
    libm::erff,
    libm::log1pf,
    libm::expm1f,
    libm::powf,
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
    libm::tanh,
    libm::sin,
    libm::cos,
    libm::erf,
    libm::log1p,
    libm::expm1,
    libm::pow,
    libm::asin,
    libm::acos,
    libm::atan,
    libm::sinh,
    libm::cosh,
    libm::atan2
);

/// A unary op on a float; `None` for `logical_not`.
#[inline(always)]
pub fn float_unary<T: FloatElem>(op: UnaryOp, x: T) -> Option<T> {
    use UnaryOp::*;
    Some(match op {
        Neg => -x,
        Abs => x.abs(),
        Exp => x.exp(),
        Log => x.log(),
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
        LogicalNot => return None,
        Asin => x.asin(),
        Acos => x.acos(),
        Atan => x.atan(),
        Sinh => x.sinh(),
        Cosh => x.cosh(),
    })
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
        Eq | Ne | Lt | Le | Gt | Ge | LogicalAnd | LogicalOr => return None,
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
        Floor | Ceil | Round | Exp | Log | Sqrt | Rsqrt | Tanh | Sigmoid | Sin | Cos | Erf
        | Reciprocal | Log1p | Expm1 | LogicalNot => None,
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
        Add | Sub | Mul | Div | Pow | Maximum | Minimum | LogicalAnd | LogicalOr => return None,
        Atan2 => return None,
    })
}

/// A binary op on bools: logical ops, `eq`, `ne`.
#[inline(always)]
pub fn bool_binary(op: BinaryOp, x: bool, y: bool) -> Option<bool> {
    use BinaryOp::*;
    match op {
        LogicalAnd => Some(x & y),
        LogicalOr => Some(x | y),
        Eq | Ne => compare(op, x, y),
        Lt | Le | Gt | Ge | Maximum | Minimum | Add | Sub | Mul | Div | Pow => None,
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
        for op in ALL_UNARY {
            let t = op.dtypes();
            assert_eq!(float_unary(op, 0.5f32).is_some(), t.contains(DType::F32), "{op}");
            assert_eq!(float_unary(op, 0.5f64).is_some(), t.contains(DType::F64), "{op}");
            assert_eq!(int_unary(op, 3i32).is_some(), t.contains(DType::I32), "{op}");
            assert_eq!(int_unary(op, 3i64).is_some(), t.contains(DType::I64), "{op}");
        }
        for op in ALL_BINARY {
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
    }
}
