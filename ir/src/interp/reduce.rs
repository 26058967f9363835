//! Reductions (`sum`, `mean`, `max`, `min`, `prod` over several axes), `argmax` and `argmin`.
//!
//! Several axes are reduced one at a time, last axis first, each with a fold over the lanes of
//! that axis. `f32` sums, means and products accumulate in `f64`. Axes of size 0 give the
//! identity for `sum` (0) and `prod` (1), NaN for `mean`, and an error for `max`, `min` and
//! `argmax`; a NaN is the maximum (and minimum) of any lane it is in.

use super::{OpError, OpResult};
use crate::op::ReduceOp;
use crate::tensor::Tensor;
use ndarray::{ArrayD, ArrayViewD, Axis, RemoveAxis, Zip};

/// Folds `a` over `axes` (sorted, unique, in range) with `f` starting from `init`.
fn fold_axes<T: Copy>(
    a: ArrayViewD<'_, T>,
    axes: &[usize],
    init: T,
    f: impl Fn(T, T) -> T,
) -> ArrayD<T> {
    // The last axis folds each contiguous lane; any other axis accumulates whole sub-arrays,
    // so that the inner loop runs over contiguous memory either way.
    let fold_one = |v: ArrayViewD<'_, T>, axis: usize| -> ArrayD<T> {
        // No element: the identity everywhere, without walking a long empty axis.
        if v.is_empty() {
            return ArrayD::from_elem(v.raw_dim().remove_axis(Axis(axis)), init);
        }
        if axis + 1 == v.ndim() {
            return Zip::from(v.lanes(Axis(axis)))
                .map_collect(|lane| lane.fold(init, |acc, &x| f(acc, x)));
        }
        let mut acc = ArrayD::from_elem(v.raw_dim().remove_axis(Axis(axis)), init);
        for sub in v.axis_iter(Axis(axis)) {
            Zip::from(&mut acc).and(&sub).for_each(|acc, &x| *acc = f(*acc, x));
        }
        acc
    };
    let mut current: Option<ArrayD<T>> = None;
    for &axis in axes.iter().rev() {
        current = Some(match &current {
            Some(c) => fold_one(c.view(), axis),
            None => fold_one(a.view(), axis),
        });
    }
    current.unwrap_or_else(|| a.to_owned())
}

fn max_nan<T: PartialOrd + Copy>(acc: T, x: T) -> T {
    // `x != x` is true exactly for NaN; once `acc` is NaN, `x > acc` is false and it stays.
    #[allow(clippy::eq_op)]
    let x_is_nan = x != x;
    if x > acc || x_is_nan {
        x
    } else {
        acc
    }
}

fn min_nan<T: PartialOrd + Copy>(acc: T, x: T) -> T {
    #[allow(clippy::eq_op)]
    let x_is_nan = x != x;
    if x < acc || x_is_nan {
        x
    } else {
        acc
    }
}

/// `x`, or the default NaN where it is NaN: a `max`/`min` reduction's NaN does not depend on
/// which NaN the input held (the JIT's `codegen::ops::default_nan`, x86's invalid-operation
/// NaN: sign set, quiet, no payload).
trait DefaultNan: Copy {
    fn or_default_nan(self) -> Self;
}

impl DefaultNan for f32 {
    fn or_default_nan(self) -> f32 {
        if self.is_nan() {
            f32::from_bits(0xffc0_0000)
        } else {
            self
        }
    }
}

impl DefaultNan for f64 {
    fn or_default_nan(self) -> f64 {
        if self.is_nan() {
            f64::from_bits(0xfff8_0000_0000_0000)
        } else {
            self
        }
    }
}

macro_rules! float_reduce {
    ($a:expr, $op:expr, $axes:expr, $t:ty) => {{
        let (a, axes) = ($a, $axes);
        let count: usize = axes.iter().map(|&ax| a.shape()[ax]).product();
        match $op {
            ReduceOp::Sum => {
                fold_axes(a.mapv(f64::from).view(), axes, 0.0, |x, y| x + y).mapv(|x| x as $t)
            }
            ReduceOp::Prod => {
                fold_axes(a.mapv(f64::from).view(), axes, 1.0, |x, y| x * y).mapv(|x| x as $t)
            }
            ReduceOp::Mean => fold_axes(a.mapv(f64::from).view(), axes, 0.0, |x, y| x + y)
                .mapv(|x| (x / count as f64) as $t),
            ReduceOp::Max => fold_axes(a.view(), axes, <$t>::NEG_INFINITY, max_nan)
                .mapv(DefaultNan::or_default_nan),
            ReduceOp::Min => {
                fold_axes(a.view(), axes, <$t>::INFINITY, min_nan).mapv(DefaultNan::or_default_nan)
            }
        }
    }};
}

macro_rules! int_reduce {
    ($a:expr, $op:expr, $axes:expr, $t:ty, $dtype:expr) => {{
        let (a, axes) = ($a, $axes);
        match $op {
            ReduceOp::Sum => fold_axes(a.view(), axes, 0, <$t>::wrapping_add),
            ReduceOp::Prod => fold_axes(a.view(), axes, 1, <$t>::wrapping_mul),
            ReduceOp::Max => fold_axes(a.view(), axes, <$t>::MIN, |x, y| x.max(y)),
            ReduceOp::Min => fold_axes(a.view(), axes, <$t>::MAX, |x, y| x.min(y)),
            ReduceOp::Mean => return Err(OpError::Unsupported($dtype)),
        }
    }};
}

