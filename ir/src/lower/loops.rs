//! Lowering `var`, assignment, `for` and `while`: the loop body is lowered **once**, into a
//! graph of its own (see [`crate::program`]), whatever the trip count.
//!
//! - The body's parameters are: for a `for`, the trip index `i` (an `i64[]`); then the
//!   *carried* values (the `var`s declared outside that the body assigns), the *invariant*
//!   captures (tensors from outside it reads), and one *slice* per `w[i]` of an outside tensor
//!   `w` by the loop's own variable: a parameter of `w`'s type without its first axis, bound
//!   at run time to a view of row `i` (never a copy).
//! - Each parameter gets fresh symbols for its sizes; axes that share a size outside share it
//!   in the body, so the body keeps what the caller proved (and checks it when it binds).
//! - In the outer graph, a loop's results are new parameters after the real ones (the
//!   program's split schedules them after the loop, `crate::program::split`).
//! - The loop variable is an [`Val::Index`]: an `Int` known only when the loop runs. It indexes
//!   (`w[i]`), and in arithmetic it is an `i64[]` tensor (`i + 1`), cast to the other operand's
//!   dtype where an `Int` literal would be (`h * i`). It cannot set a compile-time attribute.

use super::call::{diag, Val};
use super::instantiate::Lowerer;
use super::syms::SymTable;
use crate::attr::Attr;
use crate::diagnostic::Diagnostic;
use crate::dtype::DType;
use crate::graph::{Graph, GraphParam, TensorType, ValueId};
use crate::library::{Binding, Block, Expr, ExprKind, Stmt};
use crate::op::Op;
use crate::program::{LoopBody, LoopKind, LoopSpec, MAX_FOR_TRIPS};
use crate::shape::{Dim, Shape};
use crate::span::Span;
use std::collections::{BTreeSet, HashMap};

/// Most trips a `while` may allow (`at most N`).
pub const MAX_WHILE_TRIPS: i64 = 1 << 40;

/// The loop being lowered: what `w[i]` resolves to without a copy.
pub(super) struct LoopCtx {
    /// The trip index parameter (`None` for a `while`).
    pub index: Option<ValueId>,
    /// Invariant parameter of `w` → the slice parameter of `w[i]`.
    pub slices: HashMap<ValueId, ValueId>,
}

/// A statement form of a loop, unpacked.
pub(super) enum LoopStmt<'s> {
    For { var: &'s Binding, start: &'s Expr, end: &'s Expr, checkpoint: bool },
    While { cond: &'s Expr, max_trips: &'s Expr },
}

/// One tensor parameter of a body to be created: its name and outer type.
struct BodyParam {
    name: String,
    ty: TensorType,
    /// Each dimension's outer size and hint.
    hints: Vec<Option<u64>>,
}

