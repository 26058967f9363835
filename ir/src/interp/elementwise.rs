//! Elementwise ops: unary, binary (with broadcasting), `where` and `mul_add`.
//!
//! Each (op, dtype) pair is its own monomorphised `mapv`/`Zip` loop over the one per-element
//! definition in [`super::scalar`] (which constant folding calls too).

use super::broadcast::{broadcast_shapes, view_as};
use super::scalar;
use super::{OpError, OpResult};
use crate::op::{per_variant_table, BinaryOp, UnaryOp};
use crate::tensor::Tensor;
use ndarray::{ArrayD, Zip};

/// Expands `$body` once per op of the table with `$o` bound to it as a constant, so each
/// per-element closure is compiled for one op (the match in [`scalar`] folds away). Generated
/// from the op tables (`crate::op`): exhaustive by construction.
macro_rules! per_unary {
    ($op:expr, $o:ident => $body:expr) => {
        crate::op::unary_ops!(per_variant_table!((UnaryOp, $op, $o, $body)))
    };
}

macro_rules! per_binary {
    ($op:expr, $o:ident => $body:expr) => {
        crate::op::binary_ops!(per_variant_table!((BinaryOp, $op, $o, $body)))
    };
}

pub(crate) fn unary(op: UnaryOp, t: &Tensor) -> OpResult {
    let dtype = t.dtype();
    if !op.dtypes().contains(dtype) {
        return Err(OpError::Unsupported(dtype));
    }
    // Past the table check every `scalar` call below is `Some` (a test in `scalar` checks
    // the table and the scalar definitions agree), so `unwrap_or` never picks its default.
    // Predicates give `bool` whatever the operand; integers and bools are never NaN or inf.
    let never = scalar::predicate(op, false, false).unwrap_or(false);
    Ok(per_unary!(op, OP => match t {
        Tensor::F32(a) if OP.is_predicate() => {
            Tensor::Bool(a.mapv(|x| scalar::float_predicate(OP, x).unwrap_or(false)))
        }
        Tensor::F64(a) if OP.is_predicate() => {
            Tensor::Bool(a.mapv(|x| scalar::float_predicate(OP, x).unwrap_or(false)))
        }
        Tensor::I32(a) if OP.is_predicate() => Tensor::Bool(a.mapv(|_| never)),
        Tensor::I64(a) if OP.is_predicate() => Tensor::Bool(a.mapv(|_| never)),
        Tensor::Bool(a) if OP.is_predicate() => Tensor::Bool(a.mapv(|_| never)),
        Tensor::F32(a) => Tensor::F32(a.mapv(|x| scalar::float_unary(OP, x).unwrap_or(x))),
        Tensor::F64(a) => Tensor::F64(a.mapv(|x| scalar::float_unary(OP, x).unwrap_or(x))),
        Tensor::I32(a) => Tensor::I32(a.mapv(|x| scalar::int_unary(OP, x).unwrap_or(x))),
        Tensor::I64(a) => Tensor::I64(a.mapv(|x| scalar::int_unary(OP, x).unwrap_or(x))),
        Tensor::Bool(a) => Tensor::Bool(a.mapv(|x| scalar::bool_unary(OP, x).unwrap_or(x))),
        // Lowering widens storage dtypes (`crate::storage`); the table check above rejects them.
        Tensor::I8(_) | Tensor::U8(_) | Tensor::F16(_) | Tensor::BF16(_) => {
            return Err(OpError::Unsupported(dtype))
        }
    }))
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

pub(crate) fn binary(op: BinaryOp, lhs: &Tensor, rhs: &Tensor) -> OpResult {
    let dtype = lhs.dtype();
    if !op.dtypes().contains(dtype) || rhs.dtype() != dtype {
        return Err(if rhs.dtype() != dtype {
            OpError::Internal(format!(
                "operands have different dtypes ({dtype} and {})",
                rhs.dtype()
            ))
        } else {
            OpError::Unsupported(dtype)
        });
    }
    // As in `unary`: past the table check the `scalar` calls are `Some`.
    Ok(per_binary!(op, OP => match (lhs, rhs) {
        (Tensor::F32(a), Tensor::F32(b)) if OP.is_comparison() => {
            Tensor::Bool(zip2(a, b, |x, y| scalar::compare(OP, x, y).unwrap_or(false))?)
        }
        (Tensor::F64(a), Tensor::F64(b)) if OP.is_comparison() => {
            Tensor::Bool(zip2(a, b, |x, y| scalar::compare(OP, x, y).unwrap_or(false))?)
        }
        (Tensor::I32(a), Tensor::I32(b)) if OP.is_comparison() => {
            Tensor::Bool(zip2(a, b, |x, y| scalar::compare(OP, x, y).unwrap_or(false))?)
        }
        (Tensor::I64(a), Tensor::I64(b)) if OP.is_comparison() => {
            Tensor::Bool(zip2(a, b, |x, y| scalar::compare(OP, x, y).unwrap_or(false))?)
        }
        (Tensor::F32(a), Tensor::F32(b)) => {
            Tensor::F32(zip2(a, b, |x, y| scalar::float_binary(OP, x, y).unwrap_or(x))?)
        }
        (Tensor::F64(a), Tensor::F64(b)) => {
            Tensor::F64(zip2(a, b, |x, y| scalar::float_binary(OP, x, y).unwrap_or(x))?)
        }
        (Tensor::I32(a), Tensor::I32(b)) => {
            Tensor::I32(zip2(a, b, |x, y| scalar::int_binary(OP, x, y).unwrap_or(x))?)
        }
        (Tensor::I64(a), Tensor::I64(b)) => {
            Tensor::I64(zip2(a, b, |x, y| scalar::int_binary(OP, x, y).unwrap_or(x))?)
        }
        (Tensor::Bool(a), Tensor::Bool(b)) => {
            Tensor::Bool(zip2(a, b, |x, y| scalar::bool_binary(OP, x, y).unwrap_or(x))?)
        }
        _ => return Err(OpError::Internal("operands have different dtypes".into())),
    }))
}

/// `mul_add(a, b, c)`: one rounding per element ([`scalar::float_mul_add`]), broadcasting.
pub(crate) fn mul_add(a: &Tensor, b: &Tensor, c: &Tensor) -> OpResult {
    fn zip<T: scalar::FloatElem>(
        a: &ArrayD<T>,
        b: &ArrayD<T>,
        c: &ArrayD<T>,
    ) -> Result<ArrayD<T>, OpError> {
        let shape = broadcast_shapes(&[a.shape(), b.shape(), c.shape()])?;
        let (av, bv, cv) = (view_as(a, &shape)?, view_as(b, &shape)?, view_as(c, &shape)?);
        Ok(Zip::from(&av)
            .and(&bv)
            .and(&cv)
            .map_collect(|&x, &y, &z| scalar::float_mul_add(x, y, z)))
    }
    match (a, b, c) {
        (Tensor::F32(x), Tensor::F32(y), Tensor::F32(z)) => Ok(Tensor::F32(zip(x, y, z)?)),
        (Tensor::F64(x), Tensor::F64(y), Tensor::F64(z)) => Ok(Tensor::F64(zip(x, y, z)?)),
        (Tensor::F32(_) | Tensor::F64(_), _, _) => Err(OpError::Internal(format!(
            "`mul_add` operands have different dtypes ({}, {}, {})",
            a.dtype(),
            b.dtype(),
            c.dtype()
        ))),
        _ => Err(OpError::Unsupported(a.dtype())),
    }
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
        (Tensor::I8(a), Tensor::I8(b)) => Tensor::I8(zip3(c, a, b)?),
        (Tensor::U8(a), Tensor::U8(b)) => Tensor::U8(zip3(c, a, b)?),
        (Tensor::F16(a), Tensor::F16(b)) => Tensor::F16(zip3(c, a, b)?),
        (Tensor::BF16(a), Tensor::BF16(b)) => Tensor::BF16(zip3(c, a, b)?),
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
