//! Statistical checks of `rand_like`/`randn_like`'s definition (`tfn_ir::random` on Philox
//! words; the JIT equals it bit for bit, see `tests/random.rs`), on 2^20 samples per check with
//! fixed keys, so the test is deterministic.
//!
//! Thresholds are 6 standard errors for moments and correlations (a correct generator fails
//! one with probability 2·10⁻⁹ for a random key) and `√n · D > 3` for the Kolmogorov–Smirnov
//! statistic (asymptotic probability `2·Σ(−1)^(k−1)·e^(−2k²·9) ≈ 3.0·10⁻⁸`). Over the 23
//! checks below (4 KS, 19 at 6σ), a correct generator fails with probability ≈ 1.6·10⁻⁷.

use tfn_ir::interp::random::element;
use tfn_ir::RandomDist;

const N: usize = 1 << 20;

fn samples(dist: RandomDist, double: bool, key: &[i64], n: usize) -> Vec<f64> {
    (0..n as u64)
        .map(|i| {
            if double {
                element::<f64>(dist, key, i)
            } else {
                f64::from(element::<f32>(dist, key, i))
            }
        })
        .collect()
}

fn mean_var(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    (mean, var)
}

/// Kolmogorov–Smirnov statistic `D = sup |F_n − F|` of `x` against the CDF `cdf`.
fn ks(mut x: Vec<f64>, cdf: impl Fn(f64) -> f64) -> f64 {
    x.sort_by(f64::total_cmp);
    let n = x.len() as f64;
    let mut d = 0f64;
    for (i, &v) in x.iter().enumerate() {
        let f = cdf(v);
        d = d.max((f - i as f64 / n).abs()).max(((i + 1) as f64 / n - f).abs());
    }
    d
}

fn normal_cdf(z: f64) -> f64 {
    0.5 * (1.0 + libm::erf(z / std::f64::consts::SQRT_2))
}

fn correlation(a: &[f64], b: &[f64]) -> f64 {
    let (ma, va) = mean_var(a);
    let (mb, vb) = mean_var(b);
    let cov = a.iter().zip(b).map(|(x, y)| (x - ma) * (y - mb)).sum::<f64>() / a.len() as f64;
    cov / (va * vb).sqrt()
}

const KS_LIMIT: f64 = 3.0;
const SIGMAS: f64 = 6.0;

#[test]
fn uniform_moments_and_ks() {
    for double in [false, true] {
        let x = samples(RandomDist::Uniform, double, &[20_261_123, 1], N);
        assert!(x.iter().all(|&v| (0.0..1.0).contains(&v)), "outside [0, 1)");
        let (mean, var) = mean_var(&x);
        let n = N as f64;
        // Var(U) = 1/12; Var((U − ½)²) = 1/80 − 1/144.
        let mean_se = (1.0 / 12.0 / n).sqrt();
        let var_se = ((1.0 / 80.0 - 1.0 / 144.0) / n).sqrt();
        assert!((mean - 0.5).abs() < SIGMAS * mean_se, "double {double}: mean {mean}");
        assert!((var - 1.0 / 12.0).abs() < SIGMAS * var_se, "double {double}: var {var}");
        let d = ks(x, |v| v.clamp(0.0, 1.0));
        assert!(d * n.sqrt() < KS_LIMIT, "double {double}: KS √n·D = {}", d * n.sqrt());
    }
}

#[test]
fn normal_moments_and_ks() {
    for double in [false, true] {
        let x = samples(RandomDist::Normal, double, &[7], N);
        let n = N as f64;
        let (mean, var) = mean_var(&x);
        // Var(Z) = 1, Var(Z²) = 2, and for the fourth moment E[Z⁴] = 3 with Var(Z⁴) = 96.
        assert!(mean.abs() < SIGMAS / n.sqrt(), "double {double}: mean {mean}");
        assert!((var - 1.0).abs() < SIGMAS * (2.0 / n).sqrt(), "double {double}: var {var}");
        let m4 = x.iter().map(|v| v.powi(4)).sum::<f64>() / n;
        assert!((m4 - 3.0).abs() < SIGMAS * (96.0 / n).sqrt(), "double {double}: E[z^4] {m4}");
        let d = ks(x, normal_cdf);
        eprintln!(
            "normal double={double}: mean {mean:.5} var {var:.5} E[z^4] {m4:.4} √n·D {:.3}",
            d * n.sqrt()
        );
        assert!(d * n.sqrt() < KS_LIMIT, "double {double}: KS √n·D = {}", d * n.sqrt());
    }
}

/// Streams of different keys (neighbouring seeds, the two words of a `[2]` key, `[s, t]` and
/// `[s, t+1]` as a training loop uses them) are uncorrelated, and so are adjacent elements of
/// one stream.
#[test]
fn keys_and_neighbours_are_independent() {
    let n = N as f64;
    let limit = SIGMAS / n.sqrt();
    let streams: Vec<(&[i64], &[i64])> = vec![
        (&[1], &[2]),
        (&[0, 0], &[0, 1]),
        (&[0, 0], &[1, 0]),
        (&[12_345, 99], &[12_345, 100]),
        (&[-1, 0], &[i64::MAX, 0]),
    ];
    // (Normal values are a function of the same words: one pair checks them too.)
    for (k, (a, b)) in streams.into_iter().enumerate() {
        let dists: &[RandomDist] = if k == 1 {
            &[RandomDist::Uniform, RandomDist::Normal]
        } else {
            &[RandomDist::Uniform]
        };
        for &dist in dists {
            let (x, y) = (samples(dist, false, a, N), samples(dist, false, b, N));
            let r = correlation(&x, &y);
            assert!(r.abs() < limit, "{dist:?} keys {a:?} and {b:?}: correlation {r}");
        }
    }
    for dist in [RandomDist::Uniform, RandomDist::Normal] {
        let x = samples(dist, true, &[3, 3], N + 1);
        let r = correlation(&x[..N], &x[1..]);
        assert!(r.abs() < limit, "{dist:?}: lag-1 correlation {r}");
    }
    // Not a stream shift of another key: element i of key k is not element i+1 of any key.
    let (x, y) = (
        samples(RandomDist::Uniform, false, &[5], N + 1),
        samples(RandomDist::Uniform, false, &[5, 1], N),
    );
    let r = correlation(&x[1..], &y);
    assert!(r.abs() < limit, "shifted: {r}");
}
