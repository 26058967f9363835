//! Test-only: a small reader for the `.tfn` subset the lowering tests need, so that test cases
//! are written as source text rather than hand-built templates. It reads the real prelude
//! (`frontend/prelude/core.tfn`) and infix operators desugar to the prelude's op names, as the
//! front end does. Not a parser for users: it panics on anything it does not understand.

use crate::attr::Attr;
use crate::dtype::DType;
use crate::library::*;
use crate::span::{FileId, Span};

pub const PRELUDE: &str = include_str!("../../../frontend/prelude/core.tfn");

/// The prelude plus `user` source, as one library.
pub fn library(user: &str) -> Library {
    let mut lib = Library::default();
    for (name, text) in [("<prelude>", PRELUDE), ("test.tfn", user)] {
        let file = lib.sources.add(name, text);
        let mut r = Reader { toks: lex(text), pos: 0, file };
        while r.peek() != "" {
            if let Some(f) = r.item() {
                lib.functions.entry(f.name.clone()).or_default().push(f);
            }
        }
    }
    lib
}

struct Reader {
    toks: Vec<(String, usize, usize)>,
    pos: usize,
    file: FileId,
}

fn lex(src: &str) -> Vec<(String, usize, usize)> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        let start = i;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if src[i..].starts_with("//") {
            i = src[i..].find('\n').map_or(b.len(), |n| i + n);
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' {
            while i < b.len() && ((b[i] as char).is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
        } else if c.is_ascii_digit() {
            while i < b.len()
                && ((b[i] as char).is_ascii_alphanumeric()
                    || b[i] == b'.'
                    || ((b[i] == b'-' || b[i] == b'+') && (b[i - 1] == b'e')))
            {
                i += 1;
            }
        } else {
            let two = src.get(i..i + 2).unwrap_or("");
            i += if ["->", "==", "!=", "<=", ">=", "**"].contains(&two) { 2 } else { 1 };
        }
        out.push((src[start..i].to_string(), start, i));
    }
    out
}

impl Reader {
    fn peek(&self) -> &str {
        self.toks.get(self.pos).map_or("", |t| t.0.as_str())
    }
    fn peek_at(&self, k: usize) -> &str {
        self.toks.get(self.pos + k).map_or("", |t| t.0.as_str())
    }
    fn next(&mut self) -> String {
        self.pos += 1;
        self.toks[self.pos - 1].0.clone()
    }
    fn eat(&mut self, t: &str) -> bool {
        let hit = self.peek() == t;
        if hit {
            self.pos += 1;
        }
        hit
    }
    fn expect(&mut self, t: &str) {
        assert!(self.eat(t), "expected `{t}`, found `{}` at token {}", self.peek(), self.pos);
    }
    fn start(&self) -> usize {
        self.toks.get(self.pos).map_or(0, |t| t.1)
    }
    fn span_from(&self, start: usize) -> Span {
        Span::new(self.file, start, self.toks[self.pos - 1].2)
    }

    fn item(&mut self) -> Option<FunctionDef> {
        let start = self.start();
        match self.next().as_str() {
            "op" => Some(self.signature(start, Body::Primitive)),
            "extern" => {
                self.expect("op");
                let mut f = self.signature(start, Body::Primitive);
                self.expect("shape");
                self.expect(":");
                let shape = if self.peek() == "[" {
                    self.next();
                    let mut dims = Vec::new();
                    while !self.eat("]") {
                        dims.push(self.expr());
                        self.eat(",");
                    }
                    ShapeRule::Dims(dims)
                } else if self.peek() == "broadcast" {
                    self.next();
                    self.expect("(");
                    let mut names = Vec::new();
                    while !self.eat(")") {
                        let s = self.start();
                        names.push((self.next(), self.span_from(s)));
                        self.eat(",");
                    }
                    ShapeRule::Broadcast(names)
                } else {
                    let s = self.start();
                    ShapeRule::SameAs(self.next(), self.span_from(s))
                };
                self.expect("dtype");
                self.expect(":");
                let s = self.start();
                let d = self.next();
                let dtype = match d.parse::<DType>() {
                    Ok(d) => DTypeRule::Fixed(d),
                    Err(()) => DTypeRule::SameAs(d, self.span_from(s)),
                };
                f.body = Body::Extern(ExternSpec { shape, dtype });
                Some(f)
            }
            "fn" => {
                let mut f = self.signature(start, Body::Primitive);
                f.body = Body::Composed(self.block());
                Some(f)
            }
            "grad" => {
                while self.next() != "{" {}
                let mut depth = 1;
                while depth > 0 {
                    match self.next().as_str() {
                        "{" => depth += 1,
                        "}" => depth -= 1,
                        _ => {}
                    }
                }
                None
            }
            other => panic!("unexpected item `{other}`"),
        }
    }

