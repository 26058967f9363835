//! The JIT module kernels are compiled into, shared behind a mutex.
//!
//! One [`Jit`] per [`crate::KernelCache`] (or per standalone compile): Cranelift's `JITModule`
//! owns the executable memory of every kernel it finalised, so it lives in an `Arc` that every
//! [`crate::CompiledFunction`] holds; it is never dropped while a kernel can still be called.

use crate::codegen::{self, vector_lane};
use crate::error::CodegenError;
use crate::executor::KernelRequest;
use crate::isa;
use crate::kernel_define::{BuildFn, Candidates, Compile, KernelDefiner, SyncBuildFn, Target};
use crate::math::MathFeatures;
use crate::plan::LoopPlan;
use crate::wide::{self, SimdLevel};
use cranelift_jit::JITModule;
use cranelift_module::{Linkage, Module};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub(crate) use crate::abi::KernelFn;

/// The module and the reusable compilation context.
pub(crate) struct JitInner {
    module: JITModule,
    /// Machine code by the exact Cranelift IR it was compiled from (one compile for the
    /// kernels that build the same function).
    pub definer: KernelDefiner<KernelFn>,
    features: MathFeatures,
    pub compile_time: Duration,
    pub kernels: usize,
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
        let mut module = isa::new_jit_module(isa);
        let wide = declare_wide(&mut module, simd.clamp_to_cpu(), features)?;
        let definer = KernelDefiner::new(&module);
        Ok(Jit(Arc::new(Mutex::new(JitInner {
            module,
            definer,
            features,
            compile_time: Duration::ZERO,
            kernels: 0,
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

    /// Compiles the kernels `requests` asks for, in order, on up to `threads` threads: each
    /// as [`Jit::compile`] or an axis kernel would be, finalised together.
    pub fn compile_batch(
        &self,
        requests: &[KernelRequest],
        threads: usize,
    ) -> Vec<Result<KernelFn, CodegenError>> {
        let Ok(mut inner) = self.0.lock() else {
            let e = CodegenError::Internal("poisoned JIT lock".into());
            return requests.iter().map(|_| Err(e.clone())).collect();
        };
        let start = Instant::now();
        let features = inner.features;
        let wide = inner.wide.clone();
        let wide = &wide;
        let candidates: Vec<Candidates<'_>> = requests
            .iter()
            .map(|request| -> Candidates<'_> {
                match request {
                    KernelRequest::Loop(plan) => {
                        let build = move |lane: Option<tfn_ir::DType>| -> Box<SyncBuildFn<'_>> {
                            Box::new(move |func, fctx, frontend| {
                                codegen::build(plan, func, fctx, lane, features, wide, frontend)
                            })
                        };
                        // As `compile_plan`: the vector code, else scalar loops.
                        match vector_lane(plan) {
                            Some(lane) => vec![build(Some(lane)), build(None)],
                            None => vec![build(None)],
                        }
                    }
                    KernelRequest::Axis(spec) => {
                        let spec = *spec;
                        vec![Box::new(move |func, fctx, frontend| {
                            crate::scan::build_axis(spec, func, fctx, frontend)
                        })]
                    }
                }
            })
            .collect();
        let inner = &mut *inner;
        let results =
            inner.definer.define_batch(&mut inner.module, &candidates, threads, |module, ids| {
                module
                    .finalize_definitions()
                    .map_err(|e| CodegenError::Cranelift(e.to_string()))?;
                let code = ids.iter().map(|&id| {
                    let code = module.get_finalized_function(id);
                    // SAFETY: as in `JitInner::define`.
                    unsafe { std::mem::transmute::<*const u8, KernelFn>(code) }
                });
                Ok(code.collect())
            });
        inner.compile_time += start.elapsed();
        inner.kernels += results.iter().filter(|r| r.is_ok()).count();
        results
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

impl JitInner {
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
        let target = Target { scope: 0, prefix: None, compile: Compile::Module };
        self.definer.define(&mut self.module, target, build, |module, id| {
            module.finalize_definitions().map_err(|e| CodegenError::Cranelift(e.to_string()))?;
            let code = module.get_finalized_function(id);
            // SAFETY: the function was built with the kernel ABI signature `(ptr) -> ()` in
            // the default (C) calling convention of the host ISA.
            Ok(unsafe { std::mem::transmute::<*const u8, KernelFn>(code) })
        })
    }
}

/// Declares the f32 routines of `level` as imports of `module`. Wide routines are bit-identical
/// to the inline code only where that code uses `fma`, so without it there are none.
pub(crate) fn declare_wide<M: Module>(
    module: &mut M,
    level: SimdLevel,
    features: MathFeatures,
) -> Result<codegen::WideFns, CodegenError> {
    declare_wide_with(module, level, features, WideSymbols::Runnable)
}

/// Which symbols [`declare_wide_with`] imports.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum WideSymbols {
    /// The routines of the level, if this CPU runs it (the JIT).
    Runnable,
    /// The routines of the level by name, whether or not this CPU runs it (an AOT object's
    /// host tier).
    Named,
    /// The routines the AOT runtime dispatches to the CPU's widest level (`_best`), for any
    /// level but [`SimdLevel::V128`] (a portable object's x86-64-v3 tier).
    Dispatched,
}

/// [`declare_wide`] with the routines' symbols chosen by `symbols` (AOT objects name routines
/// of levels the building CPU may lack: the runtime runs their code only on a CPU that has
/// them).
pub(crate) fn declare_wide_with<M: Module>(
    module: &mut M,
    level: SimdLevel,
    features: MathFeatures,
    symbols: WideSymbols,
) -> Result<codegen::WideFns, CodegenError> {
    let mut fns = codegen::WideFns::default();
    if crate::math::fallback_trampoline().is_some() {
        let sig = crate::math::trampoline_signature();
        let id = module
            .declare_function(crate::math::TRAMPOLINE_SYMBOL, Linkage::Import, &sig)
            .map_err(|e| CodegenError::Cranelift(e.to_string()))?;
        fns.trampoline = Some(id.as_u32());
    }
    if !features.fma || level == SimdLevel::V128 {
        return Ok(fns);
    }
    let symbol = |f, kind| match symbols {
        WideSymbols::Runnable => match kind {
            wide::RoutineKind::Map => wide::routine_f32(level, f).map(|r| r.symbol),
            wide::RoutineKind::Sum => wide::routine_sum_f32(level, f).map(|(symbol, _)| symbol),
        },
        WideSymbols::Named => wide::symbol(level, f, kind),
        WideSymbols::Dispatched => wide::dispatched_symbol(f, kind),
    };
    let ptr = module.target_config().pointer_type();
    let declare = |module: &mut M, name: &str, params: usize| {
        let mut sig = module.make_signature();
        for _ in 0..params {
            sig.params.push(cranelift::codegen::ir::AbiParam::new(ptr));
        }
        module
            .declare_function(name, Linkage::Import, &sig)
            .map(|id| id.as_u32())
            .map_err(|e| CodegenError::Cranelift(e.to_string()))
    };
    for kind in [wide::RoutineKind::Map, wide::RoutineKind::Sum] {
        for &f in crate::math::MathFn::ALL {
            let Some(name) = symbol(f, kind) else { continue };
            match kind {
                wide::RoutineKind::Map => fns.f32.insert(f, declare(module, name, 3)?),
                wide::RoutineKind::Sum => fns.sum_f32.insert(f, declare(module, name, 5)?),
            };
        }
    }
    for h in wide::Helper::ALL {
        let name = match symbols {
            WideSymbols::Runnable => wide::helper(level, h).map(|(symbol, _)| symbol),
            WideSymbols::Named => wide::helper_symbol(level, h),
            WideSymbols::Dispatched => wide::dispatched_helper_symbol(h),
        };
        if let Some(name) = name {
            fns.helpers.insert(h, declare(module, name, h.params())?);
        }
    }
    fns.level = level;
    Ok(fns)
}
