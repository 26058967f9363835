//! Running a compiled program forward: stages in order, each loop's body once per trip.
//!
//! Values live in one table numbered like the outer graph's values; the call's tensors are
//! borrowed, never copied. A `for` binds its bounds from the call's sizes, checks that every
//! stacked input `w` has a row for each trip, and passes the body `w`'s row `i` as a view. A
//! carried value must keep its shape from trip to trip (its dtype and rank are checked when the
//! function is compiled). A `while` reads its condition before each trip and fails past its
//! `at most`.
//!
//! A profiled run ([`CompiledProgram::run_profiled`]) passes a [`ProgramTimes`] down to every
//! stage and loop: each stage's kernels are timed, each loop's trips counted. An unprofiled
//! run passes `None` and reads no clock.

use super::tensors::{index, of, owned, row, truth, view};
use super::{CompiledProgram, CompiledStep, ProgramTimes};
use crate::error::Error;
use crate::signature::Prepared;
use crate::value::TensorValue;
use tfn_ir::interp::ExternKernels;
use tfn_ir::program::{LoopKind, LoopSpec};
use tfn_ir::{Dim, Tensor, ValueId};

/// What a forward run keeps of each `for` loop for the reverse pass.
pub(super) struct LoopTape {
    /// The trip index of trip 0, and the trip count.
    pub start: i64,
    pub trips: usize,
    /// The carried values before each trip.
    pub saved: Vec<Vec<Tensor>>,
    /// Each trip's residuals, what its backward pass reads (a body of one stage, not
    /// checkpointed; else empty and recomputed from the trip's inputs).
    pub residuals: Vec<Vec<Tensor>>,
    /// Whether the residuals are kept.
    pub keep_residuals: bool,
}

/// The value table after a forward run.
pub(super) struct Values<'a> {
    pub slots: Vec<Option<TensorValue<'a>>>,
    /// One entry per step (`None` for stages and untaped loops).
    pub tapes: Vec<Option<LoopTape>>,
    /// One entry per step: a recorded stage's residuals.
    pub residuals: Vec<Option<Vec<Tensor>>>,
}

/// How a forward run records loops: not at all, or each trip's carried values, and its
/// residuals unless the loop is checkpointed (`checkpoint_all`: every loop is).
#[derive(Clone, Copy)]
pub(super) enum Record {
    Nothing,
    Tape { checkpoint_all: bool },
}

