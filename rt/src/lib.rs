//! `libtfn_rt.a`: the runtime of the objects `tfnc build` writes, with a C ABI.
//!
//! An object's entry point `<prefix>_<fn>(inputs, outputs)` calls [`tfn_rt_call`] with the
//! object's descriptor (layout in `tfn_backend::aot`). At the first call of a function (per
//! thread count) the runtime parses the planned graph the object embeds, fuses it again and
//! assembles the executor's steps with the object's kernels, each checked against its
//! fingerprint; later calls find it in a cache. A function with loops embeds its plan: every
//! stage is loaded so, and the loops run through the session's own forward runner
//! (`tfn_ir::program::run`). Nothing is compiled: the kernels are the
//! object's machine code, GEMMs, copies and window ops are this library's Rust code, and the
//! wide math routines kernels import are exported here under their symbol names.
//!
//! Errors are codes ([`TFN_OK`], ...) with a message per thread ([`tfn_rt_error_message`]);
//! a panic never crosses the C boundary. `tfn_backend::aot::c_abi` defines the ABI (the C
//! declarations every generated header starts with).

pub mod api;
pub use api::{
    half, Attr, Element, Error, Module, Options, OutputMut, Param, Scalar, Signature, Tensor,
    TensorValue, Value,
};

use ndarray::ShapeBuilder;
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_char, c_void, CString};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use tfn_backend::aot::c_abi::{
    dtype_code, dtype_of_code, TfnBuffer, MAX_RANK, TFN_ERR_ARGUMENT, TFN_ERR_INTERNAL,
    TFN_ERR_MODULE, TFN_ERR_RUN, TFN_OK,
};
use tfn_backend::aot::{self, BlobBody, FunctionMeta, ProgramStage};
use tfn_backend::{CompileOptions, CompiledFunction, RunError, TensorView, TensorViewMut};
use tfn_ir::program::run::Plan;
use tfn_ir::program::vjp::{self, vjp_signature};
pub use tfn_ir::DType;
use tfn_ir::{Graph, TensorType};

/// A failure: its status code and message.
struct Failure(i32, String);

