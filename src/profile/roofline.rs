//! The roofline a profile is read against: this machine's memory bandwidth and FMA peak,
//! measured (`tfn_probes`, optimised in every build) per CPU and thread count, and cached.
//!
//! `tfnc bench --profile` shows each kernel's GB/s and GFLOP/s as a share of these, so a
//! reader sees how far a kernel is from its limit: a memory-bound kernel near 100% of the
//! bandwidth has nothing left to win but moving fewer bytes; a GEMM is judged by its share of
//! the FMA peak.
//!
//! Cache: `roofline-<threads>t.txt` in `$TFN_CACHE_DIR`, else `$XDG_CACHE_HOME/tfn`, else
//! `~/.cache/tfn`: `key=value` lines, [`FORMAT`] first (`format=2`), then `cpu`, `threads`,
//! `probed` (the UTC date of the last probe), `bandwidth_gbps`, `fma_gflops`, and
//! `beaten_gbps`/`beaten_gflops` (the highest kernel rates that caused a re-probe, 0 if none).
//! A file of another format, CPU or thread count, or one that cannot be read or parsed,
//! is measured again; the file is rewritten atomically (a temporary file renamed over it), and
//! a cache that cannot be written is simply not kept.
//!
//! A probe run on a busy machine measures too little, so the cache does not keep it blindly:
//! when a profiled kernel beats a cached limit by more than [`SLACK`] — its GFLOP/s above the
//! FMA peak, or its GB/s above the bandwidth for a kernel whose bytes are beyond the
//! last-level cache ([`beyond_cache_bytes`]; a kernel whose data fits in cache may rightly run
//! faster than memory) — both probes run again in that run and the cache keeps the higher of
//! the old and new figures. The kernel rates that caused it are kept too, so a kernel that
//! beats even a fresh probe (a probe can be beaten: non-temporal stores, say) causes one
//! re-probe, not one per run. `TFN_ROOFLINE_REPROBE=1` measures again and replaces the cache
//! (the way to lower a figure); `TFN_ROOFLINE="bandwidth=GB/s,fma=GFLOP/s"` sets the limits
//! instead (tests, or figures measured elsewhere).

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// The cache file's format: a file without this `format=` line is measured again.
pub(crate) const FORMAT: u32 = 2;

/// How far (as a factor) a kernel may beat a cached limit before the probes run again: rates
/// within it are measurement noise.
pub(crate) const SLACK: f64 = 1.05;

/// A kernel's time per run below which its rates are not checked against the limits (the
/// clock's resolution would dominate them).
const MIN_CHECKED_RUN_SECONDS: f64 = 10e-6;

/// A machine's limits on some number of threads.
#[derive(Clone, Debug, PartialEq)]
pub struct Roofline {
    /// Sustained memory bandwidth (STREAM triad), GB/s.
    pub bandwidth_gbps: f64,
    /// Peak f32 FMA rate, GFLOP/s.
    pub fma_gflops: f64,
    /// Where the figures come from: `measured`, `cached <path> (probed <date>)`, `re-measured
    /// (a kernel beat the cached limits) <path>`, or `TFN_ROOFLINE`.
    pub source: String,
}

/// The best rates a profile's kernels reached, to check the cached limits with.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Attained {
    /// The highest GB/s of a kernel whose bytes per run are beyond the last-level cache.
    pub(crate) gbps: f64,
    /// The highest GFLOP/s of any kernel.
    pub(crate) gflops: f64,
}

impl Attained {
    /// The best rates of a profile's kernels: `(bytes per run, flops per run, seconds per run)`
    /// each; kernels faster than the clock can time, or with a non-finite rate, do not count,
    /// and only kernels moving more than `beyond_cache` bytes count for the bandwidth.
    pub(crate) fn of(
        kernels: impl IntoIterator<Item = (u64, u64, f64)>,
        beyond_cache: u64,
    ) -> Self {
        let mut best = Attained::default();
        for (bytes, flops, seconds) in kernels {
            if !(seconds.is_finite() && seconds >= MIN_CHECKED_RUN_SECONDS) {
                continue;
            }
            let gflops = flops as f64 / seconds / 1e9;
            if gflops.is_finite() {
                best.gflops = best.gflops.max(gflops);
            }
            let gbps = bytes as f64 / seconds / 1e9;
            if bytes > beyond_cache && gbps.is_finite() {
                best.gbps = best.gbps.max(gbps);
            }
        }
        best
    }
}

