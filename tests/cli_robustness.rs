//! `tfnc` against hostile input and hostile surroundings: corrupt `.npy` files, zero-size
//! results, closed or full standard streams, failing output writes, a bad environment and
//! malformed literals. Every case must exit 1 or 2 naming the culprit, never panic or abort,
//! and leave existing files intact when it fails.

use tfn_test_utils::Scratch;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use tfn::Tensor;

const SRC: &str = r#"
fn id(Tensor x) -> Tensor {
    return x
}

fn rowsum(Tensor x) -> Tensor {
    return sum(x, dims=[1], keepdim=true)
}

fn two(Tensor x) -> (Tensor, Tensor) {
    return (x, x * 2.0)
}

fn noisy(Tensor x) -> Tensor {
    let unused = x
    return x
}

fn outer_sum(Tensor x, Tensor y) -> Tensor {
    return sum(unsqueeze(x, 1) * unsqueeze(y, 0), dims=[1])
}

fn huge(Tensor x) -> Tensor {
    return full([100000, 100000, 100000, 100000], 0.0) + x
}

fn big(Tensor x) -> Tensor {
    return full([1000000000], 1.0) + sum(x)
}
"#;

fn scratch(test: &str) -> Scratch {
    let dir = Scratch::new("clirob", test);
    std::fs::write(dir.join("f.tfn"), SRC).expect("write source");
    dir
}

fn tfnc_cmd(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tfnc"));
    c.args(args).current_dir(dir).env_remove("TFN_MAX_TENSOR_BYTES");
    c
}

fn tfnc(dir: &Path, args: &[&str]) -> Output {
    tfnc_cmd(dir, args).output().expect("run tfnc")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Asserts the exit code and that nothing panicked; returns stderr.
fn expect_exit(o: &Output, code: i32, what: &str) -> String {
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "{what}: stdout:\n{}\nstderr:\n{err}", text(&o.stdout));
    assert!(!err.contains("panicked"), "{what} panicked:\n{err}");
    err
}

fn write_f32(path: &Path, shape: &[usize], values: Vec<f32>) {
    let a = ndarray::ArrayD::from_shape_vec(shape.to_vec(), values).expect("shape");
    tfn::npy::write(path, &Tensor::F32(a)).expect("write npy");
}

/// A `.npy` header (version 1.0, padded to 64 bytes) followed by `data`.
fn npy_bytes(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut dict = dict.to_string();
    while !(10 + dict.len() + 1).is_multiple_of(64) {
        dict.push(' ');
    }
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.extend_from_slice(data);
    out
}

#[test]
fn corrupt_npy_inputs_exit_1_naming_the_file() {
    let dir = scratch("npy");
    let f = |descr: &str, fortran: &str, shape: &str| {
        format!("{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape}, }}")
    };
    let files: Vec<(&str, Vec<u8>, &str)> = vec![
        ("huge.npy", npy_bytes(&f("<f8", "False", "(10000000000,)"), &[0; 24]), "truncated"),
        ("short.npy", npy_bytes(&f("<f4", "False", "(2, 3)"), &[0; 20]), "truncated"),
        ("overflow.npy", npy_bytes(&f("<f4", "False", "(99999999999, 99999999999)"), &[]), "large"),
        ("be.npy", npy_bytes(&f(">f4", "False", "(2,)"), &[0; 8]), ">f4"),
        ("c8.npy", npy_bytes(&f("<c8", "False", "(2,)"), &[0; 16]), "<c8"),
        ("nodict.npy", npy_bytes("nonsense", &[]), "header"),
        ("noshape.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False}", &[]), "shape"),
        ("bool.npy", npy_bytes(&f("|b1", "False", "(2,)"), &[1, 9]), "bool"),
        ("trailing.npy", npy_bytes(&f("<f4", "False", "(1,)"), &[0; 5]), "after"),
        ("version.npy", b"\x93NUMPY\x07\x00\x10\x00{}".to_vec(), "version"),
        ("garbage.npy", b"not numpy at all".to_vec(), "garbage.npy"),
        ("empty.npy", Vec::new(), "empty.npy"),
    ];
    for (name, bytes, needle) in files {
        std::fs::write(dir.join(name), bytes).unwrap();
        let o = tfnc(&dir, &["run", "f.tfn", "id", "--arg", &format!("x={name}")]);
        let err = expect_exit(&o, 1, name);
        assert!(err.contains(name) && err.contains(needle), "{name}: names `{needle}`:\n{err}");
    }
    // A stream that is not a file is read no further than a header.
    if Path::new("/dev/zero").exists() {
        let err =
            expect_exit(&tfnc(&dir, &["run", "f.tfn", "id", "--arg", "x=/dev/zero"]), 1, "zero");
        assert!(err.contains("/dev/zero"), "{err}");
    }
    // Fortran order is read as the logical array.
    let fortran: Vec<u8> =
        [0f32, 3.0, 1.0, 4.0, 2.0, 5.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(dir.join("fortran.npy"), npy_bytes(&f("<f4", "True", "(2, 3)"), &fortran))
        .unwrap();
    let o = tfnc(&dir, &["run", "f.tfn", "id", "--arg", "x=fortran.npy", "--out", "y.npy"]);
    expect_exit(&o, 0, "fortran order");
    let expected = ndarray::ArrayD::from_shape_vec(vec![2, 3], (0..6).map(|v| v as f32).collect());
    assert_eq!(tfn::npy::read(&dir.join("y.npy")).unwrap(), Tensor::F32(expected.unwrap()));
}

