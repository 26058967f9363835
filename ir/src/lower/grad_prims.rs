//! Lowering of the gradient helper ops the prelude declares in `grads.tfn`: `reshape_like`,
//! `sum_to`, `unreduce`, `cast_like`, `untranspose` and `unslice`.
//!
//! They let `grad` blocks say "shaped like that tensor" when sizes are symbolic (a `reshape`
//! or `broadcast_to` takes a static `Int[]`). Each lowers to existing IR ops (`reshape`,
//! `broadcast_to`, `sum`, `cast`, `transpose`, `slice`, `full`, `concat`), so the
//! interpreter, the optimiser and the code generator need nothing new.
//!
//! `unslice` places the gradient back into zeros shaped like `like` ([`super::moves::unslice`]:
//! zeros of derived sizes before, between and after its elements): exact, linear in the size,
//! for every step, runtime size and empty slice.

use super::call::{normalize_axis, BoundCall, Val};
use super::instantiate::Lowerer;
use super::moves::{self, Emit};
use crate::attr::Attr;
use crate::diagnostic::Diagnostic;
use crate::graph::TensorType;
use crate::op::{Op, ReduceOp};
use crate::shape::DimExpr;
use crate::shape::{Dim, Shape};
use crate::span::Span;
use crate::ValueId;

const HELPERS: [&str; 6] =
    ["reshape_like", "sum_to", "unreduce", "cast_like", "untranspose", "unslice"];

/// Whether `name` is one of the gradient helper ops.
pub fn is_grad_helper(name: &str, overload: Option<&str>) -> bool {
    overload.is_none() && HELPERS.contains(&name)
}

