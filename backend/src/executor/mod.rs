//! [`CompiledFunction`]: a fused graph whose kernels are compiled, and the executor that runs
//! it — binding sizes, allocating intermediates, calling kernels in order.
//!
//! Each kernel becomes one [`Step`]: a JIT loop, a matmul whose JIT epilogue runs on each
//! block of output rows as it becomes final (`crate::matmul`), a zero-copy reshape, a native
//! strided copy (transpose, slice, concat; views that fusion folded into their readers have
//! no kernel at all), or a *reference kernel* — the interpreter run on that kernel's nodes —
//! for exactly the kinds listed in [`steps::compile_kernel`] (extern ops, whose kernel is the
//! user's; integer matmul). If Cranelift or the code generator rejects a kernel it
//! should handle, that kernel also runs through the interpreter, so the call still works, but
//! the event is a *fallback*: [`CompiledFunction::interpreted_kernels`] lists it, and the
//! session counts, logs and (in strict mode) refuses it.

use crate::abi::KernelFn;
use crate::abi::{AxisAbi, LoopAbi};
use crate::buffers;
use crate::copy;
use crate::error::{CodegenError, RunError};
#[cfg(feature = "jit")]
use crate::jit::Jit;
use crate::matmul::{self, MatMulShapes};
use crate::plan::{IndexedRole, LoopPlan};
use crate::pool::BufferPool;
use crate::scatter;
use crate::tensors::{TensorView, TensorViewMut};
use crate::window;
use chunked::ChunkedReduce;
#[cfg(feature = "jit")]
pub(crate) use chunked::{CHUNK, MAX_ROWS as CHUNKED_MAX_ROWS, MIN_LEN as CHUNKED_MIN_LEN};
#[cfg(feature = "jit")]
use std::collections::HashMap;
use tfn_ir::bind::{bind_sizes_inline, Allocated};
#[cfg(feature = "jit")]
use tfn_ir::interp;
use tfn_ir::interp::{ExternKernels, NoExterns};
use tfn_ir::{Graph, Op, Tensor, ValueId};
#[cfg(feature = "jit")]
use tfn_ir::{GraphParam, Node, Shape, TensorType};
#[cfg(feature = "jit")]
use tfn_passes::fusion::fuse;
use tfn_passes::fusion::{FusedGraph, Kernel};
use widened::Widened;

mod chunked;
mod liveness;
mod loop_call;
mod profile;
mod state;
mod steps;
mod streamed;
mod widened;

pub use streamed::Streaming;

use crate::wide::SimdLevel;
use loop_call::{ErrorRecord, KernelArgs, LoopCall, ReadIndex};
pub use profile::KernelTimes;
use state::{with_input_shapes, Direct, Owned, State};
use steps::Epilogue;
#[cfg(feature = "jit")]
pub(crate) use steps::KernelRequest;
pub(crate) use steps::KernelSource;
use steps::{compile_kernel, Step};

/// The values the kernels compute without storing whose element counts binding must check:
/// one per distinct shape, leaving out shapes of rank 0 and those of a parameter or a stored
/// value (an input's array, and the byte limit, already bound those).
fn fused_values(graph: &Graph, allocated: &[ValueId]) -> Vec<ValueId> {
    let mut known: Vec<&tfn_ir::Shape> = Vec::new();
    for (i, node) in graph.nodes.iter().enumerate() {
        if matches!(node.op, tfn_ir::Op::Param(_))
            || allocated.binary_search(&ValueId(i as u32)).is_ok()
        {
            known.push(&node.ty.shape);
        }
    }
    let mut values = Vec::new();
    for (i, node) in graph.nodes.iter().enumerate() {
        let shape = &node.ty.shape;
        if shape.rank() > 0 && !known.contains(&shape) {
            known.push(shape);
            values.push(ValueId(i as u32));
        }
    }
    values
}

/// The values the steps allocate: each kernel's outputs and the node of a native kernel
/// (every node of a kernel the interpreter runs); a view allocates nothing.
fn allocated_values(fused: &FusedGraph, steps: &[Step]) -> Vec<ValueId> {
    let mut values = Vec::new();
    for (kernel, step) in fused.kernels.iter().zip(steps) {
        let node = match step {
            Step::View { .. } => continue,
            Step::Interp { .. } => {
                values.extend(&kernel.nodes);
                continue;
            }
            Step::Loop { plan, .. } => {
                values.extend(plan.outputs.iter().map(|o| o.value));
                None
            }
            Step::MatMul { node, .. }
            | Step::Copy { node }
            | Step::Scatter { node }
            | Step::Window { node, .. } => Some(*node),
            Step::Scan(k) | Step::Arg(k) => Some(k.node),
        };
        values.extend(node);
        values.extend(&kernel.outputs);
    }
    values.sort();
    values.dedup();
    values
}

/// Per graph parameter (by number): whether a strided argument is read where it lies instead
/// of being copied to row-major first. That holds when every reader is a GEMM operand (the
/// GEMM packs its operands from any strides: a `[out, in]` checkpoint weight bound as its
/// `[in, out]` transpose, a loop's row of a stacked weight), directly or through a folded
/// last-two-axes transpose, and the parameter is not a graph output.
fn in_place_params(graph: &Graph, fused: &FusedGraph, steps: &[Step]) -> Vec<bool> {
    let mut ok = vec![false; graph.params.len()];
    for (index, node) in graph.nodes.iter().enumerate() {
        let Op::Param(p) = node.op else { continue };
        let v = ValueId(index as u32);
        let read_in_place = |(kernel, step): (&Kernel, &Step)| {
            if !kernel.inputs.contains(&v) {
                return true;
            }
            let Step::MatMul { node: mm, folded, .. } = step else { return false };
            kernel.nodes.iter().all(|n| {
                if !graph.node(*n).inputs.contains(&v) {
                    return true;
                }
                if n == mm {
                    // Directly an operand (a product has no other inputs).
                    return true;
                }
                // The transpose or widening cast an operand is read through.
                !kernel.outputs.contains(n)
                    && folded.iter().flatten().any(|f| f.source == v && f.nodes.contains(n))
            })
        };
        let in_place =
            !graph.outputs.contains(&v) && fused.kernels.iter().zip(steps).all(read_in_place);
        if let Some(slot) = ok.get_mut(p as usize) {
            *slot = in_place;
        }
    }
    ok
}

