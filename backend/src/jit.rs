//! The JIT module kernels are compiled into, shared behind a mutex.
//!
//! One [`Jit`] per [`crate::KernelCache`] (or per standalone compile): Cranelift's `JITModule`
//! owns the executable memory of every kernel it finalised, so it lives in an `Arc` that every
//! [`crate::CompiledFunction`] holds; it is never dropped while a kernel can still be called.
//!
//! Kernels are compiled in step order through [`Jit::compile`], one at a time under the
//! module's lock. A function with several kernels compiled for several threads is first
//! *warmed* ([`Jit::warm`]): its loop plans are built and compiled by Cranelift on up to that
//! many threads at once, off the lock (a `Context` per thread; the ISA is shared), and their
//! machine code is defined in the module and entered in the code cache under the exact
//! Cranelift IR it came from. The step-order compiles then find every kernel there: the code
//! is the same, only the compile's wall time shrinks.

use crate::codegen::{self, vector_lane};
use crate::error::CodegenError;
use crate::isa;
use crate::math::MathFeatures;
use crate::plan::LoopPlan;
use crate::wide::{self, SimdLevel};
use cranelift::codegen::control::ControlPlane;
use cranelift::codegen::ir::Function;
use cranelift::codegen::isa::OwnedTargetIsa;
use cranelift::codegen::{Context, FinalizedMachReloc};
use cranelift::frontend::FunctionBuilderContext;
use cranelift_jit::JITModule;
use cranelift_module::{Linkage, Module, ModuleReloc};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub(crate) use crate::abi::KernelFn;

/// The module and the reusable compilation contexts.
pub(crate) struct JitInner {
    module: JITModule,
    /// The module's ISA, shared with [`Jit::warm`]'s threads.
    isa: OwnedTargetIsa,
    ctx: Context,
    features: MathFeatures,
    pub compile_time: Duration,
    pub kernels: usize,
    /// Machine code by the exact Cranelift IR it was compiled from: kernels that build the
    /// same function (the same layer twice in a model, the same update for every parameter)
    /// share one compile. Keyed by the full text, so a hit is always the identical function.
    /// The flag marks code [`Jit::warm`] compiled that no `compile` has asked for yet (its
    /// first hit counts as that kernel's compile, not as a reuse).
    code: HashMap<String, (KernelFn, bool)>,
    /// Kernels served from `code` instead of compiled.
    pub reused: usize,
    /// Kernels [`Jit::warm`] compiled (on several threads, ahead of their `compile`), and
    /// how many of them a `compile` has asked for since.
    pub warmed: usize,
    pub warm_used: usize,
    /// The wide math routines kernels of this module call (declared imports of the module,
    /// resolved through the JIT's symbol table; see `codegen/stage.rs`).
    wide: codegen::WideFns,
}

// SAFETY: `JITModule` holds raw pointers to its code and data memory, which makes it `!Send`
// by default. All access goes through the `Mutex` in `Jit`, so it is never used from two
// threads at once, and the memory it points to is not tied to any thread.
unsafe impl Send for JitInner {}

/// A shared JIT module.
#[derive(Clone)]
pub(crate) struct Jit(pub Arc<Mutex<JitInner>>);

impl Jit {
    /// A module whose kernels call the wide routines of `simd` (clamped to what this CPU
    /// runs; [`SimdLevel::V128`]: none, every function inline at 128 bits).
    pub fn new(simd: SimdLevel) -> Result<Jit, CodegenError> {
        let isa = isa::native_isa().map_err(|e| CodegenError::Cranelift(e.to_string()))?;
        let features = MathFeatures::of_isa(&*isa);
        let mut module = isa::new_jit_module(isa.clone());
        let wide = declare_wide(&mut module, simd.clamp_to_cpu(), features)?;
        let ctx = module.make_context();
        Ok(Jit(Arc::new(Mutex::new(JitInner {
            module,
            isa,
            ctx,
            features,
            compile_time: Duration::ZERO,
            kernels: 0,
            code: HashMap::new(),
            reused: 0,
            warmed: 0,
            warm_used: 0,
            wide,
        }))))
    }

