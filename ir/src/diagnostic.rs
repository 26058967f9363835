//! The one diagnostic type of tfn, and its rustc-style rendering.
//!
//! Every user-facing problem — syntax errors, check errors, dispatch failures at call time,
//! unsound rewrite rules — is a [`Diagnostic`]: a severity, a stable code (`E0xxx`/`W0xxx`),
//! a one-line lowercase message, a primary span with an optional label, secondary labels,
//! notes and a `help:` line. [`Diagnostic::render`] prints it the way rustc does:
//!
//! ```text
//! error[E0201]: unknown function `tanhh`
//!  --> model.tfn:3:12
//!   |
//! 3 |     return tanhh(x)
//!   |            ^^^^^ not found
//!   |
//!   = help: a function with a similar name exists: `tanh`
//! ```

use crate::span::{SourceMap, Span};
use std::fmt::Write as _;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
}

/// A span with an optional message written under it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    pub span: Span,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    /// Stable code, e.g. `E0201`. Documented in docs/language.md.
    pub code: &'static str,
    /// One line, lowercase, no trailing period, code in backticks.
    pub message: String,
    /// The smallest culprit. `None` only for problems with no source location (e.g. a CLI
    /// argument), which are rare.
    pub primary: Option<Label>,
    pub secondary: Vec<Label>,
    pub notes: Vec<String>,
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn error(code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            code,
            message: message.into(),
            primary: None,
            secondary: Vec::new(),
            notes: Vec::new(),
            help: None,
        }
    }

    pub fn warning(code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic { severity: Severity::Warning, ..Diagnostic::error(code, message) }
    }

    /// Sets the primary span and the label under it (may be empty).
    pub fn at(mut self, span: Span, label: impl Into<String>) -> Diagnostic {
        self.primary = Some(Label { span, message: label.into() });
        self
    }

    pub fn with_secondary(mut self, span: Span, label: impl Into<String>) -> Diagnostic {
        self.secondary.push(Label { span, message: label.into() });
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// `file:line:col` of the primary span, if any.
    pub fn location(&self, sources: &SourceMap) -> Option<String> {
        span_location(self.primary.as_ref()?.span, sources)
    }

    /// Renders rustc-style, without colour, ending in a newline. The output is bounded
    /// whatever the input: messages longer than [`MAX_MESSAGE_CHARS`] and source lines longer
    /// than [`MAX_SNIPPET_CHARS`] are shortened around what matters.
    pub fn render(&self, sources: &SourceMap) -> String {
        let mut out = String::new();
        let kind = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let _ = writeln!(out, "{kind}[{}]: {}", self.code, clip(&self.message));
        let mut labels: Vec<(&Label, char)> = Vec::new();
        if let Some(p) = &self.primary {
            labels.push((p, '^'));
        }
        labels.extend(self.secondary.iter().map(|l| (l, '-')));
        // Gutter wide enough for the largest line number shown.
        let line_of = |l: &Label| sources.line_col(l.span.file, l.span.start).0;
        let width = labels.iter().map(|(l, _)| line_of(l).to_string().len()).max().unwrap_or(1);
        let pad = " ".repeat(width);
        let mut first = true;
        for (label, marker) in &labels {
            let Some(file) = sources.get(label.span.file) else { continue };
            let (line, col) = file.line_col(label.span.start as usize);
            if first {
                let _ = writeln!(out, "{pad}--> {}:{}:{}", escaped(&file.name), line, col);
                first = false;
            } else if sources
                .get(self.primary.as_ref().map_or(label.span.file, |p| p.span.file))
                .map(|f| &f.name)
                != Some(&file.name)
            {
                let _ = writeln!(out, "{pad}::: {}:{}:{}", escaped(&file.name), line, col);
            }
            let text = file.line(line);
            // Marker under the span, clipped to the first line of a multi-line span.
            let (end_line, end_col) = file.line_col(label.span.end as usize);
            let end_col = if end_line == line { end_col } else { text.chars().count() + 1 };
            let len = end_col.saturating_sub(col).max(1);
            let (shown, col, len) = snippet(text, col, len);
            let _ = writeln!(out, "{pad} |");
            let _ = writeln!(out, "{:>width$} | {}", line, shown_line(&shown));
            let marks: String = std::iter::repeat_n(*marker, len).collect();
            let msg = if label.message.is_empty() {
                String::new()
            } else {
                format!(" {}", clip(&label.message))
            };
            let _ = writeln!(out, "{pad} | {}{}{}", " ".repeat(col - 1), marks, msg);
        }
        if !labels.is_empty() && (self.help.is_some() || !self.notes.is_empty()) {
            let _ = writeln!(out, "{pad} |");
        }
        for note in &self.notes {
            let _ = writeln!(out, "{pad} = note: {}", clip(note));
        }
        if let Some(help) = &self.help {
            let _ = writeln!(out, "{pad} = help: {}", clip(help));
        }
        out
    }
}

