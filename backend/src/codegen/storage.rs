//! Storage dtypes in kernels (`tfn_ir::storage`): `f16`/`bf16` values live in `f32` registers
//! (lanes), `i8`/`u8` values in `i32` ones, always holding a value exactly representable in
//! the storage dtype. Loads widen, `cast` to a storage dtype rounds (16-bit floats) or wraps /
//! saturates (8-bit integers) in the register, stores narrow.
//!
//! The float conversions are the steps of `tfn_ir::storage::bits`, emitted on `i32` scalars
//! or `i32x4` vectors (the same instructions; selects become bit blends), so the JIT and the
//! interpreter agree bit for bit (tested exhaustively over all 16-bit patterns).

use super::ops::{blend, Width};
use crate::error::CodegenError;
use cranelift::codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift::codegen::ir::{types, Endianness, InstBuilder, MemFlagsData, Type, Value};
use cranelift::frontend::FunctionBuilder;
use tfn_ir::DType;

fn mem() -> MemFlagsData {
    super::mem()
}

fn lanes_le() -> MemFlagsData {
    MemFlagsData::new().with_endianness(Endianness::Little)
}

/// The integer type of a register of `f32`s / `i32`s at `width`.
fn int_ty(width: Width) -> Type {
    match width {
        Width::Scalar => types::I32,
        Width::Vector(_) => types::I32X4,
    }
}

fn float_ty(width: Width) -> Type {
    match width {
        Width::Scalar => types::F32,
        Width::Vector(_) => types::F32X4,
    }
}

/// An `i32` constant at `width`.
fn k(b: &mut FunctionBuilder, width: Width, v: i64) -> Value {
    let c = b.ins().iconst(types::I32, v as i32 as i64);
    match width {
        Width::Scalar => c,
        Width::Vector(_) => b.ins().splat(types::I32X4, c),
    }
}

fn to_int(b: &mut FunctionBuilder, width: Width, x: Value) -> Value {
    b.ins().bitcast(int_ty(width), lanes_le(), x)
}

fn to_float(b: &mut FunctionBuilder, width: Width, x: Value) -> Value {
    b.ins().bitcast(float_ty(width), lanes_le(), x)
}

fn and(b: &mut FunctionBuilder, width: Width, x: Value, m: i64) -> Value {
    let m = k(b, width, m);
    b.ins().band(x, m)
}

fn cmp(b: &mut FunctionBuilder, width: Width, cc: IntCC, x: Value, c: i64) -> Value {
    let c = k(b, width, c);
    b.ins().icmp(cc, x, c)
}

/// `f16` bits (in the low 16 bits of each `i32`) → `f32` (`bits::f16_to_f32`).
pub(crate) fn f16_to_f32(b: &mut FunctionBuilder, width: Width, h: Value) -> Value {
    let sign = and(b, width, h, 0x8000);
    let sign = b.ins().ishl_imm_s(sign, 16);
    let exp = b.ins().ushr_imm_s(h, 10);
    let exp = and(b, width, exp, 0x1f);
    let man = and(b, width, h, 0x3ff);
    let man13 = b.ins().ishl_imm_s(man, 13);
    let mag = and(b, width, h, 0x7fff);
    let mag = b.ins().ishl_imm_s(mag, 13);
    let bias = k(b, width, 112 << 23);
    let normal = b.ins().iadd(mag, bias);
    let inf = k(b, width, 0x7f80_0000);
    let special = b.ins().bor(inf, man13);
    let has_man = cmp(b, width, IntCC::NotEqual, man, 0);
    let quiet = k(b, width, 0x0040_0000);
    let zero = k(b, width, 0);
    let quiet = blend(b, has_man, quiet, zero);
    let special = b.ins().bor(special, quiet);
    let manf = b.ins().fcvt_from_sint(float_ty(width), man);
    let scale = b.ins().f32const(f32::from_bits(0x3380_0000));
    let scale = match width {
        Width::Scalar => scale,
        Width::Vector(_) => b.ins().splat(types::F32X4, scale),
    };
    let sub = b.ins().fmul(manf, scale);
    let sub = to_int(b, width, sub);
    let is_zero_exp = cmp(b, width, IntCC::Equal, exp, 0);
    let is_max_exp = cmp(b, width, IntCC::Equal, exp, 31);
    let v = blend(b, is_max_exp, special, normal);
    let v = blend(b, is_zero_exp, sub, v);
    let v = b.ins().bor(v, sign);
    to_float(b, width, v)
}

