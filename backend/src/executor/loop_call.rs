//! A loop kernel's bound arguments ([`LoopCall`]): the kernel ABI's argument array for one
//! call, run over its whole split range (across threads when large) or over a sub-range (a
//! matmul epilogue on the rows that just became final).

use crate::abi::KernelFn;
use crate::error::RunError;
use crate::parallel;
use crate::plan::{IndexedRole, LoopPlan};
use smallvec::SmallVec;
use tfn_ir::DType;

/// A loop kernel's bound arguments, ready to call on its whole split range or a part of it.
/// A kernel's argument slots: on the stack for small kernels (a 1-element call's overhead is
/// mostly such bookkeeping: a heap list cost a malloc/free per call, a larger inline one a
/// longer copy each time a `LoopCall` moves).
pub(super) type KernelArgs = SmallVec<[i64; 16]>;

pub(super) struct LoopCall {
    pub(super) args: KernelArgs,
    pub(super) begin_slot: usize,
    /// Collapsed loop sizes.
    pub(super) sizes: SmallVec<[usize; 4]>,
    /// The collapsed axis `begin..end` ranges over.
    pub(super) split: usize,
    /// Elements touched (for the threading decision).
    pub(super) total: usize,
    pub(super) align: usize,
    /// The kernel's error record (see `crate::codegen`'s indexed reads), when it has one.
    pub(super) record: Option<ErrorRecord>,
    /// A long reduction run as chunks of its reduced axis instead of one call.
    pub(super) chunked: Option<super::chunked::ChunkedReduce>,
    /// A kernel over 16-bit floats run on f32 blocks.
    pub(super) widened: Option<super::widened::WidenedCall>,
    /// A kernel whose outputs are streamed to memory, block by block.
    pub(super) streamed: Option<super::streamed::StreamedCall>,
}

/// A kernel's error record (`[i64; 4]`: status, source slot, index value, axis size; see
/// `crate::codegen`'s indexed reads), its argument slot, and per indexed read its index.
///
/// Which bad index a kernel writes depends on its loop order and on how the call was split
/// across threads, so the record only says *that* an index was out of range: the error names
/// the first bad index in row-major order of the first read (in slot order) that has one,
/// found again on the host. That is what the interpreter reports, for any thread count.
/// The error of indexed read `q` of `plan` finding `error`.
fn read_error(plan: &LoopPlan, q: usize, error: tfn_ir::IndexError) -> Result<(), RunError> {
    let source = plan.inputs.iter().find_map(|o| match &o.indexed {
        Some(IndexedRole::Source { kind, axis, slot, .. }) if *slot == q => Some((*kind, *axis)),
        _ => None,
    });
    match (source, plan.reads.get(q)) {
        (Some((kind, axis)), Some(&node)) => Err(RunError::IndexOutOfRange {
            node,
            op: kind.name().into(),
            axis: axis as u32,
            error,
        }),
        _ => Err(RunError::Internal(format!("kernel error record: no read {q}"))),
    }
}

impl ErrorRecord {
    /// For a kernel with nothing to compute (an empty result): its index tensors are still
    /// checked, as NumPy's `take` checks them (`take(zeros((0, 3)), [5], axis=1)` raises).
    pub(super) fn check_unread(&self, plan: &LoopPlan) -> Result<(), RunError> {
        match self.reads.iter().enumerate().find_map(|(q, r)| Some((q, r.first_bad()?))) {
            Some((q, error)) => read_error(plan, q, error),
            None => Ok(()),
        }
    }
}

pub(super) struct ErrorRecord {
    pub(super) record: Box<[i64; 4]>,
    pub(super) slot: usize,
    pub(super) reads: Vec<ReadIndex>,
}

/// The index tensor of one indexed read: a finished, contiguous kernel input.
pub(super) struct ReadIndex {
    /// The buffer's address (an integer: a `LoopCall` is shared by matmul epilogue threads).
    pub(super) ptr: usize,
    pub(super) dtype: DType,
    pub(super) count: usize,
    /// The size of the axis it indexes.
    pub(super) size: usize,
}

