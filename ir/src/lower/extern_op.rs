//! Lowering of `extern op` calls: an [`Op::Extern`] node whose output shape and dtype come from
//! the declaration's `shape:` and `dtype:` clauses.

use super::call::normalize_axis;
use super::call::{diag, BoundCall, Val};
use super::instantiate::Lowerer;
use crate::attr::Attr;
use crate::diagnostic::Diagnostic;
use crate::graph::TensorType;
use crate::library::{DTypeRule, Expr, ExprKind, ExternSpec, ShapeRule};
use crate::op::Op;
use crate::shape::{Dim, DimExpr, Shape};
use crate::ValueId;

impl Lowerer<'_> {
    pub(super) fn lower_extern(
        &mut self,
        spec: &ExternSpec,
        call: &BoundCall,
    ) -> Result<ValueId, Diagnostic> {
        let mut inputs = Vec::new();
        let mut attrs = Vec::new();
        for (p, v) in call.fdef.params.iter().zip(&call.vals) {
            match v {
                Val::Tensor(t) => inputs.push(*t),
                Val::List(ts) => inputs.extend(ts),
                Val::Attr(a) => attrs.push(a.clone()),
                Val::Size(_) | Val::SizeList(_) | Val::SizeFloat(_) => {
                    return Err(call.not_static(&p.name))
                }
                Val::Tuple(_) => {}
                Val::Index(_) => {
                    let msg =
                        "an extern op's attributes must be known at compile time, not in a loop";
                    return Err(super::call::diag("E0511", msg, call.span));
                }
            }
        }
        let dtype = match &spec.dtype {
            DTypeRule::Fixed(d) => *d,
            DTypeRule::SameAs(name, span) => {
                let t = self.tensor_arg(call, name, *span)?;
                self.graph.ty(t).dtype
            }
        };
        let shape = match &spec.shape {
            ShapeRule::SameAs(name, span) => {
                let t = self.tensor_arg(call, name, *span)?;
                self.ty(t).shape
            }
            ShapeRule::Broadcast(names) => {
                let mut shapes = Vec::new();
                for (name, span) in names {
                    let t = self.tensor_arg(call, name, *span)?;
                    shapes.push(self.ty(t).shape);
                }
                if let Err((i, j, code)) = self.unify_broadcast(&shapes) {
                    let msg = format!(
                        "cannot broadcast {} of shape {} with {} of shape {}",
                        call.label(&names[i].0),
                        self.syms.shown(&shapes[i]),
                        call.label(&names[j].0),
                        self.syms.shown(&shapes[j])
                    );
                    return Err(diag(code, msg, call.span));
                }
                let mut out = Shape::scalar();
                for s in &shapes {
                    let s = self.syms.resolve_shape(s);
                    out = super::broadcast_shapes(&out, &s).unwrap_or(out);
                }
                out
            }
            ShapeRule::Dims(exprs) => {
                let mut dims = Vec::new();
                for e in exprs {
                    let de = self.size_expr(call, e)?;
                    dims.push(self.syms.derive(de));
                }
                Shape(dims)
            }
        };
        let op = Op::Extern { name: call.fdef.full_name(), attrs };
        Ok(self.emit(op, inputs, TensorType { dtype, shape }, call.span))
    }

    fn tensor_arg(
        &self,
        call: &BoundCall,
        name: &str,
        span: crate::Span,
    ) -> Result<ValueId, Diagnostic> {
        match call.fdef.param(name).and_then(|(i, _)| call.vals.get(i)) {
            Some(Val::Tensor(t)) => Ok(*t),
            _ => Err(diag("E0508", format!("`{name}` is not a tensor parameter"), Some(span))),
        }
    }

    /// An integer expression of a `shape:` clause: literals, `x.size(i)`, Int parameters and
    /// `add`/`sub`/`mul`/`div` of those.
    fn size_expr(&self, call: &BoundCall, e: &Expr) -> Result<DimExpr, Diagnostic> {
        let bad =
            |what: &str| diag("E0508", format!("invalid size in `shape:`: {what}"), Some(e.span));
        match &e.kind {
            ExprKind::Literal(Attr::Int(i)) => {
                u64::try_from(*i).map(|c| DimExpr::Dim(Dim::Const(c))).map_err(|_| bad("negative"))
            }
            ExprKind::Name(n) => match call.fdef.param(n).and_then(|(i, _)| call.vals.get(i)) {
                Some(Val::Attr(Attr::Int(i))) => u64::try_from(*i)
                    .map(|c| DimExpr::Dim(Dim::Const(c)))
                    .map_err(|_| bad("negative")),
                _ => Err(bad(&format!("`{n}` is not an Int parameter"))),
            },
            ExprKind::Size { tensor, axis } => {
                let t = self.tensor_arg(call, tensor, e.span)?;
                let shape = self.ty(t).shape;
                let a = normalize_axis(*axis, shape.rank())
                    .ok_or_else(|| bad(&format!("axis {axis} of `{tensor}` is out of range")))?;
                Ok(DimExpr::Dim(shape.0[a]))
            }
            ExprKind::Call { callee, args, .. } if args.len() == 2 => {
                let a = Box::new(self.size_expr(call, &args[0].value)?);
                let b = Box::new(self.size_expr(call, &args[1].value)?);
                match callee.as_str() {
                    "add" => Ok(DimExpr::Add(a, b)),
                    "sub" => Ok(DimExpr::Sub(a, b)),
                    "mul" => Ok(DimExpr::Mul(a, b)),
                    "div" => Ok(DimExpr::Div(a, b)),
                    other => Err(bad(&format!("`{other}`"))),
                }
            }
            _ => Err(bad("expected an integer expression")),
        }
    }
}
