//! egg's clock, without quanta's calibration.
//!
//! egg times its runs with `quanta::Instant`. quanta's first `Instant::now()` in a process
//! calibrates the CPU's time-stamp counter against the OS clock, looping on `clock_gettime`
//! until the estimate settles or 200 ms pass: on this machine's VM about 125 ms, all of it
//! inside the first call's compile (`perf` of the char-LM's first step). The optimiser
//! runs egg under a quanta mock clock instead ([`EggClock::run`]), which calibrates nothing,
//! and advances it to the real elapsed time (`std::time::Instant`) from a runner hook at the
//! start of every iteration ([`EggClock::sync`]), so egg's time limit still stops a run: it
//! sees the time of the iteration's start in its checks after the search and after every
//! applied rule, and the real time at the next iteration's start.

use std::sync::Arc;
use std::time::Instant;

/// A quanta mock clock that follows real time when [`EggClock::sync`] is called (clones
/// share it).
#[derive(Clone)]
pub(crate) struct EggClock {
    clock: quanta::Clock,
    mock: Arc<quanta::Mock>,
    start: Instant,
}

impl EggClock {
    /// A clock at zero, following real time from now.
    pub(crate) fn new() -> EggClock {
        let (clock, mock) = quanta::Clock::mock();
        EggClock { clock, mock, start: Instant::now() }
    }

    /// Runs `f` (egg calls) with this clock as quanta's clock on this thread.
    pub(crate) fn run<T>(&self, f: impl FnOnce() -> T) -> T {
        quanta::with_clock(&self.clock, f)
    }

    /// Advances the clock to the real time elapsed since [`EggClock::new`].
    pub(crate) fn sync(&self) {
        let real = u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let now = self.mock.value();
        if real > now {
            self.mock.increment(real - now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::EggClock;
    use std::time::Duration;

    #[test]
    fn the_mock_follows_real_time_only_when_synced() {
        let clock = EggClock::new();
        let (first, later) = clock.run(|| {
            let first = quanta::Instant::now();
            std::thread::sleep(Duration::from_millis(5));
            (first, quanta::Instant::now())
        });
        assert_eq!(later.duration_since(first), Duration::ZERO);
        clock.sync();
        let synced = clock.run(quanta::Instant::now);
        assert!(synced.duration_since(first) >= Duration::from_millis(5));
    }
}
