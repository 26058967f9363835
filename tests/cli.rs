//! Tests of the `tfnc` binary as users run it: exit codes (0 ok, 1 the program or data is
//! wrong, 2 bad command line), `run` (outputs, `--vjp`, every spec function through the CLI,
//! errors naming the culprit), `check`, `ir`, `gradcheck` and `bench --json`; and (module
//! `docs`, `tests/cli/docs.rs`) every command the README and `docs/*.md` show, run as written.
//!
//! Each test works in a fresh temporary directory. The NumPy references of the `run` and
//! `grad` file tests (`tests/cases/{run,grad}/spec_nn.tfn`) are reused as expected outputs.
//! Nothing here depends on timing.

use tfn_test_utils::Scratch;

#[cfg(unix)]
#[path = "cli/aot.rs"]
mod aot;
#[cfg(unix)]
#[path = "cli/docs.rs"]
mod docs;
#[path = "cli/weights.rs"]
mod weights;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use tfn::{Backend, Session, Tensor, Value};
use tfn_test_utils::Tolerance;

const NN: &str = r#"
fn relu(Tensor x) -> Tensor {
    return maximum(x, 0.0)
}

fn gelu(Tensor x) -> Tensor {
    let inner = 0.7978845608 * (x + 0.044715 * x * x * x)
    return 0.5 * x * (1.0 + tanh(inner))
}

fn add2(Tensor x, Tensor y) -> Tensor {
    return x + y
}

fn axpy<T: {f32, f64}>(Tensor<T> x, Tensor<T> y, *, Scalar a = 1) -> Tensor<T> {
    return a * x + y
}

fn softplus(Tensor x) -> Tensor {
    return log1p(exp(x))
}
grad softplus(x) {
    x: grad * sigmoid(x)
}
"#;

/// A fresh scratch directory for one test.
fn scratch(test: &str) -> Scratch {
    Scratch::new("cli", test)
}

fn tfnc(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tfnc")).args(args).current_dir(dir).output().expect("run tfnc")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Asserts the exit code, showing the output on failure.
fn expect_exit(o: &Output, code: i32, what: &str) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "{what}: expected exit {code}\n--- stdout\n{}\n--- stderr\n{}",
        stdout(o),
        stderr(o)
    );
}

fn write_f32(path: &Path, shape: &[usize], values: &[f32]) {
    let a = ndarray::ArrayD::from_shape_vec(shape.to_vec(), values.to_vec()).expect("shape");
    tfn::npy::write(path, &Tensor::F32(a)).expect("write npy");
}

fn read(path: &Path) -> Tensor {
    tfn::npy::read(path).unwrap_or_else(|e| panic!("{e}"))
}

/// Whole programs against NumPy or another backend: the toolkit's accumulated tolerance.
fn assert_close(actual: &Tensor, expected: &Tensor, what: &str) {
    tfn_test_utils::assert_close(actual, expected, Tolerance::ACCUMULATED, what);
}

/// One `run`/`vjp` directive of a generated file-test case.
struct CaseCall {
    function: String,
    /// `NAME=VALUE` arguments, `.npy` paths made absolute.
    args: Vec<(String, String)>,
    /// The expected `.npy` files.
    expected: Vec<PathBuf>,
}

/// The `kind` directives of `tests/cases/<stage>/<case>`.
fn directives(stage: &str, case: &str, kind: &str) -> Vec<CaseCall> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases").join(stage);
    let text = std::fs::read_to_string(dir.join(case)).expect("read case");
    let data = dir.join("data");
    let resolve = |v: &str| -> String {
        if v.ends_with(".npy") {
            data.join(v).display().to_string()
        } else {
            v.to_string()
        }
    };
    text.lines()
        .filter_map(|l| l.strip_prefix("// tfn-test:"))
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|w| w.first() == Some(&kind))
        .map(|w| {
            let arrow = w.iter().position(|x| *x == "->").expect("->");
            let args = w[2..arrow]
                .iter()
                .map(|a| {
                    let (k, v) = a.split_once('=').expect("NAME=VALUE");
                    (k.to_string(), resolve(v))
                })
                .collect();
            let outs = w[arrow + 1..].iter().map(|o| data.join(o)).collect();
            CaseCall { function: w[1].to_string(), args, expected: outs }
        })
        .collect()
}