impl Failure {
    fn argument(message: impl Into<String>) -> Failure {
        Failure(TFN_ERR_ARGUMENT, message.into())
    }
    fn module(message: impl Into<String>) -> Failure {
        Failure(TFN_ERR_MODULE, message.into())
    }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Threads for functions loaded from now on (0: every core).
static THREADS: AtomicUsize = AtomicUsize::new(0);

/// A function loaded from an object: its metadata and executor.
struct Loaded {
    meta: FunctionMeta,
    exec: Exec,
}

/// What runs a loaded function.
enum Exec {
    /// A straight-line function: one executor.
    Graph(CompiledFunction),
    /// A function with loops: its plan of executors and the types of its outputs; for the
    /// vjp of one (`vjp`), its signature (the arguments, then one cotangent per result) and
    /// the gradients' types.
    Program {
        plan: Plan<ProgramStage<CompiledFunction>>,
        results: Vec<TensorType>,
        vjp: Option<Graph>,
    },
}

impl Loaded {
    /// Runs the function on `inputs`; returns its results.
    fn run(&self, inputs: &[TensorView<'_>]) -> Result<Vec<Tensor>, RunError> {
        match &self.exec {
            Exec::Graph(f) => f.run(inputs),
            Exec::Program { plan, vjp, .. } => {
                let values: Vec<TensorValue> =
                    inputs.iter().cloned().map(TensorValue::from).collect();
                let Some(signature) = vjp else {
                    return plan.run(&values, &mut aot::ObjectStages);
                };
                let (args, cots) = values.split_at(plan.inputs().min(values.len()));
                let stages = &mut aot::ObjectStages;
                let (_, grads) = vjp::vjp(plan, args, cots, stages, false, false)?;
                // One gradient per float argument, in order (zeros where none reaches it), as
                // `Session::vjp`.
                let mut out = Vec::new();
                for ((a, p), g) in args.iter().zip(&signature.params).zip(grads) {
                    if p.ty.dtype.is_float() {
                        out.push(g.unwrap_or_else(|| vjp::zeros(a.dtype(), a.shape())));
                    }
                }
                Ok(out)
            }
        }
    }

    /// Runs the function on `inputs` into the caller's `outputs`.
    fn run_into(
        &self,
        inputs: Vec<TensorView<'_>>,
        outputs: &mut [TensorViewMut<'_>],
    ) -> Result<(), RunError> {
        match &self.exec {
            Exec::Graph(f) => f.run_into(&inputs, outputs),
            Exec::Program { .. } => {
                let results = self.run(&inputs)?;
                for (index, (r, out)) in results.iter().zip(outputs.iter_mut()).enumerate() {
                    if !tfn_backend::assign_tensor(out, r)? {
                        return Err(RunError::OutputType {
                            index,
                            expected_dtype: r.dtype(),
                            expected_shape: r.shape().to_vec(),
                            got_dtype: out.dtype(),
                            got_shape: out.shape().to_vec(),
                        });
                    }
                }
                Ok(())
            }
        }
    }

    /// The parameters and symbols: binding them gives every size.
    fn signature(&self) -> &Graph {
        match &self.exec {
            Exec::Graph(f) => f.graph(),
            Exec::Program { vjp: Some(signature), .. } => signature,
            Exec::Program { plan, .. } => &plan.signature,
        }
    }

    /// The type of output `k`.
    fn output_type(&self, k: usize) -> Option<&TensorType> {
        match &self.exec {
            Exec::Graph(f) => f.graph().outputs.get(k).map(|v| f.graph().ty(*v)),
            Exec::Program { results, .. } => results.get(k),
        }
    }

    fn outputs(&self) -> usize {
        match &self.exec {
            Exec::Graph(f) => f.graph().outputs.len(),
            Exec::Program { results, .. } => results.len(),
        }
    }
}

/// Loaded functions by (descriptor address, function, threads).
type Cache = Mutex<HashMap<(usize, usize, usize), Arc<Loaded>>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(Cache::default)
}

/// Runs `f`, turning a failure or a panic into a status code and this thread's message.
fn status(f: impl FnOnce() -> Result<(), Failure>) -> i32 {
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|_| Err(Failure(TFN_ERR_INTERNAL, "panic in the tfn runtime".into())));
    match result {
        Ok(()) => TFN_OK,
        Err(Failure(code, message)) => {
            let message = CString::new(message.replace('\0', " ")).unwrap_or_default();
            LAST_ERROR.with(|e| *e.borrow_mut() = message);
            code
        }
    }
}

/// See `tfn_backend::aot::c_abi::C_DECLARATIONS`.
#[no_mangle]
pub extern "C" fn tfn_rt_error_message() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// See `tfn_backend::aot::c_abi::C_DECLARATIONS`.
#[no_mangle]
pub extern "C" fn tfn_rt_set_threads(threads: i64) {
    THREADS.store(usize::try_from(threads).unwrap_or(0), Ordering::Relaxed);
}

/// A task of the host's parallel-for: `task(task_data, index)`.
pub type TfnTaskFn = unsafe extern "C" fn(task_data: *mut c_void, index: i64);
/// The host's parallel-for: see `tfn_backend::aot::c_abi::C_DECLARATIONS`.
pub type TfnParallelForFn = unsafe extern "C" fn(
    user: *mut c_void,
    count: i64,
    max_threads: i64,
    task: TfnTaskFn,
    task_data: *mut c_void,
);

/// Calls the task `task_data` points at (a `&(dyn Fn(usize) + Sync)`) for `index`; a task
/// never unwinds (the pool's chunks catch their panics).
unsafe extern "C" fn run_task(task_data: *mut c_void, index: i64) {
    if task_data.is_null() {
        return;
    }
    // SAFETY: `task_data` is the `&&dyn Fn` `set_parallel_for`'s hook passed, alive until the
    // host's parallel-for returns (the contract of `tfn_rt_set_parallel_for`).
    let task = unsafe { &*(task_data as *const &(dyn Fn(usize) + Sync)) };
    if let Ok(index) = usize::try_from(index) {
        task(index);
    }
}

/// See `tfn_backend::aot::c_abi::C_DECLARATIONS`.
#[no_mangle]
pub extern "C" fn tfn_rt_set_parallel_for(
    parallel_for: Option<TfnParallelForFn>,
    user: *mut c_void,
) {
    let Some(parallel_for) = parallel_for else {
        tfn_backend::workers::set_parallel_for(None);
        return;
    };
    let user = user as usize;
    tfn_backend::workers::set_parallel_for(Some(Box::new(
        move |chunks: usize, threads: usize, task: &(dyn Fn(usize) + Sync)| {
            let data = &task as *const &(dyn Fn(usize) + Sync) as *mut c_void;
            let (count, threads) = (chunks as i64, threads as i64);
            // SAFETY: the host's function, called as documented; `data` outlives the call.
            unsafe { parallel_for(user as *mut c_void, count, threads, run_task, data) };
        },
    )));
}

fn threads() -> usize {
    match THREADS.load(Ordering::Relaxed) {
        0 => {
            // Every core, asked once (`available_parallelism` reads cgroup files).
            static CORES: OnceLock<usize> = OnceLock::new();
            *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        }
        n => n,
    }
}

/// One function's entry of a descriptor, with the kernels of the tier this CPU runs.
struct FunctionImage {
    blob: &'static str,
    kernels: Vec<(*const u8, u64)>,
    tier: String,
}

/// Reads function `index` of the descriptor at `module`, checking the header and the host.
///
/// # Safety
/// `module` is the descriptor of an object linked into this program (or null).
unsafe fn read_function(module: *const c_void, index: usize) -> Result<FunctionImage, Failure> {
    if module.is_null() {
        return Err(Failure::argument("null module"));
    }
    let words = module as *const u64;
    // SAFETY: the header words exist in every descriptor; the magic is checked first.
    let word = |i: usize| unsafe { words.add(i).read() };
    if word(0) != aot::MAGIC {
        return Err(Failure::module("not a tfn module descriptor"));
    }
    if word(1) != aot::VERSION {
        return Err(Failure::module(format!(
            "the object has descriptor version {}, this runtime reads version {}",
            word(1),
            aot::VERSION
        )));
    }
    let functions = word(2) as usize;
    if index >= functions {
        return Err(Failure::argument(format!(
            "function {index} of a module of {functions} function(s)"
        )));
    }
    // SAFETY: the descriptor's pointers and lengths were written by `tfnc build`.
    let text = |ptr: u64, len: u64| -> Result<&'static str, Failure> {
        let bytes = unsafe { std::slice::from_raw_parts(ptr as *const u8, len as usize) };
        std::str::from_utf8(bytes).map_err(|_| Failure::module("a descriptor text is not UTF-8"))
    };
    let info = text(word(3), word(4))?;
    let tiers = word(5) as usize;
    // Set but empty counts as unset (as `TFN_RT_LIB` does for `tfnc build`).
    let requested = std::env::var("TFN_RT_TIER").ok().filter(|v| !v.trim().is_empty());
    let (tier, name) = aot::choose_tier(info, requested.as_deref()).map_err(Failure::module)?;
    if tier >= tiers {
        return Err(Failure::module(format!("tier {tier} of an object of {tiers} tier(s)")));
    }
    let base = aot::HEADER_WORDS + aot::function_words(tiers) * index;
    let blob = text(word(base), word(base + 1))?;
    let n = word(base + 3) as usize;
    let (fps, table) = (word(base + 2) as *const u64, word(base + 4 + tier) as *const usize);
    let kernels = (0..n)
        // SAFETY: both tables have `n` entries.
        .map(|k| unsafe { (table.add(k).read() as *const u8, fps.add(k).read()) })
        .collect();
    Ok(FunctionImage { blob, kernels, tier: name })
}

