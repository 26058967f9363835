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
//!
//! **Storage dtypes.** No op computes in `f16`/`bf16` (`tfn_ir::storage`), so the sums here —
//! of broadcast axes, and of the contributions of a value used several times — run in the
//! compute dtype (`f32`) and round once, like lowering's excess precision: a contribution
//! that is a rounding of an `f32` value (the gradient of the `cast` lowering widened a
//! parameter with) is added unrounded. Likewise [`keep_gradients_wide`]: a gradient the
//! backward pass rounds to `f16` and widens again (a formula reading it) is read unrounded.
//! So a gradient is rounded where it leaves the graph, and an `f16` gradient is the `f32`
//! computation's gradient rounded to `f16`.

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
    // The formula's own place in its `grad` block, else the call's.
    let span = graph.node(v).origin.span.or(origin.span);
    let mismatch = |graph: &Graph, v: ValueId| AutodiffError::ShapeMismatch {
        function: what.0.to_string(),
        input: what.1.to_string(),
        got: graph.ty(v).to_string(),
        want: target.to_string(),
        span,
    };
    let internal = |m: String| AutodiffError::ShapeMismatch {
        function: what.0.to_string(),
        input: what.1.to_string(),
        got: m,
        want: target.to_string(),
        span,
    };
    let mut v = v;
    if graph.ty(v).dtype.is_float() != target.dtype.is_float() {
        return Err(mismatch(graph, v));
    }
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
        v = emit_computing(graph, op, vec![v], origin).map_err(internal)?;
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
    // 4. Same sizes computed differently: equal only if the call's sizes make them so, which
    // binding checks before anything runs (the JIT's reshape trusts its type).
    if same_up_to_derived(graph, &shape, &target.shape) {
        for (&got, &want) in shape.0.iter().zip(&target.shape.0) {
            if got != want && !graph.checks.contains(&(got, want)) {
                graph.checks.push((got, want));
            }
        }
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

/// Adds `contribution` (already fitted) into the gradient slot `slot`; contributions of a
/// storage dtype add in its compute dtype (see the module docs).
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
            emit_computing(graph, op, vec![prev, contribution], origin).map_err(|reason| {
                AutodiffError::Accumulate {
                    first: graph.ty(prev).to_string(),
                    second: graph.ty(contribution).to_string(),
                    reason,
                }
            })?
        }
    });
    Ok(())
}

/// Appends `op` (a sum or an addition) on `inputs` of one dtype; for a storage dtype the op
/// table refuses, it runs in the compute dtype on the inputs widened — an input that is a
/// rounding of a compute-dtype value is read unrounded — and the result is rounded back.
fn emit_computing(
    graph: &mut Graph,
    op: Op,
    inputs: Vec<ValueId>,
    origin: &Origin,
) -> Result<ValueId, String> {
    let dtype = match inputs.first() {
        Some(&v) => graph.ty(v).dtype,
        None => return emit(graph, op, inputs, origin),
    };
    let same = inputs.iter().all(|&v| graph.ty(v).dtype == dtype);
    if !same || !tfn_ir::storage::needs_widening(&op, dtype) {
        return emit(graph, op, inputs, origin);
    }
    let wide = dtype.compute();
    let mut widened = Vec::with_capacity(inputs.len());
    for v in inputs {
        let node = graph.node(v);
        let unrounded = match (&node.op, node.inputs.as_slice()) {
            (Op::Cast(to), &[w]) if *to == dtype && graph.ty(w).dtype == wide => Some(w),
            _ => None,
        };
        widened.push(match unrounded {
            Some(w) => w,
            None => emit(graph, Op::Cast(wide), vec![v], origin)?,
        });
    }
    let out = emit(graph, op, widened, origin)?;
    emit(graph, Op::Cast(dtype), vec![out], origin)
}

