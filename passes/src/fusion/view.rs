//! Shape ops read in place: which `Slice`s and `Transpose`s a loop kernel can read as strided
//! views of their source, and the layout (base offset and strides) of such a view.
//!
//! A loop kernel's inner axis is walked with unit stride, so a view qualifies when its last
//! axis is unit-stride in the source: a `Transpose` that keeps the last axis in place, or a
//! `Slice` of any axis but the last, or of the last with step 1. Every other axis may have any
//! stride (negative for reversed slices). Instead of copying, the consumer kernel gets the
//! source buffer, a base offset and the view's strides; fusion ([`super::fuse`]) lists the view
//! node in each consuming kernel, the code generator maps it to a strided input operand.
//!
//! A matmul reads any strides, so a `Transpose` of its operand's last two axes
//! ([`swaps_last_two`]) is read in place by the matmul kernel the same way.
//!
//! Adjacent view axes `a − 1, a` are *contiguous* when `stride[a − 1] = size[a] · stride[a]`
//! for every source shape; only those may be collapsed into one loop axis ([`ViewOp::breaks`]).

use tfn_ir::bind::slice_range;
use tfn_ir::{Graph, Op, ValueId};

/// A shape op a kernel can read as a strided view of its source.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ViewOp {
    /// `Transpose` keeping the last axis: view axis `a` is source axis `perm[a]`.
    Transpose { perm: Vec<u32> },
    /// `Slice` of `axis` (not the last one unless `step == 1`).
    Slice { axis: u32, start: i64, end: Option<i64>, step: i64 },
}

impl ViewOp {
    /// The view form of `op`, eligible or not (a copy kernel reads any `Transpose`/`Slice`
    /// through its layout).
    pub fn of_op(op: &Op) -> Option<ViewOp> {
        match op {
            Op::Transpose { perm } => Some(ViewOp::Transpose { perm: perm.clone() }),
            &Op::Slice { axis, start, end, step } => Some(ViewOp::Slice { axis, start, end, step }),
            _ => None,
        }
    }

    /// The view form of node `v` if a loop kernel can read it in place: a `Transpose` that
    /// keeps the last axis, or a `Slice` (of the last axis only with step 1) of a rank ≥ 1
    /// value.
    pub fn of_node(graph: &Graph, v: ValueId) -> Option<ViewOp> {
        let node = graph.nodes.get(v.index())?;
        let source = *node.inputs.first()?;
        let rank = graph.ty(source).shape.rank();
        if rank == 0 {
            return None;
        }
        let view = Self::of_op(&node.op)?;
        let eligible = match &view {
            ViewOp::Transpose { perm } => {
                perm.len() == rank && perm.last() == Some(&(rank as u32 - 1))
            }
            &ViewOp::Slice { axis, step, .. } => {
                let inner = axis as usize + 1 == rank;
                (axis as usize) < rank && step != 0 && (!inner || step == 1)
            }
        };
        eligible.then_some(view)
    }

    /// Per view axis `a`: whether it must not be collapsed with axis `a − 1` (their strides
    /// are not contiguous for every source shape). `rank` is the view's rank.
    pub fn breaks(&self, rank: usize) -> Vec<bool> {
        let mut out = vec![false; rank];
        match self {
            ViewOp::Transpose { perm } => {
                for a in 1..rank.min(perm.len()) {
                    out[a] = perm[a - 1] + 1 != perm[a];
                }
            }
            ViewOp::Slice { axis, step, .. } => {
                let axis = *axis as usize;
                // The sliced axis is shorter than in the source: not contiguous with its outer
                // neighbour; with a step it is not contiguous with its inner one either.
                if axis < rank {
                    out[axis] = axis > 0;
                    if *step != 1 && axis + 1 < rank {
                        out[axis + 1] = true;
                    }
                }
            }
        }
        out
    }

    /// Base element offset and per-view-axis element strides of the view over a contiguous
    /// row-major source of `source_shape`. `None` when the shape does not fit the op (a
    /// permutation of another rank or out of range, a slice axis out of range, step 0).
    pub fn layout(&self, source_shape: &[usize]) -> Option<(isize, Vec<isize>)> {
        let strides = contiguous_strides(source_shape)?;
        match self {
            ViewOp::Transpose { perm } => {
                if perm.len() != strides.len() {
                    return None;
                }
                let permuted = perm
                    .iter()
                    .map(|&p| strides.get(p as usize).copied())
                    .collect::<Option<_>>()?;
                Some((0, permuted))
            }
            ViewOp::Slice { axis, start, end, step } => {
                let axis = *axis as usize;
                let size = i64::try_from(*source_shape.get(axis)?).ok()?;
                let (first, _) = slice_range(size, *start, *end, *step)?;
                let mut strides = strides;
                let base = isize::try_from(first).ok()?.checked_mul(strides[axis])?;
                // Wrapping: the product only overflows when the step exceeds the axis, and
                // then the slice has at most one element and the stride is never used.
                strides[axis] = strides[axis].wrapping_mul(*step as isize);
                Some((base, strides))
            }
        }
    }
}

/// Row-major element strides of a contiguous `shape`; `None` if its size overflows `isize`.
pub fn contiguous_strides(shape: &[usize]) -> Option<Vec<isize>> {
    let mut strides = vec![0isize; shape.len()];
    let mut acc: isize = 1;
    for a in (0..shape.len()).rev() {
        strides[a] = acc;
        acc = acc.checked_mul(isize::try_from(shape[a]).ok()?)?;
    }
    Some(strides)
}

/// Whether node `v` is a `Transpose` swapping the last two axes (keeping the others): a
/// matmul operand the GEMM reads in place by swapping the operand's strides.
pub fn swaps_last_two(graph: &Graph, v: ValueId) -> bool {
    let Some(Op::Transpose { perm }) = graph.nodes.get(v.index()).map(|n| &n.op) else {
        return false;
    };
    let r = perm.len();
    r >= 2
        && perm.iter().take(r - 2).enumerate().all(|(i, &p)| p as usize == i)
        && perm[r - 2] as usize == r - 1
        && perm[r - 1] as usize == r - 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slice_layout_matches_python_indexing() {
        // x[1:7:2] of a [10, 4] source: rows 1, 3, 5.
        let op = ViewOp::Slice { axis: 0, start: 1, end: Some(7), step: 2 };
        assert_eq!(op.layout(&[10, 4]), Some((4, vec![8, 1])));
        assert_eq!(op.breaks(2), vec![false, true]);
        // x[:, ::-1] is not a view (reversed inner axis) — see `of_node`; x[::-1] is.
        let rev = ViewOp::Slice { axis: 0, start: -1, end: None, step: -1 };
        assert_eq!(rev.layout(&[3, 5]), Some((10, vec![-5, 1])));
        // x[:, 2:] keeps unit inner stride but breaks the row collapse.
        let cols = ViewOp::Slice { axis: 1, start: 2, end: None, step: 1 };
        assert_eq!(cols.layout(&[3, 5]), Some((2, vec![5, 1])));
        assert_eq!(cols.breaks(2), vec![false, true]);
    }

    #[test]
    fn transpose_layout_permutes_strides() {
        let op = ViewOp::Transpose { perm: vec![1, 0, 2] };
        assert_eq!(op.layout(&[2, 3, 4]), Some((0, vec![4, 12, 1])));
        assert_eq!(op.breaks(3), vec![false, true, true]);
        let keep = ViewOp::Transpose { perm: vec![2, 0, 1, 3] };
        assert_eq!(keep.breaks(4), vec![false, true, false, true]);
    }
}
