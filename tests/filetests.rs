//! File tests: every `tests/cases/<stage>/*.tfn` is run through one stage of the compiler and
//! its output compared with the expectation file beside it (rustc UI-test style).
//!
//! | stage   | runs                                            | expectation    |
//! |---------|-------------------------------------------------|----------------|
//! | `parse` | load (must succeed), print the templates        | `case.out`     |
//! | `diag`  | load, render every diagnostic (`render_all`)    | `case.stderr`  |
//!
//! The stages that need the whole compiler — `lower`, `simplify` (blessed `case.out`), `run`
//! and `grad` (NumPy-computed `.npy` references) — are in `tests/filetests_exec.rs`: this
//! file is also compiled by the front end's tests, which cannot depend on the `tfn` crate.
//!
//! Directives, on lines of the case starting with `// tfn-test:`:
//! - `no-prelude`: load into an empty library instead of one holding the prelude (for files
//!   that declare primitives themselves, "as the prelude writes them").
//!
//! Diagnostics show the case's file name (`name.tfn`); `use` paths resolve relative to the
//! stage directory, so helper files live in a subdirectory (`tests/cases/parse/aux/`), which
//! is not itself walked.
//!
//! `BLESS=1 cargo test -p tfn --test it filetests::` rewrites every expectation with the actual
//! output. A failing run lists *all* failing cases with a line diff. To add a stage (lower, run,
//! simplify, fuse, grad): write one `fn(&Case) -> String` and one `#[test]` calling
//! [`run_stage`].

use std::path::{Path, PathBuf};
use tfn_frontend::{file_ids, load_source, prelude, print_library, FsLoader};
use tfn_ir::diagnostic::render_all;
use tfn_ir::Library;
use tfn_test_utils::diff;

/// One case file.
struct Case {
    /// The stage directory (`use` paths are relative to it).
    dir: PathBuf,
    /// File name, e.g. `unknown_function.tfn`.
    name: String,
    text: String,
}

impl Case {
    fn has_directive(&self, directive: &str) -> bool {
        self.text.lines().any(|l| {
            l.trim()
                .strip_prefix("// tfn-test:")
                .is_some_and(|d| d.split_whitespace().any(|w| w == directive))
        })
    }

    /// A library to load the case into: the prelude, or nothing with `no-prelude`.
    fn library(&self) -> Library {
        if self.has_directive("no-prelude") {
            return Library::default();
        }
        match prelude() {
            Ok(lib) => lib,
            Err(diags) => {
                let mut lib = Library::default();
                lib.sources.add(tfn_frontend::PRELUDE_NAME, tfn_frontend::PRELUDE);
                panic!("the prelude does not load:\n{}", render_all(&diags, &lib.sources))
            }
        }
    }
}

/// `tests/cases` of the workspace (this harness also runs from `frontend/tests`).
fn cases_dir() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let here = manifest.join("tests/cases");
    if here.is_dir() {
        here
    } else {
        manifest.join("../tests/cases")
    }
}

/// Runs `run` on every case of `stage`, comparing with (or, with `BLESS=1`, writing) the
/// `.{ext}` file beside each case. Panics at the end listing every failure.
fn run_stage(stage: &str, ext: &str, run: fn(&Case) -> String) {
    let dir = cases_dir().join(stage);
    let bless = std::env::var_os("BLESS").is_some_and(|v| v != "0");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "tfn"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no cases in {}", dir.display());
    let mut failures = Vec::new();
    for path in &paths {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let case = Case { dir: dir.clone(), name: name.clone(), text };
        let actual = run(&case);
        let expected_path = path.with_extension(ext);
        if bless {
            std::fs::write(&expected_path, &actual).unwrap_or_else(|e| panic!("{name}: {e}"));
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if expected != actual {
            failures.push(format!(
                "--- {stage}/{name} (expected {ext} vs actual)\n{}",
                diff(&expected, &actual)
            ));
        }
    }
    if !failures.is_empty() {
        panic!(
            "{} of {} `{stage}` cases failed (BLESS=1 to accept the new output):\n\n{}",
            failures.len(),
            paths.len(),
            failures.join("\n")
        );
    }
}

/// `parse`: the case must load; its templates are printed, then any warnings.
fn parse_case(case: &Case) -> String {
    let mut lib = case.library();
    let before = lib.sources.files().count();
    let result = load_source(&mut lib, &case.name, &case.text, &FsLoader::rooted(&case.dir));
    match result {
        Ok(warnings) => {
            let ids: Vec<_> = lib.sources.files().skip(before).map(|(id, _)| id).collect();
            let mut out = print_library(&lib, Some(&ids));
            if !warnings.is_empty() {
                out.push_str("\n// warnings:\n");
                out.push_str(&render_all(&warnings, &lib.sources));
            }
            out
        }
        Err(diags) => format!("LOAD FAILED\n{}", render_all(&diags, &lib.sources)),
    }
}

/// `diag`: the rendered diagnostics of loading the case.
fn diag_case(case: &Case) -> String {
    let mut lib = case.library();
    let diags = match load_source(&mut lib, &case.name, &case.text, &FsLoader::rooted(&case.dir)) {
        Ok(warnings) => warnings,
        Err(diags) => diags,
    };
    if diags.is_empty() {
        return "(no diagnostics)\n".to_string();
    }
    // The case's own file must be among the sources for rendering to work.
    debug_assert!(!file_ids(&lib, &case.name).is_empty());
    render_all(&diags, &lib.sources)
}

#[test]
fn parse() {
    run_stage("parse", "out", parse_case);
}

#[test]
fn diag() {
    run_stage("diag", "stderr", diag_case);
}
