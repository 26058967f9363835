//! A call being lowered: the values expressions evaluate to, a call's arguments bound to the
//! chosen overload's parameters with accessors that name the argument in errors, and the
//! diagnostics for calls no overload accepts.

use crate::attr::{Attr, Scalar};
use crate::diagnostic::Diagnostic;
use crate::dispatch::{param_type_name, ArgRef, Rejection, Resolved};
use crate::dtype::DType;
use crate::graph::{Graph, ValueId};
use crate::library::FunctionDef;
use crate::shape::{Dim, DimExpr};
use crate::span::Span;

/// The value of an expression during instantiation.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Val {
    Tensor(ValueId),
    List(Vec<ValueId>),
    Attr(Attr),
    Tuple(Vec<Val>),
    /// An `Int` known only when the code runs (a loop variable, or arithmetic on one): a
    /// rank-0 `i64` value of the graph (`loops.rs`).
    Index(ValueId),
    /// An `Int` known only at the call (`size(x, 1)`, `size(x, -1) / heads`): a size over the
    /// symbols of the graph being built, evaluated when the call binds its sizes
    /// ([`crate::bind`]). A size that folds to a constant (an axis the signature says is 1)
    /// stays a size, `DimExpr::Dim(Dim::Const(_))`, for size arithmetic only — its `/` is the
    /// sizes' exact integer division whatever the call's sizes are — and is a plain
    /// `Val::Attr(Int)` everywhere else ([`Val::settled`]).
    Size(DimExpr),
    /// An `Int[]` with at least one size in it (`shape(x)`, `[-1, t, heads]`).
    SizeList(Vec<SizeItem>),
    /// A float computed from sizes (`rsqrt(size(q, -1))`, `2.0 * sqrt(size(x, 0))`): a rank-0
    /// tensor whose dtype is the one where it is used — the tensor it meets in an operator,
    /// the declared result's, `cast`'s — or `f32` (`sizes.rs`). Kept as the call until then.
    SizeFloat(Box<SizeCall>),
}

/// The call a [`Val::SizeFloat`] stands for: a static op on sizes, numbers and other such
/// floats.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct SizeCall {
    pub callee: String,
    pub args: Vec<Val>,
    pub span: Span,
}

/// One item of an `Int[]` that mixes numbers and sizes.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum SizeItem {
    Int(i64),
    Size(DimExpr),
}

impl Val {
    /// A size that folded to a constant as the plain `Int` it is; any other value as it is.
    pub(super) fn settled(self) -> Val {
        let konst = |item: SizeItem| match item {
            SizeItem::Size(DimExpr::Dim(Dim::Const(c))) => SizeItem::Int(c as i64),
            other => other,
        };
        match self {
            Val::Size(DimExpr::Dim(Dim::Const(c))) => Val::Attr(Attr::Int(c as i64)),
            Val::SizeList(items) => {
                let items: Vec<SizeItem> = items.into_iter().map(konst).collect();
                let ints: Option<Vec<i64>> = items
                    .iter()
                    .map(|i| match i {
                        SizeItem::Int(v) => Some(*v),
                        SizeItem::Size(_) => None,
                    })
                    .collect();
                match ints {
                    Some(ints) => Val::Attr(Attr::IntList(ints)),
                    None => Val::SizeList(items),
                }
            }
            v => v,
        }
    }

    /// Whether this is a size not known until the call (not one that folded to a constant).
    pub(super) fn is_call_size(&self) -> bool {
        matches!(self, Val::Size(e) if !matches!(e, DimExpr::Dim(Dim::Const(_))))
    }

    pub(super) fn describe(&self, graph: &Graph) -> String {
        match self {
            Val::Tensor(v) => format!("a {} tensor", graph.ty(*v).dtype),
            Val::List(_) => "a list of tensors".into(),
            Val::Attr(a) => format!("{} `{a}`", a.type_name()),
            Val::Tuple(items) => format!("a tuple of {} values", items.len()),
            Val::Index(_) => "an Int known only when the loop runs".into(),
            Val::Size(_) => "a size (an `Int` known only at the call)".into(),
            Val::SizeList(_) => "a list of sizes (an `Int[]` known only at the call)".into(),
            Val::SizeFloat(_) => "a float computed from a size (known only at the call)".into(),
        }
    }
}

