//! User `rewrite` rules: `.tfn` templates ([`tfn_ir::library::RewriteDef`]) to egg rewrites,
//! each checked for soundness before it is used.
//!
//! Supported on both sides: pattern variables `?x`, scalar literals, and calls of the
//! elementwise prelude ops (unary, binary incl. comparisons and `.scalar` overloads, `where`,
//! `cast(?x, dtype)`), positional arguments only. A literal adopts the dtype of the tensors
//! next to it, as in the language: on the left it matches any splat constant with that value
//! (`?x * 1.0` matches `x * 1` for `i32` too); on the right it becomes a constant of the dtype
//! of its sibling operands (or of the matched value). Like every rule, a user rule is only
//! applied where its right-hand side has the type of the matched value.
//!
//! Diagnostics: `E0701` unsupported construct, `E0702` unsound rule: values or gradients
//! differ (with the counterexample in notes), `E0703` a rule that cannot be checked (no dtype makes its left side
//! well-typed, so it would never fire), `E0704` a variable only on the right.

use super::analysis::{add_constant, TfnAnalysis, TfnEGraph};
use super::fold::scalar_of_dtype;
use super::language::TfnNode;
use super::rules::apply::{union_checked, CompiledCond, CondChecker};
use super::rules::RuleDefError;
use super::soundness::{check_rule_soundness_with, SoundnessConfig, SoundnessError};
use super::NamedRule;
use egg::{Applier, Id, Pattern, PatternAst, Rewrite, Subst, Symbol, Var};
use std::collections::BTreeSet;
use tfn_ir::attr::fmt_float;
use tfn_ir::library::{ExprKind, RewriteDef};
use tfn_ir::{
    Attr, BinaryOp, DType, Diagnostic, Library, Scalar, Shape, Span, TensorType, UnaryOp,
};

/// An elementwise op a rule may call.
#[derive(Clone, Copy, Debug, PartialEq)]
enum CallOp {
    Unary(UnaryOp),
    Binary(BinaryOp),
    Where,
    Cast(DType),
}

/// One side of a user rule.
#[derive(Clone, Debug, PartialEq)]
enum Template {
    Var(String, Span),
    Lit(Scalar),
    Call(CallOp, Vec<Template>),
}

impl Template {
    fn has_var(&self) -> bool {
        match self {
            Template::Var(..) => true,
            Template::Lit(_) => false,
            Template::Call(_, args) => args.iter().any(Template::has_var),
        }
    }

    fn vars<'a>(&'a self, out: &mut Vec<(&'a str, Span)>) {
        match self {
            Template::Var(name, span) => out.push((name, *span)),
            Template::Lit(_) => {}
            Template::Call(_, args) => args.iter().for_each(|a| a.vars(out)),
        }
    }
}

fn literal_text(s: Scalar) -> String {
    match s {
        Scalar::Bool(b) => b.to_string(),
        Scalar::Int(i) => i.to_string(),
        Scalar::Float(f) => fmt_float(f),
    }
}

fn op_text(op: CallOp) -> String {
    match op {
        CallOp::Unary(u) => u.name().into(),
        CallOp::Binary(b) => b.name().into(),
        CallOp::Where => "where".into(),
        CallOp::Cast(d) => format!("cast {d}"),
    }
}

/// Converts a rule side; unsupported constructs become `E0701` diagnostics.
fn to_template(expr: &tfn_ir::library::Expr, diags: &mut Vec<Diagnostic>) -> Option<Template> {
    let unsupported = |what: String, span: Span| {
        Diagnostic::error("E0701", format!("{what} is not supported in rewrite rules"))
            .at(span, "not supported here")
            .with_help("rules may use `?variables`, scalar literals and elementwise ops")
    };
    match &expr.kind {
        ExprKind::PatVar(name) => Some(Template::Var(name.clone(), expr.span)),
        ExprKind::Literal(Attr::Float(f)) => Some(Template::Lit(Scalar::Float(*f))),
        ExprKind::Literal(Attr::Int(i)) => Some(Template::Lit(Scalar::Int(*i))),
        ExprKind::Literal(Attr::Bool(b)) => Some(Template::Lit(Scalar::Bool(*b))),
        ExprKind::Call { callee, callee_span, args, .. } => {
            if let Some(arg) = args.iter().find(|a| a.keyword.is_some()) {
                diags.push(unsupported("a keyword argument".into(), arg.value.span));
                return None;
            }
            let op = if let Some(u) = UnaryOp::from_name(callee) {
                CallOp::Unary(u)
            } else if let Some(b) = BinaryOp::from_name(callee) {
                CallOp::Binary(b)
            } else if callee == "where" {
                CallOp::Where
            } else if callee == "cast" {
                match args.get(1).map(|a| &a.value.kind) {
                    Some(ExprKind::Literal(Attr::DType(d))) if args.len() == 2 => CallOp::Cast(*d),
                    _ => {
                        diags.push(unsupported("`cast` without a literal dtype".into(), expr.span));
                        return None;
                    }
                }
            } else {
                diags.push(unsupported(format!("calling `{callee}`"), *callee_span));
                return None;
            };
            let arity = match op {
                CallOp::Unary(_) | CallOp::Cast(_) => 1,
                CallOp::Binary(_) => 2,
                CallOp::Where => 3,
            };
            let given = if matches!(op, CallOp::Cast(_)) { 1 } else { args.len() };
            if given != arity {
                diags.push(
                    Diagnostic::error(
                        "E0701",
                        format!("`{callee}` takes {arity} argument(s), got {given}"),
                    )
                    .at(*callee_span, "wrong number of arguments"),
                );
                return None;
            }
            let templates: Vec<Option<Template>> =
                args.iter().take(arity).map(|a| to_template(&a.value, diags)).collect();
            Some(Template::Call(op, templates.into_iter().collect::<Option<Vec<_>>>()?))
        }
        ExprKind::Literal(other) => {
            diags.push(unsupported(format!("a `{}` literal", other.type_name()), expr.span));
            None
        }
        _ => {
            diags.push(unsupported("this expression".into(), expr.span));
            None
        }
    }
}

