//! `tfn._tfn`, the native half of the `tfn` Python package: [`Session`], [`Library`] (the
//! functions of loaded `.tfn` files as attributes) and [`Function`] (one name; calling it
//! goes through `tfn::Session::call_kw`, so arguments are parsed against the signatures by
//! the same dispatcher as in Rust).
//!
//! A call converts its arguments without copying NumPy arrays (`convert`), releases the GIL
//! while the session dispatches, compiles (on a miss) and runs the kernels, and maps
//! errors onto the exceptions of `errors`.

mod convert;
mod doc;
mod errors;
mod interrupt;
mod weights;

use convert::{describe_arg, Arg};
use doc::LIBRARY_ATTRS;
use pyo3::exceptions::{
    PyAttributeError, PyFileNotFoundError, PyKeyError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyTuple};
use smallvec::SmallVec;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use tfn::Value;

/// A compiler session: loaded definitions and the cache of compiled functions.
#[pyclass(module = "tfn", frozen)]
struct Session {
    inner: Arc<tfn::Session>,
    /// The constructor's arguments, as a pickle re-creates the session.
    made: Made,
    /// Every successful load, in order: what a pickle of one of its libraries replays.
    loads: Mutex<Vec<Arc<Load>>>,
}

/// A session's constructor arguments (`threads: None`: the receiving process's default).
#[derive(Clone, Debug)]
struct Made {
    backend: &'static str,
    threads: Option<usize>,
    strict: Option<bool>,
    optimize: bool,
}

/// One load: the main file's name and the text of every file it added (itself and the files
/// it `use`s, by the names `use` resolves them to).
#[derive(Debug)]
struct Load {
    main: String,
    files: Vec<(String, String)>,
    /// The functions it defined (not pickled: a replay finds them again).
    names: Vec<String>,
}

/// What a library or function pickles as: the session's arguments and the loads up to and
/// including the library's own (the receiving process replays them from memory, no files).
#[derive(Debug)]
struct Origin {
    made: Made,
    loads: Vec<Arc<Load>>,
}

impl Origin {
    /// `(made, loads)` as Python values: `(backend, threads, strict, optimize)` and a list of
    /// `(main, [(name, text), ...])`.
    fn to_py<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyTuple>, Bound<'py, PyList>)> {
        let m = &self.made;
        let made = (m.backend, m.threads, m.strict, m.optimize).into_pyobject(py)?;
        let loads = PyList::empty(py);
        for load in &self.loads {
            let files = PyList::new(py, load.files.iter().map(|(n, t)| (n.as_str(), t.as_str())))?;
            loads.append((load.main.as_str(), files))?;
        }
        Ok((made, loads))
    }
}

/// `tfn.<name>`, a function of the Python half of the package (`tfn/_pickle.py`).
fn restorer<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("tfn._pickle")?.getattr(name)
}

#[pymethods]
impl Session {
    /// `Session(backend="jit", threads=None, *, strict=None, optimize=True)`.
    ///
    /// `backend`: `"jit"` (fused Cranelift kernels) or `"interp"` (the reference
    /// interpreter); `threads`: threads for large kernels (default: all cores); `strict`:
    /// a compiler fallback is an error (default: the `TFN_STRICT` environment variable).
    #[new]
    #[pyo3(signature = (backend = "jit", threads = None, *, strict = None, optimize = true))]
    fn new(
        backend: &str,
        threads: Option<&Bound<'_, PyAny>>,
        strict: Option<bool>,
        optimize: bool,
    ) -> PyResult<Self> {
        let threads = threads.filter(|t| !t.is_none()).map(threads_arg).transpose()?;
        let backend = match backend {
            "jit" => tfn::Backend::Jit,
            "interp" => tfn::Backend::Interp,
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown backend {other:?}: expected \"jit\" or \"interp\""
                )))
            }
        };
        let made = Made {
            backend: if backend == tfn::Backend::Jit { "jit" } else { "interp" },
            threads,
            strict,
            optimize,
        };
        let mut options = tfn::SessionOptions { backend, optimize, ..Default::default() };
        match threads {
            Some(t) => options.threads = t,
            None => {
                if let Some(t) = threads_from_env()? {
                    options.threads = t;
                }
            }
        }
        if let Some(s) = strict {
            options.strict = s;
        }
        let inner = Arc::new(tfn::Session::with_options(options));
        Ok(Session { inner, made, loads: Mutex::new(Vec::new()) })
    }

    /// A session pickles as its constructor's arguments and its loads (the sources, from
    /// memory); unpickling makes (once per process) a session that loaded the same.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, Py<PyAny>)> {
        let py = slf.py();
        let origin = slf.get().origin();
        let (made, loads) = origin.to_py(py)?;
        let args = PyTuple::new(py, [made.into_any(), loads.into_any()])?;
        Ok((restorer(py, "restore_session")?, args.into_any().unbind()))
    }

    /// Loads in-memory files (`[(name, text), ...]`, `use` paths resolved among them and
    /// `std:`): what unpickling a library does.
    fn load_sources(
        slf: &Bound<'_, Self>,
        main: &str,
        files: Vec<(String, String)>,
    ) -> PyResult<Py<Library>> {
        let refs: Vec<(&str, &str)> = files.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
        let lib = Session::record_load(slf, main, |s| s.load_sources(main, &refs))?;
        populate(slf.py(), lib)
    }

    /// Loads a `.tfn` file (and the files it `use`s); returns its functions as a
    /// [`Library`]. Raises `tfn.CompileError` with the diagnostics when it does not check;
    /// warnings (e.g. a masked overload) are issued as `tfn.TfnWarning`.
    fn load(slf: &Bound<'_, Self>, path: std::path::PathBuf) -> PyResult<Py<Library>> {
        let py = slf.py();
        let lib = Session::load_file_lib(slf, path)?;
        populate(py, lib)
    }

    /// Loads source text; `name` is the file name shown in diagnostics and the base of
    /// relative `use` paths.
    #[pyo3(signature = (source, name = "<string>"))]
    fn loads(slf: &Bound<'_, Self>, source: &str, name: &str) -> PyResult<Py<Library>> {
        let lib = Session::load_str_lib(slf, source, name)?;
        populate(slf.py(), lib)
    }

    /// Counters: `compiles`, `cache_hits`, `compile_time` (seconds), `optimizer_fallbacks`,
    /// `interpreted_kernels`.
    fn stats(&self) -> Stats {
        Stats(self.inner.stats())
    }

    #[getter]
    fn backend(&self) -> &'static str {
        match self.inner.options().backend {
            tfn::Backend::Jit => "jit",
            tfn::Backend::Interp => "interp",
        }
    }

    #[getter]
    fn threads(&self) -> usize {
        self.inner.options().threads
    }

    fn __repr__(&self) -> String {
        format!("tfn.Session(backend={:?}, threads={})", self.backend(), self.threads())
    }
}

