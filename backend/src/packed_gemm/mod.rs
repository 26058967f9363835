//! tfn's own single-precision GEMM for x86-64 AVX-512: GotoBLAS/BLIS packing and blocking
//! around a 12 × 32 register-blocked micro-kernel.
//!
//! Why our own: owning the loop nest gives the executor a hook — `gemm_f32`'s `rows_done` —
//! that fires when a block of output rows is final, so the fused elementwise epilogue (bias,
//! activation) runs on that tile while it is still in cache; and packing from arbitrary strides
//! makes transposed operands free. Speed: the `gemm` crate's AVX-512 kernels need a nightly
//! compiler, so on stable it runs AVX2 kernels; on the Zen core this was measured on, AVX-512
//! FMAs issue as two 256-bit halves (a pure FMA loop peaks at ~117 GFLOP/s with `ymm` or
//! `zmm` alike), so the gain is the 32 registers (24 accumulators) and the fused epilogue, not
//! wider arithmetic: ~95% of that peak at 256², ~92% at 1024² (CPU time, one thread).
//!
//! - `kernel`: the micro-kernel and its edge-tile stores;
//! - `pack`: packing strided `A`/`B` blocks into micro-panels (`StridedMatrix`);
//! - `half`: `f16`/`bf16` operands widened while packed (`HalfMatrix`, `Matrix`);
//! - `driver`: the five-loop nest, block sizes and the packing buffers callers keep.
//!
//! Everything here computes in f32 (16-bit operands are widened exactly) and is x86-64 only; `available` says whether it may be called, and
//! callers fall back to the `gemm` crate otherwise (and for f64).

mod driver;
mod half;
mod kernel;
mod pack;

#[cfg(target_arch = "x86_64")]
pub(crate) use driver::gemm_f32;
pub(crate) use driver::{Dims, OutputMatrix, PackBuffers};
pub(crate) use half::Matrix;
pub(crate) use kernel::{MR, NR};
pub(crate) use pack::{PanelSource, StridedMatrix};

use ndarray::{ArrayView2, ArrayViewMut2};
use thiserror::Error;

/// Why [`matmul_f32`] refused its operands.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum GemmError {
    #[error("cannot multiply {a:?} by {b:?} into {c:?}")]
    Shapes { a: [usize; 2], b: [usize; 2], c: [usize; 2] },
}

/// Whether this CPU runs the AVX-512 kernel (checked once, then cached by std).
pub(crate) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

thread_local! {
    /// [`matmul_f32`]'s packing buffers, kept for the next call on this thread.
    static BUFFERS: std::cell::Cell<PackBuffers> = std::cell::Cell::new(PackBuffers::default());
}

/// `c = a · b` for f32 matrices of any strides (a transposed view is as fast as a contiguous
/// one), with the packed AVX-512 kernel when the CPU has it and the `gemm` crate otherwise.
/// `c` is overwritten, whatever it held.
pub fn matmul_f32(
    a: ArrayView2<'_, f32>,
    b: ArrayView2<'_, f32>,
    c: &mut ArrayViewMut2<'_, f32>,
) -> Result<(), GemmError> {
    let ((m, k), (kb, n)) = (a.dim(), b.dim());
    if kb != k || c.dim() != (m, n) {
        return Err(GemmError::Shapes { a: [m, k], b: [kb, n], c: [c.nrows(), c.ncols()] });
    }
    let (rs_c, cs_c) = (c.strides()[0], c.strides()[1]);
    #[cfg(target_arch = "x86_64")]
    if available() && (cs_c == 1 || n <= 1) && (rs_c >= n as isize || m <= 1) {
        let a = StridedMatrix {
            ptr: a.as_ptr(),
            row_stride: a.strides()[0],
            col_stride: a.strides()[1],
        };
        let b = StridedMatrix {
            ptr: b.as_ptr(),
            row_stride: b.strides()[0],
            col_stride: b.strides()[1],
        };
        // SAFETY: the views guarantee `a`, `b` are valid `m × k`, `k × n` matrices at their
        // strides; `c` is a unique borrow (no overlap) of `m` rows of `n` contiguous elements at
        // row stride `rs_c >= n` (or a single row); AVX-512F was just detected.
        unsafe {
            let c = OutputMatrix { ptr: c.as_mut_ptr(), row_stride: rs_c.max(0) as usize };
            let mut bufs = BUFFERS.take();
            gemm_f32(Dims { m, n, k }, &a, &b, c, &mut bufs, &mut |_, _| {});
            BUFFERS.set(bufs);
        };
        return Ok(());
    }
    // SAFETY: the views describe valid matrices of these shapes and strides; `c` is unique.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            cs_c,
            rs_c,
            false,
            a.as_ptr(),
            a.strides()[1],
            a.strides()[0],
            b.as_ptr(),
            b.strides()[1],
            b.strides()[0],
            0.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::None,
        )
    };
    Ok(())
}