#[test]
fn zero_size_results_are_written_and_read_back() {
    let dir = scratch("zero");
    write_f32(&dir.join("x.npy"), &[0, 3], vec![]);
    write_f32(&dir.join("ct.npy"), &[0, 1], vec![]);
    for backend in ["interp", "jit"] {
        let o = tfnc(
            &dir,
            &["run", "f.tfn", "rowsum", "--arg", "x=x.npy", "--backend", backend, "--out", "s.npy"],
        );
        expect_exit(&o, 0, backend);
        assert_eq!(tfn::npy::read(&dir.join("s.npy")).unwrap().shape(), [0, 1]);
        let o = tfnc(
            &dir,
            &[
                "run",
                "f.tfn",
                "rowsum",
                "--arg",
                "x=x.npy",
                "--vjp",
                "ct.npy",
                "--backend",
                backend,
                "--out",
                "g.npy",
            ],
        );
        expect_exit(&o, 0, &format!("vjp {backend}"));
        assert_eq!(tfn::npy::read(&dir.join("g.npy")).unwrap().shape(), [0, 3]);
    }
}

#[test]
fn closed_or_full_standard_streams_do_not_panic() {
    let dir = scratch("streams");
    write_f32(&dir.join("x.npy"), &[2], vec![1.0, 2.0]);
    // stderr is a pipe nobody reads: the warning cannot be written.
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let o = tfnc_cmd(&dir, &["check", "f.tfn"]).stderr(writer).output().expect("run");
    assert_eq!(o.status.code(), Some(1), "unwritable warnings: exit 1, no panic (101)");
    // stdout likewise, for a run's summary.
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let o = tfnc_cmd(&dir, &["run", "f.tfn", "id", "--arg", "x=x.npy"])
        .stdout(writer)
        .output()
        .expect("run");
    let err = expect_exit(&o, 1, "closed stdout");
    assert!(err.contains("cannot write to standard output"), "say what failed:\n{err}");
    // stderr closed altogether: the output file must not receive the warnings.
    let o = Command::new("sh")
        .arg("-c")
        .arg("exec \"$0\" \"$@\" 2>&-")
        .args([
            env!("CARGO_BIN_EXE_tfnc"),
            "run",
            "f.tfn",
            "noisy",
            "--arg",
            "x=x.npy",
            "--out",
            "y.npy",
        ])
        .current_dir(&dir)
        .output()
        .expect("run sh");
    expect_exit(&o, 0, "closed stderr");
    assert_eq!(tfn::npy::read(&dir.join("y.npy")).unwrap().shape(), [2]);
    // A full disk behind stdout.
    if Path::new("/dev/full").exists() {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
        let o = tfnc_cmd(&dir, &["run", "f.tfn", "id", "--arg", "x=x.npy"])
            .stdout(Stdio::from(full))
            .output()
            .expect("run");
        let err = expect_exit(&o, 1, "stdout on /dev/full");
        assert!(err.contains("standard output"), "{err}");
    }
}

