//! Conversion between the graph IR and the e-graph language, both ways.
//!
//! [`add_graph`] adds every node of a [`Graph`] to an e-graph and checks that the analysis
//! infers exactly the type the graph records. [`expr_to_graph`] turns an extracted expression
//! (a DAG in a `RecExpr`) back into a graph, with types recomputed from the expression and the
//! template graph's name, parameters and symbol table kept.

use super::analysis::{add_ints, add_shape, node_data, AttrValue, ClassData, TfnEGraph};
use super::error::OptimizeError;
use super::infer::inferred_op;
use super::language::{FloatBits, TfnNode};
use egg::{Id, Language, RecExpr};
use tfn_ir::{Attr, Graph, Op, Origin, Scalar, ValueId};

/// The extern ops of a graph: `(extern key ...)` e-nodes index this table.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExternTable(pub Vec<(String, Vec<Attr>)>);

impl ExternTable {
    fn key(&mut self, name: &str, attrs: &[Attr]) -> i64 {
        let found = self.0.iter().position(|(n, a)| n == name && a.as_slice() == attrs);
        let index = found.unwrap_or_else(|| {
            self.0.push((name.to_string(), attrs.to_vec()));
            self.0.len() - 1
        });
        index as i64
    }
}

fn leaf(egraph: &mut TfnEGraph, value: Scalar) -> Id {
    egraph.add(match value {
        Scalar::Bool(b) => TfnNode::Bool(b),
        Scalar::Int(i) => TfnNode::Int(i),
        Scalar::Float(f) => TfnNode::Float(FloatBits(f)),
    })
}

