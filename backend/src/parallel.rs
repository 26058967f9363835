//! Splitting one kernel call across threads by ranges of its outermost axis.
//!
//! Every chunk computes disjoint output elements with the same instructions, so results are
//! bit-identical to one thread. Small calls stay on the calling thread: spawning costs ~10 µs.

use crate::jit::KernelFn;

/// Below this many elements a kernel runs on the calling thread.
pub(crate) const MIN_PARALLEL_ELEMENTS: usize = 1 << 20;

/// Where the split-dependent arguments are: the `begin`/`end` pair, and the error record's
/// pointer if the kernel has one.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ArgSlots {
    pub begin: usize,
    pub record: Option<usize>,
}

/// Calls `func` on `args` (whose `begin`/`end` slots are at `slots.begin`) over `0..range`,
/// split into up to `threads` chunks when `work` (elements touched) is large enough. `align`
/// rounds chunk boundaries (keeps vector loops whole). `slots.record`: the argument slot of the
/// kernel's error record (`[i64; 4]`, status first), if it has one: each chunk then writes
/// a record of its own, and the lowest chunk's error (in split order) is copied into the
/// caller's, so chunks never write one record concurrently.
///
/// # Safety
/// `args` must be valid kernel arguments for `func`, for any sub-range of `0..range`.
pub(crate) unsafe fn call_split(
    func: KernelFn,
    args: &mut [i64],
    slots: ArgSlots,
    range: usize,
    work: usize,
    threads: usize,
    align: usize,
) {
    let (begin_slot, record) = (slots.begin, slots.record);
    let chunks = if threads > 1 && work >= MIN_PARALLEL_ELEMENTS { threads.min(range) } else { 1 };
    if chunks <= 1 {
        args[begin_slot] = 0;
        args[begin_slot + 1] = range as i64;
        // SAFETY: guaranteed by the caller.
        unsafe { func(args.as_ptr()) };
        return;
    }
    let align = align.max(1);
    let per = range.div_ceil(chunks).div_ceil(align) * align;
    let bounds: Vec<(usize, usize)> = (0..chunks)
        .map(|c| ((c * per).min(range), ((c + 1) * per).min(range)))
        .filter(|(lo, hi)| lo < hi)
        .collect();
    let base: Vec<i64> = args.to_vec();
    // One error record per chunk after the first (which keeps the caller's).
    let mut records = vec![[0i64; 4]; if record.is_some() { bounds.len() } else { 0 }];
    let records_ptr = records.as_mut_ptr();
    std::thread::scope(|scope| {
        for (c, &(lo, hi)) in bounds.iter().enumerate().skip(1) {
            let mut mine = base.clone();
            if let Some(slot) = record {
                // In bounds: `records` has one entry per chunk.
                mine[slot] = records_ptr.wrapping_add(c) as i64;
            }
            scope.spawn(move || {
                mine[begin_slot] = lo as i64;
                mine[begin_slot + 1] = hi as i64;
                // SAFETY: guaranteed by the caller; chunks write disjoint elements.
                unsafe { func(mine.as_ptr()) };
            });
        }
        if let Some(&(lo, hi)) = bounds.first() {
            args[begin_slot] = lo as i64;
            args[begin_slot + 1] = hi as i64;
            // SAFETY: as above.
            unsafe { func(args.as_ptr()) };
        }
    });
    // The first chunk wrote the caller's record; otherwise the lowest chunk with an error.
    if let Some(slot) = record {
        let caller = args[slot] as *mut [i64; 4];
        // SAFETY: `args[slot]` is the caller's live record; the threads have finished.
        unsafe {
            if (*caller)[0] == 0 {
                if let Some(r) = records.iter().find(|r| r[0] != 0) {
                    *caller = *r;
                }
            }
        }
    }
}
