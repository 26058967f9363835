//! `tfnc graph` and `tfnc bench --profile` as users run them: what they print, the files
//! they write (atomically), and every error path's exit code (2: the command line, 1: the
//! program, the data or the environment) and message. Graphviz is replaced by scripts on a
//! private `PATH` (a fake `dot` that works, one that fails, none at all), so the outcome
//! never depends on what the machine has installed. Nothing here depends on timing.

use tfn_test_utils::Scratch;

use std::path::Path;
use std::process::{Command, Output};

const NN: &str = r#"
fn gelu(Tensor x) -> Tensor {
    return 0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
}

fn dense(Tensor x, Tensor w, Tensor b) -> Tensor {
    return maximum(matmul(x, w) + b, 0.0)
}

fn two(Tensor x) -> (Tensor, Tensor) {
    let y = x * 2.0
    return (y, sum(y, dims=[-1]))
}

fn layers(Tensor x, Tensor w) -> Tensor {
    var h = x * 2.0
    for l in 0..size(w, 0) {
        h = erf(matmul(h, w[l]))
    }
    return h
}
"#;

fn scratch(test: &str) -> Scratch {
    let dir = Scratch::new("cli-graph", test);
    std::fs::create_dir_all(dir.join("bin")).expect("create scratch dir");
    std::fs::write(dir.join("nn.tfn"), NN).expect("write source");
    dir
}

/// Runs `tfnc` in `dir` with `PATH` = `dir/bin` (only the fake tools a test puts there).
fn tfnc(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tfnc"))
        .args(args)
        .current_dir(dir)
        .env("PATH", dir.join("bin"))
        // The profile's roofline, fixed: no probe run, the same shares every time.
        .env("TFN_ROOFLINE", "bandwidth=20,fma=100")
        .output()
        .expect("run tfnc")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn expect_exit(o: &Output, code: i32, what: &str) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "{what}: exit code\nstdout:\n{}\nstderr:\n{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    if code != 0 {
        assert!(!text(&o.stderr).contains("panicked"), "{what}: {}", text(&o.stderr));
    }
}

/// A fake Graphviz `dot` in `dir/bin`: a shell script with this body.
#[cfg(unix)]
fn fake_dot(dir: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("bin/dot");
    // The script's own tools come from the system (`tfnc` runs it with a private PATH).
    let script = format!("#!/bin/sh\nPATH=/usr/bin:/bin\n{body}\n");
    std::fs::write(&path, script).expect("write fake dot");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

const DENSE: [&str; 9] = [
    "graph",
    "nn.tfn",
    "dense",
    "--arg",
    "x=f32[8,16]",
    "--arg",
    "w=f32[16,4]",
    "--arg",
    "b=f32[4]",
];

#[test]
fn graph_prints_dot_and_writes_dot_files_atomically() {
    let dir = scratch("dot");
    let o = tfnc(&dir, &DENSE);
    expect_exit(&o, 0, "graph to stdout");
    let dot = text(&o.stdout);
    assert!(dot.contains("digraph \"dense\" {"), "{dot}");
    for part in ["matmul over [8, 4]", "%2 = matmul(%0, %1)", "<b>b</b><br/>f32[4]", "result 0"] {
        assert!(dot.contains(part), "missing {part}:\n{dot}");
    }
    assert!(dot.trim_end().ends_with('}'), "{dot}");
    // -o x.dot writes the same text; an existing file is replaced as a whole.
    std::fs::write(dir.join("g.dot"), "old").unwrap();
    let o = tfnc(&dir, &[&DENSE[..], &["-o", "g.dot"]].concat());
    expect_exit(&o, 0, "graph -o g.dot");
    assert!(o.stdout.is_empty(), "nothing on stdout with -o");
    assert_eq!(std::fs::read_to_string(dir.join("g.dot")).unwrap(), dot);
    let o = tfnc(&dir, &[&DENSE[..], &["--output", "g.gv"]].concat());
    expect_exit(&o, 0, "graph --output g.gv");
    assert_eq!(std::fs::read_to_string(dir.join("g.gv")).unwrap(), dot);
    // No temporary file is left behind.
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.contains(".tmp")), "{names:?}");
    // Two results, symbolic sizes when an argument is a literal-free type.
    let o = tfnc(&dir, &["graph", "nn.tfn", "two", "--arg", "x=f32[3,5]"]);
    expect_exit(&o, 0, "two results");
    let dot = text(&o.stdout);
    assert!(dot.contains("result 0") && dot.contains("result 1"), "{dot}");
    assert!(dot.contains("f32[3]"), "{dot}");
}

