//! Ctrl-C during a call: the check [`tfn::interrupt`] polls between loop trips, which runs
//! Python's signal handlers from the main thread (a call releases the GIL, so they would
//! otherwise wait for it to end).
//!
//! At most every 50 ms, and only on the thread that imported the module (where CPython runs
//! signal handlers), it takes the GIL and calls `PyErr_CheckSignals`; an exception the
//! handler raises (KeyboardInterrupt) is left pending and stops the call, and the binding
//! raises it (`errors::to_py`).

use pyo3::prelude::*;
use std::cell::Cell;
use std::sync::OnceLock;
use std::thread::ThreadId;
use std::time::{Duration, Instant};

static MAIN: OnceLock<ThreadId> = OnceLock::new();

const EVERY: Duration = Duration::from_millis(50);

thread_local! {
    static LAST: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Installs the check; called once, when the module is imported.
pub fn install() {
    let _ = MAIN.set(std::thread::current().id());
    tfn::interrupt::set_check(check);
}

fn check() -> bool {
    if MAIN.get() != Some(&std::thread::current().id()) {
        return false;
    }
    let now = Instant::now();
    let due = LAST.with(|last| match last.get() {
        Some(t) if now.duration_since(t) < EVERY => false,
        _ => {
            last.set(Some(now));
            true
        }
    });
    if !due {
        return false;
    }
    Python::attach(|py| match py.check_signals() {
        Ok(()) => false,
        Err(e) => {
            e.restore(py);
            true
        }
    })
}
