//! Applying a rule: check its conditions on the analysis, build the right-hand side, and union
//! it with the matched e-class only if the types agree.

use super::custom::CustomApplier;
use super::{Cond, RuleDefError};
use crate::optimize::analysis::{AttrValue, ClassData, Sign, TfnAnalysis, TfnEGraph};
use crate::optimize::infer::broadcasts_to;
use crate::optimize::language::TfnNode;
use egg::{Applier, Id, PatternAst, Subst, Symbol, Var};
use tfn_ir::DType;

/// A [`Cond`] with its variables resolved.
#[derive(Clone, Debug)]
pub enum CompiledCond {
    ConstEq(Var, f64),
    IsConst(Var),
    NotConst(Var),
    Positive(Var),
    NonNegative(Var),
    IntDType(Var),
    FloatDType(Var),
    NormalProduct(Var, Var),
    BroadcastAlong(Var, Var),
    PowerOfTwo(Var),
    LosslessCast(Var, Var),
    IdentityPerm(Var),
    UnitAxis(Var, Var),
}

impl CompiledCond {
    pub fn new(
        cond: &Cond,
        var: impl Fn(&str) -> Result<Var, RuleDefError>,
    ) -> Result<CompiledCond, RuleDefError> {
        Ok(match *cond {
            Cond::ConstEq(v, c) => CompiledCond::ConstEq(var(v)?, c),
            Cond::IsConst(v) => CompiledCond::IsConst(var(v)?),
            Cond::NotConst(v) => CompiledCond::NotConst(var(v)?),
            Cond::Positive(v) => CompiledCond::Positive(var(v)?),
            Cond::NonNegative(v) => CompiledCond::NonNegative(var(v)?),
            Cond::IntDType(v) => CompiledCond::IntDType(var(v)?),
            Cond::FloatDType(v) => CompiledCond::FloatDType(var(v)?),
            Cond::NormalProduct(a, b) => CompiledCond::NormalProduct(var(a)?, var(b)?),
            Cond::BroadcastAlong(y, x) => CompiledCond::BroadcastAlong(var(y)?, var(x)?),
            Cond::PowerOfTwo(v) => CompiledCond::PowerOfTwo(var(v)?),
            Cond::LosslessCast(x, m) => CompiledCond::LosslessCast(var(x)?, var(m)?),
            Cond::IdentityPerm(v) => CompiledCond::IdentityPerm(var(v)?),
            Cond::UnitAxis(x, a) => CompiledCond::UnitAxis(var(x)?, var(a)?),
        })
    }

    fn holds(&self, egraph: &TfnEGraph, subst: &Subst) -> bool {
        let data = |v: &Var| -> Option<&ClassData> { subst.get(*v).map(|&id| &egraph[id].data) };
        match self {
            CompiledCond::ConstEq(v, c) => {
                data(v).and_then(ClassData::constant_f64).is_some_and(|k| k == *c)
            }
            CompiledCond::IsConst(v) => data(v).is_some_and(|d| d.constant.is_some()),
            CompiledCond::NotConst(v) => data(v).is_some_and(|d| d.constant.is_none()),
            CompiledCond::Positive(v) => data(v).is_some_and(|d| d.sign == Sign::Positive),
            CompiledCond::NonNegative(v) => data(v).is_some_and(|d| d.sign >= Sign::NonNegative),
            CompiledCond::IntDType(v) => {
                data(v).and_then(|d| d.ty.as_ref()).is_some_and(|t| t.dtype.is_int())
            }
            CompiledCond::FloatDType(v) => {
                let ty = data(v).and_then(|d| d.ty.as_ref());
                ty.is_some_and(|t| tfn_ir::DTypeSet::FLOAT.contains(t.dtype))
            }
            CompiledCond::NormalProduct(a, b) => {
                let (Some(a), Some(b)) = (data(a), data(b)) else { return false };
                let dtype = a.ty.as_ref().map(|t| t.dtype);
                match (a.constant_f64(), b.constant_f64(), dtype) {
                    (Some(x), Some(y), Some(d)) => super::fma::is_normal_product(x, y, d),
                    _ => false,
                }
            }
            CompiledCond::BroadcastAlong(y, x) => {
                let shape = |v| data(v).and_then(|d| d.ty.as_ref()).map(|t| &t.shape);
                let (Some(y), Some(x)) = (shape(y), shape(x)) else { return false };
                let one = tfn_ir::Dim::Const(1);
                let offset = x.rank().saturating_sub(y.rank());
                broadcasts_to(y, x)
                    && (y.rank() < x.rank()
                        || y.0.iter().zip(&x.0[offset..]).any(|(a, b)| *a == one && *b != one))
            }
            CompiledCond::PowerOfTwo(v) => {
                data(v).and_then(ClassData::constant_f64).is_some_and(is_exact_reciprocal)
            }
            CompiledCond::LosslessCast(x, m) => {
                let from = data(x).and_then(|d| d.ty.as_ref()).map(|t| t.dtype);
                let to = match data(m).and_then(|d| d.attr.as_ref()) {
                    Some(AttrValue::DType(d)) => Some(*d),
                    _ => None,
                };
                matches!((from, to), (Some(f), Some(t)) if is_lossless_cast(f, t))
            }
            CompiledCond::IdentityPerm(v) => match data(v).and_then(|d| d.attr.as_ref()) {
                Some(AttrValue::Ints(p)) => p.iter().enumerate().all(|(i, &a)| a == i as i64),
                _ => false,
            },
            CompiledCond::UnitAxis(x, a) => {
                let axis = match data(a).and_then(|d| d.attr.as_ref()) {
                    Some(AttrValue::Int(i)) => usize::try_from(*i).ok(),
                    _ => None,
                };
                let dims = data(x).and_then(|d| match (&d.ty, &d.attr) {
                    (Some(t), _) => Some(t.shape.0.clone()),
                    (None, Some(AttrValue::Dims(dims))) => Some(dims.clone()),
                    _ => None,
                });
                match (axis, dims) {
                    (Some(a), Some(dims)) => dims.get(a) == Some(&tfn_ir::Dim::Const(1)),
                    _ => false,
                }
            }
        }
    }
}

