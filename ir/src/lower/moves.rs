//! Moving elements along an axis to positions that depend on runtime sizes, with static ops —
//! the gradients of `slice` (a scatter into zeros) and of `concat` (a gather at a runtime
//! offset).
//!
//! `slice` takes static bounds, so neither "put `g` at the positions `start::step` of an axis
//! of runtime size `n`" nor "take the part of `g` at offset `a + b`" is one op. Both are built
//! from zeros of *derived* sizes (a `full` whose shape is a [`DimExpr`] of runtime sizes),
//! `concat`, `reshape` and static `slice`s: every step only copies elements or writes zeros,
//! so the result is exact (no arithmetic on the values: `inf` and NaN move like any number),
//! and time and memory are linear in the tensors' sizes.
//!
//! - [`unslice`] (scatter): zeros before the first selected position, the slice's elements
//!   with `|step| - 1` zeros between neighbours (the elements after the first, each with its
//!   gap as a `[k, gap + 1]` block read back as one axis), then zeros up to the axis' size.
//!   A negative step reverses `g` first and places it the same way from the other end.
//! - [`prefix`] and [`suffix`] (gather): the first or last `keep` elements of an axis of
//!   runtime size `t`. Zeros pad the axis to `rows * (keep + 1)` elements
//!   (`rows = ceil((t + 1) / (keep + 1))`, [`DimExpr::CeilDiv`]), read back as `rows` rows of
//!   `keep + 1`; the first row minus its last element is the prefix, the last row minus its
//!   first element the suffix. A window at a runtime offset is a suffix of a prefix.
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

fn d(x: Dim) -> Box<DimExpr> {
    Box::new(DimExpr::Dim(x))
}

fn konst(c: u64) -> Box<DimExpr> {
    d(Dim::Const(c))
}

/// `dims` with axis `axis` replaced by `by` (one or more axes).
fn replaced(dims: &[Dim], axis: usize, by: &[Dim]) -> Vec<Dim> {
    let mut out = dims[..axis].to_vec();
    out.extend_from_slice(by);
    out.extend_from_slice(&dims[axis + 1..]);
    out
}

fn axis_size(e: &dyn Emit, v: ValueId, axis: usize) -> Result<(TensorType, Dim), String> {
    let ty = e.value_type(v);
    let size = ty.shape.0.get(axis).copied();
    size.map(|s| (ty.clone(), s)).ok_or_else(|| format!("{} has no axis {axis}", ty.shape))
}

fn slice(
    e: &mut dyn Emit,
    v: ValueId,
    axis: usize,
    start: i64,
    end: Option<i64>,
    step: i64,
) -> Result<ValueId, String> {
    e.inferred(Op::Slice { axis: axis as u32, start, end, step }, vec![v])
}

fn reshaped(e: &mut dyn Emit, v: ValueId, dims: Vec<Dim>) -> ValueId {
    let ty = e.value_type(v);
    if ty.shape.0 == dims {
        return v;
    }
    e.typed(Op::Reshape, vec![v], TensorType { dtype: ty.dtype, shape: Shape(dims) })
}

/// `block` with zeros of `before` and `after` elements before and after it along `axis`.
fn padded(
    e: &mut dyn Emit,
    block: ValueId,
    axis: usize,
    before: Dim,
    after: Dim,
) -> Result<ValueId, String> {
    let ty = e.value_type(block);
    let zeros = |e: &mut dyn Emit, size: Dim| -> Result<Option<ValueId>, String> {
        if size == Dim::Const(0) {
            return Ok(None);
        }
        filled(e, replaced(&ty.shape.0, axis, &[size]), 0, ty.dtype).map(Some)
    };
    let (head, tail) = (zeros(e, before)?, zeros(e, after)?);
    if head.is_none() && tail.is_none() {
        return Ok(block);
    }
    let pieces = head.into_iter().chain([block]).chain(tail).collect();
    e.inferred(Op::Concat { axis: axis as u32 }, pieces)
}

