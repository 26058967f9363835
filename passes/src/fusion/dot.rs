//! A [`FusedGraph`] as a Graphviz DOT picture (`tfnc graph`): kernels as boxes listing their
//! ops, tensors as edges labelled with their value, dtype and shape, parameters and results
//! as distinct nodes.
//!
//! Node labels are HTML-like labels (`<...>`): every text in them is escaped as HTML (`&`,
//! `<`, `>`, `"`), so names and attribute texts cannot break the picture; braces and `|` have
//! no meaning there (they would in `record` shapes, which are not used). Edge labels and the
//! graph's name are quoted strings (`\` and `"` escaped). The output is deterministic.

use super::{FusedGraph, Kernel};
use std::collections::HashMap;
use std::fmt::Write;
use tfn_ir::{Graph, Op, Shape, ValueId};

/// At most this many op rows per kernel box; the rest are counted.
const MAX_ROWS: usize = 40;

/// Renders `fused` (a schedule of `graph`) as DOT. `shape_text` prints a shape: the
/// symbolic `Shape` display, or concrete sizes when the caller knows them.
pub fn print_dot(
    fused: &FusedGraph,
    graph: &Graph,
    shape_text: &dyn Fn(&Shape) -> String,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "// the fused graph of `{}`: {} kernel(s)",
        graph.name.replace(['\n', '\r'], " "),
        fused.kernels.len()
    );
    let _ = writeln!(out, "digraph {} {{", quoted(&graph.name));
    out.push_str(DOT_STYLE);
    let mut edges = String::new();
    let part = DotPart { fused, graph, shape_text, prefix: "", param_source: &|_| None };
    let results = part.write(&mut out, &mut edges);
    let ty = |v: ValueId| format!("{}{}", graph.ty(v).dtype, shape_text(&graph.ty(v).shape));
    for (i, (&v, from)) in graph.outputs.iter().zip(&results).enumerate() {
        let _ = writeln!(out, "{}", result_node(&format!("r{i}"), &format!("result {i}"), &ty(v)));
        let _ = writeln!(edges, "  {from} -> r{i} [label={}];", quoted(&format!("{v} {}", ty(v))));
    }
    out.push_str(&edges);
    out.push_str("}\n");
    out
}

/// The attributes every picture starts with.
pub const DOT_STYLE: &str = "  graph [rankdir=TB, fontname=\"Helvetica\", nodesep=0.3];\n  \
    node [fontname=\"Helvetica\", fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=9];\n";

/// A parameter's node: `name` (a DOT id), its bold `title` and its type.
pub fn param_node(name: &str, title: &str, ty: &str) -> String {
    format!(
        "  {name} [shape=ellipse, style=filled, fillcolor=\"#dbeafe\", label=<<b>{}</b><br/>{}>];",
        html(title),
        html(ty)
    )
}

/// A result's node, as [`param_node`].
pub fn result_node(name: &str, title: &str, ty: &str) -> String {
    format!(
        "  {name} [shape=ellipse, style=\"filled,bold\", fillcolor=\"#dcfce7\", label=<<b>{}</b><br/>{}>];",
        html(title),
        html(ty)
    )
}

/// One fused graph's kernels, drawn into a larger picture (a stage of a function with loops)
/// or alone ([`print_dot`]): its node ids start with `prefix`.
pub struct DotPart<'a> {
    pub fused: &'a FusedGraph,
    pub graph: &'a Graph,
    pub shape_text: &'a dyn Fn(&Shape) -> String,
    pub prefix: &'a str,
    /// The node (outside this part) that feeds parameter `p`; `None` draws a parameter node.
    pub param_source: &'a dyn Fn(usize) -> Option<String>,
}

