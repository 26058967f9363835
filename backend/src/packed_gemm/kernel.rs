//! The AVX-512 f32 micro-kernel: one `MR × NR` tile of `C` (`MR` = 12 rows, `NR` = 32
//! columns = two `zmm` registers) accumulated in 24 `zmm` registers over a `kc`-long slice of
//! packed `A` and `B`.
//!
//! Each step of `k` loads one 32-wide row of the packed `B` micro-panel (two vector loads),
//! broadcasts one value from each of the 12 rows of the packed `A` micro-panel (constant
//! offsets from one pointer) and issues 24 FMAs — 24 of
//! the 32 vector registers hold accumulators, two hold `B`, the rest broadcasts. The tile is
//! written back once at the end: stored (first `k` block) or added to `C` (later blocks);
//! edge tiles write only their `rows × cols` corner, with masked loads and stores for columns,
//! so the padding of the packed panels never reaches memory outside `C`.

use super::driver::A_ROW_STRIDE;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// Rows of a micro-tile (broadcast `A` values per `k` step).
pub(crate) const MR: usize = 12;
/// Columns of a micro-tile: two 16-lane `zmm` vectors.
pub(crate) const NR: usize = 32;

/// Where and how a micro-tile is written: `rows × cols` elements of `C` starting at `ptr`,
/// rows `row_stride` elements apart; `accumulate` adds to `C` instead of overwriting it.
#[derive(Clone, Copy)]
pub(crate) struct TileOut {
    pub ptr: *mut f32,
    pub row_stride: usize,
    pub rows: usize,
    pub cols: usize,
    pub accumulate: bool,
}

/// `C[tile] (+)= A_panel · B_panel` for packed micro-panels: `a` holds `MR` rows of `kc`
/// values `A_ROW_STRIDE` apart (`A[i, p]` at `a[i * A_ROW_STRIDE + p]`), `b` holds `kc` groups
/// of `NR` values (`B[p, j]` at `b[p * NR + j]`). Edge tiles of 8 or fewer rows run a
/// kernel with fewer accumulators instead of multiplying padding rows.
///
/// # Safety
/// The CPU must support AVX-512F. `a` must be valid for reads of `MR` rows of `kc` values at
/// `A_ROW_STRIDE` and `b` for `kc * NR` reads (the packers zero-pad partial panels).
/// `out.rows <= MR`, `out.cols <= NR`, and `out.ptr` must be valid for reads and writes of rows
/// `0..out.rows`, columns `0..out.cols` at `out.row_stride`, not aliased by `a` or `b`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(crate) unsafe fn micro_kernel(kc: usize, a: *const f32, b: *const f32, out: TileOut) {
    // SAFETY: forwarded; each variant reads at most `MR` rows of the panel.
    unsafe {
        match out.rows {
            0..=4 => rows_kernel::<4>(kc, a, b, out),
            5..=8 => rows_kernel::<8>(kc, a, b, out),
            _ => rows_kernel::<MR>(kc, a, b, out),
        }
    }
}

/// [`micro_kernel`] for the first `R <= MR` rows of the panel.
///
/// # Safety
/// As [`micro_kernel`], with `out.rows <= R`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn rows_kernel<const R: usize>(kc: usize, a: *const f32, b: *const f32, out: TileOut) {
    // The tile of `C` is needed only after the `k` loop: start fetching it now.
    for i in 0..out.rows.min(R) {
        let row = out.ptr.wrapping_add(i * out.row_stride) as *const i8;
        _mm_prefetch::<_MM_HINT_T0>(row);
        _mm_prefetch::<_MM_HINT_T0>(row.wrapping_add(64));
        _mm_prefetch::<_MM_HINT_T0>(row.wrapping_add(NR * 4 - 4));
    }
    let mut acc = [[_mm512_setzero_ps(); 2]; R];
    for p in 0..kc {
        // SAFETY: `p < kc`: the loads stay inside the `kc * NR` B̃ panel and inside row
        // `i < R <= MR` of the Ã panel.
        unsafe {
            let b0 = _mm512_loadu_ps(b.add(p * NR));
            let b1 = _mm512_loadu_ps(b.add(p * NR + 16));
            for (i, row) in acc.iter_mut().enumerate() {
                let ai = _mm512_set1_ps(*a.add(i * A_ROW_STRIDE + p));
                row[0] = _mm512_fmadd_ps(ai, b0, row[0]);
                row[1] = _mm512_fmadd_ps(ai, b1, row[1]);
            }
        }
    }
    // SAFETY: the caller guarantees `out` covers `rows × cols` of `C`, `rows <= R`.
    unsafe { write_tile(&acc, out) };
}

/// Stores (or adds) the accumulators into `C`: a fast path for full tiles, masked column
/// stores and a row limit for edge tiles.
///
/// # Safety
/// As [`micro_kernel`]'s `out`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn write_tile<const R: usize>(acc: &[[__m512; 2]; R], out: TileOut) {
    let rows = out.rows.min(R);
    if out.cols >= NR {
        for (i, row) in acc.iter().enumerate().take(rows) {
            // SAFETY: row `i < rows` and columns `0..32` are inside `C` (caller contract).
            unsafe {
                let c = out.ptr.add(i * out.row_stride);
                let (mut v0, mut v1) = (row[0], row[1]);
                if out.accumulate {
                    v0 = _mm512_add_ps(v0, _mm512_loadu_ps(c));
                    v1 = _mm512_add_ps(v1, _mm512_loadu_ps(c.add(16)));
                }
                _mm512_storeu_ps(c, v0);
                _mm512_storeu_ps(c.add(16), v1);
            }
        }
        return;
    }
    let lanes = |from: usize| -> __mmask16 {
        let n = out.cols.saturating_sub(from).min(16);
        ((1u32 << n) - 1) as __mmask16
    };
    let (m0, m1) = (lanes(0), lanes(16));
    for (i, row) in acc.iter().enumerate().take(rows) {
        // SAFETY: masked loads and stores touch only columns `< cols` of row `i < rows`,
        // inside `C`; masked-off lanes are never accessed (no fault, no write).
        unsafe {
            let c = out.ptr.add(i * out.row_stride);
            let c1 = c.wrapping_add(16);
            let (mut v0, mut v1) = (row[0], row[1]);
            if out.accumulate {
                v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, c));
                v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, c1));
            }
            _mm512_mask_storeu_ps(c, m0, v0);
            _mm512_mask_storeu_ps(c1, m1, v1);
        }
    }
}
