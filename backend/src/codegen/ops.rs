//! Cranelift instructions for each elementwise op, on scalars or on 128-bit vectors.
//!
//! A value of dtype `d` is a scalar of [`scalar_type`] in the scalar path, and in the vector
//! path (one lane dtype `T` per kernel) a vector of `T` or, for `bool`, a lane mask (all ones
//! or all zeros) of the same lane width. Scalar `bool`s are `i8` 0/1, as stored in memory.

use super::lane_ops;
use crate::error::CodegenError;
use crate::math::MathFn;
use cranelift::codegen::ir::{
    condcodes::FloatCC, condcodes::IntCC, types, InstBuilder, Type, Value,
};
use cranelift::codegen::ir::{Endianness, MemFlagsData};
use cranelift::frontend::FunctionBuilder;
use tfn_ir::{BinaryOp, DType, Op, ReduceOp, Scalar, UnaryOp};

/// How many elements one value holds: one, or a full 128-bit vector of lane dtype `T`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Width {
    Scalar,
    Vector(DType),
}

pub(crate) fn unsupported<T>(what: impl Into<String>) -> Result<T, CodegenError> {
    Err(CodegenError::Unsupported(what.into()))
}

/// An (op, dtype) pair the op table rules out, or an op `math` computes, reaching the plain
/// instruction emitter: a bug in the caller, not a reason to fall back.
pub(crate) fn not_here<T>(op: impl std::fmt::Display, d: DType) -> Result<T, CodegenError> {
    Err(CodegenError::Internal(format!("`{op}` on {d} reached the instruction emitter")))
}

/// The register type of a scalar of dtype `d` (storage dtypes live in their compute dtype's
/// registers, `storage.rs`).
pub(crate) fn scalar_type(d: DType) -> Type {
    match d {
        DType::Bool => types::I8,
        DType::I8 | DType::U8 => types::I32,
        DType::F16 | DType::BF16 => types::F32,
        DType::I32 => types::I32,
        DType::I64 => types::I64,
        DType::F32 => types::F32,
        DType::F64 => types::F64,
    }
}

/// Lanes per 128-bit vector of lane dtype `t` (a storage dtype's lanes are its compute
/// dtype's).
pub(crate) fn lanes(t: DType) -> i64 {
    match t {
        DType::F32 | DType::I32 | DType::F16 | DType::BF16 | DType::I8 | DType::U8 => 4,
        DType::F64 | DType::I64 => 2,
        DType::Bool => 16,
    }
}

fn mask_type(t: DType) -> Type {
    match t {
        DType::F32 | DType::I32 | DType::F16 | DType::BF16 | DType::I8 | DType::U8 => types::I32X4,
        DType::F64 | DType::I64 => types::I64X2,
        DType::Bool => types::I8X16,
    }
}

impl Width {
    /// The Cranelift type of a value of dtype `d` at this width.
    pub fn ty(self, d: DType) -> Result<Type, CodegenError> {
        match self {
            Width::Scalar => Ok(scalar_type(d)),
            Width::Vector(t) if d.compute() == t.compute() && d != DType::Bool => {
                Ok(match t.compute() {
                    DType::F32 => types::F32X4,
                    DType::F64 => types::F64X2,
                    DType::I32 => types::I32X4,
                    DType::I64 => types::I64X2,
                    _ => return unsupported("bool vectors"),
                })
            }
            Width::Vector(t) if d == DType::Bool => Ok(mask_type(t)),
            Width::Vector(t) => unsupported(format!("{d} value in a {t} vector kernel")),
        }
    }
}

/// Splats a scalar to `width` (no-op for scalars). Scalar bools (0/1) become lane masks.
pub(crate) fn splat(
    b: &mut FunctionBuilder,
    width: Width,
    d: DType,
    x: Value,
) -> Result<Value, CodegenError> {
    match width {
        Width::Scalar => Ok(x),
        Width::Vector(t) if d == DType::Bool => {
            let lane = mask_type(t).lane_type();
            let wide = if lane == types::I8 { x } else { b.ins().uextend(lane, x) };
            let m = b.ins().ineg(wide);
            Ok(b.ins().splat(mask_type(t), m))
        }
        Width::Vector(_) => {
            let ty = width.ty(d)?;
            Ok(b.ins().splat(ty, x))
        }
    }
}

