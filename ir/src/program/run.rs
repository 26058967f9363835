//! Running a [`Plan`] forward — a [`Program`] whose stage graphs were compiled by someone
//! else — whatever runs the stages: the session (JIT or interpreter) and the runtime of AOT
//! objects (`tfn-rt`) run loops through this one code, parameterised by a [`StageRunner`].
//!
//! Values live in one table numbered like the outer graph's values; the call's tensors are
//! borrowed, never copied. A `for` binds its bounds from the call's sizes, checks that every
//! stacked input `w` has a row for each trip, and passes the body `w`'s row `i` as a view. A
//! carried value must keep its shape from trip to trip (its dtype and rank are checked when the
//! function is compiled). A `while` reads its condition before each trip and fails past its
//! `at most`. A `for` whose body is one stage computing exactly its carried values writes its
//! trips into two sets of buffers in turn, so no trip allocates.
//!
//! A [`Recorder`] (the reverse mode, [`super::vjp`]) sees the top level's stages and `for`
//! trips and may run them itself with the run's runner, keeping what the backward pass reads.

use super::{LoopKind, LoopSpec, Program, Step};
use crate::bind::BindError;
use crate::graph::{Graph, ValueId};
use crate::lower::CallRegion;
use crate::shape::Dim;
use crate::{Tensor, TensorValue};

/// A loop as running it needs it: a [`LoopSpec`] without its lowered body (the body is the
/// plan's), with the stacked inputs' names for errors.
#[derive(Clone, Debug, PartialEq)]
pub struct LoopHead {
    /// How errors name the loop: `for l in 0..size(w, 0)`.
    pub label: String,
    /// Where the loop is written (`nn.tfn:12:5`), when known.
    pub at: Option<String>,
    pub kind: LoopKind,
    /// The carried values' names, and their values before the first trip.
    pub carried_names: Vec<String>,
    pub carried: Vec<ValueId>,
    /// Outer values the body reads unchanged on every trip.
    pub invariants: Vec<ValueId>,
    /// Outer values the body reads row `i` of in trip `i` (a view), and their names.
    pub sliced: Vec<ValueId>,
    pub sliced_names: Vec<String>,
    /// The values that receive the carried values after the last trip.
    pub results: Vec<ValueId>,
}

impl LoopHead {
    /// The head of a lowered loop.
    pub fn of(spec: &LoopSpec) -> LoopHead {
        let first_sliced = spec.first_carried() + spec.carried.len() + spec.invariants.len();
        let sliced_names = (0..spec.sliced.len())
            .map(|k| {
                spec.body
                    .graph
                    .params
                    .get(first_sliced + k)
                    .map_or_else(|| format!("stacked input {k}"), |p| p.name.clone())
            })
            .collect();
        LoopHead {
            label: spec.label.clone(),
            at: spec.at.clone(),
            kind: spec.kind.clone(),
            carried_names: spec.carried_names.clone(),
            carried: spec.carried.clone(),
            invariants: spec.invariants.clone(),
            sliced: spec.sliced.clone(),
            sliced_names,
            results: spec.results.clone(),
        }
    }

    /// The loop as run-time errors name it: `` `for l in 0..n` (nn.tfn:12:5) ``.
    pub fn named(&self) -> String {
        match &self.at {
            Some(at) => format!("`{}` ({at})", self.label),
            None => format!("`{}`", self.label),
        }
    }

    /// The body's parameter index of the first carried value (after the trip index).
    pub fn first_carried(&self) -> usize {
        usize::from(matches!(self.kind, LoopKind::For { .. }))
    }
}

/// A [`Program`] whose stage graphs are compiled into `S`s.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan<S> {
    /// The real parameters and symbol table: binding them gives every size.
    pub signature: Graph,
    /// The value of each real parameter (its node), in order.
    pub param_values: Vec<ValueId>,
    pub steps: Vec<PlanStep<S>>,
    pub outputs: Vec<ValueId>,
    /// Size of the value table.
    pub values: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub enum PlanStep<S> {
    /// A stage: parameters `0..inputs` are the call's tensors, then `reads`; outputs `writes`.
    Stage { stage: S, reads: Vec<ValueId>, writes: Vec<ValueId> },
    /// A loop, numbered among every loop of the function in program order.
    Loop { head: LoopHead, body: Box<Plan<S>>, number: usize },
}

