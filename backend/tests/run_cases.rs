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