/// A constant of dtype `d` as a scalar.
pub(crate) fn scalar_const(b: &mut FunctionBuilder, d: DType, s: Scalar) -> Value {
    let as_int = match s {
        Scalar::Bool(v) => v as i64,
        Scalar::Int(i) => i,
        Scalar::Float(f) => f as i64,
    };
    match d {
        // Storage dtypes: the value converted like `cast`, in the compute dtype's register.
        DType::F16 | DType::BF16 | DType::I8 | DType::U8 => {
            let t = tfn_ir::interp::fold_cast_value(s, d);
            match t {
                Scalar::Float(f) => b.ins().f32const(f as f32),
                Scalar::Int(i) => b.ins().iconst(types::I32, i),
                Scalar::Bool(v) => b.ins().iconst(types::I32, v as i64),
            }
        }
        DType::F32 => b.ins().f32const(s.as_f64() as f32),
        DType::F64 => b.ins().f64const(s.as_f64()),
        DType::I32 => b.ins().iconst(types::I32, as_int as i32 as i64),
        DType::I64 => b.ins().iconst(types::I64, as_int),
        DType::Bool => b.ins().iconst(types::I8, (s.as_f64() != 0.0) as i64),
    }
}

pub(crate) fn float_const(
    b: &mut FunctionBuilder,
    width: Width,
    d: DType,
    v: f64,
) -> Result<Value, CodegenError> {
    let s = scalar_const(b, d, Scalar::Float(v));
    splat(b, width, d, s)
}

fn int_const(
    b: &mut FunctionBuilder,
    width: Width,
    d: DType,
    v: i64,
) -> Result<Value, CodegenError> {
    let s = scalar_const(b, d, Scalar::Int(v));
    splat(b, width, d, s)
}

/// `mask ? x : y` for a bool (scalar i8 or lane mask) `mask`.
/// `mul_add(a, b, c)`: Cranelift's `fma`, one rounding on every host — `vfmadd` where the CPU
/// has FMA (and `vfmsub`/`vfnmadd` when an operand is a negation), a `fmaf`/`fma` libcall per
/// lane otherwise — so it agrees bit for bit with the interpreter's `mul_add`.
pub(crate) fn mul_add(b: &mut FunctionBuilder, x: Value, y: Value, z: Value) -> Value {
    b.ins().fma(x, y, z)
}

pub(crate) fn blend(b: &mut FunctionBuilder, mask: Value, x: Value, y: Value) -> Value {
    let ty = b.func.dfg.value_type(x);
    if !ty.is_vector() {
        return b.ins().select(mask, x, y);
    }
    let m = if b.func.dfg.value_type(mask) == ty {
        mask
    } else {
        let flags = MemFlagsData::new().with_endianness(Endianness::Little);
        b.ins().bitcast(ty, flags, mask)
    };
    b.ins().bitselect(m, x, y)
}

fn float_cmp(b: &mut FunctionBuilder, cc: FloatCC, x: Value, y: Value) -> Value {
    b.ins().fcmp(cc, x, y)
}

/// NumPy `maximum`/`minimum` for floats: NaN in either operand propagates, ties keep `x`.
/// `y_not_nan` skips the NaN test of `y` (a constant that is a number).
pub(crate) fn float_max_min(
    b: &mut FunctionBuilder,
    max: bool,
    x: Value,
    y: Value,
    y_not_nan: bool,
) -> Value {
    let cc = if max { FloatCC::LessThan } else { FloatCC::GreaterThan };
    let mut pick_y = float_cmp(b, cc, x, y);
    if !y_not_nan {
        let y_nan = float_cmp(b, FloatCC::Unordered, y, y);
        pick_y = b.ins().bor(pick_y, y_nan);
    }
    blend(b, pick_y, y, x)
}

