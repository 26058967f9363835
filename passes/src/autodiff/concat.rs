//! The gradient of `concat`, built by the engine rather than by a `grad` block: a formula for
//! a `Tensor[]` input would need an op that returns a list, which the language does not have.
//!
//! The gradient of item `i` is the part of `grad` at item `i`'s offset along the axis. When
//! that offset is static — every item before `i` has a static size along the axis (`start`
//! counts from the front), or every item after it does (`end` counts from the back, and
//! `start` too when item `i`'s own size is static) — it is one `slice`.
//!
//! Otherwise the offset is a sum of runtime sizes, which a `slice` (static bounds) cannot
//! express and no composition of shape ops can either ([`tfn_ir::lower::select`] says why).
//! The part is then *selected*: `grad` (axis moved last) times the 0/1 matrix
//! `[zeros(s_0, s_i); ...; identity(s_i); ...; zeros(s_k, s_i)]`, whose row blocks have the
//! items' sizes `s_j`, so its rows line up with `grad`'s axis and its identity block with item
//! `i`. This is exact for finite gradients and costs `O(total * s_i)` per row of `grad`, so it
//! is only used when the static path is not available.

use super::splice::{derive_sym, emit, emit_typed};
use super::AutodiffError;
use tfn_ir::graph::{Origin, TensorType};
use tfn_ir::lower::select::{self, Emit};
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
            _ => select_item(graph, &sizes, i, axis as usize, grad, origin).map_err(unsupported)?,
        };
        grads.push(g);
    }
    Ok(grads)
}

/// Item `i`'s part of `grad` through a selection matrix (see the module docs).
fn select_item(
    graph: &mut Graph,
    sizes: &[Dim],
    i: usize,
    axis: usize,
    grad: ValueId,
    origin: &Origin,
) -> Result<ValueId, String> {
    let dtype = graph.ty(grad).dtype;
    let mut em = GraphEmit { graph, origin };
    let mut blocks = Vec::with_capacity(sizes.len());
    for (j, &s) in sizes.iter().enumerate() {
        blocks.push(if j == i {
            select::identity(&mut em, s, dtype)?
        } else {
            select::filled(&mut em, vec![s, sizes[i]], 0, dtype)?
        });
    }
    let matrix = em.inferred(Op::Concat { axis: 0 }, blocks)?;
    select::apply_along(&mut em, grad, axis, matrix)
}

/// A finished graph as a graph under construction for the [`select`] builders.
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

    fn same_size(&mut self, a: Dim, b: Dim) -> Result<(), String> {
        if tfn_ir::verify::checked_equal(self.graph, a, b) {
            Ok(())
        } else {
            Err(format!("internal error: sizes {a} and {b} differ"))
        }
    }
}

fn unsupported(reason: String) -> AutodiffError {
    AutodiffError::NotDifferentiable { op: "concat".into(), reason }
}
