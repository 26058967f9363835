//! Property test (proptest, with shrinking) over random op graphs — random broadcast shapes of rank 2 or 3, dtypes, elementwise
//! chains, reductions over any non-empty set of axes (row and column reductions, mixed axes)
//! with and without `keepdim`, casts — fused, JIT-compiled and compared with the interpreter. Tolerance: `tfn-test-utils`' accumulated class: chains of transcendentals (each within a
//! few ULP) and f32 reduction sums (the interpreter accumulates in f64) compound differences.
//! The generator is `tfn_test_utils::random_graph`, shared with the AOT differential test.

use crate::common;

use common::{check_against_interp, views};
use proptest::prelude::*;
use tfn_backend::{CompileOptions, CompiledFunction, Streaming};
use tfn_ir::DType;
use tfn_test_utils::{bits, proptest_config, random_graph, random_inputs, Rng, Tolerance};

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

/// Builds the graph of one case and runs it at sizes above the parallel threshold (odd, so
/// chunks are uneven) on 1, 2, 3 and 4 threads, and with outputs streamed (1 and 3 threads):
/// every output must be the same bits.
fn check_thread_counts(seed: u64, dtype: DType, rank: usize, ops: usize) -> Result<(), String> {
    let mut rng = Rng::new(seed);
    let graph = random_graph(&mut rng, dtype, rank, ops);
    let sizes: &[usize] = if rank == 3 { &[43, 45, 47] } else { &[263, 271, 301] };
    let inputs = random_inputs(&mut rng, &graph, sizes, (-3.0, 3.0));
    // Per output: its shape and its elements' bits.
    type Bits = Vec<(Vec<usize>, Vec<u64>)>;
    let run = |threads, stream| -> Result<Bits, String> {
        let options = CompileOptions { threads, stream, ..Default::default() };
        let f = CompiledFunction::compile(&graph, &options).map_err(|e| format!("compile: {e}"))?;
        let outs = f.run(&views(&inputs)).map_err(|e| format!("{threads} threads: {e}"))?;
        Ok(outs.iter().map(|t| (t.shape().to_vec(), bits(t))).collect())
    };
    let one = run(1, Streaming::Never)?;
    // Thread counts, and outputs streamed to memory block by block (`executor/streamed.rs`).
    let runs = (2..=4).map(|t| (t, Streaming::Never)).chain([1, 3].map(|t| (t, Streaming::Always)));
    for (threads, stream) in runs {
        if run(threads, stream)? != one {
            return Err(format!(
                "outputs differ between 1 and {threads} threads ({stream:?})\n{}",
                tfn_ir::text::print_graph(&graph)
            ));
        }
    }
    Ok(())
}

// 160 cases (40 on 1 to 4 threads) from a fixed seed: `cargo test` is deterministic;
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
    #![proptest_config(proptest_config(40, 0x9E37_79B9))]

    #[test]
    fn random_graphs_are_bit_identical_on_1_to_4_threads(
        seed in any::<u64>(),
        dtype in 0..DTYPES.len(),
        rank in 2usize..=3,
        ops in 1usize..=10,
    ) {
        if let Err(e) = check_thread_counts(seed, DTYPES[dtype], rank, ops) {
            return Err(TestCaseError::fail(format!("seed {seed} ops {ops}: {e}")));
        }
    }
}
