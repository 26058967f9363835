//! Self-contained objects for another architecture ([`StandaloneBuilder`], `tfnc build
//! --target aarch64-unknown-linux-gnu`): the kernels *and* the code that runs them, with no
//! runtime library.
//!
//! An x86-64 object's entry point hands its descriptor to the runtime (`libtfn_rt.a`, Rust),
//! which rebuilds the executor's steps. There is no aarch64 runtime, so here the entry point
//! itself is generated, in Cranelift, from the steps the executor would run
//! ([`CompiledFunction::standalone_steps`]): it checks the buffers, binds the sizes, allocates
//! the intermediates with libc's `malloc` (freed on every path), calls the kernels in step
//! order on one thread with the arguments `executor::prepare_loop` would bind (`abi`'s slots:
//! pointers, collapsed sizes, outer strides, the whole split range) and writes the outputs in
//! place. The kernels are the JIT's own code (`codegen::build`, `fma` fused, every math
//! function inline: no wide routines), so the results are the bits of `Session::call`.
//!
//! What it takes: loop kernels (elementwise, broadcasts, reductions, row kernels such as
//! softmax and layer norm, random ops), reshapes, scans and `argmax`/`argmin`, over sizes that
//! are input sizes (no derived sizes). Refused when building, naming the step: GEMMs, window
//! ops, strided copies, scatters, interpreted kernels, views or indexed reads folded into a
//! kernel, 16-bit floats, and kernels that would need a libm routine. A long reduction over
//! few rows runs in chunks combined in `f64`, as the executor runs it ([`chunked`]). Buffers
//! must be contiguous (row-major strides). Errors set a static message read by
//! `<prefix>_error_message()` (one per object, the last failure of any thread). The entry
//! point is [`entry`].

mod chunked;
mod entry;

use super::build::AotError;
use super::FunctionMeta;
use crate::abi::KernelFn;
use crate::codegen::{self, WideFns};
use crate::error::CodegenError;
use crate::executor::{CompileOptions, CompiledFunction, KernelSource, StandaloneStep};
use crate::isa;
use crate::jit::compile_plan;
use crate::kernel_define::{BuildFn, Compile, KernelDefiner, Target};
use crate::math::MathFeatures;
use crate::plan::LoopPlan;
use crate::scan::{build_axis, AxisSpec};
use crate::wide::SimdLevel;
use cranelift::codegen::ir::{
    AbiParam, ExternalName, Function, InstBuilder, MemFlagsData, UserFuncName,
};
use cranelift::codegen::isa::OwnedTargetIsa;
use cranelift::codegen::{FinalizedMachReloc, FinalizedRelocTarget};
use cranelift::frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{DataDescription, DataId, FuncId, Linkage, Module};
use cranelift_object::ObjectModule;
use std::cell::RefCell;
use std::collections::HashMap;
use tfn_ir::{Graph, Shape, SymDef};
use tfn_passes::fusion::FusedGraph;

/// The triple of self-contained aarch64 objects.
pub const AARCH64: &str = "aarch64-unknown-linux-gnu";

/// Builds one self-contained object: [`StandaloneBuilder::add_function`] per function, then
/// [`StandaloneBuilder::finish`].
pub struct StandaloneBuilder {
    module: ObjectModule,
    isa: OwnedTargetIsa,
    prefix: String,
    /// Kernels by Cranelift text (identical ones share a symbol).
    definer: KernelDefiner<FuncId>,
    /// The static messages, by text.
    messages: HashMap<String, DataId>,
    /// `<prefix>_error`: the pointer to the last error's message.
    error: DataId,
    /// libc's `malloc`, `free`, `memcpy`.
    libc: [FuncId; 3],
    /// Why a kernel cannot go into the object (it would call a routine, a libm function; the
    /// backend rejected its vector code), when one cannot.
    refused: Option<String>,
}

impl StandaloneBuilder {
    /// An object for `triple` (only [`AARCH64`]) whose symbols start with `prefix`.
    pub fn new(prefix: &str, triple: &str) -> Result<StandaloneBuilder, CodegenError> {
        let cranelift = |e: &dyn std::fmt::Display| CodegenError::Cranelift(e.to_string());
        let isa = isa::target_isa(triple, &[]).map_err(|e| cranelift(&e))?;
        let builder = cranelift_object::ObjectBuilder::new(
            isa.clone(),
            format!("{prefix}.o"),
            cranelift_module::default_libcall_names(),
        )
        .map_err(|e| cranelift(&e))?;
        let mut module = ObjectModule::new(builder);
        let ptr = module.target_config().pointer_type();
        let mut libc = Vec::new();
        for (name, params, returns) in [
            ("malloc", vec![ptr], vec![ptr]),
            ("free", vec![ptr], vec![]),
            ("memcpy", vec![ptr; 3], vec![ptr]),
        ] {
            let mut sig = module.make_signature();
            sig.params.extend(params.into_iter().map(AbiParam::new));
            sig.returns.extend(returns.into_iter().map(AbiParam::new));
            libc.push(
                module.declare_function(name, Linkage::Import, &sig).map_err(|e| cranelift(&e))?,
            );
        }
        let error = module
            .declare_data(&format!("{prefix}_error"), Linkage::Local, true, false)
            .map_err(|e| cranelift(&e))?;
        let definer = KernelDefiner::new(&module);
        Ok(StandaloneBuilder {
            module,
            isa,
            prefix: prefix.to_string(),
            definer,
            messages: HashMap::new(),
            error,
            libc: [libc[0], libc[1], libc[2]],
            refused: None,
        })
    }

