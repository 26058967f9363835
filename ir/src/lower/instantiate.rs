//! The instantiation walk: binds a call's arguments, runs a composed function's statements
//! with attributes known (static `if`, `let`, tuples, `return`), resolves and inlines every
//! call, and hands primitive and extern calls to their builders.

use super::syms::SymTable;
use super::{infer, primitives, static_eval};
use super::{ArgSpec, DimSpec, Instance, LowerError, ParamSource};
use crate::attr::{Attr, Scalar};
use crate::diagnostic::Diagnostic;
use crate::dispatch::{self, param_type_name, ArgKind, ArgRef, BoundArg, Rejection, Resolved};
use crate::dtype::DType;
use crate::graph::{Graph, GraphParam, Origin, TensorType, ValueId};
use crate::library::{Block, Body, Expr, ExprKind, FunctionDef, Library, ParamType, Stmt};
use crate::op::Op;
use crate::shape::{Dim, Shape};
use crate::span::Span;
use std::collections::HashMap;

/// Calls nested deeper than this (through composed functions) are rejected.
const MAX_DEPTH: usize = 64;

/// The value of an expression during instantiation.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Val {
    Tensor(ValueId),
    List(Vec<ValueId>),
    Attr(Attr),
    Tuple(Vec<Val>),
}

impl Val {
    fn describe(&self, graph: &Graph) -> String {
        match self {
            Val::Tensor(v) => format!("a {} tensor", graph.ty(*v).dtype),
            Val::List(_) => "a list of tensors".into(),
            Val::Attr(a) => format!("{} `{a}`", a.type_name()),
            Val::Tuple(items) => format!("a tuple of {} values", items.len()),
        }
    }
}

/// A call whose arguments are bound to the chosen overload's parameters.
pub(super) struct BoundCall<'a> {
    pub fdef: &'a FunctionDef,
    pub resolved: Resolved,
    /// One per parameter.
    pub vals: Vec<Val>,
    /// The argument expression of each parameter (`None` for defaults and top-level args).
    pub spans: Vec<Option<Span>>,
    /// How each argument is named in messages: its source text when short, else the
    /// parameter's name.
    pub labels: Vec<String>,
    /// The call expression (`None` for the top-level call).
    pub span: Option<Span>,
}

pub(super) fn diag(code: &'static str, message: impl Into<String>, span: Option<Span>) -> Diagnostic {
    let d = Diagnostic::error(code, message);
    match span {
        Some(s) => d.at(s, ""),
        None => d,
    }
}

pub(super) struct Lowerer<'a> {
    pub lib: &'a Library,
    pub graph: Graph,
    pub syms: SymTable,
    /// Every call being lowered, outermost first (recursion guard).
    active: Vec<String>,
    /// The composed functions being inlined below the top-level one, outermost first.
    inlined: Vec<String>,
}

