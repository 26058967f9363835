//! Fewer instructions: fused multiply-adds, Horner forms and constant scaling.
//!
//! [`FMA`] turns `a*b + c`, `c + a*b`, `a*b - c`, `c - a*b` into `mul_add` (one `vfmadd`,
//! `vfmsub` or `vfnmadd` instead of a multiply and an add; the negations fold into the FMA in
//! Cranelift's lowering, or into constants), `a*(t + 1)` into `mul_add(a, t, a)`, and scales an
//! FMA by a constant inside it when the addend is constant (`c*fma(a, b, d) = fma(a*c, b, d*c)`,
//! where `d*c` folds). [`HORNER`] factors `x + y*x` into `x*(y + 1)` (then an FMA:
//! `x + k*x*x*x` becomes `x * mul_add(k*x, x, 1)`) and folds constant factors of a product
//! (`(x*c1)*c2 -> x*(c1*c2)`, only when `c1*c2` is a normal number of the dtype).
//!
//! Together they give gelu's `c1*(x + k*x³)` as `x * mul_add(x*(k*c1), x, c1)` (3 vector
//! instructions instead of 5) and `0.5*x*(1 + t)` as `mul_add(0.5*x, t, 0.5*x)` (2 instead of
//! 3). Extraction chooses: `mul_add` costs less than a multiply plus an add
//! ([`crate::optimize::cost::MUL_ADD_WEIGHT`]).
//!
//! Floating point (see also the caveats of [`super`]): every rule is exact in real arithmetic;
//! `mul_add` rounds once where the original rounded twice (within the JIT/interpreter
//! tolerances, and the backends agree bit for bit on the result). A NaN operand gives NaN on
//! both sides. Like `factor-*`, the rules differ only where a product overflows (`mul_add` keeps
//! the exact product: `a*b + c` with `a*b` overflowing to `inf` and `c = -inf` is NaN, the
//! FMA `-inf`) or where an infinite operand meets a zero one on one side only:
//! `fma-one-plus` at `a = ±inf, t = 0` (`inf*(0+1) = inf`, `fma(inf, 0, inf)` NaN) and
//! `horner-factor-*` at `x = ±inf, y = 0` (`inf + 0*inf` NaN, `inf*(0+1) = inf`). Signed zeros
//! may change like `add-zero`'s: `a*(1 + t)` with `t = -1` or `a = -0` is `-0` where
//! `mul_add(a, t, a)` is `+0` (gelu of `-0` and of large negative `x`).

use super::Cond::*;
use super::Custom::*;
use super::Rhs::{Custom as C, Pattern as P};
use super::{rule, RuleDef};
use crate::optimize::analysis::{add_constant, TfnEGraph};
use crate::optimize::fold::scalar_of_dtype;
use crate::optimize::language::TfnNode;
use egg::{Id, Subst, Var};
use tfn_ir::{BinaryOp, Scalar, Shape, TensorType};

#[rustfmt::skip]
pub const FMA: &[RuleDef] = &[
//       name               lhs                                    rhs                                              conditions                                  probes
    rule("fma-mul-add",     "(add (mul ?a ?b) ?c)",                P("(mul_add ?a ?b ?c)"),                         &[FloatDType("?c")],                        &["(add (mul ?x ?y) ?z)", "(add (mul ?x (const T 3)) ?y)"]),
    rule("fma-add-mul",     "(add ?c (mul ?a ?b))",                P("(mul_add ?a ?b ?c)"),                         &[FloatDType("?c")],                        &["(add ?z (mul ?x ?y))"]),
    rule("fma-mul-sub",     "(sub (mul ?a ?b) ?c)",                P("(mul_add ?a ?b (neg ?c))"),                   &[FloatDType("?c")],                        &["(sub (mul ?x ?y) ?z)"]),
    rule("fma-sub-mul",     "(sub ?c (mul ?a ?b))",                P("(mul_add (neg ?a) ?b ?c)"),                   &[FloatDType("?c")],                        &["(sub ?z (mul ?x ?y))"]),
    rule("fma-one-plus",    "(mul ?a (add ?t ?o))",                P("(mul_add ?a ?t ?a)"),                         &[ConstEq("?o", 1.0), FloatDType("?a")],    &["(mul ?x (add ?y (const T 1)))"]),
    rule("fma-plus-one",    "(mul (add ?t ?o) ?a)",                P("(mul_add ?a ?t ?a)"),                         &[ConstEq("?o", 1.0), FloatDType("?a")],    &["(mul (add ?y (const T 1)) ?x)"]),
    rule("fma-scale",       "(mul (mul_add ?a ?b ?d) ?c)",         P("(mul_add (mul ?a ?c) ?b (mul ?d ?c))"),       &[IsConst("?c"), IsConst("?d")],            &["(mul (mul_add ?x ?y (const T 0.5)) (const T 3))"]),
    rule("fma-scale-factor","(mul (mul ?x (mul_add ?a ?b ?d)) ?c)",P("(mul ?x (mul_add (mul ?a ?c) ?b (mul ?d ?c)))"), &[IsConst("?c"), IsConst("?d")],         &["(mul (mul ?z (mul_add ?x ?y (const T 0.5))) (const T 3))"]),
];