#[test]
fn check_exit_codes_and_locations() {
    let dir = scratch("check");
    std::fs::write(
        dir.join("ok.tfn"),
        "fn f(Tensor x) -> Tensor {\n    let unused = x\n    return x\n}\n",
    )
    .unwrap();
    std::fs::write(dir.join("bad.tfn"), "fn f(Tensor x) -> Tensor {\n    return x\n}\n\nfn g(Tensor x) -> Tensor {\n    return nosuch(x)\n}\n")
        .unwrap();

    let ok = tfnc(&dir, &["check", "ok.tfn"]);
    expect_exit(&ok, 0, "check with a warning");
    assert!(stderr(&ok).contains("warning"), "the warning is shown:\n{}", stderr(&ok));
    assert!(stderr(&ok).contains("ok.tfn:2:"), "warning location:\n{}", stderr(&ok));
    // On success, one line per file says what was checked (stderr; stdout stays empty).
    assert!(
        stderr(&ok).ends_with("checked ok.tfn: 1 function, 1 warning\n"),
        "the summary line:\n{}",
        stderr(&ok)
    );
    assert_eq!(stdout(&ok), "");
    let quiet = tfnc(&dir, &["check", "--quiet", "ok.tfn"]);
    expect_exit(&quiet, 0, "check --quiet");
    assert!(!stderr(&quiet).contains("checked"), "--quiet: diagnostics only:\n{}", stderr(&quiet));
    assert!(stderr(&quiet).contains("ok.tfn:2:"), "--quiet keeps warnings:\n{}", stderr(&quiet));
    // Gradients and rules count when there are any; used files are named with their functions.
    std::fs::write(
        dir.join("uses.tfn"),
        "use \"std:nn\"\nuse \"ok.tfn\"\n\nfn h(Tensor x) -> Tensor {\n    return gelu(f(x))\n}\n\n\
         fn sp(Tensor x) -> Tensor {\n    return log1p(exp(x))\n}\ngrad sp(x) {\n    x: grad * sigmoid(x)\n}\n",
    )
    .unwrap();
    let uses = tfnc(&dir, &["check", "uses.tfn"]);
    expect_exit(&uses, 0, "check of a file using others");
    let last = stderr(&uses).lines().last().unwrap_or_default().to_string();
    assert!(
        last.starts_with(
            "checked uses.tfn: 2 functions, 1 gradient, 1 warning; uses std:nn, ok.tfn ("
        ) && last.ends_with(" functions)"),
        "{last}"
    );

    let bad = tfnc(&dir, &["check", "ok.tfn", "bad.tfn"]);
    expect_exit(&bad, 1, "check with an error");
    assert!(stderr(&bad).contains("bad.tfn:6:12"), "file:line:col of the error:\n{}", stderr(&bad));
    assert!(stderr(&bad).contains("nosuch"), "names the culprit:\n{}", stderr(&bad));
    assert!(stderr(&bad).contains("checked ok.tfn"), "{}", stderr(&bad));
    assert!(!stderr(&bad).contains("checked bad.tfn"), "{}", stderr(&bad));

    let missing = tfnc(&dir, &["check", "does_not_exist.tfn"]);
    expect_exit(&missing, 1, "check of a missing file");
    assert!(stderr(&missing).contains("does_not_exist.tfn"), "{}", stderr(&missing));

    for args in [
        &["check"][..],
        &["frobnicate", "ok.tfn"],
        &["run", "ok.tfn"],
        &["run", "ok.tfn", "f", "--arg", "novalue"],
        &["run", "ok.tfn", "f", "--backend", "gpu"],
        &["ir", "ok.tfn", "--stage", "nonsense"],
        &["run", "ok.tfn", "f", "--threads", "0"],
        &["run", "ok.tfn", "f", "--arg", "x=f32[2,3]"],
    ] {
        let o = tfnc(&dir, args);
        expect_exit(&o, 2, &format!("bad command line {args:?}"));
        assert!(!stderr(&o).is_empty(), "{args:?} explains itself");
    }
}

