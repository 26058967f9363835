//! Reverse mode through a program: the forward run keeps every value and each `for` loop's
//! carried states; the steps then run backwards.
//!
//! - A stage runs its gradient graph (built once by `tfn_passes::autodiff` from the stage
//!   graph: it recomputes what it needs of the stage from the stage's inputs), seeded with the
//!   gradients its outputs collected from later steps.
//! - A `for` runs its body's reverse mode once per trip, last trip first, from the carried
//!   values the trip started with: stored by the forward run (every trip), or — for a
//!   checkpointed loop — recomputed from the nearest stored state (every ⌈√n⌉-th trip) one
//!   segment at a time. The invariants' gradients are summed over the trips, and a stacked
//!   input's gradient gets row `i` from trip `i`.
//! - A `while` is not differentiable (its trip count depends on the values); the session
//!   refuses to build its vjp.

use super::run::{check_carried, in_loop, trip_inputs, LoopTape, Record, Values};
use super::tensors::{accumulate, of, set_row, view, zeros};
use super::{CompiledProgram, CompiledStep};
use crate::error::Error;
use crate::value::TensorValue;
use tfn_ir::interp::ExternKernels;
use tfn_ir::program::{LoopKind, LoopSpec};
use tfn_ir::Tensor;

impl CompiledProgram {
    /// The program's results (when `with_values`) and the gradient of `<results, cotangents>`
    /// for each real input (`None`: no gradient reaches it).
    pub(crate) fn vjp(
        &self,
        inputs: &[TensorValue<'_>],
        cotangents: &[TensorValue<'_>],
        externs: &dyn ExternKernels,
        with_values: bool,
        checkpoint_all: bool,
    ) -> Result<(Vec<Tensor>, Vec<Option<Tensor>>), Error> {
        let values = self.forward(inputs, externs, Record::Tape { checkpoint_all })?;
        let results = if with_values {
            self.outputs
                .iter()
                .map(|v| values.slot(*v).map(|t| t.to_tensor()))
                .collect::<Result<Vec<_>, _>>()?
        } else {
            Vec::new()
        };
        let mut grads: Vec<Option<Tensor>> = vec![None; self.values];
        for (o, c) in self.outputs.iter().zip(cotangents) {
            if values.slot(*o)?.dtype().is_float() {
                accumulate(&mut grads[o.index()], c.to_tensor())?;
            }
        }
        for (k, step) in self.steps.iter().enumerate().rev() {
            match step {
                CompiledStep::Graph { backward: None, .. } => {}
                CompiledStep::Graph { backward: Some(bw), reads, writes, .. } => {
                    if writes.iter().all(|w| grads[w.index()].is_none()) {
                        continue;
                    }
                    let mut cots = Vec::with_capacity(writes.len());
                    for w in writes {
                        let t = match grads[w.index()].take() {
                            Some(g) => g,
                            None => {
                                let v = values.slot(*w)?;
                                zeros(v.dtype(), v.shape())
                            }
                        };
                        cots.push(t);
                    }
                    let mut args: Vec<TensorValue> = inputs.iter().map(view).collect();
                    for r in reads {
                        args.push(view(values.slot(*r)?));
                    }
                    args.extend(cots.iter().map(of));
                    let residuals =
                        values.residuals.get(k).and_then(|r| r.as_ref()).ok_or_else(|| {
                            Error::Internal("a stage's residuals were not recorded".into())
                        })?;
                    args.extend(residuals.iter().map(of));
                    let out = bw.backward.run(&args, externs)?;
                    drop(args);
                    for (p, g) in bw.differentiated.iter().zip(out) {
                        let target = match self.param_values.get(*p) {
                            Some(v) => *v,
                            None => reads[*p - self.param_values.len()],
                        };
                        accumulate(&mut grads[target.index()], g)?;
                    }
                }
                CompiledStep::Loop { spec, body } => {
                    let tape = values.tapes.get(k).and_then(|t| t.as_ref());
                    loop_vjp(spec, body, &values, tape, &mut grads, externs)?;
                }
            }
        }
        let input_grads = self.param_values.iter().map(|v| grads[v.index()].take()).collect();
        Ok((results, input_grads))
    }
}

/// The reverse pass of one `for` loop: adds the gradients of its inputs to `grads`.
fn loop_vjp(
    spec: &LoopSpec,
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
                let v = values.slot(*init)?;
                zeros(v.dtype(), v.shape())
            }
        });
    }
    if !any || tape.trips == 0 {
        // No gradient reaches the loop's results, or it ran no trip (results = inits).
        if any {
            for (init, g) in spec.carried.iter().zip(g_carried) {
                if values.slot(*init)?.dtype().is_float() {
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
    // The states (and residuals) of the current segment of trips, recomputed when
    // checkpointed.
    let split = body.single_backward();
    let mut segment = Segment::default();
    let mut segment_start = usize::MAX;
    for t in (0..tape.trips).rev() {
        let (state, residuals) = if tape.every == 1 {
            let state = tape
                .saved
                .get(t)
                .ok_or_else(|| Error::Internal(format!("no stored state for trip {t}")))?;
            (state, tape.residuals.get(t))
        } else {
            let s = t / tape.every;
            if segment_start != s * tape.every {
                segment_start = s * tape.every;
                segment = recompute(spec, body, values, tape, s, externs)?;
            }
            (&segment.states[t - segment_start], segment.residuals.get(t - segment_start))
        };
        let carried: Vec<TensorValue> = state.iter().map(of).collect();
        let mut args = trip_inputs(spec, values, Some(tape.start + t as i64), &carried)?;
        let gb: Vec<Option<Tensor>> = match (split, residuals) {
            (Some(b), Some(residuals)) => {
                // The body's backward half, from the trip's inputs and residuals.
                let n = args.len();
                args.extend(g_carried.iter().map(of));
                args.extend(residuals.iter().map(of));
                let out = b.backward.run(&args, externs).map_err(|e| in_loop(e, spec, t))?;
                let mut gb: Vec<Option<Tensor>> = vec![None; n];
                for (p, g) in b.differentiated.iter().zip(out) {
                    if let Some(slot) = gb.get_mut(*p) {
                        *slot = Some(g);
                    }
                }
                gb
            }
            _ => {
                let cots: Vec<TensorValue> = g_carried.iter().map(of).collect();
                body.vjp(&args, &cots, externs, false, false).map_err(|e| in_loop(e, spec, t))?.1
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
                    let src = values.slot(spec.sliced[k])?;
                    *acc = Some(zeros(g.dtype(), src.shape()));
                }
                if let Some(a) = acc {
                    set_row(a, t, &g)?;
                }
            }
        }
    }
    for (init, g) in spec.carried.iter().zip(g_carried) {
        if values.slot(*init)?.dtype().is_float() {
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

/// The trips of one checkpointed segment, recomputed.
#[derive(Default)]
struct Segment {
    /// The carried values before each trip.
    states: Vec<Vec<Tensor>>,
    /// Each trip's residuals (a body of one stage).
    residuals: Vec<Vec<Tensor>>,
}

/// The trips of segment `s` (trips `s * every ..`): the stored state, then the body run
/// forward from it, keeping each trip's residuals when the body is one stage.
fn recompute(
    spec: &LoopSpec,
    body: &CompiledProgram,
    values: &Values<'_>,
    tape: &LoopTape,
    s: usize,
    externs: &dyn ExternKernels,
) -> Result<Segment, Error> {
    let first = s * tape.every;
    let end = (first + tape.every).min(tape.trips);
    let saved = tape
        .saved
        .get(s)
        .ok_or_else(|| Error::Internal(format!("no stored state for trip {first}")))?;
    let split = body.single_backward();
    let mut segment = Segment { states: vec![saved.clone()], residuals: Vec::new() };
    for t in first..end {
        if split.is_none() && t + 1 == end {
            // Without residuals, the state after the segment's last trip is not needed.
            break;
        }
        let out = {
            let carried: Vec<TensorValue> = segment.states[t - first].iter().map(of).collect();
            let args = trip_inputs(spec, values, Some(tape.start + t as i64), &carried)?;
            let out = match split {
                Some(b) => {
                    let mut out = b.forward.run(&args, externs).map_err(|e| in_loop(e, spec, t))?;
                    let residuals = out.split_off(spec.carried.len().min(out.len()));
                    segment.residuals.push(residuals);
                    out
                }
                None => body.run(&args, externs).map_err(|e| in_loop(e, spec, t))?,
            };
            check_carried(spec, &carried, &out, t)?;
            out
        };
        if t + 1 < end {
            segment.states.push(out);
        }
    }
    Ok(segment)
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
