//! [`JitCompiler`]: one JIT module that many functions are compiled into.
//!
//! [`crate::KernelCache`] pairs a compiler with a map from [`crate::Signature`]s; a caller that
//! keeps its own per-signature cache (the `tfn` session, whose key also holds keyword
//! arguments and how each graph parameter is fed) uses the compiler directly, so that all of
//! its functions share one module instead of creating one per compile.

use crate::error::CodegenError;
use crate::executor::{CompileOptions, CompiledFunction};
use crate::jit::Jit;
use tfn_ir::Graph;
use tfn_passes::fusion::FusedGraph;

/// A handle to a shared JIT module; cheap to clone, `Send + Sync`.
#[derive(Clone)]
pub struct JitCompiler {
    jit: Jit,
    options: CompileOptions,
}

impl JitCompiler {
    pub fn new(options: CompileOptions) -> Result<JitCompiler, CodegenError> {
        Ok(JitCompiler { jit: Jit::new(options.simd)?, options })
    }

    pub fn options(&self) -> &CompileOptions {
        &self.options
    }

    /// Loop kernels this module has compiled to machine code, and kernels it served from
    /// its code cache instead (an identical Cranelift function compiled before).
    pub fn code_stats(&self) -> (usize, usize) {
        self.jit.0.lock().map_or((0, 0), |inner| {
            let reused = inner.definer.reused();
            (inner.kernels - reused, reused)
        })
    }

    /// Fuses `graph` and compiles its kernels into this compiler's module. A kernel the
    /// code generator rejects runs through the interpreter and is reported
    /// ([`CompiledFunction::interpreted_kernels`]).
    pub fn compile(&self, graph: &Graph) -> Result<CompiledFunction, CodegenError> {
        self.compile_fused(graph, tfn_passes::fusion::fuse(graph))
    }

    /// Compiles the kernels of `fused`, a schedule of `graph` that the caller's pipeline made
    /// (`tfn_passes::pipeline::plan`).
    pub fn compile_fused(
        &self,
        graph: &Graph,
        fused: FusedGraph,
    ) -> Result<CompiledFunction, CodegenError> {
        CompiledFunction::compile_in(&self.jit, graph, fused, &self.options)
    }
}
