//! The wide routines (`tfn_backend::wide`) against their inline twins, bit for bit.
//!
//! Every routine at every level this CPU runs (AVX-512 and AVX2 here; a level the CPU lacks is
//! skipped and named in the output, the others always run) is compared with `math::emit`
//! compiled at `F32X4` with `fma` (the `math_accuracy` harness: vector body plus scalar tail),
//! element by element on the bits (NaN results only need to be NaN on both sides: payloads
//! depend on operand order). Inputs: the specials (signed zeros, infinities, NaNs with
//! payloads, denormals, extremes), each algorithm's boundary constants with their bit
//! neighbours, 2²⁴ bit patterns 256 apart (every sign and exponent, spread mantissas) and
//! random bits. Then every length `n` in `0..=40` and a few large ones, from unaligned
//! addresses, in place and out of place, with guard values around the output (nothing written
//! outside `0..n`), and AVX2 against AVX-512 on everything.

use crate::math_jit;

use cranelift::codegen::ir::types;
use math_jit::{run, Jit, Kernel};
use tfn_backend::math::{MathFeatures, MathFn};
use tfn_backend::wide::{
    helper, routine_f32, routine_sum_f32, symbols, Helper, Routine, SimdLevel, WideAddF32,
    WideAddSquaresF32, WideMaxF32, WideScaleF32, WideShiftScaleF32, ACC_LANES, SUM_ACC,
};
use tfn_test_utils::Rng;

/// The functions that must have routines at every wide level (the priority list
/// and the rest of the unary functions).
const EXPECTED: [MathFn; 16] = [
    MathFn::Tanh,
    MathFn::Exp,
    MathFn::ExpNonPositive,
    MathFn::Sigmoid,
    MathFn::Erf,
    MathFn::Log,
    MathFn::Log2,
    MathFn::Expm1,
    MathFn::Log1p,
    MathFn::Sin,
    MathFn::Cos,
    MathFn::Atan,
    MathFn::Asin,
    MathFn::Acos,
    MathFn::Sinh,
    MathFn::Cosh,
];

/// The wide levels this CPU runs; prints the ones it skips.
fn levels() -> Vec<SimdLevel> {
    let mut out = Vec::new();
    for level in [SimdLevel::Avx2, SimdLevel::Avx512] {
        if level.clamp_to_cpu() == level {
            out.push(level);
        } else {
            println!(
                "skipping {}: this CPU runs at most {}",
                level.name(),
                SimdLevel::detect().name()
            );
        }
    }
    out
}

/// Specials and every algorithm's boundary constants (clamps, interval edges, reduction
/// limits), each with its bit neighbours, both signs.
fn specials() -> Vec<f32> {
    let exact = [
        0.0f32,
        f32::INFINITY,
        f32::NAN,
        f32::from_bits(0x7f80_0001), // signalling NaN
        f32::from_bits(0x7fc1_2345), // quiet NaN with a payload
        f32::from_bits(0x7fff_ffff),
        f32::from_bits(1),           // smallest denormal
        f32::from_bits(0x007f_ffff), // largest denormal
        f32::from_bits(0x0040_0000),
    ];
    let boundaries = [
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::EPSILON,
        1.0,
        0.5,
        2.0,
        // exp, expm1, sigmoid: clamps, overflow and underflow thresholds, ln2 multiples
        88.8,
        88.722_83,
        88.376_26,
        104.0,
        103.972_08,
        87.336_54,
        18.0,
        0.693_359_4,
        0.346_573_6,
        // tanh clamp and saturation
        9.05,
        9.010_9,
        0.125,
        0.25,
        // erf: interval edge, clamp, the change of variable's k
        0.843_75,
        4.0,
        3.92,
        // log: √½ renormalisation, denormal threshold
        std::f32::consts::FRAC_1_SQRT_2,
        std::f32::consts::SQRT_2,
        // sinh/cosh: clamp, small-argument edges
        89.5,
        89.415_98,
        // atan/asin/acos: interval edges, clamp, domain edge
        0.414_213_57,
        2.414_213_7,
        1_152_921_504_606_846_976.0,
        0.999_999_94,
        // sin/cos: reduction limit, multiples of π/2 and π/4
        262_144.0,
        std::f32::consts::FRAC_PI_2,
        std::f32::consts::FRAC_PI_4,
        std::f32::consts::PI,
        12_864.0,
        1e-30,
        1e30,
    ];
    let mut v: Vec<f32> = exact.to_vec();
    for b in boundaries {
        let bits = b.to_bits();
        for d in 0..=3u32 {
            v.push(f32::from_bits(bits + d));
            v.push(f32::from_bits(bits - d));
        }
    }
    v.extend(v.clone().iter().map(|x| -x));
    v
}

