//! Borrowed tensors at the backend's boundary: inputs as `ndarray` views of any strides,
//! outputs as mutable views the caller owns.

use ndarray::{ArrayViewD, ArrayViewMut, ArrayViewMutD, Dimension};
use tfn_ir::half;
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

impl TensorViewMut<'_> {
    pub fn dtype(&self) -> DType {
        tfn_ir::each_dtype!(self, TensorViewMut, _, D => D)
    }

    pub fn shape(&self) -> &[usize] {
        each!(self, TensorViewMut, a => a.shape())
    }
}

impl<'a> From<&'a Tensor> for TensorView<'a> {
    fn from(t: &'a Tensor) -> Self {
        each!(t, Tensor, a => a.view().into())
    }
}

impl<'a> From<&'a mut Tensor> for TensorViewMut<'a> {
    fn from(t: &'a mut Tensor) -> Self {
        each!(t, Tensor, a => a.view_mut().into())
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

impl TensorViewMut<'_> {
    /// Copies `t` into this buffer; `false` (nothing written) when the dtype or the shape
    /// differ.
    pub fn assign(&mut self, t: &Tensor) -> bool {
        macro_rules! assign {
            ($($v:ident),*) => {
                match (self, t) {
                    $((TensorViewMut::$v(o), Tensor::$v(a)) if o.shape() == a.shape() => {
                        o.assign(a);
                        true
                    })*
                    _ => false,
                }
            };
        }
        assign!(Bool, I8, U8, I32, I64, F16, BF16, F32, F64)
    }
}