impl<'a> Lowerer<'a> {
    /// Lowers a loop statement; `env` receives the carried values after the loop.
    pub(super) fn exec_loop(
        &mut self,
        stmt: LoopStmt<'_>,
        body: &Block,
        span: Span,
        env: &mut HashMap<String, Val>,
    ) -> Result<(), Diagnostic> {
        let label = self.source_text(span).map_or_else(
            || "loop".to_string(),
            // The header up to the body's `{` (a header has no braces), on one line.
            |t| {
                t.split('{')
                    .next()
                    .unwrap_or("loop")
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            },
        );
        // The loop's kind, evaluated outside.
        let (kind_out, var) = match &stmt {
            LoopStmt::For { var, start, end, checkpoint } => {
                let end_span = end.span;
                let start = self.trip_bound(start, env)?;
                let end = self.trip_bound(end, env)?;
                if let (Dim::Const(a), Dim::Const(b)) = (start, end) {
                    if b.saturating_sub(a) > MAX_FOR_TRIPS {
                        let msg = format!(
                            "this loop runs {} trips; a `for` runs at most {MAX_FOR_TRIPS}",
                            b - a
                        );
                        return Err(diag("E0511", msg, Some(end_span)));
                    }
                }
                (LoopKind::For { start, end, checkpoint: *checkpoint }, Some(*var))
            }
            LoopStmt::While { cond, max_trips } => {
                let c = self.eval(cond, env)?;
                let cond_v = self.loop_condition(c, cond.span)?;
                let n = match self.eval(max_trips, env)?.settled() {
                    Val::Attr(Attr::Int(n)) if (0..=MAX_WHILE_TRIPS).contains(&n) => n as u64,
                    other => {
                        let msg = format!(
                            "`at most` needs an Int between 0 and {MAX_WHILE_TRIPS} known at compile time, found {}",
                            other.describe(&self.graph)
                        );
                        return Err(diag("E0511", msg, Some(max_trips.span)));
                    }
                };
                (LoopKind::While { cond: cond_v, max_trips: n }, None)
            }
        };
        // What the body assigns and reads from outside.
        let mut assigned = Vec::new();
        assigned_names(body, &mut assigned);
        let mut declared = BTreeSet::new();
        declared_names(body, &mut declared);
        let mut carried_names: Vec<String> = Vec::new();
        for (name, at) in &assigned {
            if declared.contains(name) || carried_names.contains(name) {
                continue;
            }
            match env.get(name) {
                Some(Val::Tensor(_)) => carried_names.push(name.clone()),
                Some(other) => {
                    let msg = format!(
                        "`{name}` is {} outside the loop; a loop may only update tensor `var`s",
                        other.describe(&self.graph)
                    );
                    return Err(diag("E0511", msg, Some(*at))
                        .with_help("compute it as a tensor (e.g. `full([], 0)`) to carry it"));
                }
                None => {
                    let msg =
                        format!("`{name}` is assigned in the loop but not declared before it");
                    return Err(diag("E0511", msg, Some(*at))
                        .with_help(format!("declare it before the loop with `var {name} = ...`")));
                }
            }
        }
        let mut referenced = BTreeSet::new();
        names_in_block(body, &mut referenced);
        if let LoopStmt::While { cond, .. } = &stmt {
            names_in_expr(cond, &mut referenced);
        }
        let loop_var = var.map(|v| v.name.clone());
        let mut invariant_names = Vec::new();
        for name in &referenced {
            if Some(name) == loop_var.as_ref() || carried_names.contains(name) {
                continue;
            }
            // A float of an outer loop's variable (`let c = 0.5 * i`) is a tensor of the
            // body it was computed in: read by an inner loop, it takes the default dtype, f32,
            // as anywhere it meets no tensor.
            if let Some(Val::SizeFloat(c)) = env.get(name) {
                if c.args.iter().any(has_index) {
                    let c = c.clone();
                    let t = self.size_float_tensor(&c, DType::F32)?;
                    env.insert(name.clone(), Val::Tensor(t));
                }
            }
            if matches!(env.get(name), Some(Val::Tensor(_) | Val::List(_) | Val::Index(_))) {
                invariant_names.push(name.clone());
            }
        }
        // Sizes the body reads from outside (`let t = size(x, 1)` before the loop): each of
        // their symbols must be an axis of some body parameter; when none is, the outer
        // value that has it is captured too, for its shape only.
        let mut size_dims = Vec::new();
        for name in &referenced {
            let mut items: Vec<crate::shape::DimExpr> = Vec::new();
            match env.get(name) {
                Some(v @ (Val::Size(_) | Val::SizeList(_) | Val::SizeFloat(_))) => {
                    Self::size_leaves(v, &mut items)
                }
                _ => continue,
            }
            for e in items {
                super::syms::collect_dims(&e, &mut size_dims);
            }
        }
        let mut shape_sources: Vec<ValueId> = Vec::new();
        {
            let mut visible: Vec<Dim> = Vec::new();
            for name in carried_names.iter().chain(&invariant_names) {
                let vs = match env.get(name) {
                    Some(Val::Tensor(v)) => vec![*v],
                    Some(Val::List(vs)) => vs.clone(),
                    _ => continue,
                };
                for v in vs {
                    visible.extend(self.ty(v).shape.0);
                }
            }
            for d in size_dims {
                let d = self.syms.resolve(d);
                if matches!(d, Dim::Const(_)) || visible.contains(&d) {
                    continue;
                }
                let holder = (0..self.graph.nodes.len())
                    .map(|i| ValueId(i as u32))
                    .find(|v| self.ty(*v).shape.0.contains(&d));
                match holder {
                    Some(v) => {
                        visible.extend(self.ty(v).shape.0);
                        shape_sources.push(v);
                    }
                    None => {
                        let msg = "a size used in the loop is not the size of any tensor before it";
                        return Err(diag("E0511", msg, Some(span)));
                    }
                }
            }
        }
        let mut sliced_names = Vec::new();
        if let Some(v) = &loop_var {
            indexed_by(body, v, &mut sliced_names);
            sliced_names.retain(|n| {
                invariant_names.contains(n) && matches!(env.get(n), Some(Val::Tensor(_)))
            });
        }
        // The body's parameters, described with the outer types (and hints) before switching
        // to the body's graph.
        let describe = |lw: &Self, name: String, v: ValueId, drop_first: bool| -> BodyParam {
            let ty = lw.ty(v);
            let dims: Vec<Dim> = ty.shape.0.iter().skip(usize::from(drop_first)).copied().collect();
            let hints = dims.iter().map(|d| lw.syms.hint(*d)).collect();
            BodyParam { name, ty: TensorType { dtype: ty.dtype, shape: Shape(dims) }, hints }
        };
        let mut carried_vals = Vec::new();
        let mut params = Vec::new();
        for name in &carried_names {
            let Some(Val::Tensor(v)) = env.get(name) else { continue };
            carried_vals.push(*v);
            params.push(describe(self, name.clone(), *v, false));
        }
        // Invariants: tensors, list items and outer loop indices, one parameter each.
        let mut invariant_vals = Vec::new();
        let mut invariant_shape: Vec<(String, usize)> = Vec::new();
        for name in &invariant_names {
            let vs = match env.get(name) {
                Some(Val::Tensor(v) | Val::Index(v)) => vec![*v],
                Some(Val::List(vs)) => vs.clone(),
                _ => continue,
            };
            invariant_shape.push((name.clone(), vs.len()));
            for (k, v) in vs.iter().enumerate() {
                let pname = if matches!(env.get(name), Some(Val::List(_))) {
                    format!("{name}[{k}]")
                } else {
                    name.clone()
                };
                invariant_vals.push(*v);
                params.push(describe(self, pname, *v, false));
            }
        }
        for (k, v) in shape_sources.iter().enumerate() {
            invariant_vals.push(*v);
            params.push(describe(self, format!("#shape{k}"), *v, false));
        }
        let mut sliced_vals = Vec::new();
        for name in &sliced_names {
            let Some(Val::Tensor(v)) = env.get(name) else { continue };
            if self.graph.ty(*v).shape.rank() == 0 {
                let msg = format!("`{name}` is a scalar: it has no axis for `{name}[..]` to index");
                return Err(diag("E0511", msg, Some(span)));
            }
            sliced_vals.push(*v);
            let var = loop_var.as_deref().unwrap_or("i");
            params.push(describe(self, format!("{name}[{var}]"), *v, true));
        }
        // Lower the body in a graph of its own.
        let outer = self.enter_body(&label);
        let mut shared: HashMap<Dim, Dim> = HashMap::new();
        let index = loop_var.as_ref().map(|v| {
            let ty = TensorType { dtype: DType::I64, shape: Shape::scalar() };
            self.body_param(v.clone(), ty, &[], &mut HashMap::new())
        });
        let mut body_params = Vec::new();
        for p in &params {
            body_params.push(self.body_param(p.name.clone(), p.ty.clone(), &p.hints, &mut shared));
        }
        let mut body_env = env.clone();
        let nc = carried_vals.len();
        let ni = invariant_vals.len();
        for (name, id) in carried_names.iter().zip(&body_params[..nc]) {
            body_env.insert(name.clone(), Val::Tensor(*id));
        }
        let mut k = nc;
        let mut slices = HashMap::new();
        for (name, count) in &invariant_shape {
            let ids = &body_params[k..k + count];
            let val = match env.get(name) {
                Some(Val::List(_)) => Val::List(ids.to_vec()),
                Some(Val::Index(_)) => Val::Index(ids[0]),
                _ => Val::Tensor(ids[0]),
            };
            if let (Some(pos), Val::Tensor(t)) = (sliced_names.iter().position(|n| n == name), &val)
            {
                slices.insert(*t, body_params[nc + ni + pos]);
            }
            body_env.insert(name.clone(), val);
            k += count;
        }
        if let (Some(v), Some(i)) = (&loop_var, index) {
            body_env.insert(v.clone(), Val::Index(i));
        }
        // Outer sizes in terms of the body's symbols.
        let translate = |e: &crate::shape::DimExpr| -> Option<crate::shape::DimExpr> {
            let mut leaves = Vec::new();
            super::syms::collect_dims(e, &mut leaves);
            let ok = leaves.iter().all(|d| {
                let d = outer.syms.resolve(*d);
                matches!(d, Dim::Const(_)) || shared.contains_key(&d)
            });
            ok.then(|| {
                super::syms::map_expr(e, &|d| match outer.syms.resolve(d) {
                    c @ Dim::Const(_) => c,
                    r => shared.get(&r).copied().unwrap_or(r),
                })
            })
        };
        for name in &referenced {
            let translated = match env.get(name) {
                Some(v @ (Val::Size(_) | Val::SizeList(_) | Val::SizeFloat(_))) => {
                    Self::map_sizes(v, &translate)
                }
                _ => continue,
            };
            match translated {
                Some(v) => {
                    body_env.insert(name.clone(), v);
                }
                None => {
                    body_env.remove(name);
                }
            }
        }
        self.loop_ctx.push(LoopCtx { index, slices });
        let ran = self.exec_loop_body(body, &body_env, &carried_names, &assigned, &stmt);
        self.loop_ctx.pop();
        let ran = ran.and_then(|outputs| {
            // Dtype and rank stay what they were before the loop.
            for ((name, out), init) in carried_names.iter().zip(&outputs).zip(&carried_vals) {
                let got = self.graph.ty(*out).clone();
                let want = outer.graph.ty(*init);
                if got.dtype != want.dtype || got.shape.rank() != want.shape.rank() {
                    let at = assigned.iter().rev().find(|(n, _)| n == name).map(|(_, s)| *s);
                    let msg = format!(
                        "the loop changes `{name}` from {}[rank {}] to {}[rank {}]; a loop-carried value keeps its dtype and rank",
                        want.dtype,
                        want.shape.rank(),
                        got.dtype,
                        got.shape.rank()
                    );
                    return Err(diag("E0511", msg, at.or(Some(span))));
                }
            }
            Ok(outputs)
        });
        let (body_graph, body_lw) = self.leave_body(outer);
        let outputs = ran?;
        if outputs.is_empty() {
            // A `for` that assigns no `var` has no effect (like an unused `let`): nothing runs.
            return Ok(());
        }
        let mut body_graph = body_graph;
        body_graph.outputs = outputs;
        let BodyState { mut syms, regions, mut loops } = body_lw;
        let inputs = body_graph.params.len() - loops.iter().map(|l| l.results.len()).sum::<usize>();
        // A body's decisions on derived sizes (is `size(x, 2) / heads` 1?) are the outer
        // function's guards when they are sizes of the outer function: the body is compiled
        // once per instance of the function, and the call checks them.
        let pairs: Vec<(Dim, Dim)> = shared.iter().map(|(o, b)| (*b, *o)).collect();
        for (e, one) in syms.lift_guards(&pairs) {
            self.syms.add_guard(e, one);
        }
        let guards = syms.finish_with(&mut body_graph, &mut crate::program::bounds_mut(&mut loops));
        if !guards.is_empty() {
            let msg = format!(
                "the body of `{label}` depends on how its derived sizes compare ({}): compute those sizes outside the loop",
                guards.readable()
            );
            return Err(diag("E0511", msg, Some(span)));
        }
        if let Err(e) = crate::verify::verify(&body_graph) {
            let msg = format!("internal error: the body of `{label}` is an invalid graph: {e}");
            return Err(diag("E0509", msg, Some(span)));
        }
        // The loop's results: parameters of the outer graph after its real ones.
        let mut results = Vec::new();
        for (name, init) in carried_names.iter().zip(&carried_vals) {
            let ty = self.ty(*init);
            let p = self.graph.params.len() as u32;
            self.graph.params.push(GraphParam { name: format!("{name}'"), ty: ty.clone() });
            let r = self.emit(Op::Param(p), Vec::new(), ty, Some(span));
            results.push(r);
            env.insert(name.clone(), Val::Tensor(r));
        }
        let body = LoopBody { graph: body_graph, inputs, regions, loops };
        self.loops.push(LoopSpec {
            label,
            span: Some(span),
            at: crate::diagnostic::span_location(span, &self.lib.sources),
            kind: kind_out,
            body: Box::new(body),
            carried_names,
            carried: carried_vals,
            invariants: invariant_vals,
            sliced: sliced_vals,
            results,
        });
        Ok(())
    }

