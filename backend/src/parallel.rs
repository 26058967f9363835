//! Splitting one kernel call across threads by ranges of its outermost axis.
//!
//! Every chunk computes disjoint output elements with the same instructions, so results are
//! bit-identical to one thread. Small calls stay on the calling thread: spawning costs ~10 µs.

use crate::jit::KernelFn;

/// Below this many elements a kernel runs on the calling thread.
pub(crate) const MIN_PARALLEL_ELEMENTS: usize = 1 << 20;

/// Calls `func` on `args` (whose `begin`/`end` slots are at `begin_slot`) over `0..range`,
/// split into up to `threads` chunks when `work` (elements touched) is large enough. `align`
/// rounds chunk boundaries (keeps vector loops whole).
///
/// # Safety
/// `args` must be valid kernel arguments for `func`, for any sub-range of `0..range`.
pub(crate) unsafe fn call_split(
    func: KernelFn,
    args: &mut [i64],
    begin_slot: usize,
    range: usize,
    work: usize,
    threads: usize,
    align: usize,
) {
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
    std::thread::scope(|scope| {
        for &(lo, hi) in bounds.iter().skip(1) {
            let mut mine = base.clone();
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
}
