//! [`Session`]: the library of loaded `.tfn` definitions, the per-signature cache of
//! instantiated and compiled functions, and the calls into them.
//!
//! A call goes: arguments → call signature (dtypes, ranks, which axes are 1, attribute
//! values, contiguity) → cache lookup → on a miss: instantiate (dispatch + inline + infer),
//! optimise, fuse and compile → bind the runtime sizes → run. Sizes are never part of the
//! signature, so a new batch size is a cache hit.

use crate::error::{DiagKind, Error};
use crate::handle::Instantiated;
use crate::signature::{CallKey, CallKind, Prepared};
use crate::value::{OutputMut, TensorValue, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use tfn_backend::{CompileOptions, JitCompiler};
use tfn_frontend::{FsLoader, SourceLoader};
use tfn_ir::interp::ExternKernels;
use tfn_ir::lower::{ArgSpec, DimSpec, ParamSource};
use tfn_ir::{Attr, DType, Library, Tensor};
use tfn_passes::optimize::RuleSet;

/// Which executor runs the compiled functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Backend {
    /// Fused, vectorised Cranelift kernels (the default).
    #[default]
    Jit,
    /// The op-by-op reference interpreter.
    Interp,
}

/// The most threads the doors accept (`tfnc --threads`, Python's `Session(threads=)`): a
/// pool is made of them, and more than this is a mistake, not a machine.
pub const MAX_THREADS: usize = 1024;

/// How a [`Session`] compiles and runs.
#[derive(Clone, Debug)]
pub struct SessionOptions {
    pub backend: Backend,
    /// Threads for large kernels (default: all cores; the doors accept at most
    /// [`MAX_THREADS`]).
    pub threads: usize,
    /// Run the egg optimiser on every instantiated function (default: true).
    pub optimize: bool,
    /// Refuse to degrade: an optimiser failure or a kernel the code generator rejects is an
    /// error instead of a counted fallback (default: the `TFN_STRICT` environment variable,
    /// `1` = strict; the test suite runs strict).
    pub strict: bool,
    /// The wide math routines kernels call (default: `TFN_SIMD` = `128`, `avx2` or `avx512`,
    /// else the widest this CPU runs). Every level gives the same bits; `V128` is the forced
    /// fallback of CPUs without AVX2/AVX-512.
    pub simd: tfn_backend::SimdLevel,
    /// Reverse mode through every `for` loop keeps only each trip's carried values and
    /// recomputes the trip's residuals (the values its backward pass reads) just before its
    /// backward pass, as `for i in a..b, checkpoint` asks for one loop: the memory of one trip's
    /// residuals instead of every trip's, for one more forward pass of the body. Default: `false`.
    pub checkpoint_loops: bool,
}

impl Default for SessionOptions {
    fn default() -> Self {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        SessionOptions {
            backend: Backend::Jit,
            threads,
            optimize: true,
            strict: strict_from_env(),
            simd: tfn_backend::SimdLevel::from_env(),
            checkpoint_loops: false,
        }
    }
}

/// Whether `TFN_STRICT` asks for strict mode (`1`, `true`, `yes` or `on`; `0`, `false`, `no`,
/// `off` or empty do not). Any other value is reported once, on stderr, and means off.
pub fn strict_from_env() -> bool {
    let Ok(v) = std::env::var("TFN_STRICT") else { return false };
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => true,
        "" | "0" | "false" | "no" | "off" => false,
        _ => {
            static REPORTED: std::sync::Once = std::sync::Once::new();
            REPORTED.call_once(|| {
                eprintln!("tfn: ignoring TFN_STRICT={v:?} (expected 1 or 0); strict mode is off")
            });
            false
        }
    }
}

/// Counters reported by [`Session::stats`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Signatures instantiated and compiled.
    pub compiles: u64,
    /// Calls that found their signature in the cache.
    pub cache_hits: u64,
    /// Total time spent instantiating, optimising and compiling.
    pub compile_time: Duration,
    /// Compiles whose optimiser failed, so the unoptimised graph runs (a bug in tfn).
    pub optimizer_fallbacks: u64,
    /// Kernels the code generator rejected, so they run in the interpreter (a bug in tfn).
    pub interpreted_kernels: u64,
}

