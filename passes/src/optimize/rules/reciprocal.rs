//! One reciprocal per row: `x / y` with `y` broadcast along axes of `x` (a row statistic such as
//! softmax's `sum(e, dims=[-1], keepdim=true)`) becomes `x * reciprocal(y)`. The reciprocal is
//! computed at `y`'s shape — once per row in the fused row kernel — and every element pays a
//! multiply instead of a division (`divps` is several times the throughput cost of `mulps`).
//! Extraction decides: the cost model prices the reciprocal at `y`'s (smaller) element count.
//!
//! Floating point: `x * (1/y)` rounds twice (within 1.5 ulp of `x / y`). Zeros, infinities and
//! NaNs of `y` give the same results (`1/±0 = ±inf`, `1/inf = 0`), except where `1/y` itself
//! overflows: `|y|` below `2⁻¹²⁸` (f32; `2⁻¹⁰²⁴` for f64), tiny subnormals, where `x / y` may
//! be finite and `x * (1/y)` is infinite. A constant `y` is left to `div-pow2-const` (exact
//! reciprocals only).

use super::Cond::*;
use super::Rhs::Pattern as P;
use super::{rule, RuleDef};

#[rustfmt::skip]
pub const RECIPROCAL: &[RuleDef] = &[
//       name               lhs              rhs                              conditions                                              probes
    rule("div-by-row",      "(div ?x ?y)",   P("(mul ?x (reciprocal ?y))"),   &[NotConst("?y"), BroadcastAlong("?y", "?x")],          &["(div (exp ?x) (sum (exp ?x) (list 1) true))", "(div ?x (add (exp ?y) (const T 1)))"]),
];
