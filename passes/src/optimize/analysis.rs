//! The e-class analysis: what the optimiser knows about every e-class.
//!
//! - the tensor type (dtype and symbolic shape) from [`super::infer`], or the attribute value
//!   of a leaf;
//! - the *splat constant*: a value every element is known to equal, found by folding
//!   elementwise ops, shape ops and non-empty `max`/`min`/`mean` reductions of constants
//!   ([`super::fold`]). [`TfnAnalysis::modify`] then adds the canonical constant e-node
//!   (`(const dt v)` for rank 0, `(full dt v shape)` otherwise) to the class, so extraction can
//!   pick it;
//! - a [`Sign`] fact, "every element is NaN or positive / non-negative", which guards rules
//!   with domain conditions (`exp(log(x)) -> x` needs `x > 0`). Facts are derived only where
//!   IEEE rounding cannot break them: `exp(x)` is only non-negative (it underflows to 0), a
//!   product of positives only non-negative, `c + nonneg` positive for `c > 0`.
//!
//! Two classes that a rule merges must have equal types: the analysis keeps the first and
//! counts a conflict (a bug in a rule; tests assert there are none).

use super::fold::{fold_binary, fold_cast, fold_mul_add, fold_unary, scalar_of_dtype};
use super::infer::{dim_of, infer_type};
use super::language::{FloatBits, TfnNode};
use egg::{Analysis, DidMerge, EGraph, Id};
use tfn_ir::op::UnarySign;
use tfn_ir::{BinaryOp, DType, Dim, ReduceOp, Scalar, Shape, TensorType};

/// The value of an attribute leaf or list.
#[derive(Clone, Debug, PartialEq)]
pub enum AttrValue {
    Int(i64),
    Float(FloatBits),
    Bool(bool),
    DType(DType),
    Sym(u32),
    Ints(Vec<i64>),
    Dims(Vec<Dim>),
}

/// Sign knowledge about every element of a tensor (NaN elements always allowed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub enum Sign {
    #[default]
    Unknown,
    NonNegative,
    Positive,
}

/// The analysis data of one e-class.
#[derive(Clone, Debug, Default)]
pub struct ClassData {
    pub ty: Option<TensorType>,
    pub attr: Option<AttrValue>,
    /// Every element equals this value (in the class's dtype).
    pub constant: Option<Scalar>,
    pub sign: Sign,
    /// Why a tensor node has no type (for error messages).
    pub error: Option<String>,
}

impl PartialEq for ClassData {
    fn eq(&self, other: &ClassData) -> bool {
        self.ty == other.ty
            && self.attr == other.attr
            && self.constant == other.constant
            && self.sign == other.sign
    }
}

impl ClassData {
    /// The splat constant as an `f64`, if known.
    pub fn constant_f64(&self) -> Option<f64> {
        self.constant.map(|c| c.as_f64())
    }
}

/// The analysis: stateless apart from a count of type conflicts seen while merging.
#[derive(Clone, Debug, Default)]
pub struct TfnAnalysis {
    pub type_conflicts: usize,
}

/// The e-graph type the optimiser works on.
pub type TfnEGraph = EGraph<TfnNode, TfnAnalysis>;

/// Computes the facts of one e-node from its children's facts.
pub fn node_data<'a>(node: &TfnNode, data: impl Fn(Id) -> &'a ClassData + Copy) -> ClassData {
    if let Some(attr) = attr_value(node, data) {
        return ClassData { attr: Some(attr), ..ClassData::default() };
    }
    if node.is_attribute() {
        return ClassData { error: Some("malformed attribute".into()), ..ClassData::default() };
    }
    match infer_type(node, data) {
        Ok(ty) => {
            let constant = fold(node, &ty, data);
            let sign = match constant {
                Some(c) => sign_of_constant(c),
                None => sign_of(node, &ty, data),
            };
            ClassData { ty: Some(ty), attr: None, constant, sign, error: None }
        }
        Err(e) => ClassData { error: Some(e), ..ClassData::default() },
    }
}

