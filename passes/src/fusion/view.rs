//! Shape ops read in place: which `Slice`s and `Transpose`s a loop kernel can read as strided
//! views of their source, and the layout (base offset and strides) of such a view.
//!
//! A loop kernel's inner axis is walked with unit stride, so a view qualifies when its
//! *innermost axis not statically of size 1* is unit-stride in the source for every source
//! shape ([`ViewOp::of_node`]). Not simply its last axis: the loop planner drops the axes whose
//! size is the constant 1, so for a view `[3, 2, 1]` of `transpose(x, 0, 1)`, `x: [2, 3, 1]`,
//! the walked axis is the one of size 2, whose source stride is 3. Typically: a `Transpose` that
//! keeps the last axis in place, or a `Slice` of any axis but the last, or of the last with step
//! 1 — when no size-1 axes sit behind them. Every other axis may have any stride (negative for
//! reversed slices). Instead of copying, the consumer kernel gets the
//! source buffer, a base offset and the view's strides; fusion ([`super::fuse`]) lists the view
//! node in each consuming kernel, the code generator maps it to a strided input operand.
//!
//! A matmul reads any strides, so a `Transpose` of its operand ([`matmul_operand_view`]) is
//! read in place by the matmul kernel the same way: a last-two-axes swap (a weight read as its
//! transpose), or the head split of attention (`[B, T, H, D]` read as `[B, H, T, D]` or
//! `[B, H, D, T]`), whenever the source's contiguous axis stays one of the two matrix axes.
//!
//! A matmul also reads an `f16`/`bf16` operand in place ([`matmul_operand_widening`]): the
//! `cast` to `f32` that lowering puts in front of it is folded into the matmul kernel and the
//! GEMM's packers widen the 16-bit values while packing, so no `f32` copy is written. A
//! transpose and a widening cast may be folded together, in either order
//! ([`matmul_operand_chain`]).
//!
//! Adjacent view axes `a − 1, a` are *contiguous* when `stride[a − 1] = size[a] · stride[a]`
//! for every source shape; only those may be collapsed into one loop axis ([`ViewOp::breaks`]).

use tfn_ir::bind::slice_range;
use tfn_ir::{DType, Dim, Graph, Op, ValueId};