/// The math function behind a unary or binary op, if it needs one. Exhaustive over the
/// elementwise ops: a new one must say whether it is computed by `math`.
pub(super) fn math_fn(op: &Op) -> Option<MathFn> {
    use BinaryOp as B;
    use UnaryOp as U;
    match op {
        Op::Unary(u) => match u {
            U::Exp => Some(MathFn::Exp),
            U::Expm1 => Some(MathFn::Expm1),
            U::Log => Some(MathFn::Log),
            U::Log2 => Some(MathFn::Log2),
            U::Log1p => Some(MathFn::Log1p),
            U::Tanh => Some(MathFn::Tanh),
            U::Sigmoid => Some(MathFn::Sigmoid),
            U::Erf => Some(MathFn::Erf),
            U::Sin => Some(MathFn::Sin),
            U::Cos => Some(MathFn::Cos),
            U::Asin => Some(MathFn::Asin),
            U::Acos => Some(MathFn::Acos),
            U::Atan => Some(MathFn::Atan),
            U::Sinh => Some(MathFn::Sinh),
            U::Cosh => Some(MathFn::Cosh),
            U::Neg
            | U::Abs
            | U::Sqrt
            | U::Rsqrt
            | U::Floor
            | U::Ceil
            | U::Round
            | U::Sign
            | U::Reciprocal
            | U::LogicalNot
            | U::IsNan
            | U::IsInf
            | U::IsFinite
            | U::BitwiseNot => None,
        },
        Op::Binary(b) => match b {
            B::Pow => Some(MathFn::Pow),
            B::Atan2 => Some(MathFn::Atan2),
            B::Add
            | B::Sub
            | B::Mul
            | B::Div
            | B::Maximum
            | B::Minimum
            | B::Eq
            | B::Ne
            | B::Lt
            | B::Le
            | B::Gt
            | B::Ge
            | B::LogicalAnd
            | B::LogicalOr
            | B::FloorDiv
            | B::Remainder
            | B::BitwiseAnd
            | B::BitwiseOr
            | B::BitwiseXor
            | B::ShiftLeft
            | B::ShiftRight => None,
        },
        // Not elementwise arithmetic.
        Op::Param(_)
        | Op::Const(_)
        | Op::Where
        | Op::MulAdd
        | Op::Cast(_)
        | Op::Reduce { .. }
        | Op::ArgMax { .. }
        | Op::ArgMin { .. }
        | Op::Iota { .. }
        | Op::Scan { .. }
        | Op::CumprodGrad { .. }
        | Op::MatMul
        | Op::Reshape
        | Op::Transpose { .. }
        | Op::BroadcastTo
        | Op::Concat { .. }
        | Op::Slice { .. }
        | Op::Full { .. }
        | Op::Random { .. }
        | Op::Extern { .. }
        | Op::Index { .. }
        | Op::Window { .. } => None,
    }
}

