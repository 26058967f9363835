//! Storage dtypes: `f16`, `bf16`, `i8`, `u8`.
//!
//! They are loaded, stored, cast and moved by every shape op, but no op computes in them:
//! lowering (`ir::lower`, `lower/storage.rs`) widens the operands of every computing op
//! (arithmetic, comparisons, reductions, scans, `matmul`, `argmax`/`argmin`, the accumulating
//! indexed ops) to the operand's [`DType::compute`] dtype (`f32` for the floats, `i32` for the
//! integers) with a `cast`, and casts the result back to the storage dtype. Within a function
//! body a later op reads the wide value rather than the rounded one (excess precision: an
//! `f16`/`bf16` value is rounded once, at an output, a function return or an explicit
//! `cast`); `i8`/`u8` values are read wide only by ops that commute with wrapping, so integer
//! results are NumPy's per-op wrapping. Inside a fused kernel the widened values live in
//! `f32`/`i32` lanes. Every layer below lowering therefore sees storage dtypes only in
//! `param`, `const`, `cast`, `where`, the shape ops, `full`, the indexed reads and `extern`
//! ([`Op::operand_dtypes`]).
//!
//! Casts (`ir::interp::cast`, the JIT's `codegen/storage.rs`):
//! - to `f16`/`bf16`: round to nearest even ([`bits`]); from `f64` rounded once; from
//!   integers and `bool` through `f32` (ml_dtypes' conversion).
//! - to `i8`/`u8`: from floats like every float → integer cast here (Rust `as`): truncate
//!   toward zero, **saturate** at the type's bounds, NaN → 0 (NumPy leaves this undefined; on
//!   x86 it wraps through `int32`); from integers wrap (NumPy); from `bool` 0/1.
//! - from a storage dtype: exact to its compute dtype, then as from that.
//!
//! [`Op::operand_dtypes`]: crate::op::Op::operand_dtypes

pub mod bits;

use crate::dtype::DType;
use crate::op::Op;

/// Whether lowering must widen the storage operands of `op` (whose data operands have dtype
/// `dtype`): the op computes, and the IR's op table does not take `dtype` for it.
pub fn needs_widening(op: &Op, dtype: DType) -> bool {
    dtype.is_storage() && !op.operand_dtypes().contains(dtype)
}

/// Whether the result of `op` on widened operands goes back to the storage dtype: ops whose
/// result has the operand's dtype (not comparisons, predicates, `argmax`).
pub fn narrows_result(op: &Op) -> bool {
    match op {
        Op::Unary(u) => !u.is_predicate(),
        Op::Binary(b) => !b.is_comparison(),
        Op::ArgMax { .. } | Op::ArgMin { .. } => false,
        Op::Reduce { .. }
        | Op::MatMul
        | Op::Index { .. }
        | Op::Scan { .. }
        | Op::CumprodGrad { .. }
        | Op::MulAdd
        | Op::Window { .. }
        | Op::Iota { .. } => true,
        Op::Param(_)
        | Op::Const(_)
        | Op::Where
        | Op::Cast(_)
        | Op::Reshape
        | Op::Transpose { .. }
        | Op::BroadcastTo
        | Op::Concat { .. }
        | Op::Slice { .. }
        | Op::Full { .. }
        | Op::Random { .. }
        | Op::Extern { .. } => true,
    }
}

/// Whether the finite `f` rounds to infinity in `dtype` (`f16` or `bf16`).
pub fn overflows_half(f: f64, dtype: DType) -> bool {
    let h = match dtype {
        DType::F16 => bits::f16_to_f32(bits::f64_to_f16(f)),
        _ => bits::bf16_to_f32(bits::f64_to_bf16(f)),
    };
    h.is_infinite()
}