/// The loaded function `index` of `module` for the current thread count.
///
/// # Safety
/// As [`read_function`].
unsafe fn load(module: *const c_void, index: usize) -> Result<Arc<Loaded>, Failure> {
    // SAFETY: the caller's contract.
    unsafe { load_for(module, index, threads()) }
}

/// [`load`] for `threads` threads.
///
/// # Safety
/// As [`read_function`].
unsafe fn load_for(
    module: *const c_void,
    index: usize,
    threads: usize,
) -> Result<Arc<Loaded>, Failure> {
    let key = (module as usize, index, threads);
    let poisoned = || Failure(TFN_ERR_INTERNAL, "poisoned runtime cache".into());
    if let Some(hit) = cache().lock().map_err(|_| poisoned())?.get(&key) {
        return Ok(hit.clone());
    }
    let started = std::time::Instant::now();
    // SAFETY: the caller's contract.
    let image = unsafe { read_function(module, index)? };
    let read = started.elapsed();
    let (meta, body) = FunctionMeta::parse_blob(image.blob).map_err(Failure::module)?;
    // (The SIMD level is the object's: nothing is compiled here.)
    let options = CompileOptions {
        threads,
        simd: tfn_backend::SimdLevel::V128,
        stream: tfn_backend::Streaming::from_env(),
    };
    // SAFETY: the addresses are the object's kernels, each next to its own fingerprint.
    let exec = unsafe {
        match body {
            BlobBody::Graph(text) => {
                aot::load_graph(text, &image.kernels, &options).map(Exec::Graph)
            }
            BlobBody::Program(text) => aot::load_program(text, &image.kernels, &options)
                .map(|(plan, results)| Exec::Program { plan, results, vjp: None }),
            BlobBody::ProgramVjp(text) => {
                aot::load_program(text, &image.kernels, &options).map(|(plan, results)| {
                    let (signature, grads) = vjp_signature(&plan.signature, &results);
                    Exec::Program { plan, results: grads, vjp: Some(signature) }
                })
            }
        }
    }
    .map_err(|e| Failure::module(format!("`{}`: {e}", meta.name)))?;
    if std::env::var_os("TFN_LOG_COMPILES").is_some_and(|v| v != "0") {
        eprintln!(
            "tfn-rt: loaded `{}` ({} kernel(s) of tier {}, {threads} thread(s)) in {:.1} µs \
             (descriptor and CPU check {:.1} µs, then parse, fuse, assemble; nothing compiled)",
            meta.name,
            image.kernels.len(),
            image.tier,
            started.elapsed().as_secs_f64() * 1e6,
            read.as_secs_f64() * 1e6
        );
    }
    let loaded = Arc::new(Loaded { meta, exec });
    cache().lock().map_err(|_| poisoned())?.insert(key, loaded.clone());
    Ok(loaded)
}

