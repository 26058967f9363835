//! Type inference for e-nodes: each e-node is read as the IR op it stands for and typed by the
//! IR's one inference ([`tfn_ir::lower::infer`]: the op table's dtype rows, NumPy
//! broadcasting, reduction, matmul and permutation shapes).
//!
//! Ops whose result shape needs a size the graph derived at lowering time (`reshape`,
//! `broadcast_to`, `concat`, `slice`, `full`, `extern`, `param`) carry that shape as a leaf,
//! so inference never invents symbols. Inference is strict: an e-node whose children do not
//! type-check gets no type, and a rule whose right-hand side has no type, or a different one,
//! is never applied (see [`super::rules::apply`]).

use super::analysis::{AttrValue, ClassData};
use super::language::TfnNode;
use egg::Id;
pub use tfn_ir::lower::broadcast_shapes;
use tfn_ir::{DType, Dim, DimExpr, Op, Shape, Sym, TensorType};

/// Result of inferring a tensor node: its type, or why it has none.
pub type Inferred = Result<TensorType, String>;

/// True when `from` broadcasts to exactly `to`.
pub fn broadcasts_to(from: &Shape, to: &Shape) -> bool {
    from.rank() <= to.rank() && broadcast_shapes(from, to).as_ref() == Some(to)
}

fn attr_error(what: &str, found: Option<AttrValue>) -> String {
    match found {
        Some(v) => format!("expected {what}, found {v:?}"),
        None => format!("expected {what}, found a non-attribute"),
    }
}

fn u32_of(v: i64) -> Result<u32, String> {
    u32::try_from(v).map_err(|_| format!("{v} is not an axis"))
}

/// The IR op an e-node stands for, and its tensor children, for every op whose result type the
/// IR's inference derives from its operands. `Ok(None)` for nodes that carry their type in
/// leaves (`param`, `const`, `full`, `reshape`, `broadcast_to`, `extern`) and for attributes.
pub fn inferred_op(
    node: &TfnNode,
    attr: impl Fn(Id) -> Option<AttrValue>,
) -> Result<Option<(Op, &[Id])>, String> {
    use TfnNode as N;
    let int = |id: Id| match attr(id) {
        Some(AttrValue::Int(i)) => Ok(i),
        other => Err(attr_error("an integer", other)),
    };
    let ints = |id: Id| match attr(id) {
        Some(AttrValue::Ints(v)) => Ok(v),
        Some(AttrValue::Dims(d)) if d.is_empty() => Ok(Vec::new()),
        other => Err(attr_error("an integer list", other)),
    };
    let axes = |id: Id| ints(id)?.into_iter().map(u32_of).collect::<Result<Vec<u32>, String>>();
    let boolean = |id: Id| match attr(id) {
        Some(AttrValue::Bool(b)) => Ok(b),
        other => Err(attr_error("a bool", other)),
    };
    let one = std::slice::from_ref;
    Ok(Some(match node {
        N::Unary(u, c) => (Op::Unary(*u), c),
        N::Binary(b, c) => (Op::Binary(*b), c),
        N::Where(c) => (Op::Where, c),
        N::MulAdd(c) => (Op::MulAdd, c),
        N::Cast([d, x]) => match attr(*d) {
            Some(AttrValue::DType(d)) => (Op::Cast(d), one(x)),
            other => return Err(attr_error("a dtype", other)),
        },
        N::Reduce(op, [x, a, keep]) => {
            (Op::Reduce { op: *op, axes: axes(*a)?, keepdim: boolean(*keep)? }, one(x))
        }
        N::ArgMax([x, axis, keep]) => {
            (Op::ArgMax { axis: u32_of(int(*axis)?)?, keepdim: boolean(*keep)? }, one(x))
        }
        N::ArgMin([x, axis, keep]) => {
            (Op::ArgMin { axis: u32_of(int(*axis)?)?, keepdim: boolean(*keep)? }, one(x))
        }
        N::Scan(op, [x, axis, ex, rev]) => {
            let axis = u32_of(int(*axis)?)?;
            (Op::Scan { op: *op, axis, exclusive: boolean(*ex)?, reverse: boolean(*rev)? }, one(x))
        }
        N::CumprodGrad(c) => {
            let axis = u32_of(int(c[2])?)?;
            let (exclusive, reverse) = (boolean(c[3])?, boolean(c[4])?);
            (Op::CumprodGrad { axis, exclusive, reverse }, &c[..2])
        }
        N::MatMul(c) => (Op::MatMul, c),
        N::Transpose([x, p]) => (Op::Transpose { perm: axes(*p)? }, one(x)),
        N::Concat(c) => (Op::Concat { axis: u32_of(int(c[0])?)? }, &c[2..]),
        N::Slice([x, axis, start, end, step, _]) => {
            let end = ints(*end)?.first().copied();
            let axis = u32_of(int(*axis)?)?;
            (Op::Slice { axis, start: int(*start)?, end, step: int(*step)? }, one(x))
        }
        N::Index(kind, c) => match c.split_last() {
            Some((axis, inputs)) => (Op::Index { kind: *kind, axis: u32_of(int(*axis)?)? }, inputs),
            None => return Err("an indexed op without children".into()),
        },
        N::Window(kind, c) if c.len() >= 2 => {
            let attrs = super::window::attrs_of(&ints(c[0])?)?;
            (Op::Window { kind: *kind, attrs }, &c[2..])
        }
        N::Window(..) => return Err("a window op without attributes".into()),
        N::Param(_)
        | N::Const(_)
        | N::Full(_)
        | N::Iota(_)
        | N::Random(..)
        | N::Reshape(_)
        | N::BroadcastTo(_)
        | N::Extern(_)
        | N::Int(_)
        | N::Float(_)
        | N::Bool(_)
        | N::DType(_)
        | N::Sym(_)
        | N::List(_)
        | N::Shape(_) => return Ok(None),
    }))
}

