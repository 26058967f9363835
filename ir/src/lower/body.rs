//! The instantiation walk: runs a composed function's statements with attributes known
//! (static `if`, `let`, tuples, `return`), evaluates expressions, resolves every call with the
//! dispatcher and inlines it, and hands primitive and extern calls to their builders.

use super::call::{diag, flatten, list_dtype, no_match, BoundCall, Val};
use super::instantiate::{Lowerer, MAX_DEPTH, MAX_NODES};
use super::{call, primitives, sizes, static_eval, static_float_math};
use crate::attr::Attr;
use crate::diagnostic::Diagnostic;
use crate::dispatch::{self, param_type_name, ArgKind, AttrType, BoundArg};
use crate::library::{Block, Body, Expr, ExprKind, FunctionDef, ParamType, Stmt};
use crate::span::Span;
use std::collections::HashMap;

/// How a block ended: the values of its `return` (if one ran) and the names visible after it.
pub(super) type ScopeEnd = (Option<Vec<Val>>, HashMap<String, Val>);

impl<'a> Lowerer<'a> {
    pub(super) fn eval_default(
        &mut self,
        default: Option<&Expr>,
        param: &str,
    ) -> Result<Val, Diagnostic> {
        let Some(expr) = default else {
            return Err(diag("E0502", format!("missing required argument `{param}`"), None));
        };
        self.eval(expr, &HashMap::new())
    }

    /// Lowers a bound call and returns its results (one per declared result).
    pub(super) fn call_bound(&mut self, call: BoundCall<'a>) -> Result<Vec<Val>, Diagnostic> {
        let fdef = call.fdef;
        match &fdef.body {
            Body::Primitive => {
                if let Some(out) = self.lower_grad_helper(&call) {
                    return Ok(vec![out?]);
                }
                let Some(prim) = primitives::lookup(&fdef.name, fdef.overload.as_deref()) else {
                    let msg = format!(
                        "`{}` is declared as an op but the compiler has no kernel for it",
                        fdef.full_name()
                    );
                    return Err(diag("E0501", msg, Some(fdef.name_span)));
                };
                Ok(vec![Val::Tensor(self.lower_primitive(prim, &call)?)])
            }
            Body::Extern(spec) => Ok(vec![Val::Tensor(self.lower_extern(spec, &call)?)]),
            Body::Composed(block) => {
                let inlining = self.active.len() > 1;
                if inlining {
                    self.inlined.push(fdef.full_name());
                }
                let mut env = HashMap::new();
                for (p, v) in fdef.params.iter().zip(&call.vals) {
                    env.insert(p.name.clone(), v.clone());
                }
                let first_node = self.graph.nodes.len();
                // Each function body carries its own values (`storage.rs`).
                let caller_carried = std::mem::take(&mut self.carried);
                let out = self.exec_block(block, &env).map_err(|d| self.at_call_site(d, &call));
                self.carried = caller_carried;
                if inlining {
                    self.inlined.pop();
                }
                let Some(out) = out? else {
                    let msg = format!("`{}` ends without `return`", fdef.full_name());
                    return Err(diag("E0508", msg, Some(fdef.name_span)));
                };
                let out = self.check_returns(out, &call)?;
                let span = Some(fdef.name_span);
                let mut out = out.into_iter().map(|v| self.leave(v, span)).collect::<Vec<_>>();
                self.record_region(&call, first_node, &mut out);
                Ok(out)
            }
        }
    }

    /// An error inside a function of another file (a `std:` module, a `use`d library) also
    /// points at the call in the caller's file, so users see which of their calls failed. When
    /// the culprit is in the standard library, which users did not write, their call is the
    /// primary location and the library's line a secondary one.
    fn at_call_site(&self, d: Diagnostic, call: &BoundCall) -> Diagnostic {
        let Some(site) = call.span else { return d };
        let label = format!("in this call of `{}`", call.fdef.full_name());
        let Some(primary) = d.primary.clone() else { return d.at(site, label) };
        let mut labels = std::iter::once(&primary).chain(&d.secondary);
        if labels.any(|l| l.span.file == site.file) {
            return d;
        }
        let built_in =
            self.lib.sources.get(primary.span.file).is_some_and(|f| f.name.starts_with('<'));
        if !built_in {
            return d.with_secondary(site, label);
        }
        let mut d = d.at(site, label);
        d.secondary.insert(0, primary);
        d
    }

