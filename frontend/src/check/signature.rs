//! Signatures: types as written → [`ParamType`]s, parameter rules, defaults, extern clauses.
//!
//! A signature with an error is still turned into a [`FunctionDef`] (with placeholder types) but
//! marked *broken*: calls of a broken function are not checked further, so one mistake in a
//! header does not cascade into every call site.

use super::types::{fit, Fit, Ty};
use crate::ast::{self, TypeArg};
use crate::print::param_type;
use crate::{convert, suggest};
use std::collections::BTreeSet;
use tfn_ir::library::{Body, DTypeRef, FunctionDef, ParamDef, ParamType, TypeParam};
use tfn_ir::{DType, Diagnostic};

pub struct Signature {
    pub def: FunctionDef,
    pub broken: bool,
    /// Per parameter: its type had an error (the body sees it as unknown).
    pub broken_params: Vec<bool>,
}

const TYPE_NAMES: [&str; 6] = ["Tensor", "Scalar", "Int", "Float", "Bool", "DType"];

/// Checks a header and builds its [`FunctionDef`] with the given body.
pub fn check_signature(sig: &ast::Signature, body: Body, diags: &mut Vec<Diagnostic>) -> Signature {
    let before = diags.len();
    let mut type_params = Vec::new();
    let mut seen = BTreeSet::new();
    for tp in &sig.type_params {
        if !seen.insert(tp.name.name.clone()) {
            diags.push(
                Diagnostic::error(
                    "E0104",
                    format!("dtype variable `{}` is declared twice", tp.name.name),
                )
                .at(tp.name.span, "declared again"),
            );
        }
        let allowed = tp.allowed.as_ref().map(|set| {
            let mut dtypes: Vec<DType> = Vec::new();
            for (d, _) in set {
                if !dtypes.contains(d) {
                    dtypes.push(*d);
                }
            }
            dtypes
        });
        type_params.push(TypeParam { name: tp.name.name.clone(), allowed, span: tp.span });
    }
    // Dtype variables: type parameters, and `DType` parameters (`cast(..) -> Tensor<dtype>`).
    let dtype_params: BTreeSet<&str> = sig
        .params
        .iter()
        .filter(|p| p.ty.base.name == "DType" && p.ty.arg.is_none() && !p.ty.list)
        .map(|p| p.name.name.as_str())
        .collect();
    let vars: BTreeSet<&str> =
        sig.type_params.iter().map(|t| t.name.name.as_str()).chain(dtype_params).collect();

    let mut params = Vec::new();
    let mut broken_params = Vec::new();
    let mut names = BTreeSet::new();
    let mut seen_default: Option<&ast::Param> = None;
    for (i, star) in sig.stars.iter().enumerate() {
        if i > 0 {
            diags.push(
                Diagnostic::error("E0105", "`*` may appear only once in a parameter list")
                    .at(*star, "second `*`"),
            );
        }
    }
    for p in &sig.params {
        let ty = resolve_type(&p.ty, &vars, diags);
        if !names.insert(p.name.name.clone()) {
            diags.push(
                Diagnostic::error(
                    "E0103",
                    format!("parameter `{}` is declared twice", p.name.name),
                )
                .at(p.name.span, "declared again"),
            );
        }
        if !p.keyword_only {
            match (&p.default, seen_default) {
                (Some(_), _) => seen_default = Some(p),
                (None, Some(earlier)) => diags.push(
                    Diagnostic::error(
                        "E0106",
                        format!(
                            "parameter `{}` needs a default: it follows a parameter with one",
                            p.name.name
                        ),
                    )
                    .at(p.name.span, "no default")
                    .with_secondary(earlier.name.span, "has a default")
                    .with_help("give it a default, or make it keyword-only by moving it after `*`"),
                ),
                (None, None) => {}
            }
        }
        let default = p.default.as_ref().and_then(|d| check_default(p, d, ty.as_ref(), diags));
        broken_params.push(ty.is_none());
        params.push(ParamDef {
            name: p.name.name.clone(),
            ty: ty.unwrap_or(ParamType::Tensor(DTypeRef::Any)),
            default,
            keyword_only: p.keyword_only,
            span: p.span,
        });
    }
    let mut returns = Vec::new();
    for r in &sig.returns {
        let ty = resolve_type(r, &vars, diags);
        if let Some(ty) = &ty {
            if !matches!(ty, ParamType::Tensor(_)) {
                diags.push(
                    Diagnostic::error(
                        "E0110",
                        format!("results must be tensors, found `{}`", param_type(ty)),
                    )
                    .at(r.span, "not a `Tensor`"),
                );
            }
        }
        returns.push(ty.unwrap_or(ParamType::Tensor(DTypeRef::Any)));
    }
    let def = FunctionDef {
        name: sig.name.base.name.clone(),
        overload: sig.name.overload.as_ref().map(|o| o.name.clone()),
        type_params,
        params,
        returns,
        body,
        span: sig.span,
        name_span: sig.name.span,
    };
    Signature { def, broken: diags.len() > before, broken_params }
}