/// Infers the type of a tensor-valued node from its children's facts (`data`), with the IR's
/// own inference ([`tfn_ir::lower::infer`]): the optimiser, lowering and the verifier share one
/// definition of every op's typing.
pub fn infer_type<'a>(node: &TfnNode, data: impl Fn(Id) -> &'a ClassData) -> Inferred {
    use TfnNode as N;
    if node.is_attribute() {
        return Err("an attribute is not a tensor".into());
    }
    let ty = |id: Id| data(id).ty.clone().ok_or_else(|| "operand has no tensor type".to_string());
    let attr = |id: Id| data(id).attr.clone();
    let dtype_attr = |id: Id| match attr(id) {
        Some(AttrValue::DType(d)) => Ok(d),
        other => Err(attr_error("a dtype", other)),
    };
    let shape_attr = |id: Id| match attr(id) {
        Some(AttrValue::Dims(d)) => Ok(Shape(d)),
        Some(AttrValue::Ints(v)) if v.is_empty() => Ok(Shape::scalar()),
        other => Err(attr_error("a shape", other)),
    };
    let literal = |id: Id, dtype: DType| -> Result<(), String> {
        let value = attr(id).ok_or("a constant without a value")?;
        match super::analysis::literal_scalar(&value, dtype) {
            Some(_) => Ok(()),
            None => Err(format!("{value:?} is not a {dtype} constant")),
        }
    };
    if let Some((op, children)) = inferred_op(node, attr)? {
        let inputs = children.iter().map(|&c| ty(c)).collect::<Result<Vec<_>, _>>()?;
        let refs: Vec<&TensorType> = inputs.iter().collect();
        // Sizes the IR derives (`concat`, `slice`) are leaves of the e-node: the declared
        // shape's size on the op's axis.
        let (declared, axis) = match (node, &op) {
            (N::Concat(c), Op::Concat { axis }) => (Some(shape_attr(c[1])?), *axis as usize),
            (N::Slice(c), Op::Slice { axis, .. }) => (Some(shape_attr(c[5])?), *axis as usize),
            (N::Window(_, c), _) => (Some(shape_attr(c[1])?), usize::MAX),
            _ => (None, 0),
        };
        // A window op derives several sizes: each is a placeholder symbol, replaced by the
        // declared size on the same axis.
        const PLACEHOLDER: u32 = u32::MAX - 64;
        let mut placeholders = 0u32;
        let mut derive = |_: DimExpr| -> Dim {
            if axis == usize::MAX {
                placeholders += 1;
                return Dim::Sym(Sym(PLACEHOLDER + placeholders));
            }
            declared.as_ref().and_then(|s| s.0.get(axis).copied()).unwrap_or(Dim::Const(0))
        };
        let mut out = tfn_ir::lower::infer(&op, &refs, &mut derive)?
            .ok_or_else(|| format!("`{}` has no inferred type", op.name()))?;
        if let (Some(declared), true) = (&declared, axis == usize::MAX) {
            for (d, decl) in out.shape.0.iter_mut().zip(&declared.0) {
                if matches!(d, Dim::Sym(Sym(s)) if *s > PLACEHOLDER) {
                    *d = *decl;
                }
            }
        }
        if let Some(declared) = declared {
            if declared != out.shape {
                let name = op.name();
                return Err(format!(
                    "`{name}` declares shape {declared}, operands give {}",
                    out.shape
                ));
            }
        }
        return Ok(out);
    }
    let placeholder = tfn_ir::Scalar::Int(0);
    let (op, declared, inputs): (Op, TensorType, Vec<Id>) = match node {
        N::Param([_, d, s]) => {
            (Op::Param(0), TensorType { dtype: dtype_attr(*d)?, shape: shape_attr(*s)? }, vec![])
        }
        N::Const([d, v]) => {
            let dtype = dtype_attr(*d)?;
            literal(*v, dtype)?;
            (Op::Const(placeholder), TensorType { dtype, shape: Shape::scalar() }, vec![])
        }
        N::Full([d, v, s]) => {
            let dtype = dtype_attr(*d)?;
            literal(*v, dtype)?;
            (Op::Full { value: placeholder }, TensorType { dtype, shape: shape_attr(*s)? }, vec![])
        }
        N::Iota([d, axis, s]) => {
            let axis = match attr(*axis) {
                Some(AttrValue::Int(a)) => u32_of(a)?,
                other => return Err(attr_error("an integer", other)),
            };
            (
                Op::Iota { axis },
                TensorType { dtype: dtype_attr(*d)?, shape: shape_attr(*s)? },
                vec![],
            )
        }
        N::Random(dist, [d, s, key]) => {
            let declared = TensorType { dtype: dtype_attr(*d)?, shape: shape_attr(*s)? };
            (Op::Random { dist: *dist }, declared, vec![*key])
        }
        N::Reshape([x, s]) => {
            let t = ty(*x)?;
            (Op::Reshape, TensorType { dtype: t.dtype, shape: shape_attr(*s)? }, vec![*x])
        }
        N::BroadcastTo([x, s]) => {
            let t = ty(*x)?;
            (Op::BroadcastTo, TensorType { dtype: t.dtype, shape: shape_attr(*s)? }, vec![*x])
        }
        N::Extern(c) => {
            let declared = TensorType { dtype: dtype_attr(c[1])?, shape: shape_attr(c[2])? };
            (Op::Extern { name: String::new(), attrs: vec![] }, declared, vec![])
        }
        _ => return Err(format!("`{node}` has no type")),
    };
    let inputs = inputs.iter().map(|&c| ty(c)).collect::<Result<Vec<_>, _>>()?;
    let refs: Vec<&TensorType> = inputs.iter().collect();
    tfn_ir::lower::check_declared(&op, &refs, &declared)?;
    Ok(declared)
}