/// A kernel for an `extern op`, registered from Rust. It receives the op's tensor inputs and
/// attributes and must return a tensor of the declared shape and dtype.
pub type ExternFn = dyn Fn(&[Tensor], &[Attr]) -> Result<Tensor, String> + Send + Sync;

#[derive(Default)]
struct ExternTable {
    kernels: RwLock<HashMap<String, Arc<ExternFn>>>,
}

impl ExternKernels for ExternTable {
    fn call(
        &self,
        name: &str,
        attrs: &[Attr],
        inputs: &[Tensor],
        _out_shape: &[usize],
        _out_dtype: DType,
    ) -> Result<Tensor, String> {
        let kernel = {
            let table = self.kernels.read().map_err(|_| "extern table poisoned".to_string())?;
            table.get(name).cloned()
        };
        match kernel {
            Some(k) => k(inputs, attrs),
            None => Err(format!(
                "no kernel is registered for extern op `{name}`: an extern op runs a kernel a \
                 Rust program registers with `Session::register_extern` (`tfnc` and the \
                 Python module register none)"
            )),
        }
    }
}

/// A compiler session: loaded definitions plus a cache of compiled functions.
///
/// `Session` is `Send + Sync`; concurrent calls share the cache and run in parallel (no lock
/// is held while a function runs; a cache miss compiles under one lock, so each signature is
/// compiled once).
pub struct Session {
    library: RwLock<Arc<Library>>,
    /// The optimiser's rules: built-in plus the library's checked `rewrite` rules.
    rules: RwLock<Arc<RuleSet>>,
    externs: Arc<ExternTable>,
    options: SessionOptions,
    /// The JIT module every function of the session is compiled into (`None` with the
    /// interpreter backend).
    jit: Option<JitCompiler>,
    /// Prepared functions by name; each entry knows its signature ([`CallKey`]). A name has
    /// few signatures in practice, so a short scan beats hashing the whole key, and looking
    /// up by `&str` allocates nothing.
    cache: RwLock<HashMap<String, Vec<Arc<Prepared>>>>,
    /// Held while a cache miss compiles: threads that miss on the same signature at once
    /// (the first blocks of a Dask graph on a multi-threaded worker) compile it once, the
    /// others find it in the cache when they get the lock. Calls that hit never take it.
    compiling: Mutex<()>,
    compiles: AtomicU64,
    cache_hits: AtomicU64,
    compile_nanos: AtomicU64,
    optimizer_fallbacks: AtomicU64,
    interpreted_kernels: AtomicU64,
}

impl Default for Session {
    fn default() -> Self {
        Session::new()
    }
}

impl Session {
    /// A session with the prelude loaded, the JIT backend and default threads.
    pub fn new() -> Session {
        Session::with_options(SessionOptions::default())
    }

    pub fn with_backend(backend: Backend) -> Session {
        Session::with_options(SessionOptions { backend, ..SessionOptions::default() })
    }

    pub fn with_options(options: SessionOptions) -> Session {
        // The prelude is part of the binary and tested; failing to load it is a build bug.
        let library = tfn_frontend::prelude().unwrap_or_else(|diags| {
            let text = tfn_ir::diagnostic::render_all(&diags, &Library::default().sources);
            panic!("the embedded prelude does not load:\n{text}")
        });
        // Without a usable host ISA the JIT is absent and calls say so (a typed error).
        let jit = match options.backend {
            Backend::Jit => JitCompiler::new(CompileOptions {
                threads: options.threads.max(1),
                simd: options.simd,
                stream: tfn_backend::Streaming::from_env(),
            })
            .ok(),
            Backend::Interp => None,
        };
        Session {
            library: RwLock::new(Arc::new(library)),
            rules: RwLock::new(Arc::new(RuleSet::builtin())),
            externs: Arc::new(ExternTable::default()),
            jit,
            options,
            cache: RwLock::new(HashMap::new()),
            compiling: Mutex::new(()),
            compiles: AtomicU64::new(0),
            cache_hits: AtomicU64::new(0),
            compile_nanos: AtomicU64::new(0),
            optimizer_fallbacks: AtomicU64::new(0),
            interpreted_kernels: AtomicU64::new(0),
        }
    }

