//! Per-kernel timing for profiles (`tfnc bench --profile`, `tfn::Session::profile`).
//!
//! A profiled call is an ordinary call ([`CompiledFunction::run_into_profiled`]) that also
//! adds the wall time of each step (kernel) to a [`KernelTimes`]. The executor reads the
//! clock only when it is given one: an unprofiled call pays one untaken branch per step and
//! no clock reads. The time of a step is what the caller waits for: with several threads, a
//! split kernel counts once, from its start to its last thread's end. Everything between the
//! steps (binding sizes, taking buffers from the pool, releasing dead ones, copying results
//! into strided outputs) is not any kernel's time; a caller that times the whole call gets it
//! as the difference.

use super::steps::Step;
use super::CompiledFunction;
use crate::error::RunError;
use crate::tensors::{TensorView, TensorViewMut};
use std::time::{Duration, Instant};
use tfn_ir::interp::ExternKernels;
use tfn_ir::Tensor;

/// Accumulated wall time per kernel (in the order of [`CompiledFunction::fused`]'s
/// kernels) over the profiled calls.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelTimes {
    /// Total time of each kernel over all recorded calls.
    pub per_kernel: Vec<Duration>,
    /// Number of calls recorded (that ran every step).
    pub calls: u64,
}

impl KernelTimes {
    /// Zero times for `kernels` kernels.
    pub fn new(kernels: usize) -> KernelTimes {
        KernelTimes { per_kernel: vec![Duration::ZERO; kernels], calls: 0 }
    }

    /// The summed time of every kernel.
    pub fn total(&self) -> Duration {
        self.per_kernel.iter().sum()
    }

    /// Adds the time since `started` to kernel `index`.
    #[inline]
    pub(super) fn record(&mut self, index: usize, started: Instant) {
        let elapsed = started.elapsed();
        if let Some(t) = self.per_kernel.get_mut(index) {
            *t += elapsed;
        }
    }
}

impl CompiledFunction {
    /// [`Self::run_into_with_externs`], adding each kernel's time to `times` (which must have
    /// one entry per kernel; it is resized otherwise).
    pub fn run_into_profiled(
        &self,
        inputs: &[TensorView<'_>],
        outputs: &mut [TensorViewMut<'_>],
        externs: &dyn ExternKernels,
        times: &mut KernelTimes,
    ) -> Result<(), RunError> {
        times.per_kernel.resize(self.fused.kernels.len(), Duration::ZERO);
        self.execute_profiled(inputs, Some(outputs), externs, Some(times))?;
        times.calls += 1;
        Ok(())
    }

    /// [`Self::run_with_externs`] (owned outputs), adding each kernel's time to `times`.
    pub fn run_profiled(
        &self,
        inputs: &[TensorView<'_>],
        externs: &dyn ExternKernels,
        times: &mut KernelTimes,
    ) -> Result<Vec<Tensor>, RunError> {
        times.per_kernel.resize(self.fused.kernels.len(), Duration::ZERO);
        let results = self.execute_profiled(inputs, None, externs, Some(times))?;
        times.calls += 1;
        Ok(results)
    }

    /// How each kernel runs, one word per kernel: `loop` (elementwise), `rows` (reductions
    /// along the innermost axis: passes over each row), `columns` (reductions over outer
    /// axes: blocks of columns), `matmul`, `window`, `scan`, `argmax`/`argmin` (`arg`),
    /// `scatter`, `copy`, `view` (zero-copy reshape) or `interp` (a reference kernel or a
    /// fallback run by the interpreter).
    pub fn kernel_strategies(&self) -> Vec<&'static str> {
        self.steps
            .iter()
            .map(|step| match step {
                Step::Loop { plan, .. } if plan.reduces && plan.inner_reduced() => "rows",
                Step::Loop { plan, .. } if plan.reduces => "columns",
                Step::Loop { .. } => "loop",
                Step::MatMul { .. } => "matmul",
                Step::View { .. } => "view",
                Step::Copy { .. } => "copy",
                Step::Scan(_) => "scan",
                Step::Arg(_) => "arg",
                Step::Scatter { .. } => "scatter",
                Step::Window { .. } => "window",
                Step::Interp { .. } => "interp",
            })
            .collect()
    }
}