fn attr_value<'a>(node: &TfnNode, data: impl Fn(Id) -> &'a ClassData) -> Option<AttrValue> {
    Some(match node {
        TfnNode::Int(i) => AttrValue::Int(*i),
        TfnNode::Float(f) => AttrValue::Float(*f),
        TfnNode::Bool(b) => AttrValue::Bool(*b),
        TfnNode::DType(d) => AttrValue::DType(*d),
        TfnNode::Sym(s) => AttrValue::Sym(*s),
        TfnNode::List(c) => AttrValue::Ints(
            c.iter()
                .map(|&i| match data(i).attr {
                    Some(AttrValue::Int(v)) => Some(v),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()?,
        ),
        TfnNode::Shape(c) => AttrValue::Dims(
            c.iter()
                .map(|&i| data(i).attr.as_ref().and_then(dim_of))
                .collect::<Option<Vec<_>>>()?,
        ),
        _ => return None,
    })
}

/// A literal leaf as a scalar of `dtype`.
pub fn literal_scalar(value: &AttrValue, dtype: DType) -> Option<Scalar> {
    let raw = match value {
        AttrValue::Int(i) => Scalar::Int(*i),
        AttrValue::Float(f) => Scalar::Float(f.0),
        AttrValue::Bool(b) => Scalar::Bool(*b),
        _ => return None,
    };
    scalar_of_dtype(raw, dtype)
}

fn fold<'a>(node: &TfnNode, ty: &TensorType, data: impl Fn(Id) -> &'a ClassData) -> Option<Scalar> {
    use TfnNode::*;
    let c = |id: Id| data(id).constant;
    let dtype_of = |id: Id| data(id).ty.as_ref().map(|t| t.dtype);
    match node {
        Const([_, v]) | Full([_, v, _]) => literal_scalar(data(*v).attr.as_ref()?, ty.dtype),
        Unary(u, [x]) => fold_unary(*u, dtype_of(*x)?, c(*x)?),
        Binary(b, [x, y]) => fold_binary(*b, dtype_of(*x)?, c(*x)?, c(*y)?),
        Where([cond, a, b]) => match c(*cond)? {
            Scalar::Bool(true) => c(*a),
            Scalar::Bool(false) => c(*b),
            _ => None,
        },
        MulAdd([a, b, z]) => fold_mul_add(ty.dtype, c(*a)?, c(*b)?, c(*z)?),
        Cast([_, x]) => fold_cast(dtype_of(*x)?, ty.dtype, c(*x)?),
        Reshape([x, _]) | Transpose([x, _]) | BroadcastTo([x, _]) => c(*x),
        Reduce(op, [x, axes, _]) => {
            let value = c(*x)?;
            let in_ty = data(*x).ty.as_ref()?;
            let Some(AttrValue::Ints(axes)) = &data(*axes).attr else { return None };
            // Only non-empty reductions (an empty mean is NaN, an empty max an error).
            let non_empty = axes
                .iter()
                .all(|&a| matches!(in_ty.shape.0.get(a as usize), Some(Dim::Const(n)) if *n > 0));
            match op {
                ReduceOp::Max | ReduceOp::Min | ReduceOp::Mean if non_empty => Some(value),
                ReduceOp::Max | ReduceOp::Min | ReduceOp::Mean | ReduceOp::Sum | ReduceOp::Prod => {
                    None
                }
            }
        }
        // Leaves are attributes, not tensors; the other ops are not folded.
        Int(_) | Float(_) | Bool(_) | DType(_) | Sym(_) | List(_) | Shape(_) | Param(_)
        | ArgMax(_) | ArgMin(_) | Iota(_) | Scan(..) | CumprodGrad(_) | MatMul(_) | Concat(_)
        | Slice(_) | Extern(_) | Index(..) | Random(..) | Window(..) => None,
    }
}

fn sign_of_constant(c: Scalar) -> Sign {
    let v = c.as_f64();
    if v > 0.0 {
        Sign::Positive
    } else if v >= 0.0 {
        Sign::NonNegative
    } else {
        Sign::Unknown
    }
}

fn sign_of<'a>(node: &TfnNode, ty: &TensorType, data: impl Fn(Id) -> &'a ClassData) -> Sign {
    use TfnNode::*;
    if !ty.dtype.is_float() {
        return Sign::Unknown;
    }
    let s = |id: Id| data(id).sign;
    let at_most_nonneg = |sg: Sign| sg.min(Sign::NonNegative);
    match node {
        Unary(u, [x]) => match u.sign() {
            UnarySign::Unknown => Sign::Unknown,
            UnarySign::NonNegative => Sign::NonNegative,
            UnarySign::KeepsNonNegative => at_most_nonneg(s(*x)),
        },
        Binary(BinaryOp::Mul, [x, y]) if x == y => Sign::NonNegative,
        Binary(BinaryOp::Mul | BinaryOp::Div, [x, y]) => at_most_nonneg(s(*x).min(s(*y))),
        Binary(BinaryOp::Add, [x, y]) => {
            let (a, b) = (s(*x), s(*y));
            if a.min(b) >= Sign::NonNegative {
                a.max(b)
            } else {
                Sign::Unknown
            }
        }
        // One rounding of `a·b + c`: as `add` of a product (rounding is monotone, so
        // `a·b ≥ 0, c > 0` stays `≥ c > 0`).
        MulAdd([a, b, c]) => {
            let p = if a == b { Sign::NonNegative } else { at_most_nonneg(s(*a).min(s(*b))) };
            if p.min(s(*c)) >= Sign::NonNegative {
                p.max(s(*c))
            } else {
                Sign::Unknown
            }
        }
        Binary(BinaryOp::Maximum, [x, y]) => s(*x).max(s(*y)),
        Binary(BinaryOp::Minimum, [x, y]) => s(*x).min(s(*y)),
        Binary(BinaryOp::Pow, [x, _]) => at_most_nonneg(s(*x)),
        Where([_, a, b]) => s(*a).min(s(*b)),
        Reshape([x, _]) | Transpose([x, _]) | BroadcastTo([x, _]) | Slice([x, ..]) => s(*x),
        Random(tfn_ir::RandomDist::Uniform, _) => Sign::NonNegative,
        Reduce(ReduceOp::Max | ReduceOp::Min | ReduceOp::Mean, [x, ..]) => s(*x),
        Reduce(ReduceOp::Sum | ReduceOp::Prod, [x, ..]) => at_most_nonneg(s(*x)),
        Cast([_, x]) => match (data(*x).ty.as_ref().map(|t| t.dtype), ty.dtype) {
            (Some(from), to)
                if from == to || (from == tfn_ir::DType::F32 && to == tfn_ir::DType::F64) =>
            {
                s(*x)
            }
            (Some(from), _) if from.is_float() => at_most_nonneg(s(*x)),
            _ => Sign::Unknown,
        },
        MatMul([a, b]) => at_most_nonneg(s(*a).min(s(*b))),
        Binary(
            BinaryOp::Sub
            | BinaryOp::Eq
            | BinaryOp::Ne
            | BinaryOp::Lt
            | BinaryOp::Le
            | BinaryOp::Gt
            | BinaryOp::Ge
            | BinaryOp::LogicalAnd
            | BinaryOp::LogicalOr
            | BinaryOp::FloorDiv
            | BinaryOp::Remainder
            | BinaryOp::BitwiseAnd
            | BinaryOp::BitwiseOr
            | BinaryOp::BitwiseXor
            | BinaryOp::ShiftLeft
            | BinaryOp::ShiftRight
            | BinaryOp::Atan2,
            _,
        ) => Sign::Unknown,
        Int(_)
        | Float(_)
        | Bool(_)
        | DType(_)
        | Sym(_)
        | List(_)
        | Shape(_)
        | Param(_)
        | Const(_)
        | Full(_)
        | ArgMax(_)
        | ArgMin(_)
        | Iota(_)
        | Scan(..)
        | CumprodGrad(_)
        | Concat(_)
        | Extern(_)
        | Index(..)
        | Random(tfn_ir::RandomDist::Normal, _)
        | Window(..) => Sign::Unknown,
    }
}