/// The sizes and strides of a buffer, checked.
fn dims(b: &TfnBuffer, what: &str) -> Result<(DType, Vec<usize>, Vec<usize>), Failure> {
    let dtype = dtype_of_code(b.dtype)
        .ok_or_else(|| Failure::argument(format!("{what}: unknown dtype code {}", b.dtype)))?;
    let rank = usize::try_from(b.rank)
        .ok()
        .filter(|r| *r <= MAX_RANK)
        .ok_or_else(|| Failure::argument(format!("{what}: rank {} (at most 8)", b.rank)))?;
    let nonneg = |v: &[i64], name: &str| {
        v.iter()
            .map(|&x| {
                usize::try_from(x)
                    .map_err(|_| Failure::argument(format!("{what}: negative {name} {x}")))
            })
            .collect::<Result<Vec<usize>, _>>()
    };
    let sizes = nonneg(&b.sizes[..rank], "size")?;
    let strides = nonneg(&b.strides[..rank], "stride")?;
    let elements = sizes.iter().try_fold(1usize, |n, &s| n.checked_mul(s));
    if elements.is_none() {
        return Err(Failure::argument(format!("{what}: the sizes overflow")));
    }
    if b.data.is_null() && elements != Some(0) {
        return Err(Failure::argument(format!("{what}: null data")));
    }
    // Every element's address must be one: strides whose byte offsets wrap around would put
    // several elements at one address (and defeat the overlap check).
    if elements != Some(0) && span(b).is_none() {
        return Err(Failure::argument(format!(
            "{what}: its sizes and strides reach past the end of the address space"
        )));
    }
    Ok((dtype, sizes, strides))
}

/// The buffers at `ptr` as a slice (`n` of them; none when `n` is 0).
///
/// # Safety
/// `ptr` points at `n` buffers (or `n` is 0).
unsafe fn buffers<'a>(
    ptr: *const TfnBuffer,
    n: i64,
    what: &str,
) -> Result<&'a [TfnBuffer], Failure> {
    let n = usize::try_from(n).map_err(|_| Failure::argument(format!("{n} {what}")))?;
    if n == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(Failure::argument(format!("null {what}")));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(ptr, n) })
}

