//! [`ObjectBuilder`]: planned functions' kernels compiled into a relocatable object, with the
//! descriptor and the exported entry points (layout in [`super`]).

use super::{
    axis_fingerprint, fingerprint, function_words, gradient_payload, stage_payload, tier_line,
    FunctionMeta, ProgramStage, Tier, HEADER_WORDS, MAGIC, TIERS, VERSION,
};
use crate::abi::KernelFn;
use crate::codegen;
use crate::error::CodegenError;
use crate::executor::{CompileOptions, CompiledFunction, KernelSource};
use crate::isa;
use crate::jit::{compile_plan, declare_wide_with, WideSymbols};
use crate::kernel_define::{BuildFn, Compile, KernelDefiner, Target};
use crate::math::MathFeatures;
use crate::plan::LoopPlan;
use crate::scan::{build_axis, AxisSpec};
use crate::wide::SimdLevel;
use cranelift::codegen::ir::{types, AbiParam, Function, InstBuilder, UserFuncName};
use cranelift::codegen::isa::OwnedTargetIsa;
use cranelift::frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{DataDescription, DataId, FuncId, Linkage, Module};
use cranelift_object::{ObjectModule, ObjectProduct};
use std::cell::RefCell;
use tfn_ir::program::run::Plan;
use tfn_ir::program::text::print_plan;
use tfn_ir::program::vjp::vjp_signature;
use tfn_ir::{Graph, TensorType};
use tfn_passes::fusion::FusedGraph;

/// The triple of x86-64 objects.
const X86_64: &str = "x86_64-unknown-linux-gnu";

/// Why a function cannot go into an object.
#[derive(Debug, thiserror::Error)]
pub enum AotError {
    /// The function needs what an object does not carry yet (a kernel the interpreter runs,
    /// a scan): the message names the kernel.
    #[error("not supported ahead of time: {0}")]
    Unsupported(String),
    /// Code generation failed (a bug in tfn).
    #[error(transparent)]
    Codegen(#[from] CodegenError),
}

/// Which CPUs an object's code is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CpuChoice {
    /// Every tier of [`TIERS`] (`tfnc build`'s default): one object for every x86-64 CPU
    /// with SSE4.2, the runtime running the widest tier the CPU has.
    Portable,
    /// One tier of [`TIERS`] only.
    Tier(Tier),
    /// The building machine's CPU with every extension it has (the JIT's code), calling the
    /// wide routines of this level (clamped to the CPU).
    Host(SimdLevel),
}

impl CpuChoice {
    /// `portable`, `host`, or a tier's name (`x86-64-v3`); `None` for anything else.
    pub fn parse(s: &str) -> Option<CpuChoice> {
        match s {
            "portable" => Some(CpuChoice::Portable),
            "host" => Some(CpuChoice::Host(SimdLevel::from_env())),
            name => TIERS.iter().find(|t| t.name == name).map(|t| CpuChoice::Tier(*t)),
        }
    }
}

/// One function of the object: its blob, kernels (by symbol, per tier, with the
/// fingerprints) and entry point.
/// Per tier, kernels in step order.
type TierKernels = Vec<Vec<FuncId>>;

struct Entry {
    name: String,
    blob: Vec<u8>,
    /// Per tier, the kernels in step order.
    kernels: Vec<Vec<FuncId>>,
    fingerprints: Vec<u64>,
    inputs: usize,
    outputs: usize,
}

/// The code generator of one tier.
struct TierCode {
    isa: OwnedTargetIsa,
    features: MathFeatures,
    wide: codegen::WideFns,
}

/// The object being built.
struct Inner {
    module: ObjectModule,
    /// Kernels by tier and Cranelift text: identical functions of a tier share one symbol
    /// (as the JIT's code cache shares one compile).
    definer: KernelDefiner<FuncId>,
    tiers: Vec<TierCode>,
    prefix: String,
}

/// Builds one object: [`ObjectBuilder::add_function`] per function, then
/// [`ObjectBuilder::finish`].
pub struct ObjectBuilder {
    inner: Inner,
    functions: Vec<Entry>,
    info: String,
}

