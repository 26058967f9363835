//! [`TensorValue`]: a tensor of any dtype, borrowed (a view of any strides) or owned: the
//! arguments and results of a session's call and the values of a running loop program
//! ([`crate::program::run`]); [`TensorViewMut`]: a caller-owned output buffer.

use crate::{half, DType, Tensor};
use ndarray::{ArrayView, ArrayViewMut, ArrayViewMutD, CowArray, Dimension, IxDyn};

/// A tensor argument or result: a borrowed view (any strides) or an owned array.
#[derive(Clone, Debug)]
pub enum TensorValue<'a> {
    Bool(CowArray<'a, bool, IxDyn>),
    I32(CowArray<'a, i32, IxDyn>),
    I64(CowArray<'a, i64, IxDyn>),
    F32(CowArray<'a, f32, IxDyn>),
    F64(CowArray<'a, f64, IxDyn>),
    I8(CowArray<'a, i8, IxDyn>),
    U8(CowArray<'a, u8, IxDyn>),
    F16(CowArray<'a, half::f16, IxDyn>),
    BF16(CowArray<'a, half::bf16, IxDyn>),
}

/// Dispatches `$body` over the dtypes of a [`TensorValue`] ([`crate::each_dtype`]).
macro_rules! with_tensor {
    ($t:expr, $a:ident => $body:expr) => {
        crate::each_dtype!($t, TensorValue, $a => $body)
    };
}

impl TensorValue<'_> {
    pub fn dtype(&self) -> DType {
        crate::each_dtype!(self, TensorValue, _, D => D)
    }

    pub fn shape(&self) -> &[usize] {
        with_tensor!(self, a => a.shape())
    }

    /// Element strides (in elements, may be negative or zero).
    pub fn strides(&self) -> &[isize] {
        with_tensor!(self, a => a.strides())
    }

    /// True when the elements are laid out contiguously in row-major order.
    pub fn is_standard_layout(&self) -> bool {
        with_tensor!(self, a => a.is_standard_layout())
    }

    /// An owned copy (no copy if already owned).
    pub fn into_tensor(self) -> Tensor {
        match self {
            TensorValue::Bool(a) => Tensor::Bool(a.into_owned()),
            TensorValue::I32(a) => Tensor::I32(a.into_owned()),
            TensorValue::I64(a) => Tensor::I64(a.into_owned()),
            TensorValue::F32(a) => Tensor::F32(a.into_owned()),
            TensorValue::F64(a) => Tensor::F64(a.into_owned()),
            TensorValue::I8(a) => Tensor::I8(a.into_owned()),
            TensorValue::U8(a) => Tensor::U8(a.into_owned()),
            TensorValue::F16(a) => Tensor::F16(a.into_owned()),
            TensorValue::BF16(a) => Tensor::BF16(a.into_owned()),
        }
    }

    /// An owned copy of a borrowed tensor.
    pub fn to_tensor(&self) -> Tensor {
        self.clone().into_tensor()
    }

    pub fn view(&self) -> TensorValue<'_> {
        match self {
            TensorValue::Bool(a) => TensorValue::Bool(a.view().into()),
            TensorValue::I32(a) => TensorValue::I32(a.view().into()),
            TensorValue::I64(a) => TensorValue::I64(a.view().into()),
            TensorValue::F32(a) => TensorValue::F32(a.view().into()),
            TensorValue::F64(a) => TensorValue::F64(a.view().into()),
            TensorValue::I8(a) => TensorValue::I8(a.view().into()),
            TensorValue::U8(a) => TensorValue::U8(a.view().into()),
            TensorValue::F16(a) => TensorValue::F16(a.view().into()),
            TensorValue::BF16(a) => TensorValue::BF16(a.view().into()),
        }
    }
}

impl<'a> From<Tensor> for TensorValue<'a> {
    fn from(t: Tensor) -> Self {
        match t {
            Tensor::Bool(a) => TensorValue::Bool(a.into()),
            Tensor::I32(a) => TensorValue::I32(a.into()),
            Tensor::I64(a) => TensorValue::I64(a.into()),
            Tensor::F32(a) => TensorValue::F32(a.into()),
            Tensor::F64(a) => TensorValue::F64(a.into()),
            Tensor::I8(a) => TensorValue::I8(a.into()),
            Tensor::U8(a) => TensorValue::U8(a.into()),
            Tensor::F16(a) => TensorValue::F16(a.into()),
            Tensor::BF16(a) => TensorValue::BF16(a.into()),
        }
    }
}

macro_rules! output_from {
    ($t:ty, $v:ident) => {
        impl<'a, D: Dimension> From<ArrayView<'a, $t, D>> for TensorValue<'a> {
            fn from(a: ArrayView<'a, $t, D>) -> Self {
                TensorValue::$v(a.into_dyn().into())
            }
        }
        impl<'a> From<ndarray::CowArray<'a, $t, ndarray::IxDyn>> for TensorValue<'a> {
            fn from(a: ndarray::CowArray<'a, $t, ndarray::IxDyn>) -> Self {
                TensorValue::$v(a)
            }
        }
        impl<'a, D: Dimension> From<ndarray::Array<$t, D>> for TensorValue<'a> {
            fn from(a: ndarray::Array<$t, D>) -> Self {
                TensorValue::$v(a.into_dyn().into())
            }
        }
    };
}
output_from!(bool, Bool);
output_from!(i8, I8);
output_from!(u8, U8);
output_from!(half::f16, F16);
output_from!(half::bf16, BF16);
output_from!(i32, I32);
output_from!(i64, I64);
output_from!(f32, F32);
output_from!(f64, F64);

impl<'a> TensorValue<'a> {
    /// A borrowed view of an owned tensor.
    pub fn of(t: &'a Tensor) -> TensorValue<'a> {
        crate::each_dtype!(t, Tensor, a => TensorValue::from(a.view()))
    }

    /// Row `i` along the first axis: a view, never a copy (`None` for a scalar or a row out of
    /// range).
    pub fn row(&self, i: usize) -> Option<TensorValue<'_>> {
        let rows = *self.shape().first()?;
        if i >= rows {
            return None;
        }
        Some(with_tensor!(self, a => TensorValue::from(a.index_axis(ndarray::Axis(0), i))))
    }

    /// An `i64[]` scalar (a `for` loop's trip index).
    pub fn index(i: i64) -> TensorValue<'a> {
        TensorValue::I64(ndarray::ArrayD::from_elem(IxDyn(&[]), i).into())
    }

    /// The value of a `bool[]` tensor (`None` for any other).
    pub fn truth(&self) -> Option<bool> {
        match self {
            TensorValue::Bool(a) if a.ndim() == 0 => a.iter().next().copied(),
            _ => None,
        }
    }
}

/// A caller-owned output buffer of any dtype (any strides; the back end writes contiguous ones
/// in place without a temporary).
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

impl TensorViewMut<'_> {
    pub fn dtype(&self) -> DType {
        crate::each_dtype!(self, TensorViewMut, _, D => D)
    }

    pub fn shape(&self) -> &[usize] {
        crate::each_dtype!(self, TensorViewMut, a => a.shape())
    }

    /// A shorter-lived view of the same elements (to pass on without giving this one up).
    pub fn reborrow(&mut self) -> TensorViewMut<'_> {
        crate::each_dtype!(self, TensorViewMut, a => a.view_mut().into())
    }

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

impl<'a> From<&'a mut Tensor> for TensorViewMut<'a> {
    fn from(t: &'a mut Tensor) -> Self {
        crate::each_dtype!(t, Tensor, a => a.view_mut().into())
    }
}

macro_rules! view_mut_from {
    ($t:ty, $v:ident) => {
        /// Any dimensionality: `Array2::view_mut()` converts as well as `ArrayViewMutD`.
        impl<'a, D: Dimension> From<ArrayViewMut<'a, $t, D>> for TensorViewMut<'a> {
            fn from(a: ArrayViewMut<'a, $t, D>) -> Self {
                TensorViewMut::$v(a.into_dyn())
            }
        }
    };
}
view_mut_from!(bool, Bool);
view_mut_from!(i32, I32);
view_mut_from!(i64, I64);
view_mut_from!(f32, F32);
view_mut_from!(f64, F64);
view_mut_from!(i8, I8);
view_mut_from!(u8, U8);
view_mut_from!(half::f16, F16);
view_mut_from!(half::bf16, BF16);