/// A call whose arguments are bound to the chosen overload's parameters.
pub(super) struct BoundCall<'a> {
    pub fdef: &'a FunctionDef,
    pub resolved: Resolved,
    /// One per parameter.
    pub vals: Vec<Val>,
    /// The argument expression of each parameter (`None` for defaults and top-level args).
    pub spans: Vec<Option<Span>>,
    /// How each argument is named in messages: its source text when short, else the
    /// parameter's name.
    pub labels: Vec<String>,
    /// The call expression (`None` for the top-level call).
    pub span: Option<Span>,
}

pub(super) fn diag(
    code: &'static str,
    message: impl Into<String>,
    span: Option<Span>,
) -> Diagnostic {
    let d = Diagnostic::error(code, message);
    match span {
        Some(s) => d.at(s, ""),
        None => d,
    }
}

pub(super) fn flatten(vals: Vec<Val>) -> Vec<Val> {
    vals.into_iter()
        .flat_map(|v| match v {
            Val::Tuple(items) => flatten(items),
            v => vec![v],
        })
        .collect()
}

/// The common dtype of a tensor list (`None` for an empty list).
pub(super) fn list_dtype(mut dtypes: impl Iterator<Item = DType>) -> Result<Option<DType>, String> {
    let Some(first) = dtypes.next() else { return Ok(None) };
    match dtypes.find(|d| *d != first) {
        Some(other) => {
            Err(format!("tensors in the list have different dtypes: {first} and {other}"))
        }
        None => Ok(Some(first)),
    }
}

/// `add.scalar(Tensor<T> x, Scalar y)`.
pub(super) fn signature(f: &FunctionDef) -> String {
    let mut params = Vec::new();
    for (i, p) in f.params.iter().enumerate() {
        if p.keyword_only && (i == 0 || !f.params[i - 1].keyword_only) {
            params.push("*".to_string());
        }
        params.push(format!("{} {}", param_type_name(&p.ty), p.name));
    }
    let type_params: Vec<String> = f
        .type_params
        .iter()
        .map(|t| match &t.allowed {
            Some(allowed) => {
                let names: Vec<&str> = allowed.iter().map(|d| d.name()).collect();
                format!("{}: {{{}}}", t.name, names.join(", "))
            }
            None => t.name.clone(),
        })
        .collect();
    let generics = if type_params.is_empty() {
        String::new()
    } else {
        format!("<{}>", type_params.join(", "))
    };
    format!("{}{generics}({})", f.full_name(), params.join(", "))
}

/// The diagnostic for a call of `name` that no overload accepts, without source locations
/// (a call from a host language): every candidate and why [`crate::dispatch::dispatch`]
/// rejected it.
pub fn no_overload(name: &str, overloads: &[FunctionDef], rejections: &[Rejection]) -> Diagnostic {
    no_match(name, overloads, rejections, None, &[], &[])
}

/// The diagnostic for a call no overload accepts.
pub(super) fn no_match(
    name: &str,
    overloads: &[FunctionDef],
    rejections: &[Rejection],
    span: Option<Span>,
    positional_spans: &[Span],
    keyword_spans: &[Span],
) -> Diagnostic {
    let culprit_span = |r: &Rejection| match r.culprit {
        Some(ArgRef::Positional(i)) => positional_spans.get(i).copied(),
        Some(ArgRef::Keyword(i)) => keyword_spans.get(i).copied(),
        None => None,
    };
    match rejections {
        [only] if overloads.len() == 1 => {
            let msg = format!("mismatched arguments for `{name}`: {}", only.reason);
            diag("E0502", msg, culprit_span(only).or(span))
                .with_note(format!("`{}` is declared here", signature(&overloads[0])))
        }
        _ => {
            // When every candidate blames the same argument, point at it.
            let blamed = rejections.first().map(|r| r.culprit);
            let same =
                blamed.flatten().is_some() && rejections.iter().all(|r| Some(r.culprit) == blamed);
            let at = if same { rejections.first().and_then(culprit_span).or(span) } else { span };
            let mut d = diag("E0502", format!("no overload of `{name}` matches the arguments"), at);
            for r in rejections {
                if let Some(f) = overloads.get(r.overload) {
                    d = d.with_note(format!("`{}` is not a match: {}", signature(f), r.reason));
                }
            }
            d
        }
    }
}