/// Every node an edge names is declared, and braces balance.
fn assert_well_formed(dot: &str) {
    let declared: std::collections::HashSet<&str> = dot
        .lines()
        .filter(|l| !l.contains(" -> "))
        .filter_map(|l| l.trim_start().split_once(" [").map(|(n, _)| n))
        .collect();
    for line in dot.lines().filter(|l| l.contains(" -> ")) {
        let (from, rest) = line.trim_start().split_once(" -> ").unwrap();
        let to = rest.split_once(' ').map_or(rest, |(t, _)| t).trim_end_matches(';');
        for end in [from, to] {
            assert!(declared.contains(end), "edge end `{end}` is not a node:\n{dot}");
        }
    }
    assert_eq!(dot.matches('{').count(), dot.matches('}').count(), "{dot}");
}

#[test]
fn graph_of_a_function_with_loops_draws_each_body_once() {
    let dir = scratch("loops");
    let o =
        tfnc(&dir, &["graph", "nn.tfn", "layers", "--arg", "x=f32[2,4]", "--arg", "w=f32[3,4,4]"]);
    expect_exit(&o, 0, "graph of a loop");
    let dot = text(&o.stdout);
    for part in [
        "subgraph cluster_l",
        "loop `for l in 0..size(w, 0)`",
        "carries h",
        "= erf(",
        "matmul over",
        "next trip",
        "rows of %",
        "<b>w</b><br/>f32[3, 4, 4]",
        "result 0",
    ] {
        assert!(dot.contains(part), "missing {part}:\n{dot}");
    }
    assert!(!dot.contains("0 kernel(s)"), "{dot}");
    assert_well_formed(&dot);
    // A while loop nested in a for loop.
    std::fs::write(
        dir.join("nested.tfn"),
        "fn f(Tensor x, Tensor w) -> Tensor {\n  var h = x\n  for i in 0..size(w, 0) {\n    \
         while max(abs(h)) > 0.5, at most 4 {\n      h = tanh(h * w[i])\n    }\n  }\n  return h + 1.0\n}\n",
    )
    .unwrap();
    let o = tfnc(&dir, &["graph", "nested.tfn", "f", "--arg", "x=f32[4]", "--arg", "w=f32[3,4]"]);
    expect_exit(&o, 0, "graph of nested loops");
    let dot = text(&o.stdout);
    assert!(dot.contains("while ") && dot.contains("at most 4"), "{dot}");
    assert!(dot.contains("= tanh(") && dot.contains("add(%"), "{dot}");
    assert_well_formed(&dot);
    assert_well_formed(&text(&tfnc(&dir, &DENSE).stdout));
}

