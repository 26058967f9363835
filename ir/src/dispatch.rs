//! The type-pattern dispatcher: picks the overload of an op or function that a call means.
//!
//! One dispatcher serves both the front end's static checker (where some dtypes and attribute
//! values are unknown, written `None`, and "may match") and lowering (where everything is
//! concrete). Overloads are tried in declaration order, twice:
//!
//! 1. the *exact* pass: every argument must have the kind its parameter declares
//!    (`add(x, 2)` picks `add.scalar(Tensor<T> x, Scalar y)`);
//! 2. the *promotion* pass: a Scalar/Int/Float attribute or literal may also fill a `Tensor`
//!    parameter; it becomes a rank-0 constant of the dtype the signature's dtype variable binds
//!    to from the other tensor arguments (`0.5 * x` picks `mul(Tensor<T>, Tensor<T>)`).
//!
//! The first overload accepted wins. When none is, every overload's [`Rejection`] (from the
//! promotion pass, the most permissive) says why, so the caller can list each candidate.
//!
//! [`overlap`] decides statically whether an overload can ever be chosen after an earlier one.

use crate::attr::Attr;
use crate::dtype::DType;
use crate::library::{DTypeRef, ExprKind, FunctionDef, ParamDef, ParamType};
mod overlap;

pub use overlap::{overlap, Overlap};

/// What the dispatcher knows about one call argument.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgKind {
    Tensor {
        dtype: Option<DType>,
        rank: Option<usize>,
    },
    /// A list of tensors (all of one dtype; `None` when unknown).
    TensorList {
        dtype: Option<DType>,
        len: Option<usize>,
    },
    /// A compile-time attribute or literal; `value` is known for literals and during lowering.
    Attr {
        ty: AttrType,
        value: Option<Attr>,
    },
    /// A value of no tfn type, which no parameter accepts (from a host language: a Python
    /// string that is not a dtype name, a `dict`), described by `what` ("the string
    /// \"two\""), so that the call's error still lists every candidate.
    Unsupported {
        what: String,
    },
}

impl ArgKind {
    /// The kind of a known attribute value.
    pub fn of_attr(value: Attr) -> ArgKind {
        ArgKind::Attr { ty: AttrType::of(&value), value: Some(value) }
    }

    fn describe(&self) -> String {
        match self {
            ArgKind::Tensor { dtype: Some(d), .. } => format!("a {d} tensor"),
            ArgKind::Tensor { dtype: None, .. } => "a tensor".into(),
            ArgKind::TensorList { dtype: Some(d), .. } => format!("a list of {d} tensors"),
            ArgKind::TensorList { dtype: None, .. } => "a list of tensors".into(),
            ArgKind::Attr { value: Some(v), ty } => format!("{} `{v}`", ty.name()),
            ArgKind::Attr { value: None, ty } => format!("a {} attribute", ty.name()),
            ArgKind::Unsupported { what } => what.clone(),
        }
    }
}

/// The type of an attribute argument. `Scalar` is an attribute known only to be an int or a
/// float (a `Scalar` parameter passed on by the static checker).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AttrType {
    Bool,
    Int,
    Float,
    Scalar,
    DType,
    IntList,
    FloatList,
}

impl AttrType {
    pub fn of(value: &Attr) -> AttrType {
        match value {
            Attr::Bool(_) => AttrType::Bool,
            Attr::Int(_) => AttrType::Int,
            Attr::Float(_) => AttrType::Float,
            Attr::DType(_) => AttrType::DType,
            Attr::IntList(_) => AttrType::IntList,
            Attr::FloatList(_) => AttrType::FloatList,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            AttrType::Bool => "Bool",
            AttrType::Int => "Int",
            AttrType::Float => "Float",
            AttrType::Scalar => "Scalar",
            AttrType::DType => "DType",
            AttrType::IntList => "Int[]",
            AttrType::FloatList => "Float[]",
        }
    }

    fn is_numeric(self) -> bool {
        matches!(self, AttrType::Int | AttrType::Float | AttrType::Scalar)
    }
}

/// Which call argument a rejection is about: an index into the positional or keyword list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgRef {
    Positional(usize),
    Keyword(usize),
}

/// Where the value of one parameter of the chosen overload comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoundArg {
    Positional(usize),
    Keyword(usize),
    Default,
}

/// The overload a call resolved to.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved {
    /// Index into the overload list.
    pub overload: usize,
    /// One per parameter of the chosen overload, in parameter order.
    pub bindings: Vec<BoundArg>,
    /// Each dtype variable (type parameters, then `DType` parameters used as `Tensor<name>`)
    /// with the dtype it bound to (`None`: unknown, or not bound by any argument).
    pub dtype_vars: Vec<(String, Option<DType>)>,
    /// Parameters (by index) whose argument is an attribute promoted to a rank-0 tensor.
    pub promoted: Vec<usize>,
}

