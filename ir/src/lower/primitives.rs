//! The prelude's primitive ops: the table from `(name, overload)` to the [`Op`] it builds, and
//! the builder of each, with its argument checks, shape and dtype inference and the messages
//! that name the offending argument.

use super::instantiate::{diag, BoundCall, Lowerer, Val};
use crate::attr::Attr;
use crate::diagnostic::Diagnostic;
use crate::dtype::DType;
use crate::graph::TensorType;
use crate::op::{BinaryOp, Op, ReduceOp, UnaryOp, ALL_BINARY, ALL_REDUCE, ALL_UNARY};
use crate::shape::{Dim, DimExpr, Shape};
use crate::span::Span;

/// How a primitive of the prelude lowers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prim {
    Unary(UnaryOp),
    Binary(BinaryOp),
    /// `add.scalar(x, y)`: the scalar becomes a constant of `x`'s dtype.
    BinaryScalar(BinaryOp),
    Where,
    Cast,
    Reduce(ReduceOp),
    ArgMax,
    MatMul,
    Reshape,
    Transpose,
    TransposeSwap,
    BroadcastTo,
    Unsqueeze,
    Squeeze,
    Concat,
    Slice,
    Full,
    ZerosLike,
    OnesLike,
    FullLike,
}

/// The primitive a prelude `op` declaration names, if the compiler implements it.
pub fn lookup(name: &str, overload: Option<&str>) -> Option<Prim> {
    let unary = ALL_UNARY.iter().find(|u| u.to_string() == name).copied();
    let binary = ALL_BINARY.iter().find(|b| b.to_string() == name).copied();
    let reduce = ALL_REDUCE.iter().find(|r| crate::op::reduce_name(**r) == name).copied();
    match overload {
        Some("scalar") => binary.filter(|b| !b.is_comparison()).map(Prim::BinaryScalar),
        Some("swap") if name == "transpose" => Some(Prim::TransposeSwap),
        Some(_) => None,
        None => unary.map(Prim::Unary).or(binary.map(Prim::Binary)).or(reduce.map(Prim::Reduce)).or(
            Some(match name {
                "where" => Prim::Where,
                "cast" => Prim::Cast,
                "argmax" => Prim::ArgMax,
                "matmul" => Prim::MatMul,
                "reshape" => Prim::Reshape,
                "transpose" => Prim::Transpose,
                "broadcast_to" => Prim::BroadcastTo,
                "unsqueeze" => Prim::Unsqueeze,
                "squeeze" => Prim::Squeeze,
                "concat" => Prim::Concat,
                "slice" => Prim::Slice,
                "full" => Prim::Full,
                "zeros_like" => Prim::ZerosLike,
                "ones_like" => Prim::OnesLike,
                "full_like" => Prim::FullLike,
                _ => return None,
            }),
        ),
    }
}

/// Whether the compiler has a kernel for the op `name` / `name.overload`.
pub fn is_primitive(name: &str, overload: Option<&str>) -> bool {
    lookup(name, overload).is_some()
}