/// Row-major element strides of `shape`.
fn row_major_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1usize; shape.len()];
    for a in (0..shape.len().saturating_sub(1)).rev() {
        strides[a] = strides[a + 1].saturating_mul(shape[a + 1]);
    }
    strides
}

/// A step of a compiled function as a self-contained object sees it
/// ([`CompiledFunction::standalone_steps`]).
#[cfg(feature = "jit")]
pub(crate) enum StandaloneStep<'a> {
    /// A loop kernel; `chunkable`: the executor runs it as chunks of its reduced axis when the
    /// rows are few and long (`chunked.rs`).
    Loop { plan: &'a LoopPlan, checks_empty: bool, widened: bool, chunkable: bool },
    /// A reshape: the output is the input's buffer.
    View { input: ValueId, output: ValueId },
    /// A scan (`scan`) or an `argmax`/`argmin` along `axis` of `node`.
    Axis { node: ValueId, axis: usize, scan: bool },
    /// A step only the runtime library runs: what it is.
    Runtime(String),
}

/// Options of [`CompiledFunction::compile`].
#[derive(Clone, Debug)]
pub struct CompileOptions {
    /// Threads large kernels may use (1 = never spawn). Default: all cores.
    pub threads: usize,
    /// Which wide math routines kernels call ([`SimdLevel::from_env`]: `TFN_SIMD`, else the
    /// widest this CPU has). Results are the same bits at every level.
    pub simd: SimdLevel,
    /// When light kernels stream their outputs ([`Streaming::from_env`]: `TFN_STREAM`, else
    /// when a call's data exceeds the last-level cache). Results are the same bits.
    pub stream: Streaming,
}

impl Default for CompileOptions {
    fn default() -> Self {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        CompileOptions {
            threads,
            simd: crate::wide::SimdLevel::from_env(),
            stream: Streaming::from_env(),
        }
    }
}

/// A graph compiled to kernels, callable any number of times with any sizes that fit its
/// signature. Cheap to share (`Arc`); calls from several threads run concurrently.
pub struct CompiledFunction {
    graph: Graph,
    fused: FusedGraph,
    steps: Vec<Step>,
    /// Per step, the intermediates that are dead once it has run ([`liveness`]).
    release: Vec<Vec<ValueId>>,
    /// The values a call stores (for the size limit, `TFN_MAX_TENSOR_BYTES`): a value a
    /// kernel computes and consumes in registers is never allocated ([`allocated_values`]).
    allocated: Vec<ValueId>,
    /// The values computed in registers whose sizes binding checks ([`fused_values`]).
    fused_values: Vec<ValueId>,
    /// Per parameter: a strided argument is read in place, not copied ([`in_place_params`]).
    in_place: Vec<bool>,
    threads: usize,
    stream: Streaming,
    /// Intermediates of earlier calls and of earlier steps of a call, reused by later ones.
    pool: BufferPool,
    /// Keeps the kernels' machine code alive (`None`: the code is in the program's image,
    /// an AOT object).
    #[cfg(feature = "jit")]
    _jit: Option<Jit>,
}

// SAFETY: the raw function pointers in `steps` point at immutable code owned by `_jit` (or in
// the program's image: AOT objects); the
// only interior mutability is the pool's `Mutex`, so sharing and sending it is sound.
unsafe impl Send for CompiledFunction {}
unsafe impl Sync for CompiledFunction {}

/// The steps of `fused`, each with its kernel from `src` (a kernel the code generator rejects:
/// a counted interpreter fallback).
fn build_steps(
    src: &dyn KernelSource,
    graph: &Graph,
    fused: &FusedGraph,
) -> Result<Vec<Step>, CodegenError> {
    let mut steps: Vec<Step> = Vec::with_capacity(fused.kernels.len());
    #[cfg(feature = "jit")]
    let inject = tfn_passes::pipeline::fault_injected("codegen");
    #[cfg(not(feature = "jit"))]
    let inject = false;
    for kernel in &fused.kernels {
        let compiled = if inject {
            Err(CodegenError::Cranelift("fault injected by TFN_INJECT_FAULT".into()))
        } else {
            compile_kernel(src, graph, kernel)
        };
        let step = match compiled {
            Ok(step) => step,
            // A kernel the code generator should handle but did not: it still runs (in the
            // interpreter), and the fallback is reported.
            Err(CodegenError::Unsupported(reason)) | Err(CodegenError::Cranelift(reason)) => {
                Step::Interp { reason, fallback: true }
            }
            Err(e) => return Err(e),
        };
        steps.push(step);
    }
    Ok(steps)
}

impl CompiledFunction {
    /// Fuses and compiles `graph` in a JIT module of its own.
    #[cfg(feature = "jit")]
    pub fn compile(
        graph: &Graph,
        options: &CompileOptions,
    ) -> Result<CompiledFunction, CodegenError> {
        Self::compile_in(&Jit::new(options.simd)?, graph, fuse(graph), options)
    }

