//! The generated entry point `int <prefix>_<fn>(const tfn_buffer *inputs, tfn_buffer
//! *outputs)` (see the parent module): checks, sizes, allocations, the steps, the exit that
//! frees every intermediate.

use super::{chunked, PlannedStep, StandaloneBuilder};
use crate::abi::{AxisAbi, LoopAbi};
use crate::aot::c_abi::{dtype_code, MAX_RANK, TFN_ERR_ARGUMENT, TFN_ERR_RUN};
use crate::aot::FunctionMeta;
use crate::error::CodegenError;
use crate::executor::StandaloneStep;
use cranelift::codegen::ir::condcodes::IntCC;
use cranelift::codegen::ir::{
    types, AbiParam, Block, BlockArg, FuncRef, Function, GlobalValue, InstBuilder, MemFlagsData,
    StackSlot, StackSlotData, StackSlotKind, Type, UserFuncName, Value,
};
use cranelift::frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{FuncId, Linkage, Module};
use std::collections::HashMap;
use tfn_ir::{Dim, Graph, Op, Shape, ValueId};

/// Bytes of one `tfn_buffer` (`c_abi::TfnBuffer`) and the offsets of its fields.
const BUFFER_BYTES: i32 = 8 * (3 + 2 * MAX_RANK as i32);
const DATA: i32 = 0;
const DTYPE: i32 = 8;
const RANK: i32 = 16;
const SIZES: i32 = 24;
const STRIDES: i32 = 24 + 8 * MAX_RANK as i32;

/// The function being written and what it refers to.
pub(super) struct Emit<'a, 'f> {
    owner: &'a mut StandaloneBuilder,
    pub(super) b: FunctionBuilder<'f>,
    pub(super) ptr: Type,
    /// `<prefix>_error` in this function.
    error: GlobalValue,
    /// The exit: frees every intermediate, returns its parameter.
    cleanup: Block,
    /// One pointer per intermediate buffer (null until allocated).
    owned: StackSlot,
    pub(super) malloc: FuncRef,
    memcpy: FuncRef,
}

impl Emit<'_, '_> {
    pub(super) fn int(&mut self, v: i64) -> Value {
        self.b.ins().iconst(types::I64, v)
    }

    /// Leaves with `status` and `message` when `cond` is true.
    pub(super) fn fail_if(
        &mut self,
        cond: Value,
        status: i32,
        message: &str,
    ) -> Result<(), CodegenError> {
        let id = self.owner.message(message)?;
        let (fail, ok) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(cond, fail, &[], ok, &[]);
        self.b.switch_to_block(fail);
        self.b.seal_block(fail);
        let gv = self.owner.module.declare_data_in_func(id, self.b.func);
        let text = self.b.ins().symbol_value(self.ptr, gv);
        let slot = self.b.ins().symbol_value(self.ptr, self.error);
        self.b.ins().store(MemFlagsData::trusted(), text, slot, 0);
        let status = self.b.ins().iconst(types::I32, i64::from(status));
        self.b.ins().jump(self.cleanup, &[status.into()]);
        self.b.switch_to_block(ok);
        self.b.seal_block(ok);
        Ok(())
    }

    fn load(&mut self, base: Value, offset: i32) -> Value {
        self.b.ins().load(types::I64, MemFlagsData::trusted(), base, offset)
    }