/// `f32` → `f16` bits in the low 16 bits of each `i32` (`bits::f32_to_f16`).
pub(crate) fn f32_to_f16(b: &mut FunctionBuilder, width: Width, x: Value) -> Value {
    let bits = to_int(b, width, x);
    let sign = b.ins().ushr_imm_s(bits, 16);
    let sign = and(b, width, sign, 0x8000);
    let f = and(b, width, bits, 0x7fff_ffff);
    // NaN and infinity.
    let payload = b.ins().ushr_imm_s(f, 13);
    let payload = and(b, width, payload, 0x3ff);
    let qnan = k(b, width, 0x7e00);
    let nan = b.ins().bor(qnan, payload);
    let infinity = k(b, width, 0x7c00);
    let is_nan = cmp(b, width, IntCC::SignedGreaterThan, f, 0x7f80_0000);
    let big = blend(b, is_nan, nan, infinity);
    // Subnormals: the hardware's rounding of `|x| + 0.5`.
    let ff = to_float(b, width, f);
    let half = b.ins().f32const(0.5);
    let half = match width {
        Width::Scalar => half,
        Width::Vector(_) => b.ins().splat(types::F32X4, half),
    };
    let sum = b.ins().fadd(ff, half);
    let sum = to_int(b, width, sum);
    let magic = k(b, width, 0x3f00_0000);
    let sub = b.ins().isub(sum, magic);
    // Normals: rebias and round half to even on the dropped bits.
    let odd = b.ins().ushr_imm_s(f, 13);
    let odd = and(b, width, odd, 1);
    let rebias = k(b, width, 0xc800_0fff_u32 as i64);
    let n = b.ins().iadd(f, rebias);
    let n = b.ins().iadd(n, odd);
    let normal = b.ins().ushr_imm_s(n, 13);
    let is_big = cmp(b, width, IntCC::SignedGreaterThanOrEqual, f, 0x4780_0000);
    let is_small = cmp(b, width, IntCC::SignedLessThan, f, 0x3880_0000);
    let v = blend(b, is_small, sub, normal);
    let v = blend(b, is_big, big, v);
    b.ins().bor(v, sign)
}

/// `f32` → the nearest `bf16` (ties to even), as an `f32` (`bits::f32_to_bf16`).
fn round_bf16(b: &mut FunctionBuilder, width: Width, x: Value) -> Value {
    let bits = to_int(b, width, x);
    let odd = b.ins().ushr_imm_s(bits, 16);
    let odd = and(b, width, odd, 1);
    let bias = k(b, width, 0x7fff);
    let r = b.ins().iadd(bits, bias);
    let r = b.ins().iadd(r, odd);
    let quiet = k(b, width, 0x0040_0000);
    let nan = b.ins().bor(bits, quiet);
    let is_nan = b.ins().fcmp(FloatCC::Unordered, x, x);
    let r = blend(b, is_nan, nan, r);
    let r = and(b, width, r, 0xffff_0000_u32 as i64);
    to_float(b, width, r)
}

