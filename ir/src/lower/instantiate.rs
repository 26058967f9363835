//! The entry point of lowering: resolves the top-level call, turns its tensor arguments into
//! graph parameters with symbolic sizes, runs the body (see `body.rs`) and finishes the graph:
//! symbol table renumbered, outputs set, verifier run.

use super::call::{diag, flatten, list_dtype, no_match, scalar_of, BoundCall, Val};
use super::infer;
use super::syms::SymTable;
use super::{ArgSpec, DimSpec, Instance, LowerError, ParamSource};
use crate::attr::Attr;
use crate::diagnostic::Diagnostic;
use crate::dispatch::{self, ArgKind, BoundArg};
use crate::dtype::DType;
use crate::graph::{Graph, GraphParam, Origin, TensorType, ValueId};
use crate::library::{Library, ParamType};
use crate::op::Op;
use crate::shape::{Dim, Shape};
use crate::span::Span;
use std::collections::HashMap;

/// Calls nested deeper than this (through composed functions) are rejected.
pub(super) const MAX_DEPTH: usize = 64;

/// How many ops a lowered function may hold before a call is refused (E0506): inlining
/// doubles a function that calls another twice per level, so twenty levels would be a million
/// ops and minutes of compiling. 65,536 chained ops compile in about 4 s.
pub(super) const MAX_NODES: usize = 250_000;

pub(super) struct Lowerer<'a> {
    pub lib: &'a Library,
    pub graph: Graph,
    pub syms: SymTable,
    /// Every call being lowered, outermost first (recursion guard).
    pub active: Vec<String>,
    /// The composed functions being inlined below the top-level one, outermost first.
    pub inlined: Vec<String>,
    /// Calls of functions with a `grad` block, recorded for differentiation.
    pub regions: Vec<super::CallRegion>,
    /// Excess precision (`storage.rs`): for each storage-dtype value the current function
    /// body computed, the compute-dtype value it is the rounding of.
    pub carried: HashMap<ValueId, ValueId>,
    /// The loops of the graph being lowered, in order (`loops.rs`).
    pub loops: Vec<crate::program::LoopSpec>,
    /// The loops being lowered, innermost last.
    pub loop_ctx: Vec<super::loops::LoopCtx>,
}

/// Instantiates `name` (a base name, or `name.overload`) for one call signature, without
/// knowing the call's sizes: a derived size is assumed not to be 1 where that matters (see
/// [`instantiate_for_sizes`]).
pub fn instantiate(
    lib: &Library,
    name: &str,
    positional: &[ArgSpec],
    keywords: &[(String, ArgSpec)],
) -> Result<Instance, LowerError> {
    instantiate_for_sizes(lib, name, positional, keywords, &|_| None)
}

