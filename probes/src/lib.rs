//! This machine's limits, measured: memory bandwidth (a STREAM triad) and the FMA peak, on a
//! given number of threads — the roof a profile's kernels are compared with
//! (`tfn::Roofline`, `tfnc bench --profile`).
//!
//! - **Bandwidth**: `a[i] = b[i] + s·c[i]` over three arrays of [`BANDWIDTH_FLOATS`] f32 each
//!   (3 × 64 MB, far beyond any cache), `a` written with non-temporal stores where the CPU has
//!   AVX (no write-allocate read), each thread a contiguous share of every array; the best of
//!   [`BANDWIDTH_ROUNDS`] rounds, counted as STREAM counts it (three arrays of 4 bytes per
//!   element).
//! - **FMA peak**: per thread, 24 independent vector FMA chains (the widest vectors the CPU
//!   runs: AVX-512, else AVX2 with FMA, else SSE multiply-adds), long enough to dwarf the
//!   loop; counted as 2 flops per lane.
//!
//! - **Cache**: the size of the last-level cache, as the kernel reports it
//!   ([`last_level_cache_bytes`]).
//!
//! The crate is its own so that it is built optimised in every profile (the workspace's
//! `[profile.dev.package.tfn-probes]`): a debug build's probes measure what a release build's
//! do, as the JIT's kernels they are compared with run as fast in either.

use std::time::{Duration, Instant};

/// Elements of each bandwidth probe array (64 MB of f32).
pub const BANDWIDTH_FLOATS: usize = 16 << 20;
/// Rounds of the bandwidth probe; the fastest counts.
pub const BANDWIDTH_ROUNDS: usize = 5;
/// FMA chain steps per probe call.
const FMA_STEPS: usize = 1 << 22;

/// The best STREAM-triad bandwidth (non-temporal stores where the CPU has AVX) on `threads`
/// threads, in GB/s.
pub fn bandwidth_gbps(threads: usize) -> f64 {
    let threads = threads.max(1);
    let n = BANDWIDTH_FLOATS;
    let mut a = vec![0f32; n];
    let b = vec![1f32; n];
    let c = vec![2f32; n];
    let chunk = n.div_ceil(threads);
    let mut best = Duration::MAX;
    for _ in 0..BANDWIDTH_ROUNDS {
        let start = Instant::now();
        std::thread::scope(|s| {
            for ((a, b), c) in a.chunks_mut(chunk).zip(b.chunks(chunk)).zip(c.chunks(chunk)) {
                s.spawn(move || triad(a, b, c));
            }
        });
        best = best.min(start.elapsed());
        std::hint::black_box(&a);
    }
    (3 * 4 * n) as f64 / best.as_secs_f64().max(1e-9) / 1e9
}

/// `a[i] = b[i] + 3·c[i]`, with non-temporal stores where the CPU has AVX (as tfn's streamed
/// outputs write, `tfn-backend`'s `executor/streamed.rs`): the fastest a kernel can write.
fn triad(a: &mut [f32], b: &[f32], c: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: AVX was just detected.
        return unsafe { triad_avx(a, b, c) };
    }
    for ((a, b), c) in a.iter_mut().zip(b).zip(c) {
        *a = b + 3.0 * c;
    }
}

/// [`triad`] with 256-bit non-temporal stores on the 32-byte aligned part of `a`.
///
/// # Safety
/// The CPU must have AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn triad_avx(a: &mut [f32], b: &[f32], c: &[f32]) {
    use std::arch::x86_64::{_mm256_add_ps, _mm256_loadu_ps, _mm256_mul_ps, _mm256_set1_ps};
    use std::arch::x86_64::{_mm256_stream_ps, _mm_sfence};
    let n = a.len().min(b.len()).min(c.len());
    let head = a.as_ptr().align_offset(32).min(n);
    let body = head + (n - head) / 8 * 8;
    let k = _mm256_set1_ps(3.0);
    for i in (0..head).chain(body..n) {
        a[i] = b[i] + 3.0 * c[i];
    }
    for i in (head..body).step_by(8) {
        // SAFETY: `i + 8 <= n`, inside the three slices; `a + i` is 32-byte aligned.
        unsafe {
            let x = _mm256_add_ps(
                _mm256_loadu_ps(b.as_ptr().add(i)),
                _mm256_mul_ps(k, _mm256_loadu_ps(c.as_ptr().add(i))),
            );
            _mm256_stream_ps(a.as_mut_ptr().add(i), x);
        }
    }
    _mm_sfence();
}

/// The FMA peak on `threads` threads (each running the probe at once), in GFLOP/s.
pub fn fma_gflops(threads: usize) -> f64 {
    let threads = threads.max(1);
    let round = || {
        let start = Instant::now();
        let flops: f64 = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads).map(|_| s.spawn(fma_chains)).collect();
            handles.into_iter().map(|h| h.join().unwrap_or(0.0)).sum()
        });
        flops / start.elapsed().as_secs_f64().max(1e-9) / 1e9
    };
    (0..3).map(|_| round()).fold(0.0, f64::max)
}

