//! The lane dtype of a loop kernel's vector code: which dtype its vectors hold (or the scalar
//! path), and the integer width `iota`s and indices are computed in.

use super::*;

/// Picks the vector lane dtype for a plan, or `None` when it needs the scalar path (mixed
/// number dtypes, casts between number types, only bools). Bool operands are lane masks of the
/// kernel's width, loaded from bytes (a mask `where(visible, x, -inf)` in an f32 kernel), and
/// bool outputs of 4-lane kernels are stored as bytes. Integer `iota`s compared only with each
/// other (a causal mask `iota <= iota` in an f32 kernel) do not count: in vector code they are
/// computed as integers of the lane's width ([`narrow_index`]).
pub(crate) fn vector_lane(plan: &LoopPlan) -> Option<DType> {
    // Storage dtypes live in registers of their compute dtype (`storage.rs`).
    let lane = plan
        .data_operands()
        .find(|o| !o.index && o.dtype != DType::Bool)
        .map(|o| o.dtype.compute())?;
    let fits = |d: DType| d.compute() == lane || d == DType::Bool;
    let narrow = narrow_iotas(plan);
    let node_of_input = |j: usize| {
        plan.nodes.iter().position(|n| matches!(n.op, Op::Iota { .. }) && n.args == [Ref::Input(j)])
    };
    for (j, o) in plan.inputs.iter().enumerate() {
        // Not element data (see `LoopPlan::data_operands`).
        if o.key_only || o.indexed == Some(crate::plan::IndexedRole::Index) {
            continue;
        }
        let narrowed = o.index && node_of_input(j).is_some_and(|k| narrow[k]);
        if !fits(o.dtype) && !narrowed {
            return None;
        }
    }
    let stored = |d: DType| {
        d.compute() == lane || (d == DType::Bool && super::storage::stores_bool_lanes(lane))
    };
    if plan.outputs.iter().any(|o| !stored(o.dtype)) {
        return None;
    }
    for (k, n) in plan.nodes.iter().enumerate() {
        if n.dtype.compute() != lane && n.dtype != DType::Bool && !narrow[k] {
            return None;
        }
    }
    Some(lane)
}

/// Integer `iota` nodes read only by comparisons between such nodes, and not stored.
fn narrow_iotas(plan: &LoopPlan) -> Vec<bool> {
    let is_int_iota =
        |k: usize| matches!(plan.nodes[k].op, Op::Iota { .. }) && plan.nodes[k].dtype.is_int();
    let stored = |k: usize| plan.outputs.iter().any(|o| o.node == Some(k));
    (0..plan.nodes.len())
        .map(|k| {
            is_int_iota(k)
                && !stored(k)
                && plan.nodes.iter().all(|n| {
                    !n.args.contains(&Ref::Node(k))
                        || (matches!(n.op, Op::Binary(b) if b.is_comparison())
                            && n.args.iter().all(|a| matches!(a, Ref::Node(m) if is_int_iota(*m))))
                })
        })
        .collect()
}

/// The integer dtype an index of dtype `dtype` is computed in at `width`: its own, or — for an
/// integer index in a vector kernel of another lane dtype (see [`vector_lane`]) — the integer
/// of the lane's width (`i32` lanes in an f32 kernel: exact for axes shorter than 2^31, which
/// the executor checks).
pub(super) fn narrow_index(width: Width, dtype: DType) -> DType {
    match width {
        Width::Vector(t) if t != dtype && dtype.is_int() => {
            if lanes(t) == 4 {
                DType::I32
            } else {
                DType::I64
            }
        }
        _ => dtype,
    }
}