    /// Compiles the kernels of `fused`, a schedule of `graph` (from `tfn_passes::pipeline`):
    /// the steps are built once asking for their kernels, the kernels are compiled as one
    /// batch on up to `options.threads` threads, and each step gets its own (a kernel the code
    /// generator rejects makes its step a counted interpreter fallback, as in
    /// [`CompiledFunction::assemble`]).
    #[cfg(feature = "jit")]
    pub(crate) fn compile_in(
        jit: &Jit,
        graph: &Graph,
        fused: FusedGraph,
        options: &CompileOptions,
    ) -> Result<CompiledFunction, CodegenError> {
        let requests = steps::Requests::default();
        let mut steps = build_steps(&requests, graph, &fused)?;
        let requests = requests.into_inner();
        let mut kernels = jit.compile_batch(&requests, options.threads.max(1)).into_iter();
        for step in &mut steps {
            let Some(slot) = step.kernel_mut() else { continue };
            match kernels.next() {
                Some(Ok(func)) => *slot = func,
                Some(Err(CodegenError::Unsupported(reason)))
                | Some(Err(CodegenError::Cranelift(reason))) => {
                    *step = Step::Interp { reason, fallback: true }
                }
                Some(Err(e)) => return Err(e),
                None => {
                    return Err(CodegenError::Internal("a step has no kernel of its batch".into()))
                }
            }
        }
        if kernels.next().is_some() {
            return Err(CodegenError::Internal("a batch kernel has no step".into()));
        }
        Ok(Self::from_steps(Some(jit.clone()), graph, fused, steps, options))
    }

    /// The steps of `fused` with their kernels from `src`; `keep` owns their code, if any.
    pub(crate) fn assemble(
        jit: &dyn KernelSource,
        #[cfg(feature = "jit")] keep: Option<Jit>,
        graph: &Graph,
        fused: FusedGraph,
        options: &CompileOptions,
    ) -> Result<CompiledFunction, CodegenError> {
        let steps = build_steps(jit, graph, &fused)?;
        Ok(Self::from_steps(
            #[cfg(feature = "jit")]
            keep,
            graph,
            fused,
            steps,
            options,
        ))
    }

    fn from_steps(
        #[cfg(feature = "jit")] keep: Option<Jit>,
        graph: &Graph,
        fused: FusedGraph,
        steps: Vec<Step>,
        options: &CompileOptions,
    ) -> CompiledFunction {
        let release = liveness::release_points(graph, &fused, &steps);
        let allocated = allocated_values(&fused, &steps);
        let fused_values = fused_values(graph, &allocated);
        let in_place = in_place_params(graph, &fused, &steps);
        CompiledFunction {
            graph: graph.clone(),
            fused,
            steps,
            release,
            allocated,
            fused_values,
            in_place,
            threads: options.threads.max(1),
            stream: options.stream,
            pool: BufferPool::default(),
            #[cfg(feature = "jit")]
            _jit: keep,
        }
    }

    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    pub fn fused(&self) -> &FusedGraph {
        &self.fused
    }

    /// Whether a strided argument for parameter `param` is read where it lies (by GEMMs that
    /// pack from any strides) rather than copied to row-major first.
    pub fn reads_in_place(&self, param: usize) -> bool {
        self.in_place.get(param).copied().unwrap_or(false)
    }

    /// The kernels (by step) whose long reductions run as fixed-size chunks of the reduced
    /// axis, split across threads, when a call has few rows and long ones (see
    /// `executor/chunked.rs`).
    pub fn chunked_reductions(&self) -> Vec<usize> {
        let steps = self.steps.iter().enumerate();
        steps
            .filter_map(|(i, s)| match s {
                Step::Loop { plan, .. } if ChunkedReduce::eligible(plan) => Some(i),
                _ => None,
            })
            .collect()
    }

    /// The kernels (by step) that stream their outputs to memory on calls whose data exceeds
    /// the last-level cache, or on every call under [`Streaming::Always`] (see
    /// `executor/streamed.rs`).
    pub fn streamed_kernels(&self) -> Vec<usize> {
        let steps = self.steps.iter().enumerate();
        steps
            .filter_map(|(i, s)| match s {
                Step::Loop { plan, widened: None, .. } if streamed::streamable(plan) => Some(i),
                _ => None,
            })
            .collect()
    }

    /// The kernels (by step) over 16-bit floats that run on f32 blocks, converted by the
    /// CPU's F16C or vector code (see `executor/widened.rs`).
    pub fn widened_kernels(&self) -> Vec<usize> {
        let steps = self.steps.iter().enumerate();
        steps
            .filter_map(|(i, s)| match s {
                Step::Loop { widened: Some(_), .. } => Some(i),
                _ => None,
            })
            .collect()
    }

    /// The steps as a self-contained object runs them (`crate::aot::standalone`), in order
    /// with their kernels.
    #[cfg(feature = "jit")]
    pub(crate) fn standalone_steps(&self) -> Vec<(&Kernel, StandaloneStep<'_>)> {
        let steps = self.fused.kernels.iter().zip(&self.steps);
        steps
            .map(|(kernel, step)| {
                let s = match step {
                    Step::Loop { plan, checks_empty, widened, .. } => StandaloneStep::Loop {
                        plan,
                        checks_empty: *checks_empty,
                        widened: widened.is_some(),
                        chunkable: ChunkedReduce::eligible(plan),
                    },
                    Step::View { input, output } => {
                        StandaloneStep::View { input: *input, output: *output }
                    }
                    Step::Scan(k) => {
                        StandaloneStep::Axis { node: k.node, axis: k.axis, scan: true }
                    }
                    Step::Arg(k) => {
                        StandaloneStep::Axis { node: k.node, axis: k.axis, scan: false }
                    }
                    Step::MatMul { .. } => {
                        StandaloneStep::Runtime("a matrix product (GEMM)".into())
                    }
                    Step::Copy { node } => StandaloneStep::Runtime(format!(
                        "a strided copy (`{}`)",
                        self.graph.node(*node).op.name()
                    )),
                    Step::Scatter { node } => StandaloneStep::Runtime(format!(
                        "a scatter (`{}`)",
                        self.graph.node(*node).op.name()
                    )),
                    Step::Window { node, .. } => StandaloneStep::Runtime(format!(
                        "a window op (`{}`)",
                        self.graph.node(*node).op.name()
                    )),
                    Step::Interp { reason, .. } => StandaloneStep::Runtime(reason.clone()),
                };
                (kernel, s)
            })
            .collect()
    }