/// A type as written → a [`ParamType`], or an error.
fn resolve_type(
    t: &ast::TypeExpr,
    vars: &BTreeSet<&str>,
    diags: &mut Vec<Diagnostic>,
) -> Option<ParamType> {
    let base = t.base.name.as_str();
    let dtype = match &t.arg {
        None => DTypeRef::Any,
        Some(_) if base != "Tensor" => {
            diags.push(
                Diagnostic::error("E0101", format!("`{base}` takes no dtype argument"))
                    .at(t.span, "only `Tensor` has a dtype"),
            );
            return None;
        }
        Some(TypeArg::Fixed(d, _)) => DTypeRef::Fixed(*d),
        Some(TypeArg::Var(v)) => {
            if !vars.contains(v.name.as_str()) {
                let mut d =
                    Diagnostic::error("E0102", format!("unknown dtype variable `{}`", v.name))
                        .at(v.span, "not declared");
                d = match suggest::closest(&v.name, vars.iter().copied()) {
                    Some(s) => {
                        d.with_help(format!("a dtype variable with a similar name exists: `{s}`"))
                    }
                    None => d.with_help(format!(
                        "declare it after the name (`<{}>`), or use a dtype such as `f32`",
                        v.name
                    )),
                };
                diags.push(d);
                return None;
            }
            DTypeRef::Var(v.name.clone())
        }
    };
    let ty = match (base, t.list) {
        ("Tensor", false) => ParamType::Tensor(dtype),
        ("Tensor", true) => ParamType::TensorList(dtype),
        ("Scalar", false) => ParamType::Scalar,
        ("Int", false) => ParamType::Int,
        ("Float", false) => ParamType::Float,
        ("Bool", false) => ParamType::Bool,
        ("DType", false) => ParamType::DType,
        ("Int", true) => ParamType::IntList,
        ("Float", true) => ParamType::FloatList,
        (_, true) if TYPE_NAMES.contains(&base) => {
            diags.push(
                Diagnostic::error("E0101", format!("there are no lists of `{base}`"))
                    .at(t.span, "not a type")
                    .with_note("list types are `Int[]`, `Float[]` and `Tensor[]`"),
            );
            return None;
        }
        _ => {
            let mut d = Diagnostic::error("E0101", format!("unknown type `{base}`"))
                .at(t.base.span, "not a type");
            d = match suggest::closest(base, TYPE_NAMES) {
                Some(s) => d.with_help(format!("a type with a similar name exists: `{s}`")),
                None => d.with_note("types are `Tensor`, `Scalar`, `Int`, `Float`, `Bool`, `DType` and lists `Int[]`, `Float[]`, `Tensor[]`"),
            };
            diags.push(d);
            return None;
        }
    };
    Some(ty)
}

/// The type of a constant expression, or `None` when it is not a constant.
fn constant_type(e: &ast::Expr) -> Option<Ty> {
    Some(match &e.kind {
        ast::ExprKind::Int(_) => Ty::Int,
        ast::ExprKind::Float(_) => Ty::Float,
        ast::ExprKind::Bool(_) => Ty::Bool,
        ast::ExprKind::DType(d) => Ty::DType(super::types::Dt::Fixed(*d)),
        ast::ExprKind::List(items) => {
            let mut ty = Ty::EmptyList;
            for item in items {
                ty = match (ty, constant_type(item)?) {
                    (Ty::EmptyList | Ty::IntList, Ty::Int) => Ty::IntList,
                    (Ty::EmptyList | Ty::IntList | Ty::FloatList, Ty::Float | Ty::Int) => {
                        Ty::FloatList
                    }
                    _ => return None,
                };
            }
            ty
        }
        _ => return None,
    })
}

fn check_default(
    p: &ast::Param,
    d: &ast::Expr,
    ty: Option<&ParamType>,
    diags: &mut Vec<Diagnostic>,
) -> Option<tfn_ir::library::Expr> {
    let Some(ty) = ty else { return Some(convert::expr(d)) };
    if ty.is_tensor() {
        diags.push(
            Diagnostic::error(
                "E0109",
                format!("tensor parameter `{}` cannot have a default", p.name.name),
            )
            .at(d.span, "default of a tensor")
            .with_note("defaults are compile-time constants; only attributes have them"),
        );
        return None;
    }
    let Some(dty) = constant_type(d) else {
        diags.push(
            Diagnostic::error("E0108", "a default must be a constant")
                .at(d.span, "not a literal or a list of literals"),
        );
        return None;
    };
    if fit(ty, &dty) == Fit::No {
        diags.push(
            Diagnostic::error(
                "E0107",
                format!(
                    "default of `{}` is `{dty}`, but the parameter is `{}`",
                    p.name.name,
                    param_type(ty)
                ),
            )
            .at(d.span, format!("expected `{}`", param_type(ty))),
        );
        return None;
    }
    Some(convert::expr(d))
}

