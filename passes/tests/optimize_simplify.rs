//! Targeted simplifications: each case is an IR graph and the IR text the built-in rules must
//! turn it into (origins left out). Every case is also run with the interpreter before and
//! after, and the result must pass the verifier.

use crate::optimize_common;

use optimize_common::{assert_same_results, optimize_builtin, parse};

const HEADER_F32: &str = "func f(x: f32[s0, s1]) -> (f32[s0, s1]) {\n  sym s0 = input(param 0 axis 0)\n  sym s1 = input(param 0 axis 1)\n  %0 = param 0 : f32[s0, s1]\n";

/// (name, body lines after `%0 = param 0`, expected body of the optimised graph).
const CASES: &[(&str, &str, &str)] = &[
    ("log-exp", "%1 = exp %0 : f32[s0, s1]\n%2 = log %1 : f32[s0, s1]\nreturn %2",
     "return %0"),
    ("mul-one", "%1 = const 1.0 : f32[]\n%2 = mul %0, %1 : f32[s0, s1]\nreturn %2",
     "return %0"),
    ("add-zero", "%1 = const 0.0 : f32[]\n%2 = add %0, %1 : f32[s0, s1]\nreturn %2",
     "return %0"),
    ("neg-neg", "%1 = neg %0 : f32[s0, s1]\n%2 = neg %1 : f32[s0, s1]\nreturn %2",
     "return %0"),
    ("transpose-transpose", "%1 = transpose %0 {perm=[1, 0]} : f32[s1, s0]\n%2 = transpose %1 {perm=[1, 0]} : f32[s0, s1]\nreturn %2",
     "return %0"),
    ("pow-two", "%1 = const 2.0 : f32[]\n%2 = pow %0, %1 : f32[s0, s1]\nreturn %2",
     "%1 = mul %0, %0 : f32[s0, s1]\nreturn %1"),
    ("div-pow2", "%1 = const 4.0 : f32[]\n%2 = div %0, %1 : f32[s0, s1]\nreturn %2",
     "%1 = const 0.25 : f32[]\n%2 = mul %0, %1 : f32[s0, s1]\nreturn %2"),
    ("rsqrt", "%1 = sqrt %0 : f32[s0, s1]\n%2 = const 1.0 : f32[]\n%3 = div %2, %1 : f32[s0, s1]\nreturn %3",
     "%1 = rsqrt %0 : f32[s0, s1]\nreturn %1"),
    // Not factored (`a*(b + c)` overflows where `a*b + a*c` may not): an FMA.
    ("no-factoring", "%1 = mul %0, %0 : f32[s0, s1]\n%2 = exp %0 : f32[s0, s1]\n%3 = mul %0, %2 : f32[s0, s1]\n%4 = add %1, %3 : f32[s0, s1]\nreturn %4",
     "%1 = exp %0 : f32[s0, s1]\n%2 = mul %0, %1 : f32[s0, s1]\n%3 = mul_add %0, %0, %2 : f32[s0, s1]\nreturn %3"),
    ("fold-consts", "%1 = const 2.0 : f32[]\n%2 = const 3.0 : f32[]\n%3 = mul %1, %2 : f32[]\n%4 = mul %3, %0 : f32[s0, s1]\nreturn %4",
     "%1 = const 6.0 : f32[]\n%2 = mul %0, %1 : f32[s0, s1]\nreturn %2"),
    ("exp-log-positive", "%1 = exp %0 : f32[s0, s1]\n%2 = const 1.0 : f32[]\n%3 = add %1, %2 : f32[s0, s1]\n%4 = log %3 : f32[s0, s1]\n%5 = exp %4 : f32[s0, s1]\nreturn %5",
     "%1 = exp %0 : f32[s0, s1]\n%2 = const 1.0 : f32[]\n%3 = add %1, %2 : f32[s0, s1]\nreturn %3"),
    ("exp-log-unknown-sign-stays", "%1 = log %0 : f32[s0, s1]\n%2 = exp %1 : f32[s0, s1]\nreturn %2",
     "%1 = log %0 : f32[s0, s1]\n%2 = exp %1 : f32[s0, s1]\nreturn %2"),
    ("mul-zero-float-stays", "%1 = const 0.0 : f32[]\n%2 = mul %0, %1 : f32[s0, s1]\nreturn %2",
     "%1 = const 0.0 : f32[]\n%2 = mul %0, %1 : f32[s0, s1]\nreturn %2"),
    ("where-true", "%1 = const true : bool[]\n%2 = neg %0 : f32[s0, s1]\n%3 = where %1, %0, %2 : f32[s0, s1]\nreturn %3",
     "return %0"),
    ("cast-same", "%1 = cast %0 {to=f32} : f32[s0, s1]\nreturn %1",
     "return %0"),
    ("cast-roundtrip", "%1 = cast %0 {to=f64} : f64[s0, s1]\n%2 = cast %1 {to=f32} : f32[s0, s1]\nreturn %2",
     "return %0"),
    // Fused multiply-adds (rules/fma.rs): `x*e + x` is one FMA; gelu's inner polynomial
    // `c1*(x + k*x*x*x)` is `x * mul_add(x*(k*c1), x, c1)`; `h*(t + 1)` is `mul_add(h, t, h)`;
    // `x*y - 2` is `mul_add(x, y, -2)` (the negation folds).
    ("fma-mul-add", "%1 = exp %0 : f32[s0, s1]\n%2 = mul %0, %1 : f32[s0, s1]\n%3 = add %2, %0 : f32[s0, s1]\nreturn %3",
     "%1 = exp %0 : f32[s0, s1]\n%2 = mul_add %0, %1, %0 : f32[s0, s1]\nreturn %2"),
    ("horner-gelu", "%1 = const 0.044715 : f32[]\n%2 = mul %1, %0 : f32[s0, s1]\n%3 = mul %2, %0 : f32[s0, s1]\n%4 = mul %3, %0 : f32[s0, s1]\n%5 = add %0, %4 : f32[s0, s1]\n%6 = const 0.7978846 : f32[]\n%7 = mul %6, %5 : f32[s0, s1]\nreturn %7",
     "%1 = const 0.035677406936883926 : f32[]\n%2 = mul %0, %1 : f32[s0, s1]\n%3 = const 0.7978845834732056 : f32[]\n%4 = mul_add %2, %0, %3 : f32[s0, s1]\n%5 = mul %0, %4 : f32[s0, s1]\nreturn %5"),
    ("fma-one-plus", "%1 = tanh %0 : f32[s0, s1]\n%2 = const 1.0 : f32[]\n%3 = add %2, %1 : f32[s0, s1]\n%4 = const 0.5 : f32[]\n%5 = mul %4, %0 : f32[s0, s1]\n%6 = mul %5, %3 : f32[s0, s1]\nreturn %6",
     "%1 = const 0.5 : f32[]\n%2 = mul %0, %1 : f32[s0, s1]\n%3 = tanh %0 : f32[s0, s1]\n%4 = mul_add %2, %3, %2 : f32[s0, s1]\nreturn %4"),
    ("fma-sub-const", "%1 = exp %0 : f32[s0, s1]\n%2 = mul %0, %1 : f32[s0, s1]\n%3 = const 2.0 : f32[]\n%4 = sub %2, %3 : f32[s0, s1]\nreturn %4",
     "%1 = exp %0 : f32[s0, s1]\n%2 = const -2.0 : f32[]\n%3 = mul_add %0, %1, %2 : f32[s0, s1]\nreturn %3"),
    ("reshape-reshape", "%1 = reshape %0 : f32[s1, s0]\n%2 = reshape %1 : f32[s0, s1]\nreturn %2",
     "return %0"),
];

fn graph_text(body: &str) -> String {
    let body: String = body.lines().map(|l| format!("  {l}\n")).collect();
    format!("{HEADER_F32}{body}}}\n")
}

/// The lines after the header and `%0 = param 0`, without the closing brace, unindented.
fn body_of(printed: &str) -> String {
    let lines: Vec<&str> = printed.lines().map(str::trim).collect();
    let end = lines.len().saturating_sub(1);
    lines.get(4..end).unwrap_or_default().join("\n")
}

#[test]
fn builtin_rules_simplify_targeted_cases() {
    let mut failures = Vec::new();
    for (i, (name, body, expected)) in CASES.iter().enumerate() {
        let before = parse(&graph_text(body));
        let out = optimize_builtin(&before);
        let printed = tfn_ir::text::print_graph_without_origins(&out.graph);
        let got = body_of(&printed);
        if got != *expected {
            failures.push(format!("case `{name}`:\n--- expected\n{expected}\n--- got\n{got}"));
        }
        assert_same_results(&before, &out.graph, i as u64);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
