//! Buffer liveness: after which step each intermediate is dead, so that a call hands its
//! buffer back to the pool at once and later steps of the *same* call reuse it.
//!
//! Without this, every intermediate of a call keeps its own buffer until the call ends: a
//! training step's gradient graph (hundreds of values) then touches hundreds of fresh buffers
//! on its first call, and its working set never stays in cache. XLA calls this buffer
//! assignment; here it is the simplest sound form: a value's buffer is released after the last
//! step that reads it or any view aliasing it, unless a graph output is (a view of) it.
//!
//! Soundness rests on the step's reads being complete: every input of every node of the
//! kernel, plus the sources a step reads directly (views folded into a loop or a matmul). Debug
//! builds poison released buffers (`BufferPool::give`), so a read after release shows up as
//! NaN or `0x5A…` in the JIT-vs-interpreter tests.

use super::steps::Step;
use tfn_ir::{Graph, Op, ValueId};
use tfn_passes::fusion::FusedGraph;

/// For each step, the values whose buffers are dead once it has run.
pub(super) fn release_points(
    graph: &Graph,
    fused: &FusedGraph,
    steps: &[Step],
) -> Vec<Vec<ValueId>> {
    let n = graph.nodes.len();
    // The value that owns each value's buffer: itself, or what a zero-copy view aliases.
    let mut root: Vec<usize> = (0..n).collect();
    let mut last: Vec<Option<usize>> = vec![None; n];
    let mut produced: Vec<Option<usize>> = vec![None; n];
    for (k, (kernel, step)) in fused.kernels.iter().zip(steps).enumerate() {
        let read = |v: ValueId, root: &[usize], last: &mut [Option<usize>]| {
            if let Some(&r) = root.get(v.index()) {
                last[r] = Some(k);
            }
        };
        for &node in &kernel.nodes {
            for &u in &graph.node(node).inputs {
                read(u, &root, &mut last);
            }
        }
        for &u in &kernel.inputs {
            read(u, &root, &mut last);
        }
        match step {
            Step::View { input, output } => {
                read(*input, &root, &mut last);
                if let Some(&r) = root.get(input.index()) {
                    root[output.index()] = r;
                }
            }
            Step::Loop { plan, .. } => plan
                .inputs
                .iter()
                .filter(|op| !op.index)
                .for_each(|op| read(op.value, &root, &mut last)),
            Step::MatMul { folded, epilogue, .. } => {
                folded.iter().flatten().for_each(|f| read(f.source, &root, &mut last));
                if let Some(e) = epilogue {
                    let data = e.plan.inputs.iter().filter(|op| !op.index);
                    data.for_each(|op| read(op.value, &root, &mut last));
                }
            }
            Step::Copy { .. }
            | Step::Scatter { .. }
            | Step::Scan(_)
            | Step::Arg(_)
            | Step::Window { .. }
            | Step::Interp { .. } => {}
        }
        for &v in &kernel.nodes {
            produced[v.index()].get_or_insert(k);
        }
    }
    let mut keep = vec![false; n];
    for v in &graph.outputs {
        keep[root[v.index()]] = true;
    }
    for (i, node) in graph.nodes.iter().enumerate() {
        if matches!(node.op, Op::Param(_)) {
            keep[i] = true;
        }
    }
    let mut release = vec![Vec::new(); steps.len()];
    for v in 0..n {
        if keep[v] || root[v] != v {
            continue;
        }
        // A value nothing reads dies where it is made.
        if let Some(k) = last[v].or(produced[v]) {
            if let Some(list) = release.get_mut(k) {
                list.push(ValueId(v as u32));
            }
        }
    }
    release
}
