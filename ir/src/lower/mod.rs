//! Lowering: instantiates a library function for one call signature into an SSA [`Graph`].
//!
//! [`instantiate`] resolves the overload with [`crate::dispatch`], binds attributes (so static
//! `if`s resolve and attribute expressions evaluate), inlines composed functions recursively
//! down to primitives, turns literals next to tensors into constants of the tensor's dtype, and
//! infers a dtype and a *symbolic* shape for every value. Sizes are never specialised: each
//! [`DimSpec::Dyn`] axis of an argument becomes a symbol bound at call time, sizes that
//! broadcasting proves equal are unified (the call checks them), and computed sizes are derived
//! symbols. The result is checked by [`crate::verify::verify`] before it is returned.
//!
//! Diagnostic codes of this stage:
//!
//! | code  | meaning                                                        |
//! |-------|----------------------------------------------------------------|
//! | E0501 | unknown function or name                                       |
//! | E0502 | no overload matches a call (one `note:` per candidate)         |
//! | E0503 | shapes cannot broadcast or do not fit the op                   |
//! | E0504 | a literal does not fit the dtype it is used as                 |
//! | E0505 | an axis/dim argument is out of range or repeated               |
//! | E0506 | recursion, or inlining deeper or larger than the limits        |
//! | E0507 | a static `if` condition or attribute expression is not static  |
//! | E0508 | a function's body does not produce what its signature declares |
//! | E0509 | internal error: the lowered graph failed verification (a bug)  |
//! | E0510 | the call's sizes do not fit an op (found with the call's shapes) |

// Lowering stops at the first error, so the size of the error path does not matter; boxing
// every `Diagnostic` would only add noise.
#![allow(clippy::result_large_err)]

mod body;
mod call;
mod extern_op;
mod grad_prims;
mod infer;
mod instantiate;
mod loops;
pub mod moves;
mod primitives;
mod provenance;
mod random;
mod region;
mod scan_prims;
mod shape_ops;
mod sizes;
mod static_eval;
mod storage;
mod syms;
mod window;

#[cfg(test)]
mod dispatch_tests;
#[cfg(test)]
mod size_check_tests;
#[cfg(test)]
mod test_lib;
#[cfg(test)]
mod tests;

pub use call::{no_overload, scalar_of};
pub use grad_prims::is_grad_helper;
pub use infer::{
    broadcast_shapes, check_declared, infer, is_permutation, matmul_shape, reduce_shape,
};
pub use instantiate::{instantiate, instantiate_for_sizes};
pub use primitives::{lookup as lookup_primitive, Prim};
pub use region::{CallRegion, RegionArg};
pub use static_eval::{eval as eval_static, float_math as static_float_math, is_static_op};
pub use syms::{collect_dims, slice_len};

/// Whether the compiler has a kernel for the op `name` / `name.overload` (the primitives,
/// and the gradient helpers that lower to them).
pub fn is_primitive(name: &str, overload: Option<&str>) -> bool {
    primitives::is_primitive(name, overload) || grad_prims::is_grad_helper(name, overload)
}

/// Constant-folds a size expression the way lowering does (used by the verifier).
pub fn fold_dims(e: &crate::shape::DimExpr) -> crate::shape::DimExpr {
    syms::fold(e, &|d| d)
}

use crate::attr::Attr;
use crate::diagnostic::Diagnostic;
use crate::dtype::DType;
use crate::graph::Graph;

/// One argument of a top-level call, as the session knows it before compiling.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgSpec {
    Tensor { dtype: DType, dims: Vec<DimSpec> },
    TensorList(Vec<(DType, Vec<DimSpec>)>),
    Attr(Attr),
}

/// What the signature says about one axis of a tensor argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DimSpec {
    /// The axis has size 1 (it broadcasts).
    One,
    /// Any runtime size: a symbol of the graph.
    Dyn,
}

/// A lowered function.
#[derive(Clone, Debug, PartialEq)]
pub struct Instance {
    pub graph: Graph,
    /// The chosen overload's full name, e.g. `add.scalar`.
    pub function: String,
    /// Where each graph parameter's tensor comes from in the call, one per `graph.params`.
    pub params: Vec<ParamSource>,
    /// Inlined calls of functions with their own `grad` block (the top-level call included),
    /// innermost first; see [`CallRegion`].
    pub regions: Vec<CallRegion>,
    /// What the graph assumes about derived sizes being 1: a call may run it only if they
    /// hold for its input shapes.
    pub guards: crate::guards::SizeGuards,
    /// The function's loops ([`crate::program`]). When there are any, `graph` has one more
    /// parameter per loop result after the `params.len()` real ones, and runs only as the
    /// [`crate::program::Program`] that [`Instance::program`] cuts it into.
    pub loops: Vec<crate::program::LoopSpec>,
}

impl Instance {
    /// Whether the function has loops (and so runs as a [`crate::program::Program`]).
    pub fn has_loops(&self) -> bool {
        !self.loops.is_empty()
    }

    /// The function cut at its loops into steps.
    pub fn program(&self) -> Result<crate::program::Program, crate::program::SplitError> {
        crate::program::split(&crate::program::LoopBody {
            graph: self.graph.clone(),
            inputs: self.params.len(),
            regions: self.regions.clone(),
            loops: self.loops.clone(),
        })
    }
}

/// Which argument of the top-level call feeds a graph parameter.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ParamSource {
    Positional(usize),
    Keyword(String),
    /// Item `index` of a `Tensor[]` argument.
    ListItem {
        arg: Box<ParamSource>,
        index: usize,
    },
}

/// Why a function could not be instantiated for a signature.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{}", render_messages(.diagnostics))]
pub struct LowerError {
    pub diagnostics: Vec<Diagnostic>,
}

fn render_messages(diagnostics: &[Diagnostic]) -> String {
    let lines: Vec<String> = diagnostics
        .iter()
        .map(|d| {
            let mut line = d.message.clone();
            for note in &d.notes {
                line.push_str("\n  note: ");
                line.push_str(note);
            }
            line
        })
        .collect();
    lines.join("\n")
}

impl From<Diagnostic> for LowerError {
    fn from(d: Diagnostic) -> LowerError {
        LowerError { diagnostics: vec![d] }
    }
}
