//! The cost of handing work to the pool (`tfn_backend::workers`), against spawning scoped
//! threads per call (what the backend did before the pool): median, 10th and 90th percentile
//! µs of a 2-chunk run, with empty chunks, chunks that wait for each other (so the worker
//! must take part: the hand-off's round trip) and ~3 µs chunks, back to back (the worker is
//! awake) and 200 µs apart (it parked; the run has to wake it).
//!
//! `cargo bench -p tfn-backend --bench workers` (pin nothing: it needs two cores). Timings on
//! a shared machine are noisy; compare the rows of one run.

use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tfn_backend::workers;

fn percentiles(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 10], v[v.len() / 2], v[v.len() * 9 / 10])
}

fn measure(name: &str, gap: Duration, f: &dyn Fn()) {
    for _ in 0..200 {
        f();
    }
    let mut samples = Vec::with_capacity(3000);
    for _ in 0..3000 {
        let idle = Instant::now();
        while idle.elapsed() < gap {
            std::hint::spin_loop();
        }
        let t = Instant::now();
        f();
        samples.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let (p10, p50, p90) = percentiles(samples);
    println!(
        "{name:44} gap {:>4} µs: median {p50:7.2}  p10 {p10:7.2}  p90 {p90:7.2} µs",
        gap.as_micros()
    );
}

/// About 3 µs of arithmetic.
fn work(c: usize) {
    let mut x = c as u64;
    for i in 0..2500u64 {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
    }
    black_box(x);
}

/// Two chunks that each wait (up to 1 ms) until both have started: the worker must take part,
/// so this is the hand-off's round trip (post, wake or notice, claim, finish, signal).
fn rendezvous(started: &AtomicUsize) -> impl Fn(usize) + Sync + '_ {
    move |_| {
        started.fetch_add(1, Ordering::SeqCst);
        let t = Instant::now();
        while !started.load(Ordering::SeqCst).is_multiple_of(2)
            && t.elapsed() < Duration::from_millis(1)
        {
            std::hint::spin_loop();
        }
    }
}

fn scoped(chunks: usize, f: &(dyn Fn(usize) + Sync)) {
    std::thread::scope(|s| {
        for c in 1..chunks {
            s.spawn(move || f(c));
        }
        f(0);
    });
}

fn main() {
    let empty = |c: usize| {
        black_box(c);
    };
    let started = AtomicUsize::new(0);
    let meet = rendezvous(&started);
    for gap in [0, 200] {
        let gap = Duration::from_micros(gap);
        measure("workers::run, 2 empty chunks", gap, &|| workers::run(2, 2, &empty).unwrap());
        measure("workers::run, 2 chunks that meet", gap, &|| workers::run(2, 2, &meet).unwrap());
        measure("scoped threads, 2 chunks that meet", gap, &|| scoped(2, &meet));
        measure("scoped threads, 2 empty chunks", gap, &|| scoped(2, &empty));
        measure("one thread, 2 × 3 µs chunks", gap, &|| (0..2).for_each(work));
        measure("workers::run, 2 × 3 µs chunks", gap, &|| workers::run(2, 2, &work).unwrap());
        measure("scoped threads, 2 × 3 µs chunks", gap, &|| scoped(2, &work));
    }
}
