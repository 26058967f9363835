//! Elementwise ops without a vector instruction, computed one lane at a time: integer
//! `floor_div`/`remainder` (x86 has no vector division) and shifts (Cranelift's vector shifts
//! take one count for all lanes), and float `fmod`, an exact integer long division with a loop
//! per element, under NumPy's `divmod` for float `floor_div`/`remainder`. Each has the meaning
//! of its `ir::interp::scalar` definition, bit for bit.

use super::ops::{blend, float_const, not_here, scalar_type, Width};
use crate::error::CodegenError;
use cranelift::codegen::ir::{condcodes::FloatCC, condcodes::IntCC, types, InstBuilder, Value};
use cranelift::codegen::ir::{Endianness, MemFlagsData};
use cranelift::frontend::FunctionBuilder;
use tfn_ir::{BinaryOp, DType};

/// `f` applied to each lane of `x` and `y` (or once, to scalars): for the ops without a vector
/// instruction.
pub(crate) fn per_lane(
    b: &mut FunctionBuilder,
    x: Value,
    y: Value,
    f: impl Fn(&mut FunctionBuilder, Value, Value) -> Result<Value, CodegenError>,
) -> Result<Value, CodegenError> {
    let ty = b.func.dfg.value_type(x);
    if !ty.is_vector() {
        return f(b, x, y);
    }
    let mut acc = x;
    for lane in 0..ty.lane_count() as u8 {
        let xl = b.ins().extractlane(x, lane);
        let yl = b.ins().extractlane(y, lane);
        let r = f(b, xl, yl)?;
        acc = b.ins().insertlane(acc, r, lane);
    }
    Ok(acc)
}

/// Integer `floor_div`, `remainder` and shifts on scalars of dtype `d`, with the op table's
/// meaning (`ir::interp::scalar`): no input traps. The divisor is replaced by 1 where it is 0
/// or -1 (`sdiv`/`srem` trap on both `x / 0` and `MIN / -1`); those quotients are then
/// selected: `x // 0 == x % 0 == 0`, `x // -1 == -x` (wrapping), `x % -1 == 0`.
pub(crate) fn int_op(
    b: &mut FunctionBuilder,
    op: BinaryOp,
    d: DType,
    x: Value,
    y: Value,
) -> Result<Value, CodegenError> {
    let ty = scalar_type(d);
    let bits = ty.bits() as i64;
    let zero = b.ins().iconst(ty, 0);
    Ok(match op {
        BinaryOp::ShiftLeft | BinaryOp::ShiftRight => {
            // A count outside [0, bits) (negative included, as unsigned) is out of range.
            let in_range = b.ins().icmp_imm_u(IntCC::UnsignedLessThan, y, bits);
            let (shifted, out) = if op == BinaryOp::ShiftLeft {
                (b.ins().ishl(x, y), zero)
            } else {
                (b.ins().sshr(x, y), b.ins().sshr_imm_u(x, bits - 1))
            };
            b.ins().select(in_range, shifted, out)
        }
        BinaryOp::FloorDiv | BinaryOp::Remainder => {
            let one = b.ins().iconst(ty, 1);
            let y_zero = b.ins().icmp_imm_s(IntCC::Equal, y, 0);
            let y_minus = b.ins().icmp_imm_s(IntCC::Equal, y, -1);
            let bad = b.ins().bor(y_zero, y_minus);
            let ys = b.ins().select(bad, one, y);
            let r = b.ins().srem(x, ys);
            // Truncated remainder nonzero with the sign opposite to the divisor's: one less.
            let r_nonzero = b.ins().icmp_imm_s(IntCC::NotEqual, r, 0);
            let sign_differs = b.ins().bxor(r, ys);
            let sign_differs = b.ins().icmp_imm_s(IntCC::SignedLessThan, sign_differs, 0);
            let adjust = b.ins().band(r_nonzero, sign_differs);
            if op == BinaryOp::Remainder {
                let moved = b.ins().iadd(r, ys);
                // `bad` divisors leave `r == 0`, the right answer for both.
                b.ins().select(adjust, moved, r)
            } else {
                let q = b.ins().sdiv(x, ys);
                let q_less = b.ins().iadd_imm_s(q, -1);
                let q = b.ins().select(adjust, q_less, q);
                let neg = b.ins().ineg(x);
                let q = b.ins().select(y_minus, neg, q);
                b.ins().select(y_zero, zero, q)
            }
        }
        _ => return not_here(op, d),
    })
}

