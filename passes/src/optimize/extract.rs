//! Deterministic extraction: the cheapest term of each e-class under [`super::cost`].
//!
//! A bottom-up fixpoint over the e-classes in ascending id order picks, per class, the node of
//! least tree cost (shared sub-terms counted per use, like egg's `Extractor`, except that a
//! class that is several operands of one node — `x*x`, `mul_add(a, t, a)` — counts once, as it
//! is computed once); ties go to the
//! smallest node in `TfnNode`'s derived order. No hash-map iteration order reaches the result,
//! so the same e-graph always gives the same term. The chosen terms of several roots are then
//! laid out as one `RecExpr` DAG, each e-class once.

use super::analysis::TfnEGraph;
use super::cost::node_cost;
use super::language::TfnNode;
use egg::{Id, Language, RecExpr};
use std::collections::BTreeMap;

/// A predicate on e-nodes (see [`best_nodes`]).
pub type NodeFilter<'a> = &'a dyn Fn(&TfnNode) -> bool;

/// Extracted terms for several roots, sharing common e-classes.
#[derive(Clone, Debug)]
pub struct Extraction {
    pub expr: RecExpr<TfnNode>,
    /// Position of each root in `expr`.
    pub roots: Vec<Id>,
    /// The e-class each node of `expr` was chosen from.
    pub classes: Vec<Id>,
}

/// Picks the cheapest node of each class. `root_override` forces the choice in one class
/// to be the cheapest node that `allowed` accepts (used by the soundness checker to see the
/// right-hand side a rule added).
pub fn best_nodes(
    egraph: &TfnEGraph,
    root_override: Option<(Id, NodeFilter)>,
) -> BTreeMap<Id, (f64, TfnNode)> {
    let mut ids: Vec<Id> = egraph.classes().map(|c| c.id).collect();
    ids.sort();
    let mut best: BTreeMap<Id, (f64, TfnNode)> = BTreeMap::new();
    let overridden = root_override.map(|(id, _)| egraph.find(id));
    // Costs only decrease, so this terminates; the cap guards against float pathologies.
    for _ in 0..ids.len() + 2 {
        let mut changed = false;
        for &id in &ids {
            let class = &egraph[id];
            for node in &class.nodes {
                if overridden == Some(id) && !root_override.is_some_and(|(_, ok)| ok(node)) {
                    continue;
                }
                let mut total = node_cost(node, &class.data, |c| &egraph[c].data);
                let mut complete = true;
                let mut seen: Vec<Id> = Vec::with_capacity(node.children().len());
                for c in node.children() {
                    let c = egraph.find(*c);
                    // A class that is several operands of one node is computed once.
                    if seen.contains(&c) {
                        continue;
                    }
                    seen.push(c);
                    match best.get(&c) {
                        Some((cost, _)) => total += cost,
                        None => complete = false,
                    }
                }
                if !complete {
                    continue;
                }
                let better = match best.get(&id) {
                    None => true,
                    Some((cost, chosen)) => total < *cost || (total == *cost && node < chosen),
                };
                if better {
                    best.insert(id, (total, node.clone()));
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    best
}

/// Lays out the chosen terms of `roots` as one expression, children first.
pub fn extract(
    egraph: &TfnEGraph,
    roots: &[Id],
    choice: &BTreeMap<Id, (f64, TfnNode)>,
) -> Option<Extraction> {
    let mut expr = RecExpr::default();
    let mut classes = Vec::new();
    let mut placed: BTreeMap<Id, Id> = BTreeMap::new();
    let mut root_ids = Vec::with_capacity(roots.len());
    let mut visiting = std::collections::BTreeSet::new();
    for &root in roots {
        // Iterative post-order: (class, children pushed?).
        let mut stack = vec![(egraph.find(root), false)];
        while let Some((id, expanded)) = stack.pop() {
            if placed.contains_key(&id) {
                continue;
            }
            let (_, node) = choice.get(&id)?;
            if expanded {
                let mut complete = true;
                let mapped = node.clone().map_children(|c| match placed.get(&egraph.find(c)) {
                    Some(&p) => p,
                    None => {
                        complete = false;
                        c
                    }
                });
                if !complete {
                    return None;
                }
                placed.insert(id, expr.add(mapped));
                classes.push(id);
            } else {
                // A class met again before it is placed would be a cycle of choices.
                if !visiting.insert(id) {
                    return None;
                }
                stack.push((id, true));
                for c in node.children().iter().rev() {
                    let c = egraph.find(*c);
                    if !placed.contains_key(&c) {
                        stack.push((c, false));
                    }
                }
            }
        }
        root_ids.push(*placed.get(&egraph.find(root))?);
    }
    Some(Extraction { expr, roots: root_ids, classes })
}
