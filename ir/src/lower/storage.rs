//! Lowering of computing ops on storage dtypes (`crate::storage`): the operands are widened
//! to the compute dtype with a `cast`, the op runs there, and its result is cast back (unless
//! it is a `bool` or an index: comparisons, predicates, `argmax`).

use super::instantiate::Lowerer;
use crate::graph::ValueId;
use crate::op::Op;
use crate::span::Span;
use crate::storage;

impl Lowerer<'_> {
    /// `Some(result)` when `op` computes on storage-dtype data operands and has been emitted
    /// widened; `None` when the op takes its operands as they are.
    pub(super) fn emit_widened(
        &mut self,
        op: &Op,
        inputs: &[ValueId],
        span: Option<Span>,
    ) -> Result<Option<ValueId>, String> {
        // The data operands: all but `where`'s condition and an indexed op's index.
        let is_data = |i: usize| match op {
            Op::Where => i > 0,
            Op::Index { .. } => i != 1,
            _ => true,
        };
        let data: Vec<usize> = (0..inputs.len()).filter(|&i| is_data(i)).collect();
        let Some(&first) = data.first() else {
            return Ok(None);
        };
        let dtype = self.ty(inputs[first]).dtype;
        // Mixed dtypes are left to `infer`, which names them.
        if !storage::needs_widening(op, dtype)
            || data.iter().any(|&i| self.ty(inputs[i]).dtype != dtype)
        {
            return Ok(None);
        }
        let compute = dtype.compute();
        let mut wide = inputs.to_vec();
        for &i in &data {
            wide[i] = self.emit_inferred(Op::Cast(compute), vec![inputs[i]], span)?;
        }
        let out = self.emit_inferred(op.clone(), wide, span)?;
        if storage::narrows_result(op) {
            return self.emit_inferred(Op::Cast(dtype), vec![out], span).map(Some);
        }
        Ok(Some(out))
    }
}
