//! The indexed ops, `Op::Index { kind, axis }`: their op-table row, shape rules and the
//! run-time checks every backend shares.
//!
//! With `a = axis`, `x` of rank `R`, and the index tensor `index` (`i32` or `i64`):
//! - `gather(x, index)` is `torch.gather`: `index` has rank `R`, its sizes on the axes other
//!   than `a` are at most `x`'s (checked when the call runs), and
//!   `out[p] = x[p with p[a] := index[p]]`; `out` has `index`'s shape. (Where the sizes are
//!   equal this is `np.take_along_axis`; NumPy would also broadcast an index axis of size 1,
//!   torch reads only the first slot, and so does tfn.)
//! - `index_select(x, index)` is `np.take(x, index, axis=a)` for an index of any rank:
//!   `out[pre, q, post] = x[pre, index[q], post]`, shape `x[:a] + index.shape + x[a+1:]`.
//! - `scatter_add(x, index, src)` is `torch.scatter_add`, out of place: `src` has `index`'s
//!   shape, `index` the constraints of `gather`, and `out = x` then, for every position `p`
//!   of `index` in row-major order, `out[p with p[a] := index[p]] += src[p]`. Duplicates
//!   accumulate, always in that order.
//! - `index_add(x, index, src)` is `torch.index_add` (out of place) for an index of any rank,
//!   the adjoint of `index_select`: `src` has `index_select(x, index)`'s shape and
//!   `out[pre, index[q], post] += src[pre, q, post]`, `q` in row-major order.
//!
//! Negative indices count from the end (`-1` is the last slot); anything outside
//! `[-n, n)` for an axis of size `n` is an error naming the op, the index and the size
//! ([`IndexError`]), on every backend, never a read or write out of bounds.

use crate::dtype::{DType, DTypeSet};
use crate::graph::TensorType;
use crate::shape::Shape;
use std::fmt;

/// Which indexed op (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IndexKind {
    Gather,
    IndexSelect,
    ScatterAdd,
    IndexAdd,
}

/// Every [`IndexKind`], for tables keyed by name.
pub const ALL_INDEX: [IndexKind; 4] =
    [IndexKind::Gather, IndexKind::IndexSelect, IndexKind::ScatterAdd, IndexKind::IndexAdd];

/// The dtypes an index tensor may have.
pub const INDEX_DTYPES: DTypeSet = DTypeSet::INT;

