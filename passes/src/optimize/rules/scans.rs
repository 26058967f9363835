//! Rules for the index and scan ops over an axis of size 1: an inclusive scan there is its
//! operand, an exclusive one the identity (0 for `cumsum`, 1 for `cumprod`), an `iota` along
//! it is 0, and an `argmax`/`argmin` over it is 0. (Sizes are symbols unless they are 1, so
//! size 1 is the only size a rule can see; such axes come from `keepdim` reductions and
//! `unsqueeze`.)

use super::Cond::*;
use super::Custom::*;
use super::Rhs::{Custom as C, Pattern as P};
use super::{rule, RuleDef};

#[rustfmt::skip]
pub const SCANS: &[RuleDef] = &[
//       name                       lhs                              rhs             conditions                     probes
    rule("cumsum-unit-axis",        "(cumsum ?x ?a false ?r)",       P("?x"),        &[UnitAxis("?x", "?a")],       &["(cumsum (reshape ?x (shape 6 1)) 1 false false)", "(cumsum (reshape ?x (shape 1 6)) 0 false true)"]),
    rule("cumprod-unit-axis",       "(cumprod ?x ?a false ?r)",      P("?x"),        &[UnitAxis("?x", "?a")],       &["(cumprod (reshape ?x (shape 2 1 3)) 1 false true)"]),
    rule("cumsum-exclusive-unit",   "(cumsum ?x ?a true ?r)",        C(Splat(0.0)),  &[UnitAxis("?x", "?a")],       &["(cumsum (reshape ?x (shape 6 1)) 1 true false)"]),
    rule("cumprod-exclusive-unit",  "(cumprod ?x ?a true ?r)",       C(Splat(1.0)),  &[UnitAxis("?x", "?a")],       &["(cumprod (reshape ?x (shape 1 6)) 0 true true)"]),
    rule("iota-unit-axis",          "(iota ?t ?a ?s)",               C(Splat(0.0)),  &[UnitAxis("?s", "?a")],       &["(add ?x (iota T 0 (shape 1 3)))", "(mul ?x (iota T 1 (shape 2 1 4)))"]),
    rule("argmax-unit-axis",        "(argmax ?x ?a ?k)",             C(Splat(0.0)),  &[UnitAxis("?x", "?a")],       &["(argmax (reshape ?x (shape 6 1)) 1 false)", "(argmax (reshape ?x (shape 2 1 3)) 1 true)"]),
    rule("argmin-unit-axis",        "(argmin ?x ?a ?k)",             C(Splat(0.0)),  &[UnitAxis("?x", "?a")],       &["(argmin (reshape ?x (shape 1 6)) 0 true)"]),
];
