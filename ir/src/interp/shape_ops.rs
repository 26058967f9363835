//! Shape ops: `reshape` (row-major), `transpose`, `concat` and Python-style `slice`.

use super::{map_any, OpError, OpResult};
use crate::bind::slice_range;
use crate::tensor::Tensor;
use ndarray::{concatenate, ArrayD, ArrayViewD, Axis, IxDyn, Slice};

fn reshape_array<T: Clone>(a: &ArrayD<T>, shape: &[usize]) -> Result<ArrayD<T>, OpError> {
    let count: usize = shape.iter().product();
    if count != a.len() {
        return Err(OpError::Shape(format!(
            "cannot reshape {:?} ({} elements) to {shape:?} ({count} elements)",
            a.shape(),
            a.len()
        )));
    }
    a.as_standard_layout()
        .into_owned()
        .into_shape_with_order(IxDyn(shape))
        .map_err(|e| OpError::Internal(format!("reshape: {e}")))
}

/// The elements of `t` in row-major order, with shape `shape`.
pub(crate) fn reshape(t: &Tensor, shape: &[usize]) -> OpResult {
    Ok(map_any!(t, a => reshape_array(a, shape)?))
}

/// Output axis `i` is input axis `perm[i]`.
pub(crate) fn transpose(t: &Tensor, perm: &[u32]) -> OpResult {
    let perm: Vec<usize> = perm.iter().map(|&p| p as usize).collect();
    let mut seen = vec![false; perm.len()];
    let valid = perm.len() == t.shape().len()
        && perm.iter().all(|&p| p < seen.len() && !std::mem::replace(&mut seen[p], true));
    if !valid {
        return Err(OpError::Internal(format!(
            "{perm:?} is not a permutation of the axes of {:?}",
            t.shape()
        )));
    }
    Ok(map_any!(t, a => a.view().permuted_axes(IxDyn(&perm)).as_standard_layout().into_owned()))
}

fn concat_views<T: Clone>(axis: usize, views: &[ArrayViewD<'_, T>]) -> Result<ArrayD<T>, OpError> {
    if views.iter().any(|v| axis >= v.ndim()) {
        return Err(OpError::Internal(format!("concat axis {axis} is out of range")));
    }
    concatenate(Axis(axis), views).map_err(|_| {
        let shapes: Vec<String> = views.iter().map(|v| format!("{:?}", v.shape())).collect();
        OpError::Shape(format!("cannot concatenate shapes {} along axis {axis}", shapes.join(", ")))
    })
}

/// Collects the arrays of variant `$variant` from `$ts`, failing if any has another dtype.
macro_rules! views_of {
    ($ts:expr, $variant:ident) => {
        $ts.iter()
            .map(|t| match t {
                Tensor::$variant(a) => Ok(a.view()),
                other => Err(OpError::Internal(format!(
                    "concat operands have different dtypes ({})",
                    other.dtype()
                ))),
            })
            .collect::<Result<Vec<_>, OpError>>()?
    };
}

/// Concatenation along `axis`.
pub(crate) fn concat(ts: &[&Tensor], axis: u32) -> OpResult {
    let axis = axis as usize;
    let Some(first) = ts.first() else {
        return Err(OpError::Internal("concat of no operands".into()));
    };
    Ok(match first {
        Tensor::Bool(_) => Tensor::Bool(concat_views(axis, &views_of!(ts, Bool))?),
        Tensor::I8(_) => Tensor::I8(concat_views(axis, &views_of!(ts, I8))?),
        Tensor::U8(_) => Tensor::U8(concat_views(axis, &views_of!(ts, U8))?),
        Tensor::F16(_) => Tensor::F16(concat_views(axis, &views_of!(ts, F16))?),
        Tensor::BF16(_) => Tensor::BF16(concat_views(axis, &views_of!(ts, BF16))?),
        Tensor::I32(_) => Tensor::I32(concat_views(axis, &views_of!(ts, I32))?),
        Tensor::I64(_) => Tensor::I64(concat_views(axis, &views_of!(ts, I64))?),
        Tensor::F32(_) => Tensor::F32(concat_views(axis, &views_of!(ts, F32))?),
        Tensor::F64(_) => Tensor::F64(concat_views(axis, &views_of!(ts, F64))?),
    })
}

/// `x[start:end:step]` along `axis`, Python semantics.
pub(crate) fn slice(t: &Tensor, axis: u32, start: i64, end: Option<i64>, step: i64) -> OpResult {
    let axis = axis as usize;
    let Some(&size) = t.shape().get(axis) else {
        return Err(OpError::Internal(format!("slice axis {axis} is out of range")));
    };
    let size = i64::try_from(size).map_err(|_| OpError::Internal("axis too long".into()))?;
    let (first, len) = slice_range(size, start, end, step)
        .ok_or_else(|| OpError::Internal("slice with step 0".into()))?;
    let to_isize = |v: i64| {
        isize::try_from(v).map_err(|_| OpError::Internal(format!("slice bound {v} overflows")))
    };
    // ndarray's negative steps walk its range from the back, so give it the range of indices
    // the Python slice visits, [last, first] or [first, last].
    let range = if len == 0 {
        Slice::new(0, Some(0), 1)
    } else {
        let last = first + (len as i64 - 1) * step;
        let (lo, hi) = if step > 0 { (first, last) } else { (last, first) };
        Slice::new(to_isize(lo)?, Some(to_isize(hi + 1)?), to_isize(step)?)
    };
    Ok(map_any!(t, a => a.slice_axis(Axis(axis), range).as_standard_layout().into_owned()))
}
