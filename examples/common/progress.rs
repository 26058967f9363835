//! The progress bar (smoothed loss, the latest evaluation, throughput, time left) and the
//! per-step CSV log of a training run.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A one-line progress bar on stderr, redrawn in place on a terminal; when stderr is not a
/// terminal only the steps the caller marks are printed, one line each (so logs of a
/// redirected run stay short).
pub struct Bar {
    total: usize,
    started: Instant,
    terminal: bool,
    smoothed: Option<f64>,
    /// The weight of the previous average in the exponential average of the loss.
    keep: f64,
    /// What the throughput counts: `tok`, `img`.
    unit: &'static str,
}

impl Bar {
    /// A bar over `total` steps; `keep` is the smoothing of the loss (0.9: about the last ten
    /// steps), `unit` what `update`'s rate counts.
    pub fn new(total: usize, keep: f64, unit: &'static str) -> Bar {
        Bar {
            total,
            started: Instant::now(),
            terminal: std::io::stderr().is_terminal(),
            smoothed: None,
            keep,
            unit,
        }
    }

    /// Records step `step`'s loss and draws the bar: `[###.....] 120/900  loss 0.4123  test
    /// 91.09%  12.3k img/s  8.1s left`. `evaluation` is the latest evaluation, already
    /// formatted (`valid 2.105`, `test 91.09%`); `print` says whether a non-terminal run prints
    /// this step.
    pub fn update(
        &mut self,
        step: usize,
        loss: f32,
        evaluation: Option<&str>,
        per_second: f64,
        print: bool,
    ) {
        // An exponential average: one batch's loss is noisy.
        let loss = f64::from(loss);
        let s = self.smoothed.map_or(loss, |s| self.keep * s + (1.0 - self.keep) * loss);
        self.smoothed = Some(s);
        let evaluation = evaluation.map_or(String::new(), |e| format!("  {e}"));
        self.draw(step, &format!("  loss {s:.4}{evaluation}"), per_second, print);
    }

    /// Draws the bar at `step` without a loss (work that has none, such as inference):
    /// `[###.....] 120/900  3.2k tok/s  8.1s left`.
    pub fn advance(&mut self, step: usize, per_second: f64, print: bool) {
        self.draw(step, "", per_second, print);
    }

    fn draw(&self, step: usize, metrics: &str, per_second: f64, print: bool) {
        if !self.terminal && !print {
            return;
        }
        let width = 24;
        let done = (step * width / self.total.max(1)).min(width);
        let elapsed = self.started.elapsed().as_secs_f64();
        let left = elapsed / step.max(1) as f64 * self.total.saturating_sub(step) as f64;
        let line = format!(
            "[{}{}] {step}/{}{metrics}  {:.1}k {}/s  {left:.1}s left",
            "#".repeat(done),
            ".".repeat(width - done),
            self.total,
            per_second / 1e3,
            self.unit,
        );
        let mut err = std::io::stderr().lock();
        let _ = if self.terminal { write!(err, "\r{line}\x1b[K") } else { writeln!(err, "{line}") };
        let _ = err.flush();
    }

    /// Ends the bar's line on a terminal.
    pub fn finish(&self) {
        if self.terminal {
            eprintln!();
        }
    }
}

/// The per-step CSV: written to `FILE.partial` as training goes and renamed to `FILE` when it
/// ends, so `FILE` is never a half-written log. Without a path, every call does nothing.
pub struct CsvLog {
    file: Option<(std::io::BufWriter<std::fs::File>, PathBuf, PathBuf)>,
}

impl CsvLog {
    /// Starts the log with its header line (`step,loss,...`).
    pub fn create(path: Option<&Path>, header: &str) -> Result<CsvLog, String> {
        let Some(path) = path else { return Ok(CsvLog { file: None }) };
        let mut partial = path.as_os_str().to_owned();
        partial.push(".partial");
        let partial = PathBuf::from(partial);
        let file = std::fs::File::create(&partial)
            .map_err(|e| format!("cannot write {}: {e}", partial.display()))?;
        let mut w = std::io::BufWriter::new(file);
        writeln!(w, "{header}").map_err(|e| format!("{}: {e}", partial.display()))?;
        Ok(CsvLog { file: Some((w, partial, path.to_path_buf())) })
    }

    /// Appends one row, formatted by the caller: `log.row(format_args!("{step},{loss}"))`.
    pub fn row(&mut self, row: std::fmt::Arguments<'_>) -> Result<(), String> {
        let Some((w, partial, _)) = &mut self.file else { return Ok(()) };
        writeln!(w, "{row}").map_err(|e| format!("{}: {e}", partial.display()))
    }

    /// Flushes the log to disk and renames it into place.
    pub fn finish(self) -> Result<(), String> {
        let Some((w, partial, path)) = self.file else { return Ok(()) };
        let file = w.into_inner().map_err(|e| format!("{}: {e}", partial.display()))?;
        file.sync_all().map_err(|e| format!("{}: {e}", partial.display()))?;
        std::fs::rename(&partial, &path).map_err(|e| format!("{}: {e}", path.display()))
    }
}
