//! Call signatures (the cache key) and [`Prepared`] functions: one instantiated, optimised
//! and compiled function per signature.

use crate::error::Error;
use crate::session::{gather_inputs, source_map, Backend, SessionOptions};
use crate::value::{OutputMut, TensorValue, Value};
use smallvec::SmallVec;
use tfn_backend::{CompiledFunction, JitCompiler, RunError, TensorView, TensorViewMut};
use tfn_ir::interp::ExternKernels;
use tfn_ir::lower::ParamSource;
use tfn_ir::{Attr, DType, Graph, Library, Tensor};
use tfn_passes::optimize::RuleSet;
use tfn_passes::pipeline::{plan, PipelineOptions};

/// What a compiled function is specialised on, per argument: dtype, rank, which axes have
/// size 1, contiguity — or the attribute value. Never the sizes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum ArgKey {
    Tensor { dtype: DType, rank: u8, ones: u64, contiguous: bool },
    TensorList(Vec<ArgKey>),
    Attr(Attr),
}

impl ArgKey {
    fn tensor(t: &TensorValue) -> ArgKey {
        let ones = t.shape().iter().enumerate().fold(0u64, |m, (i, &d)| {
            if d == 1 && i < 64 {
                m | (1 << i)
            } else {
                m
            }
        });
        ArgKey::Tensor {
            dtype: t.dtype(),
            rank: t.shape().len().min(255) as u8,
            ones,
            contiguous: t.is_standard_layout(),
        }
    }

    /// Whether `v` has this signature (no allocation: this is the cache-hit path).
    fn matches(&self, v: &Value) -> bool {
        match (self, v) {
            (ArgKey::Tensor { .. }, Value::Tensor(t)) => self.matches_tensor(t),
            (ArgKey::TensorList(keys), Value::TensorList(ts)) => {
                keys.len() == ts.len() && keys.iter().zip(ts).all(|(k, t)| k.matches_tensor(t))
            }
            (ArgKey::Attr(a), Value::Attr(b)) => a == b,
            _ => false,
        }
    }

    fn matches_tensor(&self, t: &TensorValue) -> bool {
        let ArgKey::Tensor { dtype, rank, ones, contiguous } = self else { return false };
        let shape = t.shape();
        *dtype == t.dtype()
            && usize::from(*rank) == shape.len()
            && shape.iter().enumerate().all(|(i, &d)| (d == 1) == (i < 64 && ones >> i & 1 == 1))
            && *contiguous == t.is_standard_layout()
    }

    fn of(v: &Value) -> ArgKey {
        match v {
            Value::Tensor(t) => ArgKey::tensor(t),
            Value::TensorList(ts) => ArgKey::TensorList(ts.iter().map(ArgKey::tensor).collect()),
            Value::Attr(a) => ArgKey::Attr(a.clone()),
        }
    }
}

/// What a cached entry computes for its function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum CallKind {
    /// The function's results.
    Call,
    /// The vector-Jacobian product: gradients of `<results, cotangents>`.
    Vjp,
    /// The results, then the vector-Jacobian product, from one graph.
    ValueAndVjp,
}

/// The cache key of a call.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct CallKey {
    kind: CallKind,
    name: String,
    positional: Vec<ArgKey>,
    keywords: Vec<(String, ArgKey)>,
}

impl CallKey {
    pub(crate) fn new(
        kind: CallKind,
        name: &str,
        args: &[Value],
        kwargs: &[(&str, Value)],
    ) -> CallKey {
        CallKey {
            kind,
            name: name.to_string(),
            positional: args.iter().map(ArgKey::of).collect(),
            keywords: kwargs.iter().map(|(k, v)| (k.to_string(), ArgKey::of(v))).collect(),
        }
    }
}

impl CallKey {
    /// Whether a call has this key, without building one.
    pub(crate) fn matches(&self, kind: CallKind, args: &[Value], kwargs: &[(&str, Value)]) -> bool {
        self.kind == kind
            && self.positional.len() == args.len()
            && self.keywords.len() == kwargs.len()
            && self.positional.iter().zip(args).all(|(k, v)| k.matches(v))
            && self.keywords.iter().zip(kwargs).all(|((kn, k), (n, v))| kn == n && k.matches(v))
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }
}