/// `g`, the result of `slice(x, dim=axis, start=start, step=step)` (any `end`: it only decides
/// `g`'s size) of an `x` shaped like `target`, placed back into zeros of `target`'s shape.
/// `g`'s other axes must be `target`'s.
pub fn unslice(
    e: &mut dyn Emit,
    g: ValueId,
    target: &Shape,
    axis: usize,
    start: i64,
    step: i64,
) -> Result<ValueId, String> {
    if step == 0 {
        return Err("slice `step` cannot be zero".into());
    }
    let (ty, _) = axis_size(e, g, axis)?;
    let n = match target.0.get(axis) {
        Some(&n) if target.rank() == ty.shape.rank() => n,
        _ => return Err(format!("{} is not a slice of {target}", ty.shape)),
    };
    // Positions skipped before the first element (`step > 0`) or after it (`step < 0`):
    // `n - len(range(n)[start::±1])`, clamping as the slice does.
    let dir = step.signum();
    let tail = DimExpr::SliceLen { size: d(n), start, end: None, step: dir };
    let outside = e.derive(DimExpr::Sub(d(n), Box::new(tail)));
    let g = if step > 0 { g } else { slice(e, g, axis, -1, None, -1)? };
    let (block, len) = spread(e, g, axis, step.unsigned_abs(), n)?;
    let inside = e.derive(DimExpr::Sub(Box::new(DimExpr::Sub(d(n), d(outside))), d(len)));
    let (before, after) = if step > 0 { (outside, inside) } else { (inside, outside) };
    let placed = padded(e, block, axis, before, after)?;
    Ok(reshaped(e, placed, target.0.clone()))
}

/// `g` with `gap - 1` zeros between neighbouring elements along `axis` (none after the last),
/// and that length. `n` bounds the gap's materialised size when `g` has at most one element
/// (then no gap is needed, and a step like `i64::MAX` must not become an axis size).
fn spread(
    e: &mut dyn Emit,
    g: ValueId,
    axis: usize,
    gap: u64,
    n: Dim,
) -> Result<(ValueId, Dim), String> {
    let (_, m) = axis_size(e, g, axis)?;
    if gap <= 1 {
        return Ok((g, m));
    }
    let head = slice(e, g, axis, 0, Some(1), 1)?;
    let rest = slice(e, g, axis, 1, None, 1)?;
    let (rest_ty, k) = axis_size(e, rest, axis)?;
    // With two elements or more, `n >= 1 + gap`, so this is `gap - 1`.
    let end = i64::try_from(gap - 1).unwrap_or(i64::MAX);
    let zeros = e.derive(DimExpr::SliceLen { size: d(n), start: 0, end: Some(end), step: 1 });
    let dims = &rest_ty.shape.0;
    let column = reshaped(e, rest, replaced(dims, axis, &[k, Dim::Const(1)]));
    let z = filled(e, replaced(dims, axis, &[k, zeros]), 0, rest_ty.dtype)?;
    let pairs = e.inferred(Op::Concat { axis: axis as u32 + 1 }, vec![z, column])?;
    let (_, row) = axis_size(e, pairs, axis + 1)?;
    let spread_len = e.derive(DimExpr::Mul(d(k), d(row)));
    let flat = reshaped(e, pairs, replaced(dims, axis, &[spread_len]));
    let block = e.inferred(Op::Concat { axis: axis as u32 }, vec![head, flat])?;
    let (_, len) = axis_size(e, block, axis)?;
    Ok((block, len))
}

/// The first `keep` elements of `v` along `axis` (at most its size there).
pub fn prefix(e: &mut dyn Emit, v: ValueId, axis: usize, keep: Dim) -> Result<ValueId, String> {
    end_part(e, v, axis, keep, true)
}

/// The last `keep` elements of `v` along `axis` (at most its size there).
pub fn suffix(e: &mut dyn Emit, v: ValueId, axis: usize, keep: Dim) -> Result<ValueId, String> {
    end_part(e, v, axis, keep, false)
}

fn end_part(
    e: &mut dyn Emit,
    v: ValueId,
    axis: usize,
    keep: Dim,
    first: bool,
) -> Result<ValueId, String> {
    let (ty, t) = axis_size(e, v, axis)?;
    let dims = &ty.shape.0;
    if t == keep {
        return Ok(v);
    }
    // Rows of `keep + 1`, at least one more element than `t` in all: the row at the kept end
    // holds the `keep` elements and one element (or pad) next to them.
    let row = e.derive(DimExpr::Add(d(keep), konst(1)));
    let rows = e.derive(DimExpr::CeilDiv(Box::new(DimExpr::Add(d(t), konst(1))), d(row)));
    let pad = e.derive(DimExpr::Sub(Box::new(DimExpr::Mul(d(rows), d(row))), d(t)));
    let (before, after) = if first { (Dim::Const(0), pad) } else { (pad, Dim::Const(0)) };
    let long = padded(e, v, axis, before, after)?;
    let grid = reshaped(e, long, replaced(dims, axis, &[rows, row]));
    let part = if first {
        let top = slice(e, grid, axis, 0, Some(1), 1)?;
        slice(e, top, axis + 1, 0, Some(-1), 1)?
    } else {
        let bottom = slice(e, grid, axis, -1, None, 1)?;
        slice(e, bottom, axis + 1, 1, None, 1)?
    };
    Ok(reshaped(e, part, replaced(dims, axis, &[keep])))
}
