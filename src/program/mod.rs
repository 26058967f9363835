//! Functions with loops: a [`tfn_ir::program::Program`] compiled step by step and run.
//!
//! Lowering cuts a function with `for`/`while` loops into straight-line stage graphs and loop
//! steps ([`tfn_ir::program`]). Here every stage graph, and every loop body (recursively), is
//! prepared like any function — optimised, fused and compiled by the session's backend, the
//! JIT or the interpreter — **once**; running the program runs the stages in order and each
//! loop's compiled body once per trip ([`run`]). The reverse mode ([`vjp`]) runs the program
//! forward through each stage's and body's gradient cut at its residuals
//! (`tfn_passes::autodiff::split_vjp`), keeping each trip's carried values and residuals (only
//! the carried values for `for ..., checkpoint` and [`crate::SessionOptions::checkpoint_loops`],
//! the residuals then recomputed per trip), then runs the backward halves in reverse.

mod profile;
mod run;
mod tensors;
mod vjp;

pub(crate) use profile::{ProgramTimes, StageInfo};

pub(crate) use tensors::zeros;
pub(crate) use vjp::refuse_while;

use crate::error::Error;
use crate::session::SessionOptions;
use crate::signature::{CallKey, Fallbacks, Prepared};
use tfn_backend::JitCompiler;
use tfn_ir::program::{LoopSpec, Program, Step};
use tfn_ir::{Graph, Library, ValueId};
use tfn_passes::optimize::RuleSet;

/// A program with every step prepared.
pub(crate) struct CompiledProgram {
    /// The real parameters and symbol table: binding them gives every size.
    signature: Graph,
    /// The value of each real parameter (its node), in order.
    param_values: Vec<ValueId>,
    steps: Vec<CompiledStep>,
    outputs: Vec<ValueId>,
    values: usize,
}

enum CompiledStep {
    Graph {
        forward: Box<Prepared>,
        /// The stage's gradient, cut at its residuals (vjp programs only).
        backward: Option<Box<Backward>>,
        reads: Vec<ValueId>,
        writes: Vec<ValueId>,
        /// The stage's number among every stage of the function, bodies included, in
        /// program order: its entry in a [`ProgramTimes`].
        slot: usize,
    },
    Loop {
        spec: LoopSpec,
        body: Box<CompiledProgram>,
        /// The loop's number among every loop of the function (its entry in a
        /// [`ProgramTimes`]).
        slot: usize,
    },
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

/// The next free stage and loop numbers while compiling.
#[derive(Default)]
struct Slots {
    stages: usize,
    loops: usize,
}

impl Slots {
    fn next_stage(&mut self) -> usize {
        self.stages += 1;
        self.stages - 1
    }

    fn next_loop(&mut self) -> usize {
        self.loops += 1;
        self.loops - 1
    }
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

impl CompiledProgram {
    /// Prepares every stage and loop body of `program`.
    pub(crate) fn compile(program: &Program, c: &Compiler) -> Result<CompiledProgram, Error> {
        Self::compile_numbered(program, c, &mut Slots::default())
    }

    /// [`Self::compile`], numbering the stages and loops from `slots` on.
    fn compile_numbered(
        program: &Program,
        c: &Compiler,
        slots: &mut Slots,
    ) -> Result<CompiledProgram, Error> {
        let mut steps = Vec::new();
        for step in &program.steps {
            steps.push(match step {
                Step::Graph { graph, regions, reads, writes } => {
                    let forward = Prepared::compile(
                        graph.clone(),
                        Vec::new(),
                        c.rules,
                        c.options,
                        c.jit,
                        c.key.clone(),
                    )?;
                    let differentiable = graph.params.iter().any(|p| p.ty.dtype.is_float());
                    let backward = if c.gradients && differentiable {
                        let v = tfn_passes::autodiff::split_vjp(c.library, graph, regions)
                            .map_err(|e| {
                                Error::from_diagnostics(
                                    crate::error::DiagKind::Call,
                                    e.diagnostics(),
                                    &c.library.sources,
                                )
                            })?;
                        let prepare = |g: Graph| {
                            Prepared::compile(
                                g,
                                Vec::new(),
                                c.rules,
                                c.options,
                                c.jit,
                                c.key.clone(),
                            )
                        };
                        Some(Box::new(Backward {
                            forward: prepare(v.forward)?,
                            backward: prepare(v.backward)?,
                            differentiated: v.differentiated,
                        }))
                    } else {
                        None
                    };
                    CompiledStep::Graph {
                        forward: Box::new(forward),
                        backward,
                        reads: reads.clone(),
                        writes: writes.clone(),
                        slot: slots.next_stage(),
                    }
                }
                Step::Loop { spec, body } => {
                    let slot = slots.next_loop();
                    CompiledStep::Loop {
                        spec: spec.clone(),
                        body: Box::new(CompiledProgram::compile_numbered(body, c, slots)?),
                        slot,
                    }
                }
            });
        }
        Ok(CompiledProgram {
            signature: program.signature.clone(),
            param_values: program.param_values.clone(),
            steps,
            outputs: program.outputs.clone(),
            values: program.values,
        })
    }

    /// What degraded while compiling the steps (empty unless tfn has a bug).
    pub(crate) fn fallbacks(&self) -> Fallbacks {
        let mut all = Fallbacks::default();
        for step in &self.steps {
            let parts: Vec<Fallbacks> = match step {
                CompiledStep::Graph { forward, backward, .. } => {
                    let mut v = vec![forward.fallbacks.clone()];
                    if let Some(b) = backward {
                        v.push(b.forward.fallbacks.clone());
                        v.push(b.backward.fallbacks.clone());
                    }
                    v
                }
                CompiledStep::Loop { body, .. } => vec![body.fallbacks()],
            };
            for f in parts {
                if all.optimizer.is_none() {
                    all.optimizer = f.optimizer;
                }
                all.kernels.extend(f.kernels);
            }
        }
        all
    }

    /// The one stage of a body without loops that computes exactly its results (and its
    /// slot).
    pub(super) fn single_stage(&self) -> Option<(&Prepared, usize)> {
        match self.steps.as_slice() {
            [CompiledStep::Graph { forward, reads, writes, slot, .. }]
                if reads.is_empty() && *writes == self.outputs =>
            {
                Some((forward, *slot))
            }
            _ => None,
        }
    }

    /// The gradient of a body that is one stage computing exactly its results.
    pub(super) fn single_backward(&self) -> Option<&Backward> {
        match self.steps.as_slice() {
            [CompiledStep::Graph { backward: Some(b), reads, writes, .. }]
                if reads.is_empty() && *writes == self.outputs =>
            {
                Some(b)
            }
            _ => None,
        }
    }

    /// Number of real parameters.
    pub(crate) fn inputs(&self) -> usize {
        self.param_values.len()
    }
}