    /// Compiles `plan`, vectorised when its dtypes allow, else with scalar loops.
    pub fn compile(&self, plan: &LoopPlan) -> Result<KernelFn, CodegenError> {
        let mut inner =
            self.0.lock().map_err(|_| CodegenError::Internal("poisoned JIT lock".into()))?;
        let start = Instant::now();
        let result = compile_plan(plan, |lane| inner.compile_with(plan, lane));
        inner.compile_time += start.elapsed();
        if result.is_ok() {
            inner.kernels += 1;
        }
        result
    }

    /// Compiles the kernels of `plans` on up to `threads` threads into the code cache (see
    /// the module docs), so that [`Jit::compile`] of each finds it there. Kernels already in
    /// the cache and repeats among `plans` are compiled once; a plan whose vector code is
    /// rejected gets its scalar loops, as `compile` would. Nothing is done on one thread, for
    /// fewer than two plans, or when kernels are being dumped (`TFN_DUMP_CLIF`,
    /// `TFN_DUMP_ASM`: the dumps come from `compile`). Failures are left to `compile`, which
    /// meets them again and reports them.
    pub fn warm(&self, plans: &[LoopPlan], threads: usize) {
        let threads = threads.min(plans.len());
        let dumping =
            ["TFN_DUMP_CLIF", "TFN_DUMP_ASM"].iter().any(|v| std::env::var_os(v).is_some());
        if threads < 2 || dumping {
            return;
        }
        let start = Instant::now();
        let Ok(inner) = self.0.lock() else { return };
        let (isa, features, wide) = (inner.isa.clone(), inner.features, inner.wide.clone());
        let frontend = inner.module.target_config();
        drop(inner);
        let claimed: Mutex<HashSet<String>> = Mutex::new(HashSet::new());
        let next = AtomicUsize::new(0);
        let worker = || {
            let mut ctx = Context::new();
            let mut fctx = FunctionBuilderContext::new();
            let mut done = Vec::new();
            while let Some(plan) = plans.get(next.fetch_add(1, Ordering::Relaxed)) {
                let compiled = compile_plan(plan, |lane| {
                    // As `Module::clear_context`: the kernel ABI's calling convention.
                    ctx.clear();
                    ctx.func.signature.call_conv = isa.default_call_conv();
                    codegen::build(
                        plan,
                        &mut ctx.func,
                        &mut fctx,
                        lane,
                        features,
                        &wide,
                        frontend,
                    )?;
                    let text = ctx.func.display().to_string();
                    let cached = self.0.lock().is_ok_and(|inner| inner.code.contains_key(&text));
                    let mine = claimed.lock().is_ok_and(|mut c| c.insert(text.clone()));
                    if cached || !mine {
                        return Ok(None);
                    }
                    let code = ctx
                        .compile(&*isa, &mut ControlPlane::default())
                        .map_err(|e| CodegenError::Cranelift(format!("{:?}", e.inner)))?;
                    let alignment = u64::from(code.buffer.alignment);
                    let bytes = code.code_buffer().to_vec();
                    let relocs = code.buffer.relocs().to_vec();
                    let func = std::mem::replace(&mut ctx.func, Function::new());
                    Ok(Some(Precompiled { text, func, bytes, alignment, relocs }))
                });
                done.extend(compiled.ok().flatten());
            }
            done
        };
        let compiled: Vec<Precompiled> = std::thread::scope(|s| {
            let handles: Vec<_> = (1..threads).map(|_| s.spawn(worker)).collect();
            let mut all = worker();
            for h in handles {
                all.extend(h.join().unwrap_or_default());
            }
            all
        });
        let Ok(mut inner) = self.0.lock() else { return };
        inner.define_precompiled(compiled);
        inner.compile_time += start.elapsed();
    }