#[test]
fn run_writes_outputs_matching_the_interpreter() {
    let dir = scratch("run_out");
    std::fs::write(dir.join("nn.tfn"), NN).unwrap();
    let xs: Vec<f32> = (0..12).map(|i| i as f32 * 0.37 - 2.0).collect();
    write_f32(&dir.join("x.npy"), &[3, 4], &xs);

    let session = Session::with_backend(Backend::Interp);
    session.load_str("nn.tfn", NN).expect("load");
    let x = read(&dir.join("x.npy"));
    let reference = session.call("gelu", &[Value::from(x)]).expect("call");
    let reference = reference.into_iter().next().and_then(Value::into_tensor).expect("tensor");

    for backend in ["jit", "interp"] {
        let out = format!("y_{backend}.npy");
        let o = tfnc(
            &dir,
            &["run", "nn.tfn", "gelu", "--arg", "x=x.npy", "--out", &out, "--backend", backend],
        );
        expect_exit(&o, 0, backend);
        assert_close(&read(&dir.join(&out)), &reference, backend);
    }
    // Without --out: a summary per output.
    let o = tfnc(&dir, &["run", "nn.tfn", "gelu", "--arg", "x=x.npy"]);
    expect_exit(&o, 0, "summary");
    assert!(stdout(&o).contains("f32[3, 4]"), "summary names dtype and shape:\n{}", stdout(&o));
    // Literal arguments.
    let o = tfnc(
        &dir,
        &[
            "run", "nn.tfn", "axpy", "--arg", "x=x.npy", "--arg", "y=x.npy", "--arg", "a=2",
            "--out", "z.npy",
        ],
    );
    expect_exit(&o, 0, "axpy with a literal");
    let expected: Vec<f32> = xs.iter().map(|v| 3.0 * v).collect();
    let expected = Tensor::F32(ndarray::ArrayD::from_shape_vec(vec![3, 4], expected).unwrap());
    assert_close(&read(&dir.join("z.npy")), &expected, "axpy a=2");
    // Without the optimiser, on one thread: the same result.
    let o = tfnc(
        &dir,
        &[
            "run",
            "nn.tfn",
            "gelu",
            "--arg",
            "x=x.npy",
            "--out",
            "y_plain.npy",
            "--no-optimize",
            "--threads",
            "1",
        ],
    );
    expect_exit(&o, 0, "--no-optimize --threads 1");
    assert_close(&read(&dir.join("y_plain.npy")), &reference, "--no-optimize");
    // As many --out paths as results, or a usage error.
    let o = tfnc(
        &dir,
        &["run", "nn.tfn", "gelu", "--arg", "x=x.npy", "--out", "a.npy", "--out", "b.npy"],
    );
    expect_exit(&o, 2, "two --out for one result");
}

#[test]
fn run_every_spec_function_through_the_cli() {
    let dir = scratch("run_spec");
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases/run/spec_nn.tfn");
    let case = case.display().to_string();
    let calls = directives("run", "spec_nn.tfn", "run");
    let mut seen = std::collections::BTreeSet::new();
    for (i, CaseCall { function, args, expected }) in calls.iter().enumerate() {
        // Every function once, plus every call on one backend: alternate the backends.
        let backend = if i % 2 == 0 { "jit" } else { "interp" };
        let mut argv: Vec<String> =
            vec!["run".into(), case.clone(), function.clone(), "--backend".into(), backend.into()];
        for (k, v) in args {
            argv.extend(["--arg".to_string(), format!("{k}={v}")]);
        }
        let outs: Vec<PathBuf> =
            (0..expected.len()).map(|j| dir.join(format!("{i}_{j}.npy"))).collect();
        for o in &outs {
            argv.extend(["--out".to_string(), o.display().to_string()]);
        }
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let o = tfnc(&dir, &argv);
        expect_exit(&o, 0, &format!("{argv:?}"));
        for (out, exp) in outs.iter().zip(expected) {
            assert_close(
                &read(out),
                &read(exp),
                &format!("{function} ({backend}) {}", exp.display()),
            );
        }
        seen.insert(function.clone());
    }
    let all =
        ["relu", "gelu", "linear", "softmax", "layer_norm", "moments", "axpy", "mlp", "softplus"];
    for f in all {
        assert!(seen.contains(f), "spec function `{f}` ran through the CLI");
    }
}

