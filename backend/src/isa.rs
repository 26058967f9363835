//! The native target ISA and the JIT module built on it.
//!
//! Both the kernel code generator and the math-function tests compile through here, so they
//! agree on the flags: `opt_level = speed`, non-PIC code for the host CPU as detected by
//! `cranelift_native` (SSE4.1/4.2, AVX, AVX2, FMA, …), and the IR verifier enabled only in
//! builds with debug assertions (it roughly doubles compile time).

use cranelift::codegen::isa::OwnedTargetIsa;
use cranelift::codegen::settings::{self, Configurable};
use cranelift::codegen::CodegenError;
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::default_libcall_names;

/// Failure to set up code generation for the host (these indicate an unsupported host or a bug).
#[derive(Debug, thiserror::Error)]
pub enum IsaError {
    /// Cranelift cannot generate code for this host architecture.
    #[error("unsupported host: {0}")]
    UnsupportedHost(&'static str),
    /// Cranelift (as built) cannot generate code for this target.
    #[error("unsupported target `{0}`")]
    UnsupportedTarget(String),
    /// A flag name or value was rejected (a bug in this file).
    #[error("invalid code generator setting `{name}`: {source}")]
    Setting {
        /// The flag.
        name: &'static str,
        /// Why Cranelift rejected it.
        #[source]
        source: settings::SetError,
    },
    /// The flags are inconsistent with the ISA.
    #[error("cannot build the target ISA: {0}")]
    Build(#[from] CodegenError),
}

/// Shared flags: optimise for speed, verify IR only when debug assertions are on; `pic`
/// only for objects (it changes how a kernel addresses the routines it calls, nothing else).
fn shared_flags(pic: bool) -> Result<settings::Flags, IsaError> {
    let mut flags = settings::builder();
    let verify = if cfg!(debug_assertions) { "true" } else { "false" };
    let pic = if pic { "true" } else { "false" };
    for (name, value) in [("opt_level", "speed"), ("is_pic", pic), ("enable_verifier", verify)] {
        flags.set(name, value).map_err(|source| IsaError::Setting { name, source })?;
    }
    Ok(settings::Flags::new(flags))
}

/// The target ISA for the host CPU, with every feature `cranelift_native` detects.
pub fn native_isa() -> Result<OwnedTargetIsa, IsaError> {
    native_isa_with_pic(false)
}

/// [`native_isa`] with position-independent code or not (AOT objects are linked into PIE
/// executables: calls to the runtime's routines go through the GOT).
pub fn native_isa_with_pic(pic: bool) -> Result<OwnedTargetIsa, IsaError> {
    let builder = cranelift_native::builder().map_err(IsaError::UnsupportedHost)?;
    Ok(builder.finish(shared_flags(pic)?)?)
}

/// The ISA of `triple` (`x86_64-unknown-linux-gnu`, `aarch64-unknown-linux-gnu`) with exactly
/// the extensions `flags` (Cranelift's names: `has_avx2`, …), position-independent: the code
/// of one CPU tier of an AOT object, or of a cross-compiled one. `triple` must be a triple
/// Cranelift parses (callers pass their own constants).
pub fn target_isa(triple: &str, flags: &[&'static str]) -> Result<OwnedTargetIsa, IsaError> {
    let mut builder = cranelift::codegen::isa::lookup_by_name(triple)
        .map_err(|e| IsaError::UnsupportedTarget(format!("{triple}: {e}")))?;
    for &name in flags {
        builder.enable(name).map_err(|source| IsaError::Setting { name, source })?;
    }
    Ok(builder.finish(shared_flags(true)?)?)
}

/// A fresh JIT module for `isa`. Dropping a `JITModule` leaks its code on purpose: keep one per
/// session, or call `free_memory`.
pub fn new_jit_module(isa: OwnedTargetIsa) -> JITModule {
    let mut builder = JITBuilder::with_isa(isa, default_libcall_names());
    // The wide math routines kernels may call (`crate::wide`), resolved by name.
    builder.symbols(crate::wide::symbols());
    // The scalar fallbacks of lanes beyond a vector approximation's range (`math::Fallback`).
    builder.symbols(crate::math::Fallback::symbols());
    JITModule::new(builder)
}

/// A JIT module for the host CPU ([`native_isa`] + [`new_jit_module`]).
pub fn native_jit_module() -> Result<JITModule, IsaError> {
    Ok(new_jit_module(native_isa()?))
}
