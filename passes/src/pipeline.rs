//! The pass order, owned in one place: verify → optimise (egg) → verify → fuse → verify the
//! schedule. The session and `tfnc ir` go through [`plan`]; gradient graphs enter it after
//! autodiff, which verifies what it builds (`autodiff::vjp`, in every build).
//!
//! Verification runs in debug and test builds (`cfg(debug_assertions)`): a pass that breaks
//! an invariant fails there, at the pass that broke it, instead of producing a wrong answer or a
//! slow fallback later.
//!
//! Failures are loud: if the optimiser fails (always a bug in tfn), the unoptimised graph is
//! still correct, so it is used — but [`Planned::optimizer_fallback`] says so, and with
//! [`PipelineOptions::strict`] it is an error instead.

use crate::fusion::{fuse, verify_fused, FusedGraph};
use crate::optimize::{self, Limits, OptimizeError, Report, RuleSet};
use tfn_ir::{verify, Graph};

/// How [`plan`] runs.
#[derive(Clone, Debug)]
pub struct PipelineOptions {
    /// Run the egg optimiser (default: true).
    pub optimize: bool,
    /// Make an optimiser failure an error instead of a counted fallback.
    pub strict: bool,
    pub limits: Limits,
}

impl Default for PipelineOptions {
    fn default() -> Self {
        PipelineOptions { optimize: true, strict: false, limits: Limits::default() }
    }
}

/// A graph ready for code generation.
#[derive(Clone, Debug)]
pub struct Planned {
    /// The graph that runs (optimised unless the optimiser was off or failed).
    pub graph: Graph,
    /// Its kernels.
    pub fused: FusedGraph,
    /// The optimiser's report, if it ran and succeeded.
    pub report: Option<Report>,
    /// Why the optimiser failed, if it did (the unoptimised graph runs instead).
    pub optimizer_fallback: Option<String>,
}

/// Why the pipeline stopped. Every variant is a bug in tfn, never in the user's program.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// A pass produced a graph that fails verification.
    #[error("the graph after {stage} fails verification: {message}")]
    Verify { stage: &'static str, message: String },
    /// The optimiser failed and the pipeline is strict.
    #[error("the optimiser failed (strict mode): {0}")]
    Optimizer(OptimizeError),
}

/// Whether `TFN_INJECT_FAULT` names `what` (`optimizer`, `codegen`; comma-separated). Debug
/// builds only: it lets the tests drive the fallback paths of a correct compiler, which
/// otherwise never run. Release builds ignore it.
pub fn fault_injected(what: &str) -> bool {
    cfg!(debug_assertions)
        && std::env::var("TFN_INJECT_FAULT").is_ok_and(|v| v.split(',').any(|f| f.trim() == what))
}

/// Verifies `graph` after `stage` (debug and test builds only).
pub fn check(stage: &'static str, graph: &Graph) -> Result<(), PipelineError> {
    if cfg!(debug_assertions) {
        verify(graph).map_err(|e| PipelineError::Verify { stage, message: e.to_string() })?;
    }
    Ok(())
}

/// Optimises and fuses `graph`, verifying after every pass.
pub fn plan(
    graph: Graph,
    rules: &RuleSet,
    options: &PipelineOptions,
) -> Result<Planned, PipelineError> {
    check("lowering", &graph)?;
    let (graph, report, optimizer_fallback) = if options.optimize {
        let result = if fault_injected("optimizer") {
            Err(OptimizeError::Rebuild("fault injected by TFN_INJECT_FAULT".into()))
        } else {
            optimize::optimize(&graph, rules, &options.limits)
        };
        match result {
            Ok(out) => {
                check("optimisation", &out.graph)?;
                (out.graph, Some(out.report), None)
            }
            Err(e) if options.strict => return Err(PipelineError::Optimizer(e)),
            Err(e) => (graph, None, Some(e.to_string())),
        }
    } else {
        (graph, None, None)
    };
    let fused = fuse(&graph);
    if cfg!(debug_assertions) {
        verify_fused(&graph, &fused)
            .map_err(|message| PipelineError::Verify { stage: "fusion", message })?;
    }
    Ok(Planned { graph, fused, report, optimizer_fallback })
}