#[test]
fn bad_calls_exit_1_naming_the_culprit() {
    let dir = scratch("bad_calls");
    std::fs::write(dir.join("nn.tfn"), NN).unwrap();
    write_f32(&dir.join("x23.npy"), &[2, 3], &[1.0; 6]);
    write_f32(&dir.join("x43.npy"), &[4, 3], &[1.0; 12]);
    let ints = ndarray::ArrayD::from_shape_vec(vec![3], vec![1i32, 2, 3]).unwrap();
    tfn::npy::write(&dir.join("i.npy"), &Tensor::I32(ints)).unwrap();
    std::fs::write(dir.join("garbage.npy"), b"this is not numpy").unwrap();

    let cases: &[(&[&str], &[&str])] = &[
        (&["run", "nn.tfn", "nosuch", "--arg", "x=x23.npy"], &["nosuch"]),
        (&["run", "nn.tfn", "gelu", "--arg", "x=x23.npy", "--arg", "zz=x23.npy"], &["zz"]),
        (&["run", "nn.tfn", "axpy", "--arg", "x=i.npy", "--arg", "y=i.npy"], &["{f32, f64}"]),
        (
            &["run", "nn.tfn", "add2", "--arg", "x=x23.npy", "--arg", "y=x43.npy"],
            &["[2, 3]", "[4, 3]"],
        ),
        (&["run", "nn.tfn", "gelu", "--arg", "x=garbage.npy"], &["garbage.npy"]),
        (&["run", "nn.tfn", "gelu", "--arg", "x=missing.npy"], &["missing.npy"]),
        (
            &["run", "nn.tfn", "gelu", "--arg", "x=x23.npy", "--vjp", "garbage.npy"],
            &["garbage.npy"],
        ),
        (&["run", "missing.tfn", "gelu", "--arg", "x=x23.npy"], &["missing.tfn"]),
    ];
    for (args, needles) in cases {
        let o = tfnc(&dir, args);
        expect_exit(&o, 1, &format!("{args:?}"));
        let err = stderr(&o);
        for needle in *needles {
            assert!(err.contains(needle), "{args:?}: stderr should name `{needle}`:\n{err}");
        }
        assert!(!err.contains("panicked"), "{args:?} panicked:\n{err}");
    }
    // A missing argument is the command line's (exit 2), as in `cli_robustness`.
    let o = tfnc(&dir, &["run", "nn.tfn", "gelu"]);
    expect_exit(&o, 2, "run without --arg");
    assert!(stderr(&o).contains("`gelu` needs `x`"), "{}", stderr(&o));
}

#[test]
fn vjp_of_a_function_without_float_tensors_is_a_user_error() {
    let dir = scratch("vjp-ints");
    let src = "fn doubled(Tensor<i32> x) -> Tensor {\n    return cast(x, f32) * 2.0\n}\n";
    std::fs::write(dir.join("ints.tfn"), src).unwrap();
    let ints = ndarray::ArrayD::from_shape_vec(vec![3], vec![1i32, 2, 3]).unwrap();
    tfn::npy::write(&dir.join("i.npy"), &Tensor::I32(ints)).unwrap();
    write_f32(&dir.join("ct.npy"), &[3], &[1.0, 1.0, 1.0]);
    for backend in ["jit", "interp"] {
        let args = [
            "run",
            "ints.tfn",
            "doubled",
            "--arg",
            "x=i.npy",
            "--vjp",
            "ct.npy",
            "--backend",
            backend,
        ];
        let o = tfnc(&dir, &args);
        expect_exit(&o, 1, &format!("{args:?}"));
        let err = stderr(&o);
        assert!(err.contains("nothing to differentiate") && err.contains("`doubled`"), "{err}");
        // E0804 names the argument and its dtype.
        assert!(err.contains("`x` is i32"), "{err}");
        assert!(!err.contains("internal") && !err.contains("panicked"), "{err}");
    }
}

