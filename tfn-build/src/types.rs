//! How each `.tfn` type is spelled in the generated Rust: the parameter type a method takes,
//! the expression that turns it into a `tfn::Value`, the result type and its extraction, the
//! `_into` output type, and the Rust value of a `.tfn` default.

use tfn_ir::library::{DTypeRef, Expr, ExprKind, ParamType};
use tfn_ir::{Attr, DType};

/// The Rust element type of a dtype.
pub fn element(d: DType) -> &'static str {
    match d {
        DType::Bool => "bool",
        DType::I32 => "i32",
        DType::I64 => "i64",
        DType::F32 => "f32",
        DType::F64 => "f64",
        DType::I8 => "i8",
        DType::U8 => "u8",
        DType::F16 => "tfn::half::f16",
        DType::BF16 => "tfn::half::bf16",
    }
}

/// The element type of a tensor's dtype in Rust, if the signature fixes it (a dtype or a
/// dtype variable that is a generic of the method).
pub fn tensor_element(d: &DTypeRef, generics: &[String]) -> Option<String> {
    match d {
        DTypeRef::Fixed(d) => Some(element(*d).to_string()),
        DTypeRef::Var(v) if generics.contains(v) => Some(v.clone()),
        DTypeRef::Var(_) | DTypeRef::Any => None,
    }
}

/// A method parameter: its Rust type and the expression converting binding `n` to a
/// `tfn::Value`.
pub fn input(ty: &ParamType, n: &str, generics: &[String]) -> (String, String) {
    let view = |e: &str| format!("ndarray::ArrayView<'a, {e}, impl ndarray::Dimension>");
    match ty {
        ParamType::Tensor(d) => match tensor_element(d, generics) {
            Some(e) => (view(&e), format!("tfn::Value::Tensor(<{e} as tfn::Element>::tensor_value({n}))")),
            None => ("impl Into<tfn::TensorValue<'a>>".into(), format!("tfn::Value::Tensor({n}.into())")),
        },
        ParamType::TensorList(d) => match tensor_element(d, generics) {
            Some(e) => (
                format!("&[ndarray::ArrayViewD<'a, {e}>]"),
                format!(
                    "tfn::Value::TensorList({n}.iter().map(|t| <{e} as tfn::Element>::tensor_value(t.view())).collect())"
                ),
            ),
            None => (
                "&[tfn::TensorValue<'a>]".into(),
                format!("tfn::Value::TensorList({n}.iter().map(tfn::TensorValue::view).collect())"),
            ),
        },
        ParamType::Scalar => {
            ("impl Into<tfn::Scalar>".into(), format!("tfn::Value::from(Into::<tfn::Scalar>::into({n}))"))
        }
        ParamType::Int => ("i64".into(), format!("tfn::Value::from({n})")),
        ParamType::Float => ("f64".into(), format!("tfn::Value::from({n})")),
        ParamType::Bool => ("bool".into(), format!("tfn::Value::from({n})")),
        ParamType::DType => ("tfn::DType".into(), format!("tfn::Value::from({n})")),
        ParamType::IntList => ("&[i64]".into(), format!("tfn::Value::from({n}.to_vec())")),
        ParamType::FloatList => {
            ("&[f64]".into(), format!("tfn::Value::Attr(tfn::Attr::FloatList({n}.to_vec()))"))
        }
    }
}

/// A field of an `…Args` struct (owned) and the expression converting field access `f` to a
/// `tfn::Value`; `None` for tensor parameters (which are never fields).
pub fn field(ty: &ParamType, f: &str) -> Option<(String, String)> {
    Some(match ty {
        ParamType::Tensor(_) | ParamType::TensorList(_) => return None,
        ParamType::Scalar => ("tfn::Scalar".into(), format!("tfn::Value::from({f})")),
        ParamType::Int => ("i64".into(), format!("tfn::Value::from({f})")),
        ParamType::Float => ("f64".into(), format!("tfn::Value::from({f})")),
        ParamType::Bool => ("bool".into(), format!("tfn::Value::from({f})")),
        ParamType::DType => ("tfn::DType".into(), format!("tfn::Value::from({f})")),
        ParamType::IntList => ("Vec<i64>".into(), format!("tfn::Value::from({f})")),
        ParamType::FloatList => {
            ("Vec<f64>".into(), format!("tfn::Value::Attr(tfn::Attr::FloatList({f}))"))
        }
    })
}

/// Builds the Rust expression extracting a result from value expression `v` (result `index`).
pub type Extract = Box<dyn Fn(&str, usize) -> String>;

/// How one result is returned, written into, and given a cotangent.
pub struct ResultType {
    /// The owned result type.
    pub owned: String,
    /// Converts `tfn::Value<'static>` expression `v` (result `index`) to `owned`, with `?`.
    pub extract: Extract,
    /// The `_into` output parameter type and conversion of binding `n` to `tfn::OutputMut`
    /// (`None`: not a tensor, so no `_into`/`vjp` variant).
    pub output: Option<(String, String)>,
    /// The cotangent parameter type of a `vjp_…` method and its conversion to a `tfn::Value`.
    pub cotangent: Option<(String, String)>,
}

