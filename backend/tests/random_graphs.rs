//! Property test (proptest, with shrinking) over random op graphs — random broadcast shapes of rank 2 or 3, dtypes, elementwise
//! chains, reductions over any non-empty set of axes (row and column reductions, mixed axes)
//! with and without `keepdim`, casts — fused, JIT-compiled and compared with the interpreter. Tolerance: `tfn-test-utils`' accumulated class: chains of transcendentals (each within a
//! few ULP) and f32 reduction sums (the interpreter accumulates in f64) compound differences.
//! The generator is `tfn_test_utils::random_graph`, shared with the AOT differential test.
//! A second property demands the same bits on 1 to 4 threads, with streamed outputs and at
//! every SIMD level, also for graphs stored as `f16`/`bf16` (`tfn_test_utils::stored_in`) and
//! inputs holding NaNs, infinities, signed zeros and denormals; a NaN must be in the same
//! place, its sign and payload may differ (see [`nan_blind_bits`]). It found that the wide
//! routines returned another NaN than the inline code for some inputs (`cosh` of a NaN in a
//! debug build), hence `math::canonical_nan`.

use crate::common;

use common::{check_against_interp, views};
use proptest::prelude::*;
use tfn_backend::{CompileOptions, CompiledFunction, SimdLevel, Streaming};
use tfn_ir::{DType, Tensor};
use tfn_test_utils::{
    bits, proptest_config, random_graph, random_inputs, stored_in, Rng, Tolerance,
};

const DTYPES: [DType; 4] = [DType::F32, DType::F64, DType::I32, DType::I64];

/// Builds the graph of one case and checks it on several sizes, 1 or 2 threads.
fn check_case(seed: u64, dtype: DType, rank: usize, ops: usize) -> Result<(), String> {
    let mut rng = Rng::new(seed);
    let graph = random_graph(&mut rng, dtype, rank, ops);
    let size_sets: &[&[usize]] =
        // Each symbol takes one size of a set at random. The last sets have rows long enough
        // for wide routines (`codegen/stage.rs`), over several blocks for rank 2.
        if rank == 3 {
            &[&[1], &[2, 5, 19], &[3, 1, 37], &[1, 3, 130]]
        } else {
            &[&[1], &[5, 9], &[3, 37], &[3, 1100]]
        };
    for sizes in size_sets {
        let inputs = random_inputs(&mut rng, &graph, sizes, (-3.0, 3.0));
        let checked =
            check_against_interp(&graph, &inputs, Tolerance::ACCUMULATED, 1 + (seed as usize % 2))
                .and_then(|f| match f.interpreted_kernels().as_slice() {
                    [] => Ok(()),
                    slow => Err(format!("kernels run by the interpreter: {slow:?}")),
                });
        checked
            .map_err(|e| format!("sizes {sizes:?}: {e}\n{}", tfn_ir::text::print_graph(&graph)))?;
    }
    Ok(())
}

/// The dtypes of the bit-identity property: the computing ones, and `f32` graphs stored as
/// `f16` and `bf16` ([`stored_in`]: widened inputs, narrowed outputs).
const IDENTITY_DTYPES: [DType; 6] =
    [DType::F32, DType::F64, DType::I32, DType::I64, DType::F16, DType::BF16];

/// Builds the graph of one case and runs it at sizes above the parallel threshold (odd, so
/// chunks are uneven) on 1, 2, 3 and 4 threads, with outputs streamed (1 and 3 threads), and
/// at every SIMD level this CPU has (1 and 3 threads), half the cases with special values in
/// the inputs: every output must be the same bits, NaNs in the same places.
fn check_thread_counts(seed: u64, dtype: DType, rank: usize, ops: usize) -> Result<(), String> {
    let mut rng = Rng::new(seed);
    let graph = match dtype {
        DType::F16 | DType::BF16 => {
            stored_in(&random_graph(&mut rng, DType::F32, rank, ops), dtype)
        }
        _ => random_graph(&mut rng, dtype, rank, ops),
    };
    let sizes: &[usize] = if rank == 3 { &[43, 45, 47] } else { &[263, 271, 1031] };
    let mut inputs = random_inputs(&mut rng, &graph, sizes, (-3.0, 3.0));
    if seed % 2 == 1 {
        with_specials(&mut rng, &mut inputs);
    }
    // Per output: its shape and its elements' bits.
    type Bits = Vec<(Vec<usize>, Vec<u64>)>;
    let run = |threads, stream, simd| -> Result<Bits, String> {
        let options = CompileOptions { threads, stream, simd };
        let f = CompiledFunction::compile(&graph, &options).map_err(|e| format!("compile: {e}"))?;
        let outs = f.run(&views(&inputs)).map_err(|e| format!("{threads} threads: {e}"))?;
        Ok(outs.iter().map(|t| (t.shape().to_vec(), nan_blind_bits(t))).collect())
    };
    let cpu = SimdLevel::detect();
    let one = run(1, Streaming::Never, cpu)?;
    // Thread counts, outputs streamed to memory block by block (`executor/streamed.rs`), and
    // the narrower SIMD levels (their wide routines, or none).
    let mut runs: Vec<(usize, Streaming, SimdLevel)> = (2..=4)
        .map(|t| (t, Streaming::Never, cpu))
        .chain([1, 3].map(|t| (t, Streaming::Always, cpu)))
        .collect();
    for level in SimdLevel::ALL.into_iter().filter(|&l| l.clamp_to_cpu() == l && l != cpu) {
        runs.extend([1, 3].map(|t| (t, Streaming::Never, level)));
    }
    for (threads, stream, simd) in runs {
        let got = run(threads, stream, simd)?;
        if got != one {
            return Err(format!(
                "outputs differ between 1 thread at {} and {threads} threads at {} ({stream:?}): \
                 {}\n{}",
                cpu.name(),
                simd.name(),
                first_difference(&one, &got),
                tfn_ir::text::print_graph(&graph)
            ));
        }
    }
    Ok(())
}

