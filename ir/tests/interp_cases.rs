//! Data-driven interpreter tests: every case in `data/interp_cases.txt` is an IR graph in the
//! text format, its inputs, and either the outputs NumPy computed for it or the error the run
//! must fail with (`data/gen_interp_cases.py` regenerates the file).
//!
//! Each case also checks that its graph survives a print/parse round trip.

use crate::common;

use common::{parse_type, tensor_from_text};
use tfn_ir::{parse_graph, print_graph, run, Tensor};
use tfn_test_utils::{compare, Tolerance};

const CASES: &str = include_str!("data/interp_cases.txt");
/// The index and scan ops (`data/gen_scan_cases.py`).
const SCAN_CASES: &str = include_str!("data/scan_cases.txt");
/// Storage dtypes (`data/gen_storage_cases.py`): f16 against NumPy's float16, bf16 against
/// bits computed with NumPy integer arithmetic, i8/u8 against NumPy's wrapping.
const STORAGE_CASES: &str = include_str!("data/storage_cases.txt");

struct Case<'a> {
    name: &'a str,
    graph: String,
    inputs: Vec<Tensor>,
    outputs: Vec<Tensor>,
    error: Option<&'a str>,
}

/// Splits the case file into cases; sections start with `=== name`, `--- in TYPE`,
/// `--- out TYPE` (each followed by one line of values) or `--- error MESSAGE`.
fn parse_cases(text: &str) -> Result<Vec<Case<'_>>, String> {
    let mut cases = Vec::new();
    let mut lines = text.lines().filter(|l| !l.starts_with('#')).peekable();
    while let Some(line) = lines.next() {
        let name =
            line.strip_prefix("=== ").ok_or_else(|| format!("expected `=== `, got `{line}`"))?;
        let mut case =
            Case { name, graph: String::new(), inputs: vec![], outputs: vec![], error: None };
        while let Some(l) = lines.next_if(|l| !l.starts_with("---") && !l.starts_with("===")) {
            case.graph.push_str(l);
            case.graph.push('\n');
        }
        while let Some(l) = lines.next_if(|l| l.starts_with("---")) {
            if let Some(message) = l.strip_prefix("--- error ") {
                case.error = Some(message);
                continue;
            }
            let (kind, ty) = l[4..].split_once(' ').ok_or_else(|| format!("bad line `{l}`"))?;
            let (dtype, shape) = parse_type(ty)?;
            let values = lines.next().unwrap_or_default();
            let t = tensor_from_text(dtype, &shape, values).map_err(|e| format!("{name}: {e}"))?;
            match kind {
                "in" => case.inputs.push(t),
                "out" => case.outputs.push(t),
                _ => return Err(format!("{name}: unknown section `{kind}`")),
            }
        }
        cases.push(case);
    }
    Ok(cases)
}

fn check(case: &Case<'_>) -> Result<(), String> {
    let graph = parse_graph(&case.graph).map_err(|e| format!("parse: {e}"))?;
    let reparsed = parse_graph(&print_graph(&graph)).map_err(|e| format!("reparse: {e}"))?;
    if reparsed != graph {
        return Err(format!("print/parse round trip changed the graph:\n{}", print_graph(&graph)));
    }
    match (run(&graph, &case.inputs), case.error) {
        (Ok(_), Some(message)) => Err(format!("expected error `{message}`, but the run succeeded")),
        (Err(e), Some(message)) if e.to_string().contains(message) => Ok(()),
        (Err(e), _) => Err(format!("run failed: {e}")),
        (Ok(outputs), None) => {
            if outputs.len() != case.outputs.len() {
                return Err(format!("{} outputs, expected {}", outputs.len(), case.outputs.len()));
            }
            for (i, (a, e)) in outputs.iter().zip(&case.outputs).enumerate() {
                compare(a, e, Tolerance::ROUNDING).map_err(|m| format!("output {i}: {m}"))?;
            }
            Ok(())
        }
    }
}

#[test]
fn interpreter_matches_numpy() {
    let cases = parse_cases(CASES).expect("the case file is well formed");
    assert!(cases.len() > 300, "only {} cases found", cases.len());
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|c| check(c).err().map(|e| format!("case `{}`: {e}", c.name)))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

#[test]
fn scans_match_numpy() {
    let cases = parse_cases(SCAN_CASES).expect("the scan case file is well formed");
    assert!(cases.len() > 300, "only {} cases found", cases.len());
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|c| check(c).err().map(|e| format!("case `{}`: {e}", c.name)))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

#[test]
fn storage_dtypes_match_numpy() {
    let cases = parse_cases(STORAGE_CASES).expect("the storage case file is well formed");
    assert!(cases.len() > 50, "only {} cases found", cases.len());
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|c| check(c).err().map(|e| format!("case `{}`: {e}", c.name)))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}