/// NumPy's `divmod` of floats of dtype `d` at `width` (see `ir::interp::scalar::float_divmod`):
/// the quotient for `floor_div`, the remainder for `remainder`.
pub(crate) fn float_divmod(
    b: &mut FunctionBuilder,
    width: Width,
    op: BinaryOp,
    d: DType,
    x: Value,
    y: Value,
) -> Result<Value, CodegenError> {
    let m = per_lane(b, x, y, |b, x, y| Ok(fmod(b, d, x, y)))?;
    let zero = float_const(b, width, d, 0.0)?;
    let one = float_const(b, width, d, 1.0)?;
    let minus_zero = float_const(b, width, d, -0.0)?;
    // The `y == 0` answers: `x / y` and `fmod`'s NaN.
    let y_zero = b.ins().fcmp(FloatCC::Equal, y, zero);
    let quotient = b.ins().fdiv(x, y);
    // Move a nonzero remainder to the divisor's sign; a zero one takes the divisor's sign.
    let diff = b.ins().fsub(x, m);
    let div = b.ins().fdiv(diff, y);
    let m_nonzero = b.ins().fcmp(FloatCC::NotEqual, m, zero);
    let y_neg = b.ins().fcmp(FloatCC::LessThan, y, zero);
    let m_neg = b.ins().fcmp(FloatCC::LessThan, m, zero);
    let differ = b.ins().bxor(y_neg, m_neg);
    let adjust = b.ins().band(m_nonzero, differ);
    if op == BinaryOp::Remainder {
        let moved = b.ins().fadd(m, y);
        let m = blend(b, adjust, moved, m);
        let signed_zero = b.ins().band(y, minus_zero);
        // (`y == 0` leaves `fmod`'s NaN in `m`, NumPy's answer.)
        return Ok(blend(b, m_nonzero, m, signed_zero));
    }
    if op != BinaryOp::FloorDiv {
        return not_here(op, d);
    }
    let less = b.ins().fsub(div, one);
    let div = blend(b, adjust, less, div);
    // Snap the quotient to an integer (NumPy: floor, plus one past a half).
    let half = float_const(b, width, d, 0.5)?;
    let floor = b.ins().floor(div);
    let frac = b.ins().fsub(div, floor);
    let up = b.ins().fcmp(FloatCC::GreaterThan, frac, half);
    let floor_up = b.ins().fadd(floor, one);
    let q = blend(b, up, floor_up, floor);
    let div_nonzero = b.ins().fcmp(FloatCC::NotEqual, div, zero);
    let signed_zero = b.ins().band(quotient, minus_zero);
    let q = blend(b, div_nonzero, q, signed_zero);
    Ok(blend(b, y_zero, quotient, q))
}

