//! Adding nodes to a finished graph: new derived sizes, nodes with inferred types, and
//! splicing a whole separately-lowered graph in with its parameters bound to existing values.
//!
//! Gradient formulas are lowered on their own (as small graphs whose parameters are the op's
//! inputs, `result` and `grad`), then spliced into the gradient graph. Their sizes are mapped
//! through their parameters: an input size of the small graph is the size of the bound value's
//! axis in the big one; derived sizes are re-derived from the mapped ones.

use super::AutodiffError;
use tfn_ir::graph::{Node, Origin, TensorType};
use tfn_ir::lower::{fold_dims, infer};
use tfn_ir::shape::{Dim, DimExpr, Shape, Sym, SymDef};
use tfn_ir::{Graph, Op, ValueId};

/// The size `e` in `graph`: a constant or existing symbol when it folds to one, else an
/// existing derived symbol with the same definition, else a new one.
pub(crate) fn derive_sym(graph: &mut Graph, e: DimExpr) -> Dim {
    derive_in(&mut graph.syms, e)
}

fn derive_in(syms: &mut Vec<SymDef>, e: DimExpr) -> Dim {
    match fold_dims(&e) {
        DimExpr::Dim(d) => d,
        e => {
            let def = SymDef::Derived(e);
            match syms.iter().position(|d| *d == def) {
                Some(i) => Dim::Sym(Sym(i as u32)),
                None => {
                    syms.push(def);
                    Dim::Sym(Sym(syms.len() as u32 - 1))
                }
            }
        }
    }
}

/// Appends `op` with the type inference gives it.
pub(crate) fn emit(
    graph: &mut Graph,
    op: Op,
    inputs: Vec<ValueId>,
    origin: &Origin,
) -> Result<ValueId, String> {
    let types: Vec<TensorType> = inputs.iter().map(|v| graph.ty(*v).clone()).collect();
    let refs: Vec<&TensorType> = types.iter().collect();
    let mut syms = std::mem::take(&mut graph.syms);
    let ty = infer(&op, &refs, &mut |e| derive_in(&mut syms, e));
    graph.syms = syms;
    let ty = ty?.ok_or_else(|| format!("internal error: `{}` declares its own type", op.name()))?;
    Ok(graph.push(op, inputs, ty, origin.clone()))
}

/// Appends `op` with a declared type (`reshape`, `broadcast_to`, `full`).
pub(crate) fn emit_typed(
    graph: &mut Graph,
    op: Op,
    inputs: Vec<ValueId>,
    ty: TensorType,
    origin: &Origin,
) -> ValueId {
    graph.push(op, inputs, ty, origin.clone())
}

/// Splices `small` into `graph` with its parameter `i` bound to `args[i]`; returns the values
/// of `small`'s outputs in `graph`.
pub(crate) fn splice(
    graph: &mut Graph,
    small: &Graph,
    args: &[ValueId],
    function: &str,
) -> Result<Vec<ValueId>, AutodiffError> {
    let internal = |why: String| AutodiffError::Formula {
        function: function.to_string(),
        error: tfn_ir::Diagnostic::error("E0809", format!("internal error: {why}")).into(),
    };
    if args.len() != small.params.len() {
        return Err(internal(format!(
            "the formula graph has {} parameters, {} were bound",
            small.params.len(),
            args.len()
        )));
    }
    let mut mapper = SymMapper { small, args, memo: vec![None; small.syms.len()] };
    let mut values: Vec<ValueId> = Vec::with_capacity(small.nodes.len());
    for (i, node) in small.nodes.iter().enumerate() {
        let v = match node.op {
            Op::Param(p) => *args
                .get(p as usize)
                .ok_or_else(|| internal(format!("parameter {p} out of range")))?,
            _ => {
                let inputs = node
                    .inputs
                    .iter()
                    .map(|v| values.get(v.index()).copied())
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| internal(format!("node %{i} uses a later value")))?;
                let ty = mapper.ty(graph, &node.ty).map_err(internal)?;
                let Node { op, origin, .. } = node;
                graph.push(op.clone(), inputs, ty, origin.clone())
            }
        };
        values.push(v);
    }
    for &(a, b) in &small.checks {
        let check = (
            mapper.dim(graph, a, 0).map_err(internal)?,
            mapper.dim(graph, b, 0).map_err(internal)?,
        );
        if check.0 != check.1 && !graph.checks.contains(&check) {
            graph.checks.push(check);
        }
    }
    small
        .outputs
        .iter()
        .map(|o| values.get(o.index()).copied().ok_or_else(|| internal(format!("output {o}"))))
        .collect()
}