#[rustfmt::skip]
pub const HORNER: &[RuleDef] = &[
//       name                  lhs                         rhs               conditions                                                      probes
    rule("horner-factor-left", "(add ?x (mul ?y ?x))",     C(FactorOut),     &[FloatDType("?x"), NotConst("?x")],                            &["(add ?x (mul (mul ?x ?y) ?x))", "(add ?x (mul ?y ?x))"]),
    rule("horner-factor-right","(add (mul ?y ?x) ?x)",     C(FactorOut),     &[FloatDType("?x"), NotConst("?x")],                            &["(add (mul (mul ?x ?y) ?x) ?x)"]),
    rule("mul-const-fold",     "(mul (mul ?x ?c1) ?c2)",   P("(mul ?x (mul ?c1 ?c2))"), &[NotConst("?x"), NormalProduct("?c1", "?c2")],         &["(mul (mul ?x (const T 3)) (const T 0.25))", "(mul (mul ?x (const T 0.7978845608)) (const T 0.044715))"]),
];

fn v(name: &str) -> Option<Var> {
    name.parse().ok()
}

/// `x*(y + 1)` for a match of `x + y*x` (the `1` a rank-0 constant of `x`'s dtype).
pub(crate) fn factor_out(egraph: &mut TfnEGraph, subst: &Subst) -> Option<Id> {
    let (x, y) = (*subst.get(v("?x")?)?, *subst.get(v("?y")?)?);
    let dtype = egraph[x].data.ty.as_ref()?.dtype;
    let one = scalar_of_dtype(Scalar::Float(1.0), dtype)?;
    let one = add_constant(egraph, &TensorType { dtype, shape: Shape::scalar() }, one);
    let y1 = egraph.add(TfnNode::Binary(BinaryOp::Add, [y, one]));
    Some(egraph.add(TfnNode::Binary(BinaryOp::Mul, [x, y1])))
}

/// Whether `c1*c2` (splat constants of a float dtype) is a normal, finite number of that dtype,
/// so folding `(x*c1)*c2` into `x*(c1*c2)` neither overflows nor loses precision to underflow.
pub fn is_normal_product(c1: f64, c2: f64, dtype: tfn_ir::DType) -> bool {
    let p = c1 * c2;
    let (min, max) = match dtype {
        tfn_ir::DType::F32 => (f64::from(f32::MIN_POSITIVE), f64::from(f32::MAX)),
        tfn_ir::DType::F64 => (f64::MIN_POSITIVE, f64::MAX),
        _ => return false,
    };
    p.is_finite() && (min..=max).contains(&p.abs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tfn_ir::DType;

    #[test]
    fn only_normal_products_fold() {
        assert!(is_normal_product(0.7978845608, 0.044715, DType::F32));
        assert!(!is_normal_product(1e30, 1e30, DType::F32));
        assert!(is_normal_product(1e30, 1e30, DType::F64));
        assert!(!is_normal_product(1e-30, 1e-20, DType::F32));
        assert!(!is_normal_product(0.0, 2.0, DType::F64));
        assert!(!is_normal_product(f64::NAN, 2.0, DType::F64));
        assert!(!is_normal_product(2.0, 3.0, DType::I32));
    }
}