    /// Compiles `graph` (planned: `fused = fuse(graph)`) into the object as the entry point
    /// `<prefix>_<meta.name>` that runs it. Refused, naming the step, when a step needs the
    /// runtime library.
    pub fn add_function(
        &mut self,
        meta: &FunctionMeta,
        graph: &Graph,
        fused: FusedGraph,
    ) -> Result<(), AotError> {
        let refuse = |why: String| Err(AotError::Unsupported(format!("{why}; {}", needs())));
        let unsupported = |why: String| Err(AotError::Unsupported(why));
        for (i, def) in graph.syms.iter().enumerate() {
            if let SymDef::Derived(_) = def {
                return unsupported(format!(
                    "size `s{i}` is computed from other sizes (a reshape, slice or concat), and \
                     a self-contained object binds the inputs' sizes only"
                ));
            }
        }
        for p in &graph.params {
            if matches!(p.ty.dtype, tfn_ir::DType::F16 | tfn_ir::DType::BF16) {
                return unsupported(format!(
                    "`{}` is a 16-bit float tensor, which a self-contained object does not take",
                    p.name
                ));
            }
        }
        let src = Source { builder: RefCell::new(self), kernels: RefCell::default() };
        let options =
            CompileOptions { threads: 1, simd: SimdLevel::V128, stream: Default::default() };
        let assembled = CompiledFunction::assemble(&src, None, graph, fused, &options);
        let kernels = src.kernels.into_inner();
        if let Some(why) = self.refused.take() {
            return unsupported(why);
        }
        let compiled = assembled?;
        let steps = compiled.standalone_steps();
        let mut next = 0;
        let mut plan = Vec::new();
        for (i, (kernel, step)) in steps.into_iter().enumerate() {
            let what = |s: &str| format!("step {i} is {s}");
            match &step {
                StandaloneStep::Runtime(why) => return refuse(what(why)),
                StandaloneStep::Loop { plan, widened, .. } => {
                    if *widened {
                        return refuse(what("a kernel over 16-bit floats"));
                    }
                    if plan.index_sources() > 0 || !plan.reads.is_empty() {
                        return refuse(what("an indexed read (`gather`, `index_select`)"));
                    }
                    if plan.inputs.iter().any(|o| o.view.is_some()) {
                        return refuse(what("a slice or transpose folded into a loop kernel"));
                    }
                }
                StandaloneStep::View { .. } | StandaloneStep::Axis { .. } => {}
            }
            let kernel_id = match step {
                StandaloneStep::Loop { .. } | StandaloneStep::Axis { .. } => {
                    let id = kernels.get(next).copied().ok_or_else(|| {
                        AotError::Codegen(CodegenError::Internal(
                            "a step without its kernel".into(),
                        ))
                    })?;
                    next += 1;
                    Some(id)
                }
                _ => None,
            };
            plan.push((kernel.domain.clone(), step, kernel_id));
        }
        let name = format!("{}_{}", self.prefix, meta.name);
        entry::define(self, &name, meta, graph, &plan).map_err(AotError::Codegen)
    }

    /// The object file's bytes: the kernels and messages (local), the entry points and
    /// `<prefix>_error_message` (exported).
    pub fn finish(mut self) -> Result<Vec<u8>, CodegenError> {
        let err = |e: &dyn std::fmt::Display| CodegenError::Cranelift(e.to_string());
        let none = self.message("no error")?;
        let mut desc = DataDescription::new();
        desc.set_align(8);
        desc.define(vec![0u8; 8].into_boxed_slice());
        let gv = self.module.declare_data_in_data(none, &mut desc);
        desc.write_data_addr(0, gv, 0);
        self.module.define_data(self.error, &desc).map_err(|e| err(&e))?;
        // const char *<prefix>_error_message(void)
        let ptr = self.module.target_config().pointer_type();
        let mut sig = self.module.make_signature();
        sig.returns.push(AbiParam::new(ptr));
        let id = self
            .module
            .declare_function(&format!("{}_error_message", self.prefix), Linkage::Export, &sig)
            .map_err(|e| err(&e))?;
        let mut ctx = self.module.make_context();
        ctx.func = Function::with_name_signature(UserFuncName::user(0, id.as_u32()), sig);
        let mut fctx = FunctionBuilderContext::new();
        {
            let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
            let block = b.create_block();
            b.switch_to_block(block);
            b.seal_block(block);
            let gv = self.module.declare_data_in_func(self.error, b.func);
            let at = b.ins().symbol_value(ptr, gv);
            let message = b.ins().load(ptr, MemFlagsData::trusted(), at, 0);
            b.ins().return_(&[message]);
            b.finalize(self.module.target_config());
        }
        self.module
            .define_function(id, &mut ctx)
            .map_err(|e| CodegenError::Cranelift(format!("{e:?}")))?;
        self.module.finish().emit().map_err(|e| err(&e))
    }

