//! Running a compiled program forward: the plan's own runner (`tfn_ir::program::run`: the
//! value table, loop bounds bound from the call's sizes, stacked inputs' rows, `while` and
//! `at most`), with the session's prepared stages behind its [`StageRunner`].
//!
//! A profiled run ([`run_profiled`]) times each stage's kernels and counts each loop's trips
//! in a [`ProgramTimes`]; an unprofiled run reads no clock.

use super::{CompiledProgram, ProgramTimes, Stage};
use crate::error::Error;
use crate::value::{OutputMut, TensorValue};
use tfn_ir::interp::ExternKernels;
use tfn_ir::program::run::{RunFailure, StageRunner};
use tfn_ir::Tensor;

impl RunFailure for Error {
    fn shape(message: String) -> Self {
        Error::Shape(message)
    }
    fn runtime(message: String) -> Self {
        Error::Runtime(message)
    }
    fn internal(message: String) -> Self {
        Error::Internal(message)
    }
    fn bind(e: tfn_ir::BindError) -> Self {
        crate::signature::bind_error(e)
    }
    fn in_trip(self, at: &str) -> Self {
        match self {
            Error::Shape(m) => Error::Shape(m + at),
            Error::Runtime(m) => Error::Runtime(m + at),
            other => other,
        }
    }
    fn config(message: String) -> Self {
        Error::Config(message)
    }
    fn input_dtype(param: String, expected: tfn_ir::DType, got: tfn_ir::DType) -> Self {
        Error::DType(format!("`{param}` must have dtype {expected}, got {got}"))
    }
    fn interrupted() -> Self {
        Error::Interrupted
    }
}

/// The session's stages: run by their prepared executors (JIT or interpreter), timed into
/// `times` when profiling.
pub(super) struct SessionStages<'r> {
    pub externs: &'r dyn ExternKernels,
    pub times: Option<&'r mut ProgramTimes>,
}

impl StageRunner<Stage> for SessionStages<'_> {
    type Error = Error;

    fn run(&mut self, stage: &Stage, args: &[TensorValue<'_>]) -> Result<Vec<Tensor>, Error> {
        match self.times.as_deref_mut() {
            None => stage.forward.run(args, self.externs),
            Some(t) => t.run_stage(&stage.forward, stage.slot, args, self.externs),
        }
    }

    fn run_into(
        &mut self,
        stage: &Stage,
        args: &[TensorValue<'_>],
        outs: &mut [Tensor],
    ) -> Result<bool, Error> {
        let mut outs: Vec<OutputMut> = outs.iter_mut().map(OutputMut::from).collect();
        let ran = match self.times.as_deref_mut() {
            None => stage.forward.run_into(args, &mut outs, self.externs),
            Some(t) => t.run_stage_into(&stage.forward, stage.slot, args, &mut outs, self.externs),
        };
        match ran {
            Ok(()) => Ok(true),
            // A result does not fit its buffer: a carried value changed shape.
            Err(Error::Output { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn interrupted(&mut self) -> bool {
        crate::interrupt::requested()
    }

    fn trips(&mut self, number: usize, trips: u64) {
        if let Some(t) = self.times.as_deref_mut() {
            t.add_trips(number, trips);
        }
    }
}

/// Runs the program; returns its results.
pub(crate) fn run(
    program: &CompiledProgram,
    inputs: &[TensorValue<'_>],
    externs: &dyn ExternKernels,
) -> Result<Vec<Tensor>, Error> {
    program.run(inputs, &mut SessionStages { externs, times: None })
}

/// [`run`], adding each stage's kernel times and each loop's trips to `times` (made by
/// [`ProgramTimes::new`] for this program).
pub(crate) fn run_profiled(
    program: &CompiledProgram,
    inputs: &[TensorValue<'_>],
    externs: &dyn ExternKernels,
    times: &mut ProgramTimes,
) -> Result<Vec<Tensor>, Error> {
    program.run(inputs, &mut SessionStages { externs, times: Some(times) })
}
