//! tfn's Cranelift back end: fused, vectorised CPU kernels JIT-compiled for the host.
//!
//! - [`isa`]: the native target ISA and JIT module every kernel is compiled with.
//! - [`math`]: transcendental functions (exp, log, tanh, erf, sin, pow, …) emitted inline as
//!   branch-free Cranelift IR for `f32x4`/`f64x2` loop bodies and `f32`/`f64` tails.
//! - `plan` and `codegen`: a fused loop kernel as a collapsed loop nest, and its Cranelift IR
//!   (4×-unrolled 128-bit vector loops, row passes for reductions, scalar tails);
//! - [`executor`]: [`CompiledFunction`], which runs a fused graph (JIT loops, matmuls with a
//!   fused epilogue, zero-copy reshapes, native strided copies for transpose/slice/concat, the
//!   interpreter for anything else);
//! - [`wide`]: precompiled AVX-512/AVX2 math routines (`tanh`, `exp`, `log`, … on blocks of
//!   `f32`), the same source as [`math`] instantiated on wide registers, bit-identical to the
//!   inline 128-bit code; kernels call them through the JIT's symbol table;
//! - `kernel_define`: a kernel's Cranelift function deduplicated, declared and compiled into
//!   the JIT module or an AOT object;
//! - [`packed_gemm`]: tfn's own AVX-512 f32 GEMM (packed panels, 12 × 32 micro-kernel, any
//!   operand strides) with a hook where output rows become final; `matmul` batches it, runs
//!   the epilogue per row block and falls back to the `gemm` crate (f64, no AVX-512), reading
//!   transposed operands (folded by fusion) through swapped strides;
//! - [`cache`]: [`KernelCache`], compiled functions per call [`Signature`];
//! - [`workers`]: the one persistent thread pool every parallel kernel runs on;
//! - [`aot`]: kernels compiled ahead of time into an object file, and run from it.

// Without the JIT (the AOT runtime), parts of the plans only the code generator reads are unused.
#![cfg_attr(not(feature = "jit"), allow(dead_code))]

#[cfg(feature = "jit")]
pub mod isa;
// Without the JIT only the approximations the wide routines instantiate are used.
#[cfg_attr(not(feature = "jit"), allow(dead_code))]
pub mod math;

mod abi;
pub mod aot;
mod buffers;
#[cfg(feature = "jit")]
pub mod cache;
#[cfg(feature = "jit")]
pub mod code_cache;
#[cfg(feature = "jit")]
mod codegen;
#[cfg(feature = "jit")]
pub mod compiler;
mod convert16;
mod copy;
pub mod error;
pub mod executor;
pub mod huge_pages;
#[cfg(feature = "jit")]
mod jit;
#[cfg(feature = "jit")]
mod kernel_define;
mod matmul;
pub mod packed_gemm;
mod parallel;
mod plan;
mod pool;
mod scan;
mod scatter;
mod strided_copy;
pub mod tensors;
pub mod wide;
mod window;
pub mod workers;

pub use buffers::assign_tensor;
#[cfg(feature = "jit")]
pub use cache::{ArgSignature, CacheError, CacheStats, KernelCache, Signature};
#[cfg(feature = "jit")]
pub use compiler::JitCompiler;
pub use error::{CodegenError, RunError};
pub use executor::{CompileOptions, CompiledFunction, KernelTimes, Streaming};
pub use tensors::{TensorView, TensorViewMut};
pub use wide::SimdLevel;