/// Checks input buffers against the function: count, declared sizes.
fn check_inputs(loaded: &Loaded, inputs: &[TfnBuffer]) -> Result<Vec<Vec<usize>>, Failure> {
    let params = &loaded.signature().params;
    if inputs.len() != params.len() {
        return Err(Failure::argument(format!(
            "`{}` takes {} input(s), got {}",
            loaded.meta.name,
            params.len(),
            inputs.len()
        )));
    }
    let mut shapes = Vec::with_capacity(inputs.len());
    for (i, (b, p)) in inputs.iter().zip(params).enumerate() {
        let name = loaded.meta.params.get(i).map_or(p.name.as_str(), |(n, _)| n.as_str());
        let (dtype, sizes, _) = dims(b, &format!("input `{name}`"))?;
        if dtype != p.ty.dtype {
            return Err(Failure::argument(format!(
                "input `{name}` must be {}, got {dtype}",
                p.ty.dtype
            )));
        }
        if let Some((_, declared)) = loaded.meta.params.get(i) {
            let fits = declared.len() == sizes.len()
                && declared.iter().zip(&sizes).all(|(d, s)| d.is_none_or(|d| d == *s));
            if !fits {
                let want: Vec<String> =
                    declared.iter().map(|d| d.map_or("?".into(), |n| n.to_string())).collect();
                return Err(Failure::argument(format!(
                    "input `{name}` must have sizes [{}], got {sizes:?}",
                    want.join(", ")
                )));
            }
        }
        shapes.push(sizes);
    }
    Ok(shapes)
}

/// An input buffer as a tensor view.
///
/// # Safety
/// The buffer describes live memory of its dtype.
unsafe fn view<'a>(b: &TfnBuffer, what: &str) -> Result<TensorView<'a>, Failure> {
    let (dtype, sizes, strides) = dims(b, what)?;
    let shape = ndarray::IxDyn(&sizes).strides(ndarray::IxDyn(&strides));
    macro_rules! view {
        ($t:ty) => {{
            let ptr = if b.data.is_null() {
                std::ptr::NonNull::<$t>::dangling().as_ptr()
            } else {
                b.data as *const $t
            };
            // SAFETY: the caller's contract; sizes and strides are non-negative.
            TensorView::from(unsafe { ndarray::ArrayViewD::<$t>::from_shape_ptr(shape, ptr) })
        }};
    }
    Ok(match dtype {
        DType::F32 => view!(f32),
        DType::F64 => view!(f64),
        DType::I32 => view!(i32),
        DType::I64 => view!(i64),
        DType::Bool => view!(bool),
        DType::I8 => view!(i8),
        DType::U8 => view!(u8),
        DType::F16 => view!(half::f16),
        DType::BF16 => view!(half::bf16),
    })
}

/// Whether two indices of a non-empty buffer of `sizes` reach the same element through
/// `strides`: walking the axes from the smallest stride up, each stride (of an axis longer
/// than 1) must pass the extent of the axes before it (ndarray's rule for mutable views).
fn overlaps(sizes: &[usize], strides: &[usize]) -> bool {
    let mut axes: Vec<usize> = (0..sizes.len()).filter(|&a| sizes[a] > 1).collect();
    axes.sort_by_key(|&a| strides[a]);
    let mut extent = 0usize;
    for a in axes {
        if strides[a] <= extent {
            return true;
        }
        extent = extent.saturating_add((sizes[a] - 1).saturating_mul(strides[a]));
    }
    false
}

/// The bytes a buffer spans, from its first element to the end of its last (`None` when it
/// has no element). [`dims`] has checked it; read here without allocating, since every call
/// compares each output with every other buffer.
fn span(b: &TfnBuffer) -> Option<(usize, usize)> {
    let size = dtype_of_code(b.dtype)?.size_bytes();
    let rank = usize::try_from(b.rank).ok().filter(|r| *r <= MAX_RANK)?;
    let mut last = 0usize;
    for (&n, &s) in b.sizes[..rank].iter().zip(&b.strides[..rank]) {
        let (n, s) = (usize::try_from(n).ok()?, usize::try_from(s).ok()?);
        if n == 0 {
            return None;
        }
        last = last.checked_add((n - 1).checked_mul(s)?)?;
    }
    let start = b.data as usize;
    let bytes = last.checked_add(1)?.checked_mul(size)?;
    Some((start, start.checked_add(bytes)?))
}

/// Refuses outputs whose memory overlaps another output's or an input's: the kernels write
/// outputs while reading inputs, so an overlap would give results that depend on the order
/// of the writes. The test is on spans (first to last byte), as NumPy's `may_share_memory`.
fn check_disjoint(
    inputs: &[TfnBuffer],
    outputs: &[TfnBuffer],
    names: impl Fn(usize) -> String,
) -> Result<(), Failure> {
    let meets = |a: (usize, usize), b: (usize, usize)| a.0 < b.1 && b.0 < a.1;
    for (k, out) in outputs.iter().enumerate() {
        let Some(o) = span(out) else { continue };
        for (j, other) in outputs[..k].iter().enumerate() {
            if span(other).is_some_and(|p| meets(o, p)) {
                return Err(Failure::argument(format!(
                    "output {k}: its memory overlaps output {j}'s (outputs must not overlap)"
                )));
            }
        }
        for (i, input) in inputs.iter().enumerate() {
            if span(input).is_some_and(|p| meets(o, p)) {
                return Err(Failure::argument(format!(
                    "output {k}: its memory overlaps input `{}`'s (outputs must not overlap \
                     the inputs; write to a separate buffer)",
                    names(i)
                )));
            }
        }
    }
    Ok(())
}