impl IndexKind {
    pub fn name(self) -> &'static str {
        match self {
            IndexKind::Gather => "gather",
            IndexKind::IndexSelect => "index_select",
            IndexKind::ScatterAdd => "scatter_add",
            IndexKind::IndexAdd => "index_add",
        }
    }

    pub fn from_name(name: &str) -> Option<IndexKind> {
        ALL_INDEX.into_iter().find(|k| k.name() == name)
    }

    /// The dtypes of the data operands (`x`, and `src`): reads move any dtype, the
    /// accumulations add.
    pub fn dtypes(self) -> DTypeSet {
        match self {
            IndexKind::Gather | IndexKind::IndexSelect => DTypeSet::ALL,
            IndexKind::ScatterAdd | IndexKind::IndexAdd => DTypeSet::NUMERIC,
        }
    }

    /// Reads (`gather`, `index_select`): one element of `x` per output element, at an
    /// address computed from the index — fused into the consuming loop.
    pub fn is_read(self) -> bool {
        matches!(self, IndexKind::Gather | IndexKind::IndexSelect)
    }

    /// Number of tensor inputs: `x, index` or `x, index, src`.
    pub fn arity(self) -> usize {
        if self.is_read() {
            2
        } else {
            3
        }
    }

    /// Whether the index has `x`'s rank and addresses `x` elementwise (`gather`,
    /// `scatter_add`), rather than whole slices along the axis (`index_select`, `index_add`).
    pub fn elementwise_index(self) -> bool {
        matches!(self, IndexKind::Gather | IndexKind::ScatterAdd)
    }

    /// The shape of `index_select(x, index)` along `axis`.
    pub fn select_shape(x: &Shape, index: &Shape, axis: usize) -> Shape {
        let mut dims = x.0[..axis].to_vec();
        dims.extend_from_slice(&index.0);
        dims.extend_from_slice(&x.0[axis + 1..]);
        Shape(dims)
    }

    /// The result type for `inputs` (`x, index[, src]`) whose sizes lowering already unified.
    pub fn infer(self, axis: u32, inputs: &[&TensorType]) -> Result<TensorType, String> {
        let name = self.name();
        let (Some(x), Some(index)) = (inputs.first(), inputs.get(1)) else {
            return Err(format!("`{name}` takes {} inputs", self.arity()));
        };
        if !INDEX_DTYPES.contains(index.dtype) {
            return Err(format!("`{name}`: the index must be i32 or i64, got {}", index.dtype));
        }
        let rank = x.shape.rank();
        let a = axis as usize;
        if a >= rank {
            return Err(format!("`{name}`: axis {axis} is out of range for rank {rank}"));
        }
        if self.elementwise_index() && index.shape.rank() != rank {
            return Err(format!(
                "`{name}`: the index must have the rank of x ({rank}), got rank {}",
                index.shape.rank()
            ));
        }
        let src = inputs.get(2);
        if let Some(src) = src {
            if src.dtype != x.dtype {
                return Err(format!("`{name}`: src is {} but x is {}", src.dtype, x.dtype));
            }
            let want = match self {
                IndexKind::IndexAdd => IndexKind::select_shape(&x.shape, &index.shape, a),
                _ => index.shape.clone(),
            };
            if src.shape != want {
                return Err(format!("`{name}`: src must have shape {want}, got {}", src.shape));
            }
        }
        let shape = match self {
            IndexKind::Gather => index.shape.clone(),
            IndexKind::IndexSelect => IndexKind::select_shape(&x.shape, &index.shape, a),
            IndexKind::ScatterAdd | IndexKind::IndexAdd => x.shape.clone(),
        };
        Ok(TensorType { dtype: x.dtype, shape })
    }

    /// The run-time size check of `gather`/`scatter_add` (symbolic shapes cannot say it):
    /// on the axes other than `axis`, the index is no larger than `x`.
    pub fn check_sizes(self, axis: usize, x: &[usize], index: &[usize]) -> Result<(), String> {
        if !self.elementwise_index() {
            return Ok(());
        }
        for (k, (&i, &n)) in index.iter().zip(x).enumerate() {
            if k != axis && i > n {
                return Err(format!(
                    "the index has size {i} on axis {k}, larger than x's {n} (index {index:?}, \
                     x {x:?})"
                ));
            }
        }
        Ok(())
    }
}