impl Resolved {
    /// The dtype a parameter's `DTypeRef` resolves to, when known.
    pub fn dtype_of(&self, dtype: &DTypeRef) -> Option<DType> {
        match dtype {
            DTypeRef::Any => None,
            DTypeRef::Fixed(d) => Some(*d),
            DTypeRef::Var(v) => self.dtype_vars.iter().find(|(n, _)| n == v).and_then(|(_, d)| *d),
        }
    }
}

/// Why one overload did not accept a call.
#[derive(Clone, Debug, PartialEq)]
pub struct Rejection {
    pub overload: usize,
    /// What kind of mismatch this is, for callers that pick an error code (the front end):
    /// match on this, never on the wording of `reason`.
    pub kind: RejectionKind,
    /// Lowercase, e.g. "argument `x` is i32 but `T` must be one of f32, f64".
    pub reason: String,
    pub culprit: Option<ArgRef>,
}

/// The kinds of [`Rejection`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RejectionKind {
    /// An argument's dtype is not in its dtype variable's allowed set (`T: {f32, f64}`).
    DTypeConstraint,
    /// An argument's dtype differs from the one a dtype variable is already bound to by an
    /// earlier argument (`add(x_f32, y_f64)`).
    DTypeMismatch,
    /// An argument's dtype differs from its parameter's fixed dtype (`Tensor<bool>`).
    FixedDType,
    /// A promoted literal's dtype cannot be inferred (no tensor argument binds its variable).
    UninferableLiteral,
    /// An argument has the wrong kind (a tensor where an attribute is expected, ...).
    ArgumentKind,
    /// The arguments do not bind to the parameters: too many positional arguments, an unknown
    /// or repeated keyword, a missing required argument.
    Arity,
}

/// Resolves a call against `overloads` (one name's overloads, in declaration order).
pub fn dispatch(
    overloads: &[FunctionDef],
    positional: &[ArgKind],
    keywords: &[(&str, ArgKind)],
) -> Result<Resolved, Vec<Rejection>> {
    for promote in [false, true] {
        let mut rejections = Vec::new();
        for (index, f) in overloads.iter().enumerate() {
            match try_overload(f, positional, keywords, promote) {
                Ok(mut resolved) => {
                    resolved.overload = index;
                    return Ok(resolved);
                }
                Err(Reject { kind, reason, culprit }) => {
                    rejections.push(Rejection { overload: index, kind, reason, culprit })
                }
            }
        }
        if promote {
            return Err(rejections);
        }
    }
    Err(Vec::new())
}

/// A rejection before it knows its overload's index.
struct Reject {
    kind: RejectionKind,
    reason: String,
    culprit: Option<ArgRef>,
}

impl Reject {
    fn new(kind: RejectionKind, reason: String, culprit: Option<ArgRef>) -> Reject {
        Reject { kind, reason, culprit }
    }
}

fn try_overload(
    f: &FunctionDef,
    positional: &[ArgKind],
    keywords: &[(&str, ArgKind)],
    promote: bool,
) -> Result<Resolved, Reject> {
    let bindings = bind_arguments(f, positional, keywords)?;
    let arg = |b: BoundArg| -> (Option<&ArgKind>, Option<ArgRef>) {
        match b {
            BoundArg::Positional(i) => (positional.get(i), Some(ArgRef::Positional(i))),
            BoundArg::Keyword(i) => (keywords.get(i).map(|(_, k)| k), Some(ArgRef::Keyword(i))),
            BoundArg::Default => (None, None),
        }
    };
    let mut vars = DTypeVars::new(f);
    // DType parameters bind the variables of the same name first (`cast(x, dtype)`), within
    // the variable's allowed set when it is also a type parameter (`arange<dtype: {..}>`).
    for (p, &b) in f.params.iter().zip(&bindings) {
        if p.ty == ParamType::DType {
            let (value, culprit) = match arg(b) {
                (Some(ArgKind::Attr { value: Some(Attr::DType(d)), .. }), c) => (Some(*d), c),
                (Some(_), c) => (None, c),
                (None, c) => (default_dtype(p), c),
            };
            vars.bind_attr(&p.name, value)
                .map_err(|(kind, reason)| Reject::new(kind, reason, culprit))?;
        }
    }
    let mut promoted = Vec::new();
    for (index, (p, &b)) in f.params.iter().zip(&bindings).enumerate() {
        let (Some(kind), culprit) = arg(b) else { continue };
        match (&p.ty, kind) {
            (ParamType::Tensor(d), ArgKind::Tensor { dtype, .. })
            | (ParamType::TensorList(d), ArgKind::TensorList { dtype, .. }) => vars
                .unify(d, *dtype, &p.name)
                .map_err(|(kind, reason)| Reject::new(kind, reason, culprit))?,
            (ParamType::Tensor(_), ArgKind::Attr { ty, .. }) if promote && ty.is_numeric() => {
                promoted.push(index)
            }
            (ty, ArgKind::Attr { ty: at, .. }) if attr_fits(ty, *at) => {}
            (ty, kind) => {
                let empty = matches!(kind, ArgKind::Attr { value: Some(Attr::IntList(v)), .. } if v.is_empty());
                let reason = if empty && matches!(ty, ParamType::TensorList(_)) {
                    format!(
                        "argument `{}` must be {}, got an empty list (a tensor list needs at \
                         least one tensor to have a dtype)",
                        p.name,
                        param_type_name(ty)
                    )
                } else {
                    format!(
                        "argument `{}` must be {}, got {}",
                        p.name,
                        param_type_name(ty),
                        kind.describe()
                    )
                };
                return Err(Reject::new(RejectionKind::ArgumentKind, reason, culprit));
            }
        }
    }
    for &index in &promoted {
        let p = &f.params[index];
        let ParamType::Tensor(d) = &p.ty else { continue };
        if !vars.knows(d) {
            let culprit = arg(bindings[index]).1;
            let others = f.params.iter().enumerate().any(|(i, q)| {
                i != index && matches!(q.ty, ParamType::Tensor(_) | ParamType::TensorList(_))
            });
            let reason = if others {
                format!("cannot infer a dtype for argument `{}` from the other arguments", p.name)
            } else {
                format!(
                    "argument `{}` is a number where a tensor is expected, and no other argument \
                     gives its dtype: pass a tensor (for one value, a 0-d array)",
                    p.name
                )
            };
            return Err(Reject::new(RejectionKind::UninferableLiteral, reason, culprit));
        }
    }
    Ok(Resolved { overload: 0, bindings, dtype_vars: vars.into_list(), promoted })
}

