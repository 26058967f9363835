//! Window ops ([`tfn_passes::fusion::KernelKind::Window`]): native kernels for `conv2d`,
//! `conv_transpose2d`, `conv2d_weight` and the pooling ops (semantics and the shared checks:
//! `tfn_ir::op_window`).
//!
//! - `conv`: f32 convolutions with enough output channels run on the packed GEMM
//!   (`crate::packed_gemm`) per image and group, `W_g · im2col(x_n)`, the im2col matrix never
//!   materialised: [`conv::Im2col`] packs the GEMM's `B` panels straight from the NCHW
//!   image. The fused epilogue runs on each image as soon as it is final.
//! - `conv_grad`: the f32 adjoints (`conv2d_weight`, `conv_transpose2d`) on the same GEMM.
//!   Depthwise/small convolutions and f64 run direct loops with branch-free inner rows.
//! - `pool`: direct loops per plane.
//!
//! Work is split across threads by images (or planes, or weight rows for `conv2d_weight`):
//! disjoint outputs, the same per-element order as one thread.

mod conv;
#[cfg(target_arch = "x86_64")]
mod conv_grad;
mod pool;

use crate::buffers::RawBuf;
use crate::error::RunError;
use crate::matmul::{EpilogueRun, TileEpilogue};
use tfn_ir::op_window::{conv_geom, pool_geom};
use tfn_ir::{ValueId, WindowAttrs, WindowKind};

/// Below this many multiply-adds (or elements) a window op runs on the calling thread.
const MIN_PARALLEL_WORK: usize = 1 << 20;

/// Runs `f(lo, hi)` over `0..count` in up to `threads` contiguous chunks on the
/// [`crate::workers`] pool when `work` is large enough, else on the calling thread.
fn split(
    count: usize,
    threads: usize,
    work: usize,
    f: &(dyn Fn(usize, usize) + Sync),
) -> Result<(), RunError> {
    let chunks = if threads > 1 && work >= MIN_PARALLEL_WORK { threads.min(count) } else { 1 };
    if chunks <= 1 {
        f(0, count);
        return Ok(());
    }
    let per = count.div_ceil(chunks);
    let chunk = |c: usize| {
        let (lo, hi) = ((c * per).min(count), ((c + 1) * per).min(count));
        if lo < hi {
            f(lo, hi);
        }
    };
    crate::workers::run(chunks, threads, &chunk).map_err(|e| RunError::Internal(e.to_string()))
}

/// A raw pointer shared by the threads of one call, each touching a disjoint part.
#[derive(Clone, Copy)]
struct Shared<T>(*mut T);

// SAFETY: used only for buffers that outlive the pool run (`workers::run` returns after every
// chunk has finished), whose chunks read shared inputs
// and write disjoint output ranges (see each kernel).
unsafe impl<T> Sync for Shared<T> {}
unsafe impl<T> Send for Shared<T> {}

/// Runs window op `kind` of node `node`: `inputs` are the operands' buffers and shapes,
/// `out` the result of shape `out_shape`. A forward convolution runs `epilogue` per image as
/// it becomes final when the kernel allows it ([`EpilogueRun::Done`]).
///
/// # Safety
/// Buffers must be live, contiguous row-major for their shapes, of the node's (float) dtype,
/// and `out` must not overlap the inputs.
#[allow(clippy::too_many_arguments)] // one call site: the executor's step
pub(crate) unsafe fn run_window(
    node: ValueId,
    kind: WindowKind,
    attrs: &WindowAttrs,
    inputs: &[(RawBuf, Vec<usize>)],
    out: RawBuf,
    out_shape: &[usize],
    threads: usize,
    epilogue: Option<&TileEpilogue<'_>>,
) -> Result<EpilogueRun, RunError> {
    let shape_error = |message| RunError::Shape { node, op: kind.name().into(), message };
    let shapes: Vec<&[usize]> = inputs.iter().map(|(_, s)| s.as_slice()).collect();
    let buf = |i: usize| {
        inputs
            .get(i)
            .map(|(b, _)| *b)
            .ok_or_else(|| RunError::Internal(format!("`{kind}` operand")))
    };
    if kind.is_conv() {
        let g = conv_geom(kind, attrs, &shapes, out_shape).map_err(shape_error)?;
        let (a, b) = (buf(0)?, buf(1)?);
        // SAFETY (each arm): the caller's contract; the geometry matches the buffers' shapes.
        return Ok(match kind {
            WindowKind::Conv => unsafe { conv::forward(&g, a, b, out, threads, epilogue)? },
            WindowKind::ConvTranspose => {
                unsafe { conv::transpose(&g, a, b, out, threads)? };
                EpilogueRun::Pending
            }
            _ => {
                unsafe { conv::weight(&g, a, b, out, threads)? };
                EpilogueRun::Pending
            }
        });
    }
    let pooled = |i: usize| {
        shapes.get(i).copied().ok_or_else(|| RunError::Internal(format!("`{kind}` operand")))
    };
    let (geom, x, dy) = match kind {
        WindowKind::MaxPool | WindowKind::AvgPool => {
            (pool_geom(kind, attrs, pooled(0)?, out_shape), buf(0)?, None)
        }
        WindowKind::MaxPoolGrad => {
            (pool_geom(kind, attrs, pooled(0)?, pooled(1)?), buf(0)?, Some(buf(1)?))
        }
        _ => (pool_geom(kind, attrs, pooled(1)?, pooled(0)?), buf(0)?, None),
    };
    let geom = geom.map_err(shape_error)?;
    // SAFETY: the caller's contract; the geometry matches the buffers' shapes.
    unsafe { pool::run(kind, &geom, x, dy, out, threads)? };
    Ok(EpilogueRun::Pending)
}
