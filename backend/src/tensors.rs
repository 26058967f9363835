//! Borrowed tensors at the backend's boundary: inputs as `ndarray` views of any strides,
//! outputs as mutable views the caller owns ([`TensorViewMut`], defined in `tfn-ir` with the
//! call values of the Rust APIs, `tfn_ir::call`).

use ndarray::ArrayViewD;
use tfn_ir::half;
pub use tfn_ir::TensorViewMut;
use tfn_ir::{DType, Tensor, TensorValue};

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

/// [`tfn_ir::each_dtype`] under a short name.
macro_rules! each {
    ($e:expr, $enum:ident, $a:ident => $body:expr) => {
        tfn_ir::each_dtype!($e, $enum, $a => $body)
    };
}

impl TensorView<'_> {
    pub fn dtype(&self) -> DType {
        tfn_ir::each_dtype!(self, TensorView, _, D => D)
    }

    pub fn shape(&self) -> &[usize] {
        each!(self, TensorView, a => a.shape())
    }

    /// Whether the data is contiguous in row-major order.
    pub fn is_standard_layout(&self) -> bool {
        each!(self, TensorView, a => a.is_standard_layout())
    }

    /// Element strides per axis (as `ndarray` gives them: may be negative or zero).
    pub fn strides(&self) -> &[isize] {
        each!(self, TensorView, a => a.strides())
    }

    /// The address of the first element (whatever the strides).
    pub(crate) fn first_ptr(&self) -> *mut u8 {
        each!(self, TensorView, a => a.as_ptr() as *mut u8)
    }
}

impl<'a> From<&'a Tensor> for TensorView<'a> {
    fn from(t: &'a Tensor) -> Self {
        each!(t, Tensor, a => a.view().into())
    }
}

macro_rules! impl_from_views {
    ($t:ty, $v:ident) => {
        impl<'a> From<ArrayViewD<'a, $t>> for TensorView<'a> {
            fn from(a: ArrayViewD<'a, $t>) -> Self {
                TensorView::$v(a)
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

impl<'a> From<&'a TensorValue<'_>> for TensorView<'a> {
    fn from(t: &'a TensorValue<'_>) -> Self {
        each!(t, TensorValue, a => a.view().into())
    }
}

impl<'a> From<TensorView<'a>> for TensorValue<'a> {
    fn from(t: TensorView<'a>) -> Self {
        each!(t, TensorView, a => a.into())
    }
}