#[test]
fn outputs_are_written_all_or_none() {
    let dir = scratch("atomic");
    write_f32(&dir.join("x.npy"), &[2], vec![1.0, 2.0]);
    let before = b"the good file that stood here".to_vec();
    std::fs::write(dir.join("a.npy"), &before).unwrap();
    let o = tfnc(
        &dir,
        &["run", "f.tfn", "two", "--arg", "x=x.npy", "--out", "a.npy", "--out", "missing/b.npy"],
    );
    let err = expect_exit(&o, 1, "second output unwritable");
    assert!(err.contains("missing/b.npy"), "{err}");
    assert_eq!(std::fs::read(dir.join("a.npy")).unwrap(), before, "the first output is untouched");
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    let o = tfnc(
        &dir,
        &["run", "f.tfn", "two", "--arg", "x=x.npy", "--out", "a.npy", "--out", "b.npy"],
    );
    expect_exit(&o, 0, "both writable");
    assert_eq!(tfn::npy::read(&dir.join("b.npy")).unwrap().shape(), [2]);
    let o = tfnc(
        &dir,
        &["run", "f.tfn", "two", "--arg", "x=x.npy", "--out", "a.npy", "--out", "a.npy"],
    );
    let err = expect_exit(&o, 2, "one path twice");
    assert!(err.contains("a.npy"), "{err}");
    // The same file spelled two ways, existing or not yet.
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    for (first, second) in [("a.npy", "./a.npy"), ("new.npy", "sub/../new.npy")] {
        let o = tfnc(
            &dir,
            &["run", "f.tfn", "two", "--arg", "x=x.npy", "--out", first, "--out", second],
        );
        let err = expect_exit(&o, 2, &format!("{first} and {second}"));
        assert!(err.contains("given twice"), "{err}");
    }
    assert!(!dir.join("new.npy").exists());
    // An output through a dangling symbolic link creates the link's target (as `np.save`
    // does); through a link to a file, it replaces the file; either way the link stays.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("target.npy", dir.join("dangling.npy")).unwrap();
        std::os::unix::fs::symlink("b.npy", dir.join("to_b.npy")).unwrap();
        let o = tfnc(
            &dir,
            &[
                "run",
                "f.tfn",
                "two",
                "--arg",
                "x=x.npy",
                "--out",
                "dangling.npy",
                "--out",
                "to_b.npy",
            ],
        );
        expect_exit(&o, 0, "outputs through symbolic links");
        for (link, target) in [("dangling.npy", "target.npy"), ("to_b.npy", "b.npy")] {
            let meta = std::fs::symlink_metadata(dir.join(link)).unwrap();
            assert!(meta.file_type().is_symlink(), "{link} is still a link");
            assert!(dir.join(target).is_file(), "{target} written");
        }
    }
    // An `--arg` given twice is a bad command line (exit 2) for every command that takes one.
    let twice = ["--arg", "x=f32[4]", "--arg", "x=f32[4]"];
    for command in [
        &["ir", "f.tfn", "--fn", "two"][..],
        &["graph", "f.tfn", "two"],
        &["bench", "f.tfn", "two", "--millis", "1"],
        &["run", "f.tfn", "two"],
    ] {
        let o = tfnc(&dir, &[command, &twice[..]].concat());
        let err = expect_exit(&o, 2, &format!("{command:?} with --arg x twice"));
        assert!(err.contains("`x` is given twice"), "{err}");
    }
    // So is a missing one: every command names the parameter and how to give it.
    for (command, how) in [
        (&["ir", "f.tfn", "--fn", "outer_sum", "--stage", "fused"][..], "--arg x=f32[4, 8]"),
        (&["graph", "f.tfn", "outer_sum"], "--arg x=f32[4, 8]"),
        (&["bench", "f.tfn", "outer_sum", "--millis", "1"], "--arg x=f32[4, 8]"),
        (&["run", "f.tfn", "outer_sum"], "--arg x=x.npy"),
    ] {
        let o = tfnc(&dir, command);
        let err = expect_exit(&o, 2, &format!("{command:?} without --arg"));
        assert!(err.contains("`outer_sum` needs `x`, `y`") && err.contains(how), "{err}");
        let o = tfnc(&dir, &[command, &["--arg", "x=f32[4]"]].concat());
        if command[0] != "run" {
            let err = expect_exit(&o, 2, &format!("{command:?} without --arg y"));
            assert!(err.contains("`outer_sum` needs `y`:"), "{err}");
        }
    }
}

