//! Index and scan kernels: `iota` (the index along an axis), `cumsum`/`cumprod` and the
//! gradient of `cumprod`.
//!
//! Scans run sequentially along their axis in the operand's own dtype (NumPy's `cumsum` and
//! `cumprod` of a float32 array also accumulate in float32, element after element): integers
//! wrap; the per-element `+` and `·` are [`scalar::float_binary`] and [`scalar::int_binary`].
//! `exclusive` leaves each element out of its own result (the first result is the identity);
//! `reverse` runs from the end of the axis.

use super::scalar::{self, FloatElem, IntElem};
use super::{OpError, OpResult};
use crate::dtype::DType;
use crate::op::{BinaryOp, ScanOp};
use crate::tensor::Tensor;
use ndarray::{ArrayD, ArrayViewMut1, Axis, IxDyn, Zip};

/// The index along `axis` of each element of `shape`, as `dtype`.
pub(crate) fn iota(shape: &[usize], axis: u32, dtype: DType) -> OpResult {
    let axis = axis as usize;
    if axis >= shape.len() {
        return Err(OpError::Internal(format!("axis {axis} is out of range for {shape:?}")));
    }
    let make = |i: &IxDyn| i[axis];
    Ok(match dtype {
        DType::I32 => Tensor::I32(ArrayD::from_shape_fn(IxDyn(shape), |i| make(&i) as i32)),
        DType::I64 => Tensor::I64(ArrayD::from_shape_fn(IxDyn(shape), |i| make(&i) as i64)),
        DType::F32 => Tensor::F32(ArrayD::from_shape_fn(IxDyn(shape), |i| make(&i) as f32)),
        DType::F64 => Tensor::F64(ArrayD::from_shape_fn(IxDyn(shape), |i| make(&i) as f64)),
        // Lowering computes a storage-dtype index in its compute dtype and casts it.
        DType::Bool | DType::I8 | DType::U8 | DType::F16 | DType::BF16 => {
            return Err(OpError::Unsupported(dtype))
        }
    })
}

/// Runs `step(acc, x)` along one lane in scan order, writing each result in place.
fn scan_lane<T: Copy>(
    mut lane: ArrayViewMut1<'_, T>,
    identity: T,
    exclusive: bool,
    reverse: bool,
    step: &impl Fn(T, T) -> T,
) {
    let n = lane.len();
    let mut acc = identity;
    for k in 0..n {
        let i = if reverse { n - 1 - k } else { k };
        let x = lane[i];
        let next = step(acc, x);
        lane[i] = if exclusive { acc } else { next };
        acc = next;
    }
}

fn scan_array<T: Copy>(
    a: &ArrayD<T>,
    axis: usize,
    identity: T,
    exclusive: bool,
    reverse: bool,
    step: impl Fn(T, T) -> T,
) -> ArrayD<T> {
    let mut out = a.as_standard_layout().into_owned();
    Zip::from(out.lanes_mut(Axis(axis)))
        .for_each(|lane| scan_lane(lane, identity, exclusive, reverse, &step));
    out
}

fn float_scan<T: FloatElem + From<f32>>(
    op: ScanOp,
    a: &ArrayD<T>,
    axis: usize,
    ex: bool,
    rev: bool,
) -> ArrayD<T> {
    let (bin, identity) = match op {
        ScanOp::Sum => (BinaryOp::Add, T::from(0.0)),
        ScanOp::Prod => (BinaryOp::Mul, T::from(1.0)),
    };
    scan_array(a, axis, identity, ex, rev, move |acc, x| {
        scalar::float_binary(bin, acc, x).unwrap_or(acc)
    })
}

fn int_scan<T: IntElem + From<i32>>(
    op: ScanOp,
    a: &ArrayD<T>,
    axis: usize,
    ex: bool,
    rev: bool,
) -> ArrayD<T> {
    let (bin, identity) = match op {
        ScanOp::Sum => (BinaryOp::Add, T::from(0)),
        ScanOp::Prod => (BinaryOp::Mul, T::from(1)),
    };
    scan_array(a, axis, identity, ex, rev, move |acc, x| {
        scalar::int_binary(bin, acc, x).unwrap_or(acc)
    })
}