    /// Fallbacks: kernels the code generator should have compiled but rejected, which run
    /// through the interpreter instead, with the reason. Empty unless tfn has a bug.
    pub fn interpreted_kernels(&self) -> Vec<(usize, String)> {
        self.interp_steps(true)
    }

    /// Kernels that run through the interpreter by design (extern ops, integer matmul),
    /// with what they are.
    pub fn reference_kernels(&self) -> Vec<(usize, String)> {
        self.interp_steps(false)
    }

    fn interp_steps(&self, fallbacks: bool) -> Vec<(usize, String)> {
        self.steps
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match s {
                Step::Interp { reason, fallback } if *fallback == fallbacks => {
                    Some((i, reason.clone()))
                }
                _ => None,
            })
            .collect()
    }

    /// Runs on `inputs` (one per parameter) and returns owned outputs.
    pub fn run(&self, inputs: &[TensorView<'_>]) -> Result<Vec<Tensor>, RunError> {
        self.execute(inputs, None, &NoExterns)
    }

    /// Runs and writes the outputs into caller buffers (contiguous ones without temporaries).
    pub fn run_into(
        &self,
        inputs: &[TensorView<'_>],
        outputs: &mut [TensorViewMut<'_>],
    ) -> Result<(), RunError> {
        self.execute(inputs, Some(outputs), &NoExterns).map(|_| ())
    }

    /// [`Self::run`] with extern op kernels.
    pub fn run_with_externs(
        &self,
        inputs: &[TensorView<'_>],
        externs: &dyn ExternKernels,
    ) -> Result<Vec<Tensor>, RunError> {
        self.execute(inputs, None, externs)
    }

    /// [`Self::run_into`] with extern op kernels.
    pub fn run_into_with_externs(
        &self,
        inputs: &[TensorView<'_>],
        outputs: &mut [TensorViewMut<'_>],
        externs: &dyn ExternKernels,
    ) -> Result<(), RunError> {
        self.execute(inputs, Some(outputs), externs).map(|_| ())
    }

    fn execute(
        &self,
        inputs: &[TensorView<'_>],
        outputs: Option<&mut [TensorViewMut<'_>]>,
        externs: &dyn ExternKernels,
    ) -> Result<Vec<Tensor>, RunError> {
        self.execute_profiled(inputs, outputs, externs, None)
    }

    /// The executor; with `times`, each step's wall time is added to it ([`profile`]).
    fn execute_profiled(
        &self,
        inputs: &[TensorView<'_>],
        mut outputs: Option<&mut [TensorViewMut<'_>]>,
        externs: &dyn ExternKernels,
        mut times: Option<&mut KernelTimes>,
    ) -> Result<Vec<Tensor>, RunError> {
        let graph = &self.graph;
        if inputs.len() != graph.params.len() {
            return Err(RunError::InputCount { expected: graph.params.len(), got: inputs.len() });
        }
        for (p, x) in graph.params.iter().zip(inputs) {
            if p.ty.dtype != x.dtype() {
                return Err(RunError::InputDType {
                    param: p.name.clone(),
                    expected: p.ty.dtype,
                    got: x.dtype(),
                });
            }
        }
        let allocated = Allocated::Compiled { stored: &self.allocated, fused: &self.fused_values };
        let sizes =
            with_input_shapes(inputs, |shapes| bind_sizes_inline(graph, shapes, allocated))?;
        let mut st = State {
            pool: &self.pool,
            sizes,
            bufs: smallvec::smallvec![None; graph.nodes.len()],
            owned: Owned::new(graph.nodes.len()),
            direct: smallvec::SmallVec::new(),
            strided: smallvec::SmallVec::new(),
        };
        for (index, node) in graph.nodes.iter().enumerate() {
            if let Op::Param(p) = node.op {
                let view = inputs
                    .get(p as usize)
                    .ok_or_else(|| RunError::Internal(format!("no parameter {p}")))?;
                let strides = view.strides();
                let readable_in_place =
                    self.in_place.get(p as usize) == Some(&true) && strides.iter().all(|&s| s >= 0);
                match buffers::view_buf(view) {
                    Some(buf) => st.bufs[index] = Some(buf),
                    None if readable_in_place => {
                        let buf = buffers::RawBuf { ptr: view.first_ptr(), dtype: view.dtype() };
                        st.bufs[index] = Some(buf);
                        let strides = strides.iter().map(|&s| s as usize).collect();
                        st.strided.push((ValueId(index as u32), strides));
                    }
                    None => {
                        let mut t = buffers::strided_to_tensor(view, self.threads)?;
                        st.bufs[index] = Some(buffers::tensor_buf(&mut t));
                        st.owned.put(index, t);
                    }
                }
            }
        }
        if let Some(outs) = outputs.as_deref_mut() {
            if outs.len() != graph.outputs.len() {
                return Err(RunError::OutputCount {
                    expected: graph.outputs.len(),
                    got: outs.len(),
                });
            }
            for (o, (v, out)) in graph.outputs.iter().zip(outs.iter_mut()).enumerate() {
                let ty = graph.ty(*v);
                if out.dtype() != ty.dtype || !st.shape_is(&ty.shape, out.shape()) {
                    let expected = st.shape(&ty.shape)?;
                    return Err(RunError::OutputType {
                        index: o,
                        expected_dtype: ty.dtype,
                        expected_shape: expected,
                        got_dtype: out.dtype(),
                        got_shape: out.shape().to_vec(),
                    });
                }
                let computed = !matches!(graph.node(*v).op, Op::Param(_));
                if computed && st.direct(*v).is_none() {
                    if let Some(buf) = buffers::view_mut_buf(out) {
                        st.direct.push(Direct { value: *v, buf, output: o });
                    }
                }
            }
        }
        let steps = self.fused.kernels.iter().zip(&self.steps).zip(&self.release);
        for (index, ((kernel, step), dead)) in steps.enumerate() {
            // Profiling off costs one branch per step and no clock read.
            match times.as_deref_mut() {
                None => self.run_step(&mut st, kernel, step, externs)?,
                Some(times) => {
                    let started = std::time::Instant::now();
                    self.run_step(&mut st, kernel, step, externs)?;
                    times.record(index, started);
                }
            }
            st.release(dead);
        }
        match outputs {
            Some(outs) => {
                for (o, (v, out)) in graph.outputs.iter().zip(outs.iter_mut()).enumerate() {
                    let written = st.direct(*v).is_some_and(|d| {
                        d.output == o && Some(d.buf.ptr) == st.bufs[v.index()].map(|b| b.ptr)
                    });
                    if written {
                        continue;
                    }
                    let buf = st.buf(*v)?;
                    let shape = st.shape(&graph.ty(*v).shape)?;
                    // SAFETY: `buf` holds a finished value of this shape, alive in `st`.
                    let src = unsafe { buffers::buf_view(buf, &shape) };
                    if !buffers::assign(out, &src)? {
                        return Err(RunError::Internal("output dtype changed".into()));
                    }
                }
                st.recycle();
                Ok(Vec::new())
            }
            None => {
                let mut results = Vec::with_capacity(graph.outputs.len());
                for v in &graph.outputs {
                    let shape = st.shape(&graph.ty(*v).shape)?;
                    let owned_here = matches!(graph.node(*v).op, Op::Param(_));
                    let t = match st.owned.take(v.index()) {
                        Some(t) if !owned_here && t.shape() == shape.as_slice() => t,
                        other => {
                            if let Some(t) = other {
                                st.owned.put(v.index(), t);
                            }
                            let buf = st.buf(*v)?;
                            // SAFETY: as above.
                            unsafe { buffers::buf_to_tensor(buf, &shape)? }
                        }
                    };
                    results.push(t);
                }
                st.recycle();
                Ok(results)
            }
        }
    }

    fn run_step(
        &self,
        st: &mut State,
        kernel: &Kernel,
        step: &Step,
        externs: &dyn ExternKernels,
    ) -> Result<(), RunError> {
        match step {
            Step::Loop { plan, func, checks_empty, widened } => {
                let domain = st.dims(&kernel.domain)?;
                self.run_loop(st, plan, *func, &domain, *checks_empty, widened.as_ref())
            }
            Step::MatMul { node, folded, epilogue } => {
                let n = self.graph.node(*node);
                let (Some(a), Some(b)) = (n.inputs.first(), n.inputs.get(1)) else {
                    return Err(RunError::Internal("matmul needs two inputs".into()));
                };
                let operand = |slot: usize, v: ValueId| -> Result<matmul::Operand, RunError> {
                    let Some(f) = &folded[slot] else {
                        // A strided argument read in place keeps its own strides.
                        let strides = st.strided(v).map(<[usize]>::to_vec);
                        return Ok(matmul::Operand { buf: st.buf(v)?, strides });
                    };
                    // Read through folded nodes: the source's strides, permuted; its dtype
                    // (a 16-bit source is widened while packing).
                    let source_strides = match st.strided(f.source) {
                        Some(s) => Some(s.to_vec()),
                        None if f.perm.is_some() => {
                            Some(row_major_strides(&st.shape(&self.graph.ty(f.source).shape)?))
                        }
                        None => None,
                    };
                    let strides = match (&f.perm, source_strides) {
                        (Some(perm), Some(s)) => Some(
                            perm.iter()
                                .map(|&p| s.get(p as usize).copied())
                                .collect::<Option<Vec<usize>>>()
                                .ok_or_else(|| {
                                    RunError::Internal("transpose of the wrong rank".into())
                                })?,
                        ),
                        (_, s) => s,
                    };
                    Ok(matmul::Operand { buf: st.buf(f.source)?, strides })
                };
                let (op_a, op_b) = (operand(0, *a)?, operand(1, *b)?);
                let sa = st.shape(&self.graph.ty(*a).shape)?;
                let sb = st.shape(&self.graph.ty(*b).shape)?;
                let so = st.shape(&n.ty.shape)?;
                let out = st.alloc(*node, n.ty.dtype, &so)?;
                let shapes = MatMulShapes { a: &sa, b: &sb, out: &so };
                // SAFETY: buffers are alive in `st` and sized by the bound shapes; the
                // epilogue only reads the product and writes its own outputs.
                self.with_epilogue(st, kernel, epilogue, |tiles| unsafe {
                    matmul::matmul(op_a, op_b, out, &shapes, self.threads, tiles)
                })?;
                Ok(())
            }
            Step::View { input, output } => {
                let buf = st.buf(*input)?;
                st.bufs[output.index()] = Some(buf);
                Ok(())
            }
            Step::Copy { node } => {
                let n = self.graph.node(*node);
                let mut inputs = Vec::with_capacity(n.inputs.len());
                for v in &n.inputs {
                    inputs.push((st.buf(*v)?, st.shape(&self.graph.ty(*v).shape)?));
                }
                let shape = st.shape(&n.ty.shape)?;
                let out = st.alloc(*node, n.ty.dtype, &shape)?;
                // SAFETY: inputs are finished values alive in `st`, `out` is a fresh or caller
                // buffer of the node's bound shape; shapes are the graph's (checked in `copy`).
                unsafe { copy::run_copy(&n.op, &inputs, out, &shape, self.threads) }
            }
            Step::Scan(scan) => {
                let n = self.graph.node(scan.node);
                let shape = st.shape(&n.ty.shape)?;
                let [outer, len, inner] = crate::scan::scan_sizes(&shape, scan.axis);
                let abi = AxisAbi { operands: n.inputs.len() + 1 };
                let mut args: KernelArgs = smallvec::smallvec![0; abi.len()];
                for (k, v) in n.inputs.iter().enumerate() {
                    args[abi.ptr(k)] = st.buf(*v)?.ptr as i64;
                }
                let out = st.alloc(scan.node, n.ty.dtype, &shape)?;
                args[abi.ptr(n.inputs.len())] = out.ptr as i64;
                args[abi.outer()] = outer as i64;
                args[abi.len_slot()] = len as i64;
                args[abi.inner()] = inner as i64;
                let begin_slot = abi.begin();
                let total = outer * len * inner;
                if total > 0 {
                    let split = crate::parallel::Split { range: outer, work: total, align: 1 };
                    let slots = crate::parallel::ArgSlots { begin: begin_slot, record: None };
                    // SAFETY: the inputs are finished values alive in `st`, `out` a buffer of
                    // the node's bound shape; all are contiguous `[outer, len, inner]` arrays
                    // of the node's dtype, and each outer position is written by one call.
                    unsafe {
                        crate::parallel::call_split(
                            scan.func,
                            &mut args,
                            slots,
                            split,
                            self.threads,
                        )?
                    };
                }
                Ok(())
            }
            Step::Arg(arg) => {
                let n = self.graph.node(arg.node);
                let Some(&x) = n.inputs.first() else {
                    return Err(RunError::Internal("argmax/argmin without input".into()));
                };
                let shape = st.shape(&self.graph.ty(x).shape)?;
                let [outer, len, inner] = crate::scan::scan_sizes(&shape, arg.axis);
                if len == 0 {
                    return Err(RunError::ZeroSizeReduction { op: n.op.name() });
                }
                let out_shape = st.shape(&n.ty.shape)?;
                let x_buf = st.buf(x)?;
                let out = st.alloc(arg.node, n.ty.dtype, &out_shape)?;
                let abi = AxisAbi { operands: 2 };
                let mut args: KernelArgs = smallvec::smallvec![0; abi.len()];
                args[abi.ptr(0)] = x_buf.ptr as i64;
                args[abi.ptr(1)] = out.ptr as i64;
                args[abi.outer()] = outer as i64;
                args[abi.len_slot()] = len as i64;
                args[abi.inner()] = inner as i64;
                let work = outer * len * inner;
                let split = crate::parallel::Split { range: outer, work, align: 1 };
                let slots = crate::parallel::ArgSlots { begin: abi.begin(), record: None };
                // SAFETY: `x` is a finished contiguous `[outer, len, inner]` array of its dtype,
                // `out` an `i64` buffer of `outer * inner` elements (the node's shape, with or
                // without the kept unit axis); each outer position is written by one call.
                unsafe {
                    crate::parallel::call_split(arg.func, &mut args, slots, split, self.threads)
                }
            }
            Step::Scatter { node } => {
                let n = self.graph.node(*node);
                let Op::Index { kind, axis } = n.op else {
                    return Err(RunError::Internal("scatter step of another op".into()));
                };
                let mut inputs = Vec::with_capacity(n.inputs.len());
                for v in &n.inputs {
                    inputs.push((st.buf(*v)?, st.shape(&self.graph.ty(*v).shape)?));
                }
                let shape = st.shape(&n.ty.shape)?;
                let out = st.alloc(*node, n.ty.dtype, &shape)?;
                // SAFETY: inputs are finished values alive in `st`, `out` a fresh or caller
                // buffer of the node's bound shape (never an input's).
                unsafe { scatter::run_scatter(*node, kind, axis, &inputs, out) }
            }
            Step::Window { node, epilogue } => self.run_window(st, kernel, *node, epilogue),
            #[cfg(feature = "jit")]
            Step::Interp { .. } => self.run_interp(st, kernel, externs),
            // The AOT runtime never assembles such a step (`CompiledFunction::from_object`
            // refuses it), and leaves the interpreter out.
            #[cfg(not(feature = "jit"))]
            Step::Interp { .. } => {
                let _ = externs;
                Err(RunError::Internal("a step of the interpreter in an AOT function".into()))
            }
        }
    }

    /// A window op's native kernel, then its epilogue (per image during a forward
    /// convolution when the kernel can, else over the whole output).
    fn run_window(
        &self,
        st: &mut State,
        kernel: &Kernel,
        node: ValueId,
        epilogue: &Option<Epilogue>,
    ) -> Result<(), RunError> {
        let n = self.graph.node(node);
        let Op::Window { kind, attrs } = &n.op else {
            return Err(RunError::Internal("window step of another op".into()));
        };
        let mut inputs = Vec::with_capacity(n.inputs.len());
        for v in &n.inputs {
            inputs.push((st.buf(*v)?, st.shape(&self.graph.ty(*v).shape)?));
        }
        let shape = st.shape(&n.ty.shape)?;
        let out = st.alloc(node, n.ty.dtype, &shape)?;
        // SAFETY: inputs are finished values alive in `st`, `out` a fresh or caller buffer of
        // the node's bound shape (never an input's); the epilogue only reads the result.
        self.with_epilogue(st, kernel, epilogue, |tiles| unsafe {
            window::run_window(node, *kind, attrs, &inputs, out, &shape, self.threads, tiles)
        })
    }

    /// Runs `body` (a native kernel: a matmul, a convolution) with the kernel's JIT epilogue:
    /// the epilogue's arguments and outputs are set up first, so `body` can run it on each
    /// block of the output as soon as that block is final (the `TileEpilogue` it is given);
    /// if `body` leaves it `Pending`, it runs over the whole output afterwards.
    fn with_epilogue(
        &self,
        st: &mut State,
        kernel: &Kernel,
        epilogue: &Option<Epilogue>,
        body: impl FnOnce(Option<&matmul::TileEpilogue>) -> Result<matmul::EpilogueRun, RunError>,
    ) -> Result<(), RunError> {
        let call = match epilogue {
            Some(Epilogue { plan, func, widened }) => {
                let domain = st.dims(&kernel.domain)?;
                let call = self.prepare_loop(st, plan, &domain, false, widened.as_ref())?;
                call.map(|c| (c, plan, *func))
            }
            None => None,
        };
        let run_steps = |lo: usize, hi: usize| {
            if let Some((c, _, func)) = &call {
                // SAFETY: `body` calls this only for steps whose output is final; the
                // arguments describe live buffers (see `prepare_loop`).
                unsafe { c.call_range(*func, lo, hi) };
            }
        };
        let tiles = call.as_ref().and_then(|(c, plan, _)| {
            let unit = c.step_elements(plan)?;
            Some(matmul::TileEpilogue { unit, run: &run_steps })
        });
        let ran = body(tiles.as_ref())?;
        if let (Some((mut c, _, func)), matmul::EpilogueRun::Pending) = (call, ran) {
            // SAFETY: as `run_loop`'s call.
            unsafe { c.call_all(func, self.threads)? };
        }
        Ok(())
    }

    fn run_loop(
        &self,
        st: &mut State,
        plan: &LoopPlan,
        func: KernelFn,
        domain: &[usize],
        checks_empty: bool,
        widened: Option<&Widened>,
    ) -> Result<(), RunError> {
        if let Some(mut call) = self.prepare_loop(st, plan, domain, checks_empty, widened)? {
            // SAFETY: see `prepare_loop`.
            unsafe { call.call_all(func, self.threads)? };
            call.recorded_error(plan)?;
        }
        Ok(())
    }

    /// Binds a loop kernel's arguments (allocating its outputs); `None` when it has nothing
    /// to do.
    fn prepare_loop(
        &self,
        st: &mut State,
        plan: &LoopPlan,
        domain: &[usize],
        checks_empty: bool,
        widened: Option<&Widened>,
    ) -> Result<Option<LoopCall>, RunError> {
        let sizes = plan.sizes(domain);
        // Indices may be computed in 32-bit lanes (`codegen::narrow_index`).
        for op in plan.inputs.iter().filter(|o| o.index) {
            let too_long = sizes.iter().zip(&op.full).find(|(&s, &f)| f && s > i32::MAX as usize);
            if let Some((&s, _)) = too_long {
                return Err(RunError::AxisTooLong { size: s });
            }
        }
        let rank = sizes.len();
        let split = plan.split_axis();
        let (mut kept, mut reduced) = (1usize, 1usize);
        for (&s, &r) in sizes.iter().zip(&plan.reduced) {
            if r {
                reduced *= s;
            } else {
                kept *= s;
            }
        }
        if checks_empty && reduced == 0 {
            let op = plan
                .nodes
                .iter()
                .find(|n| {
                    matches!(
                        n.op,
                        Op::Reduce { op: tfn_ir::ReduceOp::Max | tfn_ir::ReduceOp::Min, .. }
                    )
                })
                .map_or_else(|| "max".to_string(), |n| n.op.name());
            return Err(RunError::ZeroSizeReduction { op });
        }
        let abi = LoopAbi::of(plan);
        if abi.rank != rank {
            return Err(RunError::Internal(format!("{rank} loop sizes for rank {}", abi.rank)));
        }
        let mut args: KernelArgs = smallvec::smallvec![0; abi.len()];
        // Inputs read through a view: the source buffer at the view's base offset, strides
        // from the source's bound shape.
        // (operand index, strides) of the view inputs; empty (no allocation) without views.
        let mut view_strides: Vec<(usize, Vec<isize>)> = Vec::new();
        // Indexed-read sources: (axis size, axis stride) per slot.
        let mut index_slots: Vec<(i64, i64, i64)> = Vec::new();
        // Per slot, the index buffer and its element count (to name the first bad index).
        let mut index_bufs: Vec<(crate::buffers::RawBuf, usize)> = Vec::new();
        for (k, op) in plan.inputs.iter().enumerate() {
            if op.index {
                // An iota's index operand has no buffer; the kernel never dereferences it.
                continue;
            }
            let buf = st.buf(op.value)?;
            if let Some(role) = &op.indexed {
                if let (IndexedRole::Source { kind, axis, .. }, Some(&node)) =
                    (role, plan.reads.get(index_slots.len()))
                {
                    let x = st.shape(&self.graph.ty(op.value).shape)?;
                    let index = self.graph.node(node).inputs.get(1).copied();
                    let index = index.ok_or_else(|| RunError::Internal("read index".into()))?;
                    let is = st.shape(&self.graph.ty(index).shape)?;
                    kind.check_sizes(*axis, &x, &is).map_err(|message| RunError::Shape {
                        node,
                        op: kind.name().into(),
                        message,
                    })?;
                    let (strides, n, sd) = role
                        .source_strides(&x)
                        .ok_or_else(|| RunError::Internal("indexed source".into()))?;
                    let inner = plan.inner_stride(&strides) as i64;
                    index_slots.push((n as i64, sd as i64, inner));
                    index_bufs.push((st.buf(index)?, is.iter().product()));
                    view_strides.push((k, strides));
                }
            }
            args[abi.ptr(k)] = match &op.view {
                None => buf.ptr as i64,
                Some((view, _)) => {
                    let source = st.shape(&self.graph.ty(op.value).shape)?;
                    let (base, strides) = view.layout(&source).ok_or_else(|| {
                        RunError::Internal(format!("view of {} does not fit {source:?}", op.value))
                    })?;
                    let bytes = base * op.dtype.size_bytes() as isize;
                    view_strides.push((k, strides));
                    (buf.ptr as i64).wrapping_add(bytes as i64)
                }
            };
        }
        for (i, op) in plan.outputs.iter().enumerate() {
            let buf = match st.take_direct(op.value) {
                Some(buf) => buf,
                None => {
                    let shape = st.shape(&self.graph.ty(op.value).shape)?;
                    // The value's own dtype: a widened kernel's 16-bit output is an f32
                    // operand of its plan (`widened.rs`).
                    st.alloc(op.value, self.graph.ty(op.value).dtype, &shape)?
                }
            };
            args[abi.ptr(plan.inputs.len() + i)] = buf.ptr as i64;
        }
        // Random nodes' counter operands have no buffer: their slots stay 0.
        for (j, &s) in sizes.iter().enumerate() {
            args[abi.size(j)] = s as i64;
        }
        for (k, op) in plan.operands().enumerate() {
            let slots = &mut args[abi.strides(k)];
            match view_strides.iter().find(|(j, _)| *j == k) {
                Some((_, strides)) => plan.write_view_strides(slots, op, strides),
                None => LoopPlan::write_outer_strides(slots, &op.full, &sizes),
            }
        }
        let begin_slot = abi.begin();
        if index_slots.len() != abi.index_sources {
            return Err(RunError::Internal(format!(
                "{} indexed sources bound for {}",
                index_slots.len(),
                abi.index_sources
            )));
        }
        let record = if index_slots.is_empty() {
            None
        } else {
            let record = Box::new([0i64; 4]);
            let slot = abi.error_record();
            args[slot] = &*record as *const [i64; 4] as i64;
            let sizes = index_slots.iter().map(|(n, _, _)| *n as usize);
            let reads: Vec<ReadIndex> = index_bufs
                .into_iter()
                .zip(sizes)
                .map(|((buf, count), size)| ReadIndex {
                    ptr: buf.ptr as usize,
                    dtype: buf.dtype,
                    count,
                    size,
                })
                .collect();
            for (q, (n, sd, inner)) in index_slots.into_iter().enumerate() {
                args[abi.index_size(q)] = n;
                args[abi.index_stride(q)] = sd;
                args[abi.index_inner(q)] = inner;
            }
            Some(ErrorRecord { record, slot, reads })
        };
        let total = kept * reduced;
        // A kernel that reads nothing (an empty result) or that would read an empty axis (a
        // bad index makes the kernel read slot 0 instead, which an empty axis lacks) checks
        // its indices here, before any read: every index of an empty axis is out of range.
        let empty = kept == 0 || (total == 0 && !plan.reduces);
        if let Some(r) = &record {
            if empty || r.reads.iter().any(|read| read.size == 0) {
                r.check_unread(plan)?;
            }
        }
        if empty {
            return Ok(None);
        }
        // Splitting the inner axis keeps whole unrolled vector blocks per chunk (and output
        // cache lines apart), so every element is computed by the same code on any split.
        let align = if split + 1 == rank { 64 } else { 1 };
        let widened = widened.map(|w| w.call(plan, &sizes, self.stream));
        let chunked = if widened.is_none() { ChunkedReduce::of(plan, &sizes) } else { None };
        let streamed = if widened.is_none()
            && chunked.is_none()
            && record.is_none()
            && streamed::may_stream(self.stream, total)
            && streamed::streamable(plan)
        {
            streamed::StreamedCall::of(self.stream, plan, &sizes)
        } else {
            None
        };
        Ok(Some(LoopCall {
            args,
            begin_slot,
            sizes,
            split,
            total,
            align,
            record,
            chunked,
            widened,
            streamed,
        }))
    }

    /// Runs one kernel's nodes with the interpreter, on a copy of the graph with concrete shapes.
    #[cfg(feature = "jit")]
    fn run_interp(
        &self,
        st: &mut State,
        kernel: &Kernel,
        externs: &dyn ExternKernels,
    ) -> Result<(), RunError> {
        let mut sub = Graph { name: format!("{}.kernel", self.graph.name), ..Graph::default() };
        let mut map: HashMap<ValueId, ValueId> = HashMap::new();
        let mut args = Vec::with_capacity(kernel.inputs.len());
        let concrete = |st: &State, ty: &TensorType| -> Result<TensorType, RunError> {
            let dims = st.shape(&ty.shape)?;
            Ok(TensorType {
                dtype: ty.dtype,
                shape: Shape(dims.iter().map(|&d| tfn_ir::Dim::Const(d as u64)).collect()),
            })
        };
        for (i, v) in kernel.inputs.iter().enumerate() {
            let ty = concrete(st, self.graph.ty(*v))?;
            let shape = st.shape(&self.graph.ty(*v).shape)?;
            let buf = st.buf(*v)?;
            // SAFETY: the input is a finished value alive in `st`.
            args.push(buffers::view_to_tensor(&unsafe { buffers::buf_view(buf, &shape) }));
            sub.params.push(GraphParam { name: v.to_string(), ty: ty.clone() });
            map.insert(*v, sub.push(Op::Param(i as u32), Vec::new(), ty, Default::default()));
        }
        for v in &kernel.nodes {
            let node: &Node = self.graph.node(*v);
            let inputs: Vec<ValueId> =
                node.inputs.iter().filter_map(|u| map.get(u).copied()).collect();
            // (`full` and `rand_like` only read their shape operand's shape.)
            let shape_only = matches!(node.op, Op::Full { .. } | Op::Random { .. });
            if inputs.len() != node.inputs.len() && !shape_only {
                return Err(RunError::Internal(format!("kernel input of {v} missing")));
            }
            let ty = concrete(st, &node.ty)?;
            map.insert(*v, sub.push(node.op.clone(), inputs, ty, node.origin.clone()));
        }
        sub.outputs = kernel.outputs.iter().filter_map(|v| map.get(v).copied()).collect();
        let results = interp::run_with_externs(&sub, &args, externs)?;
        for (v, mut t) in kernel.outputs.iter().zip(results) {
            if let Some(dst) = st.direct(*v).map(|d| d.buf) {
                let bytes = t.shape().iter().product::<usize>() * t.dtype().size_bytes();
                let src = buffers::tensor_buf(&mut t);
                // SAFETY: the caller buffer has this value's shape and dtype (checked on entry).
                unsafe { std::ptr::copy_nonoverlapping(src.ptr, dst.ptr, bytes) };
                st.bufs[v.index()] = Some(dst);
            } else {
                st.bufs[v.index()] = Some(buffers::tensor_buf(&mut t));
                st.owned.put(v.index(), t);
            }
        }
        Ok(())
    }
}
