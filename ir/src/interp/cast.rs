//! Dtype conversion (`cast`) and filled tensors (`const`, `full`).
//!
//! Conversions follow Rust's `as`: float → int truncates toward zero, saturates and maps NaN to
//! 0; int → int wraps; bool → number is 0/1; number → bool is `x != 0` (so NaN → true).
//! Storage dtypes (`f16`, `bf16`, `i8`, `u8`): see [`crate::storage`].

use crate::attr::Scalar;
use crate::dtype::DType;
use crate::storage::bits;
use crate::tensor::Tensor;
use half::{bf16, f16};
use ndarray::{ArrayD, IxDyn};
use std::borrow::Cow;

/// Converts a numeric array to a compute dtype (`to` is never a storage dtype).
macro_rules! cast_numeric {
    ($a:expr, $to:expr) => {{
        let a = $a;
        match $to {
            DType::Bool => Tensor::Bool(a.mapv(|x| x != 0 as _)),
            DType::I32 => Tensor::I32(a.mapv(|x| x as i32)),
            DType::I64 => Tensor::I64(a.mapv(|x| x as i64)),
            DType::F32 => Tensor::F32(a.mapv(|x| x as f32)),
            DType::F64 => Tensor::F64(a.mapv(|x| x as f64)),
            DType::I8 => Tensor::I8(a.mapv(|x| x as i8)),
            DType::U8 => Tensor::U8(a.mapv(|x| x as u8)),
            DType::F16 | DType::BF16 => unreachable_storage(),
        }
    }};
}

/// Never called: [`cast`] handles 16-bit float targets before [`cast_numeric`].
fn unreachable_storage() -> Tensor {
    Tensor::Bool(ArrayD::from_elem(IxDyn(&[]), false))
}

/// A storage tensor widened (exactly) to its compute dtype; others unchanged.
fn widen(t: &Tensor) -> Cow<'_, Tensor> {
    match t {
        Tensor::F16(a) => Cow::Owned(Tensor::F32(a.mapv(|h| bits::f16_to_f32(h.to_bits())))),
        Tensor::BF16(a) => Cow::Owned(Tensor::F32(a.mapv(|h| bits::bf16_to_f32(h.to_bits())))),
        Tensor::I8(a) => Cow::Owned(Tensor::I32(a.mapv(i32::from))),
        Tensor::U8(a) => Cow::Owned(Tensor::I32(a.mapv(i32::from))),
        _ => Cow::Borrowed(t),
    }
}

/// Rounds to a 16-bit float: once from `f64`, through `f32` from anything else.
fn to_half(t: &Tensor, from_f32: fn(f32) -> u16, from_f64: fn(f64) -> u16) -> ArrayD<u16> {
    match t {
        Tensor::F64(a) => a.mapv(from_f64),
        Tensor::F32(a) => a.mapv(from_f32),
        other => match cast(other, DType::F32) {
            Tensor::F32(a) => a.mapv(from_f32),
            _ => ArrayD::from_elem(IxDyn(&[]), 0),
        },
    }
}

pub(crate) fn cast(t: &Tensor, to: DType) -> Tensor {
    if t.dtype() == to {
        return t.clone();
    }
    let wide = widen(t);
    match to {
        DType::F16 => {
            let a = to_half(&wide, bits::f32_to_f16, bits::f64_to_f16);
            return Tensor::F16(a.mapv(f16::from_bits));
        }
        DType::BF16 => {
            let a = to_half(&wide, bits::f32_to_bf16, bits::f64_to_bf16);
            return Tensor::BF16(a.mapv(bf16::from_bits));
        }
        _ => {}
    }
    match &*wide {
        Tensor::Bool(a) => match to {
            DType::Bool => Tensor::Bool(a.clone()),
            _ => cast_numeric!(a.mapv(u8::from), to),
        },
        Tensor::I32(a) => cast_numeric!(a, to),
        Tensor::I64(a) => cast_numeric!(a, to),
        Tensor::F32(a) => cast_numeric!(a, to),
        Tensor::F64(a) => cast_numeric!(a, to),
        // `widen` left no storage dtype.
        Tensor::I8(_) | Tensor::U8(_) | Tensor::F16(_) | Tensor::BF16(_) => unreachable_storage(),
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
    super::map_any!(&converted, a => ArrayD::from_elem(dim, a.first().copied().unwrap_or_default()))
}