/// The most threads a session takes (far more than any machine's cores: a larger number is
/// more likely a mistake than a wish).
const MAX_THREADS: usize = tfn::MAX_THREADS;

/// `Session(threads=...)`: a Python `int` (not a `bool`) from 1 to [`MAX_THREADS`].
fn threads_arg(t: &Bound<'_, PyAny>) -> PyResult<usize> {
    if t.is_instance_of::<pyo3::types::PyBool>() || !t.is_instance_of::<pyo3::types::PyInt>() {
        let ty = t.get_type().name()?.to_string();
        return Err(PyTypeError::new_err(format!("threads must be an int, got {ty}")));
    }
    match t.extract::<i64>() {
        Ok(n) if (1..=MAX_THREADS as i64).contains(&n) => Ok(n as usize),
        _ => Err(PyValueError::new_err(format!(
            "threads must be at least 1 and at most {MAX_THREADS}, got {}",
            t.repr()?
        ))),
    }
}

/// `TFN_THREADS`, the default thread count of sessions made without `threads` (a Dask worker,
/// an MPI rank: so that processes × threads stays within the cores).
fn threads_from_env() -> PyResult<Option<usize>> {
    match std::env::var("TFN_THREADS") {
        Ok(v) if !v.trim().is_empty() => match v.trim().parse::<usize>() {
            Ok(n) if (1..=MAX_THREADS).contains(&n) => Ok(Some(n)),
            _ => Err(PyValueError::new_err(format!(
                "TFN_THREADS={v:?}: expected a whole number of threads, from 1 to {MAX_THREADS}"
            ))),
        },
        _ => Ok(None),
    }
}

impl Session {
    /// The session's arguments and every load so far.
    fn origin(&self) -> Origin {
        let loads = self.loads.lock().map(|l| l.clone()).unwrap_or_default();
        Origin { made: self.made.clone(), loads }
    }

    /// Runs a load and records it (its main file and the files it added) for pickling.
    fn record_load(
        slf: &Bound<'_, Self>,
        main: &str,
        load: impl FnOnce(&tfn::Session) -> Result<Vec<tfn::Diagnostic>, tfn::Error> + Send,
    ) -> PyResult<Library> {
        let me = slf.get();
        let before = me.inner.library().sources.files().count();
        let mut names = load_into(slf, load)?;
        let library = me.inner.library();
        let known = library.functions.keys().cloned().collect();
        let files: Vec<(String, String)> = library
            .sources
            .files()
            .skip(before)
            .map(|(_, f)| (f.name.clone(), f.text.clone()))
            .collect();
        let origin = {
            let mut loads = me.loads.lock().unwrap_or_else(|p| p.into_inner());
            // A file loaded again unchanged added nothing: the library is the earlier one's
            // (re-running `tfn.load` in a notebook), and there is nothing new to replay.
            let earlier = loads.iter().rposition(|l| l.main == main);
            match earlier {
                Some(at) if files.is_empty() => {
                    names = loads[at].names.clone();
                    Origin { made: me.made.clone(), loads: loads[..=at].to_vec() }
                }
                // Brought in before by another file's `use`: its own functions.
                None if files.is_empty() => {
                    names = defined_in(&library, main);
                    Origin { made: me.made.clone(), loads: loads.clone() }
                }
                _ => {
                    let load = Load { main: main.to_string(), files, names: names.clone() };
                    loads.push(Arc::new(load));
                    Origin { made: me.made.clone(), loads: loads.clone() }
                }
            }
        };
        Ok(Library {
            session: slf.clone().unbind(),
            inner: me.inner.clone(),
            file: main.to_string(),
            names,
            origin: Arc::new(origin),
            known: Arc::new(known),
        })
    }

