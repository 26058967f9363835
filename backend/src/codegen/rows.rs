//! Row reductions: the inner collapsed axis is reduced, so each kept position is a row that
//! one pass per reduction level walks (plus a final pass storing elementwise outputs). A pass
//! also walks the reduced outer axes, if any, around its inner loops.

use super::stage::FusedSum;
use super::stage::{ACC_SCALAR, ACC_SLOT};
use super::Width;
use super::{lanes, ops, scalar_type, At, Emitter, Memo, RowVals};
use super::{CodegenError, ROW_UNROLL};
use crate::plan::Ref;
use crate::wide::Helper;
use cranelift::codegen::ir::condcodes::FloatCC;
use cranelift::codegen::ir::{types, FuncRef, InstBuilder, StackSlotData, StackSlotKind, Value};
use cranelift::frontend::{FunctionBuilder, Variable};
use tfn_ir::{BinaryOp, DType, Op, ReduceOp};

/// A reduction of a pass: node, operation, dtype.
type ReduceInfo = (usize, ReduceOp, DType);

impl Emitter<'_> {
    /// One row: a pass per reduction level, a pass storing elementwise outputs, then the
    /// row-level outputs. `offs` are the kept axes' offsets; `lo..hi` is the inner range.
    pub(super) fn row(
        &self,
        b: &mut FunctionBuilder,
        offs: &[Value],
        lo: Value,
        hi: Value,
    ) -> Result<(), CodegenError> {
        let mut vals = RowVals::default();
        let max_level = self.levels.iter().copied().max().unwrap_or(0);
        for level in 1..=max_level {
            let reduces: Vec<usize> = (0..self.plan.nodes.len())
                .filter(|&k| {
                    matches!(self.plan.nodes[k].op, Op::Reduce { .. }) && self.levels[k] == level
                })
                .collect();
            if !reduces.is_empty() {
                self.pass(b, offs, &mut vals, &reduces, &[], lo, hi)?;
            }
        }
        let elem_outputs: Vec<usize> = (0..self.plan.outputs.len())
            .filter(|&o| self.plan.outputs[o].node.is_some_and(|k| !self.is_row_node(k)))
            .collect();
        if !elem_outputs.is_empty() {
            self.pass(b, offs, &mut vals, &[], &elem_outputs, lo, hi)?;
        }
        let n_in = self.plan.inputs.len();
        for (o, out) in self.plan.outputs.iter().enumerate() {
            let Some(k) = out.node else { continue };
            if !self.is_row_node(k) {
                continue;
            }
            let v = self.eval_row(b, offs, &mut vals, k)?;
            let addr = self.address(b, n_in + o, offs[n_in + o], None, out.dtype);
            super::storage::store(b, super::Width::Scalar, out.dtype, v, addr, 0);
        }
        Ok(())
    }

    /// One pass over the row (reduced outer axes × inner range) accumulating `reduces` and
    /// storing `outputs`.
    #[allow(clippy::too_many_arguments)]
    fn pass(
        &self,
        b: &mut FunctionBuilder,
        offs: &[Value],
        vals: &mut RowVals,
        reduces: &[usize],
        outputs: &[usize],
        lo: Value,
        hi: Value,
    ) -> Result<(), CodegenError> {
        // Roots: reduction arguments (element or row level) and output nodes.
        let mut roots = Vec::new();
        let mut row_roots = Vec::new();
        for &r in reduces {
            match self.plan.nodes[r].args.first() {
                Some(Ref::Node(m)) if !self.is_row_node(*m) => roots.push(*m),
                Some(Ref::Node(m)) => row_roots.push(*m),
                Some(Ref::Input(j)) if self.is_row_input(*j) => {
                    self.load_row_values(b, offs, vals, &[], &[*j])?
                }
                Some(Ref::Input(_)) => {}
                None => return Err(CodegenError::Internal("reduction without argument".into())),
            }
        }
        for &o in outputs {
            if let Some(k) = self.plan.outputs[o].node {
                roots.push(k);
            }
        }
        let (elem, mut row_nodes, row_inputs) = self.needs(&roots, &vals.stashed);
        row_nodes.extend(row_roots);
        self.load_row_values(b, offs, vals, &row_nodes, &row_inputs)?;
        let to_stash: Vec<(usize, usize)> = self
            .stash
            .iter()
            .filter(|(k, _)| elem[**k] && !vals.stashed.contains(k))
            .map(|(&k, &o)| (k, o))
            .collect();

        let info: Vec<ReduceInfo> = reduces
            .iter()
            .map(|&r| match self.plan.nodes[r].op {
                Op::Reduce { op, .. } => Ok((r, op, self.plan.nodes[r].dtype)),
                _ => Err(CodegenError::Internal("not a reduction".into())),
            })
            .collect::<Result<_, _>>()?;
        // Accumulators: ROW_UNROLL vectors and one scalar per reduction.
        let mut vector_acc: Vec<Vec<Variable>> = Vec::new();
        let mut scalar_acc: Vec<Vec<Variable>> = Vec::new();
        for &(_, op, d) in &info {
            if let Some(t) = self.vector {
                let width = Width::Vector(t);
                let init = ops::reduce_init(b, width, op, d)?;
                let ty = width.ty(d)?;
                vector_acc.push(
                    (0..ROW_UNROLL)
                        .map(|_| {
                            let var = b.declare_var(ty);
                            b.def_var(var, init);
                            var
                        })
                        .collect(),
                );
            }
            let init = ops::reduce_init(b, Width::Scalar, op, d)?;
            let var = b.declare_var(scalar_type(d));
            b.def_var(var, init);
            scalar_acc.push(vec![var]);
        }
        let mut staged = self.plan_staging(b, &elem, vals);
        // A staged node the pass stashes goes straight into its output; a `sum` of it is
        // accumulated by the routine's summing twin (softmax's exp-and-sum in one call).
        for s in &mut staged {
            s.out = to_stash.iter().find(|&&(k, _)| k == s.node).map(|&(_, o)| o);
            let (Some(routine), Some(r)) = (self.sum_routine(s.node), self.summed_by(s.node))
            else {
                continue;
            };
            let Some(ri) = info.iter().position(|&(n, _, _)| n == r) else { continue };
            let (Some(vector), Some(scalar)) = (vector_acc.get(ri), scalar_acc.get(ri)) else {
                continue;
            };
            s.shifted = match self.plan.nodes[s.node].args.first() {
                Some(&Ref::Node(d)) if !self.is_row_node(d) => {
                    match (&self.plan.nodes[d].op, self.plan.nodes[d].args.as_slice()) {
                        (Op::Binary(BinaryOp::Sub), &[Ref::Input(j), Ref::Node(m)])
                            if self.is_row_node(m)
                                && self.plain_f32_input(j)
                                && self.plan.nodes[m].dtype == DType::F32 =>
                        {
                            Some((j, m))
                        }
                        _ => None,
                    }
                }
                _ => None,
            };
            let data = StackSlotData::new(StackSlotKind::ExplicitSlot, ACC_SLOT, 4);
            let acc = b.create_sized_stack_slot(data);
            s.sum = Some(FusedSum {
                routine,
                reduce: r,
                vector: vector.clone(),
                scalar: scalar[0],
                acc,
            });
        }
        // Nothing left for the pass's own loops on the staged blocks?
        let body_idle = outputs.is_empty()
            && info.iter().all(|&(r, _, _)| {
                staged.iter().any(|s| s.sum.as_ref().is_some_and(|f| f.reduce == r))
            })
            && to_stash.iter().all(|&(k, _)| staged.iter().any(|s| s.node == k && s.out.is_some()));
        let state: &RowVals = vals;
        let job = Pass { reduces: &info, outputs, to_stash: &to_stash };
        let axes = self.reduced_outer.clone();
        let mut step =
            |b: &mut FunctionBuilder, st: &RowVals, at: At<'_>, u: usize, memo: &mut Memo| {
                let acc = if at.width == Width::Scalar { &scalar_acc } else { &vector_acc };
                self.step(b, st, &job, acc, u, at, memo)
            };
        let wide_fold = if staged.is_empty() && to_stash.is_empty() && outputs.is_empty() {
            self.wide_folds(state, &info)
        } else {
            None
        };
        let only_outputs = staged.is_empty() && info.is_empty() && to_stash.is_empty();
        let wide_scale = if only_outputs { self.wide_scale_output(state, outputs) } else { None };
        let wide_shift_scale = if only_outputs && wide_scale.is_none() {
            self.wide_shift_scale_output(state, outputs)
        } else {
            None
        };
        let acc_slot = if wide_fold.is_some() {
            let data =
                StackSlotData::new(StackSlotKind::ExplicitSlot, ACC_SLOT * info.len() as u32, 4);
            Some(b.create_sized_stack_slot(data))
        } else {
            None
        };
        self.reduced_loops(b, &axes, offs, &mut |b, offs| {
            if let (Some(folds), Some(slot)) = (&wide_fold, acc_slot) {
                let mut wide = |b: &mut FunctionBuilder| {
                    for (ri, fold) in folds.iter().enumerate() {
                        let j = fold.input;
                        let base = ri as i32 * ACC_SLOT as i32;
                        let (vector, scalar) = (&vector_acc[ri], scalar_acc[ri][0]);
                        for (u, &var) in vector.iter().enumerate() {
                            let v = b.use_var(var);
                            b.ins().stack_store(self.ptr_ty, v, slot, base + (u * 16) as i32);
                        }
                        let v = b.use_var(scalar);
                        b.ins().stack_store(self.ptr_ty, v, slot, base + ACC_SCALAR);
                        let src = self.address(b, j, offs[j], Some(lo), DType::F32);
                        let n = b.ins().isub(hi, lo);
                        let acc = b.ins().stack_addr(self.ptr_ty, slot, base);
                        match fold.squares {
                            None => b.ins().call(fold.routine, &[src, n, acc]),
                            Some(shift) => {
                                let m = self.scalar_arg(b, shift);
                                b.ins().call(fold.routine, &[src, n, acc, m])
                            }
                        };
                        for (u, &var) in vector.iter().enumerate() {
                            let off = base + (u * 16) as i32;
                            let v = b.ins().stack_load(self.ptr_ty, types::F32X4, slot, off);
                            b.def_var(var, v);
                        }
                        let v =
                            b.ins().stack_load(self.ptr_ty, types::F32, slot, base + ACC_SCALAR);
                        b.def_var(scalar, v);
                    }
                    Ok(())
                };
                let mut inline = |b: &mut FunctionBuilder| {
                    self.steps_over(b, offs, lo, hi, true, &mut |b, at, u, memo| {
                        step(b, state, at, u, memo)
                    })
                };
                self.wide_or_inline(b, lo, hi, &mut wide, &mut inline)
            } else if let Some(scale) = &wide_scale {
                let mut wide = |b: &mut FunctionBuilder| {
                    let p = self.plan.inputs.len() + scale.output;
                    let at = self.address(b, p, offs[p], Some(lo), DType::F32);
                    let n = b.ins().isub(hi, lo);
                    if let Some(c) = scale.pre {
                        // Rarely taken: a divisor outside [2^-126, 2^126].
                        let one = b.ins().f32const(1.0);
                        let scaled = b.ins().fcmp(FloatCC::NotEqual, c, one);
                        let (pre, join) = (b.create_block(), b.create_block());
                        b.ins().brif(scaled, pre, &[], join, &[]);
                        b.switch_to_block(pre);
                        b.seal_block(pre);
                        let c = self.scalar_arg(b, Some(c));
                        b.ins().call(scale.routine, &[at, at, n, c]);
                        b.ins().jump(join, &[]);
                        b.switch_to_block(join);
                        b.seal_block(join);
                    }
                    let s = self.scalar_arg(b, Some(scale.factor));
                    b.ins().call(scale.routine, &[at, at, n, s]);
                    Ok(())
                };
                let mut inline = |b: &mut FunctionBuilder| {
                    self.steps_over(b, offs, lo, hi, false, &mut |b, at, u, memo| {
                        step(b, state, at, u, memo)
                    })
                };
                self.wide_or_inline(b, lo, hi, &mut wide, &mut inline)
            } else if let Some(o) = &wide_shift_scale {
                let mut wide = |b: &mut FunctionBuilder| {
                    let p = self.plan.inputs.len() + o.output;
                    let dst = self.address(b, p, offs[p], Some(lo), DType::F32);
                    let src = self.address(b, o.input, offs[o.input], Some(lo), DType::F32);
                    let n = b.ins().isub(hi, lo);
                    let m = self.scalar_arg(b, o.shift);
                    let s = self.scalar_arg(b, Some(o.factor));
                    b.ins().call(o.routine, &[src, dst, n, m, s]);
                    Ok(())
                };
                let mut inline = |b: &mut FunctionBuilder| {
                    self.steps_over(b, offs, lo, hi, false, &mut |b, at, u, memo| {
                        step(b, state, at, u, memo)
                    })
                };
                self.wide_or_inline(b, lo, hi, &mut wide, &mut inline)
            } else if staged.is_empty() {
                let reduces = !info.is_empty();
                self.steps_over(b, offs, lo, hi, reduces, &mut |b, at, u, memo| {
                    step(b, state, at, u, memo)
                })
            } else {
                let reduces = !info.is_empty();
                self.staged_steps(b, state, &staged, offs, lo, hi, body_idle, reduces, &mut step)
            }
        })?;
        for (ri, &(r, op, d)) in info.iter().enumerate() {
            let mut s = b.use_var(scalar_acc[ri][0]);
            if let (Some(t), Some(accs)) = (self.vector, vector_acc.get(ri)) {
                let mut v = b.use_var(accs[0]);
                for &var in &accs[1..] {
                    let w = b.use_var(var);
                    v = ops::reduce_combine(b, op, d, v, w);
                }
                let mut folded = b.ins().extractlane(v, 0u8);
                for lane in 1..lanes(t) {
                    let x = b.ins().extractlane(v, lane as u8);
                    folded = ops::reduce_combine(b, op, d, folded, x);
                }
                s = ops::reduce_combine(b, op, d, folded, s);
            }
            if op == ReduceOp::Mean {
                let inner = b.ins().isub(hi, lo);
                let count = b.ins().imul(inner, self.reduced_outer_count);
                let n = b.ins().fcvt_from_sint(scalar_type(d), count);
                s = b.ins().fdiv(s, n);
            }
            vals.node_scalar.insert(r, self.pin(b, s));
        }
        vals.stashed.extend(to_stash.iter().map(|&(k, _)| k));
        Ok(())
    }

    /// One step (one vector or one scalar) of a pass: fold the reductions' arguments into
    /// accumulator slot `slot`, stash what this pass stashes, store the outputs.
    #[allow(clippy::too_many_arguments)]
    fn step(
        &self,
        b: &mut FunctionBuilder,
        vals: &RowVals,
        job: &Pass<'_>,
        acc: &[Vec<Variable>],
        slot: usize,
        at: At<'_>,
        memo: &mut Memo,
    ) -> Result<(), CodegenError> {
        // Per unrolled step, the memo holds this step's values only.
        memo.clear();
        for (ri, &(r, op, d)) in job.reduces.iter().enumerate() {
            if vals.summed.contains(&r) {
                continue;
            }
            let x = match self.plan.nodes[r].args.first() {
                Some(&a) => self.eval_ref(b, vals, a, at, memo)?,
                None => return Err(CodegenError::Internal("reduction without argument".into())),
            };
            let a = b.use_var(acc[ri][slot]);
            let next = ops::reduce_combine(b, op, d, a, x);
            b.def_var(acc[ri][slot], next);
        }
        // Evaluate everything before storing: a stashed value is read back from an output
        // buffer that this step overwrites.
        let mut stores = Vec::new();
        for &(k, o) in job.to_stash {
            if vals.written.contains(&k) {
                continue;
            }
            stores.push((o, self.eval_elem(b, vals, k, at, memo)?));
        }
        for &o in job.outputs {
            if let Some(k) = self.plan.outputs[o].node {
                stores.push((o, self.eval_elem(b, vals, k, at, memo)?));
            }
        }
        for (o, v) in stores {
            self.store_output(b, o, v, at);
        }
        Ok(())
    }
}

