//! Numerics where the JIT once parted from the interpreter (`docs/language.md`, "Numerics"):
//!
//! - `sin` and `cos` of arguments beyond their vector reduction's accurate range (`2¹⁸` for
//!   `f32`, `2²⁸` for `f64`, with `fma`): those lanes call the interpreter's own `libm` function
//!   (`tfn_backend::math::Fallback`), so the JIT gives exactly the interpreter's bits there, on
//!   every thread count and SIMD level, in inline code, wide routines, row kernels and scalar
//!   tails alike. In range, both backends agree to a few ULP (the kernels' own polynomials).
//! - `prod` of `f32`/`f16`/`bf16` values is computed in `f64` and rounded once, so partial
//!   products that overflow or underflow `f32` no longer turn a finite product into NaN.

use ndarray::{ArrayD, IxDyn};
use tfn::{Backend, Session, SessionOptions, Tensor, Value};
use tfn_backend::SimdLevel;
use tfn_test_utils::Rng;

const SOURCE: &str = r#"
fn wave(Tensor x) -> Tensor {
    return sin(x) + cos(x * 3.0)
}
fn products(Tensor x) -> (Tensor, Tensor, Tensor) {
    return (prod(x), prod(x, dims=[-1]), prod(x, dims=[0]))
}
fn rows(Tensor x) -> Tensor {
    let s = sin(x)
    return s - max(s, dims=[-1], keepdim=true) + sum(cos(x), dims=[-1], keepdim=true)
}
"#;

fn session(backend: Backend, threads: usize, simd: SimdLevel) -> Session {
    let s = Session::with_options(SessionOptions {
        backend,
        threads,
        simd,
        strict: true,
        ..Default::default()
    });
    s.load_str("trig.tfn", SOURCE).expect("loads");
    s
}

/// Huge finite values of every magnitude, ±inf, NaN, zeros and ordinary values, mixed so that
/// most vectors have lanes on both sides of the limit.
fn inputs(rng: &mut Rng, n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| match i % 9 {
            0 => rng.uniform(-3.0, 3.0),
            1 => rng.uniform(-1.0, 1.0) * 2f64.powi((rng.next_u64() % 127) as i32),
            2 => rng.uniform(-1.0, 1.0) * 2f64.powi(18 + (rng.next_u64() % 12) as i32),
            3 => [f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 0.0, -0.0][i / 9 % 5],
            4 => rng.uniform(-1e30, 1e30),
            _ => rng.uniform(-4e5, 4e5),
        })
        .collect()
}

fn tensor(dtype: &str, shape: &[usize], v: Vec<f64>) -> Tensor {
    let dim = IxDyn(shape);
    match dtype {
        "f32" => {
            Tensor::F32(ArrayD::from_shape_vec(dim, v.iter().map(|&x| x as f32).collect()).unwrap())
        }
        _ => Tensor::F64(ArrayD::from_shape_vec(dim, v).unwrap()),
    }
}

