//! `tfnc build`: objects built ahead of time, linked by the system `cc` into the C client of
//! `examples/aot_c/` with the runtime library, called on raw f32 files and compared bit for bit
//! with `Session::call` on the same inputs, on 1 and 2 threads; three modules (different
//! prefixes) in one program. And the refusals: unknown function, unwritable output directory,
//! unsupported kernels and signatures, each with its exit code and no file left behind. And
//! `--target aarch64-unknown-linux-gnu`: self-contained objects linked by
//! `aarch64-linux-gnu-gcc` and run under `qemu-aarch64`, compared with the session bit for bit.

use super::{scratch, stderr};
use ndarray::{ArrayD, IxDyn};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use tfn::{Session, SessionOptions, Tensor, Value};
use tfn_test_utils::Rng;

/// The C client's functions, and some that `tfnc build` refuses (an integer GEMM, which the
/// interpreter runs; the vjp of a `while`; a result of rank 9 from an input of rank 8), and
/// one with an `Int` parameter.
const NN: &str = concat!(
    include_str!("../../examples/aot_c/nn.tfn"),
    r#"
fn imatmul(Tensor a, Tensor b) -> Tensor {
    return matmul(a, b)
}
fn spin(Tensor a) -> Tensor {
    var x = a
    while max(x) > 0.0, at most 5 {
        x = x + 1.0
    }
    return x
}
fn up(Tensor x) -> Tensor {
    return unsqueeze(x, 0)
}
fn squeezed(Tensor x) -> Tensor {
    return squeeze(x)
}
fn scaled(Tensor x, Int n) -> Tensor {
    return x * n
}
fn pair(Tensor x) -> (Tensor, Tensor) {
    return (x + 1.0, x * 2.0)
}
"#
);

/// Whether the system C compiler runs.
fn have_cc() -> bool {
    Command::new("cc").arg("--version").output().is_ok_and(|o| o.status.success())
}

fn write_f32(path: &Path, a: &ArrayD<f32>) {
    let bytes: Vec<u8> = a.iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(path, bytes).expect("write input");
}

fn read_f32(path: &Path) -> Vec<u32> {
    let bytes = std::fs::read(path).expect("read output");
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

fn session_bits(threads: usize, name: &str, args: &[Value]) -> Vec<u32> {
    let s = Session::with_options(SessionOptions { threads, ..Default::default() });
    s.load_str("nn.tfn", NN).expect("nn loads");
    let out = s.call(name, args).expect("session call");
    match out[0].clone().into_tensor() {
        Some(Tensor::F32(a)) => a.iter().map(|x| x.to_bits()).collect(),
        other => panic!("unexpected output {other:?}"),
    }
}

/// Whether this CPU runs the code of `tier`.
fn runs_tier(tier: &tfn_backend::aot::Tier) -> bool {
    let flags: Vec<String> = tier.flags.iter().map(|f| f.to_string()).collect();
    let line = tfn_backend::aot::tier_line(tier.name, tier.simd, &flags);
    tfn_backend::aot::choose_tier(&line, None).is_ok()
}

/// The runtime library, built as users build it (`cargo build -p tfn-rt`: no Cranelift, no
/// egg) into the target directory of this test's `tfnc`; cargo makes it a no-op when it is
/// up to date.
fn runtime_library() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let tfnc = Path::new(env!("CARGO_BIN_EXE_tfnc"));
            let profile_dir = tfnc.parent().expect("tfnc's directory");
            let target_dir = profile_dir.parent().expect("the target directory");
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let mut build = Command::new(cargo);
            build.current_dir(env!("CARGO_MANIFEST_DIR")).args(["build", "-q", "-p", "tfn-rt"]);
            build.arg("--target-dir").arg(target_dir);
            if profile_dir.file_name().is_some_and(|n| n == "release") {
                build.arg("--release");
            }
            let o = build.output().expect("run cargo");
            assert!(o.status.success(), "cargo build -p tfn-rt: {}", stderr(&o));
            let lib = profile_dir.join("libtfn_rt.a");
            assert!(lib.is_file(), "{} built", lib.display());
            lib
        })
        .clone()
}

/// `tfnc ARGS` with the runtime library of [`runtime_library`].
fn tfnc_build(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tfnc"))
        .args(args)
        .current_dir(dir)
        .env("TFN_RT_LIB", runtime_library())
        .output()
        .expect("run tfnc")
}

fn build(dir: &Path, function: &str, prefix: &str, args: &[&str]) {
    let mut argv = vec!["build", "nn.tfn", "--fn", function, "-o", "build", "--prefix", prefix];
    for a in args {
        argv.extend(["--arg", a]);
    }
    let o = tfnc_build(dir, &argv);
    assert!(o.status.success(), "tfnc build {function}: {}", stderr(&o));
}

