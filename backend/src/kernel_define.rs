//! [`KernelDefiner`]: a kernel's Cranelift function built, deduplicated by its [`FunctionKey`],
//! declared and compiled into a `cranelift_module::Module`. The JIT (`jit.rs`, a `JITModule`),
//! the AOT object (`aot/build.rs`, an `ObjectModule` with one ISA per CPU tier) and the
//! self-contained aarch64 object (`aot/standalone`) all define their kernels through it.
//!
//! What differs between them is a [`Target`] (how the function is named and compiled) and the
//! `finish` step of [`KernelDefiner::define`] (the JIT finalises the code and hands out its
//! address, an object keeps the `FuncId`). Debugging output: `TFN_DUMP_CLIF` logs every
//! function built (a reused one included), `TFN_DUMP_ASM` every function compiled, optimised,
//! with its machine code.

use crate::code_cache::{self, DiskCache};
use crate::error::CodegenError;
use cranelift::codegen::control::ControlPlane;
use cranelift::codegen::incremental_cache::{compute_cache_key, CacheKeyHash};
use cranelift::codegen::ir::{Function, UserExternalName};
use cranelift::codegen::isa::{TargetFrontendConfig, TargetIsa};
use cranelift::codegen::{Context, FinalizedMachReloc};
use cranelift::frontend::FunctionBuilderContext;
use cranelift_module::{FuncId, Linkage, Module, ModuleReloc};
use std::collections::HashMap;

/// What identifies a kernel's function for [`KernelDefiner`]: Cranelift's incremental-cache
/// key (SHA-256 over the whole function body, signature and constants included, with the
/// ISA and its flags) and the external names it calls (which that key abstracts). Equal keys
/// are the identical function for the identical target. Computing one costs a fifth of
/// printing the function, which the text key it replaced did (21 of the char-LM's first
/// step's 24 ms of kernel building).
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct FunctionKey {
    body: CacheKeyHash,
    calls: Vec<UserExternalName>,
}

impl FunctionKey {
    fn of(isa: &dyn TargetIsa, func: &Function) -> FunctionKey {
        FunctionKey {
            body: compute_cache_key(isa, func),
            calls: func.params.user_named_funcs().values().cloned().collect(),
        }
    }
}

/// Writes one kernel function (its signature included) into the given function.
pub(crate) type BuildFn<'a> = dyn Fn(&mut Function, &mut FunctionBuilderContext, TargetFrontendConfig) -> Result<(), CodegenError>
    + 'a;

/// Checks one relocation of a compiled kernel before it is defined: an error refuses the kernel.
pub(crate) type VetReloc<'a> = dyn FnMut(&FinalizedMachReloc) -> Result<(), CodegenError> + 'a;

/// How a kernel not built before is named and compiled.
pub(crate) struct Target<'a> {
    /// Kernels are shared only within one scope (an AOT object's CPU tier; 0 elsewhere).
    pub scope: usize,
    /// `Some(prefix)`: the local symbol `<prefix>_k<n>`, `n` the kernels defined before it;
    /// `None`: an anonymous function (the JIT).
    pub prefix: Option<&'a str>,
    /// Which code generator compiles it.
    pub compile: Compile<'a>,
}

/// Which code generator compiles a kernel.
pub(crate) enum Compile<'a> {
    /// `Module::define_function`: the module's own ISA (the JIT).
    Module,
    /// This ISA (the module's, or another tier of its architecture); the code is defined from
    /// its bytes, each relocation vetted first.
    Isa(&'a dyn TargetIsa, &'a mut VetReloc<'a>),
}

/// The compilation context of one module and what each distinct kernel function became there.
pub(crate) struct KernelDefiner<T> {
    ctx: Context,
    /// What each kernel became, by scope and the function's [`FunctionKey`]: kernels that
    /// build the same function (the same layer twice in a model, the same update for every
    /// parameter) share one compile, and a hit is always the identical function.
    code: HashMap<(usize, FunctionKey), T>,
    /// Kernels served from `code` instead of compiled.
    reused: usize,
    /// Distinct kernels defined.
    defined: usize,
}

impl<T: Copy> KernelDefiner<T> {
    /// An empty one, for kernels of `module`.
    pub fn new(module: &impl Module) -> KernelDefiner<T> {
        KernelDefiner { ctx: module.make_context(), code: HashMap::new(), reused: 0, defined: 0 }
    }