#[test]
fn vjp_through_the_cli() {
    let dir = scratch("vjp");
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases/grad/spec_nn.tfn");
    let case = case.display().to_string();
    for CaseCall { function, args, expected } in directives("grad", "spec_nn.tfn", "vjp") {
        if !["gelu", "mlp", "softplus"].contains(&function.as_str()) {
            continue;
        }
        let mut argv: Vec<String> = vec!["run".into(), case.clone(), function.clone()];
        for (k, v) in &args {
            if k == "cotangent" {
                argv.extend(["--vjp".to_string(), v.clone()]);
            } else {
                argv.extend(["--arg".to_string(), format!("{k}={v}")]);
            }
        }
        let outs: Vec<PathBuf> =
            (0..expected.len()).map(|j| dir.join(format!("{function}_{j}.npy"))).collect();
        for o in &outs {
            argv.extend(["--out".to_string(), o.display().to_string()]);
        }
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let o = tfnc(&dir, &argv);
        expect_exit(&o, 0, &format!("{argv:?}"));
        for (out, exp) in outs.iter().zip(&expected) {
            assert_close(&read(out), &read(exp), &format!("vjp {function}"));
        }
    }
}

#[test]
fn ir_prints_every_stage() {
    let dir = scratch("ir");
    std::fs::write(dir.join("nn.tfn"), NN).unwrap();
    let parsed = tfnc(&dir, &["ir", "nn.tfn", "--stage", "parsed"]);
    expect_exit(&parsed, 0, "parsed");
    assert!(stdout(&parsed).contains("fn gelu"), "{}", stdout(&parsed));
    for stage in ["lowered", "optimized", "fused"] {
        let o =
            tfnc(&dir, &["ir", "nn.tfn", "--fn", "gelu", "--stage", stage, "--arg", "x=f32[4, 8]"]);
        expect_exit(&o, 0, stage);
        assert!(stdout(&o).contains("tanh"), "{stage} shows the ops:\n{}", stdout(&o));
    }
    let o =
        tfnc(&dir, &["ir", "nn.tfn", "--fn", "gelu", "--stage", "lowered", "--arg", "x=f32[4, 8]"]);
    assert!(stdout(&o).contains("func"), "lowered is IR text:\n{}", stdout(&o));
    let o = tfnc(&dir, &["ir", "nn.tfn", "--stage", "lowered", "--arg", "x=f32[4]"]);
    expect_exit(&o, 2, "lowered without --fn");
    // `--arg` describes a call: without `--fn` there is none, and it is refused, not ignored.
    let o = tfnc(&dir, &["ir", "nn.tfn", "--arg", "x=f32[4]"]);
    expect_exit(&o, 2, "--arg without --fn");
    assert!(stderr(&o).contains("--fn"), "says what is missing:\n{}", stderr(&o));
    let o = tfnc(&dir, &["ir", "nn.tfn", "--fn", "axpy", "--arg", "x=i32[4]", "--arg", "y=i32[4]"]);
    expect_exit(&o, 1, "ir of a call that cannot instantiate");
    assert!(stderr(&o).contains("f32, f64"), "names the constraint:\n{}", stderr(&o));
    // Shapes no call could pass together are refused, as `run` and `bench` refuse them.
    for command in ["ir", "graph"] {
        let args: &[&str] = if command == "ir" {
            &["ir", "nn.tfn", "--fn", "axpy", "--arg", "x=f32[4]", "--arg", "y=f32[5]"]
        } else {
            &["graph", "nn.tfn", "axpy", "--arg", "x=f32[4]", "--arg", "y=f32[5]"]
        };
        let o = tfnc(&dir, args);
        expect_exit(&o, 1, command);
        assert!(stderr(&o).contains("do not fit `axpy`"), "{command}:\n{}", stderr(&o));
    }
    let o = tfnc(
        &dir,
        &[
            "ir",
            "nn.tfn",
            "--fn",
            "softplus",
            "--stage",
            "optimized",
            "--arg",
            "x=f32[8]",
            "--explain",
        ],
    );
    expect_exit(&o, 0, "--explain");
    assert!(stdout(&o).contains("rules fired"), "the optimiser's report:\n{}", stdout(&o));
}