impl ReadIndex {
    /// The first index (row-major) outside `[-size, size)`.
    fn first_bad(&self) -> Option<tfn_ir::IndexError> {
        let size = self.size;
        let bad = |v: i64| tfn_ir::op_index::resolve_index(v, size).err();
        // SAFETY: the buffer is a live, contiguous input of `count` elements of its dtype
        // (the executor keeps it alive until the kernel's results are checked).
        unsafe {
            match self.dtype {
                DType::I32 => std::slice::from_raw_parts(self.ptr as *const i32, self.count)
                    .iter()
                    .find_map(|&v| bad(i64::from(v))),
                DType::I64 => std::slice::from_raw_parts(self.ptr as *const i64, self.count)
                    .iter()
                    .find_map(|&v| bad(v)),
                _ => None,
            }
        }
    }
}

impl LoopCall {
    /// Runs the whole range, split across up to `threads` threads when large.
    ///
    /// # Safety
    /// The buffers behind `args` must be alive and finished where the kernel reads them.
    pub(super) unsafe fn call_all(
        &mut self,
        func: KernelFn,
        threads: usize,
    ) -> Result<(), RunError> {
        if let Some(widened) = &self.widened {
            // SAFETY: guaranteed by the caller.
            return unsafe { widened.run(func, &self.args, threads) };
        }
        if let Some(chunked) = &self.chunked {
            // SAFETY: guaranteed by the caller.
            return unsafe { chunked.run(func, &self.args, threads) };
        }
        if let Some(streamed) = &self.streamed {
            // SAFETY: guaranteed by the caller.
            return unsafe { streamed.run(func, &self.args, threads) };
        }
        let range = self.sizes.get(self.split).copied().unwrap_or(1);
        let record = self.record.as_ref().map(|r| r.slot);
        let split = parallel::Split { range, work: self.total, align: self.align };
        let slots = parallel::ArgSlots { begin: self.begin_slot, record };
        // SAFETY: every pointer is a live buffer of the operand's bound shape and dtype, and
        // sizes/strides describe exactly those buffers (see `LoopPlan`).
        unsafe { parallel::call_split(func, &mut self.args, slots, split, threads) }
    }

    /// The error the kernel recorded, if any (status 1: an index out of range; see
    /// [`ErrorRecord`] for which one is named).
    pub(super) fn recorded_error(&self, plan: &LoopPlan) -> Result<(), RunError> {
        let Some(ErrorRecord { record, reads, .. }) = &self.record else { return Ok(()) };
        // SAFETY: kernels write the record through a raw pointer; read it back volatile.
        let [status, slot, index, size] =
            unsafe { std::ptr::read_volatile(&**record as *const [i64; 4]) };
        if status == 0 {
            return Ok(());
        }
        let first = reads.iter().enumerate().find_map(|(q, r)| Some((q, r.first_bad()?)));
        match first {
            Some((q, error)) if status == crate::abi::STATUS_INDEX => read_error(plan, q, error),
            _ => Err(RunError::Internal(format!(
                "kernel error record {status} (slot {slot}, index {index}, size {size}) that \
                 the index tensors do not explain"
            ))),
        }
    }

    /// Output elements one step of the split axis covers, when the kernel is elementwise and
    /// its split axis is the outermost: then steps `lo..hi` are exactly the flat row-major
    /// elements `[lo * unit, hi * unit)` of its domain (collapsed axes partition the domain's
    /// non-unit axes in order). `None` otherwise.
    pub(super) fn step_elements(&self, plan: &LoopPlan) -> Option<usize> {
        if plan.reduces || self.split != 0 {
            return None;
        }
        let unit: usize = self.sizes.iter().skip(1).product();
        (unit > 0).then_some(unit)
    }

    /// Runs steps `lo..hi` of the split axis on the calling thread.
    ///
    /// # Safety
    /// As [`Self::call_all`], for the elements of those steps; `lo <= hi <=` the split size.
    pub(super) unsafe fn call_range(&self, func: KernelFn, lo: usize, hi: usize) {
        if let Some(widened) = &self.widened {
            // SAFETY: guaranteed by the caller.
            return unsafe { widened.run_range(func, &self.args, lo, hi) };
        }
        let mut args = self.args.clone();
        if let Some(slots) = args.get_mut(self.begin_slot..self.begin_slot + 2) {
            slots[0] = lo as i64;
            slots[1] = hi as i64;
        }
        // SAFETY: guaranteed by the caller.
        unsafe { func(args.as_ptr()) };
    }
}
