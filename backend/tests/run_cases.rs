//! File tests: every `tests/cases/*.tir` graph (IR text) runs through fusion and the JIT and
//! must match the interpreter on random inputs for several sizes (including sizes that leave
//! vector tails, and 1).
//!
//! Directives in `//` comments at the top of a case:
//! - `range: LO HI` — inputs drawn uniformly from `[LO, HI]` (default `-2 2`);
//! - `tol: RTOL ATOL` — the case's own tolerance (default: `Tolerance::ROUNDING` of
//!   `tfn-test-utils`), with the reason on the same line;
//! - `interpreted: N` — how many kernels may run in the interpreter (default 0);
//! - `kernels: N` — how many kernels fusion must produce;
//! - `specials: P` — each float input element becomes NaN, ±inf or −0 with probability `P`
//!   (NaN/inf propagation through fused reductions and math functions).

use crate::common;

use common::check_against_interp;
use std::path::Path;
use tfn_test_utils::{random_inputs, Rng, Tolerance};

fn directive<'s>(src: &'s str, key: &str) -> Option<Vec<&'s str>> {
    src.lines()
        .filter_map(|l| l.trim().strip_prefix("//"))
        .find_map(|l| l.trim().strip_prefix(key).map(|rest| rest.split_whitespace().collect()))
}

fn run_case(path: &Path) -> Result<(), String> {
    let src = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let graph = tfn_ir::text::parse_graph(&src).map_err(|e| format!("parse: {e}"))?;
    let num = |v: Option<Vec<&str>>, i: usize, d: f64| -> f64 {
        v.and_then(|v| v.get(i).and_then(|s| s.parse().ok())).unwrap_or(d)
    };
    let range = (num(directive(&src, "range:"), 0, -2.0), num(directive(&src, "range:"), 1, 2.0));
    // The policy's rounding class, unless the case names its own bound (and why).
    let tol = match directive(&src, "tol:") {
        Some(_) => Tolerance::uniform(
            "the case's `tol:`",
            num(directive(&src, "tol:"), 0, 0.0),
            num(directive(&src, "tol:"), 1, 0.0),
        ),
        None => Tolerance::ROUNDING,
    };
    let interpreted = num(directive(&src, "interpreted:"), 0, 0.0) as usize;
    let kernels =
        directive(&src, "kernels:").map(|_| num(directive(&src, "kernels:"), 0, 0.0) as usize);
    let mut rng = Rng::new(0x9E37_79B9_7F4A_7C15);
    for (round, sizes) in
        [[1usize, 1].as_slice(), &[3, 5], &[17, 33], &[64, 7], &[1, 130]].iter().enumerate()
    {
        let mut inputs = random_inputs(&mut rng, &graph, sizes, range);
        if let Some(p) = directive(&src, "specials:").map(|v| num(Some(v), 0, 0.0)) {
            for t in &mut inputs {
                sprinkle_specials(&mut rng, t, p);
            }
        }
        let threads = if round % 2 == 0 { 1 } else { 2 };
        let f = check_against_interp(&graph, &inputs, tol, threads)
            .map_err(|e| format!("sizes {sizes:?}: {e}"))?;
        let slow = f.interpreted_kernels();
        if slow.len() != interpreted {
            return Err(format!(
                "{} kernels interpreted, expected {interpreted}: {slow:?}",
                slow.len()
            ));
        }
        if let Some(k) = kernels {
            if f.fused().kernels.len() != k {
                return Err(format!(
                    "{} kernels, expected {k}:\n{}",
                    f.fused().kernels.len(),
                    tfn_passes::fusion::print_fused(f.fused(), &graph)
                ));
            }
        }
    }
    Ok(())
}

/// Replaces float elements by NaN, +inf, −inf or −0 with probability `p` each element.
fn sprinkle_specials(rng: &mut Rng, t: &mut tfn_ir::Tensor, p: f64) {
    const SPECIALS: [f64; 4] = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0];
    let mut pick = |x: &mut f64| {
        if rng.uniform(0.0, 1.0) < p {
            *x = SPECIALS[rng.index(SPECIALS.len())];
        }
    };
    match t {
        tfn_ir::Tensor::F32(a) => a.iter_mut().for_each(|x| {
            let mut y = f64::from(*x);
            pick(&mut y);
            *x = y as f32;
        }),
        tfn_ir::Tensor::F64(a) => a.iter_mut().for_each(&mut pick),
        _ => {}
    }
}

#[test]
fn cases_match_the_interpreter() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let mut paths: Vec<_> =
        std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.retain(|p| p.extension().is_some_and(|e| e == "tir"));
    paths.sort();
    assert!(!paths.is_empty(), "no cases in {}", dir.display());
    let failures: Vec<String> = paths
        .iter()
        .filter_map(|p| {
            run_case(p).err().map(|e| format!("{}: {e}", p.file_name().unwrap().to_string_lossy()))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        paths.len(),
        failures.join("\n")
    );
}

