//! The gradient of `concat`, built by the engine rather than by a `grad` block: a formula for
//! a `Tensor[]` input would need an op that returns a list, which the language does not have.
//!
//! The gradient of item `i` is the slice of `grad` at item `i`'s offset along the axis. A
//! `slice` takes static bounds, so the offset must be static: either every item before `i`
//! has a static size along the axis (`start` counts from the front), or every item after it
//! does (`end` counts from the back, and `start` too when item `i`'s own size is static).
//! Otherwise the gradient is reported as unsupported.

use super::splice::emit;
use super::AutodiffError;
use tfn_ir::graph::Origin;
use tfn_ir::shape::Dim;
use tfn_ir::{Graph, Op, ValueId};

/// The gradients of the items `xs` of `concat(xs, axis)` from `grad`, each sliced out of
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
        let (Some(start), Some(end)) = (start, end) else {
            return Err(unsupported(format!(
                "the offset of item {i} along axis {axis} depends on several symbolic sizes \
                 (give all items but one a static size along that axis)"
            )));
        };
        let op = Op::Slice { axis, start, end, step: 1 };
        grads.push(emit(graph, op, vec![grad], origin).map_err(unsupported)?);
    }
    Ok(grads)
}

fn unsupported(reason: String) -> AutodiffError {
    AutodiffError::NotDifferentiable { op: "concat".into(), reason }
}
