//! Constant folding of splat values. The folding itself is the interpreter's
//! ([`tfn_ir::interp::fold_unary`] and friends run the interpreter's own kernels on one
//! element), so a folded constant is bit for bit what the reference computes; this module only
//! converts literals to constants of a dtype.

use tfn_ir::storage::bits;
use tfn_ir::{DType, Scalar};

pub use tfn_ir::interp::{fold_binary, fold_cast, fold_mul_add, fold_unary};

/// Converts a literal to a constant of `dtype` (`None` if it does not fit exactly).
pub fn scalar_of_dtype(value: Scalar, dtype: DType) -> Option<Scalar> {
    match (dtype, value) {
        (DType::Bool, Scalar::Bool(b)) => Some(Scalar::Bool(b)),
        (DType::Bool, Scalar::Int(i)) if i == 0 || i == 1 => Some(Scalar::Bool(i == 1)),
        (DType::Bool, _) => None,
        (DType::I32, s) => {
            int_of(s).and_then(|i| i32::try_from(i).ok()).map(|i| Scalar::Int(i.into()))
        }
        (DType::I64, s) => int_of(s).map(Scalar::Int),
        (DType::F32, s) => Some(Scalar::Float(s.as_f64() as f32 as f64)),
        (DType::F64, s) => Some(Scalar::Float(s.as_f64())),
        (DType::I8, s) => {
            int_of(s).and_then(|i| i8::try_from(i).ok()).map(|i| Scalar::Int(i.into()))
        }
        (DType::U8, s) => {
            int_of(s).and_then(|i| u8::try_from(i).ok()).map(|i| Scalar::Int(i.into()))
        }
        (DType::F16, s) => {
            let h = bits::f64_to_f16(s.as_f64());
            Some(Scalar::Float(bits::f16_to_f32(h).into()))
        }
        (DType::BF16, s) => {
            let h = bits::f64_to_bf16(s.as_f64());
            Some(Scalar::Float(bits::bf16_to_f32(h).into()))
        }
    }
}

fn int_of(s: Scalar) -> Option<i64> {
    match s {
        Scalar::Int(i) => Some(i),
        Scalar::Bool(b) => Some(b as i64),
        Scalar::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some(f as i64),
        Scalar::Float(_) => None,
    }
}