impl ObjectBuilder {
    /// An object for `cpu` whose symbols start with `prefix` (a C identifier).
    pub fn new(prefix: &str, cpu: &CpuChoice) -> Result<ObjectBuilder, CodegenError> {
        let cranelift = |e: &dyn std::fmt::Display| CodegenError::Cranelift(e.to_string());
        // (name, ISA, wide routine level, math features) per tier.
        let mut specs = Vec::new();
        match cpu {
            CpuChoice::Host(simd) => {
                let isa = isa::native_isa_with_pic(true).map_err(|e| cranelift(&e))?;
                let features = MathFeatures::of_isa(&*isa);
                specs.push(("host", isa, simd.clamp_to_cpu(), features));
            }
            CpuChoice::Portable | CpuChoice::Tier(_) => {
                let tiers = match cpu {
                    CpuChoice::Tier(t) => vec![*t],
                    _ => TIERS.to_vec(),
                };
                for t in tiers {
                    let isa = isa::target_isa(X86_64, t.flags).map_err(|e| cranelift(&e))?;
                    // `fma` on every tier (a libcall where the ISA has no FMA instruction), so
                    // every tier computes the bits of the JIT on a CPU with FMA.
                    specs.push((t.name, isa, t.simd, MathFeatures { fma: true }));
                }
            }
        }
        let mut info = String::new();
        for (name, isa, simd, _) in &specs {
            let flags: Vec<String> = isa
                .isa_flags()
                .iter()
                .filter(|f| f.as_bool() == Some(true))
                .map(|f| f.name.to_string())
                .collect();
            info.push_str(&tier_line(name, *simd, &flags));
        }
        let Some((_, first, _, _)) = specs.first() else {
            return Err(CodegenError::Internal("no tier".into()));
        };
        let builder = cranelift_object::ObjectBuilder::new(
            first.clone(),
            format!("{prefix}.o"),
            cranelift_module::default_libcall_names(),
        )
        .map_err(|e| cranelift(&e))?;
        let mut module = ObjectModule::new(builder);
        let mut tiers = Vec::new();
        let host = matches!(cpu, CpuChoice::Host(_));
        for (_, isa, simd, features) in specs {
            // The host's level, else the routines the runtime dispatches by CPU feature (a
            // tier runs only on a CPU with its level).
            // (x86-64-v2, `SimdLevel::V128`, calls none: its CPU may lack AVX2.)
            let symbols = if host { WideSymbols::Named } else { WideSymbols::Dispatched };
            let wide = declare_wide_with(&mut module, simd, features, symbols)?;
            tiers.push(TierCode { isa, features, wide });
        }
        let definer = KernelDefiner::new(&module);
        Ok(ObjectBuilder {
            inner: Inner { module, definer, tiers, prefix: prefix.to_string() },
            functions: Vec::new(),
            info,
        })
    }

    /// Compiles the kernels of `graph` (planned: `fused = fuse(graph)`) into the object as the
    /// function `meta.name`, exported as `<prefix>_<name>`. Refused when a step needs the JIT
    /// or the interpreter at run time.
    pub fn add_function(
        &mut self,
        meta: &FunctionMeta,
        graph: &Graph,
        fused: FusedGraph,
    ) -> Result<(), AotError> {
        let (kernels, fingerprints, text) = self.compile_graph(graph, fused)?;
        let mut blob = meta.to_text();
        blob.push_str("graph\n");
        blob.push_str(&text);
        self.functions.push(Entry {
            name: meta.name.clone(),
            blob: blob.into_bytes(),
            kernels,
            fingerprints,
            inputs: graph.params.len(),
            outputs: graph.outputs.len(),
        });
        Ok(())
    }