impl std::fmt::Display for CallKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let prefix = match self.kind {
            CallKind::Call => "",
            CallKind::Vjp => "vjp ",
            CallKind::ValueAndVjp => "value_and_vjp ",
        };
        write!(f, "{prefix}{}(", self.name)?;
        let show = |k: &ArgKey| -> String {
            match k {
                ArgKey::Tensor { dtype, rank, ones, contiguous } => {
                    let dims: Vec<&str> =
                        (0..*rank).map(|i| if ones >> i & 1 == 1 { "1" } else { "?" }).collect();
                    let layout = if *contiguous { "" } else { " strided" };
                    format!("{dtype}[{}]{layout}", dims.join(", "))
                }
                ArgKey::TensorList(items) => format!("Tensor[{}]", items.len()),
                ArgKey::Attr(a) => a.to_string(),
            }
        };
        let mut parts: Vec<String> = self.positional.iter().map(show).collect();
        parts.extend(self.keywords.iter().map(|(k, v)| format!("{k}={}", show(v))));
        write!(f, "{})", parts.join(", "))
    }
}

/// How a prepared function runs.
enum Executor {
    /// The reference interpreter, op by op.
    Interp,
    /// Fused Cranelift kernels.
    Jit(Box<CompiledFunction>),
    /// A function with loops: its stages and loop bodies, each prepared on its own
    /// (`crate::program`).
    Program { program: Box<crate::program::CompiledProgram>, kind: CallKind, checkpoint: bool },
}

/// One function instantiated for one signature, optimised and compiled, ready to run.
pub(crate) struct Prepared {
    /// The graph that runs (after optimisation).
    pub(crate) graph: Graph,
    /// Where each graph parameter comes from in the call, for the first `params.len()`
    /// parameters; any further parameters are the cotangents of a vjp, in order.
    pub(crate) params: Vec<ParamSource>,
    /// The signature this was compiled for.
    pub(crate) key: CallKey,
    /// What the instance assumes about derived sizes being 1 (usually nothing): a call with
    /// this signature may run it only if they hold for its shapes.
    pub(crate) guards: tfn_ir::SizeGuards,
    executor: Executor,
    /// What degraded while compiling it (empty unless tfn has a bug).
    pub(crate) fallbacks: Fallbacks,
}

/// Compilation failures that were survived: the function runs, but slower than it should.
#[derive(Clone, Debug, Default)]
pub(crate) struct Fallbacks {
    /// Why the optimiser failed, if it did.
    pub(crate) optimizer: Option<String>,
    /// Kernels the code generator rejected (they run in the interpreter), with the reason.
    pub(crate) kernels: Vec<(usize, String)>,
}

