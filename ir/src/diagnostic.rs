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
        let label = self.primary.as_ref()?;
        let file = sources.get(label.span.file)?;
        let (line, col) = sources.line_col(label.span.file, label.span.start);
        Some(format!("{}:{}:{}", file.name, line, col))
    }

    /// Renders rustc-style, without colour, ending in a newline.
    pub fn render(&self, sources: &SourceMap) -> String {
        let mut out = String::new();
        let kind = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let _ = writeln!(out, "{kind}[{}]: {}", self.code, self.message);
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
            let (line, col) = sources.line_col(label.span.file, label.span.start);
            if first {
                let _ = writeln!(out, "{pad}--> {}:{}:{}", file.name, line, col);
                first = false;
            } else if sources
                .get(self.primary.as_ref().map_or(label.span.file, |p| p.span.file))
                .map(|f| &f.name)
                != Some(&file.name)
            {
                let _ = writeln!(out, "{pad}::: {}:{}:{}", file.name, line, col);
            }
            let text = file.text.lines().nth(line - 1).unwrap_or("");
            let _ = writeln!(out, "{pad} |");
            let _ = writeln!(out, "{:>width$} | {}", line, text.replace('\t', " "));
            // Marker under the span, clipped to the first line of a multi-line span.
            let line_chars = text.chars().count();
            let (end_line, end_col) = sources.line_col(label.span.file, label.span.end);
            let end_col = if end_line == line { end_col } else { line_chars + 1 };
            let len = end_col.saturating_sub(col).max(1);
            let marks: String = std::iter::repeat_n(*marker, len).collect();
            let msg = if label.message.is_empty() {
                String::new()
            } else {
                format!(" {}", label.message)
            };
            let _ = writeln!(out, "{pad} | {}{}{}", " ".repeat(col - 1), marks, msg);
        }
        if !labels.is_empty() && (self.help.is_some() || !self.notes.is_empty()) {
            let _ = writeln!(out, "{pad} |");
        }
        for note in &self.notes {
            let _ = writeln!(out, "{pad} = note: {note}");
        }
        if let Some(help) = &self.help {
            let _ = writeln!(out, "{pad} = help: {help}");
        }
        out
    }
}

/// Renders several diagnostics followed by rustc's summary line
/// (`error: could not compile due to 2 previous errors; 1 warning emitted`).
pub fn render_all(diags: &[Diagnostic], sources: &SourceMap) -> String {
    let mut out = String::new();
    for d in diags {
        out.push_str(&d.render(sources));
        out.push('\n');
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
