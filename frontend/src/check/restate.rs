//! Restatements of the prelude: a user file that repeats a primitive's declaration or gradient.
//!
//! The spec shows the prelude's own items (`op add(Tensor x, Tensor y) -> Tensor`, `grad tanh(x)
//! { ... }`) as examples, so a user copying them must not fail. A repeat that *says the same
//! thing* is accepted with a warning and changes nothing: the prelude's item stays the one used.
//!
//! - An `op` restates the prelude's primitive of the same name and overload (declared in
//!   `core.tfn` or, for the gradient helpers, `grads.tfn`) when it has the same parameters
//!   (names, kinds, keyword-only split, defaults) and results, and its dtypes are either all
//!   left open (`Tensor`) or the prelude's up to the names of the dtype variables and the order
//!   of their sets. `W0102`.
//! - A `grad` block restates the prelude's when its canonical text (`print::grad_text`) is the
//!   same. `W0408`.
//!
//! Anything else that repeats a primitive is still `E0115` / `E0405`, with a note quoting the
//! prelude's declaration or block. A `grad` block for a prelude primitive that the prelude
//! gives none (its gradient is built into the compiler, or it has none) is `E0409`: a
//! primitive's gradient is the compiler's, and a custom one belongs on a `fn` wrapping it.

use crate::ast::GradItem;
use crate::load::{PRELUDE_GRADS_NAME, PRELUDE_NAME};
use crate::print::{expr, grad_text, signature_text};
use tfn_ir::library::{Body, DTypeRef, FunctionDef, GradDef, ParamType};
use tfn_ir::{Diagnostic, Library, Span};

/// Whether `span` lies in one of the prelude's two sources.
pub fn in_prelude(lib: &Library, span: Span) -> bool {
    lib.sources
        .get(span.file)
        .is_some_and(|f| f.name == PRELUDE_NAME || f.name == PRELUDE_GRADS_NAME)
}

/// The prelude's primitive named as `def` is (name and overload), if there is one.
pub fn prelude_primitive<'a>(lib: &'a Library, def: &FunctionDef) -> Option<&'a FunctionDef> {
    lib.functions
        .get(&def.name)?
        .iter()
        .find(|f| f.overload == def.overload && matches!(f.body, Body::Primitive))
        .filter(|f| in_prelude(lib, f.span))
}

/// The prelude primitive `def` restates, if it does.
pub fn restated_primitive<'a>(lib: &'a Library, def: &FunctionDef) -> Option<&'a FunctionDef> {
    prelude_primitive(lib, def).filter(|prelude| same_signature(prelude, def))
}

/// The warning for a restated primitive.
pub fn primitive_warning(prelude: &FunctionDef, def: &FunctionDef) -> Diagnostic {
    Diagnostic::warning(
        "W0102",
        format!("`{}` restates the prelude's declaration", def.full_name()),
    )
    .at(def.name_span, "already declared by the prelude")
    .with_secondary(prelude.name_span, "the declaration that is used")
    .with_help("remove it: a primitive is declared once, by the prelude")
}

/// The note added to `E0115` when the first definition is the prelude's primitive.
pub fn primitive_note(prelude: &FunctionDef) -> String {
    format!(
        "the prelude declares `op {}`; only a restatement of it (the same parameters, defaults \
         and results) is accepted",
        signature_text(prelude)
    )
}

/// Same parameters and results; dtypes all open in `def`, or the prelude's (up to renaming).
fn same_signature(prelude: &FunctionDef, def: &FunctionDef) -> bool {
    let params_match = prelude.params.len() == def.params.len()
        && prelude.params.iter().zip(&def.params).all(|(p, d)| {
            p.name == d.name
                && p.keyword_only == d.keyword_only
                && p.default.as_ref().map(expr) == d.default.as_ref().map(expr)
                && same_kind(&p.ty, &d.ty)
        });
    let returns_match = prelude.returns.len() == def.returns.len()
        && prelude.returns.iter().zip(&def.returns).all(|(p, d)| same_kind(p, d));
    if !(params_match && returns_match) {
        return false;
    }
    let open = def.type_params.is_empty()
        && def.params.iter().map(|p| &p.ty).chain(&def.returns).all(|t| match t {
            ParamType::Tensor(d) | ParamType::TensorList(d) => *d == DTypeRef::Any,
            _ => true,
        });
    open || signature_text(&normalized(prelude, None))
        == signature_text(&normalized(def, Some(prelude)))
}

