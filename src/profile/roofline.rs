//! The roofline a profile is read against: this machine's memory bandwidth and FMA peak,
//! measured once per CPU and thread count (`tfn_backend::probes`) and cached.
//!
//! `tfnc bench --profile` shows each kernel's GB/s and GFLOP/s as a share of these, so a
//! reader sees how far a kernel is from its limit: a memory-bound kernel near 100% of the
//! bandwidth has nothing left to win but moving fewer bytes; a GEMM is judged by its share of
//! the FMA peak.
//!
//! Cache: `roofline-<threads>t.txt` (`roofline-<threads>t-debug.txt` for a debug build, whose
//! unoptimised probes measure far less) in `$TFN_CACHE_DIR`, else `$XDG_CACHE_HOME/tfn`, else
//! `~/.cache/tfn`: lines `cpu=…`, `bandwidth_gbps=…`, `fma_gflops=…`; a file for another CPU
//! (or unreadable) is measured again and rewritten (atomically). `TFN_ROOFLINE="bandwidth=GB/s,
//! fma=GFLOP/s"` sets the limits instead (tests, or figures measured elsewhere).

use std::path::PathBuf;

/// A machine's limits on some number of threads.
#[derive(Clone, Debug, PartialEq)]
pub struct Roofline {
    /// Sustained memory bandwidth (STREAM triad), GB/s.
    pub bandwidth_gbps: f64,
    /// Peak f32 FMA rate, GFLOP/s.
    pub fma_gflops: f64,
    /// Where the figures come from: `measured`, `cached <path>` or `TFN_ROOFLINE`.
    pub source: String,
}

impl Roofline {
    /// The limits for `threads` threads: `TFN_ROOFLINE`, else the cache, else measured now
    /// (about a second) and cached.
    pub fn for_threads(threads: usize) -> Roofline {
        if let Some(r) = std::env::var("TFN_ROOFLINE").ok().and_then(|v| Roofline::parse_env(&v)) {
            return r;
        }
        let cpu = cpu_name();
        // A debug build's probes run unoptimised code: its figures (a tenth of a release
        // build's) are cached apart, never read by a release build.
        let build = if cfg!(debug_assertions) { "-debug" } else { "" };
        let path = cache_dir().map(|d| d.join(format!("roofline-{threads}t{build}.txt")));
        if let Some(r) = path.as_ref().and_then(|p| Roofline::read(p, &cpu)) {
            return r;
        }
        let measured = Roofline {
            bandwidth_gbps: tfn_backend::probes::bandwidth_gbps(threads),
            fma_gflops: tfn_backend::probes::fma_gflops(threads),
            source: "measured".into(),
        };
        if let Some(p) = &path {
            measured.write(p, &cpu);
        }
        measured
    }

    /// `bandwidth=20,fma=117` (either order; both required).
    fn parse_env(text: &str) -> Option<Roofline> {
        let (mut bw, mut fma) = (None, None);
        for part in text.split(',') {
            let (k, v) = part.split_once('=')?;
            let v: f64 = v.trim().parse().ok().filter(|v: &f64| v.is_finite() && *v > 0.0)?;
            match k.trim() {
                "bandwidth" => bw = Some(v),
                "fma" => fma = Some(v),
                _ => return None,
            }
        }
        Some(Roofline { bandwidth_gbps: bw?, fma_gflops: fma?, source: "TFN_ROOFLINE".into() })
    }

    fn read(path: &std::path::Path, cpu: &str) -> Option<Roofline> {
        let text = std::fs::read_to_string(path).ok()?;
        let field = |key: &str| {
            text.lines().find_map(|l| l.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
        };
        if field("cpu")? != cpu {
            return None;
        }
        let num = |key: &str| field(key)?.parse::<f64>().ok().filter(|v| v.is_finite() && *v > 0.0);
        Some(Roofline {
            bandwidth_gbps: num("bandwidth_gbps")?,
            fma_gflops: num("fma_gflops")?,
            source: format!("cached {}", path.display()),
        })
    }

    /// Best effort: a cache that cannot be written is measured again next time.
    fn write(&self, path: &std::path::Path, cpu: &str) {
        let Some(dir) = path.parent() else { return };
        if std::fs::create_dir_all(dir).is_err() {
            return;
        }
        let text = format!(
            "cpu={cpu}\nbandwidth_gbps={:.3}\nfma_gflops={:.3}\n",
            self.bandwidth_gbps, self.fma_gflops
        );
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        if std::fs::write(&tmp, text).is_ok() && std::fs::rename(&tmp, path).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
}

fn cache_dir() -> Option<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("TFN_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("tfn")))
        .or_else(|| var("HOME").map(|d| d.join(".cache").join("tfn")))
}

/// The CPU's model name (`/proc/cpuinfo`), or the architecture.
fn cpu_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_override_and_the_cache_round_trip() {
        let r = Roofline::parse_env("fma=117, bandwidth=20.5").unwrap();
        assert_eq!((r.bandwidth_gbps, r.fma_gflops), (20.5, 117.0));
        for bad in ["", "fma=1", "bandwidth=1,fma=x", "bandwidth=1,fma=-3", "bw=1,fma=2"] {
            assert!(Roofline::parse_env(bad).is_none(), "{bad}");
        }
        let dir = std::env::temp_dir().join(format!("tfn-roofline-{}", std::process::id()));
        let path = dir.join("roofline-1t.txt");
        r.write(&path, "cpu A");
        let back = Roofline::read(&path, "cpu A").unwrap();
        assert_eq!((back.bandwidth_gbps, back.fma_gflops), (20.5, 117.0));
        assert!(Roofline::read(&path, "cpu B").is_none(), "another CPU measures again");
        std::fs::write(&path, "cpu=cpu A\nbandwidth_gbps=nan\n").unwrap();
        assert!(Roofline::read(&path, "cpu A").is_none(), "a corrupt cache measures again");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
