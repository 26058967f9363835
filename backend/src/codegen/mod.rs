//! Cranelift IR for one loop kernel ([`LoopPlan`]): the loop nest, the row passes, the
//! unrolled vector inner loops, reductions with independent accumulators, and scalar tails.
//!
//! Code map: this file holds the entry (`build`: the kernel's arguments, constants, the loop
//! nest over kept axes) and the `Emitter` state; `element.rs` the value of one element step,
//! shared by every pass; `rows.rs` row reductions (inner axis reduced), `columns.rs` column
//! reductions (inner axis kept, reduced axes outside it); `lane_dtype.rs` which dtype the
//! vectors hold; `loops.rs` counted loops; `ops.rs` the instruction sequence of each op;
//! `stage.rs` calls of the wide math routines; `indexed.rs`, `random.rs`, `storage.rs` indexed
//! reads, random numbers and storage dtypes; `scan.rs`, `arg.rs` kernels along one axis.
//!
//! # Kernel ABI
//!
//! `extern "C" fn(args: *const i64)`; [`crate::abi::LoopAbi`] says where each argument sits
//! (the executor writes the array through the same type). The split axis
//! ([`LoopPlan::split_axis`], the outermost kept axis) runs over `begin..end`, so threads can
//! split it. For rank 1 (a flat elementwise loop) axis 0 is the inner axis.
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
mod element;
mod indexed;
mod lane_dtype;
mod lane_ops;
mod loops;
use lane_dtype::narrow_index;
pub(crate) use lane_dtype::vector_lane;
pub(crate) use loops::{loop_begin, loop_end};
pub(crate) mod ops;
mod random;
mod rows;
pub(crate) mod scan;
mod stage;
pub(crate) use stage::WideFns;
pub(crate) mod storage;

use crate::abi::LoopAbi;
use crate::error::CodegenError;
use crate::math::{self, MathConsts, MathFeatures, MathFn};
use crate::plan::{LoopPlan, Ref};
use cranelift::codegen::ir::{types, AbiParam, Function, InstBuilder, Type, Value};
use cranelift::codegen::ir::{ConstantData, MemFlagsData, StackSlotData, StackSlotKind};
use cranelift::codegen::isa::TargetFrontendConfig;
use cranelift::frontend::{FunctionBuilder, FunctionBuilderContext};
use ops::{lanes, math_fn, scalar_type, unsupported, Width};
use std::collections::HashMap;
use tfn_ir::{BinaryOp, DType, Op, ReduceOp, Scalar, UnaryOp};

/// Vectors per iteration of the main loop.
pub(crate) const UNROLL: i64 = 4;

/// Vectors per iteration of a row pass's main loop, each with its own accumulator per
/// reduction (`crate::wide::ACC_VECTORS`: the wide routines reproduce that order).
pub(crate) const ROW_UNROLL: i64 = crate::wide::ACC_VECTORS as i64;

/// Values constant within one pass: row values as scalars and splats (row reductions), or
/// reduction results per column slot (column reductions), and which nodes are stashed.
#[derive(Clone, Default)]
struct RowVals {
    node_scalar: HashMap<usize, Value>,
    input_scalar: HashMap<usize, Value>,
    node_splat: HashMap<usize, Value>,
    input_splat: HashMap<usize, Value>,
    /// Float row nodes `v` that divide element values: a division by a row value becomes
    /// one division per row and multiplies per element (see [`RowReciprocal`]).
    node_recip: HashMap<usize, RowReciprocal>,
    /// Stashed nodes whose values already sit in their output buffer (see [`Emitter::stash`]).
    stashed: Vec<usize>,
    /// Staged nodes of the current block: node → its scratch slot's address minus the
    /// block's start × 4 (see `stage.rs`).
    staged: HashMap<usize, Value>,
    /// Reductions of the current block that its routines accumulate (see `stage.rs`): the
    /// pass's step leaves them alone.
    summed: Vec<usize>,
    /// Stashed nodes of the current block that its routines stored into their outputs: the
    /// pass's step does not store them again.
    written: Vec<usize>,
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

/// Vectors per step of the unrolled loop of a random kernel's store-only passes: each element
/// costs a Philox-4x32-10 block, which dwarfs the loop's own work. Measured on dropout and
/// `randn_like` over 256K f32 (1 thread, Zen 4): the same speed as [`ROW_UNROLL`] (1.50 and
/// 2.78 ms), half the compile time (8.2 → 4.2 ms, 11.6 → 5.4 ms); 1 is 2.3–3.4× slower.
const RANDOM_UNROLL: i64 = 2;

/// The unroll of a kernel's store-only passes (see [`Emitter::store_unroll`]): light kernels
/// gain from [`ROW_UNROLL`] vectors per step (bias+relu, gelu over 64K f32: 2 vectors are
/// 1.15–1.2× slower), random ones do not.
fn store_unroll(plan: &LoopPlan) -> i64 {
    if plan.randoms.is_empty() {
        ROW_UNROLL
    } else {
        RANDOM_UNROLL
    }
}

/// Per-step memo of evaluated nodes and loaded inputs.
type Memo = HashMap<Ref, Value>;

struct Emitter<'p> {
    plan: &'p LoopPlan,
    abi: LoopAbi,
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
    /// Vectors per step of the unrolled loop of a pass that only stores (no reduction):
    /// [`ROW_UNROLL`], or fewer for kernels heavy enough that more copies only add code.
    store_unroll: i64,
    /// Per indexed-read source: its axis size and stride, and its inner-axis stride (see
    /// `indexed.rs`).
    index_slots: Vec<(Value, Value, Value)>,
    /// The error record (a null pointer in kernels without indexed reads, never written).
    err_record: Value,
    /// The wide routines this kernel may call, and their imports in this function.
    wide: &'p WideFns,
    wide_refs: HashMap<MathFn, cranelift::codegen::ir::FuncRef>,
    /// The summing routines (`crate::wide::WideSumF32`) imported, for staged nodes a `sum`
    /// reads directly.
    wide_sum_refs: HashMap<MathFn, cranelift::codegen::ir::FuncRef>,
    /// The running max and scaling routines imported (kernels with row reductions).
    helper_refs: HashMap<crate::wide::Helper, cranelift::codegen::ir::FuncRef>,
    call_conv: cranelift::codegen::isa::CallConv,
}

