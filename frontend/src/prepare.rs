//! Source preparation before the grammar runs: line endings (a bare `\r` is a newline),
//! newlines inside brackets, and nesting limits.
//!
//! Statements end at a newline, except inside `(...)` and `[...]`. Rather than duplicating the
//! whole expression grammar in a newline-insensitive variant, [`prepare`] replaces every newline
//! that sits inside parentheses or brackets (outside comments and strings) with a space. Byte
//! offsets are unchanged, so spans still point into the original text.
//!
//! The same scan enforces two limits that keep every later recursive walk (pest, the Pratt
//! parser, the checker, the printer) far from the stack's end on adversarial input: bracket and
//! brace nesting of at most [`MAX_NESTING`], and at most [`MAX_OPERATORS`] operator characters in
//! one statement. Real programs are nowhere near either.

use tfn_ir::{Diagnostic, FileId, Span};

/// Deepest allowed nesting of `(`, `[` and `{`.
pub const MAX_NESTING: usize = 64;
/// Most operator characters (`+ - * / % < > = !`, and `[`: indexing) allowed in one statement
/// (a statement continued over lines next to a binary operator counts as one).
pub const MAX_OPERATORS: usize = 512;

/// The characters counted as operators (and that continue a statement over a newline when
/// they end a line or begin the next).
fn is_operator(c: u8) -> bool {
    matches!(c, b'+' | b'-' | b'*' | b'/' | b'%' | b'<' | b'>' | b'=' | b'!')
}

/// The first character from `i` on that is not whitespace, a line break or inside a `//`
/// comment (`None` at the end of the text).
fn next_significant(bytes: &[u8], mut i: usize) -> Option<u8> {
    while i < bytes.len() {
        match bytes[i] {
            b' ' | b'\t' | b'\r' | b'\n' => i += 1,
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            c => return Some(c),
        }
    }
    None
}

/// The text for the grammar, and the bracket left open, if any: the first that a closing
/// bracket of another kind skipped over, else the innermost open at the end of the file
/// (a syntax error reported further down can point at it).
pub struct Prepared {
    pub text: String,
    pub unclosed: Option<usize>,
}