    fn load_file_lib(slf: &Bound<'_, Self>, path: std::path::PathBuf) -> PyResult<Library> {
        let shown = path.display().to_string();
        if !path.exists() {
            return Err(PyFileNotFoundError::new_err(format!(
                "cannot read `{shown}`: no such file"
            )));
        }
        let name = tfn::Session::source_name(&path);
        Session::record_load(slf, &name, move |s| s.load_file(&path))
    }

    fn load_str_lib(slf: &Bound<'_, Self>, source: &str, name: &str) -> PyResult<Library> {
        Session::record_load(slf, name, |s| s.load_str(name, source))
    }
}

/// The functions with an overload defined in the file named `file`.
fn defined_in(library: &tfn_ir::Library, file: &str) -> Vec<String> {
    let in_file = |f: &tfn_ir::library::FunctionDef| {
        library.sources.get(f.span.file).is_some_and(|source| source.name == file)
    };
    library
        .functions
        .iter()
        .filter(|(_, defs)| defs.iter().any(in_file))
        .map(|(n, _)| n.clone())
        .collect()
}

/// Loads with `load`, warns the warnings, and returns the function names it added.
fn load_into(
    slf: &Bound<'_, Session>,
    load: impl FnOnce(&tfn::Session) -> Result<Vec<tfn::Diagnostic>, tfn::Error> + Send,
) -> PyResult<Vec<String>> {
    let py = slf.py();
    let session = &*slf.get().inner;
    let before: BTreeSet<String> = session.library().functions.keys().cloned().collect();
    let warnings = py.detach(|| load(session)).map_err(|e| errors::to_py(py, e, None))?;
    let library = session.library();
    if !warnings.is_empty() {
        let text = tfn_ir::diagnostic::render_all(&warnings, &library.sources);
        let class = errors::classes(py)?.warning.bind(py);
        PyErr::warn(py, class, &std::ffi::CString::new(text.replace('\0', " "))?, 2)?;
    }
    let names = library.functions.keys().filter(|n| !before.contains(*n)).cloned().collect();
    Ok(names)
}

/// The counters of a session (`s.stats()`): attributes, and a mapping (`dict(s.stats())`).
#[pyclass(module = "tfn", frozen)]
struct Stats(tfn::Stats);

const STAT_KEYS: [&str; 5] =
    ["compiles", "cache_hits", "compile_time", "optimizer_fallbacks", "interpreted_kernels"];

#[pymethods]
impl Stats {
    /// `tfn.Stats(compiles=0, ...)`: counters as `Session.stats()` gives them (how a pickle of
    /// one is read back).
    #[new]
    #[pyo3(signature = (compiles = 0, cache_hits = 0, compile_time = 0.0, optimizer_fallbacks = 0, interpreted_kernels = 0))]
    fn new(
        compiles: u64,
        cache_hits: u64,
        compile_time: f64,
        optimizer_fallbacks: u64,
        interpreted_kernels: u64,
    ) -> PyResult<Stats> {
        let compile_time = std::time::Duration::try_from_secs_f64(compile_time).map_err(|_| {
            PyValueError::new_err(format!(
                "compile_time must be a finite number of seconds >= 0, got {compile_time}"
            ))
        })?;
        Ok(Stats(tfn::Stats {
            compiles,
            cache_hits,
            compile_time,
            optimizer_fallbacks,
            interpreted_kernels,
        }))
    }
    /// A `Stats` pickles as its counters.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, Py<PyAny>)> {
        let s = &slf.get().0;
        let args = (
            s.compiles,
            s.cache_hits,
            s.compile_time.as_secs_f64(),
            s.optimizer_fallbacks,
            s.interpreted_kernels,
        );
        Ok((slf.get_type().into_any(), args.into_pyobject(slf.py())?.into_any().unbind()))
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<Stats>().is_ok_and(|o| o.get().0 == self.0)
    }
    #[getter]
    fn compiles(&self) -> u64 {
        self.0.compiles
    }
    #[getter]
    fn cache_hits(&self) -> u64 {
        self.0.cache_hits
    }
    /// Seconds spent instantiating, optimising and compiling.
    #[getter]
    fn compile_time(&self) -> f64 {
        self.0.compile_time.as_secs_f64()
    }
    #[getter]
    fn optimizer_fallbacks(&self) -> u64 {
        self.0.optimizer_fallbacks
    }
    #[getter]
    fn interpreted_kernels(&self) -> u64 {
        self.0.interpreted_kernels
    }
    fn keys(&self) -> Vec<&'static str> {
        STAT_KEYS.to_vec()
    }
    fn __getitem__(slf: &Bound<'_, Self>, key: &str) -> PyResult<Py<PyAny>> {
        if STAT_KEYS.contains(&key) {
            Ok(slf.getattr(key)?.unbind())
        } else {
            Err(PyKeyError::new_err(key.to_string()))
        }
    }
    fn __iter__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        Ok(PyList::new(slf.py(), STAT_KEYS)?.try_iter()?.into_any().unbind())
    }
    fn __len__(&self) -> usize {
        STAT_KEYS.len()
    }
    fn __contains__(&self, key: &str) -> bool {
        STAT_KEYS.contains(&key)
    }
    /// The counters as a `dict`.
    fn as_dict<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(slf.py());
        for k in STAT_KEYS {
            d.set_item(k, slf.getattr(k)?)?;
        }
        Ok(d)
    }
    fn __repr__(&self) -> String {
        let s = &self.0;
        format!(
            "tfn.Stats(compiles={}, cache_hits={}, compile_time={:.6}, optimizer_fallbacks={}, interpreted_kernels={})",
            s.compiles,
            s.cache_hits,
            s.compile_time.as_secs_f64(),
            s.optimizer_fallbacks,
            s.interpreted_kernels
        )
    }
}