impl Emitter<'_> {
    /// A pass of only f32 `max`, `sum` and `mean` reductions of plain inputs (softmax's
    /// first, layernorm's first, a full `sum`) or of their squares, shifted by a row value or
    /// not (layernorm's variance, `mean((x - mu)·(x - mu))`; RMSNorm's `mean(x·x)`): per
    /// reduction, the running max, sum or sum of squares routine and its input.
    fn wide_folds(&self, vals: &RowVals, info: &[ReduceInfo]) -> Option<Vec<WideFold>> {
        if self.vector != Some(DType::F32) || info.is_empty() {
            return None;
        }
        info.iter()
            .map(|&(r, op, d)| {
                let arg = *self.plan.nodes[r].args.first()?;
                if d != DType::F32 {
                    return None;
                }
                let (helper, input, squares) = match (op, arg) {
                    (ReduceOp::Max, Ref::Input(j)) => (Helper::Max, j, None),
                    (ReduceOp::Sum | ReduceOp::Mean, Ref::Input(j)) => (Helper::Add, j, None),
                    (ReduceOp::Sum | ReduceOp::Mean, Ref::Node(k)) => {
                        let node = &self.plan.nodes[k];
                        let (Op::Binary(BinaryOp::Mul), [a, b]) = (&node.op, &node.args[..]) else {
                            return None;
                        };
                        if a != b || node.dtype != DType::F32 {
                            return None;
                        }
                        let (j, shift) = self.shifted_input(vals, *a)?;
                        (Helper::AddSquares, j, Some(shift))
                    }
                    _ => return None,
                };
                if !self.plain_f32_input(input) {
                    return None;
                }
                let routine = *self.helper_refs.get(&helper)?;
                Some(WideFold { routine, input, squares })
            })
            .collect()
    }

    /// `a` as an f32 plain input `x`, or as `x - m` with `m` an f32 row value: the input and
    /// `m`'s value.
    fn shifted_input(&self, vals: &RowVals, a: Ref) -> Option<(usize, Option<Value>)> {
        match a {
            Ref::Input(j) => self.plain_f32_input(j).then_some((j, None)),
            Ref::Node(s) => {
                let node = &self.plan.nodes[s];
                let (Op::Binary(BinaryOp::Sub), [Ref::Input(j), Ref::Node(m)]) =
                    (&node.op, &node.args[..])
                else {
                    return None;
                };
                let f32_row = self.is_row_node(*m) && self.plan.nodes[*m].dtype == DType::F32;
                if node.dtype != DType::F32 || !f32_row || !self.plain_f32_input(*j) {
                    return None;
                }
                Some((*j, Some(*vals.node_scalar.get(m)?)))
            }
        }
    }

    /// A pass storing one f32 output `(x - m) · s` or `x · s`, `x` a plain input and `m`, `s`
    /// f32 row values (layernorm's last pass): the shifting and scaling routine's operands.
    fn wide_shift_scale_output(&self, vals: &RowVals, outputs: &[usize]) -> Option<ShiftScale> {
        let routine = *self.helper_refs.get(&Helper::ShiftScale)?;
        let &[output] = outputs else { return None };
        let out = &self.plan.outputs[output];
        let node = &self.plan.nodes[out.node?];
        if self.vector != Some(DType::F32) || out.dtype != DType::F32 || node.dtype != DType::F32 {
            return None;
        }
        let (Op::Binary(BinaryOp::Mul), [a, Ref::Node(r)]) = (&node.op, &node.args[..]) else {
            return None;
        };
        if !self.is_row_node(*r) || self.plan.nodes[*r].dtype != DType::F32 {
            return None;
        }
        let factor = *vals.node_scalar.get(r)?;
        let (input, shift) = self.shifted_input(vals, *a)?;
        Some(ShiftScale { routine, input, output, shift, factor })
    }

    /// A pointer to a stack copy of f32 scalar `v`, or a null pointer.
    fn scalar_arg(&self, b: &mut FunctionBuilder, v: Option<Value>) -> Value {
        match v {
            Some(v) => {
                let data = StackSlotData::new(StackSlotKind::ExplicitSlot, 4, 2);
                let slot = b.create_sized_stack_slot(data);
                b.ins().stack_store(self.ptr_ty, v, slot, 0);
                b.ins().stack_addr(self.ptr_ty, slot, 0)
            }
            None => b.ins().iconst(self.ptr_ty, 0),
        }
    }

    /// A pass storing one f32 output, the product of a value stashed in that same output and
    /// a row value (softmax's last: `e · (1/sum)`, `e / sum` with one reciprocal per row): the
    /// scaling routine, the output and the row scalar, as the inline step multiplies them
    /// (the stashed value first).
    fn wide_scale_output(&self, vals: &RowVals, outputs: &[usize]) -> Option<WideScale> {
        let routine = *self.helper_refs.get(&Helper::Scale)?;
        let &[o] = outputs else { return None };
        let out = &self.plan.outputs[o];
        let k = out.node?;
        let node = &self.plan.nodes[k];
        if self.vector != Some(DType::F32) || out.dtype != DType::F32 || node.dtype != DType::F32 {
            return None;
        }
        let (Some(&Ref::Node(e)), Some(&Ref::Node(m))) = (node.args.first(), node.args.get(1))
        else {
            return None;
        };
        if self.stash.get(&e) != Some(&o) || !vals.stashed.contains(&e) || !self.is_row_node(m) {
            return None;
        }
        let scale = match node.op {
            Op::Binary(BinaryOp::Mul) if self.plan.nodes[m].dtype == DType::F32 => {
                WideScale { routine, output: o, pre: None, factor: *vals.node_scalar.get(&m)? }
            }
            Op::Binary(BinaryOp::Div) => {
                let recip = vals.node_recip.get(&m)?;
                WideScale { routine, output: o, pre: Some(recip.c), factor: recip.r }
            }
            _ => return None,
        };
        Some(scale)
    }
}

/// A pass's one output scaled in place by the scaling routine ([`Emitter::wide_scale_output`]).
struct WideScale {
    routine: FuncRef,
    output: usize,
    /// For a division by a row value: `c` of its [`super::RowReciprocal`], by which a row is
    /// scaled first where it is not 1 (so the routine gives the inline code's bits).
    pre: Option<Value>,
    factor: Value,
}

/// A reduction of a pass run by a helper routine ([`Emitter::wide_folds`]).
struct WideFold {
    routine: FuncRef,
    /// The plain input it reads.
    input: usize,
    /// For a sum of squares, the row value subtracted first (if any).
    squares: Option<Option<Value>>,
}

/// A pass's output computed by the shifting and scaling routine.
struct ShiftScale {
    routine: FuncRef,
    input: usize,
    output: usize,
    shift: Option<Value>,
    factor: Value,
}

/// What a pass computes.
struct Pass<'a> {
    reduces: &'a [ReduceInfo],
    outputs: &'a [usize],
    /// (node, output) pairs whose values this pass stores for later passes.
    to_stash: &'a [(usize, usize)],
}
