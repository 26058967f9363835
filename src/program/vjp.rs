//! Reverse mode through a program: the forward run keeps every value, each stage's residuals
//! and each `for` loop's per-trip states; the steps then run backwards.
//!
//! - A stage's gradient is cut at its residuals (`tfn_passes::autodiff::split_vjp`): the
//!   forward run ran its forward half (results and residuals); here its backward half runs
//!   from the stage's inputs, the residuals and the gradients its outputs collected from
//!   later steps.
//! - A `for` runs its body's backward half once per trip, last trip first, from the carried
//!   values the trip started with (stored by the forward run) and the trip's residuals: stored
//!   too, or — for a checkpointed loop — recomputed by the body's forward half just before
//!   (one trip's residuals in memory instead of every trip's). A body with loops of its own
//!   runs its whole reverse mode per trip. The invariants' gradients are summed over the
//!   trips, and a stacked input's gradient gets row `i` from trip `i`.
//! - A `while` is not differentiable (its trip count depends on the values); the session
//!   refuses to build its vjp.

use super::run::SessionStages;
use super::tensors::{accumulate, set_row, zeros};
use super::{single_backward, CompiledProgram, CompiledStep, Stage};
use crate::error::Error;
use crate::value::TensorValue;
use tfn_ir::interp::ExternKernels;
use tfn_ir::program::run::{in_loop, trip_inputs, LoopHead, Plan, Recorder, Values};
use tfn_ir::program::LoopKind;
use tfn_ir::Tensor;

/// What a forward run keeps of each `for` loop for the reverse pass.
struct LoopTape {
    /// The trip index of trip 0, and the trip count.
    start: i64,
    trips: usize,
    /// The number of carried values (a body's first results).
    carried: usize,
    /// The carried values before each trip.
    saved: Vec<Vec<Tensor>>,
    /// Each trip's residuals, what its backward pass reads (a body of one stage, not
    /// checkpointed; else empty and recomputed from the trip's inputs).
    residuals: Vec<Vec<Tensor>>,
    /// Whether the residuals are kept.
    keep_residuals: bool,
}

/// The recorder of a forward run for the reverse pass: each top-level stage's residuals (its
/// gradient's forward half runs instead of the stage), each `for` loop's states and, unless
/// the loop is checkpointed (`checkpoint_all`: every loop is), each trip's residuals.
struct Tapes<'e> {
    externs: &'e dyn ExternKernels,
    checkpoint_all: bool,
    /// Per top-level step.
    residuals: Vec<Option<Vec<Tensor>>>,
    tapes: Vec<Option<LoopTape>>,
}