    fn check_returns(&mut self, out: Vec<Val>, call: &BoundCall) -> Result<Vec<Val>, Diagnostic> {
        let fdef = call.fdef;
        let out = if out.len() == 1 && fdef.returns.len() > 1 { flatten(out) } else { out };
        if out.len() != fdef.returns.len() {
            let msg = format!(
                "`{}` returns {} values but its signature declares {}",
                fdef.full_name(),
                out.len(),
                fdef.returns.len()
            );
            return Err(diag("E0508", msg, Some(fdef.name_span)));
        }
        let mut checked = Vec::new();
        for (v, ty) in out.into_iter().zip(&fdef.returns) {
            let v = match (v, ty) {
                (Val::Attr(a), ParamType::Tensor(d)) => match call.resolved.dtype_of(d) {
                    Some(dtype) => Val::Tensor(self.literal(&a, dtype, Some(fdef.name_span))?),
                    None => Val::Attr(a),
                },
                (Val::Size(e), ParamType::Tensor(d)) => {
                    let dtype = call.resolved.dtype_of(d).unwrap_or(crate::DType::I64);
                    Val::Tensor(self.size_tensor(&e, dtype, Some(fdef.name_span))?)
                }
                (Val::SizeFloat(c), ParamType::Tensor(d)) => {
                    let dtype = call.resolved.dtype_of(d).unwrap_or(crate::DType::F32);
                    Val::Tensor(self.size_float_tensor(&c, dtype)?)
                }
                (v, _) => v,
            };
            if let (Val::Tensor(t), ParamType::Tensor(d)) = (&v, ty) {
                let got = self.graph.ty(*t).dtype;
                if let Some(want) = call.resolved.dtype_of(d).filter(|w| *w != got) {
                    let msg = format!(
                        "`{}` returns a {got} tensor but its signature declares {} (= {want})",
                        fdef.full_name(),
                        param_type_name(ty)
                    );
                    return Err(diag("E0508", msg, Some(fdef.name_span)));
                }
            }
            checked.push(v);
        }
        Ok(checked)
    }

    /// Runs a block; `Some` once a `return` ran.
    fn exec_block(
        &mut self,
        block: &Block,
        outer: &HashMap<String, Val>,
    ) -> Result<Option<Vec<Val>>, Diagnostic> {
        Ok(self.exec_scope(block, outer)?.0)
    }

