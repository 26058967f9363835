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

use super::run::{in_loop, trip_inputs, LoopTape, Record, Values};
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
        let values = self.forward(inputs, externs, Record::Tape { checkpoint_all }, None)?;
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
                CompiledStep::Loop { spec, body, .. } => {
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
    let split = body.single_backward();
    for t in (0..tape.trips).rev() {
        let state = tape
            .saved
            .get(t)
            .ok_or_else(|| Error::Internal(format!("no stored state for trip {t}")))?;
        let residuals = tape.residuals.get(t);
        // A checkpointed trip's residuals, recomputed below (they outlive the arguments).
        let recomputed: Vec<Tensor>;
        let carried: Vec<TensorValue> = state.iter().map(of).collect();
        let mut args = trip_inputs(spec, values, Some(tape.start + t as i64), &carried)?;
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
            None => {
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
                    // Trip `t` read row `start + t` (its loop index), not row `t`.
                    let row = usize::try_from(tape.start + t as i64)
                        .map_err(|_| Error::Internal("negative trip index".into()))?;
                    set_row(a, row, &g)?;
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