    /// `a * b` (non-negative), failing on an overflow.
    fn mul_checked(&mut self, a: Value, b: Value) -> Result<Value, CodegenError> {
        let high = self.b.ins().umulhi(a, b);
        let product = self.b.ins().imul(a, b);
        let negative = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, product, 0);
        let high = self.b.ins().icmp_imm_s(IntCC::NotEqual, high, 0);
        let over = self.b.ins().bor(high, negative);
        self.fail_if(over, TFN_ERR_RUN, "a size of the call overflows 64 bits")?;
        Ok(product)
    }

    pub(super) fn product(&mut self, values: &[Value]) -> Value {
        let mut acc = self.int(1);
        for &v in values {
            acc = self.b.ins().imul(acc, v);
        }
        acc
    }

    /// Calls `kernel` on an argument array of `args` (i64 values).
    pub(super) fn call_kernel(&mut self, kernel: FuncId, args: &[Value]) {
        let slot = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            8 * args.len().max(1) as u32,
            3,
        ));
        for (i, &v) in args.iter().enumerate() {
            self.b.ins().stack_store(self.ptr, v, slot, 8 * i as i32);
        }
        let at = self.b.ins().stack_addr(self.ptr, slot, 0);
        let f = self.owner.module.declare_func_in_func(kernel, self.b.func);
        self.b.ins().call(f, &[at]);
    }

    /// Keeps `p` (a malloc'd pointer) in intermediate slot `slot`: freed at the exit.
    pub(super) fn keep(&mut self, slot: usize, p: Value) {
        self.b.ins().stack_store(self.ptr, p, self.owned, 8 * slot as i32);
    }

    /// A loop over `i` in `0..count` carrying `init`: `body(e, i, carried)` returns the
    /// next carried values; the result is the last.
    pub(super) fn counted(
        &mut self,
        count: Value,
        init: &[Value],
        body: impl FnOnce(&mut Self, Value, &[Value]) -> Result<Vec<Value>, CodegenError>,
    ) -> Result<Vec<Value>, CodegenError> {
        let types: Vec<Type> = init.iter().map(|v| self.b.func.dfg.value_type(*v)).collect();
        let (header, body_block, exit) =
            (self.b.create_block(), self.b.create_block(), self.b.create_block());
        self.b.append_block_param(header, types::I64);
        for &t in &types {
            self.b.append_block_param(header, t);
            self.b.append_block_param(exit, t);
        }
        let zero = self.int(0);
        let start: Vec<BlockArg> =
            std::iter::once(zero).chain(init.iter().copied()).map(BlockArg::from).collect();
        self.b.ins().jump(header, &start);
        self.b.switch_to_block(header);
        let params = self.b.block_params(header).to_vec();
        let (i, carried) = (params[0], &params[1..]);
        let more = self.b.ins().icmp(IntCC::UnsignedLessThan, i, count);
        let out: Vec<BlockArg> = carried.iter().copied().map(BlockArg::from).collect();
        self.b.ins().brif(more, body_block, &[], exit, &out);
        self.b.switch_to_block(body_block);
        self.b.seal_block(body_block);
        let next = body(self, i, carried)?;
        let i1 = self.b.ins().iadd_imm_s(i, 1);
        let back: Vec<BlockArg> = std::iter::once(i1).chain(next).map(BlockArg::from).collect();
        self.b.ins().jump(header, &back);
        self.b.seal_block(header);
        self.b.switch_to_block(exit);
        self.b.seal_block(exit);
        Ok(self.b.block_params(exit).to_vec())
    }

    /// Runs what `then` emits when `cond` is true, else what `otherwise` emits.
    pub(super) fn branch(
        &mut self,
        cond: Value,
        then: impl FnOnce(&mut Self) -> Result<(), CodegenError>,
        otherwise: impl FnOnce(&mut Self) -> Result<(), CodegenError>,
    ) -> Result<(), CodegenError> {
        let (yes, no, after) =
            (self.b.create_block(), self.b.create_block(), self.b.create_block());
        self.b.ins().brif(cond, yes, &[], no, &[]);
        self.b.switch_to_block(yes);
        self.b.seal_block(yes);
        then(self)?;
        self.b.ins().jump(after, &[]);
        self.b.switch_to_block(no);
        self.b.seal_block(no);
        otherwise(self)?;
        self.b.ins().jump(after, &[]);
        self.b.switch_to_block(after);
        self.b.seal_block(after);
        Ok(())
    }

    /// Runs what `body` emits only when `cond` is true.
    fn when(
        &mut self,
        cond: Value,
        body: impl FnOnce(&mut Self) -> Result<(), CodegenError>,
    ) -> Result<(), CodegenError> {
        let (then, after) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(cond, then, &[], after, &[]);
        self.b.switch_to_block(then);
        self.b.seal_block(then);
        body(self)?;
        self.b.ins().jump(after, &[]);
        self.b.switch_to_block(after);
        self.b.seal_block(after);
        Ok(())
    }
}