pub fn result(ty: &ParamType, function: &str, generics: &[String]) -> ResultType {
    let f = format!("{function:?}");
    match ty {
        ParamType::Tensor(d) => match tensor_element(d, generics) {
            Some(e) => ResultType {
                owned: format!("ndarray::ArrayD<{e}>"),
                extract: Box::new({
                    let e = e.clone();
                    move |v, i| format!("<{e} as tfn::Element>::from_result({v}, {f}, {i})?")
                }),
                output: Some((
                    format!("ndarray::ArrayViewMut<'a, {e}, impl ndarray::Dimension>"),
                    format!("<{e} as tfn::Element>::output({{}})"),
                )),
                cotangent: Some((
                    format!("ndarray::ArrayView<'a, {e}, impl ndarray::Dimension>"),
                    format!("tfn::Value::Tensor(<{e} as tfn::Element>::tensor_value({{}}))"),
                )),
            },
            None => ResultType {
                owned: "tfn::Tensor".into(),
                extract: Box::new(move |v, i| format!("__tensor({v}, {f}, {i})?")),
                output: Some(("impl Into<tfn::OutputMut<'a>>".into(), "{}.into()".into())),
                cotangent: Some((
                    "impl Into<tfn::TensorValue<'a>>".into(),
                    "tfn::Value::Tensor({}.into())".into(),
                )),
            },
        },
        _ => ResultType {
            owned: "tfn::Value<'static>".into(),
            extract: Box::new(|v, _| v.to_string()),
            output: None,
            cotangent: None,
        },
    }
}

/// The constant value of a default (a literal, a negated literal, a list of them).
pub fn const_attr(e: &Expr) -> Option<Attr> {
    match &e.kind {
        ExprKind::Literal(a) => Some(a.clone()),
        ExprKind::Call { callee, overload: None, args, .. } if callee == "neg" => {
            match args.as_slice() {
                [arg] if arg.keyword.is_none() => match const_attr(&arg.value)? {
                    Attr::Int(v) => v.checked_neg().map(Attr::Int),
                    Attr::Float(v) => Some(Attr::Float(-v)),
                    _ => None,
                },
                _ => None,
            }
        }
        ExprKind::List(items) => {
            let items: Vec<Attr> = items.iter().map(const_attr).collect::<Option<_>>()?;
            if items.iter().all(|a| matches!(a, Attr::Int(_))) {
                Some(Attr::IntList(
                    items
                        .iter()
                        .filter_map(|a| if let Attr::Int(v) = a { Some(*v) } else { None })
                        .collect(),
                ))
            } else {
                let floats = items.iter().map(|a| match a {
                    Attr::Int(v) => Some(*v as f64),
                    Attr::Float(v) => Some(*v),
                    _ => None,
                });
                Some(Attr::FloatList(floats.collect::<Option<_>>()?))
            }
        }
        _ => None,
    }
}

/// A Rust `f64` expression.
fn float(v: f64) -> String {
    if v.is_nan() {
        "f64::NAN".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "f64::INFINITY".into()
        } else {
            "f64::NEG_INFINITY".into()
        }
    } else {
        format!("{v:?}")
    }
}

/// The Rust value of default `a` for a field of type `ty`, if it has one.
pub fn default_value(ty: &ParamType, a: &Attr) -> Option<String> {
    Some(match (ty, a) {
        (ParamType::Int, Attr::Int(v)) => v.to_string(),
        (ParamType::Float, Attr::Int(v)) => float(*v as f64),
        (ParamType::Float, Attr::Float(v)) => float(*v),
        (ParamType::Scalar, Attr::Int(v)) => format!("tfn::Scalar::Int({v})"),
        (ParamType::Scalar, Attr::Float(v)) => format!("tfn::Scalar::Float({})", float(*v)),
        (ParamType::Bool, Attr::Bool(v)) => v.to_string(),
        (ParamType::DType, Attr::DType(d)) => format!("tfn::DType::{d:?}"),
        (ParamType::IntList, Attr::IntList(v)) => list(v.iter().map(i64::to_string)),
        (ParamType::FloatList, Attr::IntList(v)) => list(v.iter().map(|&x| float(x as f64))),
        (ParamType::FloatList, Attr::FloatList(v)) => list(v.iter().map(|&x| float(x))),
        _ => return None,
    })
}

fn list(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    if items.is_empty() {
        "Vec::new()".into()
    } else {
        format!("vec![{}]", items.join(", "))
    }
}

/// Whether a tensor parameter certainly, never, or maybe (depending on the call's dtypes)
/// gets a gradient from `vjp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Differentiable {
    Yes,
    No,
    Maybe,
}

pub fn differentiable(
    ty: &ParamType,
    allowed: impl Fn(&str) -> Option<Vec<DType>>,
) -> Differentiable {
    let of_set = |set: &[DType]| {
        if set.iter().all(|d| d.is_float()) {
            Differentiable::Yes
        } else if set.iter().all(|d| !d.is_float()) {
            Differentiable::No
        } else {
            Differentiable::Maybe
        }
    };
    match ty {
        ParamType::Tensor(DTypeRef::Fixed(d)) => of_set(&[*d]),
        ParamType::Tensor(DTypeRef::Var(v)) => match allowed(v) {
            Some(set) => of_set(&set),
            None => Differentiable::Maybe,
        },
        ParamType::Tensor(DTypeRef::Any) | ParamType::TensorList(_) => Differentiable::Maybe,
        _ => Differentiable::No,
    }
}