/// What the cache file holds.
#[derive(Clone, Debug, PartialEq)]
struct Cached {
    bandwidth_gbps: f64,
    fma_gflops: f64,
    /// The kernel rates that last caused a re-probe (0: none).
    beaten: Attained,
    /// The UTC date of the last probe.
    probed: String,
}

/// Where the cache lives and what it must match.
struct CacheKey<'a> {
    path: Option<&'a Path>,
    cpu: &'a str,
    threads: usize,
}

impl Roofline {
    /// The limits for `threads` threads: `TFN_ROOFLINE`, else the cache, else measured now
    /// (a fraction of a second) and cached; `TFN_ROOFLINE_REPROBE=1` measures again.
    pub fn for_threads(threads: usize) -> Roofline {
        Roofline::checked(threads, Attained::default())
    }

    /// [`Roofline::for_threads`], measured again when a kernel rate of `attained` beats the
    /// cached limits.
    pub(crate) fn checked(threads: usize, attained: Attained) -> Roofline {
        if let Some(r) = std::env::var("TFN_ROOFLINE").ok().and_then(|v| Roofline::parse_env(&v)) {
            return r;
        }
        let cpu = cpu_name();
        let path = tfn_backend::code_cache::cache_dir()
            .map(|d| d.join(format!("roofline-{threads}t.txt")));
        let key = CacheKey { path: path.as_deref(), cpu: &cpu, threads };
        let force = std::env::var("TFN_ROOFLINE_REPROBE").is_ok_and(|v| !v.is_empty() && v != "0");
        Roofline::resolve(&key, force, attained, &mut || {
            (tfn_probes::bandwidth_gbps(threads), tfn_probes::fma_gflops(threads))
        })
    }

    /// The limits from the cache at `key`, or from `probe` (bandwidth GB/s, FMA GFLOP/s) when
    /// there is none, `force` asks, or a rate of `attained` beats the cached limits (then the
    /// higher of the cached and new figures); the cache rewritten when probed.
    fn resolve(
        key: &CacheKey,
        force: bool,
        attained: Attained,
        probe: &mut dyn FnMut() -> (f64, f64),
    ) -> Roofline {
        let cached = if force { None } else { key.path.and_then(|p| Cached::read(p, key)) };
        let path_text = key.path.map(|p| p.display().to_string()).unwrap_or_default();
        let (fresh, source) = match cached {
            Some(c) => {
                let beats = |rate: f64, limit: f64, beaten: f64| rate > SLACK * limit.max(beaten);
                // A rate kept as having beaten its limit (0 when it did not).
                let beaten = |rate: f64, limit: f64| if rate > SLACK * limit { rate } else { 0.0 };
                if !beats(attained.gbps, c.bandwidth_gbps, c.beaten.gbps)
                    && !beats(attained.gflops, c.fma_gflops, c.beaten.gflops)
                {
                    return Roofline {
                        bandwidth_gbps: c.bandwidth_gbps,
                        fma_gflops: c.fma_gflops,
                        source: format!("cached {path_text} (probed {})", c.probed),
                    };
                }
                let (bw, fma) = sane(probe());
                let fresh = Cached {
                    bandwidth_gbps: c.bandwidth_gbps.max(bw),
                    fma_gflops: c.fma_gflops.max(fma),
                    beaten: Attained {
                        gbps: c.beaten.gbps.max(beaten(attained.gbps, c.bandwidth_gbps)),
                        gflops: c.beaten.gflops.max(beaten(attained.gflops, c.fma_gflops)),
                    },
                    probed: utc_now(),
                };
                (fresh, format!("re-measured (a kernel beat the cached limits) {path_text}"))
            }
            None => {
                let (bw, fma) = sane(probe());
                let fresh = Cached {
                    bandwidth_gbps: bw,
                    fma_gflops: fma,
                    beaten: Attained::default(),
                    probed: utc_now(),
                };
                (fresh, "measured".to_string())
            }
        };
        if let Some(p) = key.path {
            fresh.write(p, key);
        }
        Roofline { bandwidth_gbps: fresh.bandwidth_gbps, fma_gflops: fresh.fma_gflops, source }
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
}

/// A probe's figures, a non-finite or non-positive one made a tiny positive one (a share of
/// it is then large, never NaN or infinite; it is cached as 0, which the next run measures
/// again).
fn sane((bw, fma): (f64, f64)) -> (f64, f64) {
    let fix = |v: f64| if v.is_finite() && v > 0.0 { v } else { 1e-9 };
    (fix(bw), fix(fma))
}

impl Cached {
    /// The cache at `path` if it is of this [`FORMAT`] and matches `key`, every figure
    /// finite; `None` for anything else (a missing, unreadable or malformed file).
    fn read(path: &Path, key: &CacheKey) -> Option<Cached> {
        let bytes = tfn_backend::code_cache::read_cache_file(path, 64 << 10)?;
        let text = String::from_utf8(bytes).ok()?;
        let field = |name: &str| {
            text.lines().find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix('=')))
        };
        if text.lines().next()? != format!("format={FORMAT}")
            || field("cpu")? != key.cpu
            || field("threads")?.parse::<usize>().ok()? != key.threads
        {
            return None;
        }
        let num = |name: &str, min: f64| {
            field(name)?.trim().parse::<f64>().ok().filter(|v| v.is_finite() && *v >= min)
        };
        Some(Cached {
            bandwidth_gbps: num("bandwidth_gbps", f64::MIN_POSITIVE)?,
            fma_gflops: num("fma_gflops", f64::MIN_POSITIVE)?,
            beaten: Attained { gbps: num("beaten_gbps", 0.0)?, gflops: num("beaten_gflops", 0.0)? },
            probed: field("probed")?.to_string(),
        })
    }

    /// Best effort, atomically: the whole file is written to a temporary file beside it,
    /// then renamed over it, so a reader sees the old file or the new one, never a part.
    fn write(&self, path: &Path, key: &CacheKey) {
        static SEQUENCE: AtomicU64 = AtomicU64::new(0);
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else { return };
        if std::fs::create_dir_all(dir).is_err() {
            return;
        }
        let text = format!(
            "format={FORMAT}\ncpu={}\nthreads={}\nprobed={}\nbandwidth_gbps={:.3}\nfma_gflops={:.3}\nbeaten_gbps={:.3}\nbeaten_gflops={:.3}\n",
            key.cpu,
            key.threads,
            self.probed,
            self.bandwidth_gbps,
            self.fma_gflops,
            self.beaten.gbps,
            self.beaten.gflops
        );
        let tmp = dir.join(format!(
            ".{}.{}-{}.tmp",
            name.to_string_lossy(),
            std::process::id(),
            SEQUENCE.fetch_add(1, Ordering::Relaxed)
        ));
        let written = std::fs::File::create(&tmp).and_then(|mut f| {
            f.write_all(text.as_bytes())?;
            f.sync_all()
        });
        if written.and_then(|()| std::fs::rename(&tmp, path)).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
}