/// The concrete sizes of a shape.
fn dims(e: &mut Emit, shape: &Shape, syms: &[Value]) -> Result<Vec<Value>, CodegenError> {
    shape
        .dims()
        .iter()
        .map(|d| match *d {
            Dim::Const(c) => Ok(e.int(c as i64)),
            Dim::Sym(s) => syms
                .get(s.0 as usize)
                .copied()
                .ok_or_else(|| CodegenError::Internal(format!("size `s{}` is not bound", s.0))),
        })
        .collect()
}

/// Checks one buffer (`what`: how messages name it) against its type: dtype, rank, sizes
/// (`expected`: per axis the value it must have, if any), row-major strides, a data
/// pointer.
fn check_buffer(
    e: &mut Emit,
    buf: Value,
    what: &str,
    dtype: tfn_ir::DType,
    expected: &[Option<Value>],
) -> Result<(), CodegenError> {
    let arg = TFN_ERR_ARGUMENT;
    let code = e.load(buf, DTYPE);
    let bad = e.b.ins().icmp_imm_s(IntCC::NotEqual, code, dtype_code(dtype));
    e.fail_if(bad, arg, &format!("{what}: the dtype must be {dtype}"))?;
    let rank = e.load(buf, RANK);
    let bad = e.b.ins().icmp_imm_s(IntCC::NotEqual, rank, expected.len() as i64);
    e.fail_if(bad, arg, &format!("{what}: the rank must be {}", expected.len()))?;
    let mut stride = e.int(1);
    for (a, want) in expected.iter().enumerate().rev() {
        let size = e.load(buf, SIZES + 8 * a as i32);
        let bad = e.b.ins().icmp_imm_s(IntCC::SignedLessThan, size, 0);
        e.fail_if(bad, arg, &format!("{what}: size {a} is negative"))?;
        if let Some(want) = want {
            let bad = e.b.ins().icmp(IntCC::NotEqual, size, *want);
            e.fail_if(bad, arg, &format!("{what}: size {a} does not fit the signature"))?;
        }
        // Row-major: every axis longer than 1 steps by the product of the later sizes.
        let given = e.load(buf, STRIDES + 8 * a as i32);
        let long = e.b.ins().icmp_imm_s(IntCC::SignedGreaterThan, size, 1);
        let other = e.b.ins().icmp(IntCC::NotEqual, given, stride);
        let bad = e.b.ins().band(long, other);
        e.fail_if(
            bad,
            arg,
            &format!("{what}: the strides must be row-major (a self-contained object reads contiguous buffers only)"),
        )?;
        stride = e.mul_checked(stride, size)?;
    }
    // Its bytes: counted without overflow, and ending inside the address space.
    let bytes = e.int(dtype.size_bytes() as i64);
    let bytes = e.mul_checked(stride, bytes)?;
    let data = e.load(buf, DATA);
    let null = e.b.ins().icmp_imm_s(IntCC::Equal, data, 0);
    e.fail_if(null, arg, &format!("{what}: null data"))?;
    let end = e.b.ins().iadd(data, bytes);
    let wraps = e.b.ins().icmp(IntCC::UnsignedLessThan, end, data);
    e.fail_if(wraps, arg, &format!("{what}: its bytes reach past the end of the address space"))
}

/// The bytes a checked, contiguous buffer spans: its start, its end, and whether it has an
/// element at all.
#[derive(Clone, Copy)]
struct Span {
    start: Value,
    end: Value,
    nonempty: Value,
}

