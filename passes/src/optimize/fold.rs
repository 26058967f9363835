//! Constant folding of splat values: evaluates one elementwise op on scalars exactly as the
//! interpreter evaluates it per element, in the dtype's own precision.
//!
//! `f32` arithmetic is done in `f32` (then widened to `f64` for storage), integers wrap like the
//! kernels, and ops whose reference result this module cannot reproduce bit-for-bit in every
//! case (`erf`, `maximum`/`minimum`/`sign` on NaN, float-to-int casts of out-of-range values)
//! are simply not folded: folding is an optimisation, never a requirement.

use tfn_ir::{BinaryOp, DType, Scalar, UnaryOp};

/// Converts a literal to a constant of `dtype` (`None` if it does not fit exactly).
pub fn scalar_of_dtype(value: Scalar, dtype: DType) -> Option<Scalar> {
    match (dtype, value) {
        (DType::Bool, Scalar::Bool(b)) => Some(Scalar::Bool(b)),
        (DType::Bool, Scalar::Int(i)) if i == 0 || i == 1 => Some(Scalar::Bool(i == 1)),
        (DType::Bool, _) => None,
        (DType::I32, s) => {
            int_of(s).and_then(|i| i32::try_from(i).ok()).map(|i| Scalar::Int(i.into()))
        }
        (DType::I64, s) => int_of(s).map(Scalar::Int),
        (DType::F32, s) => Some(Scalar::Float(s.as_f64() as f32 as f64)),
        (DType::F64, s) => Some(Scalar::Float(s.as_f64())),
    }
}

fn int_of(s: Scalar) -> Option<i64> {
    match s {
        Scalar::Int(i) => Some(i),
        Scalar::Bool(b) => Some(b as i64),
        Scalar::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some(f as i64),
        Scalar::Float(_) => None,
    }
}

fn float_of(s: Scalar) -> f64 {
    s.as_f64()
}

/// Applies `f` in the precision of `dtype` (`f32` or `f64`).
fn float_unary(dtype: DType, x: f64, f32op: fn(f32) -> f32, f64op: fn(f64) -> f64) -> Scalar {
    match dtype {
        DType::F32 => Scalar::Float(f32op(x as f32) as f64),
        _ => Scalar::Float(f64op(x)),
    }
}

