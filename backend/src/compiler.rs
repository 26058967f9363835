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

/// A handle to a shared JIT module; cheap to clone, `Send + Sync`.
#[derive(Clone)]
pub struct JitCompiler {
    jit: Jit,
    options: CompileOptions,
}

impl JitCompiler {
    pub fn new(options: CompileOptions) -> Result<JitCompiler, CodegenError> {
        Ok(JitCompiler { jit: Jit::new()?, options })
    }

    pub fn options(&self) -> &CompileOptions {
        &self.options
    }

    /// Fuses `graph` and compiles its kernels into this compiler's module. Kernels the code
    /// generator does not support run through the interpreter (see
    /// [`CompiledFunction::interpreted_kernels`]).
    pub fn compile(&self, graph: &Graph) -> Result<CompiledFunction, CodegenError> {
        CompiledFunction::compile_in(&self.jit, graph, &self.options)
    }
}
