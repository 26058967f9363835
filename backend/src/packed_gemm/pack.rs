//! Packing: copying a block of `A` or `B`, read through arbitrary row and column strides, into
//! the contiguous micro-panel layout the micro-kernel streams.
//!
//! - `A` block (`mc × kc`) → `ceil(mc / MR)` panels of `MR` rows, each row's `kc` values
//!   contiguous at a fixed row stride [`A_ROW_STRIDE`] (a row copy for row-major `A`; the
//!   micro-kernel broadcasts from `MR` streams at constant offsets).
//! - `B` block (`kc × nc`) → `ceil(nc / NR)` panels, each `kc` groups of `NR` column values.
//!
//! Partial panels are zero-padded to full size, so the micro-kernel never branches on edges
//! inside its `k` loop. Because the packers take strides, a transposed operand (a column-major
//! view of a row-major buffer) costs nothing extra: it is the same call with swapped strides.

use super::driver::A_ROW_STRIDE;
use super::kernel::{MR, NR};

/// A read-only strided matrix: element `(i, j)` lives at `ptr + i * row_stride + j * col_stride`
/// (in elements; strides may be zero or negative for views that allow it).
#[derive(Clone, Copy, Debug)]
pub(crate) struct StridedMatrix {
    pub ptr: *const f32,
    pub row_stride: isize,
    pub col_stride: isize,
}

impl StridedMatrix {
    /// The address of element `(i, j)`.
    ///
    /// # Safety
    /// `(i, j)` must be inside the matrix the pointer and strides describe.
    #[inline(always)]
    unsafe fn at(&self, i: usize, j: usize) -> *const f32 {
        // SAFETY: the caller keeps `(i, j)` inside the described matrix, so the offset is in
        // bounds of its allocation.
        unsafe { self.ptr.offset(i as isize * self.row_stride + j as isize * self.col_stride) }
    }
}

/// A `B` operand the GEMM reads only through its packed panels: a strided matrix, or a
/// convolution's input read as its implicit im2col matrix (`crate::window::conv`).
pub(crate) trait PanelSource {
    /// Packs rows `row0..row0 + kc`, columns `col0..col0 + nc` into `dst` in [`pack_b`]'s
    /// layout (`ceil(nc / NR)` panels of `kc` rows of `NR` values, zero-padded).
    ///
    /// # Safety
    /// That block must lie inside the matrix, and `dst` must be valid for
    /// `ceil(nc / NR) * NR * kc` writes and not overlap the source.
    unsafe fn pack_b(&self, row0: usize, col0: usize, kc: usize, nc: usize, dst: *mut f32);
}

impl PanelSource for StridedMatrix {
    unsafe fn pack_b(&self, row0: usize, col0: usize, kc: usize, nc: usize, dst: *mut f32) {
        // SAFETY: the caller's contract is `pack_b`'s.
        unsafe { pack_b(self, row0, col0, kc, nc, dst) }
    }
}