/// The functions of a loaded `.tfn` file: `lib.gelu(x)`, `lib["scale.scalar"](x, 2)`,
/// `lib.vjp("gelu", (x,), ct)`. Every function of the session (prelude included) is
/// reachable; `dir(lib)` and `lib.functions` list the file's own.
#[pyclass(module = "tfn", frozen, dict, subclass)]
struct Library {
    session: Py<Session>,
    inner: Arc<tfn::Session>,
    file: String,
    names: Vec<String>,
    origin: Arc<Origin>,
    /// Every function the session had after this library's load: the ones its pickle (the
    /// loads up to its own) brings back. A function a later load defined, reached through
    /// this library, pickles with the session's loads as they are when it is taken.
    known: Arc<BTreeSet<String>>,
}

impl Library {
    /// What a function taken from this library by `name` (or `name.overload`) pickles as.
    fn origin_for(&self, py: Python<'_>, name: &str) -> Arc<Origin> {
        let base = name.split('.').next().unwrap_or(name);
        if self.known.contains(base) {
            self.origin.clone()
        } else {
            Arc::new(self.session.bind(py).get().origin())
        }
    }
}

#[pymethods]
impl Library {
    fn __getattr__(&self, py: Python<'_>, name: &str) -> PyResult<Py<Function>> {
        if name.starts_with("__") && name.ends_with("__") {
            return Err(PyAttributeError::new_err(name.to_string()));
        }
        // (`getattr(lib, "add.scalar")` is `lib["add.scalar"]`: one overload.)
        if !doc::overloads_of(&self.inner.library(), name).is_empty() {
            return make_function(py, &self.inner, &self.origin_for(py, name), name);
        }
        Err(unknown(py, &self.inner, name))
    }

    /// A function by name, or one overload by `name.overload` (`lib["add.scalar"]`).
    fn __getitem__(&self, py: Python<'_>, name: &str) -> PyResult<Py<Function>> {
        if doc::overloads_of(&self.inner.library(), name).is_empty() {
            let e = unknown(py, &self.inner, name);
            return Err(PyKeyError::new_err(e.value(py).to_string()));
        }
        make_function(py, &self.inner, &self.origin_for(py, name), name)
    }

    /// Whether `name` (or `name.overload`) is a function; anything but a string is not.
    fn __contains__(&self, name: &Bound<'_, PyAny>) -> bool {
        let Ok(name) = name.extract::<String>() else { return false };
        !doc::overloads_of(&self.inner.library(), &name).is_empty()
    }

    fn __dir__(&self) -> Vec<String> {
        let mut names: Vec<String> = self.names.clone();
        names.extend(LIBRARY_ATTRS.iter().map(|s| s.to_string()));
        names.sort();
        names.dedup();
        names
    }

    /// The names of the functions this file (and the files it uses) defined.
    #[getter]
    fn functions(&self) -> Vec<String> {
        self.names.clone()
    }

    #[getter]
    fn session(&self, py: Python<'_>) -> Py<Session> {
        self.session.clone_ref(py)
    }

    #[getter]
    fn file(&self) -> &str {
        &self.file
    }

    /// The names of the files this load read: its own first, then the files it `use`s that
    /// no earlier load of the session had read (`std:` libraries are built in, not listed).
    #[getter]
    fn sources(&self) -> Vec<String> {
        let own = self.origin.loads.last().map(|l| l.files.as_slice()).unwrap_or_default();
        own.iter().map(|(name, _)| name.clone()).filter(|n| !n.starts_with('<')).collect()
    }

    /// The function `name` (same as `lib[name]`).
    fn function(&self, py: Python<'_>, name: &str) -> PyResult<Py<Function>> {
        self.__getitem__(py, name)
    }

