//! Borrowed tensors at the backend's boundary: inputs as `ndarray` views of any strides,
//! outputs as mutable views the caller owns.

use ndarray::{ArrayViewD, ArrayViewMut, ArrayViewMutD, Dimension};
use tfn_ir::half;
use tfn_ir::{DType, Tensor};

/// A borrowed input tensor of any dtype and strides.
#[derive(Clone, Debug)]
pub enum TensorView<'a> {
    Bool(ArrayViewD<'a, bool>),
    I32(ArrayViewD<'a, i32>),
    I64(ArrayViewD<'a, i64>),
    F32(ArrayViewD<'a, f32>),
    F64(ArrayViewD<'a, f64>),
    I8(ArrayViewD<'a, i8>),
    U8(ArrayViewD<'a, u8>),
    F16(ArrayViewD<'a, half::f16>),
    BF16(ArrayViewD<'a, half::bf16>),
}

/// A caller-owned output buffer of any dtype (any strides; contiguous ones are written in
/// place without a temporary).
#[derive(Debug)]
pub enum TensorViewMut<'a> {
    Bool(ArrayViewMutD<'a, bool>),
    I32(ArrayViewMutD<'a, i32>),
    I64(ArrayViewMutD<'a, i64>),
    F32(ArrayViewMutD<'a, f32>),
    F64(ArrayViewMutD<'a, f64>),
    I8(ArrayViewMutD<'a, i8>),
    U8(ArrayViewMutD<'a, u8>),
    F16(ArrayViewMutD<'a, half::f16>),
    BF16(ArrayViewMutD<'a, half::bf16>),
}

macro_rules! each {
    ($e:expr, $enum:ident, $a:ident => $body:expr) => {
        match $e {
            $enum::Bool($a) => $body,
            $enum::I32($a) => $body,
            $enum::I64($a) => $body,
            $enum::F32($a) => $body,
            $enum::F64($a) => $body,
            $enum::I8($a) => $body,
            $enum::U8($a) => $body,
            $enum::F16($a) => $body,
            $enum::BF16($a) => $body,
        }
    };
}

impl TensorView<'_> {
    pub fn dtype(&self) -> DType {
        match self {
            TensorView::Bool(_) => DType::Bool,
            TensorView::I32(_) => DType::I32,
            TensorView::I64(_) => DType::I64,
            TensorView::F32(_) => DType::F32,
            TensorView::F64(_) => DType::F64,
            TensorView::I8(_) => DType::I8,
            TensorView::U8(_) => DType::U8,
            TensorView::F16(_) => DType::F16,
            TensorView::BF16(_) => DType::BF16,
        }
    }

    pub fn shape(&self) -> &[usize] {
        each!(self, TensorView, a => a.shape())
    }

    /// Whether the data is contiguous in row-major order.
    pub fn is_standard_layout(&self) -> bool {
        each!(self, TensorView, a => a.is_standard_layout())
    }
}

impl TensorViewMut<'_> {
    pub fn dtype(&self) -> DType {
        match self {
            TensorViewMut::Bool(_) => DType::Bool,
            TensorViewMut::I32(_) => DType::I32,
            TensorViewMut::I64(_) => DType::I64,
            TensorViewMut::F32(_) => DType::F32,
            TensorViewMut::F64(_) => DType::F64,
            TensorViewMut::I8(_) => DType::I8,
            TensorViewMut::U8(_) => DType::U8,
            TensorViewMut::F16(_) => DType::F16,
            TensorViewMut::BF16(_) => DType::BF16,
        }
    }

    pub fn shape(&self) -> &[usize] {
        each!(self, TensorViewMut, a => a.shape())
    }
}

impl<'a> From<&'a Tensor> for TensorView<'a> {
    fn from(t: &'a Tensor) -> Self {
        match t {
            Tensor::Bool(a) => TensorView::Bool(a.view()),
            Tensor::I32(a) => TensorView::I32(a.view()),
            Tensor::I64(a) => TensorView::I64(a.view()),
            Tensor::F32(a) => TensorView::F32(a.view()),
            Tensor::F64(a) => TensorView::F64(a.view()),
            Tensor::I8(a) => TensorView::I8(a.view()),
            Tensor::U8(a) => TensorView::U8(a.view()),
            Tensor::F16(a) => TensorView::F16(a.view()),
            Tensor::BF16(a) => TensorView::BF16(a.view()),
        }
    }
}

impl<'a> From<&'a mut Tensor> for TensorViewMut<'a> {
    fn from(t: &'a mut Tensor) -> Self {
        match t {
            Tensor::Bool(a) => TensorViewMut::Bool(a.view_mut()),
            Tensor::I32(a) => TensorViewMut::I32(a.view_mut()),
            Tensor::I64(a) => TensorViewMut::I64(a.view_mut()),
            Tensor::F32(a) => TensorViewMut::F32(a.view_mut()),
            Tensor::F64(a) => TensorViewMut::F64(a.view_mut()),
            Tensor::I8(a) => TensorViewMut::I8(a.view_mut()),
            Tensor::U8(a) => TensorViewMut::U8(a.view_mut()),
            Tensor::F16(a) => TensorViewMut::F16(a.view_mut()),
            Tensor::BF16(a) => TensorViewMut::BF16(a.view_mut()),
        }
    }
}

macro_rules! impl_from_views {
    ($t:ty, $v:ident) => {
        impl<'a> From<ArrayViewD<'a, $t>> for TensorView<'a> {
            fn from(a: ArrayViewD<'a, $t>) -> Self {
                TensorView::$v(a)
            }
        }
        /// Any dimensionality: `Array2::view_mut()` converts as well as `ArrayViewMutD`.
        impl<'a, D: Dimension> From<ArrayViewMut<'a, $t, D>> for TensorViewMut<'a> {
            fn from(a: ArrayViewMut<'a, $t, D>) -> Self {
                TensorViewMut::$v(a.into_dyn())
            }
        }
    };
}
impl_from_views!(bool, Bool);
impl_from_views!(i32, I32);
impl_from_views!(i64, I64);
impl_from_views!(f32, F32);
impl_from_views!(f64, F64);
impl_from_views!(i8, I8);
impl_from_views!(u8, U8);
impl_from_views!(half::f16, F16);
impl_from_views!(half::bf16, BF16);

impl TensorViewMut<'_> {
    /// A shorter-lived view of the same elements (to pass on without giving this one up).
    pub fn reborrow(&mut self) -> TensorViewMut<'_> {
        each!(self, TensorViewMut, a => a.view_mut().into())
    }
}
