//! The kernel ABI: where each argument of a compiled kernel sits in its one `*const i64`
//! argument array. The code generator loads every slot through these types and the executor
//! writes every slot through them, so the layout is defined once (a slot moved here moves in
//! both).
//!
//! A loop kernel ([`LoopAbi`], `codegen::compile_loop`) takes, in order: one pointer per
//! operand (inputs, outputs, random counters: [`crate::plan::LoopPlan::operands`]), the
//! collapsed loop sizes, per operand its element strides over every collapsed axis but the
//! innermost (which is unit-stride or broadcast), the `begin..end` range of the split axis, and
//! — only in kernels with indexed reads — a pointer to the error record followed by, per
//! indexed source, its axis size, its stride along that axis and its inner stride.
//!
//! A kernel along one axis ([`AxisAbi`]: scans, `codegen::scan`, and `argmax`/`argmin`,
//! `codegen::arg`) takes its operand pointers, then
//! `outer, len, inner` (the `[outer, len, inner]` view of the scanned array) and the
//! `begin..end` range of outer positions.

use crate::plan::LoopPlan;

/// A compiled kernel: one `*const i64` argument array in the host's C calling convention
/// (JIT-compiled, or a symbol of an AOT object).
pub(crate) type KernelFn = unsafe extern "C" fn(*const i64);

/// The status a kernel with indexed reads leaves in its error record for an index outside its
/// axis (`codegen::indexed`).
pub(crate) const STATUS_INDEX: i64 = 1;

/// The argument slots of a loop kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LoopAbi {
    /// Operand pointers (inputs, outputs, random counters).
    pub operands: usize,
    /// Collapsed loop rank (at least 1).
    pub rank: usize,
    /// Indexed sources (`gather`/`index_select` reads), each with three slots.
    pub index_sources: usize,
}

impl LoopAbi {
    /// The ABI of `plan`'s kernel.
    pub fn of(plan: &LoopPlan) -> LoopAbi {
        LoopAbi {
            operands: plan.operands().count(),
            rank: plan.rank(),
            index_sources: plan.index_sources(),
        }
    }

    /// Operand `p`'s data pointer.
    pub fn ptr(&self, p: usize) -> usize {
        p
    }
    /// The size of collapsed axis `j`.
    pub fn size(&self, j: usize) -> usize {
        self.operands + j
    }
    /// Operand `p`'s element stride along collapsed axis `j < rank - 1`.
    pub fn stride(&self, p: usize, j: usize) -> usize {
        self.operands + self.rank + p * self.outer_axes() + j
    }
    /// Operand `p`'s stride slots, `rank - 1` of them.
    pub fn strides(&self, p: usize) -> std::ops::Range<usize> {
        let first = self.stride(p, 0);
        first..first + self.outer_axes()
    }
    /// The first position of the split axis this call runs; `begin() + 1` is the end.
    pub fn begin(&self) -> usize {
        self.operands + self.rank + self.operands * self.outer_axes()
    }
    /// The end of the range (exclusive).
    pub fn end(&self) -> usize {
        self.begin() + 1
    }
    /// The error record's pointer (kernels with indexed reads only).
    pub fn error_record(&self) -> usize {
        self.begin() + 2
    }
    /// Indexed source `q`'s axis size.
    pub fn index_size(&self, q: usize) -> usize {
        self.begin() + 3 + 3 * q
    }
    /// Indexed source `q`'s element stride along its indexed axis.
    pub fn index_stride(&self, q: usize) -> usize {
        self.begin() + 4 + 3 * q
    }
    /// Indexed source `q`'s element stride along the inner collapsed axis.
    pub fn index_inner(&self, q: usize) -> usize {
        self.begin() + 5 + 3 * q
    }
    /// The number of slots.
    pub fn len(&self) -> usize {
        if self.index_sources == 0 {
            self.end() + 1
        } else {
            self.index_inner(self.index_sources - 1) + 1
        }
    }

    fn outer_axes(&self) -> usize {
        self.rank.saturating_sub(1)
    }
}

/// The argument slots of a kernel along one axis (scan, argmax/argmin).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AxisAbi {
    /// Operand pointers: the inputs, then the output.
    pub operands: usize,
}

impl AxisAbi {
    /// Operand `k`'s data pointer.
    pub fn ptr(&self, k: usize) -> usize {
        k
    }
    /// The number of outer positions.
    pub fn outer(&self) -> usize {
        self.operands
    }
    /// The length of the scanned axis.
    pub fn len_slot(&self) -> usize {
        self.operands + 1
    }
    /// The element count after the scanned axis.
    pub fn inner(&self) -> usize {
        self.operands + 2
    }
    /// The first outer position this call runs; `begin() + 1` is the end.
    pub fn begin(&self) -> usize {
        self.operands + 3
    }
    /// The end of the range (exclusive).
    pub fn end(&self) -> usize {
        self.begin() + 1
    }
    /// The number of slots.
    pub fn len(&self) -> usize {
        self.end() + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every slot of a layout is used exactly once and they are dense.
    #[test]
    fn loop_slots_are_dense_and_distinct() {
        for (operands, rank, index_sources) in [(1, 1, 0), (3, 2, 0), (4, 3, 2), (2, 4, 1)] {
            let abi = LoopAbi { operands, rank, index_sources };
            let mut slots: Vec<usize> = (0..operands).map(|p| abi.ptr(p)).collect();
            slots.extend((0..rank).map(|j| abi.size(j)));
            for p in 0..operands {
                slots.extend(abi.strides(p));
            }
            slots.extend([abi.begin(), abi.end()]);
            if index_sources > 0 {
                slots.push(abi.error_record());
                for q in 0..index_sources {
                    slots.extend([abi.index_size(q), abi.index_stride(q), abi.index_inner(q)]);
                }
            }
            let mut sorted = slots.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..abi.len()).collect::<Vec<_>>(), "{abi:?}");
        }
        let scan = AxisAbi { operands: 2 };
        let slots = [scan.ptr(0), scan.ptr(1), scan.outer(), scan.len_slot(), scan.inner()];
        let mut all = slots.to_vec();
        all.extend([scan.begin(), scan.end()]);
        assert_eq!(all, (0..scan.len()).collect::<Vec<_>>());
    }
}
