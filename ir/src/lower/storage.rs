//! Lowering of computing ops on storage dtypes (`crate::storage`): the operands are widened
//! to the compute dtype with a `cast`, the op runs there, and its result is cast back (unless
//! it is a `bool` or an index: comparisons, predicates, `argmax`/`argmin`).
//!
//! **Excess precision.** The cast back is the value's storage-dtype *name*, not necessarily
//! where it is next read: lowering remembers, per function body, the compute-dtype value
//! behind each storage value it computed ([`Lowerer::carried`]). A later op reads that wide
//! value instead of widening the rounded one, so within a function an `f16`/`bf16` value is
//! rounded once — where it leaves the function (an output, a `return` from an inlined
//! function) or meets an explicit `cast` — and intermediate roundings vanish. Data-movement
//! ops (`where`, shape ops, indexed reads) move a carried value in its compute dtype. For
//! `i8`/`u8` the semantics stay NumPy's per-op wrapping: a wide `i32` value is read only by
//! ops whose low 8 result bits depend only on the low 8 bits of their operands
//! ([`reads_wide_int`]: `+ - ·`, negation, the bitwise ops but shifts, sums and products),
//! where wrapping once at the end *is* wrapping after every op; any other reader gets the
//! wrapped value.

use super::call::Val;
use super::instantiate::Lowerer;
use crate::dtype::DType;
use crate::graph::{TensorType, ValueId};
use crate::op::{Op, ReduceOp};
use crate::span::Span;
use crate::storage;

/// Whether `op` moves its data operands without computing on them, so a carried value passes
/// through in its compute dtype.
fn moves_data(op: &Op) -> bool {
    match op {
        Op::Where
        | Op::Reshape
        | Op::Transpose { .. }
        | Op::BroadcastTo
        | Op::Concat { .. }
        | Op::Slice { .. } => true,
        Op::Index { kind, .. } => kind.is_read(),
        Op::Param(_)
        | Op::Const(_)
        | Op::Unary(_)
        | Op::Binary(_)
        | Op::MulAdd
        | Op::Cast(_)
        | Op::Reduce { .. }
        | Op::ArgMax { .. }
        | Op::ArgMin { .. }
        | Op::Iota { .. }
        | Op::Scan { .. }
        | Op::CumprodGrad { .. }
        | Op::MatMul
        | Op::Full { .. }
        | Op::Random { .. }
        | Op::Extern { .. }
        | Op::Window { .. } => false,
    }
}

/// Integer ops that commute with wrapping to 8 bits: the low 8 bits of the result depend only
/// on the low 8 bits of the data operands (ring operations modulo 2^8 and bitwise logic), so
/// they may read a wide `i32` value of an `i8`/`u8` computation.
pub(crate) fn reads_wide_int(op: &Op) -> bool {
    match op {
        Op::Unary(u) => u.wraps_to_8_bits(),
        Op::Binary(b) => b.wraps_to_8_bits(),
        Op::Reduce { op, .. } => match op {
            ReduceOp::Sum | ReduceOp::Prod => true,
            ReduceOp::Mean | ReduceOp::Max | ReduceOp::Min => false,
        },
        Op::Scan { .. } | Op::MatMul => true,
        Op::Index { kind, .. } => !kind.is_read(),
        Op::Param(_)
        | Op::Const(_)
        | Op::Where
        | Op::MulAdd
        | Op::Cast(_)
        | Op::ArgMax { .. }
        | Op::ArgMin { .. }
        | Op::Iota { .. }
        | Op::CumprodGrad { .. }
        | Op::Reshape
        | Op::Transpose { .. }
        | Op::BroadcastTo
        | Op::Concat { .. }
        | Op::Slice { .. }
        | Op::Full { .. }
        | Op::Random { .. }
        | Op::Extern { .. }
        | Op::Window { .. } => false,
    }
}