/// Rounds a register value of compute dtype `d.compute()` to storage dtype `d` (for
/// `cast(x, d)`): the nearest 16-bit float, or the 8-bit integer it wraps to. Floats going to
/// `i8`/`u8` saturate before (see [`saturate_to_byte`]).
pub(crate) fn round_to(b: &mut FunctionBuilder, width: Width, d: DType, x: Value) -> Value {
    match d {
        DType::F16 => {
            let h = f32_to_f16(b, width, x);
            f16_to_f32(b, width, h)
        }
        DType::BF16 => round_bf16(b, width, x),
        DType::I8 => {
            let s = b.ins().ishl_imm_s(x, 24);
            b.ins().sshr_imm_s(s, 24)
        }
        DType::U8 => and(b, width, x, 0xff),
        DType::Bool | DType::I32 | DType::I64 | DType::F32 | DType::F64 => x,
    }
}

/// Clamps an `i32` register to the range of `i8`/`u8` (float → byte casts saturate).
pub(crate) fn saturate_to_byte(b: &mut FunctionBuilder, width: Width, d: DType, x: Value) -> Value {
    let (lo, hi) = if d == DType::I8 { (-128, 127) } else { (0, 255) };
    let lo = k(b, width, lo);
    let hi = k(b, width, hi);
    let x = b.ins().smax(x, lo);
    b.ins().smin(x, hi)
}

/// Loads one value (or one vector) of storage dtype `d` at `addr + off`, widened.
pub(crate) fn load(
    b: &mut FunctionBuilder,
    width: Width,
    d: DType,
    addr: Value,
    off: i32,
) -> Result<Value, CodegenError> {
    if let (Width::Vector(t), DType::Bool) = (width, d) {
        return load_bool_lanes(b, t, addr, off);
    }
    if !d.is_storage() {
        return Ok(b.ins().load(width.ty(d)?, mem(), addr, off));
    }
    let raw = match (width, d) {
        (Width::Scalar, DType::I8) => b.ins().sload8(types::I32, mem(), addr, off),
        (Width::Scalar, DType::U8) => b.ins().uload8(types::I32, mem(), addr, off),
        (Width::Scalar, _) => b.ins().uload16(types::I32, mem(), addr, off),
        (Width::Vector(_), DType::F16 | DType::BF16) => b.ins().uload16x4(mem(), addr, off),
        (Width::Vector(_), _) => {
            // Four bytes, widened twice (never reading past the fourth).
            let w = b.ins().load(types::I32, mem(), addr, off);
            let v = b.ins().scalar_to_vector(types::I32X4, w);
            let v = b.ins().bitcast(types::I8X16, lanes_le(), v);
            if d == DType::I8 {
                let v = b.ins().swiden_low(v);
                b.ins().swiden_low(v)
            } else {
                let v = b.ins().uwiden_low(v);
                b.ins().uwiden_low(v)
            }
        }
    };
    Ok(match d {
        DType::F16 => f16_to_f32(b, width, raw),
        DType::BF16 => {
            let s = b.ins().ishl_imm_s(raw, 16);
            to_float(b, width, s)
        }
        _ => raw,
    })
}

/// One vector of bools (bytes 0/1) as the lane mask of a `t` kernel (all ones or zeros per
/// lane): 4 bytes widened to `i32` lanes, or 2 to `i64` lanes, never reading past the last.
fn load_bool_lanes(
    b: &mut FunctionBuilder,
    t: DType,
    addr: Value,
    off: i32,
) -> Result<Value, CodegenError> {
    let (raw, bytes) = match super::ops::lanes(t) {
        4 => (b.ins().load(types::I32, mem(), addr, off), 4),
        2 => (b.ins().uload16(types::I32, mem(), addr, off), 2),
        _ => return super::ops::unsupported(format!("bool lanes in a {t} kernel")),
    };
    let v = b.ins().scalar_to_vector(types::I32X4, raw);
    let v = b.ins().bitcast(types::I8X16, lanes_le(), v);
    let v = b.ins().uwiden_low(v);
    let mut v = b.ins().uwiden_low(v);
    if bytes == 2 {
        v = b.ins().uwiden_low(v);
    }
    let zero = b.ins().iconst(if bytes == 4 { types::I32 } else { types::I64 }, 0);
    let zero = b.ins().splat(if bytes == 4 { types::I32X4 } else { types::I64X2 }, zero);
    Ok(b.ins().icmp(cranelift::codegen::ir::condcodes::IntCC::NotEqual, v, zero))
}