#[cfg(unix)]
#[test]
fn graph_svg_runs_graphviz_or_says_what_to_do() {
    let dir = scratch("svg");
    let svg_args = [&DENSE[..], &["-o", "g.svg"]].concat();
    // No Graphviz: exit 1, the message suggests DOT, nothing is written.
    let o = tfnc(&dir, &svg_args);
    expect_exit(&o, 1, "svg without graphviz");
    let err = text(&o.stderr);
    assert!(err.contains("Graphviz") && err.contains("-o g.dot"), "{err}");
    assert!(!dir.join("g.svg").exists());
    // A working `dot` gets the DOT on stdin and its output becomes the file.
    fake_dot(&dir, "[ \"$1\" = -Tsvg ] || exit 9\necho '<svg>'\ncat\necho '</svg>'");
    let o = tfnc(&dir, &svg_args);
    expect_exit(&o, 0, "svg with graphviz");
    let svg = std::fs::read_to_string(dir.join("g.svg")).unwrap();
    let dot = text(&tfnc(&dir, &DENSE).stdout);
    assert_eq!(svg, format!("<svg>\n{dot}</svg>\n"));
    // A failing `dot`: exit 1 with its message, and the previous file is untouched.
    fake_dot(&dir, "cat > /dev/null\necho 'Error: syntax error in line 3' >&2\nexit 1");
    let o = tfnc(&dir, &svg_args);
    expect_exit(&o, 1, "svg with failing graphviz");
    assert!(text(&o.stderr).contains("syntax error in line 3"), "{}", text(&o.stderr));
    assert_eq!(std::fs::read_to_string(dir.join("g.svg")).unwrap(), svg);
    // A `dot` that prints nothing and succeeds is a failure too (an empty picture).
    fake_dot(&dir, "cat > /dev/null");
    expect_exit(&tfnc(&dir, &svg_args), 1, "svg with silent graphviz");
    assert_eq!(std::fs::read_to_string(dir.join("g.svg")).unwrap(), svg);
}

#[test]
fn graph_errors_exit_1_or_2_naming_the_culprit() {
    let dir = scratch("errors");
    std::fs::write(dir.join("bad.tfn"), "fn f(Tensor x) -> Tensor {\n    return nosuch(x)\n}\n")
        .unwrap();
    let cases: &[(&[&str], i32, &str)] = &[
        // The command line.
        (&["graph", "nn.tfn"], 2, "FUNCTION"),
        (&["graph", "nn.tfn", "gelu", "--arg", "x=f32[3"], 2, "missing `]`"),
        (&["graph", "nn.tfn", "gelu", "--arg", "x"], 2, "NAME=VALUE"),
        (&["graph", "nn.tfn", "gelu", "--arg", "x=data.npy"], 2, "tensor type"),
        (&["graph", "nn.tfn", "gelu", "--arg", "x=f32[4]", "-o", "g.png"], 2, ".svg"),
        (&["graph", "nn.tfn", "gelu", "--arg", "x=f32[4]", "-o", "g"], 2, ".dot"),
        (&["graph", "nn.tfn", "gelu", "--bogus"], 2, "--bogus"),
        (&["graph", "nn.tfn", "gelu"], 2, "`gelu` needs `x`: give each with --arg"),
        // The program or the environment.
        (&["graph", "missing.tfn", "gelu", "--arg", "x=f32[4]"], 1, "missing.tfn"),
        (&["graph", "bad.tfn", "f", "--arg", "x=f32[4]"], 1, "nosuch"),
        (&["graph", "nn.tfn", "gelux", "--arg", "x=f32[4]"], 1, "gelux"),
        (&["graph", "nn.tfn", "f\"<{x}>", "--arg", "x=f32[4]"], 1, "f\"<{x}>"),
        (&["graph", "nn.tfn", "gelu", "--arg", "x=f32[4]", "-o", "no/such/dir/g.dot"], 1, "g.dot"),
        (&["graph", "nn.tfn", "gelu", "--arg", "x=f32[4]", "-o", "bin.dot/"], 1, "bin.dot"),
    ];
    std::fs::create_dir_all(dir.join("bin.dot")).unwrap();
    for (args, code, needle) in cases {
        let o = tfnc(&dir, args);
        let what = args.join(" ");
        expect_exit(&o, *code, &what);
        let err = text(&o.stderr);
        assert!(err.contains(needle), "{what}: stderr should name {needle:?}:\n{err}");
        assert!(o.stdout.is_empty(), "{what}: nothing on stdout");
    }
}