/// The text to hand to the grammar, or the limit that was exceeded.
pub fn prepare(file: FileId, text: &str) -> Result<Prepared, Box<Diagnostic>> {
    // A bare `\r` (classic Mac line endings) ends a line as `\n` and `\r\n` do, as
    // [`tfn_ir::SourceFile`] counts lines.
    let mut out = text.as_bytes().to_vec();
    for i in 0..out.len() {
        if out[i] == b'\r' && out.get(i + 1) != Some(&b'\n') {
            out[i] = b'\n';
        }
    }
    let unified = out.clone();
    let bytes = unified.as_slice();
    // Open brackets: `(`/`[` mask newlines, `{` does not.
    let mut stack: Vec<(u8, usize)> = Vec::new();
    // The first bracket a closing one of another kind skipped over.
    let mut mismatched: Option<usize> = None;
    let mut operators = 0usize;
    let mut statement_start = 0usize;
    // The last character seen outside comments and whitespace.
    let mut last = 0u8;
    let mut i = 0usize;
    while i < bytes.len() {
        let c = bytes[i];
        let next = bytes.get(i + 1).copied();
        match c {
            b'/' if next == Some(b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if next == Some(b'*') => {
                let open = i;
                i += 2;
                while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                if i >= bytes.len() {
                    return Err(Box::new(
                        Diagnostic::error("E0001", "unterminated block comment")
                            .at(Span::new(file, open, open + 2), "comment starts here")
                            .with_help("close it with `*/`"),
                    ));
                }
                i += 2;
                continue;
            }
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'(' | b'[' | b'{' => {
                stack.push((c, i));
                if stack.len() > MAX_NESTING {
                    return Err(Box::new(too_deep(file, i)));
                }
                // `[` also indexes (`x[0][1]...`, a chain the tree nests as deep as it is
                // long): it counts as an operator.
                if c == b'[' {
                    operators += 1;
                    if operators > MAX_OPERATORS {
                        return Err(Box::new(too_complex(file, statement_start, i)));
                    }
                }
                if c == b'{' {
                    operators = 0;
                    statement_start = i + 1;
                }
            }
            b')' | b']' | b'}' => {
                let opener = match c {
                    b')' => b'(',
                    b']' => b'[',
                    _ => b'{',
                };
                // A `}` that meets an open `(` closes the block around it: the `(` is the one
                // left open (`g(x` on a line, then the body's `}`).
                if let Some(k) = stack.iter().rposition(|&(o, _)| o == opener) {
                    if k + 1 < stack.len() && mismatched.is_none() {
                        mismatched = Some(stack[k + 1].1);
                    }
                    stack.truncate(k);
                }
                if c == b'}' {
                    operators = 0;
                    statement_start = i + 1;
                }
            }
            b'\n' => {
                if matches!(stack.last(), Some((b'(' | b'[', _))) {
                    out[i] = b' ';
                } else if !is_operator(last)
                    && !next_significant(bytes, i + 1).is_some_and(is_operator)
                {
                    // (A newline next to a binary operator continues the statement: its
                    // operators keep counting.)
                    operators = 0;
                    statement_start = i + 1;
                }
            }
            b';' => {
                operators = 0;
                statement_start = i + 1;
            }
            c if is_operator(c) => {
                operators += 1;
                if operators > MAX_OPERATORS {
                    return Err(Box::new(too_complex(file, statement_start, i)));
                }
            }
            _ => {}
        }
        if !matches!(c, b' ' | b'\t' | b'\r' | b'\n') {
            last = c;
        }
        i += 1;
    }
    // Only ASCII bytes were replaced by ASCII bytes, so this cannot fail; fall back to the
    // original text rather than panic if it somehow did.
    let text = String::from_utf8(out).unwrap_or_else(|_| text.to_string());
    Ok(Prepared { text, unclosed: mismatched.or(stack.last().map(|&(_, at)| at)) })
}

fn too_deep(file: FileId, at: usize) -> Diagnostic {
    Diagnostic::error("E0003", format!("brackets nested more than {MAX_NESTING} deep"))
        .at(Span::new(file, at, at + 1), "too deep")
        .with_help("split the expression with `let` bindings")
}

fn too_complex(file: FileId, start: usize, at: usize) -> Diagnostic {
    Diagnostic::error("E0003", format!("statement has more than {MAX_OPERATORS} operators"))
        .at(Span::new(file, start.min(at), at + 1), "too complex")
        .with_help("split the expression with `let` bindings")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_newlines_inside_brackets_only() {
        let src = "f(a,\n b)\n[1,\n 2] // (\n{\n}\n";
        let out = prepare(FileId(0), src).map(|p| p.text).unwrap_or_default();
        assert_eq!(out, "f(a,  b)\n[1,  2] // (\n{\n}\n");
    }

    #[test]
    fn a_bare_carriage_return_ends_a_line() {
        let src = "let a = x // c\rreturn (a,\r b)\r\n";
        let out = prepare(FileId(0), src).map(|p| p.text).unwrap_or_default();
        assert_eq!(out, "let a = x // c\nreturn (a,  b)\r\n");
        let open = prepare(FileId(0), "fn f() {\n    g(1\n").map(|p| p.unclosed);
        assert_eq!(open.ok().flatten(), Some(14));
    }

    #[test]
    fn limits_nesting() {
        let src = "(".repeat(MAX_NESTING + 1);
        assert!(prepare(FileId(0), &src).is_err());
        let src = "-".repeat(MAX_OPERATORS + 1);
        assert!(prepare(FileId(0), &src).is_err());
        let src = format!("x{}", "[0]".repeat(MAX_OPERATORS + 1));
        assert!(prepare(FileId(0), &src).is_err());
        let src = format!("return x{}", " % x".repeat(MAX_OPERATORS + 1));
        assert!(prepare(FileId(0), &src).is_err());
        // A statement continued over lines, the operator ending a line or beginning the next
        // (a comment between them), is one statement.
        for line in ["\n    + x", " +\n    x", "\n    // note\n    + x"] {
            let src = format!("return x{}\n", line.repeat(MAX_OPERATORS + 1));
            assert!(prepare(FileId(0), &src).is_err(), "{line:?}");
        }
        // Statements on lines of their own count apart.
        let src = "let a = x + x\n".repeat(MAX_OPERATORS);
        assert!(prepare(FileId(0), &src).is_ok());
        let src = format!("x{}", "[0]".repeat(MAX_OPERATORS));
        assert!(prepare(FileId(0), &src).is_ok());
    }
}
