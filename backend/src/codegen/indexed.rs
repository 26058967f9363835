//! Indexed reads (`gather`, `index_select`) inside loop kernels: the read of `x` is an
//! address computed in the loop, so an embedding lookup and whatever consumes it are one
//! kernel.
//!
//! A read node has two operands ([`IndexedRole`]): the *source* (`x`'s buffer with strides
//! that skip the indexed axis) and the *index*, read like a contiguous operand over the
//! node's axes. Per step, each index value is widened to `i64`, wrapped if negative and
//! checked against the axis size; the source offset then moves by `index × stride(axis)`.
//! - An index constant along the inner axis (an embedding: one token per row) is one scalar
//!   per step (per row when it is a row value), and the source is read with the same vector
//!   loads as any operand.
//! - An index varying along the inner axis (`gather` along the last axis) is loaded lane by
//!   lane, and each lane's element with a scalar load, inserted into the vector (SSE has no
//!   gather instruction).
//!
//! # Errors: the kernel's error record
//!
//! With indexed reads, the kernel ABI has three more kinds of slot after `begin`/`end`: a
//! pointer to the call's error record (`[i64; 4]`: status, source slot, index value, axis
//! size) and per source its axis size and stride. An index out of range stores the record
//! (status 1) and reads slot 0 instead — never outside `x` — and the executor turns a set
//! record into a typed error naming the op, the index and the size: the first bad index in
//! row-major order, found again on the host, so neither the loop order nor the thread count
//! (each thread has its own record) changes which one (`executor::loop_call::ErrorRecord`). A record, not an early
//! exit: every kernel keeps straight-line loops, and any later check (another op, another
//! kind of failure) can use the same record with another status.

use super::ops::{self, lanes, scalar_type, Width};
use super::{mem, At, Emitter, Memo, RowVals};
use crate::error::CodegenError;
use crate::plan::{IndexedRole, Ref};
use cranelift::codegen::ir::{condcodes::IntCC, types, InstBuilder, Value};
use cranelift::frontend::FunctionBuilder;
use tfn_ir::DType;

/// The error record's status for an index out of range.
pub(crate) use crate::abi::STATUS_INDEX;