impl CompiledProgram {
    /// Runs the program; returns its results.
    pub(crate) fn run(
        &self,
        inputs: &[TensorValue<'_>],
        externs: &dyn ExternKernels,
    ) -> Result<Vec<Tensor>, Error> {
        self.run_timed(inputs, externs, None)
    }

    /// [`Self::run`], adding each stage's kernel times and each loop's trips to `times`
    /// (made by [`ProgramTimes::new`] for this program).
    pub(crate) fn run_profiled(
        &self,
        inputs: &[TensorValue<'_>],
        externs: &dyn ExternKernels,
        times: &mut ProgramTimes,
    ) -> Result<Vec<Tensor>, Error> {
        self.run_timed(inputs, externs, Some(times))
    }

    fn run_timed(
        &self,
        inputs: &[TensorValue<'_>],
        externs: &dyn ExternKernels,
        times: Option<&mut ProgramTimes>,
    ) -> Result<Vec<Tensor>, Error> {
        // A body without loops is one stage computing exactly the results: call it directly
        // (the common case, once per trip).
        if let Some((stage, slot)) = self.single_stage().filter(|_| inputs.len() == self.inputs()) {
            return run_stage(stage, slot, inputs, externs, times);
        }
        let values = self.forward(inputs, externs, Record::Nothing, times)?;
        self.outputs.iter().map(|v| values.slot(*v).map(|t| t.to_tensor())).collect()
    }

    /// The sizes of the call: every symbol of the signature.
    pub(super) fn sizes(&self, inputs: &[TensorValue<'_>]) -> Result<Vec<usize>, Error> {
        let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
        tfn_ir::bind_sizes(&self.signature, &shapes).map_err(crate::signature::bind_error)
    }

    /// Runs every step, keeping every value (and, when recording, each loop's states; when
    /// profiling, the times in `times`).
    pub(super) fn forward<'a>(
        &self,
        inputs: &'a [TensorValue<'_>],
        externs: &dyn ExternKernels,
        record: Record,
        mut times: Option<&mut ProgramTimes>,
    ) -> Result<Values<'a>, Error> {
        if inputs.len() != self.inputs() {
            return Err(Error::Internal(format!(
                "a program of {} inputs called with {}",
                self.inputs(),
                inputs.len()
            )));
        }
        let mut values: Values<'a> =
            Values { slots: vec![None; self.values], tapes: Vec::new(), residuals: Vec::new() };
        for (p, v) in self.param_values.iter().enumerate() {
            values.slots[v.index()] = Some(view(&inputs[p]));
        }
        let mut sizes: Option<Vec<usize>> = None;
        for step in &self.steps {
            match step {
                CompiledStep::Graph { forward, backward, reads, writes, slot } => {
                    let mut args: Vec<TensorValue> = inputs.iter().map(view).collect();
                    for r in reads {
                        args.push(view(values.slot(*r)?));
                    }
                    // Recording: the gradient's forward half, which also returns the residuals.
                    let recorded = match (record, backward) {
                        (Record::Tape { .. }, Some(b)) => Some(b.forward.run(&args, externs)?),
                        _ => None,
                    };
                    let (out, residuals) = match recorded {
                        Some(mut out) => {
                            let residuals = out.split_off(writes.len().min(out.len()));
                            (out, Some(residuals))
                        }
                        None => {
                            let out =
                                run_stage(forward, *slot, &args, externs, times.as_deref_mut())?;
                            (out, None)
                        }
                    };
                    drop(args);
                    for (w, t) in writes.iter().zip(out) {
                        values.slots[w.index()] = Some(owned(t));
                    }
                    values.tapes.push(None);
                    values.residuals.push(residuals);
                }
                CompiledStep::Loop { spec, body, slot } => {
                    if sizes.is_none() && matches!(spec.kind, LoopKind::For { .. }) {
                        sizes = Some(self.sizes(inputs)?);
                    }
                    let run = Run { values: &values, sizes: sizes.as_deref(), externs, record };
                    let (results, tape) = run_loop(spec, body, *slot, run, times.as_deref_mut())?;
                    for (r, t) in spec.results.iter().zip(results) {
                        values.slots[r.index()] = Some(owned(t));
                    }
                    values.tapes.push(tape);
                    values.residuals.push(None);
                }
            }
        }
        Ok(values)
    }
}

impl<'a> Values<'a> {
    pub(super) fn slot(&self, v: ValueId) -> Result<&TensorValue<'a>, Error> {
        self.slots.get(v.index()).and_then(|s| s.as_ref()).ok_or_else(|| {
            Error::Internal(format!("the loop program reads {v} before it is computed"))
        })
    }
}

/// A size of the outer graph, given the call's sizes.
pub(super) fn size_of(d: Dim, sizes: Option<&[usize]>) -> Result<usize, Error> {
    match d {
        Dim::Const(c) => {
            usize::try_from(c).map_err(|_| Error::Shape(format!("size {c} too large")))
        }
        Dim::Sym(s) => sizes
            .and_then(|z| z.get(s.0 as usize).copied())
            .ok_or_else(|| Error::Internal(format!("loop bound s{} is not bound", s.0))),
    }
}

/// A `for` loop's first index and trip count; checks that each stacked input has a row for
/// every trip.
pub(super) fn for_trips(
    spec: &LoopSpec,
    values: &Values<'_>,
    sizes: Option<&[usize]>,
) -> Result<(i64, usize), Error> {
    let LoopKind::For { start, end, .. } = spec.kind else {
        return Err(Error::Internal("for_trips of a while loop".into()));
    };
    let start = size_of(start, sizes)?;
    let end = size_of(end, sizes)?;
    let trips = end.saturating_sub(start);
    if trips > 0 {
        for (k, v) in spec.sliced.iter().enumerate() {
            let rows = values.slot(*v)?.shape().first().copied().unwrap_or(0);
            if end > rows {
                let name = spec
                    .body
                    .graph
                    .params
                    .get(spec.first_carried() + spec.carried.len() + spec.invariants.len() + k)
                    .map_or_else(|| "a stacked input".to_string(), |p| format!("`{}`", p.name));
                return Err(Error::Shape(format!(
                    "{name}: the loop `{}` runs to index {} but the tensor has {rows} row(s) along its first axis",
                    spec.label,
                    end - 1
                )));
            }
        }
    }
    Ok((start as i64, trips))
}

