//! Helpers shared by the optimiser's integration tests: parse a graph, optimise it with the
//! built-in rules, verify the result, and compare interpreter results before and after.
#![allow(dead_code)]

pub mod random_graph;

use tfn_ir::{Dim, Graph, Tensor, TensorType};
use tfn_passes::optimize::soundness::{compare, random_tensor, SplitMix};
use tfn_passes::optimize::{optimize, Limits, Optimized, RuleSet};

pub fn parse(text: &str) -> Graph {
    tfn_ir::parse_graph(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Optimises with the built-in rules; the result must pass the IR verifier.
pub fn optimize_builtin(graph: &Graph) -> Optimized {
    let out = optimize(graph, &RuleSet::builtin(), &Limits::default())
        .unwrap_or_else(|e| panic!("{e}\n{}", tfn_ir::print_graph(graph)));
    if let Err(e) = tfn_ir::verify(&out.graph) {
        panic!("optimised graph does not verify: {e}\n{}", tfn_ir::print_graph(&out.graph));
    }
    out
}

/// Random inputs for `graph`'s parameters, every symbolic dimension of size `sym_size`.
pub fn random_inputs(graph: &Graph, sym_size: u64, rng: &mut SplitMix) -> Vec<Tensor> {
    graph
        .params
        .iter()
        .map(|p| {
            let dims =
                p.ty.shape.0.iter().map(|d| Dim::Const(d.as_const().unwrap_or(sym_size))).collect();
            random_tensor(&TensorType { dtype: p.ty.dtype, shape: tfn_ir::Shape(dims) }, rng)
        })
        .collect()
}

/// Runs both graphs on the same random inputs and compares every output (NaN-aware, f32
/// rtol 1e-5, f64 rtol 1e-12, relative to max(1, |a|, |b|)).
pub fn assert_same_results(before: &Graph, after: &Graph, seed: u64) {
    let mut rng = SplitMix(seed);
    for sym_size in [1, 3] {
        let inputs = random_inputs(before, sym_size, &mut rng);
        let Ok(expected) = tfn_ir::run(before, &inputs) else { continue };
        let got = tfn_ir::run(after, &inputs).unwrap_or_else(|e| {
            panic!("optimised graph fails: {e}\n{}", tfn_ir::print_graph(after))
        });
        assert_eq!(expected.len(), got.len());
        for (i, (e, g)) in expected.iter().zip(&got).enumerate() {
            if let Err(reason) = compare(e, g) {
                panic!(
                    "output {i}: {reason}\nexpected {e:?}\ngot {g:?}\nbefore:\n{}\nafter:\n{}",
                    tfn_ir::print_graph(before),
                    tfn_ir::print_graph(after)
                );
            }
        }
    }
}
