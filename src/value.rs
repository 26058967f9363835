//! Call arguments and results of a [`crate::Session`]: tensors (borrowed or owned `ndarray`
//! arrays of any strides) and compile-time attribute values.

use ndarray::{ArrayD, ArrayView, ArrayViewD, CowArray, Dimension, IxDyn};
use tfn_ir::half;
use tfn_ir::{Attr, DType, Tensor};

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

/// Dispatches `$body` over the dtypes of a [`TensorValue`] ([`tfn_ir::each_dtype`]).
macro_rules! with_tensor {
    ($t:expr, $a:ident => $body:expr) => {
        tfn_ir::each_dtype!($t, TensorValue, $a => $body)
    };
}

impl TensorValue<'_> {
    pub fn dtype(&self) -> DType {
        tfn_ir::each_dtype!(self, TensorValue, _, D => D)
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

/// An argument or result of a call: a tensor or an attribute (`Int`, `Float`, `Bool`,
/// `DType`, `Int[]`, `Float[]`), or a list of tensors for `Tensor[]` parameters.
#[derive(Clone, Debug)]
pub enum Value<'a> {
    Tensor(TensorValue<'a>),
    TensorList(Vec<TensorValue<'a>>),
    Attr(Attr),
}

impl<'v> Value<'v> {
    /// The tensor, if this is one.
    pub fn as_tensor(&self) -> Option<&TensorValue<'v>> {
        match self {
            Value::Tensor(t) => Some(t),
            _ => None,
        }
    }

    /// A borrowed view of this value (tensors are not copied).
    pub fn view(&self) -> Value<'_> {
        match self {
            Value::Tensor(t) => Value::Tensor(t.view()),
            Value::TensorList(ts) => Value::TensorList(ts.iter().map(TensorValue::view).collect()),
            Value::Attr(a) => Value::Attr(a.clone()),
        }
    }

    /// A short description for error messages: `f32[3, 4]`, `Int 2`, ...
    pub fn describe(&self) -> String {
        match self {
            Value::Tensor(t) => format!("{}{:?}", t.dtype(), t.shape()),
            Value::TensorList(ts) => format!("Tensor[] of {} tensors", ts.len()),
            Value::Attr(a) => format!("{} {a}", a.type_name()),
        }
    }
}

impl Value<'static> {
    /// The owned tensor of a result (results of calls are always owned tensors).
    pub fn into_tensor(self) -> Option<Tensor> {
        match self {
            Value::Tensor(t) => Some(t.into_tensor()),
            _ => None,
        }
    }
}

macro_rules! tensor_from {
    ($t:ty, $v:ident) => {
        impl<'a> From<ArrayViewD<'a, $t>> for Value<'a> {
            fn from(a: ArrayViewD<'a, $t>) -> Self {
                Value::Tensor(TensorValue::$v(a.into()))
            }
        }
        impl From<ArrayD<$t>> for Value<'static> {
            fn from(a: ArrayD<$t>) -> Self {
                Value::Tensor(TensorValue::$v(a.into()))
            }
        }
    };
}
tensor_from!(bool, Bool);
tensor_from!(i8, I8);
tensor_from!(u8, U8);
tensor_from!(half::f16, F16);
tensor_from!(half::bf16, BF16);
tensor_from!(i32, I32);
tensor_from!(i64, I64);
tensor_from!(f32, F32);
tensor_from!(f64, F64);

impl From<Tensor> for Value<'static> {
    fn from(t: Tensor) -> Self {
        Value::Tensor(t.into())
    }
}

impl From<i64> for Value<'_> {
    fn from(v: i64) -> Self {
        Value::Attr(Attr::Int(v))
    }
}
impl From<i32> for Value<'_> {
    fn from(v: i32) -> Self {
        Value::Attr(Attr::Int(v.into()))
    }
}
impl From<f64> for Value<'_> {
    fn from(v: f64) -> Self {
        Value::Attr(Attr::Float(v))
    }
}
impl From<bool> for Value<'_> {
    fn from(v: bool) -> Self {
        Value::Attr(Attr::Bool(v))
    }
}
impl From<DType> for Value<'_> {
    fn from(v: DType) -> Self {
        Value::Attr(Attr::DType(v))
    }
}
impl From<Vec<i64>> for Value<'_> {
    fn from(v: Vec<i64>) -> Self {
        Value::Attr(Attr::IntList(v))
    }
}
impl From<Attr> for Value<'_> {
    fn from(v: Attr) -> Self {
        Value::Attr(v)
    }
}

/// A caller-provided output buffer for [`crate::Session::call_into`]: the backend's one
/// mutable view type ([`tfn_backend::tensors::TensorViewMut`]), any dtype and strides.
pub use tfn_backend::tensors::TensorViewMut as OutputMut;

macro_rules! output_from {
    ($t:ty, $v:ident) => {
        impl<'a, D: Dimension> From<ArrayView<'a, $t, D>> for TensorValue<'a> {
            fn from(a: ArrayView<'a, $t, D>) -> Self {
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
