//! The checker's static types of expressions, and how they relate to signature types.
//!
//! A tensor's dtype is known exactly ([`Dt::Fixed`]), is a dtype variable of the enclosing
//! generic function ([`Dt::Var`], "some dtype of its allowed set"), or unknown ([`Dt::Any`]).
//! Checks reject only what is wrong for *every* instantiation; the rest is checked when a call
//! fixes the dtypes. [`Ty::Unknown`] is the type of anything already reported as an error: it
//! matches everything, so one mistake produces one diagnostic.

use std::collections::BTreeMap;
use std::fmt;
use tfn_ir::library::{DTypeRef, ParamType};
use tfn_ir::DType;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dt {
    Any,
    Fixed(DType),
    /// A dtype variable of the function being checked (a type parameter or a `DType` param).
    Var(String),
}

impl fmt::Display for Dt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dt::Any => Ok(()),
            Dt::Fixed(d) => write!(f, "<{d}>"),
            Dt::Var(v) => write!(f, "<{v}>"),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Ty {
    Tensor(Dt),
    TensorList(Dt),
    /// A `Scalar` attribute (an int or a float).
    Scalar,
    Int,
    /// An `Int` known only at the call: `size(x, dim)` and arithmetic on it. It fits `Int`
    /// parameters, but a static `if` or a comparison cannot use it.
    Size,
    Float,
    Bool,
    /// A dtype value: known (`f32`), a `DType` parameter (`Var`), or unknown.
    DType(Dt),
    IntList,
    /// `shape(x)`: an `Int[]` of sizes, known only at the call. It fits `Int[]` parameters;
    /// an item (`shape(x)[-1]`) is a [`Ty::Size`], so `/` on it divides exactly.
    SizeList,
    FloatList,
    /// `[]`: fits any list type.
    EmptyList,
    /// The results of a call of a function with several results.
    Tuple(Vec<Ty>),
    Unknown,
}

impl Ty {
    pub fn is_tensor(&self) -> bool {
        matches!(self, Ty::Tensor(_))
    }

    /// A numeric compile-time value: may become a tensor constant.
    pub fn is_numeric_attr(&self) -> bool {
        matches!(self, Ty::Int | Ty::Size | Ty::Float | Ty::Scalar)
    }

    /// The static type of a parameter or result of a signature, seen from inside its function.
    pub fn of_param(ty: &ParamType) -> Ty {
        match ty {
            ParamType::Tensor(d) => Ty::Tensor(Dt::of_ref(d)),
            ParamType::TensorList(d) => Ty::TensorList(Dt::of_ref(d)),
            ParamType::Scalar => Ty::Scalar,
            ParamType::Int => Ty::Int,
            ParamType::Float => Ty::Float,
            ParamType::Bool => Ty::Bool,
            ParamType::DType => Ty::DType(Dt::Any),
            ParamType::IntList => Ty::IntList,
            ParamType::FloatList => Ty::FloatList,
        }
    }
}

impl Dt {
    pub fn of_ref(d: &DTypeRef) -> Dt {
        match d {
            DTypeRef::Any => Dt::Any,
            DTypeRef::Fixed(d) => Dt::Fixed(*d),
            DTypeRef::Var(v) => Dt::Var(v.clone()),
        }
    }
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Tensor(d) => write!(f, "Tensor{d}"),
            Ty::TensorList(d) => write!(f, "Tensor{d}[]"),
            Ty::Scalar => f.write_str("Scalar"),
            Ty::Int | Ty::Size => f.write_str("Int"),
            Ty::Float => f.write_str("Float"),
            Ty::Bool => f.write_str("Bool"),
            Ty::DType(_) => f.write_str("DType"),
            Ty::IntList | Ty::SizeList => f.write_str("Int[]"),
            Ty::FloatList => f.write_str("Float[]"),
            Ty::EmptyList => f.write_str("[]"),
            Ty::Tuple(items) => {
                let items: Vec<String> = items.iter().map(|t| t.to_string()).collect();
                write!(f, "({})", items.join(", "))
            }
            Ty::Unknown => f.write_str("?"),
        }
    }
}

/// How an argument fits a parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fit {
    No,
    /// Only with a conversion: a number becomes a tensor constant, an `Int` a `Float`.
    Promoted,
    Exact,
}

/// Does a value of type `arg` fit a parameter of type `param` (ignoring dtypes)?
pub fn fit(param: &ParamType, arg: &Ty) -> Fit {
    use Fit::*;
    match (param, arg) {
        (_, Ty::Unknown) => Exact,
        (ParamType::Tensor(_), Ty::Tensor(_)) => Exact,
        (ParamType::Tensor(_), Ty::Int | Ty::Size | Ty::Float | Ty::Scalar) => Promoted,
        (ParamType::TensorList(_), Ty::TensorList(_) | Ty::EmptyList) => Exact,
        (ParamType::Scalar, Ty::Int | Ty::Size | Ty::Float | Ty::Scalar) => Exact,
        (ParamType::Int, Ty::Int | Ty::Size) => Exact,
        (ParamType::Float, Ty::Float) => Exact,
        (ParamType::Float, Ty::Int | Ty::Size | Ty::Scalar) => Promoted,
        (ParamType::Bool, Ty::Bool) => Exact,
        (ParamType::DType, Ty::DType(_)) => Exact,
        (ParamType::IntList, Ty::IntList | Ty::SizeList | Ty::EmptyList) => Exact,
        (ParamType::FloatList, Ty::FloatList | Ty::EmptyList) => Exact,
        (ParamType::FloatList, Ty::IntList | Ty::SizeList) => Promoted,
        _ => No,
    }
}

/// The dtype variables of the function being checked, with their allowed dtypes
/// (`None`: any dtype).
#[derive(Clone, Debug, Default)]
pub struct DtypeVars {
    pub vars: BTreeMap<String, Option<Vec<DType>>>,
}

impl DtypeVars {
    /// The dtypes a tensor of dtype `dt` may have.
    pub fn possible(&self, dt: &Dt) -> Vec<DType> {
        match dt {
            Dt::Any => DType::ALL.to_vec(),
            Dt::Fixed(d) => vec![*d],
            Dt::Var(v) => {
                self.vars.get(v).cloned().flatten().unwrap_or_else(|| DType::ALL.to_vec())
            }
        }
    }
}

/// `{f32, f64}`.
pub fn fmt_dtype_set(set: &[DType]) -> String {
    let names: Vec<&str> = set.iter().map(|d| d.name()).collect();
    format!("{{{}}}", names.join(", "))
}
