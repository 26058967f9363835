//! Checked AST → [`tfn_ir::library`] templates.
//!
//! Infix operators become calls of the prelude's op names (`a + b` → `add(a, b)`, `-x` →
//! `neg(x)`, `a ** b` → `pow(a, b)`, `a == b` → `eq(a, b)`, ...; the call's `callee_span` is the
//! operator token), `return (a, b)` becomes a `Return` with two values, loops and `x[i]` map
//! one to one onto [`Stmt::For`]/[`Stmt::While`]/[`ExprKind::Index`], and extern `shape:`
//! clauses become [`ShapeRule`]s with `x.size(i)` as [`ExprKind::Size`]. Calls stay unresolved
//! (no overload chosen): dispatch happens per call signature at instantiation.
//!
//! Conversion runs only on a checked batch, so it assumes what the checker guarantees (and still
//! never panics: anything unexpected converts to something harmless).

use crate::ast;
use tfn_ir::library::{
    Arg, Binding, Block, Body, DTypeRule, Expr, ExprKind, ExternSpec, FunctionDef, GradDef,
    RewriteDef, ShapeRule, Stmt,
};
use tfn_ir::{Attr, DType};

pub fn binding(id: &ast::Ident) -> Binding {
    Binding { name: id.name.clone(), span: id.span }
}

/// An expression template.
pub fn expr(e: &ast::Expr) -> Expr {
    let kind = match &e.kind {
        ast::ExprKind::Name(n) => ExprKind::Name(n.clone()),
        ast::ExprKind::Int(i) => ExprKind::Literal(Attr::Int(*i)),
        ast::ExprKind::Float(f) => ExprKind::Literal(Attr::Float(*f)),
        ast::ExprKind::Bool(b) => ExprKind::Literal(Attr::Bool(*b)),
        ast::ExprKind::DType(d) => ExprKind::Literal(Attr::DType(*d)),
        ast::ExprKind::List(items) => ExprKind::List(items.iter().map(expr).collect()),
        ast::ExprKind::Tuple(items) => ExprKind::Tuple(items.iter().map(expr).collect()),
        ast::ExprKind::PatVar(v) => ExprKind::PatVar(v.clone()),
        ast::ExprKind::Call(call) => ExprKind::Call {
            callee: call.name.base.name.clone(),
            overload: call.name.overload.as_ref().map(|o| o.name.clone()),
            callee_span: call.name.span,
            args: call
                .args
                .iter()
                .map(|a| Arg { keyword: a.keyword.as_ref().map(binding), value: expr(&a.value) })
                .collect(),
        },
        ast::ExprKind::Binary { op, op_span, lhs, rhs } => ExprKind::Call {
            callee: op.op_name().to_string(),
            overload: None,
            callee_span: *op_span,
            args: vec![positional(expr(lhs)), positional(expr(rhs))],
        },
        ast::ExprKind::Neg { op_span, operand } => ExprKind::Call {
            callee: "neg".to_string(),
            overload: None,
            callee_span: *op_span,
            args: vec![positional(expr(operand))],
        },
        ast::ExprKind::Index { base, index } => {
            ExprKind::Index { base: Box::new(expr(base)), index: Box::new(expr(index)) }
        }
    };
    Expr { kind, span: e.span }
}

fn positional(value: Expr) -> Arg {
    Arg { keyword: None, value }
}

pub fn block(b: &ast::Block) -> Block {
    Block { stmts: b.stmts.iter().map(stmt).collect() }
}

fn stmt(s: &ast::Stmt) -> Stmt {
    match s {
        ast::Stmt::Let { names, value, span, .. } => Stmt::Let {
            names: names.iter().map(binding).collect(),
            value: expr(value),
            span: *span,
        },
        ast::Stmt::If { cond, then_block, else_block, span } => Stmt::If {
            cond: expr(cond),
            then_block: block(then_block),
            else_block: else_block.as_ref().map(block),
            span: *span,
        },
        ast::Stmt::Return { value, span } => {
            let values = match &value.kind {
                ast::ExprKind::Tuple(items) => items.iter().map(expr).collect(),
                _ => vec![expr(value)],
            };
            Stmt::Return { values, span: *span }
        }
        ast::Stmt::Var { name, value, span } => {
            Stmt::Var { name: binding(name), value: expr(value), span: *span }
        }
        ast::Stmt::Assign { name, value, span } => {
            Stmt::Assign { name: binding(name), value: expr(value), span: *span }
        }
        ast::Stmt::For { var, start, end, checkpoint, body, span } => Stmt::For {
            var: binding(var),
            start: expr(start),
            end: expr(end),
            checkpoint: checkpoint.is_some(),
            body: block(body),
            span: *span,
        },
        ast::Stmt::While { cond, max_trips, body, span } => Stmt::While {
            cond: expr(cond),
            max_trips: expr(max_trips),
            body: block(body),
            span: *span,
        },
    }
}

