//! Rules for the indexed reads (`gather`, `index_select`): a read of an elementwise value is
//! the elementwise op of the reads of its operands, so the read moves towards the inputs and
//! lands on them inside the consuming loop (cross-entropy's
//! `gather(z - max(z) - log(sum(exp(z - max(z)))), t)` becomes
//! `gather(z, t) - max(z) - log(sum(...))`: no materialised log-probabilities).
//!
//! For `read(op(a, b, ...), index, axis)` with the elementwise result of shape `X`, each
//! operand is
//! - *full* (shape `X`): it is read, `read(a, index, axis)`;
//! - *broadcast along `axis`* (size 1 there, or rank-padded over it): every slot of the axis
//!   holds the same value, so the read of it is the operand itself, broadcast — for `gather`
//!   when its other sizes are 1 or the index's (the index may be smaller than `x` on those
//!   axes; lowering unifies them when the call's sizes are equal), for `index_select` when the
//!   index has rank 1 (the result keeps `X`'s rank);
//! - anything else: the rule does not apply.
//!
//! At least one operand must be full: its read keeps the index check (an out-of-range index
//! is still an error naming the op), which a rewrite to the bare broadcast operand would lose —
//! so "the read of a value broadcast along the axis is that value" applies only inside such an
//! op, never on its own.

use super::Custom::IndexOfElementwise;
use super::Rhs::Custom as C;
use super::{rule, RuleDef};
use crate::optimize::analysis::{AttrValue, TfnEGraph};
use crate::optimize::language::TfnNode;
use egg::{Id, Subst, Var};
use tfn_ir::{Dim, IndexKind, Shape};

#[rustfmt::skip]
pub const INDEXED: &[RuleDef] = &[
//       name                          lhs                            rhs                     conditions  probes
    rule("gather-of-elementwise",       "(gather ?e ?i ?ax)",          C(IndexOfElementwise),  &[],        &["(gather (sub (exp ?x) ?y) (cast i64 (sign ?x)) 1)", "(gather (mul ?x ?y) (cast i64 (sign ?y)) 0)", "(gather (neg ?x) (cast i64 (sign ?x)) 0)", "(gather (where (lt ?x ?y) ?x ?y) (cast i64 (sign ?y)) 0)"]),
    rule("index-select-of-elementwise", "(index_select ?e ?i ?ax)",    C(IndexOfElementwise),  &[],        &["(index_select (add ?x ?y) (cast i64 (sign (sum ?x (list 0) false))) 0)", "(index_select (exp ?x) (cast i64 (sign ?x)) 1)"]),
];

fn v(name: &str) -> Option<Var> {
    name.parse().ok()
}

/// How an operand of the elementwise op is read.
enum Operand {
    Full,
    Broadcast,
}

/// The right-hand side of the rules above for one match, or `None`.
pub fn index_of_elementwise(
    egraph: &mut TfnEGraph,
    kind: IndexKind,
    eclass: Id,
    subst: &Subst,
) -> Option<Id> {
    if !kind.is_read() {
        return None;
    }
    let (e, index, ax) = (*subst.get(v("?e")?)?, *subst.get(v("?i")?)?, *subst.get(v("?ax")?)?);
    let axis = match egraph[ax].data.attr {
        Some(AttrValue::Int(a)) => usize::try_from(a).ok()?,
        _ => return None,
    };
    let x = egraph[e].data.ty.clone()?.shape;
    let index_shape = egraph[index].data.ty.clone()?.shape;
    let out = egraph[eclass].data.ty.clone()?.shape;
    // The first elementwise node of the class whose operands all qualify.
    let nodes = egraph[e].nodes.clone();
    for node in nodes {
        let operands: Vec<Id> = match &node {
            TfnNode::Unary(_, [a]) | TfnNode::Cast([_, a]) => vec![*a],
            TfnNode::Binary(_, [a, b]) => vec![*a, *b],
            TfnNode::Where([c, a, b]) | TfnNode::MulAdd([c, a, b]) => vec![*c, *a, *b],
            // Not elementwise: not moved past an indexed read.
            TfnNode::Int(_)
            | TfnNode::Float(_)
            | TfnNode::Bool(_)
            | TfnNode::DType(_)
            | TfnNode::Sym(_)
            | TfnNode::List(_)
            | TfnNode::Shape(_)
            | TfnNode::Param(_)
            | TfnNode::Const(_)
            | TfnNode::Reduce(..)
            | TfnNode::ArgMax(_)
            | TfnNode::ArgMin(_)
            | TfnNode::Iota(_)
            | TfnNode::Scan(..)
            | TfnNode::CumprodGrad(_)
            | TfnNode::MatMul(_)
            | TfnNode::Reshape(_)
            | TfnNode::Transpose(_)
            | TfnNode::BroadcastTo(_)
            | TfnNode::Concat(_)
            | TfnNode::Slice(_)
            | TfnNode::Full(_)
            | TfnNode::Extern(_)
            | TfnNode::Index(..)
            | TfnNode::Random(..)
            | TfnNode::Window(..) => continue,
        };
        let roles: Option<Vec<Operand>> = operands
            .iter()
            .map(|&o| {
                let shape = &egraph[o].data.ty.as_ref()?.shape;
                if *shape == x {
                    Some(Operand::Full)
                } else if broadcast_along(kind, shape, &x, &index_shape, &out, axis) {
                    Some(Operand::Broadcast)
                } else {
                    None
                }
            })
            .collect();
        let Some(roles) = roles else { continue };
        if !roles.iter().any(|r| matches!(r, Operand::Full)) {
            continue;
        }
        let mut read = Vec::with_capacity(operands.len());
        for (&o, role) in operands.iter().zip(&roles) {
            read.push(match role {
                Operand::Full => egraph.add(TfnNode::Index(kind, vec![o, index, ax])),
                Operand::Broadcast => o,
            });
        }
        let rebuilt = match (&node, read.as_slice()) {
            (TfnNode::Unary(op, _), [a]) => TfnNode::Unary(*op, [*a]),
            (TfnNode::Cast([dtype, _]), [a]) => TfnNode::Cast([*dtype, *a]),
            (TfnNode::Binary(op, _), [a, b]) => TfnNode::Binary(*op, [*a, *b]),
            (TfnNode::Where(_), [c, a, b]) => TfnNode::Where([*c, *a, *b]),
            (TfnNode::MulAdd(_), [a, b, c]) => TfnNode::MulAdd([*a, *b, *c]),
            _ => continue,
        };
        return Some(egraph.add(rebuilt));
    }
    None
}

/// Whether an operand of shape `o` (broadcast to `x`) holds one value along `axis`, so that
/// reading it at the index is the operand itself broadcast to the result `out`.
fn broadcast_along(
    kind: IndexKind,
    o: &Shape,
    x: &Shape,
    index: &Shape,
    out: &Shape,
    axis: usize,
) -> bool {
    let rank = x.rank();
    if o.rank() > rank {
        return false;
    }
    let pad = rank - o.rank();
    let size = |k: usize| if k < pad { Dim::Const(1) } else { o.0[k - pad] };
    if size(axis) != Dim::Const(1) {
        return false;
    }
    match kind {
        // Every other size is 1 or the index's (which is then the result's).
        IndexKind::Gather => (0..rank)
            .filter(|&k| k != axis)
            .all(|k| size(k) == Dim::Const(1) || index.0.get(k) == Some(&size(k))),
        // A rank-1 index keeps x's rank and its other sizes.
        IndexKind::IndexSelect => index.rank() == 1 && out.rank() == rank,
        IndexKind::ScatterAdd | IndexKind::IndexAdd => false,
    }
}