/// Pins `v` to the current block by a round trip through a stack slot, so the optimiser
/// cannot re-elaborate the pure computation behind it inside a later loop. Cranelift 0.135's
/// egraph elaboration places pure values at their uses and, in these kernels, does not hoist
/// row values (reduction folds, means, `rsqrt`, splats) or row offsets out of the sibling pass
/// loops that use them: layer norm recomputed its mean and `1/sqrt(var)` for every vector.
/// Loads and stores are never moved, and the sequence point between them keeps alias analysis
/// from forwarding the stored value, so pinning costs one store and one load per row.
/// How element values `x` are divided by a float row value `s`: `(x · c) · r`, with `r = 1/(s·c)`
/// and `c` a power of two (1 unless `|s|` is outside `[2^-126, 2^126]` in f32, `[2^-1022, 2^1022]`
/// in f64). Scaling by `c` is exact, so the result is `x · (1/s)` rounded twice (within 1.5 ulp
/// of `x / s`), and `1/(s·c)` is a normal number: a bare `x · (1/s)` would be infinite where
/// `s` is subnormal (`1e-5 / 1e-40`) and lose bits where `1/s` is. Zeros, infinities and NaNs
/// of `s` give what `x / s` gives.
#[derive(Clone, Copy)]
pub(crate) struct RowReciprocal {
    pub(crate) c: Value,
    pub(crate) r: Value,
    pub(crate) c_splat: Option<Value>,
    pub(crate) r_splat: Option<Value>,
}

/// `(c, r)` of [`RowReciprocal`] for the float scalar `s`.
fn scaled_reciprocal(b: &mut FunctionBuilder, s: Value) -> (Value, Value) {
    use cranelift::codegen::ir::condcodes::FloatCC;
    let ty = b.func.dfg.value_type(s);
    // 2^e, built from its exponent bits.
    let (lo, hi, up, down, one) = if ty == types::F64 {
        let mut c = |e: i64| b.ins().f64const(f64::from_bits(((e + 1023) as u64) << 52));
        (c(-1022), c(1022), c(512), c(-512), c(0))
    } else {
        let mut c = |e: i32| b.ins().f32const(f32::from_bits(((e + 127) as u32) << 23));
        (c(-126), c(126), c(64), c(-64), c(0))
    };
    let a = b.ins().fabs(s);
    let tiny = b.ins().fcmp(FloatCC::LessThan, a, lo);
    let huge = b.ins().fcmp(FloatCC::GreaterThan, a, hi);
    let c = b.ins().select(huge, down, one);
    let c = b.ins().select(tiny, up, c);
    let scaled = b.ins().fmul(s, c);
    let r = b.ins().fdiv(one, scaled);
    (c, r)
}

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
    let abi = LoopAbi::of(plan);
    let load_slot = |b: &mut FunctionBuilder, slot: usize| {
        b.ins().load(types::I64, MemFlagsData::trusted(), args, (slot * 8) as i32)
    };
    let ptrs: Vec<Value> = (0..abi.operands).map(|p| load_slot(&mut b, abi.ptr(p))).collect();
    let sizes: Vec<Value> = (0..abi.rank).map(|j| load_slot(&mut b, abi.size(j))).collect();
    let strides: Vec<Vec<Value>> = (0..abi.operands)
        .map(|p| (0..abi.rank - 1).map(|j| load_slot(&mut b, abi.stride(p, j))).collect())
        .collect();
    let begin = load_slot(&mut b, abi.begin());
    let end = load_slot(&mut b, abi.end());
    let sources = abi.index_sources;
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
        store_unroll: store_unroll(plan),
        index_slots,
        err_record,
        wide,
        wide_refs: HashMap::new(),
        wide_sum_refs: HashMap::new(),
        helper_refs: HashMap::new(),
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
            let trampoline = self.import_trampoline(b, &list);
            for ty in tys {
                let mut consts = MathConsts::new(b, ty, &list, features)
                    .map_err(|e| CodegenError::Unsupported(e.to_string()))?;
                if let Some(t) = trampoline {
                    consts.set_trampoline(t);
                }
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
                let (c, r) = scaled_reciprocal(b, s);
                let (c, r) = (self.pin(b, c), self.pin(b, r));
                let (c_splat, r_splat) = match self.vector {
                    Some(t) => {
                        let cv = ops::splat(b, Width::Vector(t), dtype, c)?;
                        let rv = ops::splat(b, Width::Vector(t), dtype, r)?;
                        (Some(self.pin(b, cv)), Some(self.pin(b, rv)))
                    }
                    None => (None, None),
                };
                vals.node_recip.insert(m, RowReciprocal { c, r, c_splat, r_splat });
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
}
