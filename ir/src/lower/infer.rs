//! Shape and dtype inference for the primitive ops, on symbolic shapes.
//!
//! These functions are pure: they never unify sizes. Lowering first records the equalities an
//! op implies (broadcast axes, `matmul`'s inner size) in its symbol table and then calls
//! [`infer`] on the resolved input types; the verifier calls the same [`infer`] on a finished
//! graph and compares. Sizes an op computes (`concat`, `slice`) come from the `derive`
//! callback, which lowering backs with new derived symbols and the verifier with a lookup.

use crate::dtype::DType;
use crate::graph::TensorType;
use crate::op::Op;
use crate::shape::{Dim, DimExpr, Shape};

/// NumPy broadcasting of two shapes whose sizes are already unified: aligned from the right,
/// each axis pair must be equal or one of them the constant 1. `None` when they conflict.
pub fn broadcast_shapes(a: &Shape, b: &Shape) -> Option<Shape> {
    let rank = a.rank().max(b.rank());
    let at = |s: &Shape, i: usize| {
        let offset = rank - s.rank();
        if i < offset {
            Dim::Const(1)
        } else {
            s.0[i - offset]
        }
    };
    (0..rank)
        .map(|i| match (at(a, i), at(b, i)) {
            (x, y) if x == y => Some(x),
            (Dim::Const(1), y) => Some(y),
            (x, Dim::Const(1)) => Some(x),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()
        .map(Shape)
}

/// The shape after reducing `axes` (sorted, in range).
pub fn reduce_shape(s: &Shape, axes: &[u32], keepdim: bool) -> Shape {
    let dims = s.0.iter().enumerate().filter_map(|(i, d)| {
        if !axes.contains(&(i as u32)) {
            Some(*d)
        } else if keepdim {
            Some(Dim::Const(1))
        } else {
            None
        }
    });
    Shape(dims.collect())
}

/// Whether `perm` is a permutation of `0..rank`.
pub fn is_permutation(perm: &[u32], rank: usize) -> bool {
    let mut seen = vec![false; rank];
    perm.len() == rank
        && perm.iter().all(|&p| match seen.get_mut(p as usize) {
            Some(s) if !*s => {
                *s = true;
                true
            }
            _ => false,
        })
}

/// `matmul` of rank >= 2 operands with unified inner and batch sizes.
pub fn matmul_shape(a: &Shape, b: &Shape) -> Option<Shape> {
    let (ra, rb) = (a.rank(), b.rank());
    if ra < 2 || rb < 2 || a.0[ra - 1] != b.0[rb - 2] {
        return None;
    }
    let batch = broadcast_shapes(&Shape(a.0[..ra - 2].to_vec()), &Shape(b.0[..rb - 2].to_vec()))?;
    let mut dims = batch.0;
    dims.push(a.0[ra - 2]);
    dims.push(b.0[rb - 1]);
    Some(Shape(dims))
}

/// The number of inputs an op takes: `(min, max)`.
pub fn arity(op: &Op) -> (usize, usize) {
    match op {
        Op::Param(_) | Op::Const(_) => (0, 0),
        Op::Unary(_)
        | Op::Cast(_)
        | Op::Reduce { .. }
        | Op::ArgMax { .. }
        | Op::ArgMin { .. }
        | Op::Scan { .. }
        | Op::Reshape
        | Op::Transpose { .. }
        | Op::BroadcastTo
        | Op::Slice { .. } => (1, 1),
        Op::Binary(_) | Op::MatMul | Op::CumprodGrad { .. } => (2, 2),
        Op::Where | Op::MulAdd => (3, 3),
        Op::Concat { .. } => (1, usize::MAX),
        Op::Index { kind, .. } => (kind.arity(), kind.arity()),
        Op::Window { kind, .. } => kind.arity(),
        Op::Full { .. } | Op::Iota { .. } => (0, 1),
        Op::Random { .. } => (1, 2),
        Op::Extern { .. } => (0, usize::MAX),
    }
}

/// The output type of `op` applied to `inputs`, for ops whose type follows from their inputs
/// and attributes. `Ok(None)` for ops whose type the node itself declares (`param`, `const`,
/// `full`, `rand_like`, `reshape`, `broadcast_to`, `extern`): [`check_declared`] checks those.
pub fn infer(
    op: &Op,
    inputs: &[&TensorType],
    derive: &mut dyn FnMut(DimExpr) -> Dim,
) -> Result<Option<TensorType>, String> {
    let (lo, hi) = arity(op);
    if inputs.len() < lo || inputs.len() > hi {
        return Err(format!("`{}` takes {lo} inputs, got {}", op.name(), inputs.len()));
    }
    let same = |dtype: DType, shape: Shape| Ok(Some(TensorType { dtype, shape }));
    // The op table's dtype row, checked on every data operand.
    let allowed = op.operand_dtypes();
    let data_operands = if matches!(op, Op::Where) { &inputs[1..] } else { inputs };
    // An indexed op's index (input 1) is i32/i64 whatever the data's dtype.
    // A window op's shape operand may have any dtype.
    let is_data = |i: usize| match op {
        Op::Index { .. } => i != 1,
        Op::Window { kind, .. } => !kind.shape_only(i),
        _ => true,
    };
    let bad =
        data_operands.iter().enumerate().find(|(i, t)| is_data(*i) && !allowed.contains(t.dtype));
    if let Some((_, bad)) = bad {
        return Err(format!(
            "`{}` does not take {} operands (only {allowed})",
            op.name(),
            bad.dtype
        ));
    }
    match op {
        Op::Param(_)
        | Op::Const(_)
        | Op::Full { .. }
        | Op::Random { .. }
        | Op::Reshape
        | Op::BroadcastTo => Ok(None),
        Op::Iota { .. } => Ok(None),
        Op::Extern { .. } => Ok(None),
        Op::Unary(u) => same(u.result_dtype(inputs[0].dtype), inputs[0].shape.clone()),
        Op::Binary(b) => {
            let (x, y) = (inputs[0], inputs[1]);
            if x.dtype != y.dtype {
                return Err(format!("operand dtypes differ: {} and {}", x.dtype, y.dtype));
            }
            let shape = broadcast_shapes(&x.shape, &y.shape)
                .ok_or_else(|| format!("cannot broadcast {} with {}", x.shape, y.shape))?;
            same(b.result_dtype(x.dtype), shape)
        }
        Op::Where => {
            let (c, x, y) = (inputs[0], inputs[1], inputs[2]);
            if c.dtype != DType::Bool || x.dtype != y.dtype {
                return Err(format!("bad operand dtypes {}, {}, {}", c.dtype, x.dtype, y.dtype));
            }
            let shape = broadcast_shapes(&c.shape, &x.shape)
                .and_then(|s| broadcast_shapes(&s, &y.shape))
                .ok_or_else(|| {
                    format!("cannot broadcast {}, {} and {}", c.shape, x.shape, y.shape)
                })?;
            same(x.dtype, shape)
        }
        Op::MulAdd => {
            let (a, b, c) = (inputs[0], inputs[1], inputs[2]);
            if a.dtype != b.dtype || a.dtype != c.dtype {
                return Err(format!(
                    "operand dtypes differ: {}, {}, {}",
                    a.dtype, b.dtype, c.dtype
                ));
            }
            let shape = broadcast_shapes(&a.shape, &b.shape)
                .and_then(|s| broadcast_shapes(&s, &c.shape))
                .ok_or_else(|| {
                    format!("cannot broadcast {}, {} and {}", a.shape, b.shape, c.shape)
                })?;
            same(a.dtype, shape)
        }
        Op::Cast(d) => same(*d, inputs[0].shape.clone()),
        Op::Reduce { axes, keepdim, .. } => {
            let x = inputs[0];
            let sorted = axes.windows(2).all(|w| w[0] < w[1]);
            if !sorted || axes.iter().any(|&a| a as usize >= x.shape.rank()) {
                return Err(format!("bad axes {axes:?} for rank {}", x.shape.rank()));
            }
            if axes.is_empty() && x.shape.rank() > 0 {
                return Err("empty axes".into());
            }
            same(x.dtype, reduce_shape(&x.shape, axes, *keepdim))
        }
        Op::ArgMax { axis, keepdim } | Op::ArgMin { axis, keepdim } => {
            let x = inputs[0];
            if *axis as usize >= x.shape.rank() {
                return Err(format!("axis {axis} out of range for rank {}", x.shape.rank()));
            }
            same(DType::I64, reduce_shape(&x.shape, &[*axis], *keepdim))
        }
        Op::Scan { axis, .. } => {
            let x = inputs[0];
            if *axis as usize >= x.shape.rank() {
                return Err(format!("axis {axis} out of range for rank {}", x.shape.rank()));
            }
            same(x.dtype, x.shape.clone())
        }
        Op::CumprodGrad { axis, .. } => {
            let (x, g) = (inputs[0], inputs[1]);
            if *axis as usize >= x.shape.rank() {
                return Err(format!("axis {axis} out of range for rank {}", x.shape.rank()));
            }
            if x != g {
                return Err(format!("`cumprod_grad` of {x} with a gradient {g}"));
            }
            same(x.dtype, x.shape.clone())
        }
        Op::MatMul => {
            let (a, b) = (inputs[0], inputs[1]);
            if a.dtype != b.dtype {
                return Err(format!("operand dtypes differ: {} and {}", a.dtype, b.dtype));
            }
            let shape = matmul_shape(&a.shape, &b.shape)
                .ok_or_else(|| format!("cannot multiply {} by {}", a.shape, b.shape))?;
            same(a.dtype, shape)
        }
        Op::Transpose { perm } => {
            let x = inputs[0];
            if !is_permutation(perm, x.shape.rank()) {
                return Err(format!("{perm:?} is not a permutation of rank {}", x.shape.rank()));
            }
            same(x.dtype, Shape(perm.iter().map(|&p| x.shape.0[p as usize]).collect()))
        }
        Op::Concat { axis } => {
            let first = inputs[0];
            let axis = *axis as usize;
            if axis >= first.shape.rank() {
                return Err(format!("axis {axis} out of range for rank {}", first.shape.rank()));
            }
            let mut total = DimExpr::Dim(first.shape.0[axis]);
            for x in &inputs[1..] {
                let compatible = x.dtype == first.dtype
                    && x.shape.rank() == first.shape.rank()
                    && (0..x.shape.rank()).all(|i| i == axis || x.shape.0[i] == first.shape.0[i]);
                if !compatible {
                    return Err(format!("cannot concatenate {} with {}", first, x));
                }
                total = DimExpr::Add(Box::new(total), Box::new(DimExpr::Dim(x.shape.0[axis])));
            }
            let mut dims = first.shape.0.clone();
            dims[axis] = derive(total);
            same(first.dtype, Shape(dims))
        }
        Op::Slice { axis, start, end, step } => {
            let x = inputs[0];
            let axis = *axis as usize;
            if axis >= x.shape.rank() || *step == 0 {
                return Err(format!("bad slice of axis {axis} step {step} of {}", x.shape));
            }
            let mut dims = x.shape.0.clone();
            dims[axis] = derive(DimExpr::SliceLen {
                size: Box::new(DimExpr::Dim(dims[axis])),
                start: *start,
                end: *end,
                step: *step,
            });
            same(x.dtype, Shape(dims))
        }
        Op::Index { kind, axis } => kind.infer(*axis, inputs).map(Some),
        Op::Window { kind, attrs } => {
            crate::op_window::infer(*kind, attrs, inputs, derive).map(Some)
        }
    }
}

/// Checks a node whose type [`infer`] leaves to the node: what can be checked statically.
pub fn check_declared(op: &Op, inputs: &[&TensorType], ty: &TensorType) -> Result<(), String> {
    match op {
        Op::Const(_) if ty.shape.rank() != 0 => Err("a constant must have rank 0".into()),
        Op::Full { .. } => match inputs.first() {
            Some(x) if x.shape != ty.shape => {
                Err(format!("`full` copies shape {} but is typed {}", x.shape, ty.shape))
            }
            _ => Ok(()),
        },
        Op::Iota { axis } => {
            let allowed = op.created_dtypes();
            if !allowed.contains(ty.dtype) {
                return Err(format!("`iota` of dtype {} (only {allowed})", ty.dtype));
            }
            if *axis as usize >= ty.shape.rank() {
                return Err(format!("axis {axis} out of range for rank {}", ty.shape.rank()));
            }
            match inputs.first() {
                Some(x) if x.shape != ty.shape => {
                    Err(format!("`iota` copies shape {} but is typed {}", x.shape, ty.shape))
                }
                _ => Ok(()),
            }
        }
        Op::Random { .. } => check_random(op, inputs, ty),
        Op::Reshape => {
            let x = inputs.first().ok_or("`reshape` without input")?;
            if x.dtype != ty.dtype {
                return Err(format!("`reshape` changes dtype {} to {}", x.dtype, ty.dtype));
            }
            match (x.shape.as_const(), ty.shape.as_const()) {
                (Some(a), Some(b)) if a.iter().product::<u64>() != b.iter().product::<u64>() => {
                    Err(format!("cannot reshape {} to {}", x.shape, ty.shape))
                }
                _ => Ok(()),
            }
        }
        Op::BroadcastTo => {
            let x = inputs.first().ok_or("`broadcast_to` without input")?;
            if x.dtype != ty.dtype {
                return Err(format!("`broadcast_to` changes dtype {} to {}", x.dtype, ty.dtype));
            }
            if x.shape.rank() > ty.shape.rank()
                || broadcast_shapes(&x.shape, &ty.shape).as_ref() != Some(&ty.shape)
            {
                return Err(format!("cannot broadcast {} to {}", x.shape, ty.shape));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// `rand_like`/`randn_like`: a float result, an `i64` key of shape `[]` or `[n]` (`n` = 2 is
/// checked when the size is known: the lowering unifies it with 2, the run checks the value),
/// and the shape of the tensor it copies, if it has one.
fn check_random(op: &Op, inputs: &[&TensorType], ty: &TensorType) -> Result<(), String> {
    let name = op.name();
    if !ty.dtype.is_float() {
        return Err(format!("`{name}` makes floats, not {}", ty.dtype));
    }
    let key = inputs.first().ok_or_else(|| format!("`{name}` without a key"))?;
    let key_shape_ok = match key.shape.dims() {
        [] => true,
        [d] => !matches!(d, Dim::Const(c) if *c != 2),
        _ => false,
    };
    if key.dtype != DType::I64 || !key_shape_ok {
        return Err(format!("`{name}`: the key must be i64 of shape [] or [2], got {key}"));
    }
    match inputs.get(1) {
        Some(x) if x.shape != ty.shape => {
            Err(format!("`{name}` copies shape {} but is typed {}", x.shape, ty.shape))
        }
        _ => Ok(()),
    }
}
