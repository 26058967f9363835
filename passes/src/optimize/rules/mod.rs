//! The built-in rewrite rules: tables of [`RuleDef`]s, and their compilation to egg rewrites.
//!
//! Every rule is one table row: a kebab-case name, a left-hand pattern, a right-hand side
//! (a pattern or a [`Custom`] builder that computes attributes), the [`Cond`]itions the
//! analysis must establish, and *probes*: concrete instances (`?x` = a random input, `T` = the
//! dtype under test) on which the soundness test evaluates both sides with the interpreter.
//!
//! Rules are directional and none is an unbounded commutativity or associativity rule; the
//! only reordering is "constant operand to the right", which fires at most once per node.
//!
//! Architecture invariant: no rule changes a value's dtype or shape. Every application goes
//! through [`apply::union_checked`], which compares the analysis type of the right-hand side
//! with the matched e-class and refuses the union when they differ (a same-dtype right-hand
//! side that broadcasts to the class's shape is wrapped in `broadcast_to` instead, so
//! `x + zeros([2, 3])` with `x: [3]` becomes `broadcast_to(x, [2, 3])`, not `x`).
//!
//! Floating-point caveats (the soundness test compares with a tolerance and treats NaN = NaN):
//! - rounding: `div-by-sqrt`, `rsqrt-*`, `sum-of-*` reassociate or fuse roundings
//!   (within ~2 ulp per op, or n ulp for a sum of n copies, which becomes exact `c*n`);
//! - signed zero: `add-zero`, `zero-sub`, `neg-sub`, `fma-one-plus` may turn `-0.0` into `+0.0`
//!   or back;
//! - overflow: `log-exp` and `log1p-expm1` return `x` where `exp(x)` would overflow to `inf`
//!   (or underflow to 0). Rules may replace an overflowed intermediate by the mathematically
//!   exact value — that is the only way a rule turns a NaN into a number. There is no
//!   factoring (`a*b + a*c -> a*(b+c)`): with `a = 1e-30, b = c = 3e38` in f32 it turns
//!   `6e8` into `inf`, and `a = 0` into NaN (a hostile sweep found it);
//! - `pow-half`/`pow-neg-half` fire only where the analysis knows the base is not negative
//!   (positive for `pow-neg-half`): `pow(-inf, 0.5)` is `inf` where `sqrt` is NaN, and
//!   `pow(-0, -0.5)` is `+inf` where `rsqrt(-0)` is `-inf`.
//! - `fma-*` and `horner-*` ([`fma`]) round once where the original rounded twice, keep the
//!   exact product where `a*b` alone would overflow, and differ like `factor-*` where an
//!   infinite operand meets a zero one on one side only (`fma-one-plus` at `a = inf, t = 0`).
//!
//! No rule divides by multiplying with a reciprocal: `x * (1/y)` is infinite where `y` is
//! subnormal and `x / y` is not. The JIT divides element values by a row value that way itself,
//! scaled so the reciprocal stays a normal number (`tfn_backend`'s `RowReciprocal`).
//!
//! Apart from the overflow case, rules never turn NaN into a number: `x * 0` and `x - x` fold
//! to 0 only for integer dtypes (the analysis has no finiteness facts, and `inf * 0`,
//! `inf - inf`, `NaN * 0` are NaN).

pub mod algebra;
pub mod apply;
pub mod custom;
pub mod fma;
pub mod indexed;
pub mod layout;
pub mod scans;

use super::analysis::TfnAnalysis;
use super::language::TfnNode;
pub use apply::{union_checked, CondChecker};
use egg::{Pattern, Rewrite, Var};

/// The right-hand side of a rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rhs {
    /// An s-expression over the left-hand side's variables.
    Pattern(&'static str),
    /// A builder that needs the analysis (composed permutations, reciprocals, ...).
    Custom(Custom),
}

/// Right-hand sides computed from the match; see [`custom`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Custom {
    /// A constant of the matched class's dtype and shape with this value.
    Splat(f64),
    /// `transpose(transpose(?x, ?p), ?q)` -> `transpose(?x, p∘q)`.
    ComposePerms,
    /// `div(?x, ?c)` -> `mul(?x, 1/c)` (only used with [`Cond::PowerOfTwo`]).
    MulByReciprocal,
    /// A reduction of `broadcast_to(?x, ?s)` over broadcast axes only -> `?x` (times the
    /// count for `sum`), reshaped and broadcast to the result's shape.
    ReduceOfBroadcast,
    /// A reduction of a splat constant -> a splat (`c * n` for `sum`).
    ReduceOfSplat,
    /// An indexed read of an elementwise op -> the op of the reads of its operands (see
    /// [`indexed`]).
    IndexOfElementwise,
    /// `x + y*x` -> `x*(y + 1)` (see [`fma`]).
    FactorOut,
}

