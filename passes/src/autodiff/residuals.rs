//! A value-and-gradient graph cut in two at its residuals, for reverse mode across separately
//! run pieces (a function's stages and loop bodies, `tfn::program`): the *forward* graph
//! computes the results and the *residuals* — the forward values the backward part reads — and
//! the *backward* graph computes the gradients from the parameters, the cotangents and the
//! residuals, so nothing of the forward pass is computed twice.
//!
//! A node belongs to the backward part when it depends on a cotangent. Residuals are the
//! forward nodes the backward part (or a gradient output) reads, except parameters (the
//! backward graph has them) and nodes without inputs (constants, `full`, `iota`: recomputed
//! where they are read).

use super::reverse::value_and_vjp_graph;
use super::AutodiffError;
use std::collections::HashMap;
use tfn_ir::graph::{GraphParam, Origin};
use tfn_ir::lower::CallRegion;
use tfn_ir::{Graph, Library, Op, ValueId};

/// The two halves of a gradient (see the module documentation).
#[derive(Clone, Debug, PartialEq)]
pub struct SplitVjp {
    /// Parameters: the forward parameters. Outputs: the forward results, then the residuals.
    pub forward: Graph,
    /// Parameters: the forward parameters, one cotangent per forward result, then the
    /// residuals. Outputs: one gradient per entry of `differentiated`.
    pub backward: Graph,
    pub residuals: usize,
    /// Indices of the forward parameters that have a gradient, ascending: the float tensors
    /// some gradient reaches (for the others, the reverse mode adds nothing). Empty when no
    /// gradient reaches any (a stage computing a constant): then there is nothing to run.
    pub differentiated: Vec<usize>,
}

/// The gradient of `forward` cut at its residuals.
pub fn split_vjp(
    lib: &Library,
    forward: &Graph,
    regions: &[CallRegion],
) -> Result<SplitVjp, AutodiffError> {
    let v = value_and_vjp_graph(lib, forward, regions)?;
    let g = &v.graph;
    let params = forward.params.len();
    let results = forward.outputs.len();
    let n = g.nodes.len();
    let mut back = vec![false; n];
    for (i, node) in g.nodes.iter().enumerate() {
        back[i] = match node.op {
            Op::Param(k) => k as usize >= params,
            _ => node.inputs.iter().any(|x| back[x.index()]),
        };
    }
    let leaf = |i: usize| g.nodes[i].inputs.is_empty();
    let mut residual = vec![false; n];
    for (i, node) in g.nodes.iter().enumerate() {
        if back[i] {
            for x in &node.inputs {
                if !back[x.index()] && !leaf(x.index()) {
                    residual[x.index()] = true;
                }
            }
        }
    }
    // Only the gradients something reaches: an unreached one is zeros, which the reverse
    // mode treats as no contribution anyway.
    let mut differentiated = Vec::new();
    let mut bwd_outputs = Vec::new();
    for (p, o) in v.differentiated.iter().zip(&g.outputs[results.min(g.outputs.len())..]) {
        if !v.unreached.contains(p) {
            differentiated.push(*p);
            bwd_outputs.push(*o);
        }
    }
    for o in &bwd_outputs {
        if !back[o.index()] && !leaf(o.index()) {
            residual[o.index()] = true;
        }
    }
    let residuals: Vec<ValueId> =
        (0..n).filter(|&i| residual[i]).map(|i| ValueId(i as u32)).collect();
    let mut fwd_outputs: Vec<ValueId> = g.outputs[..results].to_vec();
    fwd_outputs.extend(&residuals);
    let fwd = extract(g, g.params[..params].to_vec(), &HashMap::new(), &fwd_outputs, "fwd");
    let mut bwd_params = g.params.clone();
    let mut replace = HashMap::new();
    for (k, r) in residuals.iter().enumerate() {
        replace.insert(*r, bwd_params.len() as u32);
        bwd_params.push(GraphParam { name: format!("residual{k}"), ty: g.ty(*r).clone() });
    }
    let bwd = extract(g, bwd_params, &replace, &bwd_outputs, "bwd");
    // (With nothing differentiated, the backward graph has no outputs: the caller has no
    // gradient to run, see `differentiated`.)
    for graph in [&fwd, &bwd] {
        if !graph.outputs.is_empty() {
            tfn_ir::verify(graph).map_err(AutodiffError::Invalid)?;
        }
    }
    Ok(SplitVjp { forward: fwd, backward: bwd, residuals: residuals.len(), differentiated })
}

/// The nodes of `g` that `outputs` need, with the nodes of `replace` read from the given
/// parameters instead of computed.
fn extract(
    g: &Graph,
    params: Vec<GraphParam>,
    replace: &HashMap<ValueId, u32>,
    outputs: &[ValueId],
    suffix: &str,
) -> Graph {
    let n = g.nodes.len();
    let mut needed = vec![false; n];
    for o in outputs {
        needed[o.index()] = true;
    }
    for i in (0..n).rev() {
        if needed[i] && !replace.contains_key(&ValueId(i as u32)) {
            for x in &g.nodes[i].inputs {
                needed[x.index()] = true;
            }
        }
    }
    let mut out = Graph {
        name: format!("{}_{suffix}", g.name),
        params,
        nodes: Vec::new(),
        outputs: Vec::new(),
        syms: g.syms.clone(),
        checks: g.checks.clone(),
    };
    let mut map: HashMap<ValueId, ValueId> = HashMap::new();
    for (i, node) in g.nodes.iter().enumerate() {
        let v = ValueId(i as u32);
        if !needed[i] {
            continue;
        }
        let id = match replace.get(&v) {
            Some(p) => out.push(Op::Param(*p), Vec::new(), node.ty.clone(), Origin::default()),
            None => {
                let inputs = node.inputs.iter().map(|x| map[x]).collect();
                out.push(node.op.clone(), inputs, node.ty.clone(), node.origin.clone())
            }
        };
        map.insert(v, id);
    }
    out.outputs = outputs.iter().map(|o| map[o]).collect();
    out
}
