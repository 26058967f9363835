//! Transpose tiles: `E × E` elements (one cache line on each side) of a plane whose source runs
//! along one axis and whose destination runs along the other.
//!
//! A tile is read run by run into a local buffer and written out run by run, so every cache
//! line is touched once, in one burst, however large the strides (16 rows 16 KB apart all map
//! to one L1 set and would evict each other if the tile were walked element by element). On
//! x86-64 the transpose proper (both runs contiguous) of 4- and 8-byte elements goes through
//! SSE2 registers, 4×4 or 2×2 at a time; every other case is a scalar copy through the buffer.

use super::CopyAxis;
use std::mem::MaybeUninit;

/// One full `E × E` tile: element `(i, j)` (`i` along `k`, `j` along `l`) moves from
/// `src + i·k.src + j·l.src` to `dst + i·k.dst + j·l.dst`.
///
/// # Safety
/// All `E × E` elements must be in bounds on both sides, destination elements distinct and
/// not overlapping the source.
#[inline]
pub(super) unsafe fn copy_tile<T: Copy, const E: usize>(
    src: *const T,
    dst: *mut T,
    k: CopyAxis,
    l: CopyAxis,
) {
    #[cfg(target_arch = "x86_64")]
    if k.src == 1 && l.dst == 1 {
        match (std::mem::size_of::<T>(), E) {
            // SAFETY: forwarded; runs of E contiguous elements on both sides.
            (4, 16) => return unsafe { sse::tile_4byte(src.cast(), l.src, dst.cast(), k.dst) },
            // SAFETY: as above.
            (8, 8) => return unsafe { sse::tile_8byte(src.cast(), l.src, dst.cast(), k.dst) },
            _ => {}
        }
    }
    // buf[j][i] holds element (i, j): source runs (along k) land in rows of the buffer.
    let mut buf = [[MaybeUninit::<T>::uninit(); E]; E];
    for (j, row) in buf.iter_mut().enumerate() {
        for (i, slot) in row.iter_mut().enumerate() {
            let at = i as isize * k.src + j as isize * l.src;
            // SAFETY: element (i, j) of the tile, in bounds (caller).
            *slot = MaybeUninit::new(unsafe { src.offset(at).read_unaligned() });
        }
    }
    for i in 0..E {
        for (j, row) in buf.iter().enumerate() {
            let at = i as isize * k.dst + j as isize * l.dst;
            // SAFETY: element (i, j) of the tile, in bounds (caller); `buf` was filled
            // completely by the loop above.
            unsafe { dst.offset(at).write_unaligned(row[i].assume_init()) };
        }
    }
}

/// A partial tile of `nk × nl` elements at a plane's edge, element by element.
///
/// # Safety
/// As [`copy_tile`] for `nk × nl` elements.
pub(super) unsafe fn copy_tile_edge<T: Copy>(
    src: *const T,
    dst: *mut T,
    k: CopyAxis,
    l: CopyAxis,
    nk: usize,
    nl: usize,
) {
    for i in 0..nk as isize {
        // SAFETY: row i of the tile, in bounds (caller).
        unsafe { copy_run(src.offset(i * k.src), l.src, dst.offset(i * k.dst), l.dst, nl) };
    }
}

/// Copies `n` elements between strided runs.
///
/// # Safety
/// Both runs must be in bounds, the destination's elements distinct and not overlapping the
/// source.
#[inline]
pub(super) unsafe fn copy_run<T: Copy>(src: *const T, ss: isize, dst: *mut T, ds: isize, n: usize) {
    for i in 0..n as isize {
        // SAFETY: guaranteed by the caller.
        unsafe { dst.offset(i * ds).write_unaligned(src.offset(i * ss).read_unaligned()) };
    }
}

