//! Accuracy of the inline math functions (`tfn_backend::math`) against libm references.
//!
//! Each function is JIT-compiled into a small kernel — an `f32x4`/`f64x2` loop body plus a scalar
//! tail, exactly the shape the kernel code generator emits — and run over:
//! - `f32`: a dense sweep of bit patterns (every `F32_STRIDE`-th pattern, all signs and
//!   exponents, plus ±0, ±inf, NaN, denormals and the extremes), compared with the correctly
//!   rounded result (libm's `f64` function rounded to `f32`): at most 4 ULP, and the same
//!   NaN/infinity classification as libm;
//! - `f64`: random bit patterns, in-range and per-binade samples and each function's
//!   regime boundaries (with neighbours) compared with libm's `f64` functions: at most 4 ULP
//!   (0 for `sqrt`, `1/x`), with and without `fma`;
//! - `pow`: a grid of `x` values against a set of `y` values covering every C99 special case;
//!   for `f64` also every special against every special, `(x, y)` pairs spread over the whole
//!   result range (overflow, denormals, `x` near 1 against huge `y`) within 1 ULP of libm, and
//!   exactly representable powers (`pow(2, 3) = 8`) bit-exact.
//! - `atan2`: every special against every special (C99 quadrants, signed zeros, infinities),
//!   ratios near the reduction's boundaries in all quadrants and random bit pairs, `f32` against
//!   the correctly rounded result and `f64` against libm, both within 4 ULP.
//!
//! Set `TFN_MATH_STRIDE=1` for the exhaustive `f32` run (all 2³² inputs per function and
//! variant: ~10 min per variant in an optimised build), `TFN_MATH_ONLY=sin,cos` to restrict the
//! `f32` sweep to some functions. The measured maxima are printed (`cargo test -- --nocapture`).

use crate::math_jit;

use cranelift::codegen::ir::{types, AbiParam, Opcode};
use cranelift::codegen::Context;
use cranelift::frontend::{FunctionBuilder, FunctionBuilderContext};
use math_jit::{build_loop, run, Jit, Kernel};
use tfn_backend::math::{emit, MathConsts, MathError, MathFeatures, MathFn};
use tfn_test_utils::Rng;

/// Default sweep stride over the 2³² `f32` bit patterns (prime, so every exponent and many
/// mantissa patterns are hit): ~8.4M inputs per function.
const F32_STRIDE: u64 = 509;
/// ULP bound for every `f32` function.
const F32_MAX_ULP: u64 = 4;

/// Distance in units in the last place between two finite floats given as ordered integers.
fn ordered32(v: f32) -> i64 {
    let bits = v.to_bits();
    if bits >> 31 == 1 {
        -i64::from(bits & 0x7fff_ffff)
    } else {
        i64::from(bits)
    }
}

fn ordered64(v: f64) -> i128 {
    let bits = v.to_bits();
    if bits >> 63 == 1 {
        -i128::from(bits & 0x7fff_ffff_ffff_ffff)
    } else {
        i128::from(bits)
    }
}

/// ULP error of `got` against `want`, `None` when their NaN/infinity/signed-zero classes differ.
fn ulp32(got: f32, want: f32) -> Option<u64> {
    if want == 0.0 && got == 0.0 {
        return (want.is_sign_negative() == got.is_sign_negative()).then_some(0);
    }
    if want.is_nan() || got.is_nan() || want.is_infinite() || got.is_infinite() {
        let same = (want.is_nan() && got.is_nan()) || want == got;
        return same.then_some(0);
    }
    Some(ordered32(got).abs_diff(ordered32(want)))
}

fn ulp64(got: f64, want: f64) -> Option<u64> {
    if want == 0.0 && got == 0.0 {
        return (want.is_sign_negative() == got.is_sign_negative()).then_some(0);
    }
    if want.is_nan() || got.is_nan() || want.is_infinite() || got.is_infinite() {
        let same = (want.is_nan() && got.is_nan()) || want == got;
        return same.then_some(0);
    }
    Some(u64::try_from(ordered64(got).abs_diff(ordered64(want))).unwrap_or(u64::MAX))
}

