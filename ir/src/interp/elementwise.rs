//! Elementwise ops: unary, binary (with broadcasting) and `where`.
//!
//! Each (op, dtype) pair is its own monomorphised `mapv`/`Zip` loop; the semantics are listed
//! in the module docs of [`super`].

use super::broadcast::{broadcast_shapes, view_as};
use super::{OpError, OpResult};
use crate::op::{BinaryOp, UnaryOp};
use crate::tensor::Tensor;
use ndarray::{ArrayD, Zip};

/// `f32` math through libm's single-precision functions.
mod f32m {
    pub fn exp(x: f32) -> f32 {
        libm::expf(x)
    }
    pub fn log(x: f32) -> f32 {
        libm::logf(x)
    }
    pub fn tanh(x: f32) -> f32 {
        libm::tanhf(x)
    }
    pub fn sin(x: f32) -> f32 {
        libm::sinf(x)
    }
    pub fn cos(x: f32) -> f32 {
        libm::cosf(x)
    }
    pub fn erf(x: f32) -> f32 {
        libm::erff(x)
    }
    pub fn log1p(x: f32) -> f32 {
        libm::log1pf(x)
    }
    pub fn expm1(x: f32) -> f32 {
        libm::expm1f(x)
    }
    pub fn pow(x: f32, y: f32) -> f32 {
        libm::powf(x, y)
    }
}

/// `f64` math through libm.
mod f64m {
    pub use libm::{cos, erf, exp, expm1, log, log1p, pow, sin, tanh};
}

macro_rules! float_unary {
    ($a:expr, $op:expr, $t:ty, $m:ident) => {{
        let a = $a;
        match $op {
            UnaryOp::Neg => a.mapv(|x: $t| -x),
            UnaryOp::Abs => a.mapv(|x: $t| x.abs()),
            UnaryOp::Exp => a.mapv($m::exp),
            UnaryOp::Log => a.mapv($m::log),
            UnaryOp::Sqrt => a.mapv(|x: $t| x.sqrt()),
            UnaryOp::Rsqrt => a.mapv(|x: $t| 1.0 / x.sqrt()),
            UnaryOp::Tanh => a.mapv($m::tanh),
            UnaryOp::Sigmoid => a.mapv(|x: $t| {
                if x >= 0.0 {
                    1.0 / (1.0 + $m::exp(-x))
                } else {
                    let e = $m::exp(x);
                    e / (1.0 + e)
                }
            }),
            UnaryOp::Sin => a.mapv($m::sin),
            UnaryOp::Cos => a.mapv($m::cos),
            UnaryOp::Erf => a.mapv($m::erf),
            UnaryOp::Floor => a.mapv(|x: $t| x.floor()),
            UnaryOp::Ceil => a.mapv(|x: $t| x.ceil()),
            UnaryOp::Round => a.mapv(|x: $t| x.round_ties_even()),
            UnaryOp::Sign => a.mapv(|x: $t| {
                if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else if x == 0.0 {
                    0.0
                } else {
                    x
                }
            }),
            UnaryOp::Reciprocal => a.mapv(|x: $t| 1.0 / x),
            UnaryOp::Log1p => a.mapv($m::log1p),
            UnaryOp::Expm1 => a.mapv($m::expm1),
            UnaryOp::LogicalNot => return Ok(Tensor::Bool(a.mapv(|x: $t| x == 0.0))),
        }
    }};
}

macro_rules! int_unary {
    ($a:expr, $op:expr, $t:ty, $dtype:expr) => {{
        let a = $a;
        match $op {
            UnaryOp::Neg => a.mapv(|x: $t| x.wrapping_neg()),
            UnaryOp::Abs => a.mapv(|x: $t| x.wrapping_abs()),
            UnaryOp::Sign => a.mapv(|x: $t| x.signum()),
            UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round => a.clone(),
            UnaryOp::LogicalNot => return Ok(Tensor::Bool(a.mapv(|x: $t| x == 0))),
            _ => return Err(OpError::Unsupported($dtype)),
        }
    }};
}

