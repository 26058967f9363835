//! pest parse tree → [`crate::ast`]: the only module that sees pest's types.
//!
//! The grammar (`grammar/tfn.pest`) accepts the syntax; this module builds the typed tree,
//! applies operator precedence with a Pratt parser, folds a minus sign into the numeric literal
//! it precedes (`-1` is the literal −1, `-x` is `neg(x)`), and reports malformed literals.
//!
//! Precedence, loosest first: comparisons `== != < <= > >=`, then `+ -`, then `* /` (all
//! left-associative), then unary `-`, then `**` (right-associative), so `-x**2` is `-(x**2)`,
//! then indexing `e[i]` (postfix), so `-x[i]` is `-(x[i])`.

use crate::ast::*;
use crate::prepare::prepare;
use crate::syntax_error::syntax_error;
use pest::iterators::{Pair, Pairs};
use pest::pratt_parser::{Assoc, Op, PrattParser};
use pest::Parser as _;
use std::cell::RefCell;
use tfn_ir::{DType, Diagnostic, FileId, Span};

#[derive(pest_derive::Parser)]
#[grammar = "../grammar/tfn.pest"]
pub(crate) struct TfnParser;

/// Parses one file. On error, every syntax or literal error found.
pub fn parse_file(file: FileId, text: &str) -> Result<File, Vec<Diagnostic>> {
    let prepared = prepare(file, text).map_err(|d| vec![*d])?;
    let pairs = TfnParser::parse(Rule::file, &prepared.text).map_err(|e| {
        let d = syntax_error(file, text, e);
        // A bracket left open at the end of the file is the likelier cause of an error found
        // further down (an `fn` inside the unclosed body, the end of the file).
        match prepared.unclosed {
            Some(open) => {
                let what = text.get(open..open + 1).unwrap_or("(");
                vec![d.with_secondary(
                    Span::new(file, open, open + 1),
                    format!("this `{what}` is never closed"),
                )]
            }
            _ => vec![d],
        }
    })?;
    let builder = Builder {
        file,
        errors: RefCell::new(Vec::new()),
        pratt: pratt(),
        unnegated: RefCell::new(Vec::new()),
    };
    let mut items = Vec::new();
    for pair in pairs.flat_map(|file| file.into_inner()).filter(|p| is_item(p.as_rule())) {
        items.push(builder.item(pair));
    }
    // A `9223372036854775808` that no minus sign made `-9223372036854775808`.
    for span in builder.unnegated.take() {
        builder.error(too_large(span));
    }
    let mut errors = builder.errors.into_inner();
    errors.sort_by_key(|d| d.primary.as_ref().map(|l| (l.span.start, l.span.end)));
    if errors.is_empty() {
        Ok(File { items })
    } else {
        Err(errors)
    }
}

fn is_item(rule: Rule) -> bool {
    matches!(
        rule,
        Rule::use_item | Rule::op_item | Rule::fn_item | Rule::grad_item | Rule::rewrite_item
    )
}

fn pratt() -> PrattParser<Rule> {
    PrattParser::new()
        .op(Op::infix(Rule::eq, Assoc::Left)
            | Op::infix(Rule::ne, Assoc::Left)
            | Op::infix(Rule::lt, Assoc::Left)
            | Op::infix(Rule::le, Assoc::Left)
            | Op::infix(Rule::gt, Assoc::Left)
            | Op::infix(Rule::ge, Assoc::Left))
        .op(Op::infix(Rule::add, Assoc::Left) | Op::infix(Rule::sub, Assoc::Left))
        .op(Op::infix(Rule::mul, Assoc::Left)
            | Op::infix(Rule::div, Assoc::Left)
            | Op::infix(Rule::rem, Assoc::Left))
        .op(Op::prefix(Rule::neg))
        .op(Op::infix(Rule::pow, Assoc::Right))
        .op(Op::postfix(Rule::index))
}

struct Builder {
    file: FileId,
    errors: RefCell<Vec<Diagnostic>>,
    pratt: PrattParser<Rule>,
    /// Literals `9223372036854775808` (2^63) read as `i64::MIN`, waiting for the minus sign
    /// that makes them `-9223372036854775808`; any left at the end are too large.
    unnegated: RefCell<Vec<Span>>,
}

/// `E0002` for an integer literal outside `i64`.
fn too_large(span: Span) -> Diagnostic {
    Diagnostic::error("E0002", "integer literal is too large")
        .at(span, "does not fit in 64 bits")
        .with_note("integers range from -9223372036854775808 to 9223372036854775807")
}