fn sigmoid64(x: f64) -> f64 {
    if x < 0.0 {
        let e = libm::exp(x);
        e / (1.0 + e)
    } else {
        1.0 / (1.0 + libm::exp(-x))
    }
}

/// The libm `f64` reference of a unary function.
fn reference(f: MathFn, x: f64) -> f64 {
    match f {
        MathFn::Exp | MathFn::ExpNonPositive => libm::exp(x),
        MathFn::Expm1 => libm::expm1(x),
        MathFn::Log => libm::log(x),
        MathFn::Log2 => libm::log2(x),
        MathFn::Log1p => libm::log1p(x),
        MathFn::Tanh => libm::tanh(x),
        MathFn::Sigmoid => sigmoid64(x),
        MathFn::Erf => libm::erf(x),
        MathFn::Sin => libm::sin(x),
        MathFn::Cos => libm::cos(x),
        MathFn::Rsqrt => 1.0 / libm::sqrt(x),
        MathFn::Sqrt => libm::sqrt(x),
        MathFn::Reciprocal => 1.0 / x,
        MathFn::Asin => libm::asin(x),
        MathFn::Acos => libm::acos(x),
        MathFn::Atan => libm::atan(x),
        MathFn::Sinh => libm::sinh(x),
        MathFn::Cosh => libm::cosh(x),
        MathFn::Pow | MathFn::Atan2 => f64::NAN,
    }
}

/// Whether `x` is in the domain where `f` is specified (`exp_non_positive`: `x ≤ 0` or NaN).
fn in_domain(f: MathFn, x: f64) -> bool {
    f != MathFn::ExpNonPositive || x <= 0.0 || x.is_nan()
}

/// Worst case seen by a sweep.
#[derive(Default)]
struct Worst {
    ulp: u64,
    at: f64,
    count: u64,
    mismatches: Vec<String>,
}

impl Worst {
    fn note(&mut self, ulp: Option<u64>, x: f64, got: f64, want: f64) {
        self.count += 1;
        match ulp {
            Some(u) if u > self.ulp => {
                self.ulp = u;
                self.at = x;
            }
            Some(_) => {}
            None if self.mismatches.len() < 8 => {
                self.mismatches.push(format!("x = {x:e}: got {got:e}, want {want:e}"));
            }
            None => {}
        }
    }
}

/// Every unary function of the table (a new row is swept without being listed here).
fn unary() -> impl Iterator<Item = MathFn> {
    MathFn::ALL.iter().copied().filter(|f| f.arity() == 1)
}

fn special_f32() -> Vec<f32> {
    let mut v = vec![
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::MIN,
        f32::EPSILON,
        1.0,
        -1.0,
        f32::from_bits(1),
        f32::from_bits(0x807f_ffff),
        88.72283,
        88.72284,
        -87.33654,
        -103.97208,
        -104.0,
        0.625,
        0.84375,
        3.92,
        4.0,
        0.414_213_57,
        2.414_213_7,
        89.415_98,
        0.999_999_94,
    ];
    v.extend(v.clone().iter().map(|x| -x));
    v
}

