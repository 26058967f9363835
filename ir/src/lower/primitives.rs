//! The prelude's primitive ops: the table from `(name, overload)` to the [`Op`] it builds, and
//! the builder of each, with its argument checks, shape and dtype inference and the messages
//! that name the offending argument.

use super::call::{diag, normalize_axis, BoundCall};
use super::instantiate::Lowerer;
use crate::attr::Attr;
use crate::diagnostic::Diagnostic;
use crate::graph::TensorType;
use crate::library::ParamType;
use crate::op::{BinaryOp, Op, RandomDist, ReduceOp, UnaryOp};
use crate::shape::{Dim, Shape};

/// How a primitive of the prelude lowers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prim {
    Unary(UnaryOp),
    Binary(BinaryOp),
    /// `add.scalar(x, y)`: the scalar becomes a constant of `x`'s dtype.
    BinaryScalar(BinaryOp),
    Where,
    /// The internal `mul_add(x, y, z)` (declared in `grads.tfn`): [`Op::MulAdd`].
    MulAdd,
    Cast,
    Reduce(ReduceOp),
    ArgMax,
    ArgMin,
    /// `iota_like(x, dim, dtype)`, `arange(n, dtype)`: [`Op::Iota`].
    IotaLike,
    Arange,
    /// `cumsum`, `cumprod`.
    Scan(crate::op::ScanOp),
    /// The internal gradient op of `cumprod` (declared in `grads.tfn`).
    CumprodGrad,
    /// `gather`, `index_select`, `scatter_add`, `index_add` (`crate::op_index`).
    Index(crate::op_index::IndexKind),
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
    /// `rand_like`, `randn_like`.
    Random(RandomDist),
    /// `std:nn`'s `dropout`: `rand_like` and elementwise ops, after checking `p`.
    Dropout,
    /// A window op (`crate::op_window`); `true` for the gradients' variants that take the
    /// result's shape from a `like` operand (`conv2d_like`, `conv_transpose2d_like`).
    Window(crate::op_window::WindowKind, bool),
    /// `pad`: `full` blocks concatenated around `x`.
    Pad,
}

/// The primitive a prelude `op` declaration names, if the compiler implements it.
pub fn lookup(name: &str, overload: Option<&str>) -> Option<Prim> {
    let unary = UnaryOp::from_name(name);
    let binary = BinaryOp::from_name(name);
    let reduce = ReduceOp::from_name(name);
    match overload {
        Some("scalar") => binary.filter(|b| !b.is_comparison()).map(Prim::BinaryScalar),
        Some("swap") if name == "transpose" => Some(Prim::TransposeSwap),
        Some(_) => None,
        None => {
            let elementwise = unary.map(Prim::Unary).or(binary.map(Prim::Binary));
            let random = RandomDist::from_name(name);
            let elementwise = elementwise.or(random.map(Prim::Random));
            elementwise.or(reduce.map(Prim::Reduce)).or_else(|| {
                Some(match name {
                    "where" => Prim::Where,
                    "mul_add" => Prim::MulAdd,
                    "cast" => Prim::Cast,
                    "argmax" => Prim::ArgMax,
                    "argmin" => Prim::ArgMin,
                    "iota_like" => Prim::IotaLike,
                    "arange" => Prim::Arange,
                    "cumsum" => Prim::Scan(crate::op::ScanOp::Sum),
                    "cumprod" => Prim::Scan(crate::op::ScanOp::Prod),
                    "cumprod_grad" => Prim::CumprodGrad,
                    _ if crate::op_index::IndexKind::from_name(name).is_some() => {
                        Prim::Index(crate::op_index::IndexKind::from_name(name)?)
                    }
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
                    "dropout" => Prim::Dropout,
                    "pad" => Prim::Pad,
                    "conv2d_like" => Prim::Window(crate::op_window::WindowKind::Conv, true),
                    "conv_transpose2d_like" => {
                        Prim::Window(crate::op_window::WindowKind::ConvTranspose, true)
                    }
                    _ if crate::op_window::WindowKind::from_name(name).is_some() => {
                        Prim::Window(crate::op_window::WindowKind::from_name(name)?, false)
                    }
                    _ => return None,
                })
            })
        }
    }
}

