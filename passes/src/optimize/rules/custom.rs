//! Right-hand sides that compute attributes or constants from the match ([`Custom`]).
//!
//! Each builder returns the e-class of the right-hand side, or `None` when the match does not
//! qualify; [`super::apply::union_checked`] then checks its type like any other rule's.

use super::{Custom, RuleDefError};
use crate::optimize::analysis::{add_constant, add_ints, add_shape, AttrValue, TfnEGraph};
use crate::optimize::fold::{fold_binary, scalar_of_dtype};
use crate::optimize::language::TfnNode;
use egg::{ENodeOrVar, Id, Pattern, Subst, Var};
use tfn_ir::lower::reduce_shape;
use tfn_ir::{BinaryOp, DType, Dim, ReduceOp, Scalar, Shape, TensorType};

/// A [`Custom`] right-hand side with the variables and reduction of its rule's left side.
#[derive(Clone, Debug)]
pub struct CustomApplier {
    kind: Custom,
    /// The reduction at the root of the left-hand side, if any.
    reduce: Option<ReduceOp>,
    /// The indexed op at the root of the left-hand side, if any.
    index: Option<tfn_ir::IndexKind>,
}

fn v(name: &str) -> Var {
    // Names are literals of this file.
    name.parse().unwrap_or_else(|_| unreachable!("`{name}` is a valid pattern variable"))
}

impl CustomApplier {
    pub fn new(kind: Custom, lhs: &str) -> Result<CustomApplier, RuleDefError> {
        let pattern: Pattern<TfnNode> = lhs
            .parse()
            .map_err(|e| RuleDefError { name: lhs.into(), message: format!("lhs: {e}") })?;
        let reduce = match pattern.ast.as_ref().last() {
            Some(ENodeOrVar::ENode(TfnNode::Reduce(op, _))) => Some(*op),
            _ => None,
        };
        let index = match pattern.ast.as_ref().last() {
            Some(ENodeOrVar::ENode(TfnNode::Index(k, _))) => Some(*k),
            _ => None,
        };
        Ok(CustomApplier { kind, reduce, index })
    }

    /// Builds the right-hand side for one match.
    pub fn build(&self, egraph: &mut TfnEGraph, eclass: Id, subst: &Subst) -> Option<Id> {
        let class_ty = egraph[eclass].data.ty.clone()?;
        match self.kind {
            Custom::Splat(value) => {
                let literal = if class_ty.dtype.is_float() {
                    Scalar::Float(value)
                } else {
                    Scalar::Int(value as i64)
                };
                let scalar = scalar_of_dtype(literal, class_ty.dtype)?;
                Some(add_constant(egraph, &class_ty, scalar))
            }
            Custom::ComposePerms => {
                let (x, p, q) =
                    (*subst.get(v("?x"))?, ints(egraph, subst, "?p")?, ints(egraph, subst, "?q")?);
                let composed: Vec<i64> =
                    q.iter().map(|&i| p.get(i as usize).copied()).collect::<Option<_>>()?;
                if composed.iter().enumerate().all(|(i, &a)| a == i as i64) {
                    return Some(x);
                }
                let perm = add_ints(egraph, &composed);
                Some(egraph.add(TfnNode::Transpose([x, perm])))
            }
            Custom::MulByReciprocal => {
                let (x, c) = (*subst.get(v("?x"))?, *subst.get(v("?c"))?);
                let data = &egraph[c].data;
                let (value, ty) = (data.constant_f64()?, data.ty.clone()?);
                let reciprocal = scalar_of_dtype(Scalar::Float(1.0 / value), ty.dtype)?;
                let r = add_constant(egraph, &ty, reciprocal);
                Some(egraph.add(TfnNode::Binary(BinaryOp::Mul, [x, r])))
            }
            Custom::ReduceOfBroadcast => self.reduce_of_broadcast(egraph, subst),
            Custom::FactorOut => super::fma::factor_out(egraph, subst),
            Custom::IndexOfElementwise => {
                super::indexed::index_of_elementwise(egraph, self.index?, eclass, subst)
            }
            Custom::ReduceOfSplat => {
                let x = *subst.get(v("?x"))?;
                let data = &egraph[x].data;
                let (c, in_ty) = (data.constant?, data.ty.clone()?);
                let count = reduced_count(&in_ty.shape, &ints(egraph, subst, "?axes")?)?;
                let value = self.reduce_splat(c, count, class_ty.dtype)?;
                Some(add_constant(egraph, &class_ty, value))
            }
        }
    }

