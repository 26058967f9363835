//! The host-side tensor work of running a program: a row of a stacked tensor as a view, the
//! trip index, zeros, and the sum of gradient contributions across steps and trips (the only
//! arithmetic the loop runtime does itself; every kernel runs compiled).

use crate::error::Error;
use crate::value::TensorValue;
use ndarray::{ArrayD, Axis, IxDyn};
use tfn_ir::{half, DType, Tensor};

/// Applies `$body` to the array of every dtype, rebuilding the same variant of `$out`.
macro_rules! map_variants {
    ($t:expr, $in:ident, $out:ident, $a:ident => $body:expr) => {
        match $t {
            $in::Bool($a) => $out::Bool($body),
            $in::I8($a) => $out::I8($body),
            $in::U8($a) => $out::U8($body),
            $in::I32($a) => $out::I32($body),
            $in::I64($a) => $out::I64($body),
            $in::F16($a) => $out::F16($body),
            $in::BF16($a) => $out::BF16($body),
            $in::F32($a) => $out::F32($body),
            $in::F64($a) => $out::F64($body),
        }
    };
}

/// Row `i` of `t` along its first axis: a view, never a copy. The caller checked `i`.
pub(super) fn row<'b>(t: &'b TensorValue<'_>, i: usize) -> TensorValue<'b> {
    map_variants!(t, TensorValue, TensorValue, a => a.index_axis(Axis(0), i).into())
}

/// A borrowed view of an owned tensor.
pub(super) fn of(t: &Tensor) -> TensorValue<'_> {
    map_variants!(t, Tensor, TensorValue, a => a.view().into())
}

/// The trip index `i` as the `i64[]` a body's parameter 0 takes.
pub(super) fn index<'x>(i: i64) -> TensorValue<'x> {
    TensorValue::I64(ArrayD::from_elem(IxDyn(&[]), i).into())
}

/// A view of a value.
pub(super) fn view<'b>(t: &'b TensorValue<'_>) -> TensorValue<'b> {
    t.view()
}

/// The value of a `bool[]` tensor.
pub(super) fn truth(t: &Tensor) -> Option<bool> {
    match t {
        Tensor::Bool(a) if a.ndim() == 0 => a.iter().next().copied(),
        _ => None,
    }
}

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

/// An owned value of a program's table.
pub(super) fn owned<'x>(t: Tensor) -> TensorValue<'x> {
    TensorValue::from(t)
}
