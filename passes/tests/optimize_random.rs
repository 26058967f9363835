//! Property test: random programs (elementwise ops, constants, broadcasting, reductions,
//! transposes, `where`; f32, f64 and i32) give the same interpreter results before and after
//! optimisation, and the optimised graph verifies. Seeds are fixed, so a failure names a
//! reproducible seed. f32 results agree within 1e-5 relative to max(1, |a|, |b|) (rules such
//! as factoring reassociate a rounding or two), f64 within 1e-12, integers exactly.

mod optimize_common;

use optimize_common::random_graph::random_graph;
use optimize_common::{assert_same_results, optimize_builtin};
use tfn_ir::DType;

#[test]
fn random_programs_keep_their_results() {
    let mut fired = 0;
    for seed in 0..96u64 {
        let dtype = [DType::F32, DType::F64, DType::I32][(seed % 3) as usize];
        let graph = random_graph(seed, 40, 3, dtype);
        tfn_ir::verify(&graph).unwrap_or_else(|e| panic!("seed {seed}: generator: {e}"));
        let out = optimize_builtin(&graph);
        fired += out.report.rules_fired.len();
        assert_same_results(&graph, &out.graph, seed);
    }
    assert!(fired > 96, "rules fired only {fired} times over all programs");
}

#[test]
fn optimisation_is_deterministic() {
    for seed in [3u64, 7, 11] {
        let graph = random_graph(seed, 60, 4, DType::F32);
        let a = optimize_builtin(&graph);
        let b = optimize_builtin(&graph);
        assert_eq!(a.graph, b.graph, "seed {seed}");
        assert_eq!(a.report.rules_fired, b.report.rules_fired, "seed {seed}");
    }
}