/// `c = ±2^k` with `|k| <= 60`: `x / c == x * (1/c)` exactly in f32 and f64.
pub fn is_exact_reciprocal(c: f64) -> bool {
    if c == 0.0 || !c.is_finite() {
        return false;
    }
    let (mantissa_bits, exponent) = (c.abs().to_bits() & ((1u64 << 52) - 1), c.abs().log2());
    mantissa_bits == 0 && exponent.abs() <= 60.0
}

/// Converting `from -> to` and back gives the original value for every input.
pub fn is_lossless_cast(from: DType, to: DType) -> bool {
    use DType::*;
    from == to
        || matches!((from, to), (F32, F64) | (I32, I64) | (I32, F64) | (Bool, _))
        // Storage dtypes widen exactly (`tfn_ir::storage`).
        || matches!((from, to), (F16 | BF16, F32 | F64) | (I8 | U8, I32 | I64 | F32 | F64))
}

/// All conditions of a rule.
#[derive(Clone, Debug, Default)]
pub struct CondChecker(pub Vec<CompiledCond>);

impl CondChecker {
    pub fn holds(&self, egraph: &TfnEGraph, subst: &Subst) -> bool {
        self.0.iter().all(|c| c.holds(egraph, subst))
    }
}

/// How the right-hand side is built.
#[derive(Clone, Debug)]
pub enum CheckedRhs {
    Pattern(PatternAst<TfnNode>),
    Custom(CustomApplier),
}

/// The applier of every built-in rule: conditions, right-hand side, type check, union.
#[derive(Clone, Debug)]
pub struct CheckedApplier {
    pub conds: CondChecker,
    pub rhs: CheckedRhs,
}

impl Applier<TfnNode, TfnAnalysis> for CheckedApplier {
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
        let candidate = match &self.rhs {
            CheckedRhs::Pattern(ast) => Some(egraph.add_instantiation(ast, subst)),
            CheckedRhs::Custom(c) => c.build(egraph, eclass, subst),
        };
        candidate.and_then(|id| union_checked(egraph, eclass, id)).into_iter().collect()
    }
}

/// Unions `candidate` into `eclass` if it has the same type (or the same dtype and a shape
/// that broadcasts to the class's, then through `broadcast_to`). Returns the id merged, if
/// the union changed anything.
pub fn union_checked(egraph: &mut TfnEGraph, eclass: Id, candidate: Id) -> Option<Id> {
    let want = egraph[eclass].data.ty.clone()?;
    let got = egraph[candidate].data.ty.clone()?;
    let id = if got == want {
        candidate
    } else if got.dtype == want.dtype && broadcasts_to(&got.shape, &want.shape) {
        let shape = crate::optimize::analysis::add_shape(egraph, &want.shape);
        egraph.add(TfnNode::BroadcastTo([candidate, shape]))
    } else {
        return None;
    };
    egraph.union(eclass, id).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reciprocals_of_powers_of_two_only() {
        for c in [1.0, 2.0, 0.25, -8.0, 1024.0] {
            assert!(is_exact_reciprocal(c), "{c}");
        }
        for c in [0.0, 3.0, 0.1, f64::INFINITY, f64::NAN, 2f64.powi(80)] {
            assert!(!is_exact_reciprocal(c), "{c}");
        }
    }
}
