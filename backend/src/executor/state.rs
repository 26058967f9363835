//! Per-call executor state ([`State`]): the bound sizes and the buffer of every value computed
//! so far, including graph outputs written straight into the caller's buffers.

use crate::buffers::{self, RawBuf};
use crate::error::RunError;
use crate::pool::BufferPool;
use crate::tensors::TensorView;
use tfn_ir::bind::try_concrete_shape;
use tfn_ir::{DType, Dim, Shape, Tensor, ValueId};

/// Per-call state: bound sizes and the buffer of every value computed so far.
pub(super) struct State<'p> {
    /// Where intermediates come from (and go back to after the call).
    pub(super) pool: &'p BufferPool,
    pub(super) sizes: Vec<usize>,
    pub(super) bufs: Vec<Option<RawBuf>>,
    pub(super) owned: Vec<Option<Tensor>>,
    /// Graph outputs written straight into contiguous caller buffers (few: a linear scan).
    pub(super) direct: Vec<Direct>,
    /// Strided arguments read in place (by GEMMs only), with their element strides.
    pub(super) strided: Vec<(ValueId, Vec<usize>)>,
}

/// A graph output computed straight into the caller's buffer for output `output`.
#[derive(Clone, Copy)]
pub(super) struct Direct {
    pub(super) value: ValueId,
    pub(super) buf: RawBuf,
    pub(super) output: usize,
}

/// Calls `f` with the shapes of `inputs`, without allocating for up to 8 inputs.
pub(super) fn with_input_shapes<R>(
    inputs: &[TensorView<'_>],
    f: impl FnOnce(&[&[usize]]) -> R,
) -> R {
    const INLINE: usize = 8;
    if inputs.len() <= INLINE {
        let mut shapes: [&[usize]; INLINE] = [&[]; INLINE];
        for (slot, t) in shapes.iter_mut().zip(inputs) {
            *slot = t.shape();
        }
        f(&shapes[..inputs.len()])
    } else {
        let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
        f(&shapes)
    }
}

impl State<'_> {
    pub(super) fn shape(&self, shape: &Shape) -> Result<Vec<usize>, RunError> {
        try_concrete_shape(shape, &self.sizes)
            .ok_or_else(|| RunError::Internal(format!("unbound size in {shape}")))
    }

    /// Whether `shape` binds to exactly `dims` (no allocation).
    pub(super) fn shape_is(&self, shape: &Shape, dims: &[usize]) -> bool {
        shape.dims().len() == dims.len()
            && shape.dims().iter().zip(dims).all(|(d, &n)| match *d {
                Dim::Const(c) => usize::try_from(c).ok() == Some(n),
                Dim::Sym(s) => self.sizes.get(s.0 as usize).copied() == Some(n),
            })
    }

    /// The element strides of `v` when it is a strided argument read in place.
    pub(super) fn strided(&self, v: ValueId) -> Option<&[usize]> {
        self.strided.iter().find(|(x, _)| *x == v).map(|(_, s)| s.as_slice())
    }

    pub(super) fn direct(&self, v: ValueId) -> Option<&Direct> {
        self.direct.iter().find(|d| d.value == v)
    }

    /// The caller's buffer for output value `v`, recorded as `v`'s buffer, if there is one.
    pub(super) fn take_direct(&mut self, v: ValueId) -> Option<RawBuf> {
        let buf = self.direct(v)?.buf;
        *self.bufs.get_mut(v.index())? = Some(buf);
        Some(buf)
    }

    /// Hands every buffer this call still owns back to the pool (after the results are out).
    pub(super) fn recycle(&mut self) {
        self.pool.give(self.owned.iter_mut().filter_map(Option::take));
    }

    /// Hands the buffers of values no later step reads back to the pool, so later steps of
    /// this call can reuse them (the values must not be read again: their pointers are gone).
    pub(super) fn release(&mut self, dead: &[ValueId]) {
        for v in dead {
            if let Some(t) = self.owned.get_mut(v.index()).and_then(Option::take) {
                self.bufs[v.index()] = None;
                self.pool.give(std::iter::once(t));
            }
        }
    }

    pub(super) fn buf(&self, v: ValueId) -> Result<RawBuf, RunError> {
        self.bufs
            .get(v.index())
            .copied()
            .flatten()
            .ok_or_else(|| RunError::Internal(format!("{v} is not computed")))
    }

    /// The buffer a kernel writes value `v` into: the caller's, a recycled one of the same
    /// dtype and length (contents unspecified: kernels write every element), or a fresh one.
    pub(super) fn alloc(
        &mut self,
        v: ValueId,
        dtype: DType,
        shape: &[usize],
    ) -> Result<RawBuf, RunError> {
        if let Some(buf) = self.take_direct(v) {
            return Ok(buf);
        }
        let mut t = match self.pool.take(dtype, shape) {
            Some(t) => t,
            None => buffers::alloc(dtype, shape)?,
        };
        let buf = buffers::tensor_buf(&mut t);
        self.owned[v.index()] = Some(t);
        self.bufs[v.index()] = Some(buf);
        Ok(buf)
    }
}
