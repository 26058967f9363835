//! The lexer of the IR text format: identifiers (which may contain `.`), non-negative integer
//! and float literals (signs are separate tokens; a `.` is part of a number only before a
//! digit), quoted strings with Rust escapes, `%N` values and punctuation. `//` comments and all
//! whitespace are skipped.

use super::parse::ParseError;

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Tok {
    Ident(String),
    /// A non-negative integer literal (signs are separate tokens).
    Int(u64),
    /// A non-negative float literal with `.` or an exponent.
    Float(f64),
    Str(String),
    /// `%N`.
    Value(u32),
    Punct(&'static str),
    Eof,
}

impl Tok {
    pub(super) fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Int(i) => format!("`{i}`"),
            Tok::Float(f) => format!("`{f}`"),
            Tok::Str(s) => format!("string {s:?}"),
            Tok::Value(v) => format!("`%{v}`"),
            Tok::Punct(p) => format!("`{p}`"),
            Tok::Eof => "end of input".into(),
        }
    }
}

pub(super) struct Token {
    pub(super) tok: Tok,
    pub(super) line: usize,
    pub(super) col: usize,
}

const PUNCTS: [&str; 16] =
    ["->", "..", "==", "(", ")", "[", "]", "{", "}", ",", ":", "=", "+", "-", "*", "/"];

struct Lexer<'a> {
    chars: std::iter::Peekable<std::str::CharIndices<'a>>,
    src: &'a str,
    line: usize,
    col: usize,
}

impl Lexer<'_> {
    fn peek(&mut self) -> Option<char> {
        self.chars.peek().map(|&(_, c)| c)
    }

    fn bump(&mut self) -> Option<char> {
        let (_, c) = self.chars.next()?;
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }

    fn offset(&mut self) -> usize {
        self.chars.peek().map_or(self.src.len(), |&(i, _)| i)
    }

    fn take_while(&mut self, f: impl Fn(char) -> bool) -> &str {
        let start = self.offset();
        while self.peek().is_some_and(&f) {
            self.bump();
        }
        let end = self.offset();
        &self.src[start..end]
    }
}

pub(super) fn lex(src: &str) -> Result<Vec<Token>, ParseError> {
    let mut lx = Lexer { chars: src.char_indices().peekable(), src, line: 1, col: 1 };
    let mut tokens = Vec::new();
    while let Some(c) = lx.peek() {
        let (line, col) = (lx.line, lx.col);
        let err = |message: String| ParseError { line, col, message };
        if c.is_whitespace() {
            lx.bump();
            continue;
        }
        if src[lx.offset()..].starts_with("//") {
            lx.take_while(|c| c != '\n');
            continue;
        }
        let tok = if c.is_ascii_alphabetic() || c == '_' {
            Tok::Ident(
                lx.take_while(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.').to_string(),
            )
        } else if c.is_ascii_digit() {
            lex_number(&mut lx).map_err(err)?
        } else if c == '%' {
            lx.bump();
            let digits = lx.take_while(|c| c.is_ascii_digit());
            Tok::Value(digits.parse().map_err(|_| err("expected a value number after `%`".into()))?)
        } else if c == '"' {
            Tok::Str(lex_string(&mut lx).map_err(err)?)
        } else if let Some(p) = PUNCTS.iter().find(|p| src[lx.offset()..].starts_with(**p)) {
            for _ in 0..p.len() {
                lx.bump();
            }
            Tok::Punct(p)
        } else {
            return Err(err(format!("unexpected character {c:?}")));
        };
        tokens.push(Token { tok, line, col });
    }
    tokens.push(Token { tok: Tok::Eof, line: lx.line, col: lx.col });
    Ok(tokens)
}

fn lex_number(lx: &mut Lexer<'_>) -> Result<Tok, String> {
    let start = lx.offset();
    if lx.src[start..].starts_with("0x") {
        lx.bump();
        lx.bump();
        let digits = lx.take_while(|c| c.is_ascii_hexdigit());
        return u64::from_str_radix(digits, 16)
            .map(Tok::Int)
            .map_err(|_| "invalid hexadecimal integer".to_string());
    }
    lx.take_while(|c| c.is_ascii_digit());
    let mut is_float = false;
    // A `.` belongs to the number only when a digit follows (`0:1..2` is a range).
    let rest = &lx.src[lx.offset()..];
    if rest.starts_with('.') && rest[1..].starts_with(|c: char| c.is_ascii_digit()) {
        is_float = true;
        lx.bump();
        lx.take_while(|c| c.is_ascii_digit());
    }
    if matches!(lx.peek(), Some('e' | 'E')) {
        is_float = true;
        lx.bump();
        if matches!(lx.peek(), Some('+' | '-')) {
            lx.bump();
        }
        if lx.take_while(|c| c.is_ascii_digit()).is_empty() {
            return Err("expected digits in the exponent".into());
        }
    }
    let end = lx.offset();
    let text = &lx.src[start..end];
    if is_float {
        text.parse().map(Tok::Float).map_err(|_| format!("invalid float `{text}`"))
    } else {
        text.parse().map(Tok::Int).map_err(|_| format!("integer `{text}` is too large"))
    }
}

fn lex_string(lx: &mut Lexer<'_>) -> Result<String, String> {
    lx.bump();
    let mut out = String::new();
    loop {
        match lx.bump() {
            None => return Err("unterminated string".into()),
            Some('"') => return Ok(out),
            Some('\\') => match lx.bump() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some('0') => out.push('\0'),
                Some(c @ ('\\' | '"' | '\'')) => out.push(c),
                Some('u') => {
                    if lx.bump() != Some('{') {
                        return Err("expected `{` after `\\u`".into());
                    }
                    let hex = lx.take_while(|c| c.is_ascii_hexdigit()).to_string();
                    if lx.bump() != Some('}') {
                        return Err("expected `}` to end a `\\u{...}` escape".into());
                    }
                    let ch = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32);
                    out.push(ch.ok_or("invalid unicode escape")?);
                }
                _ => return Err("unknown escape in string".into()),
            },
            Some(c) => out.push(c),
        }
    }
}