#[test]
fn one_vjp_cotangent_per_result() {
    let dir = scratch("vjp");
    write_f32(&dir.join("x.npy"), &[3], vec![1.0, 2.0, 3.0]);
    write_f32(&dir.join("c.npy"), &[3], vec![1.0, 1.0, 1.0]);
    let o = tfnc(
        &dir,
        &[
            "run", "f.tfn", "two", "--arg", "x=x.npy", "--vjp", "c.npy", "--vjp", "c.npy", "--out",
            "g.npy",
        ],
    );
    expect_exit(&o, 0, "two cotangents");
    let g = tfn::npy::read(&dir.join("g.npy")).unwrap();
    let expected = ndarray::ArrayD::from_shape_vec(vec![3], vec![3f32; 3]).unwrap();
    assert_eq!(g, Tensor::F32(expected), "d/dx <(x, 2x), (1, 1)> = 3");
    let o = tfnc(&dir, &["run", "f.tfn", "two", "--arg", "x=x.npy", "--vjp", "c.npy"]);
    let err = expect_exit(
        &o,
        2,
        "one cotangent for two results: a usage error, as a wrong --out count is",
    );
    assert!(err.contains("2 cotangent(s), got 1"), "{err}");
}

#[test]
fn bad_environment_and_literals_are_usage_errors() {
    let dir = scratch("usage");
    write_f32(&dir.join("x.npy"), &[2], vec![1.0, 2.0]);
    for value in ["abc", "-1", "1e23", "12 GB", ""] {
        let o = tfnc_cmd(&dir, &["run", "f.tfn", "id", "--arg", "x=x.npy"])
            .env("TFN_MAX_TENSOR_BYTES", value)
            .output()
            .expect("run");
        let err = expect_exit(&o, 2, value);
        let shown = format!("TFN_MAX_TENSOR_BYTES=`{value}`");
        assert!(err.contains(&shown), "{err}");
    }
    let o = tfnc_cmd(&dir, &["run", "f.tfn", "id", "--arg", "x=x.npy"])
        .env("TFN_MAX_TENSOR_BYTES", "1024")
        .output()
        .expect("run");
    expect_exit(&o, 0, "a valid limit");
    // `bench` generates its random inputs within the limit too.
    let o = tfnc_cmd(&dir, &["bench", "f.tfn", "id", "--arg", "x=f32[1000]", "--millis", "1"])
        .env("TFN_MAX_TENSOR_BYTES", "1000")
        .output()
        .expect("run");
    let err = expect_exit(&o, 2, "bench input over the limit");
    assert!(err.contains("TFN_MAX_TENSOR_BYTES"), "{err}");
    let cases: &[(&[&str], &str)] = &[
        (&["run", "f.tfn", "id", "--arg", "x=1e999"], "1e999"),
        (&["run", "f.tfn", "id", "--arg", "x=[1.0, -1e999]"], "-1e999"),
        (&["ir", "f.tfn", "--fn", "id", "--arg", "x=f32[,]"], "f32[,]"),
        (&["ir", "f.tfn", "--fn", "id", "--arg", "x=f32[2,,3]"], "f32[2,,3]"),
    ];
    for (args, needle) in cases {
        let err = expect_exit(&tfnc(&dir, args), 2, needle);
        assert!(err.contains(needle), "{args:?}:\n{err}");
    }
    let o = tfnc(&dir, &["ir", "f.tfn", "--fn", "id", "--arg", "x=f32[]"]);
    expect_exit(&o, 0, "f32[] is rank 0");
}