#[test]
fn gradcheck_passes_and_catches_a_wrong_custom_grad() {
    let dir = scratch("gradcheck");
    std::fs::write(dir.join("good.tfn"), NN).unwrap();
    let wrong = NN.replace("x: grad * sigmoid(x)", "x: grad * 2.0 * sigmoid(x)");
    assert_ne!(wrong, NN);
    std::fs::write(dir.join("wrong.tfn"), wrong).unwrap();
    let good = tfnc(&dir, &["gradcheck", "good.tfn"]);
    expect_exit(&good, 0, "gradcheck of correct gradients");
    let one = tfnc(&dir, &["gradcheck", "good.tfn", "softplus"]);
    expect_exit(&one, 0, "gradcheck of one function");
    let bad = tfnc(&dir, &["gradcheck", "wrong.tfn"]);
    expect_exit(&bad, 1, "gradcheck of a wrong custom grad");
    let report = format!("{}{}", stdout(&bad), stderr(&bad));
    assert!(report.contains("softplus"), "names the failing function:\n{report}");
    // One function asked for by name that cannot be checked is not a pass.
    std::fs::write(
        dir.join("attr.tfn"),
        "fn scaled(Tensor x, *, Float s) -> Tensor {\n    return x * s\n}\n",
    )
    .unwrap();
    let skipped = tfnc(&dir, &["gradcheck", "attr.tfn", "scaled"]);
    expect_exit(&skipped, 1, "gradcheck of a function it cannot check");
    assert!(stdout(&skipped).contains("skip"), "says why:\n{}", stdout(&skipped));
    assert!(stderr(&skipped).contains("`scaled` was not checked"), "{}", stderr(&skipped));
    let all = tfnc(&dir, &["gradcheck", "attr.tfn"]);
    expect_exit(&all, 0, "a file whose only function is skipped, unnamed");
}

#[test]
fn bench_json_is_one_object() {
    let dir = scratch("bench");
    std::fs::write(dir.join("nn.tfn"), NN).unwrap();
    for backend in ["jit", "interp"] {
        let o = tfnc(
            &dir,
            &[
                "bench",
                "nn.tfn",
                "gelu",
                "--arg",
                "x=f32[16, 8]",
                "--json",
                "--millis",
                "1",
                "--backend",
                backend,
            ],
        );
        expect_exit(&o, 0, backend);
        let out = stdout(&o);
        let line = out.trim();
        assert!(
            line.starts_with('{') && line.ends_with('}') && !line.contains('\n'),
            "one JSON object:\n{out}"
        );
        for key in [
            "\"function\":\"gelu\"",
            "\"backend\":",
            "\"compile_us\":",
            "\"median_us\":",
            "\"min_us\":",
            "\"gbps\":",
        ] {
            assert!(line.contains(key), "{key} in {line}");
        }
        assert_eq!(line.matches('{').count(), line.matches('}').count(), "balanced: {line}");
    }
    let o = tfnc(&dir, &["bench", "nn.tfn", "gelu", "--arg", "x=f32[2,", "--json"]);
    expect_exit(&o, 2, "a malformed tensor type");
}