pub(crate) fn unary(op: UnaryOp, t: &Tensor) -> OpResult {
    Ok(match t {
        Tensor::F32(a) => Tensor::F32(float_unary!(a, op, f32, f32m)),
        Tensor::F64(a) => Tensor::F64(float_unary!(a, op, f64, f64m)),
        Tensor::I32(a) => Tensor::I32(int_unary!(a, op, i32, t.dtype())),
        Tensor::I64(a) => Tensor::I64(int_unary!(a, op, i64, t.dtype())),
        Tensor::Bool(a) => match op {
            UnaryOp::LogicalNot => Tensor::Bool(a.mapv(|x| !x)),
            _ => return Err(OpError::Unsupported(t.dtype())),
        },
    })
}

/// `f(a, b)` over the NumPy broadcast of both shapes.
fn zip2<A: Copy, B: Copy, C>(
    a: &ArrayD<A>,
    b: &ArrayD<B>,
    f: impl Fn(A, B) -> C,
) -> Result<ArrayD<C>, OpError> {
    let shape = broadcast_shapes(&[a.shape(), b.shape()])?;
    let (av, bv) = (view_as(a, &shape)?, view_as(b, &shape)?);
    Ok(Zip::from(&av).and(&bv).map_collect(|&x, &y| f(x, y)))
}

/// Comparisons and logical ops, shared by every dtype; `None` for arithmetic ops.
macro_rules! compare {
    ($a:expr, $b:expr, $op:expr, $zero:expr) => {{
        let (a, b, zero) = ($a, $b, $zero);
        match $op {
            BinaryOp::Eq => Some(zip2(a, b, |x, y| x == y)?),
            BinaryOp::Ne => Some(zip2(a, b, |x, y| x != y)?),
            BinaryOp::Lt => Some(zip2(a, b, |x, y| x < y)?),
            BinaryOp::Le => Some(zip2(a, b, |x, y| x <= y)?),
            BinaryOp::Gt => Some(zip2(a, b, |x, y| x > y)?),
            BinaryOp::Ge => Some(zip2(a, b, |x, y| x >= y)?),
            BinaryOp::LogicalAnd => Some(zip2(a, b, |x, y| x != zero && y != zero)?),
            BinaryOp::LogicalOr => Some(zip2(a, b, |x, y| x != zero || y != zero)?),
            _ => None,
        }
    }};
}

macro_rules! float_binary {
    ($a:expr, $b:expr, $op:expr, $t:ty, $m:ident) => {{
        let (a, b) = ($a, $b);
        if let Some(r) = compare!(a, b, $op, 0.0) {
            return Ok(Tensor::Bool(r));
        }
        match $op {
            BinaryOp::Add => zip2(a, b, |x: $t, y: $t| x + y)?,
            BinaryOp::Sub => zip2(a, b, |x: $t, y: $t| x - y)?,
            BinaryOp::Mul => zip2(a, b, |x: $t, y: $t| x * y)?,
            BinaryOp::Div => zip2(a, b, |x: $t, y: $t| x / y)?,
            BinaryOp::Pow => zip2(a, b, $m::pow)?,
            BinaryOp::Maximum => {
                zip2(a, b, |x: $t, y: $t| if x >= y || x.is_nan() { x } else { y })?
            }
            BinaryOp::Minimum => {
                zip2(a, b, |x: $t, y: $t| if x <= y || x.is_nan() { x } else { y })?
            }
            _ => return Err(OpError::Internal(format!("unhandled binary op `{}`", $op))),
        }
    }};
}

