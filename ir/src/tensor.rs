//! Owned runtime tensors of any dtype, as the interpreter and the session hand them around.

use crate::dtype::DType;
use ndarray::ArrayD;

#[derive(Clone, Debug, PartialEq)]
pub enum Tensor {
    Bool(ArrayD<bool>),
    I8(ArrayD<i8>),
    U8(ArrayD<u8>),
    I32(ArrayD<i32>),
    I64(ArrayD<i64>),
    F16(ArrayD<half::f16>),
    BF16(ArrayD<half::bf16>),
    F32(ArrayD<f32>),
    F64(ArrayD<f64>),
}

impl Tensor {
    pub fn dtype(&self) -> DType {
        match self {
            Tensor::Bool(_) => DType::Bool,
            Tensor::I8(_) => DType::I8,
            Tensor::U8(_) => DType::U8,
            Tensor::F16(_) => DType::F16,
            Tensor::BF16(_) => DType::BF16,
            Tensor::I32(_) => DType::I32,
            Tensor::I64(_) => DType::I64,
            Tensor::F32(_) => DType::F32,
            Tensor::F64(_) => DType::F64,
        }
    }

    pub fn shape(&self) -> &[usize] {
        match self {
            Tensor::Bool(a) => a.shape(),
            Tensor::I8(a) => a.shape(),
            Tensor::U8(a) => a.shape(),
            Tensor::F16(a) => a.shape(),
            Tensor::BF16(a) => a.shape(),
            Tensor::I32(a) => a.shape(),
            Tensor::I64(a) => a.shape(),
            Tensor::F32(a) => a.shape(),
            Tensor::F64(a) => a.shape(),
        }
    }
}

macro_rules! impl_from {
    ($t:ty, $v:ident) => {
        impl From<ArrayD<$t>> for Tensor {
            fn from(a: ArrayD<$t>) -> Tensor {
                Tensor::$v(a)
            }
        }
    };
}
impl_from!(bool, Bool);
impl_from!(i8, I8);
impl_from!(u8, U8);
impl_from!(half::f16, F16);
impl_from!(half::bf16, BF16);
impl_from!(i32, I32);
impl_from!(i64, I64);
impl_from!(f32, F32);
impl_from!(f64, F64);