/// Converts a literal or attribute to a constant of `dtype`, or says why it does not fit.
/// (The front end's checker calls it too, to reject such literals at load time.)
pub fn scalar_of(value: &Attr, dtype: DType) -> Result<Scalar, String> {
    let fits_i32 = |i: i64| match dtype {
        DType::I32 => i32::try_from(i).is_ok(),
        DType::I8 => i8::try_from(i).is_ok(),
        DType::U8 => u8::try_from(i).is_ok(),
        _ => true,
    };
    match (value, dtype) {
        // An int literal for a float: the same checks as the float it becomes.
        (Attr::Int(i), d) if d.is_float() => {
            let float = Attr::Float(*i as f64);
            scalar_of(&float, d)
                .map_err(|m| m.replacen(&format!("`{float}`"), &format!("`{i}`"), 1))
        }
        (Attr::Int(i), d) if d.is_int() && fits_i32(*i) => Ok(Scalar::Int(*i)),
        (Attr::Int(i @ (0 | 1)), DType::Bool) => Ok(Scalar::Bool(*i == 1)),
        // A finite literal that rounds to infinity in f32 overflows it (spec section 7).
        (Attr::Float(f), DType::F32) if f.is_finite() && (*f as f32).is_infinite() => {
            Err(format!("literal `{value}` overflows f32 (largest finite: {:e})", f32::MAX))
        }
        (Attr::Float(f), d @ (DType::F16 | DType::BF16))
            if f.is_finite() && crate::storage::overflows_half(*f, d) =>
        {
            Err(format!("literal `{value}` overflows {d}"))
        }
        (Attr::Float(f), d) if d.is_float() => Ok(Scalar::Float(*f)),
        (Attr::Float(f), d) if d.is_int() && !f.is_finite() => {
            Err(format!("literal `{value}` is not finite and cannot be {d}"))
        }
        (Attr::Float(f), d) if d.is_int() && f.fract() != 0.0 => {
            Err(format!("literal `{value}` has a fractional part and cannot be {d}"))
        }
        (Attr::Float(f), d)
            if d.is_int() && f.is_finite() && fits_i32(*f as i64) && f.abs() < 9.2e18 =>
        {
            Ok(Scalar::Int(*f as i64))
        }
        (Attr::Bool(b), DType::Bool) => Ok(Scalar::Bool(*b)),
        (Attr::Int(_) | Attr::Float(_), d) if d.is_int() => {
            Err(format!("literal `{value}` does not fit in {d}"))
        }
        _ => Err(format!("{} `{value}` cannot be used as a {dtype} value", value.type_name())),
    }
}