/// The sizes of a call with inputs of `shapes` (checked by `check_inputs`), for computing
/// its outputs' shapes (no size limit: nothing is allocated here).
fn call_sizes(
    loaded: &Loaded,
    shapes: &[Vec<usize>],
) -> Result<Vec<usize>, tfn_ir::bind::BindError> {
    let shapes: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
    let none = tfn_ir::bind::Allocated::Only(&[]);
    tfn_ir::bind::bind_sizes_allocating(loaded.signature(), &shapes, none)
}

/// Refuses an output buffer of the wrong dtype or sizes, before an overlap is reported (an
/// overlap with an input is a consequence of a wrong size more often than not; the call
/// itself checks the outputs' types). Inputs whose sizes do not bind are left to the call.
fn check_output_types(
    loaded: &Loaded,
    shapes: &[Vec<usize>],
    outs: &[TfnBuffer],
) -> Result<(), Failure> {
    let Ok(sizes) = call_sizes(loaded, shapes) else { return Ok(()) };
    for (k, out) in outs.iter().enumerate() {
        let Some(ty) = loaded.output_type(k) else { continue };
        let expected = tfn_ir::bind::concrete_shape(&ty.shape, &sizes);
        let (dtype, got, _) = dims(out, &format!("output {k}"))?;
        if dtype != ty.dtype || got != expected {
            return Err(Failure::argument(format!(
                "output {k} must be {}{expected:?}, got {dtype}{got:?}",
                ty.dtype
            )));
        }
    }
    Ok(())
}

/// An output buffer as a mutable tensor view.
///
/// # Safety
/// The buffer describes live, writable memory of its dtype that nothing else aliases.
unsafe fn view_mut<'a>(b: &TfnBuffer, what: &str) -> Result<TensorViewMut<'a>, Failure> {
    let (dtype, sizes, mut strides) = dims(b, what)?;
    if sizes.contains(&0) {
        // An empty output has no element to overlap, whatever its strides: the row-major
        // strides of sizes like `[3, 0]` (what `tfn_rt_output_shape` and
        // `tfn_buffer_row_major` give) are `[0, 1]`. Its view takes strides that cannot
        // overlap (row-major over the sizes with 0 read as 1).
        let mut stride = 1usize;
        for a in (0..sizes.len()).rev() {
            strides[a] = stride;
            stride = stride.saturating_mul(sizes[a].max(1));
        }
    } else if sizes.iter().zip(&strides).any(|(&n, &s)| n > 1 && s == 0) {
        return Err(Failure::argument(format!("{what}: a zero stride in an output")));
    } else if overlaps(&sizes, &strides) {
        return Err(Failure::argument(format!(
            "{what}: its strides {strides:?} make elements overlap (sizes {sizes:?})"
        )));
    }
    let shape = ndarray::IxDyn(&sizes).strides(ndarray::IxDyn(&strides));
    macro_rules! view {
        ($t:ty) => {{
            let ptr = if b.data.is_null() {
                std::ptr::NonNull::<$t>::dangling().as_ptr()
            } else {
                b.data as *mut $t
            };
            // SAFETY: the caller's contract; sizes and strides are non-negative.
            TensorViewMut::from(unsafe { ndarray::ArrayViewMutD::<$t>::from_shape_ptr(shape, ptr) })
        }};
    }
    Ok(match dtype {
        DType::F32 => view!(f32),
        DType::F64 => view!(f64),
        DType::I32 => view!(i32),
        DType::I64 => view!(i64),
        DType::Bool => view!(bool),
        DType::I8 => view!(i8),
        DType::U8 => view!(u8),
        DType::F16 => view!(half::f16),
        DType::BF16 => view!(half::bf16),
    })
}

