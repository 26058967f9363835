//! Failures are loud: when the optimiser fails or the code generator rejects a kernel, the call
//! still works (unoptimised graph, interpreter kernel), but the event is counted in
//! `Session::stats()`, logged under `TFN_LOG_COMPILES=1`, shown by `tfnc ir --stage fused`, and
//! an error in strict mode.
//!
//! A correct compiler never takes these paths, so the tests force them with
//! `TFN_INJECT_FAULT=optimizer,codegen` (honoured by debug builds only). The variable is
//! process-wide and this module shares its test binary with the others, so the in-process
//! test runs in a child process of its own (the test binary re-running just that test); the
//! CLI tests pass the variable to the child `tfnc` explicitly.

use tfn_test_utils::Scratch;

use ndarray::{ArrayD, IxDyn};
use std::process::{Command, Output};
use tfn::{Backend, Session, SessionOptions, Tensor, Value};

const SRC: &str = r#"
fn gelu(Tensor x) -> Tensor {
    let inner = 0.7978845608 * (x + 0.044715 * x * x * x)
    return 0.5 * x * (1.0 + tanh(inner))
}
"#;

fn input() -> ArrayD<f32> {
    ArrayD::from_shape_fn(IxDyn(&[3, 5]), |i| (i[0] as f32 - 1.0) * 0.7 + i[1] as f32 * 0.3)
}

fn gelu_with(options: SessionOptions) -> (Result<Vec<Tensor>, tfn::Error>, tfn::Stats) {
    let s = Session::with_options(options);
    s.load_str("gelu.tfn", SRC).expect("loads");
    let x = input();
    let out = s.call("gelu", &[Value::from(x.view())]).map(|values| {
        values.into_iter().map(|v| v.into_tensor().expect("a tensor result")).collect()
    });
    (out, s.stats())
}

/// Set in the child process that runs [`fallbacks_are_counted_and_strict_mode_refuses_them`].
const CHILD: &str = "TFN_TEST_FALLBACKS_CHILD";

#[test]
fn fallbacks_are_counted_and_strict_mode_refuses_them() {
    if std::env::var_os(CHILD).is_none() {
        // `TFN_INJECT_FAULT` would reach every test of this process: run this test alone in a
        // child process (see the module docs).
        let name = "fallbacks::fallbacks_are_counted_and_strict_mode_refuses_them";
        let child = Command::new(std::env::current_exe().expect("the test binary"))
            .args([name, "--exact", "--test-threads=1", "--nocapture"])
            .env(CHILD, "1")
            .output()
            .expect("run the test binary");
        let out = String::from_utf8_lossy(&child.stdout);
        let err = String::from_utf8_lossy(&child.stderr);
        assert!(child.status.success(), "the child failed:\n{out}\n{err}");
        assert!(out.contains("1 passed"), "the child ran no test:\n{out}");
        return;
    }
    std::env::set_var("TFN_INJECT_FAULT", "optimizer,codegen");
    let reference = {
        let (out, _) = gelu_with(SessionOptions {
            backend: Backend::Interp,
            optimize: false,
            strict: false,
            ..SessionOptions::default()
        });
        out.expect("the interpreter runs")
    };

    let (out, stats) = gelu_with(SessionOptions { strict: false, ..SessionOptions::default() });
    let out = out.expect("a non-strict session survives the faults");
    assert_eq!(out, reference, "the fallback path computes the reference result");
    assert_eq!(stats.optimizer_fallbacks, 1, "{stats:?}");
    assert!(stats.interpreted_kernels >= 1, "{stats:?}");

    let (out, _) = gelu_with(SessionOptions { strict: true, ..SessionOptions::default() });
    let err = out.expect_err("strict mode refuses a fallback").to_string();
    assert!(err.contains("strict"), "{err}");

    std::env::set_var("TFN_INJECT_FAULT", "codegen");
    let (out, _) = gelu_with(SessionOptions { strict: true, ..SessionOptions::default() });
    let err = out.expect_err("strict mode refuses a rejected kernel").to_string();
    assert!(err.contains("rejected") && err.contains("fault injected"), "{err}");

    std::env::remove_var("TFN_INJECT_FAULT");
    let (out, stats) = gelu_with(SessionOptions { strict: true, ..SessionOptions::default() });
    assert!(out.is_ok(), "no fault, no error: {:?}", out.err());
    assert_eq!((stats.optimizer_fallbacks, stats.interpreted_kernels), (0, 0));
}

fn scratch(test: &str) -> Scratch {
    let dir = Scratch::new("fallbacks", test);
    std::fs::write(dir.join("gelu.tfn"), SRC).expect("write source");
    tfn::npy::write(&dir.join("x.npy"), &Tensor::F32(input())).expect("write x.npy");
    dir
}

fn tfnc(dir: &std::path::Path, faults: &str, strict: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tfnc"))
        .args(args)
        .current_dir(dir)
        .env("TFN_INJECT_FAULT", faults)
        .env("TFN_STRICT", strict)
        .env("TFN_LOG_COMPILES", "1")
        .output()
        .expect("run tfnc")
}

#[test]
fn the_cli_logs_shows_and_refuses_fallbacks() {
    let dir = scratch("cli");
    let run = ["run", "gelu.tfn", "gelu", "--arg", "x=x.npy"];
    let ok = tfnc(&dir, "optimizer,codegen", "0", &run);
    let err = String::from_utf8_lossy(&ok.stderr);
    assert_eq!(ok.status.code(), Some(0), "{err}");
    assert!(err.contains("FALLBACK") && err.contains("optimiser failed"), "{err}");

    let strict = tfnc(&dir, "codegen", "1", &run);
    let err = String::from_utf8_lossy(&strict.stderr);
    assert_eq!(strict.status.code(), Some(1), "{err}");
    assert!(err.contains("strict"), "{err}");

    let ir = ["ir", "gelu.tfn", "--fn", "gelu", "--stage", "fused", "--arg", "x=f32[4, 8]"];
    let shown = tfnc(&dir, "codegen", "0", &ir);
    let text = String::from_utf8_lossy(&shown.stdout);
    assert_eq!(shown.status.code(), Some(0), "{}", String::from_utf8_lossy(&shown.stderr));
    assert!(text.contains("FALLBACK: kernel 0 was rejected"), "{text}");

    let clean = tfnc(&dir, "", "1", &ir);
    let text = String::from_utf8_lossy(&clean.stdout);
    assert!(!text.contains("FALLBACK"), "{text}");
}
