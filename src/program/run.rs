//! Running a compiled program forward: stages in order, each loop's body once per trip.
//!
//! Values live in one table numbered like the outer graph's values; the call's tensors are
//! borrowed, never copied. A `for` binds its bounds from the call's sizes, checks that every
//! stacked input `w` has a row for each trip, and passes the body `w`'s row `i` as a view. A
//! carried value must keep its shape from trip to trip (its dtype and rank are checked when the
//! function is compiled). A `while` reads its condition before each trip and fails past its
//! `at most`.

use super::tensors::{index, of, owned, row, truth, view};
use super::{CompiledProgram, CompiledStep};
use crate::error::Error;
use crate::value::TensorValue;
use tfn_ir::interp::ExternKernels;
use tfn_ir::program::{LoopKind, LoopSpec};
use tfn_ir::{Dim, Tensor, ValueId};

/// What a forward run keeps of each `for` loop for the reverse pass.
pub(super) struct LoopTape {
    /// The trip index of trip 0, and the trip count.
    pub start: i64,
    pub trips: usize,
    /// The carried values before trips `0, every, 2 * every, ...`.
    pub every: usize,
    pub saved: Vec<Vec<Tensor>>,
    /// Each trip's residuals (stored mode, a body of one stage): what its backward pass reads.
    pub residuals: Vec<Vec<Tensor>>,
}

/// The value table after a forward run.
pub(super) struct Values<'a> {
    pub slots: Vec<Option<TensorValue<'a>>>,
    /// One entry per step (`None` for stages and untaped loops).
    pub tapes: Vec<Option<LoopTape>>,
    /// One entry per step: a recorded stage's residuals.
    pub residuals: Vec<Option<Vec<Tensor>>>,
}

/// How a forward run records loops: not at all, or every `k`-th carried state (`k` from the
/// trip count: 1 stores every trip; [`checkpoint_every`] for a checkpointed loop).
#[derive(Clone, Copy)]
pub(super) enum Record {
    Nothing,
    Tape { checkpoint_all: bool },
}

/// The spacing of stored states for a checkpointed loop of `trips` trips: about √trips, so
/// that the stored states and one recomputed segment are both about √trips.
pub(super) fn checkpoint_every(trips: usize) -> usize {
    ((trips as f64).sqrt().ceil() as usize).max(1)
}

impl CompiledProgram {
    /// Runs the program; returns its results.
    pub(crate) fn run(
        &self,
        inputs: &[TensorValue<'_>],
        externs: &dyn ExternKernels,
    ) -> Result<Vec<Tensor>, Error> {
        // A body without loops is one stage computing exactly the results: call it directly
        // (the common case, once per trip).
        if let Some(stage) = self.single_stage().filter(|_| inputs.len() == self.inputs()) {
            return stage.run(inputs, externs);
        }
        let values = self.forward(inputs, externs, Record::Nothing)?;
        self.outputs.iter().map(|v| values.slot(*v).map(|t| t.to_tensor())).collect()
    }

    /// The sizes of the call: every symbol of the signature.
    pub(super) fn sizes(&self, inputs: &[TensorValue<'_>]) -> Result<Vec<usize>, Error> {
        let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
        tfn_ir::bind_sizes(&self.signature, &shapes).map_err(crate::signature::bind_error)
    }

    /// Runs every step, keeping every value (and, when recording, each loop's states).
    pub(super) fn forward<'a>(
        &self,
        inputs: &'a [TensorValue<'_>],
        externs: &dyn ExternKernels,
        record: Record,
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
                CompiledStep::Graph { forward, backward, reads, writes } => {
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
                        None => (forward.run(&args, externs)?, None),
                    };
                    drop(args);
                    for (w, t) in writes.iter().zip(out) {
                        values.slots[w.index()] = Some(owned(t));
                    }
                    values.tapes.push(None);
                    values.residuals.push(residuals);
                }
                CompiledStep::Loop { spec, body } => {
                    if sizes.is_none() && matches!(spec.kind, LoopKind::For { .. }) {
                        sizes = Some(self.sizes(inputs)?);
                    }
                    let (results, tape) =
                        run_loop(spec, body, &values, sizes.as_deref(), externs, record)?;
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

/// Runs one loop; returns its results (and its tape when recording a `for`).
fn run_loop(
    spec: &LoopSpec,
    body: &CompiledProgram,
    values: &Values<'_>,
    sizes: Option<&[usize]>,
    externs: &dyn ExternKernels,
    record: Record,
) -> Result<(Vec<Tensor>, Option<LoopTape>), Error> {
    let init: Vec<TensorValue> =
        spec.carried.iter().map(|v| values.slot(*v).map(view)).collect::<Result<_, _>>()?;
    match spec.kind {
        LoopKind::For { checkpoint, .. } => {
            let (start, trips) = for_trips(spec, values, sizes)?;
            let mut tape = match record {
                Record::Nothing => None,
                Record::Tape { checkpoint_all } => {
                    let every =
                        if checkpoint || checkpoint_all { checkpoint_every(trips) } else { 1 };
                    Some(LoopTape { start, trips, every, saved: Vec::new(), residuals: Vec::new() })
                }
            };
            if tape.is_none() && trips > 1 {
                if let Some(out) = run_in_place(spec, body, values, &init, start, trips, externs)? {
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
                    if t % tape.every == 0 {
                        tape.saved.push(carried.iter().map(|c| c.to_tensor()).collect());
                    }
                }
                // Stored mode with a body of one stage: the trip's residuals too.
                let split = match &tape {
                    Some(tape) if tape.every == 1 => body.single_backward(),
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
                        None => body.run(&args, externs).map_err(|e| in_loop(e, spec, t))?,
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
                    body.run(&args, externs).map_err(|e| in_loop(e, spec, trips as usize))?
                };
                let c = out
                    .pop()
                    .ok_or_else(|| Error::Internal("a while body without its condition".into()))?;
                check_carried(spec, &carried, &out, trips as usize)?;
                go = truth(&c)
                    .ok_or_else(|| Error::Internal("a while condition is not a bool[]".into()))?;
                cur = out;
                trips += 1;
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
    start: i64,
    trips: usize,
    externs: &dyn ExternKernels,
) -> Result<Option<Vec<Tensor>>, Error> {
    let Some(stage) = body.single_stage() else { return Ok(None) };
    let mut a: Vec<Tensor> = init.iter().map(|c| c.to_tensor()).collect();
    let mut b: Vec<Tensor> = a.clone();
    for t in 0..trips {
        {
            let carried: Vec<TensorValue> = a.iter().map(of).collect();
            let args = trip_inputs(spec, values, Some(start + t as i64), &carried)?;
            let mut outs: Vec<crate::OutputMut> =
                b.iter_mut().map(crate::OutputMut::from).collect();
            match stage.run_into(&args, &mut outs, externs) {
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
