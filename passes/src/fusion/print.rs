//! Text form of a [`FusedGraph`] for `tfnc ir --stage fused`: one block per kernel with its
//! kind, loop domain, inputs, outputs and the nodes it computes.

use super::FusedGraph;
use std::fmt::Write;
use tfn_ir::{Graph, Op, ValueId};

/// Renders `fused` (computed from `graph`) as text, deterministic and stable for snapshots.
///
/// ```text
/// kernel 0: elementwise over [s0] (inputs %0, %1; outputs %5)
///   %3 = mul(%0, %2) : f32[s0]
/// ```
pub fn print_fused(fused: &FusedGraph, graph: &Graph) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "fused {} ({} kernels)", graph.name, fused.kernels.len());
    for (i, p) in graph.params.iter().enumerate() {
        let _ = writeln!(out, "  param {i} {}: {}", p.name, p.ty);
    }
    for (i, kernel) in fused.kernels.iter().enumerate() {
        let axes = if kernel.axes.is_empty() {
            String::new()
        } else {
            let list: Vec<String> = kernel.axes.iter().map(|a| a.to_string()).collect();
            format!(" reducing axes [{}]", list.join(", "))
        };
        let _ = writeln!(
            out,
            "kernel {i}: {} over {}{axes} (inputs {}; outputs {})",
            kernel.kind.name(),
            kernel.domain,
            value_list(&kernel.inputs),
            value_list(&kernel.outputs),
        );
        for &v in &kernel.nodes {
            if let Some(node) = graph.nodes.get(v.index()) {
                let _ = writeln!(
                    out,
                    "  {v} = {}({}) : {}",
                    op_text(&node.op),
                    value_list(&node.inputs),
                    node.ty
                );
            }
        }
    }
    let _ = writeln!(out, "return {}", value_list(&graph.outputs));
    out
}

fn value_list(values: &[ValueId]) -> String {
    if values.is_empty() {
        return "-".into();
    }
    values.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", ")
}

/// The op's name with its attributes, e.g. `sum[axes=[1], keepdim=true]`.
pub(super) fn op_text(op: &Op) -> String {
    let list = |v: &[u32]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(", ");
    match op {
        Op::Param(i) => format!("param[{i}]"),
        Op::Const(s) => format!("const[{s}]"),
        Op::Cast(d) => format!("cast[{d}]"),
        Op::Reduce { axes, keepdim, .. } => {
            format!("{}[axes=[{}], keepdim={keepdim}]", op.name(), list(axes))
        }
        Op::ArgMax { axis, keepdim } => format!("argmax[axis={axis}, keepdim={keepdim}]"),
        Op::ArgMin { axis, keepdim } => format!("argmin[axis={axis}, keepdim={keepdim}]"),
        Op::Iota { axis } => format!("iota[axis={axis}]"),
        Op::Scan { axis, exclusive, reverse, .. }
        | Op::CumprodGrad { axis, exclusive, reverse } => {
            format!("{}[axis={axis}, exclusive={exclusive}, reverse={reverse}]", op.name())
        }
        Op::Transpose { perm } => format!("transpose[perm=[{}]]", list(perm)),
        Op::Concat { axis } => format!("concat[axis={axis}]"),
        Op::Index { axis, .. } => format!("{}[axis={axis}]", op.name()),
        Op::Slice { axis, start, end, step } => {
            let end = end.map_or("none".to_string(), |e| e.to_string());
            format!("slice[axis={axis}, start={start}, end={end}, step={step}]")
        }
        Op::Full { value } => format!("full[{value}]"),
        Op::Extern { attrs, .. } => {
            let a: Vec<String> = attrs.iter().map(|a| a.to_string()).collect();
            format!("{}[{}]", op.name(), a.join(", "))
        }
        _ => op.name(),
    }
}
