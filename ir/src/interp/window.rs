//! The window ops (`conv2d`, `conv_transpose2d`, `conv2d_weight`, pooling and its gradients;
//! semantics in `crate::op_window`): the reference kernels, direct loops over row-major
//! buffers, one output (or one input, for the adjoints) element at a time in a fixed order.

use super::{OpError, OpResult};
use crate::op_window::{conv_geom, pool_geom, ConvGeom, PoolGeom, WindowAttrs, WindowKind};
use crate::tensor::Tensor;
use ndarray::{ArrayD, IxDyn};

/// The float element types the window ops run on.
trait Real:
    Copy
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
{
    const ZERO: Self;
    const NEG_INF: Self;
    fn from_usize(n: usize) -> Self;
    fn is_nan(self) -> bool;
}

impl Real for f32 {
    const ZERO: f32 = 0.0;
    const NEG_INF: f32 = f32::NEG_INFINITY;
    fn from_usize(n: usize) -> f32 {
        n as f32
    }
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
}

impl Real for f64 {
    const ZERO: f64 = 0.0;
    const NEG_INF: f64 = f64::NEG_INFINITY;
    fn from_usize(n: usize) -> f64 {
        n as f64
    }
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
}

fn slice_of<T: Clone>(a: &ArrayD<T>) -> std::borrow::Cow<'_, [T]> {
    match a.as_slice() {
        Some(s) => std::borrow::Cow::Borrowed(s),
        None => std::borrow::Cow::Owned(a.iter().cloned().collect()),
    }
}

fn array<T>(shape: &[usize], data: Vec<T>) -> Result<ArrayD<T>, OpError> {
    ArrayD::from_shape_vec(IxDyn(shape), data).map_err(|e| OpError::Internal(e.to_string()))
}

/// Runs window op `kind` on `args`, producing the node's `expected` shape.
pub(crate) fn eval(
    kind: WindowKind,
    attrs: &WindowAttrs,
    args: &[&Tensor],
    expected: &[usize],
) -> OpResult {
    let shapes: Vec<&[usize]> = args.iter().map(|t| t.shape()).collect();
    macro_rules! go {
        ($variant:ident) => {{
            let data: Vec<std::borrow::Cow<'_, [_]>> = args
                .iter()
                .enumerate()
                .map(|(i, t)| match t {
                    Tensor::$variant(a) => Ok(slice_of(a)),
                    _ if kind.shape_only(i) => Ok(std::borrow::Cow::Owned(Vec::new())),
                    other => Err(OpError::Unsupported(other.dtype())),
                })
                .collect::<Result<_, _>>()?;
            let refs: Vec<&[_]> = data.iter().map(|d| d.as_ref()).collect();
            Ok(Tensor::$variant(array(expected, run(kind, attrs, &shapes, &refs, expected)?)?))
        }};
    }
    match args.first() {
        Some(Tensor::F32(_)) => go!(F32),
        Some(Tensor::F64(_)) => go!(F64),
        Some(other) => Err(OpError::Unsupported(other.dtype())),
        None => Err(OpError::Internal(format!("`{kind}` without operands"))),
    }
}

