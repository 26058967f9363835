//! Printing a [`Graph`] in the IR text format (described in [`super`]).

use crate::attr::{fmt_float, Attr, Scalar};
use crate::graph::{Graph, Node, Origin};
use crate::op::Op;
use crate::shape::{DimExpr, SymDef};
use std::fmt::Write;

/// The graph as text, origins included; [`super::parse_graph`] reads it back to an equal graph.
pub fn print_graph(g: &Graph) -> String {
    print(g, true)
}

/// The graph as text without `loc(...)` origins (parsing it back gives default origins).
pub fn print_graph_without_origins(g: &Graph) -> String {
    print(g, false)
}

fn print(g: &Graph, origins: bool) -> String {
    let mut out = String::new();
    let params: Vec<String> =
        g.params.iter().map(|p| format!("{}: {}", name(&p.name), p.ty)).collect();
    let results: Vec<String> = g
        .outputs
        .iter()
        .map(|v| {
            g.nodes.get(v.index()).map_or_else(|| "<invalid>".to_string(), |n| n.ty.to_string())
        })
        .collect();
    let _ = writeln!(
        out,
        "func {}({}) -> ({}) {{",
        name(&g.name),
        params.join(", "),
        results.join(", ")
    );
    for (i, def) in g.syms.iter().enumerate() {
        let _ = writeln!(out, "  sym s{i} = {}", sym_def(def));
    }
    for (a, b) in &g.checks {
        let _ = writeln!(out, "  check {a} == {b}");
    }
    for (i, node) in g.nodes.iter().enumerate() {
        let _ = write!(out, "  %{i} = {}", node_text(node));
        if origins && node.origin != Origin::default() {
            out.push(' ');
            out.push_str(&loc(&node.origin));
        }
        out.push('\n');
    }
    let outputs: Vec<String> = g.outputs.iter().map(|v| v.to_string()).collect();
    let _ = writeln!(out, "  return {}", outputs.join(", "));
    out.push_str("}\n");
    out
}

/// True when `s` reads back as one identifier token.
pub(super) fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

/// A name as an identifier when it is one, else as a quoted string.
fn name(s: &str) -> String {
    if is_ident(s) {
        s.to_string()
    } else {
        format!("{s:?}")
    }
}

fn sym_def(def: &SymDef) -> String {
    match def {
        SymDef::Input { sources } => {
            let items: Vec<String> =
                sources.iter().map(|(p, a)| format!("param {p} axis {a}")).collect();
            format!("input({})", items.join(", "))
        }
        SymDef::Derived(e) => dim_expr(e),
    }
}

fn dim_expr(e: &DimExpr) -> String {
    let bin =
        |a: &DimExpr, op: &str, b: &DimExpr| format!("({} {op} {})", dim_expr(a), dim_expr(b));
    match e {
        DimExpr::Dim(d) => d.to_string(),
        DimExpr::Add(a, b) => bin(a, "+", b),
        DimExpr::Sub(a, b) => bin(a, "-", b),
        DimExpr::Mul(a, b) => bin(a, "*", b),
        DimExpr::Div(a, b) => bin(a, "/", b),
        DimExpr::CeilDiv(a, b) => format!("ceil_div({}, {})", dim_expr(a), dim_expr(b)),
        DimExpr::SliceLen { size, start, end, step } => {
            format!("slice_len({}, {start}, {}, {step})", dim_expr(size), opt_int(*end))
        }
        DimExpr::Window { size, kernel, stride, padding, dilation, ceil } => format!(
            "window({}, {}, {stride}, {padding}, {dilation}, {ceil})",
            dim_expr(size),
            dim_expr(kernel)
        ),
    }
}

fn opt_int(v: Option<i64>) -> String {
    v.map_or_else(|| "none".to_string(), |v| v.to_string())
}