/// A leaf's dimension value, if it is one.
pub fn dim_of(value: &AttrValue) -> Option<Dim> {
    match value {
        AttrValue::Int(i) if *i >= 0 => Some(Dim::Const(*i as u64)),
        AttrValue::Sym(s) => Some(Dim::Sym(Sym(*s))),
        _ => None,
    }
}

/// Estimated number of elements, counting each symbolic dimension as `sym_size`.
pub fn estimated_elements(shape: &Shape, sym_size: f64) -> f64 {
    shape.0.iter().map(|d| d.as_const().map_or(sym_size, |c| c as f64)).product()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(dims: &[u64]) -> Shape {
        Shape(dims.iter().map(|&d| Dim::Const(d)).collect())
    }

    #[test]
    fn broadcasting_follows_numpy() {
        assert_eq!(broadcast_shapes(&shape(&[2, 1]), &shape(&[3])), Some(shape(&[2, 3])));
        assert_eq!(broadcast_shapes(&shape(&[2]), &shape(&[3])), None);
        let s = Shape(vec![Dim::Sym(Sym(0)), Dim::Const(1)]);
        assert_eq!(
            broadcast_shapes(&s, &shape(&[4])),
            Some(Shape(vec![Dim::Sym(Sym(0)), Dim::Const(4)]))
        );
        assert!(broadcasts_to(&shape(&[]), &shape(&[2, 3])));
        assert!(!broadcasts_to(&shape(&[2, 3]), &shape(&[3])));
    }
}
