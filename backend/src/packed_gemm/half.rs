//! 16-bit operands: `f16`/`bf16` matrices widened to `f32` while they are packed.
//!
//! A matmul of 16-bit values computes in `f32` (the language's rule: operands widened exactly,
//! one rounding where the result is stored). Widening is exact, so it can happen anywhere
//! before the multiply: here it happens in the packers, which copy every operand element into
//! the micro-panels anyway, so an `f16` product reads half the bytes of an `f32` one and
//! writes no widened copy of either operand. Runs of contiguous elements are widened with
//! `crate::convert16` (F16C / AVX-512 where the CPU has them, the same bits as
//! `tfn_ir::storage::bits` everywhere); a column-major `B` panel is widened column by column
//! into a small buffer and transposed 8 × 8 in registers, as the `f32` packer does.
//!
//! [`Matrix`] is what the GEMM driver takes: an `f32` [`StridedMatrix`] or a [`HalfMatrix`].

use super::driver::A_ROW_STRIDE;
use super::kernel::{MR, NR};
use super::pack::{self, PanelSource, StridedMatrix};
use crate::convert16;
use tfn_ir::storage::bits;
use tfn_ir::DType;

/// A read-only strided matrix of 16-bit floats (`dtype` is `F16` or `BF16`): element `(i, j)`
/// lives at `ptr + i * row_stride + j * col_stride` (in elements).
#[derive(Clone, Copy, Debug)]
pub(crate) struct HalfMatrix {
    pub ptr: *const u16,
    pub dtype: DType,
    pub row_stride: isize,
    pub col_stride: isize,
}

/// Columns of `B` widened per pass of the column-major packer, and rows per pass.
const COLUMNS: usize = 8;
const ROWS: usize = 256;

impl HalfMatrix {
    /// The address of element `(i, j)`.
    ///
    /// # Safety
    /// `(i, j)` must be inside the matrix the pointer and strides describe.
    #[inline(always)]
    unsafe fn at(&self, i: usize, j: usize) -> *const u16 {
        // SAFETY: the caller keeps `(i, j)` inside the described matrix.
        unsafe { self.ptr.offset(i as isize * self.row_stride + j as isize * self.col_stride) }
    }

    /// Widens the `n` elements from `(i, j)` on, `step` elements apart, into `dst[..n]`
    /// (unit steps through `convert16`, others one by one).
    ///
    /// # Safety
    /// Those `n` elements must be inside the matrix and `dst` valid for `n` writes.
    #[inline(always)]
    unsafe fn widen_run(&self, i: usize, j: usize, n: usize, step: isize, dst: *mut f32) {
        if n == 0 {
            return;
        }
        if step == 1 {
            // SAFETY: the caller's contract: `n` contiguous elements and `n` writable floats.
            let (src, out) = unsafe {
                (
                    std::slice::from_raw_parts(self.at(i, j), n),
                    std::slice::from_raw_parts_mut(dst, n),
                )
            };
            convert16::widen(self.dtype, src, out);
            return;
        }
        let first = self.at_raw(i, j);
        for e in 0..n {
            // SAFETY: element `e` of the run is inside the matrix (caller contract).
            unsafe {
                let h = *first.offset(e as isize * step);
                *dst.add(e) = match self.dtype {
                    DType::F16 => bits::f16_to_f32(h),
                    _ => bits::bf16_to_f32(h),
                };
            }
        }
    }

    /// [`Self::at`] without the unsafe contract on computing the address (it is not read).
    #[inline(always)]
    fn at_raw(&self, i: usize, j: usize) -> *const u16 {
        self.ptr.wrapping_offset(i as isize * self.row_stride + j as isize * self.col_stride)
    }