/// `tfnc check` accepts exactly the `iota_like`/`arange` dtypes `tfnc run` runs (the op's
/// declared dtypes): every numeric dtype runs — integers wrap like NumPy's
/// `arange(300, dtype=uint8)`, 16-bit floats round — and `bool` is refused by both, at the
/// `dtype` argument.
#[test]
fn check_accepts_exactly_the_iota_dtypes_run_runs() {
    let dir = scratch("iota-dtypes");
    write_f32(&dir.join("x.npy"), &[2, 300], &[0.0; 600]);
    let dtypes = ["bool", "i8", "u8", "i32", "i64", "f16", "bf16", "f32", "f64"];
    for dtype in dtypes {
        let src = format!(
            "fn a() -> Tensor {{\n    return arange(300, dtype={dtype})\n}}\n\
             fn b(Tensor x) -> Tensor {{\n    return iota_like(x, dim=-1, dtype={dtype})\n}}\n"
        );
        let file = format!("{dtype}.tfn");
        std::fs::write(dir.join(&file), src).unwrap();
        let check = tfnc(&dir, &["check", &file]);
        let runs = [
            tfnc(&dir, &["run", &file, "a", "--out", "a.npy"]),
            tfnc(&dir, &["run", &file, "b", "--arg", "x=x.npy", "--out", "b.npy"]),
            tfnc(&dir, &["run", &file, "b", "--arg", "x=x.npy", "--backend", "interp"]),
        ];
        if dtype == "bool" {
            expect_exit(&check, 1, "check of a bool iota");
            let err = stderr(&check);
            assert!(err.contains("E0212") && err.contains("dtype=bool"), "{err}");
            for o in &runs {
                expect_exit(o, 1, "run of a bool iota");
            }
            continue;
        }
        expect_exit(&check, 0, &format!("check of a {dtype} iota"));
        for o in &runs {
            expect_exit(o, 0, &format!("run of a {dtype} iota"));
        }
        for out in ["a.npy", "b.npy"] {
            let t = read(&dir.join(out));
            assert_eq!(t.dtype().name(), dtype, "{out}");
            let want = |i: usize| -> f64 {
                match dtype {
                    "i8" => f64::from(i as u8 as i8),
                    "u8" => f64::from(i as u8),
                    // 16-bit floats: the index rounded (bf16 has 8 significant bits).
                    "bf16" => f64::from(tfn_ir::half::bf16::from_f32(i as f32).to_f32()),
                    _ => i as f64,
                }
            };
            let got: Vec<f64> = match &t {
                Tensor::I8(a) => a.iter().map(|&v| v.into()).collect(),
                Tensor::U8(a) => a.iter().map(|&v| v.into()).collect(),
                Tensor::I32(a) => a.iter().map(|&v| v.into()).collect(),
                Tensor::I64(a) => a.iter().map(|&v| v as f64).collect(),
                Tensor::F16(a) => a.iter().map(|v| v.to_f64()).collect(),
                Tensor::BF16(a) => a.iter().map(|v| v.to_f64()).collect(),
                Tensor::F32(a) => a.iter().map(|&v| v.into()).collect(),
                Tensor::F64(a) => a.iter().copied().collect(),
                Tensor::Bool(_) => unreachable!("bool is refused"),
            };
            for (k, g) in got.iter().enumerate() {
                assert_eq!(*g, want(k % 300), "{dtype} {out} element {k}");
            }
        }
    }
}

/// `tfnc bench` draws the integer arguments that index an axis (`gather`, `index_select`,
/// `scatter_add`, `index_add`, also through `unsqueeze` inside `cross_entropy`) within that
/// axis, so the benchmark runs instead of failing "index 15 is out of range" — also in a
/// function with loops (indexed ops outside the loop).
#[test]
fn bench_draws_indices_within_the_indexed_axis() {
    let dir = scratch("bench-index");
    let src = r#"use "std:nn"
fn pick(Tensor x, Tensor i) -> Tensor {
    return gather(x, i, dim=1)
}
fn rows(Tensor x, Tensor i) -> Tensor {
    return index_select(x, i, dim=0)
}
fn spread(Tensor x, Tensor i, Tensor s, Tensor j, Tensor t) -> Tensor {
    return scatter_add(x, i, s, dim=-1) + index_add(x, cast(j, i64), t, dim=0)
}
fn loss(Tensor logits, Tensor targets) -> Tensor {
    return cross_entropy(logits, targets)
}
fn embed_layers(Tensor ids, Tensor types, Tensor word, Tensor typ, Tensor w) -> Tensor {
    var h = index_select(word, ids) + index_select(typ, types)
    for l in 0..size(w, 0) {
        h = tanh(matmul(h, w[l]))
    }
    return h
}
"#;
    std::fs::write(dir.join("idx.tfn"), src).unwrap();
    let cases: &[(&str, &[&str])] = &[
        ("pick", &["x=f32[3, 8]", "i=i64[3, 8]"]),
        ("rows", &["x=f32[3, 8]", "i=i32[50]"]),
        ("spread", &["x=f32[3, 8]", "i=i64[3, 2]", "s=f32[3, 2]", "j=i32[6]", "t=f32[6, 8]"]),
        ("loss", &["logits=f32[16, 5]", "targets=i64[16]"]),
        // Indexed ops outside a function's loop (the embeddings of a transformer).
        (
            "embed_layers",
            &[
                "ids=i64[2, 7]",
                "types=i64[2, 7]",
                "word=f32[50, 4]",
                "typ=f32[2, 4]",
                "w=f32[3, 4, 4]",
            ],
        ),
    ];
    for (function, args) in cases {
        let mut argv = vec!["bench", "idx.tfn", function, "--millis", "1", "--json"];
        for a in *args {
            argv.extend(["--arg", a]);
        }
        for backend in ["jit", "interp"] {
            let o = tfnc(&dir, &[&argv[..], &["--backend", backend]].concat());
            expect_exit(&o, 0, &format!("bench {function} on {backend}"));
        }
    }
}