    /// The vector-Jacobian product: the gradients of `<results, cotangents>` with respect to
    /// each float tensor argument, in parameter order, as a tuple. `args` are the positional
    /// arguments (a tuple, or one array), `cotangents` one array per result (or the array
    /// of a single result); keyword arguments go to the function; `weights=` binds the
    /// tensor parameters not given (a `tfn.weights(...)` or a dict of arrays).
    #[pyo3(signature = (name, args, cotangents, *, weights = None, **kwargs))]
    fn vjp(
        &self,
        py: Python<'_>,
        name: &str,
        args: &Bound<'_, PyAny>,
        cotangents: &Bound<'_, PyAny>,
        weights: Option<Bound<'_, PyAny>>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let call = VjpCall { name, args, cotangents, kwargs, weights: weights.as_ref() };
        let (values, grads) = run_vjp(py, &self.inner, call, false)?;
        debug_assert!(values.is_empty());
        Ok(PyTuple::new(py, grads)?.into_any().unbind())
    }

    /// `(results, gradients)` from one compiled graph (like `jax.value_and_grad`): `results`
    /// as a call returns them, `gradients` as `vjp` does.
    #[pyo3(signature = (name, args, cotangents, *, weights = None, **kwargs))]
    fn value_and_vjp(
        &self,
        py: Python<'_>,
        name: &str,
        args: &Bound<'_, PyAny>,
        cotangents: &Bound<'_, PyAny>,
        weights: Option<Bound<'_, PyAny>>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let call = VjpCall { name, args, cotangents, kwargs, weights: weights.as_ref() };
        let (values, grads) = run_vjp(py, &self.inner, call, true)?;
        let values = results(py, values)?;
        let grads = PyTuple::new(py, grads)?;
        Ok(PyTuple::new(py, [values, grads.into_any().unbind()])?.into_any().unbind())
    }

    /// The `.pyi` type stub of this library (what `python -m tfn.stubs` prints).
    fn stub(&self) -> String {
        doc::stub(&self.inner.library(), &self.file, &self.names)
    }

    fn __repr__(&self) -> String {
        format!("<tfn.Library {:?}: {}>", self.file, self.names.join(", "))
    }

    /// A library pickles as its session's arguments and the sources of every load up to its
    /// own; unpickling compiles nothing and makes the session once per process (per sources
    /// and arguments), so its compiled functions are shared by every library unpickled there.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, Py<PyAny>)> {
        let (made, loads) = self.origin.to_py(py)?;
        let args = PyTuple::new(py, [made.into_any(), loads.into_any()])?;
        Ok((restorer(py, "restore_library")?, args.into_any().unbind()))
    }
}

/// The arguments of a vjp from Python.
struct VjpCall<'a, 'py> {
    name: &'a str,
    args: &'a Bound<'py, PyAny>,
    cotangents: &'a Bound<'py, PyAny>,
    kwargs: Option<&'a Bound<'py, PyDict>>,
    weights: Option<&'a Bound<'py, PyAny>>,
}

/// The vjp (with the values when `with_values`) of a call; the gradients as NumPy arrays.
#[allow(clippy::type_complexity)]
fn run_vjp(
    py: Python<'_>,
    session: &Arc<tfn::Session>,
    c: VjpCall<'_, '_>,
    with_values: bool,
) -> PyResult<(Vec<Value<'static>>, Vec<Py<PyAny>>)> {
    let (name, args, cotangents) = (c.name, c.args, c.cotangents);
    if c.kwargs.is_some_and(|k| k.contains("out").unwrap_or(false)) {
        let what = if with_values { "value_and_vjp" } else { "vjp" };
        return Err(PyTypeError::new_err(format!(
            "{what}() takes no `out=`: it returns new arrays (only a call writes into `out`)"
        )));
    }
    let args: Vec<Bound<'_, PyAny>> = if args.cast::<numpy::PyUntypedArray>().is_ok() {
        vec![args.clone()]
    } else {
        args.try_iter()?.collect::<PyResult<_>>()?
    };
    // One cotangent per result: a tuple or list of them, or one alone (an array, a NumPy
    // scalar such as `np.float32(1.0)` for a rank-0 result, or a number).
    let cts: Vec<Bound<'_, PyAny>> =
        if cotangents.is_instance_of::<PyTuple>() || cotangents.is_instance_of::<PyList>() {
            cotangents.try_iter()?.collect::<PyResult<_>>()?
        } else {
            vec![cotangents.clone()]
        };
    let cts: Vec<Bound<'_, PyAny>> = cts
        .into_iter()
        .map(|c| {
            let scalar = c.cast::<numpy::PyUntypedArray>().is_err() && c.hasattr("__array__")?;
            if scalar {
                py.import("numpy")?.call_method1("asarray", (c,))
            } else {
                Ok(c)
            }
        })
        .collect::<PyResult<_>>()?;
    let session = &**session;
    let call = Call::parse(py, session, name, &args, c.kwargs)?;
    let cts = cts
        .iter()
        .enumerate()
        .map(|(i, c)| Arg::from_py_value(c, &|| format!("cotangent {i}")))
        .collect::<PyResult<Vec<_>>>()?;
    let (pos, kw) = call.values();
    let ct_values: Vec<Value> = cts.iter().map(Arg::value).collect();
    let run = |params: Option<&(dyn tfn::weights::Params + Sync)>| {
        let out = py.detach(|| match (with_values, params) {
            (true, None) => session.value_and_vjp_kw(name, &pos, &kw, &ct_values),
            (true, Some(p)) => session.value_and_vjp_with_kw(name, &pos, &kw, &ct_values, p),
            (false, None) => session.vjp_kw(name, &pos, &kw, &ct_values).map(|g| (Vec::new(), g)),
            (false, Some(p)) => {
                session.vjp_with_kw(name, &pos, &kw, &ct_values, p).map(|g| (Vec::new(), g))
            }
        });
        out.map_err(|e| call.error(py, session, name, e))
    };
    let (values, grads) = match c.weights.filter(|w| !w.is_none()) {
        Some(w) => weights::with_params(py, w, |p| run(Some(p)))?,
        None => run(None)?,
    };
    let grads =
        grads.into_iter().map(|g| convert::to_numpy(py, g)).collect::<PyResult<Vec<_>>>()?;
    Ok((values, grads))
}