/// Specials, 2²⁴ bit patterns 256 apart (low bits varied) and 2²⁰ random bit patterns.
fn inputs() -> Vec<f32> {
    let mut v = specials();
    v.extend(
        (0..1u32 << 24).map(|i| f32::from_bits((i << 8) | (i.wrapping_mul(0x9e37_79b9) >> 24))),
    );
    let mut rng = Rng::new(0x5eed);
    v.extend((0..1 << 20).map(|_| f32::from_bits(rng.next_u64() as u32)));
    v
}

/// `routine(src)` out of place.
fn call(routine: Routine, src: &[f32]) -> Vec<f32> {
    let mut out = vec![0.0f32; src.len()];
    // SAFETY: `routine_f32` only returns routines this CPU runs; `src` and `out` hold `n` each.
    unsafe { routine.as_fn()(src.as_ptr(), out.as_mut_ptr(), src.len()) };
    out
}

/// The inline `f32x4` code with `fma`, as a kernel.
fn inline_kernel(jit: &mut Jit, f: MathFn) -> Kernel {
    jit.kernel(f, types::F32, MathFeatures { fma: true })
}

/// Checks `got` against `want` bit for bit, NaNs included (a math function's NaN is the same
/// on every level: `math::canonical_nan`); panics naming the first mismatches (a plain indexed
/// loop: the test crate is unoptimised).
fn assert_same(what: &str, xs: &[f32], got: &[f32], want: &[f32]) {
    assert_eq!((got.len(), want.len()), (xs.len(), xs.len()), "{what}: lengths");
    let mut bad = Vec::new();
    for i in 0..xs.len() {
        let (g, w) = (got[i], want[i]);
        if g.to_bits() != w.to_bits() && bad.len() < 8 {
            let x = xs[i];
            bad.push(format!(
                "x = {x:e} ({:#010x}): got {g:e} ({:#010x}), want {w:e} ({:#010x})",
                x.to_bits(),
                g.to_bits(),
                w.to_bits()
            ));
        }
    }
    if !bad.is_empty() {
        panic!("{what}: differs from the inline code:\n{}", bad.join("\n"));
    }
}

#[test]
fn levels_parse_name_and_clamp() {
    for level in SimdLevel::ALL {
        assert_eq!(SimdLevel::parse(level.name()), Some(level));
        assert_eq!(level.clamp_to_cpu().clamp_to_cpu(), level.clamp_to_cpu());
    }
    for bad in ["", "AVX2", "sse", "256", "avx512 "] {
        assert_eq!(SimdLevel::parse(bad), None, "{bad:?}");
    }
    let cpu = SimdLevel::detect();
    assert_eq!(cpu.clamp_to_cpu(), cpu);
    assert_eq!(SimdLevel::V128.clamp_to_cpu(), SimdLevel::V128);
    assert_eq!(SimdLevel::Avx512.clamp_to_cpu(), cpu);
    println!("this CPU: {}", cpu.name());
}