macro_rules! int_binary {
    ($a:expr, $b:expr, $op:expr, $t:ty, $dtype:expr) => {{
        let (a, b) = ($a, $b);
        if let Some(r) = compare!(a, b, $op, 0) {
            return Ok(Tensor::Bool(r));
        }
        match $op {
            BinaryOp::Add => zip2(a, b, |x: $t, y: $t| x.wrapping_add(y))?,
            BinaryOp::Sub => zip2(a, b, |x: $t, y: $t| x.wrapping_sub(y))?,
            BinaryOp::Mul => zip2(a, b, |x: $t, y: $t| x.wrapping_mul(y))?,
            BinaryOp::Pow => zip2(a, b, |x: $t, y: $t| {
                if y < 0 {
                    match x {
                        1 => 1,
                        -1 => {
                            if y % 2 == 0 {
                                1
                            } else {
                                -1
                            }
                        }
                        _ => 0,
                    }
                } else {
                    // Exponentiation by squaring over the bits of `y`, wrapping.
                    let (mut base, mut exp, mut acc): ($t, $t, $t) = (x, y, 1);
                    while exp > 0 {
                        if exp & 1 == 1 {
                            acc = acc.wrapping_mul(base);
                        }
                        base = base.wrapping_mul(base);
                        exp >>= 1;
                    }
                    acc
                }
            })?,
            BinaryOp::Maximum => zip2(a, b, |x: $t, y: $t| x.max(y))?,
            BinaryOp::Minimum => zip2(a, b, |x: $t, y: $t| x.min(y))?,
            _ => return Err(OpError::Unsupported($dtype)),
        }
    }};
}

pub(crate) fn binary(op: BinaryOp, lhs: &Tensor, rhs: &Tensor) -> OpResult {
    Ok(match (lhs, rhs) {
        (Tensor::F32(a), Tensor::F32(b)) => Tensor::F32(float_binary!(a, b, op, f32, f32m)),
        (Tensor::F64(a), Tensor::F64(b)) => Tensor::F64(float_binary!(a, b, op, f64, f64m)),
        (Tensor::I32(a), Tensor::I32(b)) => Tensor::I32(int_binary!(a, b, op, i32, lhs.dtype())),
        (Tensor::I64(a), Tensor::I64(b)) => Tensor::I64(int_binary!(a, b, op, i64, lhs.dtype())),
        (Tensor::Bool(a), Tensor::Bool(b)) => {
            if let Some(r) = compare!(a, b, op, false) {
                return Ok(Tensor::Bool(r));
            }
            match op {
                BinaryOp::Maximum => Tensor::Bool(zip2(a, b, |x, y| x | y)?),
                BinaryOp::Minimum => Tensor::Bool(zip2(a, b, |x, y| x & y)?),
                _ => return Err(OpError::Unsupported(lhs.dtype())),
            }
        }
        _ => {
            return Err(OpError::Internal(format!(
                "operands have different dtypes ({} and {})",
                lhs.dtype(),
                rhs.dtype()
            )))
        }
    })
}

fn zip3<T: Copy>(c: &ArrayD<bool>, a: &ArrayD<T>, b: &ArrayD<T>) -> Result<ArrayD<T>, OpError> {
    let shape = broadcast_shapes(&[c.shape(), a.shape(), b.shape()])?;
    let (cv, av, bv) = (view_as(c, &shape)?, view_as(a, &shape)?, view_as(b, &shape)?);
    Ok(Zip::from(&cv).and(&av).and(&bv).map_collect(|&c, &x, &y| if c { x } else { y }))
}

/// `where(cond, a, b)`.
pub(crate) fn select(cond: &Tensor, lhs: &Tensor, rhs: &Tensor) -> OpResult {
    let Tensor::Bool(c) = cond else {
        return Err(OpError::Internal(format!("condition is {}, not bool", cond.dtype())));
    };
    Ok(match (lhs, rhs) {
        (Tensor::Bool(a), Tensor::Bool(b)) => Tensor::Bool(zip3(c, a, b)?),
        (Tensor::I32(a), Tensor::I32(b)) => Tensor::I32(zip3(c, a, b)?),
        (Tensor::I64(a), Tensor::I64(b)) => Tensor::I64(zip3(c, a, b)?),
        (Tensor::F32(a), Tensor::F32(b)) => Tensor::F32(zip3(c, a, b)?),
        (Tensor::F64(a), Tensor::F64(b)) => Tensor::F64(zip3(c, a, b)?),
        _ => {
            return Err(OpError::Internal(format!(
                "branches have different dtypes ({} and {})",
                lhs.dtype(),
                rhs.dtype()
            )))
        }
    })
}
