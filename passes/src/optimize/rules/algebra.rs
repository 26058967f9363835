//! Algebraic rule tables: identities, exp/log, strength reduction, factoring, canonical forms.
//!
//! See the module docs of [`super`] for the caveats each family carries.

use super::Cond::*;
use super::Custom::*;
use super::Rhs::{Custom as C, Pattern as P};
use super::{rule, RuleDef};

#[rustfmt::skip]
pub const IDENTITIES: &[RuleDef] = &[
//       name               lhs                              rhs                 conditions                              probes
    rule("add-zero",        "(add ?x ?z)",                   P("?x"),            &[ConstEq("?z", 0.0)],                  &["(add ?x (const T 0))", "(add ?x (full T 0 (shape 2 3)))"]),
    rule("zero-add",        "(add ?z ?x)",                   P("?x"),            &[ConstEq("?z", 0.0)],                  &["(add (const T 0) ?x)"]),
    rule("sub-zero",        "(sub ?x ?z)",                   P("?x"),            &[ConstEq("?z", 0.0)],                  &["(sub ?x (const T 0))"]),
    rule("zero-sub",        "(sub ?z ?x)",                   P("(neg ?x)"),      &[ConstEq("?z", 0.0)],                  &["(sub (const T 0) ?x)"]),
    rule("mul-one",         "(mul ?x ?o)",                   P("?x"),            &[ConstEq("?o", 1.0)],                  &["(mul ?x (const T 1))"]),
    rule("one-mul",         "(mul ?o ?x)",                   P("?x"),            &[ConstEq("?o", 1.0)],                  &["(mul (const T 1) ?x)"]),
    rule("div-one",         "(div ?x ?o)",                   P("?x"),            &[ConstEq("?o", 1.0)],                  &["(div ?x (const T 1))"]),
    rule("mul-neg-one",     "(mul ?x ?m)",                   P("(neg ?x)"),      &[ConstEq("?m", -1.0)],                 &["(mul ?x (const T -1))"]),
    rule("neg-neg",         "(neg (neg ?x))",                P("?x"),            &[],                                    &["(neg (neg ?x))"]),
    rule("sub-self-int",    "(sub ?x ?x)",                   C(Splat(0.0)),      &[IntDType("?x")],                      &["(sub ?x ?x)"]),
    rule("mul-zero-int",    "(mul ?x ?z)",                   C(Splat(0.0)),      &[ConstEq("?z", 0.0), IntDType("?x")],  &["(mul ?x (const T 0))"]),
    rule("zero-mul-int",    "(mul ?z ?x)",                   C(Splat(0.0)),      &[ConstEq("?z", 0.0), IntDType("?x")],  &["(mul (const T 0) ?x)"]),
    rule("sub-neg",         "(sub ?x (neg ?y))",             P("(add ?x ?y)"),   &[],                                    &["(sub ?x (neg ?y))"]),
    rule("add-neg",         "(add ?x (neg ?y))",             P("(sub ?x ?y)"),   &[],                                    &["(add ?x (neg ?y))"]),
    rule("neg-sub",         "(neg (sub ?x ?y))",             P("(sub ?y ?x)"),   &[],                                    &["(neg (sub ?x ?y))"]),
    rule("mul-neg-neg",     "(mul (neg ?x) (neg ?y))",       P("(mul ?x ?y)"),   &[],                                    &["(mul (neg ?x) (neg ?y))"]),
    rule("abs-neg",         "(abs (neg ?x))",                P("(abs ?x)"),      &[],                                    &["(abs (neg ?x))"]),
    rule("abs-abs",         "(abs (abs ?x))",                P("(abs ?x)"),      &[],                                    &["(abs (abs ?x))"]),
    rule("cosh-neg",        "(cosh (neg ?x))",               P("(cosh ?x)"),     &[],                                    &["(cosh (neg ?x))"]),
    rule("cosh-abs",        "(cosh (abs ?x))",               P("(cosh ?x)"),     &[],                                    &["(cosh (abs ?x))"]),
    rule("max-idempotent",  "(maximum (maximum ?x ?y) ?y)",  P("(maximum ?x ?y)"), &[],                                  &["(maximum (maximum ?x ?y) ?y)"]),
    rule("min-idempotent",  "(minimum (minimum ?x ?y) ?y)",  P("(minimum ?x ?y)"), &[],                                  &["(minimum (minimum ?x ?y) ?y)"]),
    rule("not-not",         "(logical_not (logical_not ?b))", P("?b"),           &[],                                    &["(logical_not (logical_not (lt ?x ?y)))"]),
    rule("bitwise-not-not", "(bitwise_not (bitwise_not ?x))", P("?x"),           &[],                                    &["(bitwise_not (bitwise_not ?x))"]),
    rule("where-true",      "(where ?c ?a ?b)",              P("?a"),            &[ConstEq("?c", 1.0)],                  &["(where (const bool true) ?x ?y)"]),
    rule("where-false",     "(where ?c ?a ?b)",              P("?b"),            &[ConstEq("?c", 0.0)],                  &["(where (full bool false (shape 2 3)) ?x ?y)"]),
    rule("where-same",      "(where ?c ?a ?a)",              P("?a"),            &[],                                    &["(where (lt ?y ?x) ?x ?x)"]),
];