/// Instantiates `name` for one call signature, given the input shapes of the call being
/// compiled (`sizes` maps each tensor argument to its shape). Sizes never specialise the
/// graph, except where a *derived* size meets another one and NumPy's answer depends on
/// whether it is 1: those decisions are the instance's [`Instance::guards`]. With sizes, a
/// `reshape` whose element count or a `squeeze` whose axis does not fit is reported here,
/// with the op's location (code E0510).
pub fn instantiate_for_sizes(
    lib: &Library,
    name: &str,
    positional: &[ArgSpec],
    keywords: &[(String, ArgSpec)],
    sizes: &dyn Fn(&ParamSource) -> Option<Vec<usize>>,
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
        regions: Vec::new(),
        carried: HashMap::new(),
        loops: Vec::new(),
        loop_ctx: Vec::new(),
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
                let hint = sizes(&source);
                sources.push(source);
                Val::Tensor(lw.add_param(p.name.clone(), *dtype, dims, p.span, hint))
            }
            Some(ArgSpec::TensorList(items)) => Val::List(
                items
                    .iter()
                    .enumerate()
                    .map(|(index, (dtype, dims))| {
                        let arg = Box::new(source.clone());
                        let item = ParamSource::ListItem { arg, index };
                        let hint = sizes(&item);
                        sources.push(item);
                        let name = format!("{}[{index}]", p.name);
                        lw.add_param(name, *dtype, dims, p.span, hint)
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
    let call = lw.coerce(call)?;
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
    let mut loops = lw.loops;
    let mut guards = lw.syms.finish_with(&mut graph, &mut crate::program::bounds_mut(&mut loops));
    // The graph's parameters after the call's are its loops' results: the guards read the
    // call's arguments only (their sizes are what a later call's are checked against).
    guards.params.truncate(sources.len());
    if let Err(e) = crate::verify::verify(&graph) {
        let msg = format!("internal error: lowering `{}` produced an invalid graph: {e}", name);
        return Err(diag("E0509", msg, None).into());
    }
    let function = fdef.full_name();
    Ok(Instance { graph, function, params: sources, regions: lw.regions, guards, loops })
}

impl<'a> Lowerer<'a> {
    /// A graph parameter; `hint` is its shape in the call being compiled (ignored unless it
    /// fits `dims`).
    fn add_param(
        &mut self,
        name: String,
        dtype: DType,
        dims: &[DimSpec],
        span: Span,
        hint: Option<Vec<usize>>,
    ) -> ValueId {
        let index = self.graph.params.len() as u32;
        let fits = |h: &Vec<usize>| {
            h.len() == dims.len()
                && h.iter().zip(dims).all(|(&n, d)| (n == 1) == (*d == DimSpec::One))
        };
        let hint = hint.filter(fits);
        let shape = Shape(
            dims.iter()
                .enumerate()
                .map(|(axis, d)| match d {
                    DimSpec::One => Dim::Const(1),
                    DimSpec::Dyn => {
                        let h = hint.as_ref().map(|h| h[axis] as u64);
                        self.syms.input(index, axis as u32, h)
                    }
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
        if let Some(widened) = self.emit_widened(&op, &inputs, span)? {
            return Ok(widened);
        }
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

    /// Converts arguments to their parameter's type: attributes passed for tensor parameters
    /// become rank-0 constants, ints passed for `Float`/`Float[]` parameters become floats.
    pub(super) fn coerce<'f>(
        &mut self,
        mut call: BoundCall<'f>,
    ) -> Result<BoundCall<'f>, Diagnostic> {
        for (i, p) in call.fdef.params.iter().enumerate() {
            let converted = match (&p.ty, call.vals.get(i)) {
                (ParamType::Float, Some(Val::Attr(Attr::Int(v)))) => Attr::Float(*v as f64),
                (ParamType::FloatList, Some(Val::Attr(Attr::IntList(v)))) => {
                    Attr::FloatList(v.iter().map(|&x| x as f64).collect())
                }
                _ => continue,
            };
            call.vals[i] = Val::Attr(converted);
        }
        for &i in &call.resolved.promoted.clone() {
            // A loop variable where a tensor goes: its `i64[]`, cast like a literal would be.
            let (Some(p), Some(Val::Index(v))) = (call.fdef.params.get(i), call.vals.get(i)) else {
                continue;
            };
            let ParamType::Tensor(d) = &p.ty else { continue };
            let span = call.spans[i].or(call.span);
            let dtype = call.resolved.dtype_of(d).unwrap_or(DType::I64);
            let v = *v;
            call.vals[i] = Val::Tensor(if dtype == DType::I64 {
                v
            } else {
                let ty = TensorType { dtype, shape: Shape::scalar() };
                self.emit(Op::Cast(dtype), vec![v], ty, span)
            });
        }
        for &i in &call.resolved.promoted.clone() {
            let (Some(p), Some(Val::Size(e))) = (call.fdef.params.get(i), call.vals.get(i)) else {
                continue;
            };
            let ParamType::Tensor(d) = &p.ty else { continue };
            let span = call.spans[i].or(call.span);
            let dtype = call.resolved.dtype_of(d).unwrap_or(DType::I64);
            let e = e.clone();
            call.vals[i] = Val::Tensor(self.size_tensor(&e, dtype, span)?);
        }
        for &i in &call.resolved.promoted.clone() {
            let (Some(p), Some(Val::Attr(value))) = (call.fdef.params.get(i), call.vals.get(i))
            else {
                continue;
            };
            let ParamType::Tensor(d) = &p.ty else { continue };
            let span = call.spans[i].or(call.span);
            let Some(dtype) = call.resolved.dtype_of(d) else {
                let msg = format!("cannot infer a dtype for `{value}` from the other arguments");
                return Err(diag("E0504", msg, span));
            };
            let value = value.clone();
            call.vals[i] = Val::Tensor(self.literal(&value, dtype, span)?);
        }
        Ok(call)
    }
}