    /// [`pack::pack_a`] of this matrix, widening.
    ///
    /// # Safety
    /// As [`pack::pack_a`].
    unsafe fn pack_a(&self, row0: usize, col0: usize, mc: usize, kc: usize, dst: *mut f32) {
        let padded = mc.div_ceil(MR) * MR;
        if self.row_stride == 1 && self.col_stride != 1 {
            // Column-major (a transposed row-major buffer): each column of the block is `mc`
            // contiguous values, widened at once and dealt to the panels' rows.
            let mut column = [0f32; super::driver::MC];
            for p in 0..kc {
                // SAFETY: column `col0 + p` of rows `row0..row0 + mc` is inside the block;
                // `mc <= MC` floats fit `column`.
                unsafe { self.widen_run(row0, col0 + p, mc, 1, column.as_mut_ptr()) };
                for (i, &x) in column.iter().enumerate().take(mc) {
                    // SAFETY: row `i % MR` of panel `i / MR`, column `p < kc`: inside `dst`.
                    unsafe {
                        *dst.add((i / MR) * MR * A_ROW_STRIDE + (i % MR) * A_ROW_STRIDE + p) = x
                    };
                }
            }
            for i in mc..padded {
                // SAFETY: a padding row of the last panel, `kc` floats inside `dst`.
                unsafe {
                    std::ptr::write_bytes(
                        dst.add((i / MR) * MR * A_ROW_STRIDE + (i % MR) * A_ROW_STRIDE),
                        0,
                        kc,
                    )
                };
            }
            return;
        }
        for i in 0..padded {
            // SAFETY: row `i % MR` of panel `i / MR`: `A_ROW_STRIDE >= kc` floats in `dst`.
            let out = unsafe { dst.add((i / MR) * MR * A_ROW_STRIDE + (i % MR) * A_ROW_STRIDE) };
            if i >= mc {
                // SAFETY: as above.
                unsafe { std::ptr::write_bytes(out, 0, kc) };
            } else {
                // SAFETY: row `row0 + i`, columns `col0..col0 + kc` are inside the block.
                unsafe { self.widen_run(row0 + i, col0, kc, self.col_stride, out) };
            }
        }
    }
}

impl PanelSource for HalfMatrix {
    unsafe fn pack_b(&self, row0: usize, col0: usize, kc: usize, nc: usize, dst: *mut f32) {
        let mut out = dst;
        let mut block = [0f32; COLUMNS * ROWS];
        for c in (0..nc).step_by(NR) {
            let cols = (nc - c).min(NR);
            if self.row_stride == 1 && self.col_stride != 1 {
                // Column-major (a `[out, in]` weight read as `[in, out]`): `COLUMNS` columns
                // widened `ROWS` rows at a time, then transposed into the panel's rows.
                for j in (0..NR).step_by(COLUMNS) {
                    for p0 in (0..kc).step_by(ROWS) {
                        let rows = (kc - p0).min(ROWS);
                        for jj in 0..COLUMNS {
                            let column = &mut block[jj * ROWS..jj * ROWS + rows];
                            if c + j + jj < nc {
                                // SAFETY: column `col0 + c + j + jj < col0 + nc`, rows
                                // `row0 + p0..+ rows` are inside the block.
                                unsafe {
                                    self.widen_run(
                                        row0 + p0,
                                        col0 + c + j + jj,
                                        rows,
                                        1,
                                        column.as_mut_ptr(),
                                    )
                                };
                            } else {
                                column.fill(0.0);
                            }
                        }
                        // SAFETY: rows `p0..p0 + rows` of this panel hold `NR` floats each
                        // (`j + COLUMNS <= NR`); `block` holds `COLUMNS` columns of `rows`.
                        unsafe { transpose_into(&block, rows, out.add(p0 * NR + j)) };
                    }
                }
                // SAFETY: the panel just written is `kc * NR` floats.
                out = unsafe { out.add(kc * NR) };
                continue;
            }
            for p in 0..kc {
                // SAFETY: row `row0 + p`, columns `col0 + c..+ cols` are inside the block; the
                // panel row holds `NR >= cols` floats.
                unsafe {
                    self.widen_run(row0 + p, col0 + c, cols, self.col_stride, out);
                    for j in cols..NR {
                        *out.add(j) = 0.0;
                    }
                    out = out.add(NR);
                }
            }
        }
    }
}