    /// The read-only NUL-terminated message `text` (one symbol per distinct text).
    fn message(&mut self, text: &str) -> Result<DataId, CodegenError> {
        if let Some(&id) = self.messages.get(text) {
            return Ok(id);
        }
        let err = |e: &dyn std::fmt::Display| CodegenError::Cranelift(e.to_string());
        let name = format!("{}_m{}", self.prefix, self.messages.len());
        let id =
            self.module.declare_data(&name, Linkage::Local, false, false).map_err(|e| err(&e))?;
        let mut desc = DataDescription::new();
        let mut bytes = text.as_bytes().to_vec();
        bytes.push(0);
        desc.define(bytes.into_boxed_slice());
        self.module.define_data(id, &desc).map_err(|e| err(&e))?;
        self.messages.insert(text.to_string(), id);
        Ok(id)
    }

    /// As the AOT builder's `define`: the function `build` writes, as a local symbol
    /// (identical ones share one). A kernel that would call a routine (a libcall, an import)
    /// is recorded in `refused`, and the function refused.
    fn define(&mut self, build: &BuildFn<'_>) -> Result<FuncId, CodegenError> {
        let refused = &mut self.refused;
        let mut vet = |r: &FinalizedMachReloc| {
            let callee = match &r.target {
                FinalizedRelocTarget::ExternalName(ExternalName::LibCall(l)) => format!("{l}"),
                FinalizedRelocTarget::ExternalName(ExternalName::User(_)) => {
                    "an external routine".to_string()
                }
                _ => return Ok(()),
            };
            refused.get_or_insert(format!(
                "a kernel calls `{callee}`, which a self-contained object cannot hold"
            ));
            // Not `Unsupported`: the JIT's choice of vector code must not change here.
            Err(CodegenError::Internal("a kernel with an import".into()))
        };
        let target = Target {
            scope: 0,
            prefix: Some(&self.prefix),
            compile: Compile::Isa(&*self.isa, &mut vet),
        };
        self.definer.define(&mut self.module, target, build, |_, id| Ok(id))
    }
}

/// Why the refused steps need the runtime.
fn needs() -> String {
    format!(
        "a self-contained {AARCH64} object holds only loop kernels, reshapes, scans and \
         argmax/argmin (everything else runs in the runtime library, which exists for x86-64 only)"
    )
}

/// The [`KernelSource`] of a self-contained object: each plan compiled for its ISA with every
/// math function inline (`fma` fused, as the JIT on a CPU with FMA), recorded in step order.
struct Source<'a> {
    builder: RefCell<&'a mut StandaloneBuilder>,
    kernels: RefCell<Vec<FuncId>>,
}

/// The address handed out for kernels of an object under construction (never called).
unsafe extern "C" fn not_callable(_: *const i64) {}

impl KernelSource for Source<'_> {
    fn loop_kernel(&self, plan: &LoopPlan) -> Result<KernelFn, CodegenError> {
        let mut builder = self.builder.borrow_mut();
        let (features, wide) = (MathFeatures { fma: true }, WideFns::default());
        let id = compile_plan(plan, |lane| {
            let built = builder.define(&|func, fctx, frontend| {
                codegen::build(plan, func, fctx, lane, features, &wide, frontend)
            });
            match (lane, built) {
                // The aarch64 backend rejected vector code (the code generator's own choice
                // of scalar loops is target-independent): scalar loops here could differ
                // from the JIT's vector code, so the function is refused.
                (Some(_), Err(CodegenError::Cranelift(why))) => {
                    builder.refused.get_or_insert(format!(
                        "Cranelift's aarch64 backend rejected a kernel's vector code ({why})"
                    ));
                    Err(CodegenError::Internal("vector code rejected".into()))
                }
                (_, built) => built,
            }
        })?;
        self.kernels.borrow_mut().push(id);
        Ok(not_callable)
    }

    fn axis_kernel(&self, spec: &AxisSpec) -> Result<KernelFn, CodegenError> {
        let spec = *spec;
        let id = self
            .builder
            .borrow_mut()
            .define(&|func, fctx, frontend| build_axis(spec, func, fctx, frontend))?;
        self.kernels.borrow_mut().push(id);
        Ok(not_callable)
    }
}

/// One step of the entry point: its kernel's domain, the step, its kernel's symbol.
type PlannedStep<'a> = (Shape, StandaloneStep<'a>, Option<FuncId>);