pub(crate) fn emit_unary(
    b: &mut FunctionBuilder,
    width: Width,
    op: UnaryOp,
    d: DType,
    x: Value,
) -> Result<Value, CodegenError> {
    use UnaryOp::*;
    if d.is_float() {
        return Ok(match op {
            Neg => b.ins().fneg(x),
            Abs => b.ins().fabs(x),
            Sqrt => b.ins().sqrt(x),
            Floor => b.ins().floor(x),
            Ceil => b.ins().ceil(x),
            Round => b.ins().nearest(x),
            Reciprocal => {
                let one = float_const(b, width, d, 1.0)?;
                b.ins().fdiv(one, x)
            }
            Rsqrt => {
                let one = float_const(b, width, d, 1.0)?;
                let s = b.ins().sqrt(x);
                b.ins().fdiv(one, s)
            }
            Sign => {
                let zero = float_const(b, width, d, 0.0)?;
                let one = float_const(b, width, d, 1.0)?;
                let minus = float_const(b, width, d, -1.0)?;
                let gt = float_cmp(b, FloatCC::GreaterThan, x, zero);
                let lt = float_cmp(b, FloatCC::LessThan, x, zero);
                let same = b.ins().fadd(x, zero);
                let neg = blend(b, lt, minus, same);
                blend(b, gt, one, neg)
            }
            IsNan => float_cmp(b, FloatCC::Unordered, x, x),
            IsInf | IsFinite => {
                let inf = float_const(b, width, d, f64::INFINITY)?;
                let a = b.ins().fabs(x);
                let cc = if op == IsInf { FloatCC::Equal } else { FloatCC::LessThan };
                float_cmp(b, cc, a, inf)
            }
            // Computed by `math` (see [`math_fn`]), or outside the op table.
            Exp | Expm1 | Log | Log2 | Log1p | Tanh | Sigmoid | Erf | Sin | Cos | LogicalNot
            | BitwiseNot | Asin | Acos | Atan | Sinh | Cosh => return not_here(op, d),
        });
    }
    if op.is_predicate() {
        // Integers and bools are never NaN or infinite.
        let v = b.ins().iconst(types::I8, (op == IsFinite) as i64);
        return splat(b, width, DType::Bool, v);
    }
    if d.is_int() {
        return Ok(match op {
            Neg => b.ins().ineg(x),
            BitwiseNot => b.ins().bnot(x),
            Abs => b.ins().iabs(x),
            Sign => {
                let zero = int_const(b, width, d, 0)?;
                let one = int_const(b, width, d, 1)?;
                let minus = int_const(b, width, d, -1)?;
                let gt = b.ins().icmp(IntCC::SignedGreaterThan, x, zero);
                let lt = b.ins().icmp(IntCC::SignedLessThan, x, zero);
                let neg = blend(b, lt, minus, zero);
                blend(b, gt, one, neg)
            }
            // Outside the op table for integers.
            Floor | Ceil | Round | Exp | Log | Log2 | Sqrt | Rsqrt | Tanh | Sigmoid | Sin | Cos
            | Erf | Reciprocal | Log1p | Expm1 | LogicalNot | IsNan | IsInf | IsFinite | Asin
            | Acos | Atan | Sinh | Cosh => return not_here(op, d),
        });
    }
    match (op, width) {
        (LogicalNot | BitwiseNot, Width::Scalar) => Ok(b.ins().bxor_imm_u(x, 1)),
        (LogicalNot | BitwiseNot, Width::Vector(_)) => Ok(b.ins().bnot(x)),
        (
            Neg | Abs | Exp | Log | Log2 | Sqrt | Rsqrt | Tanh | Sigmoid | Sin | Cos | Erf | Floor
            | Ceil | Round | Sign | Reciprocal | Log1p | Expm1 | IsNan | IsInf | IsFinite | Asin
            | Acos | Atan | Sinh | Cosh,
            _,
        ) => not_here(op, d),
    }
}

/// Converts a number to a bool (`x != 0`, NaN is true).
fn truthy(
    b: &mut FunctionBuilder,
    width: Width,
    d: DType,
    x: Value,
) -> Result<Value, CodegenError> {
    Ok(match d {
        DType::Bool => x,
        _ if d.is_float() => {
            let zero = float_const(b, width, d, 0.0)?;
            float_cmp(b, FloatCC::NotEqual, x, zero)
        }
        _ => {
            let zero = int_const(b, width, d, 0)?;
            b.ins().icmp(IntCC::NotEqual, x, zero)
        }
    })
}