/// The searcher's s-expression: literals become fresh variables with a value condition.
fn lhs_text(t: &Template, conds: &mut Vec<(String, f64)>) -> String {
    match t {
        Template::Var(name, _) => format!("?{name}"),
        Template::Lit(s) => {
            let var = format!("?__lit{}", conds.len());
            conds.push((var.clone(), s.as_f64()));
            var
        }
        Template::Call(op, args) => {
            let args: Vec<String> = args.iter().map(|a| lhs_text(a, conds)).collect();
            format!("({} {})", op_text(*op), args.join(" "))
        }
    }
}

/// The soundness probe: literals become constants of the dtype under test.
fn probe_text(t: &Template) -> String {
    match t {
        Template::Var(name, _) => format!("?{name}"),
        Template::Lit(s) => format!("(const T {})", literal_text(*s)),
        Template::Call(op, args) => {
            let args: Vec<String> = args.iter().map(probe_text).collect();
            format!("({} {})", op_text(*op), args.join(" "))
        }
    }
}

/// Builds a rule's right-hand side, giving literals the dtype of their neighbours.
#[derive(Clone, Debug)]
struct TemplateApplier {
    conds: CondChecker,
    rhs: Template,
}

impl TemplateApplier {
    fn build(
        &self,
        t: &Template,
        egraph: &mut TfnEGraph,
        subst: &Subst,
        dtype: Option<DType>,
    ) -> Option<Id> {
        match t {
            Template::Var(name, _) => subst.get(format!("?{name}").parse::<Var>().ok()?).copied(),
            Template::Lit(s) => {
                let dtype = dtype?;
                let ty = TensorType { dtype, shape: Shape::scalar() };
                Some(add_constant(egraph, &ty, scalar_of_dtype(*s, dtype)?))
            }
            Template::Call(op, args) => {
                let mut ids: Vec<Option<Id>> = vec![None; args.len()];
                for (i, a) in args.iter().enumerate() {
                    if a.has_var() {
                        ids[i] = Some(self.build(a, egraph, subst, None)?);
                    }
                }
                let operand_dtype = |skip_first: bool| {
                    ids.iter()
                        .skip(usize::from(skip_first))
                        .flatten()
                        .find_map(|&id| egraph[id].data.ty.as_ref().map(|t| t.dtype))
                };
                let (cond_dtype, operand) = match op {
                    CallOp::Where => (Some(DType::Bool), operand_dtype(true).or(dtype)),
                    CallOp::Binary(b) if b.is_comparison() => (None, operand_dtype(false)),
                    CallOp::Unary(u) if u.is_predicate() => (None, operand_dtype(false)),
                    CallOp::Cast(_) => (None, operand_dtype(false)),
                    _ => (None, operand_dtype(false).or(dtype)),
                };
                for (i, a) in args.iter().enumerate() {
                    if ids[i].is_none() {
                        let hint =
                            if i == 0 && cond_dtype.is_some() { cond_dtype } else { operand };
                        ids[i] = Some(self.build(a, egraph, subst, hint)?);
                    }
                }
                let ids: Vec<Id> = ids.into_iter().collect::<Option<_>>()?;
                let node = match op {
                    CallOp::Unary(u) => TfnNode::Unary(*u, [ids[0]]),
                    CallOp::Binary(b) => TfnNode::Binary(*b, [ids[0], ids[1]]),
                    CallOp::Where => TfnNode::Where([ids[0], ids[1], ids[2]]),
                    CallOp::Cast(d) => TfnNode::Cast([egraph.add(TfnNode::DType(*d)), ids[0]]),
                };
                Some(egraph.add(node))
            }
        }
    }
}