    /// A session over an already loaded library (the gradient check's evaluator).
    pub(crate) fn with_library(options: SessionOptions, library: Arc<Library>) -> Session {
        let s = Session::with_options(options);
        if let Ok(mut l) = s.library.write() {
            *l = library;
        }
        s
    }

    pub fn options(&self) -> &SessionOptions {
        &self.options
    }

    /// The loaded definitions (a snapshot: later loads do not change it).
    pub fn library(&self) -> Arc<Library> {
        self.library.read().map_or_else(|p| p.into_inner().clone(), |l| l.clone())
    }

    /// Loads a `.tfn` file (and the files it `use`s). On error nothing is loaded and the
    /// error holds every diagnostic; on success returns the warnings. Loading a file again
    /// unchanged (it and every file it `use`s) adds nothing and returns no warnings; a changed
    /// file that defines the same names again is `E0115`.
    pub fn load_file(
        &self,
        path: impl AsRef<std::path::Path>,
    ) -> Result<Vec<tfn_ir::Diagnostic>, Error> {
        let path = path.as_ref();
        let text = tfn_frontend::read_source_file(path)
            .map_err(|message| Error::Io { path: path.display().to_string(), message })?;
        self.load_with(&Session::source_name(path), &text, &FsLoader::default())
    }

    /// The name [`Session::load_file`] gives the file at `path` (in diagnostics, and to load
    /// each file once): as a `use` would name it, normalised lexically (`./a.tfn` is
    /// `a.tfn`), so a `use` cycle back to it finds it loaded.
    pub fn source_name(path: &std::path::Path) -> String {
        tfn_frontend::resolve_path(&path.display().to_string(), None)
    }

    /// Loads source text; `name` is the file name shown in diagnostics and the base of
    /// relative `use` paths.
    pub fn load_str(&self, name: &str, source: &str) -> Result<Vec<tfn_ir::Diagnostic>, Error> {
        self.load_with(name, source, &FsLoader::default())
    }

    /// Loads `main` from a set of in-memory files `(display name, text)`: its `use`s are
    /// resolved among `files`, then among the files this session already loaded (a `use` of
    /// one of those is skipped, as on disk), and `std:` paths; never on disk. This is how code
    /// generated by `tfn-build` loads the sources it embeds, and how a pickle replays loads.
    pub fn load_sources(
        &self,
        main: &str,
        files: &[(&str, &str)],
    ) -> Result<Vec<tfn_ir::Diagnostic>, Error> {
        let mut loader =
            files.iter().fold(tfn_frontend::MemLoader::new(), |l, (name, text)| l.with(name, text));
        let library = self.library();
        for (_, file) in library.sources.files().filter(|(_, f)| !f.name.starts_with('<')) {
            loader.files.entry(file.name.clone()).or_insert_with(|| file.text.clone());
        }
        let text = loader.files.get(main).cloned().ok_or_else(|| Error::Io {
            path: main.to_string(),
            message: "it is not among the embedded sources".to_string(),
        })?;
        self.load_with(main, &text, &loader)
    }

    fn load_with(
        &self,
        name: &str,
        source: &str,
        loader: &dyn SourceLoader,
    ) -> Result<Vec<tfn_ir::Diagnostic>, Error> {
        let mut guard =
            self.library.write().map_err(|_| Error::Internal("library lock poisoned".into()))?;
        let mut next = (**guard).clone();
        let files = next.sources.files().count();
        match tfn_frontend::load_source(&mut next, name, source, loader) {
            // The file and those it `use`s were loaded before as they are: nothing changes,
            // and the compiled functions stay cached.
            Ok(warnings) if next.sources.files().count() == files => Ok(warnings),
            Ok(warnings) => {
                // User rewrite rules are checked for soundness before anything is loaded.
                if next.rewrites.len() != guard.rewrites.len() {
                    let rules = RuleSet::with_user(&next)
                        .map_err(|d| Error::from_diagnostics(DiagKind::Load, d, &next.sources))?;
                    if let Ok(mut r) = self.rules.write() {
                        *r = Arc::new(rules);
                    }
                }
                *guard = Arc::new(next);
                // Definitions only ever get added, but a cached instance may have resolved a
                // call that a new overload would now win: start afresh.
                if let Ok(mut cache) = self.cache.write() {
                    cache.clear();
                }
                Ok(warnings)
            }
            Err(diags) => Err(Error::from_diagnostics(DiagKind::Load, diags, &next.sources)),
        }
    }