impl<S> Plan<S> {
    /// Compiles every stage graph of `program` (with its call regions) with `compile`, in
    /// program order (a loop's body right after its place in the outer steps).
    pub fn compile<E>(
        program: &Program,
        compile: &mut impl FnMut(&Graph, &[CallRegion]) -> Result<S, E>,
    ) -> Result<Plan<S>, E> {
        Self::compile_numbered(program, compile, &mut 0)
    }

    fn compile_numbered<E>(
        program: &Program,
        compile: &mut impl FnMut(&Graph, &[CallRegion]) -> Result<S, E>,
        loops: &mut usize,
    ) -> Result<Plan<S>, E> {
        let mut steps = Vec::with_capacity(program.steps.len());
        for step in &program.steps {
            steps.push(match step {
                Step::Graph { graph, regions, reads, writes } => PlanStep::Stage {
                    stage: compile(graph, regions)?,
                    reads: reads.clone(),
                    writes: writes.clone(),
                },
                Step::Loop { spec, body } => {
                    let number = *loops;
                    *loops += 1;
                    let body = Self::compile_numbered(body, compile, loops)?;
                    PlanStep::Loop { head: LoopHead::of(spec), body: Box::new(body), number }
                }
            });
        }
        Ok(Plan {
            signature: program.signature.clone(),
            param_values: program.param_values.clone(),
            steps,
            outputs: program.outputs.clone(),
            values: program.values,
        })
    }

    /// The same plan with every stage mapped through `f` (in program order).
    pub fn try_map<T, E>(&self, f: &mut impl FnMut(&S) -> Result<T, E>) -> Result<Plan<T>, E> {
        let steps = self
            .steps
            .iter()
            .map(|s| {
                Ok(match s {
                    PlanStep::Stage { stage, reads, writes } => PlanStep::Stage {
                        stage: f(stage)?,
                        reads: reads.clone(),
                        writes: writes.clone(),
                    },
                    PlanStep::Loop { head, body, number } => PlanStep::Loop {
                        head: head.clone(),
                        body: Box::new(body.try_map(f)?),
                        number: *number,
                    },
                })
            })
            .collect::<Result<_, E>>()?;
        Ok(Plan {
            signature: self.signature.clone(),
            param_values: self.param_values.clone(),
            steps,
            outputs: self.outputs.clone(),
            values: self.values,
        })
    }

    /// Every stage, in program order.
    pub fn stages(&self) -> Vec<&S> {
        let mut out = Vec::new();
        for s in &self.steps {
            match s {
                PlanStep::Stage { stage, .. } => out.push(stage),
                PlanStep::Loop { body, .. } => out.extend(body.stages()),
            }
        }
        out
    }

    /// Number of real parameters.
    pub fn inputs(&self) -> usize {
        self.param_values.len()
    }

    /// The one stage of a body without loops that computes exactly its results.
    pub fn single_stage(&self) -> Option<&S> {
        match self.steps.as_slice() {
            [PlanStep::Stage { stage, reads, writes }]
                if reads.is_empty() && *writes == self.outputs =>
            {
                Some(stage)
            }
            _ => None,
        }
    }

