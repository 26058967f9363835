//! Cranelift IR for one loop kernel ([`LoopPlan`]): the loop nest, the row passes, the
//! unrolled vector inner loops, reductions with independent accumulators, and scalar tails.
//! Row reductions (inner axis reduced) are in `rows.rs`, column reductions (inner axis kept,
//! reduced axes outside it) in `columns.rs`; this file holds the ABI, the loop nest over kept
//! axes, and the evaluation of one element step shared by both.
//!
//! # Kernel ABI
//!
//! `extern "C" fn(args: *const i64)` where, with `P` operands (inputs then outputs) and `R`
//! collapsed axes, `args` holds: `P` base pointers, `R` sizes, `P × (R-1)` outer strides (in
//! elements, operand-major), then `begin` and `end`, the range of the split axis
//! ([`LoopPlan::split_axis`], the outermost kept axis) this call covers, so threads can split
//! it. For `R = 1` (a flat elementwise loop) axis 0 is the inner axis.
//!
//! # Shape of the code
//!
//! Constants, splats and math coefficients are emitted in the entry block. Kept outer axes are
//! plain loops that carry per-operand element offsets. Each row runs one pass per reduction
//! level (softmax: max; sum of exp; normalise) and a final pass storing elementwise outputs; a
//! pass walks the reduced outer axes (if any) around its inner loops. A pass is a 4×-unrolled
//! vector loop (4 independent accumulators for reductions), a 1-vector loop, then a scalar
//! tail. Values constant along the inner and reduced axes ("row" values: reduction results,
//! broadcast operands, constants) are computed once per row as scalars and splatted before the
//! pass that uses them. An expensive value two passes need (softmax's `exp`) is stored into the
//! output buffer by the first and read back by the second instead of being recomputed.

pub(crate) mod arg;
mod columns;
mod indexed;
pub(crate) use indexed::STATUS_INDEX;
mod lane_ops;
pub(crate) mod ops;
mod random;
mod rows;
pub(crate) mod scan;
mod stage;
pub(crate) use stage::WideFns;
pub(crate) mod storage;

use crate::error::CodegenError;
use crate::math::{self, MathConsts, MathFeatures, MathFn};
use crate::plan::{LoopPlan, Ref};
use cranelift::codegen::ir::{
    condcodes::IntCC, types, AbiParam, Function, InstBuilder, Type, Value,
};
use cranelift::codegen::ir::{Block, ConstantData, MemFlagsData, StackSlotData, StackSlotKind};
use cranelift::codegen::isa::TargetFrontendConfig;
use cranelift::frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use ops::{lanes, math_fn, scalar_type, unsupported, Width};
use std::collections::HashMap;
use tfn_ir::{BinaryOp, DType, Op, ReduceOp, Scalar, UnaryOp};

/// Vectors per iteration of the main loop.
pub(crate) const UNROLL: i64 = 4;

/// Argument slots of the kernel ABI.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Abi {
    pub operands: usize,
    pub rank: usize,
}

/// Slots after `begin`/`end` in kernels with indexed reads (see `indexed.rs`): the error
/// record pointer, then per source its axis size and stride.
impl Abi {
    pub fn error_record(&self) -> usize {
        self.begin() + 2
    }
    pub fn index_size(&self, q: usize) -> usize {
        self.begin() + 3 + 3 * q
    }
    pub fn index_stride(&self, q: usize) -> usize {
        self.begin() + 4 + 3 * q
    }
    pub fn index_inner(&self, q: usize) -> usize {
        self.begin() + 5 + 3 * q
    }
}

impl Abi {
    pub fn size(&self, j: usize) -> usize {
        self.operands + j
    }
    pub fn stride(&self, p: usize, j: usize) -> usize {
        self.operands + self.rank + p * (self.rank - 1) + j
    }
    pub fn begin(&self) -> usize {
        self.operands + self.rank + self.operands * (self.rank - 1)
    }
}

/// Picks the vector lane dtype for a plan, or `None` when it needs the scalar path (bool or
/// mixed-dtype operands, casts between number types). Integer `iota`s compared only with each
/// other (a causal mask `iota <= iota` in an f32 kernel) do not count: in vector code they are
/// computed as integers of the lane's width ([`narrow_index`]).
pub(crate) fn vector_lane(plan: &LoopPlan) -> Option<DType> {
    // Storage dtypes live in registers of their compute dtype (`storage.rs`).
    let lane = plan.data_operands().find(|o| !o.index).map(|o| o.dtype.compute())?;
    if lane == DType::Bool {
        return None;
    }
    let narrow = narrow_iotas(plan);
    let node_of_input = |j: usize| {
        plan.nodes.iter().position(|n| matches!(n.op, Op::Iota { .. }) && n.args == [Ref::Input(j)])
    };
    for (j, o) in plan.inputs.iter().enumerate() {
        // Not element data (see `LoopPlan::data_operands`).
        if o.key_only || o.indexed == Some(crate::plan::IndexedRole::Index) {
            continue;
        }
        let narrowed = o.index && node_of_input(j).is_some_and(|k| narrow[k]);
        if o.dtype.compute() != lane && !narrowed {
            return None;
        }
    }
    if plan.outputs.iter().any(|o| o.dtype.compute() != lane) {
        return None;
    }
    for (k, n) in plan.nodes.iter().enumerate() {
        if n.dtype.compute() != lane && n.dtype != DType::Bool && !narrow[k] {
            return None;
        }
    }
    Some(lane)
}

