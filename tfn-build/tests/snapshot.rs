//! The generated module of `examples/typed/ops/api.tfn` (every kind of parameter and result)
//! against its blessed snapshot; `BLESS=1` rewrites the snapshot. The same module is compiled
//! with `#![deny(warnings)]` by `examples/typed`, and its calls tested there.

use std::path::Path;

fn check_snapshot(source: &str, snapshot: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let examples = root.join("../examples/typed");
    // Names as the example's build script shows them: relative to its crate root.
    // The current directory is per process: one test at a time changes it.
    static CWD: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = CWD.lock().unwrap_or_else(|p| p.into_inner());
    let cwd = std::env::current_dir().unwrap();
    std::env::set_current_dir(&examples).unwrap();
    let checked = tfn_build::check(source);
    std::env::set_current_dir(cwd).unwrap();
    let generated = checked.unwrap_or_else(|e| panic!("{e}")).generate().unwrap();
    let path = root.join("tests/snapshots").join(snapshot);
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with BLESS=1 to create it)", path.display()));
    if expected != generated {
        let first = expected
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(expected.lines().count().min(generated.lines().count()));
        panic!(
            "{} differs from the generated module at line {} (BLESS=1 to accept):\n{}",
            path.display(),
            first + 1,
            generated.lines().skip(first).take(10).collect::<Vec<_>>().join("\n")
        );
    }
}

#[test]
fn api_module_matches_snapshot() {
    check_snapshot("ops/api.tfn", "api.rs");
}

#[test]
fn nn_module_matches_snapshot() {
    check_snapshot("ops/nn.tfn", "nn.rs");
}
