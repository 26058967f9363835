//! The one thread pool every parallel site of the backend runs on: loop kernels
//! (`crate::parallel`), GEMM regions (`crate::matmul`), window ops (`crate::window`), strided
//! copies, scans and arg-reductions.
//!
//! **Model.** [`run`]`(chunks, threads, f)` calls `f(c)` once for every chunk `c` in
//! `0..chunks`, on the calling thread and on up to `threads - 1` pool workers, and returns when
//! all have finished. Chunks are *claimed* from a shared counter, so which thread runs which
//! chunk is not fixed — callers make every chunk's result depend only on `c` (disjoint outputs,
//! a partition that does not depend on the thread count), so results are the same bits for any
//! thread count and any schedule. The caller claims chunks too and, when no worker is idle,
//! runs them all itself:
//! - **re-entrancy**: a chunk that calls [`run`] again (on a worker or on the caller) never
//!   waits for a worker that is not already running one of its chunks, so it cannot deadlock;
//! - **sharing**: one process-wide pool, grown lazily to the largest `threads - 1` ever asked
//!   for; sessions with different `threads` take as many idle workers as they may use;
//! - **panics**: every chunk runs under `catch_unwind`; the first payload comes back as
//!   [`WorkerPanic`] after *all* chunks have finished (borrowed data is never used after
//!   [`run`] returns), never as an abort.
//!
//! - **host pools**: a program may run every split on its own parallel-for instead
//!   ([`set_parallel_for`]: the AOT runtime's `tfn_rt_set_parallel_for`, as Halide's
//!   `do_par_for`); the chunks are the same, so are the results.
//!
//! **Cost.** A worker that finished a job spins (`spin_loop`) for [`SPIN`] before it parks, so
//! the kernels of one call, and back-to-back calls, hand work to awake threads: an empty
//! 2-chunk run costs about a microsecond then, a few when the worker has to be unparked
//! (a futex wake). Nothing is allocated per chunk; one job (`Arc`) is allocated per run.
//!
//! Why not rayon: a `rayon::scope` entered from a non-pool thread blocks the caller on a latch
//! while workers run the spawned jobs (the caller does not take part), and every spawn boxes a
//! job; measured on an empty 2-chunk run it costs several times this pool (see
//! `backend/benches/workers.rs` and ARCHITECTURE.md → "Threads").

use std::any::Any;
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// How long an idle worker (and a caller waiting for the last chunk) waits before parking.
pub const SPIN: Duration = Duration::from_micros(50);

/// How much of [`SPIN`] is spent spinning without yielding the core.
pub const SPIN_HOT: Duration = Duration::from_micros(10);

/// The most workers the pool ever starts (a call asking for more threads gets at most these).
pub const MAX_WORKERS: usize = 63;

/// A parallel kernel did not run all its chunks: one panicked (the message of its payload, if
/// it was a string), or the host's parallel-for skipped some.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a parallel kernel did not complete: {message}")]
pub struct WorkerPanic {
    pub message: String,
}

impl WorkerPanic {
    fn from_payload(payload: &(dyn Any + Send)) -> WorkerPanic {
        let message = if let Some(s) = payload.downcast_ref::<&str>() {
            format!("a chunk panicked: {s}")
        } else if let Some(s) = payload.downcast_ref::<String>() {
            format!("a chunk panicked: {s}")
        } else {
            "a chunk panicked".to_string()
        };
        WorkerPanic { message }
    }
}

/// A host program's parallel-for ([`set_parallel_for`]): `hook(chunks, threads, task)` calls
/// `task(c)` once for every `c` in `0..chunks`, on threads of its choosing (`threads` is how
/// many the caller would use), and returns when every call has returned.
pub type ParallelFor = Box<dyn Fn(usize, usize, &(dyn Fn(usize) + Sync)) + Send + Sync>;

/// Whether a hook is installed (the fast path of [`run`] reads only this).
static HOOKED: AtomicBool = AtomicBool::new(false);
static HOOK: RwLock<Option<Arc<ParallelFor>>> = RwLock::new(None);

thread_local! {
    /// This thread is running a task of the host's parallel-for.
    static IN_HOOK_TASK: Cell<bool> = const { Cell::new(false) };
}