/// `cumsum` / `cumprod` of `t` along `axis`.
pub(crate) fn scan(op: ScanOp, t: &Tensor, axis: u32, exclusive: bool, reverse: bool) -> OpResult {
    let axis = axis as usize;
    if axis >= t.shape().len() {
        return Err(OpError::Internal(format!("axis {axis} is out of range for {:?}", t.shape())));
    }
    Ok(match t {
        Tensor::F32(a) => Tensor::F32(float_scan(op, a, axis, exclusive, reverse)),
        Tensor::F64(a) => Tensor::F64(float_scan(op, a, axis, exclusive, reverse)),
        Tensor::I32(a) => Tensor::I32(int_scan(op, a, axis, exclusive, reverse)),
        Tensor::I64(a) => Tensor::I64(int_scan(op, a, axis, exclusive, reverse)),
        // Lowering widens storage dtypes (`crate::storage`).
        Tensor::Bool(_) | Tensor::I8(_) | Tensor::U8(_) | Tensor::F16(_) | Tensor::BF16(_) => {
            return Err(OpError::Unsupported(t.dtype()))
        }
    })
}

/// The gradient of one lane of `cumprod` (scan order: `x[0]` is the first element scanned),
/// written into `dx`. With `E_i = x_0 ⋯ x_{i-1}` (exclusive cumprod):
/// inclusive: `dx_i = E_i · S_i`, `S_i = g_i + x_{i+1} S_{i+1}` (`S_{n-1} = g_{n-1}`);
/// exclusive: `dx_i = E_i · S_i`, `S_i = g_{i+1} + x_{i+1} S_{i+1}` (`S_{n-1} = 0`).
/// No division, so zeros in `x` are exact; two passes, linear in the size.
pub fn cumprod_grad_lane<T: Copy + std::ops::Add<Output = T> + std::ops::Mul<Output = T>>(
    x: &[T],
    g: &[T],
    exclusive: bool,
    zero: T,
    one: T,
) -> Vec<T> {
    let n = x.len();
    let mut s = vec![zero; n];
    // One recurrence for every step, the last included (`x_next = g_next = acc = 0` there),
    // in the JIT's operation order.
    let (mut acc, mut g_next, mut x_next) = (zero, zero, zero);
    for i in (0..n).rev() {
        let own = if exclusive { g_next } else { g[i] };
        acc = own + x_next * acc;
        s[i] = acc;
        g_next = g[i];
        x_next = x[i];
    }
    let mut e = one;
    for i in 0..n {
        s[i] = e * s[i];
        e = e * x[i];
    }
    s
}

fn grad_array<T>(
    x: &ArrayD<T>,
    g: &ArrayD<T>,
    axis: usize,
    exclusive: bool,
    reverse: bool,
    zero: T,
    one: T,
) -> ArrayD<T>
where
    T: Copy + std::ops::Add<Output = T> + std::ops::Mul<Output = T>,
{
    let mut out = x.as_standard_layout().into_owned();
    Zip::from(out.lanes_mut(Axis(axis)))
        .and(x.lanes(Axis(axis)))
        .and(g.lanes(Axis(axis)))
        .for_each(|mut o, xl, gl| {
            let order = |v: ndarray::ArrayView1<'_, T>| -> Vec<T> {
                let mut v: Vec<T> = v.iter().copied().collect();
                if reverse {
                    v.reverse();
                }
                v
            };
            let mut d = cumprod_grad_lane(&order(xl), &order(gl), exclusive, zero, one);
            if reverse {
                d.reverse();
            }
            for (slot, v) in o.iter_mut().zip(d) {
                *slot = v;
            }
        });
    out
}

/// The gradient of `cumprod(x, axis, exclusive, reverse)` for the incoming gradient `g`.
pub(crate) fn cumprod_grad(
    x: &Tensor,
    g: &Tensor,
    axis: u32,
    exclusive: bool,
    reverse: bool,
) -> OpResult {
    let axis = axis as usize;
    if axis >= x.shape().len() || x.shape() != g.shape() {
        return Err(OpError::Internal(format!(
            "`cumprod_grad` of {:?} along {axis} with a gradient {:?}",
            x.shape(),
            g.shape()
        )));
    }
    Ok(match (x, g) {
        (Tensor::F32(x), Tensor::F32(g)) => {
            Tensor::F32(grad_array(x, g, axis, exclusive, reverse, 0.0, 1.0))
        }
        (Tensor::F64(x), Tensor::F64(g)) => {
            Tensor::F64(grad_array(x, g, axis, exclusive, reverse, 0.0, 1.0))
        }
        _ => return Err(OpError::Unsupported(x.dtype())),
    })
}
