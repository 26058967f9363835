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
        crate::each_dtype!(self, Tensor, _, D => D)
    }

    pub fn shape(&self) -> &[usize] {
        crate::each_dtype!(self, Tensor, a => a.shape())
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