    /// Compiles the kernels of a function with loops — its plan's stages (planned graphs with
    /// `fuse(graph)`; in a vjp, each stage's gradient halves after it), in program order —
    /// into the object as the function `meta.name`, and embeds the plan as text
    /// (`tfn_ir::program::text`, each stage's payload as [`super::stage_payload`] and
    /// [`super::gradient_payload`]). `results`: the function's result types (what sizes its
    /// outputs, or in a vjp its cotangents). With `vjp`, the entry point takes the arguments
    /// and one cotangent per result and returns the gradients of the float arguments
    /// (`tfn_ir::program::vjp`).
    pub fn add_program(
        &mut self,
        meta: &FunctionMeta,
        plan: &Plan<ProgramStage<(Graph, FusedGraph)>>,
        results: &[TensorType],
        vjp: bool,
    ) -> Result<(), AotError> {
        let mut kernels: TierKernels = vec![Vec::new(); self.inner.tiers.len()];
        let mut fingerprints = Vec::new();
        let mut failed: Option<AotError> = None;
        let mut one = |this: &mut Self, (graph, fused): &(Graph, FusedGraph)| -> String {
            if failed.is_some() {
                return String::new();
            }
            match this.compile_graph(graph, fused.clone()) {
                Ok((mine, prints, text)) => {
                    let count = prints.len();
                    for (all, tier) in kernels.iter_mut().zip(mine) {
                        all.extend(tier);
                    }
                    fingerprints.extend(prints);
                    stage_payload(&text, count)
                }
                Err(e) => {
                    failed = Some(e);
                    String::new()
                }
            }
        };
        let text = print_plan(plan, results, &mut |stage: &ProgramStage<(Graph, FusedGraph)>| {
            let forward = one(self, &stage.forward);
            match (&stage.gradient, vjp) {
                (Some(g), true) => {
                    let fw = one(self, &g.forward);
                    let bw = one(self, &g.backward);
                    gradient_payload(stage.results, &g.differentiated, [&forward, &fw, &bw])
                }
                _ => forward,
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        // The runtime reads the plan back: it must read back as this one.
        match tfn_ir::program::text::parse_plan(&text) {
            Ok((back, types)) if types == results && back.steps.len() == plan.steps.len() => {}
            _ => {
                return Err(AotError::Codegen(CodegenError::Internal(
                    "the program does not survive a print/parse round trip".into(),
                )))
            }
        }
        let mut blob = meta.to_text();
        blob.push_str(if vjp { "program vjp\n" } else { "program\n" });
        blob.push_str(&text);
        let (inputs, outputs) = if vjp {
            let (signature, grads) = vjp_signature(&plan.signature, results);
            (signature.params.len(), grads.len())
        } else {
            (plan.signature.params.len(), plan.outputs.len())
        };
        self.functions.push(Entry {
            name: meta.name.clone(),
            blob: blob.into_bytes(),
            kernels,
            fingerprints,
            inputs,
            outputs,
        });
        Ok(())
    }

    /// One planned graph's kernels compiled into the object (per tier, in step order; and
    /// their fingerprints) and its IR text; refused when a step needs the JIT or the interpreter.
    fn compile_graph(
        &mut self,
        graph: &Graph,
        fused: FusedGraph,
    ) -> Result<(TierKernels, Vec<u64>, String), AotError> {
        // The runtime rebuilds the schedule from the text: it must read back as this graph.
        let text = tfn_ir::text::print_graph(graph);
        match tfn_ir::text::parse_graph(&text) {
            Ok(back) if back == *graph => {}
            _ => {
                return Err(AotError::Codegen(CodegenError::Internal(
                    "the planned graph does not survive a print/parse round trip".into(),
                )))
            }
        }
        let tiers = self.inner.tiers.len();
        let src = ObjectSource {
            inner: RefCell::new(&mut self.inner),
            kernels: RefCell::new(vec![Vec::new(); tiers]),
            fingerprints: RefCell::default(),
        };
        let options =
            CompileOptions { threads: 1, simd: SimdLevel::V128, stream: Default::default() };
        let compiled = CompiledFunction::assemble(&src, None, graph, fused, &options)?;
        let mut refused: Vec<String> = compiled
            .interpreted_kernels()
            .into_iter()
            .chain(compiled.reference_kernels())
            .map(|(i, why)| {
                format!(
                    "kernel {i} would run in the interpreter ({why}), and an object holds \
                     compiled kernels only"
                )
            })
            .collect();
        if !refused.is_empty() {
            refused.sort();
            return Err(AotError::Unsupported(refused.join("; ")));
        }
        Ok((src.kernels.into_inner(), src.fingerprints.into_inner(), text))
    }

    /// The fingerprints of the kernels of function `index` (in the order they were added), in
    /// step order: what the runtime checks each plan against.
    pub fn fingerprints(&self, index: usize) -> Vec<u64> {
        self.functions.get(index).map_or_else(Vec::new, |f| f.fingerprints.clone())
    }

    /// Distinct kernels compiled so far, over all tiers (identical ones counted once).
    pub fn kernel_count(&self) -> usize {
        self.inner.definer.defined()
    }

    /// The object file's bytes: the kernels (local), each function's data (local), the
    /// descriptor `<prefix>_module` and the entry points `<prefix>_<fn>` (exported).
    pub fn finish(self) -> Result<Vec<u8>, CodegenError> {
        let ObjectBuilder { inner, functions, info } = self;
        let inner_tiers = inner.tiers.len();
        let Inner { mut module, prefix, .. } = inner;
        let err = |e: &dyn std::fmt::Display| CodegenError::Cranelift(e.to_string());
        let local_data = |module: &mut ObjectModule, name: String, bytes: Vec<u8>| {
            let id =
                module.declare_data(&name, Linkage::Local, false, false).map_err(|e| err(&e))?;
            let mut desc = DataDescription::new();
            desc.set_align(8);
            desc.define(bytes.into_boxed_slice());
            module.define_data(id, &desc).map_err(|e| err(&e))?;
            Ok::<DataId, CodegenError>(id)
        };
        let descriptor_id = module
            .declare_data(&format!("{prefix}_module"), Linkage::Export, false, false)
            .map_err(|e| err(&e))?;
        let info_len = info.len();
        let info_id = local_data(&mut module, format!("{prefix}_info"), info.into_bytes())?;
        let tiers = inner_tiers;
        let per = function_words(tiers);
        let mut words = vec![0u64; HEADER_WORDS + per * functions.len()];
        words[0] = MAGIC;
        words[1] = VERSION;
        words[2] = functions.len() as u64;
        words[4] = info_len as u64;
        words[5] = tiers as u64;
        // (offset in the descriptor, data) of every pointer word.
        let mut pointers: Vec<(usize, DataId)> = vec![(3, info_id)];
        for (i, f) in functions.iter().enumerate() {
            let base = HEADER_WORDS + per * i;
            let blob = local_data(&mut module, format!("{prefix}_f{i}_blob"), f.blob.clone())?;
            let fps: Vec<u8> = f.fingerprints.iter().flat_map(|fp| fp.to_le_bytes()).collect();
            let fps = local_data(&mut module, format!("{prefix}_f{i}_fingerprints"), fps)?;
            words[base + 1] = f.blob.len() as u64;
            words[base + 3] = f.fingerprints.len() as u64;
            pointers.extend([(base, blob), (base + 2, fps)]);
            for (t, kernels) in f.kernels.iter().enumerate() {
                let table = module
                    .declare_data(
                        &format!("{prefix}_f{i}_t{t}_kernels"),
                        Linkage::Local,
                        false,
                        false,
                    )
                    .map_err(|e| err(&e))?;
                let mut desc = DataDescription::new();
                desc.set_align(8);
                desc.define(vec![0u8; 8 * kernels.len().max(1)].into_boxed_slice());
                for (k, id) in kernels.iter().enumerate() {
                    let r = module.declare_func_in_data(*id, &mut desc);
                    desc.write_function_addr((8 * k) as u32, r);
                }
                module.define_data(table, &desc).map_err(|e| err(&e))?;
                pointers.push((base + 4 + t, table));
            }
            define_entry(&mut module, &prefix, descriptor_id, i, f)?;
        }
        let mut desc = DataDescription::new();
        desc.set_align(8);
        desc.define(words.iter().flat_map(|w| w.to_le_bytes()).collect());
        for (word, data) in pointers {
            let gv = module.declare_data_in_data(data, &mut desc);
            desc.write_data_addr((8 * word) as u32, gv, 0);
        }
        module.define_data(descriptor_id, &desc).map_err(|e| err(&e))?;
        let product: ObjectProduct = module.finish();
        product.emit().map_err(|e| err(&e))
    }
}

/// `int <prefix>_<fn>(const tfn_buffer *inputs, tfn_buffer *outputs)`: calls
/// `tfn_rt_call(&<prefix>_module, index, inputs, n_inputs, outputs, n_outputs)`.
fn define_entry(
    module: &mut ObjectModule,
    prefix: &str,
    descriptor: DataId,
    index: usize,
    f: &Entry,
) -> Result<(), CodegenError> {
    let err = |e: &dyn std::fmt::Display| CodegenError::Cranelift(e.to_string());
    let ptr = module.target_config().pointer_type();
    let mut call_sig = module.make_signature();
    for ty in [ptr, types::I64, ptr, types::I64, ptr, types::I64] {
        call_sig.params.push(AbiParam::new(ty));
    }
    call_sig.returns.push(AbiParam::new(types::I32));
    let rt_call =
        module.declare_function("tfn_rt_call", Linkage::Import, &call_sig).map_err(|e| err(&e))?;
    let mut sig = module.make_signature();
    sig.params.extend([AbiParam::new(ptr), AbiParam::new(ptr)]);
    sig.returns.push(AbiParam::new(types::I32));
    let id = module
        .declare_function(&format!("{prefix}_{}", f.name), Linkage::Export, &sig)
        .map_err(|e| err(&e))?;
    let frontend = module.target_config();
    let mut ctx = module.make_context();
    ctx.func = Function::with_name_signature(UserFuncName::user(1, id.as_u32()), sig);
    let mut fctx = FunctionBuilderContext::new();
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let block = b.create_block();
        b.append_block_params_for_function_params(block);
        b.switch_to_block(block);
        b.seal_block(block);
        let (inputs, outputs) = (b.block_params(block)[0], b.block_params(block)[1]);
        let gv = module.declare_data_in_func(descriptor, b.func);
        let desc = b.ins().symbol_value(ptr, gv);
        let callee = module.declare_func_in_func(rt_call, b.func);
        let index = b.ins().iconst(types::I64, index as i64);
        let n_in = b.ins().iconst(types::I64, f.inputs as i64);
        let n_out = b.ins().iconst(types::I64, f.outputs as i64);
        let call = b.ins().call(callee, &[desc, index, inputs, n_in, outputs, n_out]);
        let status = b.inst_results(call)[0];
        b.ins().return_(&[status]);
        b.finalize(frontend);
    }
    module.define_function(id, &mut ctx).map_err(|e| CodegenError::Cranelift(format!("{e:?}")))?;
    Ok(())
}

/// The build-time [`KernelSource`]: compiles each plan into the object and records it; the
/// function pointers it returns are never called (the assembled function only shows which
/// steps the schedule has).
struct ObjectSource<'a> {
    inner: RefCell<&'a mut Inner>,
    /// Per tier, the kernels in step order.
    kernels: RefCell<Vec<Vec<FuncId>>>,
    fingerprints: RefCell<Vec<u64>>,
}

/// The address handed out for kernels of an object under construction.
unsafe extern "C" fn not_callable(_: *const i64) {}

impl KernelSource for ObjectSource<'_> {
    fn loop_kernel(&self, plan: &LoopPlan) -> Result<KernelFn, CodegenError> {
        let mut inner = self.inner.borrow_mut();
        let mut kernels = self.kernels.borrow_mut();
        for (tier, ids) in kernels.iter_mut().enumerate() {
            ids.push(compile_plan(plan, |lane| inner.compile_with(tier, plan, lane))?);
        }
        self.fingerprints.borrow_mut().push(fingerprint(plan));
        Ok(not_callable)
    }