/// Longest message, label, note or help rendered in full, in characters.
pub const MAX_MESSAGE_CHARS: usize = 480;
/// Longest source line shown in full, in characters; longer ones show a window around the span.
pub const MAX_SNIPPET_CHARS: usize = 160;
/// Most diagnostics of one code rendered by [`render_all`]; the rest are counted.
pub const MAX_PER_CODE: usize = 50;

/// Whether `c` must not reach a terminal as it is: control characters (escape sequences,
/// bells, carriage returns) and the bidirectional overrides that make text read otherwise than
/// it parses. Newlines and tabs are layout.
fn is_hostile(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `file:line:col` of the start of `span` (the file's name escaped as in diagnostics).
pub fn span_location(span: Span, sources: &SourceMap) -> Option<String> {
    let file = sources.get(span.file)?;
    let (line, col) = sources.line_col(span.file, span.start);
    Some(format!("{}:{}:{}", escaped(&file.name), line, col))
}

/// `s` with every hostile character written as its escape (`\u{1b}`): messages, labels,
/// notes and file names quote source text, which may hold anything.
fn escaped(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(is_hostile) {
        return s.into();
    }
    s.chars()
        .map(|c| if is_hostile(c) { c.escape_unicode().to_string() } else { c.to_string() })
        .collect::<String>()
        .into()
}

/// A source line as shown under a diagnostic: a tab or hostile character becomes one
/// visible character (a space, `�`), so the marker's columns still line up.
fn shown_line(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\t' => ' ',
            c if is_hostile(c) => '\u{fffd}',
            c => c,
        })
        .collect()
}

/// `s` (escaped), or its start and end around `…` and the number of characters left out.
fn clip(s: &str) -> std::borrow::Cow<'_, str> {
    let s = escaped(s);
    let count = s.chars().count();
    if count <= MAX_MESSAGE_CHARS {
        return s;
    }
    let keep = MAX_MESSAGE_CHARS / 2;
    let head: String = s.chars().take(keep).collect();
    let tail: String = s.chars().skip(count - keep).collect();
    format!("{head}…[{} characters]…{tail}", count - 2 * keep).into()
}

/// The part of a source line to show for a marker at 1-based column `col` of `len`
/// characters: the whole line, or a window of [`MAX_SNIPPET_CHARS`] starting a little before
/// the marker, with `...` where text is cut. Returns the text, the marker's column in it and
/// its length (cut at the window's end).
fn snippet(text: &str, col: usize, len: usize) -> (std::borrow::Cow<'_, str>, usize, usize) {
    let count = text.chars().count();
    if count <= MAX_SNIPPET_CHARS {
        return (text.into(), col, len);
    }
    let start = (col - 1).saturating_sub(MAX_SNIPPET_CHARS / 4).min(count - MAX_SNIPPET_CHARS);
    let end = start + MAX_SNIPPET_CHARS;
    let mut shown = String::new();
    let mut offset = 0;
    if start > 0 {
        shown.push_str("...");
        offset = 3;
    }
    shown.extend(text.chars().skip(start).take(MAX_SNIPPET_CHARS));
    if end < count {
        shown.push_str("...");
    }
    let col = col.clamp(start + 1, end);
    let len = len.min(end + 1 - col).max(1);
    (shown.into(), col - start + offset, len)
}

/// Renders several diagnostics followed by rustc's summary line
/// (`error: could not compile due to 2 previous errors; 1 warning emitted`). At most
/// [`MAX_PER_CODE`] diagnostics of each code are rendered (like rustc's cap on repeated
/// errors), so that hostile input cannot produce unbounded output; the rest are counted.
pub fn render_all(diags: &[Diagnostic], sources: &SourceMap) -> String {
    let mut out = String::new();
    let mut per_code: std::collections::BTreeMap<(Severity, &str), usize> = Default::default();
    for d in diags {
        let seen = per_code.entry((d.severity, d.code)).or_default();
        *seen += 1;
        if *seen <= MAX_PER_CODE {
            out.push_str(&d.render(sources));
            out.push('\n');
        }
    }
    for ((severity, code), n) in &per_code {
        if *n > MAX_PER_CODE {
            let kind = if *severity == Severity::Error { "error" } else { "warning" };
            let _ = writeln!(
                out,
                "note: {} more {kind}[{code}] not shown (only the first {MAX_PER_CODE} of each kind are)\n",
                n - MAX_PER_CODE
            );
        }
    }
    let errors = diags.iter().filter(|d| d.is_error()).count();
    let warnings = diags.len() - errors;
    let plural = |n: usize, w: &str| if n == 1 { format!("1 {w}") } else { format!("{n} {w}s") };
    if errors > 0 {
        let _ = write!(out, "error: aborting due to {}", plural(errors, "error"));
        if warnings > 0 {
            let _ = write!(out, "; {} emitted", plural(warnings, "warning"));
        }
        out.push('\n');
    } else if warnings > 0 {
        let _ = writeln!(out, "warning: {} emitted", plural(warnings, "warning"));
    }
    out
}

