//! The typed syntax tree of one `.tfn` file, with a byte [`Span`] on every node.
//!
//! Produced by [`crate::parser`], read by the checker and by [`crate::convert`]. It is closer to
//! the source than the library templates: infix operators are still operators, types are still
//! as written, and the spans of punctuation that diagnostics point at (a call's closing paren,
//! a block's closing brace) are kept. No pest type appears here.

use tfn_ir::{DType, Span};

/// A parsed file: its items in source order.
#[derive(Clone, Debug, PartialEq)]
pub struct File {
    pub items: Vec<Item>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    Use(UseItem),
    Op(OpItem),
    Fn(FnItem),
    Grad(GradItem),
    Rewrite(RewriteItem),
}

/// A name with its span.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// `name` or `name.overload`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FnName {
    pub base: Ident,
    pub overload: Option<Ident>,
    pub span: Span,
}

impl FnName {
    pub fn full(&self) -> String {
        match &self.overload {
            Some(o) => format!("{}.{}", self.base.name, o.name),
            None => self.base.name.clone(),
        }
    }
}

/// `use "path"`.
#[derive(Clone, Debug, PartialEq)]
pub struct UseItem {
    /// The path without quotes.
    pub path: String,
    /// The string literal, quotes included.
    pub path_span: Span,
    pub span: Span,
}

/// `op ...` or `extern op ...` with its `shape:`/`dtype:` clauses.
#[derive(Clone, Debug, PartialEq)]
pub struct OpItem {
    /// The `extern` keyword, if present.
    pub extern_kw: Option<Span>,
    pub sig: Signature,
    pub clauses: Vec<Clause>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Clause {
    Shape(ShapeClause, Span),
    DType(Ident, Span),
}

#[derive(Clone, Debug, PartialEq)]
pub enum ShapeClause {
    SameAs(Ident),
    Dims(Vec<Expr>),
    Broadcast(Vec<Ident>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct FnItem {
    pub sig: Signature,
    pub body: Block,
    pub span: Span,
}

/// The header shared by `op` and `fn`.
#[derive(Clone, Debug, PartialEq)]
pub struct Signature {
    pub name: FnName,
    pub type_params: Vec<TypeParam>,
    pub params: Vec<Param>,
    /// Every `*` marker (more than one is an error).
    pub stars: Vec<Span>,
    pub returns: Vec<TypeExpr>,
    /// The whole header, from the name to the end of the result type.
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TypeParam {
    pub name: Ident,
    /// `None` for an unconstrained `T`; the dtype names of `T: {f32, f64}` otherwise.
    pub allowed: Option<Vec<(DType, Span)>>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub ty: TypeExpr,
    pub name: Ident,
    pub default: Option<Expr>,
    pub keyword_only: bool,
    pub span: Span,
}

/// A type as written: `Tensor`, `Tensor<f32>`, `Tensor<T>[]`, `Int[]`...
#[derive(Clone, Debug, PartialEq)]
pub struct TypeExpr {
    pub base: Ident,
    /// The `<...>` argument: a dtype name or a dtype variable.
    pub arg: Option<TypeArg>,
    pub list: bool,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum TypeArg {
    Fixed(DType, Span),
    Var(Ident),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    pub close: Span,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// `let x = e` (`tuple == false`, one name) or `let (a, b) = e`.
    Let {
        names: Vec<Ident>,
        tuple: bool,
        value: Expr,
        span: Span,
    },
    If {
        cond: Expr,
        then_block: Block,
        else_block: Option<Block>,
        span: Span,
    },
    Return {
        value: Expr,
        span: Span,
    },
    /// `var x = e`: a name the loops after it may assign.
    Var {
        name: Ident,
        value: Expr,
        span: Span,
    },
    /// `x = e`.
    Assign {
        name: Ident,
        value: Expr,
        span: Span,
    },
    /// `for i in start..end { body }`; `checkpoint` is the `, checkpoint` token when written.
    For {
        var: Ident,
        start: Expr,
        end: Expr,
        checkpoint: Option<Span>,
        body: Block,
        span: Span,
    },
    /// `while cond, at most max_trips { body }`.
    While {
        cond: Expr,
        max_trips: Expr,
        body: Block,
        span: Span,
    },
}

impl Stmt {
    pub fn span(&self) -> Span {
        match self {
            Stmt::Let { span, .. }
            | Stmt::If { span, .. }
            | Stmt::Return { span, .. }
            | Stmt::Var { span, .. }
            | Stmt::Assign { span, .. }
            | Stmt::For { span, .. }
            | Stmt::While { span, .. } => *span,
        }
    }
}

/// `grad f(x, y) { x: ..., y: ... }`.
#[derive(Clone, Debug, PartialEq)]
pub struct GradItem {
    pub name: FnName,
    pub inputs: Vec<Ident>,
    pub formulas: Vec<(Ident, Expr)>,
    pub span: Span,
}

/// `rewrite name: lhs => rhs`.
#[derive(Clone, Debug, PartialEq)]
pub struct RewriteItem {
    pub name: Ident,
    pub lhs: Expr,
    pub rhs: Expr,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    /// `%`: Python's remainder (sign of the divisor).
    Rem,
    Pow,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl BinOp {
    /// The prelude op an infix operator desugars to.
    pub fn op_name(self) -> &'static str {
        match self {
            BinOp::Add => "add",
            BinOp::Sub => "sub",
            BinOp::Mul => "mul",
            BinOp::Div => "div",
            BinOp::Rem => "remainder",
            BinOp::Pow => "pow",
            BinOp::Eq => "eq",
            BinOp::Ne => "ne",
            BinOp::Lt => "lt",
            BinOp::Le => "le",
            BinOp::Gt => "gt",
            BinOp::Ge => "ge",
        }
    }

    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Pow => "**",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
        }
    }

    pub fn is_comparison(self) -> bool {
        matches!(self, BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Name(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    DType(DType),
    List(Vec<Expr>),
    /// `(a, b)`: only valid as a returned value.
    Tuple(Vec<Expr>),
    Call(Call),
    Binary {
        op: BinOp,
        op_span: Span,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// Unary minus of a non-literal (a minus before a numeric literal is folded into it).
    Neg {
        op_span: Span,
        operand: Box<Expr>,
    },
    /// `base[index]`: `base` indexed along its first axis.
    Index {
        base: Box<Expr>,
        index: Box<Expr>,
    },
    /// `?x` (rewrite rules only).
    PatVar(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    pub name: FnName,
    pub args: Vec<Arg>,
    /// The closing parenthesis (where "missing argument" points).
    pub close: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Arg {
    pub keyword: Option<Ident>,
    pub value: Expr,
}

impl Arg {
    /// The whole argument, `keyword=value` included.
    pub fn span(&self) -> Span {
        match &self.keyword {
            Some(k) => k.span.to(self.value.span),
            None => self.value.span,
        }
    }
}