impl Emitter<'_> {
    /// The plan's source and index operands of read node `k`, and the source's slot.
    fn read_operands(&self, k: usize) -> Result<(usize, usize, usize), CodegenError> {
        let node = &self.plan.nodes[k];
        let (Some(&Ref::Input(s)), Some(&Ref::Input(i))) = (node.args.first(), node.args.get(1))
        else {
            return Err(CodegenError::Internal(format!("indexed read {k} without operands")));
        };
        match self.plan.inputs.get(s).and_then(|o| o.indexed.as_ref()) {
            Some(IndexedRole::Source { slot, .. }) => Ok((s, i, *slot)),
            _ => Err(CodegenError::Internal(format!("indexed read {k}: bad source"))),
        }
    }

    /// The slot named by index value `raw` (of the index's dtype) on source `q`'s axis:
    /// wrapped when negative; out of range, the error record is written and 0 returned.
    fn resolve_index(&self, b: &mut FunctionBuilder, q: usize, raw: Value, d: DType) -> Value {
        let i = if d == DType::I32 { b.ins().sextend(types::I64, raw) } else { raw };
        let (n, _, _) = self.index_slots[q];
        let neg = b.ins().icmp_imm_s(IntCC::SignedLessThan, i, 0);
        let wrapped = b.ins().iadd(i, n);
        let r = b.ins().select(neg, wrapped, i);
        // Unsigned: a still negative index is huge.
        let bad = b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, r, n);
        let cold = b.create_block();
        let cont = b.create_block();
        b.set_cold_block(cold);
        b.ins().brif(bad, cold, &[], cont, &[]);
        b.switch_to_block(cold);
        let status = b.ins().iconst(types::I64, STATUS_INDEX);
        let slot = b.ins().iconst(types::I64, q as i64);
        let err = self.err_record;
        b.ins().store(mem(), status, err, 0);
        b.ins().store(mem(), slot, err, 8);
        b.ins().store(mem(), i, err, 16);
        b.ins().store(mem(), n, err, 24);
        b.ins().jump(cont, &[]);
        b.switch_to_block(cont);
        let zero = b.ins().iconst(types::I64, 0);
        b.ins().select(bad, zero, r)
    }

    /// Source offset of slot `idx`: `off + idx × stride(axis)`.
    fn source_offset(&self, b: &mut FunctionBuilder, q: usize, off: Value, idx: Value) -> Value {
        let (_, stride, _) = self.index_slots[q];
        let step = b.ins().imul(idx, stride);
        b.ins().iadd(off, step)
    }

    /// Read node `k` at one element step.
    pub(super) fn indexed_read(
        &self,
        b: &mut FunctionBuilder,
        vals: &RowVals,
        k: usize,
        at: At<'_>,
        memo: &mut Memo,
    ) -> Result<Value, CodegenError> {
        if let Some(v) = memo.get(&Ref::Node(k)) {
            return Ok(*v);
        }
        let (sj, ij, q) = self.read_operands(k)?;
        let dtype = self.plan.nodes[k].dtype;
        let source_full = self.inner_full(&self.plan.inputs[sj].full);
        let index = &self.plan.inputs[ij];
        let id = index.dtype;
        let dsize = dtype.size_bytes() as i64;
        let inner_unit = matches!(
            self.plan.inputs[sj].indexed,
            Some(IndexedRole::Source { inner_unit: true, .. })
        );
        let index_full = self.inner_full(&index.full);
        // One index for the whole step (an embedding row).
        let step_index = if index_full {
            None
        } else {
            let raw = match vals.input_scalar.get(&ij) {
                Some(v) if self.is_row_input(ij) => *v,
                _ => {
                    let addr = self.address(b, ij, at.offs[ij], None, id);
                    b.ins().load(scalar_type(id), mem(), addr, 0)
                }
            };
            let slot = self.resolve_index(b, q, raw, id);
            Some(self.source_offset(b, q, at.offs[sj], slot))
        };
        let v = match step_index {
            Some(off) if !source_full => {
                let addr = self.address(b, sj, off, None, dtype);
                let s = super::storage::load(b, Width::Scalar, dtype, addr, 0)?;
                ops::splat(b, at.width, dtype, s)?
            }
            Some(off) if inner_unit => {
                let addr = self.address(b, sj, off, Some(at.i), dtype);
                super::storage::load(b, at.width, dtype, addr, (at.delta * dsize) as i32)?
            }
            _ => {
                // Lane by lane: per-lane indices, or a source strided along the inner axis.
                let n = match at.width {
                    Width::Scalar => 1,
                    Width::Vector(t) => lanes(t),
                };
                let (_, _, inner) = self.index_slots[q];
                let mut out: Option<Value> = None;
                for l in 0..n {
                    let off = match step_index {
                        Some(off) => off,
                        None => {
                            let iaddr = self.address(b, ij, at.offs[ij], Some(at.i), id);
                            let ioff = ((at.delta + l) * id.size_bytes() as i64) as i32;
                            let raw = b.ins().load(scalar_type(id), mem(), iaddr, ioff);
                            let slot = self.resolve_index(b, q, raw, id);
                            self.source_offset(b, q, at.offs[sj], slot)
                        }
                    };
                    let off = if source_full {
                        let pos = b.ins().iadd_imm_s(at.i, at.delta + l);
                        let step = b.ins().imul(pos, inner);
                        b.ins().iadd(off, step)
                    } else {
                        off
                    };
                    let addr = self.address(b, sj, off, None, dtype);
                    let s = super::storage::load(b, Width::Scalar, dtype, addr, 0)?;
                    out = Some(match (at.width, out) {
                        (Width::Scalar, _) => s,
                        (Width::Vector(_), None) => ops::splat(b, at.width, dtype, s)?,
                        (Width::Vector(_), Some(v)) => b.ins().insertlane(v, s, l as u8),
                    });
                }
                out.ok_or_else(|| CodegenError::Internal("a vector of no lanes".into()))?
            }
        };
        memo.insert(Ref::Node(k), v);
        Ok(v)
    }

    /// Read node `k` as a row value (constant along the inner and reduced axes), a scalar.
    pub(super) fn indexed_read_row(
        &self,
        b: &mut FunctionBuilder,
        offs: &[Value],
        vals: &mut RowVals,
        k: usize,
    ) -> Result<Value, CodegenError> {
        let (sj, ij, q) = self.read_operands(k)?;
        let dtype = self.plan.nodes[k].dtype;
        let id = self.plan.inputs[ij].dtype;
        let raw = self.row_input(b, offs, vals, ij)?;
        let slot = self.resolve_index(b, q, raw, id);
        let off = self.source_offset(b, q, offs[sj], slot);
        let addr = self.address(b, sj, off, None, dtype);
        super::storage::load(b, Width::Scalar, dtype, addr, 0)
    }
}