/// Refuses a tape of `states` carried states larger than the largest tensor a call may
/// create (`TFN_MAX_TENSOR_BYTES`) before the first trip: `for i in 0..1000000000000` would
/// otherwise store states until the process runs out of memory.
fn tape_fits(spec: &LoopSpec, init: &[TensorValue<'_>], states: usize) -> Result<(), Error> {
    let limit = tfn_ir::bind::max_tensor_bytes().map_err(|e| Error::Config(e.to_string()))?;
    let state: u64 = init
        .iter()
        .map(|c| (c.shape().iter().product::<usize>() * c.dtype().size_bytes()) as u64)
        .sum();
    let total = state.checked_mul(states as u64);
    if total.is_none_or(|t| t > limit) {
        return Err(Error::Shape(format!(
            "reverse mode through the loop `{}` would store {states} states of {state} bytes (one per trip), more than the limit of {limit} bytes (TFN_MAX_TENSOR_BYTES)",
            spec.label
        )));
    }
    Ok(())
}

/// Adds where an error happened inside a loop.
pub(super) fn in_loop(e: Error, spec: &LoopSpec, trip: usize) -> Error {
    let at = format!("\n  in trip {trip} of `{}`", spec.label);
    match e {
        Error::Shape(m) => Error::Shape(m + &at),
        Error::Runtime(m) => Error::Runtime(m + &at),
        other => other,
    }
}

/// Checks a trip's carried results against the values it started from.
pub(super) fn check_carried(
    spec: &LoopSpec,
    before: &[TensorValue<'_>],
    after: &[Tensor],
    trip: usize,
) -> Result<(), Error> {
    for ((name, b), a) in spec.carried_names.iter().zip(before).zip(after) {
        if b.shape() != a.shape() {
            return Err(Error::Shape(format!(
                "the loop `{}` changes the shape of `{name}` from {:?} to {:?} in trip {trip}; a loop-carried value keeps its shape",
                spec.label,
                b.shape(),
                a.shape()
            )));
        }
    }
    Ok(())
}

/// The body's inputs for one trip.
pub(super) fn trip_inputs<'b>(
    spec: &LoopSpec,
    values: &'b Values<'_>,
    trip_index: Option<i64>,
    carried: &'b [TensorValue<'_>],
) -> Result<Vec<TensorValue<'b>>, Error> {
    let mut args: Vec<TensorValue<'b>> =
        Vec::with_capacity(1 + carried.len() + spec.invariants.len() + spec.sliced.len());
    if let Some(i) = trip_index {
        args.push(index(i));
    }
    args.extend(carried.iter().map(view));
    for v in &spec.invariants {
        args.push(view(values.slot(*v)?));
    }
    for v in &spec.sliced {
        let row_index = usize::try_from(trip_index.unwrap_or(0))
            .map_err(|_| Error::Internal("negative trip index".into()))?;
        args.push(row(values.slot(*v)?, row_index));
    }
    Ok(args)
}

