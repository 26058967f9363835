//! The engine behind the data-movement kernels: copies a strided view of one buffer into a
//! strided view of another, fast for any layout.
//!
//! A copy is first normalised ([`copy_axes`]): axes of length 1 are dropped and neighbours that
//! are contiguous in both source and destination are merged, so a `[64, 256, 256]` transpose
//! with `perm = [2, 0, 1]` becomes a 2-D `[256, 16384]` one and a concat operand becomes a few
//! long rows. Then one of three walks runs, outer axes by an odometer:
//! - rows contiguous on both sides: one `memcpy` per row;
//! - the innermost axis strided in the source while another axis is closer to contiguous (a
//!   transpose that moves the innermost axis): square tiles over those two axes, each one cache
//!   line wide on both sides ([`TILE_BYTES`]), read run by run into a local buffer and written
//!   out run by run (see [`tile`]), walked in blocks of [`BLOCK`]² elements, so every cache
//!   line is touched in one burst and the pages in use stay few, instead of one cache line
//!   and one page per element at a large stride;
//! - anything else (reversed or stepped slices of the inner axis): typed loads and stores.
//!
//! Elements are moved as unsigned integers of their size (1, 2, 4 or 8 bytes), so one generic
//! path serves every dtype, and all loads and stores are unaligned-tolerant.
//!
//! Large copies are split across the [`crate::workers`] pool into sub-boxes along one axis
//! (the outermost one long enough, boundaries on whole transpose blocks or pages), each
//! copied by the walk above; a copy is exact, so any split moves the same bits.

mod tile;

use crate::error::RunError;

use tile::{copy_run, copy_tile, copy_tile_edge};

/// Width of a transpose tile in bytes on each side: one cache line.
const TILE_BYTES: usize = 64;

/// Edge of the blocks of tiles a transpose plane is walked in, in elements: a block's source
/// and destination rows each span at most a few pages, so the pages a block touches stay in
/// the TLB (measured ~1.3× faster than plain tile order on 4096² f32).
const BLOCK: usize = 128;

/// One axis of a copy: `len` elements, read `src` and written `dst` elements apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CopyAxis {
    pub len: usize,
    pub src: isize,
    pub dst: isize,
}

/// The normalised axes of a copy of `shape` with element strides `src`/`dst`, outermost
/// first: no axis of length 1, neighbours contiguous on both sides merged. `None` when the
/// copy is empty (some length is 0); an empty list means one element.
pub(crate) fn copy_axes(shape: &[usize], src: &[isize], dst: &[isize]) -> Option<Vec<CopyAxis>> {
    if shape.contains(&0) {
        return None;
    }
    let mut axes: Vec<CopyAxis> = Vec::with_capacity(shape.len());
    for ((&len, &src), &dst) in shape.iter().zip(src).zip(dst) {
        if len == 1 {
            continue;
        }
        let axis = CopyAxis { len, src, dst };
        match axes.last_mut() {
            Some(outer)
                if outer.src == src.wrapping_mul(len as isize)
                    && outer.dst == dst.wrapping_mul(len as isize) =>
            {
                *outer = CopyAxis { len: outer.len * len, src, dst };
            }
            _ => axes.push(axis),
        }
    }
    Some(axes)
}

/// Below this many bytes moved a copy runs on the calling thread (measured: a 256 KB f32
/// transpose is ~1.15× faster on 2 threads, smaller ones are not; ARCHITECTURE.md → "Threads").
pub(crate) const MIN_PARALLEL_BYTES: usize = 1 << 18;

