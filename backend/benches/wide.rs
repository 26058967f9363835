//! ns/element of the wide routines (`tfn_backend::wide`) against the inline 128-bit code of
//! the same function (`math::emit` on `f32x4` with `fma`, in a loop unrolled 4× as the kernel
//! code generator emits it, and not unrolled), on a 512-element block in L1 and on 256K
//! elements (1 MiB in, 1 MiB out), out of place.
//!
//! `cargo bench -p tfn-backend --bench wide` (pin it: `taskset -c 0 cargo bench …`);
//! `TFN_WIDE_BENCH_ONLY=tanh,exp` restricts the functions. Each cell is the minimum over
//! samples of ~2 ms: timings on a shared machine are noisy, compare within one run.

#[path = "../tests/math_jit/mod.rs"]
mod math_jit;

use std::time::Instant;

use cranelift::codegen::ir::types;
use math_jit::{Jit, Kernel};
use tfn_backend::math::{MathFeatures, MathFn};
use tfn_backend::wide::{routine_f32, SimdLevel, WideF32};

const FNS: [MathFn; 15] = [
    MathFn::Tanh,
    MathFn::Exp,
    MathFn::ExpNonPositive,
    MathFn::Sigmoid,
    MathFn::Erf,
    MathFn::Log,
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

/// A typical argument range of `f` (all paths of the function taken).
fn domain(f: MathFn) -> (f32, f32) {
    match f {
        MathFn::ExpNonPositive => (-30.0, 0.0),
        MathFn::Log | MathFn::Log1p => (0.01, 100.0),
        MathFn::Asin | MathFn::Acos => (-1.0, 1.0),
        MathFn::Exp | MathFn::Sinh | MathFn::Cosh | MathFn::Expm1 => (-20.0, 20.0),
        _ => (-8.0, 8.0),
    }
}

fn data(f: MathFn, n: usize) -> Vec<f32> {
    let (lo, hi) = domain(f);
    let mut state = 0x2545_f491_4f6c_dd1du64;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            lo + (hi - lo) * ((state >> 40) as f32 / (1u64 << 24) as f32)
        })
        .collect()
}

/// Minimum ns per element of `call(src, dst)` over ~2 ms samples.
fn measure(n: usize, mut call: impl FnMut()) -> f64 {
    let reps = (2_000_000 / (n * 2)).max(1);
    for _ in 0..reps {
        call();
    }
    let samples = if n > 10_000 { 15 } else { 25 };
    (0..samples)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..reps {
                call();
            }
            t.elapsed().as_nanos() as f64 / (reps * n) as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let only = std::env::var("TFN_WIDE_BENCH_ONLY").ok();
    let mut jit = Jit::new();
    if !jit.features().fma {
        println!("no fma: no wide routines on this CPU");
        return;
    }
    let levels: Vec<SimdLevel> = [SimdLevel::Avx2, SimdLevel::Avx512]
        .into_iter()
        .filter(|l| l.clamp_to_cpu() == *l)
        .collect();
    let fma = MathFeatures { fma: true };
    println!("ns/element, out of place; speed-up = 128-bit 4× unrolled / routine");
    print!("| fn | n | 128 (1×) | 128 (4×) |");
    for l in &levels {
        print!(" {} | speed-up |", l.name());
    }
    println!();
    print!("|---|---|---|---|");
    for _ in &levels {
        print!("---|---|");
    }
    println!();
    for f in FNS {
        if only.as_ref().is_some_and(|o| !o.split(',').any(|n| n == f.name())) {
            continue;
        }
        let k1 = jit.kernel_unrolled(f, types::F32, fma, 1);
        let k4 = jit.kernel_unrolled(f, types::F32, fma, 4);
        for n in [512usize, 256 * 1024] {
            let src = data(f, n);
            let mut dst = vec![0.0f32; n];
            let jit_time = |k: Kernel, dst: &mut Vec<f32>| {
                let (s, d) = (src.as_ptr(), dst.as_mut_ptr());
                // SAFETY: `s` and `d` hold `n` values each.
                measure(n, || unsafe { k(s.cast(), s.cast(), d.cast(), n as u64) })
            };
            let t1 = jit_time(k1, &mut dst);
            let t4 = jit_time(k4, &mut dst);
            print!(
                "| {} | {} | {t1:.3} | {t4:.3} |",
                f.name(),
                if n == 512 { "512".into() } else { format!("{}K", n / 1024) }
            );
            for &l in &levels {
                let r: WideF32 = routine_f32(l, f).expect("routine").as_fn();
                let (s, d) = (src.as_ptr(), dst.as_mut_ptr());
                // SAFETY: the CPU runs `l`; `s` and `d` hold `n` values each.
                let t = measure(n, || unsafe { r(s, d, n) });
                print!(" {t:.3} | {:.2}× |", t4 / t);
            }
            println!();
        }
    }
}