/// Runs a stage, timing its kernels when profiling.
fn run_stage(
    stage: &Prepared,
    slot: usize,
    args: &[TensorValue<'_>],
    externs: &dyn ExternKernels,
    times: Option<&mut ProgramTimes>,
) -> Result<Vec<Tensor>, Error> {
    match times {
        None => stage.run(args, externs),
        Some(t) => t.run_stage(stage, slot, args, externs),
    }
}

/// What a loop runs in: the values computed so far, the call's sizes, how it runs.
#[derive(Clone, Copy)]
struct Run<'r, 'a> {
    values: &'r Values<'a>,
    sizes: Option<&'r [usize]>,
    externs: &'r dyn ExternKernels,
    record: Record,
}

/// Runs one loop; returns its results (and its tape when recording a `for`). When
/// profiling, counts its trips in `times` (at `slot`) and times its body's kernels.
fn run_loop(
    spec: &LoopSpec,
    body: &CompiledProgram,
    slot: usize,
    run: Run<'_, '_>,
    mut times: Option<&mut ProgramTimes>,
) -> Result<(Vec<Tensor>, Option<LoopTape>), Error> {
    let Run { values, sizes, externs, record } = run;
    let init: Vec<TensorValue> =
        spec.carried.iter().map(|v| values.slot(*v).map(view)).collect::<Result<_, _>>()?;
    match spec.kind {
        LoopKind::For { checkpoint, .. } => {
            let (start, trips) = for_trips(spec, values, sizes)?;
            let mut tape = match record {
                Record::Nothing => None,
                Record::Tape { checkpoint_all } => {
                    tape_fits(spec, &init, trips)?;
                    let keep_residuals = !(checkpoint || checkpoint_all);
                    Some(LoopTape {
                        start,
                        trips,
                        saved: Vec::new(),
                        residuals: Vec::new(),
                        keep_residuals,
                    })
                }
            };
            if let Some(t) = times.as_deref_mut() {
                t.add_trips(slot, trips as u64);
            }
            if tape.is_none() && trips > 1 {
                let trips = (start, trips);
                let timed = times.as_deref_mut();
                if let Some(out) = run_in_place(spec, body, values, &init, trips, externs, timed)? {
                    return Ok((out, None));
                }
            }
            let mut cur: Option<Vec<Tensor>> = None;
            for t in 0..trips {
                let carried: Vec<TensorValue> = match &cur {
                    Some(c) => c.iter().map(of).collect(),
                    None => init.iter().map(view).collect(),
                };
                if let Some(tape) = &mut tape {
                    tape.saved.push(carried.iter().map(|c| c.to_tensor()).collect());
                }
                // Stored mode with a body of one stage: the trip's residuals too.
                let split = match &tape {
                    Some(tape) if tape.keep_residuals => body.single_backward(),
                    _ => None,
                };
                let out = {
                    let args = trip_inputs(spec, values, Some(start + t as i64), &carried)?;
                    match split {
                        Some(b) => {
                            let mut out =
                                b.forward.run(&args, externs).map_err(|e| in_loop(e, spec, t))?;
                            let residuals = out.split_off(spec.carried.len().min(out.len()));
                            if let Some(tape) = &mut tape {
                                tape.residuals.push(residuals);
                            }
                            out
                        }
                        None => body
                            .run_timed(&args, externs, times.as_deref_mut())
                            .map_err(|e| in_loop(e, spec, t))?,
                    }
                };
                check_carried(spec, &carried, &out, t)?;
                cur = Some(out);
            }
            let results = match cur {
                Some(c) => c,
                None => init.iter().map(|c| c.to_tensor()).collect(),
            };
            Ok((results, tape))
        }
        LoopKind::While { cond, max_trips } => {
            let first = values.slot(cond)?.to_tensor();
            let mut go = truth(&first)
                .ok_or_else(|| Error::Internal("a while condition is not a bool[]".into()))?;
            let mut cur: Vec<Tensor> = init.iter().map(|c| c.to_tensor()).collect();
            let mut trips = 0u64;
            while go {
                if trips == max_trips {
                    return Err(Error::Runtime(format!(
                        "the loop `{}` did not finish within its {max_trips} trip(s) (`at most {max_trips}`)",
                        spec.label
                    )));
                }
                let carried: Vec<TensorValue> = cur.iter().map(of).collect();
                let mut out = {
                    let args = trip_inputs(spec, values, None, &carried)?;
                    body.run_timed(&args, externs, times.as_deref_mut())
                        .map_err(|e| in_loop(e, spec, trips as usize))?
                };
                let c = out
                    .pop()
                    .ok_or_else(|| Error::Internal("a while body without its condition".into()))?;
                check_carried(spec, &carried, &out, trips as usize)?;
                go = truth(&c)
                    .ok_or_else(|| Error::Internal("a while condition is not a bool[]".into()))?;
                cur = out;
                trips += 1;
                if let Some(t) = times.as_deref_mut() {
                    t.add_trips(slot, 1);
                }
            }
            Ok((cur, None))
        }
    }
}

/// A `for` loop whose body is one stage computing exactly the carried values: the trips write
/// into two sets of buffers in turn (trip `t` reads one and writes the other), so no trip
/// allocates its results. `None` when the body is not of that form.
fn run_in_place(
    spec: &LoopSpec,
    body: &CompiledProgram,
    values: &Values<'_>,
    init: &[TensorValue<'_>],
    (start, trips): (i64, usize),
    externs: &dyn ExternKernels,
    mut times: Option<&mut ProgramTimes>,
) -> Result<Option<Vec<Tensor>>, Error> {
    let Some((stage, slot)) = body.single_stage() else { return Ok(None) };
    let mut a: Vec<Tensor> = init.iter().map(|c| c.to_tensor()).collect();
    let mut b: Vec<Tensor> = a.clone();
    for t in 0..trips {
        {
            let carried: Vec<TensorValue> = a.iter().map(of).collect();
            let args = trip_inputs(spec, values, Some(start + t as i64), &carried)?;
            let mut outs: Vec<crate::OutputMut> =
                b.iter_mut().map(crate::OutputMut::from).collect();
            let ran = match times.as_deref_mut() {
                None => stage.run_into(&args, &mut outs, externs),
                Some(t) => t.run_stage_into(stage, slot, &args, &mut outs, externs),
            };
            match ran {
                Ok(()) => {}
                Err(Error::Output { index, .. }) => {
                    // The body's result does not fit the buffer: a carried value changed shape.
                    let out = body.run(&args, externs).map_err(|e| in_loop(e, spec, t))?;
                    check_carried(spec, &carried, &out, t)?;
                    return Err(Error::Internal(format!(
                        "the loop `{}` could not write its carried value {index}",
                        spec.label
                    )));
                }
                Err(e) => return Err(in_loop(e, spec, t)),
            }
        }
        std::mem::swap(&mut a, &mut b);
    }
    Ok(Some(a))
}