/// Maps arguments to parameters: positional first, then keywords, then defaults.
fn bind_arguments(
    f: &FunctionDef,
    positional: &[ArgKind],
    keywords: &[(&str, ArgKind)],
) -> Result<Vec<BoundArg>, Reject> {
    let mut bound: Vec<Option<BoundArg>> = vec![None; f.params.len()];
    let positional_params = f.params.iter().take_while(|p| !p.keyword_only).count();
    if positional.len() > positional_params {
        let extra = positional_params;
        let reason = format!(
            "`{}` takes {} positional argument{} but {} were given",
            f.full_name(),
            positional_params,
            if positional_params == 1 { "" } else { "s" },
            positional.len()
        );
        return Err(Reject::new(RejectionKind::Arity, reason, Some(ArgRef::Positional(extra))));
    }
    for (i, slot) in bound.iter_mut().enumerate().take(positional.len()) {
        *slot = Some(BoundArg::Positional(i));
    }
    for (k, (name, _)) in keywords.iter().enumerate() {
        let culprit = Some(ArgRef::Keyword(k));
        let Some((index, _)) = f.param(name) else {
            let reason = format!("unknown keyword argument `{name}`");
            return Err(Reject::new(RejectionKind::Arity, reason, culprit));
        };
        if bound[index].is_some() {
            let reason = format!("argument `{name}` given twice");
            return Err(Reject::new(RejectionKind::Arity, reason, culprit));
        }
        bound[index] = Some(BoundArg::Keyword(k));
    }
    f.params
        .iter()
        .zip(bound)
        .map(|(p, b)| match b {
            Some(b) => Ok(b),
            None if p.default.is_some() => Ok(BoundArg::Default),
            None => Err(Reject::new(
                RejectionKind::Arity,
                format!("missing required argument `{}`", p.name),
                None,
            )),
        })
        .collect()
}

fn default_dtype(p: &ParamDef) -> Option<DType> {
    match p.default.as_ref().map(|e| &e.kind) {
        Some(ExprKind::Literal(Attr::DType(d))) => Some(*d),
        _ => None,
    }
}

/// Whether an attribute of type `arg` may fill a parameter of type `param` (exactly).
fn attr_fits(param: &ParamType, arg: AttrType) -> bool {
    use AttrType as A;
    match param {
        ParamType::Scalar | ParamType::Float => arg.is_numeric(),
        ParamType::Int => arg == A::Int,
        ParamType::Bool => arg == A::Bool,
        ParamType::DType => arg == A::DType,
        ParamType::IntList => arg == A::IntList,
        ParamType::FloatList => matches!(arg, A::IntList | A::FloatList),
        ParamType::Tensor(_) | ParamType::TensorList(_) => false,
    }
}

