//! Type inference for e-nodes: the dtype and symbolic shape of each op's result, from its
//! children's facts, following the prelude's dtype constraints and NumPy broadcasting.
//!
//! Ops whose result shape needs a size the graph derived at lowering time (`reshape`,
//! `broadcast_to`, `concat`, `slice`, `full`, `extern`, `param`) carry that shape as a leaf,
//! so inference never invents symbols. Inference is strict: an e-node whose children do not
//! type-check gets no type, and a rule whose right-hand side has no type, or a different one,
//! is never applied (see [`super::rules::apply`]).

use super::analysis::{AttrValue, ClassData};
use super::language::TfnNode;
use egg::Id;
use tfn_ir::{BinaryOp, DType, Dim, ReduceOp, Shape, Sym, TensorType, UnaryOp};

/// Result of inferring a tensor node: its type, or why it has none.
pub type Inferred = Result<TensorType, String>;

/// NumPy broadcasting of two symbolic shapes (`None` when they are incompatible).
pub fn broadcast_shapes(a: &Shape, b: &Shape) -> Option<Shape> {
    let rank = a.rank().max(b.rank());
    let mut dims = Vec::with_capacity(rank);
    for i in 0..rank {
        let da = (i + a.rank()).checked_sub(rank).map(|j| a.0[j]);
        let db = (i + b.rank()).checked_sub(rank).map(|j| b.0[j]);
        let d = match (da, db) {
            (Some(x), None) | (None, Some(x)) => x,
            (Some(x), Some(y)) if x == y => x,
            (Some(Dim::Const(1)), Some(y)) => y,
            (Some(x), Some(Dim::Const(1))) => x,
            _ => return None,
        };
        dims.push(d);
    }
    Some(Shape(dims))
}

/// True when `from` broadcasts to exactly `to`.
pub fn broadcasts_to(from: &Shape, to: &Shape) -> bool {
    from.rank() <= to.rank() && broadcast_shapes(from, to).as_ref() == Some(to)
}

fn float_only(u: UnaryOp) -> bool {
    use UnaryOp::*;
    !matches!(u, Neg | Abs | Sign | LogicalNot)
}

fn check_dtype(ok: bool, op: &str, dtype: DType) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(format!("`{op}` does not accept {dtype}"))
    }
}

fn check_literal(value: &AttrValue, dtype: DType) -> Result<(), String> {
    match super::analysis::literal_scalar(value, dtype) {
        Some(_) => Ok(()),
        None => Err(format!("{value:?} is not a {dtype} constant")),
    }
}