    /// Compiles a function of the kernel signature `(args: *const i64)` that `build` writes
    /// (kernels other than loop plans: scans).
    pub fn compile_fn(&self, build: &BuildFn<'_>) -> Result<KernelFn, CodegenError> {
        let mut inner =
            self.0.lock().map_err(|_| CodegenError::Internal("poisoned JIT lock".into()))?;
        let start = Instant::now();
        let result = inner.define(build);
        inner.compile_time += start.elapsed();
        if result.is_ok() {
            inner.kernels += 1;
        }
        result
    }
}

impl crate::executor::KernelSource for Jit {
    fn loop_kernel(&self, plan: &LoopPlan) -> Result<KernelFn, CodegenError> {
        self.compile(plan)
    }

    fn axis_kernel(&self, spec: &crate::scan::AxisSpec) -> Result<KernelFn, CodegenError> {
        let spec = *spec;
        self.compile_fn(&|func, fctx, frontend| crate::scan::build_axis(spec, func, fctx, frontend))
    }
}

/// Compiles `plan` through `compile_with` (one lane dtype or scalar loops): vectorised when
/// its dtypes allow, else, or when the vector code is rejected, with scalar loops. The JIT
/// and the AOT object compile every plan through here, so they choose the same code.
pub(crate) fn compile_plan<T>(
    plan: &LoopPlan,
    mut compile_with: impl FnMut(Option<tfn_ir::DType>) -> Result<T, CodegenError>,
) -> Result<T, CodegenError> {
    match vector_lane(plan) {
        Some(lane) => match compile_with(Some(lane)) {
            Err(CodegenError::Unsupported(why)) | Err(CodegenError::Cranelift(why)) => {
                if std::env::var_os("TFN_LOG_COMPILES").is_some() {
                    tfn_ir::tfn_log!("tfn: scalar loops for a kernel: {why}");
                }
                compile_with(None)
            }
            other => other,
        },
        None => compile_with(None),
    }
}

/// Writes one kernel function (its signature included) into the given function.
pub(crate) type BuildFn<'a> = dyn Fn(
        &mut cranelift::codegen::ir::Function,
        &mut FunctionBuilderContext,
        cranelift::codegen::isa::TargetFrontendConfig,
    ) -> Result<(), CodegenError>
    + 'a;

/// A kernel Cranelift compiled off the module ([`Jit::warm`]): its IR (the cache key, and
/// what its relocations refer to) and its machine code.
struct Precompiled {
    text: String,
    func: Function,
    bytes: Vec<u8>,
    alignment: u64,
    relocs: Vec<FinalizedMachReloc>,
}

impl JitInner {
    /// Defines `compiled` in the module (as `Module::define_function` would have: the same
    /// alignment and relocations) and enters each in the code cache; one that fails to define
    /// is left out, for `compile` to meet again.
    fn define_precompiled(&mut self, compiled: Vec<Precompiled>) {
        let align = self.isa.function_alignment().minimum as u64;
        let align = align.max(self.isa.symbol_alignment());
        let mut defined = Vec::new();
        for p in compiled {
            if self.code.contains_key(&p.text) {
                continue;
            }
            let Ok(id) = self.module.declare_anonymous_function(&p.func.signature) else {
                continue;
            };
            let relocs: Vec<ModuleReloc> =
                p.relocs.iter().map(|r| ModuleReloc::from_mach_reloc(r, &p.func, id)).collect();
            let bytes = (p.bytes.as_slice(), p.alignment.max(align));
            if self.module.define_function_bytes(id, bytes.1, bytes.0, &relocs).is_ok() {
                defined.push((id, p.text));
            }
        }
        if defined.is_empty() || self.module.finalize_definitions().is_err() {
            return;
        }
        for (id, text) in defined {
            let code = self.module.get_finalized_function(id);
            // SAFETY: as in `define`: the kernel ABI signature `(ptr) -> ()`, host C convention.
            let code = unsafe { std::mem::transmute::<*const u8, KernelFn>(code) };
            self.code.insert(text, (code, true));
            self.warmed += 1;
        }
    }