/// Adds all nodes of `graph`; returns the e-class of each node.
pub fn add_graph(
    egraph: &mut TfnEGraph,
    graph: &Graph,
    externs: &mut ExternTable,
) -> Result<Vec<Id>, OptimizeError> {
    let mut ids: Vec<Id> = Vec::with_capacity(graph.nodes.len());
    for (index, node) in graph.nodes.iter().enumerate() {
        let malformed = |message: String| OptimizeError::Malformed { node: index, message };
        let inputs = node
            .inputs
            .iter()
            .map(|v| ids.get(v.index()).copied())
            .collect::<Option<Vec<Id>>>()
            .ok_or_else(|| malformed("an input is not defined before its use".into()))?;
        let arity = |n: usize| {
            if inputs.len() == n {
                Ok(())
            } else {
                Err(malformed(format!(
                    "`{}` takes {n} input(s), got {}",
                    node.op.name(),
                    inputs.len()
                )))
            }
        };
        let ty = &node.ty;
        let dtype = egraph.add(TfnNode::DType(ty.dtype));
        let enode = match &node.op {
            Op::Param(i) => {
                arity(0)?;
                let index = egraph.add(TfnNode::Int(i64::from(*i)));
                TfnNode::Param([index, dtype, add_shape(egraph, &ty.shape)])
            }
            Op::Const(s) => {
                arity(0)?;
                TfnNode::Const([dtype, leaf(egraph, *s)])
            }
            Op::Unary(u) => {
                arity(1)?;
                TfnNode::Unary(*u, [inputs[0]])
            }
            Op::Binary(b) => {
                arity(2)?;
                TfnNode::Binary(*b, [inputs[0], inputs[1]])
            }
            Op::Where => {
                arity(3)?;
                TfnNode::Where([inputs[0], inputs[1], inputs[2]])
            }
            Op::MulAdd => {
                arity(3)?;
                TfnNode::MulAdd([inputs[0], inputs[1], inputs[2]])
            }
            Op::Cast(to) => {
                arity(1)?;
                TfnNode::Cast([egraph.add(TfnNode::DType(*to)), inputs[0]])
            }
            Op::Reduce { op, axes, keepdim } => {
                arity(1)?;
                let axes: Vec<i64> = axes.iter().map(|&a| i64::from(a)).collect();
                let axes = add_ints(egraph, &axes);
                let keep = egraph.add(TfnNode::Bool(*keepdim));
                TfnNode::Reduce(*op, [inputs[0], axes, keep])
            }
            Op::ArgMax { axis, keepdim } => {
                arity(1)?;
                let axis = egraph.add(TfnNode::Int(i64::from(*axis)));
                let keep = egraph.add(TfnNode::Bool(*keepdim));
                TfnNode::ArgMax([inputs[0], axis, keep])
            }
            Op::ArgMin { axis, keepdim } => {
                arity(1)?;
                let axis = egraph.add(TfnNode::Int(i64::from(*axis)));
                let keep = egraph.add(TfnNode::Bool(*keepdim));
                TfnNode::ArgMin([inputs[0], axis, keep])
            }
            // Like `full`, an `iota` with an input only copies that input's shape.
            Op::Iota { axis } => {
                let axis = egraph.add(TfnNode::Int(i64::from(*axis)));
                TfnNode::Iota([dtype, axis, add_shape(egraph, &ty.shape)])
            }
            Op::Scan { op, axis, exclusive, reverse } => {
                arity(1)?;
                let axis = egraph.add(TfnNode::Int(i64::from(*axis)));
                let ex = egraph.add(TfnNode::Bool(*exclusive));
                let rev = egraph.add(TfnNode::Bool(*reverse));
                TfnNode::Scan(*op, [inputs[0], axis, ex, rev])
            }
            Op::CumprodGrad { axis, exclusive, reverse } => {
                arity(2)?;
                let axis = egraph.add(TfnNode::Int(i64::from(*axis)));
                let ex = egraph.add(TfnNode::Bool(*exclusive));
                let rev = egraph.add(TfnNode::Bool(*reverse));
                TfnNode::CumprodGrad([inputs[0], inputs[1], axis, ex, rev])
            }
            Op::MatMul => {
                arity(2)?;
                TfnNode::MatMul([inputs[0], inputs[1]])
            }
            Op::Reshape => {
                arity(1)?;
                TfnNode::Reshape([inputs[0], add_shape(egraph, &ty.shape)])
            }
            Op::Transpose { perm } => {
                arity(1)?;
                let perm: Vec<i64> = perm.iter().map(|&a| i64::from(a)).collect();
                TfnNode::Transpose([inputs[0], add_ints(egraph, &perm)])
            }
            Op::BroadcastTo => {
                arity(1)?;
                TfnNode::BroadcastTo([inputs[0], add_shape(egraph, &ty.shape)])
            }
            Op::Concat { axis } => {
                if inputs.is_empty() {
                    return Err(malformed("concat of nothing".into()));
                }
                let mut children = vec![egraph.add(TfnNode::Int(i64::from(*axis)))];
                children.push(add_shape(egraph, &ty.shape));
                children.extend(&inputs);
                TfnNode::Concat(children)
            }
            Op::Slice { axis, start, end, step } => {
                arity(1)?;
                let axis = egraph.add(TfnNode::Int(i64::from(*axis)));
                let start = egraph.add(TfnNode::Int(*start));
                let end = add_ints(egraph, &end.iter().copied().collect::<Vec<_>>());
                let step = egraph.add(TfnNode::Int(*step));
                TfnNode::Slice([inputs[0], axis, start, end, step, add_shape(egraph, &ty.shape)])
            }
            // A `full` with an input only copies that input's shape, which the type records.
            Op::Full { value } => {
                TfnNode::Full([dtype, leaf(egraph, *value), add_shape(egraph, &ty.shape)])
            }
            Op::Index { kind, axis } => {
                arity(kind.arity())?;
                let mut children = inputs.clone();
                children.push(egraph.add(TfnNode::Int(i64::from(*axis))));
                TfnNode::Index(*kind, children)
            }
            Op::Window { kind, attrs } => {
                let (lo, hi) = kind.arity();
                if inputs.len() < lo || inputs.len() > hi {
                    return Err(malformed(format!("`{}`: {} inputs", kind, inputs.len())));
                }
                let mut children = vec![add_ints(egraph, &super::window::attr_ints(attrs))];
                children.push(add_shape(egraph, &ty.shape));
                children.extend(&inputs);
                TfnNode::Window(*kind, children)
            }
            // Like `full`: the shape operand only gives the shape, which the type records.
            Op::Random { dist } => {
                let key = *inputs
                    .first()
                    .ok_or_else(|| malformed(format!("`{}` without a key", node.op.name())))?;
                TfnNode::Random(*dist, [dtype, add_shape(egraph, &ty.shape), key])
            }
            Op::Extern { name, attrs } => {
                let key = egraph.add(TfnNode::Int(externs.key(name, attrs)));
                let mut children = vec![key, dtype, add_shape(egraph, &ty.shape)];
                children.extend(&inputs);
                TfnNode::Extern(children)
            }
        };
        let id = egraph.add(enode);
        let data = &egraph[id].data;
        if data.ty.as_ref() != Some(ty) {
            let found = match (&data.ty, &data.error) {
                (Some(t), _) => t.to_string(),
                (None, Some(e)) => format!("no type ({e})"),
                (None, None) => "no type".into(),
            };
            let op = node.op.name();
            return Err(OptimizeError::TypeMismatch {
                node: index,
                op,
                expected: ty.clone(),
                found,
            });
        }
        ids.push(id);
    }
    Ok(ids)
}

