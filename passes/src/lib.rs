//! # tfn-passes
//!
//! Transformations over the graph IR ([`tfn_ir::Graph`]), run between lowering and code
//! generation:
//!
//! - [`optimize`]: algebraic simplification with an e-graph (egg): identities, exp/log and
//!   strength reduction, layout cancellation, constant folding, user `rewrite` rules checked
//!   for soundness, and cost-based extraction that prices what fusion will pay;
//! - [`fusion`]: grouping of the optimised graph into kernels;
//! - [`pipeline`]: the one place that orders these passes and verifies between them.
//!
//! Architecture invariant: passes take a `Graph` and return a new `Graph` with the same
//! parameters, outputs, dtypes and shapes; they never change what a function computes beyond
//! the documented floating-point caveats of individual rules.

#![forbid(unsafe_code)]
pub mod autodiff;
pub mod fusion;
#[cfg(feature = "egg")]
pub mod optimize;
#[cfg(feature = "egg")]
pub mod pipeline;
