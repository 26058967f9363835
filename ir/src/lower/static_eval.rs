//! Compile-time evaluation of calls whose arguments are all attributes.
//!
//! Attributes are known at instantiation, so `dim - 1`, `eps * 2.0`, `not activate` or
//! `dtype == f32` (desugared to `sub`, `mul`, `logical_not`, `eq`, ...) evaluate to attributes
//! and static `if`s resolve. Ints stay ints (checked arithmetic), an int meeting a float
//! becomes a float, and `div` is true division like Python's `/`.

use crate::attr::Attr;
use crate::interp::scalar::{float_divmod, float_unary, IntElem};
use crate::op::{BinaryOp, UnaryOp};

/// Whether a call of `name` (with optional overload) on attributes is evaluated statically.
pub fn is_static_op(name: &str, overload: Option<&str>) -> bool {
    let known = matches!(
        name,
        "add"
            | "sub"
            | "mul"
            | "div"
            | "pow"
            | "floor_div"
            | "remainder"
            | "neg"
            | "abs"
            | "sign"
            | "maximum"
            | "minimum"
            | "eq"
            | "ne"
            | "lt"
            | "le"
            | "gt"
            | "ge"
            | "logical_and"
            | "logical_or"
            | "logical_not"
            | "and"
            | "or"
            | "not"
            | "atan2"
    ) || float_math(name).is_some();
    known && matches!(overload, None | Some("scalar"))
}

/// Evaluates `name(args...)`. The error is a lowercase reason.
pub fn eval(name: &str, args: &[Attr]) -> Result<Attr, String> {
    match args {
        [x] => unary(name, x),
        [x, y] => binary(name, x, y),
        _ => Err(format!("`{name}` does not take {} arguments", args.len())),
    }
}

/// The float-only unary ops (`sqrt`, `exp`, `tanh`, ...): on a literal-only argument they are
/// evaluated in `f64` with the interpreter's own definitions, so `sqrt(4.0) * exp(0.0)` is the
/// literal `2.0`, which then takes its dtype from where it is used (like any float literal),
/// or `f32` on its own.
pub fn float_math(name: &str) -> Option<UnaryOp> {
    UnaryOp::from_name(name).filter(|u| u.dtypes() == crate::dtype::DTypeSet::FLOAT)
}

fn unary(name: &str, x: &Attr) -> Result<Attr, String> {
    if let Some(op) = float_math(name) {
        let v = x.as_f64().filter(|_| !matches!(x, Attr::Bool(_)));
        let Some(v) = v else {
            return Err(format!("`{name}` cannot be applied to {} `{x}`", x.type_name()));
        };
        return float_unary(op, v)
            .map(Attr::Float)
            .ok_or_else(|| format!("`{name}` is not defined for `{x}`"));
    }
    Ok(match (name, x) {
        ("neg", Attr::Int(i)) => Attr::Int(i.checked_neg().ok_or_else(|| overflow(name))?),
        ("neg", Attr::Float(f)) => Attr::Float(-f),
        ("abs", Attr::Int(i)) => Attr::Int(i.checked_abs().ok_or_else(|| overflow(name))?),
        ("abs", Attr::Float(f)) => Attr::Float(f.abs()),
        ("sign", Attr::Int(i)) => Attr::Int(i.signum()),
        ("sign", Attr::Float(f)) => Attr::Float(float_unary(UnaryOp::Sign, *f).unwrap_or(*f)),
        ("logical_not" | "not", Attr::Bool(b)) => Attr::Bool(!b),
        _ => return Err(format!("`{name}` cannot be applied to {} `{x}`", x.type_name())),
    })
}

fn overflow(name: &str) -> String {
    format!("integer overflow in `{name}`")
}

fn binary(name: &str, x: &Attr, y: &Attr) -> Result<Attr, String> {
    let mismatch = || {
        format!("`{name}` cannot be applied to {} `{x}` and {} `{y}`", x.type_name(), y.type_name())
    };
    match name {
        "eq" | "ne" => {
            let equal = match (x.as_f64(), y.as_f64()) {
                (Some(a), Some(b)) => a == b,
                _ if std::mem::discriminant(x) == std::mem::discriminant(y) => x == y,
                _ => return Err(mismatch()),
            };
            return Ok(Attr::Bool(equal == (name == "eq")));
        }
        "logical_and" | "and" | "logical_or" | "or" => {
            let (Attr::Bool(a), Attr::Bool(b)) = (x, y) else { return Err(mismatch()) };
            let and = matches!(name, "logical_and" | "and");
            return Ok(Attr::Bool(if and { *a && *b } else { *a || *b }));
        }
        _ => {}
    }
    if let (Attr::Int(a), Attr::Int(b)) = (x, y) {
        let (a, b) = (*a, *b);
        let int = |v: Option<i64>| v.map(Attr::Int).ok_or_else(|| overflow(name));
        return match name {
            "add" => int(a.checked_add(b)),
            "sub" => int(a.checked_sub(b)),
            "mul" => int(a.checked_mul(b)),
            "pow" if b >= 0 => int(u32::try_from(b).ok().and_then(|e| a.checked_pow(e))),
            // Python's `//` and `%`; a zero divisor is an error at compile time.
            "floor_div" | "remainder" if b == 0 => {
                Err(format!("integer division by zero in `{name}`"))
            }
            "floor_div" => int(a.checked_div(b).map(|_| IntElem::floor_div(a, b))),
            "remainder" => Ok(Attr::Int(IntElem::remainder(a, b))),
            "maximum" => Ok(Attr::Int(a.max(b))),
            "minimum" => Ok(Attr::Int(a.min(b))),
            "lt" => Ok(Attr::Bool(a < b)),
            "le" => Ok(Attr::Bool(a <= b)),
            "gt" => Ok(Attr::Bool(a > b)),
            "ge" => Ok(Attr::Bool(a >= b)),
            _ => {
                let r = float_binary(name, a as f64, b as f64).ok_or_else(mismatch)?;
                check_float(name, x, y, &r)?;
                Ok(r)
            }
        };
    }
    match (x.as_f64(), y.as_f64()) {
        (Some(a), Some(b)) => {
            let r = float_binary(name, a, b).ok_or_else(mismatch)?;
            check_float(name, x, y, &r)?;
            Ok(r)
        }
        _ => Err(mismatch()),
    }
}

