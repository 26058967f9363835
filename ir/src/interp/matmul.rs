//! `matmul`: NumPy semantics for operands of rank >= 2, batch axes broadcast.
//!
//! Both operands are broadcast to a common batch shape, then each batch is one 2-D product:
//! `ndarray`'s `general_mat_mul` for floats, a plain wrapping row-by-row loop for integers.

use super::broadcast::{broadcast_shapes, view_as};
use super::{OpError, OpResult};
use crate::tensor::Tensor;
use ndarray::linalg::general_mat_mul;
use ndarray::{Array3, ArrayD, ArrayView2, ArrayViewD, ArrayViewMut2, Axis, Ix2, IxDyn, Zip};

/// Shapes of a batched product: (batch shape, m, k, n).
fn product_shape(a: &[usize], b: &[usize]) -> Result<(Vec<usize>, usize, usize, usize), OpError> {
    if a.len() < 2 || b.len() < 2 {
        return Err(OpError::Internal(format!(
            "`matmul` needs operands of rank >= 2, got {a:?} and {b:?}"
        )));
    }
    let (a_batch, a_mat) = a.split_at(a.len() - 2);
    let (b_batch, b_mat) = b.split_at(b.len() - 2);
    let (m, k, k2, n) = (a_mat[0], a_mat[1], b_mat[0], b_mat[1]);
    if k != k2 {
        return Err(OpError::Shape(format!(
            "cannot multiply {a:?} by {b:?}: inner sizes differ ({k} vs {k2})"
        )));
    }
    let batch = broadcast_shapes(&[a_batch, b_batch])?;
    Ok((batch, m, k, n))
}

/// The 2-D matrix of batch number `index` (row-major over `batch`) of `v`, whose leading axes
/// are the batch axes.
fn batch_matrix<'a, T>(
    v: &ArrayViewD<'a, T>,
    batch: &[usize],
    mut index: usize,
) -> Result<ArrayView2<'a, T>, OpError> {
    let mut m = v.clone();
    // Peel the batch axes off from the last one, so removing one leaves the others in place.
    for (axis, &size) in batch.iter().enumerate().rev() {
        let size = size.max(1);
        m = m.index_axis_move(Axis(axis), index % size);
        index /= size;
    }
    m.into_dimensionality::<Ix2>().map_err(|e| OpError::Internal(format!("matmul batch: {e}")))
}

fn batched<T: Copy + Default>(
    a: &ArrayD<T>,
    b: &ArrayD<T>,
    product: impl Fn(ArrayView2<'_, T>, ArrayView2<'_, T>, ArrayViewMut2<'_, T>),
) -> Result<ArrayD<T>, OpError> {
    let (batch, m, k, n) = product_shape(a.shape(), b.shape())?;
    let with = |mat: [usize; 2]| -> Vec<usize> { batch.iter().copied().chain(mat).collect() };
    let av = view_as(a, &with([m, k]))?;
    let bv = view_as(b, &with([k, n]))?;
    let count: usize = batch.iter().product();
    let mut out = Array3::<T>::default((count, m, n));
    for (index, out_matrix) in out.outer_iter_mut().enumerate() {
        let am = batch_matrix(&av, &batch, index)?;
        let bm = batch_matrix(&bv, &batch, index)?;
        product(am, bm, out_matrix);
    }
    out.into_shape_with_order(IxDyn(&with([m, n])))
        .map_err(|e| OpError::Internal(format!("matmul result: {e}")))
}

macro_rules! int_product {
    ($t:ty) => {
        |a: ArrayView2<'_, $t>, b: ArrayView2<'_, $t>, mut out: ArrayViewMut2<'_, $t>| {
            for (a_row, mut out_row) in a.outer_iter().zip(out.outer_iter_mut()) {
                for (&a_ip, b_row) in a_row.iter().zip(b.outer_iter()) {
                    Zip::from(&mut out_row)
                        .and(&b_row)
                        .for_each(|o, &b_pj| *o = o.wrapping_add(a_ip.wrapping_mul(b_pj)));
                }
            }
        }
    };
}

pub(crate) fn matmul(lhs: &Tensor, rhs: &Tensor) -> OpResult {
    Ok(match (lhs, rhs) {
        (Tensor::F32(a), Tensor::F32(b)) => {
            Tensor::F32(batched(a, b, |a, b, mut c| general_mat_mul(1.0, &a, &b, 0.0, &mut c))?)
        }
        (Tensor::F64(a), Tensor::F64(b)) => {
            Tensor::F64(batched(a, b, |a, b, mut c| general_mat_mul(1.0, &a, &b, 0.0, &mut c))?)
        }
        (Tensor::I32(a), Tensor::I32(b)) => Tensor::I32(batched(a, b, int_product!(i32))?),
        (Tensor::I64(a), Tensor::I64(b)) => Tensor::I64(batched(a, b, int_product!(i64))?),
        (Tensor::Bool(_), Tensor::Bool(_)) => return Err(OpError::Unsupported(lhs.dtype())),
        _ => {
            return Err(OpError::Internal(format!(
                "operands have different dtypes ({} and {})",
                lhs.dtype(),
                rhs.dtype()
            )))
        }
    })
}