/// C's `fmod(x, y)` on scalars of float dtype `d`, exact: musl's integer long division of the
/// significands, one subtraction per binary digit of the quotient (at most ~2100 for f64).
/// `y == 0`, NaN operands and infinite `x` give NaN; `|x| < |y|` gives `x`.
pub(crate) fn fmod(b: &mut FunctionBuilder, d: DType, x: Value, y: Value) -> Value {
    let fty = scalar_type(d);
    let (ity, w, mbits) = if d == DType::F32 { (types::I32, 32, 23) } else { (types::I64, 64, 52) };
    let flags = MemFlagsData::new().with_endianness(Endianness::Little);
    let c = |b: &mut FunctionBuilder, v: i64| b.ins().iconst(ity, v);
    let ux = b.ins().bitcast(ity, flags, x);
    let uy = b.ins().bitcast(ity, flags, y);
    let abs_mask = c(b, if w == 32 { 0x7fff_ffff } else { i64::MAX });
    let sign_mask = c(b, if w == 32 { 0x8000_0000 } else { i64::MIN });
    let inf = c(b, ((1i64 << (w - 1 - mbits)) - 1) << mbits);
    let ax = b.ins().band(ux, abs_mask);
    let ay = b.ins().band(uy, abs_mask);
    let sx = b.ins().band(ux, sign_mask);
    // Quick answers: NaN, x, or a zero of x's sign.
    let y_zero = b.ins().icmp_imm_s(IntCC::Equal, ay, 0);
    let y_nan = b.ins().icmp(IntCC::UnsignedGreaterThan, ay, inf);
    let x_special = b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, ax, inf);
    let nan_case = b.ins().bor(y_zero, y_nan);
    let nan_case = b.ins().bor(nan_case, x_special);
    let xy = b.ins().fmul(x, y);
    let nan = b.ins().fdiv(xy, xy);
    let nan_bits = b.ins().bitcast(ity, flags, nan);
    let x_small = b.ins().icmp(IntCC::UnsignedLessThan, ax, ay);
    let x_equal = b.ins().icmp(IntCC::Equal, ax, ay);
    let quick = b.ins().select(x_equal, sx, ux);
    let quick = b.ins().select(nan_case, nan_bits, quick);
    let x_le = b.ins().bor(x_small, x_equal);
    let is_quick = b.ins().bor(nan_case, x_le);

    let exit = b.create_block();
    b.append_block_param(exit, ity);
    let prep = b.create_block();
    let head = b.create_block();
    b.append_block_param(head, ity);
    b.append_block_param(head, ity);
    let body = b.create_block();
    let cont = b.create_block();
    let last = b.create_block();
    let finish = b.create_block();
    b.ins().brif(is_quick, exit, &[quick.into()], prep, &[]);

    // Significands with the leading one at bit `mbits`, and unbiased-enough exponents
    // (subnormals normalised).
    b.switch_to_block(prep);
    b.seal_block(prep);
    let lead = (w - 1 - mbits) as i64;
    let (mx, ex) = normalise(b, ity, ax, mbits, lead);
    let (my, ey) = normalise(b, ity, ay, mbits, lead);
    b.ins().jump(head, &[mx.into(), ex.into()]);

    // while ex > ey: subtract where it fits, shift one digit.
    b.switch_to_block(head);
    let mx = b.block_params(head)[0];
    let ex = b.block_params(head)[1];
    let more = b.ins().icmp(IntCC::SignedGreaterThan, ex, ey);
    b.ins().brif(more, body, &[], last, &[]);
    b.switch_to_block(body);
    b.seal_block(body);
    let (mx2, is_zero) = subtract_step(b, mx, my);
    b.ins().brif(is_zero, exit, &[sx.into()], cont, &[]);
    b.switch_to_block(cont);
    b.seal_block(cont);
    let mx3 = b.ins().ishl_imm_u(mx2, 1);
    let ex2 = b.ins().iadd_imm_s(ex, -1);
    b.ins().jump(head, &[mx3.into(), ex2.into()]);
    b.seal_block(head);

    b.switch_to_block(last);
    b.seal_block(last);
    let (mx, is_zero) = subtract_step(b, mx, my);
    b.ins().brif(is_zero, exit, &[sx.into()], finish, &[]);
    b.switch_to_block(finish);
    b.seal_block(finish);
    // Renormalise (the remainder is below `y`), then rebuild the float.
    let clz = b.ins().clz(mx);
    let k = b.ins().iadd_imm_s(clz, -lead);
    let mx = b.ins().ishl(mx, k);
    let ex = b.ins().isub(ex, k);
    let mant_mask = c(b, (1i64 << mbits) - 1);
    let frac = b.ins().band(mx, mant_mask);
    let exp_bits = b.ins().ishl_imm_u(ex, mbits as i64);
    let normal = b.ins().bor(frac, exp_bits);
    let one = c(b, 1);
    let down = b.ins().isub(one, ex);
    let subnormal = b.ins().ushr(mx, down);
    let is_normal = b.ins().icmp_imm_s(IntCC::SignedGreaterThan, ex, 0);
    let r = b.ins().select(is_normal, normal, subnormal);
    let r = b.ins().bor(r, sx);
    b.ins().jump(exit, &[r.into()]);

    b.switch_to_block(exit);
    b.seal_block(exit);
    let bits = b.block_params(exit)[0];
    b.ins().bitcast(fty, flags, bits)
}

/// `(significand, exponent)` of the absolute value bits `a` (not zero, finite): the leading
/// one moved to bit `mbits`; subnormals get exponent `1 - shift` like musl's.
fn normalise(
    b: &mut FunctionBuilder,
    ity: types::Type,
    a: Value,
    mbits: u32,
    lead: i64,
) -> (Value, Value) {
    let e = b.ins().ushr_imm_u(a, mbits as i64);
    let mant = b.ins().iconst(ity, (1i64 << mbits) - 1);
    let implicit = b.ins().iconst(ity, 1i64 << mbits);
    let frac = b.ins().band(a, mant);
    let normal = b.ins().bor(frac, implicit);
    let clz = b.ins().clz(a);
    let shift = b.ins().iadd_imm_s(clz, -lead);
    let sub = b.ins().ishl(a, shift);
    let one = b.ins().iconst(ity, 1);
    let sub_e = b.ins().isub(one, shift);
    let is_sub = b.ins().icmp_imm_s(IntCC::Equal, e, 0);
    (b.ins().select(is_sub, sub, normal), b.ins().select(is_sub, sub_e, e))
}

/// One digit of the long division: `mx - my` where it does not go negative, and whether it
/// is exactly zero (then the remainder is a zero of `x`'s sign).
fn subtract_step(b: &mut FunctionBuilder, mx: Value, my: Value) -> (Value, Value) {
    let i = b.ins().isub(mx, my);
    let fits = b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, i, 0);
    let is_zero = b.ins().icmp_imm_s(IntCC::Equal, i, 0);
    (b.ins().select(fits, i, mx), is_zero)
}