#[test]
fn routines_exist_exactly_where_promised() {
    let jit = Jit::new();
    let wide = levels();
    if !jit.features().fma {
        assert!(wide.is_empty(), "wide levels without fma");
    }
    for &f in MathFn::ALL {
        assert_eq!(routine_f32(SimdLevel::V128, f), None, "{}", f.name());
        for level in [SimdLevel::Avx2, SimdLevel::Avx512] {
            let r = routine_f32(level, f);
            let expected = EXPECTED.contains(&f) && wide.contains(&level);
            assert_eq!(r.is_some(), expected, "{} at {}", f.name(), level.name());
            if let Some(r) = r {
                let want = format!("tfn_wide_{}_f32_{}", f.name(), level.name());
                assert_eq!(r.symbol, want);
                assert!(symbols().contains(&(r.symbol, r.addr)), "{want} not in symbols()");
            }
            let sum = routine_sum_f32(level, f);
            assert_eq!(sum.is_some(), expected, "summing {} at {}", f.name(), level.name());
            if let Some((symbol, routine)) = sum {
                let want = format!("tfn_wide_{}_sum_f32_{}", f.name(), level.name());
                assert_eq!(symbol, want);
                assert!(symbols().contains(&(symbol, routine as *const u8)), "{want} listed");
            }
        }
    }
    let all = symbols();
    let mut names: Vec<&str> = all.iter().map(|s| s.0).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), all.len(), "symbols are unique");
    if cfg!(target_arch = "x86_64") {
        // A map and a summing routine per function and level, and the two helpers per level.
        assert_eq!(
            all.len(),
            4 * EXPECTED.len() + 2 * Helper::ALL.len(),
            "symbols() lists every level, runnable or not"
        );
    }
}

/// Every routine of `level` against the inline code on [`inputs`]; skipped (with a note) when
/// the CPU lacks the level.
fn sweep(level: SimdLevel) {
    if !levels().contains(&level) {
        return;
    }
    let mut jit = Jit::new();
    let xs = inputs();
    for f in EXPECTED {
        let want = run(inline_kernel(&mut jit, f), &xs, &xs);
        let got = call(routine_f32(level, f).expect("routine"), &xs);
        assert_same(&format!("{} at {}", f.name(), level.name()), &xs, &got, &want);
        println!("{} at {}: {} inputs identical", f.name(), level.name(), xs.len());
    }
}

#[test]
fn avx512_routines_match_the_inline_code_bit_for_bit() {
    sweep(SimdLevel::Avx512);
}

#[test]
fn avx2_routines_match_the_inline_code_bit_for_bit() {
    sweep(SimdLevel::Avx2);
}

#[test]
fn avx2_and_avx512_agree_bit_for_bit() {
    let [a, b] = [SimdLevel::Avx2, SimdLevel::Avx512];
    if !levels().contains(&b) {
        return;
    }
    let mut xs = specials();
    let mut rng = Rng::new(11);
    xs.extend((0..1 << 18).map(|_| f32::from_bits(rng.next_u64() as u32)));
    for f in EXPECTED {
        let (ra, rb) = (routine_f32(a, f).expect("avx2"), routine_f32(b, f).expect("avx512"));
        assert_same(&format!("{}: avx512 vs avx2", f.name()), &xs, &call(rb, &xs), &call(ra, &xs));
    }
}

