//! The verifier of fusion's output: a [`FusedGraph`] is a valid schedule of its graph.
//!
//! Run after fusion in debug and test builds (see [`crate::pipeline`]). It checks what the
//! executor relies on: every node a kernel computes reads only values computed earlier in the
//! same kernel, its declared inputs, or rank-0 constants; every kernel input is a parameter or
//! an output of an earlier kernel; every graph output is a parameter or some kernel's output;
//! and every value a computed node reads is computed by some kernel.

use super::FusedGraph;
use tfn_ir::{Graph, Op, ValueId};

/// Checks that `fused` schedules `graph`; `Err` describes the first problem found.
pub fn verify_fused(graph: &Graph, fused: &FusedGraph) -> Result<(), String> {
    let n = graph.nodes.len();
    let mut available = vec![false; n];
    let mut computed = vec![false; n];
    let is_free = |v: ValueId| matches!(graph.node(v).op, Op::Param(_) | Op::Const(_));
    for (k, kernel) in fused.kernels.iter().enumerate() {
        let in_range = |v: &ValueId| v.index() < n;
        if !kernel.nodes.iter().chain(&kernel.inputs).chain(&kernel.outputs).all(in_range) {
            return Err(format!("kernel {k} names a value outside the graph"));
        }
        for &v in &kernel.inputs {
            if !is_free(v) && !available[v.index()] {
                return Err(format!(
                    "kernel {k} reads %{} before any kernel computes it",
                    v.index()
                ));
            }
        }
        let mut local = vec![false; n];
        for &v in &kernel.nodes {
            // (`full` reads only its operand's shape, which the bound sizes give.)
            for &x in super::group::data_inputs(graph, v.index()) {
                let ok = local[x.index()] || kernel.inputs.contains(&x) || is_free(x);
                if !ok {
                    return Err(format!(
                        "kernel {k} ({}, nodes {:?}, inputs {:?}): %{} reads %{}, which is \
                         neither computed before it in the kernel nor one of its inputs",
                        kernel.kind.name(),
                        kernel.nodes.iter().map(|v| v.index()).collect::<Vec<_>>(),
                        kernel.inputs.iter().map(|v| v.index()).collect::<Vec<_>>(),
                        v.index(),
                        x.index()
                    ));
                }
            }
            if let Some(key) = super::group::random_key(graph, v.index()) {
                if !kernel.inputs.contains(&key) {
                    return Err(format!(
                        "kernel {k}: the key %{} of %{} is not one of the kernel's inputs",
                        key.index(),
                        v.index()
                    ));
                }
            }
            local[v.index()] = true;
            computed[v.index()] = true;
        }
        for &v in &kernel.outputs {
            if !local[v.index()] {
                return Err(format!(
                    "kernel {k} outputs %{}, which it does not compute",
                    v.index()
                ));
            }
            available[v.index()] = true;
        }
    }
    for &v in &graph.outputs {
        if v.index() >= n || !(is_free(v) || available[v.index()]) {
            return Err(format!("graph output %{} is not an output of any kernel", v.index()));
        }
    }
    // A value read by a computed node or returned must itself be computed (or free).
    for i in 0..n {
        if !computed[i] {
            continue;
        }
        let data = super::group::data_inputs(graph, i);
        if let Some(x) = data.iter().find(|x| !computed[x.index()] && !is_free(**x)) {
            return Err(format!("%{i} reads %{}, which no kernel computes", x.index()));
        }
    }
    Ok(())
}
