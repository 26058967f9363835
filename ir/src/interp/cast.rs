//! Dtype conversion (`cast`) and filled tensors (`const`, `full`).
//!
//! Conversions follow Rust's `as`: float → int truncates toward zero, saturates and maps NaN to
//! 0; int → int wraps; bool → number is 0/1; number → bool is `x != 0` (so NaN → true).

use crate::attr::Scalar;
use crate::dtype::DType;
use crate::tensor::Tensor;
use ndarray::{ArrayD, IxDyn};

/// Converts a numeric array to `to`.
macro_rules! cast_numeric {
    ($a:expr, $to:expr) => {{
        let a = $a;
        match $to {
            DType::Bool => Tensor::Bool(a.mapv(|x| x != 0 as _)),
            DType::I32 => Tensor::I32(a.mapv(|x| x as i32)),
            DType::I64 => Tensor::I64(a.mapv(|x| x as i64)),
            DType::F32 => Tensor::F32(a.mapv(|x| x as f32)),
            DType::F64 => Tensor::F64(a.mapv(|x| x as f64)),
        }
    }};
}

pub(crate) fn cast(t: &Tensor, to: DType) -> Tensor {
    match t {
        Tensor::Bool(a) => match to {
            DType::Bool => Tensor::Bool(a.clone()),
            _ => cast_numeric!(a.mapv(u8::from), to),
        },
        Tensor::I32(a) => cast_numeric!(a, to),
        Tensor::I64(a) => cast_numeric!(a, to),
        Tensor::F32(a) => cast_numeric!(a, to),
        Tensor::F64(a) => cast_numeric!(a, to),
    }
}

/// A tensor of `shape` and `dtype` filled with `value` converted like [`cast`].
pub(crate) fn full(value: Scalar, dtype: DType, shape: &[usize]) -> Tensor {
    let scalar = match value {
        Scalar::Bool(b) => Tensor::Bool(ArrayD::from_elem(IxDyn(&[]), b)),
        Scalar::Int(i) => Tensor::I64(ArrayD::from_elem(IxDyn(&[]), i)),
        Scalar::Float(f) => Tensor::F64(ArrayD::from_elem(IxDyn(&[]), f)),
    };
    let converted = cast(&scalar, dtype);
    let dim = IxDyn(shape);
    match converted {
        Tensor::Bool(a) => {
            Tensor::Bool(ArrayD::from_elem(dim, a.first().copied().unwrap_or_default()))
        }
        Tensor::I32(a) => {
            Tensor::I32(ArrayD::from_elem(dim, a.first().copied().unwrap_or_default()))
        }
        Tensor::I64(a) => {
            Tensor::I64(ArrayD::from_elem(dim, a.first().copied().unwrap_or_default()))
        }
        Tensor::F32(a) => {
            Tensor::F32(ArrayD::from_elem(dim, a.first().copied().unwrap_or_default()))
        }
        Tensor::F64(a) => {
            Tensor::F64(ArrayD::from_elem(dim, a.first().copied().unwrap_or_default()))
        }
    }
}