impl Recorder<Stage, Error> for Tapes<'_> {
    fn stage(
        &mut self,
        step: usize,
        stage: &Stage,
        args: &[TensorValue<'_>],
    ) -> Option<Result<Vec<Tensor>, Error>> {
        let b = stage.backward.as_ref()?;
        Some(b.forward.run(args, self.externs).map(|mut out| {
            let residuals = out.split_off(stage.results.min(out.len()));
            if let Some(r) = self.residuals.get_mut(step) {
                *r = Some(residuals);
            }
            out
        }))
    }

    fn for_loop(
        &mut self,
        step: usize,
        head: &LoopHead,
        init: &[TensorValue<'_>],
        start: i64,
        trips: usize,
    ) -> Result<(), Error> {
        tape_fits(head, init, trips)?;
        let LoopKind::For { checkpoint, .. } = head.kind else {
            return Err(Error::Internal(format!(
                "the vjp reached the while loop `{}`",
                head.label
            )));
        };
        let keep_residuals = !(checkpoint || self.checkpoint_all);
        if let Some(t) = self.tapes.get_mut(step) {
            *t = Some(LoopTape {
                start,
                trips,
                carried: head.carried.len(),
                saved: Vec::new(),
                residuals: Vec::new(),
                keep_residuals,
            });
        }
        Ok(())
    }

    fn trip(
        &mut self,
        step: usize,
        body: &Plan<Stage>,
        carried: &[TensorValue<'_>],
        args: &[TensorValue<'_>],
    ) -> Option<Result<Vec<Tensor>, Error>> {
        let tape = self.tapes.get_mut(step)?.as_mut()?;
        tape.saved.push(carried.iter().map(TensorValue::to_tensor).collect());
        // Stored mode with a body of one stage: the trip's residuals too.
        if !tape.keep_residuals {
            return None;
        }
        let b = single_backward(body)?;
        Some(b.forward.run(args, self.externs).map(|mut out| {
            let residuals = out.split_off(tape.carried.min(out.len()));
            tape.residuals.push(residuals);
            out
        }))
    }
}

/// Refuses a tape of `states` carried states larger than the largest tensor a call may
/// create (`TFN_MAX_TENSOR_BYTES`) before the first trip: `for i in 0..1000000000000` would
/// otherwise store states until the process runs out of memory.
fn tape_fits(head: &LoopHead, init: &[TensorValue<'_>], states: usize) -> Result<(), Error> {
    let limit = tfn_ir::bind::max_tensor_bytes().map_err(|e| Error::Config(e.to_string()))?;
    let state: u64 = init
        .iter()
        .map(|c| (c.shape().iter().product::<usize>() * c.dtype().size_bytes()) as u64)
        .sum();
    let total = state.checked_mul(states as u64);
    if total.is_none_or(|t| t > limit) {
        return Err(Error::Shape(format!(
            "reverse mode through the loop `{}` would store {states} states of {state} bytes (one per trip), more than the limit of {limit} bytes (TFN_MAX_TENSOR_BYTES)",
            head.label
        )));
    }
    Ok(())
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
    let n = program.steps.len();
    let mut tapes = Tapes {
        externs,
        checkpoint_all,
        residuals: vec![None; n],
        tapes: (0..n).map(|_| None).collect(),
    };
    let mut stages = SessionStages { externs, times: None };
    let values = program.forward(inputs, &mut stages, Some(&mut tapes))?;
    let slot = |v| values.slot::<Error>(v);
    let results = if with_values {
        program
            .outputs
            .iter()
            .map(|v| slot(*v).map(|t| t.to_tensor()))
            .collect::<Result<Vec<_>, _>>()?
    } else {
        Vec::new()
    };
    let mut grads: Vec<Option<Tensor>> = vec![None; program.values];
    for (o, c) in program.outputs.iter().zip(cotangents) {
        if slot(*o)?.dtype().is_float() {
            accumulate(&mut grads[o.index()], c.to_tensor())?;
        }
    }
    for (k, step) in program.steps.iter().enumerate().rev() {
        match step {
            CompiledStep::Stage { stage: Stage { backward: None, .. }, .. } => {}
            CompiledStep::Stage { stage: Stage { backward: Some(bw), .. }, reads, writes } => {
                if writes.iter().all(|w| grads[w.index()].is_none()) {
                    continue;
                }
                let mut cots = Vec::with_capacity(writes.len());
                for w in writes {
                    let t = match grads[w.index()].take() {
                        Some(g) => g,
                        None => {
                            let v = slot(*w)?;
                            zeros(v.dtype(), v.shape())
                        }
                    };
                    cots.push(t);
                }
                let mut args: Vec<TensorValue> = inputs.iter().map(|t| t.view()).collect();
                for r in reads {
                    args.push(slot(*r)?.view());
                }
                args.extend(cots.iter().map(TensorValue::of));
                let residuals =
                    tapes.residuals.get(k).and_then(|r| r.as_ref()).ok_or_else(|| {
                        Error::Internal("a stage's residuals were not recorded".into())
                    })?;
                args.extend(residuals.iter().map(TensorValue::of));
                let out = bw.backward.run(&args, externs)?;
                drop(args);
                for (p, g) in bw.differentiated.iter().zip(out) {
                    let target = match program.param_values.get(*p) {
                        Some(v) => *v,
                        None => reads[*p - program.param_values.len()],
                    };
                    accumulate(&mut grads[target.index()], g)?;
                }
            }
            CompiledStep::Loop { head, body, .. } => {
                let tape = tapes.tapes.get(k).and_then(|t| t.as_ref());
                loop_vjp(head, body, &values, tape, &mut grads, externs)?;
            }
        }
    }
    let input_grads = program.param_values.iter().map(|v| grads[v.index()].take()).collect();
    Ok((results, input_grads))
}

/// The reverse pass of one `for` loop: adds the gradients of its inputs to `grads`.
fn loop_vjp(
    spec: &LoopHead,
    body: &CompiledProgram,
    values: &Values<'_>,
    tape: Option<&LoopTape>,
    grads: &mut [Option<Tensor>],
    externs: &dyn ExternKernels,
) -> Result<(), Error> {
    if matches!(spec.kind, LoopKind::While { .. }) {
        return Err(Error::Internal(format!("the vjp reached the while loop `{}`", spec.label)));
    }
    let Some(tape) = tape else {
        return Err(Error::Internal(format!("no tape for the loop `{}`", spec.label)));
    };
    let mut g_carried: Vec<Tensor> = Vec::new();
    let mut any = false;
    for (r, init) in spec.results.iter().zip(&spec.carried) {
        let g = grads[r.index()].take();
        any |= g.is_some();
        g_carried.push(match g {
            Some(g) => g,
            None => {
                let v = values.slot::<Error>(*init)?;
                zeros(v.dtype(), v.shape())
            }
        });
    }
    if !any || tape.trips == 0 {
        // No gradient reaches the loop's results, or it ran no trip (results = inits).
        if any {
            for (init, g) in spec.carried.iter().zip(g_carried) {
                if values.slot::<Error>(*init)?.dtype().is_float() {
                    accumulate(&mut grads[init.index()], g)?;
                }
            }
        }
        return Ok(());
    }
    let nc = spec.carried.len();
    let ni = spec.invariants.len();
    let first = spec.first_carried();
    let mut g_inv: Vec<Option<Tensor>> = vec![None; ni];
    let mut g_sliced: Vec<Option<Tensor>> = vec![None; spec.sliced.len()];
    let split = single_backward(body);
    for t in (0..tape.trips).rev() {
        let state = tape
            .saved
            .get(t)
            .ok_or_else(|| Error::Internal(format!("no stored state for trip {t}")))?;
        let residuals = tape.residuals.get(t);
        // A checkpointed trip's residuals, recomputed below (they outlive the arguments).
        let recomputed: Vec<Tensor>;
        let carried: Vec<TensorValue> = state.iter().map(TensorValue::of).collect();
        let mut args = trip_inputs::<Error>(spec, values, Some(tape.start + t as i64), &carried)?;
        let gb: Vec<Option<Tensor>> = match split {
            Some(b) => {
                // The body's backward half, from the trip's inputs and residuals (stored, or
                // recomputed now by its forward half: checkpointing).
                let residuals = match residuals {
                    Some(r) => r,
                    None => {
                        let mut out =
                            b.forward.run(&args, externs).map_err(|e| in_loop(e, spec, t))?;
                        recomputed = out.split_off(spec.carried.len().min(out.len()));
                        &recomputed
                    }
                };
                let n = args.len();
                args.extend(g_carried.iter().map(TensorValue::of));
                args.extend(residuals.iter().map(TensorValue::of));
                let out = b.backward.run(&args, externs).map_err(|e| in_loop(e, spec, t))?;
                let mut gb: Vec<Option<Tensor>> = vec![None; n];
                for (p, g) in b.differentiated.iter().zip(out) {
                    if let Some(slot) = gb.get_mut(*p) {
                        *slot = Some(g);
                    }
                }
                gb
            }
            None => {
                let cots: Vec<TensorValue> = g_carried.iter().map(TensorValue::of).collect();
                vjp(body, &args, &cots, externs, false, false).map_err(|e| in_loop(e, spec, t))?.1
            }
        };
        drop(args);
        let mut gb = gb.into_iter().skip(first);
        let mut next = Vec::with_capacity(nc);
        for c in state.iter() {
            next.push(match gb.next().flatten() {
                Some(g) => g,
                None => zeros(c.dtype(), c.shape()),
            });
        }
        g_carried = next;
        for acc in g_inv.iter_mut() {
            if let Some(g) = gb.next().flatten() {
                accumulate(acc, g)?;
            }
        }
        for (k, acc) in g_sliced.iter_mut().enumerate() {
            if let Some(g) = gb.next().flatten() {
                if acc.is_none() {
                    let src = values.slot::<Error>(spec.sliced[k])?;
                    *acc = Some(zeros(g.dtype(), src.shape()));
                }
                if let Some(a) = acc {
                    // Trip `t` read row `start + t` (its loop index), not row `t`.
                    let row = usize::try_from(tape.start + t as i64)
                        .map_err(|_| Error::Internal("negative trip index".into()))?;
                    set_row(a, row, &g)?;
                }
            }
        }
    }
    for (init, g) in spec.carried.iter().zip(g_carried) {
        if values.slot::<Error>(*init)?.dtype().is_float() {
            accumulate(&mut grads[init.index()], g)?;
        }
    }
    for (v, g) in spec.invariants.iter().zip(g_inv) {
        if let Some(g) = g {
            accumulate(&mut grads[v.index()], g)?;
        }
    }
    for (v, g) in spec.sliced.iter().zip(g_sliced) {
        if let Some(g) = g {
            accumulate(&mut grads[v.index()], g)?;
        }
    }
    Ok(())
}

/// Whether a program can be differentiated: no `while` anywhere. The error names the loop.
pub(crate) fn refuse_while(program: &tfn_ir::program::Program) -> Option<String> {
    for step in &program.steps {
        if let tfn_ir::program::Step::Loop { spec, body } = step {
            if let LoopKind::While { .. } = spec.kind {
                return Some(spec.label.clone());
            }
            if let Some(l) = refuse_while(body) {
                return Some(l);
            }
        }
    }
    None
}
