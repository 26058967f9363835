//! pest errors → the project's [`Diagnostic`] (`E0001`).
//!
//! pest reports the rules it tried at the furthest position it reached. Each grammar rule that can
//! be "expected" has a readable name here (`rparen` → "`)`"); the many rules an expression can
//! start with are summarised as "an expression", and the primary span covers the offending token
//! (a word, a number, one punctuation character, or the end of the file).

use crate::parser::Rule;
use pest::error::{Error, ErrorVariant, InputLocation};
use tfn_ir::{Diagnostic, FileId, Span};

/// Converts a pest error for the file `file` with source `text` into a diagnostic.
pub fn syntax_error(file: FileId, text: &str, error: Error<Rule>) -> Diagnostic {
    let pos = match error.location {
        InputLocation::Pos(p) => p,
        InputLocation::Span((s, _)) => s,
    };
    let message = match &error.variant {
        ErrorVariant::ParsingError { positives, .. } => expected_message(positives),
        ErrorVariant::CustomError { message } => message.clone(),
    };
    // A binary operator continues its expression onto the next lines (the grammar's `expr`),
    // so a missing operand is found lines later; point at the end of the operator's line.
    let pos = if message.starts_with("expected an expression") {
        missing_operand_line_end(text, pos)
    } else {
        pos
    };
    let rest = text.get(pos..).unwrap_or("");
    let (len, found) = offending_token(rest);
    let word = rest.get(..len).unwrap_or("");
    // A reserved word where a name could go; where an expression could, a literal word
    // (`true`, `f32`) would have been fine, so it is not the problem.
    let misused = if message.contains(EXPRESSION) {
        RESERVED.contains(&word) && !LITERAL_WORDS.contains(&word)
    } else {
        message.contains("an identifier") && RESERVED.contains(&word)
    };
    if message.contains("a string") && word == "\"" {
        if let Some(line) = unclosed_string_line(&rest[1..]) {
            return Diagnostic::error("E0001", "unterminated string")
                .at(Span::new(file, pos, pos + 1 + line), "no closing `\"` on this line")
                .with_help("a string ends on the line it starts on");
        }
    }
    let d = Diagnostic::error("E0001", message).at(Span::new(file, pos, pos + len), found);
    if misused {
        return d.with_help(format!("`{word}` is a reserved word; choose another name"));
    }
    d
}

/// For the text after a string's opening quote: the length of the rest of its line when no
/// closing quote is on it.
fn unclosed_string_line(after: &str) -> Option<usize> {
    let line = after.find(['\n', '\r']).unwrap_or(after.len());
    (!after[..line].contains('"')).then_some(line)
}

/// The grammar's reserved words (`keyword` in `grammar/tfn.pest`).
const RESERVED: &[&str] = &[
    "op", "extern", "fn", "let", "if", "else", "return", "rewrite", "use", "for", "while", "true",
    "false", "f32", "f64", "i32", "i64", "bool", "f16", "bf16", "i8", "u8", "inf", "nan",
];
/// Reserved words that are themselves expressions (literals).
const LITERAL_WORDS: &[&str] =
    &["true", "false", "f32", "f64", "i32", "i64", "bool", "f16", "bf16", "i8", "u8", "inf", "nan"];

/// "expected `)` or `,`" from the rules pest tried.
fn expected_message(positives: &[Rule]) -> String {
    let mut names: Vec<&'static str> = Vec::new();
    let mut expression = false;
    for rule in positives {
        match describe(*rule) {
            Some(name) if name == EXPRESSION => expression = true,
            Some(name) if !names.contains(&name) => names.push(name),
            Some(_) => {}
            None => {}
        }
    }
    if names.contains(&OPERATOR) {
        // After a complete operand, `[` (indexing) goes with "an operator": it would only
        // lengthen every "expected `)` or an operator".
        names.retain(|n| *n != "`[`");
    }
    if expression {
        // Tokens an expression can start with are implied by "an expression".
        names.retain(|n| !matches!(*n, "`(`" | "`[`" | "an identifier" | "a dtype"));
        names.insert(0, EXPRESSION);
    }
    match names.len() {
        0 => "syntax error".to_string(),
        1 => format!("expected {}", names[0]),
        n => format!("expected {} or {}", names[..n - 1].join(", "), names[n - 1]),
    }
}