    /// Runs a block in a scope of its own; returns `Some` once a `return` ran, and the names
    /// visible after its last statement (a `var` of an enclosing scope the block assigned has
    /// its new value there).
    pub(super) fn exec_scope(
        &mut self,
        block: &Block,
        outer: &HashMap<String, Val>,
    ) -> Result<ScopeEnd, Diagnostic> {
        let mut env = outer.clone();
        // Names this block declares: assignments to them do not leave it.
        let mut declared: Vec<String> = Vec::new();
        for stmt in &block.stmts {
            match stmt {
                Stmt::Let { names, value, span } => {
                    let v = self.eval(value, &env)?;
                    declared.extend(names.iter().map(|n| n.name.clone()));
                    match (names.as_slice(), v) {
                        ([one], v) => {
                            env.insert(one.name.clone(), v);
                        }
                        (many, Val::Tuple(items)) if items.len() == many.len() => {
                            for (b, v) in many.iter().zip(items) {
                                env.insert(b.name.clone(), v);
                            }
                        }
                        (many, v) => {
                            let msg = format!(
                                "cannot destructure {} into {} names",
                                v.describe(&self.graph),
                                many.len()
                            );
                            return Err(diag("E0508", msg, Some(*span)));
                        }
                    }
                }
                Stmt::Var { name, value, .. } => {
                    let v = self.eval(value, &env)?;
                    declared.push(name.name.clone());
                    env.insert(name.name.clone(), v);
                }
                Stmt::Assign { name, value, span } => {
                    let v = self.eval(value, &env)?;
                    if !env.contains_key(&name.name) {
                        let msg = format!("`{}` is assigned but never declared", name.name);
                        return Err(diag("E0511", msg, Some(*span)));
                    }
                    env.insert(name.name.clone(), v);
                }
                Stmt::If { cond, then_block, else_block, .. } => {
                    let taken = match self.eval(cond, &env)?.settled() {
                        Val::Attr(Attr::Bool(b)) => b,
                        other => {
                            let msg = format!(
                                "`if` condition must be a compile-time Bool, found {}",
                                other.describe(&self.graph)
                            );
                            return Err(diag("E0507", msg, Some(cond.span)));
                        }
                    };
                    let branch = match (taken, else_block) {
                        (true, _) => Some(then_block),
                        (false, Some(e)) => Some(e),
                        (false, None) => None,
                    };
                    if let Some(b) = branch {
                        let (result, after) = self.exec_scope(b, &env)?;
                        if result.is_some() {
                            return Ok((result, after));
                        }
                        // Assignments of enclosing `var`s made in the branch.
                        let mut assigned = Vec::new();
                        super::loops::assigned_names(b, &mut assigned);
                        for (n, _) in assigned {
                            if let Some(v) = after.get(&n) {
                                env.insert(n, v.clone());
                            }
                        }
                    }
                }
                Stmt::Return { values, .. } => {
                    let vals =
                        values.iter().map(|e| self.eval(e, &env)).collect::<Result<_, _>>()?;
                    return Ok((Some(vals), env));
                }
                Stmt::For { var, start, end, checkpoint, body, span } => {
                    let stmt =
                        super::loops::LoopStmt::For { var, start, end, checkpoint: *checkpoint };
                    self.exec_loop(stmt, body, *span, &mut env)?;
                }
                Stmt::While { cond, max_trips, body, span } => {
                    let stmt = super::loops::LoopStmt::While { cond, max_trips };
                    self.exec_loop(stmt, body, *span, &mut env)?;
                }
            }
        }
        // Names declared here go out of scope: the caller sees its own bindings of them.
        for n in declared {
            match outer.get(&n) {
                Some(v) => env.insert(n, v.clone()),
                None => env.remove(&n),
            };
        }
        Ok((None, env))
    }

    pub(super) fn eval(
        &mut self,
        expr: &Expr,
        env: &HashMap<String, Val>,
    ) -> Result<Val, Diagnostic> {
        let span = Some(expr.span);
        match &expr.kind {
            ExprKind::Name(n) => env
                .get(n)
                .cloned()
                .ok_or_else(|| diag("E0501", format!("unknown name `{n}`"), span)),
            ExprKind::Literal(a) => Ok(Val::Attr(a.clone())),
            ExprKind::Tuple(items) => {
                Ok(Val::Tuple(items.iter().map(|e| self.eval(e, env)).collect::<Result<_, _>>()?))
            }
            ExprKind::List(items) => {
                let vals =
                    items.iter().map(|e| self.eval(e, env)).collect::<Result<Vec<_>, _>>()?;
                self.make_list(vals, span)
            }
            ExprKind::Call { callee, overload, callee_span, args } => {
                self.eval_call(expr.span, callee, overload.as_deref(), *callee_span, args, env)
            }
            ExprKind::Size { tensor, .. } => {
                let msg = format!("`{tensor}.size(..)` is only allowed in an extern op's `shape:`");
                Err(diag("E0507", msg, span))
            }
            ExprKind::Index { base, index } => self.eval_index(base, index, expr.span, env),
            ExprKind::PatVar(v) => {
                Err(diag("E0507", format!("pattern variable `?{v}` outside a rewrite rule"), span))
            }
        }
    }

