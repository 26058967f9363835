//! Column reductions: the inner collapsed axis is kept and the reduced axes are outer ones
//! (`sum(x, dims=[0])`, every bias gradient). The inner axis is walked in blocks of 12 vectors,
//! then 4, then single vectors, then scalars; for each block the reduced axes are walked once per
//! reduction level with the accumulators in registers (one vector per column slot), then
//! once more to store elementwise outputs, and the block's row-level outputs (the reductions
//! and what is computed from them) are stored. Every column is accumulated in the same order
//! whatever its block width, so results do not depend on how the inner range is split.

use super::CodegenError;
use super::Width;
use super::{lanes, loop_begin, loop_end, ops, scalar_type, At, Emitter, Memo, RowVals};
use cranelift::codegen::ir::{types, InstBuilder, Value};
use cranelift::frontend::FunctionBuilder;
use tfn_ir::{Op, ReduceOp};

/// Vectors of columns per block: each visit of a reduced position reads this many vectors
/// (three cache lines of f32), amortising the TLB and cache misses of walking the outer axes
/// (measured on a 256 × 1024 column sum: 4 vectors 66 µs, 8 vectors 30 µs, 12 vectors 22 µs;
/// more would spill the 16 vector registers).
const COLUMN_SLOTS: i64 = 12;

impl Emitter<'_> {
    /// The column blocks of the inner range `lo..hi` at kept offsets `offs`.
    pub(super) fn column_blocks(
        &self,
        b: &mut FunctionBuilder,
        offs: &[Value],
        lo: Value,
        hi: Value,
    ) -> Result<(), CodegenError> {
        let j_var = b.declare_var(types::I64);
        b.def_var(j_var, lo);
        let mut shapes: Vec<(i64, Width)> = Vec::new();
        if let Some(t) = self.vector {
            shapes.push((COLUMN_SLOTS, Width::Vector(t)));
            shapes.push((4, Width::Vector(t)));
            shapes.push((1, Width::Vector(t)));
        }
        shapes.push((1, Width::Scalar));
        for (slots, width) in shapes {
            let step = match width {
                Width::Vector(t) => lanes(t),
                Width::Scalar => 1,
            };
            let lp = loop_begin(b, j_var, slots * step, hi);
            self.column_block(b, offs, lp.i, slots as usize, step, width)?;
            loop_end(b, lp);
        }
        Ok(())
    }

    /// One block of `slots` column slots (of `step` lanes each) starting at column `j`.
    fn column_block(
        &self,
        b: &mut FunctionBuilder,
        offs: &[Value],
        j: Value,
        slots: usize,
        step: i64,
        width: Width,
    ) -> Result<(), CodegenError> {
        let mut vals: Vec<RowVals> = vec![RowVals::default(); slots];
        let max_level = self.levels.iter().copied().max().unwrap_or(0);
        for level in 1..=max_level {
            let reduces: Vec<(usize, ReduceOp)> = (0..self.plan.nodes.len())
                .filter(|&k| self.levels[k] == level)
                .filter_map(|k| match self.plan.nodes[k].op {
                    Op::Reduce { op, .. } => Some((k, op)),
                    _ => None,
                })
                .collect();
            if reduces.is_empty() {
                continue;
            }
            let mut acc = Vec::new();
            for &(r, op) in &reduces {
                let d = self.plan.nodes[r].dtype;
                let init = ops::reduce_init(b, width, op, d)?;
                let ty = width.ty(d)?;
                let vars: Vec<_> = (0..slots)
                    .map(|_| {
                        let var = b.declare_var(ty);
                        b.def_var(var, init);
                        var
                    })
                    .collect();
                acc.push(vars);
            }
            let state: &[RowVals] = &vals;
            let axes = self.reduced_outer.clone();
            self.reduced_loops(b, &axes, offs, &mut |b, offs| {
                for (u, vals_u) in state.iter().enumerate() {
                    let mut memo = Memo::new();
                    for (ri, &(r, op)) in reduces.iter().enumerate() {
                        let Some(&arg) = self.plan.nodes[r].args.first() else {
                            return Err(CodegenError::Internal(
                                "reduction without argument".into(),
                            ));
                        };
                        let x = self.eval_ref(
                            b,
                            vals_u,
                            arg,
                            at_slot(offs, j, u, step, width),
                            &mut memo,
                        )?;
                        let a = b.use_var(acc[ri][u]);
                        let d = self.plan.nodes[r].dtype;
                        let next = ops::reduce_combine(b, op, d, a, x);
                        b.def_var(acc[ri][u], next);
                    }
                }
                Ok(())
            })?;
            for (ri, &(r, op)) in reduces.iter().enumerate() {
                let d = self.plan.nodes[r].dtype;
                let count = if op == ReduceOp::Mean {
                    let n = b.ins().fcvt_from_sint(scalar_type(d), self.reduced_outer_count);
                    Some(ops::splat(b, width, d, n)?)
                } else {
                    None
                };
                for (u, vals_u) in vals.iter_mut().enumerate() {
                    let mut v = b.use_var(acc[ri][u]);
                    if let Some(n) = count {
                        v = b.ins().fdiv(v, n);
                    }
                    // A vector accumulator's NaN lanes are all ones (`ops::reduce_combine`).
                    if matches!(op, ReduceOp::Max | ReduceOp::Min)
                        && d.is_float()
                        && matches!(width, Width::Vector(_))
                    {
                        v = ops::default_nan(b, v);
                    }
                    let v = self.pin(b, v);
                    match width {
                        Width::Scalar => vals_u.node_scalar.insert(r, v),
                        Width::Vector(_) => vals_u.node_splat.insert(r, v),
                    };
                }
            }
        }
        // Outputs spanning the reduced axes (elementwise), then those constant along them.
        let spans = |o: usize| {
            let full = &self.plan.outputs[o].full;
            self.reduced_outer.iter().any(|&a| full.get(a) == Some(&true))
        };
        let (elem, row): (Vec<usize>, Vec<usize>) = (0..self.plan.outputs.len())
            .filter(|&o| self.plan.outputs[o].node.is_some())
            .partition(|&o| spans(o));
        if !elem.is_empty() {
            let state: &[RowVals] = &vals;
            let axes = self.reduced_outer.clone();
            self.reduced_loops(b, &axes, offs, &mut |b, offs| {
                self.store_outputs(b, state, &elem, &|u| at_slot(offs, j, u, step, width))
            })?;
        }
        self.store_outputs(b, &vals, &row, &|u| at_slot(offs, j, u, step, width))
    }

    /// Evaluates outputs `outs` for every slot, then stores them.
    fn store_outputs<'a>(
        &self,
        b: &mut FunctionBuilder,
        vals: &[RowVals],
        outs: &[usize],
        at: &dyn Fn(usize) -> At<'a>,
    ) -> Result<(), CodegenError> {
        let mut stores = Vec::new();
        for (u, vals_u) in vals.iter().enumerate() {
            let mut memo = Memo::new();
            for &o in outs {
                if let Some(k) = self.plan.outputs[o].node {
                    stores.push((o, u, self.eval_elem(b, vals_u, k, at(u), &mut memo)?));
                }
            }
        }
        for (o, u, v) in stores {
            self.store_output(b, o, v, at(u));
        }
        Ok(())
    }
}

/// The position of column slot `u` of a block starting at column `j`.
fn at_slot(offs: &[Value], j: Value, u: usize, step: i64, width: Width) -> At<'_> {
    At { offs, i: j, delta: u as i64 * step, width }
}