pub(crate) fn emit_binary(
    b: &mut FunctionBuilder,
    width: Width,
    op: BinaryOp,
    d: DType,
    x: Value,
    y: Value,
    y_not_nan: bool,
) -> Result<Value, CodegenError> {
    use BinaryOp::*;
    if d == DType::Bool {
        // Scalars are 0/1 bytes; in vector kernels, lane masks (all ones or all zeros).
        return Ok(match (op, width) {
            (LogicalAnd | BitwiseAnd, _) => b.ins().band(x, y),
            (LogicalOr | BitwiseOr, _) => b.ins().bor(x, y),
            (BitwiseXor, _) => b.ins().bxor(x, y),
            (Eq, Width::Scalar) => b.ins().icmp(IntCC::Equal, x, y),
            (Ne, Width::Scalar) => b.ins().icmp(IntCC::NotEqual, x, y),
            (Ne, Width::Vector(_)) => b.ins().bxor(x, y),
            (Eq, Width::Vector(_)) => {
                let ne = b.ins().bxor(x, y);
                b.ins().bnot(ne)
            }
            // Outside the op table for bools.
            (
                Add | Sub | Mul | Div | Pow | Maximum | Minimum | Lt | Le | Gt | Ge | FloorDiv
                | Remainder | ShiftLeft | ShiftRight | Atan2,
                _,
            ) => return not_here(op, d),
        });
    }
    if d.is_float() {
        return Ok(match op {
            Eq => float_cmp(b, FloatCC::Equal, x, y),
            Ne => float_cmp(b, FloatCC::NotEqual, x, y),
            Lt => float_cmp(b, FloatCC::LessThan, x, y),
            Le => float_cmp(b, FloatCC::LessThanOrEqual, x, y),
            Gt => float_cmp(b, FloatCC::GreaterThan, x, y),
            Ge => float_cmp(b, FloatCC::GreaterThanOrEqual, x, y),
            Add => b.ins().fadd(x, y),
            Sub => b.ins().fsub(x, y),
            Mul => b.ins().fmul(x, y),
            Div => b.ins().fdiv(x, y),
            Maximum => float_max_min(b, true, x, y, y_not_nan),
            Minimum => float_max_min(b, false, x, y, y_not_nan),
            FloorDiv | Remainder => lane_ops::float_divmod(b, width, op, d, x, y)?,
            // Computed by `math`, or outside the op table.
            Pow | LogicalAnd | LogicalOr | BitwiseAnd | BitwiseOr | BitwiseXor | ShiftLeft
            | ShiftRight | Atan2 => return not_here(op, d),
        });
    }
    Ok(match op {
        Eq => b.ins().icmp(IntCC::Equal, x, y),
        Ne => b.ins().icmp(IntCC::NotEqual, x, y),
        Lt => b.ins().icmp(IntCC::SignedLessThan, x, y),
        Le => b.ins().icmp(IntCC::SignedLessThanOrEqual, x, y),
        Gt => b.ins().icmp(IntCC::SignedGreaterThan, x, y),
        Ge => b.ins().icmp(IntCC::SignedGreaterThanOrEqual, x, y),
        Add => b.ins().iadd(x, y),
        Sub => b.ins().isub(x, y),
        Mul => b.ins().imul(x, y),
        Maximum => b.ins().smax(x, y),
        Minimum => b.ins().smin(x, y),
        BitwiseAnd => b.ins().band(x, y),
        BitwiseOr => b.ins().bor(x, y),
        BitwiseXor => b.ins().bxor(x, y),
        // No vector instruction: one lane at a time.
        FloorDiv | Remainder | ShiftLeft | ShiftRight => {
            lane_ops::per_lane(b, x, y, |b, x, y| lane_ops::int_op(b, op, d, x, y))?
        }
        // Outside the op table for integers.
        Div | Pow | LogicalAnd | LogicalOr | Atan2 => return not_here(op, d),
    })
}

/// `cast(x: from) -> to`, Rust `as` semantics (saturating float → int, NaN → 0).
pub(crate) fn emit_cast(
    b: &mut FunctionBuilder,
    width: Width,
    from: DType,
    to: DType,
    x: Value,
) -> Result<Value, CodegenError> {
    if from == to {
        return Ok(x);
    }
    if from.is_storage() || to.is_storage() {
        return storage_cast(b, width, from, to, x);
    }
    if to == DType::Bool {
        return truthy(b, width, from, x);
    }
    if width != Width::Scalar {
        if from == DType::Bool {
            let one = if to.is_float() {
                float_const(b, width, to, 1.0)?
            } else {
                int_const(b, width, to, 1)?
            };
            let zero = if to.is_float() {
                float_const(b, width, to, 0.0)?
            } else {
                int_const(b, width, to, 0)?
            };
            return Ok(blend(b, x, one, zero));
        }
        return unsupported(format!("vector cast {from} -> {to}"));
    }
    let ty = scalar_type(to);
    Ok(match (from, to) {
        (DType::F32, DType::F64) => b.ins().fpromote(ty, x),
        (DType::F64, DType::F32) => b.ins().fdemote(ty, x),
        (f, t) if f.is_float() && t.is_int() => b.ins().fcvt_to_sint_sat(ty, x),
        (DType::Bool, t) if t.is_float() => b.ins().fcvt_from_uint(ty, x),
        (f, t) if f.is_int() && t.is_float() => b.ins().fcvt_from_sint(ty, x),
        (DType::Bool, _) => b.ins().uextend(ty, x),
        (DType::I32, DType::I64) => b.ins().sextend(ty, x),
        (DType::I64, DType::I32) => b.ins().ireduce(ty, x),
        // Every pair is covered above (same dtype and `-> bool` return early).
        _ => return not_here(format!("cast {from} ->"), to),
    })
}

