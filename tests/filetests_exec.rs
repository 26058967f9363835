//! File tests of the stages that need the whole compiler (`tfn`): lowering, optimisation,
//! running and differentiating `tests/cases/<stage>/*.tfn`. They extend `tests/filetests.rs`
//! (parse, diag), which the front end's own tests also compile and so cannot use `tfn`.
//!
//! | stage      | runs                                                  | expectation          |
//! |------------|-------------------------------------------------------|----------------------|
//! | `lower`    | `instantiate` each `lower` directive, print the graph | `case.out` (blessed) |
//! | `simplify` | `instantiate`, then `tfn::pipeline::optimize`, print  | `case.out` (blessed) |
//! | `fused`    | instantiate for the sizes, the pipeline, print kernels | `case.out` (blessed) |
//! | `graph`    | as `fused`, then the DOT picture (`tfnc graph`)        | `case.out` (blessed) |
//! | `run`      | `Session::call_kw`, every configuration               | `.npy` from NumPy    |
//! | `grad`     | `Session::vjp_kw`, every configuration                | `.npy` from NumPy    |
//!
//! Directives, on lines starting with `// tfn-test:` (one call each; a case may have many):
//! - `lower FN ARG=VALUE...` / `simplify FN ARG=VALUE...`: VALUE is a tensor type
//!   `f32[4,1]` (a size of 1 broadcasts, any other size is symbolic) or a literal (`2`,
//!   `0.5`, `true`, `[0,1]`, `f64`). Graphs print without origins; `simplify` adds the names
//!   of the rules that fired.
//! - `fused FN ARG=VALUE...`: as `lower`, but the sizes given are the call's (they decide
//!   derived sizes and guarded equalities, as `tfnc ir --stage fused --arg` does); prints the
//!   kernels the pipeline plans (what `tfnc ir --stage fused` shows) and their count.
//! - `graph FN ARG=VALUE...`: as `fused`; prints the Graphviz DOT picture `tfnc graph` draws,
//!   types with the given sizes.
//! - `run FN ARG=VALUE... -> OUT.npy...`: VALUE is a `.npy` path relative to
//!   `tests/cases/<stage>/data/` or a literal; every argument is passed by keyword. Each
//!   result must match its `.npy` under `tfn-test-utils`' accumulated tolerance: same dtype
//!   and shape, ints and bools exactly, floats within `atol + rtol * |expected|` (5e-5 for
//!   f32, 1e-10 for f64; NaN matches NaN).
//! - `vjp FN ARG=VALUE... cotangent=CT.npy... -> GRAD.npy...`: one cotangent per result; one
//!   gradient per float tensor argument, in parameter order.
//!
//! Values contain no spaces (`dims=[0,1]`). The `run` and `grad` cases and their data are
//! generated, with NumPy references computed independently, by `tests/tools/gen_run_cases.py`
//! and `tests/tools/gen_grad_cases.py`. Every call runs in three configurations: the
//! interpreter without the optimiser (the plain reference), the interpreter after the
//! optimiser, and the JIT after all passes.
//!
//! `BLESS=1 cargo test -p tfn --test it filetests_exec::` rewrites the `lower`/`simplify`
//! snapshots. A failing run lists *all* failing cases (a line diff, or how many elements of a
//! result differ and the first of them, under `tfn-test-utils`' accumulated tolerance).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use tfn::cli::args::{parse_value, ArgValue};
use tfn::{Backend, Session, SessionOptions, Tensor, Value};
use tfn_frontend::{load_source, prelude, FsLoader};
use tfn_ir::diagnostic::render_all;
use tfn_ir::lower::{instantiate, ArgSpec, DimSpec};
use tfn_ir::text::print_graph_without_origins;
use tfn_ir::Library;
use tfn_test_utils::{compare, diff, Tolerance};

/// One case file.
struct Case {
    /// The stage directory (`use` paths and `data/` are relative to it).
    dir: PathBuf,
    /// File name, e.g. `softmax.tfn`.
    name: String,
    text: String,
}

/// The parts of a call directive: `FN NAME=VALUE... -> OUT...`.
struct Call<'d> {
    function: &'d str,
    args: Vec<(&'d str, &'d str)>,
    outs: Vec<&'d str>,
}

/// One `// tfn-test:` directive: its 1-based line and its words.
struct Directive {
    line: usize,
    words: Vec<String>,
}

impl Case {
    /// The directives whose first word is `kind`.
    fn directives(&self, kind: &str) -> Vec<Directive> {
        self.text
            .lines()
            .enumerate()
            .filter_map(|(i, l)| {
                let words: Vec<String> = l
                    .trim()
                    .strip_prefix("// tfn-test:")?
                    .split_whitespace()
                    .map(str::to_string)
                    .collect();
                (words.first().map(String::as_str) == Some(kind))
                    .then(|| Directive { line: i + 1, words })
            })
            .collect()
    }

