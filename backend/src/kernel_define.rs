//! [`KernelDefiner`]: a kernel's Cranelift function built, deduplicated by its printed text,
//! declared and compiled into a `cranelift_module::Module`. The JIT (`jit.rs`, a `JITModule`),
//! the AOT object (`aot/build.rs`, an `ObjectModule` with one ISA per CPU tier) and the
//! self-contained aarch64 object (`aot/standalone`) all define their kernels through it.
//!
//! What differs between them is a [`Target`] (how the function is named and compiled) and the
//! `finish` step of [`KernelDefiner::define`] (the JIT finalises the code and hands out its
//! address, an object keeps the `FuncId`). Debugging output: `TFN_DUMP_CLIF` logs every
//! function built (a reused one included), `TFN_DUMP_ASM` every function compiled, optimised,
//! with its machine code.

use crate::error::CodegenError;
use cranelift::codegen::control::ControlPlane;
use cranelift::codegen::ir::Function;
use cranelift::codegen::isa::{TargetFrontendConfig, TargetIsa};
use cranelift::codegen::{Context, FinalizedMachReloc};
use cranelift::frontend::FunctionBuilderContext;
use cranelift_module::{FuncId, Linkage, Module, ModuleReloc};
use std::collections::HashMap;

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
    /// What each kernel became, by scope and the function's full Cranelift text: kernels that
    /// build the same function (the same layer twice in a model, the same update for every
    /// parameter) share one compile, and a hit is always the identical function.
    code: HashMap<(usize, String), T>,
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
        let text = self.ctx.func.display().to_string();
        if std::env::var_os("TFN_DUMP_CLIF").is_some() {
            tfn_ir::tfn_log!("{text}");
        }
        let key = (target.scope, text);
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
