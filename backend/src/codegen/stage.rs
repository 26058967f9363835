//! Block staging: wide math routines called from a kernel's row pass.
//!
//! Cranelift's vectors are 128 bits wide, so an inline `tanh` or `exp` computes 4 f32 lanes per
//! instruction sequence while the CPU's FMA pipes take 16 (AVX-512) or 8 (AVX2). A pass that
//! needs such a function on f32 elements therefore runs in blocks of [`BLOCK`] elements that
//! stay in L1. For each block and each *staged* node (in plan order):
//!
//! 1. a 128-bit loop computes the node's argument and stores it into the node's scratch slot
//!    (a stack slot of `BLOCK` f32s);
//! 2. the kernel calls the node's wide routine (`crate::wide`) on the slot, in place;
//!
//! then the pass's usual loops run over the block, reading staged values from their slots
//! instead of computing them. A later stage reads earlier staged values the same way.
//!
//! Invariants:
//! - **Same bits at every level.** A wide routine is the same algorithm as the inline code
//!   (`crate::math`, one generic source instantiated at 4, 8 and 16 lanes, with `fma` in the
//!   same places), so staging changes speed, never results. Tests compare `TFN_SIMD=128`,
//!   `avx2` and `avx512` bit for bit.
//! - **Same order of reductions.** Blocks are multiples of 32 elements from the pass's start,
//!   so the unrolled accumulators see the same elements as without blocks.
//! - Kernels call routines through imports of the JIT module, resolved by name from the JIT's
//!   symbol table (`isa::new_jit_module`); the import ids are [`WideFns`].
//!
//! Rows shorter than [`MIN_STAGED`] (a softmax over 10 classes) run the inline code instead:
//! a kernel with rows has both versions and picks one per row at run time.

use super::{loop_begin, loop_end, At, Emitter, Memo, RowVals, Width, ROW_UNROLL};
use crate::error::CodegenError;
use crate::math::MathFn;
use crate::plan::Ref;
use crate::wide::{Helper, SimdLevel};
use cranelift::codegen::ir::{
    condcodes::IntCC, types, AbiParam, ExtFuncData, ExternalName, FuncRef, InstBuilder, Signature,
    StackSlot, StackSlotData, StackSlotKind, UserExternalName, Value,
};
use cranelift::frontend::{FunctionBuilder, Variable};
use std::collections::HashMap;
use tfn_ir::{DType, Op, ReduceOp};

/// Elements per block: 2 KB of f32 per staged node, far inside L1 with the inputs' blocks.
pub(crate) const BLOCK: i64 = 512;

/// Rows shorter than this run the inline 128-bit code (a call per row would cost more).
pub(crate) const MIN_STAGED: i64 = 64;

/// Byte offset of the scalar accumulator in an accumulator slot: the slot holds
/// `crate::wide::SUM_ACC` f32s (the vector accumulators, `16·u` bytes for vector `u`, then the
/// scalar), then a shift's f32.
pub(crate) const ACC_SCALAR: i32 = (crate::wide::ACC_LANES * 4) as i32;

/// Byte offset of the shift (softmax's max) in an accumulator slot.
pub(crate) const ACC_SHIFT: i32 = ACC_SCALAR + 4;

/// Bytes of an accumulator slot (16-byte aligned, room for the shift).
pub(crate) const ACC_SLOT: u32 = (ACC_SHIFT as u32 + 4).next_multiple_of(16);

/// The wide routines a JIT module's kernels may call: the level, and per function the
/// index of its import in the module (`UserExternalName` namespace 0).
#[derive(Clone, Debug)]
pub(crate) struct WideFns {
    pub level: SimdLevel,
    pub f32: HashMap<MathFn, u32>,
    /// The summing routines (`crate::wide::WideSumF32`), same numbering.
    pub sum_f32: HashMap<MathFn, u32>,
    /// The running max and the scaling routine (`crate::wide::Helper`).
    pub helpers: HashMap<Helper, u32>,
    /// The fallback trampoline (`crate::math::Fallback`), at every level (`None` in a
    /// self-contained object, or off x86-64).
    pub trampoline: Option<u32>,
}

impl Default for WideFns {
    fn default() -> Self {
        WideFns {
            level: SimdLevel::V128,
            f32: HashMap::new(),
            sum_f32: HashMap::new(),
            helpers: HashMap::new(),
            trampoline: None,
        }
    }
}