    fn path(&self) -> PathBuf {
        self.dir.join(&self.name)
    }

    /// The prelude plus this case (loaded as the `parse` stage loads it).
    fn library(&self) -> Result<Library, String> {
        let mut lib = prelude().map_err(|_| "the prelude does not load".to_string())?;
        match load_source(&mut lib, &self.name, &self.text, &FsLoader::rooted(&self.dir)) {
            Ok(_) => Ok(lib),
            Err(diags) => Err(format!("LOAD FAILED\n{}", render_all(&diags, &lib.sources))),
        }
    }
}

impl Directive {
    /// `FN` and the `NAME=VALUE` words up to `->`, then the words after it.
    fn call(&self) -> Result<Call<'_>, String> {
        let function = self.words.get(1).ok_or("missing function name")?;
        let mut args = Vec::new();
        let mut outs = Vec::new();
        let mut after_arrow = false;
        for w in self.words.iter().skip(2) {
            if w == "->" {
                after_arrow = true;
            } else if after_arrow {
                outs.push(w.as_str());
            } else {
                let (k, v) = w.split_once('=').ok_or_else(|| format!("`{w}` is not NAME=VALUE"))?;
                args.push((k, v));
            }
        }
        Ok(Call { function, args, outs })
    }

    fn text(&self) -> String {
        self.words.join(" ")
    }
}

/// `tests/cases` of the workspace.
fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases")
}

fn case_files(stage: &str) -> Vec<Case> {
    let dir = cases_dir().join(stage);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "tfn"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no cases in {}", dir.display());
    paths
        .iter()
        .map(|path| {
            let name =
                path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{name}: {e}"));
            Case { dir: dir.clone(), name, text }
        })
        .collect()
}

