//! Constant folding through the interpreter's own kernels: a folded constant is what the
//! interpreter computes for the same op on the same value, bit for bit, because it *is* that
//! computation (on a rank-0 tensor).
//!
//! Constants are [`Scalar`]s already converted to their dtype (an `f32` constant is an `f64`
//! holding an `f32` value). Every function gives `None` when the op is outside the op table for
//! that dtype or the operands are not constants of the stated dtype.

use super::{cast, elementwise};
use crate::attr::Scalar;
use crate::dtype::DType;
use crate::op::{BinaryOp, UnaryOp};
use crate::storage::bits;
use crate::tensor::Tensor;
use ndarray::{arr0, ArrayD};

/// A rank-0 tensor holding `s` as a value of `dtype` (`None` if it is not one exactly).
fn tensor(s: Scalar, dtype: DType) -> Option<Tensor> {
    Some(match (dtype, s) {
        (DType::Bool, Scalar::Bool(b)) => Tensor::Bool(arr0(b).into_dyn()),
        (DType::I32, Scalar::Int(i)) => Tensor::I32(arr0(i32::try_from(i).ok()?).into_dyn()),
        (DType::I64, Scalar::Int(i)) => Tensor::I64(arr0(i).into_dyn()),
        (DType::F32, Scalar::Float(f)) => {
            let v = f as f32;
            if f64::from(v).to_bits() != f.to_bits() && !f.is_nan() {
                return None;
            }
            Tensor::F32(arr0(v).into_dyn())
        }
        (DType::F64, Scalar::Float(f)) => Tensor::F64(arr0(f).into_dyn()),
        (DType::I8, Scalar::Int(i)) => Tensor::I8(arr0(i8::try_from(i).ok()?).into_dyn()),
        (DType::U8, Scalar::Int(i)) => Tensor::U8(arr0(u8::try_from(i).ok()?).into_dyn()),
        (DType::F16, Scalar::Float(f)) => {
            let h = bits::f64_to_f16(f);
            if f64::from(bits::f16_to_f32(h)).to_bits() != f.to_bits() && !f.is_nan() {
                return None;
            }
            Tensor::F16(arr0(half::f16::from_bits(h)).into_dyn())
        }
        (DType::BF16, Scalar::Float(f)) => {
            let h = bits::f64_to_bf16(f);
            if f64::from(bits::bf16_to_f32(h)).to_bits() != f.to_bits() && !f.is_nan() {
                return None;
            }
            Tensor::BF16(arr0(half::bf16::from_bits(h)).into_dyn())
        }
        _ => return None,
    })
}

fn first<T: Copy>(a: &ArrayD<T>) -> Option<T> {
    a.first().copied()
}

/// The element of a rank-0 tensor as a [`Scalar`].
fn scalar(t: &Tensor) -> Option<Scalar> {
    Some(match t {
        Tensor::Bool(a) => Scalar::Bool(first(a)?),
        Tensor::I8(a) => Scalar::Int(first(a)?.into()),
        Tensor::U8(a) => Scalar::Int(first(a)?.into()),
        Tensor::F16(a) => Scalar::Float(bits::f16_to_f32(first(a)?.to_bits()).into()),
        Tensor::BF16(a) => Scalar::Float(bits::bf16_to_f32(first(a)?.to_bits()).into()),
        Tensor::I32(a) => Scalar::Int(first(a)?.into()),
        Tensor::I64(a) => Scalar::Int(first(a)?),
        Tensor::F32(a) => Scalar::Float(first(a)?.into()),
        Tensor::F64(a) => Scalar::Float(first(a)?),
    })
}

/// `op(x)` for a constant `x` of `dtype`.
pub fn fold_unary(op: UnaryOp, dtype: DType, x: Scalar) -> Option<Scalar> {
    scalar(&elementwise::unary(op, &tensor(x, dtype)?).ok()?)
}

/// `op(a, b)` for constants of `dtype` (comparisons give bools).
pub fn fold_binary(op: BinaryOp, dtype: DType, a: Scalar, b: Scalar) -> Option<Scalar> {
    scalar(&elementwise::binary(op, &tensor(a, dtype)?, &tensor(b, dtype)?).ok()?)
}

/// `mul_add(a, b, c)` for float constants of `dtype` (one rounding, like the interpreter).
pub fn fold_mul_add(dtype: DType, a: Scalar, b: Scalar, c: Scalar) -> Option<Scalar> {
    let t = |s| tensor(s, dtype);
    scalar(&elementwise::mul_add(&t(a)?, &t(b)?, &t(c)?).ok()?)
}

/// `cast(x, to)` for a constant `x` of dtype `from`.
pub fn fold_cast(from: DType, to: DType, x: Scalar) -> Option<Scalar> {
    scalar(&cast::cast(&tensor(x, from)?, to))
}

/// `value` converted to `dtype` like `full`/`const` do (a literal's value in its dtype).
pub fn fold_cast_value(value: Scalar, dtype: DType) -> Scalar {
    scalar(&cast::full(value, dtype, &[])).unwrap_or(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_exactly_as_the_interpreter() {
        let third = fold_binary(BinaryOp::Div, DType::F32, Scalar::Float(1.0), Scalar::Float(3.0));
        assert_eq!(third, Some(Scalar::Float((1.0f32 / 3.0) as f64)));
        let wrapped =
            fold_binary(BinaryOp::Add, DType::I32, Scalar::Int(i32::MAX.into()), Scalar::Int(1));
        assert_eq!(wrapped, Some(Scalar::Int(i32::MIN.into())));
        assert_eq!(
            fold_unary(UnaryOp::Erf, DType::F32, Scalar::Float(0.5)),
            Some(Scalar::Float(libm::erff(0.5).into()))
        );
        assert_eq!(fold_cast(DType::F64, DType::I32, Scalar::Float(-2.7)), Some(Scalar::Int(-2)));
        // Issue 10: sigmoid(-90) in f32 is a subnormal; sign(-0.0) is +0.0.
        let s = fold_unary(UnaryOp::Sigmoid, DType::F32, Scalar::Float(-90.0));
        assert!(matches!(s, Some(Scalar::Float(v)) if v > 0.0));
        let z = fold_unary(UnaryOp::Sign, DType::F32, Scalar::Float(-0.0));
        assert!(matches!(z, Some(Scalar::Float(v)) if v == 0.0 && v.is_sign_positive()));
        // i64 -> f32 rounds once (not through f64).
        let big = (1i64 << 53) + 1 + (1 << 30);
        assert_eq!(
            fold_cast(DType::I64, DType::F32, Scalar::Int(big)),
            Some(Scalar::Float(f64::from(big as f32)))
        );
        // Outside the op table: nothing.
        assert_eq!(fold_binary(BinaryOp::Div, DType::I32, Scalar::Int(1), Scalar::Int(2)), None);
        assert_eq!(fold_unary(UnaryOp::Exp, DType::I32, Scalar::Int(1)), None);
        // Not a constant of the stated dtype: nothing.
        assert_eq!(fold_unary(UnaryOp::Exp, DType::F32, Scalar::Float(0.1)), None);
    }
}
