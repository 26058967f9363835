//! Hostile sources: inputs generated to make loading or reporting slow or unbounded. Each test
//! asserts that the work and the rendered output stay bounded by counting diagnostics, lines
//! and bytes (never by timing): `use` of a device or of a huge file, many copies of one
//! overload, many warnings, huge identifiers, thousands of parameters on one line.

use tfn_frontend::{load_source, prelude, FsLoader, MemLoader, MAX_SOURCE_BYTES};
use tfn_ir::diagnostic::{render_all, MAX_PER_CODE};
use tfn_ir::{Diagnostic, Library};

/// Loads `text` into a fresh library with the prelude; every diagnostic, and their rendering.
fn load(text: &str) -> (Vec<Diagnostic>, String) {
    let mut lib = prelude().expect("prelude");
    let diags = match load_source(&mut lib, "hostile.tfn", text, &MemLoader::new()) {
        Ok(d) | Err(d) => d,
    };
    let rendered = render_all(&diags, &lib.sources);
    (diags, rendered)
}

fn count(diags: &[Diagnostic], code: &str) -> usize {
    diags.iter().filter(|d| d.code == code).count()
}

#[test]
fn use_of_a_device_or_a_huge_file_is_refused_at_the_use() {
    let dir = std::env::temp_dir().join(format!("tfn-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let huge = dir.join("huge.tfn");
    let file = std::fs::File::create(&huge).unwrap();
    file.set_len(MAX_SOURCE_BYTES + 1).unwrap();
    let mut cases = vec![(huge.display().to_string(), "larger than the 16 MiB limit")];
    for device in ["/dev/zero", "/dev/urandom"] {
        if std::path::Path::new(device).exists() {
            cases.push((device.to_string(), "not a regular file"));
        }
    }
    cases.push((dir.display().to_string(), "a directory"));
    // A FIFO: refused before it is opened (opening one waits for a writer).
    let fifo = dir.join("fifo.tfn");
    let _ = std::fs::remove_file(&fifo);
    if std::process::Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success()) {
        cases.push((fifo.display().to_string(), "not a regular file"));
    }
    for (path, reason) in cases {
        let text = format!("use \"{path}\"\n");
        let mut lib = Library::default();
        let diags = load_source(&mut lib, "main.tfn", &text, &FsLoader::new()).expect_err(&path);
        assert_eq!(diags.len(), 1, "{path}: {diags:?}");
        let d = &diags[0];
        assert_eq!(d.code, "E0461");
        assert!(d.message.contains(reason), "{path}: {}", d.message);
        let span = d.primary.as_ref().expect("at the use").span;
        assert_eq!(&text[span.range()], format!("\"{path}\""));
    }
    let _ = std::fs::remove_file(&huge);
    let _ = std::fs::remove_file(&fifo);
}

#[test]
fn copies_of_one_overload_are_each_reported_once() {
    let n = 400;
    let text: String =
        (0..n).map(|i| format!("fn g.o{i}(Tensor x) -> Tensor {{\n    return x\n}}\n")).collect();
    let (diags, rendered) = load(&text);
    assert_eq!(count(&diags, "E0116"), n - 1, "one E0116 per copy, not one per pair");
    let first = diags[0].secondary[0].span;
    assert!(diags.iter().all(|d| d.secondary[0].span == first), "each against the first");
    assert!(rendered.lines().count() < 2000, "{} lines", rendered.lines().count());
}

#[test]
fn many_warnings_render_a_bounded_report_with_a_count() {
    let n = 10_000;
    let mut text = String::from("fn f(Tensor x) -> Tensor {\n");
    for i in 0..n {
        text.push_str(&format!("    let w{i} = x\n"));
    }
    text.push_str("    return x\n}\n");
    let (diags, rendered) = load(&text);
    assert_eq!(count(&diags, "W0301"), n);
    assert_eq!(rendered.matches("warning[W0301]").count(), MAX_PER_CODE + 1, "shown + counted");
    assert!(rendered.contains(&format!("note: {} more warning[W0301] not shown", n - MAX_PER_CODE)));
    assert!(rendered.ends_with(&format!("warning: {n} warnings emitted\n")), "{rendered}");
    // The last shown warning points at the right line (line numbers come from a line index).
    assert!(rendered.contains(&format!("hostile.tfn:{}:9", MAX_PER_CODE + 1)), "{rendered}");
}

#[test]
fn huge_unknown_names_give_short_diagnostics_without_suggestions() {
    let name = "a".repeat(1 << 20);
    let text = format!(
        "fn f(Tensor x) -> Tensor {{\n    let y = {name}(x)\n    let z = {name} + y\n    return z\n}}\n"
    );
    let (diags, rendered) = load(&text);
    assert_eq!((count(&diags, "E0201"), count(&diags, "E0202")), (1, 1), "{diags:?}");
    assert!(diags.iter().all(|d| d.help.is_none()), "no did-you-mean for a 1 MiB name");
    assert!(rendered.len() < 8 << 10, "rendered {} bytes", rendered.len());
}

#[test]
fn thousands_of_unused_parameters_on_one_line_render_bounded() {
    let n = 10_000;
    let params: Vec<String> = (0..n).map(|i| format!("Tensor p{i}")).collect();
    let text = format!("fn f({}) -> Tensor {{\n    return p0\n}}\n", params.join(", "));
    let (diags, rendered) = load(&text);
    assert_eq!(count(&diags, "W0302"), n - 1);
    assert!(rendered.len() < 64 << 10, "rendered {} bytes", rendered.len());
    assert!(rendered.lines().all(|l| l.chars().count() < 600), "no line is the whole source line");
    // A shown snippet still has its caret under the parameter's name.
    let lines: Vec<&str> = rendered.lines().collect();
    let at = lines.iter().position(|l| l.contains("unused parameter `p50`")).expect("p50 shown");
    let (src, marks) = (lines[at + 3], lines[at + 4]);
    assert!(src.contains("...") && src.len() < 200, "a window of the line: {src}");
    let caret = marks.find('^').expect("caret");
    assert_eq!(&src[caret..caret + 4], "p50,", "{src}\n{marks}");
}

/// Loops nested to the bracket limit, thousands of loops in a row, long index chains, and
/// malformed loop headers: never a panic (nor a stack overflow), a bounded report.
#[test]
fn nested_and_repeated_loops_and_index_chains_stay_bounded() {
    // 60 nested `for`s (each `{` counts towards the nesting limit of 64): checks cleanly.
    let depth = 60;
    let mut text = String::from("fn f(Tensor x, *, Int n) -> Tensor {\n    var h = x\n");
    for d in 0..depth {
        text.push_str(&format!("for j{d} in 0..n {{\n"));
    }
    text.push_str("h = h + x[j0]");
    for d in 1..depth {
        text.push_str(&format!(" + x[j{d}]"));
    }
    text.push('\n');
    text.push_str(&"}\n".repeat(depth));
    text.push_str("    return h\n}\n");
    let (diags, _) = load(&text);
    assert!(diags.is_empty(), "{diags:?}");

    // Deeper than the limit: one E0003.
    let deep = format!(
        "fn f(Tensor x, *, Int n) -> Tensor {{\n{}\n    return x\n}}\n",
        "for i in 0..n {\n".repeat(100)
    );
    let (diags, _) = load(&deep);
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert_eq!(diags[0].code, "E0003");

    // 5000 loops in a row, each assigning an undeclared name: one report per cause, capped.
    let mut text = String::from("fn f(Tensor x, *, Int n) -> Tensor {\n");
    for _ in 0..5000 {
        text.push_str("    for i in 0..n {\n        y = x[i]\n    }\n");
    }
    text.push_str("    return x\n}\n");
    let (diags, rendered) = load(&text);
    assert_eq!(count(&diags, "E0311"), 5000);
    assert!(
        rendered.lines().count() < 20 * MAX_PER_CODE + 50,
        "{} lines",
        rendered.lines().count()
    );

    // A long chain of indices on one line: refused before any recursive walk.
    let text = format!("fn f(Tensor x) -> Tensor {{\n    return x{}\n}}\n", "[0]".repeat(100_000));
    let (diags, _) = load(&text);
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert_eq!(diags[0].code, "E0003");

    // A long expression continued over lines (the operator ending a line or beginning the
    // next): one statement, refused like the same expression on one line (it overflowed the
    // stack).
    for line in ["\n        + x", " +\n        x", " %\n        x"] {
        let text =
            format!("fn f(Tensor x) -> Tensor {{\n    return x{}\n}}\n", line.repeat(10_000));
        let (diags, _) = load(&text);
        assert_eq!(diags.len(), 1, "{line:?}: {diags:?}");
        assert_eq!(diags[0].code, "E0003", "{line:?}");
    }

    // Malformed headers: one syntax error each.
    for bad in [
        "for i in 0..n {\n        h = h + x[i]\n",
        "for i in 0.. {\n    }\n",
        "for i in {\n    }\n",
        "for in 0..n {\n    }\n",
        "for i 0..n {\n    }\n",
        "for i in 0..n, {\n    }\n",
        "for i in 0..n, checkpoint, checkpoint {\n    }\n",
        "while sum(h) > 0.0 {\n    }\n",
        "while sum(h) > 0.0, at {\n    }\n",
        "while sum(h) > 0.0, at most {\n    }\n",
        "while , at most 3 {\n    }\n",
        "var = \n",
        "var h x\n",
        "h = \n",
        "h == x\n",
        "let y = x[\n",
        "let y = x[]\n",
        "let y = x]\n",
        "let y = x[1, 2]\n",
        "let y = [1, 2][\n",
    ] {
        let text = format!(
            "fn f(Tensor x, *, Int n) -> Tensor {{\n    var h = x\n    {bad}    return h\n}}\n"
        );
        let (diags, rendered) = load(&text);
        assert_eq!(diags.len(), 1, "{bad:?}: {rendered}");
        assert_eq!(diags[0].code, "E0001", "{bad:?}: {rendered}");
    }
}