const LOOPS: &str = r#"
fn rnn(Tensor xs, Tensor h0, Tensor wx, Tensor wh) -> Tensor {
    var h = h0
    for t in 0..size(xs, 0) {
        h = tanh(matmul(xs[t], wx) + matmul(h, wh))
    }
    return h
}

fn stack(Tensor x, Tensor w) -> Tensor {
    var h = x
    for l in 0..size(w, 0), checkpoint {
        h = h + sin(h * w[l])
    }
    return h
}

fn newton(Tensor a) -> Tensor {
    var x = a
    while max(abs(x * x - a)) > 1e-6, at most 50 { // a comment after the brace
        x = 0.5 * (x + a / x)
    }
    return x
}
"#;

#[test]
fn loops_through_the_cli_ir_run_vjp_and_gradcheck() {
    let dir = scratch("loops");
    std::fs::write(dir.join("loops.tfn"), LOOPS).unwrap();
    // The program: a stage, the loop and its body, compiled once.
    let args = ["--arg", "xs=f32[3, 2, 4]", "--arg", "h0=f32[2, 5]", "--arg", "wx=f32[4, 5]"];
    for stage in ["lowered", "fused"] {
        let mut argv = vec!["ir", "loops.tfn", "--fn", "rnn", "--stage", stage];
        argv.extend(args);
        argv.extend(["--arg", "wh=f32[5, 5]"]);
        let o = tfnc(&dir, &argv);
        expect_exit(&o, 0, stage);
        let text = stdout(&o);
        assert!(
            text.contains("// loop `for t in 0..size(xs, 0)`") && text.contains("tanh"),
            "{text}"
        );
    }
    // --vjp stored and checkpointed agree, and gradcheck passes through the loop.
    let n = |shape: &[usize]| -> Vec<f32> {
        (0..shape.iter().product::<usize>()).map(|i| ((i * 7 % 11) as f32 - 5.0) / 10.0).collect()
    };
    write_f32(&dir.join("x.npy"), &[2, 3], &n(&[2, 3]));
    write_f32(&dir.join("w.npy"), &[4, 3], &n(&[4, 3]));
    write_f32(&dir.join("c.npy"), &[2, 3], &n(&[2, 3]));
    let mut results = Vec::new();
    for extra in [&[][..], &["--checkpoint-loops"][..]] {
        let mut argv = vec!["run", "loops.tfn", "stack", "--arg", "x=x.npy", "--arg", "w=w.npy"];
        argv.extend(["--vjp", "c.npy", "--out", "gx.npy", "--out", "gw.npy"]);
        argv.extend(extra);
        let o = tfnc(&dir, &argv);
        expect_exit(&o, 0, &format!("{argv:?}"));
        results.push((read(&dir.join("gx.npy")), read(&dir.join("gw.npy"))));
    }
    assert_close(&results[0].0, &results[1].0, "gx checkpointed");
    assert_close(&results[0].1, &results[1].1, "gw checkpointed");
    let o = tfnc(&dir, &["run", "loops.tfn", "stack", "--arg", "x=x.npy", "--checkpoint-loops"]);
    expect_exit(&o, 2, "--checkpoint-loops without --vjp");
    let o = tfnc(&dir, &["gradcheck", "loops.tfn"]);
    expect_exit(&o, 0, "gradcheck through loops");
    let report = format!("{}{}", stdout(&o), stderr(&o));
    assert!(report.contains("rnn") && report.contains("stack"), "{report}");
    // A `while` has no gradient: skipped, named by its header alone.
    let skipped = "skip   newton: it runs the `while` loop `while max(abs(x * x - a)) > 1e-6, \
                   at most 50`, which has no gradient (E0805)";
    assert!(report.contains(skipped), "{report}");
}
