//! The interpreter's `rand_like`/`randn_like` kernel: [`crate::random`]'s scalar
//! instantiation mapped over the flat indices of the result.

use super::{OpError, OpResult};
use crate::dtype::DType;
use crate::op::RandomDist;
use crate::philox;
use crate::random::{self, FloatOps, Scalar};
use crate::tensor::Tensor;
use ndarray::{ArrayD, IxDyn};

/// The key's values, checked: `i64` of shape `[]` or `[2]`.
pub(crate) fn key_values(key: &Tensor) -> Result<Vec<i64>, OpError> {
    match key {
        Tensor::I64(k) if k.ndim() == 0 || k.shape() == [2] => Ok(k.iter().copied().collect()),
        _ => Err(OpError::Shape(format!(
            "the key must be an i64 tensor of shape [] or [2], got {}{:?}",
            key.dtype(),
            key.shape()
        ))),
    }
}

/// One value of `dist` in `F` for element `index` under `key`.
pub fn element<F>(dist: RandomDist, key: &[i64], index: u64) -> F
where
    Scalar<F>: FloatOps<Word = u32, Float = F>,
{
    let w = philox::element_words(key, index);
    let mut o = Scalar::<F>::new();
    match dist {
        RandomDist::Uniform => random::uniform(&mut o, w),
        RandomDist::Normal => random::normal(&mut o, w),
    }
}

fn fill<F>(dist: RandomDist, key: &[i64], shape: &[usize]) -> Result<ArrayD<F>, OpError>
where
    Scalar<F>: FloatOps<Word = u32, Float = F>,
{
    let n: usize = shape.iter().product();
    let values = (0..n as u64).map(|i| element::<F>(dist, key, i)).collect();
    ArrayD::from_shape_vec(IxDyn(shape), values).map_err(|e| OpError::Internal(e.to_string()))
}

/// `rand_like`/`randn_like` of `dtype` and `shape` under `key`.
pub(crate) fn random(dist: RandomDist, dtype: DType, key: &Tensor, shape: &[usize]) -> OpResult {
    let key = key_values(key)?;
    match dtype {
        DType::F32 => Ok(Tensor::F32(fill::<f32>(dist, &key, shape)?)),
        DType::F64 => Ok(Tensor::F64(fill::<f64>(dist, &key, shape)?)),
        _ => Err(OpError::Unsupported(dtype)),
    }
}
