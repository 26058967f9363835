//! Layout and reduction rule tables: transpose/reshape/broadcast cancellation, cast elision,
//! reductions of broadcasts and of constants.
//!
//! The identity rules here (`reshape-identity`, `cast-identity`, ...) have a bare `?x` on the
//! right: the type check of [`super::apply::union_checked`] is what restricts them to the case
//! where nothing changes (same shape, same dtype).

use super::Cond::*;
use super::Custom::*;
use super::Rhs::{Custom as C, Pattern as P};
use super::{rule, RuleDef};

#[rustfmt::skip]
pub const LAYOUT: &[RuleDef] = &[
//       name                   lhs                                        rhs                         conditions                        probes
    rule("transpose-transpose", "(transpose (transpose ?x ?p) ?q)",        C(ComposePerms),            &[],                              &["(transpose (transpose ?x (list 1 0)) (list 1 0))", "(transpose (transpose ?x (list 1 2 0)) (list 0 2 1))"]),
    rule("transpose-identity",  "(transpose ?x ?p)",                       P("?x"),                    &[IdentityPerm("?p")],            &["(transpose ?x (list 0 1))"]),
    rule("reshape-reshape",     "(reshape (reshape ?x ?s) ?t)",            P("(reshape ?x ?t)"),       &[],                              &["(reshape (reshape ?x (shape 6)) (shape 3 2))"]),
    rule("reshape-identity",    "(reshape ?x ?s)",                         P("?x"),                    &[],                              &["(reshape ?x (shape 2 3))"]),
    rule("broadcast-broadcast", "(broadcast_to (broadcast_to ?x ?s) ?t)",  P("(broadcast_to ?x ?t)"),  &[],                              &["(broadcast_to (broadcast_to ?x (shape 2 3)) (shape 4 2 3))"]),
    rule("broadcast-identity",  "(broadcast_to ?x ?s)",                    P("?x"),                    &[],                              &["(broadcast_to ?x (shape 2 3))"]),
    rule("cast-identity",       "(cast ?t ?x)",                            P("?x"),                    &[],                              &["(cast T ?x)"]),
    rule("cast-cast-lossless",  "(cast ?t (cast ?m ?x))",                  P("?x"),                    &[LosslessCast("?x", "?m")],      &["(cast T (cast f64 ?x))", "(cast T (cast i64 ?x))"]),
];

#[rustfmt::skip]
pub const REDUCTIONS: &[RuleDef] = &[
//       name                   lhs                                        rhs                         conditions                        probes
    rule("sum-of-broadcast",    "(sum (broadcast_to ?x ?s) ?axes ?k)",     C(ReduceOfBroadcast),       &[],                              &["(sum (broadcast_to ?x (shape 4 2 3)) (list 0) false)", "(sum (broadcast_to ?x (shape 2 3)) (list 0 1) true)"]),
    rule("mean-of-broadcast",   "(mean (broadcast_to ?x ?s) ?axes ?k)",    C(ReduceOfBroadcast),       &[],                              &["(mean (broadcast_to ?x (shape 4 2 3)) (list 0) true)"]),
    rule("max-of-broadcast",    "(max (broadcast_to ?x ?s) ?axes ?k)",     C(ReduceOfBroadcast),       &[],                              &["(max (broadcast_to ?x (shape 4 2 3)) (list 0) false)"]),
    rule("min-of-broadcast",    "(min (broadcast_to ?x ?s) ?axes ?k)",     C(ReduceOfBroadcast),       &[],                              &["(min (broadcast_to ?x (shape 4 2 3)) (list 0) false)"]),
    rule("sum-of-splat",        "(sum ?x ?axes ?k)",                       C(ReduceOfSplat),           &[IsConst("?x")],                 &["(sum (full T 0.5 (shape 4 3)) (list 1) false)", "(sum (full T 2 (shape 4 3)) (list 0 1) true)"]),
];
