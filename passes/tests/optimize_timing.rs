//! Optimisation time of a gelu-sized graph and of a 200-op random graph. Printed, not
//! asserted (timing depends on the machine and the build profile); run with
//! `cargo test --release -p tfn-passes --test it optimize_timing -- --nocapture` to see the
//! numbers. What is asserted: each run ends for a reported reason and the result verifies.

use crate::optimize_common;

use optimize_common::random_graph::random_graph;
use optimize_common::{assert_same_results, optimize_builtin, parse};
use std::time::Instant;

const GELU: &str = "func gelu(x: f32[s0]) -> (f32[s0]) {
  sym s0 = input(param 0 axis 0)
  %0 = param 0 : f32[s0]
  %1 = const 0.044715 : f32[]
  %2 = mul %1, %0 : f32[s0]
  %3 = mul %2, %0 : f32[s0]
  %4 = mul %3, %0 : f32[s0]
  %5 = add %0, %4 : f32[s0]
  %6 = const 0.7978845608 : f32[]
  %7 = mul %6, %5 : f32[s0]
  %8 = tanh %7 : f32[s0]
  %9 = const 1.0 : f32[]
  %10 = add %9, %8 : f32[s0]
  %11 = const 0.5 : f32[]
  %12 = mul %11, %0 : f32[s0]
  %13 = mul %12, %10 : f32[s0]
  return %13
}";

fn best_of(
    runs: usize,
    graph: &tfn_ir::Graph,
) -> (std::time::Duration, tfn_passes::optimize::Optimized) {
    let mut best = None;
    let mut last = optimize_builtin(graph);
    for _ in 0..runs {
        let start = Instant::now();
        last = optimize_builtin(graph);
        let t = start.elapsed();
        best = Some(best.map_or(t, |b: std::time::Duration| b.min(t)));
    }
    (best.unwrap_or_default(), last)
}

#[test]
fn optimisation_time_of_gelu_and_a_200_op_graph() {
    let gelu = parse(GELU);
    let (t, out) = best_of(5, &gelu);
    println!(
        "gelu: {} -> {} nodes in {t:?} ({} iterations, {} e-nodes, {})",
        gelu.nodes.len(),
        out.graph.nodes.len(),
        out.report.iterations,
        out.report.egraph_nodes,
        out.report.stop_reason
    );
    assert_eq!(out.report.stop_reason, tfn_passes::optimize::StopReason::Saturated);
    assert_same_results(&gelu, &out.graph, 1);

    let big = random_graph(2024, 260, 120, tfn_ir::DType::F32);
    let (t, out) = best_of(3, &big);
    println!(
        "random: {} -> {} nodes in {t:?} ({} iterations, {} e-nodes, {})",
        big.nodes.len(),
        out.graph.nodes.len(),
        out.report.iterations,
        out.report.egraph_nodes,
        out.report.stop_reason
    );
    assert!(big.nodes.len() >= 200, "the random graph has only {} nodes", big.nodes.len());
    assert_same_results(&big, &out.graph, 2);
}

/// egg runs on a mock clock (no TSC calibration at the first call: `optimize/clock.rs`) that
/// follows real time: a time limit still stops a run, and reports itself as the reason.
#[test]
fn the_time_limit_still_stops_a_run() {
    use tfn_passes::optimize::{optimize, Limits, RuleSet, StopReason};
    let big = random_graph(2024, 260, 120, tfn_ir::DType::F32);
    let limits = Limits { time: std::time::Duration::ZERO, ..Limits::default() };
    let out = optimize(&big, &RuleSet::builtin(), &limits).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        matches!(out.report.stop_reason, StopReason::TimeLimit(s) if s > 0.0),
        "stopped by {}",
        out.report.stop_reason
    );
    assert_eq!(out.report.iterations, 1);
    assert_same_results(&big, &out.graph, 2);
}
