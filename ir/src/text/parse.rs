//! Parsing the IR text format (described in [`super`]) back into a [`Graph`].
//!
//! A hand-written lexer and recursive-descent parser. Every failure is a [`ParseError`] with the
//! 1-based line and column of the offending token; no input makes it panic.

use super::attrs::Attrs;
use super::lex::{lex, Tok, Token};
use crate::attr::Scalar;
use crate::dtype::DType;
use crate::graph::{Graph, GraphParam, Node, Origin, TensorType, ValueId};
use crate::op::Op;
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

/// An attribute value before it is given its meaning by its key.
#[derive(Clone, Debug)]
pub(super) enum AttrValue {
    Int(i64),
    Float(f64),
    Bool(bool),
    None,
    Ident(String),
    List(Vec<AttrValue>),
    EmptyFloatList,
}

pub(super) struct Parser {
    tokens: Vec<Token>,
    pub(super) pos: usize,
    /// Symbols referenced so far, with where, checked against the table at the end.
    sym_uses: Vec<(u32, usize, usize)>,
}

pub(super) type PResult<T> = Result<T, ParseError>;

impl Parser {
    fn peek(&self) -> &Tok {
        self.tokens.get(self.pos).map_or(&Tok::Eof, |t| &t.tok)
    }

    fn here(&self) -> (usize, usize) {
        self.tokens.get(self.pos).or(self.tokens.last()).map_or((1, 1), |t| (t.line, t.col))
    }

    pub(super) fn error<T>(&self, message: impl Into<String>) -> PResult<T> {
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

        let mut checks = Vec::new();
        while self.eat_keyword("check") {
            let a = self.dim()?;
            self.expect_punct("==")?;
            checks.push((a, self.dim()?));
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
        Ok(Graph { name, params, nodes, outputs, syms, checks })
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
        if self.eat_keyword("ceil_div") {
            self.expect_punct("(")?;
            let a = Box::new(self.dim_expr(depth + 1)?);
            self.expect_punct(",")?;
            let b = Box::new(self.dim_expr(depth + 1)?);
            self.expect_punct(")")?;
            return Ok(DimExpr::CeilDiv(a, b));
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
        if self.eat_keyword("window") {
            self.expect_punct("(")?;
            let size = Box::new(self.dim_expr(depth + 1)?);
            self.expect_punct(",")?;
            let kernel = Box::new(self.dim_expr(depth + 1)?);
            let mut nums = [0u32; 3];
            for n in &mut nums {
                self.expect_punct(",")?;
                *n = self.u32()?;
            }
            self.expect_punct(",")?;
            let ceil = if self.eat_keyword("true") {
                true
            } else {
                self.expect_keyword("false")?;
                false
            };
            self.expect_punct(")")?;
            let [stride, padding, dilation] = nums;
            return Ok(DimExpr::Window { size, kernel, stride, padding, dilation, ceil });
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
