//! The documentation's commands, run as written: every fenced code block of `README.md` and
//! `docs/*.md`, by its info string (the language, then attributes):
//!
//! - `sh`, `bash`: run by `bash` (`set -euo pipefail`) in a scratch directory whose entries are
//!   links to the repository's own (so `examples/nn.tfn` resolves and outputs land in the
//!   scratch directory), with the `tfnc` under test first on `PATH` as `tfnc`.
//!   `sh no-run` is shown, not run (it builds, trains for minutes, needs the network or a
//!   venv); every repository path it names must still exist, and every `--example NAME`.
//! - `console`: each `$ ` line (with `\` continuation lines) runs the same way; the lines
//!   after it are its expected output (stdout, then stderr), compared with every number a
//!   wildcard and runs of spaces as one; a line `...` stands for any number of lines. So a
//!   sample output keeps its format, columns and rows (which kernels, which ops) true, while
//!   its timings may differ.
//! - `tfn`: a block of `op` declarations must be word for word the prelude's or the standard
//!   library's (`frontend/prelude/`); any other block is a program `tfnc check` accepts
//!   without warnings.
//! - `python` and `sh python`: run by the Python suite (`python/tests/test_docs_and_stubs.py`),
//!   where the module is installed; `python no-run` is shown only.
//! - `rust`, `toml`, `text`: not run (the Rust API's compiled examples are `examples/typed`
//!   and the tests).
//!
//! An unknown language or attribute fails, so that a typo cannot skip a block silently.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The longest a block may run.
const TIMEOUT: Duration = Duration::from_secs(300);

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One fenced block.
struct Block {
    /// `docs/profiling.md:54`: the opening fence.
    place: String,
    language: String,
    attributes: Vec<String>,
    /// The lines between the fences, without the fence's indentation.
    lines: Vec<String>,
}

impl Block {
    fn has(&self, attribute: &str) -> bool {
        self.attributes.iter().any(|a| a == attribute)
    }

    fn text(&self) -> String {
        self.lines.iter().map(|l| format!("{l}\n")).collect()
    }
}

/// The documentation files: `README.md` and `docs/*.md`, sorted.
fn documents() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .expect("read docs/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    files.sort();
    files.insert(0, repo().join("README.md"));
    files
}

/// The fenced blocks of a Markdown text (fences may be indented, as inside a list item).
fn blocks(name: &str, text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<(Block, usize)> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        match open.take() {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    let mut words = info.split_whitespace().map(str::to_string);
                    let language = words.next().unwrap_or_default();
                    let block = Block {
                        place: format!("{name}:{}", i + 1),
                        language,
                        attributes: words.collect(),
                        lines: Vec::new(),
                    };
                    open = Some((block, indent));
                }
            }
            Some((mut block, fence_indent)) => {
                if trimmed == "```" {
                    out.push(block);
                } else {
                    let cut = line.char_indices().nth(fence_indent).map_or(line.len(), |(i, _)| i);
                    let cut = if line[..cut].trim().is_empty() { cut } else { 0 };
                    block.lines.push(line[cut..].to_string());
                    open = Some((block, fence_indent));
                }
            }
        }
    }
    assert!(open.is_none(), "{name}: a code block is not closed");
    out
}

fn all_blocks() -> Vec<Block> {
    documents()
        .iter()
        .flat_map(|path| {
            let name = path.strip_prefix(repo()).unwrap_or(path).display().to_string();
            let text = std::fs::read_to_string(path).expect("read a document");
            blocks(&name, &text)
        })
        .collect()
}

/// A scratch directory holding a link to each entry of the repository (not `target/` and
/// not the dot-files), unique to `what`.
fn mirror(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tfn-docs-{}-{what}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the scratch directory");
    for entry in std::fs::read_dir(repo()).expect("read the repository") {
        let entry = entry.expect("a directory entry");
        let name = entry.file_name();
        let name_text = name.to_string_lossy();
        if name_text.starts_with('.') || name_text == "target" {
            continue;
        }
        std::os::unix::fs::symlink(entry.path(), dir.join(&name)).expect("link an entry");
    }
    dir
}

/// `PATH` with the directory of the `tfnc` under test first.
fn path_with_tfnc() -> std::ffi::OsString {
    let bin = Path::new(env!("CARGO_BIN_EXE_tfnc")).parent().expect("tfnc's directory");
    let mut paths = vec![bin.to_path_buf()];
    if let Some(old) = std::env::var_os("PATH") {
        paths.extend(std::env::split_paths(&old));
    }
    std::env::join_paths(paths).expect("join PATH")
}