/// Runs every split [`run`] makes on `hook` (the AOT runtime's `tfn_rt_set_parallel_for`)
/// instead of this pool; `None`: this pool again. A split inside a task of the hook runs on
/// the task's thread (the hook is never re-entered). Results are the same bits: the chunks
/// are the same whoever runs them.
pub fn set_parallel_for(hook: Option<ParallelFor>) {
    let mut slot = HOOK.write().unwrap_or_else(|p| p.into_inner());
    HOOKED.store(hook.is_some(), Ordering::SeqCst);
    *slot = hook.map(Arc::new);
}

/// The installed hook, if any.
fn hook() -> Option<Arc<ParallelFor>> {
    if !HOOKED.load(Ordering::Relaxed) {
        return None;
    }
    HOOK.read().ok().and_then(|h| h.clone())
}

/// [`run`] on the host's parallel-for: every chunk under `catch_unwind`, counted, so a hook
/// that skipped one is an error rather than a missing part of a result.
fn run_hooked(
    hook: &ParallelFor,
    chunks: usize,
    threads: usize,
    f: &(dyn Fn(usize) + Sync),
) -> Result<(), WorkerPanic> {
    let first: Mutex<Option<WorkerPanic>> = Mutex::new(None);
    let ran = AtomicUsize::new(0);
    let task = |c: usize| {
        if c >= chunks {
            return;
        }
        let outer = IN_HOOK_TASK.with(|t| t.replace(true));
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| f(c))) {
            if let Ok(mut slot) = first.lock() {
                slot.get_or_insert_with(|| WorkerPanic::from_payload(&*p));
            }
        }
        IN_HOOK_TASK.with(|t| t.set(outer));
        ran.fetch_add(1, Ordering::SeqCst);
    };
    if catch_unwind(AssertUnwindSafe(|| hook(chunks, threads, &task))).is_err() {
        return Err(WorkerPanic { message: "the host's parallel-for panicked".into() });
    }
    if let Some(p) = first.lock().ok().and_then(|mut p| p.take()) {
        return Err(p);
    }
    match ran.load(Ordering::SeqCst) {
        n if n == chunks => Ok(()),
        n => Err(WorkerPanic {
            message: format!("the host's parallel-for ran {n} of {chunks} tasks"),
        }),
    }
}

/// Runs `f(c)` for every `c` in `0..chunks` on the calling thread and up to `threads - 1`
/// pool workers; returns when every chunk has finished. See the module doc for the model.
pub fn run(chunks: usize, threads: usize, f: &(dyn Fn(usize) + Sync)) -> Result<(), WorkerPanic> {
    let helpers = threads.min(chunks).saturating_sub(1).min(MAX_WORKERS);
    if helpers == 0 {
        return run_inline(chunks, f);
    }
    if let Some(hook) = hook() {
        if IN_HOOK_TASK.with(Cell::get) {
            return run_inline(chunks, f);
        }
        return run_hooked(&hook, chunks, threads, f);
    }
    // SAFETY: `f` is only called (in `Job::work`) for claimed chunks `c < chunks`, and this
    // function returns only after every such call has finished (`wait`), so the erased
    // lifetime is never outlived. Workers may keep the `Arc` longer, but then only touch its
    // counters.
    let f: &'static (dyn Fn(usize) + Sync) = unsafe { std::mem::transmute(f) };
    let job = Arc::new(Job {
        f,
        count: chunks,
        next: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        panic: Mutex::new(None),
        owner: std::thread::current(),
        owner_parked: AtomicBool::new(false),
    });
    pool().hand_out(&job, helpers);
    job.work();
    job.wait();
    let payload = job.panic.lock().map(|mut p| p.take()).unwrap_or(None);
    match payload {
        Some(message) => Err(message),
        None => Ok(()),
    }
}

/// Like [`run`], giving chunk `c` exclusive access to `items[c]` (one chunk per item).
pub fn run_mut<T: Send>(
    items: &mut [T],
    threads: usize,
    f: &(dyn Fn(usize, &mut T) + Sync),
) -> Result<(), WorkerPanic> {
    struct Items<T>(*mut T);
    // SAFETY: chunk `c` is claimed by exactly one thread, which alone touches item `c`.
    unsafe impl<T: Send> Sync for Items<T> {}
    let base = Items(items.as_mut_ptr());
    let count = items.len();
    run(count, threads, &|c| {
        let base = &base;
        // SAFETY: `c < count` and no other chunk touches item `c` (see `Items`).
        f(c, unsafe { &mut *base.0.add(c) })
    })
}

