//! tfn's Cranelift back end: fused, vectorised CPU kernels JIT-compiled for the host.
//!
//! - [`isa`]: the native target ISA and JIT module every kernel is compiled with.
//! - [`math`]: transcendental functions (exp, log, tanh, erf, sin, pow, …) emitted inline as
//!   branch-free Cranelift IR for `f32x4`/`f64x2` loop bodies and `f32`/`f64` tails.

pub mod isa;
pub mod math;