impl Prepared {
    /// Runs the pass pipeline on `graph` (`tfn_passes::pipeline::plan`: optimise, fuse,
    /// verifying between passes in debug builds) and, with a JIT compiler, compiles it.
    ///
    /// Failures are loud: an optimiser failure (unoptimised graph runs) or a kernel the code
    /// generator rejects (that kernel runs in the interpreter) is recorded in
    /// [`Prepared::fallbacks`], logged under `TFN_LOG_COMPILES`, and an error when
    /// `options.strict`.
    pub(crate) fn compile(
        graph: Graph,
        params: Vec<ParamSource>,
        rules: &RuleSet,
        options: &SessionOptions,
        jit: Option<&JitCompiler>,
        key: CallKey,
    ) -> Result<Prepared, Error> {
        let log = std::env::var_os("TFN_LOG_COMPILES").is_some_and(|v| v != "0");
        let pipeline = PipelineOptions {
            optimize: options.optimize,
            strict: options.strict,
            ..PipelineOptions::default()
        };
        let started = std::time::Instant::now();
        let planned = plan(graph, rules, &pipeline)
            .map_err(|e| Error::Internal(format!("compiling {key}: {e}")))?;
        let planned_at = started.elapsed();
        let mut fallbacks = Fallbacks::default();
        if let Some(why) = &planned.optimizer_fallback {
            if log {
                tfn_ir::tfn_log!(
                    "tfn: FALLBACK {key}: the optimiser failed, running unoptimised: {why}"
                );
            }
            fallbacks.optimizer = Some(why.clone());
        }
        let executor = match (options.backend, jit) {
            (Backend::Interp, _) => {
                if log {
                    tfn_ir::tfn_log!("tfn: compiled {key} for the interpreter");
                }
                Executor::Interp
            }
            (Backend::Jit, Some(jit)) => {
                let code_before = jit.code_stats();
                let loaded_before = tfn_backend::code_cache::loaded();
                let compiled = jit
                    .compile_fused(&planned.graph, planned.fused)
                    .map_err(|e| Error::Internal(format!("code generation failed: {e}")))?;
                fallbacks.kernels = compiled.interpreted_kernels();
                if options.strict && !fallbacks.kernels.is_empty() {
                    let list: Vec<String> = fallbacks
                        .kernels
                        .iter()
                        .map(|(i, why)| format!("kernel {i}: {why}"))
                        .collect();
                    return Err(Error::Internal(format!(
                        "compiling {key}: the code generator rejected {} kernel(s) (strict mode): {}",
                        list.len(),
                        list.join("; ")
                    )));
                }
                if log {
                    let reference = compiled.reference_kernels();
                    tfn_ir::tfn_log!(
                        "tfn: compiled {key}: {} kernel(s), {} reference, {} FALLBACK to the interpreter{}",
                        compiled.fused().kernels.len(),
                        reference.len(),
                        fallbacks.kernels.len(),
                        fallbacks
                            .kernels
                            .iter()
                            .map(|(i, why)| format!("\n  FALLBACK kernel {i}: {why}"))
                            .collect::<String>()
                    );
                    let code_after = jit.code_stats();
                    let loaded_after = tfn_backend::code_cache::loaded();
                    tfn_ir::tfn_log!(
                        "tfn:   optimise + fuse {:.1} ms, code generation {:.1} ms \
                         ({} loop kernels compiled, {} of them loaded from the code cache; \
                         {} identical ones reused)",
                        planned_at.as_secs_f64() * 1e3,
                        (started.elapsed() - planned_at).as_secs_f64() * 1e3,
                        code_after.0 - code_before.0,
                        loaded_after - loaded_before,
                        code_after.1 - code_before.1
                    );
                }
                Executor::Jit(Box::new(compiled))
            }
            (Backend::Jit, None) => {
                return Err(Error::Internal("the JIT is not available on this machine".into()))
            }
        };
        Ok(Prepared {
            graph: planned.graph,
            params,
            key,
            guards: Default::default(),
            executor,
            fallbacks,
        })
    }

    /// Prepares a function with loops: its program's stages and bodies, each compiled like a
    /// function of its own (`crate::program`).
    pub(crate) fn compile_program(
        instance: &tfn_ir::Instance,
        kind: CallKind,
        library: &tfn_ir::Library,
        rules: &RuleSet,
        options: &SessionOptions,
        jit: Option<&JitCompiler>,
        key: CallKey,
    ) -> Result<Prepared, Error> {
        let program =
            instance.program().map_err(|e| Error::Internal(format!("compiling {key}: {e}")))?;
        let gradients = kind != CallKind::Call;
        if gradients {
            if let Some(label) = crate::program::refuse_while(&program) {
                let d = tfn_ir::Diagnostic::error(
                    "E0805",
                    format!("`{}` cannot be differentiated: it runs the `while` loop `{label}`, whose trip count depends on the values", instance.function),
                )
                .with_help("write it as a `for` loop over a bound known when it starts");
                return Err(Error::from_diagnostics(
                    crate::error::DiagKind::Call,
                    vec![d],
                    &library.sources,
                ));
            }
        }
        let compiler =
            crate::program::Compiler { library, rules, options, jit, key: &key, gradients };
        let compiled = crate::program::compile(&program, &compiler)?;
        let fallbacks = crate::program::fallbacks(&compiled);
        if options.strict && (!fallbacks.kernels.is_empty() || fallbacks.optimizer.is_some()) {
            return Err(Error::Internal(format!(
                "compiling {key}: a step of the loop program degraded (strict mode)"
            )));
        }
        // The signature: the real parameters, then (for a vjp) one cotangent per result.
        let graph = if gradients {
            let results: Vec<_> =
                program.outputs.iter().map(|o| instance.graph.ty(*o).clone()).collect();
            tfn_ir::program::vjp::vjp_signature(&program.signature, &results).0
        } else {
            program.signature.clone()
        };
        Ok(Prepared {
            graph,
            params: instance.params.clone(),
            key,
            guards: Default::default(),
            executor: Executor::Program {
                program: Box::new(compiled),
                kind,
                checkpoint: options.checkpoint_loops,
            },
            fallbacks,
        })
    }