impl BoundCall<'_> {
    fn index(&self, name: &str) -> Result<usize, Diagnostic> {
        self.fdef.param(name).map(|(i, _)| i).ok_or_else(|| {
            let msg = format!(
                "internal error: primitive `{}` has no parameter `{name}` (the prelude and the \
                 compiler disagree)",
                self.fdef.full_name()
            );
            diag("E0509", msg, Some(self.fdef.name_span))
        })
    }

    /// The span to point at for an argument (the call's when it has none).
    pub(super) fn span_of(&self, name: &str) -> Option<Span> {
        self.index(name).ok().and_then(|i| self.spans[i]).or(self.span)
    }

    /// How to name an argument in a message, in backticks.
    pub(super) fn label(&self, name: &str) -> String {
        let label = self.index(name).ok().and_then(|i| self.labels.get(i));
        format!("`{}`", label.map_or(name, |l| l.as_str()))
    }

    pub(super) fn error(&self, code: &'static str, arg: &str, msg: impl Into<String>) -> Diagnostic {
        diag(code, msg, self.span_of(arg))
    }

    fn val(&self, name: &str) -> Result<&Val, Diagnostic> {
        let i = self.index(name)?;
        self.vals.get(i).ok_or_else(|| self.error("E0509", name, "internal error: unbound"))
    }

    pub(super) fn tensor(&self, name: &str) -> Result<crate::ValueId, Diagnostic> {
        match self.val(name)? {
            Val::Tensor(v) => Ok(*v),
            _ => Err(self.error("E0502", name, format!("{} must be a tensor", self.label(name)))),
        }
    }

    pub(super) fn attr(&self, name: &str) -> Result<&Attr, Diagnostic> {
        match self.val(name)? {
            Val::Attr(a) => Ok(a),
            _ => Err(self.error("E0502", name, format!("{} must be an attribute", self.label(name)))),
        }
    }

    pub(super) fn int(&self, name: &str) -> Result<i64, Diagnostic> {
        match self.attr(name)? {
            Attr::Int(i) => Ok(*i),
            a => Err(self.error("E0502", name, format!("{} must be Int, got `{a}`", self.label(name)))),
        }
    }

    pub(super) fn int_list(&self, name: &str) -> Result<Vec<i64>, Diagnostic> {
        match self.attr(name)? {
            Attr::IntList(v) => Ok(v.clone()),
            a => Err(self.error("E0502", name, format!("{} must be Int[], got `{a}`", self.label(name)))),
        }
    }

    fn bool(&self, name: &str) -> Result<bool, Diagnostic> {
        match self.attr(name)? {
            Attr::Bool(b) => Ok(*b),
            a => Err(self.error("E0502", name, format!("{} must be Bool, got `{a}`", self.label(name)))),
        }
    }

    fn dtype(&self, name: &str) -> Result<DType, Diagnostic> {
        match self.attr(name)? {
            Attr::DType(d) => Ok(*d),
            a => Err(self.error("E0502", name, format!("{} must be DType, got `{a}`", self.label(name)))),
        }
    }

    fn list(&self, name: &str) -> Result<Vec<crate::ValueId>, Diagnostic> {
        match self.val(name)? {
            Val::List(v) => Ok(v.clone()),
            _ => Err(self.error("E0502", name, format!("{} must be a list of tensors", self.label(name)))),
        }
    }
}

/// Normalises a possibly negative axis for a tensor of `rank` axes.
pub(super) fn normalize_axis(axis: i64, rank: usize) -> Option<usize> {
    let rank = rank as i64;
    let a = if axis < 0 { axis + rank } else { axis };
    (0..rank).contains(&a).then_some(a as usize)
}