/// Copies the elements `axes` describe from `src` to `dst`, both pointing at the element of
/// index 0; `elem_size` is the element size in bytes; on up to `threads` threads when the
/// copy moves at least `min_bytes` ([`MIN_PARALLEL_BYTES`] outside tests), each chunk at
/// least half that. An element size
/// other than 1, 2, 4 or 8 is an error (nothing is copied).
///
/// # Safety
/// For every index of `axes`, `src + Σ idx·src_stride` and `dst + Σ idx·dst_stride` (in
/// elements) must be inside live allocations, the destination elements must be pairwise
/// distinct and must not overlap any source element.
pub(crate) unsafe fn copy_strided(
    elem_size: usize,
    src: *const u8,
    dst: *mut u8,
    axes: &[CopyAxis],
    threads: usize,
    min_bytes: usize,
) -> Result<(), RunError> {
    if !matches!(elem_size, 1 | 2 | 4 | 8) {
        return Err(RunError::Internal(format!("copy kernel: element size {elem_size}")));
    }
    let bytes = axes.iter().map(|a| a.len).product::<usize>() * elem_size;
    let chunks = if threads > 1 && bytes >= min_bytes {
        threads.min(bytes / (min_bytes / 2).max(1)).max(1)
    } else {
        1
    };
    let Some((j, per)) = split_axis(axes, chunks, elem_size) else {
        // SAFETY: forwarded from the caller; the element size is supported.
        unsafe { copy_whole(elem_size, src, dst, axes) };
        return Ok(());
    };
    let (src_at, dst_at, size) = (src as usize, dst as usize, elem_size as isize);
    let len = axes[j].len;
    let chunk = |c: usize| {
        let lo = c * per;
        let mut sub = axes.to_vec();
        sub[j].len = per.min(len - lo);
        let (s, d) = (lo as isize * axes[j].src * size, lo as isize * axes[j].dst * size);
        // SAFETY: the sub-box of indices `lo..lo + sub[j].len` along axis `j` (all of the
        // others) is part of the caller's copy, and no other chunk writes its elements.
        unsafe {
            copy_whole(
                elem_size,
                (src_at as *const u8).offset(s),
                (dst_at as *mut u8).offset(d),
                &sub,
            )
        }
    };
    crate::workers::run(len.div_ceil(per), threads, &chunk)
        .map_err(|e| RunError::Internal(e.to_string()))
}

/// The axis to split a copy into `chunks` along, and the length per chunk: the outermost
/// axis whose length spans at least two chunks once the length is rounded to whole
/// transpose blocks (the two inner axes, where tiles run) or pages (the innermost axis).
/// `None` for one chunk or when no axis is long enough.
fn split_axis(axes: &[CopyAxis], chunks: usize, elem_size: usize) -> Option<(usize, usize)> {
    if chunks <= 1 {
        return None;
    }
    let rank = axes.len();
    axes.iter().enumerate().find_map(|(j, a)| {
        let align = match rank - j {
            1 => BLOCK.max(4096 / elem_size),
            2 => BLOCK,
            _ => 1,
        };
        let per = a.len.div_ceil(chunks).div_ceil(align) * align;
        (per < a.len).then_some((j, per))
    })
}

/// [`copy_strided`] on the calling thread.
///
/// # Safety
/// As [`copy_strided`]; `elem_size` is 1, 2, 4 or 8.
unsafe fn copy_whole(elem_size: usize, src: *const u8, dst: *mut u8, axes: &[CopyAxis]) {
    // SAFETY: forwarded from the caller; the element type matches `elem_size`.
    unsafe {
        match elem_size {
            1 => copy_typed::<u8, { TILE_BYTES }>(src.cast(), dst.cast(), axes),
            2 => copy_typed::<u16, { TILE_BYTES / 2 }>(src.cast(), dst.cast(), axes),
            4 => copy_typed::<u32, { TILE_BYTES / 4 }>(src.cast(), dst.cast(), axes),
            8 => copy_typed::<u64, { TILE_BYTES / 8 }>(src.cast(), dst.cast(), axes),
            _ => {}
        }
    }
}

