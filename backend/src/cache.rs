//! [`KernelCache`]: compiled functions per call [`Signature`], sharing one JIT module.
//!
//! A signature holds everything a compiled function is specialised on — function name and
//! overload, attribute values, and per tensor argument its dtype, rank, which axes have size 1
//! (broadcast) and whether it is contiguous — and nothing else: sizes are runtime parameters,
//! so a new batch size is a cache hit. `TFN_LOG_COMPILES=1` logs every compile to stderr.

use crate::error::CodegenError;
use crate::executor::{CompileOptions, CompiledFunction};
use crate::jit::Jit;
use crate::tensors::TensorView;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use tfn_ir::{Attr, DType, Graph};

/// What one tensor argument contributes to a signature.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ArgSignature {
    pub dtype: DType,
    /// One flag per axis: the axis has size 1 (it broadcasts).
    pub unit_axes: Vec<bool>,
    pub contiguous: bool,
}

impl ArgSignature {
    pub fn of(view: &TensorView<'_>) -> ArgSignature {
        ArgSignature {
            dtype: view.dtype(),
            unit_axes: view.shape().iter().map(|&s| s == 1).collect(),
            contiguous: view.is_standard_layout(),
        }
    }

    pub fn rank(&self) -> usize {
        self.unit_axes.len()
    }
}

/// The cache key of a compiled function.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Signature {
    /// `name` or `name.overload`.
    pub function: String,
    /// Attribute values by parameter name, in parameter order.
    pub attrs: Vec<(String, Attr)>,
    pub args: Vec<ArgSignature>,
}

impl Signature {
    /// The signature of calling `function` with `attrs` on `inputs`.
    pub fn new(
        function: impl Into<String>,
        attrs: Vec<(String, Attr)>,
        inputs: &[TensorView<'_>],
    ) -> Signature {
        Signature {
            function: function.into(),
            attrs,
            args: inputs.iter().map(ArgSignature::of).collect(),
        }
    }
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}(", self.function)?;
        for (i, a) in self.args.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            let dims: Vec<&str> = a.unit_axes.iter().map(|&u| if u { "1" } else { "?" }).collect();
            write!(
                f,
                "{}[{}]{}",
                a.dtype,
                dims.join(", "),
                if a.contiguous { "" } else { " strided" }
            )?;
        }
        for (name, value) in &self.attrs {
            write!(f, ", {name}={value}")?;
        }
        f.write_str(")")
    }
}

/// Counters of a [`KernelCache`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Functions compiled (cache misses that succeeded).
    pub compiles: u64,
    /// Lookups answered from the cache.
    pub hits: u64,
    /// Wall time spent building graphs, fusing and compiling on misses.
    pub compile_time: Duration,
    /// Loop kernels compiled to machine code.
    pub kernels: u64,
}

/// Why [`KernelCache::get_or_compile`] failed: building the graph, or compiling it.
#[derive(Debug)]
pub enum CacheError<E> {
    Build(E),
    Compile(CodegenError),
}

impl<E: fmt::Display> fmt::Display for CacheError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CacheError::Build(e) => e.fmt(f),
            CacheError::Compile(e) => e.fmt(f),
        }
    }
}

impl<E: fmt::Debug + fmt::Display> std::error::Error for CacheError<E> {}

/// Thread-safe cache of compiled functions sharing one JIT module.
pub struct KernelCache {
    jit: Jit,
    options: CompileOptions,
    map: RwLock<HashMap<Signature, Arc<CompiledFunction>>>,
    stats: Mutex<CacheStats>,
    log: bool,
}

impl KernelCache {
    pub fn new(options: CompileOptions) -> Result<KernelCache, CodegenError> {
        let log = std::env::var("TFN_LOG_COMPILES").is_ok_and(|v| v == "1");
        Ok(KernelCache {
            jit: Jit::new(options.simd)?,
            options,
            map: RwLock::new(HashMap::new()),
            stats: Mutex::new(CacheStats::default()),
            log,
        })
    }

    /// The compiled function for `sig`, building its graph with `build` and compiling it on a
    /// miss. Concurrent misses on one signature may both compile; the first stored wins.
    pub fn get_or_compile<E>(
        &self,
        sig: &Signature,
        build: impl FnOnce() -> Result<Graph, E>,
    ) -> Result<Arc<CompiledFunction>, CacheError<E>> {
        if let Some(f) = self.map.read().ok().and_then(|m| m.get(sig).cloned()) {
            if let Ok(mut s) = self.stats.lock() {
                s.hits += 1;
            }
            return Ok(f);
        }
        let start = Instant::now();
        let graph = build().map_err(CacheError::Build)?;
        let fused = tfn_passes::fusion::fuse(&graph);
        let compiled = CompiledFunction::compile_in(&self.jit, &graph, fused, &self.options)
            .map_err(CacheError::Compile)?;
        let elapsed = start.elapsed();
        let loops = compiled.fused().kernels.len() - compiled.interpreted_kernels().len();
        if self.log {
            tfn_ir::tfn_log!(
                "tfn: compiled {sig} in {:.3} ms ({} kernels, {} interpreted)",
                elapsed.as_secs_f64() * 1e3,
                compiled.fused().kernels.len(),
                compiled.interpreted_kernels().len()
            );
        }
        if let Ok(mut s) = self.stats.lock() {
            s.compiles += 1;
            s.compile_time += elapsed;
            s.kernels += loops as u64;
        }
        let compiled = Arc::new(compiled);
        let mut map = self
            .map
            .write()
            .map_err(|_| CacheError::Compile(CodegenError::Internal("poisoned cache".into())))?;
        Ok(map.entry(sig.clone()).or_insert(compiled).clone())
    }

    pub fn stats(&self) -> CacheStats {
        self.stats.lock().map(|s| *s).unwrap_or_default()
    }

    /// Number of cached functions.
    pub fn len(&self) -> usize {
        self.map.read().map(|m| m.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