/// `TFN_STREAM` (streamed outputs, `executor/streamed.rs`) changes no result: `on`, `off`,
/// `auto` and an unknown value (reported on stderr and ignored, as `TFN_SIMD`) write the same
/// bytes, exit 0.
#[test]
fn stream_settings_never_change_results_and_unknown_ones_are_reported() {
    let dir = scratch("stream");
    let values: Vec<f32> = (0..70_001).map(|i| ((i * 37) % 1001) as f32 * 0.013 - 6.5).collect();
    write_f32(&dir.join("x.npy"), &[70_001], values);
    let mut written: Vec<(String, Vec<u8>)> = Vec::new();
    for setting in ["on", "off", "auto", "sideways"] {
        let (a, b) = (format!("{setting}-a.npy"), format!("{setting}-b.npy"));
        let args = ["run", "f.tfn", "two", "--arg", "x=x.npy", "--out", &a, "--out", &b];
        let o = tfnc_cmd(&dir, &args).env("TFN_STREAM", setting).output().expect("run");
        let err = expect_exit(&o, 0, setting);
        assert_eq!(err.contains("ignoring TFN_STREAM"), setting == "sideways", "{setting}: {err}");
        let mut bytes = std::fs::read(dir.join(&a)).expect("first output");
        bytes.extend(std::fs::read(dir.join(&b)).expect("second output"));
        written.push((setting.to_string(), bytes));
    }
    for (setting, bytes) in &written[1..] {
        assert!(bytes == &written[0].1, "TFN_STREAM={setting} wrote other bytes than `on`");
    }
}

/// `TFN_HUGE_PAGES` (`tfn_backend::huge_pages`) changes no result: a 9 MB `.npy` input (read
/// into an advised buffer) and 9 MB outputs give the same bytes `on`, `off` and for an unknown
/// value, which is reported once on stderr.
#[test]
fn huge_page_settings_never_change_results_and_unknown_ones_are_reported() {
    let dir = scratch("huge_pages");
    let n = 9 << 18;
    let values: Vec<f32> = (0..n).map(|i| ((i * 37) % 1001) as f32 * 0.013 - 6.5).collect();
    write_f32(&dir.join("x.npy"), &[n], values);
    let mut written: Vec<(String, Vec<u8>)> = Vec::new();
    for setting in ["on", "off", "sometimes"] {
        let (a, b) = (format!("{setting}-a.npy"), format!("{setting}-b.npy"));
        let args = ["run", "f.tfn", "two", "--arg", "x=x.npy", "--out", &a, "--out", &b];
        let o = tfnc_cmd(&dir, &args).env("TFN_HUGE_PAGES", setting).output().expect("run");
        let err = expect_exit(&o, 0, setting);
        let reports = err.matches("ignoring TFN_HUGE_PAGES").count();
        assert_eq!(reports, usize::from(setting == "sometimes"), "{setting}: {err}");
        let mut bytes = std::fs::read(dir.join(&a)).expect("first output");
        bytes.extend(std::fs::read(dir.join(&b)).expect("second output"));
        written.push((setting.to_string(), bytes));
    }
    for (setting, bytes) in &written[1..] {
        assert!(bytes == &written[0].1, "TFN_HUGE_PAGES={setting} wrote other bytes than `on`");
    }
}