/// Workers started so far (for tests and measurements).
pub fn started() -> usize {
    POOL.get().map_or(0, |p| p.started.load(Ordering::Acquire))
}

fn run_inline(chunks: usize, f: &(dyn Fn(usize) + Sync)) -> Result<(), WorkerPanic> {
    let mut first = None;
    for c in 0..chunks {
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| f(c))) {
            first.get_or_insert_with(|| WorkerPanic::from_payload(&*p));
        }
    }
    first.map_or(Ok(()), Err)
}

/// One [`run`]: its chunks, the counters that hand them out, the first panic.
struct Job {
    f: &'static (dyn Fn(usize) + Sync),
    count: usize,
    /// The next chunk to claim (may run past `count`: then there is nothing left).
    next: AtomicUsize,
    /// Chunks finished.
    done: AtomicUsize,
    panic: Mutex<Option<WorkerPanic>>,
    owner: Thread,
    /// The owner parked (or is about to) waiting for `done`.
    owner_parked: AtomicBool,
}

impl Job {
    /// Claims and runs chunks until none are left.
    fn work(&self) {
        loop {
            let c = self.next.fetch_add(1, Ordering::Relaxed);
            if c >= self.count {
                return;
            }
            if let Err(p) = catch_unwind(AssertUnwindSafe(|| (self.f)(c))) {
                if let Ok(mut slot) = self.panic.lock() {
                    slot.get_or_insert_with(|| WorkerPanic::from_payload(&*p));
                }
            }
            if self.done.fetch_add(1, Ordering::SeqCst) + 1 == self.count
                && self.owner_parked.load(Ordering::SeqCst)
            {
                self.owner.unpark();
            }
        }
    }

    /// Waits (on the owner) until every chunk has finished.
    fn wait(&self) {
        let finished = || self.done.load(Ordering::SeqCst) >= self.count;
        if spin_until(finished) {
            return;
        }
        self.owner_parked.store(true, Ordering::SeqCst);
        while !finished() {
            std::thread::park();
        }
    }
}

/// Waits for up to [`SPIN`] until `ready()`: spinning on the core for the first [`SPIN_HOT`]
/// (back-to-back kernels hand over in well under that), then yielding the core between checks
/// (a waiter must not keep a thread it shares a core with from finishing what it waits for);
/// whether it became ready.
fn spin_until(ready: impl Fn() -> bool) -> bool {
    let start = Instant::now();
    loop {
        for _ in 0..64 {
            if ready() {
                return true;
            }
            std::hint::spin_loop();
        }
        let waited = start.elapsed();
        if waited >= SPIN {
            return ready();
        }
        if waited >= SPIN_HOT {
            std::thread::yield_now();
        }
    }
}

/// One worker thread's mailbox.
struct Worker {
    /// Taken by a caller (compare-exchange false → true) before it posts a job.
    busy: AtomicBool,
    /// The posted job (`Arc::into_raw`), null when none.
    job: AtomicPtr<Job>,
    /// Parked (or about to park) waiting for a job.
    parked: AtomicBool,
    thread: OnceLock<Thread>,
}

struct Pool {
    workers: Box<[Worker]>,
    started: AtomicUsize,
    /// Serialises starting workers.
    growing: Mutex<()>,
}

static POOL: OnceLock<Pool> = OnceLock::new();

fn pool() -> &'static Pool {
    POOL.get_or_init(|| Pool {
        workers: (0..MAX_WORKERS)
            .map(|_| Worker {
                busy: AtomicBool::new(false),
                job: AtomicPtr::new(std::ptr::null_mut()),
                parked: AtomicBool::new(false),
                thread: OnceLock::new(),
            })
            .collect(),
        started: AtomicUsize::new(0),
        growing: Mutex::new(()),
    })
}