impl Lowerer<'_> {
    pub(super) fn lower_primitive(
        &mut self,
        prim: Prim,
        call: &BoundCall,
    ) -> Result<crate::ValueId, Diagnostic> {
        let span = call.span;
        let infer_err = |m: String| diag("E0503", m, span);
        match prim {
            Prim::Unary(u) => {
                let x = call.tensor("x")?;
                self.emit_inferred(Op::Unary(u), vec![x], span).map_err(infer_err)
            }
            Prim::Binary(b) => self.elementwise(Op::Binary(b), call, &["x", "y"]),
            Prim::Where => self.elementwise(Op::Where, call, &["cond", "x", "y"]),
            Prim::BinaryScalar(b) => {
                let x = call.tensor("x")?;
                let dtype = self.graph.ty(x).dtype;
                let y = self.literal(call.attr("y")?, dtype, call.span_of("y"))?;
                self.emit_inferred(Op::Binary(b), vec![x, y], span).map_err(infer_err)
            }
            Prim::Cast => {
                let x = call.tensor("x")?;
                let dtype = call.dtype("dtype")?;
                if self.graph.ty(x).dtype == dtype {
                    return Ok(x);
                }
                self.emit_inferred(Op::Cast(dtype), vec![x], span).map_err(infer_err)
            }
            Prim::Reduce(op) => {
                let x = call.tensor("x")?;
                let rank = self.graph.ty(x).shape.rank();
                if rank == 0 {
                    // Reducing a scalar over "all" of its zero axes leaves it unchanged.
                    return Ok(x);
                }
                let dims = call.int_list("dims")?;
                let mut axes = Vec::new();
                for d in &dims {
                    let a = self.axis(call, "dims", "x", *d, rank)? as u32;
                    if axes.contains(&a) {
                        let msg = format!("dim {d} is repeated in `dims`");
                        return Err(call.error("E0505", "dims", msg));
                    }
                    axes.push(a);
                }
                if axes.is_empty() {
                    axes = (0..rank as u32).collect();
                }
                axes.sort_unstable();
                let keepdim = call.bool("keepdim")?;
                let op = Op::Reduce { op, axes, keepdim };
                self.emit_inferred(op, vec![x], span).map_err(infer_err)
            }
            Prim::ArgMax => {
                let x = call.tensor("x")?;
                let rank = self.graph.ty(x).shape.rank();
                let axis = self.axis(call, "dim", "x", call.int("dim")?, rank)? as u32;
                let op = Op::ArgMax { axis, keepdim: call.bool("keepdim")? };
                self.emit_inferred(op, vec![x], span).map_err(infer_err)
            }
            Prim::MatMul => self.matmul(call),
            Prim::Reshape => self.reshape_op(call),
            Prim::Transpose | Prim::TransposeSwap => {
                let x = call.tensor("x")?;
                let rank = self.graph.ty(x).shape.rank();
                let perm: Vec<u32> = if prim == Prim::TransposeSwap {
                    let d0 = self.axis(call, "dim0", "x", call.int("dim0")?, rank)?;
                    let d1 = self.axis(call, "dim1", "x", call.int("dim1")?, rank)?;
                    let mut p: Vec<u32> = (0..rank as u32).collect();
                    p.swap(d0, d1);
                    p
                } else {
                    let given = call.int_list("perm")?;
                    if given.is_empty() {
                        (0..rank as u32).rev().collect()
                    } else {
                        let p = given.iter().map(|&a| normalize_axis(a, rank).map(|a| a as u32));
                        let p: Option<Vec<u32>> = p.collect();
                        match p.filter(|p| super::is_permutation(p, rank)) {
                            Some(p) => p,
                            None => {
                                let msg = format!(
                                    "`{}` is not a permutation of the axes of {} (rank {rank})",
                                    Attr::IntList(given),
                                    call.label("x")
                                );
                                return Err(call.error("E0505", "perm", msg));
                            }
                        }
                    }
                };
                self.emit_inferred(Op::Transpose { perm }, vec![x], span).map_err(infer_err)
            }
            Prim::BroadcastTo => self.broadcast_to(call),
            Prim::Unsqueeze => {
                let x = call.tensor("x")?;
                let mut shape = self.ty(x).shape;
                let at = self.axis(call, "dim", "x", call.int("dim")?, shape.rank() + 1)?;
                shape.0.insert(at, Dim::Const(1));
                Ok(self.reshape(x, shape, span))
            }
            Prim::Squeeze => {
                let x = call.tensor("x")?;
                let shape = self.ty(x).shape;
                let dims = call.int_list("dims")?;
                let mut remove = Vec::new();
                for d in &dims {
                    let a = self.axis(call, "dims", "x", *d, shape.rank())?;
                    if shape.0[a] != Dim::Const(1) {
                        let msg = format!(
                            "cannot squeeze axis {d} of {} of shape {shape}: its size is not 1",
                            call.label("x")
                        );
                        return Err(call.error("E0503", "dims", msg));
                    }
                    remove.push(a);
                }
                let keep = |(i, d): (usize, &Dim)| {
                    let gone = if dims.is_empty() { *d == Dim::Const(1) } else { remove.contains(&i) };
                    (!gone).then_some(*d)
                };
                let out = Shape(shape.0.iter().enumerate().filter_map(keep).collect());
                Ok(self.reshape(x, out, span))
            }
            Prim::Concat => self.concat(call),
            Prim::Slice => {
                let x = call.tensor("x")?;
                let rank = self.graph.ty(x).shape.rank();
                let axis = self.axis(call, "dim", "x", call.int("dim")?, rank)? as u32;
                let step = call.int("step")?;
                if step == 0 {
                    return Err(call.error("E0505", "step", "slice `step` cannot be zero"));
                }
                let end = Some(call.int("end")?).filter(|e| *e != i64::MAX);
                let op = Op::Slice { axis, start: call.int("start")?, end, step };
                self.emit_inferred(op, vec![x], span).map_err(infer_err)
            }
            Prim::Full => {
                let dims = self.static_sizes(call, "shape")?;
                let dtype = call.dtype("dtype")?;
                let value = super::instantiate::scalar_of(call.attr("value")?, dtype)
                    .map_err(|m| call.error("E0504", "value", m))?;
                let ty = TensorType { dtype, shape: Shape(dims) };
                Ok(self.emit(Op::Full { value }, Vec::new(), ty, span))
            }
            Prim::ZerosLike | Prim::OnesLike | Prim::FullLike => {
                let x = call.tensor("x")?;
                let ty = self.graph.ty(x).clone();
                let value = match prim {
                    Prim::ZerosLike => Attr::Int(0),
                    Prim::OnesLike => Attr::Int(1),
                    _ => call.attr("value")?.clone(),
                };
                let value = super::instantiate::scalar_of(&value, ty.dtype)
                    .map_err(|m| call.error("E0504", "value", m))?;
                Ok(self.emit(Op::Full { value }, vec![x], ty, span))
            }
        }
    }

    /// Normalises axis argument `param` of tensor argument `tensor`.
    fn axis(
        &self,
        call: &BoundCall,
        param: &str,
        tensor: &str,
        value: i64,
        rank: usize,
    ) -> Result<usize, Diagnostic> {
        normalize_axis(value, rank).ok_or_else(|| {
            let msg = format!(
                "dim {value} is out of range for {} of rank {rank}",
                call.label(tensor)
            );
            call.error("E0505", param, msg)
        })
    }

    /// Records that the shapes broadcast together (NumPy rules); on a conflict, the indices
    /// of the two operands that conflict.
    pub(super) fn unify_broadcast(&mut self, shapes: &[Shape]) -> Result<(), (usize, usize)> {
        let rank = shapes.iter().map(Shape::rank).max().unwrap_or(0);
        for k in 1..=rank {
            let mut first: Option<(usize, Dim)> = None;
            for (i, s) in shapes.iter().enumerate() {
                let Some(d) = s.rank().checked_sub(k).map(|a| self.syms.resolve(s.0[a])) else {
                    continue;
                };
                if d == Dim::Const(1) {
                    continue;
                }
                match first {
                    None => first = Some((i, d)),
                    Some((j, f)) => self.syms.unify(f, d).map(|_| ()).map_err(|_| (j, i))?,
                }
            }
        }
        Ok(())
    }

    fn elementwise(
        &mut self,
        op: Op,
        call: &BoundCall,
        names: &[&str],
    ) -> Result<crate::ValueId, Diagnostic> {
        let inputs = names.iter().map(|n| call.tensor(n)).collect::<Result<Vec<_>, _>>()?;
        let shapes: Vec<Shape> = inputs.iter().map(|v| self.ty(*v).shape).collect();
        if let Err((i, j)) = self.unify_broadcast(&shapes) {
            let msg = format!(
                "cannot broadcast {} of shape {} with {} of shape {}",
                call.label(names[i]),
                self.syms.resolve_shape(&shapes[i]),
                call.label(names[j]),
                self.syms.resolve_shape(&shapes[j])
            );
            return Err(call.error("E0503", names[j], msg));
        }
        self.emit_inferred(op, inputs, call.span).map_err(|m| diag("E0503", m, call.span))
    }

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
        self.emit(Op::Reshape, vec![v], TensorType { dtype: ty.dtype, shape }, span)
    }

    fn matmul(&mut self, call: &BoundCall) -> Result<crate::ValueId, Diagnostic> {
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
        let a2 = if a_vec { self.reshape(a, Shape(vec![Dim::Const(1), sa.0[0]]), call.span) } else { a };
        let b2 = if b_vec { self.reshape(b, Shape(vec![sb.0[0], Dim::Const(1)]), call.span) } else { b };
        let (s2a, s2b) = (self.ty(a2).shape, self.ty(b2).shape);
        let (ka, kb) = (s2a.0[s2a.rank() - 1], s2b.0[s2b.rank() - 2]);
        if self.syms.unify(ka, kb).is_err() {
            let msg = format!("cannot multiply {}: inner sizes {ka} and {kb} differ", describe(&sa, &sb));
            return Err(diag("E0503", msg, call.span));
        }
        let batch_a = Shape(s2a.0[..s2a.rank() - 2].to_vec());
        let batch_b = Shape(s2b.0[..s2b.rank() - 2].to_vec());
        if self.unify_broadcast(&[batch_a, batch_b]).is_err() {
            let msg = format!("cannot multiply {}: batch axes do not broadcast", describe(&sa, &sb));
            return Err(diag("E0503", msg, call.span));
        }
        let out = self
            .emit_inferred(Op::MatMul, vec![a2, b2], call.span)
            .map_err(|m| diag("E0503", m, call.span))?;
        if !a_vec && !b_vec {
            return Ok(out);
        }
        let dims = self.ty(out).shape.0;
        let n = dims.len();
        let kept = dims.iter().enumerate().filter(|(i, _)| {
            !((a_vec && *i == n - 2) || (b_vec && *i == n - 1))
        });
        let shape = Shape(kept.map(|(_, d)| *d).collect());
        Ok(self.reshape(out, shape, call.span))
    }

    /// A list of non-negative sizes (`full`, `broadcast_to`).
    fn static_sizes(&self, call: &BoundCall, param: &str) -> Result<Vec<Dim>, Diagnostic> {
        let sizes = call.int_list(param)?;
        sizes
            .iter()
            .map(|&s| {
                u64::try_from(s).map(Dim::Const).map_err(|_| {
                    call.error("E0503", param, format!("invalid size {s} in `{param}`"))
                })
            })
            .collect()
    }

    fn reshape_op(&mut self, call: &BoundCall) -> Result<crate::ValueId, Diagnostic> {
        let x = call.tensor("x")?;
        let in_shape = self.ty(x).shape;
        let target = call.int_list("shape")?;
        let fail = |why: String| {
            let msg = format!(
                "cannot reshape {} of shape {in_shape} to {}{why}",
                call.label("x"),
                Attr::IntList(target.clone())
            );
            call.error("E0503", "shape", msg)
        };
        if target.iter().filter(|&&t| t == -1).count() > 1 {
            return Err(fail(": only one size can be -1".into()));
        }
        if let Some(bad) = target.iter().find(|&&t| t < -1) {
            return Err(fail(format!(": invalid size {bad}")));
        }
        let syms: Vec<Dim> = in_shape.0.iter().copied().filter(|d| d.as_const().is_none()).collect();
        let konst = in_shape.0.iter().filter_map(|d| d.as_const()).try_fold(1u64, u64::checked_mul);
        let known = target.iter().filter(|&&t| t >= 0).try_fold(1u64, |acc, &t| acc.checked_mul(t as u64));
        let (Some(konst), Some(known)) = (konst, known) else {
            return Err(fail(": sizes overflow".into()));
        };
        let mut dims: Vec<Dim> =
            target.iter().map(|&t| Dim::Const(t.max(0) as u64)).collect();
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
                        DimExpr::Mul(Box::new(product), Box::new(DimExpr::Dim(Dim::Const(konst / known))))
                    } else {
                        let scaled = DimExpr::Mul(Box::new(product), Box::new(DimExpr::Dim(Dim::Const(konst))));
                        DimExpr::Div(Box::new(scaled), Box::new(DimExpr::Dim(Dim::Const(known))))
                    };
                    self.syms.derive(e)
                };
            }
            None => match syms.as_slice() {
                [] if konst != known => return Err(fail(String::new())),
                [one] => {
                    if konst == 0 || known % konst != 0 {
                        return Err(fail(String::new()));
                    }
                    self.syms.unify(*one, Dim::Const(known / konst)).map_err(|_| fail(String::new()))?;
                }
                // Several symbolic sizes: their product is checked when the reshape runs.
                _ => {}
            },
        }
        Ok(self.reshape(x, Shape(dims), call.span))
    }

    fn broadcast_to(&mut self, call: &BoundCall) -> Result<crate::ValueId, Diagnostic> {
        let x = call.tensor("x")?;
        let shape = self.ty(x).shape;
        let target = self.static_sizes(call, "shape")?;
        let fail = || {
            let msg = format!(
                "cannot broadcast {} of shape {shape} to {}",
                call.label("x"),
                Shape(target.clone())
            );
            call.error("E0503", "shape", msg)
        };
        let offset = target.len().checked_sub(shape.rank()).ok_or_else(fail)?;
        for (i, d) in shape.0.iter().enumerate() {
            let t = target[offset + i];
            if *d != Dim::Const(1) && self.syms.unify(*d, t).is_err() {
                return Err(fail());
            }
        }
        let ty = TensorType { dtype: self.graph.ty(x).dtype, shape: Shape(target.clone()) };
        if self.ty(x).shape == ty.shape {
            return Ok(x);
        }
        Ok(self.emit(Op::BroadcastTo, vec![x], ty, call.span))
    }

    fn concat(&mut self, call: &BoundCall) -> Result<crate::ValueId, Diagnostic> {
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