#[test]
fn built_modules_linked_from_c_give_the_sessions_bits() {
    let dir = scratch("aot-c");
    std::fs::write(dir.join("nn.tfn"), NN).unwrap();
    build(&dir, "gelu", "g", &["x=f32[?, ?]"]);
    build(&dir, "softmax_rows", "s", &["x=f32[?, ?]"]);
    build(&dir, "linear", "m", &["x=f32[?, ?]", "w=f32[?, ?]", "b=f32[?]"]);
    for f in ["g.o", "g.h", "s.o", "s.h", "m.o", "m.h", "libtfn_rt.a"] {
        assert!(dir.join("build").join(f).is_file(), "{f} written");
    }
    let header = std::fs::read_to_string(dir.join("build/g.h")).unwrap();
    assert!(header.contains("int g_gelu(const tfn_buffer inputs[1], tfn_buffer outputs[1]);"));
    if !have_cc() {
        println!("SKIPPED: no cc");
        return;
    }
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/aot_c/main.c");
    let cc = Command::new("cc")
        .current_dir(&dir)
        .args(["-O1", "-Ibuild"])
        .arg(&driver)
        .args(["build/g.o", "build/s.o", "build/m.o", "build/libtfn_rt.a"])
        .args(["-lpthread", "-ldl", "-lm", "-o", "aot_demo"])
        .output()
        .expect("run cc");
    assert!(cc.status.success(), "cc: {}", stderr(&cc));
    cpp_links_the_header(&dir);

    let mut rng = Rng::new(0x5eed_a07c);
    let mut f32s = |shape: &[usize], scale: f64| -> ArrayD<f32> {
        rng.array(shape, -scale, scale).mapv(|v| v as f32).into_dimensionality::<IxDyn>().unwrap()
    };
    // Odd sizes above the parallel thresholds (so 2 threads split the work).
    let x = f32s(&[263, 1031], 4.0);
    let (xm, w, b) = (f32s(&[129, 300], 1.0), f32s(&[300, 197], 0.2), f32s(&[197], 1.0));
    for (name, a) in [("x", &x), ("xm", &xm), ("w", &w), ("b", &b)] {
        write_f32(&dir.join(format!("{name}.bin")), a);
    }
    let cases: [(&str, Vec<&str>, Vec<Value>); 3] = [
        ("gelu", vec!["x.bin", "263x1031"], vec![x.clone().into()]),
        ("softmax_rows", vec!["x.bin", "263x1031"], vec![x.clone().into()]),
        (
            "linear",
            vec!["xm.bin", "129x300", "w.bin", "300x197", "b.bin", "197"],
            vec![xm.clone().into(), w.clone().into(), b.clone().into()],
        ),
    ];
    // The objects are portable (every tier): the runtime's choice, then each tier this CPU
    // runs (`TFN_RT_TIER`), all the session's bits.
    // On x86-64-v3, `TFN_SIMD=avx2` makes the runtime pick the AVX2 math routines where it
    // would pick AVX-512 ones.
    let mut tiers: Vec<(Option<&str>, Option<&str>)> = vec![(None, None)];
    for tier in tfn_backend::aot::TIERS {
        if runs_tier(&tier) {
            tiers.push((Some(tier.name), None));
        } else {
            println!("SKIPPED tier {}: this CPU lacks it", tier.name);
        }
    }
    if tiers.len() == 3 {
        tiers.push((Some("x86-64-v3"), Some("avx2")));
    }
    for (name, files, args) in &cases {
        let want = session_bits(1, name, args);
        assert_eq!(want, session_bits(2, name, args), "{name}: the session on 2 threads");
        for (threads, &(tier, simd)) in
            ["1", "2"].into_iter().flat_map(|t| tiers.iter().map(move |c| (t, c)))
        {
            let out = format!("{name}-{threads}-{}-{}.out", tier.unwrap_or(""), simd.unwrap_or(""));
            let mut run = Command::new(dir.join("aot_demo"));
            run.current_dir(&dir).args([threads, "2", name, &out]).args(files);
            run.env("TFN_LOG_COMPILES", "1").env_remove("TFN_SIMD");
            if let Some(tier) = tier {
                run.env("TFN_RT_TIER", tier);
            }
            if let Some(simd) = simd {
                run.env("TFN_SIMD", simd);
            }
            let run = run.output().expect("run the C client");
            let what = format!("{name} on {threads} thread(s), tier {tier:?}, simd {simd:?}");
            assert!(run.status.success(), "{what}: {}", stderr(&run));
            if let Some(tier) = tier {
                assert!(
                    stderr(&run).contains(&format!("of tier {tier}")),
                    "{what}: {}",
                    stderr(&run)
                );
            }
            let got = read_f32(&dir.join(&out));
            assert_eq!(got.len(), want.len(), "{name}: output size");
            let differ = got.iter().zip(&want).filter(|(a, b)| a != b).count();
            assert_eq!(differ, 0, "{what}: {differ} elements differ");
        }
    }
    // On a CPU without AVX (qemu's Nehalem: SSE4.2) the runtime picks x86-64-v2, whose kernels
    // must call no wide routine: the dispatched ones would pick AVX2 code there (SIGILL).
    if have_qemu_x86() {
        for (name, files, args) in &cases[..2] {
            let out = format!("{name}-nehalem.out");
            let run = Command::new("qemu-x86_64")
                .current_dir(&dir)
                .args(["-cpu", "Nehalem-v1"])
                .arg(dir.join("aot_demo"))
                .args(["1", "1", name, &out])
                .args(files)
                .env("TFN_LOG_COMPILES", "1")
                .env_remove("TFN_SIMD")
                .env_remove("TFN_RT_TIER")
                .output()
                .expect("run qemu-x86_64");
            let what = format!("{name} under qemu-x86_64 -cpu Nehalem-v1");
            assert!(run.status.success(), "{what}: {:?} {}", run.status, stderr(&run));
            assert!(stderr(&run).contains("of tier x86-64-v2"), "{what}: {}", stderr(&run));
            let (got, want) = (read_f32(&dir.join(&out)), session_bits(1, name, args));
            assert!(got == want, "{what}: not the session's bits");
        }
    }
    // A tier the object does not have is an error naming the ones it has.
    let run = Command::new(dir.join("aot_demo"))
        .current_dir(&dir)
        .args(["1", "1", "gelu", "t.out", "x.bin", "263x1031"])
        .env("TFN_RT_TIER", "x86-64-v9")
        .output()
        .expect("run the C client");
    assert!(!run.status.success());
    assert!(
        stderr(&run).contains("no such tier (it has x86-64-v2, x86-64-v3)"),
        "{}",
        stderr(&run)
    );
    // A wrong argument is an error code and a message, not a crash.
    let run = Command::new(dir.join("aot_demo"))
        .current_dir(&dir)
        .args(["1", "1", "linear", "bad.out", "xm.bin", "129x300", "w.bin", "301x1", "b.bin", "1"])
        .output()
        .expect("run the C client");
    assert!(!run.status.success());
    assert!(
        stderr(&run).contains("cannot read") || stderr(&run).contains("linear"),
        "{}",
        stderr(&run)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The files of a directory (none when it does not exist).
/// A C++ program includes a built header and links the module and the runtime: every function
/// the header declares has C linkage there too.
fn cpp_links_the_header(dir: &Path) {
    let have = Command::new("c++").arg("--version").output().is_ok_and(|o| o.status.success());
    if !have {
        println!("SKIPPED: no c++");
        return;
    }
    let program = "#include \"g.h\"\n\
        int main() {\n\
          float x[4] = {0};\n\
          tfn_buffer in = {}, out = {};\n\
          in.data = x; in.dtype = TFN_F32; in.rank = 2; in.sizes[0] = 2; in.sizes[1] = 2;\n\
          tfn_buffer_row_major(&in);\n\
          tfn_rt_set_threads(1);\n\
          int status = g_gelu_alloc(&in, &out);\n\
          const char *(*message)(void) = tfn_rt_error_message;\n\
          return status != 0 || message == 0 ? 1 : 0;\n\
        }\n";
    std::fs::write(dir.join("links.cpp"), program).unwrap();
    let cxx = Command::new("c++")
        .current_dir(dir)
        .args(["-O1", "-Wall", "-Wextra", "-pedantic", "-Ibuild", "links.cpp"])
        .args(["build/g.o", "build/libtfn_rt.a", "-lpthread", "-ldl", "-lm", "-o", "links"])
        .output()
        .expect("run c++");
    assert!(cxx.status.success(), "c++: {}", stderr(&cxx));
    let run = Command::new(dir.join("links")).output().expect("run the C++ program");
    assert!(run.status.success(), "the C++ program: {run:?}");
}

fn files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default()
}

#[test]
fn build_refusals_name_the_problem_and_leave_no_files() {
    let dir = scratch("aot-refusals");
    std::fs::write(dir.join("nn.tfn"), NN).unwrap();
    std::fs::write(dir.join("a-file"), "not a directory").unwrap();
    let cases: &[(&[&str], i32, &str)] = &[
        (&["--fn", "nope", "--arg", "x=f32[?]", "-o", "out"], 1, "unknown function `nope`"),
        (&["--fn", "gelu", "--arg", "x=f32[?]", "-o", "a-file/out"], 1, "cannot write"),
        (&["--fn", "gelu", "--arg", "x=f32[?]", "-o", "a-file"], 1, "-o a-file is not a directory"),
        (
            &["--fn", "gelu", "--arg", "x=f32[?]", "-o", "/dev/null"],
            1,
            "-o /dev/null is not a directory",
        ),
        (
            &["--fn", "imatmul", "--arg", "a=i32[?, ?]", "--arg", "b=i32[?, ?]", "-o", "out"],
            1,
            "cannot be built ahead of time",
        ),
        (&["--fn", "spin", "--arg", "a=f32[?]", "--vjp", "-o", "out"], 1, "the `while` loop"),
        // A `?` axis of size 1 would change the result's rank: the object cannot keep it.
        (&["--fn", "squeezed", "--arg", "x=f32[?, 1]", "-o", "out"], 1, "a `squeeze` without"),
        // The default target named: the x86-64 path and its message.
        (
            &[
                "--fn",
                "imatmul",
                "--arg",
                "a=i32[?, ?]",
                "--arg",
                "b=i32[?, ?]",
                "-o",
                "out",
                "--target",
                "x86_64-unknown-linux-gnu",
            ],
            1,
            "cannot be built ahead of time: kernel 0 would run in the interpreter (integer matmul",
        ),
        (&["--fn", "gelu", "--arg", "x=f32[?, q]", "-o", "out"], 2, "`q` is not a size"),
        (&["--fn", "gelu", "--arg", "x=f32[?]", "-o", "out", "--cpu", "486"], 2, "--cpu 486"),
        (
            &["--fn", "gelu", "--arg", "x=f32[?]", "-o", "out", "--prefix", "9x"],
            2,
            "not a C identifier",
        ),
        (&["--fn", "linear", "--arg", "x=f32[?, ?]", "-o", "out"], 1, "error"),
        (&["--fn", "gelu", "--fn", "gelu", "--arg", "x=f32[?]", "-o", "out"], 2, "would clash"),
        (&["--fn", "gelu", "--arg", "x=f32[?]", "--arg", "y=f32[?]", "-o", "out"], 2, "--arg y"),
        // Hostile command lines: no `-o`, an `--arg` twice, sizes that are not sizes, ranks
        // and dtypes the C ABI cannot carry (given, or made by the function), a literal for a
        // tensor, a tensor for an `Int`, prefixes whose symbols C or the runtime reserve,
        // a default prefix that is not an identifier, an output directory that is a file, a
        // source that does not parse.
        (&["--fn", "gelu", "--arg", "x=f32[?]"], 2, "--output"),
        (
            &["--fn", "gelu", "--arg", "x=f32[?]", "--arg", "x=f32[?, ?]", "-o", "out"],
            2,
            "given twice",
        ),
        (&["--fn", "gelu", "--arg", "x=f32[-1]", "-o", "out"], 2, "`-1` is not a size"),
        (&["--fn", "gelu", "--arg", "x=f32[+3]", "-o", "out"], 2, "`+3` is not a size"),
        (&["--fn", "gelu", "--arg", "x=f32[99999999999999999999]", "-o", "out"], 2, "not a size"),
        (&["--fn", "gelu", "--arg", "x=f32[18446744073709551615]", "-o", "out"], 2, "below 2^63"),
        (&["--fn", "gelu", "--arg", "x=f32[9223372036854775807]", "-o", "out"], 2, "no buffer can"),
        (
            &["--fn", "gelu", "--arg", "x=f32[4294967296, ?, 4294967296]", "-o", "out"],
            2,
            "no buffer",
        ),
        (&["--fn", "gelu", "--arg", "x=f99[?]", "-o", "out"], 2, "unknown dtype `f99`"),
        (&["--fn", "gelu", "--arg", "x=f32[?", "-o", "out"], 2, "missing `]`"),
        (&["--fn", "gelu", "--arg", "x=f32[?,?,?,?,?,?,?,?,?]", "-o", "out"], 2, "at most 8 axes"),
        (&["--fn", "up", "--arg", "x=f32[?,?,?,?,?,?,?,?]", "-o", "out"], 1, "at most 8 axes"),
        (
            &["--fn", "gelu", "--arg", "x=1.5", "-o", "out"],
            1,
            "argument `x` is a number where a tensor is expected",
        ),
        (
            &["--fn", "scaled", "--arg", "x=f32[?]", "--arg", "n=f32[?]", "-o", "out"],
            1,
            "`n` must be Int",
        ),
        (
            &["--fn", "gelu", "--arg", "x=f32[?]", "-o", "out", "--prefix", "tfn_rt"],
            2,
            "runtime's namespace",
        ),
        (
            &["--fn", "gelu", "--arg", "x=f32[?]", "-o", "out", "--prefix", "tfn_wide"],
            2,
            "runtime's namespace",
        ),
        (
            &["--fn", "gelu", "--arg", "x=f32[?]", "-o", "out", "--prefix", "__x"],
            2,
            "reserved by C",
        ),
        (&["--fn", "gelu;", "--arg", "x=f32[?]", "-o", "out"], 2, "the default prefix `gelu;`"),
        (&["bad.tfn", "--fn", "gelu", "--arg", "x=f32[?]", "-o", "out"], 1, "bad.tfn:2:"),
        // One C name for two things: `g`'s allocating variant and the function `g_alloc` (the
        // header's static inline shadowed the entry point: the call ran `g`), or the module's
        // descriptor and a function named `module`.
        (
            &["clash.tfn", "--fn", "g", "--fn", "g_alloc", "--arg", "x=f32[?]", "-o", "out"],
            2,
            "_g_alloc` would name two things",
        ),
        (
            &["clash.tfn", "--fn", "g_output_shape", "--fn", "g", "--arg", "x=f32[?]", "-o", "out"],
            2,
            "_g_output_shape` would name two things",
        ),
        (
            &["clash.tfn", "--fn", "module", "--arg", "x=f32[?]", "-o", "out"],
            2,
            "_module` would name two things",
        ),
    ];
    std::fs::write(dir.join("bad.tfn"), "fn gelu(Tensor x) -> Tensor {\n  return x +\n}\n")
        .unwrap();
    let clash = "fn g(Tensor x) -> Tensor { return x * 2.0 }\n\
                 fn g_alloc(Tensor x) -> Tensor { return x * 3.0 }\n\
                 fn g_output_shape(Tensor x) -> Tensor { return x }\n\
                 fn module(Tensor x) -> Tensor { return x }\n";
    std::fs::write(dir.join("clash.tfn"), clash).unwrap();
    for (args, code, message) in cases {
        let mut argv = vec!["build"];
        if !args[0].ends_with(".tfn") {
            argv.push("nn.tfn");
        }
        argv.extend_from_slice(args);
        let o = tfnc_build(&dir, &argv);
        assert_eq!(o.status.code(), Some(*code), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(message), "{args:?}: expected `{message}` in {}", stderr(&o));
        assert!(stderr(&o).starts_with("error"), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{args:?}: {}", stderr(&o));
        assert!(files(&dir.join("out")).is_empty(), "{args:?} left {:?}", files(&dir.join("out")));
    }
    // Thousands of `--fn`s: the first unknown one, or the clash of a repeated one.
    for (name, code, message) in [("f", 1, "unknown function `f0`"), ("gelu", 2, "would clash")] {
        let mut argv: Vec<String> = vec!["build".into(), "nn.tfn".into()];
        for i in 0..3000 {
            let f = if name == "f" { format!("f{i}") } else { name.to_string() };
            argv.extend(["--fn".into(), f]);
        }
        argv.extend(["--arg", "x=f32[?]", "-o", "out"].map(String::from));
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let o = tfnc_build(&dir, &argv);
        assert_eq!(o.status.code(), Some(code), "{}", stderr(&o));
        assert!(stderr(&o).contains(message), "{}", stderr(&o));
        assert!(files(&dir.join("out")).is_empty());
    }
    // Arguments that are not UTF-8: a usage error, not a panic.
    {
        use std::ffi::OsStr;
        use std::os::unix::ffi::OsStrExt;
        for bad in [&b"x=f32[\xff]"[..], b"g\xffelu"] {
            let o = Command::new(env!("CARGO_BIN_EXE_tfnc"))
                .args(["build", "nn.tfn", "--fn"])
                .arg(OsStr::from_bytes(bad))
                .args(["--arg", "x=f32[?]", "-o", "out"])
                .current_dir(&dir)
                .env("TFN_RT_LIB", runtime_library())
                .output()
                .expect("run tfnc");
            assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
            assert!(stderr(&o).contains("invalid UTF-8"), "{}", stderr(&o));
            assert!(files(&dir.join("out")).is_empty());
        }
    }
    // Without the runtime library, nothing is written either.
    let o = Command::new(env!("CARGO_BIN_EXE_tfnc"))
        .args(["build", "nn.tfn", "--fn", "gelu", "--arg", "x=f32[?]", "-o", "out"])
        .current_dir(&dir)
        .env("TFN_RT_LIB", dir.join("no-such-lib.a"))
        .output()
        .expect("run tfnc");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("no-such-lib.a is missing"), "{}", stderr(&o));
    assert!(files(&dir.join("out")).is_empty());
    // TFN_RT_LIB naming a directory is an error that says so; set but empty, it is unset.
    let o = Command::new(env!("CARGO_BIN_EXE_tfnc"))
        .args(["build", "nn.tfn", "--fn", "gelu", "--arg", "x=f32[?]", "-o", "out"])
        .current_dir(&dir)
        .env("TFN_RT_LIB", &*dir)
        .output()
        .expect("run tfnc");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("is a directory; it must name"), "{}", stderr(&o));
    assert!(files(&dir.join("out")).is_empty());
    // A file that is not an `ar` archive (a source file) is refused before anything is written.
    let o = Command::new(env!("CARGO_BIN_EXE_tfnc"))
        .args(["build", "nn.tfn", "--fn", "gelu", "--arg", "x=f32[?]", "-o", "out"])
        .current_dir(&dir)
        .env("TFN_RT_LIB", dir.join("nn.tfn"))
        .output()
        .expect("run tfnc");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("is not a static library"), "{}", stderr(&o));
    assert!(files(&dir.join("out")).is_empty());
    // A name the file system refuses (a 300-byte prefix): the directories made for it go too.
    let long = "a".repeat(300);
    let argv = ["build", "nn.tfn", "--fn", "gelu", "--arg", "x=f32[?]", "-o", "deep/er"];
    let o = tfnc_build(&dir, &[&argv[..], &["--prefix", &long]].concat());
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(!dir.join("deep").exists(), "deep/er left behind");
    let mut names = files(&dir);
    names.sort();
    assert_eq!(names, ["a-file", "bad.tfn", "clash.tfn", "nn.tfn"], "nothing else written");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Functions of every step kind an object holds (loop kernels with reductions and broadcasts,
/// GEMMs with and without epilogues, copies, reshapes, window ops; several outputs; f64, i32
/// and bool tensors), each built into a module of its own and called from one C program.
const MORE: &str = r#"
fn moves(Tensor x) -> Tensor {
    let t = transpose(x, [1, 0])
    return concat([t, slice(t, dim=0, start=1, step=2)], dim=0)
}
fn conv_relu(Tensor x, Tensor w) -> Tensor {
    return maximum(conv2d(x, w, padding=[1, 1]), 0.0)
}
fn pool(Tensor x) -> Tensor {
    return max_pool2d(x, kernel=[2, 2])
}
fn two(Tensor x) -> (Tensor, Tensor) {
    return (exp(x), sum(x * x, dims=[1]))
}
fn flat(Tensor x) -> Tensor {
    return reshape(x, [-1]) * 2.0
}
fn mask(Tensor x) -> Tensor {
    return x > 0.25
}
fn ints(Tensor a, Tensor b) -> Tensor {
    return a * b + a
}
fn stacked(Tensor x, Tensor w) -> Tensor {
    var h = x
    for l in 0..size(w, 0) {
        h = tanh(matmul(h, w[l]))
        for _j in 0..3 {
            h = h * 0.5 + sum(h, dims=[1], keepdim=true) * 0.01
        }
    }
    return h
}
fn from_one(Tensor x, Tensor w) -> (Tensor, Tensor) {
    var h = x
    var n = sum(x, dims=[1])
    for l in 1..size(w, 0), checkpoint {
        h = h + w[l]
        n = n * 0.5
    }
    return (h * 2.0, n)
}
fn newton_sqrt(Tensor a) -> Tensor {
    var x = a
    while max(abs(x * x - a)) > 1e-6, at most 50 {
        x = 0.5 * (x + a / x)
    }
    return x
}
fn spin(Tensor a) -> Tensor {
    var x = a
    while max(x) > 0.0, at most 5 {
        x = x + 1.0
    }
    return x
}
fn running(Tensor x) -> (Tensor, Tensor, Tensor) {
    return (cumsum(x, dim=1), cumprod(x * 0.1 + 1.0, dim=0, reverse=true),
            cumsum(x, dim=0, exclusive=true))
}
fn int_running(Tensor a) -> Tensor {
    return cumsum(a, dim=1) + cumprod(a, dim=0)
}
fn which(Tensor x) -> (Tensor, Tensor) {
    return (argmax(x, dim=1), argmin(x * x, dim=0, keepdim=true))
}
// Dropout's arithmetic (std:nn's `dropout`) and normal noise: random kernels.
fn drop(Tensor x, Tensor key) -> (Tensor, Tensor) {
    return (where(rand_like(x, key) >= 0.25, x / 0.75, 0.0), x + randn_like(x, key + 1))
}
fn short(Tensor x, Tensor w) -> Tensor {
    var h = x
    for l in 0..size(x, 0) {
        h = h + w[l]
    }
    return h
}
// sin/cos beyond their vector reduction's range: those lanes call the runtime's fallback.
fn wave(Tensor x) -> Tensor {
    return sin(x) + cos(x * 3.0)
}
"#;

/// A C program that calls any of `modules` (`(prefix, function, outputs)`) on raw input files
/// (`FILE DTYPE SIZES` each) and writes output `k` to `OUT.k`: the harness of
/// [`every_step_kind_gives_the_sessions_bits`].
fn harness(modules: &[(String, String, usize)]) -> String {
    let mut c = String::from("#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n");
    for prefix in prefixes(modules) {
        c.push_str(&format!("#include \"{prefix}.h\"\n"));
    }
    c.push_str(
        "typedef int (*entry_fn)(const tfn_buffer *, tfn_buffer *);\n\
         typedef int (*shape_fn)(const tfn_buffer *, int64_t, tfn_buffer *);\n\
         struct fn { const char *name; entry_fn entry, alloc; shape_fn shape; int outputs; };\n\
         static const struct fn FNS[] = {\n",
    );
    for (prefix, f, n) in modules {
        c.push_str(&format!(
            "    {{\"{prefix}_{f}\", {prefix}_{f}, {prefix}_{f}_alloc, {prefix}_{f}_output_shape, {n}}},\n"
        ));
    }
    c.push_str(
        r#"};
#include <pthread.h>
/* THREADS ending in `p`: the kernels run on this pthread-based parallel-for (the host
   program's pool, as tfn_rt_set_parallel_for documents), which counts what it ran. */
struct pf_job { tfn_task_fn task; void *data; int64_t count; int64_t next; };
static int64_t pf_tasks;
static void *pf_worker(void *p) {
    struct pf_job *j = p;
    for (int64_t i; (i = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED)) < j->count;) {
        j->task(j->data, i);
        __atomic_fetch_add(&pf_tasks, 1, __ATOMIC_RELAXED);
    }
    return 0;
}
static void pf(void *user, int64_t count, int64_t max_threads, tfn_task_fn task, void *data) {
    __atomic_fetch_add((int64_t *)user, 1, __ATOMIC_RELAXED);
    struct pf_job j = {task, data, count, 0};
    pthread_t t[4];
    int64_t n = max_threads < 4 ? max_threads : 4;
    if (n > count) n = count;
    for (int64_t k = 1; k < n; k++) pthread_create(&t[k], 0, pf_worker, &j);
    pf_worker(&j);
    for (int64_t k = 1; k < n; k++) pthread_join(t[k], 0);
}
static int64_t pf_calls;
static size_t dsize(int64_t d) {
    return d == TFN_F64 || d == TFN_I64 ? 8 : d == TFN_F32 || d == TFN_I32 ? 4
         : d == TFN_F16 || d == TFN_BF16 ? 2 : 1;
}
static int64_t count(const tfn_buffer *b) {
    int64_t n = 1;
    for (int64_t a = 0; a < b->rank; a++) n *= b->sizes[a];
    return n;
}
/* THREADS with `s` (inputs) or `o` (outputs): buffers laid out column-major, strides that
   are not row-major. `relayout` copies between the row-major `rm` and `b`'s strided `sd`. */
static void column_major(tfn_buffer *b) {
    int64_t s = 1;
    for (int64_t a = 0; a < b->rank; a++) {
        b->strides[a] = s;
        s *= b->sizes[a] > 0 ? b->sizes[a] : 1;
    }
}
static void relayout(const tfn_buffer *b, char *rm, char *sd, int to_strided) {
    size_t es = dsize(b->dtype);
    int64_t n = count(b), idx[TFN_MAX_RANK] = {0};
    for (int64_t i = 0; i < n; i++) {
        int64_t off = 0;
        for (int64_t a = 0; a < b->rank; a++) off += idx[a] * b->strides[a];
        if (to_strided) memcpy(sd + off * es, rm + i * es, es);
        else memcpy(rm + i * es, sd + off * es, es);
        for (int64_t a = b->rank - 1; a >= 0; a--) {
            if (++idx[a] < b->sizes[a]) break;
            idx[a] = 0;
        }
    }
}
int main(int argc, char **argv) {
    tfn_rt_set_threads(atoll(argv[1]));
    if (strchr(argv[1], 'p')) tfn_rt_set_parallel_for(pf, &pf_calls);
    const struct fn *f = 0;
    for (size_t i = 0; i < sizeof FNS / sizeof FNS[0]; i++)
        if (!strcmp(FNS[i].name, argv[2])) f = &FNS[i];
    if (!f) return fprintf(stderr, "no function %s\n", argv[2]), 1;
    tfn_buffer in[32], out[32];
    int n = 0;
    for (int a = 4; a + 2 < argc + 0 && n < 32; a += 3, n++) {
        tfn_buffer *b = &in[n];
        memset(b, 0, sizeof *b);
        b->dtype = atoll(argv[a + 1]);
        for (char *p = argv[a + 2]; *p;) {
            char *end;
            b->sizes[b->rank++] = strtoll(p, &end, 10);
            p = *end == 'x' ? end + 1 : end;
        }
        tfn_buffer_row_major(b);
        size_t bytes = (size_t)count(b) * dsize(b->dtype);
        b->data = malloc(bytes + 1);
        FILE *file = fopen(argv[a], "rb");
        if (!file || fread(b->data, 1, bytes, file) != bytes) return fprintf(stderr, "read %s\n", argv[a]), 1;
        fclose(file);
        if (strchr(argv[1], 's')) {
            char *sd = malloc(bytes + 1);
            column_major(b);
            relayout(b, b->data, sd, 1);
            free(b->data);
            b->data = sd;
        }
    }
    /* THREADS ending in `a`: the allocating variant. */
    if (strchr(argv[1], 'a')) {
        int rc = f->alloc(in, out);
        if (rc != TFN_OK) return fprintf(stderr, "status %d: %s\n", rc, tfn_rt_error_message()), 1;
    } else {
        for (int k = 0; k < f->outputs; k++) {
            if (f->shape(in, k, &out[k]) != TFN_OK) return fprintf(stderr, "%s\n", tfn_rt_error_message()), 1;
            if (strchr(argv[1], 'o')) column_major(&out[k]);
            out[k].data = malloc((size_t)count(&out[k]) * dsize(out[k].dtype) + 1);
        }
        int rc = f->entry(in, out);
        if (rc != TFN_OK) return fprintf(stderr, "status %d: %s\n", rc, tfn_rt_error_message()), 1;
    }
    for (int k = 0; k < f->outputs; k++) {
        char name[256];
        snprintf(name, sizeof name, "%s.%d", argv[3], k);
        FILE *file = fopen(name, "wb");
        size_t bytes = (size_t)count(&out[k]) * dsize(out[k].dtype);
        char *rm = out[k].data;
        if (strchr(argv[1], 'o') && !strchr(argv[1], 'a')) {
            rm = malloc(bytes + 1);
            relayout(&out[k], rm, out[k].data, 0);
        }
        if (!file || fwrite(rm, 1, bytes, file) != bytes) return fprintf(stderr, "write %s\n", name), 1;
        fclose(file);
    }
    if (strchr(argv[1], 'p'))
        fprintf(stderr, "parallel_for calls %lld tasks %lld\n", (long long)pf_calls, (long long)pf_tasks);
    return 0;
}
"#,
    );
    c
}