/// Writes one line to standard error for the library's opt-in logs (`TFN_LOG_COMPILES`,
/// `TFN_DUMP_CLIF`, ...), ignoring write errors: unlike `eprintln!`, a closed or full stderr
/// never panics the caller.
#[macro_export]
macro_rules! tfn_log {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_and_bidi_overrides_never_reach_the_terminal() {
        let mut sm = SourceMap::new();
        let f = sm.add("a\u{1b}[2Jb.tfn", "let y = \u{1b}[31m\u{7}x\u{202e}z\r\n");
        let d = Diagnostic::error("E0001", "unexpected `\u{1b}`")
            .at(Span::new(f, 8, 9), "here \u{7}")
            .with_note("bidi \u{2066} and tab\tkept");
        let text = d.render(&sm);
        assert!(!text.chars().any(is_hostile), "{text:?}");
        assert!(text.contains("unexpected `\\u{1b}`"), "{text}");
        assert!(text.contains("a\\u{1b}[2Jb.tfn"), "{text}");
        // One shown character per source character: the marker stays under the culprit.
        assert!(text.contains("1 | let y = \u{fffd}[31m\u{fffd}x\u{fffd}z\n"), "{text}");
        assert!(text.contains("  |         ^ here \\u{7}"), "{text}");
        assert!(text.contains("tab\tkept"), "{text}");
    }

    #[test]
    fn renders_rustc_style() {
        let mut sm = SourceMap::new();
        let f = sm.add("m.tfn", "fn f(Tensor x) -> Tensor {\n    return tanhh(x)\n}\n");
        let d = Diagnostic::error("E0201", "unknown function `tanhh`")
            .at(Span::new(f, 38, 43), "not found")
            .with_help("a function with a similar name exists: `tanh`");
        let expected = "error[E0201]: unknown function `tanhh`\n --> m.tfn:2:12\n  |\n2 |     return tanhh(x)\n  |            ^^^^^ not found\n  |\n  = help: a function with a similar name exists: `tanh`\n";
        assert_eq!(d.render(&sm), expected);
    }

    #[test]
    fn long_lines_and_messages_are_shortened_around_the_span() {
        let mut sm = SourceMap::new();
        let name = "n".repeat(100_000);
        let text = format!("let {} = {name} + 1\n", "y".repeat(5000));
        let f = sm.add("long.tfn", text.as_str());
        let start = 5000 + 7;
        let d = Diagnostic::error("E0202", format!("unknown variable `{name}`"))
            .at(Span::new(f, start, start + name.len()), "not found")
            .with_help(format!("did you mean `{name}`?"));
        let out = d.render(&sm);
        assert!(out.len() < 2000, "bounded: {} bytes\n{out}", out.len());
        assert!(out.contains(" --> long.tfn:1:5008"), "{out}");
        let lines: Vec<&str> = out.lines().collect();
        let (src, marks) = (lines[3], lines[4]);
        assert!(src.starts_with("1 | ...y") && src.ends_with("..."), "{src}");
        // The caret sits under the name's first character.
        let caret = marks.find('^').unwrap();
        assert_eq!(&src[caret..caret + 4], "nnnn", "{src}\n{marks}");
        assert!(out.contains("…[99"), "clipped message:\n{out}");
    }

    #[test]
    fn render_all_caps_each_code() {
        let mut sm = SourceMap::new();
        let text = "x\n".repeat(200);
        let f = sm.add("m.tfn", text.as_str());
        let mut diags: Vec<Diagnostic> = (0..200)
            .map(|i| {
                Diagnostic::warning("W0301", "unused binding `x`")
                    .at(Span::new(f, 2 * i, 2 * i + 1), "")
            })
            .collect();
        diags.push(Diagnostic::error("E0202", "unknown variable `x`").at(Span::new(f, 0, 1), ""));
        let out = render_all(&diags, &sm);
        assert_eq!(out.matches("warning[W0301]").count(), MAX_PER_CODE + 1, "{out}");
        assert!(out.contains("note: 150 more warning[W0301] not shown"), "{out}");
        assert!(out.contains("error[E0202]"), "{out}");
        assert!(out.ends_with("error: aborting due to 1 error; 200 warnings emitted\n"), "{out}");
    }
}