/// Stores a lane mask of a 4-lane kernel as 4 bools (bytes 0/1).
fn store_bool_lanes(b: &mut FunctionBuilder, mask: Value, addr: Value, off: i32) {
    let one = b.ins().iconst(types::I32, 1);
    let one = b.ins().splat(types::I32X4, one);
    let bits = b.ins().band(mask, one);
    let n16 = b.ins().unarrow(bits, bits);
    let n8 = b.ins().unarrow(n16, n16);
    let w = b.ins().bitcast(types::I32X4, lanes_le(), n8);
    let w = b.ins().extractlane(w, 0);
    b.ins().store(mem(), w, addr, off);
}

/// Whether a kernel of lane dtype `t` stores bool outputs as vectors ([`store`]); 2-lane
/// kernels store them one by one.
pub(crate) fn stores_bool_lanes(t: DType) -> bool {
    super::ops::lanes(t) == 4
}

/// Stores `v` (a register of `d.compute()` holding a value of storage dtype `d`, or any value
/// of another dtype) at `addr + off`.
pub(crate) fn store(
    b: &mut FunctionBuilder,
    width: Width,
    d: DType,
    v: Value,
    addr: Value,
    off: i32,
) {
    if let (Width::Vector(t), DType::Bool) = (width, d) {
        if stores_bool_lanes(t) {
            store_bool_lanes(b, v, addr, off);
            return;
        }
    }
    if !d.is_storage() {
        b.ins().store(mem(), v, addr, off);
        return;
    }
    if let (Width::Vector(_), DType::BF16) = (width, d) {
        // The high halves of the four lanes (the register holds a bf16 value: its low 16 bits
        // are zero), gathered by one byte shuffle into the low 8 bytes and stored as one i64.
        let bytes = b.ins().bitcast(types::I8X16, lanes_le(), v);
        let mask: Vec<u8> = [2u8, 3, 6, 7, 10, 11, 14, 15].repeat(2);
        let mask = b.func.dfg.immediates.push(mask.into());
        let packed = b.ins().shuffle(bytes, bytes, mask);
        let q = b.ins().bitcast(types::I64X2, lanes_le(), packed);
        let q = b.ins().extractlane(q, 0);
        b.ins().store(mem(), q, addr, off);
        return;
    }
    let bits = match d {
        DType::F16 => f32_to_f16(b, width, v),
        DType::BF16 => {
            let i = to_int(b, width, v);
            b.ins().ushr_imm_s(i, 16)
        }
        _ => v,
    };
    match width {
        Width::Scalar if d.size_bytes() == 2 => {
            b.ins().istore16(mem(), bits, addr, off);
        }
        Width::Scalar => {
            b.ins().istore8(mem(), bits, addr, off);
        }
        Width::Vector(_) => {
            // Narrow each lane (exact, unsigned): f16 bits are already in 0..=0xffff; bytes
            // keep their low 8 bits first (an i8 lane holds a sign-extended value).
            let low = if d.size_bytes() == 2 { bits } else { and(b, width, bits, 0xff) };
            let n16 = b.ins().unarrow(low, low);
            if d.size_bytes() == 2 {
                let q = b.ins().bitcast(types::I64X2, lanes_le(), n16);
                let q = b.ins().extractlane(q, 0);
                b.ins().store(mem(), q, addr, off);
            } else {
                let n8 = b.ins().unarrow(n16, n16);
                let w = b.ins().bitcast(types::I32X4, lanes_le(), n8);
                let w = b.ins().extractlane(w, 0);
                b.ins().store(mem(), w, addr, off);
            }
        }
    }
}