    fn signature(&mut self, start: usize, body: Body) -> FunctionDef {
        let ns = self.start();
        let name = self.next();
        let overload = self.eat(".").then(|| self.next());
        let name_span = self.span_from(ns);
        let mut type_params = Vec::new();
        if self.eat("<") {
            while !self.eat(">") {
                let s = self.start();
                let n = self.next();
                let allowed = self.eat(":").then(|| {
                    self.expect("{");
                    let mut v = Vec::new();
                    while !self.eat("}") {
                        v.push(self.next().parse().expect("dtype"));
                        self.eat(",");
                    }
                    v
                });
                type_params.push(TypeParam { name: n, allowed, span: self.span_from(s) });
                self.eat(",");
            }
        }
        self.expect("(");
        let mut params = Vec::new();
        let mut keyword_only = false;
        while !self.eat(")") {
            if self.eat("*") {
                keyword_only = true;
                self.eat(",");
                continue;
            }
            let s = self.start();
            let ty = self.ty();
            let pname = self.next();
            let default = self.eat("=").then(|| self.expr());
            params.push(ParamDef {
                name: pname,
                ty,
                default,
                keyword_only,
                span: self.span_from(s),
            });
            self.eat(",");
        }
        self.expect("->");
        let mut returns = Vec::new();
        if self.eat("(") {
            while !self.eat(")") {
                returns.push(self.ty());
                self.eat(",");
            }
        } else {
            returns.push(self.ty());
        }
        let span = self.span_from(start);
        FunctionDef { name, overload, type_params, params, returns, body, span, name_span }
    }

    fn ty(&mut self) -> ParamType {
        let base = self.next();
        let dtype = if self.eat("<") {
            let d = self.next();
            self.expect(">");
            match d.parse() {
                Ok(d) => DTypeRef::Fixed(d),
                Err(()) => DTypeRef::Var(d),
            }
        } else {
            DTypeRef::Any
        };
        let list = self.peek() == "[" && self.peek_at(1) == "]";
        if list {
            self.pos += 2;
        }
        match (base.as_str(), list) {
            ("Tensor", false) => ParamType::Tensor(dtype),
            ("Tensor", true) => ParamType::TensorList(dtype),
            ("Scalar", _) => ParamType::Scalar,
            ("Int", false) => ParamType::Int,
            ("Int", true) => ParamType::IntList,
            ("Float", false) => ParamType::Float,
            ("Float", true) => ParamType::FloatList,
            ("Bool", _) => ParamType::Bool,
            ("DType", _) => ParamType::DType,
            (other, _) => panic!("unknown type `{other}`"),
        }
    }

    fn block(&mut self) -> Block {
        self.expect("{");
        let mut stmts = Vec::new();
        while !self.eat("}") {
            let s = self.start();
            match self.peek() {
                "let" => {
                    self.next();
                    let mut names = Vec::new();
                    let tuple = self.eat("(");
                    loop {
                        let b = self.start();
                        names.push(Binding { name: self.next(), span: self.span_from(b) });
                        if !tuple || !self.eat(",") {
                            break;
                        }
                    }
                    if tuple {
                        self.expect(")");
                    }
                    self.expect("=");
                    let value = self.expr();
                    stmts.push(Stmt::Let { names, value, span: self.span_from(s) });
                }
                "if" => {
                    self.next();
                    let cond = self.expr();
                    let then_block = self.block();
                    let else_block = self.eat("else").then(|| self.block());
                    stmts.push(Stmt::If { cond, then_block, else_block, span: self.span_from(s) });
                }
                "return" => {
                    self.next();
                    let values = match self.expr() {
                        Expr { kind: ExprKind::Tuple(items), .. } => items,
                        e => vec![e],
                    };
                    stmts.push(Stmt::Return { values, span: self.span_from(s) });
                }
                other => panic!("unexpected statement `{other}`"),
            }
            self.eat(";");
        }
        Block { stmts }
    }

