//! Recursion, direct or mutual, is an error (`E0307`): composed functions are inlined.
//!
//! The call graph has an edge for every call from a new `fn` to a new `fn` (library functions
//! cannot call functions loaded after them). Each strongly connected cycle is reported once, at
//! the first call (in source order) that closes it.

use super::scope::CallEdge;
use tfn_ir::Diagnostic;

/// `names[i]` is the full name of new function `i`.
pub fn check_recursion(names: &[String], edges: &[CallEdge], diags: &mut Vec<Diagnostic>) {
    let n = names.len();
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n];
    for e in edges {
        if e.caller < n && e.callee < n && !succ[e.caller].contains(&e.callee) {
            succ[e.caller].push(e.callee);
        }
    }
    let mut reported = vec![false; n];
    let mut sorted: Vec<&CallEdge> = edges.iter().collect();
    sorted.sort_by_key(|e| (e.span.file, e.span.start));
    for e in sorted {
        if e.caller >= n || e.callee >= n || reported[e.caller] {
            continue;
        }
        // Is there a path callee -> ... -> caller? Then this edge closes a cycle.
        let Some(path) = path(&succ, e.callee, e.caller) else { continue };
        let mut cycle = vec![e.caller];
        cycle.extend(path);
        for &f in &cycle {
            reported[f] = true;
        }
        let caller = &names[e.caller];
        let (message, label) = if e.caller == e.callee {
            (format!("function `{caller}` calls itself"), "recursive call".to_string())
        } else {
            (
                format!("functions call each other: `{caller}` is recursive"),
                format!("calls `{}`", names[e.callee]),
            )
        };
        let chain: Vec<String> = cycle.iter().map(|&f| format!("`{}`", names[f])).collect();
        diags.push(
            Diagnostic::error("E0307", message)
                .at(e.span, label)
                .with_note(format!("cycle: {}", chain.join(" -> ")))
                .with_note("functions are inlined when compiled, so recursion is not supported"),
        );
    }
}

/// The nodes of a path `from` → ... → `to` (both included), by breadth-first search.
fn path(succ: &[Vec<usize>], from: usize, to: usize) -> Option<Vec<usize>> {
    let mut parent: Vec<Option<usize>> = vec![None; succ.len()];
    let mut seen = vec![false; succ.len()];
    let mut queue = std::collections::VecDeque::from([from]);
    seen[from] = true;
    while let Some(u) = queue.pop_front() {
        if u == to {
            let mut nodes = vec![u];
            let mut cur = u;
            while let Some(p) = parent[cur] {
                nodes.push(p);
                cur = p;
            }
            nodes.reverse();
            return Some(nodes);
        }
        for &v in &succ[u] {
            if !seen[v] {
                seen[v] = true;
                parent[v] = Some(u);
                queue.push_back(v);
            }
        }
    }
    None
}