/// `cast` from or to a storage dtype (`tfn_ir::storage`): through the compute dtypes, then
/// rounded (16-bit floats), saturated (floats to 8-bit integers) or wrapped (integers to 8-bit
/// integers) in the register. `f64` → 16-bit float rounds to odd in `f32` first (scalars only:
/// a kernel mixing `f64` and another dtype is never vectorised).
fn storage_cast(
    b: &mut FunctionBuilder,
    width: Width,
    from: DType,
    to: DType,
    x: Value,
) -> Result<Value, CodegenError> {
    use super::storage::{round_to, saturate_to_byte};
    let (cf, ct) = (from.compute(), to.compute());
    if !to.is_storage() {
        // Exact widening, then an ordinary cast.
        return emit_cast(b, width, cf, to, x);
    }
    let wide = match (from, to) {
        (DType::F64, DType::F16 | DType::BF16) if width == Width::Scalar => f64_to_f32_odd(b, x),
        (DType::I64, DType::I8 | DType::U8) if width == Width::Scalar => {
            b.ins().ireduce(types::I32, x)
        }
        (DType::I64, _) if width == Width::Scalar => b.ins().fcvt_from_sint(types::F32, x),
        _ => emit_cast(b, width, cf, ct, x)?,
    };
    let wide =
        if from.is_float() && !to.is_float() { saturate_to_byte(b, width, to, wide) } else { wide };
    Ok(round_to(b, width, to, wide))
}

/// `f64` → `f32` rounded to odd (`tfn_ir::storage::bits::f64_to_f32_odd`), on scalars.
fn f64_to_f32_odd(b: &mut FunctionBuilder, x: Value) -> Value {
    let flags = MemFlagsData::new().with_endianness(Endianness::Little);
    let r = b.ins().fdemote(types::F32, x);
    let back = b.ins().fpromote(types::F64, r);
    let exact = b.ins().fcmp(FloatCC::Equal, back, x);
    let nan = b.ins().fcmp(FloatCC::Unordered, x, x);
    let keep = b.ins().bor(exact, nan);
    let abs_back = b.ins().fabs(back);
    let abs_x = b.ins().fabs(x);
    let up = b.ins().fcmp(FloatCC::GreaterThan, abs_back, abs_x);
    let bits = b.ins().bitcast(types::I32, flags, r);
    let down = b.ins().iadd_imm_s(bits, -1);
    let truncated = b.ins().select(up, down, bits);
    let odd = b.ins().bor_imm_s(truncated, 1);
    let odd = b.ins().bitcast(types::F32, flags, odd);
    b.ins().select(keep, r, odd)
}

/// The identity element of a reduction, at `width`.
pub(crate) fn reduce_init(
    b: &mut FunctionBuilder,
    width: Width,
    op: ReduceOp,
    d: DType,
) -> Result<Value, CodegenError> {
    if d.is_float() {
        let v = match op {
            ReduceOp::Sum | ReduceOp::Mean => 0.0,
            ReduceOp::Prod => 1.0,
            ReduceOp::Max => f64::NEG_INFINITY,
            ReduceOp::Min => f64::INFINITY,
        };
        return float_const(b, width, d, v);
    }
    if d.is_int() {
        let (lo, hi) =
            if d == DType::I32 { (i32::MIN as i64, i32::MAX as i64) } else { (i64::MIN, i64::MAX) };
        let v = match op {
            ReduceOp::Sum => 0,
            ReduceOp::Prod => 1,
            ReduceOp::Max => lo,
            ReduceOp::Min => hi,
            ReduceOp::Mean => return unsupported("integer mean"),
        };
        return int_const(b, width, d, v);
    }
    unsupported("reduction of bool")
}