#[test]
fn every_length_offset_and_aliasing_is_exact() {
    let mut jit = Jit::new();
    let levels = levels();
    if levels.is_empty() {
        return;
    }
    let mut rng = Rng::new(7);
    let mut pool = specials();
    pool.extend((0..5000).map(|_| f32::from_bits(rng.next_u64() as u32)));
    pool.extend((0..5000).map(|_| (rng.next_u64() as i32) as f32 * 1e-8));
    const GUARD: usize = 19;
    let sentinel = f32::from_bits(0x7fa5_a5a5);
    let lengths: Vec<usize> = (0..=40).chain([63, 64, 65, 511, 512, 513, 4099]).collect();
    for f in EXPECTED {
        let kernel = inline_kernel(&mut jit, f);
        for &level in &levels {
            let routine = routine_f32(level, f).expect("routine").as_fn();
            for &n in &lengths {
                for offset in [0, 1, 3] {
                    let start = (n * 31 + offset * 7) % (pool.len() - n);
                    let src = &pool[start..start + n];
                    let want = run(kernel, src, src);
                    // Out of place, `dst` unaligned by `offset`, guards on both sides.
                    let mut dst = vec![sentinel; n + 2 * GUARD + offset];
                    let body = GUARD + offset;
                    // SAFETY: `src` holds `n` values, `dst[body..]` has room for `n`.
                    unsafe { routine(src.as_ptr(), dst.as_mut_ptr().add(body), n) };
                    let what =
                        format!("{} at {}, n = {n}, offset {offset}", f.name(), level.name());
                    assert_same(&what, src, &dst[body..body + n], &want);
                    let outside = dst[..body].iter().chain(&dst[body + n..]);
                    assert!(
                        outside.into_iter().all(|v| v.to_bits() == sentinel.to_bits()),
                        "{what}: wrote outside 0..n"
                    );
                    // In place.
                    let mut buf = vec![sentinel; n + 2 * GUARD + offset];
                    buf[body..body + n].copy_from_slice(src);
                    let p = buf.as_mut_ptr();
                    // SAFETY: `p + body` holds `n` values, read and written in place.
                    unsafe { routine(p.add(body), p.add(body), n) };
                    assert_same(&format!("{what} in place"), src, &buf[body..body + n], &want);
                    let outside = buf[..body].iter().chain(&buf[body + n..]);
                    assert!(
                        outside.into_iter().all(|v| v.to_bits() == sentinel.to_bits()),
                        "{what} in place: wrote outside 0..n"
                    );
                }
            }
        }
    }
}

/// The order a kernel's row pass adds `ys` into its accumulators (`WideSumF32`'s contract):
/// whole groups of `ACC_LANES` lane by lane into `acc[0..ACC_LANES]`, then whole groups of 4
/// into `acc[0..4]`, then one by one into `acc[ACC_LANES]`.
fn inline_sum_order(acc: &mut [f32; SUM_ACC], ys: &[f32]) {
    let full = ys.len() / ACC_LANES * ACC_LANES;
    let groups = full + (ys.len() - full) / 4 * 4;
    for (i, y) in ys.iter().enumerate() {
        let slot = if i < full {
            i % ACC_LANES
        } else if i < groups {
            (i - full) % 4
        } else {
            ACC_LANES
        };
        acc[slot] += y;
    }
}

