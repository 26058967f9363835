//! Splitting kernels across threads: row reductions, column reductions and elementwise
//! kernels large enough to be split give bit-identical results on 1 and 2 threads (the split
//! is deterministic and every reduction over a row or column stays in one thread).

mod common;

use common::{random_inputs, views, Rng};
use tfn_backend::{CompileOptions, CompiledFunction};
use tfn_ir::Tensor;

const CASES: [&str; 5] =
    ["softmax.tir", "column_stats.tir", "gelu.tir", "scans.tir", "iota_vector.tir"];

fn bits(t: &Tensor) -> Vec<u64> {
    match t {
        Tensor::F32(a) => a.iter().map(|x| x.to_bits() as u64).collect(),
        Tensor::F64(a) => a.iter().map(|x| x.to_bits()).collect(),
        _ => Vec::new(),
    }
}

#[test]
fn two_threads_match_one_bit_for_bit() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    for case in CASES {
        let src = std::fs::read_to_string(dir.join(case)).expect("case exists");
        let graph = tfn_ir::text::parse_graph(&src).expect("case parses");
        // 1030 × 1030 elements: above the parallel threshold, with vector tails everywhere.
        let inputs = random_inputs(&mut Rng(7), &graph, &[1030], (-2.0, 2.0));
        let run = |threads| {
            let f = CompiledFunction::compile(
                &graph,
                &CompileOptions { threads, ..Default::default() },
            )
            .expect("compiles");
            f.run(&views(&inputs)).expect("runs")
        };
        let (one, two) = (run(1), run(2));
        for (o, (a, b)) in one.iter().zip(&two).enumerate() {
            assert!(bits(a) == bits(b), "{case}: output {o} differs between 1 and 2 threads");
        }
    }
}