/// Runs function `fn_index` of the module at `module` (see
/// `tfn_backend::aot::c_abi::C_DECLARATIONS`).
///
/// # Safety
/// `module` is the descriptor of a linked object; `inputs` and `outputs` point at
/// `n_inputs` and `n_outputs` buffers describing live memory (outputs writable, not aliased).
#[no_mangle]
pub unsafe extern "C" fn tfn_rt_call(
    module: *const c_void,
    fn_index: i64,
    inputs: *const TfnBuffer,
    n_inputs: i64,
    outputs: *mut TfnBuffer,
    n_outputs: i64,
) -> i32 {
    status(|| {
        let index =
            usize::try_from(fn_index).map_err(|_| Failure::argument("negative function index"))?;
        // SAFETY: the caller's contract, for every block below.
        let loaded = unsafe { load(module, index)? };
        let ins = unsafe { buffers(inputs, n_inputs, "inputs")? };
        let outs = unsafe { buffers(outputs, n_outputs, "outputs")? };
        let shapes = check_inputs(&loaded, ins)?;
        let n_out = loaded.outputs();
        if outs.len() != n_out {
            return Err(Failure::argument(format!(
                "`{}` has {n_out} output(s), got {} buffer(s)",
                loaded.meta.name,
                outs.len()
            )));
        }
        let views = ins
            .iter()
            .enumerate()
            .map(|(i, b)| unsafe { view(b, &format!("input {i}")) })
            .collect::<Result<Vec<_>, _>>()?;
        let mut out_views = outs
            .iter()
            .enumerate()
            .map(|(i, b)| unsafe { view_mut(b, &format!("output {i}")) })
            .collect::<Result<Vec<_>, _>>()?;
        let params = &loaded.signature().params;
        if let Err(overlap) = check_disjoint(ins, outs, |i| {
            loaded.meta.params.get(i).map_or(params[i].name.clone(), |(n, _)| n.clone())
        }) {
            // A wrong dtype or size is the likelier cause: said first (off the call's path).
            check_output_types(&loaded, &shapes, outs)?;
            return Err(overlap);
        }
        let failure = |e: RunError| {
            let code = match e {
                RunError::Internal(_) => TFN_ERR_INTERNAL,
                // The size limit is a failure of the run (documented so), not of an argument.
                RunError::Bind(tfn_ir::bind::BindError::TooLarge { .. })
                | RunError::Bind(tfn_ir::bind::BindError::Unrepresentable { .. })
                | RunError::Bind(tfn_ir::bind::BindError::Limit(_)) => TFN_ERR_RUN,
                RunError::InputCount { .. }
                | RunError::OutputCount { .. }
                | RunError::InputDType { .. }
                | RunError::OutputType { .. }
                | RunError::LoopShape(_)
                | RunError::Bind(_) => TFN_ERR_ARGUMENT,
                _ => TFN_ERR_RUN,
            };
            // The object's graph took two `?` axes equal where a session broadcasts a size
            // 1 (it specialises each call's size-1 axes; an object holds one graph).
            let hint = match &e {
                RunError::Bind(tfn_ir::bind::BindError::Mismatch { first, second })
                    if [first, second].iter().any(|r| r.shape.get(r.axis) == Some(&1)) =>
                {
                    " (the object was built with these axes equal: to broadcast a size 1 \
                     there, build a signature that declares that axis `1`)"
                }
                _ => "",
            };
            Failure(code, format!("`{}`: {e}{hint}", loaded.meta.name))
        };
        loaded.run_into(views, &mut out_views).map_err(failure)
    })
}

extern "C" {
    fn malloc(size: usize) -> *mut c_void;
    fn free(ptr: *mut c_void);
}