/// `t`'s elements' bits, every NaN as one pattern (`u64::MAX`): where two different NaNs meet
/// in one `fma`, x86 returns the one its operand order puts first, and Cranelift's register
/// allocation picks that order per kernel, so a NaN's sign and payload may differ between two
/// kernels of one program (its position may not). Math functions themselves return the same
/// NaN everywhere (`tests/wide.rs` compares their NaN bits too).
fn nan_blind_bits(t: &Tensor) -> Vec<u64> {
    let nan = |b: bool, bits: u64| if b { u64::MAX } else { bits };
    match t {
        Tensor::F32(a) => a.iter().map(|x| nan(x.is_nan(), u64::from(x.to_bits()))).collect(),
        Tensor::F64(a) => a.iter().map(|x| nan(x.is_nan(), x.to_bits())).collect(),
        Tensor::F16(a) => a.iter().map(|x| nan(x.is_nan(), u64::from(x.to_bits()))).collect(),
        Tensor::BF16(a) => a.iter().map(|x| nan(x.is_nan(), u64::from(x.to_bits()))).collect(),
        _ => bits(t),
    }
}

/// Sets about one float element in 16 of `inputs` to a special value: NaNs of both signs and
/// with a payload, infinities, signed zeros, a denormal.
fn with_specials(rng: &mut Rng, inputs: &mut [Tensor]) {
    const SPECIALS: [u32; 8] = [
        0x7fc0_0000,
        0xffc0_0000,
        0x7fc1_2345,
        0x7f80_0000,
        0xff80_0000,
        0x0000_0000,
        0x8000_0000,
        0x0000_0001,
    ];
    for t in inputs {
        let mut pick = || {
            let k = rng.index(16 * SPECIALS.len());
            SPECIALS.get(k).map(|&b| f32::from_bits(b))
        };
        match t {
            Tensor::F32(a) => a.iter_mut().for_each(|v| *v = pick().unwrap_or(*v)),
            Tensor::F64(a) => a.iter_mut().for_each(|v| *v = pick().map_or(*v, f64::from)),
            Tensor::F16(a) => {
                a.iter_mut().for_each(|v| *v = pick().map_or(*v, tfn_ir::half::f16::from_f32))
            }
            Tensor::BF16(a) => {
                a.iter_mut().for_each(|v| *v = pick().map_or(*v, tfn_ir::half::bf16::from_f32))
            }
            _ => {}
        }
    }
}

/// Where two runs' outputs (shape and bits per output) first differ.
fn first_difference(a: &[(Vec<usize>, Vec<u64>)], b: &[(Vec<usize>, Vec<u64>)]) -> String {
    for (k, ((sa, ba), (sb, bb))) in a.iter().zip(b).enumerate() {
        if sa != sb {
            return format!("output {k} has shape {sa:?} against {sb:?}");
        }
        if let Some(i) = ba.iter().zip(bb).position(|(x, y)| x != y) {
            let count = ba.iter().zip(bb).filter(|(x, y)| x != y).count();
            return format!(
                "output {k}: {count} elements, the first at flat index {i}: {:#x} against {:#x}",
                ba[i], bb[i]
            );
        }
    }
    "a different number of outputs".into()
}

// 160 cases (40 on thread counts and SIMD levels) from a fixed seed: `cargo test` is deterministic;
// `PROPTEST_CASES` and `PROPTEST_RNG_SEED` explore further. A failure shrinks to the fewest
// operations.
proptest! {
    #![proptest_config(proptest_config(160, 0x9E37_79B9))]

    #[test]
    fn random_graphs_match_the_interpreter(
        seed in any::<u64>(),
        dtype in 0..DTYPES.len(),
        rank in 2usize..=3,
        ops in 1usize..=10,
    ) {
        if let Err(e) = check_case(seed, DTYPES[dtype], rank, ops) {
            return Err(TestCaseError::fail(format!("seed {seed} ops {ops}: {e}")));
        }
    }
}

proptest! {
    #![proptest_config(proptest_config(60, 0x9E37_79B9))]

    #[test]
    fn random_graphs_are_bit_identical_on_any_thread_count_and_simd_level(
        seed in any::<u64>(),
        dtype in 0..IDENTITY_DTYPES.len(),
        rank in 2usize..=3,
        ops in 1usize..=10,
    ) {
        if let Err(e) = check_thread_counts(seed, IDENTITY_DTYPES[dtype], rank, ops) {
            return Err(TestCaseError::fail(format!("seed {seed} ops {ops}: {e}")));
        }
    }
}
