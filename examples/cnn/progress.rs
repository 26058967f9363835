//! The progress bar (loss, test accuracy, images/s, time left) and the per-step CSV log.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A one-line progress bar on stderr, redrawn in place on a terminal and printed once per
/// epoch otherwise (so logs of a redirected run stay short).
pub struct Bar {
    total: usize,
    started: Instant,
    terminal: bool,
    smoothed: Option<f64>,
}

impl Bar {
    pub fn new(total: usize) -> Bar {
        Bar {
            total,
            started: Instant::now(),
            terminal: std::io::stderr().is_terminal(),
            smoothed: None,
        }
    }

    /// `accuracy` is the last test accuracy; `epoch_end` says whether this step ended an epoch.
    pub fn update(
        &mut self,
        step: usize,
        loss: f32,
        accuracy: Option<f64>,
        images_per_s: f64,
        epoch_end: bool,
    ) {
        // An exponential average: one batch's loss is noisy.
        let s = self.smoothed.map_or(f64::from(loss), |s| 0.9 * s + 0.1 * f64::from(loss));
        self.smoothed = Some(s);
        if !self.terminal && !epoch_end {
            return;
        }
        let width = 24;
        let done = step * width / self.total.max(1);
        let elapsed = self.started.elapsed().as_secs_f64();
        let left = elapsed / step as f64 * (self.total - step) as f64;
        let accuracy = accuracy.map_or(String::new(), |a| format!("  test {:.2}%", 100.0 * a));
        let line = format!(
            "[{}{}] {step}/{}  loss {s:.4}{accuracy}  {:.1}k img/s  {:.1}s left",
            "#".repeat(done),
            ".".repeat(width - done),
            self.total,
            images_per_s / 1e3,
            left
        );
        let mut err = std::io::stderr().lock();
        let _ = if self.terminal { write!(err, "\r{line}\x1b[K") } else { writeln!(err, "{line}") };
        let _ = err.flush();
    }

    pub fn finish(&self) {
        if self.terminal {
            eprintln!();
        }
    }
}

/// The per-step CSV: written to `FILE.partial` as training goes and renamed to `FILE` when it
/// ends, so `FILE` is never a half-written log.
pub struct CsvLog {
    file: Option<(std::io::BufWriter<std::fs::File>, PathBuf, PathBuf)>,
}

impl CsvLog {
    pub fn create(path: Option<&Path>) -> Result<CsvLog, String> {
        let Some(path) = path else { return Ok(CsvLog { file: None }) };
        let mut partial = path.as_os_str().to_owned();
        partial.push(".partial");
        let partial = PathBuf::from(partial);
        let file = std::fs::File::create(&partial)
            .map_err(|e| format!("cannot write {}: {e}", partial.display()))?;
        let mut w = std::io::BufWriter::new(file);
        writeln!(w, "step,epoch,loss,test_accuracy,lr,ms,images_per_s")
            .map_err(|e| e.to_string())?;
        Ok(CsvLog { file: Some((w, partial, path.to_path_buf())) })
    }

    #[allow(clippy::too_many_arguments)]
    pub fn row(
        &mut self,
        step: usize,
        epoch: usize,
        loss: f32,
        accuracy: Option<f64>,
        lr: f64,
        ms: f64,
        images_per_s: f64,
    ) -> Result<(), String> {
        let Some((w, partial, _)) = &mut self.file else { return Ok(()) };
        let accuracy = accuracy.map_or(String::new(), |a| format!("{a}"));
        writeln!(w, "{step},{epoch},{loss},{accuracy},{lr:e},{ms:.3},{images_per_s:.0}")
            .map_err(|e| format!("{}: {e}", partial.display()))
    }

    pub fn finish(self) -> Result<(), String> {
        let Some((w, partial, path)) = self.file else { return Ok(()) };
        let file = w.into_inner().map_err(|e| format!("{}: {e}", partial.display()))?;
        file.sync_all().map_err(|e| format!("{}: {e}", partial.display()))?;
        std::fs::rename(&partial, &path).map_err(|e| format!("{}: {e}", path.display()))
    }
}