/// The body of an `op` item: a primitive, or an extern op with its clauses.
pub fn op_body(item: &ast::OpItem, def: &FunctionDef) -> Body {
    if item.extern_kw.is_none() {
        return Body::Primitive;
    }
    let mut shape = ShapeRule::Dims(Vec::new());
    let mut dtype = DTypeRule::Fixed(DType::F32);
    for clause in &item.clauses {
        match clause {
            ast::Clause::Shape(ast::ShapeClause::SameAs(x), _) => {
                shape = ShapeRule::SameAs(x.name.clone(), x.span)
            }
            ast::Clause::Shape(ast::ShapeClause::Broadcast(xs), _) => {
                shape = ShapeRule::Broadcast(xs.iter().map(|x| (x.name.clone(), x.span)).collect())
            }
            ast::Clause::Shape(ast::ShapeClause::Dims(dims), _) => {
                shape = ShapeRule::Dims(dims.iter().map(|d| shape_dim(d, def)).collect())
            }
            ast::Clause::DType(x, _) => {
                dtype = match x.name.parse::<DType>() {
                    Ok(d) => DTypeRule::Fixed(d),
                    Err(()) => DTypeRule::SameAs(x.name.clone(), x.span),
                }
            }
        }
    }
    Body::Extern(ExternSpec { shape, dtype })
}

/// One entry of `shape: [...]`: `x.size(i)` of a tensor parameter becomes [`ExprKind::Size`].
fn shape_dim(e: &ast::Expr, def: &FunctionDef) -> Expr {
    if let Some((tensor, axis)) = size_call(e, def) {
        return Expr { kind: ExprKind::Size { tensor, axis }, span: e.span };
    }
    match &e.kind {
        ast::ExprKind::Binary { op, op_span, lhs, rhs } => Expr {
            kind: ExprKind::Call {
                callee: op.op_name().to_string(),
                overload: None,
                callee_span: *op_span,
                args: vec![positional(shape_dim(lhs, def)), positional(shape_dim(rhs, def))],
            },
            span: e.span,
        },
        ast::ExprKind::Call(call) if is_dim_arith(call) => Expr {
            kind: ExprKind::Call {
                callee: call.name.base.name.clone(),
                overload: None,
                callee_span: call.name.span,
                args: call.args.iter().map(|a| positional(shape_dim(&a.value, def))).collect(),
            },
            span: e.span,
        },
        _ => expr(e),
    }
}

/// `add(a, b)`, `sub`, `mul`, `div` with two positional arguments: size arithmetic in call form.
pub fn is_dim_arith(call: &ast::Call) -> bool {
    matches!(call.name.base.name.as_str(), "add" | "sub" | "mul" | "div")
        && call.name.overload.is_none()
        && call.args.len() == 2
        && call.args.iter().all(|a| a.keyword.is_none())
}

/// `x.size(i)` where `x` is a tensor parameter of `def`.
pub fn size_call(e: &ast::Expr, def: &FunctionDef) -> Option<(String, i64)> {
    let ast::ExprKind::Call(call) = &e.kind else { return None };
    let overload = call.name.overload.as_ref()?;
    let tensor = &call.name.base.name;
    let is_tensor = def.param(tensor).is_some_and(|(_, p)| p.ty.is_tensor());
    if overload.name != "size" || !is_tensor {
        return None;
    }
    match call.args.as_slice() {
        [ast::Arg { keyword: None, value: ast::Expr { kind: ast::ExprKind::Int(i), .. } }] => {
            Some((tensor.clone(), *i))
        }
        _ => None,
    }
}

pub fn grad(g: &ast::GradItem) -> GradDef {
    GradDef {
        function: g.name.base.name.clone(),
        overload: g.name.overload.as_ref().map(|o| o.name.clone()),
        inputs: g.inputs.iter().map(binding).collect(),
        formulas: g.formulas.iter().map(|(n, e)| (binding(n), expr(e))).collect(),
        span: g.span,
    }
}

pub fn rewrite(r: &ast::RewriteItem) -> RewriteDef {
    RewriteDef { name: r.name.name.clone(), lhs: expr(&r.lhs), rhs: expr(&r.rhs), span: r.span }
}