    /// Runs the body's statements; returns the carried values after one trip (and a
    /// `while`'s next condition).
    fn exec_loop_body(
        &mut self,
        body: &Block,
        env: &HashMap<String, Val>,
        carried: &[String],
        assigned: &[(String, Span)],
        stmt: &LoopStmt<'_>,
    ) -> Result<Vec<ValueId>, Diagnostic> {
        let (ret, after) = self.exec_scope(body, env)?;
        if ret.is_some() {
            let msg = "`return` inside a loop: a loop's results are the `var`s it assigns";
            return Err(diag("E0511", msg, None));
        }
        let mut outputs = Vec::new();
        for name in carried {
            match after.get(name) {
                Some(Val::Tensor(v)) => {
                    let span = assigned.iter().rev().find(|(n, _)| n == name).map(|(_, s)| *s);
                    let v = match self.leave(Val::Tensor(*v), span) {
                        Val::Tensor(v) => v,
                        _ => *v,
                    };
                    outputs.push(v);
                }
                other => {
                    let at = assigned.iter().rev().find(|(n, _)| n == name).map(|(_, s)| *s);
                    let what = other.map_or("nothing".to_string(), |o| o.describe(&self.graph));
                    let msg = format!("the loop assigns {what} to tensor `var` `{name}`");
                    return Err(diag("E0511", msg, at));
                }
            }
        }
        if let LoopStmt::While { cond, .. } = stmt {
            let c = self.eval(cond, &after)?;
            outputs.push(self.loop_condition(c, cond.span)?);
        }
        Ok(outputs)
    }