/// The type as written in signatures: `Tensor<T>`, `Int[]`, ...
pub fn param_type_name(ty: &ParamType) -> String {
    let dtype = |d: &DTypeRef| match d {
        DTypeRef::Any => String::new(),
        DTypeRef::Fixed(d) => format!("<{d}>"),
        DTypeRef::Var(v) => format!("<{v}>"),
    };
    match ty {
        ParamType::Tensor(d) => format!("Tensor{}", dtype(d)),
        ParamType::TensorList(d) => format!("Tensor{}[]", dtype(d)),
        ParamType::Scalar => "Scalar".into(),
        ParamType::Int => "Int".into(),
        ParamType::Float => "Float".into(),
        ParamType::Bool => "Bool".into(),
        ParamType::DType => "DType".into(),
        ParamType::IntList => "Int[]".into(),
        ParamType::FloatList => "Float[]".into(),
    }
}

/// The state of the dtype variables of one overload while matching a call.
struct DTypeVars {
    /// (name, allowed dtypes, state)
    vars: Vec<(String, Option<Vec<DType>>, VarState)>,
}

#[derive(Clone, Debug, PartialEq)]
enum VarState {
    Unbound,
    /// Bound by an argument whose dtype is unknown (static checking): anything may match.
    Unknown,
    /// Bound to a dtype by the named parameter.
    Bound(DType, String),
}

impl DTypeVars {
    fn new(f: &FunctionDef) -> DTypeVars {
        let mut vars: Vec<_> = f
            .type_params
            .iter()
            .map(|t| (t.name.clone(), t.allowed.clone(), VarState::Unbound))
            .collect();
        for p in &f.params {
            if p.ty == ParamType::DType && !vars.iter().any(|(n, ..)| *n == p.name) {
                vars.push((p.name.clone(), None, VarState::Unbound));
            }
        }
        DTypeVars { vars }
    }

    /// Binds the variable of a `DType` parameter to its argument (`None`: unknown).
    fn bind_attr(
        &mut self,
        name: &str,
        value: Option<DType>,
    ) -> Result<(), (RejectionKind, String)> {
        if let Some((_, allowed, state)) = self.vars.iter_mut().find(|(n, ..)| n == name) {
            if let (Some(d), Some(allowed)) = (value, allowed.as_ref()) {
                if !allowed.contains(&d) {
                    let list: Vec<&str> = allowed.iter().map(|d| d.name()).collect();
                    let reason =
                        format!("argument `{name}` is {d} but must be one of {}", list.join(", "));
                    return Err((RejectionKind::DTypeConstraint, reason));
                }
            }
            *state = match value {
                Some(d) => VarState::Bound(d, name.to_string()),
                None => VarState::Unknown,
            };
        }
        Ok(())
    }

    fn knows(&self, d: &DTypeRef) -> bool {
        match d {
            DTypeRef::Any => false,
            DTypeRef::Fixed(_) => true,
            DTypeRef::Var(v) => self.vars.iter().any(|(n, _, s)| n == v && *s != VarState::Unbound),
        }
    }

    /// Unifies a parameter's dtype pattern with an argument's dtype.
    fn unify(
        &mut self,
        pattern: &DTypeRef,
        dtype: Option<DType>,
        param: &str,
    ) -> Result<(), (RejectionKind, String)> {
        use RejectionKind::{DTypeConstraint, DTypeMismatch, FixedDType};
        match pattern {
            DTypeRef::Any => Ok(()),
            DTypeRef::Fixed(want) => match dtype {
                Some(got) if got != *want => {
                    Err((FixedDType, format!("argument `{param}` is {got} but must be {want}")))
                }
                _ => Ok(()),
            },
            DTypeRef::Var(v) => {
                let Some((name, allowed, state)) = self.vars.iter_mut().find(|(n, ..)| n == v)
                else {
                    return Ok(());
                };
                let Some(got) = dtype else {
                    if *state == VarState::Unbound {
                        *state = VarState::Unknown;
                    }
                    return Ok(());
                };
                if let Some(allowed) = allowed {
                    if !allowed.contains(&got) {
                        let list: Vec<&str> = allowed.iter().map(|d| d.name()).collect();
                        let reason = format!(
                            "argument `{param}` is {got} but `{name}` must be one of {}",
                            list.join(", ")
                        );
                        return Err((DTypeConstraint, reason));
                    }
                }
                match state {
                    VarState::Bound(bound, from) if *bound != got => Err((
                        DTypeMismatch,
                        format!(
                            "argument `{param}` is {got} but `{name}` is {bound} from `{from}`"
                        ),
                    )),
                    VarState::Bound(..) => Ok(()),
                    _ => {
                        *state = VarState::Bound(got, param.to_string());
                        Ok(())
                    }
                }
            }
        }
    }

    fn into_list(self) -> Vec<(String, Option<DType>)> {
        self.vars
            .into_iter()
            .map(|(n, _, s)| {
                let d = match s {
                    VarState::Bound(d, _) => Some(d),
                    _ => None,
                };
                (n, d)
            })
            .collect()
    }
}