/// The canonical e-node denoting a splat constant of type `ty`, added to `egraph`.
pub fn add_constant(egraph: &mut TfnEGraph, ty: &TensorType, value: Scalar) -> Id {
    let leaf = match value {
        Scalar::Bool(b) => TfnNode::Bool(b),
        Scalar::Int(i) => TfnNode::Int(i),
        Scalar::Float(f) => TfnNode::Float(FloatBits(f)),
    };
    let dtype = egraph.add(TfnNode::DType(ty.dtype));
    let value = egraph.add(leaf);
    if ty.shape.rank() == 0 {
        egraph.add(TfnNode::Const([dtype, value]))
    } else {
        let shape = add_shape(egraph, &ty.shape);
        egraph.add(TfnNode::Full([dtype, value, shape]))
    }
}

/// Adds `(shape d...)` for a symbolic shape.
pub fn add_shape(egraph: &mut TfnEGraph, shape: &Shape) -> Id {
    let dims = shape
        .0
        .iter()
        .map(|d| match d {
            Dim::Const(c) => egraph.add(TfnNode::Int(*c as i64)),
            Dim::Sym(s) => egraph.add(TfnNode::Sym(s.0)),
        })
        .collect();
    egraph.add(TfnNode::Shape(dims))
}

/// Adds `(list i...)`.
pub fn add_ints(egraph: &mut TfnEGraph, values: &[i64]) -> Id {
    let ids = values.iter().map(|&v| egraph.add(TfnNode::Int(v))).collect();
    egraph.add(TfnNode::List(ids))
}