/// Packs rows `row0..row0 + mc`, columns `col0..col0 + kc` of `a` into `dst`: panel `r`
/// (rows `r * MR..`) at `dst + r * MR * A_ROW_STRIDE`, row `i` of a panel at
/// `i * A_ROW_STRIDE`, its `kc` values contiguous. Rows past `mc` in the last panel are zeroed.
///
/// # Safety
/// That block must lie inside `a`, `kc <= A_ROW_STRIDE`, and `dst` must be valid for
/// `ceil(mc / MR) * MR * A_ROW_STRIDE` writes and not overlap `a`.
pub(crate) unsafe fn pack_a(
    a: &StridedMatrix,
    row0: usize,
    col0: usize,
    mc: usize,
    kc: usize,
    dst: *mut f32,
) {
    let padded = mc.div_ceil(MR) * MR;
    // A column-major source (a transposed row-major buffer) is read down its contiguous
    // columns, `MR` rows at a time; anything else row by row.
    let by_columns = a.row_stride == 1 && a.col_stride != 1;
    for r in (0..padded).step_by(MR) {
        let rows = mc.saturating_sub(r).min(MR);
        // SAFETY: panel `r / MR` of `MR` rows of `A_ROW_STRIDE >= kc` floats fits `dst`.
        let panel = unsafe { dst.add(r * A_ROW_STRIDE) };
        if by_columns {
            for p in 0..kc {
                for i in 0..rows {
                    // SAFETY: `(row0 + r + i, col0 + p)` is in the block; the write is inside
                    // row `i` of the panel (`p < kc`).
                    unsafe { *panel.add(i * A_ROW_STRIDE + p) = *a.at(row0 + r + i, col0 + p) };
                }
            }
        }
        for i in 0..MR {
            // SAFETY: row `i` of the panel, inside `dst` (see above).
            let out = unsafe { panel.add(i * A_ROW_STRIDE) };
            if i >= rows {
                // SAFETY: as above; `kc` floats fit the row.
                unsafe { std::ptr::write_bytes(out, 0, kc) };
            } else if by_columns {
                continue;
            } else if a.col_stride == 1 {
                // SAFETY: row `row0 + r + i` holds `kc` contiguous elements from `col0` (in the
                // block); the destination row has room for them.
                unsafe { std::ptr::copy_nonoverlapping(a.at(row0 + r + i, col0), out, kc) };
            } else {
                for p in 0..kc {
                    // SAFETY: `(row0 + r + i, col0 + p)` is in the block; `p < kc`.
                    unsafe { *out.add(p) = *a.at(row0 + r + i, col0 + p) };
                }
            }
        }
    }
}

/// Packs rows `row0..row0 + kc`, columns `col0..col0 + nc` of `b` into `dst`.
///
/// # Safety
/// That block must lie inside `b`, and `dst` must be valid for `ceil(nc / NR) * NR * kc`
/// writes and not overlap `b`.
pub(crate) unsafe fn pack_b(
    b: &StridedMatrix,
    row0: usize,
    col0: usize,
    kc: usize,
    nc: usize,
    dst: *mut f32,
) {
    let mut out = dst;
    for c in (0..nc).step_by(NR) {
        let cols = (nc - c).min(NR);
        if cols == NR && b.col_stride == 1 {
            for p in 0..kc {
                // SAFETY: a full panel row: `NR` contiguous elements of row `row0 + p`, inside
                // the block; the destination advances `NR` per row within its bounds.
                unsafe {
                    std::ptr::copy_nonoverlapping(b.at(row0 + p, col0 + c), out, NR);
                    out = out.add(NR);
                }
            }
            continue;
        }
        if b.row_stride == 1 && b.col_stride != 1 && cols == NR {
            // A column-major source (a `[out, in]` weight read as `[in, out]`): 8 × 8 blocks
            // transposed in registers, then the `kc % 8` last rows one by one.
            let full = kc / 8 * 8;
            #[cfg(target_arch = "x86_64")]
            for j in (0..NR).step_by(8) {
                // Eight source rows read start to end (eight streams for the prefetcher).
                let ahead = (c + j + 8..c + j + 16).filter(|&col| col < nc);
                for p in (0..full).step_by(8) {
                    if p % 16 == 0 {
                        // The next eight source rows, one cache line ahead of their reads.
                        for col in ahead.clone() {
                            // SAFETY: a prefetch of an address inside the block (`col < nc`,
                            // `p < kc`); it never faults.
                            unsafe {
                                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                                _mm_prefetch::<_MM_HINT_T0>(b.at(row0 + p, col0 + col) as *const i8)
                            };
                        }
                    }
                    // SAFETY: rows `p..p + 8 <= kc` and columns `c + j..c + j + 8 <= c + NR`
                    // are inside the block; each column's 8 values are contiguous
                    // (`row_stride == 1`), `col_stride` apart; the destination rows
                    // `p..p + 8` of this panel hold `NR` floats each. AVX is implied by the
                    // AVX-512F the packed GEMM requires (its only caller).
                    unsafe {
                        transpose8(
                            b.at(row0 + p, col0 + c + j),
                            b.col_stride,
                            out.add(p * NR + j),
                            NR,
                        )
                    };
                }
            }
            #[cfg(not(target_arch = "x86_64"))]
            let full = 0;
            for p in full..kc {
                for j in 0..NR {
                    // SAFETY: `(row0 + p, col0 + c + j)` is inside the block; the write is
                    // inside panel row `p`.
                    unsafe { *out.add(p * NR + j) = *b.at(row0 + p, col0 + c + j) };
                }
            }
            // SAFETY: the panel just written is `kc * NR` floats.
            out = unsafe { out.add(kc * NR) };
            continue;
        }
        if b.row_stride == 1 && b.col_stride != 1 {
            // A partial column-major panel: down each column.
            for j in 0..NR {
                for p in 0..kc {
                    // SAFETY: `j < cols`, `p < kc`: inside the block; the write is inside
                    // panel row `p` (this panel holds `kc * NR` floats from `out`).
                    unsafe {
                        *out.add(p * NR + j) =
                            if j < cols { *b.at(row0 + p, col0 + c + j) } else { 0.0 };
                    }
                }
            }
            // SAFETY: the panel just written is `kc * NR` floats.
            out = unsafe { out.add(kc * NR) };
            continue;
        }
        for p in 0..kc {
            // SAFETY: `j < cols`, `p < kc` keep reads inside the block; writes stay within
            // this panel row of `NR` elements.
            unsafe {
                for j in 0..cols {
                    *out.add(j) = *b.at(row0 + p, col0 + c + j);
                }
                for j in cols..NR {
                    *out.add(j) = 0.0;
                }
                out = out.add(NR);
            }
        }
    }
}