    fn axis_kernel(&self, spec: &AxisSpec) -> Result<KernelFn, CodegenError> {
        let mut inner = self.inner.borrow_mut();
        let mut kernels = self.kernels.borrow_mut();
        let spec = *spec;
        for (tier, ids) in kernels.iter_mut().enumerate() {
            let build: &BuildFn<'_> =
                &|func, fctx, frontend| build_axis(spec, func, fctx, frontend);
            ids.push(inner.define(tier, build)?);
        }
        self.fingerprints.borrow_mut().push(axis_fingerprint(&spec));
        Ok(not_callable)
    }
}

impl Inner {
    /// As `JitInner::compile_with`, into the object, with the code generator of `tier`.
    fn compile_with(
        &mut self,
        tier: usize,
        plan: &LoopPlan,
        lane: Option<tfn_ir::DType>,
    ) -> Result<FuncId, CodegenError> {
        let Some(code) = self.tiers.get(tier) else {
            return Err(CodegenError::Internal(format!("no tier {tier}")));
        };
        let (features, wide) = (code.features, code.wide.clone());
        self.define(tier, &|func, fctx, frontend| {
            codegen::build(plan, func, fctx, lane, features, &wide, frontend)
        })
    }

    /// As `JitInner::define`, into the object for `tier`'s ISA: the function `build` writes,
    /// defined as a local symbol (identical functions of a tier share one).
    fn define(&mut self, tier: usize, build: &BuildFn<'_>) -> Result<FuncId, CodegenError> {
        let Some(code) = self.tiers.get(tier) else {
            return Err(CodegenError::Internal(format!("no tier {tier}")));
        };
        let target = Target {
            scope: tier,
            prefix: Some(&self.prefix),
            compile: Compile::Isa(&*code.isa, &mut |_| Ok(())),
        };
        self.definer.define(&mut self.module, target, build, |_, id| Ok(id))
    }
}