/// `x`, with the default NaN (`0xffc0_0000`, `0xfff8_0000_0000_0000`: what an invalid
/// operation gives on x86, and what the math functions return, `math::canonical_nan`) where it
/// is NaN. A max/min reduction's result goes through this, so which NaN it is does not depend
/// on where the NaN was, on the code path (vector accumulator, tail, wide routine) or on the
/// interpreter (`tfn_ir::interp`'s `reduce` does the same).
pub(crate) fn default_nan(b: &mut FunctionBuilder, x: Value) -> Value {
    let ty = b.func.dfg.value_type(x);
    let nan = float_cmp(b, FloatCC::Unordered, x, x);
    let q = if ty.lane_type() == types::F32 {
        b.ins().f32const(f32::from_bits(0xffc0_0000))
    } else {
        b.ins().f64const(f64::from_bits(0xfff8_0000_0000_0000))
    };
    let q = if ty.is_vector() { b.ins().splat(ty, q) } else { q };
    blend(b, nan, q, x)
}

/// A vector max/min accumulator step in three instructions instead of [`float_max_min`]'s six:
/// `maxps(x, acc)` (which returns `acc` when either is NaN, so a NaN accumulator stays NaN),
/// OR-ed with the all-ones mask of NaN lanes of `x` (all-ones bits are a NaN), so a NaN element
/// makes its lane NaN for good. Ties keep `acc`, as [`float_max_min`] does. The final
/// horizontal fold uses [`float_max_min`], which propagates the NaN lanes.
fn sticky_nan_max_min(b: &mut FunctionBuilder, max: bool, acc: Value, x: Value) -> Value {
    // Exactly the shapes Cranelift lowers to one `maxps(x, acc)` / `minps(x, acc)`.
    let better = if max {
        float_cmp(b, FloatCC::LessThan, acc, x)
    } else {
        float_cmp(b, FloatCC::LessThan, x, acc)
    };
    let picked = blend(b, better, x, acc);
    let ty = b.func.dfg.value_type(acc);
    let nan = float_cmp(b, FloatCC::Unordered, x, x);
    let flags = MemFlagsData::new().with_endianness(Endianness::Little);
    let nan = b.ins().bitcast(ty, flags, nan);
    b.ins().bor(picked, nan)
}

/// Folds `x` into accumulator `acc`.
pub(crate) fn reduce_combine(
    b: &mut FunctionBuilder,
    op: ReduceOp,
    d: DType,
    acc: Value,
    x: Value,
) -> Value {
    match (op, d.is_float()) {
        (ReduceOp::Sum | ReduceOp::Mean, true) => b.ins().fadd(acc, x),
        (ReduceOp::Sum | ReduceOp::Mean, false) => b.ins().iadd(acc, x),
        (ReduceOp::Prod, true) => b.ins().fmul(acc, x),
        (ReduceOp::Prod, false) => b.ins().imul(acc, x),
        (ReduceOp::Max | ReduceOp::Min, true) if b.func.dfg.value_type(acc).is_vector() => {
            sticky_nan_max_min(b, op == ReduceOp::Max, acc, x)
        }
        // The scalar folds (a row's lanes, its tail, a scalar kernel) end every max/min
        // reduction but a column one's vectors (`columns.rs`), so the result's NaN is one.
        (ReduceOp::Max | ReduceOp::Min, true) => {
            let r = float_max_min(b, op == ReduceOp::Max, acc, x, false);
            default_nan(b, r)
        }
        (ReduceOp::Max, false) => b.ins().smax(acc, x),
        (ReduceOp::Min, false) => b.ins().smin(acc, x),
    }
}