/// Excess precision for gradients: in the nodes from `first` on (the backward pass), a
/// widening `cast` of a rounding `cast` of a backward value (`f32 → f16 → f32`) becomes that
/// value, so a 16-bit float gradient is not rounded between the formulas that compute it. The
/// forward nodes keep their roundings (they are the function's semantics).
pub(crate) fn keep_gradients_wide(graph: &mut Graph, first: usize) {
    let mut subst: Vec<Option<ValueId>> = vec![None; graph.nodes.len()];
    let resolve = |subst: &[Option<ValueId>], v: ValueId| subst[v.index()].unwrap_or(v);
    for i in first..graph.nodes.len() {
        let inputs: Vec<ValueId> =
            graph.nodes[i].inputs.iter().map(|&v| resolve(&subst, v)).collect();
        graph.nodes[i].inputs = inputs;
        let node = &graph.nodes[i];
        let (Op::Cast(wide), &[narrow]) = (&node.op, node.inputs.as_slice()) else { continue };
        if narrow.index() < first {
            continue;
        }
        let rounding = graph.node(narrow);
        let (Op::Cast(storage), &[w]) = (&rounding.op, rounding.inputs.as_slice()) else {
            continue;
        };
        let float16 = matches!(storage, tfn_ir::DType::F16 | tfn_ir::DType::BF16);
        if float16 && storage.compute() == *wide && graph.ty(w).dtype == *wide {
            subst[i] = Some(w);
        }
    }
    let outputs: Vec<ValueId> = graph.outputs.iter().map(|&v| resolve(&subst, v)).collect();
    graph.outputs = outputs;
}

#[cfg(test)]
mod tests {
    use super::*;
    use tfn_ir::graph::GraphParam;
    use tfn_ir::DType;

    fn param(graph: &mut Graph, dtype: DType) -> ValueId {
        let ty = TensorType { dtype, shape: Shape(vec![Dim::Const(3)]) };
        let index = graph.params.len() as u32;
        graph.params.push(GraphParam { name: format!("p{index}"), ty: ty.clone() });
        graph.push(Op::Param(index), Vec::new(), ty, Origin::default())
    }

    /// Contributions of a storage dtype add in f32, unrounded when they are roundings of f32
    /// values, and the sum rounds once.
    #[test]
    fn half_contributions_add_in_f32_and_round_once() {
        let mut graph = Graph::default();
        let origin = Origin::default();
        let (a, b) = (param(&mut graph, DType::F32), param(&mut graph, DType::F32));
        let ha = emit(&mut graph, Op::Cast(DType::F16), vec![a], &origin).unwrap();
        let hb = emit(&mut graph, Op::Cast(DType::F16), vec![b], &origin).unwrap();
        let h = param(&mut graph, DType::F16);
        let mut slot = None;
        for v in [ha, hb, h] {
            accumulate(&mut graph, &mut slot, v, &origin).unwrap();
        }
        let total = slot.unwrap();
        assert_eq!(graph.ty(total).dtype, DType::F16);
        let text = tfn_ir::print_graph(&graph);
        // a + b in f32, plus h widened, rounded once.
        let adds: Vec<&tfn_ir::Node> =
            graph.nodes.iter().filter(|n| matches!(n.op, Op::Binary(_))).collect();
        assert_eq!(adds.len(), 2, "{text}");
        assert!(adds.iter().all(|n| n.ty.dtype == DType::F32), "{text}");
        assert_eq!(adds[0].inputs, vec![a, b], "{text}");
    }

    /// Contributions that cannot add are an error saying so, with both types.
    #[test]
    fn contributions_that_cannot_add_are_a_readable_error() {
        let mut graph = Graph::default();
        let (a, b) = (param(&mut graph, DType::F32), param(&mut graph, DType::F64));
        let mut slot = Some(a);
        let e = accumulate(&mut graph, &mut slot, b, &Origin::default()).unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with(
                "internal error: cannot add gradient contributions of types f32[3] and f64[3]"
            ),
            "{text}"
        );
        assert_eq!(e.diagnostics()[0].code, "E0809");
    }
}