/// Runs `script` with bash in `dir` (with `tfnc` on `PATH`), at most [`TIMEOUT`].
fn bash(dir: &Path, script: &str) -> Result<Output, String> {
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(format!("set -euo pipefail\n{script}"))
        .current_dir(dir)
        .env("PATH", path_with_tfnc())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run bash: {e}"))?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() > TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("still running after {} s", TIMEOUT.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(e.to_string()),
        }
    }
    child.wait_with_output().map_err(|e| e.to_string())
}

fn show(o: &Output) -> String {
    format!(
        "--- stdout\n{}--- stderr\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A line as compared: every number (`87`, `51.1`, `-0.2`, `1.08e3`, `98.05%`) is `N` and runs
/// of whitespace are one space.
fn shape(line: &str) -> String {
    let word = |w: &str| {
        let core = w.trim_end_matches([',', '%', ';']).trim_start_matches(['+', '-']);
        let numeric =
            core.bytes().next().is_some_and(|b| b.is_ascii_digit()) && core.parse::<f64>().is_ok();
        if numeric {
            "N".to_string()
        } else {
            w.to_string()
        }
    };
    line.split_whitespace().map(word).collect::<Vec<_>>().join(" ")
}

/// Whether `actual` matches `expected`, where an expected `...` is any number of lines.
fn matches(expected: &[String], actual: &[String]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first == "..." => {
            (0..=actual.len()).any(|skip| matches(rest, &actual[skip..]))
        }
        Some((first, rest)) => {
            actual.first().is_some_and(|a| a == first) && matches(rest, &actual[1..])
        }
    }
}

/// A `console` block's commands and their expected output lines.
fn sessions(block: &Block) -> Result<Vec<(String, Vec<String>)>, String> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut continued = false;
    for line in &block.lines {
        if continued {
            let last = out.last_mut().expect("a command before its continuation");
            last.0.push('\n');
            last.0.push_str(line);
            continued = line.ends_with('\\');
        } else if let Some(command) = line.strip_prefix("$ ") {
            out.push((command.to_string(), Vec::new()));
            continued = command.ends_with('\\');
        } else if let Some(last) = out.last_mut() {
            last.1.push(line.clone());
        } else {
            return Err("output before the first `$ ` command".into());
        }
    }
    Ok(out)
}

/// The prelude and the standard library, comments removed and whitespace collapsed.
fn declarations() -> String {
    let dir = repo().join("frontend/prelude");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("read frontend/prelude")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "tfn"))
        .collect();
    files.sort();
    files.iter().map(|f| flat(&std::fs::read_to_string(f).expect("read the prelude"))).collect()
}

/// `text` without `//` comments, whitespace collapsed, no space inside brackets.
fn flat(text: &str) -> String {
    let code: Vec<&str> = text.lines().map(|l| l.split("//").next().unwrap_or("")).collect();
    let joined = code.join(" ").split_whitespace().collect::<Vec<_>>().join(" ");
    joined.replace("( ", "(").replace(" )", ")") + " "
}