    /// Kernels served from an identical function defined before.
    pub fn reused(&self) -> usize {
        self.reused
    }

    /// Distinct kernels defined.
    pub fn defined(&self) -> usize {
        self.defined
    }

    /// The function `build` writes: what `finish` made of the identical function of the same
    /// scope defined before, else declared and compiled into `module` as `target` says and
    /// then passed to `finish`.
    pub fn define<M: Module>(
        &mut self,
        module: &mut M,
        mut target: Target<'_>,
        build: &BuildFn<'_>,
        finish: impl FnOnce(&mut M, FuncId) -> Result<T, CodegenError>,
    ) -> Result<T, CodegenError> {
        module.clear_context(&mut self.ctx);
        let frontend = match &target.compile {
            Compile::Module => module.target_config(),
            Compile::Isa(isa, _) => isa.frontend_config(),
        };
        let mut fctx = FunctionBuilderContext::new();
        let built = build(&mut self.ctx.func, &mut fctx, frontend);
        if let Err(e) = built {
            module.clear_context(&mut self.ctx);
            return Err(e);
        }
        if std::env::var_os("TFN_DUMP_CLIF").is_some() {
            tfn_ir::tfn_log!("{}", self.ctx.func.display());
        }
        let isa = match &target.compile {
            Compile::Module => module.isa(),
            Compile::Isa(isa, _) => *isa,
        };
        let key = (target.scope, FunctionKey::of(isa, &self.ctx.func));
        if let Some(&done) = self.code.get(&key) {
            module.clear_context(&mut self.ctx);
            self.reused += 1;
            return Ok(done);
        }
        let id = self.compile(module, &mut target);
        module.clear_context(&mut self.ctx);
        let done = finish(module, id?)?;
        self.defined += 1;
        self.code.insert(key, done);
        Ok(done)
    }

    /// Declares the function in the context and compiles it into `module`.
    fn compile<M: Module>(
        &mut self,
        module: &mut M,
        target: &mut Target<'_>,
    ) -> Result<FuncId, CodegenError> {
        let sig = self.ctx.func.signature.clone();
        let id = match target.prefix {
            None => module.declare_anonymous_function(&sig),
            Some(prefix) => {
                let name = format!("{prefix}_k{}", self.defined);
                module.declare_function(&name, Linkage::Local, &sig)
            }
        }
        .map_err(|e| CodegenError::Cranelift(e.to_string()))?;
        let dump_asm = std::env::var_os("TFN_DUMP_ASM").is_some();
        self.ctx.set_disasm(dump_asm);
        let defined = match &mut target.compile {
            Compile::Module => module
                .define_function(id, &mut self.ctx)
                .map_err(|e| CodegenError::Cranelift(format!("{e:?}"))),
            Compile::Isa(isa, vet) => define_for(module, &mut self.ctx, *isa, id, vet),
        };
        if dump_asm {
            tfn_ir::tfn_log!("{}", self.ctx.func.display());
            if let Some(text) = self.ctx.compiled_code().and_then(|c| c.vcode.as_ref()) {
                tfn_ir::tfn_log!("{text}");
            }
        }
        defined.map(|()| id)
    }
}

/// Compiles the function in `ctx` for `isa` (which may differ from the module's: another
/// tier of the same architecture) and defines it as `id`, with its relocations (each passed
/// to `vet` first).
fn define_for<M: Module>(
    module: &mut M,
    ctx: &mut Context,
    isa: &dyn TargetIsa,
    id: FuncId,
    vet: &mut VetReloc<'_>,
) -> Result<(), CodegenError> {
    ctx.compile(isa, &mut ControlPlane::default())
        .map_err(|e| CodegenError::Cranelift(format!("{:?}", e.inner)))?;
    let Some(compiled) = ctx.compiled_code() else {
        return Err(CodegenError::Internal("no compiled code".into()));
    };
    let mut relocs = Vec::new();
    for r in compiled.buffer.relocs() {
        vet(r)?;
        relocs.push(ModuleReloc::from_mach_reloc(r, &ctx.func, id));
    }
    let alignment = u64::from(compiled.buffer.alignment);
    module
        .define_function_bytes(id, alignment, compiled.buffer.data(), &relocs)
        .map_err(|e| CodegenError::Cranelift(format!("{e:?}")))
}