/// Facts of every node of an expression, computed bottom-up.
pub fn expr_data(expr: &RecExpr<TfnNode>) -> Vec<ClassData> {
    let mut data: Vec<ClassData> = Vec::with_capacity(expr.as_ref().len());
    for node in expr.as_ref() {
        let d = node_data(node, |id| &data[usize::from(id)]);
        data.push(d);
    }
    data
}

/// Builds a graph computing `roots` of `expr`. `template` gives the name, parameters and
/// symbols; `origins[i]` is the origin of expression node `i` (missing = default).
pub fn expr_to_graph(
    expr: &RecExpr<TfnNode>,
    roots: &[Id],
    template: &Graph,
    origins: &[Origin],
    externs: &ExternTable,
) -> Result<Graph, OptimizeError> {
    let nodes = expr.as_ref();
    let data = expr_data(expr);
    let mut graph = Graph {
        name: template.name.clone(),
        params: template.params.clone(),
        nodes: Vec::new(),
        outputs: Vec::new(),
        syms: template.syms.clone(),
        checks: template.checks.clone(),
    };
    // Only nodes reachable from the roots, in expression (topological) order.
    let mut reachable = vec![false; nodes.len()];
    for r in roots {
        if let Some(flag) = reachable.get_mut(usize::from(*r)) {
            *flag = true;
        }
    }
    for i in (0..nodes.len()).rev() {
        if reachable[i] {
            for c in nodes[i].children() {
                reachable[usize::from(*c)] = true;
            }
        }
    }
    let mut values: Vec<Option<ValueId>> = vec![None; nodes.len()];
    for (i, node) in nodes.iter().enumerate() {
        if !reachable[i] || node.is_attribute() {
            continue;
        }
        let rebuild = |m: String| OptimizeError::Rebuild(format!("{node} (node {i}): {m}"));
        let ty = data[i]
            .ty
            .clone()
            .ok_or_else(|| rebuild(data[i].error.clone().unwrap_or_else(|| "untyped".into())))?;
        let int = |id: &Id| match &data[usize::from(*id)].attr {
            Some(AttrValue::Int(v)) => Ok(*v),
            other => Err(rebuild(format!("expected an integer, found {other:?}"))),
        };
        let constant = || data[i].constant.ok_or_else(|| rebuild("constant has no value".into()));
        use TfnNode as N;
        let (op, inputs): (Op, &[Id]) = match node {
            N::Param([index, ..]) => {
                let index = u32::try_from(int(index)?).map_err(|e| rebuild(e.to_string()))?;
                (Op::Param(index), &[])
            }
            N::Const(_) => (Op::Const(constant()?), &[]),
            N::Full(_) => (Op::Full { value: constant()? }, &[]),
            N::Iota([_, axis, _]) => {
                let axis = u32::try_from(int(axis)?).map_err(|e| rebuild(e.to_string()))?;
                (Op::Iota { axis }, &[])
            }
            N::Random(dist, [_, _, key]) => (Op::Random { dist: *dist }, std::slice::from_ref(key)),
            N::Reshape([x, _]) => (Op::Reshape, std::slice::from_ref(x)),
            N::BroadcastTo([x, _]) => (Op::BroadcastTo, std::slice::from_ref(x)),
            N::Extern(c) => {
                let key = usize::try_from(int(&c[0])?).map_err(|e| rebuild(e.to_string()))?;
                let (name, attrs) =
                    externs.0.get(key).cloned().ok_or_else(|| rebuild("unknown extern".into()))?;
                (Op::Extern { name, attrs }, &c[3..])
            }
            _ => inferred_op(node, |id| data[usize::from(id)].attr.clone())
                .map_err(rebuild)?
                .ok_or_else(|| rebuild("not an op".into()))?,
        };
        let inputs = inputs
            .iter()
            .map(|c| {
                values[usize::from(*c)].ok_or_else(|| rebuild("operand is not a tensor".into()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let origin = origins.get(i).cloned().unwrap_or_default();
        values[i] = Some(graph.push(op, inputs, ty, origin));
    }
    for r in roots {
        let value = values.get(usize::from(*r)).copied().flatten();
        graph
            .outputs
            .push(value.ok_or_else(|| OptimizeError::Rebuild("an output is not a tensor".into()))?);
    }
    Ok(graph)
}
