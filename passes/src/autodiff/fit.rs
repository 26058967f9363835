//! Fitting a gradient contribution to the type of the value it is the gradient of, and adding
//! contributions up.
//!
//! A formula computes its value at the op's output shape or anything that broadcasts with it;
//! the gradient of an input must have the input's exact type. In order:
//! 1. a different dtype is cast;
//! 2. axes along which the input was broadcast (leading extra axes, and axes where the input
//!    has size 1 and the contribution does not) are summed away — NumPy broadcasting reversed;
//! 3. a contribution that is smaller than the input (e.g. a constant `0.0`) is broadcast to it;
//! 4. a contribution whose shape equals the input's up to sizes computed in different ways
//!    (derived sizes of `slice`/`concat` gradients) is re-typed by a `reshape`, which the
//!    runtime checks.
//!
//! Anything else is a wrong formula, reported as [`AutodiffError::ShapeMismatch`].

use super::splice::{emit, emit_typed};
use super::AutodiffError;
use tfn_ir::graph::{Origin, TensorType};
use tfn_ir::lower::broadcast_shapes;
use tfn_ir::shape::{Dim, Shape, SymDef};
use tfn_ir::{Graph, Op, ReduceOp, ValueId};

/// `v` converted to exactly `target`'s type (see the module docs).
pub(crate) fn fit(
    graph: &mut Graph,
    v: ValueId,
    target: &TensorType,
    origin: &Origin,
    what: (&str, &str),
) -> Result<ValueId, AutodiffError> {
    let mismatch = |graph: &Graph, v: ValueId| AutodiffError::ShapeMismatch {
        function: what.0.to_string(),
        input: what.1.to_string(),
        got: graph.ty(v).to_string(),
        want: target.to_string(),
    };
    let internal = |m: String| AutodiffError::ShapeMismatch {
        function: what.0.to_string(),
        input: what.1.to_string(),
        got: m,
        want: target.to_string(),
    };
    let mut v = v;
    if graph.ty(v).dtype != target.dtype {
        v = emit(graph, Op::Cast(target.dtype), vec![v], origin).map_err(internal)?;
    }
    let shape = graph.ty(v).shape.clone();
    if shape == target.shape {
        return Ok(v);
    }
    // 2. Sum broadcast axes away.
    let lead = shape.rank().saturating_sub(target.shape.rank());
    let axes: Vec<u32> = (0..shape.rank())
        .filter(|&i| {
            i < lead
                || (target.shape.0.get(i - lead) == Some(&Dim::Const(1))
                    && shape.0[i] != Dim::Const(1))
        })
        .map(|i| i as u32)
        .collect();
    if !axes.is_empty() {
        let op = Op::Reduce { op: ReduceOp::Sum, axes, keepdim: true };
        v = emit(graph, op, vec![v], origin).map_err(internal)?;
    }
    if lead > 0 {
        let kept = Shape(graph.ty(v).shape.0[lead..].to_vec());
        let ty = TensorType { dtype: target.dtype, shape: kept };
        v = emit_typed(graph, Op::Reshape, vec![v], ty, origin);
    }
    let shape = graph.ty(v).shape.clone();
    if shape == target.shape {
        return Ok(v);
    }
    // 3. Broadcast a smaller contribution.
    if broadcast_shapes(&shape, &target.shape).as_ref() == Some(&target.shape) {
        return Ok(emit_typed(graph, Op::BroadcastTo, vec![v], target.clone(), origin));
    }
    // 4. Same sizes computed differently.
    if same_up_to_derived(graph, &shape, &target.shape) {
        return Ok(emit_typed(graph, Op::Reshape, vec![v], target.clone(), origin));
    }
    Err(mismatch(graph, v))
}

/// Whether two shapes have the same rank and each axis pair is equal or involves a derived
/// size (which may well be equal at run time).
fn same_up_to_derived(graph: &Graph, a: &Shape, b: &Shape) -> bool {
    let derived = |d: &Dim| match d {
        Dim::Sym(s) => matches!(graph.syms.get(s.0 as usize), Some(SymDef::Derived(_))),
        Dim::Const(_) => false,
    };
    a.rank() == b.rank() && a.0.iter().zip(&b.0).all(|(x, y)| x == y || derived(x) || derived(y))
}

/// Adds `contribution` (already fitted) into the gradient slot `slot`.
pub(crate) fn accumulate(
    graph: &mut Graph,
    slot: &mut Option<ValueId>,
    contribution: ValueId,
    origin: &Origin,
) -> Result<(), AutodiffError> {
    *slot = Some(match *slot {
        None => contribution,
        Some(prev) => {
            let op = Op::Binary(tfn_ir::BinaryOp::Add);
            emit(graph, op, vec![prev, contribution], origin).map_err(|m| {
                AutodiffError::ShapeMismatch {
                    function: "add".into(),
                    input: "gradient".into(),
                    got: m,
                    want: graph.ty(prev).to_string(),
                }
            })?
        }
    });
    Ok(())
}