/// A float that reads back bit-exactly (non-canonical NaNs carry their bits).
pub(super) fn float(f: f64) -> String {
    if f.is_nan() && f.to_bits() != f64::NAN.to_bits() {
        format!("nan(0x{:016x})", f.to_bits())
    } else {
        fmt_float(f)
    }
}

fn scalar(s: Scalar) -> String {
    match s {
        Scalar::Float(f) => float(f),
        other => other.to_string(),
    }
}

fn attr(a: &Attr) -> String {
    match a {
        Attr::Float(f) => float(*f),
        Attr::FloatList(v) if v.is_empty() => "float[]".to_string(),
        Attr::FloatList(v) => {
            format!("[{}]", v.iter().map(|f| float(*f)).collect::<Vec<_>>().join(", "))
        }
        other => other.to_string(),
    }
}

fn int_list(v: &[u32]) -> String {
    format!("[{}]", v.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", "))
}

fn node_text(node: &Node) -> String {
    let operands: Vec<String> = node.inputs.iter().map(|v| v.to_string()).collect();
    let operands = operands.join(", ");
    let (head, attrs) = match &node.op {
        Op::Param(i) => (format!("param {i}"), String::new()),
        Op::Const(s) => (format!("const {}", scalar(*s)), String::new()),
        Op::Cast(to) => ("cast".to_string(), format!("to={to}")),
        Op::Reduce { axes, keepdim, .. } => {
            (node.op.name(), format!("axes={}, keepdim={keepdim}", int_list(axes)))
        }
        Op::ArgMax { axis, keepdim } | Op::ArgMin { axis, keepdim } => {
            (node.op.name(), format!("axis={axis}, keepdim={keepdim}"))
        }
        Op::Iota { axis } => ("iota".into(), format!("axis={axis}")),
        Op::Scan { axis, exclusive, reverse, .. }
        | Op::CumprodGrad { axis, exclusive, reverse } => {
            (node.op.name(), format!("axis={axis}, exclusive={exclusive}, reverse={reverse}"))
        }
        Op::Transpose { perm } => ("transpose".into(), format!("perm={}", int_list(perm))),
        Op::Concat { axis } => ("concat".into(), format!("axis={axis}")),
        Op::Index { kind, axis } => (kind.name().into(), format!("axis={axis}")),
        Op::Window { kind, attrs } => (kind.name().into(), crate::op_window::print_attrs(attrs)),
        Op::Slice { axis, start, end, step } => (
            "slice".into(),
            format!("axis={axis}, start={start}, end={}, step={step}", opt_int(*end)),
        ),
        Op::Full { value } => ("full".into(), format!("value={}", scalar(*value))),
        Op::Extern { name: ext, attrs } => (
            format!("extern.{}", name(ext)),
            format!("attrs=[{}]", attrs.iter().map(attr).collect::<Vec<_>>().join(", ")),
        ),
        Op::Unary(_)
        | Op::Binary(_)
        | Op::Where
        | Op::MulAdd
        | Op::MatMul
        | Op::Reshape
        | Op::BroadcastTo
        | Op::Random { .. } => (node.op.name(), String::new()),
    };
    let mut text = head;
    if !operands.is_empty() {
        if matches!(node.op, Op::Param(_) | Op::Const(_)) {
            text.push(',');
        }
        text.push(' ');
        text.push_str(&operands);
    }
    if !attrs.is_empty() {
        let _ = write!(text, " {{{attrs}}}");
    }
    let _ = write!(text, " : {}", node.ty);
    text
}

fn loc(origin: &Origin) -> String {
    let mut parts = Vec::new();
    if let Some(span) = origin.span {
        parts.push(format!("{}:{}..{}", span.file.0, span.start, span.end));
    }
    if !origin.inlined_from.is_empty() {
        let names: Vec<String> = origin.inlined_from.iter().map(|n| format!("{n:?}")).collect();
        parts.push(format!("via {}", names.join(", ")));
    }
    format!("loc({})", parts.join(" "))
}