    /// A `while` condition: a `bool[]` tensor.
    fn loop_condition(&mut self, c: Val, span: Span) -> Result<ValueId, Diagnostic> {
        match c {
            Val::Tensor(t)
                if self.graph.ty(t).dtype == DType::Bool && self.graph.ty(t).shape.rank() == 0 =>
            {
                Ok(t)
            }
            Val::Tensor(t) => {
                let ty = self.ty(t);
                let msg = format!(
                    "a `while` condition must be a bool tensor of shape [], found {}{}",
                    ty.dtype,
                    self.syms.shown(&ty.shape)
                );
                Err(diag("E0511", msg, Some(span))
                    .with_help("reduce it to one value, e.g. `max(x) > 0.5` or `sum(x) > 0`"))
            }
            other => {
                let msg = format!(
                    "a `while` condition must be a bool tensor of shape [], found {}",
                    other.describe(&self.graph)
                );
                Err(diag("E0511", msg, Some(span))
                    .with_help("a condition known at compile time is an `if`"))
            }
        }
    }

    /// A `for` bound: an `Int` known when the loop starts (an attribute, a literal or a
    /// size), as a size of the outer graph.
    fn trip_bound(&mut self, e: &Expr, env: &HashMap<String, Val>) -> Result<Dim, Diagnostic> {
        match self.eval(e, env)?.settled() {
            Val::Attr(Attr::Int(n)) if n >= 0 => Ok(Dim::Const(n as u64)),
            Val::Size(e) => Ok(self.syms.derive(e)),
            Val::Attr(Attr::Int(n)) => {
                let msg = format!("a loop bound must not be negative, found {n}");
                Err(diag("E0511", msg, Some(e.span)))
            }
            other => {
                let msg = format!(
                    "a loop bound must be an Int known when the loop starts (an attribute, a literal or `size(x, d)`), found {}",
                    other.describe(&self.graph)
                );
                Err(diag("E0511", msg, Some(e.span)))
            }
        }
    }