fn run<T: Real>(
    kind: WindowKind,
    attrs: &WindowAttrs,
    shapes: &[&[usize]],
    data: &[&[T]],
    out: &[usize],
) -> Result<Vec<T>, OpError> {
    let count: usize = out.iter().product();
    let mut result = vec![T::ZERO; count];
    let operand =
        |i: usize| data.get(i).copied().ok_or_else(|| OpError::Internal("operand".into()));
    if kind.is_conv() {
        let g = conv_geom(kind, attrs, shapes, out).map_err(OpError::Shape)?;
        match kind {
            WindowKind::Conv => conv(&g, operand(0)?, operand(1)?, &mut result),
            WindowKind::ConvTranspose => conv_transpose(&g, operand(0)?, operand(1)?, &mut result),
            _ => conv_weight(&g, operand(0)?, operand(1)?, &mut result),
        }
        return Ok(result);
    }
    let pooled = |i: usize| shapes.get(i).copied().ok_or_else(|| OpError::Internal("shape".into()));
    match kind {
        WindowKind::MaxPool | WindowKind::AvgPool => {
            let g = pool_geom(kind, attrs, pooled(0)?, out).map_err(OpError::Shape)?;
            let x = operand(0)?;
            for p in 0..g.planes {
                let (xp, op) = (&x[p * g.h * g.w..], &mut result[p * g.oh * g.ow..]);
                for i in 0..g.oh {
                    for j in 0..g.ow {
                        op[i * g.ow + j] = if kind == WindowKind::MaxPool {
                            max_at(&g, xp, i, j).0
                        } else {
                            avg_at(&g, xp, i, j)
                        };
                    }
                }
            }
        }
        WindowKind::MaxPoolGrad => {
            let g = pool_geom(kind, attrs, pooled(0)?, pooled(1)?).map_err(OpError::Shape)?;
            let (x, gy) = (operand(0)?, operand(1)?);
            for p in 0..g.planes {
                let xp = &x[p * g.h * g.w..];
                for i in 0..g.oh {
                    for j in 0..g.ow {
                        if let Some(at) = max_at(&g, xp, i, j).1 {
                            let q = p * g.h * g.w + at;
                            result[q] = result[q] + gy[(p * g.oh + i) * g.ow + j];
                        }
                    }
                }
            }
        }
        WindowKind::AvgPoolGrad => {
            let g = pool_geom(kind, attrs, pooled(1)?, pooled(0)?).map_err(OpError::Shape)?;
            let gy = operand(0)?;
            for p in 0..g.planes {
                for i in 0..g.oh {
                    for j in 0..g.ow {
                        let (rows, cols, div) = g.avg_window(i, j);
                        let v = gy[(p * g.oh + i) * g.ow + j] / T::from_usize(div);
                        for r in rows[0]..rows[1] {
                            for c in cols[0]..cols[1] {
                                let q = (p * g.h + r) * g.w + c;
                                result[q] = result[q] + v;
                            }
                        }
                    }
                }
            }
        }
        _ => return Err(OpError::Internal(format!("`{kind}` is not a pooling"))),
    }
    Ok(result)
}

/// The maximum of window `(i, j)` of one plane and its offset: the first maximum in window
/// order, or the last NaN (PyTorch's rule); `None` for a window of padding only.
fn max_at<T: Real>(g: &PoolGeom, x: &[T], i: usize, j: usize) -> (T, Option<usize>) {
    let (r0, c0) = g.start(i, j);
    let (mut best, mut at) = (T::NEG_INF, None);
    for a in 0..g.kernel[0] {
        let r = r0 + (a * g.dilation[0]) as isize;
        if r < 0 || r >= g.h as isize {
            continue;
        }
        for b in 0..g.kernel[1] {
            let c = c0 + (b * g.dilation[1]) as isize;
            if c < 0 || c >= g.w as isize {
                continue;
            }
            let q = r as usize * g.w + c as usize;
            let v = x[q];
            if at.is_none() || v > best || v.is_nan() {
                best = v;
                at = Some(q);
            }
        }
    }
    (best, at)
}

fn avg_at<T: Real>(g: &PoolGeom, x: &[T], i: usize, j: usize) -> T {
    let (rows, cols, div) = g.avg_window(i, j);
    let mut sum = T::ZERO;
    for r in rows[0]..rows[1] {
        for c in cols[0]..cols[1] {
            sum = sum + x[r * g.w + c];
        }
    }
    sum / T::from_usize(div)
}

/// Calls `f(big offset, small offset, weight offset)` for every term of the convolution, in
/// a fixed order (batch, output channel, output position, input channel, window).
fn for_each_term(g: &ConvGeom, mut f: impl FnMut(usize, usize, usize)) {
    let (cin_g, cout_g) = (g.cin_g(), g.cout_g());
    for n in 0..g.n {
        for o in 0..g.cout {
            let group = o / cout_g;
            for i in 0..g.oh {
                for j in 0..g.ow {
                    let s = ((n * g.cout + o) * g.oh + i) * g.ow + j;
                    for c in 0..cin_g {
                        let ch = group * cin_g + c;
                        for a in 0..g.kh {
                            let Some(r) = g.in_row(i, a) else { continue };
                            for b in 0..g.kw {
                                let Some(col) = g.in_col(j, b) else { continue };
                                let big = ((n * g.cin + ch) * g.h + r) * g.w + col;
                                let w = ((o * cin_g + c) * g.kh + a) * g.kw + b;
                                f(big, s, w);
                            }
                        }
                    }
                }
            }
        }
    }
}

fn conv<T: Real>(g: &ConvGeom, x: &[T], w: &[T], out: &mut [T]) {
    for_each_term(g, |big, s, k| out[s] = out[s] + x[big] * w[k]);
}

fn conv_transpose<T: Real>(g: &ConvGeom, x: &[T], w: &[T], out: &mut [T]) {
    for_each_term(g, |big, s, k| out[big] = out[big] + x[s] * w[k]);
}

fn conv_weight<T: Real>(g: &ConvGeom, x: &[T], gy: &[T], out: &mut [T]) {
    for_each_term(g, |big, s, k| out[k] = out[k] + x[big] * gy[s]);
}
