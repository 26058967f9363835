//! Literals used as values of a known dtype: `x * 0.5` with `x: Tensor<i32>` is rejected at
//! load time (`E0216`, at the literal) rather than when the call is lowered.
//!
//! A literal takes a dtype in two places, both decided by the dispatcher's choice:
//! - it fills a `Tensor<T>` parameter by promotion (`0.5 * x` calls `mul(Tensor<T>, Tensor<T>)`):
//!   it becomes a constant of the dtype `T` binds to;
//! - it fills a `Scalar` parameter of a primitive `op` (`x * 0.5` calls
//!   `mul.scalar(Tensor<T> x, Scalar y)`, `full(shape, 0.5, dtype=i32)`): primitives turn their
//!   `Scalar`s into constants of their result's dtype.
//!
//! When that dtype is statically known, the literal must convert to it by the rule lowering
//! uses ([`tfn_ir::lower::scalar_of`]): no fractional part for an integer dtype, within range.
//! A `Scalar` parameter of a composed `fn` may flow anywhere, so it is not checked here.

use crate::print::signature_text;
use tfn_ir::dispatch::Resolved;
use tfn_ir::library::{Body, FunctionDef, ParamType};
use tfn_ir::{Attr, Diagnostic, Span};

/// A literal argument, bound to parameter `param` of the chosen overload.
pub(super) struct BoundLiteral {
    pub param: usize,
    pub value: Attr,
    pub span: Span,
}

/// One `E0216` per literal that does not fit the dtype it becomes.
pub(super) fn misfit_literals(
    f: &FunctionDef,
    resolved: &Resolved,
    literals: &[BoundLiteral],
    display: &str,
) -> Vec<Diagnostic> {
    let result_dtype = match (f.returns.as_slice(), &f.body) {
        ([ParamType::Tensor(d)], Body::Primitive) => resolved.dtype_of(d),
        _ => None,
    };
    let mut diags = Vec::new();
    for lit in literals {
        let Some(param) = f.params.get(lit.param) else { continue };
        let dtype = match &param.ty {
            ParamType::Tensor(d) if resolved.promoted.contains(&lit.param) => resolved.dtype_of(d),
            ParamType::Scalar => result_dtype,
            _ => None,
        };
        let Some(dtype) = dtype else { continue };
        if let Err(why) = tfn_ir::lower::scalar_of(&lit.value, dtype) {
            diags.push(
                Diagnostic::error(
                    "E0216",
                    format!("literal does not fit dtype {dtype} in call to {display}"),
                )
                .at(lit.span, why)
                .with_note(format!(
                    "`{}`: `{}` is {dtype} here",
                    signature_text(f),
                    param.name
                )),
            );
        }
    }
    diags
}