    fn compile_with(
        &mut self,
        plan: &LoopPlan,
        lane: Option<tfn_ir::DType>,
    ) -> Result<KernelFn, CodegenError> {
        let features = self.features;
        let wide = self.wide.clone();
        self.define(&|func, fctx, frontend| {
            codegen::build(plan, func, fctx, lane, features, &wide, frontend)
        })
    }

    fn define(&mut self, build: &BuildFn<'_>) -> Result<KernelFn, CodegenError> {
        self.module.clear_context(&mut self.ctx);
        let frontend = self.module.target_config();
        let mut fctx = FunctionBuilderContext::new();
        let built = build(&mut self.ctx.func, &mut fctx, frontend);
        if let Err(e) = built {
            self.module.clear_context(&mut self.ctx);
            return Err(e);
        }
        let text = self.ctx.func.display().to_string();
        if std::env::var_os("TFN_DUMP_CLIF").is_some() {
            tfn_ir::tfn_log!("{text}");
        }
        if let Some((code, warmed)) = self.code.get_mut(&text) {
            self.module.clear_context(&mut self.ctx);
            if std::mem::take(warmed) {
                self.warm_used += 1;
            } else {
                self.reused += 1;
            }
            return Ok(*code);
        }
        let sig = self.ctx.func.signature.clone();
        let id = self
            .module
            .declare_anonymous_function(&sig)
            .map_err(|e| CodegenError::Cranelift(e.to_string()))?;
        let dump_asm = std::env::var_os("TFN_DUMP_ASM").is_some();
        self.ctx.set_disasm(dump_asm);
        let defined = self.module.define_function(id, &mut self.ctx);
        if dump_asm {
            tfn_ir::tfn_log!("{}", self.ctx.func.display());
            if let Some(text) = self.ctx.compiled_code().and_then(|c| c.vcode.as_ref()) {
                tfn_ir::tfn_log!("{text}");
            }
        }
        self.module.clear_context(&mut self.ctx);
        defined.map_err(|e| CodegenError::Cranelift(format!("{e:?}")))?;
        self.module.finalize_definitions().map_err(|e| CodegenError::Cranelift(e.to_string()))?;
        let code = self.module.get_finalized_function(id);
        // SAFETY: the function was built with the kernel ABI signature `(ptr) -> ()` in the
        // default (C) calling convention of the host ISA.
        let code = unsafe { std::mem::transmute::<*const u8, KernelFn>(code) };
        self.code.insert(text, (code, false));
        Ok(code)
    }
}

/// Declares the f32 routines of `level` as imports of `module`. Wide routines are bit-identical
/// to the inline code only where that code uses `fma`, so without it there are none.
pub(crate) fn declare_wide<M: Module>(
    module: &mut M,
    level: SimdLevel,
    features: MathFeatures,
) -> Result<codegen::WideFns, CodegenError> {
    declare_wide_with(module, level, features, |level, f| {
        wide::routine_f32(level, f).map(|r| r.symbol)
    })
}

/// [`declare_wide`] with the routines' symbols from `symbol` (AOT objects name routines of
/// levels the building CPU may lack: the runtime runs their code only on a CPU that has them).
pub(crate) fn declare_wide_with<M: Module>(
    module: &mut M,
    level: SimdLevel,
    features: MathFeatures,
    symbol: impl Fn(SimdLevel, crate::math::MathFn) -> Option<&'static str>,
) -> Result<codegen::WideFns, CodegenError> {
    let mut fns = codegen::WideFns::default();
    if !features.fma {
        return Ok(fns);
    }
    let mut sig = module.make_signature();
    let ptr = module.target_config().pointer_type();
    for ty in [ptr, ptr, ptr] {
        sig.params.push(cranelift::codegen::ir::AbiParam::new(ty));
    }
    for &f in crate::math::MathFn::ALL {
        let Some(symbol) = symbol(level, f) else { continue };
        let id = module
            .declare_function(symbol, Linkage::Import, &sig)
            .map_err(|e| CodegenError::Cranelift(e.to_string()))?;
        fns.f32.insert(f, id.as_u32());
    }
    fns.level = level;
    Ok(fns)
}
