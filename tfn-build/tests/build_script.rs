//! The build-script side of `tfn-build`: a `.tfn` error fails with rustc-style diagnostics
//! naming `file:line:col`, warnings become `cargo:warning=` lines, every source file (also on
//! error, also `use`d ones) gets `cargo:rerun-if-changed`, and the module is written to the
//! output directory (unchanged output is not rewritten). `.ci/run` additionally builds a
//! scratch crate whose `.tfn` has an error and checks `cargo build` fails pointing at it.

use std::path::PathBuf;

/// A fresh directory under the target dir with `files` written into it.
fn scratch(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("out")).unwrap();
    for (path, text) in files {
        std::fs::write(dir.join(path), text).unwrap();
    }
    dir
}

fn build(dir: &std::path::Path, file: &str) -> (Result<PathBuf, tfn_build::Error>, String) {
    let mut directives = Vec::new();
    let result = tfn_build::Builder::new(dir.join(file))
        .out_dir(dir.join("out"))
        .compile_to(&mut directives);
    (result, String::from_utf8(directives).unwrap())
}

#[test]
fn an_error_fails_with_file_line_col() {
    let dir = scratch(
        "error",
        &[
            ("main.tfn", "use \"helper.tfn\"\n\nfn f(Tensor x) -> Tensor {\n    return helper(x) + nope\n}\n"),
            ("helper.tfn", "fn helper(Tensor x) -> Tensor {\n    return x\n}\n"),
        ],
    );
    let (result, directives) = build(&dir, "main.tfn");
    let error = result.expect_err("an unknown name must fail the build");
    let main = dir.join("main.tfn").display().to_string();
    let text = format!("{error:?}");
    assert!(text.contains("error["), "{text}");
    assert!(text.contains(&format!("--> {main}:4:24")), "{text}");
    assert!(text.contains("nope"), "{text}");
    assert!(matches!(error, tfn_build::Error::Source { .. }));
    // Fixing either file must rerun the build script.
    assert!(directives.contains(&format!("cargo:rerun-if-changed={main}")), "{directives}");
    let helper = dir.join("helper.tfn").display().to_string();
    assert!(directives.contains(&format!("cargo:rerun-if-changed={helper}")), "{directives}");
    assert!(!dir.join("out/main.rs").exists());
}

#[test]
fn a_syntax_error_points_at_its_token() {
    let dir = scratch("syntax", &[("bad.tfn", "fn f(Tensor x) -> Tensor {\n    return x +\n}\n")]);
    let (result, _) = build(&dir, "bad.tfn");
    let text = result.expect_err("a syntax error must fail the build").to_string();
    let bad = dir.join("bad.tfn").display().to_string();
    assert!(text.contains(&format!("{bad}:")), "{text}");
    assert!(text.starts_with("error"), "{text}");
}

#[test]
fn a_missing_file_is_an_io_error_naming_it() {
    let dir = scratch("missing", &[]);
    let (result, directives) = build(&dir, "absent.tfn");
    let text = result.expect_err("missing file").to_string();
    assert!(text.contains("absent.tfn"), "{text}");
    assert!(directives.contains("cargo:rerun-if-changed="), "{directives}");
}

#[test]
fn warnings_are_cargo_warnings_and_the_module_is_written_once() {
    let dir = scratch(
        "warn",
        &[("lib.tfn", "fn f(Tensor x, Tensor unused) -> Tensor {\n    return x\n}\n")],
    );
    let (result, directives) = build(&dir, "lib.tfn");
    let path = result.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(path, dir.join("out/lib.rs"));
    let warnings: Vec<&str> =
        directives.lines().filter(|l| l.starts_with("cargo:warning=")).collect();
    assert!(warnings.iter().any(|l| l.contains("unused")), "{directives}");
    assert!(warnings.iter().any(|l| l.contains("lib.tfn:1:")), "{directives}");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("pub fn f<'a>(&self, x: impl Into<tfn::TensorValue<'a>>"), "{text}");
    // Unchanged output keeps its modification time (nothing that includes it rebuilds).
    let before = std::fs::metadata(&path).unwrap().modified().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    build(&dir, "lib.tfn").0.unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), before);
}

#[test]
fn colliding_method_names_are_an_error_naming_both() {
    let src = "fn a_b(Tensor x) -> Tensor {\n    return x\n}\nfn a.b(Tensor x, Tensor y) -> Tensor {\n    return x + y\n}\n";
    let e = tfn_build::generate_str("c.tfn", src).expect_err("collision");
    let text = e.to_string();
    assert!(text.contains("`a_b`") && text.contains("`a.b`"), "{text}");
    assert!(text.contains("c.tfn:1:") && text.contains("c.tfn:4:"), "{text}");

    let reserved = "fn new(Tensor x) -> Tensor {\n    return x\n}\n";
    let text = tfn_build::generate_str("r.tfn", reserved).expect_err("reserved").to_string();
    assert!(text.contains("Lib::new"), "{text}");
}

#[test]
fn without_out_dir_outside_a_build_script_is_an_env_error() {
    let dir = scratch("env", &[("e.tfn", "fn f(Tensor x) -> Tensor {\n    return x\n}\n")]);
    // Integration tests of a crate without a build script get no OUT_DIR.
    let result = tfn_build::Builder::new(dir.join("e.tfn")).compile_to(&mut std::io::sink());
    assert!(matches!(result, Err(tfn_build::Error::Env(_))));
}