#[test]
fn summing_routines_store_the_map_and_sum_in_the_inline_order() {
    let levels = levels();
    let mut rng = Rng::new(23);
    // Arguments where the functions are finite and the sums' rounding shows: mostly in
    // [-8, 1], some specials.
    let mut pool: Vec<f32> =
        (0..6000).map(|_| (rng.next_u64() % 9000) as f32 / 1000.0 - 8.0).collect();
    pool.extend(specials());
    let lengths: Vec<usize> = (0..=70).chain([79, 95, 96, 97, 127, 511, 512, 513, 4099]).collect();
    for f in EXPECTED {
        for &level in &levels {
            let map = routine_f32(level, f).expect("routine");
            let (_, sum) = routine_sum_f32(level, f).expect("summing routine");
            for &n in &lengths {
                let start = (n * 37) % (pool.len() - n);
                let src = &pool[start..start + n];
                let want = call(map, src);
                let mut want_acc = [0f32; SUM_ACC];
                for (i, a) in want_acc.iter_mut().enumerate() {
                    *a = i as f32 * 0.37 - 2.0; // running sums from earlier blocks
                }
                let mut acc = want_acc;
                inline_sum_order(&mut want_acc, &want);
                let what = format!("summing {} at {}, n = {n}", f.name(), level.name());
                let mut dst = vec![0f32; n];
                let none = std::ptr::null();
                // SAFETY: `src`, `dst` hold `n` values, `acc` SUM_ACC; the CPU runs `level`.
                unsafe { sum(src.as_ptr(), dst.as_mut_ptr(), n, acc.as_mut_ptr(), none) };
                assert_same(&what, src, &dst, &want);
                assert_same(&format!("{what}: sums"), &[0.0; SUM_ACC], &acc, &want_acc);
                // In place.
                let mut buf = src.to_vec();
                let mut acc = [0f32; SUM_ACC];
                let mut want_acc = [0f32; SUM_ACC];
                inline_sum_order(&mut want_acc, &want);
                let p = buf.as_mut_ptr();
                // SAFETY: as above, `p` read and written in place.
                unsafe { sum(p, p, n, acc.as_mut_ptr(), std::ptr::null()) };
                assert_same(&format!("{what} in place"), src, &buf, &want);
                assert_same(&format!("{what} in place: sums"), &[0.0; SUM_ACC], &acc, &want_acc);
                // Shifted: `f(src[i] - m)`, as the map of the differences.
                let m = 0.75f32;
                let diffs: Vec<f32> = src.iter().map(|x| x - m).collect();
                let want = call(map, &diffs);
                let mut want_acc = [0f32; SUM_ACC];
                inline_sum_order(&mut want_acc, &want);
                let mut acc = [0f32; SUM_ACC];
                let mut dst = vec![0f32; n];
                // SAFETY: as above, `m` one value.
                unsafe { sum(src.as_ptr(), dst.as_mut_ptr(), n, acc.as_mut_ptr(), &m) };
                assert_same(&format!("{what} shifted"), src, &dst, &want);
                assert_same(&format!("{what} shifted: sums"), &[0.0; SUM_ACC], &acc, &want_acc);
            }
        }
    }
}

/// The inline row pass's `max` step on `xs` (`WideMaxF32`'s contract): whole groups of
/// `ACC_LANES` lane by lane into `acc[0..ACC_LANES]`, whole groups of 4 into `acc[0..4]` (the
/// vector step: the larger, ties and NaN keeping the accumulator, then a NaN element's lane
/// all-ones for good), the rest into `acc[ACC_LANES]` (the scalar step: `x` if `acc < x` or
/// `x` is NaN).
fn inline_max_order(acc: &mut [f32; SUM_ACC], xs: &[f32]) {
    let full = xs.len() / ACC_LANES * ACC_LANES;
    let groups = full + (xs.len() - full) / 4 * 4;
    for (i, &x) in xs.iter().enumerate() {
        if i >= groups {
            if acc[ACC_LANES] < x || x.is_nan() {
                acc[ACC_LANES] = x;
            }
            continue;
        }
        let slot = if i < full { i % ACC_LANES } else { (i - full) % 4 };
        let picked = if acc[slot] < x { x } else { acc[slot] };
        let nan = if x.is_nan() { u32::MAX } else { 0 };
        acc[slot] = f32::from_bits(picked.to_bits() | nan);
    }
}

