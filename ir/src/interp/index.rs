//! The indexed ops (`gather`, `index_select`, `scatter_add`, `index_add`; semantics in
//! `crate::op_index`): the reference kernels, one position at a time over row-major buffers.

use super::{map_any, OpError, OpResult};
use crate::op_index::{addresses, AddressError, IndexKind};
use crate::tensor::Tensor;
use ndarray::{ArrayD, IxDyn};
use std::ops::Add;

/// The index tensor's values, row-major, widened to `i64`.
fn index_values(index: &Tensor) -> Result<Vec<i64>, OpError> {
    match index {
        Tensor::I32(a) => Ok(a.iter().map(|&v| v as i64).collect()),
        Tensor::I64(a) => Ok(a.iter().copied().collect()),
        other => Err(OpError::Internal(format!("the index is {}, not i32/i64", other.dtype()))),
    }
}

fn read<T: Clone>(a: &ArrayD<T>, space: &[usize], offs: &[usize]) -> Result<ArrayD<T>, OpError> {
    let a = a.as_standard_layout();
    let data = a.as_slice().ok_or_else(|| OpError::Internal("layout".into()))?;
    let values: Vec<T> = offs.iter().map(|&o| data[o].clone()).collect();
    ArrayD::from_shape_vec(IxDyn(space), values)
        .map_err(|e| OpError::Internal(format!("gather result: {e}")))
}

fn accumulate<T: Clone + Add<Output = T>>(
    a: &ArrayD<T>,
    src: &ArrayD<T>,
    offs: &[usize],
) -> Result<ArrayD<T>, OpError> {
    let mut out = a.as_standard_layout().into_owned();
    let src = src.as_standard_layout();
    let s = src.as_slice().ok_or_else(|| OpError::Internal("layout".into()))?;
    let data = out.as_slice_mut().ok_or_else(|| OpError::Internal("layout".into()))?;
    if s.len() != offs.len() {
        return Err(OpError::Internal(format!("src has {} elements, not {}", s.len(), offs.len())));
    }
    for (&o, v) in offs.iter().zip(s) {
        data[o] = data[o].clone() + v.clone();
    }
    Ok(out)
}

/// Runs indexed op `kind` along `axis` on `args` (`x, index[, src]`).
pub(crate) fn eval(kind: IndexKind, axis: u32, args: &[&Tensor]) -> OpResult {
    let (Some(x), Some(index)) = (args.first(), args.get(1)) else {
        return Err(OpError::Internal(format!("`{kind}` takes {} operands", kind.arity())));
    };
    let axis = axis as usize;
    if axis >= x.shape().len() {
        return Err(OpError::Internal(format!("axis {axis} out of range")));
    }
    let values = index_values(index)?;
    let (space, offs) =
        addresses(kind, axis, x.shape(), index.shape(), &values).map_err(|e| match e {
            AddressError::Index(e) => OpError::Index(e),
            AddressError::Shape(m) => OpError::Shape(m),
        })?;
    if kind.is_read() {
        return Ok(map_any!(*x, a => read(a, &space, &offs)?));
    }
    let src = args.get(2).ok_or_else(|| OpError::Internal("missing src".into()))?;
    if src.shape() != space.as_slice() {
        return Err(OpError::Shape(format!("src has shape {:?}, expected {space:?}", src.shape())));
    }
    match (x, src) {
        (Tensor::I32(a), Tensor::I32(s)) => Ok(Tensor::I32(accumulate_wrapping(a, s, &offs)?)),
        (Tensor::I64(a), Tensor::I64(s)) => Ok(Tensor::I64(accumulate_wrapping(a, s, &offs)?)),
        (Tensor::F32(a), Tensor::F32(s)) => Ok(Tensor::F32(accumulate(a, s, &offs)?)),
        (Tensor::F64(a), Tensor::F64(s)) => Ok(Tensor::F64(accumulate(a, s, &offs)?)),
        (x, _) => Err(OpError::Unsupported(x.dtype())),
    }
}

/// Integer accumulation wraps on overflow, like `add`.
fn accumulate_wrapping<T: Copy + num_wrapping::WrappingAdd>(
    a: &ArrayD<T>,
    src: &ArrayD<T>,
    offs: &[usize],
) -> Result<ArrayD<T>, OpError> {
    let wrapped: ArrayD<num_wrapping::W<T>> = a.mapv(num_wrapping::W);
    let s: ArrayD<num_wrapping::W<T>> = src.mapv(num_wrapping::W);
    Ok(accumulate(&wrapped, &s, offs)?.mapv(|w| w.0))
}

mod num_wrapping {
    use std::ops::Add;

    pub trait WrappingAdd: Copy {
        fn wrapping_add(self, other: Self) -> Self;
    }
    impl WrappingAdd for i32 {
        fn wrapping_add(self, other: i32) -> i32 {
            i32::wrapping_add(self, other)
        }
    }
    impl WrappingAdd for i64 {
        fn wrapping_add(self, other: i64) -> i64 {
            i64::wrapping_add(self, other)
        }
    }
    #[derive(Clone, Copy)]
    pub struct W<T>(pub T);
    impl<T: WrappingAdd> Add for W<T> {
        type Output = W<T>;
        fn add(self, other: W<T>) -> W<T> {
            W(self.0.wrapping_add(other.0))
        }
    }
}
