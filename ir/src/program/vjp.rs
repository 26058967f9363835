//! Reverse mode through a [`Plan`], whatever runs its stages: the session (JIT or
//! interpreter) and the runtime of AOT objects (`tfn-rt`, `tfnc build --vjp`) differentiate
//! functions with loops through this one code, parameterised by a [`GradRunner`].
//!
//! The forward run keeps every value, each stage's residuals and each `for` loop's per-trip
//! states; the steps then run backwards.
//!
//! - A stage's gradient is cut at its residuals (`tfn_passes::autodiff::split_vjp`, a
//!   [`Gradient`]): the forward run ran its forward half (results and residuals); here its
//!   backward half runs from the stage's inputs, the residuals and the gradients its outputs
//!   collected from later steps.
//! - A `for` runs its body's backward half once per trip, last trip first, from the carried
//!   values the trip started with (stored by the forward run) and the trip's residuals: stored
//!   too, or — for a checkpointed loop — recomputed by the body's forward half just before
//!   (one trip's residuals in memory instead of every trip's). A body with loops of its own
//!   runs its whole reverse mode per trip. The invariants' gradients are summed over the
//!   trips, and a stacked input's gradient gets row `i` from trip `i`.
//! - A `while` is not differentiable (its trip count depends on the values): [`first_while`]
//!   names the loop that makes a program so, and callers refuse to build its vjp.

use super::run::{
    in_loop, trip_inputs, LoopHead, Plan, PlanStep, Recorder, RunFailure, StageRunner, Values,
};
use super::{LoopKind, Program, Step};
use crate::graph::{Graph, GraphParam, TensorType};
use crate::{half, DType, Tensor, TensorValue};
use ndarray::{ArrayD, Axis, IxDyn};

/// A stage's gradient in two halves: `forward` computes the stage's results and then its
/// residuals, `backward` the gradients from the stage's inputs, the cotangents of its results
/// and the residuals.
pub struct Gradient<'a, H> {
    pub forward: &'a H,
    pub backward: &'a H,
    /// The stage parameters differentiated, in the order of `backward`'s outputs (indices
    /// into the real parameters, then the stage's `reads`; for a loop body, into its
    /// parameters).
    pub differentiated: &'a [usize],
}

/// A stage of a program that is differentiated.
pub trait Differentiable {
    /// What runs a gradient half.
    type Half;
    /// How many results the stage has (its forward half's residuals follow them).
    fn results(&self) -> usize;
    /// The stage's gradient; `None` when it has no float parameter.
    fn gradient(&self) -> Option<Gradient<'_, Self::Half>>;
}

/// What runs the stages of a plan in reverse mode: the stages themselves (forward) and their
/// gradients' halves.
pub trait GradRunner<S: Differentiable>: StageRunner<S> {
    fn run_half(
        &mut self,
        half: &S::Half,
        args: &[TensorValue<'_>],
    ) -> Result<Vec<Tensor>, Self::Error>;
}

/// The signature of a program's vjp and the types of its results: the real parameters, then
/// one cotangent per result (of the function's `results` types); one gradient per float
/// parameter, in order (zeros where none reaches it).
pub fn vjp_signature(signature: &Graph, results: &[TensorType]) -> (Graph, Vec<TensorType>) {
    let mut graph = signature.clone();
    let grads =
        graph.params.iter().filter(|p| p.ty.dtype.is_float()).map(|p| p.ty.clone()).collect();
    for (k, ty) in results.iter().enumerate() {
        graph.params.push(GraphParam { name: format!("cotangent{k}"), ty: ty.clone() });
    }
    (graph, grads)
}

/// The label of the first `while` loop of `program` (bodies included): why it cannot be
/// differentiated.
pub fn first_while(program: &Program) -> Option<String> {
    for step in &program.steps {
        if let Step::Loop { spec, body } = step {
            if let LoopKind::While { .. } = spec.kind {
                return Some(spec.label.clone());
            }
            if let Some(l) = first_while(body) {
                return Some(l);
            }
        }
    }
    None
}

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
    /// The loop as errors name it ([`LoopHead::named`]).
    named: String,
}