#[test]
fn max_and_scale_helpers_match_the_inline_steps() {
    let mut rng = Rng::new(31);
    let mut pool: Vec<f32> =
        (0..6000).map(|_| (rng.next_u64() % 20000) as f32 / 100.0 - 100.0).collect();
    pool.extend(specials());
    pool.extend([0.0, -0.0, -0.0, 0.0, f32::NEG_INFINITY, 1e30, -1e30]);
    let lengths: Vec<usize> = (0..=70).chain([79, 95, 96, 97, 127, 511, 512, 513, 4099]).collect();
    for level in levels() {
        let (max_symbol, max) = helper(level, Helper::Max).expect("max");
        let (scale_symbol, scale) = helper(level, Helper::Scale).expect("scale");
        assert_eq!(max_symbol, format!("tfn_wide_max_f32_{}", level.name()));
        assert_eq!(scale_symbol, format!("tfn_wide_scale_f32_{}", level.name()));
        // SAFETY: the addresses are these routines' (`helper`'s contract).
        let max = unsafe { std::mem::transmute::<*const u8, WideMaxF32>(max) };
        let scale = unsafe { std::mem::transmute::<*const u8, WideScaleF32>(scale) };
        for &n in &lengths {
            for start in [(n * 41) % (pool.len() - n), pool.len() - n] {
                let src = &pool[start..start + n];
                let what = format!("{} n = {n} from {start}", level.name());
                let mut want = [f32::NEG_INFINITY; SUM_ACC];
                want[3] = 5.0; // running values from earlier calls
                want[20] = 7.0;
                want[ACC_LANES] = -0.0;
                let mut got = want;
                inline_max_order(&mut want, src);
                // SAFETY: `src` holds `n` values, `got` SUM_ACC; the CPU runs `level`.
                unsafe { max(src.as_ptr(), n, got.as_mut_ptr()) };
                let bits = |a: &[f32]| a.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "max {what}");
                let k = 0.3f32;
                let want: Vec<f32> = src.iter().map(|x| x * k).collect();
                let mut buf = src.to_vec();
                let p = buf.as_mut_ptr();
                // SAFETY: `p` holds `n` values, read and written in place.
                unsafe { scale(p, p, n, &k) };
                assert_same(&format!("scale {what}"), src, &buf, &want);
            }
        }
    }
}