impl Lowerer<'_> {
    /// `Some(result)` when `op` computes on storage-dtype data operands, or moves carried
    /// ones, and has been emitted in the compute dtype; `None` when the op takes its operands
    /// as they are.
    pub(super) fn emit_widened(
        &mut self,
        op: &Op,
        inputs: &[ValueId],
        span: Option<Span>,
    ) -> Result<Option<ValueId>, String> {
        if let Some(out) = self.emit_prod_in_f64(op, inputs, span)? {
            return Ok(Some(out));
        }
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
        if !dtype.is_storage() || data.iter().any(|&i| self.ty(inputs[i]).dtype != dtype) {
            return Ok(None);
        }
        let computes = storage::needs_widening(op, dtype);
        let moves = moves_data(op) && data.iter().any(|&i| self.carried.contains_key(&inputs[i]));
        if !computes && !moves {
            return Ok(None);
        }
        let reads_wide = moves || dtype.is_float() || reads_wide_int(op);
        let mut wide = inputs.to_vec();
        for &i in &data {
            wide[i] = match self.carried.get(&inputs[i]) {
                Some(&w) if reads_wide => w,
                _ => self.emit_inferred(Op::Cast(dtype.compute()), vec![inputs[i]], span)?,
            };
        }
        let out = self.emit_inferred(op.clone(), wide, span)?;
        if moves || storage::narrows_result(op) {
            let narrow = self.emit_inferred(Op::Cast(dtype), vec![out], span)?;
            self.carried.insert(narrow, out);
            return Ok(Some(narrow));
        }
        Ok(Some(out))
    }

    /// A `prod` of `f32`/`f16`/`bf16` values, computed in `f64` and rounded once:
    /// `cast(prod(cast(x, f64)), dtype)`. A product's partial results overflow and underflow
    /// where the whole does not (the JIT keeps 32 partial products per row); in `f64` they
    /// cannot for any realistic length, so both backends give the product rounded once (the
    /// interpreter's in-order `f64` fold, bit for bit, on the interpreter).
    fn emit_prod_in_f64(
        &mut self,
        op: &Op,
        inputs: &[ValueId],
        span: Option<Span>,
    ) -> Result<Option<ValueId>, String> {
        let (Op::Reduce { op: ReduceOp::Prod, .. }, [x]) = (op, inputs) else {
            return Ok(None);
        };
        let dtype = self.ty(*x).dtype;
        if !matches!(dtype, DType::F32 | DType::F16 | DType::BF16) {
            return Ok(None);
        }
        // A carried 16-bit value is read wide (its f32 value is exact in f64 too).
        let source = self.carried.get(x).copied().unwrap_or(*x);
        let wide = self.emit_inferred(Op::Cast(DType::F64), vec![source], span)?;
        let product = self.emit_inferred(op.clone(), vec![wide], span)?;
        Ok(Some(self.emit_inferred(Op::Cast(dtype), vec![product], span)?))
    }

    /// A data-movement op of one operand `v` with result type `ty` (`reshape`, `broadcast_to`
    /// emitted with known types): a carried `v` moves in its compute dtype and stays carried.
    pub(super) fn emit_moved(
        &mut self,
        op: Op,
        v: ValueId,
        ty: TensorType,
        span: Option<Span>,
    ) -> ValueId {
        let Some(&w) = self.carried.get(&v) else {
            return self.emit(op, vec![v], ty, span);
        };
        let wide_ty = TensorType { dtype: ty.dtype.compute(), shape: ty.shape.clone() };
        let out = self.emit(op, vec![w], wide_ty, span);
        let narrow = self.emit(Op::Cast(ty.dtype), vec![out], ty, span);
        self.carried.insert(narrow, out);
        narrow
    }

    /// An explicit `cast(x, dtype)` to `x`'s own dtype: `x` itself, or — when `x` is a carried
    /// storage value — a new rounding of its wide value that is not carried.
    pub(super) fn same_dtype_cast(&mut self, x: ValueId, span: Option<Span>) -> ValueId {
        match self.carried.get(&x) {
            Some(&w) => {
                let ty = self.ty(x);
                self.emit(Op::Cast(ty.dtype), vec![w], ty, span)
            }
            None => x,
        }
    }

    /// A result leaving an inlined function, rounded ([`Self::leave_function`]).
    pub(super) fn leave(&mut self, v: Val, span: Option<Span>) -> Val {
        match v {
            Val::Tensor(t) => Val::Tensor(self.leave_function(t, span)),
            Val::List(ts) => {
                Val::List(ts.into_iter().map(|t| self.leave_function(t, span)).collect())
            }
            Val::Tuple(vs) => Val::Tuple(vs.into_iter().map(|v| self.leave(v, span)).collect()),
            Val::Index(i) => Val::Index(i),
            v @ (Val::Attr(_) | Val::Size(_) | Val::SizeList(_) | Val::SizeFloat(_)) => v,
        }
    }

    /// A value leaving an inlined function: rounded (not carried) in the caller. A result
    /// that is the caller's own carried value (a parameter returned as it is) becomes a new
    /// value, an identity `cast` of it, so the caller does not read it wide.
    fn leave_function(&mut self, v: ValueId, span: Option<Span>) -> ValueId {
        if !self.carried.contains_key(&v) {
            return v;
        }
        let ty: TensorType = self.ty(v);
        let dtype: DType = ty.dtype;
        self.emit(Op::Cast(dtype), vec![v], ty, span)
    }
}
