//! Canonical text of library templates: valid `.tfn` that parses back to the same templates.
//!
//! Used by the `parse` file tests and `tfnc ir --stage parsed`. Deterministic: definitions in
//! source order (file, then position), one statement per line, four-space indentation, infix
//! operators shown desugared as the calls they became (`add(x, mul(2.0, y))`), floats always
//! with a decimal point or exponent.

use std::fmt::Write as _;
use tfn_ir::attr::fmt_float;
use tfn_ir::library::{
    Block, Body, DTypeRule, Expr, ExprKind, FunctionDef, GradDef, RewriteDef, ShapeRule, Stmt,
};
use tfn_ir::{FileId, Library};

/// The templates of `lib` defined in `files` (all files when `None`), as text.
pub fn print_library(lib: &Library, files: Option<&[FileId]>) -> String {
    let keep = |f: FileId| files.is_none_or(|fs| fs.contains(&f));
    enum Def<'a> {
        F(&'a FunctionDef),
        G(&'a GradDef),
        R(&'a RewriteDef),
    }
    let mut defs: Vec<(FileId, u32, Def)> = Vec::new();
    for f in lib.functions.values().flatten() {
        defs.push((f.span.file, f.span.start, Def::F(f)));
    }
    for g in &lib.grads {
        defs.push((g.span.file, g.span.start, Def::G(g)));
    }
    for r in &lib.rewrites {
        defs.push((r.span.file, r.span.start, Def::R(r)));
    }
    defs.retain(|(f, ..)| keep(*f));
    defs.sort_by_key(|(f, s, _)| (*f, *s));
    let mut out = String::new();
    for (_, _, d) in defs {
        match d {
            Def::F(f) => function(&mut out, f),
            Def::G(g) => grad(&mut out, g),
            Def::R(r) => {
                let _ = writeln!(out, "rewrite {}: {} => {}", r.name, expr(&r.lhs), expr(&r.rhs));
            }
        }
    }
    out
}

/// `name.overload<T: {f32, f64}>(Tensor<T> x, *, Int dim = -1) -> Tensor<T>`.
pub fn signature_text(f: &FunctionDef) -> String {
    let mut s = f.full_name();
    if !f.type_params.is_empty() {
        let tps: Vec<String> = f
            .type_params
            .iter()
            .map(|t| match &t.allowed {
                None => t.name.clone(),
                Some(a) => {
                    let names: Vec<&str> = a.iter().map(|d| d.name()).collect();
                    format!("{}: {{{}}}", t.name, names.join(", "))
                }
            })
            .collect();
        let _ = write!(s, "<{}>", tps.join(", "));
    }
    let mut params = Vec::new();
    let mut star = false;
    for p in &f.params {
        if p.keyword_only && !star {
            params.push("*".to_string());
            star = true;
        }
        let mut text = format!("{} {}", param_type(&p.ty), p.name);
        if let Some(d) = &p.default {
            let _ = write!(text, " = {}", expr(d));
        }
        params.push(text);
    }
    let _ = write!(s, "({})", params.join(", "));
    let rets: Vec<String> = f.returns.iter().map(param_type).collect();
    match rets.as_slice() {
        [one] => {
            let _ = write!(s, " -> {one}");
        }
        many => {
            let _ = write!(s, " -> ({})", many.join(", "));
        }
    }
    s
}

/// The type as written in signatures (`Tensor<T>`, `Int[]`): the IR's one spelling of it.
pub use tfn_ir::dispatch::param_type_name as param_type;

fn function(out: &mut String, f: &FunctionDef) {
    match &f.body {
        Body::Primitive => {
            let _ = writeln!(out, "op {}", signature_text(f));
        }
        Body::Extern(spec) => {
            let _ = writeln!(out, "extern op {}", signature_text(f));
            let shape = match &spec.shape {
                ShapeRule::SameAs(x, _) => x.clone(),
                ShapeRule::Dims(dims) => {
                    let dims: Vec<String> = dims.iter().map(expr).collect();
                    format!("[{}]", dims.join(", "))
                }
                ShapeRule::Broadcast(xs) => {
                    let xs: Vec<&str> = xs.iter().map(|(x, _)| x.as_str()).collect();
                    format!("broadcast({})", xs.join(", "))
                }
            };
            let dtype = match &spec.dtype {
                DTypeRule::SameAs(x, _) => x.clone(),
                DTypeRule::Fixed(d) => d.to_string(),
            };
            let _ = writeln!(out, "    shape: {shape}\n    dtype: {dtype}");
        }
        Body::Composed(body) => {
            let _ = writeln!(out, "fn {} {{", signature_text(f));
            block(out, body, 1);
            out.push_str("}\n");
        }
    }
}

fn block(out: &mut String, b: &Block, depth: usize) {
    let indent = "    ".repeat(depth);
    for s in &b.stmts {
        match s {
            Stmt::Let { names, value, .. } => {
                let names: Vec<&str> = names.iter().map(|n| n.name.as_str()).collect();
                let target = match names.as_slice() {
                    [one] => one.to_string(),
                    many => format!("({})", many.join(", ")),
                };
                let _ = writeln!(out, "{indent}let {target} = {}", expr(value));
            }
            Stmt::If { cond, then_block, else_block, .. } => {
                let _ = writeln!(out, "{indent}if {} {{", expr(cond));
                block(out, then_block, depth + 1);
                if let Some(e) = else_block {
                    let _ = writeln!(out, "{indent}}} else {{");
                    block(out, e, depth + 1);
                }
                let _ = writeln!(out, "{indent}}}");
            }
            Stmt::Return { values, .. } => {
                let values: Vec<String> = values.iter().map(expr).collect();
                match values.as_slice() {
                    [one] => {
                        let _ = writeln!(out, "{indent}return {one}");
                    }
                    many => {
                        let _ = writeln!(out, "{indent}return ({})", many.join(", "));
                    }
                }
            }
            Stmt::Var { name, value, .. } => {
                let _ = writeln!(out, "{indent}var {} = {}", name.name, expr(value));
            }
            Stmt::Assign { name, value, .. } => {
                let _ = writeln!(out, "{indent}{} = {}", name.name, expr(value));
            }
            Stmt::For { var, start, end, checkpoint, body, .. } => {
                let ck = if *checkpoint { ", checkpoint" } else { "" };
                let _ = writeln!(
                    out,
                    "{indent}for {} in {}..{}{ck} {{",
                    var.name,
                    expr(start),
                    expr(end)
                );
                block(out, body, depth + 1);
                let _ = writeln!(out, "{indent}}}");
            }
            Stmt::While { cond, max_trips, body, .. } => {
                let _ =
                    writeln!(out, "{indent}while {}, at most {} {{", expr(cond), expr(max_trips));
                block(out, body, depth + 1);
                let _ = writeln!(out, "{indent}}}");
            }
        }
    }
}

/// A `grad` block's canonical text (one formula per line, infix shown as calls).
pub fn grad_text(g: &GradDef) -> String {
    let mut out = String::new();
    grad(&mut out, g);
    out
}

fn grad(out: &mut String, g: &GradDef) {
    let name = match &g.overload {
        Some(o) => format!("{}.{}", g.function, o),
        None => g.function.clone(),
    };
    let inputs: Vec<&str> = g.inputs.iter().map(|b| b.name.as_str()).collect();
    let _ = writeln!(out, "grad {name}({}) {{", inputs.join(", "));
    for (input, formula) in &g.formulas {
        let _ = writeln!(out, "    {}: {}", input.name, expr(formula));
    }
    out.push_str("}\n");
}

/// An expression in call form.
pub fn expr(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Name(n) => n.clone(),
        ExprKind::Literal(tfn_ir::Attr::Float(f)) => fmt_float(*f),
        ExprKind::Literal(a) => a.to_string(),
        ExprKind::List(items) => {
            let items: Vec<String> = items.iter().map(expr).collect();
            format!("[{}]", items.join(", "))
        }
        ExprKind::Tuple(items) => {
            let items: Vec<String> = items.iter().map(expr).collect();
            format!("({})", items.join(", "))
        }
        ExprKind::Call { callee, overload, args, .. } => {
            let args: Vec<String> = args
                .iter()
                .map(|a| match &a.keyword {
                    Some(k) => format!("{}={}", k.name, expr(&a.value)),
                    None => expr(&a.value),
                })
                .collect();
            match overload {
                Some(o) => format!("{callee}.{o}({})", args.join(", ")),
                None => format!("{callee}({})", args.join(", ")),
            }
        }
        ExprKind::Size { tensor, axis } => format!("{tensor}.size({axis})"),
        ExprKind::Index { base, index } => format!("{}[{}]", expr(base), expr(index)),
        ExprKind::PatVar(v) => format!("?{v}"),
    }
}