/// The [`Span`] of the buffer at `buf` of `rank` axes and elements of `size` bytes (its sizes
/// checked non-negative and its data non-null before).
fn span(e: &mut Emit, buf: Value, rank: usize, size: usize) -> Span {
    let start = e.load(buf, DATA);
    let sizes: Vec<Value> = (0..rank).map(|a| e.load(buf, SIZES + 8 * a as i32)).collect();
    let count = e.product(&sizes);
    let bytes = e.b.ins().imul_imm_s(count, size as i64);
    let end = e.b.ins().iadd(start, bytes);
    let nonempty = e.b.ins().icmp_imm_s(IntCC::NotEqual, count, 0);
    Span { start, end, nonempty }
}

/// Whether two spans share a byte (both non-empty, each starting before the other ends).
fn overlap(e: &mut Emit, a: Span, b: Span) -> Value {
    let before = e.b.ins().icmp(IntCC::UnsignedLessThan, a.start, b.end);
    let after = e.b.ins().icmp(IntCC::UnsignedLessThan, b.start, a.end);
    let both = e.b.ins().band(a.nonempty, b.nonempty);
    let meet = e.b.ins().band(before, after);
    e.b.ins().band(meet, both)
}

/// Defines the entry point `name` running `steps` of `graph`.
pub(super) fn define(
    owner: &mut StandaloneBuilder,
    name: &str,
    meta: &FunctionMeta,
    graph: &Graph,
    steps: &[PlannedStep<'_>],
) -> Result<(), CodegenError> {
    let cranelift = |e: &dyn std::fmt::Display| CodegenError::Cranelift(e.to_string());
    let ptr = owner.module.target_config().pointer_type();
    let mut sig = owner.module.make_signature();
    sig.params.extend([AbiParam::new(ptr), AbiParam::new(ptr)]);
    sig.returns.push(AbiParam::new(types::I32));
    let id =
        owner.module.declare_function(name, Linkage::Export, &sig).map_err(|e| cranelift(&e))?;
    let mut ctx = owner.module.make_context();
    ctx.func = Function::with_name_signature(UserFuncName::user(0, id.as_u32()), sig);
    let mut fctx = FunctionBuilderContext::new();
    let [malloc, free, memcpy] = owner.libc;

    // Which values each step computes, and which computed outputs are written in place.
    let mut computed: Vec<ValueId> = Vec::new();
    for (_, step, _) in steps {
        match step {
            StandaloneStep::Loop { plan, .. } => {
                computed.extend(plan.outputs.iter().map(|o| o.value))
            }
            StandaloneStep::Axis { node, .. } => computed.push(*node),
            _ => {}
        }
    }
    let mut direct: HashMap<ValueId, usize> = HashMap::new();
    for (o, v) in graph.outputs.iter().enumerate() {
        if computed.contains(v) && !direct.contains_key(v) {
            direct.insert(*v, o);
        }
    }
    let owned: Vec<ValueId> =
        computed.iter().copied().filter(|v| !direct.contains_key(v)).collect();

    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let start = b.create_block();
        b.append_block_params_for_function_params(start);
        b.switch_to_block(start);
        b.seal_block(start);
        let (inputs, outputs) = (b.block_params(start)[0], b.block_params(start)[1]);
        let cleanup = b.create_block();
        b.append_block_param(cleanup, types::I32);
        // The intermediates, then one partials buffer per chunkable step.
        let chunkable = steps
            .iter()
            .filter(|(_, s, _)| matches!(s, StandaloneStep::Loop { chunkable: true, .. }))
            .count();
        let slots = owned.len() + chunkable;
        let owned_slot = b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            8 * slots.max(1) as u32,
            3,
        ));
        let error = owner.module.declare_data_in_func(owner.error, b.func);
        let malloc = owner.module.declare_func_in_func(malloc, b.func);
        let free = owner.module.declare_func_in_func(free, b.func);
        let memcpy = owner.module.declare_func_in_func(memcpy, b.func);
        let mut e = Emit { owner, b, ptr, error, cleanup, owned: owned_slot, malloc, memcpy };
        let zero = e.int(0);
        for i in 0..slots {
            e.b.ins().stack_store(ptr, zero, e.owned, 8 * i as i32);
        }
        body(&mut e, meta, graph, steps, inputs, outputs, &direct, &owned)?;
        let ok = e.b.ins().iconst(types::I32, 0);
        e.b.ins().jump(cleanup, &[ok.into()]);
        // The exit: free every intermediate (free(NULL) does nothing).
        e.b.switch_to_block(cleanup);
        e.b.seal_block(cleanup);
        let status = e.b.block_params(cleanup)[0];
        for i in 0..slots {
            let p = e.b.ins().stack_load(ptr, ptr, e.owned, 8 * i as i32);
            e.b.ins().call(free, &[p]);
        }
        e.b.ins().return_(&[status]);
        let frontend = e.owner.module.target_config();
        e.b.finalize(frontend);
    }
    owner
        .module
        .define_function(id, &mut ctx)
        .map_err(|e| CodegenError::Cranelift(format!("{e:?}")))
}