/// Instantiates `name` (a base name, or `name.overload`) for one call signature.
pub fn instantiate(
    lib: &Library,
    name: &str,
    positional: &[ArgSpec],
    keywords: &[(String, ArgSpec)],
) -> Result<Instance, LowerError> {
    let overloads = match name.split_once('.') {
        _ if !lib.overloads(name).is_empty() => lib.overloads(name),
        Some((base, ov)) => lib
            .overloads(base)
            .iter()
            .position(|f| f.overload.as_deref() == Some(ov))
            .map_or(&[][..], |i| &lib.overloads(base)[i..=i]),
        None => &[],
    };
    if overloads.is_empty() {
        return Err(diag("E0501", format!("unknown function `{name}`"), None).into());
    }
    let kind = |s: &ArgSpec| -> Result<ArgKind, Diagnostic> {
        Ok(match s {
            ArgSpec::Tensor { dtype, dims } => {
                ArgKind::Tensor { dtype: Some(*dtype), rank: Some(dims.len()) }
            }
            ArgSpec::TensorList(items) => {
                let dtype = list_dtype(items.iter().map(|(d, _)| *d))
                    .map_err(|m| diag("E0503", m, None))?;
                ArgKind::TensorList { dtype, len: Some(items.len()) }
            }
            ArgSpec::Attr(a) => ArgKind::of_attr(a.clone()),
        })
    };
    let kinds = positional.iter().map(kind).collect::<Result<Vec<_>, _>>()?;
    let kw_kinds = keywords
        .iter()
        .map(|(k, s)| Ok((k.as_str(), kind(s)?)))
        .collect::<Result<Vec<_>, Diagnostic>>()?;
    let resolved = dispatch::dispatch(overloads, &kinds, &kw_kinds)
        .map_err(|r| no_match(name, overloads, &r, None, &[], &[]))?;
    let fdef = &overloads[resolved.overload];
    let mut lw = Lowerer {
        lib,
        graph: Graph { name: fdef.full_name(), ..Graph::default() },
        syms: SymTable::default(),
        active: vec![fdef.full_name()],
        inlined: Vec::new(),
    };
    let mut sources = Vec::new();
    let mut vals = Vec::new();
    for (p, binding) in fdef.params.iter().zip(&resolved.bindings) {
        let (spec, source) = match *binding {
            BoundArg::Positional(i) => (positional.get(i), ParamSource::Positional(i)),
            BoundArg::Keyword(i) => {
                (keywords.get(i).map(|(_, s)| s), ParamSource::Keyword(p.name.clone()))
            }
            BoundArg::Default => (None, ParamSource::Positional(usize::MAX)),
        };
        let val = match spec {
            None => lw.eval_default(p.default.as_ref(), &p.name)?,
            Some(ArgSpec::Tensor { dtype, dims }) => {
                sources.push(source);
                Val::Tensor(lw.add_param(p.name.clone(), *dtype, dims, p.span))
            }
            Some(ArgSpec::TensorList(items)) => Val::List(
                items
                    .iter()
                    .enumerate()
                    .map(|(index, (dtype, dims))| {
                        let arg = Box::new(source.clone());
                        sources.push(ParamSource::ListItem { arg, index });
                        lw.add_param(format!("{}[{index}]", p.name), *dtype, dims, p.span)
                    })
                    .collect(),
            ),
            Some(ArgSpec::Attr(a)) => Val::Attr(a.clone()),
        };
        vals.push(val);
    }
    let n = fdef.params.len();
    let labels = fdef.params.iter().map(|p| p.name.clone()).collect();
    let call = BoundCall { fdef, resolved, vals, spans: vec![None; n], labels, span: None };
    let call = lw.promote(call)?;
    let results = lw.call_bound(call)?;
    for r in flatten(results) {
        match r {
            Val::Tensor(v) => lw.graph.outputs.push(v),
            Val::List(vs) => lw.graph.outputs.extend(vs),
            other => {
                let what = other.describe(&lw.graph);
                let msg = format!("`{}` returns {what}, not a tensor", fdef.full_name());
                return Err(diag("E0508", msg, Some(fdef.name_span)).into());
            }
        }
    }
    let mut graph = lw.graph;
    lw.syms.finish(&mut graph);
    if let Err(e) = crate::verify::verify(&graph) {
        let msg = format!("internal error: lowering `{}` produced an invalid graph: {e}", name);
        return Err(diag("E0509", msg, None).into());
    }
    Ok(Instance { graph, function: fdef.full_name(), params: sources })
}

fn flatten(vals: Vec<Val>) -> Vec<Val> {
    vals.into_iter()
        .flat_map(|v| match v {
            Val::Tuple(items) => flatten(items),
            v => vec![v],
        })
        .collect()
}

/// The common dtype of a tensor list (`None` for an empty list).
fn list_dtype(mut dtypes: impl Iterator<Item = DType>) -> Result<Option<DType>, String> {
    let Some(first) = dtypes.next() else { return Ok(None) };
    match dtypes.find(|d| *d != first) {
        Some(other) => Err(format!("tensors in the list have different dtypes: {first} and {other}")),
        None => Ok(Some(first)),
    }
}

/// `add.scalar(Tensor<T> x, Scalar y)`.
fn signature(f: &FunctionDef) -> String {
    let params: Vec<String> =
        f.params.iter().map(|p| format!("{} {}", param_type_name(&p.ty), p.name)).collect();
    format!("{}({})", f.full_name(), params.join(", "))
}

/// The diagnostic for a call no overload accepts.
fn no_match(
    name: &str,
    overloads: &[FunctionDef],
    rejections: &[Rejection],
    span: Option<Span>,
    positional_spans: &[Span],
    keyword_spans: &[Span],
) -> Diagnostic {
    let culprit_span = |r: &Rejection| match r.culprit {
        Some(ArgRef::Positional(i)) => positional_spans.get(i).copied(),
        Some(ArgRef::Keyword(i)) => keyword_spans.get(i).copied(),
        None => None,
    };
    match rejections {
        [only] if overloads.len() == 1 => {
            let msg = format!("mismatched arguments for `{name}`: {}", only.reason);
            diag("E0502", msg, culprit_span(only).or(span))
                .with_note(format!("`{}` is declared here", signature(&overloads[0])))
        }
        _ => {
            let mut d =
                diag("E0502", format!("no overload of `{name}` matches the arguments"), span);
            for r in rejections {
                if let Some(f) = overloads.get(r.overload) {
                    d = d.with_note(format!("`{}` is not a match: {}", signature(f), r.reason));
                }
            }
            d
        }
    }
}