/// Extern/primitive rules of an `op` item (the signature itself is checked separately).
pub fn check_op_item(item: &ast::OpItem, def: &FunctionDef, diags: &mut Vec<Diagnostic>) {
    let name = &item.sig.name;
    if item.extern_kw.is_none() {
        if !tfn_ir::lower::is_primitive(&def.name, def.overload.as_deref()) {
            diags.push(
                Diagnostic::error(
                    "E0111",
                    format!("`{}` is not a primitive of the compiler", name.full()),
                )
                .at(name.span, "no built-in kernel")
                .with_help("declare it `extern op` (with `shape:` and `dtype:`) or write a `fn`"),
            );
        }
        for clause in &item.clauses {
            let span = match clause {
                ast::Clause::Shape(_, s) | ast::Clause::DType(_, s) => *s,
            };
            diags.push(
                Diagnostic::error("E0113", "only an `extern op` has `shape:` and `dtype:` clauses")
                    .at(span, "not allowed here")
                    .with_help("primitives take their shape and dtype rules from the compiler"),
            );
        }
        return;
    }
    if def.returns.len() != 1 {
        diags.push(
            Diagnostic::error("E0112", "an `extern op` has exactly one result")
                .at(name.span, "several results"),
        );
    }
    let mut shape = None;
    let mut dtype = None;
    for clause in &item.clauses {
        let (slot, span, what) = match clause {
            ast::Clause::Shape(_, s) => (&mut shape, *s, "shape"),
            ast::Clause::DType(_, s) => (&mut dtype, *s, "dtype"),
        };
        if let Some(first) = *slot {
            diags.push(
                Diagnostic::error("E0113", format!("`{what}:` is given twice"))
                    .at(span, "again")
                    .with_secondary(first, "first given here"),
            );
        }
        *slot = Some(span);
        match clause {
            ast::Clause::Shape(ast::ShapeClause::SameAs(x), _) => tensor_param(def, x, diags),
            ast::Clause::Shape(ast::ShapeClause::Broadcast(xs), _) => {
                xs.iter().for_each(|x| tensor_param(def, x, diags))
            }
            ast::Clause::Shape(ast::ShapeClause::Dims(dims), _) => {
                dims.iter().for_each(|d| shape_dim(def, d, diags))
            }
            ast::Clause::DType(x, _) => {
                if x.name.parse::<DType>().is_err() {
                    tensor_param(def, x, diags)
                }
            }
        }
    }
    for (slot, what) in [(shape, "shape"), (dtype, "dtype")] {
        if slot.is_none() {
            diags.push(
                Diagnostic::error(
                    "E0112",
                    format!("`extern op {}` needs a `{what}:` clause", name.full()),
                )
                .at(name.span, format!("no `{what}:`"))
                .with_help(format!("add e.g. `{what}: x` (the {what} of tensor parameter `x`)")),
            );
        }
    }
}

fn tensor_param(def: &FunctionDef, x: &ast::Ident, diags: &mut Vec<Diagnostic>) {
    match def.param(&x.name) {
        Some((_, p)) if matches!(p.ty, ParamType::Tensor(_)) => {}
        Some(_) => diags.push(
            Diagnostic::error("E0114", format!("`{}` is not a tensor parameter", x.name))
                .at(x.span, "not a tensor"),
        ),
        None => {
            let names = def.params.iter().map(|p| p.name.as_str());
            let mut d = Diagnostic::error(
                "E0114",
                format!("`{}` is not a parameter of `{}`", x.name, def.full_name()),
            )
            .at(x.span, "unknown parameter");
            if let Some(s) = suggest::closest(&x.name, names) {
                d = d.with_help(format!("a parameter with a similar name exists: `{s}`"));
            }
            diags.push(d);
        }
    }
}

/// An entry of `shape: [...]`: integer arithmetic over `x.size(i)`, literals and `Int` params.
fn shape_dim(def: &FunctionDef, e: &ast::Expr, diags: &mut Vec<Diagnostic>) {
    if convert::size_call(e, def).is_some() {
        return;
    }
    match &e.kind {
        ast::ExprKind::Int(_) => {}
        ast::ExprKind::Name(n) if def.param(n).is_some_and(|(_, p)| p.ty == ParamType::Int) => {}
        ast::ExprKind::Binary {
            op: ast::BinOp::Add | ast::BinOp::Sub | ast::BinOp::Mul | ast::BinOp::Div,
            lhs,
            rhs,
            ..
        } => {
            shape_dim(def, lhs, diags);
            shape_dim(def, rhs, diags);
        }
        ast::ExprKind::Call(call) if convert::is_dim_arith(call) => {
            call.args.iter().for_each(|a| shape_dim(def, &a.value, diags))
        }
        _ => diags.push(
            Diagnostic::error("E0114", "a shape entry must be an integer expression")
                .at(e.span, "not a size")
                .with_note("shape entries combine `x.size(i)` of tensor parameters, integer literals and `Int` parameters with `+ - * /`"),
        ),
    }
}