impl BoundCall<'_> {
    fn index(&self, name: &str) -> Result<usize, Diagnostic> {
        self.fdef.param(name).map(|(i, _)| i).ok_or_else(|| {
            let msg = format!(
                "internal error: primitive `{}` has no parameter `{name}` (the prelude and the \
                 compiler disagree)",
                self.fdef.full_name()
            );
            diag("E0509", msg, Some(self.fdef.name_span))
        })
    }

    /// The span to point at for an argument (the call's when it has none).
    pub(super) fn span_of(&self, name: &str) -> Option<Span> {
        self.index(name).ok().and_then(|i| self.spans[i]).or(self.span)
    }

    /// How to name an argument in a message, in backticks.
    pub(super) fn label(&self, name: &str) -> String {
        let label = self.index(name).ok().and_then(|i| self.labels.get(i));
        format!("`{}`", label.map_or(name, |l| l.as_str()))
    }

    pub(super) fn error(
        &self,
        code: &'static str,
        arg: &str,
        msg: impl Into<String>,
    ) -> Diagnostic {
        diag(code, msg, self.span_of(arg))
    }

    fn val(&self, name: &str) -> Result<&Val, Diagnostic> {
        let i = self.index(name)?;
        self.vals.get(i).ok_or_else(|| self.error("E0509", name, "internal error: unbound"))
    }

    pub(super) fn tensor(&self, name: &str) -> Result<crate::ValueId, Diagnostic> {
        match self.val(name)? {
            Val::Tensor(v) => Ok(*v),
            _ => Err(self.error("E0502", name, format!("{} must be a tensor", self.label(name)))),
        }
    }

    pub(super) fn attr(&self, name: &str) -> Result<&Attr, Diagnostic> {
        match self.val(name)? {
            Val::Attr(a) => Ok(a),
            Val::Index(_) => Err(self
                .error(
                    "E0511",
                    name,
                    format!(
                        "{} is known only when the loop runs, but `{name}` must be known at compile time",
                        self.label(name)
                    ),
                )
                .with_help("a loop variable can index a tensor (`w[i]`) or enter arithmetic")),
            Val::Size(_) | Val::SizeList(_) => Err(self.not_static(name)),
            _ => {
                Err(self.error("E0502", name, format!("{} must be an attribute", self.label(name))))
            }
        }
    }

    pub(super) fn int(&self, name: &str) -> Result<i64, Diagnostic> {
        match self.attr(name)? {
            Attr::Int(i) => Ok(*i),
            a => Err(self.error(
                "E0502",
                name,
                format!("{} must be Int, got `{a}`", self.label(name)),
            )),
        }
    }

    /// The error for a size given where a compile-time value is needed.
    pub(super) fn not_static(&self, name: &str) -> Diagnostic {
        let what = match self.val(name) {
            Ok(Val::SizeList(_)) => "holds sizes",
            _ => "is a size",
        };
        let msg = format!(
            "{} {what}, known only at the call: `{}`'s `{name}` needs a compile-time value",
            self.label(name),
            self.fdef.full_name()
        );
        self.error("E0507", name, msg).with_help(
            "sizes may be used in `reshape`, `arange`, `full` and `broadcast_to` shapes, loop \
             bounds, integer arithmetic and `Int` arguments of functions",
        )
    }

    /// An `Int` that may be a size (`arange`'s `n`).
    pub(super) fn size_item(&self, name: &str) -> Result<SizeItem, Diagnostic> {
        match self.val(name)? {
            Val::Size(e) => Ok(SizeItem::Size(e.clone())),
            _ => self.int(name).map(SizeItem::Int),
        }
    }

    /// An `Int[]` whose items may be sizes (`reshape`'s and `full`'s `shape`).
    pub(super) fn size_list(&self, name: &str) -> Result<Vec<SizeItem>, Diagnostic> {
        match self.val(name)? {
            Val::SizeList(items) => Ok(items.clone()),
            _ => Ok(self.int_list(name)?.into_iter().map(SizeItem::Int).collect()),
        }
    }

    pub(super) fn int_list(&self, name: &str) -> Result<Vec<i64>, Diagnostic> {
        match self.attr(name)? {
            Attr::IntList(v) => Ok(v.clone()),
            a => Err(self.error(
                "E0502",
                name,
                format!("{} must be Int[], got `{a}`", self.label(name)),
            )),
        }
    }

    pub(super) fn bool(&self, name: &str) -> Result<bool, Diagnostic> {
        match self.attr(name)? {
            Attr::Bool(b) => Ok(*b),
            a => Err(self.error(
                "E0502",
                name,
                format!("{} must be Bool, got `{a}`", self.label(name)),
            )),
        }
    }

    pub(super) fn dtype(&self, name: &str) -> Result<DType, Diagnostic> {
        match self.attr(name)? {
            Attr::DType(d) => Ok(*d),
            a => Err(self.error(
                "E0502",
                name,
                format!("{} must be DType, got `{a}`", self.label(name)),
            )),
        }
    }

    pub(super) fn list(&self, name: &str) -> Result<Vec<crate::ValueId>, Diagnostic> {
        match self.val(name)? {
            Val::List(v) => Ok(v.clone()),
            _ => Err(self.error(
                "E0502",
                name,
                format!("{} must be a list of tensors", self.label(name)),
            )),
        }
    }
}

/// Normalises a possibly negative axis for a tensor of `rank` axes.
pub(super) fn normalize_axis(axis: i64, rank: usize) -> Option<usize> {
    let rank = rank as i64;
    let a = if axis < 0 { axis + rank } else { axis };
    (0..rank).contains(&a).then_some(a as usize)
}