/// Converts a literal or attribute to a constant of `dtype`, or says why it does not fit.
pub(super) fn scalar_of(value: &Attr, dtype: DType) -> Result<Scalar, String> {
    let fits_i32 = |i: i64| dtype != DType::I32 || i32::try_from(i).is_ok();
    match (value, dtype) {
        (Attr::Int(i), d) if d.is_float() => Ok(Scalar::Float(*i as f64)),
        (Attr::Int(i), d) if d.is_int() && fits_i32(*i) => Ok(Scalar::Int(*i)),
        (Attr::Int(i @ (0 | 1)), DType::Bool) => Ok(Scalar::Bool(*i == 1)),
        (Attr::Float(f), d) if d.is_float() => Ok(Scalar::Float(*f)),
        (Attr::Float(f), d) if d.is_int() && f.fract() != 0.0 => {
            Err(format!("literal `{value}` has a fractional part and cannot be {d}"))
        }
        (Attr::Float(f), d)
            if d.is_int() && f.is_finite() && fits_i32(*f as i64) && f.abs() < 9.2e18 =>
        {
            Ok(Scalar::Int(*f as i64))
        }
        (Attr::Bool(b), DType::Bool) => Ok(Scalar::Bool(*b)),
        (Attr::Int(_) | Attr::Float(_), d) if d.is_int() => {
            Err(format!("literal `{value}` does not fit in {d}"))
        }
        _ => Err(format!("{} `{value}` cannot be used as a {dtype} value", value.type_name())),
    }
}

impl<'a> Lowerer<'a> {
    fn add_param(&mut self, name: String, dtype: DType, dims: &[DimSpec], span: Span) -> ValueId {
        let index = self.graph.params.len() as u32;
        let shape = Shape(
            dims.iter()
                .enumerate()
                .map(|(axis, d)| match d {
                    DimSpec::One => Dim::Const(1),
                    DimSpec::Dyn => self.syms.input(index, axis as u32),
                })
                .collect(),
        );
        let ty = TensorType { dtype, shape };
        self.graph.params.push(GraphParam { name, ty: ty.clone() });
        self.emit(Op::Param(index), Vec::new(), ty, Some(span))
    }

    pub(super) fn origin(&self, span: Option<Span>) -> Origin {
        Origin { span, inlined_from: self.inlined.clone() }
    }

    pub(super) fn emit(
        &mut self,
        op: Op,
        inputs: Vec<ValueId>,
        ty: TensorType,
        span: Option<Span>,
    ) -> ValueId {
        let origin = self.origin(span);
        self.graph.push(op, inputs, ty, origin)
    }

    /// A value's type with every size resolved to its current representative.
    pub(super) fn ty(&self, v: ValueId) -> TensorType {
        let ty = self.graph.ty(v);
        TensorType { dtype: ty.dtype, shape: self.syms.resolve_shape(&ty.shape) }
    }

    /// Emits an op whose type [`infer::infer`] computes. The error is a lowercase reason.
    pub(super) fn emit_inferred(
        &mut self,
        op: Op,
        inputs: Vec<ValueId>,
        span: Option<Span>,
    ) -> Result<ValueId, String> {
        let types: Vec<TensorType> = inputs.iter().map(|v| self.ty(*v)).collect();
        let refs: Vec<&TensorType> = types.iter().collect();
        let syms = &mut self.syms;
        let ty = infer::infer(&op, &refs, &mut |e| syms.derive(e))?
            .ok_or_else(|| format!("internal error: `{}` has no inferred type", op.name()))?;
        Ok(self.emit(op, inputs, ty, span))
    }

    /// A constant of `dtype` for a literal or attribute used as a tensor.
    pub(super) fn literal(
        &mut self,
        value: &Attr,
        dtype: DType,
        span: Option<Span>,
    ) -> Result<ValueId, Diagnostic> {
        let scalar = scalar_of(value, dtype).map_err(|m| diag("E0504", m, span))?;
        let ty = TensorType { dtype, shape: Shape::scalar() };
        Ok(self.emit(Op::Const(scalar), Vec::new(), ty, span))
    }

