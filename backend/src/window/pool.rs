//! Pooling kernels: direct loops per plane (threads split the planes), each window clipped
//! to the input once, so the inner loops have no bounds tests.

use super::{split, Shared};
use crate::buffers::RawBuf;
use crate::error::RunError;
use tfn_ir::op_window::PoolGeom;
use tfn_ir::{DType, WindowKind};

trait Real:
    Copy + Send + Sync + PartialOrd + std::ops::Add<Output = Self> + std::ops::Div<Output = Self>
{
    const ZERO: Self;
    const NEG_INF: Self;
    fn count(n: usize) -> Self;
    fn nan(self) -> bool;
}

impl Real for f32 {
    const ZERO: f32 = 0.0;
    const NEG_INF: f32 = f32::NEG_INFINITY;
    fn count(n: usize) -> f32 {
        n as f32
    }
    fn nan(self) -> bool {
        self.is_nan()
    }
}

impl Real for f64 {
    const ZERO: f64 = 0.0;
    const NEG_INF: f64 = f64::NEG_INFINITY;
    fn count(n: usize) -> f64 {
        n as f64
    }
    fn nan(self) -> bool {
        self.is_nan()
    }
}

/// Runs pooling `kind`: `x` is the pooled input (forward ops, `max_pool2d_grad`) or the
/// incoming gradient (`avg_pool2d_grad`), `dy` the incoming gradient of `max_pool2d_grad`.
///
/// # Safety
/// As [`super::run_window`]; `g` describes the buffers.
pub(super) unsafe fn run(
    kind: WindowKind,
    g: &PoolGeom,
    x: RawBuf,
    dy: Option<RawBuf>,
    out: RawBuf,
    threads: usize,
) -> Result<(), RunError> {
    let dy = dy.map_or(std::ptr::null_mut(), |b| b.ptr);
    // SAFETY (both arms): the caller's contract.
    match x.dtype {
        DType::F32 => unsafe { typed::<f32>(kind, g, x.ptr as _, dy as _, out.ptr as _, threads) },
        DType::F64 => unsafe { typed::<f64>(kind, g, x.ptr as _, dy as _, out.ptr as _, threads) },
        d => Err(RunError::Internal(format!("{kind} of {d}"))),
    }
}

/// The taps of window `(i, j)` along one axis inside `0..size`: first tap, tap count, and the
/// input position of the first tap.
#[inline]
fn taps(start: isize, k: usize, d: usize, size: usize) -> (usize, usize, usize) {
    let d = d as isize;
    let first = if start < 0 { ((-start) + d - 1) / d } else { 0 };
    let last = (size as isize - 1 - start).div_euclid(d) + 1; // taps with position < size
    let last = last.clamp(0, k as isize);
    let first = first.min(last);
    (first as usize, (last - first) as usize, (start + first * d).max(0) as usize)
}

unsafe fn typed<T: Real>(
    kind: WindowKind,
    g: &PoolGeom,
    x: *const T,
    dy: *const T,
    out: *mut T,
    threads: usize,
) -> Result<(), RunError> {
    let g = *g;
    let (x, dy, out) = (Shared(x as *mut T), Shared(dy as *mut T), Shared(out));
    let (plane, oplane) = (g.h * g.w, g.oh * g.ow);
    let work = g.planes * oplane * g.kernel[0] * g.kernel[1];
    let body = |lo: usize, hi: usize| {
        let (x, dy, out) = (&x, &dy, &out);
        for p in lo..hi {
            // SAFETY: plane `p` of every operand is inside its buffer; the output plane is
            // this thread's alone.
            let (xp, op, dp) = unsafe {
                match kind {
                    WindowKind::MaxPool | WindowKind::AvgPool => (
                        std::slice::from_raw_parts(x.0.add(p * plane), plane),
                        std::slice::from_raw_parts_mut(out.0.add(p * oplane), oplane),
                        &[][..],
                    ),
                    WindowKind::MaxPoolGrad => (
                        std::slice::from_raw_parts(x.0.add(p * plane), plane),
                        std::slice::from_raw_parts_mut(out.0.add(p * plane), plane),
                        std::slice::from_raw_parts(dy.0.add(p * oplane), oplane),
                    ),
                    _ => (
                        std::slice::from_raw_parts(x.0.add(p * oplane), oplane),
                        std::slice::from_raw_parts_mut(out.0.add(p * plane), plane),
                        &[][..],
                    ),
                }
            };
            if matches!(kind, WindowKind::MaxPoolGrad | WindowKind::AvgPoolGrad) {
                op.fill(T::ZERO);
            }
            for i in 0..g.oh {
                for j in 0..g.ow {
                    let (r0, c0) = g.start(i, j);
                    match kind {
                        WindowKind::MaxPool | WindowKind::MaxPoolGrad => {
                            let (_, nr, r) = taps(r0, g.kernel[0], g.dilation[0], g.h);
                            let (_, nc, c) = taps(c0, g.kernel[1], g.dilation[1], g.w);
                            let (mut best, mut at) = (T::NEG_INF, usize::MAX);
                            for a in 0..nr {
                                let row = (r + a * g.dilation[0]) * g.w + c;
                                for b in 0..nc {
                                    let q = row + b * g.dilation[1];
                                    let v = xp[q];
                                    if at == usize::MAX || v > best || v.nan() {
                                        best = v;
                                        at = q;
                                    }
                                }
                            }
                            if kind == WindowKind::MaxPool {
                                op[i * g.ow + j] = best;
                            } else if at != usize::MAX {
                                op[at] = op[at] + dp[i * g.ow + j];
                            }
                        }
                        _ => {
                            let (rows, cols, div) = g.avg_window(i, j);
                            if kind == WindowKind::AvgPool {
                                let mut sum = T::ZERO;
                                for r in rows[0]..rows[1] {
                                    for v in &xp[r * g.w + cols[0]..r * g.w + cols[1]] {
                                        sum = sum + *v;
                                    }
                                }
                                op[i * g.ow + j] = sum / T::count(div);
                            } else {
                                let v = xp[i * g.ow + j] / T::count(div);
                                for r in rows[0]..rows[1] {
                                    for o in &mut op[r * g.w + cols[0]..r * g.w + cols[1]] {
                                        *o = *o + v;
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    split(g.planes, threads, work, &body)
}