/// Writes the `COLUMNS` columns of `rows` values in `block` (column `jj` at `jj * ROWS`) as
/// `rows` panel rows of `COLUMNS` values at `dst`, `NR` apart.
///
/// # Safety
/// `dst` must be valid for those writes.
unsafe fn transpose_into(block: &[f32; COLUMNS * ROWS], rows: usize, dst: *mut f32) {
    let full = rows / 8 * 8;
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        for p in (0..full).step_by(8) {
            // SAFETY: 8 columns of 8 values from row `p` (`p + 8 <= rows`), `ROWS` apart, in
            // `block`; 8 panel rows of 8 floats at `dst + p * NR` (caller contract); AVX.
            unsafe { pack::transpose8(block.as_ptr().add(p), ROWS as isize, dst.add(p * NR), NR) };
        }
    }
    #[cfg(target_arch = "x86_64")]
    let done = if std::arch::is_x86_feature_detected!("avx") { full } else { 0 };
    #[cfg(not(target_arch = "x86_64"))]
    let done = 0;
    for p in done..rows {
        for jj in 0..COLUMNS {
            // SAFETY: panel row `p < rows`, column `jj < COLUMNS` (caller contract).
            unsafe { *dst.add(p * NR + jj) = block[jj * ROWS + p] };
        }
    }
}

/// A GEMM operand: `f32` or 16-bit, packed by the matching packer.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Matrix {
    F32(StridedMatrix),
    Half(HalfMatrix),
}

impl Matrix {
    /// The operand at `ptr` (element `(i, j)` at `ptr + (i * row_stride + j * col_stride)`
    /// elements of `dtype`), if the GEMM reads that dtype (`f32`, `f16`, `bf16`).
    pub(crate) fn new(
        ptr: *const u8,
        dtype: DType,
        row_stride: isize,
        col_stride: isize,
    ) -> Option<Matrix> {
        match dtype {
            DType::F32 => {
                Some(Matrix::F32(StridedMatrix { ptr: ptr as *const f32, row_stride, col_stride }))
            }
            DType::F16 | DType::BF16 => Some(Matrix::Half(HalfMatrix {
                ptr: ptr as *const u16,
                dtype,
                row_stride,
                col_stride,
            })),
            _ => None,
        }
    }

    /// This matrix moved by `elements` (its element `(0, 0)` is that far into the buffer).
    ///
    /// # Safety
    /// The new start must lie inside the same buffer (or the matrix be empty).
    pub(crate) unsafe fn offset(&self, elements: usize) -> Matrix {
        // SAFETY: the caller's contract.
        unsafe {
            match *self {
                Matrix::F32(m) => Matrix::F32(StridedMatrix { ptr: m.ptr.add(elements), ..m }),
                Matrix::Half(m) => Matrix::Half(HalfMatrix { ptr: m.ptr.add(elements), ..m }),
            }
        }
    }
}

/// An `A` operand the GEMM packs into row panels ([`pack::pack_a`]'s layout).
pub(crate) trait RowPanelSource {
    /// Packs rows `row0..row0 + mc`, columns `col0..col0 + kc` into `dst`.
    ///
    /// # Safety
    /// As [`pack::pack_a`].
    unsafe fn pack_a(&self, row0: usize, col0: usize, mc: usize, kc: usize, dst: *mut f32);
}

impl RowPanelSource for StridedMatrix {
    unsafe fn pack_a(&self, row0: usize, col0: usize, mc: usize, kc: usize, dst: *mut f32) {
        // SAFETY: the caller's contract is `pack_a`'s.
        unsafe { pack::pack_a(self, row0, col0, mc, kc, dst) }
    }
}

impl RowPanelSource for Matrix {
    unsafe fn pack_a(&self, row0: usize, col0: usize, mc: usize, kc: usize, dst: *mut f32) {
        // SAFETY: the caller's contract is `pack_a`'s.
        unsafe {
            match self {
                Matrix::F32(m) => pack::pack_a(m, row0, col0, mc, kc, dst),
                Matrix::Half(m) => m.pack_a(row0, col0, mc, kc, dst),
            }
        }
    }
}

impl PanelSource for Matrix {
    unsafe fn pack_b(&self, row0: usize, col0: usize, kc: usize, nc: usize, dst: *mut f32) {
        // SAFETY: the caller's contract is `pack_b`'s.
        unsafe {
            match self {
                Matrix::F32(m) => m.pack_b(row0, col0, kc, nc, dst),
                Matrix::Half(m) => m.pack_b(row0, col0, kc, nc, dst),
            }
        }
    }
}
