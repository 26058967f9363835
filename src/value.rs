//! Call arguments and results of a [`crate::Session`]: tensors (borrowed or owned `ndarray`
//! arrays of any strides) and compile-time attribute values.

use ndarray::{ArrayD, ArrayViewD};
use tfn_ir::half;
use tfn_ir::{Attr, DType, Tensor};

pub use tfn_ir::TensorValue;

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