/// Snapshot stages: compares `run(case)` with (or, with `BLESS=1`, writes) `case.out`.
fn run_snapshot_stage(stage: &str, run: fn(&Case) -> String) {
    let bless = std::env::var_os("BLESS").is_some_and(|v| v != "0");
    let cases = case_files(stage);
    let mut failures = Vec::new();
    for case in &cases {
        let actual = run(case);
        let expected_path = case.path().with_extension("out");
        if bless {
            std::fs::write(&expected_path, &actual)
                .unwrap_or_else(|e| panic!("{}: {e}", case.name));
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if expected != actual {
            failures.push(format!(
                "--- {stage}/{} (expected out vs actual)\n{}",
                case.name,
                diff(&expected, &actual)
            ));
        }
    }
    if !failures.is_empty() {
        panic!(
            "{} of {} `{stage}` cases failed (BLESS=1 to accept the new output):\n\n{}",
            failures.len(),
            cases.len(),
            failures.join("\n")
        );
    }
}

/// Checked stages: `run(case)` returns one message per failing call.
fn run_checked_stage(stage: &str, run: fn(&Case) -> Vec<String>) {
    let cases = case_files(stage);
    let mut failures = Vec::new();
    let mut failed_cases = 0;
    for case in &cases {
        let messages = run(case);
        if !messages.is_empty() {
            failed_cases += 1;
            failures.extend(messages.into_iter().map(|m| format!("{stage}/{}:{m}", case.name)));
        }
    }
    if !failures.is_empty() {
        panic!(
            "{failed_cases} of {} `{stage}` cases failed ({} failing calls):\n\n{}",
            cases.len(),
            failures.len(),
            failures.join("\n\n")
        );
    }
}

// ---- lower and simplify ----------------------------------------------------------------------

/// The signature a `lower`/`simplify` directive describes.
fn arg_specs(args: &[(&str, &str)]) -> Result<Vec<(String, ArgSpec)>, String> {
    args.iter()
        .map(|(name, text)| {
            let spec = match parse_value(text).map_err(|e| format!("{name}: {e}"))? {
                ArgValue::TensorType(dtype, dims) => ArgSpec::Tensor {
                    dtype,
                    dims: dims
                        .iter()
                        .map(|&d| if d == 1 { DimSpec::One } else { DimSpec::Dyn })
                        .collect(),
                },
                ArgValue::Literal(a) => ArgSpec::Attr(a),
                ArgValue::NpyPath(p) => return Err(format!("{name}: `{p}` is not a tensor type")),
            };
            Ok((name.to_string(), spec))
        })
        .collect()
}

/// The printed graph of every `kind` directive of the case, optionally optimised.
fn print_instances(case: &Case, kind: &str, optimized: bool) -> String {
    let lib = match case.library() {
        Ok(lib) => lib,
        Err(e) => return e,
    };
    let directives = case.directives(kind);
    if directives.is_empty() {
        return format!("NO `{kind}` DIRECTIVE\n");
    }
    let mut out = String::new();
    for d in &directives {
        if !out.is_empty() {
            out.push('\n');
        }
        let _ = writeln!(out, "// {}", d.text());
        let instance = d.call().and_then(|call| {
            let specs = arg_specs(&call.args)?;
            instantiate(&lib, call.function, &[], &specs)
                .map_err(|e| format!("LOWER FAILED\n{}", render_all(&e.diagnostics, &lib.sources)))
        });
        let graph = match instance {
            Ok(i) => i.graph,
            Err(e) => {
                out.push_str(&e);
                continue;
            }
        };
        if !optimized {
            out.push_str(&print_graph_without_origins(&graph));
            continue;
        }
        match tfn::pipeline::optimize(&lib, &graph) {
            Ok((graph, explain)) => {
                out.push_str(&print_graph_without_origins(&graph));
                let fired: Vec<&str> =
                    explain.0.rules_fired.iter().map(|(n, _)| n.as_str()).collect();
                let _ = writeln!(
                    out,
                    "// rules fired: {}",
                    if fired.is_empty() { "none".to_string() } else { fired.join(", ") }
                );
            }
            Err(e) => {
                let _ = writeln!(out, "OPTIMIZE FAILED: {e}");
            }
        }
    }
    out
}

/// The kernels of every `fused` directive of the case, planned for the given sizes.
fn fused_case(case: &Case) -> String {
    let lib = match case.library() {
        Ok(lib) => lib,
        Err(e) => return e,
    };
    let directives = case.directives("fused");
    if directives.is_empty() {
        return "NO `fused` DIRECTIVE\n".into();
    }
    let mut out = String::new();
    for d in &directives {
        if !out.is_empty() {
            out.push('\n');
        }
        let _ = writeln!(out, "// {}", d.text());
        let planned = d.call().and_then(|call| {
            let specs = arg_specs(&call.args)?;
            let sizes = |p: &tfn_ir::lower::ParamSource| {
                let tfn_ir::lower::ParamSource::Keyword(name) = p else { return None };
                let (_, text) = call.args.iter().find(|(n, _)| n == name)?;
                match parse_value(text) {
                    Ok(ArgValue::TensorType(_, dims)) => Some(dims),
                    _ => None,
                }
            };
            let instance =
                tfn_ir::lower::instantiate_for_sizes(&lib, call.function, &[], &specs, &sizes)
                    .map_err(|e| {
                        format!("LOWER FAILED\n{}", render_all(&e.diagnostics, &lib.sources))
                    })?;
            tfn::pipeline::plan(&lib, &instance.graph, true).map_err(|e| e.to_string())
        });
        match planned {
            Ok(planned) => {
                out.push_str(&tfn::pipeline::print_fused(&planned));
                if let Some(why) = &planned.optimizer_fallback {
                    let _ = writeln!(out, "// OPTIMIZER FALLBACK: {why}");
                }
            }
            Err(e) => out.push_str(&e),
        }
    }
    out
}

/// The DOT picture (`tfnc graph`) of every `graph` directive of the case, for the given
/// sizes; each block is preceded by the directive as a DOT comment, so the file stays DOT.
fn graph_case(case: &Case) -> String {
    let lib = match case.library() {
        Ok(lib) => lib,
        Err(e) => return e,
    };
    let directives = case.directives("graph");
    if directives.is_empty() {
        return "NO `graph` DIRECTIVE\n".into();
    }
    let mut out = String::new();
    for d in &directives {
        if !out.is_empty() {
            out.push('\n');
        }
        let _ = writeln!(out, "// {}", d.text());
        let dot = d.call().and_then(|call| {
            let specs = arg_specs(&call.args)?;
            let sizes = |p: &tfn_ir::lower::ParamSource| {
                let tfn_ir::lower::ParamSource::Keyword(name) = p else { return None };
                let (_, text) = call.args.iter().find(|(n, _)| n == name)?;
                match parse_value(text) {
                    Ok(ArgValue::TensorType(_, dims)) => Some(dims),
                    _ => None,
                }
            };
            let instance =
                tfn_ir::lower::instantiate_for_sizes(&lib, call.function, &[], &specs, &sizes)
                    .map_err(|e| {
                        format!("LOWER FAILED\n{}", render_all(&e.diagnostics, &lib.sources))
                    })?;
            let shapes: Option<Vec<Vec<usize>>> = instance.params.iter().map(&sizes).collect();
            let planned =
                tfn::pipeline::plan(&lib, &instance.graph, true).map_err(|e| e.to_string())?;
            Ok(tfn::pipeline::graph_dot(&planned, shapes.as_deref()))
        });
        match dot {
            Ok(dot) => out.push_str(&dot),
            Err(e) => out.push_str(&e),
        }
    }
    out
}

fn lower_case(case: &Case) -> String {
    print_instances(case, "lower", false)
}

fn simplify_case(case: &Case) -> String {
    print_instances(case, "simplify", true)
}

// ---- run and grad ----------------------------------------------------------------------------

/// The configurations every `run`/`grad` call is checked in.
fn configurations() -> Vec<(&'static str, SessionOptions)> {
    let with =
        |backend, optimize| SessionOptions { backend, optimize, ..SessionOptions::default() };
    vec![
        ("interp", with(Backend::Interp, false)),
        ("interp+opt", with(Backend::Interp, true)),
        ("jit", with(Backend::Jit, true)),
    ]
}

/// A directive's argument value: a `.npy` file of the stage's `data/` or a literal.
fn load_value(case: &Case, text: &str) -> Result<Value<'static>, String> {
    match parse_value(text).map_err(|e| e.to_string())? {
        ArgValue::Literal(a) => Ok(Value::Attr(a)),
        ArgValue::NpyPath(p) => load_npy(case, &p).map(Value::from),
        ArgValue::TensorType(..) => Err(format!("`{text}`: give a .npy file, not a tensor type")),
    }
}