/// The significant children of a pair: punctuation rules are dropped.
fn children(pair: Pair<'_, Rule>) -> Vec<Pair<'_, Rule>> {
    pair.into_inner().filter(|p| !is_punct(p.as_rule())).collect()
}

fn is_punct(rule: Rule) -> bool {
    use Rule::*;
    matches!(
        rule,
        newline
            | semi
            | lparen
            | rparen
            | lbracket
            | rbracket
            | lbrace
            | langle
            | rangle
            | colon
            | arrow
            | fat_arrow
            | assign
            | dot
            | kw_op
            | kw_fn
            | kw_let
            | kw_if
            | kw_else
            | kw_return
            | kw_rewrite
            | kw_use
            | kw_for
            | kw_while
            | kw_var
            | kw_in
            | at_most
            | range_dots
            | kw_grad
            | kw_shape
            | kw_dtype
            | kw_broadcast
            | EOI
    )
}

impl Builder {
    /// The pair's span without the whitespace pest's implicit rules leave at its end.
    fn span(&self, pair: &Pair<'_, Rule>) -> Span {
        let s = pair.as_span();
        let trimmed = pair.as_str().trim_end_matches([' ', '\t', '\r', '\n']).len();
        Span::new(self.file, s.start(), s.start() + trimmed)
    }

    fn ident(&self, pair: &Pair<'_, Rule>) -> Ident {
        Ident { name: pair.as_str().to_string(), span: self.span(pair) }
    }

    fn error(&self, d: Diagnostic) {
        self.errors.borrow_mut().push(d);
    }

    fn item(&self, pair: Pair<'_, Rule>) -> Item {
        let span = self.span(&pair);
        match pair.as_rule() {
            Rule::use_item => {
                let lit = pair.into_inner().find(|p| p.as_rule() == Rule::string);
                let (path, path_span) = match lit {
                    Some(p) => {
                        let s = p.as_str();
                        (
                            s.get(1..s.len().saturating_sub(1)).unwrap_or("").to_string(),
                            self.span(&p),
                        )
                    }
                    None => (String::new(), span),
                };
                Item::Use(UseItem { path, path_span, span })
            }
            Rule::op_item => Item::Op(self.op_item(pair, span)),
            Rule::fn_item => {
                let mut sig = None;
                let mut body = None;
                for p in children(pair) {
                    match p.as_rule() {
                        Rule::signature => sig = Some(self.signature(p)),
                        Rule::block => body = Some(self.block(p)),
                        _ => {}
                    }
                }
                let sig = sig.unwrap_or_else(|| self.empty_signature(span));
                let body = body.unwrap_or(Block { stmts: Vec::new(), close: span, span });
                Item::Fn(FnItem { sig, body, span })
            }
            Rule::grad_item => {
                let mut name = None;
                let mut inputs = Vec::new();
                let mut formulas = Vec::new();
                for p in children(pair) {
                    match p.as_rule() {
                        Rule::fn_name => name = Some(self.fn_name(p)),
                        Rule::grad_inputs => {
                            inputs = children(p)
                                .iter()
                                .filter(|p| p.as_rule() == Rule::ident)
                                .map(|p| self.ident(p))
                                .collect();
                        }
                        Rule::grad_body => {
                            for f in
                                children(p).into_iter().filter(|p| p.as_rule() == Rule::formula)
                            {
                                let mut parts = children(f).into_iter();
                                if let (Some(n), Some(e)) = (parts.next(), parts.next()) {
                                    formulas.push((self.ident(&n), self.expr(e)));
                                }
                            }
                        }
                        _ => {}
                    }
                }
                let name = name.unwrap_or_else(|| self.empty_name(span));
                Item::Grad(GradItem { name, inputs, formulas, span })
            }
            _ => {
                // Rule::rewrite_item
                let mut parts = children(pair).into_iter();
                let name = parts.next().map(|p| self.ident(&p));
                let lhs = parts.next().map(|p| self.expr(p));
                let rhs = parts.next().map(|p| self.expr(p));
                let placeholder = || Expr { kind: ExprKind::Name(String::new()), span };
                Item::Rewrite(RewriteItem {
                    name: name.unwrap_or(Ident { name: String::new(), span }),
                    lhs: lhs.unwrap_or_else(placeholder),
                    rhs: rhs.unwrap_or_else(placeholder),
                    span,
                })
            }
        }
    }

    fn empty_name(&self, span: Span) -> FnName {
        FnName { base: Ident { name: String::new(), span }, overload: None, span }
    }

    fn empty_signature(&self, span: Span) -> Signature {
        Signature {
            name: self.empty_name(span),
            type_params: Vec::new(),
            params: Vec::new(),
            stars: Vec::new(),
            returns: Vec::new(),
            span,
        }
    }

    fn op_item(&self, pair: Pair<'_, Rule>, span: Span) -> OpItem {
        let mut extern_kw = None;
        let mut sig = None;
        let mut clauses = Vec::new();
        for p in children(pair) {
            let pspan = self.span(&p);
            match p.as_rule() {
                Rule::kw_extern => extern_kw = Some(pspan),
                Rule::signature => sig = Some(self.signature(p)),
                Rule::shape_clause => {
                    let Some(value) = children(p).into_iter().next() else { continue };
                    let shape = match value.as_rule() {
                        Rule::shape_list => ShapeClause::Dims(
                            children(value)
                                .into_iter()
                                .filter(|p| p.as_rule() == Rule::expr)
                                .map(|p| self.expr(p))
                                .collect(),
                        ),
                        Rule::shape_broadcast => ShapeClause::Broadcast(
                            children(value)
                                .iter()
                                .filter(|p| p.as_rule() == Rule::ident)
                                .map(|p| self.ident(p))
                                .collect(),
                        ),
                        _ => ShapeClause::SameAs(self.ident(&value)),
                    };
                    clauses.push(Clause::Shape(shape, pspan));
                }
                Rule::dtype_clause => {
                    if let Some(value) = children(p).into_iter().next() {
                        clauses.push(Clause::DType(self.ident(&value), pspan));
                    }
                }
                _ => {}
            }
        }
        let sig = sig.unwrap_or_else(|| self.empty_signature(span));
        OpItem { extern_kw, sig, clauses, span }
    }

    fn fn_name(&self, pair: Pair<'_, Rule>) -> FnName {
        let span = self.span(&pair);
        let mut parts = children(pair).into_iter();
        let base =
            parts.next().map(|p| self.ident(&p)).unwrap_or(Ident { name: String::new(), span });
        let overload = parts.next().map(|p| self.ident(&p));
        FnName { base, overload, span }
    }

    fn signature(&self, pair: Pair<'_, Rule>) -> Signature {
        let span = self.span(&pair);
        let mut sig = self.empty_signature(span);
        for p in children(pair) {
            match p.as_rule() {
                Rule::fn_name => sig.name = self.fn_name(p),
                Rule::type_params => {
                    for tp in children(p).into_iter().filter(|p| p.as_rule() == Rule::type_param) {
                        let tspan = self.span(&tp);
                        let mut parts = children(tp).into_iter();
                        let Some(name) = parts.next() else { continue };
                        let allowed = parts.next().map(|set| {
                            children(set)
                                .iter()
                                .filter(|p| p.as_rule() == Rule::dtype_name)
                                .filter_map(|p| {
                                    p.as_str().parse::<DType>().ok().map(|d| (d, self.span(p)))
                                })
                                .collect()
                        });
                        sig.type_params.push(TypeParam {
                            name: self.ident(&name),
                            allowed,
                            span: tspan,
                        });
                    }
                }
                Rule::params => {
                    let mut keyword_only = false;
                    for p in children(p) {
                        match p.as_rule() {
                            Rule::star => {
                                keyword_only = true;
                                sig.stars.push(self.span(&p));
                            }
                            Rule::param => sig.params.push(self.param(p, keyword_only)),
                            _ => {}
                        }
                    }
                }
                Rule::ret_tuple => {
                    sig.returns = children(p)
                        .into_iter()
                        .filter(|p| p.as_rule() == Rule::ty)
                        .map(|p| self.ty(p))
                        .collect();
                }
                Rule::ty => sig.returns = vec![self.ty(p)],
                _ => {}
            }
        }
        sig
    }

    fn param(&self, pair: Pair<'_, Rule>, keyword_only: bool) -> Param {
        let span = self.span(&pair);
        let mut ty = None;
        let mut name = None;
        let mut default = None;
        for p in children(pair) {
            match p.as_rule() {
                Rule::ty => ty = Some(self.ty(p)),
                Rule::ident => name = Some(self.ident(&p)),
                Rule::expr => default = Some(self.expr(p)),
                _ => {}
            }
        }
        let placeholder = Ident { name: String::new(), span };
        let ty = ty.unwrap_or(TypeExpr { base: placeholder.clone(), arg: None, list: false, span });
        Param { ty, name: name.unwrap_or(placeholder), default, keyword_only, span }
    }

    fn ty(&self, pair: Pair<'_, Rule>) -> TypeExpr {
        let span = self.span(&pair);
        let mut base = Ident { name: String::new(), span };
        let mut arg = None;
        let mut list = false;
        for (i, p) in children(pair).into_iter().enumerate() {
            match p.as_rule() {
                Rule::ident if i == 0 => base = self.ident(&p),
                Rule::ident => arg = Some(TypeArg::Var(self.ident(&p))),
                Rule::dtype_name => {
                    if let Ok(d) = p.as_str().parse::<DType>() {
                        arg = Some(TypeArg::Fixed(d, self.span(&p)));
                    }
                }
                Rule::list_suffix => list = true,
                _ => {}
            }
        }
        TypeExpr { base, arg, list, span }
    }

    fn block(&self, pair: Pair<'_, Rule>) -> Block {
        let span = self.span(&pair);
        let mut stmts = Vec::new();
        let mut close = span;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::rbrace => close = self.span(&p),
                Rule::let_stmt
                | Rule::var_stmt
                | Rule::assign_stmt
                | Rule::if_stmt
                | Rule::for_stmt
                | Rule::while_stmt
                | Rule::return_stmt => stmts.push(self.stmt(p)),
                _ => {}
            }
        }
        Block { stmts, close, span }
    }

    fn stmt(&self, pair: Pair<'_, Rule>) -> Stmt {
        let span = self.span(&pair);
        let rule = pair.as_rule();
        let parts = children(pair);
        let placeholder = || Expr { kind: ExprKind::Name(String::new()), span };
        match rule {
            Rule::let_stmt => {
                let mut names = Vec::new();
                let mut tuple = false;
                let mut value = None;
                for p in parts {
                    match p.as_rule() {
                        Rule::ident => names.push(self.ident(&p)),
                        Rule::let_tuple => {
                            tuple = true;
                            names.extend(
                                children(p)
                                    .iter()
                                    .filter(|p| p.as_rule() == Rule::ident)
                                    .map(|p| self.ident(p)),
                            );
                        }
                        Rule::expr => value = Some(self.expr(p)),
                        _ => {}
                    }
                }
                Stmt::Let { names, tuple, value: value.unwrap_or_else(placeholder), span }
            }
            Rule::if_stmt => {
                let mut cond = None;
                let mut then_block = None;
                let mut else_block = None;
                for p in parts {
                    match p.as_rule() {
                        Rule::expr => cond = Some(self.expr(p)),
                        Rule::block if then_block.is_none() => then_block = Some(self.block(p)),
                        Rule::block => else_block = Some(self.block(p)),
                        Rule::if_stmt => {
                            let nested = self.stmt(p);
                            let nspan = nested.span();
                            else_block =
                                Some(Block { stmts: vec![nested], close: nspan, span: nspan });
                        }
                        _ => {}
                    }
                }
                let then_block =
                    then_block.unwrap_or(Block { stmts: Vec::new(), close: span, span });
                Stmt::If { cond: cond.unwrap_or_else(placeholder), then_block, else_block, span }
            }
            Rule::var_stmt => {
                let mut parts = parts.into_iter();
                let name = parts.next().map(|p| self.ident(&p));
                let value = parts.next().map(|p| self.expr(p));
                Stmt::Var {
                    name: name.unwrap_or(Ident { name: String::new(), span }),
                    value: value.unwrap_or_else(placeholder),
                    span,
                }
            }
            Rule::assign_stmt => {
                let mut name = Ident { name: String::new(), span };
                let mut value = None;
                for p in parts {
                    match p.as_rule() {
                        Rule::assign_target => name = self.assign_target(&p),
                        Rule::expr => value = Some(self.expr(p)),
                        _ => {}
                    }
                }
                Stmt::Assign { name, value: value.unwrap_or_else(placeholder), span }
            }
            Rule::for_stmt => {
                let mut var = None;
                let mut bounds = Vec::new();
                let mut checkpoint = None;
                let mut body = None;
                for p in parts {
                    match p.as_rule() {
                        Rule::ident => var = Some(self.ident(&p)),
                        Rule::expr => bounds.push(self.expr(p)),
                        Rule::checkpoint => checkpoint = Some(self.span(&p)),
                        Rule::block => body = Some(self.block(p)),
                        _ => {}
                    }
                }
                let mut bounds = bounds.into_iter();
                Stmt::For {
                    var: var.unwrap_or(Ident { name: String::new(), span }),
                    start: bounds.next().unwrap_or_else(placeholder),
                    end: bounds.next().unwrap_or_else(placeholder),
                    checkpoint,
                    body: body.unwrap_or(Block { stmts: Vec::new(), close: span, span }),
                    span,
                }
            }
            Rule::while_stmt => {
                let mut exprs = Vec::new();
                let mut body = None;
                for p in parts {
                    match p.as_rule() {
                        Rule::expr => exprs.push(self.expr(p)),
                        Rule::block => body = Some(self.block(p)),
                        _ => {}
                    }
                }
                let mut exprs = exprs.into_iter();
                Stmt::While {
                    cond: exprs.next().unwrap_or_else(placeholder),
                    max_trips: exprs.next().unwrap_or_else(placeholder),
                    body: body.unwrap_or(Block { stmts: Vec::new(), close: span, span }),
                    span,
                }
            }
            _ => {
                let value = parts.into_iter().find(|p| p.as_rule() == Rule::expr);
                Stmt::Return {
                    value: value.map(|p| self.expr(p)).unwrap_or_else(placeholder),
                    span,
                }
            }
        }
    }

    /// The name of an `assign_target` token (`x =`: the name, then spaces or comments, then
    /// `=`; an atomic rule, so the name has no pair of its own).
    fn assign_target(&self, pair: &Pair<'_, Rule>) -> Ident {
        let text = pair.as_str();
        let len = text.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(0);
        let start = pair.as_span().start();
        Ident {
            name: text.get(..len).unwrap_or("").to_string(),
            span: Span::new(self.file, start, start + len),
        }
    }

    fn expr(&self, pair: Pair<'_, Rule>) -> Expr {
        self.pratt_expr(pair.into_inner())
    }

    /// An operator expression. Each operand travels with its *outer* span, parentheses
    /// included, so that `(1.0 - m) * k` spans its `(`: a parenthesised expression keeps its
    /// own span (without the parentheses), but an expression built on it covers them.
    fn pratt_expr(&self, pairs: Pairs<'_, Rule>) -> Expr {
        self.pratt
            .map_primary(|p| {
                let outer = self.span(&p);
                (self.primary(p), outer)
            })
            .map_prefix(|op, (operand, outer)| {
                let op_span = self.span(&op);
                let span = op_span.to(outer);
                let kind = match operand.kind {
                    ExprKind::Int(i64::MIN) => {
                        let mut waiting = self.unnegated.borrow_mut();
                        match waiting.iter().position(|s| *s == operand.span) {
                            // `-9223372036854775808`: the one literal whose minus sign makes
                            // it fit.
                            Some(at) => {
                                waiting.remove(at);
                                ExprKind::Int(i64::MIN)
                            }
                            // `--9223372036854775808`: 2^63 again.
                            None => {
                                drop(waiting);
                                self.error(too_large(span));
                                ExprKind::Int(0)
                            }
                        }
                    }
                    ExprKind::Int(v) => ExprKind::Int(-v),
                    ExprKind::Float(v) => ExprKind::Float(-v),
                    _ => ExprKind::Neg { op_span, operand: Box::new(operand) },
                };
                (Expr { kind, span }, span)
            })
            .map_postfix(|(base, outer), op| {
                let close = op
                    .clone()
                    .into_inner()
                    .find(|p| p.as_rule() == Rule::rbracket)
                    .map(|p| self.span(&p))
                    .unwrap_or_else(|| self.span(&op));
                let index = op
                    .into_inner()
                    .find(|p| p.as_rule() == Rule::expr)
                    .map(|p| self.expr(p))
                    .unwrap_or(Expr { kind: ExprKind::Name(String::new()), span: close });
                let span = outer.to(close);
                let kind = ExprKind::Index { base: Box::new(base), index: Box::new(index) };
                (Expr { kind, span }, span)
            })
            .map_infix(|(lhs, lhs_outer), op, (rhs, rhs_outer)| {
                let op_span = self.span(&op);
                let bin = match op.as_rule() {
                    Rule::add => BinOp::Add,
                    Rule::sub => BinOp::Sub,
                    Rule::mul => BinOp::Mul,
                    Rule::div => BinOp::Div,
                    Rule::rem => BinOp::Rem,
                    Rule::pow => BinOp::Pow,
                    Rule::eq => BinOp::Eq,
                    Rule::ne => BinOp::Ne,
                    Rule::lt => BinOp::Lt,
                    Rule::le => BinOp::Le,
                    Rule::gt => BinOp::Gt,
                    _ => BinOp::Ge,
                };
                let span = lhs_outer.to(rhs_outer);
                let kind =
                    ExprKind::Binary { op: bin, op_span, lhs: Box::new(lhs), rhs: Box::new(rhs) };
                (Expr { kind, span }, span)
            })
            .parse(pairs)
            .0
    }

    fn primary(&self, pair: Pair<'_, Rule>) -> Expr {
        let span = self.span(&pair);
        let kind = match pair.as_rule() {
            Rule::int => match pair.as_str().parse::<i64>() {
                Ok(v) => ExprKind::Int(v),
                Err(_) if pair.as_str().parse::<u64>() == Ok(1 << 63) => {
                    self.unnegated.borrow_mut().push(span);
                    ExprKind::Int(i64::MIN)
                }
                Err(_) => {
                    self.error(too_large(span));
                    ExprKind::Int(0)
                }
            },
            Rule::float => match pair.as_str().parse::<f64>() {
                // `inf` and `nan` are literals; a number that overflows f64 is not.
                Ok(v) if v.is_finite() || matches!(pair.as_str(), "inf" | "nan") => {
                    ExprKind::Float(v)
                }
                _ => {
                    self.error(
                        Diagnostic::error("E0002", "float literal is out of range")
                            .at(span, "not a finite 64-bit float"),
                    );
                    ExprKind::Float(0.0)
                }
            },
            Rule::bool_lit => ExprKind::Bool(pair.as_str() == "true"),
            Rule::dtype_name => match pair.as_str().parse::<DType>() {
                Ok(d) => ExprKind::DType(d),
                Err(()) => ExprKind::Name(pair.as_str().to_string()),
            },
            Rule::name => ExprKind::Name(pair.as_str().to_string()),
            Rule::pat_var => ExprKind::PatVar(pair.as_str().trim_start_matches('?').to_string()),
            Rule::list => ExprKind::List(
                children(pair)
                    .into_iter()
                    .filter(|p| p.as_rule() == Rule::expr)
                    .map(|p| self.expr(p))
                    .collect(),
            ),
            Rule::paren => {
                let inner = pair.into_inner();
                let commas = inner.clone().filter(|p| p.as_rule() == Rule::comma).count();
                let mut items: Vec<Expr> =
                    inner.filter(|p| p.as_rule() == Rule::expr).map(|p| self.expr(p)).collect();
                if commas == 0 && items.len() == 1 {
                    // A parenthesised expression keeps its own span (without the parentheses),
                    // so that diagnostics point at the expression.
                    return items.pop().unwrap_or(Expr { kind: ExprKind::Tuple(Vec::new()), span });
                }
                ExprKind::Tuple(items)
            }
            Rule::call => {
                let mut name = None;
                let mut args = Vec::new();
                let mut close = span;
                for p in pair.into_inner() {
                    match p.as_rule() {
                        Rule::fn_name => name = Some(self.fn_name(p)),
                        Rule::args => {
                            for a in p.into_inner() {
                                match a.as_rule() {
                                    Rule::rparen => close = self.span(&a),
                                    Rule::kwarg => {
                                        let mut parts = children(a).into_iter();
                                        if let (Some(k), Some(v)) = (parts.next(), parts.next()) {
                                            args.push(Arg {
                                                keyword: Some(self.ident(&k)),
                                                value: self.expr(v),
                                            });
                                        }
                                    }
                                    Rule::expr => {
                                        args.push(Arg { keyword: None, value: self.expr(a) })
                                    }
                                    _ => {}
                                }
                            }
                        }
                        _ => {}
                    }
                }
                let name = name.unwrap_or_else(|| self.empty_name(span));
                ExprKind::Call(Call { name, args, close })
            }
            _ => ExprKind::Name(pair.as_str().to_string()),
        };
        Expr { kind, span }
    }
}
