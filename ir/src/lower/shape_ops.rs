//! Builders of the shape-changing primitives whose checks are more than a table lookup:
//! `matmul` (1-D promotion, batch broadcasting), `reshape` (one inferred `-1` size),
//! `broadcast_to` and `concat`.

use super::call::{diag, BoundCall, SizeItem};
use super::instantiate::Lowerer;
use crate::attr::Attr;
use crate::diagnostic::Diagnostic;
use crate::graph::TensorType;
use crate::op::Op;
use crate::shape::{Dim, DimExpr, Shape};
use crate::span::Span;

impl Lowerer<'_> {
    /// A `Reshape` to `shape`, or `v` itself when the shape is unchanged.
    pub(super) fn reshape(
        &mut self,
        v: crate::ValueId,
        shape: Shape,
        span: Option<Span>,
    ) -> crate::ValueId {
        let ty = self.ty(v);
        if ty.shape == shape {
            return v;
        }
        self.emit_moved(Op::Reshape, v, TensorType { dtype: ty.dtype, shape }, span)
    }

    pub(super) fn matmul(&mut self, call: &BoundCall) -> Result<crate::ValueId, Diagnostic> {
        let (a, b) = (call.tensor("a")?, call.tensor("b")?);
        let (sa, sb) = (self.ty(a).shape, self.ty(b).shape);
        let describe = |sa: &Shape, sb: &Shape| {
            format!("{} of shape {sa} by {} of shape {sb}", call.label("a"), call.label("b"))
        };
        if sa.rank() == 0 || sb.rank() == 0 {
            let msg = format!("cannot multiply {}: `matmul` needs rank >= 1", describe(&sa, &sb));
            return Err(diag("E0503", msg, call.span));
        }
        let (a_vec, b_vec) = (sa.rank() == 1, sb.rank() == 1);
        let a2 =
            if a_vec { self.reshape(a, Shape(vec![Dim::Const(1), sa.0[0]]), call.span) } else { a };
        let b2 =
            if b_vec { self.reshape(b, Shape(vec![sb.0[0], Dim::Const(1)]), call.span) } else { b };
        let (s2a, s2b) = (self.ty(a2).shape, self.ty(b2).shape);
        let (ka, kb) = (s2a.0[s2a.rank() - 1], s2b.0[s2b.rank() - 2]);
        if self.syms.unify(ka, kb).is_err() {
            let msg =
                format!("cannot multiply {}: inner sizes {ka} and {kb} differ", describe(&sa, &sb));
            return Err(diag("E0503", msg, call.span));
        }
        let batch_a = Shape(s2a.0[..s2a.rank() - 2].to_vec());
        let batch_b = Shape(s2b.0[..s2b.rank() - 2].to_vec());
        if let Err((_, _, code)) = self.unify_broadcast(&[batch_a, batch_b]) {
            let (sa, sb) = (self.syms.shown(&sa), self.syms.shown(&sb));
            let msg =
                format!("cannot multiply {}: batch axes do not broadcast", describe(&sa, &sb));
            return Err(diag(code, msg, call.span));
        }
        let out = self
            .emit_inferred(Op::MatMul, vec![a2, b2], call.span)
            .map_err(|m| diag("E0503", m, call.span))?;
        if !a_vec && !b_vec {
            return Ok(out);
        }
        let dims = self.ty(out).shape.0;
        let n = dims.len();
        let kept = dims
            .iter()
            .enumerate()
            .filter(|(i, _)| !((a_vec && *i == n - 2) || (b_vec && *i == n - 1)));
        let shape = Shape(kept.map(|(_, d)| *d).collect());
        Ok(self.reshape(out, shape, call.span))
    }

    /// A list of non-negative sizes (`full`, `broadcast_to`); items may be sizes of the call.
    pub(super) fn static_sizes(
        &mut self,
        call: &BoundCall,
        param: &str,
    ) -> Result<Vec<Dim>, Diagnostic> {
        let items = call.size_list(param)?;
        self.shape_dims(&items, |s| {
            call.error("E0503", param, format!("invalid size {s} in `{param}`"))
        })
    }

    pub(super) fn reshape_op(&mut self, call: &BoundCall) -> Result<crate::ValueId, Diagnostic> {
        let x = call.tensor("x")?;
        let in_shape = self.ty(x).shape;
        let items = call.size_list("shape")?;
        if items.iter().any(|i| matches!(i, SizeItem::Size(_))) {
            return self.reshape_to_sizes(call, x, &items);
        }
        let target = call.int_list("shape")?;
        let shown = self.syms.shown(&in_shape);
        let fail_with = |code, why: String| {
            let msg = format!(
                "cannot reshape {} of shape {shown} to {}{why}",
                call.label("x"),
                Attr::IntList(target.clone())
            );
            call.error(code, "shape", msg)
        };
        let fail = |why: String| fail_with("E0503", why);
        if target.iter().filter(|&&t| t == -1).count() > 1 {
            return Err(fail(": only one size can be -1".into()));
        }
        if let Some(bad) = target.iter().find(|&&t| t < -1) {
            return Err(fail(format!(": invalid size {bad}")));
        }
        let syms: Vec<Dim> =
            in_shape.0.iter().copied().filter(|d| d.as_const().is_none()).collect();
        let konst = in_shape.0.iter().filter_map(|d| d.as_const()).try_fold(1u64, u64::checked_mul);
        let known =
            target.iter().filter(|&&t| t >= 0).try_fold(1u64, |acc, &t| acc.checked_mul(t as u64));
        let (Some(konst), Some(known)) = (konst, known) else {
            return Err(fail(": sizes overflow".into()));
        };
        // With the call's sizes, a count that cannot fit is reported here, at the op.
        let count = in_shape.0.iter().try_fold(1u64, |n, d| n.checked_mul(self.syms.hint(*d)?));
        let has_auto = target.contains(&-1);
        if let Some(n) = count.filter(|_| !syms.is_empty()) {
            if (has_auto && known != 0 && n % known != 0) || (!has_auto && n != known) {
                return Err(fail_with("E0510", format!(" ({n} elements)")));
            }
        }
        let mut dims: Vec<Dim> = target.iter().map(|&t| Dim::Const(t.max(0) as u64)).collect();
        match target.iter().position(|&t| t == -1) {
            Some(pos) => {
                if known == 0 {
                    return Err(fail(": the -1 size is ambiguous next to a 0".into()));
                }
                dims[pos] = if syms.is_empty() {
                    if konst % known != 0 {
                        return Err(fail(String::new()));
                    }
                    Dim::Const(konst / known)
                } else {
                    let product = syms[1..].iter().fold(DimExpr::Dim(syms[0]), |acc, s| {
                        DimExpr::Mul(Box::new(acc), Box::new(DimExpr::Dim(*s)))
                    });
                    let e = if konst % known == 0 {
                        DimExpr::Mul(
                            Box::new(product),
                            Box::new(DimExpr::Dim(Dim::Const(konst / known))),
                        )
                    } else {
                        let scaled = DimExpr::Mul(
                            Box::new(product),
                            Box::new(DimExpr::Dim(Dim::Const(konst))),
                        );
                        DimExpr::Div(Box::new(scaled), Box::new(DimExpr::Dim(Dim::Const(known))))
                    };
                    self.syms.derive(e)
                };
            }
            None => match syms.as_slice() {
                [] if konst != known => return Err(fail(String::new())),
                // A constant 0 size: no element whatever the symbolic sizes are (NumPy).
                _ if konst == 0 => {
                    if known != 0 {
                        return Err(fail(String::new()));
                    }
                }
                [one] => {
                    if konst == 0 || known % konst != 0 {
                        return Err(fail(String::new()));
                    }
                    self.syms
                        .unify(*one, Dim::Const(known / konst))
                        .map_err(|_| fail(String::new()))?;
                }
                [] => {}
                // Several symbolic sizes: the call checks their product.
                [first, rest @ ..] => {
                    let product = rest.iter().fold(DimExpr::Dim(*first), |acc, s| {
                        DimExpr::Mul(Box::new(acc), Box::new(DimExpr::Dim(*s)))
                    });
                    let count =
                        DimExpr::Mul(Box::new(product), Box::new(DimExpr::Dim(Dim::Const(konst))));
                    self.syms.require_equal(count, Dim::Const(known));
                }
            },
        }
        Ok(self.reshape(x, Shape(dims), call.span))
    }

    /// `reshape` to a target with sizes of the call in it (`[-1, t, heads]`): the element
    /// counts are checked when the call binds its sizes (and here, when they are known).
    fn reshape_to_sizes(
        &mut self,
        call: &BoundCall,
        x: crate::ValueId,
        items: &[SizeItem],
    ) -> Result<crate::ValueId, Diagnostic> {
        let in_shape = self.ty(x).shape;
        let shown = self.syms.shown(&in_shape);
        let fail_with = |code, why: String| {
            let msg = format!(
                "cannot reshape {} of shape {shown} to {}{why}",
                call.label("x"),
                call.label("shape")
            );
            call.error(code, "shape", msg)
        };
        let autos = items.iter().filter(|i| matches!(i, SizeItem::Int(-1))).count();
        if autos > 1 {
            return Err(fail_with("E0503", ": only one size can be -1".into()));
        }
        let mut dims: Vec<Option<Dim>> = Vec::new();
        for item in items {
            dims.push(match item {
                SizeItem::Int(-1) => None,
                SizeItem::Int(i) if *i < 0 => {
                    return Err(fail_with("E0503", format!(": invalid size {i}")))
                }
                SizeItem::Int(i) => Some(Dim::Const(*i as u64)),
                SizeItem::Size(e) => Some(self.size_dim(e)),
            });
        }
        let product = |ds: &mut dyn Iterator<Item = Dim>| {
            ds.fold(DimExpr::Dim(Dim::Const(1)), |acc, d| {
                DimExpr::Mul(Box::new(acc), Box::new(DimExpr::Dim(d)))
            })
        };
        let count = product(&mut in_shape.0.iter().copied());
        let known = product(&mut dims.iter().flatten().copied());
        // With the call's sizes, a count that cannot fit is reported here, at the op.
        if let (Some(n), Some(k)) = (self.syms.hint_of(&count), self.syms.hint_of(&known)) {
            let fits = if autos == 1 { k != 0 && n % k == 0 } else { n == k };
            if !fits {
                let why = if autos == 1 && k == 0 {
                    // (NumPy: "cannot reshape array of size 0 into shape (0,newaxis)".)
                    " (the other sizes multiply to 0, so the -1 could be any size)".to_string()
                } else {
                    format!(" ({n} elements into {k})")
                };
                return Err(fail_with("E0510", why));
            }
        }
        let dims: Vec<Dim> = if autos == 1 {
            let inputs: Vec<Dim> = in_shape.0.clone();
            let given: Vec<Dim> = dims.iter().flatten().copied().collect();
            let auto = self.syms.derive(self.quotient(inputs, given));
            dims.into_iter().map(|d| d.unwrap_or(auto)).collect()
        } else {
            let known = self.syms.derive(known);
            self.syms.require_equal(count, known);
            dims.into_iter().flatten().collect()
        };
        Ok(self.reshape(x, Shape(dims), call.span))
    }

    /// `product(num) / product(den)` with common factors cancelled, so that the `-1` of
    /// `reshape(x, [-1, t, heads, c / heads])` is `x`'s batch size itself rather than an
    /// expression over it: equal sizes cancel, and a factor `a / k` of `den` (a size derived by
    /// an exact division) cancels an `a` of `num`, leaving `k`.
    fn quotient(&self, num: Vec<Dim>, den: Vec<Dim>) -> DimExpr {
        let mut num: Vec<Dim> = num.into_iter().map(|d| self.syms.resolve(d)).collect();
        let mut rest = Vec::new();
        for d in den.into_iter().map(|d| self.syms.resolve(d)) {
            if let Some(i) = num.iter().position(|n| *n == d && d.as_const().is_none()) {
                num.remove(i);
                continue;
            }
            if let Some(DimExpr::Div(a, k)) = self.syms.derived_def(d) {
                if let (DimExpr::Dim(a), DimExpr::Dim(k @ Dim::Const(_))) = (a.as_ref(), k.as_ref())
                {
                    let a = self.syms.resolve(*a);
                    if let Some(i) = num.iter().position(|n| *n == a && a.as_const().is_none()) {
                        num[i] = *k;
                        continue;
                    }
                }
            }
            rest.push(d);
        }
        let konst =
            |ds: &[Dim]| ds.iter().filter_map(|d| d.as_const()).try_fold(1u64, u64::checked_mul);
        let (Some(cn), Some(cd)) = (konst(&num), konst(&rest)) else {
            return DimExpr::Div(Box::new(product(&num)), Box::new(product(&rest)));
        };
        let syms =
            |ds: &[Dim]| ds.iter().copied().filter(|d| d.as_const().is_none()).collect::<Vec<_>>();
        let (mut sn, mut sd) = (syms(&num), syms(&rest));
        if cd != 0 && cn % cd == 0 {
            sn.push(Dim::Const(cn / cd));
        } else {
            sn.push(Dim::Const(cn));
            sd.push(Dim::Const(cd));
        }
        match sd.as_slice() {
            [] => product(&sn),
            _ => DimExpr::Div(Box::new(product(&sn)), Box::new(product(&sd))),
        }
    }

    pub(super) fn broadcast_to(&mut self, call: &BoundCall) -> Result<crate::ValueId, Diagnostic> {
        let x = call.tensor("x")?;
        let shape = self.ty(x).shape;
        let target = self.static_sizes(call, "shape")?;
        let fail = |this: &Self, code| {
            let msg = format!(
                "cannot broadcast {} of shape {} to {}",
                call.label("x"),
                this.syms.shown(&shape),
                Shape(target.clone())
            );
            call.error(code, "shape", msg)
        };
        let offset = target.len().checked_sub(shape.rank()).ok_or_else(|| fail(self, "E0503"))?;
        for (i, d) in shape.0.iter().enumerate() {
            let t = target[offset + i];
            let mut d = self.syms.resolve(*d);
            if d != t && self.syms.is_derived(d) {
                // A derived size of 1 broadcasts, as in NumPy.
                d = self.syms.decide_one(d, false);
            }
            if d == Dim::Const(1) {
                continue;
            }
            if self.syms.is_derived(d) && self.syms.hint(d).is_some_and(|h| Dim::Const(h) != t) {
                return Err(fail(self, "E0510"));
            }
            if self.syms.unify(d, t).is_err() {
                return Err(fail(self, "E0503"));
            }
        }
        let ty = TensorType { dtype: self.graph.ty(x).dtype, shape: Shape(target.clone()) };
        if self.ty(x).shape == ty.shape {
            return Ok(x);
        }
        Ok(self.emit_moved(Op::BroadcastTo, x, ty, call.span))
    }

    pub(super) fn concat(&mut self, call: &BoundCall) -> Result<crate::ValueId, Diagnostic> {
        let xs = call.list("xs")?;
        let Some(&first) = xs.first() else {
            return Err(call.error("E0503", "xs", "`concat` needs at least one tensor"));
        };
        let first_shape = self.ty(first).shape;
        let axis = self.axis(call, "dim", "xs", call.int("dim")?, first_shape.rank())?;
        for (k, &x) in xs.iter().enumerate().skip(1) {
            let s = self.ty(x).shape;
            let mut ok = s.rank() == first_shape.rank();
            for i in (0..s.rank()).filter(|&i| i != axis) {
                ok = ok && self.syms.unify(first_shape.0[i], s.0[i]).is_ok();
            }
            if !ok {
                let msg = format!(
                    "cannot concatenate item 0 of shape {} with item {k} of shape {} along dim {axis}",
                    self.syms.resolve_shape(&first_shape),
                    self.syms.resolve_shape(&s)
                );
                return Err(call.error("E0503", "xs", msg));
            }
        }
        let op = Op::Concat { axis: axis as u32 };
        self.emit_inferred(op, xs, call.span).map_err(|m| diag("E0503", m, call.span))
    }
}

/// The product of sizes (`1` for none).
fn product(ds: &[Dim]) -> DimExpr {
    let mut it = ds.iter().copied();
    let first = it.next().map_or(DimExpr::Dim(Dim::Const(1)), DimExpr::Dim);
    it.fold(first, |acc, d| DimExpr::Mul(Box::new(acc), Box::new(DimExpr::Dim(d))))
}