/// Runs the widest FMA probe this CPU has; returns the flops it did.
fn fma_chains() -> f64 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: AVX-512F was just detected.
            return unsafe { chains_avx512() };
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: AVX2 and FMA were just detected.
            return unsafe { chains_avx2() };
        }
    }
    chains_portable()
}

/// `chains!(fma, splat, ty, lanes)`: 24 independent FMA chains held in 24 named registers
/// (an array would be spilled: store-to-load forwarding then bounds the loop, not the FMAs).
macro_rules! chains {
    ($fma:ident, $splat:ident, $lanes:expr) => {{
        use std::arch::x86_64::*;
        let m = $splat(0.999_999);
        let k = $splat(1e-7);
        let (mut a0, mut a1, mut a2, mut a3, mut a4, mut a5) =
            ($splat(1.0), $splat(1.0), $splat(1.0), $splat(1.0), $splat(1.0), $splat(1.0));
        let (mut a6, mut a7, mut a8, mut a9, mut a10, mut a11) =
            ($splat(1.0), $splat(1.0), $splat(1.0), $splat(1.0), $splat(1.0), $splat(1.0));
        let (mut b0, mut b1, mut b2, mut b3, mut b4, mut b5) =
            ($splat(1.0), $splat(1.0), $splat(1.0), $splat(1.0), $splat(1.0), $splat(1.0));
        let (mut b6, mut b7, mut b8, mut b9, mut b10, mut b11) =
            ($splat(1.0), $splat(1.0), $splat(1.0), $splat(1.0), $splat(1.0), $splat(1.0));
        for _ in 0..FMA_STEPS {
            a0 = $fma(a0, m, k);
            a1 = $fma(a1, m, k);
            a2 = $fma(a2, m, k);
            a3 = $fma(a3, m, k);
            a4 = $fma(a4, m, k);
            a5 = $fma(a5, m, k);
            a6 = $fma(a6, m, k);
            a7 = $fma(a7, m, k);
            a8 = $fma(a8, m, k);
            a9 = $fma(a9, m, k);
            a10 = $fma(a10, m, k);
            a11 = $fma(a11, m, k);
            b0 = $fma(b0, m, k);
            b1 = $fma(b1, m, k);
            b2 = $fma(b2, m, k);
            b3 = $fma(b3, m, k);
            b4 = $fma(b4, m, k);
            b5 = $fma(b5, m, k);
            b6 = $fma(b6, m, k);
            b7 = $fma(b7, m, k);
            b8 = $fma(b8, m, k);
            b9 = $fma(b9, m, k);
            b10 = $fma(b10, m, k);
            b11 = $fma(b11, m, k);
        }
        std::hint::black_box([a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11]);
        std::hint::black_box([b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11]);
        (FMA_STEPS * 24 * $lanes * 2) as f64
    }};
}

/// 24 chains of 16-lane FMAs.
///
/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn chains_avx512() -> f64 {
    chains!(_mm512_fmadd_ps, _mm512_set1_ps, 16)
}

/// 24 chains of 8-lane FMAs.
///
/// # Safety
/// The CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn chains_avx2() -> f64 {
    chains!(_mm256_fmadd_ps, _mm256_set1_ps, 8)
}

/// 24 chains of 4-lane multiply-adds the compiler vectorises as it can.
fn chains_portable() -> f64 {
    let mut acc = [[1f32; 4]; 24];
    for _ in 0..FMA_STEPS / 4 {
        for a in acc.iter_mut() {
            for x in a.iter_mut() {
                *x = *x * 0.999_999 + 1e-7;
            }
        }
    }
    std::hint::black_box(&acc);
    (FMA_STEPS / 4 * 24 * 4 * 2) as f64
}

/// The size of this CPU's last-level cache in bytes: the largest cache
/// `/sys/devices/system/cpu/cpu0/cache/index*/size` lists (`None` where it lists none).
pub fn last_level_cache_bytes() -> Option<u64> {
    std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache")
        .ok()?
        .filter_map(|e| {
            let size = std::fs::read_to_string(e.ok()?.path().join("size")).ok()?;
            parse_cache_size(size.trim())
        })
        .max()
}

/// A sysfs cache size: `32768K`, `2M`, `512` (bytes); `None` for anything else or zero.
pub fn parse_cache_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let (digits, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => text.split_at(i),
        None => (text, ""),
    };
    let n: u64 = digits.parse().ok()?;
    let scale = match unit {
        "" => 1,
        "K" | "k" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(scale).filter(|&b| b > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_sizes_parse_as_sysfs_writes_them() {
        assert_eq!(parse_cache_size("32768K\n"), Some(32 << 20));
        assert_eq!(parse_cache_size("2M"), Some(2 << 20));
        assert_eq!(parse_cache_size("4096"), Some(4096));
        for bad in ["", "K", "lots", "12Q", "-1K", "0K", "99999999999999999999G"] {
            assert_eq!(parse_cache_size(bad), None, "{bad:?}");
        }
        assert!(last_level_cache_bytes().is_none_or(|b| b > 0));
    }

    #[test]
    fn the_probes_measure_something_finite() {
        let f = fma_gflops(1);
        assert!(f.is_finite() && f > 0.1, "{f} GFLOP/s");
    }
}
