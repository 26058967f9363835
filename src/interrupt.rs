//! Stopping a long call from outside: a process-wide check, polled between two trips of
//! every loop (forward and reverse), that can end the call with [`crate::Error::Interrupted`].
//!
//! The Python module installs one that runs Python's signal handlers, so Ctrl-C stops a
//! `for` loop of a billion trips (the call releases the GIL, so Python's own handler would
//! otherwise wait for it to end). The CLI needs none: SIGINT ends the process.

use std::sync::OnceLock;

static CHECK: OnceLock<fn() -> bool> = OnceLock::new();

/// Installs `check`, called between loop trips (keep it cheap: rate-limit anything costly);
/// `true` stops the call. The first installation wins; returns whether this one did.
pub fn set_check(check: fn() -> bool) -> bool {
    CHECK.set(check).is_ok()
}

/// Whether the installed check asks the running call to stop.
pub(crate) fn requested() -> bool {
    CHECK.get().is_some_and(|check| check())
}
