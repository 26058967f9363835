//! `tfnc`'s standard streams, written without ever panicking.
//!
//! - stdout: the first write error is remembered and later writes are skipped;
//!   [`finish_stdout`] flushes and returns it, so `tfnc ... > /dev/full` exits 1 instead of 0,
//!   and `main` says on stderr what failed (a reader that went away, `| head -c1`, included).
//!   (A stdout closed at start-up, `>&-`, is `/dev/null` by the time `main` runs: Rust's
//!   runtime opens it there, so it is a successful `> /dev/null`.)
//! - stderr: a write error (a closed pipe, `2>&1 | head -1`) is remembered, never reported
//!   (there is nowhere left to report it): the exit code is then at least 1.
//! - [`ensure_std_fds`] opens `/dev/null` on any of the descriptors 0, 1, 2 that is closed at
//!   start-up (`tfnc ... 2>&-`), so that a file `tfnc` opens never takes a standard
//!   descriptor's number and receives its messages.

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// The first error writing to stdout, if any.
static STDOUT_ERROR: Mutex<Option<io::Error>> = Mutex::new(None);

fn stdout_error() -> std::sync::MutexGuard<'static, Option<io::Error>> {
    STDOUT_ERROR.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Writes to stdout; after a first failure, does nothing (see [`finish_stdout`]).
pub fn stdout_fmt(args: fmt::Arguments<'_>) {
    let mut failed = stdout_error();
    if failed.is_none() {
        if let Err(e) = io::stdout().lock().write_fmt(args) {
            *failed = Some(e);
        }
    }
}

/// Whether a write to stderr failed.
static STDERR_FAILED: AtomicBool = AtomicBool::new(false);

/// Writes to stderr; a failure is only remembered (see [`stderr_failed`]).
pub fn stderr_fmt(args: fmt::Arguments<'_>) {
    if io::stderr().lock().write_fmt(args).is_err() {
        STDERR_FAILED.store(true, Ordering::Relaxed);
    }
}

/// Whether some message could not be written to stderr (then the exit code is not 0).
pub fn stderr_failed() -> bool {
    STDERR_FAILED.load(Ordering::Relaxed)
}

/// Flushes stdout; the first error of any write to it.
pub fn finish_stdout() -> io::Result<()> {
    let mut failed = stdout_error();
    if failed.is_none() {
        if let Err(e) = io::stdout().lock().flush() {
            *failed = Some(e);
        }
    }
    match failed.take() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Makes sure descriptors 0, 1 and 2 are open (on `/dev/null` if they were closed).
pub fn ensure_std_fds() {
    #[cfg(unix)]
    {
        use std::os::fd::{AsRawFd, IntoRawFd};
        // `open` returns the lowest free descriptor: keep (leak) each that lands on 0..=2.
        while let Ok(file) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null") {
            if file.as_raw_fd() > 2 {
                break;
            }
            let _standard_descriptor = file.into_raw_fd();
        }
    }
}