/// A side condition, checked on the analysis data of a pattern variable's e-class.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cond {
    /// The variable is a splat constant equal to the value (bools: 1.0 / 0.0).
    ConstEq(&'static str, f64),
    /// The variable is a splat constant.
    IsConst(&'static str),
    /// The variable is not known to be constant.
    NotConst(&'static str),
    /// Every element is positive (or NaN).
    Positive(&'static str),
    /// Every element is positive, a zero or NaN (never negative, never `-inf`).
    NonNegative(&'static str),
    /// The variable has an integer dtype.
    IntDType(&'static str),
    /// The variable has a compute float dtype, `f32` or `f64` (what `mul_add` takes).
    FloatDType(&'static str),
    /// Both variables are float splat constants whose product is a normal, finite number of
    /// their dtype ([`fma::is_normal_product`]).
    NormalProduct(&'static str, &'static str),
    /// Tensor `.0` broadcasts to the shape of tensor `.1` and has fewer elements: a lower rank,
    /// or size 1 on an axis where `.1` is not of constant size 1.
    BroadcastAlong(&'static str, &'static str),
    /// The variable is a constant `±2^k`, `|k| <= 60`, so its reciprocal is exact.
    PowerOfTwo(&'static str),
    /// `cast(?x, ?m)` loses nothing: `(x, m)` is a widening conversion.
    LosslessCast(&'static str, &'static str),
    /// The variable is an identity permutation.
    IdentityPerm(&'static str),
    /// Axis `.1` (an integer attribute) of the tensor or shape `.0` has the constant size 1.
    UnitAxis(&'static str, &'static str),
}

/// One row of a rule table.
#[derive(Clone, Copy, Debug)]
pub struct RuleDef {
    pub name: &'static str,
    pub lhs: &'static str,
    pub rhs: Rhs,
    pub conds: &'static [Cond],
    /// Instances for the soundness test; `T` stands for the dtype under test.
    pub probes: &'static [&'static str],
}

/// Table-row constructor, so tables read as aligned columns.
pub const fn rule(
    name: &'static str,
    lhs: &'static str,
    rhs: Rhs,
    conds: &'static [Cond],
    probes: &'static [&'static str],
) -> RuleDef {
    RuleDef { name, lhs, rhs, conds, probes }
}

/// The rewrite type of the optimiser.
pub type TfnRewrite = Rewrite<TfnNode, TfnAnalysis>;

/// Every built-in rule, in table order (the order of the report's `rules_fired`).
pub fn builtin_defs() -> Vec<&'static RuleDef> {
    [algebra::IDENTITIES, algebra::EXP_LOG, algebra::STRENGTH]
        .into_iter()
        .chain([fma::FMA, fma::HORNER])
        .chain([algebra::CANONICAL, layout::LAYOUT, layout::REDUCTIONS, indexed::INDEXED])
        .chain([scans::SCANS])
        .flat_map(|table| table.iter())
        .collect()
}

/// Why a built-in rule row does not compile (a bug in the table; tested).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("rule `{name}`: {message}")]
pub struct RuleDefError {
    pub name: String,
    pub message: String,
}

fn var(name: &str, rule: &str) -> Result<Var, RuleDefError> {
    name.parse()
        .map_err(|e| RuleDefError { name: rule.into(), message: format!("bad variable: {e:?}") })
}

/// Compiles one table row to an egg rewrite.
pub fn compile(def: &RuleDef) -> Result<TfnRewrite, RuleDefError> {
    let err = |message: String| RuleDefError { name: def.name.into(), message };
    let lhs: Pattern<TfnNode> = def.lhs.parse().map_err(|e| err(format!("lhs: {e}")))?;
    let conds = def
        .conds
        .iter()
        .map(|c| apply::CompiledCond::new(c, |n| var(n, def.name)))
        .collect::<Result<Vec<_>, _>>()?;
    let rhs = match def.rhs {
        Rhs::Pattern(text) => {
            let p: Pattern<TfnNode> = text.parse().map_err(|e| err(format!("rhs: {e}")))?;
            apply::CheckedRhs::Pattern(p.ast)
        }
        Rhs::Custom(c) => apply::CheckedRhs::Custom(custom::CustomApplier::new(c, def.lhs)?),
    };
    let applier = apply::CheckedApplier { conds: CondChecker(conds), rhs };
    Rewrite::new(def.name, lhs, applier).map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn every_builtin_rule_compiles_with_a_unique_kebab_case_name_and_a_probe() {
        let mut names = BTreeSet::new();
        for def in builtin_defs() {
            compile(def).unwrap_or_else(|e| panic!("{e}"));
            assert!(names.insert(def.name), "duplicate rule name `{}`", def.name);
            let kebab =
                def.name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
            assert!(kebab, "`{}` is not kebab-case", def.name);
            assert!(!def.probes.is_empty(), "rule `{}` has no probe", def.name);
        }
    }
}