const EXPRESSION: &str = "an expression";
const OPERATOR: &str = "an operator";

/// The readable name of a rule in "expected ..." messages; `None` hides it.
fn describe(rule: Rule) -> Option<&'static str> {
    use Rule::*;
    Some(match rule {
        newline => "newline",
        semi => "`;`",
        lparen => "`(`",
        rparen => "`)`",
        lbracket => "`[`",
        rbracket => "`]`",
        lbrace => "`{`",
        rbrace => "`}`",
        langle => "`<`",
        rangle => "`>`",
        comma => "`,`",
        colon => "`:`",
        arrow => "`->`",
        fat_arrow => "`=>`",
        assign => "`=`",
        star => "`*`",
        dot => "`.`",
        ident | name | overload | fn_name => "an identifier",
        rule_name => "a rule name",
        kw_op => "`op`",
        kw_extern => "`extern`",
        kw_fn => "`fn`",
        kw_let => "`let`",
        kw_if => "`if`",
        kw_else => "`else`",
        kw_return => "`return`",
        kw_rewrite => "`rewrite`",
        kw_use => "`use`",
        kw_for => "`for`",
        kw_while => "`while`",
        kw_var => "`var`",
        kw_in => "`in`",
        at_most => "`, at most N`",
        checkpoint => "`, checkpoint`",
        range_dots => "`..`",
        assign_target | assign_stmt => "an assignment",
        kw_grad => "`grad`",
        kw_shape => "`shape`",
        kw_dtype => "`dtype`",
        kw_broadcast => "`broadcast`",
        string => "a string",
        dtype_name => "a dtype",
        ty => "a type",
        param => "a parameter",
        formula => "a gradient formula",
        expr | neg | int | float | bool_lit | list | paren | call | pat_var => EXPRESSION,
        pow | mul | div | rem | add | sub | eq | ne | le | ge | lt | gt => OPERATOR,
        EOI => "end of file",
        _ => return None,
    })
}

/// If only blank lines separate `pos` from the last code before it, the end of that code's
/// line; else `pos`.
fn missing_operand_line_end(text: &str, pos: usize) -> usize {
    let before = text.get(..pos).unwrap_or("");
    let code_end = before.trim_end_matches([' ', '\t', '\r', '\n']).len();
    match before.get(code_end..).and_then(|gap| gap.find(['\n', '\r'])) {
        Some(newline) => code_end + newline,
        None => pos,
    }
}

/// Length in bytes of the token at the start of `rest`, and a label naming it.
fn offending_token(rest: &str) -> (usize, String) {
    let mut chars = rest.char_indices();
    let Some((_, first)) = chars.next() else { return (0, "unexpected end of file".into()) };
    if first == '\n' || first == '\r' {
        return (1, "unexpected end of line".into());
    }
    let len = if first.is_ascii_alphanumeric() || first == '_' {
        rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
            .unwrap_or(rest.len())
    } else {
        first.len_utf8()
    };
    let token = rest.get(..len).unwrap_or("");
    (len, format!("unexpected `{token}`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_expected_tokens() {
        assert_eq!(expected_message(&[Rule::rparen, Rule::comma]), "expected `)` or `,`");
        assert_eq!(
            expected_message(&[Rule::int, Rule::float, Rule::rbracket]),
            "expected an expression or `]`"
        );
        assert_eq!(expected_message(&[]), "syntax error");
    }

    #[test]
    fn a_missing_operand_is_reported_at_the_end_of_its_line() {
        let text = "    return x %\n\n}\n";
        let pos = text.find('}').unwrap();
        assert_eq!(missing_operand_line_end(text, pos), text.find('\n').unwrap());
        assert_eq!(missing_operand_line_end("x % )", 4), 4);
    }

    #[test]
    fn an_unterminated_string_is_named() {
        let file = FileId(0);
        for text in ["use \"abc\nfn f() {}\n", "use \"abc", "use \"abc\r\n"] {
            let d = crate::parser::parse_file(file, text).expect_err(text).remove(0);
            assert_eq!(d.message, "unterminated string", "{text:?}");
            let span = d.primary.expect("a span").span;
            assert_eq!((span.start, span.end), (4, 8), "{text:?}: the string to the line's end");
        }
    }
}