/// Softmax rows (`softmax.tir`, in f32 and f64, and the causal mask's `causal_softmax.tir`) at
/// every kind of row length — 1, below and at the staged minimum (64), whole and partial
/// 16-element groups, 4-element groups with scalar tails, several 512-element blocks — with
/// rows of special values: all `-inf` (NaN throughout, as the interpreter gives), some `-inf`
/// (zeros there), huge magnitudes (±3e38, the max cancels them exactly), a `+inf` (NaN) and a
/// NaN. Against the interpreter, at every SIMD level (identical bits, `check_against_interp`),
/// and on 1–4 threads with identical bits (the last shape is above the parallel threshold).
#[test]
fn softmax_rows_of_every_tail_and_special_values() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let softmax = std::fs::read_to_string(dir.join("softmax.tir")).unwrap();
    let causal = std::fs::read_to_string(dir.join("causal_softmax.tir")).unwrap();
    let graphs = [
        ("f32", tfn_ir::text::parse_graph(&softmax).unwrap()),
        ("f64", tfn_ir::text::parse_graph(&softmax.replace("f32", "f64")).unwrap()),
        ("causal", tfn_ir::text::parse_graph(&causal).unwrap()),
    ];
    let lengths = [1usize, 2, 5, 63, 64, 65, 71, 79, 127, 128, 130, 512, 513, 527, 1031];
    let mut rng = Rng::new(0x50f7);
    let mut failures = Vec::new();
    for (name, graph) in &graphs {
        let rank = graph.params[0].ty.shape.rank();
        let mut shapes: Vec<Vec<usize>> =
            lengths.iter().map(|&n| if rank == 2 { vec![7, n] } else { vec![2, 3, n] }).collect();
        shapes.push(if rank == 2 { vec![67, 1031] } else { vec![2, 67, 521] });
        for shape in shapes {
            let mut inputs = random_inputs(&mut rng, graph, &shape, (-30.0, 30.0));
            let n = *shape.last().unwrap();
            let special = |row: usize, i: usize| -> Option<f64> {
                match row {
                    0 => Some(f64::NEG_INFINITY),
                    1 if i % 3 != 1 => Some(f64::NEG_INFINITY),
                    2 => Some(if i.is_multiple_of(2) { 3e38 } else { -3e38 }),
                    3 if i == n / 2 => Some(f64::INFINITY),
                    4 if i == n - 1 => Some(f64::NAN),
                    _ => None,
                }
            };
            match &mut inputs[0] {
                tfn_ir::Tensor::F32(a) => {
                    for (flat, x) in a.iter_mut().enumerate() {
                        if let Some(v) = special(flat / n % 7, flat % n) {
                            *x = v as f32;
                        }
                    }
                }
                tfn_ir::Tensor::F64(a) => {
                    for (flat, x) in a.iter_mut().enumerate() {
                        if let Some(v) = special(flat / n % 7, flat % n) {
                            *x = v;
                        }
                    }
                }
                _ => unreachable!("float input"),
            }
            let what = format!("{name} {shape:?}");
            failures.extend(same_bits_on_1_to_4_threads(
                graph,
                &inputs,
                Tolerance::ROUNDING,
                &what,
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The row passes that run on the running-sum, sum-of-squares and shifting-scale routines
/// (`layernorm.tir`, `rmsnorm.tir`, `sum_all.tir`) at every kind of row length, below and at
/// the staged minimum, partial 32-element groups and 4-element tails, with rows starting at
/// every alignment (odd lengths move each row's start within a cache line): the interpreter's
/// values at every SIMD level with identical bits (`check_against_interp`), on 1–4 threads with
/// identical bits.
#[test]
fn normalisation_rows_and_sums_of_every_tail_length() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let lengths = [1usize, 3, 31, 63, 64, 65, 95, 97, 130, 513, 1031];
    let tol = Tolerance::uniform("f32 accumulation in the JIT, f64 in the interpreter", 1e-4, 1e-5);
    let mut rng = Rng::new(0x1a7e);
    let mut failures = Vec::new();
    for name in ["layernorm.tir", "rmsnorm.tir", "sum_all.tir"] {
        let graph =
            tfn_ir::text::parse_graph(&std::fs::read_to_string(dir.join(name)).unwrap()).unwrap();
        let mut shapes: Vec<Vec<usize>> = lengths.iter().map(|&n| vec![7, n]).collect();
        shapes.push(vec![67, 1031]);
        for shape in shapes {
            let inputs = random_inputs(&mut rng, &graph, &shape, (-3.0, 5.0));
            let what = format!("{name} {shape:?}");
            failures.extend(same_bits_on_1_to_4_threads(&graph, &inputs, tol, &what));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `graph` on `inputs` against the interpreter at every SIMD level (`check_against_interp`) on
/// 1–4 threads, and its first output the same bits on each: the failures, named by `what`.
fn same_bits_on_1_to_4_threads(
    graph: &tfn_ir::Graph,
    inputs: &[tfn_ir::Tensor],
    tol: Tolerance,
    what: &str,
) -> Vec<String> {
    let mut failures = Vec::new();
    let mut first: Option<Vec<u64>> = None;
    for threads in 1..=4 {
        let got = check_against_interp(graph, inputs, tol, threads)
            .and_then(|f| f.run(&common::views(inputs)).map_err(|e| e.to_string()));
        match got {
            Err(e) => failures.push(format!("{what}, {threads} threads: {e}")),
            Ok(out) => {
                let b = tfn_test_utils::bits(&out[0]);
                match &first {
                    None => first = Some(b),
                    Some(one) if *one != b => {
                        failures.push(format!("{what}: {threads} threads differ from 1"))
                    }
                    Some(_) => {}
                }
            }
        }
    }
    failures
}
