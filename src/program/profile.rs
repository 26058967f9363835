//! Per-kernel times of a program's run, for profiles of functions with loops
//! (`crate::profile`).
//!
//! A [`ProgramTimes`] is the optional sink the runner (`run.rs`) fills: each stage's kernel
//! times (a stage in a loop body adds every trip's), the input shapes it ran with (for the
//! byte and flop accounting) and each loop's trip count. Stages and loops are numbered in
//! program order over the whole function, bodies included (their *slots*, given when the
//! program is compiled). An unprofiled run passes no sink: it reads no clock.

use super::{CompiledProgram, CompiledStep, Stage};
use crate::error::Error;
use crate::signature::Prepared;
use crate::value::{OutputMut, TensorValue};
use std::time::Duration;
use tfn_backend::KernelTimes;
use tfn_ir::interp::ExternKernels;
use tfn_ir::Tensor;

/// What a profiled run of a program records.
pub(crate) struct ProgramTimes {
    /// Each stage's kernel times (by slot), summed over the runs recorded.
    pub stages: Vec<KernelTimes>,
    /// Each stage's input shapes, from its first run (`None`: it never ran).
    pub shapes: Vec<Option<Vec<Vec<usize>>>>,
    /// Each loop's trips (by slot), summed over the runs recorded.
    pub trips: Vec<u64>,
}

/// A stage of a program, where it is.
pub(crate) struct StageInfo<'a> {
    pub prepared: &'a Prepared,
    /// The loops around it (slots), outermost first.
    pub loops: Vec<usize>,
    /// Its number among the stages of the program it is a step of (the function's or a
    /// loop body's).
    pub number: usize,
    /// Whether it is the only step of that program.
    pub alone: bool,
}

/// A loop of a program, where it is.
pub(crate) struct LoopInfo<'a> {
    /// How it reads in the source (`for l in 0..size(w, 0)`).
    pub label: &'a str,
    /// The loops around it (slots), outermost first.
    pub loops: Vec<usize>,
}

impl ProgramTimes {
    /// Zero times for every stage and loop of `program`.
    pub(crate) fn new(program: &CompiledProgram) -> ProgramTimes {
        let (stages, loops) = layout(program);
        ProgramTimes {
            stages: stages
                .iter()
                .map(|s| {
                    KernelTimes::new(s.prepared.compiled().map_or(0, |f| f.fused().kernels.len()))
                })
                .collect(),
            shapes: vec![None; stages.len()],
            trips: vec![0; loops.len()],
        }
    }

    /// Zeroes the times and trip counts (the shapes stay).
    pub(crate) fn clear(&mut self) {
        for t in &mut self.stages {
            t.per_kernel.iter_mut().for_each(|d| *d = Duration::ZERO);
            t.calls = 0;
        }
        self.trips.iter_mut().for_each(|t| *t = 0);
    }

    fn note_shapes(&mut self, slot: usize, args: &[TensorValue<'_>]) {
        if let Some(s @ None) = self.shapes.get_mut(slot) {
            *s = Some(args.iter().map(|a| a.shape().to_vec()).collect());
        }
    }

    /// Runs the stage of `slot`, timing its kernels.
    pub(super) fn run_stage(
        &mut self,
        stage: &Prepared,
        slot: usize,
        args: &[TensorValue<'_>],
        externs: &dyn ExternKernels,
    ) -> Result<Vec<Tensor>, Error> {
        self.note_shapes(slot, args);
        match self.stages.get_mut(slot) {
            Some(times) => stage.run_profiled(args, externs, times),
            None => Err(Error::Internal(format!("no profile entry for stage {slot}"))),
        }
    }

    /// Runs the stage of `slot` into `outputs`, timing its kernels.
    pub(super) fn run_stage_into(
        &mut self,
        stage: &Prepared,
        slot: usize,
        args: &[TensorValue<'_>],
        outputs: &mut [OutputMut],
        externs: &dyn ExternKernels,
    ) -> Result<(), Error> {
        self.note_shapes(slot, args);
        match self.stages.get_mut(slot) {
            Some(times) => stage
                .run_into_profiled(args, outputs, externs, times)
                .unwrap_or_else(|| stage.run_into(args, outputs, externs)),
            None => Err(Error::Internal(format!("no profile entry for stage {slot}"))),
        }
    }

    /// Counts `trips` trips of the loop of `slot`.
    pub(super) fn add_trips(&mut self, slot: usize, trips: u64) {
        if let Some(t) = self.trips.get_mut(slot) {
            *t += trips;
        }
    }
}

/// Every stage and every loop of the program, bodies included, in slot order.
pub(crate) fn layout(program: &CompiledProgram) -> (Vec<StageInfo<'_>>, Vec<LoopInfo<'_>>) {
    let mut stages = Vec::new();
    let mut loops = Vec::new();
    collect(program, &[], &mut stages, &mut loops);
    stages.sort_by_key(|(slot, _)| *slot);
    loops.sort_by_key(|(slot, _)| *slot);
    (stages.into_iter().map(|(_, s)| s).collect(), loops.into_iter().map(|(_, l)| l).collect())
}

fn collect<'a>(
    program: &'a CompiledProgram,
    around: &[usize],
    stages: &mut Vec<(usize, StageInfo<'a>)>,
    loops: &mut Vec<(usize, LoopInfo<'a>)>,
) {
    let alone = program.steps.len() == 1;
    let mut number = 0;
    for step in &program.steps {
        match step {
            CompiledStep::Stage { stage: Stage { forward, slot, .. }, .. } => {
                let info = StageInfo { prepared: forward, loops: around.to_vec(), number, alone };
                stages.push((*slot, info));
                number += 1;
            }
            CompiledStep::Loop { head, body, number: slot } => {
                loops.push((*slot, LoopInfo { label: &head.label, loops: around.to_vec() }));
                let inner: Vec<usize> = around.iter().copied().chain([*slot]).collect();
                collect(body, &inner, stages, loops);
            }
        }
    }
}