/// Transposes an 8 × 8 block: `src` holds 8 vectors of 8 contiguous floats, `src_stride`
/// elements apart; row `r` of the result (value `i` of each source vector) goes to
/// `dst + r * dst_stride`, 8 contiguous floats.
///
/// # Safety
/// The CPU must support AVX; `src` must be valid for those 8 reads of 8 floats and `dst` for
/// those 8 writes of 8 floats, not overlapping.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
pub(super) unsafe fn transpose8(
    src: *const f32,
    src_stride: isize,
    dst: *mut f32,
    dst_stride: usize,
) {
    use std::arch::x86_64::*;
    // SAFETY: the caller's contract: eight 8-float loads and stores inside the buffers.
    unsafe {
        let r: [__m256; 8] =
            std::array::from_fn(|i| _mm256_loadu_ps(src.offset(i as isize * src_stride)));
        let t0 = _mm256_unpacklo_ps(r[0], r[1]);
        let t1 = _mm256_unpackhi_ps(r[0], r[1]);
        let t2 = _mm256_unpacklo_ps(r[2], r[3]);
        let t3 = _mm256_unpackhi_ps(r[2], r[3]);
        let t4 = _mm256_unpacklo_ps(r[4], r[5]);
        let t5 = _mm256_unpackhi_ps(r[4], r[5]);
        let t6 = _mm256_unpacklo_ps(r[6], r[7]);
        let t7 = _mm256_unpackhi_ps(r[6], r[7]);
        let u0 = _mm256_shuffle_ps::<0x44>(t0, t2);
        let u1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
        let u2 = _mm256_shuffle_ps::<0x44>(t1, t3);
        let u3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
        let u4 = _mm256_shuffle_ps::<0x44>(t4, t6);
        let u5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
        let u6 = _mm256_shuffle_ps::<0x44>(t5, t7);
        let u7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
        let rows = [
            _mm256_permute2f128_ps::<0x20>(u0, u4),
            _mm256_permute2f128_ps::<0x20>(u1, u5),
            _mm256_permute2f128_ps::<0x20>(u2, u6),
            _mm256_permute2f128_ps::<0x20>(u3, u7),
            _mm256_permute2f128_ps::<0x31>(u0, u4),
            _mm256_permute2f128_ps::<0x31>(u1, u5),
            _mm256_permute2f128_ps::<0x31>(u2, u6),
            _mm256_permute2f128_ps::<0x31>(u3, u7),
        ];
        for (i, row) in rows.iter().enumerate() {
            _mm256_storeu_ps(dst.add(i * dst_stride), *row);
        }
    }
}
