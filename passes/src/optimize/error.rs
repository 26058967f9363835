//! Errors of the optimiser. How a run of the e-graph ended is not an error: it is the
//! `stop_reason` of the [`super::Report`].

use tfn_ir::TensorType;
use thiserror::Error;

/// Why [`super::optimize`] could not optimise a graph. Each variant is a bug in whoever
/// built the graph or in the optimiser; the caller can always fall back to the input graph.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum OptimizeError {
    /// The input graph is not well formed (an input after its user, a bad parameter index).
    #[error("malformed graph at node %{node}: {message}")]
    Malformed { node: usize, message: String },
    /// The optimiser's type inference disagrees with the type the graph records.
    #[error("node %{node} (`{op}`) is recorded as {expected}, but the optimiser infers {found}")]
    TypeMismatch { node: usize, op: String, expected: TensorType, found: String },
    /// A rule merged two e-classes of different types (a bug in that rule).
    #[error("{count} rewrite(s) merged values of different types")]
    TypeConflict { count: usize },
    /// Converting an expression back to a graph failed.
    #[error("cannot rebuild a graph: {0}")]
    Rebuild(String),
}