/// `f` with its dtype sets sorted and, given `like`, its dtype variables renamed to `like`'s
/// in declaration order (so `<U: {f32, f64}>` reads as `<T: {f32, f64}>`).
fn normalized(f: &FunctionDef, like: Option<&FunctionDef>) -> FunctionDef {
    let mut out = f.clone();
    let renames: Vec<(String, String)> = match like {
        Some(like) if like.type_params.len() == f.type_params.len() => f
            .type_params
            .iter()
            .zip(&like.type_params)
            .map(|(a, b)| (a.name.clone(), b.name.clone()))
            .collect(),
        _ => Vec::new(),
    };
    let rename = |d: &mut DTypeRef| {
        if let DTypeRef::Var(v) = d {
            if let Some((_, to)) = renames.iter().find(|(from, _)| from == v) {
                *v = to.clone();
            }
        }
    };
    for tp in &mut out.type_params {
        if let Some((_, to)) = renames.iter().find(|(from, _)| *from == tp.name) {
            tp.name = to.clone();
        }
        if let Some(allowed) = &mut tp.allowed {
            allowed.sort_by_key(|d| d.name());
            allowed.dedup();
        }
    }
    for t in out.params.iter_mut().map(|p| &mut p.ty).chain(out.returns.iter_mut()) {
        if let ParamType::Tensor(d) | ParamType::TensorList(d) = t {
            rename(d);
        }
    }
    out
}

/// The same kind of parameter, tensors whatever their dtype.
fn same_kind(a: &ParamType, b: &ParamType) -> bool {
    match (a, b) {
        (ParamType::Tensor(_), ParamType::Tensor(_)) => true,
        (ParamType::TensorList(_), ParamType::TensorList(_)) => true,
        _ => a == b,
    }
}

/// The prelude's `grad` block that `g` (already converted) restates word for word, if any.
pub fn restated_grad<'a>(lib: &'a Library, g: &GradDef) -> Option<&'a GradDef> {
    let prelude =
        lib.grads.iter().find(|p| p.function == g.function && p.overload == g.overload)?;
    (in_prelude(lib, prelude.span) && grad_text(prelude) == grad_text(g)).then_some(prelude)
}

/// The warning for a restated `grad` block.
pub fn grad_warning(prelude: &GradDef, g: &GradDef, name_span: Span) -> Diagnostic {
    let name = match &g.overload {
        Some(o) => format!("{}.{o}", g.function),
        None => g.function.clone(),
    };
    Diagnostic::warning("W0408", format!("`grad {name}` restates the prelude's gradient"))
        .at(name_span, "the prelude has this block")
        .with_secondary(prelude.span, "the gradient that is used")
        .with_help("remove it: to change a primitive's gradient, wrap the primitive in a `fn` with its own `grad` block")
}

/// The note added to `E0405` when the first block is the prelude's.
pub fn grad_note(prelude: &GradDef) -> String {
    format!(
        "the prelude's block reads `{}`; only a word-for-word restatement is accepted",
        grad_text(prelude).lines().map(str::trim).collect::<Vec<_>>().join(" ")
    )
}

/// The prelude's `grad` block for the function `g` is for, if there is one.
pub fn prelude_grad<'a>(lib: &'a Library, g: &GradDef) -> Option<&'a GradDef> {
    lib.grads
        .iter()
        .find(|p| p.function == g.function && p.overload == g.overload)
        .filter(|p| in_prelude(lib, p.span))
}

/// `E0409` for a user's `grad` block on a prelude primitive the prelude gives no block (its
/// gradient is built into the compiler, or it has none): such a block would never be used
/// consistently. `None` for every other block (including the prelude's own).
pub fn grad_of_primitive(lib: &Library, g: &GradItem) -> Option<Diagnostic> {
    if in_prelude(lib, g.name.span) {
        return None;
    }
    let overload = g.name.overload.as_ref().map(|o| o.name.clone());
    let function = lib
        .functions
        .get(&g.name.base.name)?
        .iter()
        .find(|f| f.overload == overload && matches!(f.body, Body::Primitive))
        .filter(|f| in_prelude(lib, f.span))?;
    let has_block =
        lib.grads.iter().any(|p| p.function == function.name && p.overload == function.overload);
    (!has_block).then(|| {
        Diagnostic::error(
            "E0409",
            format!("`{}` is a primitive: its gradient is the compiler's", g.name.full()),
        )
        .at(g.name.span, "a primitive's gradient cannot be replaced")
        .with_secondary(function.name_span, "declared by the prelude")
        .with_help(format!(
            "wrap it in a `fn` (`fn my_{0}(...) {{ return {0}(...) }}`) and give that `fn` the `grad` block",
            function.name
        ))
    })
}