/// The running max, sum and sum of squares and the shifting scale from every start within a
/// cache line (a NumPy array starts
/// 16 bytes past one; the AVX-512 routines then load whole lines and shift them into place) and
/// lengths around the aligned loop's bounds (where it hands over to the unaligned one): the
/// inline loop's bits, NaNs and running values from earlier calls included.
#[test]
fn running_sum_and_max_helpers_match_the_inline_steps_at_every_alignment() {
    let mut rng = Rng::new(47);
    let mut pool: Vec<f32> =
        (0..9000).map(|_| (rng.next_u64() % 20000) as f32 / 64.0 - 150.0).collect();
    for (k, x) in specials().into_iter().enumerate() {
        pool[(k * 977) % 9000] = x;
    }
    let lengths: Vec<usize> =
        (0..=130).chain([143, 144, 145, 159, 160, 161, 1023, 1024, 1025, 4099]).collect();
    // 16 f32 per line, plus a 64-byte-aligned base: `base[off..]` starts `off` lanes into one.
    let mut backing = vec![0f32; pool.len() + 32];
    let lead = (16 - (backing.as_ptr() as usize % 64) / 4) % 16;
    for level in levels() {
        let (add_symbol, add) = helper(level, Helper::Add).expect("add");
        let (_, max) = helper(level, Helper::Max).expect("max");
        assert_eq!(add_symbol, format!("tfn_wide_add_f32_{}", level.name()));
        // SAFETY: the addresses are these routines' (`helper`'s contract).
        let add = unsafe { std::mem::transmute::<*const u8, WideAddF32>(add) };
        let max = unsafe { std::mem::transmute::<*const u8, WideMaxF32>(max) };
        let (_, squares) = helper(level, Helper::AddSquares).expect("add_squares");
        let (_, shift_scale) = helper(level, Helper::ShiftScale).expect("shift_scale");
        // SAFETY: as above.
        let squares = unsafe { std::mem::transmute::<*const u8, WideAddSquaresF32>(squares) };
        let shift_scale =
            unsafe { std::mem::transmute::<*const u8, WideShiftScaleF32>(shift_scale) };
        for &n in &lengths {
            for off in 0..16 {
                let start = lead + off;
                let from = (n * 37 + off * 101) % (pool.len() - n);
                backing[start..start + n].copy_from_slice(&pool[from..from + n]);
                let src = &backing[start..start + n];
                assert_eq!((src.as_ptr() as usize % 64) / 4, off);
                let what = format!("{} n = {n} at lane {off}", level.name());
                let bits = |a: &[f32]| a.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                let mut want = [0f32; SUM_ACC];
                want[5] = 3.25; // running values from earlier calls
                want[ACC_LANES] = -1.5;
                let mut got = want;
                inline_sum_order(&mut want, src);
                // SAFETY: `src` holds `n` values, `got` SUM_ACC; the CPU runs `level`.
                unsafe { add(src.as_ptr(), n, got.as_mut_ptr()) };
                // Where two different NaNs meet in one add, which one comes out depends on the
                // operand order the code generator picked (ARCHITECTURE.md, "NaNs too").
                let nan_blind = |a: &[f32]| -> Vec<u32> {
                    a.iter().map(|x| if x.is_nan() { u32::MAX } else { x.to_bits() }).collect()
                };
                assert_eq!(nan_blind(&got), nan_blind(&want), "add {what}");
                let mut want = [f32::NEG_INFINITY; SUM_ACC];
                want[9] = 2.0;
                let mut got = want;
                inline_max_order(&mut want, src);
                // SAFETY: as above.
                unsafe { max(src.as_ptr(), n, got.as_mut_ptr()) };
                assert_eq!(bits(&got), bits(&want), "max {what}");
                // A summing routine (softmax's `exp(x - max)`, summed), from `src` and in place.
                let map = routine_f32(level, MathFn::Exp).expect("exp");
                let (_, exp_sum) = routine_sum_f32(level, MathFn::Exp).expect("exp summing");
                let m = 40.5f32;
                let diffs: Vec<f32> = src.iter().map(|x| x - m).collect();
                let want = call(map, &diffs);
                let mut want_acc = [0.25f32; SUM_ACC];
                let mut got_acc = want_acc;
                inline_sum_order(&mut want_acc, &want);
                let mut dst = vec![0f32; n];
                // SAFETY: `src`, `dst` hold `n` values, `m` one; the CPU runs `level`.
                unsafe { exp_sum(src.as_ptr(), dst.as_mut_ptr(), n, got_acc.as_mut_ptr(), &m) };
                assert_same(&format!("exp sum {what}"), src, &dst, &want);
                assert_eq!(nan_blind(&got_acc), nan_blind(&want_acc), "exp sum {what}: sums");
                let saved = backing.clone();
                let p = backing[start..].as_mut_ptr();
                let mut got_acc = [0.25f32; SUM_ACC];
                // SAFETY: as above, read and written in place.
                unsafe { exp_sum(p, p, n, got_acc.as_mut_ptr(), &m) };
                assert_same(
                    &format!("exp sum in place {what}"),
                    &want,
                    &backing[start..start + n],
                    &want,
                );
                assert_eq!(nan_blind(&got_acc), nan_blind(&want_acc), "in place {what}: sums");
                backing.copy_from_slice(&saved);
                let src = &backing[start..start + n];
                for shift in [None, Some(-2.75f32)] {
                    // The inline steps: `d = x - m` (or `x`), `d·d` summed; `d·s` stored.
                    let d: Vec<f32> = src.iter().map(|&x| shift.map_or(x, |m| x - m)).collect();
                    let sq: Vec<f32> = d.iter().map(|&d| d * d).collect();
                    let mut want = [0.5f32; SUM_ACC];
                    let mut got = want;
                    inline_sum_order(&mut want, &sq);
                    let m = shift.as_ref().map_or(std::ptr::null(), |m| m as *const f32);
                    // SAFETY: as above; `m` null or one value.
                    unsafe { squares(src.as_ptr(), n, got.as_mut_ptr(), m) };
                    assert_eq!(nan_blind(&got), nan_blind(&want), "add_squares {shift:?} {what}");
                    let k = 0.37f32;
                    let want: Vec<f32> = d.iter().map(|&d| d * k).collect();
                    let mut out = vec![0f32; n];
                    // SAFETY: `out` holds `n` values; `m` null or one value, `k` one.
                    unsafe { shift_scale(src.as_ptr(), out.as_mut_ptr(), n, m, &k) };
                    assert_same(&format!("shift_scale {shift:?} {what}"), src, &out, &want);
                }
            }
        }
    }
}
