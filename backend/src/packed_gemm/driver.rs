//! The GotoBLAS/BLIS loop nest around the micro-kernel, with its cache blocking, and the
//! point where a block of output rows becomes final.
//!
//! ```text
//! for jc in 0..n step NC            B̃ block of NC columns (L3)
//!   for pc in 0..k step KC          pack B[pc.., jc..] → B̃ (KC × NC)
//!     for ic in 0..m step MC        pack A[ic.., pc..] → Ã (MC × KC, L2)
//!       for jr in 0..nc step NR       B̃ micro-panel (KC × NR)
//!         for ir in 0..mc step MR       Ã micro-panel, micro-kernel → C tile
//!       if last pc and last jc: rows ic..ic+mc are final → `rows_done(ic, ic + mc)`
//! ```
//!
//! Block sizes for this Zen core (L1d 32 KB, L2 1 MB; AVX-512 FMAs issue as two 256-bit
//! halves, so one `zmm` FMA per cycle): the micro-kernel needs only ~3 bytes per cycle of
//! packed operands, which L2 and L3 deliver, so `KC` is chosen large to cut the passes over
//! `C` (each pass re-reads the `C` tile from far away). Measured at 1024² (GFLOP/s, CPU time):
//! KC 128 → 90, 256 → 104, 384 → 104, 512 → 105, 1024 → 108, 1536 → 108; MC 96–240 within
//! noise. 1536 covers a BERT feed-forward's `k = 1536` in one pass (1024 × 1536 · 1536 × 384:
//! 12.3 → 11.6 ms, `tfnc bench`, one thread). Ã (`MC × A_ROW_STRIDE × 4` ≈ 600 KB) stays in
//! L2; B̃ micro-panels (`KC × NR × 4` ≤ 192 KB)
//! stream from L2/L3 with the hardware prefetcher. `NC` is large, so for the usual `n <= NC`
//! the whole row of `C` is final in the last `pc` pass right after its
//! `ic` block, while that `MC × n` tile is still in L2 — which is when the fused epilogue
//! runs on it.

use super::half::RowPanelSource;
#[cfg(target_arch = "x86_64")]
use super::kernel::{micro_kernel, TileOut};
use super::kernel::{MR, NR};
use super::pack::PanelSource;

/// Depth of a packed block (the `k` extent one micro-kernel call accumulates).
pub(crate) const KC: usize = 1536;
/// Distance between the rows of a packed Ã panel: `KC` plus one cache line, so the `MR` row
/// streams the micro-kernel broadcasts from fall into different L1 sets.
pub(crate) const A_ROW_STRIDE: usize = KC + 16;
/// Rows of a packed Ã block (a multiple of `MR`).
pub(crate) const MC: usize = 96;
/// Columns of a packed B̃ block (a multiple of `NR`).
pub(crate) const NC: usize = 2048;

/// 64-byte aligned storage for packed panels (aligned vector loads of B̃ rows).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([f32; 16]);

/// Packing buffers for one running product. Callers keep them across calls (in a thread-local
/// of the calling thread, also for the helper threads it spawns): fresh large allocations
/// page-fault on first touch, which costs more than a 256² product.
#[derive(Default)]
pub(crate) struct PackBuffers {
    a: Vec<Line>,
    b: Vec<Line>,
}

impl PackBuffers {
    /// Grows `buf` to at least `floats` f32 values and returns its start.
    fn ensure(buf: &mut Vec<Line>, floats: usize) -> *mut f32 {
        let lines = floats.div_ceil(16);
        if buf.len() < lines {
            buf.resize(lines, Line([0.0; 16]));
        }
        buf.as_mut_ptr() as *mut f32
    }
}

/// The extents of a product: `C` (`m × n`) = `A` (`m × k`) · `B` (`k × n`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dims {
    pub m: usize,
    pub n: usize,
    pub k: usize,
}

/// The row-major output `C`: row `i` starts at `ptr + i * row_stride` (elements).
#[derive(Clone, Copy, Debug)]
pub(crate) struct OutputMatrix {
    pub ptr: *mut f32,
    pub row_stride: usize,
}