    /// One parameter of the body being lowered. Axes whose outer size is already a
    /// parameter's axis share its symbol.
    fn body_param(
        &mut self,
        name: String,
        ty: TensorType,
        hints: &[Option<u64>],
        shared: &mut HashMap<Dim, Dim>,
    ) -> ValueId {
        let index = self.graph.params.len() as u32;
        let dims = ty
            .shape
            .0
            .iter()
            .enumerate()
            .map(|(axis, d)| match d {
                Dim::Const(c) => Dim::Const(*c),
                Dim::Sym(_) => {
                    let fresh =
                        self.syms.input(index, axis as u32, hints.get(axis).copied().flatten());
                    match shared.get(d) {
                        Some(prev) => self.syms.unify(*prev, fresh).unwrap_or(fresh),
                        None => {
                            shared.insert(*d, fresh);
                            fresh
                        }
                    }
                }
            })
            .collect();
        let ty = TensorType { dtype: ty.dtype, shape: Shape(dims) };
        self.graph.params.push(GraphParam { name, ty: ty.clone() });
        self.emit(Op::Param(index), Vec::new(), ty, None)
    }

    /// Switches to a fresh graph for a loop body; returns the outer state.
    fn enter_body(&mut self, label: &str) -> OuterState {
        let graph = Graph { name: format!("{} [{label}]", self.graph.name), ..Graph::default() };
        OuterState {
            graph: std::mem::replace(&mut self.graph, graph),
            syms: std::mem::take(&mut self.syms),
            regions: std::mem::take(&mut self.regions),
            carried: std::mem::take(&mut self.carried),
            loops: std::mem::take(&mut self.loops),
        }
    }

