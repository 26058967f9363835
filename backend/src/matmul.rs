//! Matrix products through the `gemm` crate (AVX2/AVX-512 micro-kernels with runtime
//! dispatch), batched NumPy style with broadcast batch axes.
//!
//! Why `gemm` rather than a Cranelift micro-kernel: Cranelift only has 128-bit vectors and no
//! register tiling help, so a JIT micro-kernel tops out far below the 150 GFLOP/s target; `gemm`
//! packs panels and uses 256/512-bit FMA kernels. The elementwise epilogue (bias, activation)
//! then runs as a fused JIT loop over the product.

use crate::buffers::RawBuf;
use crate::error::RunError;
use tfn_ir::DType;

/// Shapes of one matmul call: `a` is `[..., m, k]`, `b` is `[..., k, n]`, `out` is
/// `[..., m, n]` with the batch axes of `a` and `b` broadcast to those of `out`.
pub(crate) struct MatMulShapes<'s> {
    pub a: &'s [usize],
    pub b: &'s [usize],
    pub out: &'s [usize],
}

/// Row-major element strides of the batch axes of `shape` aligned to `batch` (0 = broadcast).
fn batch_strides(shape: &[usize], batch: &[usize], matrix: usize) -> Vec<usize> {
    let lead = shape.len().saturating_sub(2);
    let mut strides = vec![0usize; batch.len()];
    let mut acc = matrix;
    for i in (0..lead).rev() {
        let j = batch.len() + i - lead;
        if shape[i] != 1 {
            strides[j] = acc;
        }
        acc *= shape[i];
    }
    strides
}

/// Computes `out = a @ b`. All three buffers are contiguous row-major of `shapes`.
///
/// # Safety
/// The buffers must be valid for their shapes and dtype; `out` must not overlap the inputs.
pub(crate) unsafe fn matmul(
    a: RawBuf,
    b: RawBuf,
    out: RawBuf,
    shapes: &MatMulShapes<'_>,
    threads: usize,
) -> Result<(), RunError> {
    let (ra, rb, ro) = (shapes.a.len(), shapes.b.len(), shapes.out.len());
    if ra < 2 || rb < 2 || ro < 2 {
        return Err(RunError::Internal("matmul operands must have rank >= 2".into()));
    }
    let (m, k) = (shapes.a[ra - 2], shapes.a[ra - 1]);
    let n = shapes.b[rb - 1];
    if shapes.b[rb - 2] != k || shapes.out[ro - 2] != m || shapes.out[ro - 1] != n {
        return Err(RunError::Internal("matmul shapes do not agree".into()));
    }
    let batch = &shapes.out[..ro - 2];
    let a_strides = batch_strides(shapes.a, batch, m * k);
    let b_strides = batch_strides(shapes.b, batch, k * n);
    let count: usize = batch.iter().product();
    let parallelism = if threads > 1 && m * n * k >= 1 << 21 {
        gemm::Parallelism::Rayon(threads)
    } else {
        gemm::Parallelism::None
    };
    let mut index = vec![0usize; batch.len()];
    for c in 0..count {
        let a_off: usize = index.iter().zip(&a_strides).map(|(i, s)| i * s).sum();
        let b_off: usize = index.iter().zip(&b_strides).map(|(i, s)| i * s).sum();
        let o_off = c * m * n;
        // SAFETY: offsets stay inside the buffers for the shapes checked above.
        unsafe {
            match a.dtype {
                DType::F32 => gemm::gemm(
                    m,
                    n,
                    k,
                    (out.ptr as *mut f32).add(o_off),
                    1,
                    n as isize,
                    false,
                    (a.ptr as *const f32).add(a_off),
                    1,
                    k as isize,
                    (b.ptr as *const f32).add(b_off),
                    1,
                    n as isize,
                    0.0f32,
                    1.0f32,
                    false,
                    false,
                    false,
                    parallelism,
                ),
                DType::F64 => gemm::gemm(
                    m,
                    n,
                    k,
                    (out.ptr as *mut f64).add(o_off),
                    1,
                    n as isize,
                    false,
                    (a.ptr as *const f64).add(a_off),
                    1,
                    k as isize,
                    (b.ptr as *const f64).add(b_off),
                    1,
                    n as isize,
                    0.0f64,
                    1.0f64,
                    false,
                    false,
                    false,
                    parallelism,
                ),
                d => return Err(RunError::Internal(format!("matmul of {d} has no gemm kernel"))),
            }
        }
        for i in (0..index.len()).rev() {
            index[i] += 1;
            if index[i] < batch[i] {
                break;
            }
            index[i] = 0;
        }
    }
    Ok(())
}
