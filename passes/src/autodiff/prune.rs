//! Dead-node elimination for gradient graphs: drops the forward nodes the backward pass does
//! not use (e.g. the forward outputs themselves), keeping every `param` node, and renumbers
//! the values.

use tfn_ir::{Graph, ValueId};

/// `graph` without the nodes no output depends on (`param` nodes are always kept), and the
/// new number of each old value (`None`: removed).
pub(crate) fn prune(graph: Graph) -> (Graph, Vec<Option<ValueId>>) {
    let n = graph.nodes.len();
    let mut live = vec![false; n];
    for o in &graph.outputs {
        if let Some(l) = live.get_mut(o.index()) {
            *l = true;
        }
    }
    for i in (0..n).rev() {
        let node = &graph.nodes[i];
        if matches!(node.op, tfn_ir::Op::Param(_)) {
            live[i] = true;
        }
        if live[i] {
            for v in &node.inputs {
                if let Some(l) = live.get_mut(v.index()) {
                    *l = true;
                }
            }
        }
    }
    let mut renumber = vec![None; n];
    let mut out = Graph { nodes: Vec::new(), outputs: Vec::new(), ..graph.clone() };
    for (i, mut node) in graph.nodes.into_iter().enumerate() {
        if !live[i] {
            continue;
        }
        node.inputs =
            node.inputs.iter().filter_map(|v| renumber.get(v.index()).copied().flatten()).collect();
        renumber[i] = Some(ValueId(out.nodes.len() as u32));
        out.nodes.push(node);
    }
    out.outputs =
        graph.outputs.iter().filter_map(|v| renumber.get(v.index()).copied().flatten()).collect();
    (out, renumber)
}