#[test]
fn bench_profile_prints_a_kernel_table_and_json() {
    let dir = scratch("profile");
    let args = ["bench", "nn.tfn", "dense", "--arg", "x=f32[8,16]", "--arg", "w=f32[16,4]"];
    let args = [&args[..], &["--arg", "b=f32[4]", "--millis", "1", "--threads", "1"]].concat();
    let o = tfnc(&dir, &[&args[..], &["--profile"]].concat());
    expect_exit(&o, 0, "bench --profile");
    let out = text(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    let header = lines.iter().position(|l| l.starts_with("kernel kind")).expect("header");
    assert!(lines[header - 2].starts_with("profile      dense: 1 kernel(s)"), "{out}");
    assert!(
        lines[header - 1].starts_with(
            "roofline     20.0 GB/s memory, 100.0 GFLOP/s FMA on 1 thread(s): %BW and %FMA"
        ),
        "{out}"
    );
    for col in ["ops", "calls", "%kernels", "%call", "µs/call", "GB/s", "GFLOP/s", "%BW", "%FMA"] {
        assert!(lines[header].contains(col), "{out}");
    }
    let row: Vec<&str> = lines[header + 1].split_whitespace().collect();
    assert_eq!(&row[..5], ["0", "matmul", "matmul", "add", "maximum"], "{out}");
    // %BW and %FMA: the kernel's GB/s and GFLOP/s over the roofline's 20 and 100.
    let num = |s: &str| s.parse::<f64>().expect("a number");
    let (gbps, gflops) = (num(row[row.len() - 4]), num(row[row.len() - 3]));
    let (bw, fma) = (num(row[row.len() - 2]), num(row[row.len() - 1]));
    assert!((bw - gbps * 5.0).abs() <= 0.1 + gbps * 0.01, "{out}");
    assert!((fma - gflops).abs() <= 0.1 + gflops * 0.01, "{out}");
    let profile: Vec<&str> = lines[header - 2].split_whitespace().collect();
    // "... (mean of the faster N of M calls)": the kernel's calls are the N counted.
    assert_eq!(row[5], profile[profile.len() - 4], "{out}");
    assert_eq!(row[6], "100.0", "one kernel has all the kernel time: {out}");
    assert!(lines[header + 2].contains("outside (call overhead)"), "{out}");
    assert_eq!(lines.len(), header + 3, "{out}");
    // JSON: the bench object with a `profile` member holding one entry per kernel.
    let o = tfnc(&dir, &[&args[..], &["--profile", "--json"]].concat());
    expect_exit(&o, 0, "bench --profile --json");
    let json = text(&o.stdout);
    let line = json.trim();
    assert!(line.starts_with('{') && line.ends_with("}}}") && !line.contains('\n'), "{json}");
    for key in [
        "\"median_us\":",
        "\"profile\":{\"function\":\"dense\",\"threads\":1,",
        "\"outside_us\":",
        "\"kernels\":[{\"id\":0,\"kind\":\"matmul\",\"ops\":\"matmul add maximum\",",
        "\"share\":100.00,",
        "\"bytes\":",
        "\"flops\":1088,",
        "\"gbps\":",
        "\"gflops\":",
        "\"bandwidth_share\":",
        "\"fma_share\":",
        "\"roofline\":{\"bandwidth_gbps\":20.000,\"fma_gflops\":100.000,\"source\":\"TFN_ROOFLINE\"}}}",
    ] {
        assert!(line.contains(key), "missing {key}:\n{json}");
    }
    assert_eq!(line.matches("\"id\":").count(), 1, "{json}");
    // Without --profile there is no profile.
    let o = tfnc(&dir, &[&args[..], &["--json"]].concat());
    assert!(!text(&o.stdout).contains("profile"), "{}", text(&o.stdout));
    // The interpreter runs no kernels: a command-line error.
    let o = tfnc(&dir, &[&args[..], &["--profile", "--backend", "interp"]].concat());
    expect_exit(&o, 2, "profile with the interpreter");
    assert!(text(&o.stderr).contains("--backend jit"), "{}", text(&o.stderr));
}

/// `tfnc bench --profile --json` with the roofline measured and cached in `cache` (no
/// `TFN_ROOFLINE`): the JSON's `roofline` member (`bandwidth_gbps`, `fma_gflops`, `source`).
fn profile_roofline(dir: &Path, cache: &Path, reprobe: bool) -> (f64, f64, String) {
    // A 64×256 by 256×256 matmul: long enough per run (≥ 10 µs) for its rates to be checked.
    let args = ["bench", "nn.tfn", "dense", "--arg", "x=f32[64,256]", "--arg", "w=f32[256,256]"];
    let args = [&args[..], &["--arg", "b=f32[256]", "--millis", "1", "--threads", "1"]].concat();
    let mut command = Command::new(env!("CARGO_BIN_EXE_tfnc"));
    command.args([&args[..], &["--profile", "--json"]].concat()).current_dir(dir);
    command.env("PATH", dir.join("bin")).env_remove("TFN_ROOFLINE").env("TFN_CACHE_DIR", cache);
    if reprobe {
        command.env("TFN_ROOFLINE_REPROBE", "1");
    } else {
        command.env_remove("TFN_ROOFLINE_REPROBE");
    }
    let o = command.output().expect("run tfnc");
    expect_exit(&o, 0, "bench --profile with a cache");
    let json = text(&o.stdout);
    let roof = json.split_once("\"roofline\":{").expect("a roofline").1;
    let num = |key: &str| -> f64 {
        let v = roof.split_once(&format!("\"{key}\":")).expect(key).1;
        v[..v.find(',').expect(key)].parse().expect(key)
    };
    let source = roof.split_once("\"source\":\"").expect("source").1;
    let source = source[..source.find('"').expect("source")].to_string();
    (num("bandwidth_gbps"), num("fma_gflops"), source)
}

/// The cache file's `key=` value as a number.
fn cached_figure(file: &Path, key: &str) -> f64 {
    let text = std::fs::read_to_string(file).expect("the cache file");
    let line = text.lines().find_map(|l| l.strip_prefix(&format!("{key}="))).expect(key);
    line.parse().expect(key)
}

#[test]
fn bench_profile_measures_a_malformed_cache_again_and_a_cache_a_kernel_beats() {
    let dir = scratch("profile-cache");
    let cache = dir.join("cache");
    let file = cache.join("roofline-1t.txt");
    std::fs::create_dir_all(&cache).unwrap();
    // Malformed (and the format before versions): measured, rewritten well-formed.
    for bad in [&b"\xff\x00garbage"[..], b"cpu=x\nbandwidth_gbps=0.7\nfma_gflops=6\n"] {
        std::fs::write(&file, bad).unwrap();
        let (bw, fma, source) = profile_roofline(&dir, &cache, false);
        assert_eq!(source, "measured");
        assert!(bw > 0.0 && fma > 0.0);
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.starts_with("format=2\ncpu="), "{text}");
        assert_eq!(
            (cached_figure(&file, "bandwidth_gbps"), cached_figure(&file, "fma_gflops")),
            ((bw * 1000.0).round() / 1000.0, (fma * 1000.0).round() / 1000.0)
        );
    }
    // Absurdly low cached limits (a probe on a busy machine): the matmul beats the FMA peak,
    // so the probes run again and the cache keeps the higher figures.
    let text = std::fs::read_to_string(&file).unwrap();
    let absurd: String = text
        .lines()
        .map(|l| match l.split_once('=') {
            Some(("bandwidth_gbps" | "fma_gflops", _)) => {
                format!("{}=0.001\n", &l[..l.find('=').unwrap()])
            }
            _ => format!("{l}\n"),
        })
        .collect();
    std::fs::write(&file, absurd).unwrap();
    let (bw, fma, source) = profile_roofline(&dir, &cache, false);
    assert!(source.starts_with("re-measured"), "{source}");
    assert!(bw > 0.001 && fma > 0.001, "{bw} GB/s, {fma} GFLOP/s");
    assert!(
        cached_figure(&file, "fma_gflops") > 0.001
            && cached_figure(&file, "bandwidth_gbps") > 0.001
    );
    assert!(cached_figure(&file, "beaten_gflops") > 0.001, "the rate that beat it is kept");
    // TFN_ROOFLINE_REPROBE=1 measures again and replaces the cache.
    let (_, _, source) = profile_roofline(&dir, &cache, true);
    assert_eq!(source, "measured");
    assert_eq!(cached_figure(&file, "beaten_gflops"), 0.0);
    // (`code`: the JIT's code cache, `backend/src/code_cache.rs`.)
    let left: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|name| name != "code")
        .collect();
    assert_eq!(left, ["roofline-1t.txt"], "no temporary file is left");
    // A cache directory that cannot be made (under a file): no cache, the bench still runs.
    let blocked = dir.join("blocked");
    std::fs::write(&blocked, "a file").unwrap();
    let (_, _, source) = profile_roofline(&dir, &blocked.join("tfn"), false);
    assert_eq!(source, "measured");
}