/// Everything between the entry and the exit: checks, sizes, allocations, the steps, the
/// outputs not written in place.
#[allow(clippy::too_many_arguments)]
fn body(
    e: &mut Emit,
    meta: &FunctionMeta,
    graph: &Graph,
    steps: &[PlannedStep<'_>],
    inputs: Value,
    outputs: Value,
    direct: &HashMap<ValueId, usize>,
    owned: &[ValueId],
) -> Result<(), CodegenError> {
    let arg = TFN_ERR_ARGUMENT;
    let name_of = |p: usize| {
        meta.params.get(p).map_or_else(|| format!("input {p}"), |(n, _)| format!("`{n}`"))
    };
    if !graph.params.is_empty() {
        let null = e.b.ins().icmp_imm_s(IntCC::Equal, inputs, 0);
        e.fail_if(null, arg, "inputs is NULL")?;
    }
    if !graph.outputs.is_empty() {
        let null = e.b.ins().icmp_imm_s(IntCC::Equal, outputs, 0);
        e.fail_if(null, arg, "outputs is NULL")?;
    }
    let buffer = |e: &mut Emit, base: Value, k: usize| {
        e.b.ins().iadd_imm_s(base, i64::from(BUFFER_BYTES) * k as i64)
    };
    // Inputs: dtype, rank, fixed sizes, strides; then every symbol from its first
    // source, and every other axis of that symbol checked against it.
    let mut syms: Vec<Option<(Value, usize, usize)>> = vec![None; graph.syms.len()];
    for (p, param) in graph.params.iter().enumerate() {
        let buf = buffer(e, inputs, p);
        let declared = meta.params.get(p).map(|(_, d)| d.as_slice()).unwrap_or(&[]);
        let mut expected = Vec::new();
        for (a, d) in param.ty.shape.dims().iter().enumerate() {
            let fixed = match (*d, declared.get(a).copied().flatten()) {
                (Dim::Const(c), _) => Some(c as i64),
                (_, Some(n)) => Some(n as i64),
                _ => None,
            };
            expected.push(fixed.map(|n| e.int(n)));
        }
        check_buffer(e, buf, &name_of(p), param.ty.dtype, &expected)?;
        for (a, d) in param.ty.shape.dims().iter().enumerate() {
            let Dim::Sym(s) = *d else { continue };
            let size = e.load(buf, SIZES + 8 * a as i32);
            match syms.get(s.0 as usize).copied().flatten() {
                None => syms[s.0 as usize] = Some((size, p, a)),
                Some((first, fp, fa)) => {
                    let bad = e.b.ins().icmp(IntCC::NotEqual, size, first);
                    let message = format!(
                        "size {a} of {} must equal size {fa} of {}",
                        name_of(p),
                        name_of(fp)
                    );
                    e.fail_if(bad, arg, &message)?;
                }
            }
        }
    }
    let syms: Vec<Value> = syms
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            s.map(|(v, _, _)| v)
                .ok_or_else(|| CodegenError::Internal(format!("size `s{i}` has no input")))
        })
        .collect::<Result<_, _>>()?;
    for (left, right) in &graph.checks {
        let d = dims(e, &Shape(vec![*left, *right]), &syms)?;
        let bad = e.b.ins().icmp(IntCC::NotEqual, d[0], d[1]);
        e.fail_if(
            bad,
            arg,
            &format!("the input sizes give {left} != {right}, which must be equal"),
        )?;
    }
    // Outputs: their dtypes, ranks, sizes and strides.
    for (o, v) in graph.outputs.iter().enumerate() {
        let buf = buffer(e, outputs, o);
        let ty = graph.ty(*v);
        let want: Vec<Option<Value>> = dims(e, &ty.shape, &syms)?.into_iter().map(Some).collect();
        check_buffer(e, buf, &format!("output {o}"), ty.dtype, &want)?;
    }
    // Outputs must not overlap each other or an input: the kernels write outputs while
    // reading inputs. Every buffer is contiguous here, so each is one span of bytes.
    let spans: Vec<Span> = (0..graph.params.len())
        .map(|p| {
            let buf = buffer(e, inputs, p);
            span(e, buf, graph.params[p].ty.shape.rank(), graph.params[p].ty.dtype.size_bytes())
        })
        .collect();
    let mut out_spans: Vec<Span> = Vec::new();
    for (o, v) in graph.outputs.iter().enumerate() {
        let buf = buffer(e, outputs, o);
        let ty = graph.ty(*v);
        let mine = span(e, buf, ty.shape.rank(), ty.dtype.size_bytes());
        for (j, other) in out_spans.iter().enumerate() {
            let meet = overlap(e, mine, *other);
            e.fail_if(
                meet,
                arg,
                &format!("output {o}: its memory overlaps output {j}'s (outputs must not overlap)"),
            )?;
        }
        for (p, other) in spans.iter().enumerate() {
            let meet = overlap(e, mine, *other);
            e.fail_if(
                meet,
                arg,
                &format!(
                    "output {o}: its memory overlaps input {}'s (outputs must not overlap the inputs)",
                    name_of(p)
                ),
            )?;
        }
        out_spans.push(mine);
    }
    // The steps' own checks, in step order (all depend on sizes only), and their
    // collapsed sizes.
    let mut step_sizes: Vec<Vec<Value>> = Vec::new();
    for (i, (domain, step, _)) in steps.iter().enumerate() {
        let mut sizes = Vec::new();
        match step {
            StandaloneStep::Loop { plan, checks_empty, .. } => {
                let domain = dims(e, domain, &syms)?;
                for group in &plan.axes {
                    let mut acc = e.int(1);
                    for &a in group {
                        if let Some(&d) = domain.get(a) {
                            acc = e.b.ins().imul(acc, d);
                        }
                    }
                    sizes.push(acc);
                }
                for op in plan.inputs.iter().filter(|o| o.index) {
                    for (j, _) in op.full.iter().enumerate().filter(|(_, f)| **f) {
                        let big = e.b.ins().icmp_imm_s(
                            IntCC::SignedGreaterThan,
                            sizes[j],
                            i64::from(i32::MAX),
                        );
                        e.fail_if(
                            big,
                            TFN_ERR_RUN,
                            &format!(
                                "step {i}: an index along an axis of more than 2^31-1 elements"
                            ),
                        )?;
                    }
                }
                if *checks_empty {
                    let reduced: Vec<Value> = sizes
                        .iter()
                        .zip(&plan.reduced)
                        .filter(|(_, r)| **r)
                        .map(|(s, _)| *s)
                        .collect();
                    let reduced = e.product(&reduced);
                    let empty = e.b.ins().icmp_imm_s(IntCC::Equal, reduced, 0);
                    e.fail_if(
                        empty,
                        TFN_ERR_RUN,
                        &format!("step {i}: max or min of an empty axis"),
                    )?;
                }
            }
            StandaloneStep::Axis { node, axis, scan } => {
                let n = graph.node(*node);
                let shape = if *scan {
                    n.ty.shape.clone()
                } else {
                    let x = n
                        .inputs
                        .first()
                        .ok_or_else(|| CodegenError::Internal("argmax without input".into()))?;
                    graph.ty(*x).shape.clone()
                };
                let d = dims(e, &shape, &syms)?;
                let outer = e.product(d.get(..*axis).unwrap_or(&[]));
                let len = d.get(*axis).copied().unwrap_or_else(|| e.int(1));
                let inner = e.product(d.get(*axis + 1..).unwrap_or(&[]));
                if !*scan {
                    let empty = e.b.ins().icmp_imm_s(IntCC::Equal, len, 0);
                    e.fail_if(
                        empty,
                        TFN_ERR_RUN,
                        &format!("step {i}: `{}` of an empty axis", n.op.name()),
                    )?;
                }
                sizes = vec![outer, len, inner];
            }
            _ => {}
        }
        step_sizes.push(sizes);
    }
    // Buffers: inputs, outputs written in place, intermediates from malloc.
    let mut bufs: HashMap<ValueId, Value> = HashMap::new();
    for (index, node) in graph.nodes.iter().enumerate() {
        if let Op::Param(p) = node.op {
            let buf = buffer(e, inputs, p as usize);
            let data = e.load(buf, DATA);
            bufs.insert(ValueId(index as u32), data);
        }
    }
    for (&v, &o) in direct {
        let buf = buffer(e, outputs, o);
        let data = e.load(buf, DATA);
        bufs.insert(v, data);
    }
    for (i, v) in owned.iter().enumerate() {
        let ty = graph.ty(*v);
        let d = dims(e, &ty.shape, &syms)?;
        let mut bytes = e.int(ty.dtype.size_bytes() as i64);
        for s in d {
            bytes = e.mul_checked(bytes, s)?;
        }
        let one = e.int(1);
        let small = e.b.ins().icmp_imm_s(IntCC::SignedLessThan, bytes, 1);
        let bytes = e.b.ins().select(small, one, bytes);
        let call = e.b.ins().call(e.malloc, &[bytes]);
        let p = e.b.inst_results(call)[0];
        e.keep(i, p);
        let null = e.b.ins().icmp_imm_s(IntCC::Equal, p, 0);
        e.fail_if(null, TFN_ERR_RUN, "out of memory (malloc failed)")?;
        bufs.insert(*v, p);
    }
    let buf_of = |bufs: &HashMap<ValueId, Value>, v: ValueId| {
        bufs.get(&v).copied().ok_or_else(|| CodegenError::Internal(format!("no buffer for {v}")))
    };
    // The steps, in order, on one thread.
    let mut chunked_steps = 0;
    for ((_, step, kernel), sizes) in steps.iter().zip(&step_sizes) {
        match step {
            StandaloneStep::View { input, output } => {
                let b = buf_of(&bufs, *input)?;
                bufs.insert(*output, b);
            }
            StandaloneStep::Loop { plan, chunkable, .. } => {
                let kernel = kernel.ok_or_else(|| CodegenError::Internal("no kernel".into()))?;
                let abi = LoopAbi::of(plan);
                let zero = e.int(0);
                let mut args = vec![zero; abi.len()];
                for (k, op) in plan.inputs.iter().enumerate() {
                    if !op.index {
                        args[abi.ptr(k)] = buf_of(&bufs, op.value)?;
                    }
                }
                for (i, op) in plan.outputs.iter().enumerate() {
                    args[abi.ptr(plan.inputs.len() + i)] = buf_of(&bufs, op.value)?;
                }
                for (j, &s) in sizes.iter().enumerate() {
                    args[abi.size(j)] = s;
                }
                // `LoopPlan::write_outer_strides`, on values.
                for (k, op) in plan.operands().enumerate() {
                    let slots = abi.strides(k);
                    let mut acc = e.int(1);
                    for (j, &size) in sizes.iter().enumerate().rev() {
                        if op.full.get(j).copied().unwrap_or(false) {
                            if j < slots.len() {
                                args[slots.start + j] = acc;
                            }
                            acc = e.b.ins().imul(acc, size);
                        }
                    }
                }
                let split = plan.split_axis();
                args[abi.begin()] = zero;
                args[abi.end()] = sizes.get(split).copied().unwrap_or_else(|| e.int(1));
                let kept: Vec<Value> = sizes
                    .iter()
                    .zip(&plan.reduced)
                    .filter(|(_, r)| !**r)
                    .map(|(s, _)| *s)
                    .collect();
                let kept = e.product(&kept);
                let some = e.b.ins().icmp_imm_s(IntCC::NotEqual, kept, 0);
                let call = |e: &mut Emit| {
                    e.when(some, |e| {
                        e.call_kernel(kernel, &args);
                        Ok(())
                    })
                };
                if *chunkable {
                    // Few long rows: in chunks, as `executor/chunked.rs` runs them.
                    let slot = owned.len() + chunked_steps;
                    chunked_steps += 1;
                    let long = chunked::taken(e, sizes);
                    let chunks = |e: &mut Emit| chunked::run(e, plan, kernel, &args, sizes, slot);
                    e.branch(long, chunks, call)?;
                } else {
                    call(e)?;
                }
            }
            StandaloneStep::Axis { node, scan, .. } => {
                let kernel = kernel.ok_or_else(|| CodegenError::Internal("no kernel".into()))?;
                let n = graph.node(*node);
                let ins: Vec<ValueId> = if *scan {
                    n.inputs.clone()
                } else {
                    n.inputs.iter().take(1).copied().collect()
                };
                let abi = AxisAbi { operands: ins.len() + 1 };
                let zero = e.int(0);
                let mut args = vec![zero; abi.len()];
                for (k, v) in ins.iter().enumerate() {
                    args[abi.ptr(k)] = buf_of(&bufs, *v)?;
                }
                args[abi.ptr(ins.len())] = buf_of(&bufs, *node)?;
                let [outer, len, inner] = [sizes[0], sizes[1], sizes[2]];
                args[abi.outer()] = outer;
                args[abi.len_slot()] = len;
                args[abi.inner()] = inner;
                args[abi.begin()] = zero;
                args[abi.end()] = outer;
                let total = e.product(&[outer, len, inner]);
                let some = e.b.ins().icmp_imm_s(IntCC::NotEqual, total, 0);
                e.when(some, |e| {
                    e.call_kernel(kernel, &args);
                    Ok(())
                })?;
            }
            StandaloneStep::Runtime(why) => {
                return Err(CodegenError::Internal(format!("a runtime step: {why}")))
            }
        }
    }
    // Outputs not written in place (an input, a reshape, the same value twice).
    for (o, v) in graph.outputs.iter().enumerate() {
        if direct.get(v) == Some(&o) {
            continue;
        }
        let src = buf_of(&bufs, *v)?;
        let ty = graph.ty(*v);
        let d = dims(e, &ty.shape, &syms)?;
        let count = e.product(&d);
        let bytes = e.b.ins().imul_imm_s(count, ty.dtype.size_bytes() as i64);
        let buf = buffer(e, outputs, o);
        let dst = e.load(buf, DATA);
        let some = e.b.ins().icmp_imm_s(IntCC::NotEqual, bytes, 0);
        e.when(some, |e| {
            e.b.ins().call(e.memcpy, &[dst, src, bytes]);
            Ok(())
        })?;
    }
    Ok(())
}
