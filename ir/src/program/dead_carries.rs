//! Dead carried values: a `var` that a loop updates but that no result of the function reads
//! (directly, or through another carried value that one reads) is left unchanged by the body
//! (its body output becomes its own parameter), so neither the forward pass nor the reverse
//! mode computes it.
//!
//! Besides saving the work, this keeps gradients exact: the reverse mode runs a loop body's
//! backward pass for every carried value, with a zero cotangent for the ones no result reads,
//! and `0 · ∂(sqrt(g))/∂g` is NaN where `g < 0` — a NaN that then reached the gradients of
//! the inputs the dead `var` was computed from (JAX's symbolic zeros avoid the same trap).
//!
//! Liveness is computed on the lowered [`LoopBody`] before [`super::split`] cuts it: from the
//! outputs that are read, backwards through nodes, and through each loop (a loop with a live
//! result reads all its inputs); inside a `for` body, carried value `j` is live if its result
//! is, or if a live carried value's update reads it (to a fixed point). `while` loops keep
//! every carried value (their condition reads them).

use super::{loop_inputs, LoopBody, LoopKind};
use crate::graph::{Graph, ValueId};
use crate::op::Op;

/// `body` with the updates of its loops' dead carried values removed, recursively;
/// `live_outputs[j]`: whether output `j` of `body.graph` is read.
pub(super) fn prune(mut body: LoopBody, live_outputs: &[bool]) -> LoopBody {
    let roots: Vec<ValueId> = body
        .graph
        .outputs
        .iter()
        .zip(live_outputs.iter().chain(std::iter::repeat(&true)))
        .filter(|(_, &l)| l)
        .map(|(v, _)| *v)
        .collect();
    let live = reach(&body.graph, &body.loops, roots);
    for spec in &mut body.loops {
        let nc = spec.carried.len();
        let mut carried_live: Vec<bool> = spec.results.iter().map(|r| live[r.index()]).collect();
        if carried_live.len() != nc || !matches!(spec.kind, LoopKind::For { .. }) {
            carried_live = vec![true; nc];
        }
        let first = spec.first_carried();
        // Carried values the live ones' updates read, to a fixed point.
        loop {
            let roots = (0..nc)
                .filter(|&j| carried_live[j])
                .filter_map(|j| spec.body.graph.outputs.get(j).copied())
                .collect();
            let inside = reach(&spec.body.graph, &spec.body.loops, roots);
            let mut changed = false;
            for (i, node) in spec.body.graph.nodes.iter().enumerate() {
                if let Op::Param(p) = node.op {
                    let p = p as usize;
                    if inside[i] && (first..first + nc).contains(&p) && !carried_live[p - first] {
                        carried_live[p - first] = true;
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        for (j, &l) in carried_live.iter().enumerate() {
            if l {
                continue;
            }
            let param = spec
                .body
                .graph
                .nodes
                .iter()
                .position(|n| matches!(n.op, Op::Param(p) if p as usize == first + j));
            if let (Some(p), Some(out)) = (param, spec.body.graph.outputs.get_mut(j)) {
                *out = ValueId(p as u32);
            }
        }
        let mut outputs_live = carried_live;
        outputs_live.resize(spec.body.graph.outputs.len(), true);
        let empty =
            LoopBody { graph: Graph::default(), inputs: 0, regions: Vec::new(), loops: Vec::new() };
        let inner = std::mem::replace(&mut *spec.body, empty);
        *spec.body = prune(inner, &outputs_live);
    }
    body
}

/// The values of `graph` that `roots` read, through its nodes and through `loops` (every
/// input of a loop with a live result).
fn reach(graph: &Graph, loops: &[super::LoopSpec], roots: Vec<ValueId>) -> Vec<bool> {
    let mut live = vec![false; graph.nodes.len()];
    let mut stack = roots;
    let mut loop_live = vec![false; loops.len()];
    loop {
        while let Some(v) = stack.pop() {
            let Some(seen) = live.get_mut(v.index()) else { continue };
            if *seen {
                continue;
            }
            *seen = true;
            stack.extend(graph.nodes[v.index()].inputs.iter().copied());
        }
        for (k, l) in loops.iter().enumerate() {
            if !loop_live[k] && l.results.iter().any(|r| live.get(r.index()) == Some(&true)) {
                loop_live[k] = true;
                stack.extend(loop_inputs(l));
            }
        }
        if stack.is_empty() {
            return live;
        }
    }
}