/// Checks one `tfn` block; `Err` says why it is wrong.
fn check_tfn(block: &Block, prelude: &str, n: usize) -> Result<(), String> {
    let code: Vec<&String> = block
        .lines
        .iter()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with("//"))
        .collect();
    let declares = code.iter().all(|l| {
        l.starts_with("op ") || l.starts_with("extern op ") || l.starts_with(char::is_whitespace)
    });
    if declares && !code.is_empty() {
        // Each declaration: its first line and the indented lines after it.
        let mut items: Vec<String> = Vec::new();
        for line in code {
            if line.starts_with(char::is_whitespace) {
                if let Some(last) = items.last_mut() {
                    last.push('\n');
                    last.push_str(line);
                }
            } else {
                items.push(line.to_string());
            }
        }
        for item in items {
            if !prelude.contains(&flat(&item)) {
                return Err(format!("not the prelude's declaration:\n{item}"));
            }
        }
        return Ok(());
    }
    let dir = mirror(&format!("tfn{n}"));
    let file = dir.join(format!("doc_block_{n}.tfn"));
    std::fs::write(&file, block.text()).expect("write the block");
    let o = bash(&dir, &format!("tfnc check {}", file.display()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = o?;
    let stderr = String::from_utf8_lossy(&o.stderr);
    if !o.status.success() || !stderr.contains(", 0 warnings") {
        return Err(format!("`tfnc check` does not accept it cleanly:\n{}", show(&o)));
    }
    Ok(())
}

/// Checks a `no-run` shell block: the repository paths and examples it names exist.
fn check_names(block: &Block) -> Result<(), String> {
    let entries: Vec<String> = std::fs::read_dir(repo())
        .expect("read the repository")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| !n.starts_with('.') && n != "target")
        .collect();
    // The words of each line up to a comment (`# ...`).
    let words: Vec<&str> = block
        .lines
        .iter()
        .flat_map(|l| l.split_whitespace().take_while(|w| !w.starts_with('#')))
        .collect();
    for (i, word) in words.iter().enumerate() {
        let path = word.trim_start_matches("./").trim_end_matches([';', ',', ')']);
        let top = path.split('/').next().unwrap_or("");
        let names_repo_path = entries.iter().any(|e| e == top)
            && (path.contains('/') || word.starts_with("./"))
            && !path.contains(".venv");
        if names_repo_path && !repo().join(path).exists() {
            return Err(format!("`{path}` does not exist"));
        }
        if *word == "--example" {
            let name = words.get(i + 1).copied().unwrap_or("");
            let dir = repo().join("examples").join(name).join("main.rs");
            let file = repo().join("examples").join(format!("{name}.rs"));
            if !dir.exists() && !file.exists() {
                return Err(format!("there is no example `{name}`"));
            }
        }
    }
    Ok(())
}

/// Runs a `console` block's commands in `dir` and compares their output with the sample.
fn run_console(block: &Block, dir: &Path) -> Result<(), String> {
    for (command, expected) in sessions(block)? {
        let o = bash(dir, &command)?;
        if !o.status.success() {
            return Err(format!("`{command}` failed ({})\n{}", o.status, show(&o)));
        }
        let text =
            format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        let actual: Vec<String> = text.lines().map(shape).collect();
        let expected: Vec<String> = expected.iter().map(|l| shape(l)).collect();
        if !matches(&expected, &actual) {
            return Err(format!(
                "`{command}` printed something else (numbers are wildcards):\n\
                     --- expected\n{}\n--- printed\n{}",
                expected.join("\n"),
                actual.join("\n")
            ));
        }
    }
    Ok(())
}

/// Runs or checks one block; `Err` says why it is wrong.
fn check_block(block: &Block, prelude: &str, n: usize) -> Result<(), String> {
    let unknown = |allowed: &[&str]| -> Result<(), String> {
        match block.attributes.iter().find(|a| !allowed.contains(&a.as_str())) {
            Some(a) => Err(format!("unknown attribute `{a}` (allowed: {allowed:?})")),
            None => Ok(()),
        }
    };
    match block.language.as_str() {
        "sh" | "bash" => {
            unknown(&["no-run", "python"])?;
            if block.has("no-run") {
                return check_names(block);
            }
            if block.has("python") {
                return Ok(()); // the Python suite runs it
            }
            let dir = mirror(&format!("sh{n}"));
            let o = bash(&dir, &block.text());
            let _ = std::fs::remove_dir_all(&dir);
            let o = o?;
            if !o.status.success() {
                return Err(format!("failed ({})\n{}", o.status, show(&o)));
            }
            Ok(())
        }
        "console" => {
            unknown(&["no-run"])?;
            if block.has("no-run") {
                return check_names(block);
            }
            let dir = mirror(&format!("console{n}"));
            let result = run_console(block, &dir);
            let _ = std::fs::remove_dir_all(&dir);
            result
        }
        "tfn" => {
            unknown(&[])?;
            check_tfn(block, prelude, n)
        }
        "python" => unknown(&["no-run"]),
        "rust" | "toml" | "text" => unknown(&[]),
        other => Err(format!("unknown language `{other}`")),
    }
}