impl Pool {
    /// Posts `job` to up to `helpers` idle workers, starting workers up to that many.
    fn hand_out(&'static self, job: &Arc<Job>, helpers: usize) {
        if self.started.load(Ordering::Acquire) < helpers {
            self.grow(helpers);
        }
        let mut posted = 0;
        let started = self.started.load(Ordering::Acquire);
        for w in &self.workers[..started] {
            if posted == helpers {
                break;
            }
            if w.busy.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
                continue;
            }
            w.job.store(Arc::into_raw(job.clone()) as *mut Job, Ordering::SeqCst);
            if w.parked.load(Ordering::SeqCst) {
                if let Some(t) = w.thread.get() {
                    t.unpark();
                }
            }
            posted += 1;
        }
    }

    /// Starts workers until `want` run (fewer if the OS refuses threads: callers then do more
    /// of the work themselves).
    fn grow(&'static self, want: usize) {
        let Ok(_guard) = self.growing.lock() else { return };
        let mut started = self.started.load(Ordering::Acquire);
        while started < want.min(MAX_WORKERS) {
            let index = started;
            let spawned = std::thread::Builder::new()
                .name(format!("tfn-worker-{index}"))
                .spawn(move || self.worker_loop(index));
            let Ok(handle) = spawned else { break };
            let _ = self.workers[index].thread.set(handle.thread().clone());
            started += 1;
            self.started.store(started, Ordering::Release);
        }
    }

    fn worker_loop(&'static self, index: usize) {
        let me = &self.workers[index];
        let _ = me.thread.set(std::thread::current());
        loop {
            let has_job = || !me.job.load(Ordering::SeqCst).is_null();
            if !spin_until(has_job) {
                me.parked.store(true, Ordering::SeqCst);
                while !has_job() {
                    std::thread::park();
                }
                me.parked.store(false, Ordering::SeqCst);
            }
            let raw = me.job.swap(std::ptr::null_mut(), Ordering::SeqCst);
            if raw.is_null() {
                continue;
            }
            // SAFETY: `hand_out` stored `Arc::into_raw` of a job; swapping it out makes this
            // the only owner of that reference.
            let job = unsafe { Arc::from_raw(raw) };
            job.work();
            drop(job);
            me.busy.store(false, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn every_chunk_runs_once_for_any_thread_count() {
        for threads in 1..=5 {
            for chunks in [0usize, 1, 2, 3, 7, 64] {
                let hits: Vec<AtomicU64> = (0..chunks).map(|_| AtomicU64::new(0)).collect();
                run(chunks, threads, &|c| {
                    hits[c].fetch_add(1, Ordering::Relaxed);
                })
                .unwrap();
                assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1), "{threads} {chunks}");
            }
        }
    }

    #[test]
    fn nested_runs_do_not_deadlock() {
        let total = AtomicU64::new(0);
        run(4, 4, &|_| {
            run(4, 4, &|_| {
                run(3, 2, &|_| {
                    total.fetch_add(1, Ordering::Relaxed);
                })
                .unwrap();
            })
            .unwrap();
        })
        .unwrap();
        assert_eq!(total.load(Ordering::Relaxed), 48);
    }

    #[test]
    fn concurrent_callers_share_the_pool() {
        let total = AtomicU64::new(0);
        std::thread::scope(|s| {
            for t in 1..=4 {
                let total = &total;
                s.spawn(move || {
                    for _ in 0..200 {
                        run(8, t, &|c| {
                            total.fetch_add(c as u64, Ordering::Relaxed);
                        })
                        .unwrap();
                    }
                });
            }
        });
        assert_eq!(total.load(Ordering::Relaxed), 4 * 200 * 28);
    }

    #[test]
    fn a_panicking_chunk_is_an_error_after_all_chunks_finished() {
        for threads in [1, 2, 3] {
            let finished = AtomicU64::new(0);
            let r = run(6, threads, &|c| {
                if c == 3 {
                    panic!("chunk three");
                }
                finished.fetch_add(1, Ordering::Relaxed);
            });
            assert_eq!(r, Err(WorkerPanic { message: "a chunk panicked: chunk three".into() }));
            assert_eq!(finished.load(Ordering::Relaxed), 5);
        }
        // The pool still works.
        let n = AtomicU64::new(0);
        run(4, 2, &|_| {
            n.fetch_add(1, Ordering::Relaxed);
        })
        .unwrap();
        assert_eq!(n.load(Ordering::Relaxed), 4);
    }

    #[test]
    fn run_mut_gives_each_chunk_its_item() {
        let mut items: Vec<usize> = vec![0; 9];
        run_mut(&mut items, 3, &|c, item| *item = c * c).unwrap();
        assert_eq!(items, (0..9).map(|c| c * c).collect::<Vec<_>>());
    }
}