    fn make_list(&mut self, vals: Vec<Val>, span: Option<Span>) -> Result<Val, Diagnostic> {
        let vals: Vec<Val> = vals.into_iter().map(Val::settled).collect();
        if let Some(sizes) = Self::size_list_of(&vals) {
            return Ok(sizes);
        }
        if vals.iter().all(|v| matches!(v, Val::Tensor(_))) && !vals.is_empty() {
            let ids = vals.iter().filter_map(|v| match v {
                Val::Tensor(t) => Some(*t),
                _ => None,
            });
            return Ok(Val::List(ids.collect()));
        }
        let mut ints = Vec::new();
        let mut floats = Vec::new();
        let mut any_float = false;
        for v in &vals {
            match v {
                Val::Attr(Attr::Int(i)) => {
                    ints.push(*i);
                    floats.push(*i as f64);
                }
                Val::Attr(Attr::Float(f)) => {
                    any_float = true;
                    floats.push(*f);
                }
                Val::Index(_) => {
                    // (A list of numbers is an attribute: compiled in, once for all trips.)
                    let msg = "a list of numbers is known at compile time, but it holds the loop \
                               variable, an Int known only when the loop runs";
                    return Err(diag("E0511", msg, span).with_help(
                        "a loop variable can index a tensor (`w[i]`) or enter arithmetic; \
                         an attribute such as `dims=` cannot vary from trip to trip",
                    ));
                }
                other => {
                    let msg = format!(
                        "a list must hold only numbers or only tensors, found {}",
                        other.describe(&self.graph)
                    );
                    return Err(diag("E0507", msg, span));
                }
            }
        }
        Ok(Val::Attr(if any_float { Attr::FloatList(floats) } else { Attr::IntList(ints) }))
    }

    pub(super) fn label(&self, span: Span, fallback: &str) -> String {
        let text = self
            .lib
            .sources
            .get(span.file)
            .and_then(|f| f.text.get(span.range()))
            .filter(|t| !t.is_empty() && t.len() <= 32 && !t.contains('\n'));
        text.map_or_else(|| fallback.to_string(), str::to_string)
    }