    /// Back to the outer graph; returns the body's graph and state.
    fn leave_body(&mut self, outer: OuterState) -> (Graph, BodyState) {
        let graph = std::mem::replace(&mut self.graph, outer.graph);
        let state = BodyState {
            syms: std::mem::replace(&mut self.syms, outer.syms),
            regions: std::mem::replace(&mut self.regions, outer.regions),
            loops: std::mem::replace(&mut self.loops, outer.loops),
        };
        self.carried = outer.carried;
        (graph, state)
    }

    /// `x[i]`: row `i` of `x` along its first axis.
    pub(super) fn eval_index(
        &mut self,
        base: &Expr,
        index: &Expr,
        span: Span,
        env: &HashMap<String, Val>,
    ) -> Result<Val, Diagnostic> {
        // (A list of sizes stays one: its items are sizes, constant ones included.)
        let b = match self.eval(base, env)? {
            list @ Val::SizeList(_) => list,
            b => b.settled(),
        };
        let i = self.eval(index, env)?.settled();
        // In a loop body, `x[k]` with a literal `k` reads its row like a run-time index: a
        // `slice` of a size the body binds would need a size guard, which a body cannot have.
        let i = match (&b, i) {
            (Val::Tensor(_), Val::Attr(Attr::Int(k))) if !self.loop_ctx.is_empty() => {
                Val::Index(self.literal(&Attr::Int(k), DType::I64, Some(index.span))?)
            }
            (_, i) => i,
        };
        match (&b, &i) {
            (Val::Tensor(x), Val::Index(ix)) => {
                if let Some(ctx) = self.loop_ctx.last() {
                    if ctx.index == Some(*ix) {
                        if let Some(slice) = ctx.slices.get(x) {
                            return Ok(Val::Tensor(*slice));
                        }
                    }
                }
                // Any other run-time index: a one-row `index_select`.
                let rank = self.graph.ty(*x).shape.rank();
                if rank == 0 {
                    return Err(diag(
                        "E0511",
                        "a scalar tensor cannot be indexed",
                        Some(base.span),
                    ));
                }
                let one = self.call_named(
                    "reshape",
                    vec![Val::Tensor(*ix), Val::Attr(Attr::IntList(vec![1]))],
                    vec![],
                    span,
                )?;
                let row = self.call_named(
                    "index_select",
                    vec![Val::Tensor(*x), one],
                    vec![("dim", Val::Attr(Attr::Int(0)))],
                    span,
                )?;
                self.call_named(
                    "squeeze",
                    vec![row],
                    vec![("dims", Val::Attr(Attr::IntList(vec![0])))],
                    span,
                )
            }
            (Val::Tensor(x), Val::Attr(Attr::Int(k))) => {
                let rank = self.graph.ty(*x).shape.rank();
                if rank == 0 {
                    return Err(diag(
                        "E0511",
                        "a scalar tensor cannot be indexed",
                        Some(base.span),
                    ));
                }
                // An index outside the leading axis (its size for this call): said so, not
                // as the squeeze of an empty slice it would become.
                let rows =
                    self.syms.hint_of(&crate::shape::DimExpr::Dim(self.graph.ty(*x).shape.0[0]));
                if let Some(n) = rows {
                    let inside = if *k < 0 { k.unsigned_abs() <= n } else { (*k as u64) < n };
                    if !inside {
                        let what = self.label(base.span, "the tensor");
                        let msg = format!(
                            "index {k} is out of range for `{what}`, whose axis 0 has {n} \
                             element(s) in this call"
                        );
                        return Err(diag("E0511", msg, Some(index.span)));
                    }
                }
                let end = if *k == -1 { i64::MAX } else { k + 1 };
                let row = self.call_named(
                    "slice",
                    vec![b.clone()],
                    vec![
                        ("dim", Val::Attr(Attr::Int(0))),
                        ("start", Val::Attr(Attr::Int(*k))),
                        ("end", Val::Attr(Attr::Int(end))),
                    ],
                    span,
                )?;
                self.call_named(
                    "squeeze",
                    vec![row],
                    vec![("dims", Val::Attr(Attr::IntList(vec![0])))],
                    span,
                )
            }
            (Val::Attr(Attr::IntList(items)), Val::Attr(Attr::Int(k))) => {
                let n = items.len() as i64;
                let at = if *k < 0 { k + n } else { *k };
                match items.get(usize::try_from(at).unwrap_or(usize::MAX)) {
                    Some(v) => Ok(Val::Attr(Attr::Int(*v))),
                    None => {
                        let msg = format!("index {k} is out of range for a list of {n}");
                        Err(diag("E0511", msg, Some(index.span)))
                    }
                }
            }
            (Val::SizeList(items), Val::Attr(Attr::Int(k))) => {
                let n = items.len() as i64;
                let at = if *k < 0 { k + n } else { *k };
                match items.get(usize::try_from(at).unwrap_or(usize::MAX)) {
                    Some(super::call::SizeItem::Int(v)) => Ok(Val::Attr(Attr::Int(*v))),
                    Some(super::call::SizeItem::Size(e)) => Ok(Val::Size(e.clone())),
                    None => {
                        let msg = format!("index {k} is out of range for a list of {n}");
                        Err(diag("E0511", msg, Some(index.span)))
                    }
                }
            }
            (Val::List(items), Val::Attr(Attr::Int(k))) => {
                let n = items.len() as i64;
                let at = if *k < 0 { k + n } else { *k };
                match items.get(usize::try_from(at).unwrap_or(usize::MAX)) {
                    Some(v) => Ok(Val::Tensor(*v)),
                    None => {
                        let msg = format!("index {k} is out of range for a list of {n} tensors");
                        Err(diag("E0511", msg, Some(index.span)))
                    }
                }
            }
            _ => {
                let msg = format!(
                    "cannot index {} by {}",
                    b.describe(&self.graph),
                    i.describe(&self.graph)
                );
                Err(diag("E0511", msg, Some(span)))
            }
        }
    }