    /// Replaces attributes passed for tensor parameters by rank-0 constants.
    fn promote<'f>(&mut self, mut call: BoundCall<'f>) -> Result<BoundCall<'f>, Diagnostic> {
        for &i in &call.resolved.promoted.clone() {
            let (Some(p), Some(Val::Attr(value))) = (call.fdef.params.get(i), call.vals.get(i))
            else {
                continue;
            };
            let ParamType::Tensor(d) = &p.ty else { continue };
            let span = call.spans[i].or(call.span);
            let Some(dtype) = call.resolved.dtype_of(d) else {
                let msg = format!("cannot infer a dtype for `{}` from the other arguments", value);
                return Err(diag("E0504", msg, span));
            };
            let value = value.clone();
            call.vals[i] = Val::Tensor(self.literal(&value, dtype, span)?);
        }
        Ok(call)
    }

    fn eval_default(&mut self, default: Option<&Expr>, param: &str) -> Result<Val, Diagnostic> {
        let Some(expr) = default else {
            return Err(diag("E0502", format!("missing required argument `{param}`"), None));
        };
        self.eval(expr, &HashMap::new())
    }

    /// Lowers a bound call and returns its results (one per declared result).
    fn call_bound(&mut self, call: BoundCall<'a>) -> Result<Vec<Val>, Diagnostic> {
        let fdef = call.fdef;
        match &fdef.body {
            Body::Primitive => {
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
                let out = self.exec_block(block, &env);
                if inlining {
                    self.inlined.pop();
                }
                let Some(out) = out? else {
                    let msg = format!("`{}` ends without `return`", fdef.full_name());
                    return Err(diag("E0508", msg, Some(fdef.name_span)));
                };
                self.check_returns(out, &call)
            }
        }
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
                (v, _) => v,
            };
            if let (Val::Tensor(t), ParamType::Tensor(d)) = (&v, ty) {
                let got = self.graph.ty(*t).dtype;
                if let Some(want) = call.resolved.dtype_of(d).filter(|w| *w != got) {
                    let msg = format!(
                        "`{}` returns a {got} tensor but its signature declares {}",
                        fdef.full_name(),
                        param_type_name(ty).replace(&format!("<{}>", var_name(ty)), &format!("<{want}>"))
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
        let mut env = outer.clone();
        for stmt in &block.stmts {
            match stmt {
                Stmt::Let { names, value, span } => {
                    let v = self.eval(value, &env)?;
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
                Stmt::If { cond, then_block, else_block, .. } => {
                    let taken = match self.eval(cond, &env)? {
                        Val::Attr(Attr::Bool(b)) => b,
                        other => {
                            let msg = format!(
                                "`if` condition must be a compile-time Bool, found {}",
                                other.describe(&self.graph)
                            );
                            return Err(diag("E0507", msg, Some(cond.span)));
                        }
                    };
                    let result = match (taken, else_block) {
                        (true, _) => self.exec_block(then_block, &env)?,
                        (false, Some(e)) => self.exec_block(e, &env)?,
                        (false, None) => None,
                    };
                    if result.is_some() {
                        return Ok(result);
                    }
                }
                Stmt::Return { values, .. } => {
                    let vals = values.iter().map(|e| self.eval(e, &env)).collect::<Result<_, _>>()?;
                    return Ok(Some(vals));
                }
            }
        }
        Ok(None)
    }

    fn eval(&mut self, expr: &Expr, env: &HashMap<String, Val>) -> Result<Val, Diagnostic> {
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
                let vals = items.iter().map(|e| self.eval(e, env)).collect::<Result<Vec<_>, _>>()?;
                self.make_list(vals, span)
            }
            ExprKind::Call { callee, overload, callee_span, args } => {
                self.eval_call(expr.span, callee, overload.as_deref(), *callee_span, args, env)
            }
            ExprKind::Size { tensor, .. } => {
                let msg = format!("`{tensor}.size(..)` is only allowed in an extern op's `shape:`");
                Err(diag("E0507", msg, span))
            }
            ExprKind::PatVar(v) => {
                Err(diag("E0507", format!("pattern variable `?{v}` outside a rewrite rule"), span))
            }
        }
    }

    fn make_list(&mut self, vals: Vec<Val>, span: Option<Span>) -> Result<Val, Diagnostic> {
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

    fn label(&self, span: Span, fallback: &str) -> String {
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
            no_match(&full, overloads, &r, Some(callee_span), &pos_spans, &kw_spans)
        })?;
        let fdef = &overloads[resolved.overload];
        let mut vals = Vec::new();
        let mut spans = Vec::new();
        let mut labels = Vec::new();
        for (p, b) in fdef.params.iter().zip(&resolved.bindings) {
            let (v, s) = match *b {
                BoundArg::Positional(i) => {
                    positional.get(i).map(|(v, s)| (v.clone(), Some(*s))).unwrap_or((Val::Tuple(vec![]), None))
                }
                BoundArg::Keyword(i) => {
                    keywords.get(i).map(|(_, v, s)| (v.clone(), Some(*s))).unwrap_or((Val::Tuple(vec![]), None))
                }
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
        let call = BoundCall { fdef, resolved, vals, spans, labels, span: Some(span) };
        let call = self.promote(call)?;
        self.active.push(name);
        let out = self.call_bound(call);
        self.active.pop();
        let mut out = out?;
        Ok(if out.len() == 1 { out.remove(0) } else { Val::Tuple(out) })
    }
}

fn var_name(ty: &ParamType) -> String {
    match ty {
        ParamType::Tensor(crate::library::DTypeRef::Var(v)) => v.clone(),
        _ => String::new(),
    }
}