/// Bytes per run beyond which a kernel's data cannot stay in cache between runs: twice the
/// last-level cache (`tfn_probes::last_level_cache_bytes`; 256 MB when unknown).
pub(crate) fn beyond_cache_bytes() -> u64 {
    tfn_probes::last_level_cache_bytes().map_or(256 << 20, |b| b.saturating_mul(2))
}

/// Now as `2026-11-27T20:13:05Z`.
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rest) = ((secs / 86_400) as i64, secs % 86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
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
    use std::path::PathBuf;

    /// A scratch cache directory, removed when dropped.
    struct Dir(PathBuf);

    impl Dir {
        fn new(test: &str) -> Dir {
            let d =
                std::env::temp_dir().join(format!("tfn-roofline-{}-{test}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(&d).unwrap();
            Dir(d)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn key(path: &Path) -> CacheKey<'_> {
        CacheKey { path: Some(path), cpu: "cpu A", threads: 1 }
    }

    fn cached(bw: f64, fma: f64) -> Cached {
        Cached {
            bandwidth_gbps: bw,
            fma_gflops: fma,
            beaten: Attained::default(),
            probed: "2026-01-01T00:00:00Z".into(),
        }
    }

    fn attained(gbps: f64, gflops: f64) -> Attained {
        Attained { gbps, gflops }
    }

    /// Resolves with a probe that returns `figures` and counts its runs in `runs`.
    fn resolve(
        path: &Path,
        force: bool,
        seen: Attained,
        figures: (f64, f64),
        runs: &mut usize,
    ) -> Roofline {
        Roofline::resolve(&key(path), force, seen, &mut || {
            *runs += 1;
            figures
        })
    }

    fn limits(r: &Roofline) -> (f64, f64) {
        (r.bandwidth_gbps, r.fma_gflops)
    }

    #[test]
    fn the_override_and_the_cache_round_trip() {
        let r = Roofline::parse_env("fma=117, bandwidth=20.5").unwrap();
        assert_eq!(limits(&r), (20.5, 117.0));
        for bad in ["", "fma=1", "bandwidth=1,fma=x", "bandwidth=1,fma=-3", "bw=1,fma=2"] {
            assert!(Roofline::parse_env(bad).is_none(), "{bad}");
        }
        let dir = Dir::new("round-trip");
        let path = dir.0.join("roofline-1t.txt");
        let c = cached(20.5, 117.0);
        c.write(&path, &key(&path));
        assert_eq!(Cached::read(&path, &key(&path)), Some(c));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("format=2\ncpu=cpu A\nthreads=1\nprobed="), "{text}");
        for (cpu, threads) in [("cpu B", 1), ("cpu A", 2)] {
            let other = CacheKey { path: Some(&path), cpu, threads };
            assert!(Cached::read(&path, &other).is_none(), "another CPU or thread count");
        }
    }

    #[test]
    fn an_absurdly_low_cache_is_replaced_when_a_kernel_beats_it() {
        let dir = Dir::new("absurd");
        let path = dir.0.join("roofline-1t.txt");
        cached(0.7, 6.0).write(&path, &key(&path));
        let mut runs = 0;
        // Kernels within the cached limits (and their slack): the cache is used as it is.
        let r = resolve(&path, false, attained(0.7 * SLACK, 6.0), (20.0, 100.0), &mut runs);
        assert_eq!((limits(&r), runs), ((0.7, 6.0), 0));
        assert!(r.source.starts_with("cached "), "{}", r.source);
        // A kernel at 40 GFLOP/s beats the 6 GFLOP/s peak: both probes run again, once.
        let r = resolve(&path, false, attained(0.0, 40.0), (20.0, 100.0), &mut runs);
        assert_eq!((limits(&r), runs), ((20.0, 100.0), 1));
        assert!(r.source.starts_with("re-measured"), "{}", r.source);
        let back = Cached::read(&path, &key(&path)).unwrap();
        assert_eq!((back.bandwidth_gbps, back.fma_gflops), (20.0, 100.0), "rewritten");
        assert_eq!(back.beaten, attained(0.0, 40.0));
        assert_ne!(back.probed, "2026-01-01T00:00:00Z", "the probe's date is the new one");
        // The next run reads the higher figures.
        let r = resolve(&path, false, attained(0.0, 40.0), (1.0, 1.0), &mut runs);
        assert_eq!((limits(&r), runs), ((20.0, 100.0), 1));
        // A beyond-cache kernel at 50 GB/s beats the 20 GB/s bandwidth: re-probed.
        let r = resolve(&path, false, attained(50.0, 0.0), (30.0, 90.0), &mut runs);
        assert_eq!((limits(&r), runs), ((30.0, 100.0), 2), "the best of the probes is kept");
    }

    #[test]
    fn a_kernel_that_beats_even_a_fresh_probe_causes_one_reprobe_not_one_per_run() {
        let dir = Dir::new("beaten");
        let path = dir.0.join("roofline-1t.txt");
        cached(20.0, 100.0).write(&path, &key(&path));
        let mut runs = 0;
        // Non-temporal stores, say: 28 GB/s where the probe reaches 20.
        for _ in 0..3 {
            let r = resolve(&path, false, attained(28.0, 0.0), (19.0, 99.0), &mut runs);
            assert_eq!(limits(&r), (20.0, 100.0));
        }
        assert_eq!(runs, 1);
        // A kernel beyond that rate (and the slack) probes once more.
        resolve(&path, false, attained(35.0, 0.0), (19.0, 99.0), &mut runs);
        assert_eq!(runs, 2);
    }

    #[test]
    fn a_malformed_or_unreadable_cache_is_measured_again() {
        let dir = Dir::new("malformed");
        let path = dir.0.join("roofline-1t.txt");
        let good = "format=2\ncpu=cpu A\nthreads=1\nprobed=x\nbandwidth_gbps=20\nfma_gflops=100\nbeaten_gbps=0\nbeaten_gflops=0\n";
        let bad: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            vec![0xff, 0xfe, 0x00, b'\n'],
            // The format before versions (no `format=` line): measured again.
            b"cpu=cpu A\nbandwidth_gbps=0.7\nfma_gflops=6\n".to_vec(),
            good.replace("format=2", "format=3").into_bytes(),
            good.replace("fma_gflops=100", "fma_gflops=nan").into_bytes(),
            good.replace("bandwidth_gbps=20", "bandwidth_gbps=-1").into_bytes(),
            good.replace("beaten_gflops=0\n", "").into_bytes(),
            good.as_bytes()[..good.len() / 2].to_vec(),
        ];
        for (i, text) in bad.iter().enumerate() {
            std::fs::write(&path, text).unwrap();
            let mut runs = 0;
            let r = resolve(&path, false, Attained::default(), (21.0, 101.0), &mut runs);
            assert_eq!(
                (limits(&r), runs, r.source.as_str()),
                ((21.0, 101.0), 1, "measured"),
                "{i}"
            );
            let back = Cached::read(&path, &key(&path)).expect("rewritten well-formed");
            assert_eq!((back.bandwidth_gbps, back.fma_gflops), (21.0, 101.0), "{i}");
        }
        std::fs::write(&path, good).unwrap();
        let mut runs = 0;
        assert_eq!(
            limits(&resolve(&path, false, Attained::default(), (1.0, 1.0), &mut runs)),
            (20.0, 100.0)
        );
        assert_eq!(runs, 0, "a well-formed file is read");
        // A directory where the file should be, or a cache directory under a file: measured
        // every time, never a panic.
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        let blocked = dir.0.join("file");
        std::fs::write(&blocked, "x").unwrap();
        for p in [path.clone(), blocked.join("roofline-1t.txt")] {
            for _ in 0..2 {
                let r = resolve(&p, false, Attained::default(), (21.0, 101.0), &mut runs);
                assert_eq!(limits(&r), (21.0, 101.0));
            }
        }
        assert_eq!(runs, 4, "an unwritable cache is no cache");
        // A probe that measured nothing usable still gives finite, positive limits.
        let p = dir.0.join("roofline-2t.txt");
        let r = resolve(&p, false, Attained::default(), (f64::NAN, 0.0), &mut runs);
        assert!(r.bandwidth_gbps > 0.0 && r.fma_gflops > 0.0 && r.fma_gflops.is_finite());
    }

    #[test]
    fn a_forced_reprobe_replaces_the_cache() {
        let dir = Dir::new("forced");
        let path = dir.0.join("roofline-1t.txt");
        cached(500.0, 9000.0).write(&path, &key(&path));
        let mut runs = 0;
        let r = resolve(&path, true, Attained::default(), (20.0, 100.0), &mut runs);
        assert_eq!((limits(&r), runs), ((20.0, 100.0), 1), "lower figures replace the cache");
        let r = resolve(&path, false, Attained::default(), (1.0, 1.0), &mut runs);
        assert_eq!((limits(&r), runs), ((20.0, 100.0), 1));
    }

    #[test]
    fn the_rewrite_is_atomic() {
        let dir = Dir::new("atomic");
        let path = dir.0.join("roofline-1t.txt");
        cached(1.0, 1.0).write(&path, &key(&path));
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            let reader = s.spawn(|| {
                let mut reads = 0u64;
                while !done.load(Ordering::Relaxed) {
                    let c = Cached::read(&path, &key(&path));
                    assert!(c.is_some(), "a reader saw a partial cache file");
                    reads += 1;
                }
                reads
            });
            let writers: Vec<_> = (0..2)
                .map(|w| {
                    let path = &path;
                    s.spawn(move || {
                        for i in 0..100 {
                            let v = (w * 1000 + i + 1) as f64;
                            cached(v, v).write(path, &key(path));
                        }
                    })
                })
                .collect();
            for w in writers {
                w.join().unwrap();
            }
            done.store(true, Ordering::Relaxed);
            assert!(reader.join().unwrap() > 0);
        });
        let left: Vec<_> =
            std::fs::read_dir(&dir.0).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(
            left,
            [std::ffi::OsString::from("roofline-1t.txt")],
            "no temporary file is left"
        );
    }

    #[test]
    fn the_attained_rates_count_only_what_can_be_compared() {
        let beyond = 64 << 20;
        let kernels = [
            // In cache: 1 MB in 10 µs is 100 GB/s, not a memory bandwidth.
            (1 << 20, 1_000, 10e-6),
            // Beyond cache: 128 MiB in 10 ms.
            (128 << 20, 2_000_000, 10e-3),
            // Too short to time: its rates do not count.
            (1 << 30, 1 << 30, 1e-9),
            (0, 0, 0.0),
        ];
        let a = Attained::of(kernels, beyond);
        assert!((a.gbps - (128u64 << 20) as f64 / 10e-3 / 1e9).abs() < 1e-9, "{a:?}");
        assert!((a.gflops - 0.2).abs() < 1e-9, "{a:?}");
        assert!(beyond_cache_bytes() >= 1 << 20);
        let now = utc_now();
        assert_eq!((now.len(), &now[4..5], &now[10..11]), (20, "-", "T"), "{now}");
        assert!(now.as_str() > "2024", "{now}");
    }
}
