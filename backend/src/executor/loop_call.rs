//! A loop kernel's bound arguments ([`LoopCall`]): the kernel ABI's argument array for one
//! call, run over its whole split range (across threads when large) or over a sub-range (a
//! matmul epilogue on the rows that just became final).

use crate::codegen;
use crate::error::RunError;
use crate::jit::KernelFn;
use crate::parallel;
use crate::plan::{IndexedRole, LoopPlan};

/// A loop kernel's bound arguments, ready to call on its whole split range or a part of it.
pub(super) struct LoopCall {
    pub(super) args: Vec<i64>,
    pub(super) begin_slot: usize,
    /// Collapsed loop sizes.
    pub(super) sizes: Vec<usize>,
    /// The collapsed axis `begin..end` ranges over.
    pub(super) split: usize,
    /// Elements touched (for the threading decision).
    pub(super) total: usize,
    pub(super) align: usize,
    /// The kernel's error record (see `crate::codegen`'s indexed reads), when it has one.
    pub(super) record: Option<Box<[i64; 4]>>,
}

impl LoopCall {
    /// Runs the whole range, split across up to `threads` threads when large.
    ///
    /// # Safety
    /// The buffers behind `args` must be alive and finished where the kernel reads them.
    pub(super) unsafe fn call_all(&mut self, func: KernelFn, threads: usize) {
        let args = &mut self.args;
        let range = self.sizes.get(self.split).copied().unwrap_or(1);
        // SAFETY: every pointer is a live buffer of the operand's bound shape and dtype, and
        // sizes/strides describe exactly those buffers (see `LoopPlan`).
        unsafe {
            parallel::call_split(
                func,
                args,
                self.begin_slot,
                range,
                self.total,
                threads,
                self.align,
            )
        };
    }

    /// The error the kernel recorded, if any (status 1: an index out of range).
    pub(super) fn recorded_error(&self, plan: &LoopPlan) -> Result<(), RunError> {
        let Some(record) = &self.record else { return Ok(()) };
        // SAFETY: kernels write the record through a raw pointer; read it back volatile.
        let [status, slot, index, size] =
            unsafe { std::ptr::read_volatile(&**record as *const [i64; 4]) };
        if status == 0 {
            return Ok(());
        }
        let q = slot as usize;
        let source = plan.inputs.iter().find_map(|o| match &o.indexed {
            Some(IndexedRole::Source { kind, axis, slot, .. }) if *slot == q => {
                Some((*kind, *axis))
            }
            _ => None,
        });
        match (source, plan.reads.get(q)) {
            (Some((kind, axis)), Some(&node)) if status == codegen::STATUS_INDEX => {
                Err(RunError::IndexOutOfRange {
                    node,
                    op: kind.name().into(),
                    axis: axis as u32,
                    error: tfn_ir::IndexError { index, size: size as usize },
                })
            }
            _ => Err(RunError::Internal(format!("kernel error record {status} {slot}"))),
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
        let mut args = self.args.clone();
        if let Some(slots) = args.get_mut(self.begin_slot..self.begin_slot + 2) {
            slots[0] = lo as i64;
            slots[1] = hi as i64;
        }
        // SAFETY: guaranteed by the caller.
        unsafe { func(args.as_ptr()) };
    }
}