    /// Runs a call on its arguments (a [`CallKind::Call`]): the JIT reads the tensor
    /// arguments in place, with no intermediate list of inputs on the heap.
    pub(crate) fn call(
        &self,
        args: &[Value],
        kwargs: &[(&str, Value)],
        externs: &dyn ExternKernels,
    ) -> Result<Vec<Tensor>, Error> {
        match &self.executor {
            Executor::Jit(f) => {
                let views = self.jit_views(args, kwargs)?;
                f.run_with_externs(&views, externs).map_err(run_error)
            }
            Executor::Interp | Executor::Program { .. } => {
                let inputs = gather_inputs(self, args, kwargs, &[])?;
                self.run(&inputs, externs)
            }
        }
    }

    /// [`Self::call`] writing into caller-provided outputs.
    pub(crate) fn call_into(
        &self,
        args: &[Value],
        kwargs: &[(&str, Value)],
        outputs: &mut [OutputMut],
        externs: &dyn ExternKernels,
    ) -> Result<(), Error> {
        match &self.executor {
            Executor::Jit(f) => {
                let views = self.jit_views(args, kwargs)?;
                let mut outs: SmallVec<[TensorViewMut; 2]> =
                    outputs.iter_mut().map(OutputMut::reborrow).collect();
                f.run_into_with_externs(&views, &mut outs, externs).map_err(run_error)
            }
            Executor::Interp | Executor::Program { .. } => {
                let inputs = gather_inputs(self, args, kwargs, &[])?;
                self.run_into(&inputs, outputs, externs)
            }
        }
    }

    /// The backend's views of the tensors feeding the graph's parameters, in order.
    fn jit_views<'a>(
        &self,
        args: &'a [Value],
        kwargs: &'a [(&str, Value)],
    ) -> Result<SmallVec<[TensorView<'a>; 4]>, Error> {
        self.params
            .iter()
            .map(|src| {
                source_map(src, args, kwargs, backend_view).ok_or_else(|| {
                    Error::Internal(format!(
                        "graph parameter source {src:?} is not a tensor argument"
                    ))
                })
            })
            .collect()
    }

    pub(crate) fn run(
        &self,
        inputs: &[TensorValue],
        externs: &dyn ExternKernels,
    ) -> Result<Vec<Tensor>, Error> {
        match &self.executor {
            Executor::Interp => {
                let owned: Vec<Tensor> = inputs.iter().map(|t| t.to_tensor()).collect();
                tfn_ir::interp::run_with_externs(&self.graph, &owned, externs).map_err(interp_error)
            }
            Executor::Jit(f) => {
                let views: Vec<TensorView> = inputs.iter().map(backend_view).collect();
                f.run_with_externs(&views, externs).map_err(run_error)
            }
            Executor::Program { program, kind: CallKind::Call, .. } => {
                crate::program::run(program, inputs, externs)
            }
            Executor::Program { program, kind, checkpoint } => {
                let n = program.inputs().min(inputs.len());
                let (args, cots) = inputs.split_at(n);
                let with_values = *kind == CallKind::ValueAndVjp;
                let (mut out, grads) =
                    crate::program::vjp(program, args, cots, externs, with_values, *checkpoint)?;
                // One gradient per float parameter, in order (zeros where none reaches it).
                for ((a, p), g) in args.iter().zip(&self.graph.params).zip(grads) {
                    if p.ty.dtype.is_float() {
                        out.push(g.unwrap_or_else(|| crate::program::zeros(a.dtype(), a.shape())));
                    }
                }
                Ok(out)
            }
        }
    }

    pub(crate) fn run_into(
        &self,
        inputs: &[TensorValue],
        outputs: &mut [OutputMut],
        externs: &dyn ExternKernels,
    ) -> Result<(), Error> {
        match &self.executor {
            Executor::Interp => {
                let results = self.run(inputs, externs)?;
                copy_into(results, outputs)
            }
            Executor::Jit(f) => {
                let views: Vec<TensorView> = inputs.iter().map(backend_view).collect();
                let mut outs: Vec<TensorViewMut> =
                    outputs.iter_mut().map(OutputMut::reborrow).collect();
                f.run_into_with_externs(&views, &mut outs, externs).map_err(run_error)
            }
            Executor::Program { .. } => {
                let results = self.run(inputs, externs)?;
                copy_into(results, outputs)
            }
        }
    }
}