/// Infers the type of a tensor-valued node. `data` gives each child's facts.
pub fn infer_type<'a>(node: &TfnNode, data: impl Fn(Id) -> &'a ClassData) -> Inferred {
    use TfnNode as N;
    let ty = |id: Id| data(id).ty.clone().ok_or_else(|| "operand has no tensor type".to_string());
    let attr = |id: Id| data(id).attr.clone().ok_or_else(|| "missing attribute".to_string());
    let dtype_attr = |id: Id| match attr(id)? {
        AttrValue::DType(d) => Ok(d),
        other => Err(format!("expected a dtype, found {other:?}")),
    };
    let int_attr = |id: Id| match attr(id)? {
        AttrValue::Int(i) => Ok(i),
        other => Err(format!("expected an integer, found {other:?}")),
    };
    let ints_attr = |id: Id| match attr(id)? {
        AttrValue::Ints(v) => Ok(v),
        AttrValue::Dims(d) if d.is_empty() => Ok(Vec::new()),
        other => Err(format!("expected an integer list, found {other:?}")),
    };
    let shape_attr = |id: Id| match attr(id)? {
        AttrValue::Dims(d) => Ok(Shape(d)),
        AttrValue::Ints(v) if v.is_empty() => Ok(Shape::scalar()),
        other => Err(format!("expected a shape, found {other:?}")),
    };
    let bool_attr = |id: Id| match attr(id)? {
        AttrValue::Bool(b) => Ok(b),
        other => Err(format!("expected a bool, found {other:?}")),
    };
    match node {
        N::Int(_)
        | N::Float(_)
        | N::Bool(_)
        | N::DType(_)
        | N::Sym(_)
        | N::List(_)
        | N::Shape(_) => Err("an attribute is not a tensor".into()),
        N::Param([_, d, s]) => Ok(TensorType { dtype: dtype_attr(*d)?, shape: shape_attr(*s)? }),
        N::Const([d, v]) => {
            let dtype = dtype_attr(*d)?;
            check_literal(&attr(*v)?, dtype)?;
            Ok(TensorType { dtype, shape: Shape::scalar() })
        }
        N::Full([d, v, s]) => {
            let dtype = dtype_attr(*d)?;
            check_literal(&attr(*v)?, dtype)?;
            Ok(TensorType { dtype, shape: shape_attr(*s)? })
        }
        N::Unary(u, [x]) => {
            let t = ty(*x)?;
            let ok = match u {
                UnaryOp::LogicalNot => t.dtype == DType::Bool,
                u if float_only(*u) => t.dtype.is_float(),
                _ => t.dtype != DType::Bool,
            };
            check_dtype(ok, tfn_ir::op::unary_name(*u), t.dtype)?;
            Ok(t)
        }
        N::Binary(b, [x, y]) => {
            let (tx, ty_) = (ty(*x)?, ty(*y)?);
            if tx.dtype != ty_.dtype {
                return Err(format!("`{b}` of {} and {}", tx.dtype, ty_.dtype));
            }
            use BinaryOp::*;
            let ok = match b {
                Div | Pow => tx.dtype.is_float(),
                LogicalAnd | LogicalOr => tx.dtype == DType::Bool,
                Eq | Ne => true,
                _ => tx.dtype != DType::Bool,
            };
            check_dtype(ok, tfn_ir::op::binary_name(*b), tx.dtype)?;
            let shape = broadcast_shapes(&tx.shape, &ty_.shape)
                .ok_or_else(|| format!("cannot broadcast {} and {}", tx.shape, ty_.shape))?;
            let dtype = if b.is_comparison() { DType::Bool } else { tx.dtype };
            Ok(TensorType { dtype, shape })
        }
        N::Where([c, a, b]) => {
            let (tc, ta, tb) = (ty(*c)?, ty(*a)?, ty(*b)?);
            if tc.dtype != DType::Bool || ta.dtype != tb.dtype {
                return Err("`where` needs a bool condition and two operands of one dtype".into());
            }
            let shape = broadcast_shapes(&tc.shape, &ta.shape)
                .and_then(|s| broadcast_shapes(&s, &tb.shape))
                .ok_or_else(|| "`where` operands do not broadcast".to_string())?;
            Ok(TensorType { dtype: ta.dtype, shape })
        }
        N::Cast([d, x]) => Ok(TensorType { dtype: dtype_attr(*d)?, shape: ty(*x)?.shape }),
        N::Reduce(r, [x, axes, keep]) => {
            let t = ty(*x)?;
            let ok = match r {
                ReduceOp::Mean => t.dtype.is_float(),
                _ => t.dtype != DType::Bool,
            };
            check_dtype(ok, tfn_ir::op::reduce_name(*r), t.dtype)?;
            let axes = ints_attr(*axes)?;
            let sorted = axes.windows(2).all(|w| w[0] < w[1]);
            if !sorted || axes.iter().any(|&a| a < 0 || a as usize >= t.shape.rank()) {
                return Err(format!("bad reduction axes {axes:?} for rank {}", t.shape.rank()));
            }
            Ok(TensorType {
                dtype: t.dtype,
                shape: reduced_shape(&t.shape, &axes, bool_attr(*keep)?),
            })
        }
        N::ArgMax([x, axis, keep]) => {
            let t = ty(*x)?;
            check_dtype(t.dtype != DType::Bool, "argmax", t.dtype)?;
            let axis = int_attr(*axis)?;
            if axis < 0 || axis as usize >= t.shape.rank() {
                return Err(format!("bad argmax axis {axis}"));
            }
            let shape = reduced_shape(&t.shape, &[axis], bool_attr(*keep)?);
            Ok(TensorType { dtype: DType::I64, shape })
        }
        N::MatMul([a, b]) => {
            let (ta, tb) = (ty(*a)?, ty(*b)?);
            check_dtype(ta.dtype == tb.dtype && ta.dtype != DType::Bool, "matmul", tb.dtype)?;
            let (ra, rb) = (ta.shape.rank(), tb.shape.rank());
            if ra < 2 || rb < 2 || ta.shape.0[ra - 1] != tb.shape.0[rb - 2] {
                return Err(format!("cannot multiply {} by {}", ta.shape, tb.shape));
            }
            let batch = broadcast_shapes(
                &Shape(ta.shape.0[..ra - 2].to_vec()),
                &Shape(tb.shape.0[..rb - 2].to_vec()),
            )
            .ok_or_else(|| "matmul batch axes do not broadcast".to_string())?;
            let mut dims = batch.0;
            dims.push(ta.shape.0[ra - 2]);
            dims.push(tb.shape.0[rb - 1]);
            Ok(TensorType { dtype: ta.dtype, shape: Shape(dims) })
        }
        N::Reshape([x, s]) => {
            let (t, shape) = (ty(*x)?, shape_attr(*s)?);
            if let (Some(a), Some(b)) = (t.shape.as_const(), shape.as_const()) {
                if a.iter().product::<u64>() != b.iter().product::<u64>() {
                    return Err(format!("cannot reshape {} to {}", t.shape, shape));
                }
            }
            Ok(TensorType { dtype: t.dtype, shape })
        }
        N::Transpose([x, p]) => {
            let (t, perm) = (ty(*x)?, ints_attr(*p)?);
            if !is_permutation(&perm, t.shape.rank()) {
                return Err(format!("{perm:?} is not a permutation of rank {}", t.shape.rank()));
            }
            let dims = perm.iter().map(|&i| t.shape.0[i as usize]).collect();
            Ok(TensorType { dtype: t.dtype, shape: Shape(dims) })
        }
        N::BroadcastTo([x, s]) => {
            let (t, shape) = (ty(*x)?, shape_attr(*s)?);
            if !broadcasts_to(&t.shape, &shape) {
                return Err(format!("cannot broadcast {} to {}", t.shape, shape));
            }
            Ok(TensorType { dtype: t.dtype, shape })
        }
        N::Concat(c) => {
            let (axis, shape) = (int_attr(c[0])?, shape_attr(c[1])?);
            let inputs = c[2..].iter().map(|&i| ty(i)).collect::<Result<Vec<_>, _>>()?;
            let dtype = inputs.first().map(|t| t.dtype).ok_or("empty concat")?;
            let ok = inputs.iter().all(|t| t.dtype == dtype && t.shape.rank() == shape.rank());
            if !ok || axis < 0 || axis as usize >= shape.rank() {
                return Err("concat operands disagree".into());
            }
            Ok(TensorType { dtype, shape })
        }
        N::Slice([x, axis, _, _, step, s]) => {
            let (t, shape) = (ty(*x)?, shape_attr(*s)?);
            let axis = int_attr(*axis)?;
            if int_attr(*step)? == 0 || axis < 0 || t.shape.rank() != shape.rank() {
                return Err("bad slice".into());
            }
            Ok(TensorType { dtype: t.dtype, shape })
        }
        N::Extern(c) => Ok(TensorType { dtype: dtype_attr(c[1])?, shape: shape_attr(c[2])? }),
    }
}

/// The shape of a reduction over `axes` (sorted, in range).
pub fn reduced_shape(shape: &Shape, axes: &[i64], keepdim: bool) -> Shape {
    let mut dims = Vec::new();
    for (i, d) in shape.0.iter().enumerate() {
        if axes.contains(&(i as i64)) {
            if keepdim {
                dims.push(Dim::Const(1));
            }
        } else {
            dims.push(*d);
        }
    }
    Shape(dims)
}

pub fn is_permutation(perm: &[i64], rank: usize) -> bool {
    let mut seen = vec![false; rank];
    perm.len() == rank
        && perm.iter().all(|&p| {
            let ok = p >= 0 && (p as usize) < rank && !seen[p as usize];
            if ok {
                seen[p as usize] = true;
            }
            ok
        })
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