/// One staged node of a pass: the node, its routine, its scratch slot; where the routine
/// stores its results and whether it also sums them.
#[derive(Clone)]
pub(super) struct Staged {
    pub node: usize,
    pub routine: FuncRef,
    pub slot: StackSlot,
    /// The output the pass stashes the node into: the routine stores there directly (and the
    /// pass's loops read it back from there), else into the scratch slot, in place.
    pub out: Option<usize>,
    /// A `sum`/`mean` of the node the routine's summing twin accumulates.
    pub sum: Option<FusedSum>,
    /// With `sum`: the node's argument is `x - m` of a contiguous f32 input `x` (input index)
    /// and a row value `m` (node): the summing routine reads `x` and subtracts `m` itself, so
    /// the block is not staged at all.
    pub shifted: Option<(usize, usize)>,
}

/// A reduction of a staged node folded into its routine (`crate::wide::WideSumF32`): the
/// summing routine, the reduction node, the pass's accumulators for it (4 unrolled vectors and
/// the scalar tail's) and a stack slot holding them across the routine's calls.
#[derive(Clone)]
pub(super) struct FusedSum {
    pub routine: FuncRef,
    pub reduce: usize,
    pub vector: Vec<Variable>,
    pub scalar: Variable,
    pub acc: StackSlot,
}

/// Per-step body of a pass's loops: `(builder, position, unroll slot, memo)`.
pub(super) type StepBody<'a> =
    dyn FnMut(&mut FunctionBuilder, At<'_>, usize, &mut Memo) -> Result<(), CodegenError> + 'a;

/// A pass's step given the row values it reads (with the block's staged nodes).
pub(super) type PassStep<'a> = dyn FnMut(&mut FunctionBuilder, &RowVals, At<'_>, usize, &mut Memo) -> Result<(), CodegenError>
    + 'a;