#[rustfmt::skip]
pub const EXP_LOG: &[RuleDef] = &[
//       name               lhs                              rhs                 conditions                              probes
    rule("log-exp",         "(log (exp ?x))",                P("?x"),            &[],                                    &["(log (exp ?x))"]),
    rule("exp-log",         "(exp (log ?x))",                P("?x"),            &[Positive("?x")],                      &["(exp (log (add (exp ?x) (const T 0.5))))"]),
    rule("log1p-expm1",     "(log1p (expm1 ?x))",            P("?x"),            &[],                                    &["(log1p (expm1 ?x))"]),
    rule("recip-sqrt",      "(reciprocal (sqrt ?x))",        P("(rsqrt ?x)"),    &[],                                    &["(reciprocal (sqrt ?x))"]),
    rule("one-div-sqrt",    "(div ?o (sqrt ?x))",            P("(rsqrt ?x)"),    &[ConstEq("?o", 1.0)],                  &["(div (const T 1) (sqrt ?x))"]),
    rule("div-by-sqrt",     "(div ?x (sqrt ?y))",            P("(mul ?x (rsqrt ?y))"), &[NotConst("?x")],                &["(div ?x (sqrt ?y))"]),
    rule("one-div",         "(div ?o ?x)",                   P("(reciprocal ?x)"), &[ConstEq("?o", 1.0)],                &["(div (const T 1) ?x)"]),
];

#[rustfmt::skip]
pub const STRENGTH: &[RuleDef] = &[
//       name               lhs                              rhs                 conditions                              probes
    rule("pow-two",         "(pow ?x ?c)",                   P("(mul ?x ?x)"),   &[ConstEq("?c", 2.0)],                  &["(pow ?x (const T 2))"]),
    rule("pow-one",         "(pow ?x ?c)",                   P("?x"),            &[ConstEq("?c", 1.0)],                  &["(pow ?x (const T 1))"]),
    rule("pow-zero",        "(pow ?x ?c)",                   C(Splat(1.0)),      &[ConstEq("?c", 0.0)],                  &["(pow ?x (const T 0))"]),
    rule("pow-half",        "(pow ?x ?c)",                   P("(sqrt ?x)"),     &[ConstEq("?c", 0.5), NonNegative("?x")], &["(pow (mul ?x ?x) (const T 0.5))", "(pow (exp ?x) (const T 0.5))"]),
    rule("pow-neg-one",     "(pow ?x ?c)",                   P("(reciprocal ?x)"), &[ConstEq("?c", -1.0)],               &["(pow ?x (const T -1))"]),
    rule("pow-neg-half",    "(pow ?x ?c)",                   P("(rsqrt ?x)"),    &[ConstEq("?c", -0.5), Positive("?x")], &["(pow (add (exp ?x) (const T 0.5)) (const T -0.5))"]),
    rule("div-pow2-const",  "(div ?x ?c)",                   C(MulByReciprocal), &[PowerOfTwo("?c")],                    &["(div ?x (const T 4))", "(div ?x (const T -0.5))"]),
];

/// Constants to the right of commutative ops, so later rules and fusion see one form.
#[rustfmt::skip]
pub const CANONICAL: &[RuleDef] = &[
//       name               lhs                        rhs                    conditions                          probes
    rule("add-const-right", "(add ?c ?x)",             P("(add ?x ?c)"),      &[IsConst("?c"), NotConst("?x")],   &["(add (const T 3) ?x)"]),
    rule("mul-const-right", "(mul ?c ?x)",             P("(mul ?x ?c)"),      &[IsConst("?c"), NotConst("?x")],   &["(mul (const T 3) ?x)"]),
    rule("max-const-right", "(maximum ?c ?x)",         P("(maximum ?x ?c)"),  &[IsConst("?c"), NotConst("?x")],   &["(maximum (const T 0) ?x)"]),
    rule("min-const-right", "(minimum ?c ?x)",         P("(minimum ?x ?c)"),  &[IsConst("?c"), NotConst("?x")],   &["(minimum (const T 0) ?x)"]),
];