/// See `tfn_backend::aot::c_abi::C_DECLARATIONS`: [`tfn_rt_output_shape`] for every output,
/// `malloc`, then [`tfn_rt_call`].
///
/// # Safety
/// As [`tfn_rt_call`]; the outputs' buffers need not be initialised.
#[no_mangle]
pub unsafe extern "C" fn tfn_rt_call_alloc(
    module: *const c_void,
    fn_index: i64,
    inputs: *const TfnBuffer,
    n_inputs: i64,
    outputs: *mut TfnBuffer,
    n_outputs: i64,
) -> i32 {
    let n = match usize::try_from(n_outputs) {
        Ok(n) if n == 0 || !outputs.is_null() => n,
        _ => return status(|| Err(Failure::argument("null or negative outputs"))),
    };
    let mut allocated: Vec<*mut c_void> = Vec::with_capacity(n);
    let release = |allocated: &mut Vec<*mut c_void>, outputs: *mut TfnBuffer| {
        for (k, p) in allocated.drain(..).enumerate() {
            // SAFETY: `p` came from `malloc`; output `k` exists.
            unsafe {
                free(p);
                (*outputs.add(k)).data = std::ptr::null_mut();
            }
        }
    };
    for k in 0..n {
        // SAFETY: the caller's contract: `outputs` has `n` buffers.
        let out = unsafe { outputs.add(k) };
        let code =
            unsafe { tfn_rt_output_shape(module, fn_index, inputs, n_inputs, k as i64, out) };
        if code != TFN_OK {
            release(&mut allocated, outputs);
            return code;
        }
        // SAFETY: `out` was just filled in.
        let b = unsafe { &mut *out };
        let bytes = (0..b.rank.clamp(0, MAX_RANK as i64) as usize)
            .try_fold(1usize, |n, a| n.checked_mul(b.sizes[a] as usize))
            .zip(dtype_of_code(b.dtype).map(|d| d.size_bytes()))
            .and_then(|(n, size)| n.checked_mul(size));
        let Some(bytes) = bytes else {
            release(&mut allocated, outputs);
            return status(|| Err(Failure(TFN_ERR_RUN, format!("output {k}: the size overflows"))));
        };
        // The size limit before `malloc`: a huge output is refused, not attempted.
        let limit = match tfn_ir::bind::max_tensor_bytes() {
            Ok(limit) => limit,
            Err(e) => {
                release(&mut allocated, outputs);
                return status(|| Err(Failure(TFN_ERR_RUN, e.to_string())));
            }
        };
        if bytes as u64 > limit {
            release(&mut allocated, outputs);
            return status(|| {
                Err(Failure(
                    TFN_ERR_RUN,
                    format!(
                        "output {k} would have {bytes} bytes, more than the limit of {limit} \
                         bytes (TFN_MAX_TENSOR_BYTES)"
                    ),
                ))
            });
        }
        // SAFETY: plain allocation (at least one byte, so a null result is a failure).
        let data = unsafe { malloc(bytes.max(1)) };
        if data.is_null() {
            release(&mut allocated, outputs);
            return status(|| Err(Failure(TFN_ERR_RUN, format!("output {k}: out of memory"))));
        }
        b.data = data;
        allocated.push(data);
    }
    // SAFETY: the caller's contract; the outputs are allocated to their shapes.
    let code = unsafe { tfn_rt_call(module, fn_index, inputs, n_inputs, outputs, n_outputs) };
    if code != TFN_OK {
        release(&mut allocated, outputs);
    }
    code
}

/// See `tfn_backend::aot::c_abi::C_DECLARATIONS`.
///
/// # Safety
/// As [`tfn_rt_call`]; `out` points at one buffer.
#[no_mangle]
pub unsafe extern "C" fn tfn_rt_output_shape(
    module: *const c_void,
    fn_index: i64,
    inputs: *const TfnBuffer,
    n_inputs: i64,
    output: i64,
    out: *mut TfnBuffer,
) -> i32 {
    status(|| {
        let index =
            usize::try_from(fn_index).map_err(|_| Failure::argument("negative function index"))?;
        // SAFETY: the caller's contract.
        let loaded = unsafe { load(module, index)? };
        let ins = unsafe { buffers(inputs, n_inputs, "inputs")? };
        let shapes = check_inputs(&loaded, ins)?;
        let ty = usize::try_from(output)
            .ok()
            .and_then(|o| loaded.output_type(o))
            .ok_or_else(|| Failure::argument(format!("no output {output}")))?;
        let sizes = call_sizes(&loaded, &shapes)
            .map_err(|e| Failure::argument(format!("`{}`: {e}", loaded.meta.name)))?;
        let shape = tfn_ir::bind::concrete_shape(&ty.shape, &sizes);
        if out.is_null() {
            return Err(Failure::argument("null output buffer"));
        }
        // SAFETY: `out` points at one buffer.
        let b = unsafe { &mut *out };
        b.dtype = dtype_code(ty.dtype);
        b.rank = shape.len() as i64;
        let mut stride = 1i64;
        for a in (0..shape.len().min(MAX_RANK)).rev() {
            b.sizes[a] = shape[a] as i64;
            b.strides[a] = stride;
            stride = stride.saturating_mul(shape[a] as i64);
        }
        Ok(())
    })
}