#[test]
fn the_documents_commands_run_as_written() {
    let blocks = all_blocks();
    assert!(blocks.len() > 20, "found only {} blocks", blocks.len());
    let prelude = declarations();
    // In parallel: a few blocks run `tfnc bench` for a second or two (longer in a debug build).
    let results: Vec<Result<(), String>> = std::thread::scope(|scope| {
        let prelude = &prelude;
        let running: Vec<_> = blocks
            .iter()
            .enumerate()
            .map(|(n, block)| scope.spawn(move || check_block(block, prelude, n)))
            .collect();
        running.into_iter().map(|t| t.join().unwrap_or_else(|_| Err("panicked".into()))).collect()
    });
    let mut failures = Vec::new();
    for (block, result) in blocks.iter().zip(results) {
        if let Err(why) = result {
            failures.push(format!(
                "{} (```{} {}):\n{why}",
                block.place,
                block.language,
                block.attributes.join(" ")
            ));
        }
    }
    assert!(failures.is_empty(), "{} block(s) wrong:\n\n{}", failures.len(), failures.join("\n\n"));
}

#[test]
fn the_docs_test_catches_what_it_should() {
    let prelude = declarations();
    let block = |language: &str, attributes: &[&str], text: &str| Block {
        place: "test".into(),
        language: language.into(),
        attributes: attributes.iter().map(|a| a.to_string()).collect(),
        lines: text.lines().map(str::to_string).collect(),
    };
    let cases = [
        // A renamed flag and a missing file.
        (block("sh", &[], "tfnc check --frobnicate examples/nn.tfn"), false),
        (block("sh", &[], "tfnc check examples/nn.tfn"), true),
        (block("sh", &["no-run"], "bash scripts/no_such_script.sh"), false),
        (block("sh", &["no-run"], "cargo run --release --example no_such_example"), false),
        (block("sh", &["no-run"], "cargo run --release --example cnn  # trains"), true),
        // A changed output format; numbers may differ.
        (
            block(
                "console",
                &[],
                "$ tfnc check examples/nn.tfn\nchecked examples/nn.tfn: 7 functions, 0 warnings",
            ),
            true,
        ),
        (
            block(
                "console",
                &[],
                "$ tfnc check examples/nn.tfn\nchecked examples/nn.tfn: 7 fns, 0 warnings",
            ),
            false,
        ),
        (block("console", &[], "$ tfnc check \\\n    examples/nn.tfn\n...\n"), true),
        // Declarations must be the prelude's; programs must check cleanly.
        (
            block(
                "tfn",
                &[],
                "op rand_like<dtype: {f16, bf16, f32, f64}>(Tensor x, Tensor<i64> key, *, DType dtype = f32) -> Tensor<dtype>",
            ),
            true,
        ),
        (
            block(
                "tfn",
                &[],
                "op rand_like<dtype: {f16, bf16, f32, f64}>(Tensor x, Tensor<i64> seed, *, DType dtype = f32) -> Tensor<dtype>",
            ),
            false,
        ),
        (block("tfn", &[], "fn f(Tensor x) -> Tensor {\n    return nosuch(x)\n}"), false),
        (
            block("tfn", &[], "fn f(Tensor x) -> Tensor {\n    let unused = x\n    return x\n}"),
            false,
        ),
        // Typos do not skip a block.
        (block("sh", &["norun"], "true"), false),
        (block("shell", &[], "true"), false),
    ];
    for (i, (b, ok)) in cases.iter().enumerate() {
        let result = check_block(b, &prelude, 1000 + i);
        assert_eq!(result.is_ok(), *ok, "case {i} ({}): {result:?}", b.text());
    }
}

#[test]
fn fences_numbers_and_ellipses_parse_as_documented() {
    let text = "intro\n```sh no-run\nbash x.sh\n```\n- item\n  ```text\n  a\n    b\n  ```\n";
    let found = blocks("t.md", text);
    assert_eq!(found.len(), 2);
    assert_eq!((found[0].place.as_str(), found[0].language.as_str()), ("t.md:2", "sh"));
    assert_eq!(found[0].attributes, ["no-run"]);
    assert_eq!(found[1].lines, ["a", "  b"]);
    assert_eq!(
        shape("  0 matmul  add×3   51.1 -0.2 98.05% (mean of 87"),
        "N matmul add×3 N N N (mean of N"
    );
    let lines = |s: &str| s.lines().map(str::to_string).collect::<Vec<_>>();
    assert!(matches(&lines("...\nb\n...\nd"), &lines("a\nb\nc\nc\nd")));
    assert!(!matches(&lines("a\nb"), &lines("a\nb\nc")));
    assert!(matches(&lines("..."), &[]));
}
