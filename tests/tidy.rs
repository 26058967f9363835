//! The repository's own rules, checked by every `cargo test`: every Rust source file opens with
//! `//!` module docs, every repository path ARCHITECTURE.md names exists, and every crate's
//! integration tests are one test binary that reaches every file of its `tests/` directory.

use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Directories no rule looks into: build output (`target`, `target-*`), `.git`, Python
/// caches, and any directory marked as a cache (`CACHEDIR.TAG`: cargo's target directories,
/// pytest's cache) or a virtual environment (`pyvenv.cfg`).
fn skipped(dir: &Path, name: &str) -> bool {
    name == "target"
        || name.starts_with("target-")
        || name == ".git"
        || name == "__pycache__"
        || dir.join("CACHEDIR.TAG").exists()
        || dir.join("pyvenv.cfg").exists()
}

/// Every file and directory below the repository root, as `/`-separated relative paths, sorted
/// (directories without a trailing `/`).
fn repository() -> (Vec<String>, Vec<String>) {
    fn walk(dir: &Path, rel: &str, files: &mut Vec<String>, dirs: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
            match entry.file_type() {
                Ok(t) if t.is_dir() && !skipped(&entry.path(), &name) => {
                    dirs.push(path.clone());
                    walk(&entry.path(), &path, files, dirs);
                }
                Ok(t) if t.is_file() => files.push(path),
                _ => {}
            }
        }
    }
    let (mut files, mut dirs) = (Vec::new(), Vec::new());
    walk(root(), "", &mut files, &mut dirs);
    files.sort();
    dirs.sort();
    (files, dirs)
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Whether a file's first line makes it exempt: generated code (`@generated`, the blessed
/// snapshots of `tfn-build`'s output, which the generator writes without module docs).
fn generated(first_line: &str) -> bool {
    first_line.contains("@generated")
}

#[test]
fn every_rust_file_starts_with_module_docs() {
    let (files, _) = repository();
    let rust: Vec<&String> = files.iter().filter(|f| f.ends_with(".rs")).collect();
    assert!(rust.len() > 100, "found only {} .rs files under {}", rust.len(), root().display());
    let missing: Vec<&String> = rust
        .into_iter()
        .filter(|f| {
            let text = read(f);
            let first = text.lines().next().unwrap_or("");
            !first.starts_with("//!") && !generated(first)
        })
        .collect();
    assert!(
        missing.is_empty(),
        "these files do not start with `//!` docs saying what they are for:\n  {}",
        missing.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n  ")
    );
}

/// The backticked spans of `text` that name repository paths: a span without spaces that
/// contains `/` or ends in `.rs`, `.tfn`, `.md`, `.pest`, `.toml` or `.sh`. `path::item` names
/// `path`; a bare extension (`.tfn`) and alternatives of type names (`UnaryOp/BinaryOp`) are
/// not paths.
fn named_paths(text: &str) -> Vec<String> {
    const EXTENSIONS: [&str; 6] = [".rs", ".tfn", ".md", ".pest", ".toml", ".sh"];
    let mut paths = Vec::new();
    for (i, span) in text.split('`').enumerate() {
        if i % 2 == 0 || span.is_empty() || span.contains(char::is_whitespace) {
            continue;
        }
        let span = span.split("::").next().unwrap_or(span);
        let is_path = span.contains('/') || EXTENSIONS.iter().any(|e| span.ends_with(e));
        let path = span.trim_end_matches('/');
        let bare_extension = path.starts_with('.') && !path[1..].contains(['.', '/']);
        let type_names = path.split('/').all(|c| {
            c.starts_with(|ch: char| ch.is_ascii_uppercase())
                && c.chars().all(|ch| ch.is_ascii_alphanumeric())
        });
        if is_path && !bare_extension && !type_names && !paths.iter().any(|p| p == path) {
            paths.push(path.to_string());
        }
    }
    paths
}

