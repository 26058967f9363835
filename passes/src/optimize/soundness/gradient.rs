//! The gradient half of a rule's soundness check: both sides of a rule must have the same
//! vector-Jacobian product, not only the same value.
//!
//! With a [`Library`] holding the prelude's `grad` blocks, [`compare_gradients`] builds the
//! VJP graph of each side ([`vjp_graph`]), runs both through the interpreter on the same
//! inputs and the same random cotangent per output, and compares each gradient with the
//! value check's NaN-aware tolerance ([`super::compare`]). Its inputs and cotangents are drawn
//! without the value check's edge values (0, ±1, 2, 0.5): at such points value-equal sides may
//! legitimately differ in gradient (ties of `maximum`/`minimum`, `abs` or `sqrt` at 0, `pow(x, 0)`
//! at 0), and random floats avoid these measure-zero sets.
//!
//! A side that is not differentiable skips the check for that probe: no float parameter
//! (integer and bool dtypes), an op autodiff rejects, a gradient graph the interpreter cannot
//! run on these inputs, or sides that differentiate different parameters.

use super::{compare, random_tensor_with, SplitMix};
use crate::autodiff::vjp_graph;
use tfn_ir::{Graph, Library, Tensor};

/// Where the gradients of two value-equal sides differ.
#[derive(Clone, Debug, PartialEq)]
pub struct GradientMismatch {
    /// The random cotangent of each output.
    pub cotangents: Vec<Tensor>,
    /// The forward parameter whose gradient differs.
    pub param: usize,
    pub expected: Tensor,
    /// `None` when the right-hand side's gradient graph failed to run.
    pub got: Option<Tensor>,
    pub reason: String,
}

/// Compares the gradients of `before` and `after` (graphs with the same parameters and
/// output types) at `inputs`, with a cotangent drawn from `rng` for each output.
///
/// Returns `Ok(true)` when gradients were compared and agree, `Ok(false)` when the check was
/// skipped (see the module docs), and the mismatch otherwise.
pub fn compare_gradients(
    lib: &Library,
    before: &Graph,
    after: &Graph,
    inputs: &[Tensor],
    rng: &mut SplitMix,
) -> Result<bool, Box<GradientMismatch>> {
    let (Ok(lhs), Ok(rhs)) = (vjp_graph(lib, before, &[]), vjp_graph(lib, after, &[])) else {
        return Ok(false);
    };
    if lhs.differentiated.is_empty() || lhs.differentiated != rhs.differentiated {
        return Ok(false);
    }
    let cotangents: Vec<Tensor> =
        before.outputs.iter().map(|&o| random_tensor_with(before.ty(o), rng, false)).collect();
    let mut args = inputs.to_vec();
    args.extend(cotangents.iter().cloned());
    let Ok(expected) = tfn_ir::interp::run(&lhs.graph, &args) else { return Ok(false) };
    let got = tfn_ir::interp::run(&rhs.graph, &args);
    let mismatch = |param: usize, expected: &Tensor, got: Option<Tensor>, reason: String| {
        Box::new(GradientMismatch {
            cotangents: cotangents.clone(),
            param,
            expected: expected.clone(),
            got,
            reason,
        })
    };
    let got = match got {
        Ok(got) => got,
        Err(e) => {
            let (&param, first) = match (lhs.differentiated.first(), expected.first()) {
                (Some(p), Some(t)) => (p, t),
                _ => return Ok(false),
            };
            let reason = format!("the right-hand side's gradient fails: {e}");
            return Err(mismatch(param, first, None, reason));
        }
    };
    for ((&param, e), g) in lhs.differentiated.iter().zip(&expected).zip(&got) {
        if let Err(reason) = compare(e, g) {
            let reason = match reason.strip_prefix("results ") {
                Some(rest) => format!("gradients {rest}"),
                None => format!("gradients differ: {reason}"),
            };
            return Err(mismatch(param, e, Some(g.clone()), reason));
        }
    }
    Ok(true)
}