impl DotPart<'_> {
    /// Writes the part's nodes to `out` and the edges into them to `edges`; returns the node
    /// that computes each of the graph's outputs.
    pub fn write(&self, out: &mut String, edges: &mut String) -> Vec<String> {
        let (graph, prefix) = (self.graph, self.prefix);
        let ty = |v: ValueId| {
            let t = graph.ty(v);
            format!("{}{}", t.dtype, (self.shape_text)(&t.shape))
        };
        // Which kernel computes each value a later kernel or the result reads.
        let mut producer: HashMap<ValueId, usize> = HashMap::new();
        for (k, kernel) in self.fused.kernels.iter().enumerate() {
            for &v in &kernel.outputs {
                producer.insert(v, k);
            }
        }
        let mut params: Vec<String> = Vec::with_capacity(graph.params.len());
        for (i, p) in graph.params.iter().enumerate() {
            params.push(match (self.param_source)(i) {
                Some(node) => node,
                None => {
                    let _ = writeln!(
                        out,
                        "{}",
                        param_node(
                            &format!("{prefix}p{i}"),
                            &p.name,
                            &format!("{}{}", p.ty.dtype, (self.shape_text)(&p.ty.shape))
                        )
                    );
                    format!("{prefix}p{i}")
                }
            });
        }
        // Values read by kernels or returned that neither a parameter nor a kernel produces.
        let mut loose: Vec<ValueId> = Vec::new();
        let source = |v: ValueId, loose: &mut Vec<ValueId>| -> String {
            if let Some(k) = producer.get(&v) {
                return format!("{prefix}k{k}");
            }
            match graph.node(v).op {
                Op::Param(p) if (p as usize) < params.len() => params[p as usize].clone(),
                _ => {
                    if !loose.contains(&v) {
                        loose.push(v);
                    }
                    format!("{prefix}v{}", v.index())
                }
            }
        };
        for (k, kernel) in self.fused.kernels.iter().enumerate() {
            let _ = writeln!(
                out,
                "  {prefix}k{k} [shape=none, margin=0, label=<{}>];",
                kernel_table(k, kernel, graph, self.shape_text)
            );
            for &v in &kernel.inputs {
                let from = source(v, &mut loose);
                let label = quoted(&format!("{v} {}", ty(v)));
                let _ = writeln!(edges, "  {from} -> {prefix}k{k} [label={label}];");
            }
        }
        let results = graph.outputs.iter().map(|&v| source(v, &mut loose)).collect();
        for v in loose {
            let _ = writeln!(
                out,
                "  {prefix}v{} [shape=ellipse, style=dashed, label=<{}>];",
                v.index(),
                html(&format!("{v} = {}", super::print::op_text(&graph.node(v).op)))
            );
        }
        results
    }
}

/// A kernel's box: a header (number, kind, loop domain, reduced axes) and one row per op,
/// with the rank-0 constants copied into the kernel written in place of their value ids.
fn kernel_table(
    k: usize,
    kernel: &Kernel,
    graph: &Graph,
    shape_text: &dyn Fn(&Shape) -> String,
) -> String {
    let axes = if kernel.axes.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = kernel.axes.iter().map(|a| a.to_string()).collect();
        format!(" reducing axes [{}]", list.join(", "))
    };
    let mut t = String::from(
        "<table border=\"1\" cellborder=\"0\" cellspacing=\"0\" cellpadding=\"3\" bgcolor=\"white\">",
    );
    let _ = write!(
        t,
        "<tr><td align=\"left\" bgcolor=\"#e5e7eb\"><b>kernel {k}</b> {}</td></tr>",
        html(&format!("{} over {}{axes}", kernel.kind.name(), shape_text(&kernel.domain)))
    );
    let constant = |v: ValueId| match &graph.node(v).op {
        Op::Const(s) if kernel.nodes.contains(&v) => Some(s.to_string()),
        _ => None,
    };
    let rows: Vec<String> = kernel
        .nodes
        .iter()
        .filter(|&&v| constant(v).is_none())
        .map(|&v| {
            let node = graph.node(v);
            let args: Vec<String> =
                node.inputs.iter().map(|&u| constant(u).unwrap_or_else(|| u.to_string())).collect();
            format!("{v} = {}({})", super::print::op_text(&node.op), args.join(", "))
        })
        .collect();
    let shown = if rows.len() > MAX_ROWS { MAX_ROWS - 1 } else { rows.len() };
    for row in &rows[..shown] {
        let _ = write!(t, "<tr><td align=\"left\">{}</td></tr>", html(row));
    }
    if shown < rows.len() {
        let _ = write!(t, "<tr><td align=\"left\"><i>… {} more</i></td></tr>", rows.len() - shown);
    }
    t.push_str("</table>");
    t
}

/// Text for an HTML-like label: `&`, `<`, `>`, `"` as entities, control characters as spaces.
pub fn html(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => s.push_str("&amp;"),
            '<' => s.push_str("&lt;"),
            '>' => s.push_str("&gt;"),
            '"' => s.push_str("&quot;"),
            c if c.is_control() => s.push(' '),
            c => s.push(c),
        }
    }
    s
}

/// A DOT quoted string: `\` and `"` escaped, control characters as spaces.
pub fn quoted(text: &str) -> String {
    let mut s = String::with_capacity(text.len() + 2);
    s.push('"');
    for c in text.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            c if c.is_control() => s.push(' '),
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

#[cfg(test)]
#[path = "dot_tests.rs"]
mod tests;