    /// The source text a span covers, if short.
    pub(super) fn source_text(&self, span: Span) -> Option<String> {
        let text = self.lib.sources.get(span.file)?.text.get(span.range())?;
        Some(text.chars().take(120).collect())
    }
}

/// The outer graph's lowering state while a body is lowered.
struct OuterState {
    graph: Graph,
    syms: SymTable,
    regions: Vec<super::CallRegion>,
    carried: HashMap<ValueId, ValueId>,
    loops: Vec<LoopSpec>,
}

/// What lowering a body left besides its graph.
struct BodyState {
    syms: SymTable,
    regions: Vec<super::CallRegion>,
    loops: Vec<LoopSpec>,
}

/// Names assigned anywhere in `block` (nested blocks included), with each assignment's span,
/// in source order.
pub(super) fn assigned_names(block: &Block, out: &mut Vec<(String, Span)>) {
    for s in &block.stmts {
        match s {
            Stmt::Assign { name, span, .. } => out.push((name.name.clone(), *span)),
            Stmt::If { then_block, else_block, .. } => {
                assigned_names(then_block, out);
                if let Some(e) = else_block {
                    assigned_names(e, out);
                }
            }
            Stmt::For { body, .. } | Stmt::While { body, .. } => assigned_names(body, out),
            Stmt::Let { .. } | Stmt::Return { .. } | Stmt::Var { .. } => {}
        }
    }
}