/// A kernel build that may run on any thread of a batch ([`KernelDefiner::define_batch`]).
pub(crate) type SyncBuildFn<'a> = dyn Fn(&mut Function, &mut FunctionBuilderContext, TargetFrontendConfig) -> Result<(), CodegenError>
    + Sync
    + 'a;

/// One kernel of a batch: its builds in order of preference. When one is rejected
/// (`Unsupported` or `Cranelift`, built or compiled) the next is tried, as
/// `jit::compile_plan` falls back from a plan's vector code to its scalar loops; any other
/// error is the kernel's.
pub(crate) type Candidates<'a> = Vec<Box<SyncBuildFn<'a>>>;

/// A rejection that makes a batch try a kernel's next build.
fn rejected(e: &CodegenError) -> bool {
    matches!(e, CodegenError::Unsupported(_) | CodegenError::Cranelift(_))
}

/// A kernel of a batch, built: the function, its key, and which of its candidates it is.
struct Built {
    func: Function,
    key: FunctionKey,
    candidate: usize,
}

/// Builds the first of `candidates[from..]` that is not rejected.
fn build_from(
    candidates: &[Box<SyncBuildFn<'_>>],
    from: usize,
    isa: &dyn TargetIsa,
) -> Result<Built, CodegenError> {
    let frontend = isa.frontend_config();
    let mut last = CodegenError::Internal("a kernel without a build".into());
    for (candidate, build) in candidates.iter().enumerate().skip(from) {
        let mut func = Function::new();
        let mut fctx = FunctionBuilderContext::new();
        match build(&mut func, &mut fctx, frontend) {
            Ok(()) => {
                let key = FunctionKey::of(isa, &func);
                return Ok(Built { func, key, candidate });
            }
            Err(e) if rejected(&e) => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// A distinct function of a batch, compiled (or the error of its last candidate).
struct Job {
    /// The batch kernel it was first built for.
    kernel: usize,
    built: Option<Built>,
    compiled: Option<Result<(Context, FunctionKey), CodegenError>>,
}

impl Job {
    /// Compiles the function for `isa`; when Cranelift rejects it, builds and compiles the
    /// kernel's next candidates in turn.
    fn compile(
        &mut self,
        candidates: &[Box<SyncBuildFn<'_>>],
        isa: &dyn TargetIsa,
        dump_asm: bool,
        cache: Option<&DiskCache>,
    ) {
        let mut built = self.built.take();
        let result = loop {
            let Some(Built { func, key, candidate }) = built.take() else {
                break Err(CodegenError::Internal("a batch job without a function".into()));
            };
            let mut ctx = Context::for_function(func);
            ctx.set_disasm(dump_asm);
            match compile_cached(&mut ctx, isa, cache.filter(|_| !dump_asm)) {
                Ok(()) => break Ok((ctx, key)),
                Err(e @ CodegenError::Internal(_)) => break Err(e),
                Err(e) => {
                    match build_from(candidates, candidate + 1, isa) {
                        Ok(next) => built = Some(next),
                        // No candidate left: the compile error is the kernel's.
                        Err(_) => break Err(e),
                    }
                }
            }
        };
        self.compiled = Some(result);
    }
}

/// Compiles the function of `ctx` for `isa`, through the on-disk code cache when given one
/// (`code_cache.rs`; under `TFN_CODE_CACHE=check` a loaded kernel is compiled again and must
/// be identical).
fn compile_cached(
    ctx: &mut Context,
    isa: &dyn TargetIsa,
    cache: Option<&DiskCache>,
) -> Result<(), CodegenError> {
    let cranelift = |e: cranelift::codegen::CodegenError| CodegenError::Cranelift(format!("{e:?}"));
    let Some(cache) = cache else {
        return ctx
            .compile(isa, &mut ControlPlane::default())
            .map(|_| ())
            .map_err(|e| cranelift(e.inner));
    };
    let mut store = cache.store_for();
    let hit = match ctx.compile_with_cache(isa, &mut store, &mut ControlPlane::default()) {
        Ok((_, hit)) => hit,
        Err(e) => return Err(cranelift(e.inner)),
    };
    if !hit {
        return Ok(());
    }
    cache.stats.hits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if code_cache::Mode::from_env() == code_cache::Mode::Check {
        let mut fresh = Context::for_function(ctx.func.clone());
        fresh.compile(isa, &mut ControlPlane::default()).map_err(|e| cranelift(e.inner))?;
        if fresh.compiled_code() != ctx.compiled_code() {
            return Err(CodegenError::Internal(format!(
                "the code cache's entry for a kernel differs from compiling it (in {})",
                cache.dir().display()
            )));
        }
    }
    Ok(())
}

/// What a batch does for one kernel.
enum Fate<T> {
    Failed(CodegenError),
    /// The identical function defined by an earlier call.
    Hit(T),
    /// The identical function of an earlier kernel of the batch.
    Same(usize),
    /// Compiled by this job.
    Job(usize),
}

impl<T: Copy> KernelDefiner<T> {
    /// Defines every kernel of `kernels` into `module` (anonymous functions, the module's own
    /// ISA: the JIT), each as [`KernelDefiner::define`] would, but built and compiled on up to
    /// `threads` threads of the worker pool: the Cranelift work of distinct kernels is
    /// independent; only declaring and defining them in the module is sequential. `finish`
    /// gets every function defined, once (the JIT finalises them together).
    ///
    /// The results are those of defining the kernels one by one in order: the same
    /// deduplication (against earlier calls and within the batch), the same fallback from
    /// one candidate build to the next, the same errors.
    pub fn define_batch<M: Module>(
        &mut self,
        module: &mut M,
        kernels: &[Candidates<'_>],
        threads: usize,
        finish: impl FnOnce(&mut M, &[FuncId]) -> Result<Vec<T>, CodegenError>,
    ) -> Vec<Result<T, CodegenError>> {
        let isa = module.isa();
        let panicked = |p: crate::workers::WorkerPanic| {
            CodegenError::Internal(format!("the code generator failed: {}", p.message))
        };
        // Build every kernel (in parallel).
        let mut built: Vec<Option<Result<Built, CodegenError>>> =
            kernels.iter().map(|_| None).collect();
        if let Err(p) = crate::workers::run_mut(&mut built, threads, &|i, slot| {
            *slot = Some(build_from(&kernels[i], 0, isa));
        }) {
            let e = panicked(p);
            return kernels.iter().map(|_| Err(e.clone())).collect();
        }
        // Deduplicate, in kernel order.
        let dump_clif = std::env::var_os("TFN_DUMP_CLIF").is_some();
        let mut fates = Vec::with_capacity(kernels.len());
        let mut jobs: Vec<Job> = Vec::new();
        let mut first: HashMap<FunctionKey, usize> = HashMap::new();
        for (kernel, b) in built.into_iter().enumerate() {
            let fate = match b {
                None => Fate::Failed(CodegenError::Internal("a kernel was not built".into())),
                Some(Err(e)) => Fate::Failed(e),
                Some(Ok(b)) => {
                    if dump_clif {
                        tfn_ir::tfn_log!("{}", b.func.display());
                    }
                    let key = (0, b.key);
                    if let Some(&done) = self.code.get(&key) {
                        Fate::Hit(done)
                    } else if let Some(&k) = first.get(&key.1) {
                        Fate::Same(k)
                    } else {
                        let (_, key) = key;
                        first.insert(key.clone(), kernel);
                        let built = Built { func: b.func, key, candidate: b.candidate };
                        jobs.push(Job { kernel, built: Some(built), compiled: None });
                        Fate::Job(jobs.len() - 1)
                    }
                }
            };
            fates.push(fate);
        }
        // Compile the distinct functions (in parallel).
        let dump_asm = std::env::var_os("TFN_DUMP_ASM").is_some();
        let cache = DiskCache::global();
        if let Err(p) = crate::workers::run_mut(&mut jobs, threads, &|_, job| {
            job.compile(&kernels[job.kernel], isa, dump_asm, cache);
        }) {
            let e = panicked(p);
            return kernels.iter().map(|_| Err(e.clone())).collect();
        }
        // Declare and define them, in kernel order.
        let mut ids = Vec::new();
        let mut defined: Vec<Result<usize, CodegenError>> = Vec::with_capacity(jobs.len());
        let mut keys = Vec::new();
        for job in &mut jobs {
            let result = match job.compiled.take() {
                None => Err(CodegenError::Internal("a kernel was not compiled".into())),
                Some(Err(e)) => Err(e),
                Some(Ok((ctx, key))) => define_compiled(module, &ctx, dump_asm).map(|id| {
                    ids.push(id);
                    keys.push(key);
                    ids.len() - 1
                }),
            };
            defined.push(result);
        }
        let finished = if ids.is_empty() { Ok(Vec::new()) } else { finish(module, &ids) };
        let finished = match finished {
            Ok(done) if done.len() == ids.len() => Ok(done),
            Ok(_) => Err(CodegenError::Internal("finish returned a wrong count".into())),
            Err(e) => Err(e),
        };
        if let Ok(done) = &finished {
            self.defined += done.len();
            for (key, &t) in keys.into_iter().zip(done) {
                self.code.insert((0, key), t);
            }
        }
        let job_result = |j: usize| -> Result<T, CodegenError> {
            let slot = defined[j].clone()?;
            finished.as_ref().map(|done| done[slot]).map_err(Clone::clone)
        };
        let mut results: Vec<Result<T, CodegenError>> = Vec::with_capacity(kernels.len());
        for fate in fates {
            let result = match fate {
                Fate::Failed(e) => Err(e),
                Fate::Hit(t) => {
                    self.reused += 1;
                    Ok(t)
                }
                Fate::Same(k) => {
                    let r = results[k].clone();
                    self.reused += usize::from(r.is_ok());
                    r
                }
                Fate::Job(j) => job_result(j),
            };
            results.push(result);
        }
        results
    }
}

/// Declares an anonymous function for the compiled code of `ctx` and defines it in `module`.
fn define_compiled<M: Module>(
    module: &mut M,
    ctx: &Context,
    dump_asm: bool,
) -> Result<FuncId, CodegenError> {
    let Some(compiled) = ctx.compiled_code() else {
        return Err(CodegenError::Internal("no compiled code".into()));
    };
    let id = module
        .declare_anonymous_function(&ctx.func.signature)
        .map_err(|e| CodegenError::Cranelift(e.to_string()))?;
    if dump_asm {
        tfn_ir::tfn_log!("{}", ctx.func.display());
        if let Some(text) = compiled.vcode.as_ref() {
            tfn_ir::tfn_log!("{text}");
        }
    }
    let relocs: Vec<ModuleReloc> = compiled
        .buffer
        .relocs()
        .iter()
        .map(|r| ModuleReloc::from_mach_reloc(r, &ctx.func, id))
        .collect();
    let alignment = u64::from(compiled.buffer.alignment);
    module
        .define_function_bytes(id, alignment, compiled.buffer.data(), &relocs)
        .map_err(|e| CodegenError::Cranelift(format!("{e:?}")))?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cranelift::codegen::ir::{
        types, AbiParam, ExtFuncData, ExternalName, InstBuilder, Signature,
    };
    use cranelift::frontend::FunctionBuilder;

    /// A function that calls the module's import `index` once with its own argument.
    fn caller(index: u32) -> Function {
        let isa = crate::isa::native_isa().expect("host ISA");
        let call_conv = isa.default_call_conv();
        let mut sig = Signature::new(call_conv);
        sig.params.push(AbiParam::new(types::I64));
        let mut func = Function::with_name_signature(Default::default(), sig.clone());
        let mut fctx = FunctionBuilderContext::new();
        let mut b = FunctionBuilder::new(&mut func, &mut fctx);
        let block = b.create_block();
        b.append_block_params_for_function_params(block);
        b.switch_to_block(block);
        let signature = b.import_signature(sig);
        let name = b.func.declare_imported_user_function(UserExternalName::new(0, index));
        let callee = b.import_function(ExtFuncData {
            name: ExternalName::user(name),
            signature,
            colocated: false,
            patchable: false,
        });
        let arg = b.block_params(block)[0];
        b.ins().call(callee, &[arg]);
        b.ins().return_(&[]);
        b.seal_all_blocks();
        b.finalize(isa.frontend_config());
        func
    }

    /// Two functions alike but for the routine they call have the same Cranelift cache hash
    /// (it abstracts external names) and different keys: the kernel dedupe must not hand one
    /// the other's code.
    #[test]
    fn functions_calling_different_routines_have_different_keys() {
        let isa = crate::isa::native_isa().expect("host ISA");
        let (tanh, exp) = (caller(3), caller(4));
        assert!(compute_cache_key(&*isa, &tanh) == compute_cache_key(&*isa, &exp));
        assert!(FunctionKey::of(&*isa, &tanh) != FunctionKey::of(&*isa, &exp));
        assert!(FunctionKey::of(&*isa, &tanh) == FunctionKey::of(&*isa, &caller(3)));
    }
}
