//! Moving elements along an axis to positions that depend on runtime sizes, with static ops.
//!
//! `slice` takes static bounds, and no composition of the IR's shape ops (`slice`, `concat`,
//! `reshape`, `broadcast_to`, `transpose`) can extract a block at an offset that is a sum of
//! runtime sizes, or scatter a strided slice back into place (both need a size such as
//! `n mod step` or `a + b - a` that only a data-dependent op could produce). What *can* be
//! built is an identity matrix of runtime size `n` — ones in column 0 of an `[n, n + 1]`
//! block, read back as `[n + 1, n]` (each row shifts by one), minus the last row — and from it
//! a 0/1 *selection matrix*, e.g. rows `start:end:step` of the identity. Multiplying a tensor
//! (axis moved last) by a selection matrix moves its elements; the cost is `O(rows * cols)`
//! per moved row, so the gradient code uses this only where the cheap static path cannot be
//! taken. (A non-finite element of the moved tensor spreads NaN to its row, since `0 * inf`
//! is NaN.)
//!
//! The builders work on any graph under construction through [`Emit`]: lowering's symbol
//! table and the autodiff engine's finished graphs both implement it.

use super::call::scalar_of;
use crate::attr::Attr;
use crate::dtype::DType;
use crate::graph::TensorType;
use crate::op::Op;
use crate::shape::{Dim, DimExpr, Shape};
use crate::ValueId;

/// A graph being built.
pub trait Emit {
    /// The type of `v`, sizes resolved.
    fn value_type(&self, v: ValueId) -> TensorType;
    /// Appends `op` with the type inference gives it.
    fn inferred(&mut self, op: Op, inputs: Vec<ValueId>) -> Result<ValueId, String>;
    /// Appends `op` with a declared type (`reshape`, `full`).
    fn typed(&mut self, op: Op, inputs: Vec<ValueId>, ty: TensorType) -> ValueId;
    /// The size `e` (a constant, an existing symbol, or a new derived one).
    fn derive(&mut self, e: DimExpr) -> Dim;
    /// Requires two sizes to be equal: lowering unifies them; a finished graph accepts only
    /// sizes that already are, or that its checks make equal (the builders then retype).
    fn same_size(&mut self, a: Dim, b: Dim) -> Result<(), String>;
}

/// A tensor of `dims` filled with `value` (an integer literal converted to `dtype`).
pub fn filled(
    e: &mut dyn Emit,
    dims: Vec<Dim>,
    value: i64,
    dtype: DType,
) -> Result<ValueId, String> {
    let value = scalar_of(&Attr::Int(value), dtype)?;
    Ok(e.typed(Op::Full { value }, Vec::new(), TensorType { dtype, shape: Shape(dims) }))
}

/// The `[n, n]` identity matrix of `dtype`.
pub fn identity(e: &mut dyn Emit, n: Dim, dtype: DType) -> Result<ValueId, String> {
    if let Some(c) = n.as_const().filter(|&c| c <= 1) {
        return filled(e, vec![Dim::Const(c), Dim::Const(c)], 1, dtype);
    }
    let ones = filled(e, vec![n, Dim::Const(1)], 1, dtype)?;
    let zeros = filled(e, vec![n, n], 0, dtype)?;
    let wide = e.inferred(Op::Concat { axis: 1 }, vec![ones, zeros])?;
    let n1 =
        e.derive(DimExpr::Add(Box::new(DimExpr::Dim(n)), Box::new(DimExpr::Dim(Dim::Const(1)))));
    let tall = e.typed(Op::Reshape, vec![wide], TensorType { dtype, shape: Shape(vec![n1, n]) });
    let op = Op::Slice { axis: 0, start: 0, end: Some(-1), step: 1 };
    let square = e.inferred(op, vec![tall])?;
    if e.value_type(square).shape.0 == [n, n] {
        return Ok(square);
    }
    Ok(e.typed(Op::Reshape, vec![square], TensorType { dtype, shape: Shape(vec![n, n]) }))
}

/// `x` with its axis `axis` (of size `k`) replaced by `x`'s values along it multiplied by the
/// `[k, m]` matrix `matrix`: output element `j` along the axis is `sum_i x[i] * matrix[i, j]`.
pub fn apply_along(
    e: &mut dyn Emit,
    x: ValueId,
    axis: usize,
    matrix: ValueId,
) -> Result<ValueId, String> {
    let ty = e.value_type(x);
    let rank = ty.shape.rank();
    let rows = e.value_type(matrix).shape;
    let (Some(&k), [mk, _]) = (ty.shape.0.get(axis), rows.0.as_slice()) else {
        return Err(format!("cannot apply a {} matrix along axis {axis} of {}", rows, ty.shape));
    };
    e.same_size(k, *mk)?;
    let matrix = match e.value_type(matrix).shape.0.as_slice() {
        [rows, cols] if *rows != k => {
            let ty = TensorType { dtype: ty.dtype, shape: Shape(vec![k, *cols]) };
            e.typed(Op::Reshape, vec![matrix], ty)
        }
        _ => matrix,
    };
    if rank == 1 {
        let row = e.typed(
            Op::Reshape,
            vec![x],
            TensorType { dtype: ty.dtype, shape: Shape(vec![Dim::Const(1), k]) },
        );
        let out = e.inferred(Op::MatMul, vec![row, matrix])?;
        let shape = Shape(e.value_type(out).shape.0.get(1).copied().into_iter().collect());
        return Ok(e.typed(Op::Reshape, vec![out], TensorType { dtype: ty.dtype, shape }));
    }
    let last = rank as u32 - 1;
    let mut perm: Vec<u32> = (0..rank as u32).filter(|&a| a != axis as u32).collect();
    perm.push(axis as u32);
    let moved = axis as u32 != last;
    let xt = if moved { e.inferred(Op::Transpose { perm: perm.clone() }, vec![x])? } else { x };
    let out = e.inferred(Op::MatMul, vec![xt, matrix])?;
    if !moved {
        return Ok(out);
    }
    let mut inverse = vec![0u32; rank];
    for (i, &p) in perm.iter().enumerate() {
        inverse[p as usize] = i as u32;
    }
    e.inferred(Op::Transpose { perm: inverse }, vec![out])
}