impl Prepared {
    /// The compiled kernels (`None` with the interpreter backend).
    pub(crate) fn compiled(&self) -> Option<&CompiledFunction> {
        match &self.executor {
            Executor::Interp | Executor::Program { .. } => None,
            Executor::Jit(f) => Some(f),
        }
    }

    /// The program of a function with loops, called forward (`None` otherwise).
    pub(crate) fn program(&self) -> Option<&crate::program::CompiledProgram> {
        match &self.executor {
            Executor::Program { program, kind: CallKind::Call, .. } => Some(program),
            _ => None,
        }
    }

    /// [`Prepared::run`] adding each kernel's time to `times` (JIT; an interpreted step runs
    /// untimed).
    pub(crate) fn run_profiled(
        &self,
        inputs: &[TensorValue],
        externs: &dyn ExternKernels,
        times: &mut tfn_backend::KernelTimes,
    ) -> Result<Vec<Tensor>, Error> {
        match &self.executor {
            Executor::Jit(f) => {
                let views: Vec<TensorView> = inputs.iter().map(backend_view).collect();
                f.run_profiled(&views, externs, times).map_err(run_error)
            }
            _ => self.run(inputs, externs),
        }
    }

    /// [`Prepared::run_into`] adding each kernel's time to `times` (JIT only; `None` with the
    /// interpreter, which has no kernels).
    pub(crate) fn run_into_profiled(
        &self,
        inputs: &[TensorValue],
        outputs: &mut [OutputMut],
        externs: &dyn ExternKernels,
        times: &mut tfn_backend::KernelTimes,
    ) -> Option<Result<(), Error>> {
        let f = self.compiled()?;
        let views: Vec<TensorView> = inputs.iter().map(backend_view).collect();
        let mut outs: Vec<TensorViewMut> = outputs.iter_mut().map(OutputMut::reborrow).collect();
        Some(f.run_into_profiled(&views, &mut outs, externs, times).map_err(run_error))
    }
}

fn backend_view<'a>(t: &'a TensorValue) -> TensorView<'a> {
    match t {
        TensorValue::Bool(a) => TensorView::Bool(a.view()),
        TensorValue::I32(a) => TensorView::I32(a.view()),
        TensorValue::I64(a) => TensorView::I64(a.view()),
        TensorValue::F32(a) => TensorView::F32(a.view()),
        TensorValue::F64(a) => TensorView::F64(a.view()),
        TensorValue::I8(a) => TensorView::I8(a.view()),
        TensorValue::U8(a) => TensorView::U8(a.view()),
        TensorValue::F16(a) => TensorView::F16(a.view()),
        TensorValue::BF16(a) => TensorView::BF16(a.view()),
    }
}