/// The bits of every element, NaN payloads folded (a NaN's sign and payload are not promised
/// between kernels, only where NaNs are).
fn bits(t: &Tensor) -> Vec<u64> {
    match t {
        Tensor::F32(a) => {
            a.iter().map(|x| if x.is_nan() { u64::MAX } else { u64::from(x.to_bits()) }).collect()
        }
        Tensor::F64(a) => {
            a.iter().map(|x| if x.is_nan() { u64::MAX } else { x.to_bits() }).collect()
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn sin_and_cos_beyond_the_reduction_range_are_the_interpreters_bits() {
    let mut rng = Rng::new(0x7319);
    let levels: Vec<SimdLevel> =
        SimdLevel::ALL.into_iter().filter(|l| l.clamp_to_cpu() == *l).collect();
    for dtype in ["f32", "f64"] {
        // A long row (staged through the wide routines), odd lengths (scalar tails), rows.
        for (function, shape) in [("wave", vec![4099]), ("wave", vec![7]), ("rows", vec![37, 131])]
        {
            let n = shape.iter().product();
            let x = tensor(dtype, &shape, inputs(&mut rng, n));
            let args = [Value::from(x.clone())];
            let call = |s: &mut Session| {
                let out = s.call(function, &args).unwrap_or_else(|e| panic!("{function}: {e}"));
                out[0].clone().into_tensor().expect("a tensor")
            };
            let want = call(&mut session(Backend::Interp, 1, SimdLevel::V128));
            let first = call(&mut session(Backend::Jit, 1, levels[0]));
            // Against the interpreter: equal bits wherever an argument is out of range for
            // every lane that reads it (so `wave`'s `x` and `3x` both are), close elsewhere.
            let (w, g) = (bits(&want), bits(&first));
            let xs: Vec<f64> = match &x {
                Tensor::F32(a) => a.iter().map(|&v| f64::from(v)).collect(),
                Tensor::F64(a) => a.iter().copied().collect(),
                _ => unreachable!(),
            };
            let limit = if dtype == "f32" { 262_144.0 } else { 268_435_456.0 };
            let mut beyond = 0;
            for (i, &xv) in xs.iter().enumerate() {
                if function == "wave" && xv.abs() > limit {
                    beyond += 1;
                    assert_eq!(
                        g[i], w[i],
                        "{dtype} {function}{shape:?}: element {i} (x = {xv:e}) is not the interpreter's"
                    );
                }
            }
            assert!(function != "wave" || beyond > 0, "the inputs reach beyond the limit");
            let (want_f, got_f) = (as_f64(&want), as_f64(&first));
            for (i, (a, b)) in want_f.iter().zip(&got_f).enumerate() {
                assert!(
                    a.is_nan() == b.is_nan()
                        && (a.is_nan() || (a - b).abs() <= 1e-4 * a.abs().max(1.0) * 8.0),
                    "{dtype} {function}{shape:?}: element {i}: interpreter {a}, JIT {b} (x = {:e})",
                    xs.get(i).copied().unwrap_or(f64::NAN)
                );
            }
            // Every thread count and SIMD level: the same bits.
            for &level in &levels {
                for threads in [1, 3] {
                    let got = call(&mut session(Backend::Jit, threads, level));
                    assert_eq!(
                        bits(&got),
                        g,
                        "{dtype} {function}{shape:?} on {threads} threads at {}",
                        level.name()
                    );
                }
            }
        }
    }
}

fn as_f64(t: &Tensor) -> Vec<f64> {
    match t {
        Tensor::F32(a) => a.iter().map(|&v| f64::from(v)).collect(),
        Tensor::F64(a) => a.iter().copied().collect(),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn f32_products_are_rounded_once_on_both_backends() {
    // Each row repeats 10, 10, 0.1, 0.1 (then a 1): every prefix of it is within 100 of 1,
    // but a lane of the old JIT's `f32` reduction (every 32nd element) multiplies only 10s or
    // only 0.1s: 10^±128 per row, past `f32`'s range, and `inf · 0` was NaN. In `f64` it is
    // not. (`f64` data keeps `f64` lanes, whose own partial products can still leave `f64`'s
    // range on adversarial data: `docs/language.md`, "Numerics".)
    let (rows, cols) = (3, 4097);
    let values: Vec<f64> = (0..rows * cols)
        .map(|i| match i % cols {
            c if c == cols - 1 => 1.0,
            c if c % 4 < 2 => 10.0,
            _ => 0.1,
        })
        .collect();
    for dtype in ["f32"] {
        let x = tensor(dtype, &[rows, cols], values.clone());
        let args = [Value::from(x)];
        let mut results = Vec::new();
        for (backend, threads, simd) in [
            (Backend::Interp, 1, SimdLevel::V128),
            (Backend::Jit, 1, SimdLevel::detect()),
            (Backend::Jit, 3, SimdLevel::V128),
        ] {
            let out = session(backend, threads, simd).call("products", &args).expect("products");
            let out: Vec<Vec<f64>> =
                out.into_iter().map(|v| as_f64(&v.into_tensor().expect("tensor"))).collect();
            results.push(out);
        }
        for r in &results {
            assert!((r[0][0] - 1.0).abs() < 1e-2, "{dtype}: full product {:?}", r[0]);
            assert!(
                r[1].iter().all(|v| (v - 1.0).abs() < 1e-2),
                "{dtype}: row products {:?} in {results:?}",
                r[1]
            );
            assert!(r[2].iter().all(|v| v.is_finite() && *v > 0.0), "{dtype}: column products");
        }
        assert_eq!(results[1], results[2], "{dtype}: the JIT on any thread count and level");
    }
}

/// Rewrites never overflow where the written form does not (the hostile sweep's programs):
/// `a*b + a*c` is not factored, `pow(x, ±0.5)` of a base that may be negative stays `pow`.
/// Both backends, against the values of the written order.
#[test]
fn rewrites_keep_the_written_forms_infinities_and_nans() {
    let src = "fn fact(Tensor a, Tensor b, Tensor c) -> Tensor { return a * b + a * c }\n\
               fn root(Tensor x) -> (Tensor, Tensor) { return (x ** -0.5, x ** 0.5) }\n";
    for backend in [Backend::Jit, Backend::Interp] {
        let s = session(backend, 1, SimdLevel::detect());
        s.load_str("rewrites.tfn", src).unwrap();
        let t = |v: Vec<f64>| Value::from(tensor("f32", &[v.len()], v));
        let got = s
            .call("fact", &[t(vec![1e-30, 0.0]), t(vec![3e38, 3e38]), t(vec![3e38, 3e38])])
            .unwrap();
        let got = as_f64(&got[0].clone().into_tensor().unwrap());
        assert!((got[0] - 6e8).abs() < 1e3 && got[1] == 0.0, "{backend:?}: {got:?}");
        let got = s.call("root", &[t(vec![-0.0, f64::NEG_INFINITY, 4.0])]).unwrap();
        let (inv, sqrt) = (
            as_f64(&got[0].clone().into_tensor().unwrap()),
            as_f64(&got[1].clone().into_tensor().unwrap()),
        );
        assert_eq!(inv, vec![f64::INFINITY, 0.0, 0.5], "{backend:?}");
        assert_eq!(sqrt[1..], [f64::INFINITY, 2.0], "{backend:?}");
    }
}

/// Divisions by a row value (softmax's `e / sum`), a rank-0 tensor and a constant stay within
/// 1.5 ulp of the quotient for every divisor, subnormal and huge ones included (where a bare
/// `x * (1/y)` is infinite, or loses bits in a subnormal reciprocal), with zeros, infinities
/// and NaNs where `x / y` has them; on both backends, 1 and 2 threads and every SIMD level.
#[test]
fn divisions_by_tiny_and_huge_divisors_are_quotients() {
    let src =
        "fn by_row(Tensor x, Tensor y) -> Tensor { return x / sum(y, dims=[-1], keepdim=true) }\n\
               fn by_scalar(Tensor x, Tensor y) -> Tensor { return x / y }\n\
               fn by_tiny(Tensor x) -> Tensor { return x / 1e-40 }\n\
               fn by_least(Tensor x) -> Tensor { return x / 1.401298464324817e-45 }\n\
               fn by_huge(Tensor x) -> Tensor { return x / 3e38 }\n";
    let divisors: [f64; 12] = [
        1e-40,
        -1e-41,
        1.401298464324817e-45,
        1e-38,
        3e38,
        -2e38,
        1e30,
        0.5,
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NAN,
    ];
    let xs: Vec<f64> = vec![1e-5, 3e38, -7.0, 0.0, 1e-44, f64::INFINITY, 1.0, -2.5e-30];
    let cols = xs.len();
    for dtype in ["f32", "f64"] {
        let round = |v: f64| if dtype == "f32" { v as f32 as f64 } else { v };
        let ulps = |got: f64, want: f64| -> f64 {
            if want.is_nan() || got.is_nan() || want.is_infinite() || want == 0.0 {
                return if got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()) {
                    0.0
                } else {
                    f64::INFINITY
                };
            }
            let ulp = if dtype == "f32" {
                let w = want as f32;
                (f32::from_bits(w.abs().to_bits() + 1) - w.abs()) as f64
            } else {
                f64::from_bits(want.abs().to_bits() + 1) - want.abs()
            };
            (got - want).abs() / ulp
        };
        // One row per divisor: row r of x divided by divisor r.
        let x: Vec<f64> = divisors.iter().flat_map(|_| xs.iter().map(|&v| round(v))).collect();
        let y: Vec<f64> = divisors.iter().map(|&d| round(d)).collect();
        let rows = divisors.len();
        let mut runs = vec![(Backend::Interp, 1, SimdLevel::detect())];
        for simd in SimdLevel::ALL.into_iter().filter(|l| l.clamp_to_cpu() == *l) {
            runs.push((Backend::Jit, 1, simd));
        }
        runs.push((Backend::Jit, 2, SimdLevel::detect()));
        let mut first: Option<Vec<u64>> = None;
        for (backend, threads, simd) in runs {
            let s = session(backend, threads, simd);
            s.load_str("div.tfn", src).unwrap();
            let what = format!("{dtype} {backend:?} {threads} thread(s) {simd:?}");
            let xt = Value::from(tensor(dtype, &[rows, cols], x.clone()));
            let yt = Value::from(tensor(dtype, &[rows, 1], y.clone()));
            let got =
                s.call("by_row", &[xt.clone(), yt]).unwrap()[0].clone().into_tensor().unwrap();
            let got_f = as_f64(&got);
            for (i, (&g, &xv)) in got_f.iter().zip(&x).enumerate() {
                // (A sum starts from +0: the sum of [-0.0] is +0.0.)
                let want = round(xv / (y[i / cols] + 0.0));
                assert!(
                    ulps(g, want) <= 1.5,
                    "{what}: {xv:e} / {:e} = {g:e}, want {want:e}",
                    y[i / cols]
                );
            }
            // Within the JIT, the same bits on every thread count and SIMD level.
            if backend == Backend::Jit {
                match &first {
                    None => first = Some(bits(&got)),
                    Some(b) => assert_eq!(&bits(&got), b, "{what}"),
                }
            }
            for (r, &d) in divisors.iter().enumerate() {
                let row = Value::from(tensor(dtype, &[cols], x[r * cols..(r + 1) * cols].to_vec()));
                let yd = Value::from(tensor(dtype, &[], vec![round(d)]));
                let got =
                    s.call("by_scalar", &[row, yd]).unwrap()[0].clone().into_tensor().unwrap();
                for (&g, &xv) in as_f64(&got).iter().zip(&xs) {
                    let want = round(round(xv) / round(d));
                    assert!(
                        ulps(g, want) <= 1.5,
                        "{what}: rank-0 {xv:e} / {d:e} = {g:e}, want {want:e}"
                    );
                }
            }
            let row = Value::from(tensor(dtype, &[cols], xs.iter().map(|&v| round(v)).collect()));
            for (name, d) in
                [("by_tiny", 1e-40), ("by_least", 1.401298464324817e-45), ("by_huge", 3e38)]
            {
                let got = s.call(name, std::slice::from_ref(&row)).unwrap()[0]
                    .clone()
                    .into_tensor()
                    .unwrap();
                for (&g, &xv) in as_f64(&got).iter().zip(&xs) {
                    let want = round(round(xv) / round(d));
                    assert!(ulps(g, want) <= 1.5, "{what}: {name} {xv:e} = {g:e}, want {want:e}");
                }
            }
        }
    }
}

/// Softmax's shape of division (`e / sum(e)`, `e` kept in the output until the sum is known)
/// with row sums that are subnormal or near the top of the range: the scaling routine and the
/// inline code divide alike (the same bits at every SIMD level) and within 1.5 ulp.
#[test]
fn a_stashed_row_divided_by_its_own_tiny_sum_is_a_quotient() {
    let src = "fn own(Tensor x) -> Tensor {\n    let e = x * 2.0\n    return e / sum(e, dims=[-1], keepdim=true)\n}\n";
    let cols = 2048;
    // Powers of two times small integers: every partial sum is exact, whatever the order.
    let scales = [2f64.powi(-145), 2f64.powi(-131), 2f64.powi(116), 1.0];
    let x: Vec<f64> = scales
        .iter()
        .flat_map(|&s| {
            (0..cols).map(move |j| if j % 7 == 0 { s * (1.0 + (j % 5) as f64) } else { 0.0 })
        })
        .map(|v| v as f32 as f64)
        .collect();
    let rows = scales.len();
    let mut first: Option<Vec<u64>> = None;
    for simd in SimdLevel::ALL.into_iter().filter(|l| l.clamp_to_cpu() == *l) {
        for threads in [1, 2] {
            let s = session(Backend::Jit, threads, simd);
            s.load_str("own.tfn", src).unwrap();
            let xt = Value::from(tensor("f32", &[rows, cols], x.clone()));
            let got = s.call("own", &[xt]).unwrap()[0].clone().into_tensor().unwrap();
            for r in 0..rows {
                let e: Vec<f32> =
                    x[r * cols..(r + 1) * cols].iter().map(|&v| v as f32 * 2.0).collect();
                let sum: f32 = e.iter().sum();
                let got = &as_f64(&got)[r * cols..(r + 1) * cols];
                for (&g, &ev) in got.iter().zip(&e) {
                    let want = ev / sum;
                    let ulp = f32::from_bits(want.abs().to_bits() + 1) - want.abs();
                    assert!(
                        ((g as f32) - want).abs() <= 1.5 * ulp,
                        "{simd:?} {threads}: row of {:e}: {ev:e} / {sum:e} = {g:e}, want {want:e}",
                        scales[r]
                    );
                }
            }
            match &first {
                None => first = Some(bits(&got)),
                Some(b) => assert_eq!(&bits(&got), b, "{simd:?}, {threads} thread(s)"),
            }
        }
    }
}

/// Attribute arithmetic follows Python: a zero divisor is an error (E0507), for `/` as for
/// `%`, and a float attribute that overflows from finite operands is one too.
#[test]
fn attribute_division_by_zero_and_overflow_are_errors() {
    let s = session(Backend::Jit, 1, SimdLevel::detect());
    s.load_str(
        "attrs.tfn",
        "fn f(Tensor x, *, Int n = 0) -> Tensor { return x * (1 / n) }\n\
         fn g(Tensor x, *, Float e = 1e200) -> Tensor { return x * (e * e) }\n",
    )
    .unwrap();
    let x = Value::from(tensor("f32", &[2], vec![1.0, 2.0]));
    for (f, want) in [("f", "division by zero in `div` (`1` by `0`)"), ("g", "overflows")] {
        let e = s.call(f, std::slice::from_ref(&x)).unwrap_err().to_string();
        assert!(e.contains("E0507") && e.contains(want), "{f}: {e}");
    }
}

/// A sum over a long axis of an empty tensor (`[2^40, 0]`, no element) is immediate on both
/// backends: the interpreter walked the 2^40 empty rows.
#[test]
fn reducing_an_empty_tensor_does_not_walk_its_long_axis() {
    let x = Value::from(Tensor::F32(ArrayD::zeros(IxDyn(&[1 << 40, 0]))));
    for backend in [Backend::Jit, Backend::Interp] {
        let s = session(backend, 1, SimdLevel::detect());
        s.load_str("empty.tfn", "fn f(Tensor x) -> Tensor { return sum(x, dims=[0]) }\n").unwrap();
        let started = std::time::Instant::now();
        let out = s.call("f", std::slice::from_ref(&x)).unwrap();
        let out = out[0].clone().into_tensor().unwrap();
        assert_eq!(out.shape(), &[0], "{backend:?}");
        // Not a timing assertion: a walk of 2^40 rows would never get here.
        eprintln!("{backend:?}: {:?}", started.elapsed());
    }
}

/// A user's rewrite rule must hold where every input is one special value (infinities, NaN,
/// `-0`, integers past `f32`'s precision) too: each of these held on small random numbers and
/// changed results. From finite inputs a left side that overflowed may become the exact
/// value, so the spec's rules still load.
#[test]
fn user_rules_are_checked_at_special_values() {
    let unsound = [
        ("self_sub", "?x - ?x => 0.0", "[inf]"),
        ("times_zero", "?x * 0.0 => 0.0", "[inf]"),
        ("round_trip", "cast(cast(?x, f32), i32) => ?x", "[16777217]"),
        ("self_equal", "?x == ?x => true", "[NaN]"),
    ];
    for (name, rule, witness) in unsound {
        let s = session(Backend::Interp, 1, SimdLevel::V128);
        let e = s.load_str("rules.tfn", &format!("rewrite {name}: {rule}\n")).unwrap_err();
        let e = e.to_string();
        assert!(e.contains("E0702") && e.contains(witness), "{name}: {e}");
    }
    let spec = "rewrite log-exp: log(exp(?x)) => ?x\n\
                rewrite exp-sum: exp(?a) * exp(?b) => exp(?a + ?b)\n\
                rewrite mul-one: ?x * 1.0 => ?x\n";
    session(Backend::Interp, 1, SimdLevel::V128).load_str("spec.tfn", spec).unwrap();
}

/// A `max` or `min` reduction over a NaN gives the default NaN (`0xffc0_0000` for `f32`),
/// whatever NaN the input held and wherever it was: in a vector accumulator, a row's tail, a
/// wide routine's pass, a column reduction's vectors or a long reduction's chunks — the same
/// bits on both backends, every SIMD level and thread count. (The JIT's vector accumulators
/// once gave `0xffff_ffff`, the interpreter the input's NaN; `e / max(e)` then differed by
/// SIMD level.)
#[test]
fn max_and_min_reductions_give_the_default_nan() {
    let src = "fn by_row(Tensor x) -> (Tensor, Tensor) { return (max(x, dims=[-1]), min(x, dims=[-1], keepdim=true)) }\n\
               fn by_col(Tensor x) -> (Tensor, Tensor) { return (max(x, dims=[0]), min(x, dims=[0])) }\n\
               fn whole(Tensor x) -> (Tensor, Tensor) { return (max(x), min(x)) }\n\
               fn scaled(Tensor x) -> Tensor { let e = x * 2.0\n return e / max(e, dims=[-1], keepdim=true) }\n";
    // Quiet and signalling NaNs of either sign, with and without payload.
    let nans32: [u32; 5] = [0x7fc0_0000, 0xffc0_0000, 0x7fc1_2345, 0xff80_0001, 0x7fff_ffff];
    let nans64: [u64; 3] = [0x7ff8_0000_0000_0000, 0x7ff0_0000_0000_0001, 0xfff8_0000_1234_0000];
    let shapes: [&[usize]; 6] = [&[3, 5], &[4, 37], &[3, 130], &[131, 6], &[2, 40000], &[1, 70001]];
    let mut rng = Rng::new(45);
    for dtype in ["f32", "f64"] {
        for shape in shapes {
            let n: usize = shape.iter().product();
            let base = rng.array(&[n], -4.0, 4.0);
            let picks = rng.array(&[2 * shape[0]], 0.0, 1.0);
            let mut x32: Vec<f32> = base.iter().map(|&v| v as f32).collect();
            let mut x64: Vec<f64> = base.iter().copied().collect();
            // Row 0 holds no NaN (unless it is the only row); every other row one or two, at
            // random places.
            let skip = if shape[0] > 1 { 2 } else { 0 };
            for (k, &p) in picks.iter().enumerate().skip(skip) {
                let at = (k / 2) * (n / shape[0]) + (p * (n / shape[0]) as f64) as usize;
                x32[at] = f32::from_bits(nans32[k % nans32.len()]);
                x64[at] = f64::from_bits(nans64[k % nans64.len()]);
            }
            let input = || match dtype {
                "f32" => Tensor::F32(ArrayD::from_shape_vec(IxDyn(shape), x32.clone()).unwrap()),
                _ => Tensor::F64(ArrayD::from_shape_vec(IxDyn(shape), x64.clone()).unwrap()),
            };
            let mut runs = vec![(Backend::Interp, 1, SimdLevel::detect())];
            for simd in SimdLevel::ALL.into_iter().filter(|l| l.clamp_to_cpu() == *l) {
                runs.push((Backend::Jit, 1, simd));
            }
            runs.push((Backend::Jit, 2, SimdLevel::detect()));
            for f in ["by_row", "by_col", "whole", "scaled"] {
                let mut first: Option<(String, Vec<Vec<u64>>)> = None;
                for &(backend, threads, simd) in &runs {
                    let s = session(backend, threads, simd);
                    s.load_str("nan.tfn", src).unwrap();
                    let what = format!("{f} {dtype} {shape:?} {backend:?} {threads} {simd:?}");
                    let outs = s.call(f, &[Value::from(input())]).unwrap();
                    let got: Vec<Vec<u64>> = outs
                        .into_iter()
                        .map(|v| match v.into_tensor().unwrap() {
                            Tensor::F32(a) => a.iter().map(|x| u64::from(x.to_bits())).collect(),
                            Tensor::F64(a) => a.iter().map(|x| x.to_bits()).collect(),
                            other => panic!("{what}: {other:?}"),
                        })
                        .collect();
                    if f != "scaled" {
                        let default =
                            if dtype == "f32" { 0xffc0_0000 } else { 0xfff8_0000_0000_0000 };
                        let is_nan = |b: u64| {
                            if dtype == "f32" {
                                f32::from_bits(b as u32).is_nan()
                            } else {
                                f64::from_bits(b).is_nan()
                            }
                        };
                        let nans = got.iter().flatten().filter(|&&b| is_nan(b)).count();
                        assert!(nans > 0, "{what}: no NaN");
                        for &b in got.iter().flatten().filter(|&&b| is_nan(b)) {
                            assert_eq!(b, default, "{what}: NaN {b:#x}");
                        }
                    }
                    // `scaled` divides by one reciprocal per row in the JIT (within 1.5 ULP of
                    // the interpreter's quotients): the JIT runs against each other.
                    if f == "scaled" && backend == Backend::Interp {
                        continue;
                    }
                    match &first {
                        None => first = Some((what, got)),
                        Some((w, g)) => assert!(g == &got, "{what} differs from {w}"),
                    }
                }
            }
        }
    }
}

/// `prod`'s gradient is the product of the other elements, also where elements are 0 (it was
/// `grad * result / x`: NaN there), as in JAX and PyTorch.
#[test]
fn prod_gradients_at_zeros_are_products_of_the_others() {
    let src = "fn prod_rows(Tensor x) -> Tensor { return prod(x, dims=[1], keepdim=true) }\n\
               fn whole(Tensor x) -> Tensor { return prod(x) }\n";
    let x = [2.0, 0.0, 3.0, 0.0, 0.0, 5.0, 1.0, 2.0, 3.0];
    for dtype in ["f32", "f64"] {
        for backend in [Backend::Jit, Backend::Interp] {
            let s = session(backend, 1, SimdLevel::detect());
            s.load_str("prod.tfn", src).unwrap();
            let xt = Value::from(tensor(dtype, &[3, 3], x.to_vec()));
            let ct = Value::from(tensor(dtype, &[3, 1], vec![1.0, 1.0, 2.0]));
            let g = s.vjp("prod_rows", std::slice::from_ref(&xt), &[ct]).unwrap();
            let got = as_f64(&g[0].clone().into_tensor().unwrap());
            assert_eq!(got, [0.0, 6.0, 0.0, 0.0, 0.0, 0.0, 12.0, 6.0, 4.0], "{dtype} {backend:?}");
            let one = Value::from(tensor(dtype, &[3], vec![2.0, 0.0, 3.0]));
            let ct = Value::from(tensor(dtype, &[], vec![1.0]));
            let g = s.vjp("whole", &[one], &[ct]).unwrap();
            assert_eq!(as_f64(&g[0].clone().into_tensor().unwrap()), [0.0, 6.0, 0.0]);
        }
    }
}

/// `std:nn`'s softplus is log(1 + e^x) without overflow: x itself where e^x is past the
/// dtype's range (it was `log1p(exp(x))`: inf, with a NaN gradient), with the gradient
/// sigmoid(x), 0.5 at 0.
#[test]
fn softplus_does_not_overflow() {
    let src = "use \"std:nn\"\nfn sp(Tensor x) -> Tensor { return softplus(x) }\n";
    let x = [-1e30, -800.0, -100.0, -1.0, -0.0, 0.0, 1.0, 100.0, 800.0, 1e30];
    let want = |v: f64| if v > 0.0 { v + (-v).exp().ln_1p() } else { v.exp().ln_1p() };
    let slope = |v: f64| 1.0 / (1.0 + (-v).exp());
    for dtype in ["f32", "f64"] {
        for backend in [Backend::Jit, Backend::Interp] {
            let s = session(backend, 1, SimdLevel::detect());
            s.load_str("sp.tfn", src).unwrap();
            let xt = Value::from(tensor(dtype, &[10], x.to_vec()));
            let y = s.call("sp", std::slice::from_ref(&xt)).unwrap();
            let ct = Value::from(tensor(dtype, &[10], vec![1.0; 10]));
            let g = s.vjp("sp", std::slice::from_ref(&xt), &[ct]).unwrap();
            let (y, g) = (
                as_f64(&y[0].clone().into_tensor().unwrap()),
                as_f64(&g[0].clone().into_tensor().unwrap()),
            );
            for (i, &v) in x.iter().enumerate() {
                let v = if dtype == "f32" { v as f32 as f64 } else { v };
                // Relative, apart from results in the subnormal range.
                let (tol, tiny) = if dtype == "f32" { (1e-6, 1e-37) } else { (1e-14, 1e-300) };
                let close = |a: f64, b: f64| (a - b).abs() <= tol * b.abs() + tiny;
                assert!(close(y[i], want(v)), "{dtype} {backend:?} softplus({v}) = {}", y[i]);
                assert!(close(g[i], slope(v)), "{dtype} {backend:?} slope at {v} = {}", g[i]);
            }
        }
    }
}

/// A product with an inner size of 1 is a sum of one term that starts from `+0`, as in the
/// interpreter and NumPy: `-0.0 · 1` gives `+0.0` (the `gemm` crate wrote `-0.0`, so
/// `1 / matmul(a, b)` was `-inf` on the JIT and `+inf` on the interpreter).
#[test]
fn an_inner_size_of_one_sums_from_zero() {
    let src = "fn outer(Tensor a, Tensor b) -> Tensor { return 1.0 / matmul(a, b) }\n";
    for dtype in ["f32", "f64"] {
        for (m, n) in [(1, 2), (3, 5), (40, 70)] {
            let a: Vec<f64> = (0..m).map(|i| if i % 2 == 0 { -0.0 } else { i as f64 }).collect();
            let b: Vec<f64> = (0..n).map(|j| 1.0 + j as f64).collect();
            let (a, b) = (tensor(dtype, &[m, 1], a), tensor(dtype, &[1, n], b));
            let mut got = Vec::new();
            for backend in [Backend::Interp, Backend::Jit] {
                let s = session(backend, 2, SimdLevel::detect());
                s.load_str("outer.tfn", src).unwrap();
                let r = s.call("outer", &[Value::from(a.clone()), Value::from(b.clone())]).unwrap();
                let t = r[0].clone().into_tensor().unwrap();
                assert_eq!(as_f64(&t)[0], f64::INFINITY, "{dtype} {backend:?} [{m}, 1]");
                got.push(bits(&t));
            }
            assert_eq!(got[0], got[1], "{dtype} [{m}, 1] x [1, {n}]");
        }
    }
}

/// An index computed along an axis longer than 2^31 - 1 elements is a shape error from the
/// JIT that says why (it was an "internal error"); nothing that long is allocated.
#[test]
fn an_index_past_the_jits_32_bit_lanes_is_a_shape_error() {
    let s = session(Backend::Jit, 1, SimdLevel::detect());
    s.load_str(
        "long.tfn",
        "fn long_iota() -> Tensor { return sum(arange(3000000000, dtype=i8)) }\n",
    )
    .unwrap();
    match s.call("long_iota", &[]) {
        Err(e @ tfn::Error::Shape(_)) => {
            let e = e.to_string();
            assert!(e.contains("3000000000") && e.contains("32 bits"), "{e}");
        }
        other => panic!("expected a shape error, got {other:?}"),
    }
}

/// A value whose element count passes what 64 bits describe is an error on both backends,
/// stored or not: a `[2^32, 2^32]` operand fused into a sum wrapped to 0 elements on the JIT
/// (the sum was 0, the call succeeded), and a `[3037000500, 3037000500]` one aborted the process
/// allocating its partial sums. Optimised or not, nothing is allocated.
#[test]
fn an_element_count_past_64_bits_is_an_error_on_both_backends() {
    let src = "fn ones64(Tensor x) -> Tensor { return x + sum(full([4294967296, 4294967296], 1.0)) }\n\
               fn near63(Tensor x) -> Tensor { return x + sum(full([3037000500, 3037000500], 0.0)) }\n\
               fn wide(Tensor x) -> Tensor { return x + sum(broadcast_to(x, [4294967296, 4294967296, 4])) }\n";
    for backend in [Backend::Jit, Backend::Interp] {
        for optimize in [true, false] {
            let s = Session::with_options(SessionOptions {
                backend,
                optimize,
                strict: true,
                ..Default::default()
            });
            s.load_str("huge.tfn", src).unwrap();
            let x = Value::from(tensor("f32", &[4], vec![0.0, 1.0, 2.0, 3.0]));
            for f in ["ones64", "near63", "wide"] {
                let e = s.call(f, std::slice::from_ref(&x)).expect_err(f).to_string();
                assert!(e.contains("a tensor this call would create"), "{backend:?} {f}: {e}");
            }
        }
    }
}