/// `TFN_MAX_TENSOR_BYTES` limits the tensors a call allocates: the JIT never stores the
/// `[n, n]` product a reduction fuses with, so it runs; the interpreter, which stores every
/// value, refuses it. A size that overflows 64 bits is said so, not printed as 2^64 - 1.
#[test]
fn the_size_limit_applies_to_allocated_tensors() {
    let dir = scratch("limit");
    let n = 2000;
    write_f32(&dir.join("x.npy"), &[n], (0..n).map(|i| (i % 7) as f32).collect());
    write_f32(&dir.join("y.npy"), &[n], vec![0.5; n]);
    let run = |backend: &str| {
        let args = ["run", "f.tfn", "outer_sum", "--arg", "x=x.npy", "--arg", "y=y.npy"];
        let mut c = tfnc_cmd(&dir, &args);
        // The [n, n] product is 16 MB; the inputs and the result 8 KB each.
        c.args(["--backend", backend, "--out", "s.npy"]).env("TFN_MAX_TENSOR_BYTES", "1000000");
        c.output().expect("run")
    };
    expect_exit(&run("jit"), 0, "a fused [n, n] product under a limit it exceeds");
    let Tensor::F32(s) = tfn::npy::read(&dir.join("s.npy")).unwrap() else { panic!("f32") };
    for (i, v) in s.iter().enumerate() {
        assert_eq!(*v, (i % 7) as f32 * 1000.0, "element {i}");
    }
    let err = expect_exit(&run("interp"), 1, "the interpreter stores the product");
    assert!(err.contains("[2000, 2000]") && err.contains("TFN_MAX_TENSOR_BYTES"), "{err}");
    // The same at the default limit of 16 GiB: the product would be 40 GB.
    let n = 100_000;
    write_f32(&dir.join("x.npy"), &[n], (0..n).map(|i| (i % 7) as f32).collect());
    write_f32(&dir.join("y.npy"), &[n], vec![0.25; n]);
    let args = ["run", "f.tfn", "outer_sum", "--arg", "x=x.npy", "--arg", "y=y.npy"];
    expect_exit(&tfnc(&dir, &[&args[..], &["--out", "s.npy"]].concat()), 0, "n = 100,000");
    let Tensor::F32(s) = tfn::npy::read(&dir.join("s.npy")).unwrap() else { panic!("f32") };
    assert_eq!(s.len(), n);
    for (i, v) in s.iter().enumerate() {
        assert_eq!(*v, (i % 7) as f32 * 25_000.0, "element {i}");
    }

    write_f32(&dir.join("one.npy"), &[1], vec![1.0]);
    for backend in ["jit", "interp"] {
        let args = ["run", "f.tfn", "huge", "--arg", "x=one.npy", "--backend", backend];
        let err = expect_exit(&tfnc(&dir, &args), 1, "a result of 4 * 10^20 bytes");
        assert!(err.contains("more than 2^64 bytes"), "{err}");
        assert!(!err.contains("18446744073709551615"), "{err}");
    }
}

/// The on-disk code cache (`backend/src/code_cache.rs`): a second process loads the kernels
/// the first compiled and writes the same bytes; `TFN_CODE_CACHE=check` compiles them again
/// and finds them identical; damaged entries are compiled again and rewritten; `off` and a
/// cache directory that cannot be created change nothing but the loading; an unknown setting
/// is reported and ignored.
#[test]
fn the_code_cache_is_reused_across_processes_and_damaged_entries_are_recompiled() {
    let dir = scratch("code-cache");
    std::fs::write(
        dir.join("k.tfn"),
        "fn k(Tensor x, Tensor key) -> Tensor {
    let e = exp(x - max(x, dims=[1], keepdim=true))
    return e / sum(e, dims=[1], keepdim=true) + tanh(x) * rand_like(x, key)
}
",
    )
    .expect("write source");
    let values: Vec<f32> = (0..3 * 1001).map(|i| ((i * 37) % 1001) as f32 * 0.013 - 6.5).collect();
    write_f32(&dir.join("x.npy"), &[3, 1001], values);
    let key = ndarray::ArrayD::from_shape_vec(vec![2], vec![3i64, 4]).expect("shape");
    tfn::npy::write(&dir.join("key.npy"), &Tensor::I64(key)).expect("write npy");
    let cache = dir.join("cache");
    // (kernels compiled, of them loaded from the cache), summed over the log; the output.
    let run = |setting: &str, cache_dir: &Path, what: &str| -> (usize, usize, Vec<u8>, String) {
        let out = format!("{what}.npy");
        let args = ["run", "k.tfn", "k", "--arg", "x=x.npy", "--arg", "key=key.npy", "--out", &out];
        let o = tfnc_cmd(&dir, &args)
            .env("TFN_CACHE_DIR", cache_dir)
            .env("TFN_CODE_CACHE", setting)
            .env("TFN_LOG_COMPILES", "1")
            .output()
            .expect("run");
        let err = expect_exit(&o, 0, what);
        let (mut compiled, mut loaded) = (0, 0);
        // "... (N loop kernels compiled, K of them loaded from the code cache; ...)"
        let count_before = |line: &str, phrase: &str| -> usize {
            let head = &line[..line.find(phrase).expect(phrase)];
            let word = head.split_whitespace().last().expect("a count");
            word.trim_start_matches('(').parse().expect("a count")
        };
        for line in err.lines().filter(|l| l.contains("of them loaded from the code cache")) {
            compiled += count_before(line, " loop kernels compiled");
            loaded += count_before(line, " of them loaded");
        }
        assert!(compiled > 0, "{what}: no kernel compiled?\n{err}");
        (compiled, loaded, std::fs::read(dir.join(&out)).expect("output"), err)
    };
    let entries = || -> Vec<std::path::PathBuf> {
        let listing = std::fs::read_dir(cache.join("code")).expect("the cache directory");
        listing.map(|e| e.expect("entry").path()).collect()
    };
    let (compiled, loaded, want, _) = run("on", &cache, "cold");
    assert_eq!(loaded, 0, "an empty cache loads nothing");
    assert_eq!(entries().len(), compiled, "one entry per kernel compiled");
    let (c, loaded, got, _) = run("on", &cache, "warm");
    assert_eq!((c, loaded), (compiled, compiled), "every kernel loaded");
    assert!(got == want, "the loaded kernels wrote other bytes");
    let (_, loaded, got, _) = run("check", &cache, "check");
    assert_eq!(loaded, compiled, "check mode loads (and compares) every kernel");
    assert!(got == want, "check mode wrote other bytes");
    // Damaged entries: truncated, emptied, a byte flipped.
    for (i, path) in entries().iter().enumerate() {
        let mut bytes = std::fs::read(path).expect("entry");
        match i % 3 {
            0 => bytes.truncate(bytes.len() / 2),
            1 => bytes.clear(),
            _ => *bytes.last_mut().expect("a byte") ^= 0x40,
        }
        std::fs::write(path, bytes).expect("damage");
    }
    let (_, loaded, got, _) = run("on", &cache, "damaged");
    assert_eq!(loaded, 0, "a damaged entry is never loaded");
    assert!(got == want, "after damage: other bytes");
    let (_, loaded, _, _) = run("on", &cache, "rewritten");
    assert_eq!(loaded, compiled, "damaged entries were rewritten");
    let (_, loaded, got, _) = run("off", &cache, "off");
    assert_eq!(loaded, 0, "off loads nothing");
    assert!(got == want, "off: other bytes");
    let (_, loaded, _, err) = run("sideways", &cache, "unknown");
    assert!(err.contains("TFN_CODE_CACHE=\"sideways\""), "{err}");
    assert_eq!(loaded, compiled, "an unknown setting means on");
    // A cache directory under a file: no cache, the same bytes.
    std::fs::write(dir.join("a-file"), b"not a directory").expect("write");
    let (_, loaded, got, _) = run("on", &dir.join("a-file"), "unwritable");
    assert_eq!(loaded, 0);
    assert!(got == want, "without a usable cache: other bytes");
    let temps = entries().iter().filter(|p| p.to_string_lossy().contains(".tmp-")).count();
    assert_eq!(temps, 0, "temporary files left in the cache");
}