    fn lookup(&self, callee: &str, overload: Option<&str>) -> Option<&'a [FunctionDef]> {
        let all = self.lib.overloads(callee);
        match overload {
            None if !all.is_empty() => Some(all),
            None => None,
            Some(o) => {
                let i = all.iter().position(|f| f.overload.as_deref() == Some(o))?;
                Some(&all[i..=i])
            }
        }
    }

    fn eval_call(
        &mut self,
        span: Span,
        callee: &str,
        overload: Option<&str>,
        callee_span: Span,
        args: &[crate::library::Arg],
        env: &HashMap<String, Val>,
    ) -> Result<Val, Diagnostic> {
        let mut positional = Vec::new();
        let mut keywords = Vec::new();
        for a in args {
            let v = self.eval(&a.value, env)?;
            match &a.keyword {
                Some(k) => keywords.push((k.name.clone(), v, a.value.span)),
                None => positional.push((v, a.value.span)),
            }
        }
        self.call_vals(span, callee, overload, callee_span, positional, keywords)
    }

    /// Calls `name` with values already computed (lowering's own calls: `x[i]` is a
    /// `slice`, ...); errors point at `span`.
    pub(super) fn call_named(
        &mut self,
        name: &str,
        positional: Vec<Val>,
        keywords: Vec<(&str, Val)>,
        span: Span,
    ) -> Result<Val, Diagnostic> {
        let positional = positional.into_iter().map(|v| (v, span)).collect();
        let keywords = keywords.into_iter().map(|(k, v)| (k.to_string(), v, span)).collect();
        self.call_vals(span, name, None, span, positional, keywords)
    }

    fn call_vals(
        &mut self,
        span: Span,
        callee: &str,
        overload: Option<&str>,
        callee_span: Span,
        positional: Vec<(Val, Span)>,
        mut keywords: Vec<(String, Val, Span)>,
    ) -> Result<Val, Diagnostic> {
        if self.is_size_builtin(callee, overload) {
            return self.size_builtin(span, callee, &positional, &keywords);
        }
        // Constant sizes are plain ints for everything but size arithmetic (`Val::Size`).
        let settled: Vec<(Val, Span)> =
            positional.iter().map(|(v, s)| (v.clone().settled(), *s)).collect();
        for (_, v, _) in keywords.iter_mut() {
            *v = v.clone().settled();
        }
        if let Some(v) = self.size_float(span, callee, overload, &settled, &keywords)? {
            return Ok(v);
        }
        if let Some(v) =
            self.size_arith(span, callee, overload, &positional, keywords.is_empty())?
        {
            return Ok(v);
        }
        let mut positional = settled;
        self.sizes_as_tensors(callee, overload, &mut positional)?;
        let is_static = static_eval::is_static_op(callee, overload) && keywords.is_empty();
        let any_index = positional.iter().any(|(v, _)| matches!(v, Val::Index(_)));
        let index_math = positional.iter().all(|(v, _)| {
            matches!(v, Val::Index(_) | Val::Size(_) | Val::Attr(Attr::Int(_) | Attr::Float(_)))
        });
        let float_literal = positional.iter().any(|(v, _)| matches!(v, Val::Attr(Attr::Float(_))));
        // `/` of Ints is a Float (as between attributes), and `**` of a loop variable is
        // computed as a float too (there is no integer `pow` kernel).
        let float_math = static_float_math(callee).is_some()
            || (float_literal && sizes::SIZE_FLOAT_OPS.contains(&callee))
            || (any_index && matches!(callee, "div" | "pow"));
        if is_static && any_index && index_math && float_math && keywords.is_empty() {
            // A float of a loop variable (`0.5 * i`, `sqrt(i)`): like a float of a size, it
            // is computed in the dtype where it is used (the tensor it meets, f32 elsewhere).
            let args = positional.iter().map(|(v, _)| v.clone()).collect();
            let call = call::SizeCall { callee: callee.to_string(), args, span };
            return Ok(Val::SizeFloat(Box::new(call)));
        }
        if is_static && any_index && index_math {
            // Arithmetic on a loop variable (with literals and sizes: `size(w, 0) - 1 - i`):
            // `i64[]` tensors (`f32` with a float literal, as in a comparison `i < 2.5`).
            let float = float_literal;
            let dtype = if float { crate::dtype::DType::F32 } else { crate::dtype::DType::I64 };
            for (v, s) in positional.iter_mut() {
                let new = match &*v {
                    Val::Index(t) if float => self.call_named(
                        "cast",
                        vec![Val::Tensor(*t), Val::Attr(Attr::DType(dtype))],
                        vec![],
                        *s,
                    )?,
                    Val::Index(t) => Val::Tensor(*t),
                    Val::Size(e) => Val::Tensor(self.size_tensor(e, dtype, Some(*s))?),
                    Val::Attr(a) => Val::Tensor(self.literal(a, dtype, Some(*s))?),
                    other => other.clone(),
                };
                *v = new;
            }
            let out = self.call_vals(span, callee, overload, callee_span, positional, keywords)?;
            return Ok(match out {
                Val::Tensor(t)
                    if self.graph.ty(t).dtype == crate::dtype::DType::I64
                        && self.graph.ty(t).shape.rank() == 0 =>
                {
                    Val::Index(t)
                }
                other => other,
            });
        }
        let all_attrs = positional.iter().all(|(v, _)| matches!(v, Val::Attr(_)));
        if static_eval::is_static_op(callee, overload) && keywords.is_empty() && all_attrs {
            let attrs: Vec<Attr> = positional
                .iter()
                .filter_map(|(v, _)| match v {
                    Val::Attr(a) => Some(a.clone()),
                    _ => None,
                })
                .collect();
            return static_eval::eval(callee, &attrs)
                .map(Val::Attr)
                .map_err(|m| diag("E0507", m, Some(span)));
        }
        // A float computed from sizes that meets no tensor here: f32.
        for v in positional.iter_mut().map(|(v, _)| v).chain(keywords.iter_mut().map(|(_, v, _)| v))
        {
            if let Val::SizeFloat(c) = v {
                *v = Val::Tensor(self.size_float_tensor(c, crate::dtype::DType::F32)?);
            }
        }
        let full = match overload {
            Some(o) => format!("{callee}.{o}"),
            None => callee.to_string(),
        };
        let Some(overloads) = self.lookup(callee, overload) else {
            return Err(diag("E0501", format!("unknown function `{full}`"), Some(callee_span)));
        };
        let kind = |lw: &Self, v: &Val, at: Span| -> Result<ArgKind, Diagnostic> {
            Ok(match v {
                Val::Tensor(t) => {
                    let ty = lw.graph.ty(*t);
                    ArgKind::Tensor { dtype: Some(ty.dtype), rank: Some(ty.shape.rank()) }
                }
                Val::List(ts) => {
                    let dtype = list_dtype(ts.iter().map(|t| lw.graph.ty(*t).dtype))
                        .map_err(|m| diag("E0503", m, Some(at)))?;
                    ArgKind::TensorList { dtype, len: Some(ts.len()) }
                }
                Val::Attr(a) => ArgKind::of_attr(a.clone()),
                Val::Index(_) => ArgKind::Attr { ty: dispatch::AttrType::Int, value: None },
                Val::Size(_) => ArgKind::Attr { ty: AttrType::Int, value: None },
                Val::SizeList(_) => ArgKind::Attr { ty: AttrType::IntList, value: None },
                Val::SizeFloat(_) => ArgKind::Tensor { dtype: None, rank: Some(0) },
                Val::Tuple(_) => {
                    let msg = "a tuple cannot be passed as an argument; destructure it with `let`";
                    return Err(diag("E0508", msg, Some(at)));
                }
            })
        };
        let kinds =
            positional.iter().map(|(v, s)| kind(self, v, *s)).collect::<Result<Vec<_>, _>>()?;
        let kw_kinds = keywords
            .iter()
            .map(|(k, v, s)| Ok((k.as_str(), kind(self, v, *s)?)))
            .collect::<Result<Vec<_>, Diagnostic>>()?;
        let resolved = dispatch::dispatch(overloads, &kinds, &kw_kinds).map_err(|r| {
            let pos_spans: Vec<Span> = positional.iter().map(|(_, s)| *s).collect();
            let kw_spans: Vec<Span> = keywords.iter().map(|(_, _, s)| *s).collect();
            let mut d = no_match(&full, overloads, &r, Some(callee_span), &pos_spans, &kw_spans);
            if let [only] = overloads {
                // The reason names the callee's parameters; say what they are at this call
                // (inside `linear`, matmul's `b` is the caller's `w`, not its `b`).
                let renamed: Vec<String> = only
                    .params
                    .iter()
                    .zip(&pos_spans)
                    .filter_map(|(p, s)| {
                        let text = self.label(*s, &p.name);
                        (text != p.name).then(|| format!("`{}` is `{text}`", p.name))
                    })
                    .collect();
                if !renamed.is_empty() && r.iter().any(|r| r.culprit.is_some()) {
                    d = d.with_note(format!("at this call, {}", renamed.join(", ")));
                }
            }
            self.with_dtype_origins(d, &positional, &keywords, &r)
        })?;
        let fdef = &overloads[resolved.overload];
        let mut vals = Vec::new();
        let mut spans = Vec::new();
        let mut labels = Vec::new();
        for (p, b) in fdef.params.iter().zip(&resolved.bindings) {
            let (v, s) = match *b {
                BoundArg::Positional(i) => positional
                    .get(i)
                    .map(|(v, s)| (v.clone(), Some(*s)))
                    .unwrap_or((Val::Tuple(vec![]), None)),
                BoundArg::Keyword(i) => keywords
                    .get(i)
                    .map(|(_, v, s)| (v.clone(), Some(*s)))
                    .unwrap_or((Val::Tuple(vec![]), None)),
                BoundArg::Default => (self.eval_default(p.default.as_ref(), &p.name)?, None),
            };
            labels.push(s.map_or_else(|| p.name.clone(), |s| self.label(s, &p.name)));
            vals.push(v);
            spans.push(s);
        }
        let name = fdef.full_name();
        if self.active.contains(&name) {
            let msg = format!("recursive call of `{name}`: recursion is not supported");
            return Err(diag("E0506", msg, Some(callee_span)));
        }
        if self.active.len() >= MAX_DEPTH {
            let msg = format!("calls nested deeper than {MAX_DEPTH} functions at `{name}`");
            return Err(diag("E0506", msg, Some(callee_span)));
        }
        if self.graph.nodes.len() > MAX_NODES {
            let msg = format!(
                "the function grows past {MAX_NODES} ops when its calls are inlined (at \
                 `{name}`): calls that each call a function twice grow exponentially; a `for` \
                 loop compiles its body once"
            );
            return Err(diag("E0506", msg, Some(callee_span)));
        }
        let call = BoundCall { fdef, resolved, vals, spans, labels, span: Some(span) };
        let call = self.coerce(call)?;
        self.active.push(name);
        let out = self.call_bound(call);
        self.active.pop();
        let mut out = out?;
        Ok(if out.len() == 1 { out.remove(0) } else { Val::Tuple(out) })
    }
}