fn load_npy(case: &Case, relative: &str) -> Result<Tensor, String> {
    tfn::npy::read(&case.dir.join("data").join(relative)).map_err(|e| e.to_string())
}

/// Runs every `run` (`grad == false`) or `vjp` directive of the case in every configuration.
fn check_calls(case: &Case, grad: bool) -> Vec<String> {
    let kind = if grad { "vjp" } else { "run" };
    let directives = case.directives(kind);
    if directives.is_empty() {
        return vec![format!(" no `{kind}` directive")];
    }
    let mut failures = Vec::new();
    for (config, options) in configurations() {
        let session = Session::with_options(options);
        if let Err(e) = session.load_file(case.path()) {
            failures.push(format!(" ({config}) load failed:\n{e}"));
            continue;
        }
        for d in &directives {
            if let Err(e) = check_call(case, &session, d, grad) {
                failures.push(format!(
                    "{}: {} ({config}):\n  {}",
                    d.line,
                    d.text(),
                    e.replace('\n', "\n  ")
                ));
            }
        }
    }
    failures
}

fn check_call(case: &Case, session: &Session, d: &Directive, grad: bool) -> Result<(), String> {
    let Call { function, args, outs } = d.call()?;
    let mut kwargs: Vec<(&str, Value)> = Vec::new();
    let mut cotangents: Vec<Value> = Vec::new();
    for (name, text) in &args {
        let value = load_value(case, text)?;
        if grad && *name == "cotangent" {
            cotangents.push(value);
        } else {
            kwargs.push((name, value));
        }
    }
    let results = if grad {
        session.vjp_kw(function, &[], &kwargs, &cotangents)
    } else {
        session.call_kw(function, &[], &kwargs)
    }
    .map_err(|e| format!("call failed: {e}"))?;
    if results.len() != outs.len() {
        return Err(format!("{} result(s), expected {}", results.len(), outs.len()));
    }
    let mut problems = Vec::new();
    for (i, (result, out)) in results.into_iter().zip(&outs).enumerate() {
        let expected = load_npy(case, out)?;
        let Some(actual) = result.into_tensor() else {
            problems.push(format!("result {i} is not a tensor"));
            continue;
        };
        if let Err(e) = compare(&actual, &expected, Tolerance::ACCUMULATED) {
            problems.push(format!("result {i} ({out}): {e}"));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

fn run_case(case: &Case) -> Vec<String> {
    check_calls(case, false)
}

fn grad_case(case: &Case) -> Vec<String> {
    check_calls(case, true)
}

#[test]
fn lower() {
    run_snapshot_stage("lower", lower_case);
}

#[test]
fn simplify() {
    run_snapshot_stage("simplify", simplify_case);
}

#[test]
fn run() {
    run_checked_stage("run", run_case);
}

#[test]
fn grad() {
    run_checked_stage("grad", grad_case);
}

#[test]
fn fused() {
    run_snapshot_stage("fused", fused_case);
}

#[test]
fn graph() {
    run_snapshot_stage("graph", graph_case);
}