/// `TFN_MATH_STRIDE` if set (applies to every variant), else `default`.
fn f32_stride(default: u64) -> u64 {
    std::env::var("TFN_MATH_STRIDE").ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

/// Whether `TFN_MATH_ONLY` (comma-separated names, e.g. `sin,cos`) selects `f`; all if unset.
fn selected(f: MathFn) -> bool {
    std::env::var("TFN_MATH_ONLY").map_or(true, |only| only.split(',').any(|n| n == f.name()))
}

/// Sweeps an `f32` unary function; returns its worst case.
fn sweep_f32(kernel: Kernel, f: MathFn, stride: u64) -> Worst {
    let mut worst = Worst::default();
    let mut check = |xs: &[f32]| {
        let got = run(kernel, xs, xs);
        for (&x, &g) in xs.iter().zip(&got) {
            if !in_domain(f, f64::from(x)) {
                continue;
            }
            let want = reference(f, f64::from(x)) as f32;
            worst.note(ulp32(g, want), f64::from(x), f64::from(g), f64::from(want));
        }
    };
    check(&special_f32());
    let chunk = 1 << 20;
    let mut xs = Vec::with_capacity(chunk);
    let mut bits = 0u64;
    while bits <= u64::from(u32::MAX) {
        xs.push(f32::from_bits(bits as u32));
        if xs.len() == chunk {
            check(&xs);
            xs.clear();
        }
        bits += stride;
    }
    // Odd length: exercises the scalar tail.
    xs.push(1.5);
    check(&xs);
    worst
}

/// Prints one line of the accuracy table (`cargo test -- --nocapture` shows them).
fn report(label: &str, w: &Worst) {
    eprintln!("{label:<24} max {:>5} ULP at x = {:<14e} ({} inputs)", w.ulp, w.at, w.count);
}

#[test]
fn f32_functions_are_within_4_ulp_of_correctly_rounded() {
    let mut jit = Jit::new();
    let native = jit.features();
    let mut failures = Vec::new();
    let variants = if native.fma {
        vec![
            (native, f32_stride(F32_STRIDE)),
            (MathFeatures { fma: false }, f32_stride(4 * F32_STRIDE + 1)),
        ]
    } else {
        vec![(native, f32_stride(F32_STRIDE))]
    };
    for (features, stride) in variants {
        for f in unary().filter(|&f| selected(f)) {
            let kernel = jit.kernel(f, types::F32, features);
            let w = sweep_f32(kernel, f, stride);
            let label = format!("{}/f32{}", f.name(), if features.fma { "+fma" } else { "" });
            report(&label, &w);
            if w.ulp > F32_MAX_ULP || !w.mismatches.is_empty() {
                failures.push(format!("{label}: {} ULP at {:e}; {:?}", w.ulp, w.at, w.mismatches));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// `f64` inputs: specials, random bit patterns, uniform samples of `[-range, range]`,
/// log-uniform samples over every binade (denormals included), and the function's
/// [`f64_specials`] with their neighbours a few ULP away.
fn f64_inputs(f: Option<MathFn>, range: f64, n: usize) -> Vec<f64> {
    let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
    let mut xs = vec![
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -f64::NAN,
        f64::MIN_POSITIVE,
        f64::from_bits(1),
        f64::from_bits(0x000f_ffff_ffff_ffff),
        f64::MAX,
        f64::MIN,
        f64::EPSILON,
        1.0,
        -1.0,
        709.78,
        709.79,
        -745.2,
        -708.4,
    ];
    for x in f.map(f64_specials).unwrap_or_default() {
        for d in -3i64..=3 {
            let near = f64::from_bits(x.to_bits().wrapping_add_signed(d));
            xs.extend([near, -near]);
        }
    }
    for _ in 0..n {
        xs.push(f64::from_bits(rng.next_u64()));
        xs.push(rng.uniform(-range, range));
        xs.push(rng.uniform(-1.0, 1.0) * 2f64.powi((rng.next_u64() % 60) as i32 - 50));
        let binade = (rng.next_u64() % 2098) as i32 - 1074;
        xs.push(
            rng.uniform(-2.0, 2.0)
                * 2f64.powi(binade.max(-1022))
                * 2f64.powi(binade.min(-1022) + 1022),
        );
    }
    xs
}

/// Inputs where `f`'s approximation changes regime: thresholds of overflow, underflow and
/// denormal results, clamps, polynomial interval ends, multiples of π/2, the neighbourhood of
/// 0 and 1.
fn f64_specials(f: MathFn) -> Vec<f64> {
    use std::f64::consts::{FRAC_PI_2, LN_2};
    let mut v = vec![1e-300, 1e-100, 1e-20, 1e-10, 1e-5, 0.5, 1.0, 2.0, 10.0, LN_2, 0.5 * LN_2];
    match f {
        MathFn::Exp | MathFn::ExpNonPositive | MathFn::Expm1 | MathFn::Sigmoid => v.extend([
            709.782_712_893_384,
            709.9,
            -708.396_418_532_264_1,
            -744.440_072_232_192_3,
            -745.133_219_101_941_1,
            -746.0,
            40.0,
            36.7,
            18.0,
            37.0 * LN_2,
            1075.0 * LN_2,
        ]),
        MathFn::Log | MathFn::Log2 | MathFn::Log1p => {
            v.extend([
                0.75,
                1.5,
                1024.0,
                2f64.powi(-1030),
                0.999_999_999,
                1.000_000_001,
                std::f64::consts::SQRT_2,
                std::f64::consts::FRAC_1_SQRT_2,
                1e300,
            ]);
            v.extend((1..40).map(|k| 1.0 + f64::from(k) * f64::EPSILON));
            v.extend((1..40).map(|k| 1.0 - f64::from(k) * f64::EPSILON / 2.0));
        }
        MathFn::Tanh => v.extend([0.55, 0.625, 1.0, 19.06, 22.0, 0.0001]),
        MathFn::Erf => v.extend([0.84375, 1.25, 2.857_142_857_142_857, 5.9, 6.0, 1e-8]),
        MathFn::Sin | MathFn::Cos => {
            v.extend((1..4000).map(|k| f64::from(k) * FRAC_PI_2));
            v.extend((0..40).map(|k| 2f64.powi(k) * std::f64::consts::PI));
        }
        MathFn::Rsqrt | MathFn::Sqrt | MathFn::Reciprocal => v.extend([4.0, 0.25, 1e300, 1e-310]),
        MathFn::Asin | MathFn::Acos => {
            v.extend([std::f64::consts::FRAC_1_SQRT_2, 0.999_999, 1e-8, 0.75, 0.25]);
            v.extend((1..40).map(|k| 1.0 - f64::from(k) * f64::EPSILON / 2.0));
        }
        MathFn::Atan | MathFn::Atan2 => {
            v.extend([0.414_213_562_373_095_03, 2.414_213_562_373_095, 0.4375, 2f64.powi(60)]);
            v.extend([1e300, 1e20, 3.0, 1e-300]);
        }
        MathFn::Sinh | MathFn::Cosh => v.extend([
            0.5 * LN_2,
            22.0,
            88.72,
            89.41,
            89.415_986_5,
            89.5,
            709.78,
            710.475_860_073_943_9,
            710.476,
            710.6,
            1e-8,
        ]),
        MathFn::Pow => {}
    }
    v
}

/// Per-function ULP bounds for `f64` against libm (which is itself within 1 ULP): the `f32`
/// functions' standard of 4 ULP, 0 for the correctly rounded `sqrt` and `1/x`.
fn f64_bound(f: MathFn) -> u64 {
    match f {
        MathFn::Sqrt | MathFn::Reciprocal => 0,
        _ => F32_MAX_ULP,
    }
}

/// The feature sets to test: native, and without `fma` when the host has it.
fn variants(native: MathFeatures) -> Vec<MathFeatures> {
    if native.fma {
        vec![native, MathFeatures { fma: false }]
    } else {
        vec![native]
    }
}

#[test]
fn f64_functions_are_within_4_ulp_of_libm() {
    let mut jit = Jit::new();
    let mut failures = Vec::new();
    for features in variants(jit.features()) {
        for f in unary() {
            let kernel = jit.kernel(f, types::F64, features);
            let range = match f {
                MathFn::Exp | MathFn::ExpNonPositive | MathFn::Expm1 | MathFn::Sigmoid => 750.0,
                MathFn::Sinh | MathFn::Cosh => 750.0,
                MathFn::Asin | MathFn::Acos => 1.0,
                MathFn::Sin | MathFn::Cos => 1e5,
                _ => 20.0,
            };
            let xs = f64_inputs(Some(f), range, 100_000);
            let got = run(kernel, &xs, &xs);
            let mut w = Worst::default();
            for (&x, &g) in xs.iter().zip(&got) {
                if !in_domain(f, x) {
                    continue;
                }
                let want = reference(f, x);
                w.note(ulp64(g, want), x, g, want);
            }
            let label = format!("{}/f64{}", f.name(), if features.fma { "+fma" } else { "" });
            report(&label, &w);
            if w.ulp > f64_bound(f) || !w.mismatches.is_empty() {
                failures.push(format!("{label}: {} ULP at {:e}; {:?}", w.ulp, w.at, w.mismatches));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// `y` values for `pow`: every C99 special case plus integers, halves and random exponents.
fn pow_exponents() -> Vec<f64> {
    let mut ys = vec![0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, 3.0, -3.0, 1e10, -1e10, 16777217.0];
    ys.extend([f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 2.5, -2.5, 7.0, -7.0, 1e-7]);
    ys.extend([2f64.powi(31) + 1.0, -(2f64.powi(31) + 1.0), 2f64.powi(64) * 1.5, 1e300, -1e300]);
    ys.extend([9007199254740993.0, 9007199254740991.0, -9007199254740991.0, 1e-300, 1075.0]);
    let mut rng = Rng::new(42);
    for _ in 0..24 {
        ys.push((rng.uniform(-40.0, 40.0) as f32).into());
    }
    for _ in 0..12 {
        ys.push(rng.uniform(-1.0, 1.0) * 10f64.powf(rng.uniform(-8.0, 8.0)));
    }
    ys
}

/// `(x, y)` pairs whose `xʸ` is spread over the whole exponent range, overflow and
/// gradual underflow included: `y` log-uniform, `x = 2^(z/y)` for a target `z ∈ [−1080, 1030]`,
/// with negative `x` for integer `y`; plus `x` within a few ULP of 1 against huge `y`.
fn pow_pairs(n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut rng = Rng::new(0x5eed);
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for i in 0..n {
        let mut y = rng.uniform(-1.0, 1.0) * 10f64.powf(rng.uniform(-3.0, 3.0));
        if i % 4 == 0 {
            y = y.round();
        }
        let z = rng.uniform(-1080.0, 1030.0);
        let mut x = (z / y).exp2();
        if i % 8 == 0 && y.fract() == 0.0 {
            x = -x;
        }
        xs.push(x);
        ys.push(y);
        let near =
            f64::from_bits(1f64.to_bits().wrapping_add_signed((rng.next_u64() % 64) as i64 - 32));
        xs.push(near);
        ys.push(rng.uniform(-1.0, 1.0) * 10f64.powf(rng.uniform(9.0, 20.0)));
    }
    (xs, ys)
}

/// Powers that are exactly representable, which `pow` must return exactly: integer bases to
/// non-negative integer powers below 2⁵³, powers of two (positive and negative exponents,
/// denormal results included), and small dyadic bases.
fn exact_powers() -> Vec<(f64, f64, f64)> {
    let mut out = Vec::new();
    for base in -30i64..=30 {
        let mut acc: i128 = 1;
        for e in 0..=60u32 {
            if acc.abs() >= 1 << 53 {
                break;
            }
            out.push((base as f64, f64::from(e), acc as f64));
            acc *= i128::from(base);
        }
    }
    for k in [-3i32, -2, -1, 1, 2, 5] {
        for e in -400..=400 {
            let p = k * e;
            if (-1074..=1023).contains(&p) {
                let value = 2f64.powi(p.max(-1000)) * 2f64.powi(p.min(-1000) + 1000);
                out.push((2f64.powi(k), f64::from(e), value));
                if e % 2 != 0 {
                    out.push((-(2f64.powi(k)), f64::from(e), -value));
                }
            }
        }
    }
    for (base, value) in [(1.5f64, 1.5f64), (0.75, 0.75), (-2.5, -2.5)] {
        let mut acc = 1.0f64;
        for e in 0..=20 {
            out.push((base, f64::from(e), acc));
            acc *= value;
        }
    }
    out
}

#[test]
fn pow_matches_c99_and_is_accurate() {
    let mut jit = Jit::new();
    let native = jit.features();
    let stride = f32_stride(F32_STRIDE) * 64 + 1;
    let ys = pow_exponents();
    let mut failures = Vec::new();
    // f32: x sweeps all bit patterns with a stride, against each y.
    let kernel = jit.kernel(MathFn::Pow, types::F32, native);
    let mut xs32: Vec<f32> = (0..=u64::from(u32::MAX))
        .step_by(stride as usize)
        .map(|b| f32::from_bits(b as u32))
        .collect();
    xs32.extend(special_f32());
    xs32.extend([0.5f32, 2.0, -2.0, -0.5, 1.0000001, 0.99999994]);
    let mut w = Worst::default();
    for &y in &ys {
        let y = y as f32;
        let yv = vec![y; xs32.len()];
        let got = run(kernel, &xs32, &yv);
        for (&x, &g) in xs32.iter().zip(&got) {
            let want = libm::pow(f64::from(x), f64::from(y)) as f32;
            let ulp = ulp32(g, want);
            if ulp.is_none_or(|u| u > F32_MAX_ULP) && w.mismatches.len() < 8 {
                w.mismatches.push(format!("pow({x:e}, {y:e}) = {g:e}, want {want:e}"));
            }
            w.note(ulp.or(Some(0)), f64::from(x), f64::from(g), f64::from(want));
        }
    }
    report("pow/f32", &w);
    if w.ulp > F32_MAX_ULP || !w.mismatches.is_empty() {
        failures.push(format!("pow/f32: {} ULP; {:?}", w.ulp, w.mismatches));
    }
    // f64: within 1 ULP of libm's (fdlibm's, itself under 1 ULP) everywhere, special cases
    // and exactly representable powers exact.
    let mut specials: Vec<f64> = f64_inputs(None, 10.0, 0);
    specials.extend([
        0.5,
        2.0,
        -2.0,
        -0.5,
        1.5,
        3.0,
        10.0,
        1.0 + f64::EPSILON,
        1.0 - f64::EPSILON / 2.0,
    ]);
    let grid = f64_inputs(None, 10.0, 20_000);
    let (pair_x, pair_y) = pow_pairs(100_000);
    let exact = exact_powers();
    for features in variants(native) {
        let kernel = jit.kernel(MathFn::Pow, types::F64, features);
        let suffix = if features.fma { "+fma" } else { "" };
        let mut w = Worst::default();
        let check = |xs: &[f64], ys: &[f64], w: &mut Worst| {
            let got = run(kernel, xs, ys);
            for ((&x, &y), &g) in xs.iter().zip(ys).zip(&got) {
                let want = libm::pow(x, y);
                let ulp = ulp64(g, want);
                if ulp.is_none() && w.mismatches.len() < 8 {
                    w.mismatches.push(format!("pow({x:e}, {y:e}) = {g:e}, want {want:e}"));
                }
                w.note(ulp.or(Some(0)), x, g, want);
            }
        };
        for &y in &ys {
            check(&grid, &vec![y; grid.len()], &mut w);
        }
        // Every special against every special (C99 Annex F).
        for &y in specials.iter().chain(&ys) {
            check(&specials, &vec![y; specials.len()], &mut w);
        }
        check(&pair_x, &pair_y, &mut w);
        report(&format!("pow/f64{suffix}"), &w);
        if w.ulp > 1 || !w.mismatches.is_empty() {
            failures
                .push(format!("pow/f64{suffix}: {} ULP at {:e}; {:?}", w.ulp, w.at, w.mismatches));
        }
        let (bx, by): (Vec<f64>, Vec<f64>) = exact.iter().map(|&(x, y, _)| (x, y)).unzip();
        let got = run(kernel, &bx, &by);
        let inexact: Vec<String> = exact
            .iter()
            .zip(&got)
            .filter(|((_, _, want), g)| g.to_bits() != want.to_bits())
            .take(8)
            .map(|((x, y, want), g)| format!("pow({x}, {y}) = {g:e}, want {want:e}"))
            .collect();
        eprintln!("pow/f64{suffix} exact powers: {} checked", exact.len());
        if !inexact.is_empty() {
            failures.push(format!("pow/f64{suffix}: inexact powers {inexact:?}"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// `(y, x)` pairs for `atan2`: every special against every special, `y/x` ratios near the
/// reduction's boundaries (`tan(π/8)`, 1, `tan(3π/8)`) in all four quadrants, and operands
/// spread over the whole exponent range (ratios that overflow or underflow included).
fn atan2_pairs(n: usize, is_f32: bool) -> (Vec<f64>, Vec<f64>) {
    let mut rng = Rng::new(0xa7a2);
    let mut specials = f64_inputs(Some(MathFn::Atan2), 10.0, 0);
    if is_f32 {
        specials.extend(special_f32().into_iter().map(f64::from));
    }
    let (mut ys, mut xs) = (Vec::new(), Vec::new());
    for &y in &specials {
        for &x in &specials {
            ys.push(y);
            xs.push(x);
        }
    }
    for i in 0..n {
        let x = rng.uniform(-1.0, 1.0) * 2f64.powi((rng.next_u64() % 120) as i32 - 60);
        let ratio = match i % 4 {
            0 => 0.414_213_562_373_095_03 * (1.0 + rng.uniform(-1e-6, 1e-6)),
            1 => 1.0 + rng.uniform(-1e-6, 1e-6),
            2 => 2.414_213_562_373_095 * (1.0 + rng.uniform(-1e-6, 1e-6)),
            _ => rng.uniform(-1.0, 1.0) * 2f64.powi((rng.next_u64() % 80) as i32 - 40),
        };
        let sign = if rng.next_u64().is_multiple_of(2) { 1.0 } else { -1.0 };
        ys.push(sign * x * ratio);
        xs.push(x);
        let bits = rng.next_u64();
        if is_f32 {
            ys.push(f64::from(f32::from_bits(bits as u32)));
            xs.push(f64::from(f32::from_bits((bits >> 32) as u32)));
        } else {
            ys.push(f64::from_bits(bits));
            xs.push(f64::from_bits(rng.next_u64()));
        }
    }
    if is_f32 {
        for v in ys.iter_mut().chain(xs.iter_mut()) {
            *v = f64::from(*v as f32);
        }
    }
    (ys, xs)
}

#[test]
fn atan2_matches_c99_and_is_accurate() {
    let mut jit = Jit::new();
    let mut failures = Vec::new();
    for features in variants(jit.features()) {
        let suffix = if features.fma { "+fma" } else { "" };
        // f32 against the correctly rounded result.
        let kernel = jit.kernel(MathFn::Atan2, types::F32, features);
        let (ys, xs) = atan2_pairs(400_000, true);
        let (ys32, xs32): (Vec<f32>, Vec<f32>) =
            ys.iter().zip(&xs).map(|(&y, &x)| (y as f32, x as f32)).unzip();
        let got = run(kernel, &ys32, &xs32);
        let mut w = Worst::default();
        for ((&y, &x), &g) in ys32.iter().zip(&xs32).zip(&got) {
            let want = libm::atan2(f64::from(y), f64::from(x)) as f32;
            let ulp = ulp32(g, want);
            if ulp.is_none() && w.mismatches.len() < 8 {
                w.mismatches.push(format!("atan2({y:e}, {x:e}) = {g:e}, want {want:e}"));
            }
            w.note(ulp.or(Some(0)), f64::from(y), f64::from(g), f64::from(want));
        }
        report(&format!("atan2/f32{suffix}"), &w);
        if w.ulp > F32_MAX_ULP || !w.mismatches.is_empty() {
            failures.push(format!(
                "atan2/f32{suffix}: {} ULP at y = {:e}; {:?}",
                w.ulp, w.at, w.mismatches
            ));
        }
        // f64 against libm.
        let kernel = jit.kernel(MathFn::Atan2, types::F64, features);
        let (ys, xs) = atan2_pairs(400_000, false);
        let got = run(kernel, &ys, &xs);
        let mut w = Worst::default();
        for ((&y, &x), &g) in ys.iter().zip(&xs).zip(&got) {
            let want = libm::atan2(y, x);
            let ulp = ulp64(g, want);
            if ulp.is_none() && w.mismatches.len() < 8 {
                w.mismatches.push(format!("atan2({y:e}, {x:e}) = {g:e}, want {want:e}"));
            }
            w.note(ulp.or(Some(0)), y, g, want);
        }
        report(&format!("atan2/f64{suffix}"), &w);
        if w.ulp > F32_MAX_ULP || !w.mismatches.is_empty() {
            failures.push(format!(
                "atan2/f64{suffix}: {} ULP at y = {:e}; {:?}",
                w.ulp, w.at, w.mismatches
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn vector_body_and_scalar_tail_agree_bit_for_bit() {
    let mut jit = Jit::new();
    let features = jit.features();
    let mut rng = Rng::new(7);
    let xs: Vec<f32> =
        (0..4096).map(|_| f32::from_bits(rng.next_u64() as u32)).chain(special_f32()).collect();
    let ys: Vec<f32> = (0..xs.len()).map(|i| [2.0f32, -3.0, 0.5, 1.7][i % 4]).collect();
    for &f in MathFn::ALL {
        let kernel = jit.kernel(f, types::F32, features);
        let vector = run(kernel, &xs, &ys);
        for (i, (&x, &y)) in xs.iter().zip(&ys).enumerate() {
            let scalar = run(kernel, &[x], &[y])[0];
            assert_eq!(scalar.to_bits(), vector[i].to_bits(), "{}({x:e}, {y:e})", f.name());
        }
    }
}

#[test]
fn constants_are_hoisted_out_of_the_loop_body() {
    let jit = Jit::new();
    let features = jit.features();
    for &f in MathFn::ALL {
        for lane in [types::F32, types::F64] {
            let mut ctx = Context::new();
            ctx.func.signature.params = vec![AbiParam::new(types::I64); 4];
            let mut fctx = FunctionBuilderContext::new();
            build_loop(&mut FunctionBuilder::new(&mut ctx.func, &mut fctx), f, lane, features);
            let entry = ctx.func.layout.entry_block().expect("entry block");
            for block in ctx.func.layout.blocks().filter(|&b| b != entry) {
                for inst in ctx.func.layout.block_insts(block) {
                    let op = ctx.func.dfg.insts[inst].opcode();
                    // Scalar `iconst`s are shift amounts and loop steps, folded into instructions.
                    let is_const = matches!(
                        op,
                        Opcode::F32const | Opcode::F64const | Opcode::Splat | Opcode::Vconst
                    );
                    assert!(!is_const, "{}/{lane}: {op} inside the loop", f.name());
                }
            }
        }
    }
}

#[test]
fn misuse_is_reported_as_typed_errors() {
    let mut func = cranelift::codegen::ir::Function::new();
    let mut fctx = FunctionBuilderContext::new();
    let mut b = FunctionBuilder::new(&mut func, &mut fctx);
    let block = b.create_block();
    let xi = b.append_block_param(block, types::I32);
    let xf = b.append_block_param(block, types::F32);
    let xd = b.append_block_param(block, types::F64);
    b.switch_to_block(block);
    let features = MathFeatures::default();
    assert!(matches!(
        MathConsts::new(&mut b, types::I32, &[MathFn::Exp], features),
        Err(MathError::UnsupportedType(_))
    ));
    let consts = MathConsts::new(&mut b, types::F32, &[MathFn::Exp], features).expect("f32 consts");
    assert!(!consts.is_empty());
    assert!(matches!(
        emit(&mut b, &consts, MathFn::Exp, &[xi]),
        Err(MathError::UnsupportedType(_))
    ));
    assert!(matches!(emit(&mut b, &consts, MathFn::Exp, &[]), Err(MathError::BadArguments { .. })));
    assert!(matches!(
        emit(&mut b, &consts, MathFn::Pow, &[xf]),
        Err(MathError::BadArguments { .. })
    ));
    assert!(matches!(
        emit(&mut b, &consts, MathFn::Pow, &[xf, xd]),
        Err(MathError::BadArguments { .. })
    ));
    assert!(emit(&mut b, &consts, MathFn::Pow, &[xf, xf]).is_ok());
}