/// `name` against one path component of a pattern, where `*` is any run of characters.
fn component_matches(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = name.strip_prefix(first) else { return false };
    let mut parts: Vec<&str> = parts.collect();
    let Some(last) = parts.pop() else { return rest.is_empty() };
    for part in parts {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Whether `path` names an existing file or directory: relative to the repository root, or as
/// the tail of one (ARCHITECTURE.md names a crate's files relative to the section about it:
/// `language.rs` under `passes/`). `<name>` and `*` stand for any one component or part of one.
fn exists(path: &str, existing: &[String]) -> bool {
    let pattern: Vec<String> = path
        .split('/')
        .map(|c| match (c.find('<'), c.find('>')) {
            (Some(a), Some(b)) if a < b => format!("{}*{}", &c[..a], &c[b + 1..]),
            _ => c.to_string(),
        })
        .collect();
    existing.iter().any(|e| {
        let parts: Vec<&str> = e.split('/').collect();
        parts.len() >= pattern.len()
            && parts[parts.len() - pattern.len()..]
                .iter()
                .zip(&pattern)
                .all(|(name, pat)| component_matches(pat, name))
    })
}

#[test]
fn every_path_architecture_md_names_exists() {
    let (files, dirs) = repository();
    let existing: Vec<String> = files.into_iter().chain(dirs).collect();
    let text = read("ARCHITECTURE.md");
    let paths = named_paths(&text);
    assert!(paths.len() > 50, "found only {} paths in ARCHITECTURE.md", paths.len());
    let missing: Vec<&String> = paths.iter().filter(|p| !exists(p, &existing)).collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names paths that do not exist (fix the reference):\n  {}",
        missing.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n  ")
    );
}

#[test]
fn the_path_rules_match_what_architecture_md_writes() {
    let text = "`ir/src/op.rs` `rules/` `Op::Add` `UnaryOp/BinaryOp::dtypes` `.tfn` `a b/c` \
                `passes/src/fusion/group.rs::place` `tests/cases/<stage>/*.tfn` `grammar/tfn.pest`";
    let paths = named_paths(text);
    assert_eq!(
        paths,
        [
            "ir/src/op.rs",
            "rules",
            "passes/src/fusion/group.rs",
            "tests/cases/<stage>/*.tfn",
            "grammar/tfn.pest"
        ]
    );
    let existing = ["tests/cases/run/a.tfn", "passes/src/optimize/rules", "ir/src/op.rs"]
        .map(String::from)
        .to_vec();
    assert!(exists("tests/cases/<stage>/*.tfn", &existing));
    assert!(exists("rules", &existing) && exists("optimize/rules", &existing));
    assert!(!exists("ir/tests/tools", &existing) && !exists("src/op", &existing));
    assert!(!exists("tests/cases/*.tfn", &existing));
    assert!(component_matches("*.tfn", "a.tfn") && !component_matches("*.tfn", "a.rs"));
    assert!(component_matches("a*b*c", "aXbYc") && !component_matches("a*b*c", "acb"));
}

/// Test binaries allowed beside a crate's one grouped binary, with the reason (none today).
const SEPARATE_TEST_BINARIES: &[&str] = &[];

/// The `path`s of a manifest's `[[test]]` targets.
fn declared_tests(manifest: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut in_test = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_test = line == "[[test]]";
        } else if let (true, Some(value)) = (in_test, line.strip_prefix("path")) {
            let value = value.trim_start().trim_start_matches('=').trim().trim_matches('"');
            paths.push(value.to_string());
        }
    }
    paths
}

/// The modules a test binary's root declares (`mod name;`, with or without `#[path]`).
fn declared_modules(source: &str) -> Vec<String> {
    source
        .lines()
        .filter_map(|l| l.trim().strip_prefix("mod ")?.strip_suffix(';').map(str::to_string))
        .collect()
}

#[test]
fn each_crate_has_one_integration_test_binary_reaching_every_test_file() {
    let (files, _) = repository();
    let manifests: Vec<&String> =
        files.iter().filter(|f| f.ends_with("Cargo.toml") && *f != "Cargo.lock").collect();
    let mut problems = Vec::new();
    let mut crates_with_tests = 0;
    for manifest_path in manifests {
        let dir = manifest_path.strip_suffix("Cargo.toml").unwrap_or("");
        let manifest = read(manifest_path);
        if !manifest.contains("[package]") {
            continue;
        }
        let tests = format!("{dir}tests/");
        // Files directly in tests/ and module directories (tests/<name>/mod.rs).
        let top: Vec<&String> = files
            .iter()
            .filter(|f| f.starts_with(&tests) && f.ends_with(".rs"))
            .filter(|f| {
                let rest = &f[tests.len()..];
                !rest.contains('/') || rest.ends_with("/mod.rs") || rest.ends_with("/main.rs")
            })
            .collect();
        if top.is_empty() {
            continue;
        }
        crates_with_tests += 1;
        let binaries: Vec<String> = if manifest.contains("autotests = false") {
            declared_tests(&manifest).into_iter().map(|p| format!("{dir}{p}")).collect()
        } else {
            top.iter()
                .filter(|f| !f[tests.len()..].contains('/') || f.ends_with("/main.rs"))
                .map(|f| f.to_string())
                .collect()
        };
        let extra = binaries.len().saturating_sub(1);
        let allowed =
            binaries.iter().filter(|b| SEPARATE_TEST_BINARIES.contains(&b.as_str())).count();
        if extra > allowed {
            problems.push(format!(
                "{manifest_path}: {} integration test binaries ({}); each links the crate's whole \
                 dependency tree: make the files modules of one (`autotests = false`, one \
                 `[[test]]`, `mod` lines in its `tests/main.rs`)",
                binaries.len(),
                binaries.join(", ")
            ));
        }
        let modules: Vec<String> = binaries
            .iter()
            .filter(|b| files.contains(b))
            .flat_map(|b| declared_modules(&read(b)))
            .collect();
        for file in top {
            let rest = &file[tests.len()..];
            let module = rest.trim_end_matches(".rs").trim_end_matches("/mod");
            if !binaries.contains(file) && !modules.iter().any(|m| m == module) {
                problems.push(format!(
                    "{file} is in no test binary: declare `mod {module};` in the crate's \
                     tests/main.rs"
                ));
            }
        }
    }
    assert!(crates_with_tests >= 6, "found the tests of only {crates_with_tests} crates");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