fn run_error(e: RunError) -> Error {
    match e {
        RunError::Bind(b) => bind_error(b),
        RunError::Interp(i) => interp_error(i),
        RunError::OutputCount { expected, got } => Error::Output {
            index: got.min(expected),
            message: format!("the function has {expected} result(s) but {got} output buffer(s) were given"),
        },
        RunError::OutputType { index, expected_dtype, expected_shape, got_dtype, got_shape } => Error::Output {
            index,
            message: format!("the result is {expected_dtype}{expected_shape:?} but the buffer is {got_dtype}{got_shape:?}"),
        },
        RunError::InputDType { .. } => Error::DType(e.to_string()),
        RunError::ZeroSizeReduction { .. }
        | RunError::Shape { .. }
        | RunError::AxisTooLong { .. } => Error::Shape(e.to_string()),
        RunError::IndexOutOfRange { .. } | RunError::LoopRun(_) | RunError::OutOfMemory { .. } => {
            Error::Runtime(e.to_string())
        }
        RunError::LoopShape(m) => Error::Shape(m),
        RunError::InputCount { .. } | RunError::Internal(_) => Error::Internal(e.to_string()),
    }
}

pub(crate) fn bind_error(b: tfn_ir::BindError) -> Error {
    match b {
        tfn_ir::BindError::Limit(e) => Error::Config(e.to_string()),
        b => Error::Shape(b.to_string()),
    }
}

fn interp_error(e: tfn_ir::interp::InterpError) -> Error {
    use tfn_ir::interp::InterpError as E;
    match e {
        E::Bind(b) => bind_error(b),
        E::InputDType { .. } => Error::DType(e.to_string()),
        E::Shape { .. } | E::ZeroSizeReduction { .. } => Error::Shape(e.to_string()),
        E::Extern { .. } | E::IndexOutOfRange { .. } => Error::Runtime(e.to_string()),
        E::Unsupported { .. } | E::Internal { .. } => Error::Internal(e.to_string()),
    }
}

/// Copies results into caller buffers after checking count, dtype and shape.
pub(crate) fn copy_into(results: Vec<Tensor>, outputs: &mut [OutputMut]) -> Result<(), Error> {
    if results.len() != outputs.len() {
        return Err(Error::Output {
            index: outputs.len().min(results.len()),
            message: format!(
                "the function has {} result(s) but {} output buffer(s) were given",
                results.len(),
                outputs.len()
            ),
        });
    }
    for (index, (r, out)) in results.into_iter().zip(outputs.iter_mut()).enumerate() {
        if r.dtype() != out.dtype() || r.shape() != out.shape() {
            return Err(Error::Output {
                index,
                message: format!(
                    "the result is {}{:?} but the buffer is {}{:?}",
                    r.dtype(),
                    r.shape(),
                    out.dtype(),
                    out.shape()
                ),
            });
        }
        match (r, out) {
            (Tensor::Bool(a), OutputMut::Bool(o)) => o.assign(&a),
            (Tensor::I32(a), OutputMut::I32(o)) => o.assign(&a),
            (Tensor::I64(a), OutputMut::I64(o)) => o.assign(&a),
            (Tensor::F32(a), OutputMut::F32(o)) => o.assign(&a),
            (Tensor::F64(a), OutputMut::F64(o)) => o.assign(&a),
            (Tensor::I8(a), OutputMut::I8(o)) => o.assign(&a),
            (Tensor::U8(a), OutputMut::U8(o)) => o.assign(&a),
            (Tensor::F16(a), OutputMut::F16(o)) => o.assign(&a),
            (Tensor::BF16(a), OutputMut::BF16(o)) => o.assign(&a),
            _ => return Err(Error::Internal("dtype checked above".into())),
        }
    }
    Ok(())
}

/// The loaded name closest to `name`, for "did you mean" (bounded in time whatever `name` is).
pub(crate) fn similar_name(library: &Library, name: &str) -> Option<String> {
    tfn_frontend::closest(name, library.functions.keys().map(String::as_str)).map(str::to_string)
}