impl Analysis<TfnNode> for TfnAnalysis {
    type Data = ClassData;

    fn make(egraph: &mut TfnEGraph, enode: &TfnNode, _id: Id) -> ClassData {
        let graph: &TfnEGraph = egraph;
        node_data(enode, |id| &graph[id].data)
    }

    fn merge(&mut self, a: &mut ClassData, b: ClassData) -> DidMerge {
        let before = a.clone();
        match (&a.ty, &b.ty) {
            (None, Some(_)) => a.ty = b.ty.clone(),
            (Some(x), Some(y)) if x != y => self.type_conflicts += 1,
            _ => {}
        }
        if a.attr.is_none() {
            a.attr = b.attr.clone();
        }
        if a.constant.is_none() {
            a.constant = b.constant;
        }
        a.sign = a.sign.max(b.sign);
        if a.error.is_none() && a.ty.is_none() {
            a.error = b.error.clone();
        }
        DidMerge(*a != before, *a != b)
    }

    fn modify(egraph: &mut TfnEGraph, id: Id) {
        let data = &egraph[id].data;
        let (Some(value), Some(ty)) = (data.constant, data.ty.clone()) else { return };
        let canonical = add_constant(egraph, &ty, value);
        egraph.union(id, canonical);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use egg::RecExpr;

    fn class_of(text: &str) -> ClassData {
        let mut egraph = TfnEGraph::default();
        let expr: RecExpr<TfnNode> = text.parse().expect("parses");
        let id = egraph.add_expr(&expr);
        egraph.rebuild();
        egraph[id].data.clone()
    }

    #[test]
    fn folds_constants_and_tracks_signs() {
        let c = class_of("(mul (const f32 2.0) (add (const f32 1.0) (const f32 0.5)))");
        assert_eq!(c.constant, Some(Scalar::Float(3.0)));
        let b = class_of("(broadcast_to (const f64 2.0) (shape 2 3))");
        assert_eq!(b.constant, Some(Scalar::Float(2.0)));
        assert_eq!(b.ty.map(|t| t.shape.rank()), Some(2));
        let p = class_of("(add (exp (param 0 f32 (shape s0))) (const f32 1.0))");
        assert_eq!(p.sign, Sign::Positive);
        let n = class_of("(exp (param 0 f32 (shape s0)))");
        assert_eq!(n.sign, Sign::NonNegative);
    }

    #[test]
    fn ill_typed_nodes_have_no_type() {
        let c = class_of("(exp (param 0 i32 (shape 3)))");
        assert!(c.ty.is_none());
        assert!(c.error.is_some_and(|e| e.contains("exp")));
        let d = class_of("(add (param 0 f32 (shape 2)) (param 1 f32 (shape 3)))");
        assert!(d.ty.is_none());
    }
}