impl Applier<TfnNode, TfnAnalysis> for TemplateApplier {
    fn apply_one(
        &self,
        egraph: &mut TfnEGraph,
        eclass: Id,
        subst: &Subst,
        _searcher_ast: Option<&PatternAst<TfnNode>>,
        _rule_name: Symbol,
    ) -> Vec<Id> {
        if !self.conds.holds(egraph, subst) {
            return Vec::new();
        }
        let dtype = egraph[eclass].data.ty.as_ref().map(|t| t.dtype);
        let built = self.build(&self.rhs, egraph, subst, dtype);
        built.and_then(|id| union_checked(egraph, eclass, id)).into_iter().collect()
    }
}

/// A compiled user rule and its soundness probe.
struct Compiled {
    rewrite: Rewrite<TfnNode, TfnAnalysis>,
    probe: String,
}

fn compile_one(def: &RewriteDef) -> Result<Compiled, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let lhs = to_template(&def.lhs, &mut diags);
    let rhs = to_template(&def.rhs, &mut diags);
    let (Some(lhs), Some(rhs)) = (lhs, rhs) else { return Err(diags) };
    if !matches!(lhs, Template::Call(..)) {
        let d = Diagnostic::error("E0701", "the left-hand side of a rewrite rule must be a call")
            .at(def.lhs.span, "matches every value");
        return Err(vec![d]);
    }
    let (mut lhs_vars, mut rhs_vars) = (Vec::new(), Vec::new());
    lhs.vars(&mut lhs_vars);
    rhs.vars(&mut rhs_vars);
    let bound: BTreeSet<&str> = lhs_vars.iter().map(|(n, _)| *n).collect();
    for (name, span) in rhs_vars.iter().filter(|(n, _)| !bound.contains(n)) {
        diags.push(
            Diagnostic::error("E0704", format!("`?{name}` is not bound by the left-hand side"))
                .at(*span, "only on the right"),
        );
    }
    if !diags.is_empty() {
        return Err(diags);
    }
    let mut lits = Vec::new();
    let text = lhs_text(&lhs, &mut lits);
    let internal = |e: String| {
        vec![Diagnostic::error("E0701", format!("cannot compile this rule: {e}")).at(def.span, "")]
    };
    let pattern: Pattern<TfnNode> = text.parse().map_err(|e| internal(format!("{e}")))?;
    let conds = lits
        .iter()
        .map(|(var, value)| {
            let v = var
                .parse::<Var>()
                .map_err(|e| RuleDefError { name: def.name.clone(), message: format!("{e:?}") })?;
            Ok(CompiledCond::ConstEq(v, *value))
        })
        .collect::<Result<Vec<_>, RuleDefError>>()
        .map_err(|e| internal(e.to_string()))?;
    let applier = TemplateApplier { conds: CondChecker(conds), rhs };
    let rewrite = Rewrite::new(user_rule_name(&def.name), pattern, applier).map_err(internal)?;
    Ok(Compiled { rewrite, probe: probe_text(&lhs) })
}

/// The name a user rule runs under: user rules live in their own namespace, so `log-exp` in a
/// user's file never collides with the built-in rule of that name (spec section 7).
pub fn user_rule_name(name: &str) -> String {
    format!("user:{name}")
}

/// Compiles the library's `rewrite` rules and checks each for soundness (see
/// [`super::soundness`]): values, and gradients with `lib`'s `grad` blocks (a library
/// without the prelude's skips the gradient check). Returns all problems of all rules.
pub fn compile_user_rules(lib: &Library) -> Result<Vec<NamedRule>, Vec<Diagnostic>> {
    // A user's rule must also hold at infinities, NaN, `-0` and huge values.
    let config = SoundnessConfig { specials: true, ..SoundnessConfig::default() };
    let mut rules = Vec::new();
    let mut diags = Vec::new();
    for def in &lib.rewrites {
        let compiled = match compile_one(def) {
            Ok(c) => c,
            Err(mut d) => {
                diags.append(&mut d);
                continue;
            }
        };
        match check_rule_soundness_with(
            &def.name,
            &compiled.rewrite,
            std::slice::from_ref(&compiled.probe),
            &config,
            Some(lib),
        ) {
            Ok(_) => {
                rules.push(NamedRule { name: user_rule_name(&def.name), rewrite: compiled.rewrite })
            }
            Err(SoundnessError::Unsound(cx)) => {
                let mut d =
                    Diagnostic::error("E0702", format!("rewrite rule `{}` is unsound", def.name))
                        .at(def.span, "the two sides differ");
                for line in cx.to_string().lines() {
                    d = d.with_note(line.trim().to_string());
                }
                diags.push(d);
            }
            Err(other) => diags.push(
                Diagnostic::error(
                    "E0703",
                    format!("rewrite rule `{}` cannot be checked", def.name),
                )
                .at(def.lhs.span, "no dtype makes this well-typed")
                .with_note(other.to_string()),
            ),
        }
    }
    if diags.is_empty() {
        Ok(rules)
    } else {
        Err(diags)
    }
}