fn sigmoid32(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

fn sigmoid64(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// Folds a unary op on a constant of `dtype`.
pub fn fold_unary(op: UnaryOp, dtype: DType, x: Scalar) -> Option<Scalar> {
    use UnaryOp::*;
    if dtype.is_int() {
        let i = int_of(x)?;
        let wrap = |v: i64| if dtype == DType::I32 { (v as i32) as i64 } else { v };
        return match op {
            Neg => Some(Scalar::Int(wrap(i.wrapping_neg()))),
            Abs => Some(Scalar::Int(wrap(i.wrapping_abs()))),
            Sign => Some(Scalar::Int(i.signum())),
            _ => None,
        };
    }
    if dtype == DType::Bool {
        return match (op, x) {
            (LogicalNot, Scalar::Bool(b)) => Some(Scalar::Bool(!b)),
            _ => None,
        };
    }
    let v = float_of(x);
    let r = match op {
        Neg => float_unary(dtype, v, |a| -a, |a| -a),
        Abs => float_unary(dtype, v, f32::abs, f64::abs),
        Exp => float_unary(dtype, v, f32::exp, f64::exp),
        Log => float_unary(dtype, v, f32::ln, f64::ln),
        Sqrt => float_unary(dtype, v, f32::sqrt, f64::sqrt),
        Rsqrt => float_unary(dtype, v, |a| 1.0 / a.sqrt(), |a| 1.0 / a.sqrt()),
        Tanh => float_unary(dtype, v, f32::tanh, f64::tanh),
        Sigmoid => float_unary(dtype, v, sigmoid32, sigmoid64),
        Sin => float_unary(dtype, v, f32::sin, f64::sin),
        Cos => float_unary(dtype, v, f32::cos, f64::cos),
        Floor => float_unary(dtype, v, f32::floor, f64::floor),
        Ceil => float_unary(dtype, v, f32::ceil, f64::ceil),
        Round => float_unary(dtype, v, f32::round_ties_even, f64::round_ties_even),
        Reciprocal => float_unary(dtype, v, |a| 1.0 / a, |a| 1.0 / a),
        Log1p => float_unary(dtype, v, f32::ln_1p, f64::ln_1p),
        Expm1 => float_unary(dtype, v, f32::exp_m1, f64::exp_m1),
        Sign if !v.is_nan() => float_unary(dtype, v, sign32, sign64),
        Sign | Erf | LogicalNot => return None,
    };
    Some(r)
}

fn sign32(a: f32) -> f32 {
    if a > 0.0 {
        1.0
    } else if a < 0.0 {
        -1.0
    } else {
        a
    }
}

fn sign64(a: f64) -> f64 {
    if a > 0.0 {
        1.0
    } else if a < 0.0 {
        -1.0
    } else {
        a
    }
}

/// Folds a binary op whose operands are constants of `dtype` (comparisons give bools).
pub fn fold_binary(op: BinaryOp, dtype: DType, a: Scalar, b: Scalar) -> Option<Scalar> {
    use BinaryOp::*;
    if dtype == DType::Bool {
        let (Scalar::Bool(x), Scalar::Bool(y)) = (a, b) else { return None };
        return match op {
            LogicalAnd => Some(Scalar::Bool(x && y)),
            LogicalOr => Some(Scalar::Bool(x || y)),
            Eq => Some(Scalar::Bool(x == y)),
            Ne => Some(Scalar::Bool(x != y)),
            _ => None,
        };
    }
    if dtype.is_int() {
        let (x, y) = (int_of(a)?, int_of(b)?);
        let wrap = |v: i64| if dtype == DType::I32 { (v as i32) as i64 } else { v };
        let r = match op {
            Add => Scalar::Int(wrap(x.wrapping_add(y))),
            Sub => Scalar::Int(wrap(x.wrapping_sub(y))),
            Mul => Scalar::Int(wrap(x.wrapping_mul(y))),
            Maximum => Scalar::Int(x.max(y)),
            Minimum => Scalar::Int(x.min(y)),
            Eq => Scalar::Bool(x == y),
            Ne => Scalar::Bool(x != y),
            Lt => Scalar::Bool(x < y),
            Le => Scalar::Bool(x <= y),
            Gt => Scalar::Bool(x > y),
            Ge => Scalar::Bool(x >= y),
            Div | Pow | LogicalAnd | LogicalOr => return None,
        };
        return Some(r);
    }
    let (x, y) = (float_of(a), float_of(b));
    let arith = |f32op: fn(f32, f32) -> f32, f64op: fn(f64, f64) -> f64| match dtype {
        DType::F32 => Scalar::Float(f32op(x as f32, y as f32) as f64),
        _ => Scalar::Float(f64op(x, y)),
    };
    let r = match op {
        Add => arith(|p, q| p + q, |p, q| p + q),
        Sub => arith(|p, q| p - q, |p, q| p - q),
        Mul => arith(|p, q| p * q, |p, q| p * q),
        Div => arith(|p, q| p / q, |p, q| p / q),
        Pow => arith(f32::powf, f64::powf),
        Maximum | Minimum if x.is_nan() || y.is_nan() => return None,
        Maximum => arith(f32::max, f64::max),
        Minimum => arith(f32::min, f64::min),
        Eq => Scalar::Bool(x == y),
        Ne => Scalar::Bool(x != y),
        Lt => Scalar::Bool(x < y),
        Le => Scalar::Bool(x <= y),
        Gt => Scalar::Bool(x > y),
        Ge => Scalar::Bool(x >= y),
        LogicalAnd | LogicalOr => return None,
    };
    Some(r)
}

/// Folds `cast(x, to)` for a constant `x` of dtype `from`.
pub fn fold_cast(from: DType, to: DType, x: Scalar) -> Option<Scalar> {
    if from == to {
        return Some(x);
    }
    match to {
        DType::Bool => Some(Scalar::Bool(x.as_f64() != 0.0)),
        DType::F32 | DType::F64 => scalar_of_dtype(Scalar::Float(x.as_f64()), to),
        DType::I32 | DType::I64 => {
            let i = match x {
                Scalar::Bool(b) => b as i64,
                Scalar::Int(i) => i,
                // Only casts every reference implementation agrees on: finite, in range.
                Scalar::Float(f) if f.is_finite() && f.abs() < 2.0e9 => f.trunc() as i64,
                Scalar::Float(_) => return None,
            };
            Some(Scalar::Int(if to == DType::I32 { (i as i32) as i64 } else { i }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_in_the_dtype_precision() {
        let third = fold_binary(BinaryOp::Div, DType::F32, Scalar::Float(1.0), Scalar::Float(3.0));
        assert_eq!(third, Some(Scalar::Float((1.0f32 / 3.0) as f64)));
        let wrapped =
            fold_binary(BinaryOp::Add, DType::I32, Scalar::Int(i32::MAX.into()), Scalar::Int(1));
        assert_eq!(wrapped, Some(Scalar::Int(i32::MIN.into())));
        assert_eq!(fold_unary(UnaryOp::Erf, DType::F32, Scalar::Float(0.5)), None);
        assert_eq!(scalar_of_dtype(Scalar::Float(0.5), DType::I32), None);
        assert_eq!(fold_cast(DType::F64, DType::I32, Scalar::Float(-2.7)), Some(Scalar::Int(-2)));
    }
}
