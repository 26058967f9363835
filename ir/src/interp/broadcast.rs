//! NumPy broadcasting: the common shape of several operands, and `broadcast_to`.

use super::{map_any, OpError, OpResult};
use crate::tensor::Tensor;
use ndarray::{ArrayD, ArrayViewD, IxDyn};

/// The NumPy broadcast of `shapes`: right-aligned, each axis equal or 1.
pub(crate) fn broadcast_shapes(shapes: &[&[usize]]) -> Result<Vec<usize>, OpError> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![1usize; rank];
    for shape in shapes {
        let offset = rank - shape.len();
        for (axis, &size) in shape.iter().enumerate() {
            let slot = &mut out[offset + axis];
            if *slot == 1 {
                *slot = size;
            } else if size != 1 && size != *slot {
                return Err(OpError::Shape(format!(
                    "shapes {} cannot be broadcast together",
                    shapes.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>().join(" and ")
                )));
            }
        }
    }
    Ok(out)
}

/// A broadcasting view of `a` with shape `shape`.
pub(crate) fn view_as<'a, T>(
    a: &'a ArrayD<T>,
    shape: &[usize],
) -> Result<ArrayViewD<'a, T>, OpError> {
    a.broadcast(IxDyn(shape)).ok_or_else(|| {
        OpError::Shape(format!("cannot broadcast shape {:?} to {shape:?}", a.shape()))
    })
}

/// `broadcast_to`: a new array of shape `shape`.
pub(crate) fn broadcast_to(t: &Tensor, shape: &[usize]) -> OpResult {
    Ok(map_any!(t, a => view_as(a, shape)?.to_owned()))
}
