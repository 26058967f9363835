//! The host-side tensor work of a program's reverse mode: zeros, and the sum of gradient
//! contributions across steps and trips (the only arithmetic the loop runtime does itself;
//! every kernel runs compiled). Rows, views and trip indices are `TensorValue`'s.

use crate::error::Error;
use ndarray::{ArrayD, Axis, IxDyn};
use tfn_ir::{half, DType, Tensor};

/// Zeros of a dtype and shape.
pub(crate) fn zeros(dtype: DType, shape: &[usize]) -> Tensor {
    let s = IxDyn(shape);
    match dtype {
        DType::Bool => Tensor::Bool(ArrayD::from_elem(s, false)),
        DType::I8 => Tensor::I8(ArrayD::zeros(s)),
        DType::U8 => Tensor::U8(ArrayD::zeros(s)),
        DType::I32 => Tensor::I32(ArrayD::zeros(s)),
        DType::I64 => Tensor::I64(ArrayD::zeros(s)),
        DType::F16 => Tensor::F16(ArrayD::from_elem(s, half::f16::ZERO)),
        DType::BF16 => Tensor::BF16(ArrayD::from_elem(s, half::bf16::ZERO)),
        DType::F32 => Tensor::F32(ArrayD::zeros(s)),
        DType::F64 => Tensor::F64(ArrayD::zeros(s)),
    }
}

/// `acc += g` (or `acc = g`), for gradient contributions of one value.
pub(super) fn accumulate(acc: &mut Option<Tensor>, g: Tensor) -> Result<(), Error> {
    let Some(a) = acc else {
        *acc = Some(g);
        return Ok(());
    };
    if a.shape() != g.shape() {
        return Err(Error::Internal(format!(
            "gradient contributions of shapes {:?} and {:?}",
            a.shape(),
            g.shape()
        )));
    }
    match (a, &g) {
        (Tensor::F32(a), Tensor::F32(b)) => *a += b,
        (Tensor::F64(a), Tensor::F64(b)) => *a += b,
        (Tensor::F16(a), Tensor::F16(b)) => {
            a.zip_mut_with(b, |x, y| *x = half::f16::from_f32(x.to_f32() + y.to_f32()))
        }
        (Tensor::BF16(a), Tensor::BF16(b)) => {
            a.zip_mut_with(b, |x, y| *x = half::bf16::from_f32(x.to_f32() + y.to_f32()))
        }
        (a, b) => {
            return Err(Error::Internal(format!(
                "gradient contributions of dtypes {} and {}",
                a.dtype(),
                b.dtype()
            )))
        }
    }
    Ok(())
}

/// `dst[i] = src` along the first axis.
pub(super) fn set_row(dst: &mut Tensor, i: usize, src: &Tensor) -> Result<(), Error> {
    macro_rules! set {
        ($($v:ident),*) => {
            match (dst, src) {
                $((Tensor::$v(d), Tensor::$v(s)) => {
                    d.index_axis_mut(Axis(0), i).assign(s);
                    Ok(())
                })*
                (d, s) => Err(Error::Internal(format!(
                    "a row of {} set from {}",
                    d.dtype(),
                    s.dtype()
                ))),
            }
        };
    }
    set!(Bool, I8, U8, I32, I64, F16, BF16, F32, F64)
}
