//! Reverse mode through a program: `tfn_ir::program::vjp` (the same code the runtime of AOT
//! objects differentiates loops with), with the session's prepared stages and their gradient
//! halves behind its `GradRunner`.
//!
//! The forward run keeps every value, each stage's residuals and each `for` loop's per-trip
//! states (only the carried values for `for ..., checkpoint` and
//! [`crate::SessionOptions::checkpoint_loops`]); the steps then run backwards. A `while` is not
//! differentiable (its trip count depends on the values); the session refuses to build its vjp.

use super::run::SessionStages;
use super::{CompiledProgram, Prepared, Stage};
use crate::error::Error;
use crate::value::TensorValue;
use tfn_ir::interp::ExternKernels;
use tfn_ir::program::vjp::{Differentiable, GradRunner, Gradient};
use tfn_ir::Tensor;

impl Differentiable for Stage {
    type Half = Prepared;

    fn results(&self) -> usize {
        self.results
    }

    fn gradient(&self) -> Option<Gradient<'_, Prepared>> {
        self.backward.as_deref().map(|b| Gradient {
            forward: &b.forward,
            backward: &b.backward,
            differentiated: &b.differentiated,
        })
    }
}

impl GradRunner<Stage> for SessionStages<'_> {
    fn run_half(
        &mut self,
        half: &Prepared,
        args: &[TensorValue<'_>],
    ) -> Result<Vec<Tensor>, Error> {
        half.run(args, self.externs)
    }
}

/// The program's results (when `with_values`) and the gradient of `<results, cotangents>`
/// for each real input (`None`: no gradient reaches it).
pub(crate) fn vjp(
    program: &CompiledProgram,
    inputs: &[TensorValue<'_>],
    cotangents: &[TensorValue<'_>],
    externs: &dyn ExternKernels,
    with_values: bool,
    checkpoint_all: bool,
) -> Result<(Vec<Tensor>, Vec<Option<Tensor>>), Error> {
    let mut stages = SessionStages { externs, times: None };
    tfn_ir::program::vjp::vjp(program, inputs, cotangents, &mut stages, with_values, checkpoint_all)
}

/// Whether a program can be differentiated: no `while` anywhere. The error names the loop.
pub(crate) fn refuse_while(program: &tfn_ir::program::Program) -> Option<String> {
    tfn_ir::program::vjp::first_while(program)
}