#[test]
fn bench_profile_of_a_function_with_loops_shows_each_body_kernel_with_its_trips() {
    let dir = scratch("profile-loops");
    let args = ["bench", "nn.tfn", "layers", "--arg", "x=f32[4,8]", "--arg", "w=f32[5,8,8]"];
    let args = [&args[..], &["--millis", "1", "--threads", "1", "--profile"]].concat();
    let o = tfnc(&dir, &args);
    expect_exit(&o, 0, "bench --profile of a function with loops");
    let out = text(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    let header = lines.iter().position(|l| l.starts_with("kernel kind")).expect("header");
    assert!(lines[header - 2].starts_with("profile      layers: 2 kernel(s)"), "{out}");
    let profile: Vec<&str> = lines[header - 2].split_whitespace().collect();
    let counted: u64 = profile[profile.len() - 4].parse().expect("counted calls");
    // Each place, then its kernels (numbered from 0), then the time outside kernels.
    assert_eq!(lines[header + 1].trim(), "stage 0", "{out}");
    let row: Vec<&str> = lines[header + 2].split_whitespace().collect();
    assert_eq!(&row[..3], ["0", "loop", "mul"], "{out}");
    assert_eq!(row[3], counted.to_string(), "{out}");
    assert_eq!(lines[header + 3].trim(), "for l in 0..size(w, 0) (5 trips)", "{out}");
    let row: Vec<&str> = lines[header + 4].split_whitespace().collect();
    assert_eq!(&row[..4], ["0", "matmul", "matmul", "erf"], "{out}");
    assert_eq!(row[4], (5 * counted).to_string(), "run once per trip: {out}");
    assert!(lines[header + 5].contains("outside (call and loop overhead)"), "{out}");
    assert_eq!(lines.len(), header + 6, "{out}");
    let o = tfnc(&dir, &[&args[..], &["--json"]].concat());
    expect_exit(&o, 0, "bench --profile --json of a function with loops");
    let json = text(&o.stdout);
    for key in [
        "\"kind\":\"loop\",\"ops\":\"mul\",",
        "\"place\":\"stage 0\"}",
        "\"kind\":\"matmul\",\"ops\":\"matmul erf\",",
        "\"place\":\"for l in 0..size(w, 0) (5 trips)\"}",
    ] {
        assert!(json.contains(key), "missing {key}:\n{json}");
    }
}