/// [`copy_strided`] for elements of type `T`, with transpose tiles of `E × E` elements.
///
/// # Safety
/// As [`copy_strided`].
unsafe fn copy_typed<T: Copy, const E: usize>(src: *const T, dst: *mut T, axes: &[CopyAxis]) {
    let Some((&last, outer)) = axes.split_last() else {
        // SAFETY: one element, at index 0 of both sides.
        unsafe { dst.write_unaligned(src.read_unaligned()) };
        return;
    };
    if last.src == 1 && last.dst == 1 {
        for_each_offset(outer, |s, d| {
            // SAFETY: a row of `last.len` contiguous elements on both sides, not overlapping.
            unsafe { std::ptr::copy_nonoverlapping(src.offset(s), dst.offset(d), last.len) }
        });
        return;
    }
    // The axis nearest to contiguous in the source, if nearer than the innermost one.
    let tile_axis = outer
        .iter()
        .enumerate()
        .min_by_key(|(_, a)| a.src.unsigned_abs())
        .filter(|(_, a)| a.src.unsigned_abs() < last.src.unsigned_abs())
        .map(|(k, _)| k);
    match tile_axis {
        Some(k) => {
            let rest: Vec<CopyAxis> =
                outer.iter().enumerate().filter(|&(a, _)| a != k).map(|(_, a)| *a).collect();
            let across = outer[k];
            for_each_offset(&rest, |s, d| {
                // SAFETY: the plane of axes `k` and `last` at this outer index, in bounds.
                unsafe { copy_plane::<T, E>(src.offset(s), dst.offset(d), across, last) }
            });
        }
        None => for_each_offset(outer, |s, d| {
            // SAFETY: a row of `last.len` elements at the axis' strides, in bounds.
            unsafe { copy_run(src.offset(s), last.src, dst.offset(d), last.dst, last.len) }
        }),
    }
}

/// Calls `f(src_offset, dst_offset)` (in elements) for every index of `axes`, row-major;
/// once with `(0, 0)` when `axes` is empty. Every length must be at least 1.
fn for_each_offset(axes: &[CopyAxis], mut f: impl FnMut(isize, isize)) {
    let mut index = vec![0usize; axes.len()];
    let (mut s, mut d) = (0isize, 0isize);
    loop {
        f(s, d);
        let mut a = axes.len();
        loop {
            let Some(prev) = a.checked_sub(1) else { return };
            a = prev;
            let axis = axes[a];
            index[a] += 1;
            s = s.wrapping_add(axis.src);
            d = d.wrapping_add(axis.dst);
            if index[a] < axis.len {
                break;
            }
            s = s.wrapping_sub(axis.src.wrapping_mul(axis.len as isize));
            d = d.wrapping_sub(axis.dst.wrapping_mul(axis.len as isize));
            index[a] = 0;
        }
    }
}

/// Copies the 2-D plane of axes `k` (outer in the destination, near-contiguous in the source)
/// and `l` (the innermost) in tiles of `E × E` elements.
///
/// # Safety
/// Every element of the plane must be in bounds on both sides, destinations distinct and not
/// overlapping the source.
unsafe fn copy_plane<T: Copy, const E: usize>(
    src: *const T,
    dst: *mut T,
    k: CopyAxis,
    l: CopyAxis,
) {
    for k_block in (0..k.len).step_by(BLOCK) {
        let k_end = k.len.min(k_block + BLOCK);
        for l_block in (0..l.len).step_by(BLOCK) {
            let l_end = l.len.min(l_block + BLOCK);
            for l0 in (l_block..l_end).step_by(E) {
                let nl = E.min(l_end - l0);
                for k0 in (k_block..k_end).step_by(E) {
                    let nk = E.min(k_end - k0);
                    let s = k0 as isize * k.src + l0 as isize * l.src;
                    let d = k0 as isize * k.dst + l0 as isize * l.dst;
                    // SAFETY: the tile's indices are inside the plane.
                    unsafe {
                        let (s, d) = (src.offset(s), dst.offset(d));
                        if nk == E && nl == E {
                            copy_tile::<T, E>(s, d, k, l);
                        } else {
                            copy_tile_edge(s, d, k, l, nk, nl);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
