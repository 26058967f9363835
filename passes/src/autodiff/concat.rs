//! The gradient of `concat`, built by the engine rather than by a `grad` block: a formula for
//! a `Tensor[]` input would need an op that returns a list, which the language does not have.
//!
//! The gradient of item `i` is the part of `grad` at item `i`'s offset along the axis. When
//! that offset is static — every item before `i` has a static size along the axis (`start`
//! counts from the front), or every item after it does (`end` counts from the back, and
//! `start` too when item `i`'s own size is static) — it is one `slice`.
//!
//! Otherwise the offset is a sum of runtime sizes, which a `slice` (static bounds) cannot
//! express. The part is then cut with [`tfn_ir::lower::moves`]: a static `slice` drops the
//! static side (the items before `i` when their sizes are static, or those after it), and
//! [`moves::prefix`]/[`moves::suffix`] keep a runtime number of elements at either end (zeros
//! padding the axis to whole rows, read back as a matrix whose first or last row is the part).
//! Only copies: exact, and linear in `grad`'s size for each such item.
//!
//! Each part has its item's size by construction, but its type may say it differently: a
//! derived size that the call decided (`check 3 == 3 + s0`, when `concat([ones3, y])` meets a
//! size 3) types `grad` as `[3]`, so `y`'s part reads `[0]` while `y` is `[s0]`. Such a part
//! is re-typed to the item's shape (a `reshape`, checked at run time).

use super::splice::{derive_sym, emit, emit_typed};
use super::AutodiffError;
use tfn_ir::graph::{Origin, TensorType};
use tfn_ir::lower::moves::{self, Emit};
use tfn_ir::shape::{Dim, DimExpr};
use tfn_ir::{Graph, Op, ValueId};

/// The gradients of the items `xs` of `concat(xs, axis)` from `grad`, each taken out of
/// `grad` (still to be fitted to the item's exact type).
pub(crate) fn concat_grads(
    graph: &mut Graph,
    xs: &[ValueId],
    axis: u32,
    grad: ValueId,
    origin: &Origin,
) -> Result<Vec<ValueId>, AutodiffError> {
    let sizes: Vec<Dim> = xs
        .iter()
        .map(|x| graph.ty(*x).shape.0.get(axis as usize).copied())
        .collect::<Option<_>>()
        .ok_or_else(|| unsupported(format!("an item has no axis {axis}")))?;
    let static_sum = |ds: &[Dim]| {
        ds.iter().try_fold(0i64, |acc, d| Some(acc + i64::try_from(d.as_const()?).ok()?))
    };
    let mut grads = Vec::new();
    for i in 0..xs.len() {
        let (before, after) = (static_sum(&sizes[..i]), static_sum(&sizes[i + 1..]));
        let own = sizes[i].as_const().and_then(|c| i64::try_from(c).ok());
        let start = match (before, after, own) {
            (Some(b), _, _) => Some(b),
            (None, Some(a), Some(o)) if a + o > 0 => Some(-(a + o)),
            _ => None,
        };
        let end = match (before, after, own) {
            (_, Some(0), _) => Some(None),
            (_, Some(a), _) => Some(Some(-a)),
            (Some(b), None, Some(o)) => Some(Some(b + o)),
            _ => None,
        };
        let g = match (start, end) {
            (Some(start), Some(end)) => {
                let op = Op::Slice { axis, start, end, step: 1 };
                emit(graph, op, vec![grad], origin).map_err(unsupported)?
            }
            _ => cut_item(graph, &sizes, i, (before, end), axis as usize, grad, origin)
                .map_err(unsupported)?,
        };
        let item = graph.ty(xs[i]).shape.clone();
        let part = graph.ty(g).clone();
        let g = if part.shape != item && part.shape.rank() == item.rank() {
            let ty = TensorType { dtype: part.dtype, shape: item };
            emit_typed(graph, Op::Reshape, vec![g], ty, origin)
        } else {
            g
        };
        grads.push(g);
    }
    Ok(grads)
}

/// Item `i`'s part of `grad` when its offset is not static: `before` is the static sum of
/// the sizes before it, `end` the static end of the part (a `slice` bound), when known.
fn cut_item(
    graph: &mut Graph,
    sizes: &[Dim],
    i: usize,
    (before, end): (Option<i64>, Option<Option<i64>>),
    axis: usize,
    grad: ValueId,
    origin: &Origin,
) -> Result<ValueId, String> {
    let mut em = GraphEmit { graph, origin };
    let own = sizes[i];
    if let Some(b) = before {
        let slice = Op::Slice { axis: axis as u32, start: b, end: None, step: 1 };
        let rest = if b == 0 { grad } else { em.inferred(slice, vec![grad])? };
        return moves::prefix(&mut em, rest, axis, own);
    }
    let upto = match end {
        Some(None) => grad,
        Some(end) => {
            em.inferred(Op::Slice { axis: axis as u32, start: 0, end, step: 1 }, vec![grad])?
        }
        None => {
            let sum = sizes[..=i]
                .iter()
                .map(|&d| DimExpr::Dim(d))
                .reduce(|a, b| DimExpr::Add(Box::new(a), Box::new(b)))
                .unwrap_or(DimExpr::Dim(Dim::Const(0)));
            let keep = em.derive(sum);
            moves::prefix(&mut em, grad, axis, keep)?
        }
    };
    moves::suffix(&mut em, upto, axis, own)
}

/// A finished graph as a graph under construction for the [`moves`] builders.
struct GraphEmit<'a> {
    graph: &'a mut Graph,
    origin: &'a Origin,
}

impl Emit for GraphEmit<'_> {
    fn value_type(&self, v: ValueId) -> TensorType {
        self.graph.ty(v).clone()
    }

    fn inferred(&mut self, op: Op, inputs: Vec<ValueId>) -> Result<ValueId, String> {
        emit(self.graph, op, inputs, self.origin)
    }

    fn typed(&mut self, op: Op, inputs: Vec<ValueId>, ty: TensorType) -> ValueId {
        emit_typed(self.graph, op, inputs, ty, self.origin)
    }

    fn derive(&mut self, e: DimExpr) -> Dim {
        derive_sym(self.graph, e)
    }
}

fn unsupported(reason: String) -> AutodiffError {
    AutodiffError::NotDifferentiable { op: "concat".into(), reason }
}
