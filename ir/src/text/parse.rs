//! Parsing the IR text format (described in [`super`]) back into a [`Graph`].
//!
//! A hand-written lexer and recursive-descent parser. Every failure is a [`ParseError`] with the
//! 1-based line and column of the offending token; no input makes it panic.

use crate::attr::{Attr, Scalar};
use crate::dtype::DType;
use crate::graph::{Graph, GraphParam, Node, Origin, TensorType, ValueId};
use crate::op::{Op, ALL_BINARY, ALL_REDUCE, ALL_UNARY};
use crate::shape::{Dim, DimExpr, Shape, Sym, SymDef};
use crate::span::{FileId, Span};
use thiserror::Error;

/// A syntax error, or a reference to a value or symbol that does not exist.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{line}:{col}: {message}")]
pub struct ParseError {
    pub line: usize,
    pub col: usize,
    pub message: String,
}

/// Parses one graph in the IR text format.
pub fn parse_graph(s: &str) -> Result<Graph, ParseError> {
    let tokens = lex(s)?;
    let mut p = Parser { tokens, pos: 0, sym_uses: Vec::new() };
    p.graph()
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
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
    fn describe(&self) -> String {
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

struct Token {
    tok: Tok,
    line: usize,
    col: usize,
}

const PUNCTS: [&str; 15] =
    ["->", "..", "(", ")", "[", "]", "{", "}", ",", ":", "=", "+", "-", "*", "/"];

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

fn lex(src: &str) -> Result<Vec<Token>, ParseError> {
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

/// An attribute value before it is given its meaning by its key.
#[derive(Clone, Debug)]
enum AttrValue {
    Int(i64),
    Float(f64),
    Bool(bool),
    None,
    Ident(String),
    List(Vec<AttrValue>),
    EmptyFloatList,
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
    /// Symbols referenced so far, with where, checked against the table at the end.
    sym_uses: Vec<(u32, usize, usize)>,
}

type PResult<T> = Result<T, ParseError>;

impl Parser {
    fn peek(&self) -> &Tok {
        self.tokens.get(self.pos).map_or(&Tok::Eof, |t| &t.tok)
    }

    fn here(&self) -> (usize, usize) {
        self.tokens.get(self.pos).or(self.tokens.last()).map_or((1, 1), |t| (t.line, t.col))
    }

    fn error<T>(&self, message: impl Into<String>) -> PResult<T> {
        let (line, col) = self.here();
        Err(ParseError { line, col, message: message.into() })
    }

    fn unexpected<T>(&self, wanted: &str) -> PResult<T> {
        self.error(format!("expected {wanted}, found {}", self.peek().describe()))
    }

    fn next(&mut self) -> Tok {
        let tok = self.peek().clone();
        if self.pos < self.tokens.len() {
            self.pos += 1;
        }
        tok
    }

    fn eat_punct(&mut self, p: &str) -> bool {
        if matches!(self.peek(), Tok::Punct(q) if *q == p) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect_punct(&mut self, p: &str) -> PResult<()> {
        if self.eat_punct(p) {
            Ok(())
        } else {
            self.unexpected(&format!("`{p}`"))
        }
    }

    fn eat_keyword(&mut self, kw: &str) -> bool {
        if matches!(self.peek(), Tok::Ident(s) if s == kw) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect_keyword(&mut self, kw: &str) -> PResult<()> {
        if self.eat_keyword(kw) {
            Ok(())
        } else {
            self.unexpected(&format!("`{kw}`"))
        }
    }

    /// A comma-separated list up to (not including) the closing `close`.
    fn list<T>(
        &mut self,
        close: &str,
        mut item: impl FnMut(&mut Self) -> PResult<T>,
    ) -> PResult<Vec<T>> {
        let mut items = Vec::new();
        if self.eat_punct(close) {
            return Ok(items);
        }
        loop {
            items.push(item(self)?);
            if self.eat_punct(close) {
                return Ok(items);
            }
            self.expect_punct(",")?;
        }
    }

    fn name(&mut self) -> PResult<String> {
        match self.peek().clone() {
            Tok::Ident(s) | Tok::Str(s) => {
                self.pos += 1;
                Ok(s)
            }
            _ => self.unexpected("a name"),
        }
    }

    fn u32(&mut self) -> PResult<u32> {
        match *self.peek() {
            Tok::Int(i) => match u32::try_from(i) {
                Ok(v) => {
                    self.pos += 1;
                    Ok(v)
                }
                Err(_) => self.error(format!("`{i}` is too large")),
            },
            _ => self.unexpected("an integer"),
        }
    }

    /// A signed integer: optional `-`, then digits.
    fn i64(&mut self) -> PResult<i64> {
        let negative = self.eat_punct("-");
        match *self.peek() {
            Tok::Int(i) => {
                let v = if negative { -(i as i128) } else { i as i128 };
                match i64::try_from(v) {
                    Ok(v) => {
                        self.pos += 1;
                        Ok(v)
                    }
                    Err(_) => self.error(format!("`{v}` does not fit in 64 bits")),
                }
            }
            _ => self.unexpected("an integer"),
        }
    }

    fn dtype(&mut self) -> PResult<DType> {
        if let Tok::Ident(s) = self.peek() {
            if let Ok(d) = s.parse::<DType>() {
                self.pos += 1;
                return Ok(d);
            }
        }
        self.unexpected("a dtype (bool, i32, i64, f32, f64)")
    }

    fn sym(&mut self) -> PResult<Sym> {
        let (line, col) = self.here();
        if let Tok::Ident(s) = self.peek() {
            if let Some(n) = s.strip_prefix('s').and_then(|d| d.parse::<u32>().ok()) {
                if s[1..].chars().all(|c| c.is_ascii_digit()) {
                    self.pos += 1;
                    self.sym_uses.push((n, line, col));
                    return Ok(Sym(n));
                }
            }
        }
        self.unexpected("a size symbol like `s0`")
    }

    fn dim(&mut self) -> PResult<Dim> {
        match *self.peek() {
            Tok::Int(i) => {
                self.pos += 1;
                Ok(Dim::Const(i))
            }
            _ => Ok(Dim::Sym(self.sym()?)),
        }
    }

    fn tensor_type(&mut self) -> PResult<TensorType> {
        let dtype = self.dtype()?;
        self.expect_punct("[")?;
        let dims = self.list("]", Self::dim)?;
        Ok(TensorType { dtype, shape: Shape(dims) })
    }

    fn graph(&mut self) -> PResult<Graph> {
        self.expect_keyword("func")?;
        let name = self.name()?;
        self.expect_punct("(")?;
        let params = self.list(")", |p| {
            let name = p.name()?;
            p.expect_punct(":")?;
            Ok(GraphParam { name, ty: p.tensor_type()? })
        })?;
        self.expect_punct("->")?;
        self.expect_punct("(")?;
        let results_at = self.here();
        let results = self.list(")", Self::tensor_type)?;
        self.expect_punct("{")?;

        let mut syms = Vec::new();
        while self.eat_keyword("sym") {
            let sym = self.sym()?;
            self.sym_uses.pop();
            if sym.0 as usize != syms.len() {
                self.pos -= 1;
                return self
                    .error(format!("expected `s{}` (symbols are numbered in order)", syms.len()));
            }
            self.expect_punct("=")?;
            syms.push(self.sym_def()?);
        }

        let mut nodes = Vec::new();
        while let Tok::Value(v) = *self.peek() {
            if v as usize != nodes.len() {
                return self
                    .error(format!("expected `%{}` (values are numbered in order)", nodes.len()));
            }
            self.pos += 1;
            self.expect_punct("=")?;
            nodes.push(self.node(nodes.len())?);
        }

        self.expect_keyword("return")?;
        let mut outputs = Vec::new();
        while let Tok::Value(v) = *self.peek() {
            if v as usize >= nodes.len() {
                return self.error(format!("`%{v}` is not defined"));
            }
            self.pos += 1;
            outputs.push(ValueId(v));
            if !self.eat_punct(",") {
                break;
            }
        }
        self.expect_punct("}")?;
        if *self.peek() != Tok::Eof {
            return self.unexpected("end of input after the function");
        }

        let declared: Vec<&TensorType> =
            outputs.iter().map(|v: &ValueId| &nodes[v.index()].ty).collect();
        if results.iter().collect::<Vec<_>>() != declared {
            let (line, col) = results_at;
            return Err(ParseError {
                line,
                col,
                message: "the result types do not match the types of the returned values".into(),
            });
        }
        if let Some(&(s, line, col)) =
            self.sym_uses.iter().find(|(s, ..)| *s as usize >= syms.len())
        {
            return Err(ParseError { line, col, message: format!("`s{s}` is not defined") });
        }
        Ok(Graph { name, params, nodes, outputs, syms })
    }

    fn sym_def(&mut self) -> PResult<SymDef> {
        if self.eat_keyword("input") {
            self.expect_punct("(")?;
            let sources = self.list(")", |p| {
                p.expect_keyword("param")?;
                let param = p.u32()?;
                p.expect_keyword("axis")?;
                Ok((param, p.u32()?))
            })?;
            return Ok(SymDef::Input { sources });
        }
        Ok(SymDef::Derived(self.dim_expr(0)?))
    }

    fn dim_expr(&mut self, depth: usize) -> PResult<DimExpr> {
        if depth > 200 {
            return self.error("size expression nested too deeply");
        }
        if self.eat_punct("(") {
            let a = self.dim_expr(depth + 1)?;
            let op = match self.next() {
                Tok::Punct(op @ ("+" | "-" | "*" | "/")) => op,
                _ => {
                    self.pos -= 1;
                    return self.unexpected("`+`, `-`, `*` or `/`");
                }
            };
            let b = self.dim_expr(depth + 1)?;
            self.expect_punct(")")?;
            let (a, b) = (Box::new(a), Box::new(b));
            return Ok(match op {
                "+" => DimExpr::Add(a, b),
                "-" => DimExpr::Sub(a, b),
                "*" => DimExpr::Mul(a, b),
                _ => DimExpr::Div(a, b),
            });
        }
        if self.eat_keyword("slice_len") {
            self.expect_punct("(")?;
            let size = Box::new(self.dim_expr(depth + 1)?);
            self.expect_punct(",")?;
            let start = self.i64()?;
            self.expect_punct(",")?;
            let end = if self.eat_keyword("none") { None } else { Some(self.i64()?) };
            self.expect_punct(",")?;
            let step = self.i64()?;
            self.expect_punct(")")?;
            return Ok(DimExpr::SliceLen { size, start, end, step });
        }
        Ok(DimExpr::Dim(self.dim()?))
    }

    fn operands(&mut self, index: usize) -> PResult<Vec<ValueId>> {
        let mut out = Vec::new();
        while let Tok::Value(v) = *self.peek() {
            if v as usize >= index {
                return self.error(format!("`%{v}` is used before it is defined"));
            }
            self.pos += 1;
            out.push(ValueId(v));
            if !self.eat_punct(",") {
                break;
            }
        }
        Ok(out)
    }

    fn node(&mut self, index: usize) -> PResult<Node> {
        let op_at = self.pos;
        let Tok::Ident(mut op_name) = self.next() else {
            self.pos = op_at;
            return self.unexpected("an op name");
        };
        if op_name == "extern." {
            // `extern."quoted name"` lexes as the identifier `extern.` then a string.
            match self.next() {
                Tok::Str(ext) => op_name.push_str(&ext),
                _ => {
                    self.pos -= 1;
                    return self.unexpected("an extern op name");
                }
            }
        }
        let (op, inputs) = match op_name.as_str() {
            "param" => {
                let op = Op::Param(self.u32()?);
                let inputs = if self.eat_punct(",") { self.operands(index)? } else { Vec::new() };
                (op, inputs)
            }
            "const" => {
                let op = Op::Const(self.scalar()?);
                let inputs = if self.eat_punct(",") { self.operands(index)? } else { Vec::new() };
                (op, inputs)
            }
            _ => {
                let inputs = self.operands(index)?;
                let attrs = if self.eat_punct("{") { self.attr_block()? } else { Vec::new() };
                let mut attrs = Attrs { parser: self, items: attrs };
                let op = attrs.op(&op_name, op_at)?;
                attrs.finish()?;
                (op, inputs)
            }
        };
        self.expect_punct(":")?;
        let ty = self.tensor_type()?;
        let origin = if self.eat_keyword("loc") { self.origin()? } else { Origin::default() };
        Ok(Node { op, inputs, ty, origin })
    }

    fn origin(&mut self) -> PResult<Origin> {
        self.expect_punct("(")?;
        let mut origin = Origin::default();
        if let Tok::Int(_) = self.peek() {
            let file = self.u32()?;
            self.expect_punct(":")?;
            let start = self.u32()?;
            self.expect_punct("..")?;
            let end = self.u32()?;
            origin.span = Some(Span { file: FileId(file), start, end });
        }
        if self.eat_keyword("via") {
            loop {
                match self.next() {
                    Tok::Str(s) => origin.inlined_from.push(s),
                    _ => {
                        self.pos -= 1;
                        return self.unexpected("a quoted function name");
                    }
                }
                if !self.eat_punct(",") {
                    break;
                }
            }
        }
        self.expect_punct(")")?;
        Ok(origin)
    }

    /// `key=value, ...}` (after the `{`), each with the position of its key.
    fn attr_block(&mut self) -> PResult<Vec<(String, AttrValue, usize)>> {
        self.list("}", |p| {
            let at = p.pos;
            let Tok::Ident(key) = p.next() else {
                p.pos = at;
                return p.unexpected("an attribute name");
            };
            p.expect_punct("=")?;
            Ok((key, p.attr_value(0)?, at))
        })
    }

    fn attr_value(&mut self, depth: usize) -> PResult<AttrValue> {
        if depth > 32 {
            return self.error("attribute nested too deeply");
        }
        if self.eat_punct("[") {
            return Ok(AttrValue::List(self.list("]", |p| p.attr_value(depth + 1))?));
        }
        if let Tok::Ident(s) = self.peek().clone() {
            if !matches!(s.as_str(), "nan" | "inf") {
                self.pos += 1;
                return Ok(match s.as_str() {
                    "true" => AttrValue::Bool(true),
                    "false" => AttrValue::Bool(false),
                    "none" => AttrValue::None,
                    "float" => {
                        self.expect_punct("[")?;
                        self.expect_punct("]")?;
                        AttrValue::EmptyFloatList
                    }
                    _ => AttrValue::Ident(s),
                });
            }
        }
        Ok(match self.scalar()? {
            Scalar::Int(i) => AttrValue::Int(i),
            Scalar::Float(f) => AttrValue::Float(f),
            Scalar::Bool(b) => AttrValue::Bool(b),
        })
    }

    /// `true`, `false`, an integer, or a float (`1.5`, `-inf`, `nan`, `nan(0x...)`).
    fn scalar(&mut self) -> PResult<Scalar> {
        if self.eat_keyword("true") {
            return Ok(Scalar::Bool(true));
        }
        if self.eat_keyword("false") {
            return Ok(Scalar::Bool(false));
        }
        let negative = self.eat_punct("-");
        let sign = if negative { -1.0 } else { 1.0 };
        match self.peek().clone() {
            Tok::Int(_) => {
                if negative {
                    self.pos -= 1;
                }
                Ok(Scalar::Int(self.i64()?))
            }
            Tok::Float(f) => {
                self.pos += 1;
                Ok(Scalar::Float(sign * f))
            }
            Tok::Ident(s) if s == "inf" => {
                self.pos += 1;
                Ok(Scalar::Float(sign * f64::INFINITY))
            }
            Tok::Ident(s) if s == "nan" && !negative => {
                self.pos += 1;
                if self.eat_punct("(") {
                    let Tok::Int(bits) = self.next() else {
                        self.pos -= 1;
                        return self.unexpected("the bits of a NaN, like `0x7ff8000000000001`");
                    };
                    self.expect_punct(")")?;
                    let f = f64::from_bits(bits);
                    if !f.is_nan() {
                        return self.error(format!("`0x{bits:016x}` is not a NaN"));
                    }
                    return Ok(Scalar::Float(f));
                }
                Ok(Scalar::Float(f64::NAN))
            }
            _ => self.unexpected("a number or `true`/`false`"),
        }
    }
}

/// The attributes of one node, consumed by key as the op is built.
struct Attrs<'p> {
    parser: &'p mut Parser,
    items: Vec<(String, AttrValue, usize)>,
}

impl Attrs<'_> {
    fn error_at<T>(&mut self, pos: usize, message: String) -> PResult<T> {
        self.parser.pos = pos;
        self.parser.error(message)
    }

    fn take(&mut self, key: &str, op_at: usize) -> PResult<(AttrValue, usize)> {
        match self.items.iter().position(|(k, ..)| k == key) {
            Some(i) => {
                let (_, v, at) = self.items.remove(i);
                Ok((v, at))
            }
            None => self.error_at(op_at, format!("missing attribute `{key}`")),
        }
    }

    fn finish(mut self) -> PResult<()> {
        match self.items.first() {
            Some((key, _, at)) => {
                let (key, at) = (key.clone(), *at);
                self.error_at(at, format!("unknown attribute `{key}`"))
            }
            None => Ok(()),
        }
    }

    fn int(&mut self, key: &str, op_at: usize) -> PResult<i64> {
        match self.take(key, op_at)? {
            (AttrValue::Int(i), _) => Ok(i),
            (_, at) => self.error_at(at, format!("`{key}` must be an integer")),
        }
    }

    fn u32(&mut self, key: &str, op_at: usize) -> PResult<u32> {
        let (v, at) = self.take(key, op_at)?;
        match v {
            AttrValue::Int(i) => match u32::try_from(i) {
                Ok(v) => Ok(v),
                Err(_) => self.error_at(at, format!("`{key}` must be a non-negative integer")),
            },
            _ => self.error_at(at, format!("`{key}` must be a non-negative integer")),
        }
    }

    fn bool(&mut self, key: &str, op_at: usize) -> PResult<bool> {
        match self.take(key, op_at)? {
            (AttrValue::Bool(b), _) => Ok(b),
            (_, at) => self.error_at(at, format!("`{key}` must be `true` or `false`")),
        }
    }

    fn u32_list(&mut self, key: &str, op_at: usize) -> PResult<Vec<u32>> {
        let (v, at) = self.take(key, op_at)?;
        let items = match v {
            AttrValue::List(items) => items,
            _ => return self.error_at(at, format!("`{key}` must be a list of integers")),
        };
        let mut out = Vec::new();
        for item in items {
            match item {
                AttrValue::Int(i) if u32::try_from(i).is_ok() => out.push(i as u32),
                _ => {
                    return self
                        .error_at(at, format!("`{key}` must be a list of non-negative integers"))
                }
            }
        }
        Ok(out)
    }

    fn scalar(&mut self, key: &str, op_at: usize) -> PResult<Scalar> {
        match self.take(key, op_at)? {
            (AttrValue::Int(i), _) => Ok(Scalar::Int(i)),
            (AttrValue::Float(f), _) => Ok(Scalar::Float(f)),
            (AttrValue::Bool(b), _) => Ok(Scalar::Bool(b)),
            (_, at) => self.error_at(at, format!("`{key}` must be a number or a bool")),
        }
    }

    fn op(&mut self, name: &str, op_at: usize) -> PResult<Op> {
        if let Some(&u) = ALL_UNARY.iter().find(|u| u.to_string() == name) {
            return Ok(Op::Unary(u));
        }
        if let Some(&b) = ALL_BINARY.iter().find(|b| b.to_string() == name) {
            return Ok(Op::Binary(b));
        }
        if let Some(&r) = ALL_REDUCE.iter().find(|r| crate::op::reduce_name(**r) == name) {
            let axes = self.u32_list("axes", op_at)?;
            return Ok(Op::Reduce { op: r, axes, keepdim: self.bool("keepdim", op_at)? });
        }
        Ok(match name {
            "where" => Op::Where,
            "matmul" => Op::MatMul,
            "reshape" => Op::Reshape,
            "broadcast_to" => Op::BroadcastTo,
            "cast" => match self.take("to", op_at)? {
                (AttrValue::Ident(d), at) => match d.parse::<DType>() {
                    Ok(d) => Op::Cast(d),
                    Err(()) => return self.error_at(at, format!("unknown dtype `{d}`")),
                },
                (_, at) => return self.error_at(at, "`to` must be a dtype".into()),
            },
            "argmax" => {
                let axis = self.u32("axis", op_at)?;
                Op::ArgMax { axis, keepdim: self.bool("keepdim", op_at)? }
            }
            "transpose" => Op::Transpose { perm: self.u32_list("perm", op_at)? },
            "concat" => Op::Concat { axis: self.u32("axis", op_at)? },
            "slice" => {
                let axis = self.u32("axis", op_at)?;
                let start = self.int("start", op_at)?;
                let end = match self.take("end", op_at)? {
                    (AttrValue::None, _) => None,
                    (AttrValue::Int(i), _) => Some(i),
                    (_, at) => {
                        return self.error_at(at, "`end` must be an integer or `none`".into())
                    }
                };
                Op::Slice { axis, start, end, step: self.int("step", op_at)? }
            }
            "full" => Op::Full { value: self.scalar("value", op_at)? },
            _ => match name.strip_prefix("extern.") {
                Some(ext) => {
                    let name = ext.to_string();
                    Op::Extern { name, attrs: self.extern_attrs(op_at)? }
                }
                None => return self.error_at(op_at, format!("unknown op `{name}`")),
            },
        })
    }

    fn extern_attrs(&mut self, op_at: usize) -> PResult<Vec<Attr>> {
        let (v, at) = self.take("attrs", op_at)?;
        let AttrValue::List(items) = v else {
            return self.error_at(at, "`attrs` must be a list".into());
        };
        let mut out = Vec::new();
        for item in items {
            let attr = match item {
                AttrValue::Int(i) => Attr::Int(i),
                AttrValue::Float(f) => Attr::Float(f),
                AttrValue::Bool(b) => Attr::Bool(b),
                AttrValue::Ident(d) => match d.parse::<DType>() {
                    Ok(d) => Attr::DType(d),
                    Err(()) => return self.error_at(at, format!("unknown dtype `{d}`")),
                },
                AttrValue::EmptyFloatList => Attr::FloatList(Vec::new()),
                AttrValue::List(list) => {
                    let ints: Option<Vec<i64>> = list
                        .iter()
                        .map(|v| if let AttrValue::Int(i) = v { Some(*i) } else { None })
                        .collect();
                    let floats: Option<Vec<f64>> = list
                        .iter()
                        .map(|v| if let AttrValue::Float(f) = v { Some(*f) } else { None })
                        .collect();
                    match (ints, floats) {
                        (Some(ints), _) => Attr::IntList(ints),
                        (None, Some(floats)) => Attr::FloatList(floats),
                        _ => {
                            return self.error_at(
                                at,
                                "a list attribute holds only integers or only floats".into(),
                            )
                        }
                    }
                }
                AttrValue::None => {
                    return self.error_at(at, "`none` is not an attribute value".into())
                }
            };
            out.push(attr);
        }
        Ok(out)
    }
}