/// A shape op a kernel can read as a strided view of its source.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ViewOp {
    /// `Transpose`: view axis `a` is source axis `perm[a]`.
    Transpose { perm: Vec<u32> },
    /// `Slice` of `axis`, every `step`-th element from `start` (negative: from the end).
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

    /// The view form of node `v` if a loop kernel can read it in place: a `Transpose` or a
    /// `Slice` (step ≠ 0) of a rank ≥ 1 value whose innermost axis not statically of size 1
    /// is unit-stride in the source ([`Self::walks_unit_stride`]).
    pub fn of_node(graph: &Graph, v: ValueId) -> Option<ViewOp> {
        let node = graph.nodes.get(v.index())?;
        let source = *node.inputs.first()?;
        let source_shape = &graph.ty(source).shape;
        let rank = source_shape.rank();
        if rank == 0 || node.ty.shape.rank() != rank {
            return None;
        }
        let view = Self::of_op(&node.op)?;
        let valid = match &view {
            ViewOp::Transpose { perm } => perm.len() == rank,
            &ViewOp::Slice { axis, step, .. } => (axis as usize) < rank && step != 0,
        };
        (valid && view.walks_unit_stride(source_shape.dims(), node.ty.shape.dims())).then_some(view)
    }

    /// Whether the innermost view axis that is not the constant 1 — the axis a loop kernel
    /// walks with unit stride once the planner has dropped size-1 axes — has unit stride in
    /// a contiguous source of shape `source` whatever its symbols (every source axis behind it
    /// has size 1, and a slice does not step it). True when every view axis has size 1.
    pub fn walks_unit_stride(&self, source: &[Dim], view: &[Dim]) -> bool {
        let Some(a) = view.iter().rposition(|d| *d != Dim::Const(1)) else {
            return true;
        };
        let (source_axis, stepped) = match self {
            ViewOp::Transpose { perm } => match perm.get(a) {
                Some(&p) => (p as usize, false),
                None => return false,
            },
            &ViewOp::Slice { axis, step, .. } => (a, axis as usize == a && step != 1),
        };
        !stepped
            && source
                .get(source_axis + 1..)
                .is_some_and(|behind| behind.iter().all(|d| *d == Dim::Const(1)))
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

/// The permutation of node `v` when it is a `Transpose` a matmul can read in place as its
/// operand: the source's last (contiguous) axis stays one of the two matrix axes, so the GEMM
/// packs its panels from unit-stride runs (rows for a kept last axis, columns for a swapped
/// one); the other axes may move anywhere (batch strides are free).
pub fn matmul_operand_view(graph: &Graph, v: ValueId) -> Option<&[u32]> {
    let Some(Op::Transpose { perm }) = graph.nodes.get(v.index()).map(|n| &n.op) else {
        return None;
    };
    let r = perm.len();
    let last = (r as u32).checked_sub(1)?;
    (r >= 2 && (perm[r - 1] == last || perm[r - 2] == last)).then_some(perm.as_slice())
}

/// Whether node `v` is a `cast` to `f32` of an `f16`/`bf16` value: a matmul reads such an
/// operand in place, its packers widening the 16-bit source exactly as the cast would.
pub fn matmul_operand_widening(graph: &Graph, v: ValueId) -> bool {
    let Some(node) = graph.nodes.get(v.index()) else { return false };
    let Op::Cast(DType::F32) = node.op else { return false };
    node.inputs.first().is_some_and(|x| matches!(graph.ty(*x).dtype, DType::F16 | DType::BF16))
}

/// How a matmul reads operand `v` when the nodes in `kernel` that produce it were folded into
/// it: the folded nodes from `v` down (transposes and widening casts), the value the GEMM
/// reads, and the permutation from the operand's axes to that value's (`None`: none moved).
pub fn matmul_operand_chain(
    graph: &Graph,
    kernel: &[ValueId],
    v: ValueId,
) -> (Vec<ValueId>, ValueId, Option<Vec<u32>>) {
    let mut nodes = Vec::new();
    let mut perm: Option<Vec<u32>> = None;
    let mut at = v;
    while kernel.contains(&at) {
        let folded = matmul_operand_view(graph, at);
        if folded.is_none() && !matmul_operand_widening(graph, at) {
            break;
        }
        if let Some(p) = folded {
            // Operand axis `i` is axis `p[q[i]]` of the transpose's source.
            perm = Some(match perm {
                None => p.to_vec(),
                Some(q) => q.iter().map(|&i| p.get(i as usize).copied().unwrap_or(i)).collect(),
            });
        }
        let Some(&source) = graph.node(at).inputs.first() else { break };
        nodes.push(at);
        at = source;
    }
    (nodes, at, perm)
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
    fn the_walked_axis_must_be_unit_stride_behind_size_one_axes() {
        let (one, s0, s1) = (Dim::Const(1), Dim::Sym(tfn_ir::Sym(0)), Dim::Sym(tfn_ir::Sym(1)));
        // transpose(x, 0, 1) of [s0, s1, 1]: the loop walks the view axis of size s0 (stride s1).
        let swap = ViewOp::Transpose { perm: vec![1, 0, 2] };
        assert!(!swap.walks_unit_stride(&[s0, s1, one], &[s1, s0, one]));
        assert!(swap.walks_unit_stride(&[s0, s1, s1], &[s1, s0, s1]));
        // Moving a size-1 last axis to the front keeps the walked axis in place.
        let rotate = ViewOp::Transpose { perm: vec![2, 0, 1] };
        assert!(rotate.walks_unit_stride(&[s0, s1, one], &[one, s0, s1]));
        // x[::-1] of [s0, 1] walks the reversed axis; x[:, 0:1] of [s0, 3] walks stride 3.
        let rev = ViewOp::Slice { axis: 0, start: -1, end: None, step: -1 };
        assert!(!rev.walks_unit_stride(&[s0, one], &[s0, one]));
        assert!(rev.walks_unit_stride(&[s0, s1], &[s0, s1]));
        let col = ViewOp::Slice { axis: 1, start: 0, end: Some(1), step: 1 };
        assert!(!col.walks_unit_stride(&[s0, Dim::Const(3)], &[s0, one]));
        // Nothing to walk: every view axis has size 1.
        assert!(rev.walks_unit_stride(&[one, one], &[one, one]));
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