/// `C = A · B` for an `m × k` matrix `A` (strided, `f32` or 16-bit: [`super::half`]), a
/// `k × n` matrix `B` (the same, or any
/// [`PanelSource`] that packs its panels itself, like a convolution's image) and a row-major
/// `C`. Calls `rows_done(i0, i1)` as soon as rows `i0..i1` of
/// `C` hold their final values, in increasing row order, covering `0..m` exactly once.
///
/// # Safety
/// The CPU must support AVX-512F. `a` must describe a valid `m × k` matrix and `b` a valid
/// `k × n` one; `c` must be valid for writes of `m` rows of `n` elements at its row stride
/// (`>= n`) and must not overlap `a` or `b`.
#[cfg(target_arch = "x86_64")]
pub(crate) unsafe fn gemm_f32<A: RowPanelSource + ?Sized, B: PanelSource + ?Sized>(
    dims: Dims,
    a: &A,
    b: &B,
    c: OutputMatrix,
    bufs: &mut PackBuffers,
    rows_done: &mut dyn FnMut(usize, usize),
) {
    let Dims { m, n, k } = dims;
    let OutputMatrix { ptr: c, row_stride: c_row_stride } = c;
    if m == 0 {
        return;
    }
    if n == 0 {
        rows_done(0, m);
        return;
    }
    if k == 0 {
        for i in 0..m {
            // SAFETY: row `i < m` of `C` holds `n` writable elements.
            unsafe { std::ptr::write_bytes(c.add(i * c_row_stride), 0, n) };
        }
        rows_done(0, m);
        return;
    }
    let pa = PackBuffers::ensure(&mut bufs.a, MC.div_ceil(MR) * MR * A_ROW_STRIDE);
    let pb = PackBuffers::ensure(&mut bufs.b, KC * n.min(NC).div_ceil(NR) * NR);
    for jc in (0..n).step_by(NC) {
        let nc = (n - jc).min(NC);
        let last_jc = jc + nc == n;
        for pc in (0..k).step_by(KC) {
            let kc = (k - pc).min(KC);
            let last_pc = pc + kc == k;
            // SAFETY: the block is inside `B` (`pc + kc <= k`, `jc + nc <= n`); `pb` holds
            // `KC * ceil(min(n, NC) / NR) * NR >= kc * ceil(nc / NR) * NR` floats.
            unsafe { b.pack_b(pc, jc, kc, nc, pb) };
            for ic in (0..m).step_by(MC) {
                let mc = (m - ic).min(MC);
                // SAFETY: the block is inside `A`, `kc <= KC < A_ROW_STRIDE`; `pa` holds
                // `ceil(MC / MR) * MR * A_ROW_STRIDE` floats.
                unsafe { a.pack_a(ic, pc, mc, kc, pa) };
                let block = Block { mc, nc, kc, accumulate: pc > 0 };
                // SAFETY: AVX-512F is present (caller contract); `C` rows `ic..ic + mc`,
                // columns `jc..jc + nc` are inside `C`; the panels were just packed.
                unsafe {
                    macro_kernel(&block, pa, pb, c.add(ic * c_row_stride + jc), c_row_stride)
                };
                if last_pc && last_jc {
                    rows_done(ic, ic + mc);
                }
            }
        }
    }
}

/// Extents of one packed block pair.
struct Block {
    mc: usize,
    nc: usize,
    kc: usize,
    accumulate: bool,
}

/// All micro-tiles of one `mc × nc` block of `C` from packed Ã and B̃.
///
/// # Safety
/// AVX-512F must be present; `pa`/`pb` hold the packed panels of `block`; `c` is valid for
/// `mc` rows of `nc` elements at `ldc`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn macro_kernel(block: &Block, pa: *const f32, pb: *const f32, c: *mut f32, ldc: usize) {
    let Block { mc, nc, kc, accumulate } = *block;
    for jr in (0..nc).step_by(NR) {
        for ir in (0..mc).step_by(MR) {
            let out = TileOut {
                // SAFETY: `ir < mc`, `jr < nc`: the tile origin is inside the block of `C`.
                ptr: unsafe { c.add(ir * ldc + jr) },
                row_stride: ldc,
                rows: mc - ir,
                cols: nc - jr,
                accumulate,
            };
            // SAFETY: panel `ir / MR` of Ã starts at `ir * A_ROW_STRIDE` (`MR` zero-padded
            // rows of `kc`), panel `jr / NR` of B̃ at `jr * kc` (`kc` zero-padded groups of
            // `NR`); `out` is inside the block.
            unsafe { micro_kernel(kc, pa.add(ir * A_ROW_STRIDE), pb.add(jr * kc), out) };
        }
    }
}
