//! Data-movement kernels — `Transpose`, `Slice`, `Concat` — as native strided copies.
//!
//! Each is one walk over the output in row-major order reading the source through per-axis
//! element strides (negative for reversed slices) from a base offset, so no interpreter and no
//! temporary tensors are involved. Runs of the inner axis that are contiguous in the source
//! are copied with `memcpy`; strided ones element by element with typed loads (1, 4 or 8
//! bytes). Outputs are written once, in order, so a copy into a caller buffer is direct.

use crate::buffers::RawBuf;
use crate::error::RunError;
use tfn_ir::bind::slice_range;
use tfn_ir::Op;

/// A strided view of a source buffer: `shape` elements read at `base + Σ idx[a]·strides[a]`.
struct Strided<'s> {
    shape: &'s [usize],
    base: isize,
    strides: &'s [isize],
}

/// Row-major element strides of a contiguous `shape`.
fn contiguous_strides(shape: &[usize]) -> Vec<isize> {
    let mut strides = vec![0isize; shape.len()];
    let mut acc: isize = 1;
    for a in (0..shape.len()).rev() {
        strides[a] = acc;
        acc = acc.saturating_mul(shape[a] as isize);
    }
    strides
}

/// Copies `src` (a strided view of `from`) into `to` at element offset `dst_base` with the
/// destination's own strides `dst_strides` over the same shape.
///
/// # Safety
/// Every element address the view and the destination describe must be inside live buffers
/// of `from.dtype` elements, and the destination must not overlap the source.
unsafe fn copy_strided(
    from: RawBuf,
    src: &Strided<'_>,
    to: RawBuf,
    dst_base: isize,
    dst_strides: &[isize],
) {
    let rank = src.shape.len();
    if src.shape.contains(&0) {
        return;
    }
    let size = from.dtype.size_bytes();
    let (inner, src_step, dst_step) = match rank {
        0 => (1, 1, 1),
        _ => (src.shape[rank - 1], src.strides[rank - 1], dst_strides[rank - 1]),
    };
    let outer = rank.saturating_sub(1);
    let mut index = vec![0usize; outer];
    loop {
        let mut s = src.base;
        let mut d = dst_base;
        for a in 0..outer {
            s += index[a] as isize * src.strides[a];
            d += index[a] as isize * dst_strides[a];
        }
        // SAFETY: guaranteed by the caller for every index of the shape.
        unsafe {
            let sp = from.ptr.offset(s * size as isize);
            let dp = to.ptr.offset(d * size as isize);
            if src_step == 1 && dst_step == 1 {
                std::ptr::copy_nonoverlapping(sp, dp, inner * size);
            } else {
                match size {
                    8 => copy_run::<u64>(sp, src_step, dp, dst_step, inner),
                    4 => copy_run::<u32>(sp, src_step, dp, dst_step, inner),
                    2 => copy_run::<u16>(sp, src_step, dp, dst_step, inner),
                    _ => copy_run::<u8>(sp, src_step, dp, dst_step, inner),
                }
            }
        }
        // Next outer index, row-major.
        let mut a = outer;
        loop {
            if a == 0 {
                return;
            }
            a -= 1;
            index[a] += 1;
            if index[a] < src.shape[a] {
                break;
            }
            index[a] = 0;
        }
    }
}

/// Copies `n` elements of type `T` between strided runs.
///
/// # Safety
/// Both runs must be inside live buffers.
unsafe fn copy_run<T: Copy>(src: *const u8, ss: isize, dst: *mut u8, ds: isize, n: usize) {
    let (src, dst) = (src as *const T, dst as *mut T);
    for i in 0..n as isize {
        // SAFETY: guaranteed by the caller.
        unsafe { dst.offset(i * ds).write_unaligned(src.offset(i * ss).read_unaligned()) };
    }
}

/// Runs one copy op: `inputs` are the operands' buffers and shapes, `out` the output buffer of
/// shape `out_shape`.
///
/// # Safety
/// Buffers must be live, contiguous row-major for their shapes and of the op's dtype, and the
/// shapes must be those the graph's types bind to (as the executor guarantees).
pub(crate) unsafe fn run_copy(
    op: &Op,
    inputs: &[(RawBuf, Vec<usize>)],
    out: RawBuf,
    out_shape: &[usize],
) -> Result<(), RunError> {
    let bad = |what: &str| RunError::Internal(format!("copy kernel: {what}"));
    let out_strides = contiguous_strides(out_shape);
    match op {
        Op::Transpose { perm } => {
            let [(buf, shape)] = inputs else { return Err(bad("transpose takes one input")) };
            let in_strides = contiguous_strides(shape);
            let strides: Vec<isize> = perm
                .iter()
                .map(|&p| in_strides.get(p as usize).copied())
                .collect::<Option<_>>()
                .ok_or_else(|| bad("permutation out of range"))?;
            let permuted = perm.iter().map(|&p| shape[p as usize]);
            if strides.len() != out_shape.len() || !permuted.eq(out_shape.iter().copied()) {
                return Err(bad("permutation does not match the output shape"));
            }
            let src = Strided { shape: out_shape, base: 0, strides: &strides };
            // SAFETY: the strides permute the input's own, over the permuted (output) shape.
            unsafe { copy_strided(*buf, &src, out, 0, &out_strides) };
        }
        Op::Slice { axis, start, end, step } => {
            let [(buf, shape)] = inputs else { return Err(bad("slice takes one input")) };
            let axis = *axis as usize;
            let size = *shape.get(axis).ok_or_else(|| bad("slice axis out of range"))?;
            let (first, count) = slice_range(size as i64, *start, *end, *step)
                .ok_or_else(|| bad("slice with step 0"))?;
            if out_shape.get(axis) != Some(&count) || out_shape.len() != shape.len() {
                return Err(bad("slice output shape"));
            }
            let mut strides = contiguous_strides(shape);
            let base = first as isize * strides[axis];
            strides[axis] *= *step as isize;
            let src = Strided { shape: out_shape, base, strides: &strides };
            // SAFETY: indices first + i·step, i < count, stay inside the axis (slice_range).
            unsafe { copy_strided(*buf, &src, out, 0, &out_strides) };
        }
        Op::Concat { axis } => {
            let axis = *axis as usize;
            if axis >= out_shape.len() {
                return Err(bad("concat axis out of range"));
            }
            let mut at = 0usize;
            for (buf, shape) in inputs {
                if shape.len() != out_shape.len() || at + shape[axis] > out_shape[axis] {
                    return Err(bad("concat operand shape"));
                }
                let strides = contiguous_strides(shape);
                let src = Strided { shape, base: 0, strides: &strides };
                let dst_base = at as isize * out_strides[axis];
                // SAFETY: each operand lands in its own slab of the output along `axis`.
                unsafe { copy_strided(*buf, &src, out, dst_base, &out_strides) };
                at += shape[axis];
            }
            if at != out_shape[axis] {
                return Err(bad("concat operands do not fill the output"));
            }
        }
        other => return Err(bad(&format!("`{}` is not a copy", other.name()))),
    }
    Ok(())
}