/// Checks `axes` against `rank`; returns them sorted and deduplicated.
fn checked_axes(axes: impl IntoIterator<Item = u32>, rank: usize) -> Result<Vec<usize>, OpError> {
    let mut out: Vec<usize> = axes.into_iter().map(|a| a as usize).collect();
    out.sort_unstable();
    out.dedup();
    match out.last() {
        Some(&last) if last >= rank => {
            Err(OpError::Internal(format!("axis {last} is out of range for rank {rank}")))
        }
        _ => Ok(out),
    }
}

/// Inserts the reduced `axes` back as size-1 axes.
fn keep_dims<T>(mut a: ArrayD<T>, axes: &[usize]) -> ArrayD<T> {
    for &axis in axes {
        a.insert_axis_inplace(Axis(axis));
    }
    a
}

pub(crate) fn reduce(op: ReduceOp, t: &Tensor, axes: &[u32], keepdim: bool) -> OpResult {
    let axes = checked_axes(axes.iter().copied(), t.shape().len())?;
    if matches!(op, ReduceOp::Max | ReduceOp::Min) && axes.iter().any(|&ax| t.shape()[ax] == 0) {
        return Err(OpError::ZeroSizeReduction);
    }
    let result = match t {
        Tensor::F32(a) => Tensor::F32(float_reduce!(a, op, &axes, f32)),
        Tensor::F64(a) => Tensor::F64(float_reduce!(a, op, &axes, f64)),
        Tensor::I32(a) => Tensor::I32(int_reduce!(a, op, &axes, i32, t.dtype())),
        Tensor::I64(a) => Tensor::I64(int_reduce!(a, op, &axes, i64, t.dtype())),
        Tensor::Bool(a) => match op {
            ReduceOp::Max => Tensor::Bool(fold_axes(a.view(), &axes, false, |x, y| x | y)),
            ReduceOp::Min => Tensor::Bool(fold_axes(a.view(), &axes, true, |x, y| x & y)),
            _ => return Err(OpError::Unsupported(t.dtype())),
        },
        // Lowering widens storage dtypes (`crate::storage`).
        Tensor::I8(_) | Tensor::U8(_) | Tensor::F16(_) | Tensor::BF16(_) => {
            return Err(OpError::Unsupported(t.dtype()))
        }
    };
    Ok(if keepdim { super::map_any!(result, a => keep_dims(a, &axes)) } else { result })
}

/// Index of the first maximum of each lane along `axis`; `better(x, best)` says whether `x`
/// beats the best so far.
fn argmax_lanes<T: Copy>(a: &ArrayD<T>, axis: usize, better: impl Fn(T, T) -> bool) -> ArrayD<i64> {
    Zip::from(a.lanes(Axis(axis))).map_collect(|lane| {
        let mut best_index = 0usize;
        let mut best: Option<T> = None;
        for (i, &x) in lane.iter().enumerate() {
            match best {
                Some(b) if !better(x, b) => {}
                _ => {
                    best = Some(x);
                    best_index = i;
                }
            }
        }
        best_index as i64
    })
}

fn float_better<T: PartialOrd + Copy>(x: T, best: T) -> bool {
    #[allow(clippy::eq_op)]
    let (x_nan, best_nan) = (x != x, best != best);
    x > best || (x_nan && !best_nan)
}

fn float_less<T: PartialOrd + Copy>(x: T, best: T) -> bool {
    #[allow(clippy::eq_op)]
    let (x_nan, best_nan) = (x != x, best != best);
    x < best || (x_nan && !best_nan)
}

/// Index of the first minimum along `axis`, a NaN counting as the minimum (NumPy's
/// `argmin`: the first NaN wins).
pub(crate) fn argmin(t: &Tensor, axis: u32, keepdim: bool) -> OpResult {
    let axes = checked_axes([axis], t.shape().len())?;
    let axis = axis as usize;
    if t.shape()[axis] == 0 {
        return Err(OpError::ZeroSizeReduction);
    }
    let indices = match t {
        Tensor::F32(a) => argmax_lanes(a, axis, float_less),
        Tensor::F64(a) => argmax_lanes(a, axis, float_less),
        Tensor::I32(a) => argmax_lanes(a, axis, |x, b| x < b),
        Tensor::I64(a) => argmax_lanes(a, axis, |x, b| x < b),
        Tensor::Bool(a) => argmax_lanes(a, axis, |x, b| !x & b),
        // Lowering widens storage dtypes (`crate::storage`).
        Tensor::I8(_) | Tensor::U8(_) | Tensor::F16(_) | Tensor::BF16(_) => {
            return Err(OpError::Unsupported(t.dtype()))
        }
    };
    Ok(Tensor::I64(if keepdim { keep_dims(indices, &axes) } else { indices }))
}

pub(crate) fn argmax(t: &Tensor, axis: u32, keepdim: bool) -> OpResult {
    let axes = checked_axes([axis], t.shape().len())?;
    let axis = axis as usize;
    if t.shape()[axis] == 0 {
        return Err(OpError::ZeroSizeReduction);
    }
    let indices = match t {
        Tensor::F32(a) => argmax_lanes(a, axis, float_better),
        Tensor::F64(a) => argmax_lanes(a, axis, float_better),
        Tensor::I32(a) => argmax_lanes(a, axis, |x, b| x > b),
        Tensor::I64(a) => argmax_lanes(a, axis, |x, b| x > b),
        Tensor::Bool(a) => argmax_lanes(a, axis, |x, b| x & !b),
        Tensor::I8(_) | Tensor::U8(_) | Tensor::F16(_) | Tensor::BF16(_) => {
            return Err(OpError::Unsupported(t.dtype()))
        }
    };
    Ok(Tensor::I64(if keepdim { keep_dims(indices, &axes) } else { indices }))
}