    fn call(&mut self, start: usize, callee: &str, args: Vec<Expr>) -> Expr {
        let span = self.span_from(start);
        let args = args.into_iter().map(|value| Arg { keyword: None, value }).collect();
        Expr {
            kind: ExprKind::Call { callee: callee.into(), overload: None, callee_span: span, args },
            span,
        }
    }

    fn expr(&mut self) -> Expr {
        self.binary(0)
    }

    fn binary(&mut self, level: usize) -> Expr {
        const LEVELS: [&[(&str, &str)]; 4] = [
            &[("==", "eq"), ("!=", "ne"), ("<", "lt"), ("<=", "le"), (">", "gt"), (">=", "ge")],
            &[("+", "add"), ("-", "sub")],
            &[("*", "mul"), ("/", "div")],
            &[("**", "pow")],
        ];
        let Some(ops) = LEVELS.get(level) else { return self.unary() };
        let start = self.start();
        let mut lhs = self.binary(level + 1);
        while let Some((_, name)) = ops.iter().find(|(t, _)| *t == self.peek()) {
            self.next();
            let rhs = self.binary(level + 1);
            lhs = self.call(start, name, vec![lhs, rhs]);
        }
        lhs
    }

    fn unary(&mut self) -> Expr {
        let start = self.start();
        if self.eat("-") {
            let e = self.unary();
            return match e.kind {
                ExprKind::Literal(Attr::Int(i)) => self.lit(start, Attr::Int(-i)),
                ExprKind::Literal(Attr::Float(f)) => self.lit(start, Attr::Float(-f)),
                _ => self.call(start, "neg", vec![e]),
            };
        }
        if self.eat("not") {
            let e = self.unary();
            return self.call(start, "logical_not", vec![e]);
        }
        self.atom()
    }

    fn lit(&self, start: usize, a: Attr) -> Expr {
        Expr { kind: ExprKind::Literal(a), span: self.span_from(start) }
    }

    fn atom(&mut self) -> Expr {
        let start = self.start();
        let t = self.next();
        if t == "(" {
            let mut items = vec![self.expr()];
            while self.eat(",") {
                items.push(self.expr());
            }
            self.expect(")");
            return if items.len() == 1 {
                items.remove(0)
            } else {
                Expr { kind: ExprKind::Tuple(items), span: self.span_from(start) }
            };
        }
        if t == "[" {
            let mut items = Vec::new();
            while !self.eat("]") {
                items.push(self.expr());
                self.eat(",");
            }
            return Expr { kind: ExprKind::List(items), span: self.span_from(start) };
        }
        if t.starts_with(|c: char| c.is_ascii_digit()) {
            let a = match t.parse::<i64>() {
                Ok(i) => Attr::Int(i),
                Err(_) => Attr::Float(t.parse().expect("number")),
            };
            return self.lit(start, a);
        }
        match t.as_str() {
            "true" | "false" => return self.lit(start, Attr::Bool(t == "true")),
            d if d.parse::<DType>().is_ok() => {
                return self.lit(start, Attr::DType(d.parse().expect("dtype")))
            }
            _ => {}
        }
        if self.peek() == "." && self.peek_at(1) == "size" {
            self.pos += 2;
            self.expect("(");
            let axis = match self.expr().kind {
                ExprKind::Literal(Attr::Int(i)) => i,
                _ => panic!("size axis"),
            };
            self.expect(")");
            return Expr { kind: ExprKind::Size { tensor: t, axis }, span: self.span_from(start) };
        }
        let overload = (self.peek() == "." && self.peek_at(2) == "(").then(|| {
            self.next();
            self.next()
        });
        let callee_span = self.span_from(start);
        if !self.eat("(") {
            return Expr { kind: ExprKind::Name(t), span: callee_span };
        }
        let mut args = Vec::new();
        while !self.eat(")") {
            let keyword = (self.peek_at(1) == "=").then(|| {
                let s = self.start();
                let name = self.next();
                self.next();
                Binding { name, span: self.span_from(s) }
            });
            args.push(Arg { keyword, value: self.expr() });
            self.eat(",");
        }
        let kind = ExprKind::Call { callee: t, overload, callee_span, args };
        Expr { kind, span: self.span_from(start) }
    }
}