impl Emitter<'_> {
    /// Imports the wide routine of every f32 math node the kernel may stage (once per
    /// function), when the kernel's vectors are f32.
    pub(super) fn import_wide(&mut self, b: &mut FunctionBuilder) {
        if self.vector != Some(DType::F32) || self.wide.f32.is_empty() {
            return;
        }
        for k in 0..self.plan.nodes.len() {
            let Some(f) = self.wide_fn_of(k) else { continue };
            if !self.wide_refs.contains_key(&f) {
                if let Some(&index) = self.wide.f32.get(&f) {
                    let r = self.import_routine(b, index, 3);
                    self.wide_refs.insert(f, r);
                }
            }
            if self.wide_sum_refs.contains_key(&f) || self.summed_by(k).is_none() {
                continue;
            }
            if let Some(&index) = self.wide.sum_f32.get(&f) {
                let r = self.import_routine(b, index, 5);
                self.wide_sum_refs.insert(f, r);
            }
        }
        if self.plan.reduces && !self.columns {
            for h in Helper::ALL {
                if let Some(&index) = self.wide.helpers.get(&h) {
                    let r = self.import_routine(b, index, h.params());
                    self.helper_refs.insert(h, r);
                }
            }
        }
    }

    /// Input `j` is an f32 operand loaded element by element along the contiguous inner axis
    /// (not an index, not an indexed source, not a row value): a wide routine may read it.
    pub(super) fn plain_f32_input(&self, j: usize) -> bool {
        let input = &self.plan.inputs[j];
        input.dtype == DType::F32
            && !input.index
            && input.indexed.is_none()
            && self.inner_full(&input.full)
            && !self.is_row_input(j)
    }

    /// `wide` on rows of at least [`MIN_STAGED`] elements, `inline` on shorter ones (a kernel
    /// with rows; a flat kernel always takes `wide`).
    pub(super) fn wide_or_inline(
        &self,
        b: &mut FunctionBuilder,
        lo: Value,
        hi: Value,
        wide: &mut dyn FnMut(&mut FunctionBuilder) -> Result<(), CodegenError>,
        inline: &mut dyn FnMut(&mut FunctionBuilder) -> Result<(), CodegenError>,
    ) -> Result<(), CodegenError> {
        if self.abi.rank == 1 {
            return wide(b);
        }
        let done = b.create_block();
        let short = b.create_block();
        let long_block = b.create_block();
        let len = b.ins().isub(hi, lo);
        let long = b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, len, MIN_STAGED);
        b.ins().brif(long, long_block, &[], short, &[]);
        b.switch_to_block(short);
        inline(b)?;
        b.ins().jump(done, &[]);
        b.switch_to_block(long_block);
        wide(b)?;
        b.ins().jump(done, &[]);
        b.switch_to_block(done);
        Ok(())
    }

    /// Imports the fallback trampoline (`math::Fallback`) when the math functions `fns` may
    /// call it and the module declares it (not in a self-contained object).
    pub(super) fn import_trampoline(
        &self,
        b: &mut FunctionBuilder,
        fns: &[MathFn],
    ) -> Option<FuncRef> {
        if !fns.iter().any(|f| matches!(f, MathFn::Sin | MathFn::Cos)) {
            return None;
        }
        let index = self.wide.trampoline?;
        Some(import_function(b, index, crate::math::trampoline_signature()))
    }

    /// Imports the JIT module's function `index` taking `params` pointers.
    fn import_routine(&self, b: &mut FunctionBuilder, index: u32, params: usize) -> FuncRef {
        let mut sig = Signature::new(self.call_conv);
        for _ in 0..params {
            sig.params.push(AbiParam::new(self.ptr_ty));
        }
        import_function(b, index, sig)
    }

    /// The first f32 `sum`/`mean` of the plan whose argument is node `k` itself.
    pub(super) fn summed_by(&self, k: usize) -> Option<usize> {
        self.plan.nodes.iter().position(|n| {
            matches!(n.op, Op::Reduce { op: ReduceOp::Sum | ReduceOp::Mean, .. })
                && n.dtype == DType::F32
                && n.args.first() == Some(&Ref::Node(k))
        })
    }

    /// The summing routine of staged node `k`, if it has one.
    pub(super) fn sum_routine(&self, k: usize) -> Option<FuncRef> {
        self.wide_sum_refs.get(&self.wide_fn_of(k)?).copied()
    }

    /// The unary f32 math function of element node `k` when a wide routine can compute it.
    fn wide_fn_of(&self, k: usize) -> Option<MathFn> {
        let node = &self.plan.nodes[k];
        if node.dtype != DType::F32 || node.args.len() != 1 {
            return None;
        }
        if self.arg_dtype(node.args.first().copied()) != Some(DType::F32) {
            return None;
        }
        let f = self.math_fn_of(k)?;
        (f.arity() == 1 && self.wide.f32.contains_key(&f)).then_some(f)
    }

    /// The nodes a pass computing `elem` stages, in plan (dependency) order, each with a
    /// scratch slot of its own.
    pub(super) fn plan_staging(
        &self,
        b: &mut FunctionBuilder,
        elem: &[bool],
        vals: &RowVals,
    ) -> Vec<Staged> {
        if self.vector != Some(DType::F32) || self.columns {
            return Vec::new();
        }
        (0..self.plan.nodes.len())
            .filter(|&k| elem[k] && !self.is_row_node(k) && !vals.stashed.contains(&k))
            .filter_map(|k| {
                let routine = *self.wide_refs.get(&self.wide_fn_of(k)?)?;
                let data = StackSlotData::new(StackSlotKind::ExplicitSlot, BLOCK as u32 * 4, 6);
                let slot = b.create_sized_stack_slot(data);
                Some(Staged { node: k, routine, slot, out: None, sum: None, shifted: None })
            })
            .collect()
    }

    /// The loops of one pass over `lo..hi` at operand offsets `offs`: a [`ROW_UNROLL`]×-unrolled vector
    /// loop, a 1-vector loop, a scalar tail; `body` emits one step.
    pub(super) fn steps_over(
        &self,
        b: &mut FunctionBuilder,
        offs: &[Value],
        lo: Value,
        hi: Value,
        reduces: bool,
        body: &mut StepBody<'_>,
    ) -> Result<(), CodegenError> {
        let i_var = b.declare_var(types::I64);
        b.def_var(i_var, lo);
        if let Some(t) = self.vector {
            let width = Width::Vector(t);
            let l = super::lanes(t);
            let unrolled = if reduces { ROW_UNROLL } else { self.store_unroll };
            for unroll in [unrolled, 1] {
                if unroll == 1 && unrolled == 1 {
                    continue;
                }
                let lp = loop_begin(b, i_var, unroll * l, hi);
                let mut memo = Memo::new();
                for u in 0..unroll {
                    let at = At { offs, i: lp.i, delta: u * l, width };
                    body(b, at, u as usize, &mut memo)?;
                }
                loop_end(b, lp);
            }
        }
        let lp = loop_begin(b, i_var, 1, hi);
        let mut memo = Memo::new();
        let at = At { offs, i: lp.i, delta: 0, width: Width::Scalar };
        body(b, at, 0, &mut memo)?;
        loop_end(b, lp);
        Ok(())
    }

    /// A pass's loops over `lo..hi` with `staged` nodes computed block by block by their wide
    /// routines (see the module docs); `body` is the pass's step, not run at all on blocks
    /// when `body_idle` (the routines did all of the pass's work: softmax's exp-and-sum). Kernels
    /// with rows pick the inline loops for rows shorter than [`MIN_STAGED`].
    #[allow(clippy::too_many_arguments)]
    pub(super) fn staged_steps(
        &self,
        b: &mut FunctionBuilder,
        vals: &RowVals,
        staged: &[Staged],
        offs: &[Value],
        lo: Value,
        hi: Value,
        body_idle: bool,
        reduces: bool,
        body: &mut PassStep<'_>,
    ) -> Result<(), CodegenError> {
        let done = b.create_block();
        if self.abi.rank > 1 {
            let inline = b.create_block();
            let blocks = b.create_block();
            let len = b.ins().isub(hi, lo);
            let long = b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, len, MIN_STAGED);
            b.ins().brif(long, blocks, &[], inline, &[]);
            b.switch_to_block(inline);
            self.steps_over(b, offs, lo, hi, reduces, &mut |b, at, u, memo| {
                body(b, vals, at, u, memo)
            })?;
            b.ins().jump(done, &[]);
            b.switch_to_block(blocks);
        }
        // The accumulators of the sums the routines take over, into their slots.
        for f in staged.iter().filter_map(|s| s.sum.as_ref()) {
            for (u, &var) in f.vector.iter().enumerate() {
                let v = b.use_var(var);
                b.ins().stack_store(self.ptr_ty, v, f.acc, (u * 16) as i32);
            }
            let v = b.use_var(f.scalar);
            b.ins().stack_store(self.ptr_ty, v, f.acc, ACC_SCALAR);
        }
        // The shifts of the shifted ones, into the spare word of their accumulator slots.
        for s in staged {
            if let (Some(f), Some((_, m))) = (&s.sum, s.shifted) {
                let v = vals.node_scalar.get(&m).copied().ok_or_else(|| {
                    CodegenError::Internal(format!("row value {m} of a shift missing"))
                })?;
                b.ins().stack_store(self.ptr_ty, v, f.acc, ACC_SHIFT);
            }
        }
        // for (blk = lo; blk < hi; blk = end) { end = min(blk + BLOCK, hi); stages; body }
        let blk_var = b.declare_var(types::I64);
        b.def_var(blk_var, lo);
        let header = b.create_block();
        let block_body = b.create_block();
        let exit = b.create_block();
        b.ins().jump(header, &[]);
        b.switch_to_block(header);
        let blk = b.use_var(blk_var);
        let more = b.ins().icmp(IntCC::SignedLessThan, blk, hi);
        b.ins().brif(more, block_body, &[], exit, &[]);
        b.switch_to_block(block_body);
        let next = b.ins().iadd_imm_s(blk, BLOCK);
        let short = b.ins().icmp(IntCC::SignedLessThan, hi, next);
        let end = b.ins().select(short, hi, next);
        let count = b.ins().isub(end, blk);
        let blk_bytes = b.ins().ishl_imm_u(blk, 2);
        let mut st = vals.clone();
        for s in staged {
            let base = b.ins().stack_addr(self.ptr_ty, s.slot, 0);
            // Element `i` of the block lives at `base + (i - blk)·4`.
            let adj = b.ins().isub(base, blk_bytes);
            if let (Some(f), Some((j, _))) = (&s.sum, s.shifted) {
                // `f(x - m)` straight from `x`: nothing staged.
                let src = self.address(b, j, offs[j], Some(blk), DType::F32);
                let (dst, dst_adj) = match s.out {
                    Some(o) => {
                        let p = self.plan.inputs.len() + o;
                        let out_adj = self.address(b, p, offs[p], None, DType::F32);
                        st.written.push(s.node);
                        (b.ins().iadd(out_adj, blk_bytes), out_adj)
                    }
                    None => (base, adj),
                };
                let acc = b.ins().stack_addr(self.ptr_ty, f.acc, 0);
                let shift = b.ins().stack_addr(self.ptr_ty, f.acc, ACC_SHIFT);
                b.ins().call(f.routine, &[src, dst, count, acc, shift]);
                st.summed.push(f.reduce);
                st.staged.insert(s.node, dst_adj);
                continue;
            }
            let arg = match self.plan.nodes[s.node].args.first() {
                Some(&a) => a,
                None => {
                    return Err(CodegenError::Internal("staged node lacks its argument".into()))
                }
            };
            let state = &st;
            self.steps_over(b, offs, blk, end, false, &mut |b, at, _, memo| {
                memo.clear();
                let x = self.eval_ref(b, state, arg, at, memo)?;
                let (addr, off) = scratch_address(b, adj, at);
                super::storage::store(b, at.width, DType::F32, x, addr, off);
                Ok(())
            })?;
            // Where the results go: the stash output (element `i` at `out_adj + 4i`) or the
            // slot, in place.
            let (dst, dst_adj) = match s.out {
                Some(o) => {
                    let p = self.plan.inputs.len() + o;
                    let out_adj = self.address(b, p, offs[p], None, DType::F32);
                    let at_blk = b.ins().iadd(out_adj, blk_bytes);
                    st.written.push(s.node);
                    (at_blk, out_adj)
                }
                None => (base, adj),
            };
            match &s.sum {
                Some(f) => {
                    let acc = b.ins().stack_addr(self.ptr_ty, f.acc, 0);
                    let no_shift = b.ins().iconst(self.ptr_ty, 0);
                    b.ins().call(f.routine, &[base, dst, count, acc, no_shift]);
                    st.summed.push(f.reduce);
                }
                None => {
                    b.ins().call(s.routine, &[base, dst, count]);
                }
            }
            st.staged.insert(s.node, dst_adj);
        }
        if !body_idle {
            let state = &st;
            self.steps_over(b, offs, blk, end, reduces, &mut |b, at, u, memo| {
                body(b, state, at, u, memo)
            })?;
        }
        b.def_var(blk_var, end);
        b.ins().jump(header, &[]);
        b.switch_to_block(exit);
        // The routines' sums back into the pass's accumulators.
        for f in staged.iter().filter_map(|s| s.sum.as_ref()) {
            for (u, &var) in f.vector.iter().enumerate() {
                let v = b.ins().stack_load(self.ptr_ty, types::F32X4, f.acc, (u * 16) as i32);
                b.def_var(var, v);
            }
            let v = b.ins().stack_load(self.ptr_ty, types::F32, f.acc, ACC_SCALAR);
            b.def_var(f.scalar, v);
        }
        b.ins().jump(done, &[]);
        b.switch_to_block(done);
        Ok(())
    }

    /// A staged node's value at `at`, read from its scratch slot.
    pub(super) fn load_staged(
        &self,
        b: &mut FunctionBuilder,
        adj: Value,
        at: At<'_>,
    ) -> Result<Value, CodegenError> {
        let (addr, off) = scratch_address(b, adj, at);
        super::storage::load(b, at.width, DType::F32, addr, off)
    }
}

/// The address of element `at.i + at.delta` of a scratch slot whose element `i` is at
/// `adj + 4i`, as (base, immediate offset).
fn scratch_address(b: &mut FunctionBuilder, adj: Value, at: At<'_>) -> (Value, i32) {
    let bytes = b.ins().ishl_imm_u(at.i, 2);
    (b.ins().iadd(adj, bytes), (at.delta * 4) as i32)
}

/// Imports the JIT module's function `index` (`UserExternalName` namespace 0) with `sig`.
fn import_function(b: &mut FunctionBuilder, index: u32, sig: Signature) -> FuncRef {
    let signature = b.import_signature(sig);
    let name = b.func.declare_imported_user_function(UserExternalName::new(0, index));
    let data = ExtFuncData {
        name: ExternalName::user(name),
        signature,
        colocated: false,
        patchable: false,
    };
    b.import_function(data)
}
