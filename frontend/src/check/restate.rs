//! Restatements of the prelude: a user file that repeats a primitive's declaration or gradient.
//!
//! The spec shows the prelude's own items (`op add(Tensor x, Tensor y) -> Tensor`, `grad tanh(x)
//! { ... }`) as examples, so a user copying them must not fail. A repeat that *says the same
//! thing* is accepted with a warning and changes nothing: the prelude's item stays the one used.
//!
//! - An `op` restates the prelude's primitive of the same name and overload when it has the same
//!   parameters (names, kinds, keyword-only split, defaults) and results, and its dtypes are
//!   either all left open (`Tensor`) or exactly the prelude's. `W0102`.
//! - A `grad` block restates the prelude's when its canonical text (`print::grad_text`) is the
//!   same. `W0408`.
//!
//! Anything else that repeats a name is still `E0115` / `E0405`, with a note showing the
//! prelude's text when it differs only in wording.

use crate::load::{PRELUDE_GRADS_NAME, PRELUDE_NAME};
use crate::print::{expr, grad_text, signature_text};
use tfn_ir::library::{Body, DTypeRef, FunctionDef, GradDef, ParamType};
use tfn_ir::{Diagnostic, Library, Span};

/// Whether `span` lies in a source the library loaded as `name`.
fn from_source(lib: &Library, span: Span, name: &str) -> bool {
    lib.sources.get(span.file).is_some_and(|f| f.name == name)
}

/// The prelude primitive `def` restates, if it does.
pub fn restated_primitive<'a>(lib: &'a Library, def: &FunctionDef) -> Option<&'a FunctionDef> {
    let prelude = lib
        .functions
        .get(&def.name)?
        .iter()
        .find(|f| f.overload == def.overload && matches!(f.body, Body::Primitive))?;
    (from_source(lib, prelude.span, PRELUDE_NAME) && same_signature(prelude, def))
        .then_some(prelude)
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

/// Same parameters and results; dtypes all open in `def`, or exactly the prelude's.
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
    let exact = signature_text(prelude) == signature_text(def);
    open || exact
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
    (from_source(lib, prelude.span, PRELUDE_GRADS_NAME) && grad_text(prelude) == grad_text(g))
        .then_some(prelude)
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