/// Maps sizes of the small graph to sizes of the big one.
struct SymMapper<'a> {
    small: &'a Graph,
    args: &'a [ValueId],
    memo: Vec<Option<Dim>>,
}

impl SymMapper<'_> {
    fn ty(&mut self, graph: &mut Graph, ty: &TensorType) -> Result<TensorType, String> {
        let dims = ty.shape.0.iter().map(|d| self.dim(graph, *d, 0)).collect::<Result<_, _>>()?;
        Ok(TensorType { dtype: ty.dtype, shape: Shape(dims) })
    }

    fn dim(&mut self, graph: &mut Graph, d: Dim, depth: usize) -> Result<Dim, String> {
        let Dim::Sym(s) = d else { return Ok(d) };
        let i = s.0 as usize;
        if let Some(Some(done)) = self.memo.get(i) {
            return Ok(*done);
        }
        if depth > self.small.syms.len() {
            return Err("cyclic size definitions".into());
        }
        let mapped = match self.small.syms.get(i) {
            Some(SymDef::Input { sources }) => {
                let &(param, axis) = sources.first().ok_or("an input size without sources")?;
                let v = self.args.get(param as usize).ok_or("a size of a missing parameter")?;
                *graph
                    .ty(*v)
                    .shape
                    .0
                    .get(axis as usize)
                    .ok_or("a bound value has a different rank than its parameter")?
            }
            Some(SymDef::Derived(e)) => {
                let e = self.expr(graph, e, depth + 1)?;
                derive_sym(graph, e)
            }
            None => return Err(format!("undefined size {d}")),
        };
        if let Some(slot) = self.memo.get_mut(i) {
            *slot = Some(mapped);
        }
        Ok(mapped)
    }

    fn expr(&mut self, graph: &mut Graph, e: &DimExpr, depth: usize) -> Result<DimExpr, String> {
        let mut bin = |a: &DimExpr, b: &DimExpr, this: &mut Self| -> Result<_, String> {
            Ok((Box::new(this.expr(graph, a, depth)?), Box::new(this.expr(graph, b, depth)?)))
        };
        Ok(match e {
            DimExpr::Dim(d) => DimExpr::Dim(self.dim(graph, *d, depth)?),
            DimExpr::Add(a, b) => {
                let (a, b) = bin(a, b, self)?;
                DimExpr::Add(a, b)
            }
            DimExpr::Sub(a, b) => {
                let (a, b) = bin(a, b, self)?;
                DimExpr::Sub(a, b)
            }
            DimExpr::Mul(a, b) => {
                let (a, b) = bin(a, b, self)?;
                DimExpr::Mul(a, b)
            }
            DimExpr::Div(a, b) => {
                let (a, b) = bin(a, b, self)?;
                DimExpr::Div(a, b)
            }
            DimExpr::CeilDiv(a, b) => {
                let (a, b) = bin(a, b, self)?;
                DimExpr::CeilDiv(a, b)
            }
            DimExpr::SliceLen { size, start, end, step } => DimExpr::SliceLen {
                size: Box::new(self.expr(graph, size, depth)?),
                start: *start,
                end: *end,
                step: *step,
            },
            DimExpr::Window { size, kernel, stride, padding, dilation, ceil } => {
                let (size, kernel) = bin(size, kernel, self)?;
                DimExpr::Window {
                    size,
                    kernel,
                    stride: *stride,
                    padding: *padding,
                    dilation: *dilation,
                    ceil: *ceil,
                }
            }
        })
    }
}