/// The `UnknownFunctionError` for `name`, with the session's "did you mean" suggestion.
fn unknown(py: Python<'_>, session: &tfn::Session, name: &str) -> PyErr {
    // Calling an unknown name fails before anything is compiled, with the suggestion.
    match session.call(name, &[]) {
        Err(e @ tfn::Error::UnknownFunction { .. }) => errors::to_py(py, e, None),
        _ => match errors::classes(py) {
            Ok(c) => errors::raise(py, &c.unknown, format!("unknown function `{name}`")),
            Err(e) => e,
        },
    }
}

/// The arguments of one call, converted.
struct Call<'py> {
    positional: SmallVec<[Arg<'py>; 4]>,
    keywords: Vec<(String, Arg<'py>)>,
    out: Option<Bound<'py, PyAny>>,
}

impl<'py> Call<'py> {
    /// Converts a call's arguments. A value of no tfn type makes the call one that no
    /// overload of `name` accepts: its error lists every candidate and why.
    fn parse(
        py: Python<'py>,
        session: &tfn::Session,
        name: &str,
        args: &[Bound<'py, PyAny>],
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Call<'py>> {
        let call = Call::convert(args, kwargs)?;
        let mut all = call.positional.iter().chain(call.keywords.iter().map(|(_, a)| a));
        if all.any(|a| matches!(a, Arg::Unsupported(_))) {
            return Err(call.no_overload(py, session, name));
        }
        Ok(call)
    }

    /// The error of a call with an [`Arg::Unsupported`] argument: the dispatcher's rejection
    /// of each overload, as for any call no overload accepts.
    fn no_overload(&self, py: Python<'_>, session: &tfn::Session, name: &str) -> PyErr {
        let library = session.library();
        let overloads = doc::overloads_of(&library, name);
        if overloads.is_empty() {
            return unknown(py, session, name);
        }
        let pos: Vec<_> = self.positional.iter().map(Arg::kind).collect();
        let kw: Vec<(&str, _)> =
            self.keywords.iter().map(|(k, a)| (k.as_str(), a.kind())).collect();
        match tfn_ir::dispatch::dispatch(overloads, &pos, &kw) {
            Err(rejections) if !rejections.is_empty() => {
                let d = tfn_ir::lower::no_overload(name, overloads, &rejections);
                let rendered =
                    tfn_ir::diagnostic::render_all(std::slice::from_ref(&d), &library.sources);
                errors::to_py(py, tfn::Error::Call { diagnostics: vec![d], rendered }, None)
            }
            // (Unreachable: no parameter accepts an unsupported value.)
            _ => match errors::classes(py) {
                Ok(c) => errors::raise(
                    py,
                    &c.dispatch,
                    format!("no overload of `{name}` matches the arguments"),
                ),
                Err(e) => e,
            },
        }
    }

    fn convert(
        args: &[Bound<'py, PyAny>],
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Call<'py>> {
        let positional = args
            .iter()
            .enumerate()
            .map(|(i, a)| Arg::from_py(a, &|| describe_arg(Some(i), None)))
            .collect::<PyResult<SmallVec<_>>>()?;
        let mut keywords = Vec::new();
        if let Some(kwargs) = kwargs {
            keywords.reserve(kwargs.len());
            for (k, v) in kwargs.iter() {
                let k: String = k.extract()?;
                let arg = Arg::from_py(&v, &|| describe_arg(None, Some(&k)))?;
                keywords.push((k, arg));
            }
        }
        Ok(Call { positional, keywords, out: None })
    }

    /// The arguments as the session takes them (on the stack for up to four positional).
    fn values(&self) -> (SmallVec<[Value<'_>; 4]>, Vec<(&str, Value<'_>)>) {
        let pos = self.positional.iter().map(Arg::value).collect();
        let kw = self.keywords.iter().map(|(k, a)| (k.as_str(), a.value())).collect();
        (pos, kw)
    }

    /// The Python exception for a failed call (re-dispatching to classify a rejection).
    fn error(&self, py: Python<'_>, session: &tfn::Session, name: &str, e: tfn::Error) -> PyErr {
        let kinds = || {
            let library = session.library();
            let (pos, kw) = self.values();
            let pos: Vec<_> = pos.iter().map(errors::arg_kind).collect();
            let kw: Vec<(&str, _)> = kw.iter().map(|(k, v)| (*k, errors::arg_kind(v))).collect();
            match tfn_ir::dispatch::dispatch(doc::overloads_of(&library, name), &pos, &kw) {
                Ok(_) => Vec::new(),
                Err(rejections) => rejections.into_iter().map(|r| r.kind).collect(),
            }
        };
        errors::to_py(py, e, Some(&kinds))
    }
}

/// One or several results: an array, or a tuple of arrays.
fn results(py: Python<'_>, values: Vec<Value<'static>>) -> PyResult<Py<PyAny>> {
    let mut arrays =
        values.into_iter().map(|v| convert::to_numpy(py, v)).collect::<PyResult<Vec<_>>>()?;
    if arrays.len() == 1 {
        Ok(arrays.remove(0))
    } else {
        Ok(PyTuple::new(py, arrays)?.into_any().unbind())
    }
}

/// A function of a library (all its overloads): `f(*args, out=None, **kwargs)`.
#[pyclass(module = "tfn", frozen, dict)]
struct Function {
    session: Arc<tfn::Session>,
    name: String,
    origin: Arc<Origin>,
}

#[pymethods]
impl Function {
    // `out` and `weights` are named parameters so that a call with no other keyword builds
    // no dict.
    #[pyo3(signature = (*args, out = None, weights = None, **kwargs))]
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        out: Option<Bound<'_, PyAny>>,
        weights: Option<Bound<'_, PyAny>>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let items: SmallVec<[Bound<'_, PyAny>; 4]> = args.iter().collect();
        let session = &*self.session;
        let name = self.name.as_str();
        let mut call = Call::parse(py, session, name, &items, kwargs)?;
        call.out = out.filter(|o| !o.is_none());
        let (pos, kw) = call.values();
        let weights = weights.filter(|w| !w.is_none());
        let run = |params: Option<&(dyn tfn::weights::Params + Sync)>| match &call.out {
            None => {
                let out = py.detach(|| match params {
                    Some(p) => session.call_with_kw(name, &pos, &kw, p),
                    None => session.call_kw(name, &pos, &kw),
                });
                results(py, out.map_err(|e| call.error(py, session, name, e))?)
            }
            Some(out) => {
                let outs = convert::out_arrays(out)?;
                // The arrays `weights=` binds are inputs too.
                let held =
                    weights.as_ref().map(|w| weights::held_arrays(py, w)).unwrap_or_default();
                let mut inputs = inputs_of(&call);
                inputs.extend(held.iter().map(|(k, a)| (convert::ArgName::Weight(k), a)));
                convert::no_overlap(py, &inputs, &outs)?;
                let mut views: SmallVec<[tfn::OutputMut; 2]> =
                    outs.iter().map(|(a, d)| convert::out_view(a, *d)).collect();
                let r = py.detach(|| match params {
                    Some(p) => session.call_into_with_kw(name, &pos, &kw, p, &mut views),
                    None => session.call_into_kw(name, &pos, &kw, &mut views),
                });
                r.map_err(|e| call.error(py, session, name, e))?;
                Ok(out.clone().unbind())
            }
        };
        match &weights {
            Some(w) => weights::with_params(py, w, |p| run(Some(p))),
            None => run(None),
        }
    }

    /// `vjp(args, cotangents, *, weights=None, **kwargs)`: `lib.vjp(self.__name__, ...)`.
    #[pyo3(signature = (args, cotangents, *, weights = None, **kwargs))]
    fn vjp(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyAny>,
        cotangents: &Bound<'_, PyAny>,
        weights: Option<Bound<'_, PyAny>>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let call =
            VjpCall { name: &self.name, args, cotangents, kwargs, weights: weights.as_ref() };
        let (_, grads) = run_vjp(py, &self.session, call, false)?;
        Ok(PyTuple::new(py, grads)?.into_any().unbind())
    }

    /// `unused_weights(*args, weights, **kwargs)`: the names of the tensors of `weights` a
    /// call with these arguments does not read (sorted).
    #[pyo3(signature = (*args, weights, **kwargs))]
    fn unused_weights(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        weights: Bound<'_, PyAny>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Vec<String>> {
        let items: SmallVec<[Bound<'_, PyAny>; 4]> = args.iter().collect();
        let session = &*self.session;
        let name = self.name.as_str();
        let call = Call::parse(py, session, name, &items, kwargs)?;
        let (pos, kw) = call.values();
        weights::with_params(py, &weights, |p| {
            session.unused_weights(name, &pos, &kw, p).map_err(|e| call.error(py, session, name, e))
        })
    }

    #[getter]
    fn __name__(&self) -> &str {
        &self.name
    }

    #[getter]
    fn __qualname__(&self) -> &str {
        &self.name
    }

    fn __repr__(&self) -> String {
        format!("<tfn function {}>", self.name)
    }

    /// A function pickles as its library (see `Library.__reduce__`) and its name.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, Py<PyAny>)> {
        let (made, loads) = self.origin.to_py(py)?;
        let name = self.name.as_str().into_pyobject(py)?;
        let args = PyTuple::new(py, [made.into_any(), loads.into_any(), name.into_any()])?;
        Ok((restorer(py, "restore_function")?, args.into_any().unbind()))
    }
}

/// Each array an input reads, with the argument's position or keyword (for messages).
fn inputs_of<'a, 'py>(
    call: &'a Call<'py>,
) -> SmallVec<[(convert::ArgName<'a>, &'a Bound<'py, numpy::PyUntypedArray>); 4]> {
    let mut inputs = SmallVec::new();
    for (i, a) in call.positional.iter().enumerate() {
        inputs.extend(a.arrays().map(|arr| (convert::ArgName::Position(i), arr)));
    }
    for (k, a) in &call.keywords {
        inputs.extend(a.arrays().map(|arr| (convert::ArgName::Keyword(k), arr)));
    }
    inputs
}

/// A `Function` object with its docstring (`help(lib.softmax)` shows the signatures).
fn make_function(
    py: Python<'_>,
    session: &Arc<tfn::Session>,
    origin: &Arc<Origin>,
    name: &str,
) -> PyResult<Py<Function>> {
    let function =
        Function { session: session.clone(), name: name.to_string(), origin: origin.clone() };
    let f = Py::new(py, function)?;
    let doc = doc::docstring(&session.library(), name);
    f.bind(py).setattr("__doc__", doc)?;
    Ok(f)
}

static DEFAULT_SESSION: PyOnceLock<Py<Session>> = PyOnceLock::new();

/// The session `tfn.load` and `tfn.loads` use (JIT, all cores), made on first use.
#[pyfunction]
fn default_session(py: Python<'_>) -> PyResult<Py<Session>> {
    DEFAULT_SESSION
        .get_or_try_init(py, || Py::new(py, Session::new("jit", None, None, true)?))
        .map(|s| s.clone_ref(py))
}

/// Fills a library's instance dict with its functions (documented), so `lib.gelu` is a
/// plain attribute lookup; names that are `Library` attributes stay `lib["name"]`.
fn populate(py: Python<'_>, lib: Library) -> PyResult<Py<Library>> {
    let session = lib.inner.clone();
    let origin = lib.origin.clone();
    let names = lib.names.clone();
    let obj = Py::new(py, lib)?;
    let bound = obj.bind(py);
    for name in names {
        if LIBRARY_ATTRS.contains(&name.as_str()) {
            continue;
        }
        let f = make_function(py, &session, &origin, &name)?;
        bound.setattr(name.as_str(), f)?;
    }
    Ok(obj)
}

/// `tfn.load(path, session=None)`: loads a `.tfn` file into `session` (default: the
/// module's default session).
#[pyfunction]
#[pyo3(signature = (path, session = None))]
fn load(
    py: Python<'_>,
    path: std::path::PathBuf,
    session: Option<Py<Session>>,
) -> PyResult<Py<Library>> {
    let s = match session {
        Some(s) => s,
        None => default_session(py)?,
    };
    Session::load(s.bind(py), path)
}

/// `tfn.loads(source, name="<string>", session=None)`: loads source text.
#[pyfunction]
#[pyo3(signature = (source, name = "<string>", session = None))]
fn loads(
    py: Python<'_>,
    source: &str,
    name: &str,
    session: Option<Py<Session>>,
) -> PyResult<Py<Library>> {
    let s = match session {
        Some(s) => s,
        None => default_session(py)?,
    };
    Session::loads(s.bind(py), source, name)
}

#[pymodule]
fn _tfn(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<Session>()?;
    m.add_class::<Library>()?;
    m.add_class::<Function>()?;
    m.add_class::<Stats>()?;
    m.add_class::<weights::Weights>()?;
    m.add_function(wrap_pyfunction!(weights::weights, m)?)?;
    m.add_function(wrap_pyfunction!(weights::save_safetensors, m)?)?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(loads, m)?)?;
    m.add_function(wrap_pyfunction!(default_session, m)?)?;
    let c = errors::classes(py)?;
    for (name, ty) in [
        ("Error", &c.error),
        ("CompileError", &c.compile),
        ("DispatchError", &c.dispatch),
        ("DTypeError", &c.dtype),
        ("ShapeError", &c.shape),
        ("CallError", &c.call),
        ("UnknownFunctionError", &c.unknown),
        ("RunError", &c.run),
        ("InternalError", &c.internal),
        ("CheckpointError", &c.checkpoint),
        ("TfnWarning", &c.warning),
    ] {
        m.add(name, ty.clone_ref(py))?;
    }
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    interrupt::install();
    Ok(())
}