impl fmt::Display for IndexKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An index outside `[-size, size)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexError {
    pub index: i64,
    pub size: usize,
}

impl fmt::Display for IndexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.size == 0 {
            return write!(
                f,
                "index {} is out of range for an axis of size 0 (it is empty)",
                self.index
            );
        }
        write!(
            f,
            "index {} is out of range for an axis of size {} (valid: -{} to {})",
            self.index,
            self.size,
            self.size,
            self.size as i64 - 1
        )
    }
}

/// The slot `index` names on an axis of `size` (negative counts from the end).
#[inline]
pub fn resolve_index(index: i64, size: usize) -> Result<usize, IndexError> {
    let n = size as i64;
    let i = if index < 0 { index.wrapping_add(n) } else { index };
    if (0..n).contains(&i) {
        Ok(i as usize)
    } else {
        Err(IndexError { index, size })
    }
}

/// The dtype the index is stored as, for messages and kernels.
pub fn is_index_dtype(d: DType) -> bool {
    INDEX_DTYPES.contains(d)
}

/// Row-major element strides of `shape`.
pub fn row_major_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![0; shape.len()];
    let mut acc = 1usize;
    for (s, &d) in strides.iter_mut().zip(shape).rev() {
        *s = acc;
        acc = acc.saturating_mul(d);
    }
    strides
}

/// Visits every position of `shape` in row-major order with its multi-index.
fn for_each_position(
    shape: &[usize],
    mut f: impl FnMut(usize, &[usize]) -> Result<(), AddressError>,
) -> Result<(), AddressError> {
    let count: usize = shape.iter().product();
    let mut pos = vec![0usize; shape.len()];
    for flat in 0..count {
        f(flat, &pos)?;
        for a in (0..shape.len()).rev() {
            pos[a] += 1;
            if pos[a] < shape[a] {
                break;
            }
            pos[a] = 0;
        }
    }
    Ok(())
}

/// Why [`addresses`] failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AddressError {
    Index(IndexError),
    Shape(String),
}

/// For each position of the index space (the index's shape for `gather`/`scatter_add`, the
/// `index_select` result's for the slice kinds), in row-major order: the flat offset into
/// `x` that position addresses.
pub fn addresses(
    kind: IndexKind,
    axis: usize,
    x: &[usize],
    index_shape: &[usize],
    index: &[i64],
) -> Result<(Vec<usize>, Vec<usize>), AddressError> {
    let space = index_space(kind, axis, x, index_shape);
    let mut out = Vec::with_capacity(space.iter().product());
    for_each_address(kind, axis, x, index_shape, |q| index[q], |_, off| out.push(off))?;
    Ok((space, out))
}

/// The shape of the positions an indexed op visits (see [`addresses`]).
pub fn index_space(kind: IndexKind, axis: usize, x: &[usize], index_shape: &[usize]) -> Vec<usize> {
    if kind.elementwise_index() {
        index_shape.to_vec()
    } else {
        let mut s = x[..axis].to_vec();
        s.extend_from_slice(index_shape);
        s.extend_from_slice(&x[axis + 1..]);
        s
    }
}

/// [`addresses`] without the allocation: calls `f(position, offset)` for each position of
/// the index space in row-major order, reading index element `q` (row-major) as `index(q)`;
/// stops at the first index out of range.
pub fn for_each_address(
    kind: IndexKind,
    axis: usize,
    x: &[usize],
    index_shape: &[usize],
    index: impl Fn(usize) -> i64,
    mut f: impl FnMut(usize, usize),
) -> Result<(), AddressError> {
    kind.check_sizes(axis, x, index_shape).map_err(AddressError::Shape)?;
    let xs = row_major_strides(x);
    let space = index_space(kind, axis, x, index_shape);
    if space.contains(&0) {
        // Nothing is addressed, but every index must still be in range (NumPy's `take` and
        // torch's `index_select` check them even for an empty result).
        for q in 0..index_shape.iter().product::<usize>() {
            resolve_index(index(q), x[axis]).map_err(AddressError::Index)?;
        }
        return Ok(());
    }
    let r = index_shape.len();
    let istrides = row_major_strides(index_shape);
    for_each_position(&space, |flat, pos| {
        let i = if kind.elementwise_index() {
            index(flat)
        } else {
            index(pos[axis..axis + r].iter().zip(&istrides).map(|(p, s)| p * s).sum())
        };
        let slot = resolve_index(i, x[axis]).map_err(AddressError::Index)?;
        let mut off = slot * xs[axis];
        if kind.elementwise_index() {
            for (k, &p) in pos.iter().enumerate() {
                if k != axis {
                    off += p * xs[k];
                }
            }
        } else {
            for k in 0..axis {
                off += pos[k] * xs[k];
            }
            for k in axis + 1..x.len() {
                off += pos[k - 1 + r] * xs[k];
            }
        }
        f(flat, off);
        Ok(())
    })
}
