//! Functions with loops: a [`tfn_ir::program::Program`] compiled step by step and run.
//!
//! Lowering cuts a function with `for`/`while` loops into straight-line stage graphs and loop
//! steps ([`tfn_ir::program`]). Here every stage graph, and every loop body (recursively), is
//! prepared like any function — optimised, fused and compiled by the session's backend, the
//! JIT or the interpreter — **once**, into a [`tfn_ir::program::run::Plan`]; running it is
//! the plan's forward run (`tfn_ir::program::run`, the same code the runtime of AOT objects
//! runs loops with), with the session's stages behind its `StageRunner` ([`run`]). The reverse mode ([`vjp`]) runs the program
//! forward through each stage's and body's gradient cut at its residuals
//! (`tfn_passes::autodiff::split_vjp`), keeping each trip's carried values and residuals (only
//! the carried values for `for ..., checkpoint` and [`crate::SessionOptions::checkpoint_loops`],
//! the residuals then recomputed per trip), then runs the backward halves in reverse.

mod profile;
mod run;
mod vjp;

pub(crate) use profile::{layout, ProgramTimes, StageInfo};
pub(crate) use run::{run, run_profiled};
pub(crate) use vjp::vjp;

pub(crate) use tfn_ir::program::vjp::zeros;
pub(crate) use vjp::refuse_while;

use crate::error::Error;
use crate::session::SessionOptions;
use crate::signature::{CallKey, Fallbacks, Prepared};
use tfn_backend::JitCompiler;
use tfn_ir::program::run::{Plan, PlanStep};
use tfn_ir::program::Program;
use tfn_ir::{Graph, Library};
use tfn_passes::optimize::RuleSet;

/// A program with every stage prepared.
pub(crate) type CompiledProgram = Plan<Stage>;

/// A prepared stage graph.
pub(crate) struct Stage {
    pub forward: Box<Prepared>,
    /// The stage's gradient, cut at its residuals (vjp programs only).
    pub backward: Option<Box<Backward>>,
    /// How many results the stage has (its residuals follow them in `backward.forward`'s).
    pub results: usize,
    /// The stage's number among every stage of the function, bodies included, in program
    /// order: its entry in a [`ProgramTimes`].
    pub slot: usize,
}

/// A stage's gradient in two halves (`tfn_passes::autodiff::split_vjp`): `forward` computes
/// the stage's results and its residuals, `backward` the gradients from the stage's inputs,
/// the cotangents of its results and the residuals.
pub(crate) struct Backward {
    pub forward: Prepared,
    pub backward: Prepared,
    /// The stage parameters differentiated, in the order of `backward`'s outputs (indices
    /// into the real parameters, then `reads`).
    pub differentiated: Vec<usize>,
}

/// What compiling a program needs from the session.
pub(crate) struct Compiler<'a> {
    pub library: &'a Library,
    pub rules: &'a RuleSet,
    pub options: &'a SessionOptions,
    pub jit: Option<&'a JitCompiler>,
    pub key: &'a CallKey,
    /// Also build each step's gradient graph.
    pub gradients: bool,
}

/// Prepares every stage and loop body of `program`.
pub(crate) fn compile(program: &Program, c: &Compiler) -> Result<CompiledProgram, Error> {
    let mut slots = 0;
    Plan::compile(program, &mut |graph: &Graph, regions: &[tfn_ir::lower::CallRegion]| {
        let prepare =
            |g: Graph| Prepared::compile(g, Vec::new(), c.rules, c.options, c.jit, c.key.clone());
        let forward = prepare(graph.clone())?;
        let differentiable = graph.params.iter().any(|p| p.ty.dtype.is_float());
        let backward = if c.gradients && differentiable {
            let v = tfn_passes::autodiff::split_vjp(c.library, graph, regions).map_err(|e| {
                Error::from_diagnostics(
                    crate::error::DiagKind::Call,
                    e.diagnostics(),
                    &c.library.sources,
                )
            })?;
            // No gradient reaches the stage's parameters: nothing to run backwards.
            (!v.differentiated.is_empty())
                .then(|| {
                    Ok::<_, Error>(Box::new(Backward {
                        forward: prepare(v.forward)?,
                        backward: prepare(v.backward)?,
                        differentiated: v.differentiated,
                    }))
                })
                .transpose()?
        } else {
            None
        };
        slots += 1;
        Ok(Stage {
            forward: Box::new(forward),
            backward,
            results: graph.outputs.len(),
            slot: slots - 1,
        })
    })
}

/// What degraded while compiling the steps (empty unless tfn has a bug).
pub(crate) fn fallbacks(program: &CompiledProgram) -> Fallbacks {
    let mut all = Fallbacks::default();
    for stage in program.stages() {
        let mut parts = vec![stage.forward.fallbacks.clone()];
        if let Some(b) = &stage.backward {
            parts.push(b.forward.fallbacks.clone());
            parts.push(b.backward.fallbacks.clone());
        }
        for f in parts {
            if all.optimizer.is_none() {
                all.optimizer = f.optimizer;
            }
            all.kernels.extend(f.kernels);
        }
    }
    all
}

/// The steps of a compiled program, for the modules that walk them.
pub(super) type CompiledStep = PlanStep<Stage>;