    /// The value of reducing `count` copies of `c` (sum: `c * count`, in the dtype).
    fn reduce_splat(&self, c: Scalar, count: u64, dtype: DType) -> Option<Scalar> {
        match self.reduce? {
            ReduceOp::Sum => {
                let n = scalar_of_dtype(Scalar::Int(i64::try_from(count).ok()?), dtype)?;
                fold_binary(BinaryOp::Mul, dtype, c, n)
            }
            ReduceOp::Mean | ReduceOp::Max | ReduceOp::Min => Some(c),
            ReduceOp::Prod => None,
        }
    }

    /// `reduce(broadcast_to(x, s), axes)` where every reduced axis is one that the broadcast
    /// created (x has size 1 there, or x is rank 0) and has a constant, non-zero size.
    fn reduce_of_broadcast(&self, egraph: &mut TfnEGraph, subst: &Subst) -> Option<Id> {
        let x = *subst.get(v("?x"))?;
        let x_ty = egraph[x].data.ty.clone()?;
        let target = match &egraph[*subst.get(v("?s"))?].data.attr {
            Some(AttrValue::Dims(d)) => Shape(d.clone()),
            _ => return None,
        };
        let axes = ints(egraph, subst, "?axes")?;
        let keepdim = matches!(egraph[*subst.get(v("?k"))?].data.attr, Some(AttrValue::Bool(true)));
        let same_rank = x_ty.shape.rank() == target.rank();
        if !(x_ty.shape.rank() == 0 || same_rank) {
            return None;
        }
        if same_rank && !axes.iter().all(|&a| x_ty.shape.0.get(a as usize) == Some(&Dim::Const(1)))
        {
            return None;
        }
        let count = reduced_count(&target, &axes)?;
        let scaled = match self.reduce? {
            ReduceOp::Sum => {
                let n = scalar_of_dtype(Scalar::Int(i64::try_from(count).ok()?), x_ty.dtype)?;
                let n = add_constant(
                    egraph,
                    &TensorType { dtype: x_ty.dtype, shape: Shape::scalar() },
                    n,
                );
                egraph.add(TfnNode::Binary(BinaryOp::Mul, [x, n]))
            }
            ReduceOp::Mean | ReduceOp::Max | ReduceOp::Min => x,
            ReduceOp::Prod => return None,
        };
        let kept = if same_rank && !keepdim {
            let axes32: Vec<u32> = axes.iter().map(|&a| a as u32).collect();
            let shape = add_shape(egraph, &reduce_shape(&x_ty.shape, &axes32, false));
            egraph.add(TfnNode::Reshape([scaled, shape]))
        } else {
            scaled
        };
        // `union_checked` adds the final `broadcast_to` when the shapes still differ.
        Some(kept)
    }
}

fn ints(egraph: &TfnEGraph, subst: &Subst, name: &str) -> Option<Vec<i64>> {
    match &egraph[*subst.get(v(name))?].data.attr {
        Some(AttrValue::Ints(p)) => Some(p.clone()),
        _ => None,
    }
}

/// The number of elements reduced per output element, when every reduced size is a constant
/// greater than zero.
fn reduced_count(shape: &Shape, axes: &[i64]) -> Option<u64> {
    axes.iter().try_fold(1u64, |n, &a| match shape.0.get(usize::try_from(a).ok()?) {
        Some(Dim::Const(d)) if *d > 0 => n.checked_mul(*d),
        _ => None,
    })
}