/// Whether the compiler has a kernel for the op `name` / `name.overload`.
pub fn is_primitive(name: &str, overload: Option<&str>) -> bool {
    lookup(name, overload).is_some()
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
            Prim::Binary(b) => {
                // The operands in declaration order, whatever their names (`atan2(y, x)`).
                let names: Vec<&str> = call
                    .fdef
                    .params
                    .iter()
                    .filter(|p| matches!(p.ty, ParamType::Tensor(_)))
                    .map(|p| p.name.as_str())
                    .collect();
                self.elementwise(Op::Binary(b), call, &names)
            }
            Prim::Where => self.elementwise(Op::Where, call, &["cond", "x", "y"]),
            Prim::MulAdd => self.elementwise(Op::MulAdd, call, &["x", "y", "z"]),
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
                    return Ok(self.same_dtype_cast(x, span));
                }
                self.emit_inferred(Op::Cast(dtype), vec![x], span).map_err(infer_err)
            }
            Prim::Reduce(op) => {
                let x = call.tensor("x")?;
                let rank = self.graph.ty(x).shape.rank();
                let dims = call.int_list("dims")?;
                if rank == 0 {
                    // Reducing a scalar over "all" of its zero axes leaves it unchanged; as in
                    // PyTorch, dim 0 or -1 names that (no) axis, any other is out of range.
                    let mut seen = Vec::new();
                    for &d in &dims {
                        if d != 0 && d != -1 {
                            let msg = format!(
                                "dim {d} is out of range for {} of rank 0 (a rank-0 tensor \
                                 takes dim 0 or -1, which reduce nothing)",
                                call.label("x")
                            );
                            return Err(call.error("E0505", "dims", msg));
                        }
                        if seen.contains(&0) {
                            let msg = format!("dim {d} is repeated in `dims` (0 and -1 are one)");
                            return Err(call.error("E0505", "dims", msg));
                        }
                        seen.push(0);
                    }
                    return Ok(x);
                }
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
                if matches!(op, ReduceOp::Max | ReduceOp::Min) {
                    let what = if op == ReduceOp::Max { "max" } else { "min" };
                    self.no_empty_extremum(call, what, x, &axes)?;
                }
                let keepdim = call.bool("keepdim")?;
                let op = Op::Reduce { op, axes, keepdim };
                self.emit_inferred(op, vec![x], span).map_err(infer_err)
            }
            Prim::ArgMax => {
                let x = call.tensor("x")?;
                let rank = self.graph.ty(x).shape.rank();
                let axis = self.axis(call, "dim", "x", call.int("dim")?, rank)? as u32;
                self.no_empty_extremum(call, "argmax", x, &[axis])?;
                let op = Op::ArgMax { axis, keepdim: call.bool("keepdim")? };
                self.emit_inferred(op, vec![x], span).map_err(infer_err)
            }
            Prim::ArgMin | Prim::IotaLike | Prim::Arange | Prim::Scan(_) | Prim::CumprodGrad => {
                self.lower_scan_primitive(prim, call)
            }
            Prim::Index(kind) => self.index_op(kind, call),
            Prim::Window(kind, like) => self.window_op(kind, like, call),
            Prim::Pad => self.pad_op(call),
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
                let (dim, rank) = (call.int("dim")?, shape.rank());
                let at = normalize_axis(dim, rank + 1).ok_or_else(|| {
                    let msg = format!(
                        "dim {dim} is out of range for `unsqueeze` of {} of rank {rank} (a \
                         new axis goes at -{} to {rank})",
                        call.label("x"),
                        rank + 1
                    );
                    call.error("E0505", "dim", msg)
                })?;
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
                    if remove.contains(&a) {
                        let msg = format!("dim {d} is repeated in `dims`");
                        return Err(call.error("E0505", "dims", msg));
                    }
                    // A derived size named explicitly is meant to be 1 (NumPy checks it).
                    let size = self.syms.decide_one(shape.0[a], true);
                    if size != Dim::Const(1) {
                        let code = if self.syms.is_derived(size) { "E0510" } else { "E0503" };
                        let msg = format!(
                            "cannot squeeze axis {d} of {} of shape {}: its size is not 1",
                            call.label("x"),
                            self.syms.shown(&shape)
                        );
                        return Err(call.error(code, "dims", msg));
                    }
                    remove.push(a);
                }
                if dims.is_empty() {
                    // Every axis of size 1 goes, including derived sizes that come out as 1.
                    for d in &shape.0 {
                        self.syms.decide_one(*d, false);
                        self.syms.assume_not_one(*d);
                    }
                }
                let shape = self.syms.resolve_shape(&shape);
                let keep = |(i, d): (usize, &Dim)| {
                    let gone =
                        if dims.is_empty() { *d == Dim::Const(1) } else { remove.contains(&i) };
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
                let value = super::call::scalar_of(call.attr("value")?, dtype)
                    .map_err(|m| call.error("E0504", "value", m))?;
                let ty = TensorType { dtype, shape: Shape(dims) };
                Ok(self.emit(Op::Full { value }, Vec::new(), ty, span))
            }
            Prim::Random(dist) => self.random(dist, call),
            Prim::Dropout => self.dropout(call),
            Prim::ZerosLike | Prim::OnesLike | Prim::FullLike => {
                let x = call.tensor("x")?;
                let ty = self.graph.ty(x).clone();
                let value = match prim {
                    Prim::ZerosLike => Attr::Int(0),
                    Prim::OnesLike => Attr::Int(1),
                    _ => call.attr("value")?.clone(),
                };
                let value = super::call::scalar_of(&value, ty.dtype)
                    .map_err(|m| call.error("E0504", "value", m))?;
                Ok(self.emit(Op::Full { value }, vec![x], ty, span))
            }
        }
    }

    /// `gather`, `index_select`, `scatter_add`, `index_add`: `src` takes the shape the op
    /// says (the index's, or `index_select`'s result), sizes unified like broadcasting's.
    fn index_op(
        &mut self,
        kind: crate::op_index::IndexKind,
        call: &BoundCall,
    ) -> Result<crate::ValueId, Diagnostic> {
        let x = call.tensor("x")?;
        let index = call.tensor("index")?;
        let xt = self.ty(x);
        let it = self.ty(index);
        let rank = xt.shape.rank();
        if rank == 0 {
            let msg = format!("`{}` needs x of rank >= 1, got {}", kind.name(), call.label("x"));
            return Err(call.error("E0503", "x", msg));
        }
        let axis = self.axis(call, "dim", "x", call.int("dim")?, rank)?;
        if !crate::op_index::is_index_dtype(it.dtype) {
            let msg = format!("the index must be i32 or i64, got {}", it.dtype);
            return Err(call.error("E0504", "index", msg));
        }
        if kind.elementwise_index() && it.shape.rank() != rank {
            let msg = format!(
                "`{}`: the index must have the rank of x ({rank}), got rank {}",
                kind.name(),
                it.shape.rank()
            );
            return Err(call.error("E0503", "index", msg));
        }
        if kind.elementwise_index() {
            // The index may be smaller than x on the other axes; when the call's sizes are
            // equal, say so (guarded), so that rules may move the op through elementwise ops.
            for k in (0..rank).filter(|&k| k != axis) {
                self.syms.decide_equal(xt.shape.0[k], it.shape.0[k]);
            }
        }
        let (xt, it) = (self.ty(x), self.ty(index));
        let mut inputs = vec![x, index];
        if !kind.is_read() {
            let src = call.tensor("src")?;
            let want = match kind {
                crate::op_index::IndexKind::IndexAdd => {
                    crate::op_index::IndexKind::select_shape(&xt.shape, &it.shape, axis)
                }
                _ => it.shape.clone(),
            };
            let st = self.ty(src);
            let fits = st.shape.rank() == want.rank()
                && st.shape.0.iter().zip(&want.0).all(|(a, b)| self.syms.unify(*a, *b).is_ok());
            if !fits {
                let msg = format!(
                    "`{}`: src must have shape {}, got {}",
                    kind.name(),
                    self.syms.shown(&want),
                    self.syms.shown(&st.shape)
                );
                return Err(call.error("E0503", "src", msg));
            }
            inputs.push(src);
        }
        let op = Op::Index { kind, axis: axis as u32 };
        self.emit_inferred(op, inputs, call.span).map_err(|m| diag("E0503", m, call.span))
    }

    /// Normalises axis argument `param` of tensor argument `tensor`.
    pub(super) fn axis(
        &self,
        call: &BoundCall,
        param: &str,
        tensor: &str,
        value: i64,
        rank: usize,
    ) -> Result<usize, Diagnostic> {
        normalize_axis(value, rank).ok_or_else(|| {
            let msg =
                format!("dim {value} is out of range for {} of rank {rank}", call.label(tensor));
            call.error("E0505", param, msg)
        })
    }

    /// Refuses `max`/`min`/`argmax`/`argmin` (`what`) of `x` over an axis whose size is known
    /// to be 0: an empty axis has no extremum (NumPy raises too). With a call's sizes known
    /// (`Session::explain`), this is where a run-time zero-size reduction gets its location.
    pub(super) fn no_empty_extremum(
        &self,
        call: &BoundCall,
        what: &str,
        x: crate::ValueId,
        axes: &[u32],
    ) -> Result<(), Diagnostic> {
        let dims = &self.graph.ty(x).shape.0;
        for &a in axes {
            let Some(d) = dims.get(a as usize) else { continue };
            // (A size the call gives, the hint, counts: that call cannot run.)
            if self.syms.resolve(*d) == Dim::Const(0) || self.syms.hint(*d) == Some(0) {
                let msg = format!(
                    "`{what}` reduces axis {a} of {}, which has size 0: an empty axis has no \
                     {}",
                    call.label("x"),
                    if what.ends_with("max") { "maximum" } else { "minimum" }
                );
                return Err(call.error("E0510", "x", msg));
            }
        }
        Ok(())
    }

    /// Records that the shapes broadcast together (NumPy rules); on a conflict, the indices
    /// of the two operands that conflict and the code to report it with: E0503 when the
    /// signature alone rules it out, E0510 when the call's sizes do (a derived size differs).
    ///
    /// A derived size that meets a different size is first decided to be 1 or not (from the
    /// call's sizes; see [`super::syms::SymTable::decide_one`]): a 1 broadcasts, as in NumPy.
    pub(super) fn unify_broadcast(
        &mut self,
        shapes: &[Shape],
    ) -> Result<(), (usize, usize, &'static str)> {
        let rank = shapes.iter().map(Shape::rank).max().unwrap_or(0);
        for k in 1..=rank {
            let at = |s: &Shape| s.rank().checked_sub(k).map(|a| s.0[a]);
            for s in shapes {
                let Some(d) = at(s).map(|d| self.syms.resolve(d)) else { continue };
                let meets_other = shapes.iter().filter_map(at).any(|e| {
                    let e = self.syms.resolve(e);
                    e != Dim::Const(1) && e != d
                });
                if meets_other && self.syms.is_derived(d) {
                    self.syms.decide_one(d, false);
                }
            }
            let mut first: Option<(usize, Dim)> = None;
            for (i, s) in shapes.iter().enumerate() {
                let Some(d) = at(s).map(|d| self.syms.resolve(d)) else { continue };
                if d == Dim::Const(1) {
                    continue;
                }
                let Some((j, f)) = first else {
                    first = Some((i, d));
                    continue;
                };
                let derived = self.syms.is_derived(f) || self.syms.is_derived(d);
                match (self.syms.hint(f), self.syms.hint(d)) {
                    (Some(a), Some(b)) if a != b && derived => return Err((j, i, "E0510")),
                    _ => self.syms.unify(f, d).map(|_| ()).map_err(|_| (j, i, "E0503"))?,
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
        if let Err((i, j, code)) = self.unify_broadcast(&shapes) {
            let (si, sj) = (self.syms.shown(&shapes[i]), self.syms.shown(&shapes[j]));
            let msg = format!(
                "cannot broadcast {} of shape {si} with {} of shape {sj}",
                call.label(names[i]),
                call.label(names[j]),
            );
            let mut d = diag(code, msg, None);
            if let Some(at) = call.span_of(names[j]) {
                d = d.at(at, format!("shape {sj}"));
            }
            if let Some(other) = call.span_of(names[i]).filter(|_| call.span.is_some()) {
                d = d.with_secondary(other, format!("shape {si}"));
            }
            return Err(d);
        }
        self.emit_inferred(op, inputs, call.span).map_err(|m| diag("E0503", m, call.span))
    }
}
