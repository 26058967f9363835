//! The values of a call as the Rust APIs take and return them: [`Value`] (a tensor, a list of
//! tensors or an attribute), [`Scalar`] (the value of a `Scalar` parameter) and [`Element`]
//! (the sealed trait of the element types a tensor may hold). The JIT's API (the `tfn` crate)
//! and the AOT runtime's (`tfn-rt`) both re-export them, so that the typed bindings
//! `tfn-build` generates have the same parameter and result types over either.

use crate::tensor_value::TensorViewMut;
use crate::{half, Attr, DType, Tensor, TensorValue};
use ndarray::{ArrayD, ArrayView, ArrayViewD, ArrayViewMut, Dimension};

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

macro_rules! value_from_attr {
    ($t:ty, $e:expr) => {
        impl From<$t> for Value<'_> {
            fn from(v: $t) -> Self {
                #[allow(clippy::redundant_closure_call)]
                Value::Attr(($e)(v))
            }
        }
    };
}
value_from_attr!(i64, Attr::Int);
value_from_attr!(i32, |v: i32| Attr::Int(v.into()));
value_from_attr!(f64, Attr::Float);
value_from_attr!(bool, Attr::Bool);
value_from_attr!(DType, Attr::DType);
value_from_attr!(Vec<i64>, Attr::IntList);
value_from_attr!(Attr, |v| v);
value_from_attr!(Scalar, Attr::from);

/// The value of a `Scalar` parameter: an int or a float (`add_scalar(x, 1)` and
/// `add_scalar(x, 1.0)` are both valid, and may select different kernels).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    Int(i64),
    Float(f64),
}

impl From<i64> for Scalar {
    fn from(v: i64) -> Self {
        Scalar::Int(v)
    }
}
impl From<i32> for Scalar {
    fn from(v: i32) -> Self {
        Scalar::Int(v.into())
    }
}
impl From<f64> for Scalar {
    fn from(v: f64) -> Self {
        Scalar::Float(v)
    }
}
impl From<f32> for Scalar {
    fn from(v: f32) -> Self {
        Scalar::Float(v.into())
    }
}
impl From<Scalar> for Attr {
    fn from(s: Scalar) -> Self {
        match s {
            Scalar::Int(v) => Attr::Int(v),
            Scalar::Float(v) => Attr::Float(v),
        }
    }
}

/// A result that is not what the signature promises ([`Element::from_result`]): a bug of the
/// caller's bindings or of tfn; the APIs turn it into their `Error::Internal`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResultTypeError(pub String);

impl std::fmt::Display for ResultTypeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ResultTypeError {}

mod sealed {
    pub trait Sealed {}
}

/// An element type of tfn tensors. Sealed: implemented exactly for the dtypes tfn has.
pub trait Element: sealed::Sealed + Copy + Send + Sync + 'static {
    /// The dtype of a tensor of this element type.
    const DTYPE: DType;

    /// A borrowed view as a call argument (any dimensionality, any strides).
    fn tensor_value<D: Dimension>(a: ArrayView<'_, Self, D>) -> TensorValue<'_>;

    /// A caller's array as an output buffer of `call_into`.
    fn output<D: Dimension>(a: ArrayViewMut<'_, Self, D>) -> TensorViewMut<'_>;

    /// The array of an owned tensor of this dtype; the tensor back otherwise.
    fn from_tensor(t: Tensor) -> Result<ArrayD<Self>, Tensor>;

    /// The array of result `index` of `function`, or an error naming both dtypes.
    fn from_result(
        v: Value<'static>,
        function: &str,
        index: usize,
    ) -> Result<ArrayD<Self>, ResultTypeError> {
        let tensor = v.into_tensor().ok_or_else(|| {
            ResultTypeError(format!("result {index} of `{function}` is not a tensor"))
        })?;
        Self::from_tensor(tensor).map_err(|t| {
            ResultTypeError(format!(
                "result {index} of `{function}` is {}, not the {} its signature promises",
                t.dtype(),
                Self::DTYPE
            ))
        })
    }
}

macro_rules! element {
    ($t:ty, $v:ident) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = DType::$v;
            fn tensor_value<D: Dimension>(a: ArrayView<'_, Self, D>) -> TensorValue<'_> {
                a.into()
            }
            fn output<D: Dimension>(a: ArrayViewMut<'_, Self, D>) -> TensorViewMut<'_> {
                a.into()
            }
            fn from_tensor(t: Tensor) -> Result<ArrayD<Self>, Tensor> {
                match t {
                    Tensor::$v(a) => Ok(a),
                    other => Err(other),
                }
            }
        }
    };
}
element!(bool, Bool);
element!(i32, I32);
element!(i64, I64);
element!(f32, F32);
element!(f64, F64);
element!(i8, I8);
element!(u8, U8);
element!(half::f16, F16);
element!(half::bf16, BF16);

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn a_result_of_another_dtype_names_both() {
        let v = Value::from(array![1.0f64, 2.0].into_dyn());
        let e = <f32 as Element>::from_result(v, "f", 1).unwrap_err();
        assert_eq!(e.0, "result 1 of `f` is f64, not the f32 its signature promises");
        let v = Value::from(Scalar::Int(2));
        let e = <f32 as Element>::from_result(v, "f", 0).unwrap_err();
        assert_eq!(e.to_string(), "result 0 of `f` is not a tensor");
        let ok = <f64 as Element>::from_result(array![3.0f64].into_dyn().into(), "f", 0);
        assert_eq!(ok.unwrap(), array![3.0f64].into_dyn());
    }
}