/// SSE2 (part of the x86-64 baseline, so always available) tile transposes. Elements are
/// moved as raw bits: unaligned loads, shuffles and stores never inspect or canonicalise them.
#[cfg(target_arch = "x86_64")]
mod sse {
    use std::arch::x86_64::{
        __m128, __m128d, _mm_loadu_pd, _mm_loadu_ps, _mm_movehl_ps, _mm_movelh_ps, _mm_setzero_pd,
        _mm_setzero_ps, _mm_storeu_pd, _mm_storeu_ps, _mm_unpackhi_pd, _mm_unpackhi_ps,
        _mm_unpacklo_pd, _mm_unpacklo_ps,
    };

    /// A 16 × 16 tile of 4-byte elements: source runs of 16 at `src + j·src_run_stride`
    /// (j < 16), destination runs of 16 at `dst + i·dst_run_stride` (i < 16), element
    /// `src[j][i]` going to `dst[i][j]`. Strides are in elements.
    ///
    /// # Safety
    /// All 256 elements must be in bounds on both sides, destination not overlapping source.
    #[inline]
    pub(super) unsafe fn tile_4byte(
        src: *const f32,
        src_run_stride: isize,
        dst: *mut f32,
        dst_run_stride: isize,
    ) {
        // buf[i·4 + c] holds dst[i][4c .. 4c + 4].
        let mut buf = [_mm_setzero_ps(); 64];
        for jb in (0..16).step_by(4) {
            for ib in (0..16).step_by(4) {
                // SAFETY: rows jb..jb+4, columns ib..ib+4 of the source tile.
                let [r0, r1, r2, r3]: [__m128; 4] = std::array::from_fn(|r| unsafe {
                    _mm_loadu_ps(src.offset((jb + r) as isize * src_run_stride + ib as isize))
                });
                let (t0, t1) = (_mm_unpacklo_ps(r0, r1), _mm_unpacklo_ps(r2, r3));
                let (t2, t3) = (_mm_unpackhi_ps(r0, r1), _mm_unpackhi_ps(r2, r3));
                let at = ib * 4 + jb / 4;
                buf[at] = _mm_movelh_ps(t0, t1);
                buf[at + 4] = _mm_movehl_ps(t1, t0);
                buf[at + 8] = _mm_movelh_ps(t2, t3);
                buf[at + 12] = _mm_movehl_ps(t3, t2);
            }
        }
        for (i, run) in buf.chunks_exact(4).enumerate() {
            // SAFETY: destination row i of the tile, 16 contiguous elements.
            let row = unsafe { dst.offset(i as isize * dst_run_stride) };
            for (c, v) in run.iter().enumerate() {
                // SAFETY: as above.
                unsafe { _mm_storeu_ps(row.add(4 * c), *v) };
            }
        }
    }

    /// An 8 × 8 tile of 8-byte elements, laid out as in [`tile_4byte`].
    ///
    /// # Safety
    /// All 64 elements must be in bounds on both sides, destination not overlapping source.
    #[inline]
    pub(super) unsafe fn tile_8byte(
        src: *const f64,
        src_run_stride: isize,
        dst: *mut f64,
        dst_run_stride: isize,
    ) {
        // buf[i·4 + c] holds dst[i][2c .. 2c + 2].
        let mut buf = [_mm_setzero_pd(); 32];
        for jb in (0..8).step_by(2) {
            for ib in (0..8).step_by(2) {
                // SAFETY: rows jb, jb+1, columns ib, ib+1 of the source tile.
                let [r0, r1]: [__m128d; 2] = std::array::from_fn(|r| unsafe {
                    _mm_loadu_pd(src.offset((jb + r) as isize * src_run_stride + ib as isize))
                });
                let at = ib * 4 + jb / 2;
                buf[at] = _mm_unpacklo_pd(r0, r1);
                buf[at + 4] = _mm_unpackhi_pd(r0, r1);
            }
        }
        for (i, run) in buf.chunks_exact(4).enumerate() {
            // SAFETY: destination row i of the tile, 8 contiguous elements.
            let row = unsafe { dst.offset(i as isize * dst_run_stride) };
            for (c, v) in run.iter().enumerate() {
                // SAFETY: as above.
                unsafe { _mm_storeu_pd(row.add(2 * c), *v) };
            }
        }
    }
}