/// Integer `iota` nodes read only by comparisons between such nodes, and not stored.
fn narrow_iotas(plan: &LoopPlan) -> Vec<bool> {
    let is_int_iota =
        |k: usize| matches!(plan.nodes[k].op, Op::Iota { .. }) && plan.nodes[k].dtype.is_int();
    let stored = |k: usize| plan.outputs.iter().any(|o| o.node == Some(k));
    (0..plan.nodes.len())
        .map(|k| {
            is_int_iota(k)
                && !stored(k)
                && plan.nodes.iter().all(|n| {
                    !n.args.contains(&Ref::Node(k))
                        || (matches!(n.op, Op::Binary(b) if b.is_comparison())
                            && n.args.iter().all(|a| matches!(a, Ref::Node(m) if is_int_iota(*m))))
                })
        })
        .collect()
}

/// The integer dtype an index of dtype `dtype` is computed in at `width`: its own, or — for an
/// integer index in a vector kernel of another lane dtype (see [`vector_lane`]) — the integer
/// of the lane's width (`i32` lanes in an f32 kernel: exact for axes shorter than 2^31, which
/// the executor checks).
fn narrow_index(width: Width, dtype: DType) -> DType {
    match width {
        Width::Vector(t) if t != dtype && dtype.is_int() => {
            if lanes(t) == 4 {
                DType::I32
            } else {
                DType::I64
            }
        }
        _ => dtype,
    }
}

/// Values constant within one pass: row values as scalars and splats (row reductions), or
/// reduction results per column slot (column reductions), and which nodes are stashed.
#[derive(Clone, Default)]
struct RowVals {
    node_scalar: HashMap<usize, Value>,
    input_scalar: HashMap<usize, Value>,
    node_splat: HashMap<usize, Value>,
    input_splat: HashMap<usize, Value>,
    /// `1/v` of float row nodes that divide element values, as (scalar, splat): a division by
    /// a row value becomes one division per row and a multiply per element.
    node_recip: HashMap<usize, (Value, Option<Value>)>,
    /// Stashed nodes whose values already sit in their output buffer (see [`Emitter::stash`]).
    stashed: Vec<usize>,
    /// Staged nodes of the current block: node → its scratch slot's address minus the
    /// block's start × 4 (see `stage.rs`).
    staged: HashMap<usize, Value>,
}

/// Where one step evaluates: operand element offsets, the inner index `i + delta`, the width.
#[derive(Clone, Copy)]
struct At<'a> {
    offs: &'a [Value],
    i: Value,
    delta: i64,
    width: Width,
}

/// Code emitted at one position of the reduced outer axes, given the operands' offsets there.
type PositionBody<'a> = dyn FnMut(&mut FunctionBuilder, &[Value]) -> Result<(), CodegenError> + 'a;

/// Per-step memo of evaluated nodes and loaded inputs.
type Memo = HashMap<Ref, Value>;

struct Emitter<'p> {
    plan: &'p LoopPlan,
    abi: Abi,
    vector: Option<DType>,
    ptrs: Vec<Value>,
    sizes: Vec<Value>,
    strides: Vec<Vec<Value>>,
    /// Hoisted constants: node → (scalar, vector splat).
    consts: HashMap<usize, (Value, Option<Value>)>,
    /// Hoisted math coefficients per Cranelift type.
    math: HashMap<Type, MathConsts>,
    levels: Vec<usize>,
    /// The inner axis is kept and reduced axes are outer: column blocks (`columns.rs`).
    columns: bool,
    /// Reduced outer collapsed axes (walked inside each pass or column block).
    reduced_outer: Vec<usize>,
    /// Product of the reduced outer sizes (i64), for means.
    reduced_outer_count: Value,
    /// Expensive element values computed in one row pass and needed again by a later one,
    /// mapped to the (fully covering, same-dtype) output whose buffer keeps them in between:
    /// softmax stores `exp(x - max)` while summing it and scales it in place afterwards.
    stash: HashMap<usize, usize>,
    /// Per random node: its key's round keys, loaded once per call.
    random: HashMap<usize, random::RandomKeys>,
    ptr_ty: Type,
    /// Per indexed-read source: its axis size and stride, and its inner-axis stride (see
    /// `indexed.rs`).
    index_slots: Vec<(Value, Value, Value)>,
    /// The error record (a null pointer in kernels without indexed reads, never written).
    err_record: Value,
    /// The wide routines this kernel may call, and their imports in this function.
    wide: &'p WideFns,
    wide_refs: HashMap<MathFn, cranelift::codegen::ir::FuncRef>,
    call_conv: cranelift::codegen::isa::CallConv,
}

/// Pins `v` to the current block by a round trip through a stack slot, so the optimiser
/// cannot re-elaborate the pure computation behind it inside a later loop. Cranelift 0.135's
/// egraph elaboration places pure values at their uses and, in these kernels, does not hoist
/// row values (reduction folds, means, `rsqrt`, splats) or row offsets out of the sibling pass
/// loops that use them: layer norm recomputed its mean and `1/sqrt(var)` for every vector.
/// Loads and stores are never moved, and the sequence point between them keeps alias analysis
/// from forwarding the stored value, so pinning costs one store and one load per row.
fn pin(b: &mut FunctionBuilder, v: Value, ptr_ty: Type) -> Value {
    let ty = b.func.dfg.value_type(v);
    let size = ty.bytes();
    let align = size.max(1).trailing_zeros() as u8;
    let data = StackSlotData::new(StackSlotKind::ExplicitSlot, size, align);
    let slot = b.create_sized_stack_slot(data);
    b.ins().stack_store(ptr_ty, v, slot, 0);
    b.ins().sequence_point();
    b.ins().stack_load(ptr_ty, ty, slot, 0)
}