/// Names declared (`let`, `var`, loop variables) anywhere in `block`.
fn declared_names(block: &Block, out: &mut BTreeSet<String>) {
    for s in &block.stmts {
        match s {
            Stmt::Let { names, .. } => out.extend(names.iter().map(|n| n.name.clone())),
            Stmt::Var { name, .. } => {
                out.insert(name.name.clone());
            }
            Stmt::If { then_block, else_block, .. } => {
                declared_names(then_block, out);
                if let Some(e) = else_block {
                    declared_names(e, out);
                }
            }
            Stmt::For { var, body, .. } => {
                out.insert(var.name.clone());
                declared_names(body, out);
            }
            Stmt::While { body, .. } => declared_names(body, out),
            Stmt::Assign { .. } | Stmt::Return { .. } => {}
        }
    }
}

/// Every name an expression of `block` reads.
fn names_in_block(block: &Block, out: &mut BTreeSet<String>) {
    for s in &block.stmts {
        match s {
            Stmt::Let { value, .. } | Stmt::Var { value, .. } | Stmt::Assign { value, .. } => {
                names_in_expr(value, out)
            }
            Stmt::Return { values, .. } => values.iter().for_each(|v| names_in_expr(v, out)),
            Stmt::If { cond, then_block, else_block, .. } => {
                names_in_expr(cond, out);
                names_in_block(then_block, out);
                if let Some(e) = else_block {
                    names_in_block(e, out);
                }
            }
            Stmt::For { start, end, body, .. } => {
                names_in_expr(start, out);
                names_in_expr(end, out);
                names_in_block(body, out);
            }
            Stmt::While { cond, max_trips, body, .. } => {
                names_in_expr(cond, out);
                names_in_expr(max_trips, out);
                names_in_block(body, out);
            }
        }
    }
}

pub(super) fn names_in_expr(e: &Expr, out: &mut BTreeSet<String>) {
    match &e.kind {
        ExprKind::Name(n) => {
            out.insert(n.clone());
        }
        ExprKind::List(items) | ExprKind::Tuple(items) => {
            items.iter().for_each(|i| names_in_expr(i, out))
        }
        ExprKind::Call { args, .. } => args.iter().for_each(|a| names_in_expr(&a.value, out)),
        ExprKind::Index { base, index } => {
            names_in_expr(base, out);
            names_in_expr(index, out);
        }
        ExprKind::Size { tensor, .. } => {
            out.insert(tensor.clone());
        }
        ExprKind::Literal(_) | ExprKind::PatVar(_) => {}
    }
}

/// Names `n` of `n[var]` in `block` (not inside a nested loop over a variable of the same
/// name).
fn indexed_by(block: &Block, var: &str, out: &mut Vec<String>) {
    fn expr(e: &Expr, var: &str, out: &mut Vec<String>) {
        match &e.kind {
            ExprKind::Index { base, index } => {
                if let (ExprKind::Name(n), ExprKind::Name(i)) = (&base.kind, &index.kind) {
                    if i == var && !out.contains(n) {
                        out.push(n.clone());
                    }
                }
                expr(base, var, out);
                expr(index, var, out);
            }
            ExprKind::List(items) | ExprKind::Tuple(items) => {
                items.iter().for_each(|i| expr(i, var, out))
            }
            ExprKind::Call { args, .. } => args.iter().for_each(|a| expr(&a.value, var, out)),
            _ => {}
        }
    }
    for s in &block.stmts {
        match s {
            Stmt::Let { value, .. } | Stmt::Var { value, .. } | Stmt::Assign { value, .. } => {
                expr(value, var, out)
            }
            Stmt::Return { values, .. } => values.iter().for_each(|v| expr(v, var, out)),
            Stmt::If { cond, then_block, else_block, .. } => {
                expr(cond, var, out);
                indexed_by(then_block, var, out);
                if let Some(e) = else_block {
                    indexed_by(e, var, out);
                }
            }
            Stmt::For { var: v, body, .. } if v.name != var => indexed_by(body, var, out),
            Stmt::While { cond, body, .. } => {
                expr(cond, var, out);
                indexed_by(body, var, out);
            }
            Stmt::For { .. } => {}
        }
    }
}

/// Whether a value is computed from a loop variable (a float of one: `0.5 * i`).
fn has_index(v: &Val) -> bool {
    match v {
        Val::Index(_) => true,
        Val::SizeFloat(c) => c.args.iter().any(has_index),
        _ => false,
    }
}
