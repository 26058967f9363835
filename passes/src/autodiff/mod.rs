//! Reverse-mode differentiation over the graph IR: builds the vector-Jacobian product of a
//! lowered function as another ordinary [`Graph`].
//!
//! [`vjp`] takes a forward graph and returns a graph whose parameters are the forward
//! parameters followed by one cotangent per forward output (same dtype and shape), and whose
//! outputs are the gradients of `sum(output_k * cotangent_k)` with respect to each
//! *differentiated* parameter: every float tensor parameter, in parameter order
//! ([`Vjp::differentiated`] lists their indices; integer and bool parameters get none).
//!
//! How it works:
//! - The forward nodes are copied unchanged, so forward values are reused by the backward pass
//!   rather than recomputed; nodes neither pass needs are pruned at the end.
//! - Only float values that depend on a float parameter carry gradients.
//! - Each primitive node's VJP comes from its `grad` block in the prelude (`concat`'s, which
//!   needs a list-valued formula, is built in: [`concat`]): the node is mapped
//!   back to the prelude op it came from (`Op::Reduce { axes, keepdim }` is `sum(x, dims,
//!   keepdim)`), and the block's formulas are lowered into the graph with the op's inputs,
//!   attributes, `result` and `grad` bound to existing values ([`formula`]).
//! - A composed function with its own `grad` block (a custom VJP), whose inlined call lowering
//!   recorded as a [`CallRegion`], gets that block applied at the call's boundary instead of
//!   the gradient derived from its body (the outermost such call wins).
//! - A formula's value is fitted to its input's type: gradients of broadcast inputs are
//!   summed back to the input's shape ([`fit`]); gradients of a value used several times add.
//! - The result is an ordinary graph, so it can be differentiated again (second order).
//!
//! Diagnostic codes: `E0801` an op or function on the path has no gradient, `E0802` a `grad`
//! block lacks the formula for an input that needs one, `E0803` a formula's value does not fit
//! its input's shape, `E0804` the function has no float tensor parameter to differentiate,
//! `E0809` internal error (the gradient graph failed verification, or two gradient contributions
//! cannot be added).
//! Errors in lowering a formula keep lowering's `E05xx` codes and point into the `grad` block.

mod concat;
mod fit;
mod formula;
mod prim_call;
mod prune;
mod regions;
mod residuals;
mod reverse;
mod splice;

use tfn_ir::diagnostic::Diagnostic;
use tfn_ir::lower::CallRegion;
use tfn_ir::{Graph, Library, LowerError, VerifyError};

pub use residuals::{split_vjp, SplitVjp};
pub use reverse::{value_and_vjp, value_and_vjp_graph, vjp, vjp_graph};

/// A gradient graph and which forward parameters it differentiates.
#[derive(Clone, Debug, PartialEq)]
pub struct Vjp {
    /// Parameters: the forward parameters, then one cotangent per forward output.
    /// Outputs: the forward results first if `values` is non-zero ([`value_and_vjp`]), then
    /// one gradient per entry of `differentiated`, in that order.
    pub graph: Graph,
    /// Indices of the forward parameters that have a gradient (the float tensors), ascending.
    pub differentiated: Vec<usize>,
    /// The forward graph's custom-VJP call regions that survive in `graph`, renumbered, so
    /// that differentiating `graph` again ([`vjp_graph`]) still uses them.
    pub regions: Vec<CallRegion>,
    /// How many leading outputs are the forward results (0 for a plain [`vjp`]).
    pub values: usize,
    /// The entries of `differentiated` that no gradient reaches (their outputs are zeros):
    /// [`split_vjp`] leaves them out, so that reverse mode across pieces computes nothing
    /// for them (a loop body's unread whole `w` beside its row `w[i]` is `n` zero tensors
    /// the size of `w` otherwise, one per trip).
    pub unreached: Vec<usize>,
}

/// Why a gradient could not be built.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum AutodiffError {
    /// An op or function on a differentiated path has no gradient.
    #[error("`{op}` is not differentiable: {reason}")]
    NotDifferentiable { op: String, reason: String },
    /// A `grad` block lacks the formula for an input that needs a gradient.
    #[error("the `grad` block of `{function}` has no formula for input `{input}`")]
    MissingFormula { function: String, input: String, span: Option<tfn_ir::span::Span> },
    /// A gradient formula failed to lower for this call's types and attributes.
    #[error("the gradient of `{function}` cannot be built: {error}")]
    Formula { function: String, error: LowerError },
    /// A formula's value cannot be fitted to its input's shape.
    #[error("the gradient of `{function}` for `{input}` has type {got}, but `{input}` is {want}")]
    ShapeMismatch {
        function: String,
        input: String,
        got: String,
        want: String,
        /// The formula (or the call) whose gradient does not fit.
        span: Option<tfn_ir::Span>,
    },
    /// Two gradient contributions of one value cannot be added (a bug in a formula's types).
    #[error(
        "internal error: cannot add gradient contributions of types {first} and {second}: {reason}"
    )]
    Accumulate { first: String, second: String, reason: String },
    /// The function has no float tensor parameter: a vjp would have no gradient to return.
    /// `arguments` names the tensor arguments and their dtypes ("`x` is i32"), or says
    /// there is none.
    #[error("`{function}` has no floating-point `Tensor` argument ({arguments}), so there is nothing to differentiate (a vjp returns one gradient per f16, bf16, f32 or f64 tensor argument)")]
    NothingToDifferentiate { function: String, arguments: String },
    /// A bug: the gradient graph failed verification.
    #[error("internal error: the gradient graph is invalid: {0}")]
    Invalid(VerifyError),
}

impl AutodiffError {
    /// The error as diagnostics (lowering's own when a formula failed to lower).
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        let code = match self {
            AutodiffError::Formula { error, function } => {
                let note = format!("while building the gradient of `{function}`");
                return error
                    .diagnostics
                    .iter()
                    .map(|d| d.clone().with_note(note.clone()))
                    .collect();
            }
            AutodiffError::NotDifferentiable { .. } => "E0801",
            AutodiffError::MissingFormula { .. } => "E0802",
            AutodiffError::ShapeMismatch { .. } => "E0803",
            AutodiffError::NothingToDifferentiate { .. } => "E0804",
            AutodiffError::Accumulate { .. } | AutodiffError::Invalid(_) => "E0809",
        };
        let d = Diagnostic::error(code, self.to_string());
        match self {
            AutodiffError::ShapeMismatch { span: Some(span), .. } => {
                vec![d.at(*span, "this gradient")]
            }
            AutodiffError::MissingFormula { input, span: Some(span), .. } => {
                vec![d.at(*span, format!("no line `{input}: ...` in this block")).with_help(
                    format!(
                        "add `{input}: <the vector-Jacobian product>` (a float tensor input \
                         needs one wherever a call passes it a float)"
                    ),
                )]
            }
            _ => vec![d],
        }
    }
}

/// Convenience: the gradient graph of `name` instantiated for `positional` arguments.
pub fn vjp_of(
    lib: &Library,
    name: &str,
    positional: &[tfn_ir::ArgSpec],
    keywords: &[(String, tfn_ir::ArgSpec)],
) -> Result<Vjp, VjpOfError> {
    let instance = tfn_ir::instantiate(lib, name, positional, keywords)?;
    Ok(vjp(lib, &instance)?)
}

/// Why [`vjp_of`] failed: the forward function did not lower, or has no gradient.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum VjpOfError {
    #[error(transparent)]
    Lower(#[from] LowerError),
    #[error(transparent)]
    Autodiff(#[from] AutodiffError),
}