impl Lowerer<'_> {
    /// Lowers a call of a gradient helper op; `None` when the callee is not one.
    pub(super) fn lower_grad_helper(
        &mut self,
        call: &BoundCall,
    ) -> Option<Result<Val, Diagnostic>> {
        let f = call.fdef;
        if !is_grad_helper(&f.name, f.overload.as_deref()) {
            return None;
        }
        Some(match f.name.as_str() {
            "reshape_like" => self.reshape_like(call).map(Val::Tensor),
            "sum_to" => self.sum_to(call).map(Val::Tensor),
            "unreduce" => self.unreduce(call).map(Val::Tensor),
            "cast_like" => self.cast_like(call).map(Val::Tensor),
            "untranspose" => self.untranspose(call).map(Val::Tensor),
            _ => self.unslice(call).map(Val::Tensor),
        })
    }

    fn shape_error(&self, call: &BoundCall, what: &str) -> Diagnostic {
        let msg = format!("`{}`: {what}", call.fdef.name);
        call.error("E0503", "x", msg)
    }

    /// Records that two sizes are equal (broadcast axes of size 1 excepted).
    fn unify_sizes(&mut self, call: &BoundCall, a: Dim, b: Dim) -> Result<(), Diagnostic> {
        self.syms
            .unify(a, b)
            .map(|_| ())
            .map_err(|_| self.shape_error(call, &format!("sizes {a} and {b} differ")))
    }

    fn reshape_like(&mut self, call: &BoundCall) -> Result<ValueId, Diagnostic> {
        let (x, like) = (call.tensor("x")?, call.tensor("like")?);
        let (from, to) = (self.ty(x).shape, self.ty(like).shape);
        if let (Some(a), Some(b)) = (from.as_const(), to.as_const()) {
            if a.iter().product::<u64>() != b.iter().product::<u64>() {
                return Err(self.shape_error(call, &format!("cannot reshape {from} to {to}")));
            }
        }
        Ok(self.reshape(x, to, call.span))
    }

    fn sum_to(&mut self, call: &BoundCall) -> Result<ValueId, Diagnostic> {
        let (x, like) = (call.tensor("x")?, call.tensor("like")?);
        let (from, to) = (self.ty(x).shape, self.ty(like).shape);
        let Some(lead) = from.rank().checked_sub(to.rank()) else {
            return Err(self.shape_error(call, &format!("cannot sum {from} to the larger {to}")));
        };
        let mut axes: Vec<u32> = (0..lead as u32).collect();
        for (i, &t) in to.0.iter().enumerate() {
            let f = from.0[lead + i];
            if t == Dim::Const(1) {
                if f != Dim::Const(1) {
                    axes.push((lead + i) as u32);
                }
            } else {
                self.unify_sizes(call, f, t)?;
            }
        }
        let mut v = x;
        if !axes.is_empty() {
            let op = Op::Reduce { op: ReduceOp::Sum, axes, keepdim: true };
            v = self
                .emit_inferred(op, vec![v], call.span)
                .map_err(|m| self.shape_error(call, &m))?;
        }
        Ok(self.reshape(v, self.ty(like).shape, call.span))
    }

    fn unreduce(&mut self, call: &BoundCall) -> Result<ValueId, Diagnostic> {
        let (x, like) = (call.tensor("x")?, call.tensor("like")?);
        let target = self.ty(like).shape;
        let rank = target.rank();
        let mut axes = Vec::new();
        for d in call.int_list("dims")? {
            let a = normalize_axis(d, rank).ok_or_else(|| {
                call.error("E0505", "dims", format!("dim {d} is out of range for rank {rank}"))
            })?;
            if !axes.contains(&a) {
                axes.push(a);
            }
        }
        if axes.is_empty() {
            axes = (0..rank).collect();
        }
        let from = self.ty(x).shape;
        let kept: Shape = if call.bool("keepdim")? {
            from.clone()
        } else {
            let mut dims = from.0.iter().copied();
            let with_ones =
                (0..rank)
                    .map(|i| if axes.contains(&i) { Some(Dim::Const(1)) } else { dims.next() });
            let shape: Option<Vec<Dim>> = with_ones.collect();
            match shape {
                Some(s) if dims.next().is_none() => Shape(s),
                _ => {
                    let msg = format!("{from} is not {target} reduced over {axes:?}");
                    return Err(self.shape_error(call, &msg));
                }
            }
        };
        if kept.rank() != rank {
            return Err(self.shape_error(call, &format!("cannot expand {from} to {target}")));
        }
        for (&k, &t) in kept.0.iter().zip(&target.0) {
            if k != Dim::Const(1) {
                self.unify_sizes(call, k, t)?;
            }
        }
        let v = self.reshape(x, self.syms.resolve_shape(&kept), call.span);
        let target = self.ty(like).shape;
        if self.ty(v).shape == target {
            return Ok(v);
        }
        let ty = TensorType { dtype: self.graph.ty(x).dtype, shape: target };
        Ok(self.emit_moved(Op::BroadcastTo, v, ty, call.span))
    }

    fn cast_like(&mut self, call: &BoundCall) -> Result<ValueId, Diagnostic> {
        let (x, like) = (call.tensor("x")?, call.tensor("like")?);
        let dtype = self.graph.ty(like).dtype;
        if self.graph.ty(x).dtype == dtype {
            return Ok(x);
        }
        self.emit_inferred(Op::Cast(dtype), vec![x], call.span)
            .map_err(|m| self.shape_error(call, &m))
    }

    fn untranspose(&mut self, call: &BoundCall) -> Result<ValueId, Diagnostic> {
        let x = call.tensor("x")?;
        let rank = self.graph.ty(x).shape.rank();
        let given = call.int_list("perm")?;
        let inverse: Vec<u32> = if given.is_empty() {
            (0..rank as u32).rev().collect()
        } else {
            let perm: Option<Vec<u32>> =
                given.iter().map(|&a| normalize_axis(a, rank).map(|a| a as u32)).collect();
            let Some(perm) = perm.filter(|p| super::is_permutation(p, rank)) else {
                let msg = format!("`{}` is not a permutation of rank {rank}", Attr::IntList(given));
                return Err(call.error("E0505", "perm", msg));
            };
            let mut inv = vec![0u32; rank];
            for (i, &p) in perm.iter().enumerate() {
                inv[p as usize] = i as u32;
            }
            inv
        };
        self.emit_inferred(Op::Transpose { perm: inverse }, vec![x], call.span)
            .map_err(|m| self.shape_error(call, &m))
    }

    fn unslice(&mut self, call: &BoundCall) -> Result<ValueId, Diagnostic> {
        let (x, like) = (call.tensor("x")?, call.tensor("like")?);
        let target = self.ty(like).shape;
        let rank = target.rank();
        let dim = call.int("dim")?;
        let axis = normalize_axis(dim, rank).ok_or_else(|| {
            call.error("E0505", "dim", format!("dim {dim} is out of range for rank {rank}"))
        })?;
        let (start, end, step) = (call.int("start")?, call.int("end")?, call.int("step")?);
        if step == 0 {
            return Err(call.error("E0505", "step", "slice `step` cannot be zero"));
        }
        let from = self.ty(x).shape;
        if from.rank() != rank {
            return Err(self.shape_error(call, &format!("{from} is not a slice of {target}")));
        }
        for i in (0..rank).filter(|&i| i != axis) {
            self.unify_sizes(call, from.0[i], target.0[i])?;
        }
        // `x` must be as long as the slice it stands for: a check at call time, not a
        // unification, so that `x` keeps the size of the value bound to it (a gradient graph
        // splices this formula in with `x`'s size as its argument's). `x` is then retyped to
        // the slice's length, so that the sizes computed from it stay consistent (and the
        // check, not a negative size, is what a wrong `x` fails).
        let end = Some(end).filter(|&e| e != i64::MAX);
        let size = Box::new(DimExpr::Dim(target.0[axis]));
        let len = self.syms.derive(DimExpr::SliceLen { size, start, end, step });
        let given = self.syms.resolve(from.0[axis]);
        match (len, given) {
            _ if len == given => {}
            (Dim::Const(_), Dim::Const(_)) => {
                let msg =
                    format!("{from} is not a slice of {target}: the slice has {len} elements");
                return Err(self.shape_error(call, &msg));
            }
            _ => self.syms.require_equal(DimExpr::Dim(len), given),
        }
        let mut dims = from.0.clone();
        dims[axis] = len;
        let x = self.reshape(x, Shape(dims), call.span);
        let target = self.ty(like).shape;
        let mut em = LowerEmit { lw: self, span: call.span };
        moves::unslice(&mut em, x, &target, axis, start, step)
            .map_err(|m| self.shape_error(call, &m))
    }
}

/// Lowering as a graph under construction for the [`select`] builders.
struct LowerEmit<'a, 'b> {
    lw: &'a mut Lowerer<'b>,
    span: Option<Span>,
}

impl Emit for LowerEmit<'_, '_> {
    fn value_type(&self, v: ValueId) -> TensorType {
        self.lw.ty(v)
    }

    fn inferred(&mut self, op: Op, inputs: Vec<ValueId>) -> Result<ValueId, String> {
        self.lw.emit_inferred(op, inputs, self.span)
    }

    fn typed(&mut self, op: Op, inputs: Vec<ValueId>, ty: TensorType) -> ValueId {
        self.lw.emit(op, inputs, ty, self.span)
    }

    fn derive(&mut self, e: DimExpr) -> Dim {
        self.lw.syms.derive(e)
    }
}