/// The modules' prefixes, each once, in order.
fn prefixes(modules: &[(String, String, usize)]) -> Vec<&str> {
    let mut seen: Vec<&str> = Vec::new();
    for (prefix, _, _) in modules {
        if !seen.contains(&prefix.as_str()) {
            seen.push(prefix);
        }
    }
    seen
}

/// A tensor's elements in row-major order as bytes (bool as one byte).
fn tensor_bytes(t: &Tensor) -> Vec<u8> {
    match t {
        Tensor::F32(a) => a.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Tensor::F64(a) => a.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Tensor::I32(a) => a.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Tensor::I64(a) => a.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Tensor::Bool(a) => a.iter().map(|&x| u8::from(x)).collect(),
        Tensor::F16(a) => a.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Tensor::BF16(a) => a.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Tensor::I8(a) => a.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Tensor::U8(a) => a.iter().flat_map(|x| x.to_le_bytes()).collect(),
    }
}

/// The C dtype code of `t` (as `tfn_backend::aot::c_abi::dtype_code`).
fn dtype_code(t: &Tensor) -> i64 {
    tfn_backend::aot::c_abi::dtype_code(t.dtype())
}

/// A function, its arguments by name, and cotangents (empty: the function itself, else its
/// vjp).
type Call<'a> = (&'a str, Vec<(&'a str, Tensor)>, Vec<Tensor>);

/// What a session returns for `name` on `args` (with cotangents: its vjp), on `threads`.
fn session_results(
    threads: usize,
    source: &str,
    name: &str,
    args: &[(&str, Tensor)],
    cotangents: &[Tensor],
) -> Vec<Tensor> {
    let s = Session::with_options(SessionOptions { threads, ..Default::default() });
    s.load_str("nn.tfn", source).unwrap();
    let values: Vec<Value> = args.iter().map(|(_, t)| Value::from(t.clone())).collect();
    let out = if cotangents.is_empty() {
        s.call(name, &values)
    } else {
        let cts: Vec<Value> = cotangents.iter().map(|t| Value::from(t.clone())).collect();
        s.vjp(name, &values, &cts)
    };
    let out = out.unwrap_or_else(|e| panic!("{name}: {e}"));
    out.into_iter().map(|v| v.into_tensor().expect("a tensor result")).collect()
}

#[test]
fn every_step_kind_gives_the_sessions_bits() {
    let dir = scratch("aot-kinds");
    let source = format!("{}{MORE}", include_str!("../../benches/workloads.tfn"));
    std::fs::write(dir.join("nn.tfn"), &source).unwrap();
    let mut rng = Rng::new(0xa07_c0de);
    let g = |rng: &mut Rng, shape: &[usize]| rng.tensor(tfn::DType::F32, shape, (-2.0, 2.0));
    let mut f = |shape: &[usize]| rng.tensor(tfn::DType::F32, shape, (-2.0, 2.0));
    let x = f(&[263, 1031]);
    let cases: Vec<(&str, Vec<(&str, Tensor)>)> = vec![
        ("saxpy", vec![("x", f(&[70_001])), ("z", f(&[70_001]))]),
        ("bias_relu", vec![("x", x.clone()), ("bias", f(&[1031]))]),
        ("layernorm", vec![("x", x.clone())]),
        ("total", vec![("x", x.clone())]),
        ("softmax", vec![("x", f(&[7, 1, 333]))]),
        (
            "mlp",
            vec![
                ("x", f(&[129, 65])),
                ("w1", f(&[65, 255])),
                ("b1", f(&[255])),
                ("w2", f(&[255, 33])),
                ("b2", f(&[33])),
            ],
        ),
        ("moves", vec![("x", f(&[301, 257]))]),
        ("conv_relu", vec![("x", f(&[2, 3, 17, 19])), ("w", f(&[8, 3, 3, 3]))]),
        ("pool", vec![("x", f(&[2, 3, 18, 20]))]),
        ("two", vec![("x", x.clone())]),
        ("flat", vec![("x", f(&[30, 70]))]),
        ("mask", vec![("x", x.clone())]),
        ("gelu", vec![("x", rng.tensor(tfn::DType::F64, &[513, 129], (-3.0, 3.0)))]),
        ("stacked", vec![("x", g(&mut rng, &[67, 129])), ("w", g(&mut rng, &[3, 129, 129]))]),
        ("from_one", vec![("x", g(&mut rng, &[67, 33])), ("w", g(&mut rng, &[4, 33]))]),
        // `1..1`: no trip.
        ("from_one", vec![("x", g(&mut rng, &[5, 33])), ("w", g(&mut rng, &[1, 33]))]),
        ("newton_sqrt", vec![("a", rng.tensor(tfn::DType::F32, &[50, 77], (0.5, 4.0)))]),
        ("running", vec![("x", g(&mut rng, &[129, 1031]))]),
        ("int_running", vec![("a", rng.tensor(tfn::DType::I32, &[70, 301], (-3.0, 3.0)))]),
        ("which", vec![("x", g(&mut rng, &[129, 1031]))]),
        ("which", vec![("x", rng.tensor(tfn::DType::F64, &[33, 65], (-3.0, 3.0)))]),
        (
            "drop",
            vec![
                ("x", g(&mut rng, &[263, 1031])),
                ("key", Tensor::I64(ArrayD::from_shape_vec(IxDyn(&[2]), vec![7, 11]).unwrap())),
            ],
        ),
        // 16-bit floats: kernels run on f32 blocks (`executor/widened.rs`), a GEMM and a
        // row kernel with a broadcast.
        ("gelu", vec![("x", rng.tensor(tfn::DType::F16, &[263, 1031], (-3.0, 3.0)))]),
        ("layernorm", vec![("x", rng.tensor(tfn::DType::BF16, &[263, 1031], (-3.0, 3.0)))]),
        (
            "bias_relu",
            vec![
                ("x", rng.tensor(tfn::DType::F16, &[70, 1031], (-2.0, 2.0))),
                ("bias", rng.tensor(tfn::DType::F16, &[1031], (-2.0, 2.0))),
            ],
        ),
        // 16-bit GEMM operands widened while packed, the epilogues on f32 blocks.
        (
            "mlp",
            vec![
                ("x", rng.tensor(tfn::DType::F16, &[129, 65], (-2.0, 2.0))),
                ("w1", rng.tensor(tfn::DType::F16, &[65, 255], (-2.0, 2.0))),
                ("b1", rng.tensor(tfn::DType::F16, &[255], (-2.0, 2.0))),
                ("w2", rng.tensor(tfn::DType::F16, &[255, 33], (-2.0, 2.0))),
                ("b2", rng.tensor(tfn::DType::F16, &[33], (-2.0, 2.0))),
            ],
        ),
        ("wave", vec![("x", rng.tensor(tfn::DType::F32, &[263, 1031], (-1e7, 1e7)))]),
        ("wave", vec![("x", rng.tensor(tfn::DType::F64, &[33, 65], (-1e10, 1e10)))]),
        (
            "ints",
            vec![
                ("a", rng.tensor(tfn::DType::I32, &[300, 40], (-100.0, 100.0))),
                ("b", rng.tensor(tfn::DType::I32, &[300, 40], (-100.0, 100.0))),
            ],
        ),
    ];
    // Gradients (`--vjp`): the arguments, then one cotangent per result.
    let mut cot = |shape: &[usize]| rng.tensor(tfn::DType::F32, shape, (-1.0, 1.0));
    let vjps: Vec<(&str, Vec<Tensor>)> = vec![
        ("layernorm", vec![cot(&[263, 1031])]),
        ("mlp", vec![cot(&[129, 33])]),
        ("two", vec![cot(&[263, 1031]), cot(&[263])]),
        // Functions with loops: nested loops over stacked weights, a checkpointed loop from 1.
        ("stacked", vec![cot(&[67, 129])]),
        ("from_one", vec![cot(&[67, 33]), cot(&[67])]),
        // Scans' gradients: reversed scans and `cumprod`'s gradient kernel.
        ("running", vec![cot(&[129, 1031]), cot(&[129, 1031]), cot(&[129, 1031])]),
    ];
    let mut calls: Vec<Call> =
        cases.iter().map(|(name, args)| (*name, args.clone(), Vec::new())).collect();
    for (name, cts) in vjps {
        let args = cases.iter().find(|(n, _)| *n == name).map(|(_, a)| a.clone()).unwrap();
        calls.push((name, args, cts));
    }
    let mut modules = Vec::new();
    for (i, (name, args, cts)) in calls.iter().enumerate() {
        let prefix = format!("p{i}");
        let mut argv = vec!["build".to_string(), "nn.tfn".into(), "--fn".into(), name.to_string()];
        for (param, t) in args {
            // The signature: `?` per axis, with the dtype and size-1 axes of the argument.
            let dims: Vec<String> = t
                .shape()
                .iter()
                .map(|&d| if d == 1 { "1".to_string() } else { "?".to_string() })
                .collect();
            argv.extend(["--arg".into(), format!("{param}={}[{}]", t.dtype(), dims.join(", "))]);
        }
        argv.extend(["-o".into(), "build".into(), "--prefix".into(), prefix.clone()]);
        let exported = if cts.is_empty() {
            name.to_string()
        } else {
            argv.push("--vjp".into());
            format!("{name}_vjp")
        };
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let o = tfnc_build(&dir, &argv);
        assert!(o.status.success(), "tfnc build {exported}: {}", stderr(&o));
        let outputs = session_results(1, &source, name, args, cts).len();
        modules.push((prefix, exported, outputs));
    }
    // Two functions in one module: each takes the `--arg`s of its parameters.
    let argv = ["build", "nn.tfn", "--fn", "layernorm", "--fn", "total", "--arg", "x=f32[?, ?]"];
    let o = tfnc_build(&dir, &[&argv[..], &["-o", "build", "--prefix", "q"]].concat());
    assert!(o.status.success(), "tfnc build layernorm + total: {}", stderr(&o));
    for name in ["layernorm", "total"] {
        let args = cases.iter().find(|(n, _)| *n == name).map(|(_, a)| a.clone()).unwrap();
        calls.push((name, args, Vec::new()));
        modules.push(("q".to_string(), name.to_string(), 1));
    }
    if !have_cc() {
        println!("SKIPPED: no cc");
        return;
    }
    std::fs::write(dir.join("harness.c"), harness(&modules)).unwrap();
    let mut cc = Command::new("cc");
    cc.current_dir(&dir).args(["-O1", "-Ibuild", "harness.c"]);
    for prefix in prefixes(&modules) {
        cc.arg(format!("build/{prefix}.o"));
    }
    let o = cc.args(["build/libtfn_rt.a", "-lpthread", "-ldl", "-lm", "-o", "harness"]).output();
    let o = o.expect("run cc");
    assert!(o.status.success(), "cc: {}", stderr(&o));
    let mut parallel_calls = 0;
    for ((name, args, cts), (prefix, exported, _)) in calls.iter().zip(&modules) {
        let exported = &format!("{prefix}_{exported}");
        let mut inputs = Vec::new();
        let tensors = args.iter().map(|(_, t)| t).chain(cts);
        for (k, t) in tensors.enumerate() {
            let file = format!("{exported}.in{k}");
            std::fs::write(dir.join(&file), tensor_bytes(t)).unwrap();
            let dims: Vec<String> = t.shape().iter().map(usize::to_string).collect();
            inputs.extend([file, dtype_code(t).to_string(), dims.join("x")]);
        }
        // Caller-allocated outputs, then the allocating variant (`a`).
        // And the baseline tier (x86-64-v2: `fma` by libcalls) on one thread.
        // And on the host's parallel-for (`p`, two threads).
        let runs: [(usize, &str, Option<&str>); 6] = [
            (1, "", None),
            (2, "", None),
            (1, "a", None),
            (2, "a", None),
            (1, "", Some("x86-64-v2")),
            (2, "p", None),
        ];
        for (threads, variant, tier) in runs {
            let want = session_results(threads, &source, name, args, cts);
            let out = format!("{exported}-{threads}{variant}{}", tier.unwrap_or(""));
            let mut run = Command::new(dir.join("harness"));
            run.current_dir(&dir)
                .args([format!("{threads}{variant}"), exported.clone(), out.clone()])
                .args(&inputs);
            if let Some(tier) = tier {
                run.env("TFN_RT_TIER", tier);
            }
            let run = run.output().expect("run the harness");
            assert!(run.status.success(), "{exported} on {threads} thread(s): {}", stderr(&run));
            if variant == "p" {
                let (calls, tasks) = parallel_for_counts(&stderr(&run));
                // Elementwise kernels and row reductions on large inputs split: each split is
                // one call of the host's parallel-for, which ran every chunk (none on the
                // runtime's own pool); every split has at least 2.
                assert!(tasks >= 2 * calls, "{exported}: {calls} calls, {tasks} tasks");
                if ["saxpy", "bias_relu", "layernorm", "two", "mask"].contains(name) {
                    assert!(
                        calls > 0 && tasks >= 2 * calls,
                        "{exported}: {calls} calls, {tasks} tasks"
                    );
                }
                parallel_calls += calls;
            }
            for (k, w) in want.iter().enumerate() {
                let got = std::fs::read(dir.join(format!("{out}.{k}"))).expect("output written");
                assert!(
                    got == tensor_bytes(w),
                    "{exported} output {k} on {threads} thread(s), tier {tier:?} differs"
                );
            }
        }
    }
    assert!(parallel_calls > 0, "the host's parallel-for ran");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Failures inside a function with loops come back through the C ABI as status codes with the
/// session's messages: a `while` past its `at most` (`TFN_ERR_RUN`), a stacked input with
/// fewer rows than the loop has trips (`TFN_ERR_ARGUMENT`), a vjp's cotangent of the wrong shape.
#[test]
fn loop_failures_in_objects_are_status_codes_with_messages() {
    let dir = scratch("aot-loop-errors");
    std::fs::write(dir.join("nn.tfn"), MORE).unwrap();
    let modules: Vec<(String, String, usize)> = vec![
        ("e0".into(), "spin".into(), 1),
        ("e1".into(), "short".into(), 1),
        ("e2".into(), "short_vjp".into(), 2),
    ];
    build(&dir, "spin", "e0", &["a=f32[?, ?]"]);
    build(&dir, "short", "e1", &["x=f32[?, ?]", "w=f32[?, ?]"]);
    let argv = ["build", "nn.tfn", "--fn", "short", "--arg", "x=f32[?, ?]", "--arg"];
    let o = tfnc_build(
        &dir,
        &[&argv[..], &["w=f32[?, ?]", "--vjp", "-o", "build", "--prefix", "e2"]].concat(),
    );
    assert!(o.status.success(), "tfnc build short --vjp: {}", stderr(&o));
    if !have_cc() {
        println!("SKIPPED: no cc");
        return;
    }
    std::fs::write(dir.join("harness.c"), harness(&modules)).unwrap();
    let o = Command::new("cc")
        .current_dir(&dir)
        .args(["-O1", "-Ibuild", "harness.c", "build/e0.o", "build/e1.o", "build/e2.o"])
        .arg("build/libtfn_rt.a")
        .args(["-lpthread", "-ldl", "-lm", "-o", "harness"])
        .output()
        .expect("run cc");
    assert!(o.status.success(), "cc: {}", stderr(&o));
    let a = ArrayD::from_elem(IxDyn(&[2, 3]), 0.5f32);
    write_f32(&dir.join("a.bin"), &a);
    write_f32(&dir.join("w.bin"), &ArrayD::from_elem(IxDyn(&[1, 3]), 1.0f32));
    let f32_code = tfn_backend::aot::c_abi::dtype_code(tfn::DType::F32).to_string();
    // Where `spin`'s loop is written: run-time loop errors say it.
    let spin_line =
        MORE.lines().position(|l| l.contains("while max(x) > 0.0, at most 5")).expect("spin") + 1;
    let cases: [(&str, Vec<&str>, String); 3] = [
        (
            "e0_spin",
            vec!["a.bin", &f32_code, "2x3"],
            format!(
                "status {}: `spin`: the loop `while max(x) > 0.0, at most 5` (nn.tfn:{spin_line}:5) did not finish within its 5 trip(s)",
                tfn_backend::aot::c_abi::TFN_ERR_RUN
            ),
        ),
        (
            "e1_short",
            vec!["a.bin", &f32_code, "2x3", "w.bin", &f32_code, "1x3"],
            format!(
                "status {}: `short`: `w",
                tfn_backend::aot::c_abi::TFN_ERR_ARGUMENT
            ),
        ),
        // The vjp's cotangent must have the result's shape.
        (
            "e2_short_vjp",
            vec!["a.bin", &f32_code, "2x3", "a.bin", &f32_code, "2x3", "w.bin", &f32_code, "1x3"],
            "`short_vjp`: `cotangent0` has shape [1, 3], but axis 0 must be 2".to_string(),
        ),
    ];
    for (threads, variant) in [(1, ""), (2, "a")] {
        for (name, inputs, message) in &cases {
            let run = Command::new(dir.join("harness"))
                .current_dir(&dir)
                .args([format!("{threads}{variant}"), name.to_string(), "out".into()])
                .args(inputs)
                .output()
                .expect("run the harness");
            assert!(!run.status.success(), "{name} succeeded");
            assert!(stderr(&run).contains(message.as_str()), "{name}: {}", stderr(&run));
        }
    }
    // The session says the same.
    let s = Session::new();
    s.load_str("nn.tfn", MORE).unwrap();
    let e = s.call("spin", &[Value::from(a.clone())]).expect_err("spin fails").to_string();
    assert!(e.contains("did not finish within its 5 trip(s)"), "{e}");
    let w = ArrayD::from_elem(IxDyn(&[1, 3]), 1.0f32);
    let e = s.call("short", &[Value::from(a), Value::from(w)]).expect_err("short fails");
    assert!(e.to_string().contains("row(s) along its first axis"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `(calls, tasks)` of the harness's parallel-for, from its last stderr line.
fn parallel_for_counts(stderr: &str) -> (u64, u64) {
    let line = stderr.lines().find_map(|l| l.strip_prefix("parallel_for calls ")).unwrap_or("");
    let mut words = line.split(' ');
    let calls = words.next().and_then(|w| w.parse().ok()).expect("calls printed");
    let tasks = words.nth(1).and_then(|w| w.parse().ok()).expect("tasks printed");
    (calls, tasks)
}

/// `name` of `source` called with `args` and keyword arguments `kwargs` by a session on
/// `threads`: its first result.
fn session_call_kw(
    threads: usize,
    source: &str,
    name: &str,
    args: &[Tensor],
    kwargs: &[(&str, Value)],
) -> Tensor {
    let s = Session::with_options(SessionOptions { threads, ..Default::default() });
    s.load_str("model.tfn", source).unwrap();
    let values: Vec<Value> = args.iter().map(|t| Value::from(t.clone())).collect();
    let out = s.call_kw(name, &values, kwargs).unwrap_or_else(|e| panic!("{name}: {e}"));
    out.into_iter().next().and_then(|v| v.into_tensor()).expect("a tensor result")
}

/// The example models' forward functions from C, with small random weights, compared bit for
/// bit with `Session::call_kw` on 1 and 2 threads: the char-LM's `gpt` (a `for` loop over
/// stacked block weights) through its own client `examples/aot_c/char_lm.c`, built by
/// `examples/aot_c/char_lm.sh` as docs/aot.md shows; MiniLM's encoder `embed` through the
/// harness of [`every_step_kind_gives_the_sessions_bits`].
#[test]
fn example_models_forward_from_c_give_the_sessions_bits() {
    let dir = scratch("aot-models");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tfnc = Path::new(env!("CARGO_BIN_EXE_tfnc"));
    // The char-LM: B sequences of T tokens, C channels, H heads, V symbols, L blocks.
    let (b, t, c, h, v, l) = (3usize, 17usize, 32usize, 4usize, 29usize, 2usize);
    let scale = 1.0 / ((c / h) as f64).sqrt();
    let out = dir.join("lm");
    let script = Command::new("bash")
        .current_dir(repo)
        .arg("examples/aot_c/char_lm.sh")
        .arg(&out)
        .args([h.to_string(), scale.to_string()])
        .env("TFNC", tfnc)
        .env("TFN_RT_LIB", runtime_library())
        .output()
        .expect("run char_lm.sh");
    if !have_cc() {
        assert!(out.join("lm.o").is_file() && out.join("lm.h").is_file(), "{}", stderr(&script));
        println!("SKIPPED: no cc");
        return;
    }
    assert!(script.status.success(), "char_lm.sh: {}", stderr(&script));
    let mut rng = Rng::new(0x00c4_a71a);
    let mut w = |shape: &[usize], s: f64| rng.tensor(tfn::DType::F32, shape, (-s, s));
    let weights: Vec<(&str, Tensor)> = vec![
        ("wte", w(&[v, c], 1.0)),
        ("wpe", w(&[t, c], 0.5)),
        ("ln1_g", w(&[l, c], 1.5)),
        ("ln1_b", w(&[l, c], 0.2)),
        ("wq", w(&[l, c, c], 0.3)),
        ("wk", w(&[l, c, c], 0.3)),
        ("wv", w(&[l, c, c], 0.3)),
        ("wo", w(&[l, c, c], 0.3)),
        ("bo", w(&[l, c], 0.1)),
        ("ln2_g", w(&[l, c], 1.5)),
        ("ln2_b", w(&[l, c], 0.2)),
        ("w1", w(&[l, c, 4 * c], 0.3)),
        ("b1", w(&[l, 4 * c], 0.1)),
        ("w2", w(&[l, 4 * c, c], 0.2)),
        ("b2", w(&[l, c], 0.1)),
        ("lnf_g", w(&[c], 1.5)),
        ("lnf_b", w(&[c], 0.2)),
    ];
    let tokens = rng.tensor(tfn::DType::I64, &[b, t], (-0.49, v as f64 - 0.51));
    std::fs::write(out.join("tokens.bin"), tensor_bytes(&tokens)).unwrap();
    for (name, a) in &weights {
        std::fs::write(out.join(format!("{name}.bin")), tensor_bytes(a)).unwrap();
    }
    let key = Tensor::I64(ArrayD::from_elem(IxDyn(&[2]), 0));
    let mut args = vec![tokens, key];
    args.extend(weights.iter().map(|(_, a)| a.clone()));
    let model = std::fs::read_to_string(repo.join("examples/char_lm/model.tfn")).unwrap();
    let kwargs =
        [("heads", Value::from(h as i64)), ("scale", Value::from(scale)), ("p", Value::from(0.0))];
    let want = session_call_kw(1, &model, "gpt", &args, &kwargs);
    assert_eq!(want.shape(), [b, t, v]);
    let two = session_call_kw(2, &model, "gpt", &args, &kwargs);
    assert!(tensor_bytes(&two) == tensor_bytes(&want), "the session on 2 threads");
    let sizes = [b, t, c, v, l].map(|n| n.to_string());
    for threads in ["1", "2"] {
        let run = Command::new(out.join("char_lm"))
            .args([threads, "2"])
            .arg(&out)
            .args(&sizes)
            .output()
            .expect("run char_lm");
        assert!(run.status.success(), "char_lm on {threads} thread(s): {}", stderr(&run));
        let stdout = String::from_utf8_lossy(&run.stdout);
        assert!(stdout.starts_with(&format!("gpt: logits [{b}, {t}, {v}]")), "{stdout}");
        let got = std::fs::read(out.join("logits.bin")).expect("logits written");
        assert!(got == tensor_bytes(&want), "char-LM logits on {threads} thread(s) differ");
    }
    // A token out of range: a status code and the runtime's message, not a crash.
    let mut bad = std::fs::read(out.join("tokens.bin")).unwrap();
    bad[8..16].copy_from_slice(&(v as i64 + 5).to_le_bytes());
    std::fs::write(out.join("tokens.bin"), bad).unwrap();
    let run = Command::new(out.join("char_lm"))
        .args(["1", "1"])
        .arg(&out)
        .args(&sizes)
        .output()
        .expect("run char_lm");
    assert!(!run.status.success());
    let code = tfn_backend::aot::c_abi::TFN_ERR_RUN;
    assert!(stderr(&run).starts_with(&format!("gpt: error {code}: `gpt`: ")), "{}", stderr(&run));

    // MiniLM's encoder (BERT layers in a loop, mean pooling, L2 normalisation), 2 heads.
    let source = std::fs::read_to_string(repo.join("examples/minilm/model.tfn")).unwrap();
    std::fs::write(dir.join("nn.tfn"), &source).unwrap();
    let (c, ff, vocab) = (16usize, 48usize, 23usize);
    let mut rng = Rng::new(0x3141_5926);
    let mut w = |shape: &[usize], s: f64| rng.tensor(tfn::DType::F32, shape, (-s, s));
    let mut params: Vec<(&str, Tensor)> = vec![
        ("word", w(&[vocab, c], 1.0)),
        ("pos", w(&[t, c], 0.5)),
        ("typ", w(&[2, c], 0.5)),
        ("emb_g", w(&[c], 1.5)),
        ("emb_b", w(&[c], 0.2)),
    ];
    for name in ["wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo", "ln1_g", "ln1_b"] {
        let shape: &[usize] = if name.starts_with('w') { &[l, c, c] } else { &[l, c] };
        params.push((name, w(shape, 0.4)));
    }
    params.extend([
        ("w1", w(&[l, c, ff], 0.4)),
        ("b1", w(&[l, ff], 0.1)),
        ("w2", w(&[l, ff, c], 0.3)),
        ("b2", w(&[l, c], 0.1)),
        ("ln2_g", w(&[l, c], 1.5)),
        ("ln2_b", w(&[l, c], 0.2)),
    ]);
    let ids = rng.tensor(tfn::DType::I64, &[b, t], (-0.49, vocab as f64 - 0.51));
    // Every sequence keeps its first tokens (mean pooling divides by their count).
    let mask =
        Tensor::I64(ArrayD::from_shape_fn(IxDyn(&[b, t]), |i| i64::from(i[1] < 5 + 4 * i[0])));
    let types = rng.tensor(tfn::DType::I64, &[b, t], (-0.49, 1.49));
    let mut inputs: Vec<(&str, Tensor)> = vec![("ids", ids), ("mask", mask), ("types", types)];
    inputs.extend(params);
    let mut argv: Vec<String> = ["build", "nn.tfn", "--fn", "embed"].map(String::from).into();
    for (name, a) in &inputs {
        let dims = vec!["?"; a.shape().len()].join(", ");
        argv.extend(["--arg".into(), format!("{name}={}[{dims}]", a.dtype())]);
    }
    argv.extend(["--arg", "heads=2", "-o", "build", "--prefix", "mini"].map(String::from));
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let o = tfnc_build(&dir, &argv);
    assert!(o.status.success(), "tfnc build embed: {}", stderr(&o));
    // The char-LM's loss and its gradient with respect to its 17 weights (`--vjp`: the loop's
    // reverse pass), on the weights above.
    std::fs::write(dir.join("lm.tfn"), &model).unwrap();
    let targets = rng.tensor(tfn::DType::I64, &[b, t], (-0.49, v as f64 - 0.51));
    let tokens = args[0].clone();
    let mut lm_inputs: Vec<(&str, Tensor)> = vec![("tokens", tokens), ("targets", targets)];
    lm_inputs.push(("key", Tensor::I64(ArrayD::from_elem(IxDyn(&[2]), 0))));
    lm_inputs.extend(weights.iter().cloned());
    let mut argv: Vec<String> =
        ["build", "lm.tfn", "--fn", "loss", "--vjp"].map(String::from).into();
    for (name, a) in &lm_inputs {
        let dims = if *name == "key" { "2".into() } else { vec!["?"; a.shape().len()].join(", ") };
        argv.extend(["--arg".into(), format!("{name}={}[{dims}]", a.dtype())]);
    }
    argv.extend(
        [format!("heads={h}"), format!("scale={scale}"), "p=0.0".into()]
            .into_iter()
            .flat_map(|a| ["--arg".to_string(), a]),
    );
    argv.extend(["-o", "build", "--prefix", "lmv"].map(String::from));
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let o = tfnc_build(&dir, &argv);
    assert!(o.status.success(), "tfnc build loss --vjp: {}", stderr(&o));
    let header = std::fs::read_to_string(dir.join("build/lmv.h")).unwrap();
    assert!(
        header.contains("int lmv_loss_vjp(const tfn_buffer inputs[21], tfn_buffer outputs[17]);"),
        "{header}"
    );
    let modules = vec![
        ("mini".to_string(), "embed".to_string(), 1),
        ("lmv".to_string(), "loss_vjp".to_string(), 17),
    ];
    std::fs::write(dir.join("harness.c"), harness(&modules)).unwrap();
    let o = Command::new("cc")
        .current_dir(&dir)
        .args(["-O1", "-Ibuild", "harness.c", "build/mini.o", "build/lmv.o", "build/libtfn_rt.a"])
        .args(["-lpthread", "-ldl", "-lm", "-o", "harness"])
        .output()
        .expect("run cc");
    assert!(o.status.success(), "cc: {}", stderr(&o));
    let mut files = Vec::new();
    for (k, (_, a)) in inputs.iter().enumerate() {
        let file = format!("mini.in{k}");
        std::fs::write(dir.join(&file), tensor_bytes(a)).unwrap();
        let dims: Vec<String> = a.shape().iter().map(usize::to_string).collect();
        files.extend([file, dtype_code(a).to_string(), dims.join("x")]);
    }
    let args: Vec<Tensor> = inputs.iter().map(|(_, a)| a.clone()).collect();
    let kwargs = [("heads", Value::from(2i64))];
    let want = session_call_kw(1, &source, "embed", &args, &kwargs);
    assert_eq!(want.shape(), [b, c]);
    let two = session_call_kw(2, &source, "embed", &args, &kwargs);
    assert!(tensor_bytes(&two) == tensor_bytes(&want), "the session on 2 threads");
    for threads in ["1", "2a"] {
        let run = Command::new(dir.join("harness"))
            .current_dir(&dir)
            .args([threads, "mini_embed", "mini.out"])
            .args(&files)
            .output()
            .expect("run the harness");
        assert!(run.status.success(), "embed on {threads} thread(s): {}", stderr(&run));
        let got = std::fs::read(dir.join("mini.out.0")).expect("output written");
        assert!(got == tensor_bytes(&want), "MiniLM embeddings on {threads} thread(s) differ");
    }
    let cotangent = Tensor::F32(ArrayD::from_elem(IxDyn(&[]), 0.75));
    let mut files = Vec::new();
    for (k, a) in lm_inputs.iter().map(|(_, a)| a).chain([&cotangent]).enumerate() {
        let file = format!("lmv.in{k}");
        std::fs::write(dir.join(&file), tensor_bytes(a)).unwrap();
        let dims: Vec<String> = a.shape().iter().map(usize::to_string).collect();
        files.extend([file, dtype_code(a).to_string(), dims.join("x")]);
    }
    let args: Vec<Value> = lm_inputs.iter().map(|(_, a)| Value::from(a.clone())).collect();
    let kwargs =
        [("heads", Value::from(h as i64)), ("scale", Value::from(scale)), ("p", Value::from(0.0))];
    let session_grads = |threads: usize| -> Vec<Vec<u8>> {
        let s = Session::with_options(SessionOptions { threads, ..Default::default() });
        s.load_str("lm.tfn", &model).unwrap();
        let cts = [Value::from(cotangent.clone())];
        let out = s.vjp_kw("loss", &args, &kwargs, &cts).expect("the session's vjp");
        out.into_iter().map(|v| tensor_bytes(&v.into_tensor().expect("a tensor"))).collect()
    };
    let want = session_grads(1);
    assert_eq!(want.len(), 17);
    assert!(want == session_grads(2), "the session's gradients on 2 threads");
    for threads in ["1", "2a"] {
        let run = Command::new(dir.join("harness"))
            .current_dir(&dir)
            .args([threads, "lmv_loss_vjp", "lmv.out"])
            .args(&files)
            .output()
            .expect("run the harness");
        assert!(run.status.success(), "loss_vjp on {threads} thread(s): {}", stderr(&run));
        for (k, w) in want.iter().enumerate() {
            let got = std::fs::read(dir.join(format!("lmv.out.{k}"))).expect("output written");
            assert!(got == *w, "char-LM gradient {k} on {threads} thread(s) differs");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Functions of a self-contained aarch64 module (`tfnc build --target
/// aarch64-unknown-linux-gnu`: loop kernels, scans and arg-reductions only), and three it
/// refuses (a derived size, a GEMM, a loop).
const CROSS: &str = r#"
use "std:nn"
fn c_gelu(Tensor x) -> Tensor {
    return gelu(x)
}
fn c_gelu_erf(Tensor x) -> Tensor {
    return gelu(x, approximate=false)
}
fn c_softmax(Tensor x) -> Tensor {
    return softmax(x)
}
fn c_bias_relu(Tensor x, Tensor b) -> Tensor {
    return relu(x + b)
}
fn c_reduce(Tensor x) -> (Tensor, Tensor, Tensor) {
    return (sum(x, dims=[-1]), mean(x), max(x, dims=[0]))
}
fn c_layer_norm(Tensor x, Tensor g, Tensor beta) -> Tensor {
    return layer_norm(x, g, beta)
}
fn c_ints(Tensor i, Tensor j) -> Tensor {
    return i * j + abs(i - j)
}
fn c_axis(Tensor x) -> (Tensor, Tensor) {
    return (cumsum(x, dim=1), argmax(x, dim=1))
}
fn c_noise(Tensor x, Tensor key) -> (Tensor, Tensor) {
    return (where(rand_like(x, key) >= 0.25, x / 0.75, 0.0), x + randn_like(x, key + 1))
}
fn c_logs(Tensor x) -> (Tensor, Tensor, Tensor) {
    return (log(x), log1p(x), abs(x) ** x)
}
fn c_flat(Tensor x) -> Tensor {
    return reshape(x, [-1]) * 2.0
}
fn c_matmul(Tensor x, Tensor w) -> Tensor {
    return matmul(x, w)
}
fn c_loop(Tensor x) -> Tensor {
    var h = x
    for _l in 0..3 {
        h = h * 0.5 + 1.0
    }
    return h
}
"#;

/// The cross-compiling functions: name, and per argument its name, dtype and shape (`'m'`:
/// `[rows, columns]`, `'v'`: `[columns]`, `'k'`: a random key, `[2]`).
type CrossFn = (&'static str, &'static [(&'static str, tfn::DType, char)]);

/// The functions of the module `x` (the functions), then those of `v` (their vjps).
const CROSS_FNS: &[CrossFn] = &[
    ("c_gelu", &[("x", tfn::DType::F32, 'm')]),
    ("c_gelu_erf", &[("x", tfn::DType::F32, 'm')]),
    ("c_softmax", &[("x", tfn::DType::F32, 'm')]),
    ("c_bias_relu", &[("x", tfn::DType::F32, 'm'), ("b", tfn::DType::F32, 'v')]),
    ("c_reduce", &[("x", tfn::DType::F32, 'm')]),
    (
        "c_layer_norm",
        &[("x", tfn::DType::F32, 'm'), ("g", tfn::DType::F32, 'v'), ("beta", tfn::DType::F32, 'v')],
    ),
    ("c_ints", &[("i", tfn::DType::I32, 'm'), ("j", tfn::DType::I32, 'm')]),
    ("c_axis", &[("x", tfn::DType::F32, 'm')]),
    ("c_noise", &[("x", tfn::DType::F32, 'm'), ("key", tfn::DType::I64, 'k')]),
    // `log`'s NaN below zero once used a compare aarch64 has no vector form of (a panic).
    ("c_logs", &[("x", tfn::DType::F32, 'm')]),
];

/// The functions whose vjps are the module `v`: each with one cotangent of `x`'s shape.
const CROSS_VJPS: &[&str] = &["c_softmax", "c_layer_norm", "c_gelu_erf"];

/// The C driver of the aarch64 module: reads lines `FN OUT (FILE DTYPE SIZES)...` from the
/// file `argv[1]`, calls `x_FN_alloc` on the inputs, writes the outputs one after the other to
/// `OUT`, or prints `FN status N: MESSAGE`.
const CROSS_DRIVER: &str = r#"#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "x.h"
#include "v.h"
typedef int (*alloc_fn)(const tfn_buffer *, tfn_buffer *);
static const struct { const char *name; alloc_fn f; int outputs; } FNS[] = {
    {"c_gelu", x_c_gelu_alloc, 1}, {"c_gelu_erf", x_c_gelu_erf_alloc, 1},
    {"c_softmax", x_c_softmax_alloc, 1}, {"c_bias_relu", x_c_bias_relu_alloc, 1},
    {"c_reduce", x_c_reduce_alloc, 3}, {"c_layer_norm", x_c_layer_norm_alloc, 1},
    {"c_ints", x_c_ints_alloc, 1}, {"c_axis", x_c_axis_alloc, 2},
    {"c_noise", x_c_noise_alloc, 2}, {"c_logs", x_c_logs_alloc, 3},
    {"c_softmax_vjp", v_c_softmax_vjp_alloc, 1},
    {"c_layer_norm_vjp", v_c_layer_norm_vjp_alloc, 3},
    {"c_gelu_erf_vjp", v_c_gelu_erf_vjp_alloc, 1},
};
static size_t dsize(int64_t d) { return d == TFN_F64 || d == TFN_I64 ? 8 : 4; }
static size_t count(const tfn_buffer *b) {
    size_t n = 1;
    for (int64_t a = 0; a < b->rank; a++) n *= (size_t)b->sizes[a];
    return n;
}
int main(int argc, char **argv) {
    FILE *cmds = argc > 1 ? fopen(argv[1], "r") : 0;
    char line[4096];
    {   /* Hostile calls: a byte size past 64 bits, a null or a wrong-rank `output_shape`. */
        static float z[4];
        tfn_buffer huge = {z, TFN_F32, 2, {((int64_t)1 << 62) + 1, 1}, {1, 1}}, o = huge;
        printf("hostile huge %d: %s\n", x_c_gelu(&huge, &o), x_error_message());
        printf("hostile huge_alloc %d\n", x_c_gelu_alloc(&huge, &o));
        printf("hostile shape_null_inputs %d\n", x_c_gelu_output_shape(NULL, 0, &o));
        printf("hostile shape_null_out %d\n", x_c_gelu_output_shape(&huge, 0, NULL));
        printf("hostile alloc_null_outputs %d\n", x_c_gelu_alloc(&huge, NULL));
        huge.rank = 3;
        printf("hostile shape_rank %d\n", x_c_gelu_output_shape(&huge, 0, &o));
    }
    if (!cmds) return 2;
    while (fgets(line, sizeof line, cmds)) {
        char *words[64];
        int n = 0;
        for (char *w = strtok(line, " \n"); w && n < 64; w = strtok(0, " \n")) words[n++] = w;
        if (n < 2) continue;
        int f = -1;
        for (int i = 0; i < (int)(sizeof FNS / sizeof FNS[0]); i++)
            if (!strcmp(FNS[i].name, words[0])) f = i;
        if (f < 0) return fprintf(stderr, "no function %s\n", words[0]), 2;
        tfn_buffer in[8], out[8];
        int k = 0;
        for (int w = 2; w + 2 < n + 1 && k < 8; w += 3, k++) {
            memset(&in[k], 0, sizeof in[k]);
            in[k].dtype = atoll(words[w + 1]);
            for (char *p = words[w + 2]; *p;) {
                char *end;
                in[k].sizes[in[k].rank++] = strtoll(p, &end, 10);
                p = *end == 'x' ? end + 1 : end;
            }
            tfn_buffer_row_major(&in[k]);
            size_t bytes = count(&in[k]) * dsize(in[k].dtype);
            in[k].data = malloc(bytes + 1);
            FILE *file = fopen(words[w], "rb");
            if (!file || fread(in[k].data, 1, bytes, file) != bytes) return fprintf(stderr, "read %s\n", words[w]), 2;
            fclose(file);
        }
        /* `c_gelu_in_place`: c_gelu writing over its input (refused: outputs must not overlap). */
        int rc = FNS[f].f == x_c_gelu_alloc && strstr(words[1], "in_place") ? (out[0] = in[0], x_c_gelu(in, out))
                                                                             : FNS[f].f(in, out);
        if (rc != TFN_OK) {
            printf("%s status %d: %s\n", words[0], rc, x_error_message());
        } else {
            FILE *file = fopen(words[1], "wb");
            for (int o = 0; o < FNS[f].outputs; o++) {
                fwrite(out[o].data, 1, count(&out[o]) * dsize(out[o].dtype), file);
                free(out[o].data);
            }
            fclose(file);
            printf("%s ok\n", words[0]);
        }
        for (int i = 0; i < k; i++) free(in[i].data);
    }
    return 0;
}
"#;

/// Whether the cross tools run; without them the test is skipped, unless
/// `TFN_REQUIRE_CROSS=1` (scripts/test.sh installs them and sets it), where it fails.
/// Whether `qemu-x86_64` (Debian's `qemu-user`, installed by `scripts/test.sh` with the
/// aarch64 tools) runs; required under `TFN_REQUIRE_CROSS=1`.
fn have_qemu_x86() -> bool {
    let have =
        Command::new("qemu-x86_64").arg("--version").output().is_ok_and(|o| o.status.success());
    if !have {
        assert!(
            std::env::var("TFN_REQUIRE_CROSS").as_deref() != Ok("1"),
            "TFN_REQUIRE_CROSS=1 but qemu-x86_64 is missing (apt-get install qemu-user)"
        );
        eprintln!("skipped: no qemu-x86_64");
    }
    have
}

fn have_cross_tools() -> bool {
    let runs =
        |tool: &str| Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success());
    let have = runs("aarch64-linux-gnu-gcc") && runs("qemu-aarch64");
    if !have {
        assert!(
            std::env::var("TFN_REQUIRE_CROSS").as_deref() != Ok("1"),
            "TFN_REQUIRE_CROSS=1 but aarch64-linux-gnu-gcc or qemu-aarch64 is missing \
             (apt-get install gcc-aarch64-linux-gnu qemu-user)"
        );
        eprintln!("skipped: no aarch64-linux-gnu-gcc or qemu-aarch64");
    }
    have
}

#[test]
fn aarch64_objects_under_qemu_give_the_sessions_bits() {
    let started = std::time::Instant::now();
    let dir = scratch("aot-aarch64");
    std::fs::write(dir.join("cross.tfn"), CROSS).unwrap();
    // Refusals first (they need no cross tools): exit code, message, no file left.
    let target = ["--target", "aarch64-unknown-linux-gnu"];
    let cases: &[(&[&str], i32, &str)] = &[
        (
            &["--fn", "c_matmul", "--arg", "x=f32[?, ?]", "--arg", "w=f32[?, ?]"],
            1,
            "step 0 is a matrix product (GEMM)",
        ),
        (&["--fn", "c_loop", "--arg", "x=f32[?]"], 1, "a `for` or `while` loop"),
        (&["--fn", "c_flat", "--arg", "x=f32[?, ?]"], 1, "is computed from other sizes"),
        (&["--fn", "c_gelu", "--arg", "x=f32[?]", "--cpu", "host"], 2, "--cpu host"),
    ];
    for (args, code, message) in cases {
        let mut argv = vec!["build", "cross.tfn", "-o", "out"];
        argv.extend_from_slice(&target);
        argv.extend_from_slice(args);
        let o = super::tfnc(&dir, &argv);
        assert_eq!(o.status.code(), Some(*code), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(message), "{args:?}: expected `{message}` in {}", stderr(&o));
        assert!(stderr(&o).contains("c_") || *code == 2, "names the function: {}", stderr(&o));
        assert!(files(&dir.join("out")).is_empty(), "{args:?} left {:?}", files(&dir.join("out")));
    }
    let bad = ["build", "cross.tfn", "--fn", "c_gelu", "--arg", "x=f32[?]", "-o", "out"];
    let o = super::tfnc(&dir, &[&bad[..], &["--target", "riscv64gc-unknown-linux-gnu"]].concat());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let listed = "supported: x86_64-unknown-linux-gnu, aarch64-unknown-linux-gnu";
    assert!(stderr(&o).contains(listed), "{}", stderr(&o));
    assert!(files(&dir.join("out")).is_empty());

    if !have_cross_tools() {
        return;
    }
    let mut argv = vec!["build", "cross.tfn", "-o", "build", "--prefix", "x"];
    argv.extend_from_slice(&target);
    for (f, _) in CROSS_FNS {
        argv.extend(["--fn", f]);
    }
    for a in ["x=f32[?, ?]", "b=f32[?]", "g=f32[?]", "beta=f32[?]", "i=i32[?, ?]", "j=i32[?, ?]"] {
        argv.extend(["--arg", a]);
    }
    argv.extend(["--arg", "key=i64[2]"]);
    let o = super::tfnc(&dir, &argv);
    assert!(o.status.success(), "tfnc build --target aarch64: {}", stderr(&o));
    // The gradients: a second module (`--vjp`), linked into the same program.
    let mut argv = vec!["build", "cross.tfn", "-o", "build", "--prefix", "v", "--vjp"];
    argv.extend_from_slice(&target);
    for f in CROSS_VJPS {
        argv.extend(["--fn", f]);
    }
    for a in ["x=f32[?, ?]", "g=f32[?]", "beta=f32[?]"] {
        argv.extend(["--arg", a]);
    }
    let o = super::tfnc(&dir, &argv);
    assert!(o.status.success(), "tfnc build --target aarch64 --vjp: {}", stderr(&o));
    let mut names = files(&dir.join("build"));
    names.sort();
    assert_eq!(names, ["v.h", "v.o", "x.h", "x.o"], "objects and headers, no runtime library");
    std::fs::write(dir.join("driver.c"), CROSS_DRIVER).unwrap();
    let cc = Command::new("aarch64-linux-gnu-gcc")
        .args([
            "-O1",
            "-static",
            "-Wall",
            "-Werror",
            "-Ibuild",
            "driver.c",
            "build/x.o",
            "build/v.o",
        ])
        .args(["-o", "driver"])
        .current_dir(&dir)
        .output()
        .expect("run aarch64-linux-gnu-gcc");
    assert!(cc.status.success(), "aarch64-linux-gnu-gcc: {}", stderr(&cc));

    // Every function on a few shapes (odd sizes: vector tails), compared with the session.
    let mut rng = Rng::new(22);
    let session = Session::with_options(SessionOptions { threads: 2, ..Default::default() });
    session.load_str("cross.tfn", CROSS).unwrap();
    let mut commands = String::new();
    let mut expected: Vec<(String, Vec<u8>)> = Vec::new();
    // (2, 70001): the reductions of `c_reduce` run in chunks (`executor/chunked.rs`).
    for (r, c) in [(1, 1), (3, 5), (7, 33), (64, 131), (2, 70001)] {
        for (f, params) in CROSS_FNS {
            let mut args: Vec<(&str, Tensor)> = Vec::new();
            let mut line = String::new();
            for (p, dtype, kind) in params.iter() {
                let shape: Vec<usize> = match kind {
                    'm' => vec![r, c],
                    'v' => vec![c],
                    _ => vec![2],
                };
                let range = if *dtype == tfn::DType::I32 { (-50.0, 50.0) } else { (-4.0, 4.0) };
                let t = rng.tensor(*dtype, &shape, range);
                let file = format!("{f}.{r}x{c}.{p}");
                std::fs::write(dir.join(&file), tensor_bytes(&t)).unwrap();
                let sizes: Vec<String> = shape.iter().map(|s| s.to_string()).collect();
                line.push_str(&format!(" {file} {} {}", dtype_code(&t), sizes.join("x")));
                args.push((p, t));
            }
            let out = format!("{f}.{r}x{c}.out");
            commands.push_str(&format!("{f} {out}{line}\n"));
            let values: Vec<Value> = args.iter().map(|(_, t)| Value::from(t.clone())).collect();
            let results = session.call(f, &values).unwrap_or_else(|e| panic!("{f}: {e}"));
            let bytes = results.into_iter().flat_map(|v| tensor_bytes(&v.into_tensor().unwrap()));
            expected.push((out, bytes.collect()));
            if CROSS_VJPS.contains(f) {
                let ct = rng.tensor(tfn::DType::F32, &[r, c], (-1.0, 1.0));
                let file = format!("{f}.{r}x{c}.ct");
                std::fs::write(dir.join(&file), tensor_bytes(&ct)).unwrap();
                let out = format!("{f}.{r}x{c}.vjp");
                commands.push_str(&format!("{f}_vjp {out}{line} {file} 1 {r}x{c}\n"));
                let grads = session
                    .vjp(f, &values, &[Value::from(ct)])
                    .unwrap_or_else(|e| panic!("{f} vjp: {e}"));
                let bytes = grads.into_iter().flat_map(|v| tensor_bytes(&v.into_tensor().unwrap()));
                expected.push((out, bytes.collect()));
            }
        }
    }
    // A size mismatch: a status code and a message naming both parameters.
    let t = rng.tensor(tfn::DType::F32, &[2, 3], (-1.0, 1.0));
    std::fs::write(dir.join("bad.x"), tensor_bytes(&t)).unwrap();
    commands.push_str("c_bias_relu bad.out bad.x 1 2x3 bad.x 1 4\n");
    commands.push_str("c_gelu in_place.out bad.x 1 2x3\n");
    std::fs::write(dir.join("commands"), &commands).unwrap();
    let run = Command::new("qemu-aarch64")
        .args(["./driver", "commands"])
        .current_dir(&dir)
        .output()
        .expect("run qemu-aarch64");
    let printed = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(run.status.success(), "driver: {printed}{}", stderr(&run));
    assert!(
        printed.contains("c_bias_relu status 1: size 0 of `b` must equal size 1 of `x`"),
        "{printed}"
    );
    assert!(
        printed.contains("c_gelu status 1: output 0: its memory overlaps input `x`'s"),
        "{printed}"
    );
    for line in [
        "hostile huge 3: a size of the call overflows 64 bits",
        "hostile huge_alloc 3",
        "hostile shape_null_inputs 1",
        "hostile shape_null_out 1",
        "hostile alloc_null_outputs 1",
        "hostile shape_rank 1",
    ] {
        assert!(printed.contains(line), "missing `{line}`:\n{printed}");
    }
    for (out, bytes) in &expected {
        let got = std::fs::read(dir.join(out)).unwrap_or_else(|e| panic!("{out}: {e}\n{printed}"));
        assert!(got == *bytes, "{out}: the aarch64 result differs from Session::call's bits");
    }
    eprintln!("aarch64 under qemu: {} calls in {:.1?}", expected.len() + 2, started.elapsed());
    let _ = std::fs::remove_dir_all(&dir);
}

/// One random program of [`random_programs_give_the_sessions_bits`]: its function's name, its
/// source, the `--arg`s of the signature it is built for, and the arguments of each call.
struct RandomProgram {
    name: String,
    source: String,
    signature: Vec<String>,
    /// The arguments' sizes fixed instead of `?`: the fallback for a function whose graph
    /// depends on whether derived sizes are 1 (`tfnc build` asks for every size then).
    fixed: Vec<String>,
    calls: Vec<Vec<Tensor>>,
}

/// The `--arg` of `t` for parameter `name`: `?` per axis but the size-1 ones (or, `fixed`,
/// every size).
fn tensor_arg(name: &str, t: &Tensor, fixed: bool) -> String {
    let dims: Vec<String> = t
        .shape()
        .iter()
        .map(|&d| if d == 1 || fixed { d.to_string() } else { "?".to_string() })
        .collect();
    format!("{name}={}[{}]", t.dtype(), dims.join(", "))
}

/// `count` random programs from `seed`: five in eight are the random op graphs of the
/// JIT-vs-interpreter test (`tfn_test_utils::random_graph`: every unary op of its dtype,
/// broadcasts between size-1 and sized axes, reductions, casts; called at small odd sizes,
/// then at sizes large enough to split on 2 threads; or once, with size 1 on some axes, which
/// the signature then declares `1` as the session specialises them), two in eight the view
/// chains of `random_views` (transposes, slices with negative steps, squeezes; tiny inputs),
/// one in eight the indexed ops of `random_index` (`gather`, `index_select`, `scatter_add`,
/// indices sometimes out of range: then both fail).
/// Every parameter is named after its function (`g3_p0`), so one module takes every `--arg`.
fn random_programs(seed: u64, count: usize) -> Vec<RandomProgram> {
    let mut rng = Rng::new(seed);
    let mut programs = Vec::new();
    for i in 0..count {
        if i % 4 == 3 {
            let case = draw(&mut rng, crate::random_views::case_strategy());
            let name = format!("v{i}");
            let inner = crate::random_views::source(&case).replacen(
                "fn f(",
                &format!("fn {name}_chain("),
                1,
            );
            let x = crate::random_views::values(&case.shape, case.dtype);
            let param = format!("{name}_x");
            programs.push(RandomProgram {
                source: format!(
                    "{inner}fn {name}(Tensor {param}) -> Tensor {{\n    return {name}_chain({param})\n}}\n"
                ),
                signature: vec![tensor_arg(&param, &x, false)],
                fixed: vec![tensor_arg(&param, &x, true)],
                calls: vec![vec![x]],
                name,
            });
            continue;
        }
        if i % 8 == 5 {
            let case = draw(&mut rng, crate::random_index::case_strategy());
            let name = format!("x{i}");
            let inner = crate::random_index::source(&case, &format!("{name}_op"));
            let args = crate::random_index::inputs(&case);
            let params: Vec<String> = args.iter().map(|(p, _)| format!("{name}_{p}")).collect();
            let decl: Vec<String> = params.iter().map(|p| format!("Tensor {p}")).collect();
            programs.push(RandomProgram {
                source: format!(
                    "{inner}fn {name}({}) -> Tensor {{\n    return {name}_op({})\n}}\n",
                    decl.join(", "),
                    params.join(", ")
                ),
                signature: params
                    .iter()
                    .zip(&args)
                    .map(|(p, (_, t))| tensor_arg(p, t, false))
                    .collect(),
                fixed: params.iter().zip(&args).map(|(p, (_, t))| tensor_arg(p, t, true)).collect(),
                calls: vec![args.into_iter().map(|(_, t)| t).collect()],
                name,
            });
            continue;
        }
        let dtype = tfn_test_utils::GRAPH_DTYPES[rng.index(4)];
        let (rank, ops) = (2 + rng.index(2), 1 + rng.index(10));
        let mut g = Rng::new(rng.next_u64());
        let mut graph = tfn_test_utils::random_graph(&mut g, dtype, rank, ops);
        let name = format!("g{i}");
        for p in &mut graph.params {
            p.name = format!("{name}_{}", p.name);
        }
        let source = tfn_test_utils::graph_source(&graph, &name).expect("a function");
        let small: &[&[usize]] = if rank == 3 {
            &[&[1], &[2, 5, 19], &[3, 1, 37], &[1, 3, 130]]
        } else {
            &[&[1], &[5, 9], &[3, 37], &[3, 1100]]
        };
        let large: &[usize] = if rank == 3 { &[43, 45, 47] } else { &[263, 271, 301] };
        let small = small[rng.index(small.len())];
        let calls = [small, large]
            .map(|sizes| tfn_test_utils::random_inputs(&mut g, &graph, sizes, (-3.0, 3.0)))
            .to_vec();
        let mut signature = tfn_test_utils::graph_signature(&graph);
        let mut calls = calls;
        // A small call with size 1 on a symbol's axis: the signature declares it `1` (as a
        // session specialises the graph for it; built `?`, the object runs the general
        // kernels, whose rounding may differ) and the large call goes.
        if calls[0].iter().any(|t| t.shape().contains(&1)) {
            signature = graph
                .params
                .iter()
                .zip(&calls[0])
                .map(|(p, t)| tensor_arg(&p.name, t, false))
                .collect();
            calls.truncate(1);
        }
        let fixed = graph.params.iter().zip(&calls[0]).map(|(p, t)| tensor_arg(&p.name, t, true));
        programs.push(RandomProgram { fixed: fixed.collect(), name, source, signature, calls });
    }
    programs
}

/// One value of a property test's `strategy`, drawn from a proptest generator seeded by `rng`.
fn draw<S: proptest::strategy::Strategy>(rng: &mut Rng, strategy: S) -> S::Value {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    let seed: Vec<u8> = (0..4).flat_map(|_| rng.next_u64().to_le_bytes()).collect();
    let test_rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed);
    let mut runner = TestRunner::new_with_rng(Config::default(), test_rng);
    strategy.new_tree(&mut runner).expect("a case").current()
}

/// `t` laid out column-major (axes reversed in memory): the same values with strides that are
/// not row-major, as the harness lays out its inputs for THREADS with `s`.
fn column_major(t: &Tensor) -> Tensor {
    fn rev<T: Clone>(a: &ArrayD<T>) -> ArrayD<T> {
        a.view().reversed_axes().as_standard_layout().into_owned().reversed_axes()
    }
    match t {
        Tensor::F32(a) => Tensor::F32(rev(a)),
        Tensor::F64(a) => Tensor::F64(rev(a)),
        Tensor::I32(a) => Tensor::I32(rev(a)),
        Tensor::I64(a) => Tensor::I64(rev(a)),
        Tensor::Bool(a) => Tensor::Bool(rev(a)),
        other => panic!("unexpected dtype {}", other.dtype()),
    }
}

/// Builds `programs` into one module `prefix` with one `tfnc build` (the functions an object
/// cannot hold are dropped with the reason `tfnc build` gives, and the build retried):
/// the functions built, and the refused ones with their reasons.
fn build_random_module(
    dir: &Path,
    prefix: &str,
    programs: &mut [&mut RandomProgram],
) -> (Vec<String>, Vec<(String, String)>) {
    let mut left: Vec<usize> = (0..programs.len()).collect();
    let mut use_fixed = vec![false; programs.len()];
    let mut refused = Vec::new();
    loop {
        let mut argv: Vec<String> = vec!["build".into(), "random.tfn".into()];
        for &k in &left {
            argv.extend(["--fn".into(), programs[k].name.clone()]);
        }
        for &k in &left {
            let args = if use_fixed[k] { &programs[k].fixed } else { &programs[k].signature };
            argv.extend(args.iter().flat_map(|a| ["--arg".to_string(), a.clone()]));
        }
        argv.extend(["-o".into(), "build".into(), "--prefix".into(), prefix.into()]);
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let o = tfnc_build(dir, &argv);
        if o.status.success() {
            for &k in &left {
                if use_fixed[k] {
                    programs[k].signature = programs[k].fixed.clone();
                }
            }
            return (left.iter().map(|&k| programs[k].name.clone()).collect(), refused);
        }
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "tfnc build {prefix}: {err}");
        // The cause is one line (after the source's warnings, if any).
        let line = err.lines().find(|l| l.starts_with("error")).unwrap_or("");
        let named = line.strip_prefix("error: `").and_then(|r| r.split_once("` cannot be built"));
        let Some((name, why)) = named else { panic!("tfnc build {prefix}: {err}") };
        let at = left.iter().position(|&k| programs[k].name == name).expect("a listed function");
        let k = left[at];
        if why.contains("give every size of the inputs") && !use_fixed[k] {
            use_fixed[k] = true;
        } else {
            refused
                .push((name.to_string(), why.trim_start_matches(" ahead of time: ").to_string()));
            left.remove(at);
        }
    }
}

/// The random programs of the differential tests (`random_graph`'s op graphs,
/// `random_views`' view chains and `random_index`'s indexed ops), built by `tfnc build` into three modules of one C program and
/// called on random inputs (odd sizes, size-1 axes, column-major inputs and outputs) on 1 and
/// 2 threads: every output has the bits of `Session::call` (on 1 thread, whose bits are those
/// of every thread count), or both fail. A function an object
/// cannot hold is refused with its reason; more than one in ten refused fails the test.
/// `TFN_AOT_FUZZ_SEED` and `TFN_AOT_FUZZ_CASES` explore further (48 programs by default).
#[test]
fn random_programs_give_the_sessions_bits() {
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    let seed = env("TFN_AOT_FUZZ_SEED").unwrap_or(0xa07_d1ff);
    let count = env("TFN_AOT_FUZZ_CASES").unwrap_or(48) as usize;
    let start = std::time::Instant::now();
    let dir = scratch("aot-random");
    let mut programs = random_programs(seed, count);
    // And one an object cannot hold (an integer GEMM, which the interpreter runs): refused
    // with its reason, the module built without it.
    let int = Tensor::I32(ArrayD::zeros(IxDyn(&[2, 2])));
    programs.insert(
        0,
        RandomProgram {
            name: "imm".into(),
            source: "fn imm(Tensor imm_a, Tensor imm_b) -> Tensor {\n    return matmul(imm_a, imm_b)\n}\n".into(),
            signature: vec!["imm_a=i32[?, ?]".into(), "imm_b=i32[?, ?]".into()],
            fixed: vec!["imm_a=i32[2, 2]".into(), "imm_b=i32[2, 2]".into()],
            calls: vec![vec![int.clone(), int]],
        },
    );
    let source: String = programs.iter().map(|p| p.source.as_str()).collect();
    std::fs::write(dir.join("random.tfn"), &source).unwrap();
    let modules_of = 3.min(programs.len().max(1));
    let per = programs.len().div_ceil(modules_of).max(1);
    let mut built: Vec<(String, String, usize)> = Vec::new();
    let mut refused = Vec::new();
    // One session, on 1 thread: its results are the same bits on any thread count (the
    // JIT's own invariant, tested by `thread_counts` and `random_graphs`), so the object on
    // 2 threads must give them too (and one session compiles each program once).
    let session = Session::with_options(SessionOptions { threads: 1, ..Default::default() });
    session.load_str("random.tfn", &source).unwrap_or_else(|e| panic!("{e}\n{source}"));
    for (m, chunk) in programs.chunks_mut(per).enumerate() {
        let prefix = format!("r{m}");
        let mut chunk: Vec<&mut RandomProgram> = chunk.iter_mut().collect();
        let (names, no) = build_random_module(&dir, &prefix, &mut chunk);
        for name in names {
            let p = programs_outputs(&chunk, &name);
            built.push((prefix.clone(), name, p));
        }
        refused.extend(no);
    }
    let built_in = start.elapsed();
    let listed: Vec<String> = refused.iter().map(|(n, why)| format!("{n}: {why}")).collect();
    println!("{} programs, {} refused:\n{}", programs.len(), refused.len(), listed.join("\n"));
    assert!(
        listed.first().is_some_and(|l| l.starts_with("imm: ") && l.contains("integer matmul")),
        "the integer GEMM is refused with its reason: {listed:?}"
    );
    let random_refused = refused.len() - 1;
    assert!(random_refused * 10 <= count, "too many refused:\n{}", listed.join("\n"));
    if !have_cc() {
        println!("SKIPPED: no cc");
        return;
    }
    std::fs::write(dir.join("harness.c"), harness(&built)).unwrap();
    let mut cc = Command::new("cc");
    cc.current_dir(&dir).args(["-O1", "-Ibuild", "harness.c"]);
    for prefix in prefixes(&built) {
        cc.arg(format!("build/{prefix}.o"));
    }
    let o = cc.args(["build/libtfn_rt.a", "-lpthread", "-ldl", "-lm", "-o", "harness"]).output();
    let o = o.expect("run cc");
    assert!(o.status.success(), "cc: {}", stderr(&o));
    let mut failures = Vec::new();
    let (mut compared, mut nan_signs) = (0, 0);
    for (prefix, name, _) in &built {
        let program = programs.iter().find(|p| &p.name == name).expect("a program");
        for (c, args) in program.calls.iter().enumerate() {
            let mut inputs = Vec::new();
            for (k, t) in args.iter().enumerate() {
                let file = format!("{name}.{c}.in{k}");
                std::fs::write(dir.join(&file), tensor_bytes(t)).unwrap();
                let dims: Vec<String> = t.shape().iter().map(usize::to_string).collect();
                inputs.extend([file, dtype_code(t).to_string(), dims.join("x")]);
            }
            // Row-major on 1 thread; column-major inputs and outputs on 2; the allocating
            // variant on 2.
            for (threads, variant) in [(1, ""), (2, "so"), (2, "a")] {
                let strided = variant.contains('s');
                let values: Vec<Value> = args
                    .iter()
                    .map(|t| Value::from(if strided { column_major(t) } else { t.clone() }))
                    .collect();
                let want = session.call(name, &values);
                let out = format!("{name}.{c}-{threads}{variant}");
                let run = Command::new(dir.join("harness"))
                    .current_dir(&dir)
                    .args([format!("{threads}{variant}"), format!("{prefix}_{name}"), out.clone()])
                    .args(&inputs)
                    .output()
                    .expect("run the harness");
                let what = format!("{name} call {c} on {threads}{variant}");
                let want = match want {
                    Err(e) => {
                        if run.status.success() {
                            failures.push(format!("{what}: the session fails ({e}), C does not"));
                        }
                        continue;
                    }
                    Ok(want) => want,
                };
                if !run.status.success() {
                    failures.push(format!("{what}: {}", stderr(&run)));
                    continue;
                }
                for (k, w) in want.into_iter().enumerate() {
                    let w = w.into_tensor().expect("a tensor result");
                    let got = std::fs::read(dir.join(format!("{out}.{k}"))).expect("written");
                    match first_difference(&got, &w) {
                        Difference::None => {}
                        Difference::NanSign => nan_signs += 1,
                        Difference::At(i, g, w) => failures
                            .push(format!("{what}: output {k} differs at {i}: {g:#x}, not {w:#x}")),
                    }
                }
                compared += 1;
            }
        }
        if failures.len() > 20 {
            break;
        }
    }
    let sources: Vec<&str> = programs
        .iter()
        .filter(|p| failures.iter().any(|f| f.starts_with(&format!("{} ", p.name))))
        .map(|p| p.source.as_str())
        .collect();
    assert!(failures.is_empty(), "{}\n\n{}", failures.join("\n"), sources.join("\n"));
    println!("{compared} calls compared, {nan_signs} with NaNs of another sign");
    println!("built in {built_in:.1?}, compared in {:.1?}", start.elapsed() - built_in);
    assert!(compared > 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// How many results `name` (one of `programs`) returns: two for a random graph's
/// `(Tensor, Tensor)`, else one.
fn programs_outputs(programs: &[&mut RandomProgram], name: &str) -> usize {
    let p = programs.iter().find(|p| p.name == name).expect("a program");
    if p.source.contains("-> (Tensor, Tensor)") {
        2
    } else {
        1
    }
}

/// Calls of a linked function with bad buffers, from C: each a `TFN_ERR_ARGUMENT` (an output
/// over `TFN_MAX_TENSOR_BYTES` a `TFN_ERR_RUN`) whose
/// message names the parameter (or the output), never a crash; and an empty output, whose
/// row-major strides have zeros, is fine. `int_linear(x, w, b)` (a C keyword is a prefix like
/// any other: every symbol is `int_...`) takes
/// `x=f32[?, ?]`, `w=f32[?, ?]`, `b=f32[?]`; `k_gelu(x)` takes `x=f32[4, ?]`.
const HOSTILE_CALLS: &str = r#"#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "int.h"
#include "k.h"
#include "two.h"
static float data[4096];
static void fill(tfn_buffer *b, int64_t dtype, int64_t rank, const int64_t *sizes) {
    memset(b, 0, sizeof *b);
    b->data = data;
    b->dtype = dtype;
    b->rank = rank;
    for (int64_t a = 0; a < rank && a < TFN_MAX_RANK; a++) b->sizes[a] = sizes[a];
    if (rank <= TFN_MAX_RANK) tfn_buffer_row_major(b);
}
static void report(const char *name, int rc) {
    printf("%s|%d|%s\n", name, rc, rc == TFN_OK ? "" : tfn_rt_error_message());
}
int main(void) {
    /* Read at the first call: outputs of more than a megabyte are refused. */
    setenv("TFN_MAX_TENSOR_BYTES", "1000000", 1);
    tfn_buffer in[3], out[2];
    const int64_t xs[] = {3, 5}, ws[] = {5, 7}, bs[] = {7}, ys[] = {3, 7};
    const int64_t nine[] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
#define RESET()                                         \
    do {                                                \
        fill(&in[0], TFN_F32, 2, xs);                   \
        fill(&in[1], TFN_F32, 2, ws);                   \
        fill(&in[2], TFN_F32, 1, bs);                   \
        fill(&out[0], TFN_F32, 2, ys);                  \
        out[0].data = data + 1024;                      \
    } while (0)
    RESET();
    report("ok", int_linear(in, out));
    RESET(); in[1].data = NULL; report("null_data", int_linear(in, out));
    RESET(); in[0].strides[1] = -1; report("negative_stride", int_linear(in, out));
    RESET(); in[0].sizes[0] = -3; report("negative_size", int_linear(in, out));
    RESET(); in[2].rank = 2; in[2].sizes[1] = 1; report("rank_mismatch", int_linear(in, out));
    RESET(); fill(&in[1], TFN_F32, 9, nine); report("rank_nine", int_linear(in, out));
    RESET(); in[2].rank = -1; report("negative_rank", int_linear(in, out));
    RESET(); in[2].dtype = TFN_F64; report("dtype_mismatch", int_linear(in, out));
    RESET(); in[0].dtype = 77; report("unknown_dtype", int_linear(in, out));
    RESET(); in[1].sizes[0] = 6; tfn_buffer_row_major(&in[1]); report("inconsistent_sizes", int_linear(in, out));
    RESET(); in[2].sizes[0] = 8; report("inconsistent_bias", int_linear(in, out));
    RESET(); out[0].sizes[1] = 8; tfn_buffer_row_major(&out[0]); report("output_size", int_linear(in, out));
    RESET(); out[0].rank = 1; report("output_rank", int_linear(in, out));
    RESET(); out[0].dtype = TFN_I32; report("output_dtype", int_linear(in, out));
    RESET(); out[0].data = NULL; report("output_null", int_linear(in, out));
    RESET(); out[0].strides[0] = 0; report("output_zero_stride", int_linear(in, out));
    RESET(); out[0].strides[1] = -7; report("output_negative_stride", int_linear(in, out));
    RESET(); out[0].strides[0] = 1; report("output_overlap", int_linear(in, out));
    RESET(); out[0].strides[0] = (int64_t)1 << 62; report("output_strides_wrap", int_linear(in, out));
    RESET(); out[0].data = data + 2; report("output_aliases_input", int_linear(in, out));
    RESET(); out[0].data = data + 2; out[0].dtype = TFN_F64; report("output_dtype_aliasing", int_linear(in, out));
    RESET(); out[0].data = data + 34; report("output_meets_input_end", int_linear(in, out));
    RESET(); out[0].data = data + 35; report("output_after_inputs", int_linear(in, out));
    RESET(); fill(&out[1], TFN_F32, 2, xs); out[0] = out[1]; out[0].data = data + 1024;
    out[1].data = data + 1024 + 14; report("outputs_overlap", two_pair(in, out));
    RESET(); fill(&out[1], TFN_F32, 2, xs); out[0] = out[1]; out[0].data = data + 1024;
    out[1].data = data + 1024 + 15; report("outputs_apart", two_pair(in, out));
    RESET(); report("null_inputs", int_linear(NULL, out));
    RESET(); report("null_outputs", int_linear(in, NULL));
    RESET(); report("shape_null", int_linear_output_shape(in, 0, NULL));
    RESET(); report("shape_index", int_linear_output_shape(in, 3, out));
    RESET(); in[0].data = NULL; report("shape_of_bad_input", int_linear_output_shape(in, 0, out) == TFN_OK ? TFN_OK : int_linear(in, out));
    RESET(); in[1].sizes[0] = 6; report("alloc_inconsistent", int_linear_alloc(in, out));
    RESET(); in[0].sizes[0] = 1 << 20; tfn_buffer_row_major(&in[0]);
    report("alloc_over_limit", int_linear_alloc(in, out));
    RESET(); in[0].sizes[0] = (int64_t)1 << 60; in[0].sizes[1] = 1; in[1].sizes[0] = 1;
    tfn_buffer_row_major(&in[0]); tfn_buffer_row_major(&in[1]);
    report("alloc_past_64_bits", int_linear_alloc(in, out));
    /* An empty output: its row-major strides ([0, 1] for [3, 0]) are fine. */
    {
        const int64_t w0[] = {5, 0}, b0[] = {0}, y0[] = {3, 0};
        RESET(); fill(&in[1], TFN_F32, 2, w0); fill(&in[2], TFN_F32, 1, b0);
        fill(&out[0], TFN_F32, 2, y0); out[0].data = data + 1024;
        report("empty_output", int_linear(in, out));
        RESET(); fill(&in[1], TFN_F32, 2, w0); fill(&in[2], TFN_F32, 1, b0);
        report("empty_output_alloc", int_linear_alloc(in, out));
    }
    /* A fixed size: x must be [4, ?]. */
    RESET(); fill(&out[0], TFN_F32, 2, xs); out[0].data = data + 1024;
    report("fixed_size", k_gelu(in, out));
    return 0;
}
"#;

#[test]
fn bad_buffers_from_c_are_argument_errors_naming_the_parameter() {
    let dir = scratch("aot-hostile-calls");
    std::fs::write(dir.join("nn.tfn"), NN).unwrap();
    build(&dir, "linear", "int", &["x=f32[?, ?]", "w=f32[?, ?]", "b=f32[?]"]);
    build(&dir, "gelu", "k", &["x=f32[4, ?]"]);
    build(&dir, "pair", "two", &["x=f32[?, ?]"]);
    if !have_cc() {
        println!("SKIPPED: no cc");
        return;
    }
    std::fs::write(dir.join("hostile.c"), HOSTILE_CALLS).unwrap();
    let o = Command::new("cc")
        .current_dir(&dir)
        .args(["-O1", "-Ibuild", "hostile.c", "build/int.o", "build/k.o", "build/two.o"])
        .arg("build/libtfn_rt.a")
        .args(["-lpthread", "-ldl", "-lm", "-o", "hostile"])
        .output()
        .expect("run cc");
    assert!(o.status.success(), "cc: {}", stderr(&o));
    let run = Command::new(dir.join("hostile")).output().expect("run hostile");
    assert!(
        run.status.success(),
        "crashed: {} {}",
        stderr(&run),
        String::from_utf8_lossy(&run.stdout)
    );
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    let arg = tfn_backend::aot::c_abi::TFN_ERR_ARGUMENT;
    let run = tfn_backend::aot::c_abi::TFN_ERR_RUN;
    let expected: &[(&str, i32, &str)] = &[
        ("ok", 0, ""),
        ("null_data", arg, "input `w`: null data"),
        ("negative_stride", arg, "input `x`: negative stride -1"),
        ("negative_size", arg, "input `x`: negative size -3"),
        ("rank_mismatch", arg, "input `b`"),
        ("rank_nine", arg, "input `w`: rank 9 (at most 8)"),
        ("negative_rank", arg, "input `b`: rank -1"),
        ("dtype_mismatch", arg, "input `b` must be f32, got f64"),
        ("unknown_dtype", arg, "input `x`: unknown dtype code 77"),
        ("inconsistent_sizes", arg, "`w`"),
        ("inconsistent_bias", arg, "`b`"),
        ("output_size", arg, "output 0 must be f32[3, 7], got f32[3, 8]"),
        ("output_rank", arg, "output 0"),
        ("output_dtype", arg, "output 0 must be f32[3, 7], got i32[3, 7]"),
        ("output_null", arg, "output 0: null data"),
        ("output_zero_stride", arg, "output 0: a zero stride"),
        ("output_negative_stride", arg, "output 0: negative stride -7"),
        ("output_overlap", arg, "output 0: its strides [1, 1] make elements overlap"),
        (
            "output_strides_wrap",
            arg,
            "output 0: its sizes and strides reach past the end of the address space",
        ),
        ("output_aliases_input", arg, "output 0: its memory overlaps input `x`'s"),
        // The wrong dtype is said first, not the overlap it causes.
        ("output_dtype_aliasing", arg, "output 0 must be f32[3, 7], got f64[3, 7]"),
        ("output_meets_input_end", arg, "output 0: its memory overlaps input `w`'s"),
        ("output_after_inputs", 0, ""),
        ("outputs_overlap", arg, "output 1: its memory overlaps output 0's"),
        ("outputs_apart", 0, ""),
        ("null_inputs", arg, "null inputs"),
        ("null_outputs", arg, "null outputs"),
        ("shape_null", arg, "null output buffer"),
        ("shape_index", arg, "output 3"),
        ("shape_of_bad_input", arg, "input `x`: null data"),
        ("alloc_inconsistent", arg, "`w`"),
        (
            "alloc_over_limit",
            run,
            "output 0 would have 29360128 bytes, more than the limit of 1000000",
        ),
        ("alloc_past_64_bits", run, "output 0"),
        ("empty_output", 0, ""),
        ("empty_output_alloc", 0, ""),
        ("fixed_size", arg, "input `x` must have sizes [4, ?], got [3, 5]"),
    ];
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), expected.len(), "{stdout}");
    let mut wrong = Vec::new();
    for (line, (name, code, message)) in lines.iter().zip(expected) {
        let mut parts = line.splitn(3, '|');
        let (n, c, m) = (parts.next(), parts.next(), parts.next().unwrap_or(""));
        if n != Some(name) || c != Some(&code.to_string()) || !m.contains(message) {
            wrong.push(format!("{line}   (expected {name}|{code}|…{message}…)"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two modules whose prefixes differ only in case are two headers one C file can include
/// (C names are case-sensitive), a source path holding `*/` stays inside the header's
/// comment, and a killed build's temporary files are removed by the next.
#[test]
fn headers_of_any_prefix_and_source_path_compile_together() {
    let dir = scratch("aot-headers");
    std::fs::create_dir_all(dir.join("a*")).unwrap();
    std::fs::write(dir.join("a*/nn.tfn"), NN).unwrap();
    // What a build killed before its renames leaves (no process has this id): removed by the
    // next build into the directory; a file of another name stays.
    std::fs::create_dir_all(dir.join("build")).unwrap();
    for stale in [".gg.h.tmp4000000000", ".gg.o.tmp4000000000", ".mine.tmp4000000000"] {
        std::fs::write(dir.join("build").join(stale), "partial").unwrap();
    }
    for prefix in ["gg", "GG"] {
        let argv = ["build", "a*/nn.tfn", "--fn", "gelu", "--arg", "x=f32[?]", "-o", "build"];
        let o = tfnc_build(&dir, &[&argv[..], &["--prefix", prefix]].concat());
        assert!(o.status.success(), "tfnc build --prefix {prefix}: {}", stderr(&o));
    }
    let header = std::fs::read_to_string(dir.join("build/gg.h")).unwrap();
    assert!(header.contains("from a*\\/nn.tfn"), "{}", &header[..200.min(header.len())]);
    assert!(header.contains("#ifndef TFN_MODULE_gg_H"));
    let mut left = files(&dir.join("build"));
    left.sort();
    assert_eq!(left, [".mine.tmp4000000000", "GG.h", "GG.o", "gg.h", "gg.o", "libtfn_rt.a"]);
    if !have_cc() {
        println!("SKIPPED: no cc");
        return;
    }
    let both = "#include \"gg.h\"\n#include \"GG.h\"\n\
                int main(void) { return gg_gelu == GG_gelu; }\n";
    std::fs::write(dir.join("both.c"), both).unwrap();
    let o = Command::new("cc")
        .current_dir(&dir)
        .args(["-Wall", "-Werror", "-Ibuild", "-c", "both.c", "-o", "both.o"])
        .output()
        .expect("run cc");
    assert!(o.status.success(), "cc: {}", stderr(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

/// How an output of the C harness differs from the session's.
enum Difference {
    None,
    /// Only in the sign or payload of NaNs (not part of the bits tfn keeps: the wide math
    /// routines are the inline code's twins "NaN payloads aside", `backend/src/wide/mod.rs`).
    NanSign,
    /// At element `i`: the bits of the C output, then the session's.
    At(usize, u64, u64),
}

/// Compares the raw output `got` with the session's `want` element by element.
fn first_difference(got: &[u8], want: &Tensor) -> Difference {
    let w = tensor_bytes(want);
    if got == w {
        return Difference::None;
    }
    if got.len() != w.len() {
        return Difference::At(usize::MAX, got.len() as u64, w.len() as u64);
    }
    let size = match want.dtype() {
        tfn::DType::F64 | tfn::DType::I64 => 8,
        tfn::DType::F32 | tfn::DType::I32 => 4,
        _ => 1,
    };
    let float = matches!(want.dtype(), tfn::DType::F32 | tfn::DType::F64);
    let word = |b: &[u8]| b.iter().rev().fold(0u64, |a, &x| (a << 8) | u64::from(x));
    let nan = |x: u64| match size {
        4 => f32::from_bits(x as u32).is_nan(),
        _ => f64::from_bits(x).is_nan(),
    };
    for (i, (g, w)) in got.chunks(size).zip(w.chunks(size)).enumerate() {
        let (g, w) = (word(g), word(w));
        if g != w && !(float && nan(g) && nan(w)) {
            return Difference::At(i, g, w);
        }
    }
    Difference::NanSign
}
