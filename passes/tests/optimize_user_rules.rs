//! User `rewrite` rules: sound ones compile and fire, unsound ones are rejected with a
//! counterexample at the rule's span, unsupported constructs get a diagnostic.

use crate::optimize_common;

use optimize_common::{assert_same_results, parse};
use tfn_ir::library::{Arg, Expr, ExprKind, RewriteDef};
use tfn_ir::{Attr, FileId, Library, Span};
use tfn_passes::optimize::{optimize, Limits, RuleSet};

fn span(start: usize, end: usize) -> Span {
    Span::new(FileId(0), start, end)
}

fn var(name: &str) -> Expr {
    Expr { kind: ExprKind::PatVar(name.into()), span: span(0, 1) }
}

fn float(v: f64) -> Expr {
    Expr { kind: ExprKind::Literal(Attr::Float(v)), span: span(0, 1) }
}

fn call(callee: &str, args: Vec<Expr>) -> Expr {
    let args = args.into_iter().map(|value| Arg { keyword: None, value }).collect();
    Expr {
        kind: ExprKind::Call {
            callee: callee.into(),
            overload: None,
            callee_span: span(2, 5),
            args,
        },
        span: span(0, 10),
    }
}

fn library(rules: Vec<(&str, Expr, Expr)>) -> Library {
    let mut lib = Library::default();
    lib.sources.add("rules.tfn", "rewrite r: ?x => ?x\n");
    lib.rewrites = rules
        .into_iter()
        .enumerate()
        .map(|(i, (name, lhs, rhs))| RewriteDef {
            name: name.into(),
            lhs,
            rhs,
            span: span(i, i + 5),
        })
        .collect();
    lib
}

#[test]
fn sound_user_rules_compile_and_fire() {
    // exp(a) * exp(b) => exp(a + b), and a rule with literals on both sides.
    let lib = library(vec![
        (
            "exp-mul",
            call("mul", vec![call("exp", vec![var("a")]), call("exp", vec![var("b")])]),
            call("exp", vec![call("add", vec![var("a"), var("b")])]),
        ),
        ("twice", call("add", vec![var("x"), var("x")]), call("mul", vec![var("x"), float(2.0)])),
    ]);
    let rules = RuleSet::with_user(&lib).unwrap_or_else(|d| panic!("{d:?}"));
    let graph = parse(
        "func f(x: f32[s0], y: f32[s0]) -> (f32[s0]) {
  sym s0 = input(param 0 axis 0, param 1 axis 0)
  %0 = param 0 : f32[s0]
  %1 = param 1 : f32[s0]
  %2 = exp %0 : f32[s0]
  %3 = exp %1 : f32[s0]
  %4 = mul %2, %3 : f32[s0]
  %5 = add %4, %4 : f32[s0]
  return %5
}",
    );
    let out = optimize(&graph, &rules, &Limits::default()).unwrap_or_else(|e| panic!("{e}"));
    tfn_ir::verify(&out.graph).unwrap_or_else(|e| panic!("{e}"));
    let fired: Vec<&str> = out.report.rules_fired.iter().map(|(n, _)| n.as_str()).collect();
    // User rules run in their own namespace.
    assert!(fired.contains(&"user:exp-mul") && fired.contains(&"user:twice"), "{fired:?}");
    let exps = out.graph.nodes.iter().filter(|n| n.op.name() == "exp").count();
    assert_eq!(exps, 1, "{}", tfn_ir::print_graph(&out.graph));
    assert_same_results(&graph, &out.graph, 5);
}

#[test]
fn unsound_user_rules_are_rejected_with_a_counterexample() {
    let lib = library(vec![
        ("bad-sqrt", call("sqrt", vec![call("mul", vec![var("x"), var("x")])]), var("x")),
        ("bad-exp-log", call("exp", vec![call("log", vec![var("x")])]), var("x")),
    ]);
    let diags = RuleSet::with_user(&lib).err().unwrap_or_default();
    assert_eq!(diags.len(), 2, "{diags:?}");
    for (d, start) in diags.iter().zip([0u32, 1]) {
        assert_eq!(d.code, "E0702");
        assert_eq!(d.primary.as_ref().map(|l| l.span.start), Some(start));
        assert!(d.notes.iter().any(|n| n.contains("left-hand side gives")), "{d:?}");
        assert!(d.notes.iter().any(|n| n.contains("with ?x")), "{d:?}");
    }
}

#[test]
fn unsupported_constructs_and_unbound_variables_are_diagnosed() {
    let lib = library(vec![
        ("uses-sum", call("sum", vec![var("x")]), var("x")),
        ("unbound", call("neg", vec![var("x")]), var("y")),
        ("bare", var("x"), var("x")),
    ]);
    let diags = RuleSet::with_user(&lib).err().unwrap_or_default();
    let codes: Vec<&str> = diags.iter().map(|d| d.code).collect();
    assert_eq!(codes, ["E0701", "E0704", "E0701"], "{diags:?}");
}
