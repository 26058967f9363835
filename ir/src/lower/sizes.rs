//! Sizes as values: the built-ins `size(x, dim)` and `shape(x)`, integer arithmetic on sizes,
//! and sizes used where a tensor is (`x / size(x, 0)`).
//!
//! A size is an `Int` known only at the call ([`Val::Size`]): a [`DimExpr`] over the symbols
//! of the graph being built. It never specialises the graph: consumers turn it into a
//! [`Dim`] with [`Lowerer::size_dim`] (a derived symbol, evaluated when the call binds its
//! sizes, [`crate::bind`]), so one compiled instance serves every size. A size that folds to a
//! constant (an axis the signature says is 1) stays a size for size arithmetic, so its `/` is
//! the same exact `Int` division as for every other size of that axis, and is a plain `Int`
//! attribute everywhere else (`Val::settled`, applied where a call's arguments are bound).
//!
//! `size` and `shape` are built-ins, not prelude ops: a library function or op of the same name
//! hides them (like a Python builtin), so a user's `fn size(...)` keeps working.
//!
//! Arithmetic: `+ - *` and `/`, which must divide exactly. Every size must stay non-negative
//! (a size times or over a negative number is refused here; a difference that turns negative
//! fails the call). When the call's sizes are known (a session compiling or explaining a call),
//! an inexact `/` is reported here, at the expression (E0510); otherwise binding refuses it and
//! the session asks lowering again, with the sizes, for the located error.
//!
//! Floats of sizes: a float op (`sqrt`, `rsqrt`, `exp`, ...) of a size, and arithmetic of such
//! a float with numbers, sizes and other such floats, is a [`Val::SizeFloat`]: kept as the
//! call until it meets a dtype — the tensor it meets in an operator (`q * rsqrt(size(q,
//! -1))` is in `q`'s dtype), the declared result's, `cast`'s — or `f32` anywhere else; it is
//! then computed in that dtype from the size as a rank-0 tensor ([`Lowerer::size_tensor`]).
//! An integer or bool dtype is an error (E0502). `cast(size(x, 0), d)` is the size as a
//! rank-0 tensor of `d`.

use super::call::{diag, SizeCall, SizeItem, Val};
use super::instantiate::Lowerer;
use crate::attr::{Attr, Scalar};
use crate::diagnostic::Diagnostic;
use crate::dtype::DType;
use crate::graph::{TensorType, ValueId};
use crate::op::{Op, ReduceOp};
use crate::shape::{Dim, DimExpr, Shape};
use crate::span::Span;

/// The built-in functions on sizes.
const BUILTINS: [&str; 2] = ["size", "shape"];

/// The operators that apply to sizes.
const SIZE_OPS: [&str; 4] = ["add", "sub", "mul", "div"];

/// The operators a float of sizes ([`Val::SizeFloat`]) may go through before it meets its
/// dtype, besides the float ops (`sqrt`, `exp`, ...).
pub(super) const SIZE_FLOAT_OPS: [&str; 10] =
    ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "neg", "abs", "atan2"];

/// An argument of a call: its value and the span of its expression.
pub(super) type ArgVal = (Val, Span);