/// The recorder of a forward run for the reverse pass: each top-level stage's residuals (its
/// gradient's forward half runs instead of the stage), each `for` loop's states and, unless
/// the loop is checkpointed (`checkpoint_all`: every loop is), each trip's residuals.
struct Tapes {
    checkpoint_all: bool,
    /// Per top-level step.
    residuals: Vec<Option<Vec<Tensor>>>,
    tapes: Vec<Option<LoopTape>>,
}

impl<S: Differentiable, R: GradRunner<S>> Recorder<S, R> for Tapes {
    fn stage(
        &mut self,
        step: usize,
        stage: &S,
        args: &[TensorValue<'_>],
        runner: &mut R,
    ) -> Option<Result<Vec<Tensor>, R::Error>> {
        let b = stage.gradient()?;
        Some(runner.run_half(b.forward, args).map(|mut out| {
            let residuals = out.split_off(stage.results().min(out.len()));
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
    ) -> Result<(), R::Error> {
        let state = stored_bytes(init.iter().map(|c| (c.shape(), c.dtype().size_bytes())));
        tape_fits::<R::Error>(&head.named(), state, "its carried values", trips)?;
        let LoopKind::For { checkpoint, .. } = head.kind else {
            return Err(R::Error::internal(format!(
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
                named: head.named(),
            });
        }
        Ok(())
    }

    fn trip(
        &mut self,
        step: usize,
        body: &Plan<S>,
        carried: &[TensorValue<'_>],
        args: &[TensorValue<'_>],
        runner: &mut R,
    ) -> Option<Result<Vec<Tensor>, R::Error>> {
        let tape = self.tapes.get_mut(step)?.as_mut()?;
        tape.saved.push(carried.iter().map(TensorValue::to_tensor).collect());
        // Stored mode with a body of one stage: the trip's residuals too.
        if !tape.keep_residuals {
            return None;
        }
        let b = single_gradient(body)?;
        Some(runner.run_half(b.forward, args).and_then(|mut out| {
            let residuals = out.split_off(tape.carried.min(out.len()));
            if tape.residuals.is_empty() {
                // The first trip tells what each trip stores beside its carried values.
                let all = tape.saved[0].iter().chain(&residuals);
                let trip = stored_bytes(all.map(|t| (t.shape(), t.dtype().size_bytes())));
                let what = "its carried values and residuals";
                tape_fits::<R::Error>(&tape.named, trip, what, tape.trips)?;
            }
            tape.residuals.push(residuals);
            Ok(out)
        }))
    }
}

/// The gradient of a body that is one stage computing exactly its results.
fn single_gradient<S: Differentiable>(body: &Plan<S>) -> Option<Gradient<'_, S::Half>> {
    body.single_stage().and_then(|s| s.gradient())
}

/// The memory a stored trip's tensors take: each tensor's data (allocations round up to 16
/// bytes, plus the allocator's header) and its `Tensor` (shape, strides, pointer), plus the
/// trip's two `Vec`s. A 12-byte state is about 230 bytes per trip.
fn stored_bytes<'a>(tensors: impl Iterator<Item = (&'a [usize], usize)>) -> Option<u64> {
    const HEAP: u64 = 16;
    let per_trip = 2 * std::mem::size_of::<Vec<Tensor>>() as u64 + HEAP;
    tensors.into_iter().try_fold(per_trip, |total, (shape, item)| {
        let data = shape.iter().try_fold(item as u64, |n, &d| n.checked_mul(d as u64))?;
        let data = data.checked_next_multiple_of(HEAP)?;
        total.checked_add(data.checked_add(2 * HEAP + std::mem::size_of::<Tensor>() as u64)?)
    })
}

/// Refuses a tape of `states` stored trips larger than the largest tensor a call may create
/// (`TFN_MAX_TENSOR_BYTES`): before the first trip for the carried states, and again after
/// it once its residuals (in stored mode) are known. `for i in 0..1000000000000` would
/// otherwise store states until the process runs out of memory.
fn tape_fits<E: RunFailure>(
    named: &str,
    trip: Option<u64>,
    what: &str,
    states: usize,
) -> Result<(), E> {
    let limit = crate::bind::max_tensor_bytes().map_err(|e| E::config(e.to_string()))?;
    let total = trip.and_then(|t| t.checked_mul(states as u64));
    if total.is_none_or(|t| t > limit) {
        let each = trip.map_or("more than 2^64".to_string(), |t| t.to_string());
        return Err(E::shape(format!(
            "reverse mode through the loop {} would store {states} trips of {what} (about {each} bytes each, with their bookkeeping), more than the limit of {limit} bytes (TFN_MAX_TENSOR_BYTES)",
            named
        )));
    }
    Ok(())
}

/// The program's results (when `with_values`) and the gradient of `<results, cotangents>`
/// for each real input (`None`: no gradient reaches it).
#[allow(clippy::type_complexity)]
pub fn vjp<S: Differentiable, R: GradRunner<S>>(
    program: &Plan<S>,
    inputs: &[TensorValue<'_>],
    cotangents: &[TensorValue<'_>],
    runner: &mut R,
    with_values: bool,
    checkpoint_all: bool,
) -> Result<(Vec<Tensor>, Vec<Option<Tensor>>), R::Error> {
    let n = program.steps.len();
    let mut tapes =
        Tapes { checkpoint_all, residuals: vec![None; n], tapes: (0..n).map(|_| None).collect() };
    let values = program.forward(inputs, runner, Some(&mut tapes))?;
    let slot = |v| values.slot::<R::Error>(v);
    let results = if with_values {
        program
            .outputs
            .iter()
            .map(|v| slot(*v).map(|t| t.to_tensor()))
            .collect::<Result<Vec<_>, _>>()?
    } else {
        Vec::new()
    };
    // Each cotangent has its result's dtype and shape, checked before the reverse pass, so
    // that a wrong one is named as such (not met in some trip as a step's input).
    for (k, (o, c)) in program.outputs.iter().zip(cotangents).enumerate() {
        let r = slot(*o)?;
        if c.dtype() != r.dtype() {
            return Err(R::Error::input_dtype(format!("cotangent{k}"), r.dtype(), c.dtype()));
        }
        if c.shape() != r.shape() {
            return Err(R::Error::shape(format!(
                "`cotangent{k}` has shape {:?}, but result {k} has shape {:?}",
                c.shape(),
                r.shape()
            )));
        }
    }
    let mut grads: Vec<Option<Tensor>> = vec![None; program.values];
    for (o, c) in program.outputs.iter().zip(cotangents) {
        if slot(*o)?.dtype().is_float() {
            accumulate::<R::Error>(&mut grads[o.index()], c.to_tensor())?;
        }
    }
    for (k, step) in program.steps.iter().enumerate().rev() {
        match step {
            PlanStep::Stage { stage, reads, writes } => {
                let Some(bw) = stage.gradient() else { continue };
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
                        R::Error::internal("a stage's residuals were not recorded".into())
                    })?;
                args.extend(residuals.iter().map(TensorValue::of));
                let out = runner.run_half(bw.backward, &args)?;
                drop(args);
                for (p, g) in bw.differentiated.iter().zip(out) {
                    let target = match program.param_values.get(*p) {
                        Some(v) => *v,
                        None => *reads
                            .get(*p - program.param_values.len())
                            .ok_or_else(|| R::Error::internal(format!("no stage parameter {p}")))?,
                    };
                    accumulate::<R::Error>(&mut grads[target.index()], g)?;
                }
            }
            PlanStep::Loop { head, body, .. } => {
                let tape = tapes.tapes.get(k).and_then(|t| t.as_ref());
                loop_vjp(head, body, &values, tape, &mut grads, runner)?;
            }
        }
    }
    let input_grads = program.param_values.iter().map(|v| grads[v.index()].take()).collect();
    Ok((results, input_grads))
}

/// The reverse pass of one `for` loop: adds the gradients of its inputs to `grads`.
fn loop_vjp<S: Differentiable, R: GradRunner<S>>(
    spec: &LoopHead,
    body: &Plan<S>,
    values: &Values<'_>,
    tape: Option<&LoopTape>,
    grads: &mut [Option<Tensor>],
    runner: &mut R,
) -> Result<(), R::Error> {
    if matches!(spec.kind, LoopKind::While { .. }) {
        return Err(R::Error::internal(format!("the vjp reached the while loop `{}`", spec.label)));
    }
    let Some(tape) = tape else {
        return Err(R::Error::internal(format!("no tape for the loop `{}`", spec.label)));
    };
    let mut g_carried: Vec<Tensor> = Vec::new();
    let mut any = false;
    for (r, init) in spec.results.iter().zip(&spec.carried) {
        let g = grads[r.index()].take();
        any |= g.is_some();
        g_carried.push(match g {
            Some(g) => g,
            None => {
                let v = values.slot::<R::Error>(*init)?;
                zeros(v.dtype(), v.shape())
            }
        });
    }
    if !any || tape.trips == 0 {
        // No gradient reaches the loop's results, or it ran no trip (results = inits).
        if any {
            for (init, g) in spec.carried.iter().zip(g_carried) {
                if values.slot::<R::Error>(*init)?.dtype().is_float() {
                    accumulate::<R::Error>(&mut grads[init.index()], g)?;
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
    let split = single_gradient(body);
    for t in (0..tape.trips).rev() {
        super::run::poll(runner)?;
        let state = tape
            .saved
            .get(t)
            .ok_or_else(|| R::Error::internal(format!("no stored state for trip {t}")))?;
        let residuals = tape.residuals.get(t);
        // A checkpointed trip's residuals, recomputed below (they outlive the arguments).
        let recomputed: Vec<Tensor>;
        let carried: Vec<TensorValue> = state.iter().map(TensorValue::of).collect();
        let mut args =
            trip_inputs::<R::Error>(spec, values, Some(tape.start + t as i64), &carried)?;
        let gb: Vec<Option<Tensor>> = match &split {
            Some(b) => {
                // The body's backward half, from the trip's inputs and residuals (stored, or
                // recomputed now by its forward half: checkpointing).
                let residuals = match residuals {
                    Some(r) => r,
                    None => {
                        let mut out =
                            runner.run_half(b.forward, &args).map_err(|e| in_loop(e, spec, t))?;
                        recomputed = out.split_off(spec.carried.len().min(out.len()));
                        &recomputed
                    }
                };
                let n = args.len();
                args.extend(g_carried.iter().map(TensorValue::of));
                args.extend(residuals.iter().map(TensorValue::of));
                let out = runner.run_half(b.backward, &args).map_err(|e| in_loop(e, spec, t))?;
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
                vjp(body, &args, &cots, runner, false, false).map_err(|e| in_loop(e, spec, t))?.1
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
                accumulate::<R::Error>(acc, g)?;
            }
        }
        for (k, acc) in g_sliced.iter_mut().enumerate() {
            if let Some(g) = gb.next().flatten() {
                if acc.is_none() {
                    let src = values.slot::<R::Error>(spec.sliced[k])?;
                    *acc = Some(zeros(g.dtype(), src.shape()));
                }
                if let Some(a) = acc {
                    // Trip `t` read row `start + t` (its loop index), not row `t`.
                    let row = usize::try_from(tape.start + t as i64)
                        .map_err(|_| R::Error::internal("negative trip index".into()))?;
                    set_row::<R::Error>(a, row, &g)?;
                }
            }
        }
    }
    for (init, g) in spec.carried.iter().zip(g_carried) {
        if values.slot::<R::Error>(*init)?.dtype().is_float() {
            accumulate::<R::Error>(&mut grads[init.index()], g)?;
        }
    }
    for (v, g) in spec.invariants.iter().zip(g_inv) {
        if let Some(g) = g {
            accumulate::<R::Error>(&mut grads[v.index()], g)?;
        }
    }
    for (v, g) in spec.sliced.iter().zip(g_sliced) {
        if let Some(g) = g {
            accumulate::<R::Error>(&mut grads[v.index()], g)?;
        }
    }
    Ok(())
}

// The host-side tensor work of the reverse mode: zeros, and the sum of gradient contributions
// across steps and trips (the only arithmetic the loop runtime does itself; every kernel runs
// compiled).

/// Zeros of a dtype and shape.
pub fn zeros(dtype: DType, shape: &[usize]) -> Tensor {
    let s = IxDyn(shape);
    match dtype {
        DType::Bool => Tensor::Bool(ArrayD::from_elem(s, false)),
        DType::I8 => Tensor::I8(ArrayD::zeros(s)),
        DType::U8 => Tensor::U8(ArrayD::zeros(s)),
        DType::I32 => Tensor::I32(ArrayD::zeros(s)),
        DType::I64 => Tensor::I64(ArrayD::zeros(s)),
        DType::F16 => Tensor::F16(ArrayD::from_elem(s, half::f16::ZERO)),
        DType::BF16 => Tensor::BF16(ArrayD::from_elem(s, half::bf16::ZERO)),
        DType::F32 => Tensor::F32(ArrayD::zeros(s)),
        DType::F64 => Tensor::F64(ArrayD::zeros(s)),
    }
}

/// `acc += g` (or `acc = g`), for gradient contributions of one value.
fn accumulate<E: RunFailure>(acc: &mut Option<Tensor>, g: Tensor) -> Result<(), E> {
    let Some(a) = acc else {
        *acc = Some(g);
        return Ok(());
    };
    if a.shape() != g.shape() {
        return Err(E::internal(format!(
            "gradient contributions of shapes {:?} and {:?}",
            a.shape(),
            g.shape()
        )));
    }
    match (a, &g) {
        (Tensor::F32(a), Tensor::F32(b)) => *a += b,
        (Tensor::F64(a), Tensor::F64(b)) => *a += b,
        (Tensor::F16(a), Tensor::F16(b)) => {
            a.zip_mut_with(b, |x, y| *x = half::f16::from_f32(x.to_f32() + y.to_f32()))
        }
        (Tensor::BF16(a), Tensor::BF16(b)) => {
            a.zip_mut_with(b, |x, y| *x = half::bf16::from_f32(x.to_f32() + y.to_f32()))
        }
        (a, b) => {
            return Err(E::internal(format!(
                "gradient contributions of dtypes {} and {}",
                a.dtype(),
                b.dtype()
            )))
        }
    }
    Ok(())
}

/// `dst[i] = src` along the first axis.
fn set_row<E: RunFailure>(dst: &mut Tensor, i: usize, src: &Tensor) -> Result<(), E> {
    if dst.shape().first().is_none_or(|&rows| i >= rows)
        || dst.shape().get(1..) != Some(src.shape())
    {
        return Err(E::internal(format!(
            "row {i} of a {:?} tensor set from a {:?} one",
            dst.shape(),
            src.shape()
        )));
    }
    macro_rules! set {
        ($($v:ident),*) => {
            match (dst, src) {
                $((Tensor::$v(d), Tensor::$v(s)) => {
                    d.index_axis_mut(Axis(0), i).assign(s);
                    Ok(())
                })*
                (d, s) => Err(E::internal(format!(
                    "a row of {} set from {}",
                    d.dtype(),
                    s.dtype()
                ))),
            }
        };
    }
    set!(Bool, I8, U8, I32, I64, F16, BF16, F32, F64)
}