#[test]
fn a_value_the_memory_limit_refuses_is_an_error_not_an_abort() {
    // 4 GB for one value under a 3 GB address-space limit (`ulimit -v`: a container's limit
    // acts the same): the JIT's allocation fails the call, exit 1, nothing aborts.
    let dir = scratch("oom");
    write_f32(&dir.join("x.npy"), &[2], vec![1.0, 2.0]);
    let tfnc = env!("CARGO_BIN_EXE_tfnc");
    let script = format!("ulimit -v 3000000 && exec '{tfnc}' run f.tfn big --arg x=x.npy");
    let o = Command::new("sh")
        .args(["-c", &script])
        .current_dir(&*dir)
        .env_remove("TFN_MAX_TENSOR_BYTES")
        .output()
        .expect("run sh");
    let err = expect_exit(&o, 1, "out of memory");
    assert!(err.contains("not enough memory for a f32[1000000000] value"), "{err}");
}

#[test]
fn a_gradcheck_tolerance_must_be_a_finite_non_negative_number() {
    let dir = scratch("tolerance");
    for bad in ["nan", "inf", "--tolerance=-1", "abc"] {
        let args: Vec<&str> = if bad.starts_with("--") {
            vec!["gradcheck", "f.tfn", bad]
        } else {
            vec!["gradcheck", "f.tfn", "--tolerance", bad]
        };
        let o = tfnc(&dir, &args);
        expect_exit(&o, 2, bad);
    }
    let o = tfnc(&dir, &["gradcheck", "f.tfn", "outer_sum", "--tolerance", "1e-3"]);
    expect_exit(&o, 0, "a tolerance");
}