    /// Registers the kernel of an `extern op`.
    pub fn register_extern(
        &self,
        name: &str,
        kernel: impl Fn(&[Tensor], &[Attr]) -> Result<Tensor, String> + Send + Sync + 'static,
    ) {
        if let Ok(mut table) = self.externs.kernels.write() {
            table.insert(name.to_string(), Arc::new(kernel));
        }
    }

    pub fn stats(&self) -> Stats {
        Stats {
            compiles: self.compiles.load(Ordering::Relaxed),
            cache_hits: self.cache_hits.load(Ordering::Relaxed),
            compile_time: Duration::from_nanos(self.compile_nanos.load(Ordering::Relaxed)),
            optimizer_fallbacks: self.optimizer_fallbacks.load(Ordering::Relaxed),
            interpreted_kernels: self.interpreted_kernels.load(Ordering::Relaxed),
        }
    }

    /// Calls a function with positional arguments; returns its results as owned tensors.
    pub fn call(&self, name: &str, args: &[Value]) -> Result<Vec<Value<'static>>, Error> {
        self.call_kw(name, args, &[])
    }

    /// Calls a function with positional and keyword arguments.
    pub fn call_kw(
        &self,
        name: &str,
        args: &[Value],
        kwargs: &[(&str, Value)],
    ) -> Result<Vec<Value<'static>>, Error> {
        let prepared = self.prepare(CallKind::Call, name, args, kwargs)?;
        let outputs = prepared
            .call(args, kwargs, &*self.externs)
            .map_err(|e| self.explain(e, name, args, kwargs))?;
        Ok(outputs.into_iter().map(Value::from).collect())
    }

    /// Calls a function writing its results into caller-provided arrays (no allocation of
    /// outputs). Each output must have the result's dtype and shape.
    pub fn call_into(
        &self,
        name: &str,
        args: &[Value],
        outputs: &mut [OutputMut],
    ) -> Result<(), Error> {
        self.call_into_kw(name, args, &[], outputs)
    }

    pub fn call_into_kw(
        &self,
        name: &str,
        args: &[Value],
        kwargs: &[(&str, Value)],
        outputs: &mut [OutputMut],
    ) -> Result<(), Error> {
        let prepared = self.prepare(CallKind::Call, name, args, kwargs)?;
        prepared
            .call_into(args, kwargs, outputs, &*self.externs)
            .map_err(|e| self.explain(e, name, args, kwargs))
    }

    /// The vector-Jacobian product of a function: the gradients of `<results, cotangents>`
    /// with respect to each differentiable (float) tensor argument, in parameter order.
    /// There is one cotangent per result, of the result's dtype and shape.
    pub fn vjp(
        &self,
        name: &str,
        args: &[Value],
        cotangents: &[Value],
    ) -> Result<Vec<Value<'static>>, Error> {
        self.vjp_kw(name, args, &[], cotangents)
    }

    pub fn vjp_kw(
        &self,
        name: &str,
        args: &[Value],
        kwargs: &[(&str, Value)],
        cotangents: &[Value],
    ) -> Result<Vec<Value<'static>>, Error> {
        self.run_vjp(CallKind::Vjp, name, args, kwargs, cotangents)
    }

    /// The name of the parameter each gradient of [`Session::vjp_kw`] belongs to, for these
    /// arguments (the float tensor parameters, in order; `xs[0]` for a list's items). Compiles
    /// the vjp unless it is cached.
    pub fn vjp_names(
        &self,
        name: &str,
        args: &[Value],
        kwargs: &[(&str, Value)],
    ) -> Result<Vec<String>, Error> {
        let prepared = self.prepare(CallKind::Vjp, name, args, kwargs)?;
        let params =
            &prepared.graph.params[..prepared.params.len().min(prepared.graph.params.len())];
        Ok(params.iter().filter(|p| p.ty.dtype.is_float()).map(|p| p.name.clone()).collect())
    }

    /// The function's results and its vector-Jacobian product from one compiled graph (like
    /// `jax.value_and_grad`): the forward values are computed once and shared by the backward
    /// pass. Returns `(results, gradients)`, the gradients as [`Session::vjp`] returns them.
    pub fn value_and_vjp(
        &self,
        name: &str,
        args: &[Value],
        cotangents: &[Value],
    ) -> Result<(Vec<Value<'static>>, Vec<Value<'static>>), Error> {
        self.value_and_vjp_kw(name, args, &[], cotangents)
    }

    pub fn value_and_vjp_kw(
        &self,
        name: &str,
        args: &[Value],
        kwargs: &[(&str, Value)],
        cotangents: &[Value],
    ) -> Result<(Vec<Value<'static>>, Vec<Value<'static>>), Error> {
        let mut all = self.run_vjp(CallKind::ValueAndVjp, name, args, kwargs, cotangents)?;
        let grads = all.split_off(cotangents.len().min(all.len()));
        Ok((all, grads))
    }

    fn run_vjp(
        &self,
        kind: CallKind,
        name: &str,
        args: &[Value],
        kwargs: &[(&str, Value)],
        cotangents: &[Value],
    ) -> Result<Vec<Value<'static>>, Error> {
        let prepared = self.prepare(kind, name, args, kwargs)?;
        let cts = cotangents
            .iter()
            .enumerate()
            .map(|(i, c)| {
                c.as_tensor().ok_or_else(|| {
                    Error::DType(format!(
                        "cotangent {i} must be a tensor of its result's dtype and shape, got {}",
                        c.describe()
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let expected = prepared.graph.params.len() - prepared.params.len();
        if cts.len() != expected {
            return Err(Error::Shape(format!(
                "`{name}` has {expected} result(s), so the vjp needs {expected} cotangent(s), got {}",
                cts.len()
            )));
        }
        let inputs = gather_inputs(&prepared, args, kwargs, &cts)?;
        let outputs = prepared
            .run(&inputs, &*self.externs)
            .map_err(|e| self.explain(e, name, args, kwargs))?;
        Ok(outputs.into_iter().map(Value::from).collect())
    }

    /// Instantiates the function for the signature of `args` (compiling it unless cached) and
    /// returns a handle whose calls skip the lookup.
    pub fn instantiate(
        &self,
        name: &str,
        args: &[Value],
        kwargs: &[(&str, Value)],
    ) -> Result<Instantiated<'_>, Error> {
        let prepared = self.prepare(CallKind::Call, name, args, kwargs)?;
        Ok(Instantiated { session: self, prepared })
    }

    pub(crate) fn externs(&self) -> &dyn ExternKernels {
        &*self.externs
    }

    /// A compiled function checks sizes when it binds them and names the arguments, but it
    /// knows no op or source location. For a shape error, instantiate the function again
    /// knowing this call's sizes: lowering then finds the op that does not fit (a `reshape`
    /// of the wrong element count, a broadcast of a derived size, ...) and says where.
    pub(crate) fn explain(
        &self,
        error: Error,
        name: &str,
        args: &[Value],
        kwargs: &[(&str, Value)],
    ) -> Error {
        if !matches!(error, Error::Shape(_)) {
            return error;
        }
        let library = self.library();
        match instantiate_for_call(&library, name, args, kwargs) {
            Err(e) if is_size_error(&e.diagnostics) => {
                Error::from_diagnostics(DiagKind::Call, e.diagnostics, &library.sources)
                    .into_shape_error()
            }
            _ => error,
        }
    }

    /// Instantiates (or finds in the cache) the function for these arguments' signature.
    pub(crate) fn prepare(
        &self,
        kind: CallKind,
        name: &str,
        args: &[Value],
        kwargs: &[(&str, Value)],
    ) -> Result<Arc<Prepared>, Error> {
        if let Some(p) = self.cached(kind, name, args, kwargs) {
            self.cache_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(p);
        }
        // One compile at a time, so a signature is compiled once however many threads miss
        // on it together (the code generator serialises on the JIT module anyway).
        let _compiling = self.compiling.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = self.cached(kind, name, args, kwargs) {
            self.cache_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(p);
        }
        let key = CallKey::new(kind, name, args, kwargs);
        let start = Instant::now();
        let library = self.library();
        if !has_function(&library, name) {
            let suggestion = crate::signature::similar_name(&library, name);
            return Err(Error::UnknownFunction { name: name.to_string(), suggestion });
        }
        let instance = instantiate_for_call(&library, name, args, kwargs).map_err(|e| {
            let size_error = is_size_error(&e.diagnostics);
            let error = Error::from_diagnostics(DiagKind::Call, e.diagnostics, &library.sources);
            if size_error {
                error.into_shape_error()
            } else {
                error
            }
        })?;
        let guards = instance.guards.clone();
        let rules = self.rules.read().map_or_else(|p| p.into_inner().clone(), |r| r.clone());
        let prepared = match kind {
            _ if instance.has_loops() => Prepared::compile_program(
                &instance,
                kind,
                &library,
                &rules,
                &self.options,
                self.jit.as_ref(),
                key,
            )?,
            CallKind::Call => Prepared::compile(
                instance.graph,
                instance.params,
                &rules,
                &self.options,
                self.jit.as_ref(),
                key,
            )?,
            CallKind::Vjp | CallKind::ValueAndVjp => {
                let v = if kind == CallKind::Vjp {
                    tfn_passes::autodiff::vjp(&library, &instance)
                } else {
                    tfn_passes::autodiff::value_and_vjp(&library, &instance)
                };
                let v = v.map_err(|e| {
                    Error::from_diagnostics(DiagKind::Call, e.diagnostics(), &library.sources)
                })?;
                Prepared::compile(
                    v.graph,
                    instance.params,
                    &rules,
                    &self.options,
                    self.jit.as_ref(),
                    key,
                )?
            }
        };
        let mut prepared = prepared;
        prepared.guards = guards;
        if !guards_hold(&prepared, args, kwargs) {
            return Err(Error::Internal(format!(
                "`{name}` was specialised for this call's sizes but its assumptions ({}) do not hold for them",
                prepared.guards.describe()
            )));
        }
        if !prepared.guards.is_empty()
            && std::env::var_os("TFN_LOG_COMPILES").is_some_and(|v| v != "0")
        {
            tfn_ir::tfn_log!("tfn:   specialised on derived sizes: {}", prepared.guards.describe());
        }
        let prepared = Arc::new(prepared);
        self.compiles.fetch_add(1, Ordering::Relaxed);
        let fallbacks = &prepared.fallbacks;
        self.optimizer_fallbacks
            .fetch_add(u64::from(fallbacks.optimizer.is_some()), Ordering::Relaxed);
        self.interpreted_kernels.fetch_add(fallbacks.kernels.len() as u64, Ordering::Relaxed);
        self.compile_nanos.fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        if let Ok(mut cache) = self.cache.write() {
            let entries = cache.entry(prepared.key.name().to_string()).or_default();
            // (Cannot have been compiled meanwhile: `compiling` is held. Kept as a guard.)
            if !entries.iter().any(|e| e.key == prepared.key && e.guards == prepared.guards) {
                entries.push(prepared.clone());
            }
        }
        Ok(prepared)
    }

    fn cached(
        &self,
        kind: CallKind,
        name: &str,
        args: &[Value],
        kwargs: &[(&str, Value)],
    ) -> Option<Arc<Prepared>> {
        let cache = self.cache.read().ok()?;
        cache
            .get(name)?
            .iter()
            .find(|p| p.key.matches(kind, args, kwargs) && guards_hold(p, args, kwargs))
            .cloned()
    }
}

/// Whether `name` is a function (all its overloads) or one overload `base.overload`.
fn has_function(library: &Library, name: &str) -> bool {
    !library.overloads(name).is_empty()
        || name.split_once('.').is_some_and(|(base, ov)| library.function(base, Some(ov)).is_some())
}

/// Instantiates `name` for the signature of a call, knowing the call's sizes.
fn instantiate_for_call(
    library: &Library,
    name: &str,
    args: &[Value],
    kwargs: &[(&str, Value)],
) -> Result<tfn_ir::Instance, tfn_ir::LowerError> {
    let positional: Vec<ArgSpec> = args.iter().map(arg_spec).collect();
    let keywords: Vec<(String, ArgSpec)> =
        kwargs.iter().map(|(k, v)| (k.to_string(), arg_spec(v))).collect();
    let sizes = |src: &ParamSource| source_tensor(src, args, kwargs).map(|t| t.shape().to_vec());
    tfn_ir::lower::instantiate_for_sizes(library, name, &positional, &keywords, &sizes)
}

/// Whether lowering failed only because of the call's sizes (not its signature).
fn is_size_error(diagnostics: &[tfn_ir::Diagnostic]) -> bool {
    !diagnostics.is_empty() && diagnostics.iter().all(|d| d.code == "E0510")
}

/// Whether a call's shapes satisfy what `prepared` assumes about derived sizes (free when it
/// assumes nothing, the usual case).
pub(crate) fn guards_hold(prepared: &Prepared, args: &[Value], kwargs: &[(&str, Value)]) -> bool {
    if prepared.guards.is_empty() {
        return true;
    }
    let shapes: Option<Vec<Vec<usize>>> = prepared
        .params
        .iter()
        .map(|src| source_tensor(src, args, kwargs).map(|t| t.shape().to_vec()))
        .collect();
    let Some(shapes) = shapes else { return true };
    let refs: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
    prepared.guards.hold(&refs)
}

/// The signature of one argument: dtype, rank and which axes have size 1, or the attribute.
fn arg_spec(v: &Value) -> ArgSpec {
    let dims = |t: &TensorValue| -> Vec<DimSpec> {
        t.shape().iter().map(|&d| if d == 1 { DimSpec::One } else { DimSpec::Dyn }).collect()
    };
    match v {
        Value::Tensor(t) => ArgSpec::Tensor { dtype: t.dtype(), dims: dims(t) },
        Value::TensorList(ts) => {
            ArgSpec::TensorList(ts.iter().map(|t| (t.dtype(), dims(t))).collect())
        }
        Value::Attr(a) => ArgSpec::Attr(a.clone()),
    }
}

/// The tensor argument of a call that feeds a graph parameter.
fn source_tensor<'a>(
    src: &ParamSource,
    args: &'a [Value],
    kwargs: &'a [(&str, Value)],
) -> Option<TensorValue<'a>> {
    source_map(src, args, kwargs, |t| t.view())
}

/// `f` of the tensor argument feeding a graph parameter, borrowed where it is. (`args` and
/// `kwargs` may borrow arrays for different lifetimes, and `Value` is invariant in its own:
/// hence a function applied in place rather than a reference returned.)
pub(crate) fn source_map<'a, R>(
    src: &ParamSource,
    args: &'a [Value],
    kwargs: &'a [(&str, Value)],
    f: impl for<'v> Fn(&'a TensorValue<'v>) -> R,
) -> Option<R> {
    fn list_item<'a, 'v>(list: &'a Value<'v>, index: usize) -> Option<&'a TensorValue<'v>> {
        match list {
            Value::TensorList(ts) => ts.get(index),
            _ => None,
        }
    }
    match src {
        ParamSource::Positional(i) => args.get(*i)?.as_tensor().map(f),
        ParamSource::Keyword(k) => kwargs.iter().find(|(n, _)| n == k)?.1.as_tensor().map(f),
        ParamSource::ListItem { arg, index } => match &**arg {
            ParamSource::Positional(i) => list_item(args.get(*i)?, *index).map(f),
            ParamSource::Keyword(k) => {
                list_item(&kwargs.iter().find(|(n, _)| n == k)?.1, *index).map(f)
            }
            ParamSource::ListItem { .. } => None,
        },
    }
}

/// The tensors feeding the graph's parameters, in parameter order, then the cotangents.
pub(crate) fn gather_inputs<'a>(
    prepared: &Prepared,
    args: &'a [Value],
    kwargs: &'a [(&str, Value)],
    cotangents: &[&'a TensorValue],
) -> Result<Vec<TensorValue<'a>>, Error> {
    let mut inputs = prepared
        .params
        .iter()
        .map(|src| {
            source_tensor(src, args, kwargs).ok_or_else(|| {
                Error::Internal(format!("graph parameter source {src:?} is not a tensor argument"))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    inputs.extend(cotangents.iter().map(|t| t.view()));
    Ok(inputs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn session_is_send_and_sync() {
        assert_send_sync::<Session>();
    }
}
