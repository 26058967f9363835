//! Data-movement kernels — `Transpose`, `Slice`, `Concat` — as native strided copies.
//!
//! Each op becomes a source view (a base offset and per-axis element strides, negative for
//! reversed slices) over the shape it writes, and a destination view of the output (a slab of
//! it for a concat operand); [`crate::strided_copy`] does the moving: `memcpy` per row when the
//! inner axis is contiguous on both sides, cache-line tiles when a transpose moves the inner
//! axis, typed element copies otherwise. No interpreter and no temporary tensors are involved,
//! and outputs are written directly, so a copy into a caller buffer costs no extra pass.

use crate::buffers::RawBuf;
use crate::error::RunError;
use crate::strided_copy::{copy_axes, copy_strided, MIN_PARALLEL_BYTES};
use tfn_ir::bind::slice_range;
use tfn_ir::Op;
use tfn_passes::fusion::{contiguous_strides, ViewOp};

/// Copies `shape` elements read from `from` at `src_base + Σ idx·src_strides` to `to` at
/// `dst_base + Σ idx·dst_strides` (all in elements).
///
/// # Safety
/// Every element address both views describe must be inside live buffers of `from.dtype`
/// elements, destination addresses pairwise distinct, and the destination must not overlap
/// the source.
unsafe fn copy_view(
    from: RawBuf,
    (src_base, src_strides): (isize, &[isize]),
    to: RawBuf,
    (dst_base, dst_strides): (isize, &[isize]),
    shape: &[usize],
    threads: usize,
) -> Result<(), RunError> {
    let Some(axes) = copy_axes(shape, src_strides, dst_strides) else { return Ok(()) };
    let size = from.dtype.size_bytes();
    // SAFETY: the view is not empty, so both bases are element addresses of live buffers (the
    // caller's guarantee), and so is every element `axes` reaches from them.
    unsafe {
        let src = from.ptr.offset(src_base * size as isize);
        let dst = to.ptr.offset(dst_base * size as isize);
        copy_strided(size, src, dst, &axes, threads, MIN_PARALLEL_BYTES)
    }
}

/// Whether `a` and `b` have the same rank and agree on every axis but `axis`.
fn same_except(a: &[usize], b: &[usize], axis: usize) -> bool {
    a.len() == b.len() && a.iter().zip(b).enumerate().all(|(i, (x, y))| i == axis || x == y)
}

/// Runs one copy op: `inputs` are the operands' buffers and shapes, `out` the output buffer of
/// shape `out_shape`; large copies use up to `threads` threads.
///
/// # Safety
/// Buffers must be live, contiguous row-major for their shapes and of the op's dtype, and the
/// shapes must be those the graph's types bind to (as the executor guarantees).
pub(crate) unsafe fn run_copy(
    op: &Op,
    inputs: &[(RawBuf, Vec<usize>)],
    out: RawBuf,
    out_shape: &[usize],
    threads: usize,
) -> Result<(), RunError> {
    let bad = |what: &str| RunError::Internal(format!("copy kernel: {what}"));
    let out_strides = contiguous_strides(out_shape).ok_or_else(|| bad("output too large"))?;
    match op {
        Op::Transpose { perm } => {
            let [(buf, shape)] = inputs else { return Err(bad("transpose takes one input")) };
            let permuted = perm.iter().map(|&p| shape.get(p as usize).copied());
            if perm.len() != shape.len() || !permuted.eq(out_shape.iter().map(|&n| Some(n))) {
                return Err(bad("permutation does not match the output shape"));
            }
            let (base, strides) = ViewOp::of_op(op)
                .and_then(|v| v.layout(shape))
                .ok_or_else(|| bad("permutation out of range"))?;
            // SAFETY: the strides permute the input's own, over the permuted (output) shape.
            unsafe {
                copy_view(*buf, (base, &strides), out, (0, &out_strides), out_shape, threads)?
            };
        }
        Op::Slice { axis, start, end, step } => {
            let [(buf, shape)] = inputs else { return Err(bad("slice takes one input")) };
            let axis = *axis as usize;
            let size = *shape.get(axis).ok_or_else(|| bad("slice axis out of range"))?;
            let (_, count) = slice_range(size as i64, *start, *end, *step)
                .ok_or_else(|| bad("slice with step 0"))?;
            if !same_except(out_shape, shape, axis) || out_shape.get(axis) != Some(&count) {
                return Err(bad("slice output shape"));
            }
            let (base, strides) =
                ViewOp::of_op(op).and_then(|v| v.layout(shape)).ok_or_else(|| bad("slice"))?;
            // SAFETY: indices first + i·step, i < count, stay inside the axis (slice_range);
            // the other axes are the input's own.
            unsafe {
                copy_view(*buf, (base, &strides), out, (0, &out_strides), out_shape, threads)?
            };
        }
        Op::Concat { axis } => {
            let axis = *axis as usize;
            if axis >= out_shape.len() {
                return Err(bad("concat axis out of range"));
            }
            let mut at = 0usize;
            for (buf, shape) in inputs {
                let len = shape.get(axis).copied().unwrap_or(0);
                if !same_except(shape, out_shape, axis) || at + len > out_shape[axis] {
                    return Err(bad("concat operand shape"));
                }
                let strides =
                    contiguous_strides(shape).ok_or_else(|| bad("concat operand too large"))?;
                let dst_base = at as isize * out_strides[axis];
                // SAFETY: each operand lands in its own slab of the output along `axis`, and
                // its other axes are the output's.
                unsafe {
                    copy_view(*buf, (0, &strides), out, (dst_base, &out_strides), shape, threads)?
                };
                at += len;
            }
            if at != out_shape[axis] {
                return Err(bad("concat operands do not fill the output"));
            }
        }
        other => return Err(bad(&format!("`{}` is not a copy", other.name()))),
    }
    Ok(())
}
