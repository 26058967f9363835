//! Intermediate buffers kept between calls ([`BufferPool`]).
//!
//! A fresh multi-megabyte intermediate is a fresh `mmap`: every call then pays a page fault
//! per 4 KiB page it writes (about a fifth of an MLP backward pass). A compiled function
//! therefore keeps the intermediates of its last calls and hands them out again to values of
//! the same dtype and element count. Buffers are never shared: a call takes a buffer out of
//! the pool and gives it back when it has finished, so concurrent calls get distinct ones.
//!
//! Recycled buffers are not zeroed: every kernel writes every element of its outputs. Debug
//! builds check that claim by poisoning returned buffers (NaN, or `0x5A` bytes for integers
//! and bools), so a kernel that skipped an element fails the JIT-vs-interpreter tests.

use ndarray::IxDyn;
use std::sync::Mutex;
use tfn_ir::{DType, Tensor};

/// At most this many buffers are kept: a training step's gradient graph has a few hundred
/// intermediates (64 made a GPT step fault in half of them again on every call).
const MAX_BUFFERS: usize = 1024;
/// At most this many bytes are kept.
const MAX_BYTES: usize = 1 << 30;

/// Free intermediates of one compiled function.
#[derive(Default)]
pub(crate) struct BufferPool {
    free: Mutex<Vec<Tensor>>,
}

fn elements(t: &Tensor) -> usize {
    t.shape().iter().product()
}

fn bytes(t: &Tensor) -> usize {
    elements(t) * t.dtype().size_bytes()
}

impl BufferPool {
    /// A buffer of `dtype` and `shape` from the pool (contents unspecified), if one fits.
    pub(crate) fn take(&self, dtype: DType, shape: &[usize]) -> Option<Tensor> {
        let len: usize = shape.iter().product();
        let mut free = self.free.lock().ok()?;
        let at = free.iter().position(|t| t.dtype() == dtype && elements(t) == len)?;
        let t = free.swap_remove(at);
        drop(free);
        reshape(t, shape)
    }

    /// Returns finished buffers to the pool, dropping the oldest beyond the limits.
    pub(crate) fn give(&self, tensors: impl IntoIterator<Item = Tensor>) {
        let mut incoming: Vec<Tensor> = tensors.into_iter().filter(|t| elements(t) > 0).collect();
        if incoming.is_empty() {
            return;
        }
        if cfg!(debug_assertions) {
            incoming.iter_mut().for_each(poison);
        }
        let Ok(mut free) = self.free.lock() else { return };
        free.extend(incoming);
        let mut total: usize = free.iter().map(bytes).sum();
        while free.len() > MAX_BUFFERS || total > MAX_BYTES {
            let dropped = free.remove(0);
            total -= bytes(&dropped);
        }
    }
}

/// `t` with the same elements viewed as `shape` (standard layout, same length).
fn reshape(t: Tensor, shape: &[usize]) -> Option<Tensor> {
    let s = IxDyn(shape);
    Some(match t {
        Tensor::Bool(a) => Tensor::Bool(a.into_shape_with_order(s).ok()?),
        Tensor::I32(a) => Tensor::I32(a.into_shape_with_order(s).ok()?),
        Tensor::I64(a) => Tensor::I64(a.into_shape_with_order(s).ok()?),
        Tensor::F32(a) => Tensor::F32(a.into_shape_with_order(s).ok()?),
        Tensor::F64(a) => Tensor::F64(a.into_shape_with_order(s).ok()?),
        Tensor::I8(a) => Tensor::I8(a.into_shape_with_order(s).ok()?),
        Tensor::U8(a) => Tensor::U8(a.into_shape_with_order(s).ok()?),
        Tensor::F16(a) => Tensor::F16(a.into_shape_with_order(s).ok()?),
        Tensor::BF16(a) => Tensor::BF16(a.into_shape_with_order(s).ok()?),
    })
}

/// Fills a buffer with values no correct kernel leaves behind unwritten.
fn poison(t: &mut Tensor) {
    match t {
        Tensor::Bool(a) => a.fill(true),
        Tensor::I32(a) => a.fill(0x5A5A_5A5A),
        Tensor::I64(a) => a.fill(0x5A5A_5A5A_5A5A_5A5A),
        Tensor::F32(a) => a.fill(f32::NAN),
        Tensor::F64(a) => a.fill(f64::NAN),
        Tensor::I8(a) => a.fill(0x5A),
        Tensor::U8(a) => a.fill(0x5A),
        Tensor::F16(a) => a.fill(tfn_ir::half::f16::NAN),
        Tensor::BF16(a) => a.fill(tfn_ir::half::bf16::NAN),
    }
}