    /// The sizes of a call: every symbol of the signature.
    pub fn sizes(&self, inputs: &[TensorValue<'_>]) -> Result<Vec<usize>, BindError> {
        let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
        crate::bind::bind_sizes(&self.signature, &shapes)
    }
}

/// The failures of a program run, made by the caller's error type.
pub trait RunFailure: Sized {
    /// A shape that does not fit (a stacked input too short, a carried value changing shape).
    fn shape(message: String) -> Self;
    /// A failure of the values (a `while` past its `at most`).
    fn runtime(message: String) -> Self;
    /// A bug in tfn.
    fn internal(message: String) -> Self;
    /// The call's shapes do not bind the signature's sizes.
    fn bind(e: BindError) -> Self;
    /// The same failure, located in a trip of a loop (`at`: "\n  in trip 3 of `for ...`"):
    /// appended to shape and run-time messages.
    fn in_trip(self, at: &str) -> Self;
    /// A configuration that cannot be read (`TFN_MAX_TENSOR_BYTES`).
    fn config(message: String) -> Self {
        Self::internal(message)
    }
    /// The runner asked to stop between two trips ([`StageRunner::interrupted`]).
    fn interrupted() -> Self {
        Self::runtime("interrupted".into())
    }
    /// An input (a cotangent) of another dtype than its parameter's.
    fn input_dtype(param: String, expected: crate::DType, got: crate::DType) -> Self {
        Self::shape(format!("`{param}` must have dtype {expected}, got {got}"))
    }
}

/// What runs the stages of a [`Plan<S>`].
pub trait StageRunner<S> {
    type Error: RunFailure;
    /// Runs one stage on its arguments; returns its results.
    fn run(&mut self, stage: &S, args: &[TensorValue<'_>]) -> Result<Vec<Tensor>, Self::Error>;
    /// Runs one stage into `outs` (tensors of the results' dtypes); `Ok(false)`, with nothing
    /// guaranteed about `outs`, when a result does not have its buffer's shape.
    fn run_into(
        &mut self,
        stage: &S,
        args: &[TensorValue<'_>],
        outs: &mut [Tensor],
    ) -> Result<bool, Self::Error>;
    /// Loop `number` ran `trips` more trips (profiling).
    fn trips(&mut self, number: usize, trips: u64) {
        let _ = (number, trips);
    }
    /// Polled before every trip of every loop: `true` ends the run with
    /// [`RunFailure::interrupted`] (Ctrl-C from Python).
    fn interrupted(&mut self) -> bool {
        false
    }
}

/// Ends the run if the runner asks to stop (polled before each trip).
pub(crate) fn poll<S, R: StageRunner<S>>(runner: &mut R) -> Result<(), R::Error> {
    if runner.interrupted() {
        return Err(R::Error::interrupted());
    }
    Ok(())
}

/// Hooks of a recording run (the reverse mode, [`super::vjp`]) into the top level of a
/// program: each may run the step itself with the run's `runner` (`Some`) or leave it to the
/// runner (`None`).
pub trait Recorder<S, R: StageRunner<S>> {
    /// Top-level step `step`, a stage.
    fn stage(
        &mut self,
        step: usize,
        stage: &S,
        args: &[TensorValue<'_>],
        runner: &mut R,
    ) -> Option<Result<Vec<Tensor>, R::Error>>;
    /// Top-level step `step`, a `for` loop of `trips` trips from `start` starting from `init`.
    fn for_loop(
        &mut self,
        step: usize,
        head: &LoopHead,
        init: &[TensorValue<'_>],
        start: i64,
        trips: usize,
    ) -> Result<(), R::Error>;
    /// Trip `trip` of the `for` loop at top-level step `step`, with the body's arguments
    /// (`carried`: the carried values it starts from).
    fn trip(
        &mut self,
        step: usize,
        body: &Plan<S>,
        carried: &[TensorValue<'_>],
        args: &[TensorValue<'_>],
        runner: &mut R,
    ) -> Option<Result<Vec<Tensor>, R::Error>>;
}

/// The value table of a run.
pub struct Values<'a> {
    pub slots: Vec<Option<TensorValue<'a>>>,
}

impl<'a> Values<'a> {
    /// Value `v`, which an earlier step computed.
    pub fn slot<E: RunFailure>(&self, v: ValueId) -> Result<&TensorValue<'a>, E> {
        self.slots
            .get(v.index())
            .and_then(|s| s.as_ref())
            .ok_or_else(|| E::internal(format!("the loop program reads {v} before it is computed")))
    }

    fn set(&mut self, v: ValueId, t: Tensor) {
        if let Some(s) = self.slots.get_mut(v.index()) {
            *s = Some(TensorValue::from(t));
        }
    }
}

impl<S> Plan<S> {
    /// Runs the plan; returns its results.
    pub fn run<R: StageRunner<S>>(
        &self,
        inputs: &[TensorValue<'_>],
        runner: &mut R,
    ) -> Result<Vec<Tensor>, R::Error> {
        // A body without loops is one stage computing exactly the results: call it directly
        // (the common case, once per trip).
        if let Some(stage) = self.single_stage().filter(|_| inputs.len() == self.inputs()) {
            return runner.run(stage, inputs);
        }
        let values = self.forward(inputs, runner, None)?;
        self.outputs.iter().map(|v| values.slot(*v).map(TensorValue::to_tensor)).collect()
    }

    /// Runs every step, keeping every value; `recorder` sees the top level's steps.
    pub fn forward<'a, R: StageRunner<S>>(
        &self,
        inputs: &'a [TensorValue<'_>],
        runner: &mut R,
        mut recorder: Option<&mut dyn Recorder<S, R>>,
    ) -> Result<Values<'a>, R::Error> {
        if inputs.len() != self.inputs() {
            return Err(R::Error::internal(format!(
                "a program of {} inputs called with {}",
                self.inputs(),
                inputs.len()
            )));
        }
        let mut values = Values { slots: vec![None; self.values] };
        for (p, v) in self.param_values.iter().enumerate() {
            if let Some(s) = values.slots.get_mut(v.index()) {
                *s = Some(inputs[p].view());
            }
        }
        let mut sizes: Option<Vec<usize>> = None;
        for (k, step) in self.steps.iter().enumerate() {
            match step {
                PlanStep::Stage { stage, reads, writes } => {
                    let mut args: Vec<TensorValue> = inputs.iter().map(|t| t.view()).collect();
                    for r in reads {
                        args.push(values.slot::<R::Error>(*r)?.view());
                    }
                    let recorded = match recorder.as_mut() {
                        Some(r) => r.stage(k, stage, &args, runner),
                        None => None,
                    };
                    let out = match recorded {
                        Some(out) => out?,
                        None => runner.run(stage, &args)?,
                    };
                    drop(args);
                    for (w, t) in writes.iter().zip(out) {
                        values.set(*w, t);
                    }
                }
                PlanStep::Loop { head, body, number } => {
                    if sizes.is_none() && matches!(head.kind, LoopKind::For { .. }) {
                        sizes = Some(self.sizes(inputs).map_err(R::Error::bind)?);
                    }
                    let recorder =
                        recorder.as_mut().map(|r| (k, &mut **r as &mut dyn Recorder<S, R>));
                    let ctx = LoopRun { values: &values, sizes: sizes.as_deref(), number: *number };
                    let results = run_loop(head, body, ctx, runner, recorder)?;
                    for (r, t) in head.results.iter().zip(results) {
                        values.set(*r, t);
                    }
                }
            }
        }
        Ok(values)
    }
}

/// A size of the outer graph, given the call's sizes.
fn size_of<E: RunFailure>(d: Dim, sizes: Option<&[usize]>) -> Result<usize, E> {
    match d {
        Dim::Const(c) => usize::try_from(c).map_err(|_| E::shape(format!("size {c} too large"))),
        Dim::Sym(s) => sizes
            .and_then(|z| z.get(s.0 as usize).copied())
            .ok_or_else(|| E::internal(format!("loop bound s{} is not bound", s.0))),
    }
}

/// A `for` loop's first index and trip count; checks that each stacked input has a row for
/// every trip.
pub fn for_trips<E: RunFailure>(
    head: &LoopHead,
    values: &Values<'_>,
    sizes: Option<&[usize]>,
) -> Result<(i64, usize), E> {
    let LoopKind::For { start, end, .. } = head.kind else {
        return Err(E::internal("for_trips of a while loop".into()));
    };
    let start = size_of::<E>(start, sizes)?;
    let end = size_of::<E>(end, sizes)?;
    let trips = end.saturating_sub(start);
    if trips as u64 > super::MAX_FOR_TRIPS {
        return Err(E::shape(format!(
            "the loop {} would run {trips} trips; a `for` runs at most {}",
            head.named(),
            super::MAX_FOR_TRIPS
        )));
    }
    if trips > 0 {
        for (k, v) in head.sliced.iter().enumerate() {
            let rows = values.slot::<E>(*v)?.shape().first().copied().unwrap_or(0);
            if end > rows {
                let name = head
                    .sliced_names
                    .get(k)
                    .map_or_else(|| "a stacked input".to_string(), |n| format!("`{n}`"));
                return Err(E::shape(format!(
                    "{name}: the loop {} runs to index {} but the tensor has {rows} row(s) along its first axis",
                    head.named(),
                    end - 1
                )));
            }
        }
    }
    let start = i64::try_from(start).map_err(|_| E::shape(format!("size {start} too large")))?;
    Ok((start, trips))
}

/// Locates a failure in trip `trip` of a loop.
pub fn in_loop<E: RunFailure>(e: E, head: &LoopHead, trip: usize) -> E {
    e.in_trip(&format!("\n  in trip {trip} of {}", head.named()))
}

/// Checks a trip's carried results against the values it started from.
pub fn check_carried<E: RunFailure>(
    head: &LoopHead,
    before: &[TensorValue<'_>],
    after: &[Tensor],
    trip: usize,
) -> Result<(), E> {
    for ((name, b), a) in head.carried_names.iter().zip(before).zip(after) {
        if b.shape() != a.shape() {
            return Err(E::shape(format!(
                "the loop {} changes the shape of `{name}` from {:?} to {:?} in trip {trip}; a loop-carried value keeps its shape",
                head.named(),
                b.shape(),
                a.shape()
            )));
        }
    }
    Ok(())
}

/// The body's inputs for one trip: the trip index (a `for`), the carried values, the
/// invariants, row `i` of each stacked input.
pub fn trip_inputs<'b, E: RunFailure>(
    head: &LoopHead,
    values: &'b Values<'_>,
    trip_index: Option<i64>,
    carried: &'b [TensorValue<'_>],
) -> Result<Vec<TensorValue<'b>>, E> {
    let mut args: Vec<TensorValue<'b>> =
        Vec::with_capacity(1 + carried.len() + head.invariants.len() + head.sliced.len());
    if let Some(i) = trip_index {
        args.push(TensorValue::index(i));
    }
    args.extend(carried.iter().map(|c| c.view()));
    for v in &head.invariants {
        args.push(values.slot::<E>(*v)?.view());
    }
    for v in &head.sliced {
        let i = usize::try_from(trip_index.unwrap_or(0))
            .map_err(|_| E::internal("negative trip index".into()))?;
        let row = values.slot::<E>(*v)?.row(i);
        args.push(row.ok_or_else(|| E::internal(format!("row {i} of {v} is out of range")))?);
    }
    Ok(args)
}

/// What a loop runs in: the values computed so far, the call's sizes, the loop's number.
#[derive(Clone, Copy)]
struct LoopRun<'r, 'a> {
    values: &'r Values<'a>,
    sizes: Option<&'r [usize]>,
    number: usize,
}

/// Runs one loop; returns its results.
fn run_loop<S, R: StageRunner<S>>(
    head: &LoopHead,
    body: &Plan<S>,
    ctx: LoopRun<'_, '_>,
    runner: &mut R,
    mut recorder: Option<(usize, &mut dyn Recorder<S, R>)>,
) -> Result<Vec<Tensor>, R::Error> {
    let LoopRun { values, sizes, number } = ctx;
    let init: Vec<TensorValue> = head
        .carried
        .iter()
        .map(|v| values.slot::<R::Error>(*v).map(|t| t.view()))
        .collect::<Result<_, _>>()?;
    match head.kind {
        LoopKind::For { .. } => {
            let (start, trips) = for_trips::<R::Error>(head, values, sizes)?;
            if let Some((step, r)) = recorder.as_mut() {
                r.for_loop(*step, head, &init, start, trips)?;
            }
            runner.trips(number, trips as u64);
            if recorder.is_none() && trips > 1 {
                if let Some(out) = run_in_place(head, body, values, &init, (start, trips), runner)?
                {
                    return Ok(out);
                }
            }
            let mut cur: Option<Vec<Tensor>> = None;
            for t in 0..trips {
                poll(runner)?;
                let carried: Vec<TensorValue> = match &cur {
                    Some(c) => c.iter().map(TensorValue::of).collect(),
                    None => init.iter().map(|c| c.view()).collect(),
                };
                let out = {
                    let args =
                        trip_inputs::<R::Error>(head, values, Some(start + t as i64), &carried)?;
                    let recorded = match recorder.as_mut() {
                        Some((step, r)) => r.trip(*step, body, &carried, &args, runner),
                        None => None,
                    };
                    match recorded {
                        Some(out) => out,
                        None => body.run(&args, runner),
                    }
                    .map_err(|e| in_loop(e, head, t))?
                };
                check_carried::<R::Error>(head, &carried, &out, t)?;
                cur = Some(out);
            }
            Ok(match cur {
                Some(c) => c,
                None => init.iter().map(TensorValue::to_tensor).collect(),
            })
        }
        LoopKind::While { cond, max_trips } => {
            let not_bool = || R::Error::internal("a while condition is not a bool[]".into());
            let mut go = values.slot::<R::Error>(cond)?.truth().ok_or_else(not_bool)?;
            let mut cur: Vec<Tensor> = init.iter().map(TensorValue::to_tensor).collect();
            let mut trips = 0u64;
            while go {
                poll(runner)?;
                if trips == max_trips {
                    return Err(R::Error::runtime(format!(
                        "the loop {} did not finish within its {max_trips} trip(s) (`at most {max_trips}`)",
                        head.named()
                    )));
                }
                let carried: Vec<TensorValue> = cur.iter().map(TensorValue::of).collect();
                let mut out = {
                    let args = trip_inputs::<R::Error>(head, values, None, &carried)?;
                    body.run(&args, runner).map_err(|e| in_loop(e, head, trips as usize))?
                };
                let c = out.pop().ok_or_else(|| {
                    R::Error::internal("a while body without its condition".into())
                })?;
                check_carried::<R::Error>(head, &carried, &out, trips as usize)?;
                go = TensorValue::of(&c).truth().ok_or_else(not_bool)?;
                cur = out;
                trips += 1;
                runner.trips(number, 1);
            }
            Ok(cur)
        }
    }
}

/// A `for` loop whose body is one stage computing exactly the carried values: the trips write
/// into two sets of buffers in turn (trip `t` reads one and writes the other), so no trip
/// allocates its results. `None` when the body is not of that form.
fn run_in_place<S, R: StageRunner<S>>(
    head: &LoopHead,
    body: &Plan<S>,
    values: &Values<'_>,
    init: &[TensorValue<'_>],
    (start, trips): (i64, usize),
    runner: &mut R,
) -> Result<Option<Vec<Tensor>>, R::Error> {
    let Some(stage) = body.single_stage() else { return Ok(None) };
    let mut a: Vec<Tensor> = init.iter().map(TensorValue::to_tensor).collect();
    let mut b: Vec<Tensor> = a.clone();
    for t in 0..trips {
        poll(runner)?;
        {
            let carried: Vec<TensorValue> = a.iter().map(TensorValue::of).collect();
            let args = trip_inputs::<R::Error>(head, values, Some(start + t as i64), &carried)?;
            let fits = runner.run_into(stage, &args, &mut b).map_err(|e| in_loop(e, head, t))?;
            if !fits {
                // The body's result does not fit the buffer: a carried value changed shape.
                let out = body.run(&args, runner).map_err(|e| in_loop(e, head, t))?;
                check_carried::<R::Error>(head, &carried, &out, t)?;
                return Err(R::Error::internal(format!(
                    "the loop `{}` could not write its carried values",
                    head.label
                )));
            }
        }
        std::mem::swap(&mut a, &mut b);
    }
    Ok(Some(a))
}
