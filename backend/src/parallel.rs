//! Splitting one loop-kernel call (a fused loop, a scan, an arg-reduction) across the
//! [`crate::workers`] pool by ranges of its split axis.
//!
//! Every chunk computes disjoint output elements with the same instructions, and chunk
//! boundaries on the inner (vectorised) axis fall on multiples of [`Split::align`] elements, so
//! vector blocks and scalar tails cover the same elements as on one thread: results are the
//! same bits for any thread count. Reductions are split only along kept axes (a row or column
//! is always reduced by one chunk), so their summation order never depends on the split; a
//! long reduction with few rows is instead cut into chunks of a fixed size along its reduced
//! axis (`executor/chunked.rs`), whatever the thread count.

use crate::abi::KernelFn;
use crate::error::RunError;
use crate::workers;
use smallvec::{smallvec, SmallVec};

/// Below this many elements touched a loop kernel runs on the calling thread. Measured on a
/// 2-core Zen 4 (ARCHITECTURE.md → "Threads"): from 64K elements 2 threads run elementwise
/// kernels and row reductions ~1.9× faster, column reductions ~1.5×; below it a call is a few
/// µs, and waking a parked worker (~7 µs) would cost more than it saves.
pub(crate) const MIN_PARALLEL_ELEMENTS: usize = 1 << 16;

/// Fewest elements one chunk of a split call gets (smaller calls use fewer chunks).
const MIN_CHUNK_ELEMENTS: usize = 1 << 15;

/// How a kernel call may be split: the range of its split axis, how many elements it touches
/// (the threading decision), and the multiple chunk boundaries are rounded to.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Split {
    pub range: usize,
    pub work: usize,
    pub align: usize,
}

impl Split {
    /// The chunk bounds `[lo, hi)` for `threads` threads: one chunk below the threshold, else
    /// up to `threads` chunks of at least [`MIN_CHUNK_ELEMENTS`] each, aligned.
    pub(crate) fn bounds(&self, threads: usize) -> SmallVec<[(usize, usize); 4]> {
        let range = self.range;
        let per_step = self.work / range.max(1);
        let by_size = self.work / MIN_CHUNK_ELEMENTS.max(per_step.max(1));
        let chunks = if threads > 1 && self.work >= MIN_PARALLEL_ELEMENTS {
            threads.min(range).min(by_size.max(1))
        } else {
            1
        };
        if chunks <= 1 {
            return smallvec![(0, range)];
        }
        let align = self.align.max(1);
        let per = range.div_ceil(chunks).div_ceil(align) * align;
        (0..chunks)
            .map(|c| ((c * per).min(range), ((c + 1) * per).min(range)))
            .filter(|(lo, hi)| lo < hi)
            .collect()
    }
}

/// Where the split-dependent arguments are: the `begin`/`end` pair, and the error record's
/// pointer if the kernel has one.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ArgSlots {
    pub begin: usize,
    pub record: Option<usize>,
}

/// Calls `func` on `args` (whose `begin`/`end` slots are at `slots.begin`) over
/// `0..split.range`, in the chunks [`Split::bounds`] gives for `threads`. `slots.record`: the
/// argument slot of the kernel's error record (`[i64; 4]`, status first), if it has one: each
/// chunk but the first then writes a record of its own, and the lowest chunk's error (in
/// split order) is copied into the caller's, so chunks never write one record concurrently.
///
/// # Safety
/// `args` must be valid kernel arguments for `func`, for any sub-range of `0..split.range`.
pub(crate) unsafe fn call_split(
    func: KernelFn,
    args: &mut [i64],
    slots: ArgSlots,
    split: Split,
    threads: usize,
) -> Result<(), RunError> {
    let (begin_slot, record) = (slots.begin, slots.record);
    let bounds = split.bounds(threads);
    if let [(lo, hi)] = bounds[..] {
        args[begin_slot] = lo as i64;
        args[begin_slot + 1] = hi as i64;
        // SAFETY: guaranteed by the caller.
        unsafe { func(args.as_ptr()) };
        return Ok(());
    }
    let base: &[i64] = args;
    // One error record per chunk; chunk 0 keeps the caller's.
    let mut records = vec![[0i64; 4]; if record.is_some() { bounds.len() } else { 0 }];
    let records_at = records.as_mut_ptr() as usize;
    let chunk = |c: usize| {
        let (lo, hi) = bounds[c];
        let mut mine = base.to_vec();
        mine[begin_slot] = lo as i64;
        mine[begin_slot + 1] = hi as i64;
        if let Some(slot) = record.filter(|_| c > 0) {
            // In bounds: `records` has one entry per chunk; only chunk `c` writes entry `c`.
            mine[slot] = (records_at as *mut [i64; 4]).wrapping_add(c) as i64;
        }
        // SAFETY: guaranteed by the caller; chunks write disjoint elements.
        unsafe { func(mine.as_ptr()) };
    };
    let ran = workers::run(bounds.len(), threads, &chunk);
    ran.map_err(|e| RunError::Internal(e.to_string()))?;
    // The first chunk wrote the caller's record; otherwise the lowest chunk with an error.
    if let Some(slot) = record {
        let caller = args[slot] as *mut [i64; 4];
        // SAFETY: `args[slot]` is the caller's live record; every chunk has finished.
        unsafe {
            if (*caller)[0] == 0 {
                if let Some(r) = records.iter().skip(1).find(|r| r[0] != 0) {
                    *caller = *r;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_calls_stay_on_one_chunk() {
        let s = Split { range: 1000, work: MIN_PARALLEL_ELEMENTS - 1, align: 1 };
        assert_eq!(s.bounds(4).to_vec(), vec![(0, 1000)]);
        let s = Split { range: 1 << 20, work: 1 << 20, align: 64 };
        assert_eq!(s.bounds(1).to_vec(), vec![(0, 1 << 20)]);
    }

    #[test]
    fn chunks_are_aligned_disjoint_and_cover_the_range() {
        for threads in 1..=5 {
            for range in [1usize, 2, 3, 100, 65_537, 1 << 20, (1 << 20) + 17] {
                let s = Split { range, work: range.max(MIN_PARALLEL_ELEMENTS), align: 64 };
                let b = s.bounds(threads);
                assert!(b.len() <= threads);
                assert_eq!(b.first().map(|x| x.0), Some(0));
                assert_eq!(b.last().map(|x| x.1), Some(range));
                for w in b.windows(2) {
                    assert_eq!(w[0].1, w[1].0);
                    assert_eq!(w[0].1 % 64, 0, "{threads} {range} {b:?}");
                }
            }
        }
    }
}