/// An index (`i64` scalar `base`) as a value of `dtype` at `width`; with `lane_step`, lane `l`
/// of a vector holds `base + l` (an iota along the inner axis), otherwise every lane `base`.
/// Each lane holds its own exact integer converted once, as the interpreter does: integer
/// lanes are `splat(base) + [0, 1, ..]` in the integer of the lane's width (indices are below
/// 2^31, which the executor checks), f32 lanes convert those, f64 lanes convert one by one.
fn index_value(
    b: &mut FunctionBuilder,
    base: Value,
    width: Width,
    dtype: DType,
    lane_step: bool,
) -> Result<Value, CodegenError> {
    if dtype.is_storage() {
        // Lowering computes a storage-dtype index in its compute dtype and casts it.
        return Err(CodegenError::Internal(format!("an index of storage dtype {dtype}")));
    }
    let convert = |b: &mut FunctionBuilder, i: Value| -> Value {
        match dtype {
            DType::I64 => i,
            DType::I32 => b.ins().ireduce(types::I32, i),
            DType::F32 => b.ins().fcvt_from_sint(types::F32, i),
            DType::F64 => b.ins().fcvt_from_sint(types::F64, i),
            // The op table gives `iota` numeric dtypes only; storage dtypes are excluded above.
            DType::Bool | DType::I8 | DType::U8 | DType::F16 | DType::BF16 => {
                b.ins().ireduce(types::I8, i)
            }
        }
    };
    let Width::Vector(t) = width else { return Ok(convert(b, base)) };
    // The vector type of `dtype` (a narrowed index has a vector of its own; see `narrow_index`).
    let vty = if dtype == t { width.ty(dtype)? } else { Width::Vector(dtype).ty(dtype)? };
    if !lane_step {
        let first = convert(b, base);
        return Ok(b.ins().splat(vty, first));
    }
    let n = lanes(t);
    if dtype == DType::F64 {
        let first = convert(b, base);
        let mut v = b.ins().splat(vty, first);
        for l in 1..n {
            let i = b.ins().iadd_imm_s(base, l);
            let s = convert(b, i);
            v = b.ins().insertlane(v, s, l as u8);
        }
        return Ok(v);
    }
    let (int_ty, int_vty) =
        if n == 4 { (types::I32, types::I32X4) } else { (types::I64, types::I64X2) };
    let bytes: Vec<u8> = if n == 4 {
        (0..4i32).flat_map(|l| l.to_le_bytes()).collect()
    } else {
        (0..2i64).flat_map(|l| l.to_le_bytes()).collect()
    };
    let steps = b.func.dfg.constants.insert(ConstantData::from(bytes));
    let steps = b.ins().vconst(int_vty, steps);
    let scalar = if int_ty == types::I64 { base } else { b.ins().ireduce(int_ty, base) };
    let splat = b.ins().splat(int_vty, scalar);
    let ints = b.ins().iadd(splat, steps);
    Ok(match dtype {
        DType::F32 => b.ins().fcvt_from_sint(types::F32X4, ints),
        _ => ints,
    })
}

pub(crate) fn mem() -> MemFlagsData {
    MemFlagsData::new().with_notrap()
}