impl Lowerer<'_> {
    /// The dimension a size stands for (a derived symbol unless it folds).
    pub(crate) fn size_dim(&mut self, e: &DimExpr) -> Dim {
        self.syms.derive(e.clone())
    }

    /// A size as a value, folded (a constant one stays a size: [`Val::Size`]).
    pub(super) fn size_val(&self, e: DimExpr) -> Val {
        Val::Size(super::syms::fold(&e, &|d| self.syms.resolve(d)))
    }

    /// Whether `callee` is the built-in `size` or `shape` here (no library function hides it).
    pub(super) fn is_size_builtin(&self, callee: &str, overload: Option<&str>) -> bool {
        overload.is_none() && BUILTINS.contains(&callee) && self.lib.overloads(callee).is_empty()
    }

    /// `size(x, dim)` or `shape(x)`.
    pub(super) fn size_builtin(
        &mut self,
        span: Span,
        callee: &str,
        positional: &[ArgVal],
        keywords: &[(String, Val, Span)],
    ) -> Result<Val, Diagnostic> {
        let usage = if callee == "size" { "size(x, dim)" } else { "shape(x)" };
        let wanted: &[&str] = if callee == "size" { &["x", "dim"] } else { &["x"] };
        let mut args: Vec<Option<(Val, Span)>> = vec![None; wanted.len()];
        for (i, (v, s)) in positional.iter().enumerate() {
            let Some(slot) = args.get_mut(i) else {
                let msg = format!("too many arguments to `{callee}`: it is `{usage}`");
                return Err(diag("E0502", msg, Some(*s)));
            };
            *slot = Some((v.clone(), *s));
        }
        for (k, v, s) in keywords {
            let Some(i) = wanted.iter().position(|w| w == k) else {
                let msg = format!("`{callee}` has no parameter named `{k}`: it is `{usage}`");
                return Err(diag("E0502", msg, Some(*s)));
            };
            if args[i].is_some() {
                return Err(diag("E0502", format!("argument `{k}` is given twice"), Some(*s)));
            }
            args[i] = Some((v.clone(), *s));
        }
        let missing = |name: &str| {
            let msg = format!("missing argument `{name}` in call to `{callee}`: it is `{usage}`");
            diag("E0502", msg, Some(span))
        };
        let (x, x_span) = args[0].clone().ok_or_else(|| missing("x"))?;
        let Val::Tensor(x) = x else {
            let msg = format!("`{callee}` needs a tensor, found {}", x.describe(&self.graph));
            return Err(diag("E0502", msg, Some(x_span)));
        };
        let shape = self.ty(x).shape;
        if callee == "shape" {
            // Every axis a size, constant ones included (as `size` gives them): an item
            // (`shape(x)[-1]`) then divides as a size whatever the call's sizes are; where the
            // list is used as a value, `Val::settled` makes it an `Int[]` again.
            let items = shape.0.iter().map(|d| SizeItem::Size(DimExpr::Dim(*d))).collect();
            return Ok(Val::SizeList(items));
        }
        let (dim, dim_span) = args[1].clone().ok_or_else(|| missing("dim"))?;
        let dim = match dim.settled() {
            Val::Attr(Attr::Int(d)) => d,
            Val::Size(_) => {
                let msg = "`size`'s `dim` is a size, known only at the call: it must be a \
                           compile-time Int";
                return Err(diag("E0507", msg, Some(dim_span)));
            }
            other => {
                let msg =
                    format!("`size`'s `dim` must be Int, found {}", other.describe(&self.graph));
                return Err(diag("E0502", msg, Some(dim_span)));
            }
        };
        let rank = shape.rank();
        let Some(axis) = super::call::normalize_axis(dim, rank) else {
            let what = self.label(x_span, "x");
            let msg = format!("dim {dim} is out of range for `{what}` of rank {rank}");
            return Err(diag("E0505", msg, Some(dim_span)));
        };
        // A constant axis is a size too (its `/` is the sizes' exact division).
        Ok(Val::Size(DimExpr::Dim(shape.0[axis])))
    }

    /// Arithmetic on sizes (`size(x, -1) / heads`), when the arguments are sizes and ints
    /// with at least one size: `Ok(None)` when this is not such a call.
    pub(super) fn size_arith(
        &mut self,
        span: Span,
        callee: &str,
        overload: Option<&str>,
        positional: &[ArgVal],
        no_keywords: bool,
    ) -> Result<Option<Val>, Diagnostic> {
        let any_size = positional.iter().any(|(v, _)| matches!(v, Val::Size(_)));
        let all_numbers = positional
            .iter()
            .all(|(v, _)| matches!(v, Val::Size(_) | Val::Attr(Attr::Int(_) | Attr::Float(_))));
        if !any_size || !all_numbers || !no_keywords || !super::is_static_op(callee, overload) {
            return Ok(None);
        }
        // Sizes that folded to constants (axes the signature says are 1) are plain ints here
        // except for `/` by an int: the sizes' exact division (an `Int`), as it is for every
        // other size of the same axis, not `Int / Int`'s `Float`.
        let call_size = positional.iter().any(|(v, _)| v.is_call_size());
        let int_division = callee == "div"
            && positional.iter().all(|(v, _)| matches!(v, Val::Size(_) | Val::Attr(Attr::Int(_))));
        if !call_size && !int_division {
            return Ok(None);
        }
        let text = self.label(span, "the expression");
        let refuse = |why: &str| {
            let msg = format!("`{text}`: {why}");
            Err(diag("E0507", msg, Some(span))
                .with_note("a size (`size(x, dim)`, `shape(x)`) is an `Int` known only at the call")
                .with_help("sizes support `+`, `-`, `*` and `/` (exact) with ints and other sizes"))
        };
        let (a, b) = match positional {
            [(a, _), (b, _)] if SIZE_OPS.contains(&callee) => (a, b),
            _ => {
                let what = match callee {
                    "eq" | "ne" | "lt" | "le" | "gt" | "ge" => {
                        "a size cannot be compared at compile time (a static `if` needs a \
                         compile-time Bool)"
                    }
                    _ => "this operation does not apply to sizes",
                };
                return refuse(what);
            }
        };
        let item = |v: &Val| match v {
            Val::Size(e) => Some(SizeItem::Size(e.clone())),
            Val::Attr(Attr::Int(i)) => Some(SizeItem::Int(*i)),
            _ => None,
        };
        let (Some(a), Some(b)) = (item(a), item(b)) else {
            return refuse("a size cannot be mixed with a float");
        };
        use DimExpr as E;
        let konst = |i: i64| E::Dim(Dim::Const(i.unsigned_abs()));
        let expr = |s: &SizeItem| match s {
            SizeItem::Size(e) => e.clone(),
            SizeItem::Int(i) => konst(*i),
        };
        let neg = |s: &SizeItem| matches!(s, SizeItem::Int(i) if *i < 0);
        let bx = Box::new;
        let e = match callee {
            "add" if neg(&b) => E::Sub(bx(expr(&a)), bx(expr(&b))),
            "add" if neg(&a) => E::Sub(bx(expr(&b)), bx(expr(&a))),
            "add" => E::Add(bx(expr(&a)), bx(expr(&b))),
            "sub" if neg(&b) => E::Add(bx(expr(&a)), bx(expr(&b))),
            "sub" if neg(&a) => return refuse("the difference is negative"),
            "sub" => E::Sub(bx(expr(&a)), bx(expr(&b))),
            "mul" if neg(&a) || neg(&b) => {
                return refuse("a size times a negative number is negative")
            }
            "mul" => E::Mul(bx(expr(&a)), bx(expr(&b))),
            _ if matches!(b, SizeItem::Int(i) if i <= 0) => {
                return refuse("a size can only be divided by a positive number")
            }
            _ if neg(&a) => return refuse("the quotient is negative"),
            _ => E::Div(bx(expr(&a)), bx(expr(&b))),
        };
        if let E::Div(n, d) = &e {
            let (n, d) = (self.syms.hint_of(n), self.syms.hint_of(d));
            if let (Some(n), Some(d)) = (n, d) {
                if d == 0 || n % d != 0 {
                    let msg = format!(
                        "`{text}` is {n} / {d} for the sizes of this call, not a whole number"
                    );
                    return Err(diag("E0510", msg, Some(span))
                        .with_note("`/` on sizes must divide exactly"));
                }
            }
        }
        if let E::Sub(n, d) = &e {
            let (n, d) = (self.syms.hint_of(n), self.syms.hint_of(d));
            if let (Some(n), Some(d)) = (n, d) {
                if n < d {
                    let msg = format!(
                        "`{text}` is {n} - {d} for the sizes of this call, which is negative"
                    );
                    return Err(diag("E0510", msg, Some(span))
                        .with_note("a size is a whole number of elements, never negative"));
                }
            }
        }
        let folded = super::syms::fold(&e, &|d| self.syms.resolve(d));
        if let E::Div(n, d) = &folded {
            if let (E::Dim(Dim::Const(n)), E::Dim(Dim::Const(d))) = (n.as_ref(), d.as_ref()) {
                let msg = format!("`{text}` is {n} / {d}, not a whole number");
                return Err(diag("E0510", msg, Some(span)));
            }
        }
        Ok(Some(self.size_val(folded)))
    }

    /// A float op of a size (`rsqrt(size(q, -1))`), or arithmetic with a float of sizes, as a
    /// [`Val::SizeFloat`]; `cast(size(x, 0), d)` as a rank-0 tensor of `d`. `Ok(None)` when
    /// this is not such a call.
    pub(super) fn size_float(
        &mut self,
        span: Span,
        callee: &str,
        overload: Option<&str>,
        positional: &[ArgVal],
        keywords: &[(String, Val, Span)],
    ) -> Result<Option<Val>, Diagnostic> {
        if callee == "cast" && overload.is_none() && self.lib.overloads("cast").len() == 1 {
            let dtype = match (positional, keywords) {
                ([_, (Val::Attr(Attr::DType(d)), _)], []) => Some(*d),
                ([_], [(k, Val::Attr(Attr::DType(d)), _)]) if k == "dtype" => Some(*d),
                _ => None,
            };
            let (Some(dtype), Some((x, x_span))) = (dtype, positional.first()) else {
                return Ok(None);
            };
            return Ok(Some(Val::Tensor(match x {
                Val::Size(e) => self.size_tensor(e, dtype, Some(*x_span))?,
                Val::SizeFloat(c) if dtype.is_float() => self.size_float_tensor(c, dtype)?,
                Val::SizeFloat(c) => {
                    let f = self.size_float_tensor(c, DType::F32)?;
                    let ty = TensorType { dtype, shape: Shape::scalar() };
                    self.emit(Op::Cast(dtype), vec![f], ty, Some(span))
                }
                // A size known when the function is instantiated folds to a number:
                // `cast(size(x, 0), f32)` with `x` of a fixed length.
                Val::Attr(a @ Attr::Int(_)) => self.literal(a, dtype, Some(*x_span))?,
                // `cast(i, f32)` of a loop variable: its `i64[]` in that dtype.
                Val::Index(t) if dtype == DType::I64 => *t,
                Val::Index(t) => {
                    let ty = TensorType { dtype, shape: Shape::scalar() };
                    self.emit(Op::Cast(dtype), vec![*t], ty, Some(span))
                }
                _ => return Ok(None),
            })));
        }
        if !keywords.is_empty() || !super::is_static_op(callee, overload) {
            return Ok(None);
        }
        let float_op = super::static_float_math(callee).is_some();
        let starts = float_op && matches!(positional, [(Val::Size(_), _)]);
        let any_float = positional.iter().any(|(v, _)| matches!(v, Val::SizeFloat(_)));
        let numbers = positional.iter().all(|(v, _)| {
            matches!(
                v,
                Val::Size(_)
                    | Val::SizeFloat(_)
                    | Val::Index(_)
                    | Val::Attr(Attr::Int(_) | Attr::Float(_))
            )
        });
        let arithmetic = float_op || SIZE_FLOAT_OPS.contains(&callee);
        if !(starts || (any_float && numbers && arithmetic)) {
            return Ok(None);
        }
        let args = positional.iter().map(|(v, _)| v.clone()).collect();
        Ok(Some(Val::SizeFloat(Box::new(SizeCall { callee: callee.to_string(), args, span }))))
    }

    /// A float of sizes computed in `dtype` (a float dtype) as a rank-0 tensor.
    pub(super) fn size_float_tensor(
        &mut self,
        call: &SizeCall,
        dtype: DType,
    ) -> Result<ValueId, Diagnostic> {
        if !dtype.is_float() {
            let text = self.label(call.span, "the expression");
            let msg = format!(
                "`{text}` is a float computed from a size: it cannot meet a tensor of dtype {dtype}"
            );
            return Err(diag("E0502", msg, Some(call.span))
                .with_note("a float op of a size (`sqrt`, `rsqrt`, ...) takes the dtype of the tensor it meets, which must be a float dtype")
                .with_help("cast that tensor to a float dtype, or the result: `cast(sqrt(size(x, 0)), i64)`"));
        }
        let mut args = Vec::with_capacity(call.args.len());
        for v in &call.args {
            args.push(match v {
                Val::Size(e) => Val::Tensor(self.size_tensor(e, dtype, Some(call.span))?),
                Val::SizeFloat(c) => Val::Tensor(self.size_float_tensor(c, dtype)?),
                Val::Attr(a) => Val::Tensor(self.literal(a, dtype, Some(call.span))?),
                // A loop variable (`0.5 * i`): its `i64[]` in the float dtype.
                Val::Index(t) => {
                    let ty = TensorType { dtype, shape: Shape::scalar() };
                    Val::Tensor(self.emit(Op::Cast(dtype), vec![*t], ty, Some(call.span)))
                }
                other => other.clone(),
            });
        }
        match self.call_named(&call.callee, args, Vec::new(), call.span)? {
            Val::Tensor(t) => Ok(t),
            other => {
                let msg = format!(
                    "internal error: `{}` of sizes gave {}",
                    call.callee,
                    other.describe(&self.graph)
                );
                Err(diag("E0509", msg, Some(call.span)))
            }
        }
    }

    /// The sizes a value is computed from (a size, a list of sizes, a float of sizes).
    pub(super) fn size_leaves(v: &Val, out: &mut Vec<DimExpr>) {
        match v {
            Val::Size(e) => out.push(e.clone()),
            Val::SizeList(items) => out.extend(items.iter().filter_map(|i| match i {
                SizeItem::Size(e) => Some(e.clone()),
                SizeItem::Int(_) => None,
            })),
            Val::SizeFloat(c) => c.args.iter().for_each(|a| Self::size_leaves(a, out)),
            _ => {}
        }
    }

    /// A value with each of its sizes mapped (`None` if one does not map; other values as
    /// they are).
    pub(super) fn map_sizes(v: &Val, f: &dyn Fn(&DimExpr) -> Option<DimExpr>) -> Option<Val> {
        Some(match v {
            Val::Size(e) => Val::Size(f(e)?),
            Val::SizeList(items) => Val::SizeList(
                items
                    .iter()
                    .map(|i| match i {
                        SizeItem::Size(e) => f(e).map(SizeItem::Size),
                        SizeItem::Int(n) => Some(SizeItem::Int(*n)),
                    })
                    .collect::<Option<Vec<_>>>()?,
            ),
            Val::SizeFloat(c) => Val::SizeFloat(Box::new(SizeCall {
                callee: c.callee.clone(),
                args: c.args.iter().map(|a| Self::map_sizes(a, f)).collect::<Option<Vec<_>>>()?,
                span: c.span,
            })),
            other => other.clone(),
        })
    }

    /// Sizes and loop variables passed to an operator next to a tensor (`x / size(x, 0)`,
    /// `h * i`) become rank-0 tensors of that tensor's dtype, as literals do.
    pub(super) fn sizes_as_tensors(
        &mut self,
        callee: &str,
        overload: Option<&str>,
        positional: &mut [ArgVal],
    ) -> Result<(), Diagnostic> {
        if !super::is_static_op(callee, overload) {
            return Ok(());
        }
        let dtype = positional.iter().find_map(|(v, _)| match v {
            Val::Tensor(t) => Some(self.graph.ty(*t).dtype),
            _ => None,
        });
        let Some(dtype) = dtype else { return Ok(()) };
        for (v, s) in positional.iter_mut() {
            if let Val::Size(e) = v {
                let e = e.clone();
                *v = Val::Tensor(self.size_tensor(&e, dtype, Some(*s))?);
            } else if let Val::SizeFloat(c) = v {
                let c = c.clone();
                *v = Val::Tensor(self.size_float_tensor(&c, dtype)?);
            } else if let Val::Index(t) = v {
                // A loop variable next to a tensor: its `i64[]` in that tensor's dtype.
                let t = *t;
                *v = Val::Tensor(if dtype == DType::I64 {
                    t
                } else {
                    let ty = TensorType { dtype, shape: Shape::scalar() };
                    self.emit(Op::Cast(dtype), vec![t], ty, Some(*s))
                });
            }
        }
        Ok(())
    }

    /// A size as a rank-0 tensor of `dtype`: the sum of a run-time number of ones (`i64`, so
    /// exact), converted once. Built from `full`, `sum` and `cast`, so every backend has it.
    pub(super) fn size_tensor(
        &mut self,
        e: &DimExpr,
        dtype: DType,
        span: Option<Span>,
    ) -> Result<ValueId, Diagnostic> {
        let d = self.size_dim(e);
        if let Dim::Const(c) = d {
            return self.literal(&Attr::Int(c as i64), dtype, span);
        }
        let ones = TensorType { dtype: DType::I64, shape: Shape(vec![d]) };
        let ones = self.emit(Op::Full { value: Scalar::Int(1) }, Vec::new(), ones, span);
        let internal = |m: String| diag("E0509", format!("internal error: {m}"), span);
        let op = Op::Reduce { op: ReduceOp::Sum, axes: vec![0], keepdim: false };
        let n = self.emit_inferred(op, vec![ones], span).map_err(internal)?;
        if dtype == DType::I64 {
            return Ok(n);
        }
        if dtype == DType::Bool {
            let msg = "a size cannot be used as a bool tensor";
            return Err(diag("E0502", msg, span));
        }
        self.emit_inferred(Op::Cast(dtype), vec![n], span).map_err(internal)
    }

    /// The sizes of a shape argument (`full`, `broadcast_to`): numbers `>= 0` and sizes.
    pub(super) fn shape_dims(
        &mut self,
        items: &[SizeItem],
        invalid: impl Fn(i64) -> Diagnostic,
    ) -> Result<Vec<Dim>, Diagnostic> {
        items
            .iter()
            .map(|item| match item {
                SizeItem::Int(s) => u64::try_from(*s).map(Dim::Const).map_err(|_| invalid(*s)),
                SizeItem::Size(e) => Ok(self.size_dim(e)),
            })
            .collect()
    }

    /// A list of numbers and sizes (`[-1, t, heads]`), when it has at least one size.
    pub(super) fn size_list_of(vals: &[Val]) -> Option<Val> {
        if !vals.iter().any(|v| matches!(v, Val::Size(_))) {
            return None;
        }
        let items = vals
            .iter()
            .map(|v| match v {
                Val::Size(e) => Some(SizeItem::Size(e.clone())),
                Val::Attr(Attr::Int(i)) => Some(SizeItem::Int(*i)),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Val::SizeList(items))
    }
}
