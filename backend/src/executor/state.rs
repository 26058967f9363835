//! Per-call executor state ([`State`]): the bound sizes and the buffer of every value computed
//! so far, including graph outputs written straight into the caller's buffers.

use crate::buffers::{self, RawBuf};
use crate::error::RunError;
use crate::pool::BufferPool;
use crate::tensors::TensorView;
use smallvec::SmallVec;
use tfn_ir::bind::{try_concrete_dims, try_concrete_shape};
use tfn_ir::{DType, Dim, Shape, Tensor, ValueId};

/// Per-call state: bound sizes and the buffer of every value computed so far.
pub(super) struct State<'p> {
    /// Where intermediates come from (and go back to after the call).
    pub(super) pool: &'p BufferPool,
    pub(super) sizes: tfn_ir::bind::Sizes,
    /// Per graph value (on the stack for functions of up to 16 values).
    pub(super) bufs: SmallVec<[Option<RawBuf>; 16]>,
    /// The tensors this call allocated (intermediates, outputs, copied arguments).
    pub(super) owned: Owned,
    /// Graph outputs written straight into contiguous caller buffers (few: a linear scan).
    pub(super) direct: SmallVec<[Direct; 2]>,
    /// Strided arguments read in place (by GEMMs only), with their element strides.
    pub(super) strided: SmallVec<[(ValueId, Vec<usize>); 1]>,
}

/// The tensors a call owns, by value: a 4-byte slot per graph value into a short list of the
/// values that own one. A dense `Vec<Option<Tensor>>` cost ~120 bytes per graph value, a
/// 2–3 KB block for a small function, which is past glibc's small-block caches: every call
/// paid `malloc_consolidate` for it (~5% of a 1-element Python call).
pub(super) struct Owned {
    slot: SmallVec<[u32; 32]>,
    tensors: Vec<Option<Tensor>>,
}

impl Owned {
    const NONE: u32 = u32::MAX;

    /// Room for `values` graph values, none owned.
    pub(super) fn new(values: usize) -> Self {
        Owned { slot: smallvec::smallvec![Self::NONE; values], tensors: Vec::new() }
    }

    /// Records `t` as value `v`'s tensor (dropping one it had).
    pub(super) fn put(&mut self, v: usize, t: Tensor) {
        match self.slot[v] {
            Self::NONE => {
                self.slot[v] = self.tensors.len() as u32;
                self.tensors.push(Some(t));
            }
            s => self.tensors[s as usize] = Some(t),
        }
    }

    /// Value `v`'s tensor, if this call owns one (and `v` is in range).
    pub(super) fn take(&mut self, v: usize) -> Option<Tensor> {
        match self.slot.get(v).copied() {
            None | Some(Self::NONE) => None,
            Some(s) => self.tensors[s as usize].take(),
        }
    }

    /// Every tensor still owned.
    fn drain(&mut self) -> impl Iterator<Item = Tensor> + '_ {
        self.tensors.iter_mut().filter_map(Option::take)
    }
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

    /// [`Self::shape`] on the stack (a loop's domain, bound on every call).
    pub(super) fn dims(&self, shape: &Shape) -> Result<SmallVec<[usize; 6]>, RunError> {
        try_concrete_dims(shape, &self.sizes)
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
        self.pool.give(self.owned.drain());
    }

    /// Hands the buffers of values no later step reads back to the pool, so later steps of
    /// this call can reuse them (the values must not be read again: their pointers are gone).
    pub(super) fn release(&mut self, dead: &[ValueId]) {
        for v in dead {
            if let Some(t) = self.owned.take(v.index()) {
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
        self.owned.put(v.index(), t);
        self.bufs[v.index()] = Some(buf);
        Ok(buf)
    }
}