/// Builds the kernel function of `plan` into `func`; `vector` picks the lane dtype of the
/// vectorised path (`None`: scalar loops only).
pub(crate) fn build(
    plan: &LoopPlan,
    func: &mut Function,
    fctx: &mut FunctionBuilderContext,
    vector: Option<DType>,
    features: MathFeatures,
    wide: &WideFns,
    frontend: TargetFrontendConfig,
) -> Result<(), CodegenError> {
    let ptr_ty = frontend.pointer_type();
    func.signature.params.push(AbiParam::new(ptr_ty));
    let mut b = FunctionBuilder::new(func, fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let args = b.block_params(entry)[0];
    let abi = Abi { operands: plan.operands().count(), rank: plan.rank() };
    let load_slot = |b: &mut FunctionBuilder, slot: usize| {
        b.ins().load(types::I64, MemFlagsData::trusted(), args, (slot * 8) as i32)
    };
    let ptrs: Vec<Value> = (0..abi.operands).map(|p| load_slot(&mut b, p)).collect();
    let sizes: Vec<Value> = (0..abi.rank).map(|j| load_slot(&mut b, abi.size(j))).collect();
    let strides: Vec<Vec<Value>> = (0..abi.operands)
        .map(|p| (0..abi.rank - 1).map(|j| load_slot(&mut b, abi.stride(p, j))).collect())
        .collect();
    let begin = load_slot(&mut b, abi.begin());
    let end = load_slot(&mut b, abi.begin() + 1);
    let sources = plan.index_sources();
    let err_record = if sources > 0 {
        load_slot(&mut b, abi.error_record())
    } else {
        b.ins().iconst(types::I64, 0)
    };
    let index_slots: Vec<(Value, Value, Value)> = (0..sources)
        .map(|q| {
            let n = load_slot(&mut b, abi.index_size(q));
            let sd = load_slot(&mut b, abi.index_stride(q));
            (n, sd, load_slot(&mut b, abi.index_inner(q)))
        })
        .collect();

    let reduced_outer: Vec<usize> =
        (0..abi.rank - 1).filter(|&j| plan.reduced.get(j) == Some(&true)).collect();
    let mut reduced_outer_count = b.ins().iconst(types::I64, 1);
    for &j in &reduced_outer {
        reduced_outer_count = b.ins().imul(reduced_outer_count, sizes[j]);
    }
    let mut em = Emitter {
        plan,
        abi,
        vector,
        ptrs,
        sizes,
        strides,
        consts: HashMap::new(),
        math: HashMap::new(),
        levels: levels(plan),
        columns: plan.reduces && !plan.inner_reduced(),
        reduced_outer,
        reduced_outer_count,
        stash: HashMap::new(),
        random: HashMap::new(),
        ptr_ty,
        index_slots,
        err_record,
        wide,
        wide_refs: HashMap::new(),
        call_conv: frontend.default_call_conv,
    };
    em.stash = em.plan_stash();
    em.hoist_constants(&mut b, features)?;
    em.import_wide(&mut b);
    em.hoist_random(&mut b)?;
    let zero = b.ins().iconst(types::I64, 0);
    let offs = vec![zero; abi.operands];
    em.outer(&mut b, 0, offs, begin, end)?;
    b.ins().return_(&[]);
    b.seal_all_blocks();
    b.finalize(frontend);
    Ok(())
}

/// Reduction level of every node: a reduction is one more than its argument, everything else
/// the maximum of its arguments.
fn levels(plan: &LoopPlan) -> Vec<usize> {
    let mut level = vec![0usize; plan.nodes.len()];
    for (k, n) in plan.nodes.iter().enumerate() {
        let arg_level = n
            .args
            .iter()
            .map(|a| match a {
                Ref::Node(m) => level.get(*m).copied().unwrap_or(0),
                Ref::Input(_) => 0,
            })
            .max()
            .unwrap_or(0);
        level[k] = if matches!(n.op, Op::Reduce { .. }) { arg_level + 1 } else { arg_level };
    }
    level
}

pub(crate) struct Loop {
    var: Variable,
    header: Block,
    exit: Block,
    pub i: Value,
    next: Value,
}

/// Starts `for (i = var; i + step <= limit; i += step)`; the body follows at the builder.
pub(crate) fn loop_begin(b: &mut FunctionBuilder, var: Variable, step: i64, limit: Value) -> Loop {
    let header = b.create_block();
    let body = b.create_block();
    let exit = b.create_block();
    b.ins().jump(header, &[]);
    b.switch_to_block(header);
    let i = b.use_var(var);
    let next = b.ins().iadd_imm_s(i, step);
    let ok = b.ins().icmp(IntCC::SignedLessThanOrEqual, next, limit);
    b.ins().brif(ok, body, &[], exit, &[]);
    b.switch_to_block(body);
    Loop { var, header, exit, i, next }
}

pub(crate) fn loop_end(b: &mut FunctionBuilder, l: Loop) {
    b.def_var(l.var, l.next);
    b.ins().jump(l.header, &[]);
    b.switch_to_block(l.exit);
}

impl Emitter<'_> {
    /// [`pin`] with this target's pointer type.
    fn pin(&self, b: &mut FunctionBuilder, v: Value) -> Value {
        pin(b, v, self.ptr_ty)
    }

    fn inner_full(&self, full: &[bool]) -> bool {
        full.last().copied().unwrap_or(false)
    }

    fn hoist_constants(
        &mut self,
        b: &mut FunctionBuilder,
        features: MathFeatures,
    ) -> Result<(), CodegenError> {
        for (k, n) in self.plan.nodes.iter().enumerate() {
            let value = match n.op {
                Op::Const(s) | Op::Full { value: s } => s,
                _ => continue,
            };
            let s = ops::scalar_const(b, n.dtype, value);
            let v = match self.vector {
                Some(t) => Some(ops::splat(b, Width::Vector(t), n.dtype, s)?),
                None => None,
            };
            self.consts.insert(k, (s, v));
        }
        let mut fns: HashMap<DType, Vec<MathFn>> = HashMap::new();
        for (k, n) in self.plan.nodes.iter().enumerate() {
            if let Some(f) = self.math_fn_of(k) {
                let d = self.arg_dtype(n.args.first().copied()).unwrap_or(n.dtype);
                if !d.is_float() {
                    return unsupported(format!("`{}` on {d}", n.op.name()));
                }
                let list = fns.entry(d).or_default();
                if !list.contains(&f) {
                    list.push(f);
                }
            }
        }
        for (d, list) in fns {
            let mut tys = vec![scalar_type(d)];
            if let Some(t) = self.vector {
                tys.push(Width::Vector(t).ty(d)?);
            }
            for ty in tys {
                let consts = MathConsts::new(b, ty, &list, features)
                    .map_err(|e| CodegenError::Unsupported(e.to_string()))?;
                self.math.insert(ty, consts);
            }
        }
        Ok(())
    }

    fn arg_dtype(&self, r: Option<Ref>) -> Option<DType> {
        match r? {
            Ref::Node(m) => self.plan.nodes.get(m).map(|n| n.dtype),
            Ref::Input(j) => self.plan.inputs.get(j).map(|o| o.dtype),
        }
    }

    /// Node `k` is evaluated once per pass (row reductions) or per column slot (column
    /// reductions: reduction results only), not per element.
    fn is_row_node(&self, k: usize) -> bool {
        let node = &self.plan.nodes[k];
        if self.columns {
            matches!(node.op, Op::Reduce { .. })
        } else {
            node.row
        }
    }

    /// Input `j` is the source of an indexed read (read only at computed addresses).
    fn is_source(&self, j: usize) -> bool {
        matches!(self.plan.inputs[j].indexed, Some(crate::plan::IndexedRole::Source { .. }))
    }

    /// Input `j` is loaded once per row: constant along the inner and every reduced axis.
    fn is_row_input(&self, j: usize) -> bool {
        if self.columns {
            return false;
        }
        let full = &self.plan.inputs[j].full;
        !full
            .iter()
            .zip(&self.plan.reduced)
            .enumerate()
            .any(|(a, (&f, &r))| f && (r || a + 1 == full.len()))
    }

    /// Loops over outer collapsed axis `depth` (kept axes only; the split axis covers
    /// `begin..end`), then the row passes or column blocks of the inner axis.
    fn outer(
        &self,
        b: &mut FunctionBuilder,
        depth: usize,
        offs: Vec<Value>,
        begin: Value,
        end: Value,
    ) -> Result<(), CodegenError> {
        let rank = self.abi.rank;
        let split = self.plan.split_axis();
        if depth + 1 >= rank {
            let (lo, hi) = if split + 1 == rank {
                (begin, end)
            } else {
                (b.ins().iconst(types::I64, 0), self.sizes[rank - 1])
            };
            return if self.columns {
                self.column_blocks(b, &offs, lo, hi)
            } else {
                self.row(b, &offs, lo, hi)
            };
        }
        if self.plan.reduced[depth] {
            return self.outer(b, depth + 1, offs, begin, end);
        }
        let var = b.declare_var(types::I64);
        let (lo, hi) = if depth == split {
            (begin, end)
        } else {
            (b.ins().iconst(types::I64, 0), self.sizes[depth])
        };
        b.def_var(var, lo);
        let l = loop_begin(b, var, 1, hi);
        let inner = self.advance(b, &offs, depth, l.i);
        let inner = inner.into_iter().map(|o| self.pin(b, o)).collect();
        self.outer(b, depth + 1, inner, begin, end)?;
        loop_end(b, l);
        Ok(())
    }

    /// Offsets moved by `i` steps along collapsed axis `j` (not the inner one).
    fn advance(&self, b: &mut FunctionBuilder, offs: &[Value], j: usize, i: Value) -> Vec<Value> {
        offs.iter()
            .enumerate()
            .map(|(p, &o)| {
                let step = b.ins().imul(i, self.strides[p][j]);
                b.ins().iadd(o, step)
            })
            .collect()
    }

    /// Nested loops over the reduced outer axes; `body` runs at each position's offsets.
    fn reduced_loops(
        &self,
        b: &mut FunctionBuilder,
        axes: &[usize],
        offs: &[Value],
        body: &mut PositionBody<'_>,
    ) -> Result<(), CodegenError> {
        let Some((&j, rest)) = axes.split_first() else {
            return body(b, offs);
        };
        let var = b.declare_var(types::I64);
        let zero = b.ins().iconst(types::I64, 0);
        b.def_var(var, zero);
        let l = loop_begin(b, var, 1, self.sizes[j]);
        let inner = self.advance(b, offs, j, l.i);
        self.reduced_loops(b, rest, &inner, body)?;
        loop_end(b, l);
        Ok(())
    }

    /// `ptr[p] + (off + i) * size_of(dtype)`.
    fn address(
        &self,
        b: &mut FunctionBuilder,
        p: usize,
        off: Value,
        i: Option<Value>,
        d: DType,
    ) -> Value {
        let idx = match i {
            Some(i) => b.ins().iadd(off, i),
            None => off,
        };
        let shift = d.size_bytes().trailing_zeros() as i64;
        let bytes = if shift == 0 { idx } else { b.ins().ishl_imm_u(idx, shift) };
        b.ins().iadd(self.ptrs[p], bytes)
    }

    /// Element-level nodes needed to compute `roots` (stashed nodes are leaves), and the row
    /// values they read.
    fn needs(&self, roots: &[usize], stashed: &[usize]) -> (Vec<bool>, Vec<usize>, Vec<usize>) {
        let mut elem = vec![false; self.plan.nodes.len()];
        let mut row_nodes = Vec::new();
        let mut row_inputs = Vec::new();
        let mut stack: Vec<usize> = roots.to_vec();
        while let Some(k) = stack.pop() {
            if elem[k] {
                continue;
            }
            elem[k] = true;
            if stashed.contains(&k) {
                continue;
            }
            for a in &self.plan.nodes[k].args {
                match *a {
                    Ref::Node(m) if self.is_row_node(m) => {
                        if !row_nodes.contains(&m) {
                            row_nodes.push(m)
                        }
                    }
                    Ref::Node(m) => stack.push(m),
                    Ref::Input(j) if self.is_source(j) => {}
                    Ref::Input(j) if self.is_row_input(j) => {
                        if !row_inputs.contains(&j) {
                            row_inputs.push(j)
                        }
                    }
                    Ref::Input(_) => {}
                }
            }
        }
        (elem, row_nodes, row_inputs)
    }

    /// Picks the values to stash (see [`Emitter::stash`]): element nodes that call a math
    /// function and are needed by two passes of a row reduction.
    fn plan_stash(&self) -> HashMap<usize, usize> {
        let mut stash = HashMap::new();
        if !self.plan.reduces || self.columns {
            return stash;
        }
        let max_level = self.levels.iter().copied().max().unwrap_or(0);
        let mut passes: Vec<Vec<usize>> = Vec::new();
        for level in 1..=max_level {
            let roots = (0..self.plan.nodes.len())
                .filter(|&k| {
                    matches!(self.plan.nodes[k].op, Op::Reduce { .. }) && self.levels[k] == level
                })
                .filter_map(|k| match self.plan.nodes[k].args.first() {
                    Some(Ref::Node(m)) if !self.is_row_node(*m) => Some(*m),
                    _ => None,
                })
                .collect();
            passes.push(roots);
        }
        passes.push(
            self.plan
                .outputs
                .iter()
                .filter_map(|o| o.node)
                .filter(|&k| !self.is_row_node(k))
                .collect(),
        );
        let mut uses = vec![0usize; self.plan.nodes.len()];
        for roots in &passes {
            let (elem, _, _) = self.needs(roots, &[]);
            for (k, e) in elem.iter().enumerate() {
                uses[k] += *e as usize;
            }
        }
        let mut taken = vec![false; self.plan.outputs.len()];
        for (k, node) in self.plan.nodes.iter().enumerate() {
            if uses[k] < 2 || math_fn(&node.op).is_none() || self.is_row_node(k) {
                continue;
            }
            let free = self.plan.outputs.iter().enumerate().position(|(o, out)| {
                !taken[o]
                    && out.dtype == node.dtype
                    && out.full.iter().all(|&f| f)
                    && out.node.is_some_and(|n| !self.is_row_node(n))
            });
            if let Some(o) = free {
                taken[o] = true;
                stash.insert(k, o);
            }
        }
        stash
    }

    /// Loads the row values a pass reads (`row_nodes` as scalars, then splats).
    fn load_row_values(
        &self,
        b: &mut FunctionBuilder,
        offs: &[Value],
        vals: &mut RowVals,
        row_nodes: &[usize],
        row_inputs: &[usize],
    ) -> Result<(), CodegenError> {
        for &m in row_nodes {
            if vals.node_splat.contains_key(&m) {
                continue;
            }
            let s = self.eval_row(b, offs, vals, m)?;
            let s = self.pin(b, s);
            vals.node_scalar.insert(m, s);
            let dtype = self.plan.nodes[m].dtype;
            if let Some(t) = self.vector {
                let v = ops::splat(b, Width::Vector(t), dtype, s)?;
                vals.node_splat.insert(m, self.pin(b, v));
            }
            if self.divides_elements(m) {
                let one = ops::scalar_const(b, dtype, Scalar::Float(1.0));
                let r = b.ins().fdiv(one, s);
                let r = self.pin(b, r);
                let splat = match self.vector {
                    Some(t) => {
                        let v = ops::splat(b, Width::Vector(t), dtype, r)?;
                        Some(self.pin(b, v))
                    }
                    None => None,
                };
                vals.node_recip.insert(m, (r, splat));
            }
        }
        for &j in row_inputs {
            if vals.input_splat.contains_key(&j) {
                continue;
            }
            let s = self.row_input(b, offs, vals, j)?;
            let input = &self.plan.inputs[j];
            if let (true, Some(t)) = (input.index, self.vector) {
                // An index constant along the row (a causal mask's row number): once per row.
                let width = Width::Vector(t);
                let v = index_value(b, offs[j], width, narrow_index(width, input.dtype), false)?;
                vals.input_splat.insert(j, self.pin(b, v));
                continue;
            }
            if self.plan.inputs[j].indexed.is_some() {
                continue;
            }
            if let Some(t) = self.vector {
                let v = ops::splat(b, Width::Vector(t), self.plan.inputs[j].dtype, s)?;
                vals.input_splat.insert(j, self.pin(b, v));
            }
        }
        Ok(())
    }

    fn eval_ref(
        &self,
        b: &mut FunctionBuilder,
        vals: &RowVals,
        r: Ref,
        at: At<'_>,
        memo: &mut Memo,
    ) -> Result<Value, CodegenError> {
        let j = match r {
            Ref::Node(m) => return self.eval_elem(b, vals, m, at, memo),
            Ref::Input(j) => j,
        };
        if let Some(v) = memo.get(&r) {
            return Ok(*v);
        }
        let input = &self.plan.inputs[j];
        let v = if input.index && !self.is_row_input(j) {
            // An iota: the index is the operand's offset, plus the inner position when the
            // iota runs along the inner axis.
            let base = if self.inner_full(&input.full) {
                let i = b.ins().iadd(at.offs[j], at.i);
                b.ins().iadd_imm_s(i, at.delta)
            } else {
                at.offs[j]
            };
            let lane_step = self.inner_full(&input.full);
            index_value(b, base, at.width, narrow_index(at.width, input.dtype), lane_step)?
        } else if self.inner_full(&input.full) {
            let addr = self.address(b, j, at.offs[j], Some(at.i), input.dtype);
            let off = (at.delta * input.dtype.size_bytes() as i64) as i32;
            storage::load(b, at.width, input.dtype, addr, off)?
        } else if self.is_row_input(j) {
            let map =
                if at.width == Width::Scalar { &vals.input_scalar } else { &vals.input_splat };
            map.get(&j)
                .copied()
                .ok_or_else(|| CodegenError::Internal(format!("row input {j} not loaded")))?
        } else {
            // Constant along the inner axis but not along a reduced one: one scalar per step.
            let addr = self.address(b, j, at.offs[j], None, input.dtype);
            let s = storage::load(b, Width::Scalar, input.dtype, addr, 0)?;
            ops::splat(b, at.width, input.dtype, s)?
        };
        memo.insert(r, v);
        Ok(v)
    }

    fn eval_elem(
        &self,
        b: &mut FunctionBuilder,
        vals: &RowVals,
        k: usize,
        at: At<'_>,
        memo: &mut Memo,
    ) -> Result<Value, CodegenError> {
        let node = &self.plan.nodes[k];
        if self.is_row_node(k) {
            let map = if at.width == Width::Scalar { &vals.node_scalar } else { &vals.node_splat };
            return map
                .get(&k)
                .copied()
                .ok_or_else(|| CodegenError::Internal(format!("row value {k} missing")));
        }
        if let Some(v) = memo.get(&Ref::Node(k)) {
            return Ok(*v);
        }
        if let Some(&adj) = vals.staged.get(&k) {
            let v = self.load_staged(b, adj, at)?;
            memo.insert(Ref::Node(k), v);
            return Ok(v);
        }
        if matches!(node.op, Op::Index { .. }) {
            return self.indexed_read(b, vals, k, at, memo);
        }
        if matches!(node.op, Op::Random { .. }) {
            let v = self.random_value(b, k, at)?;
            memo.insert(Ref::Node(k), v);
            return Ok(v);
        }
        let v = match self.stash.get(&k) {
            Some(&o) if vals.stashed.contains(&k) => {
                let out = &self.plan.outputs[o];
                let p = self.plan.inputs.len() + o;
                let addr = self.address(b, p, at.offs[p], Some(at.i), out.dtype);
                let off = (at.delta * out.dtype.size_bytes() as i64) as i32;
                storage::load(b, at.width, out.dtype, addr, off)?
            }
            _ => match self.row_reciprocal(vals, k, at.width) {
                Some(recip) => {
                    let x = match node.args.first() {
                        Some(&a) => self.eval_ref(b, vals, a, at, memo)?,
                        None => return Err(CodegenError::Internal("division lacks x".into())),
                    };
                    b.ins().fmul(x, recip)
                }
                None => {
                    let mut args = Vec::with_capacity(node.args.len());
                    for &a in &node.args {
                        args.push(self.eval_ref(b, vals, a, at, memo)?);
                    }
                    self.op(b, k, at.width, &args)?
                }
            },
        };
        memo.insert(Ref::Node(k), v);
        Ok(v)
    }

    /// Row node `m` is a float divisor of an element-level division (`e / sum(e)` in softmax).
    fn divides_elements(&self, m: usize) -> bool {
        self.plan.nodes[m].dtype.is_float()
            && self.plan.nodes.iter().enumerate().any(|(k, n)| {
                matches!(n.op, Op::Binary(BinaryOp::Div))
                    && n.args.get(1) == Some(&Ref::Node(m))
                    && !self.is_row_node(k)
            })
    }

    /// For a float division of node `k` by a row value whose reciprocal this pass holds:
    /// that reciprocal at `width`. `x · (1/s)` may differ from `x / s` by one rounding (within
    /// the JIT-vs-interpreter tolerance); body and tail use the same form, so results do not
    /// depend on where the vector loop ends.
    fn row_reciprocal(&self, vals: &RowVals, k: usize, width: Width) -> Option<Value> {
        let node = &self.plan.nodes[k];
        if !matches!(node.op, Op::Binary(BinaryOp::Div)) || !node.dtype.is_float() {
            return None;
        }
        let Some(Ref::Node(m)) = node.args.get(1) else { return None };
        let (scalar, splat) = vals.node_recip.get(m)?;
        match width {
            Width::Scalar => Some(*scalar),
            Width::Vector(_) => *splat,
        }
    }

    /// The math function node `k` needs: [`math_fn`], specialised where the argument's range
    /// allows a cheaper form (`exp` of a value known to be `≤ 0`).
    fn math_fn_of(&self, k: usize) -> Option<MathFn> {
        let node = &self.plan.nodes[k];
        match math_fn(&node.op)? {
            MathFn::Exp if node.args.first().is_some_and(|&a| self.non_positive(a)) => {
                Some(MathFn::ExpNonPositive)
            }
            f => Some(f),
        }
    }

    /// Every element of `r` is `≤ 0` or NaN: `x − max(x)` (the max reducing over `x` itself,
    /// so each element is among those maximised over; a reduction *node* of the plan is a row
    /// value, broadcast back along exactly the axes it reduced), `−|x|`, `min(x, c)` with
    /// `c ≤ 0`.
    fn non_positive(&self, r: Ref) -> bool {
        let Ref::Node(k) = r else { return false };
        let node = &self.plan.nodes[k];
        let arg = |i: usize| node.args.get(i).copied();
        let node_op = |r: Option<Ref>| match r {
            Some(Ref::Node(m)) => Some(&self.plan.nodes[m]),
            _ => None,
        };
        match node.op {
            Op::Binary(BinaryOp::Sub) => node_op(arg(1)).is_some_and(|m| {
                matches!(m.op, Op::Reduce { op: ReduceOp::Max, .. })
                    && m.args.first() == arg(0).as_ref()
            }),
            Op::Unary(UnaryOp::Neg) => {
                node_op(arg(0)).is_some_and(|m| matches!(m.op, Op::Unary(UnaryOp::Abs)))
            }
            Op::Binary(BinaryOp::Minimum) => [arg(0), arg(1)].into_iter().any(|a| {
                node_op(a).is_some_and(|m| match m.op {
                    Op::Const(Scalar::Float(c)) | Op::Full { value: Scalar::Float(c) } => c <= 0.0,
                    _ => false,
                }) || a.is_some_and(|a| self.non_positive(a))
            }),
            _ => false,
        }
    }

    /// Stores `v` (one step's value) into output `o` at the step's position.
    fn store_output(&self, b: &mut FunctionBuilder, o: usize, v: Value, at: At<'_>) {
        let out = &self.plan.outputs[o];
        let p = self.plan.inputs.len() + o;
        let addr = self.address(b, p, at.offs[p], Some(at.i), out.dtype);
        let off = (at.delta * out.dtype.size_bytes() as i64) as i32;
        storage::store(b, at.width, out.dtype, v, addr, off);
    }

    fn row_input(
        &self,
        b: &mut FunctionBuilder,
        offs: &[Value],
        vals: &mut RowVals,
        j: usize,
    ) -> Result<Value, CodegenError> {
        if let Some(v) = vals.input_scalar.get(&j) {
            return Ok(*v);
        }
        let d = self.plan.inputs[j].dtype;
        let v = if self.plan.inputs[j].index {
            index_value(b, offs[j], Width::Scalar, d, false)?
        } else {
            let addr = self.address(b, j, offs[j], None, d);
            storage::load(b, Width::Scalar, d, addr, 0)?
        };
        vals.input_scalar.insert(j, v);
        Ok(v)
    }

    /// A row-level value as a scalar (reductions must already have run).
    fn eval_row(
        &self,
        b: &mut FunctionBuilder,
        offs: &[Value],
        vals: &mut RowVals,
        k: usize,
    ) -> Result<Value, CodegenError> {
        if let Some(v) = vals.node_scalar.get(&k) {
            return Ok(*v);
        }
        let node = &self.plan.nodes[k];
        if matches!(node.op, Op::Reduce { .. }) {
            return Err(CodegenError::Internal(format!("reduction {k} used before its pass")));
        }
        if matches!(node.op, Op::Index { .. }) {
            let v = self.indexed_read_row(b, offs, vals, k)?;
            vals.node_scalar.insert(k, v);
            return Ok(v);
        }
        if matches!(node.op, Op::Random { .. }) {
            // Constant along the inner axis: its index is the counter's offset at the row.
            let zero = b.ins().iconst(types::I64, 0);
            let at = At { offs, i: zero, delta: 0, width: Width::Scalar };
            let v = self.random_value(b, k, at)?;
            vals.node_scalar.insert(k, v);
            return Ok(v);
        }
        let mut args = Vec::with_capacity(node.args.len());
        for &a in &node.args {
            args.push(match a {
                Ref::Node(m) => self.eval_row(b, offs, vals, m)?,
                Ref::Input(j) => self.row_input(b, offs, vals, j)?,
            });
        }
        let v = self.op(b, k, Width::Scalar, &args)?;
        vals.node_scalar.insert(k, v);
        Ok(v)
    }

    /// The instructions of node `k` on already computed arguments.
    fn op(
        &self,
        b: &mut FunctionBuilder,
        k: usize,
        width: Width,
        args: &[Value],
    ) -> Result<Value, CodegenError> {
        let node = &self.plan.nodes[k];
        let arg = |i: usize| {
            args.get(i)
                .copied()
                .ok_or_else(|| CodegenError::Internal(format!("node {k} lacks argument {i}")))
        };
        let arg_dtype = self.arg_dtype(node.args.first().copied()).unwrap_or(node.dtype);
        if let Some(f) = self.math_fn_of(k) {
            let ty = width.ty(arg_dtype)?;
            let consts = self
                .math
                .get(&ty)
                .ok_or_else(|| CodegenError::Internal("math constants not hoisted".into()))?;
            return math::emit(b, consts, f, args)
                .map_err(|e| CodegenError::Unsupported(e.to_string()));
        }
        match &node.op {
            Op::Const(_) | Op::Full { .. } => {
                let (s, v) = self
                    .consts
                    .get(&k)
                    .copied()
                    .ok_or_else(|| CodegenError::Internal("constant".into()))?;
                match width {
                    Width::Scalar => Ok(s),
                    Width::Vector(_) => {
                        v.ok_or_else(|| CodegenError::Internal("constant splat".into()))
                    }
                }
            }
            Op::Unary(u) => ops::emit_unary(b, width, *u, arg_dtype, arg(0)?),
            Op::Binary(op) => {
                let y_not_nan = match node.args.get(1) {
                    Some(Ref::Node(m)) => match self.plan.nodes[*m].op {
                        Op::Const(Scalar::Float(f)) | Op::Full { value: Scalar::Float(f) } => {
                            !f.is_nan()
                        }
                        Op::Const(_) | Op::Full { .. } => true,
                        _ => false,
                    },
                    _ => false,
                };
                ops::emit_binary(b, width, *op, arg_dtype, arg(0)?, arg(1)?, y_not_nan)
            }
            Op::Where => Ok(ops::blend(b, arg(0)?, arg(1)?, arg(2)?)),
            Op::MulAdd => Ok(ops::mul_add(b, arg(0)?, arg(1)?, arg(2)?)),
            Op::Cast(to) => ops::emit_cast(b, width, arg_dtype, *to, arg(0)?),
            Op::BroadcastTo => arg(0),
            // Its index operand already holds the index (see `eval_ref`).
            Op::Iota { .. } => arg(0),
            // Evaluated with its position by `eval_elem`/`eval_row` (`random.rs`).
            Op::Random { .. } => {
                Err(CodegenError::Internal("`rand_like` reached the instruction emitter".into()))
            }
            // Reductions and views are emitted by the row/column passes and the operand
            // addressing, never as a plain instruction; the rest never joins a loop kernel.
            // Reaching here is a planner bug: the kernel falls back, loudly.
            Op::Param(_)
            | Op::Reduce { .. }
            | Op::ArgMax { .. }
            | Op::ArgMin { .. }
            | Op::Scan { .. }
            | Op::CumprodGrad { .. }
            | Op::MatMul
            | Op::Reshape
            | Op::Transpose { .. }
            | Op::Concat { .. }
            | Op::Slice { .. }
            | Op::Index { .. }
            | Op::Window { .. }
            | Op::Extern { .. } => {
                unsupported(format!("`{}` inside a loop kernel", node.op.name()))
            }
        }
    }
}