/// Python's rules for float attributes: dividing by zero is an error (`ZeroDivisionError`),
/// and so is a result that is not finite from finite operands (`10.0 ** 400`, and, unlike
/// Python, `1e200 * 1e200`: a literal that overflows is an error too, spec section 7).
fn check_float(name: &str, x: &Attr, y: &Attr, r: &Attr) -> Result<(), String> {
    let (Some(a), Some(b)) = (x.as_f64(), y.as_f64()) else { return Ok(()) };
    if matches!(name, "div" | "floor_div" | "remainder") && b == 0.0 {
        return Err(format!("division by zero in `{name}` (`{x}` by `{y}`)"));
    }
    match r {
        Attr::Float(v) if a.is_finite() && b.is_finite() && !v.is_finite() => Err(if v.is_nan() {
            format!("`{name}` of `{x}` and `{y}` is not a real number")
        } else {
            format!("`{name}` of `{x}` and `{y}` overflows (largest finite: {:e})", f64::MAX)
        }),
        _ => Ok(()),
    }
}

fn float_binary(name: &str, a: f64, b: f64) -> Option<Attr> {
    Some(match name {
        "add" => Attr::Float(a + b),
        "sub" => Attr::Float(a - b),
        "mul" => Attr::Float(a * b),
        "div" => Attr::Float(a / b),
        "pow" => Attr::Float(a.powf(b)),
        "floor_div" => Attr::Float(float_divmod(a, b).0),
        "remainder" => Attr::Float(float_divmod(a, b).1),
        "maximum" => Attr::Float(a.max(b)),
        "minimum" => Attr::Float(a.min(b)),
        "lt" => Attr::Bool(a < b),
        "le" => Attr::Bool(a <= b),
        "gt" => Attr::Bool(a > b),
        "ge" => Attr::Bool(a >= b),
        "atan2" => Attr::Float(crate::interp::scalar::float_binary(BinaryOp::Atan2, a, b)?),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use Attr::{Bool as B, Float as F, Int as I};

    #[test]
    fn evaluates_attribute_expressions() {
        let cases: &[(&str, &[Attr], Result<Attr, &str>)] = &[
            ("sub", &[I(-1), I(1)], Ok(I(-2))),
            ("mul", &[I(2), F(0.5)], Ok(F(1.0))),
            ("div", &[I(3), I(2)], Ok(F(1.5))),
            // Python: a zero divisor is an error, for floats too; and no inf from finite.
            ("div", &[I(5), I(0)], Err("division by zero in `div` (`5` by `0`)")),
            ("div", &[F(1.0), F(0.0)], Err("division by zero in `div` (`1.0` by `0.0`)")),
            ("remainder", &[F(1.0), F(0.0)], Err("division by zero in `remainder` (`1.0` by `0.0`)")),
            ("mul", &[F(1e200), F(1e200)], Err("`mul` of `1e200` and `1e200` overflows (largest finite: 1.7976931348623157e308)")),
            ("pow", &[F(-8.0), F(0.5)], Err("`pow` of `-8.0` and `0.5` is not a real number")),
            ("mul", &[F(f64::INFINITY), F(2.0)], Ok(F(f64::INFINITY))),
            ("pow", &[I(2), I(10)], Ok(I(1024))),
            ("atan2", &[F(1.0), I(-1)], Ok(F(0.75 * std::f64::consts::PI))),
            ("asin", &[F(1.0)], Ok(F(std::f64::consts::FRAC_PI_2))),
            ("pow", &[I(2), I(-1)], Ok(F(0.5))),
            ("sqrt", &[F(4.0)], Ok(F(2.0))),
            ("exp", &[I(0)], Ok(F(1.0))),
            ("sign", &[F(-0.0)], Ok(F(0.0))),
            ("lt", &[I(1), F(1.5)], Ok(B(true))),
            ("eq", &[Attr::DType(crate::DType::F32), Attr::DType(crate::DType::F32)], Ok(B(true))),
            ("ne", &[I(2), F(2.0)], Ok(B(false))),
            ("logical_not", &[B(true)], Ok(B(false))),
            ("logical_and", &[B(true), B(false)], Ok(B(false))),
            ("remainder", &[I(-7), I(2)], Ok(I(1))),
            ("floor_div", &[I(-7), I(2)], Ok(I(-4))),
            ("remainder", &[F(-1.0), I(3)], Ok(F(2.0))),
            ("floor_div", &[I(1), I(0)], Err("integer division by zero in `floor_div`")),
            ("floor_div", &[I(i64::MIN), I(-1)], Err("integer overflow in `floor_div`")),
            ("neg", &[I(i64::MIN)], Err("integer overflow in `neg`")),
            ("add", &[B(true), I(1)], Err("`add` cannot be applied to Bool `true` and Int `1`")),
            ("eq", &[B(true), I(1)], Err("`eq` cannot be applied to Bool `true` and Int `1`")),
        ];
        for (name, args, want) in cases {
            let got = eval(name, args);
            assert_eq!(got, want.clone().map_err(str::to_string), "{name}{args:?}");
        }
    }
}
