//! The function library: every op and function of a session by name and overload, their
//! gradient definitions and the rewrite rules — like TensorFlow's `FunctionLibraryDefinition`.
//!
//! The front end checks `.tfn` source and converts it into these *templates*: bodies are still
//! generic over attributes and dtypes (static `if`s unresolved, calls unresolved to overloads),
//! with infix operators already desugared to calls (`a + b` is `add(a, b)`, `-x` is `neg(x)`,
//! `a ** b` is `pow(a, b)`). Lowering instantiates a template for one call signature into a
//! [`crate::Graph`]. Every node keeps its [`Span`] so errors found then still point at source.

use crate::attr::Attr;
use crate::dtype::DType;
use crate::span::{SourceMap, Span};
use std::collections::BTreeMap;

/// All definitions of a session. Built by the front end, read by everything after it.
#[derive(Clone, Debug, Default)]
pub struct Library {
    pub sources: SourceMap,
    /// Overloads of each base name, in declaration order (the dispatcher's order).
    pub functions: BTreeMap<String, Vec<FunctionDef>>,
    pub grads: Vec<GradDef>,
    pub rewrites: Vec<RewriteDef>,
}

impl Library {
    pub fn overloads(&self, name: &str) -> &[FunctionDef] {
        self.functions.get(name).map_or(&[], |v| v.as_slice())
    }

    /// The overload `name` or `name.overload`.
    pub fn function(&self, name: &str, overload: Option<&str>) -> Option<&FunctionDef> {
        self.overloads(name).iter().find(|f| f.overload.as_deref() == overload)
    }

    /// The functions a call of `name` may run: the one overload `base.overload` names, or
    /// every overload of a base name (empty for an unknown name).
    pub fn callable(&self, name: &str) -> Vec<&FunctionDef> {
        match name.split_once('.') {
            Some((base, overload)) => self.function(base, Some(overload)).into_iter().collect(),
            None => self.overloads(name).iter().collect(),
        }
    }

    /// The user-written gradient of a function, if any.
    pub fn grad_of(&self, name: &str, overload: Option<&str>) -> Option<&GradDef> {
        self.grads.iter().find(|g| g.function == name && g.overload.as_deref() == overload)
    }
}

/// An `op`, `extern op` or `fn` declaration.
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionDef {
    /// Base name, e.g. `add`.
    pub name: String,
    /// Overload suffix, e.g. `scalar` for `add.scalar`.
    pub overload: Option<String>,
    /// Dtype variables, e.g. `T: {f32, f64}`.
    pub type_params: Vec<TypeParam>,
    pub params: Vec<ParamDef>,
    /// One entry per result (a tuple return has several).
    pub returns: Vec<ParamType>,
    pub body: Body,
    /// The whole declaration's header (for "defined here" labels).
    pub span: Span,
    pub name_span: Span,
}

impl FunctionDef {
    /// `name` or `name.overload`.
    pub fn full_name(&self) -> String {
        match &self.overload {
            Some(o) => format!("{}.{}", self.name, o),
            None => self.name.clone(),
        }
    }

    pub fn param(&self, name: &str) -> Option<(usize, &ParamDef)> {
        self.params.iter().enumerate().find(|(_, p)| p.name == name)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct TypeParam {
    pub name: String,
    /// `None`: any dtype.
    pub allowed: Option<Vec<DType>>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ParamDef {
    pub name: String,
    pub ty: ParamType,
    /// A constant expression (literal or list of literals).
    pub default: Option<Expr>,
    /// Declared after `*`.
    pub keyword_only: bool,
    pub span: Span,
}

/// The type of a parameter or result as written in a signature.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ParamType {
    Tensor(DTypeRef),
    TensorList(DTypeRef),
    /// An int or a float.
    Scalar,
    Int,
    Float,
    Bool,
    DType,
    IntList,
    FloatList,
}

impl ParamType {
    pub fn is_tensor(&self) -> bool {
        matches!(self, ParamType::Tensor(_) | ParamType::TensorList(_))
    }
}

/// The dtype part of `Tensor`, `Tensor<f32>`, `Tensor<T>`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DTypeRef {
    Any,
    Fixed(DType),
    Var(String),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Body {
    /// An `op` of the prelude: the compiler's own kernel, looked up by name and overload.
    Primitive,
    /// An `extern op`: a kernel registered from Rust, with declared output shape and dtype.
    Extern(ExternSpec),
    /// A `fn` body.
    Composed(Block),
}

#[derive(Clone, Debug, PartialEq)]
pub struct ExternSpec {
    pub shape: ShapeRule,
    pub dtype: DTypeRule,
}

/// `shape:` clause of an extern op.
#[derive(Clone, Debug, PartialEq)]
pub enum ShapeRule {
    /// `shape: x` — the shape of tensor parameter `x`.
    SameAs(String, Span),
    /// `shape: [x.size(0), 4]` — one integer expression per axis.
    Dims(Vec<Expr>),
    /// `shape: broadcast(x, y)` — NumPy broadcast of the named tensor parameters.
    Broadcast(Vec<(String, Span)>),
}

/// `dtype:` clause of an extern op.
#[derive(Clone, Debug, PartialEq)]
pub enum DTypeRule {
    /// `dtype: x` — the dtype of tensor parameter `x`.
    SameAs(String, Span),
    /// `dtype: f32`.
    Fixed(DType),
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct Block {
    pub stmts: Vec<Stmt>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// `let x = e` or `let (a, b) = e`.
    Let { names: Vec<Binding>, value: Expr, span: Span },
    /// A static `if` over attributes; resolved at instantiation.
    If { cond: Expr, then_block: Block, else_block: Option<Block>, span: Span },
    /// `return e` or `return (a, b)`.
    Return { values: Vec<Expr>, span: Span },
    /// `var x = e`: a name that the loops after it may assign (`Assign`).
    Var { name: Binding, value: Expr, span: Span },
    /// `x = e`: assigns a `var` (only inside a loop body; the front end checks it).
    Assign { name: Binding, value: Expr, span: Span },
    /// `for i in start..end { body }` (`, checkpoint` after the range: recompute what the
    /// backward pass needs instead of storing it). The body is lowered once.
    For { var: Binding, start: Expr, end: Expr, checkpoint: bool, body: Block, span: Span },
    /// `while cond, at most max_trips { body }`: `cond` a `bool[]` tensor evaluated before each
    /// trip; more than `max_trips` trips is a run-time error.
    While { cond: Expr, max_trips: Expr, body: Block, span: Span },
}

/// A name introduced by `let` or listed by a `grad` block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    pub name: String,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// A parameter, a `let` binding, or in `grad` blocks `result` and `grad`.
    Name(String),
    /// `3`, `0.5`, `true`, `f32`.
    Literal(Attr),
    /// `[0, 1]`.
    List(Vec<Expr>),
    /// `(a, b)`.
    Tuple(Vec<Expr>),
    /// A call of an op or function, possibly with an explicit overload (`add.scalar(x, 1)`).
    /// Infix operators arrive here as calls of the prelude's op names.
    Call { callee: String, overload: Option<String>, callee_span: Span, args: Vec<Arg> },
    /// `x.size(axis)` in extern `shape:` clauses.
    Size { tensor: String, axis: i64 },
    /// `x[i]`: `x` indexed along its first axis (the axis removed). With a loop's variable as
    /// the index and `x` from outside the loop, a view of `x` per trip, never a copy.
    Index { base: Box<Expr>, index: Box<Expr> },
    /// `?x` in rewrite rules.
    PatVar(String),
}

/// A call argument, positional or `keyword=value`.
#[derive(Clone, Debug, PartialEq)]
pub struct Arg {
    pub keyword: Option<Binding>,
    pub value: Expr,
}

/// `grad f(x, y) { x: ..., y: ... }`.
#[derive(Clone, Debug, PartialEq)]
pub struct GradDef {
    pub function: String,
    pub overload: Option<String>,
    /// The function's inputs as listed in the header, in the function's parameter order.
    pub inputs: Vec<Binding>,
    /// One vector-Jacobian product per differentiable input. The expression may use the
    /// function's parameters (tensors and attributes), `result` and `grad`.
    pub formulas: Vec<(Binding, Expr)>,
    pub span: Span,
}

/// `rewrite name: lhs => rhs`.
#[derive(Clone, Debug, PartialEq)]
pub struct RewriteDef {
    pub name: String,
    pub lhs: Expr,
    pub rhs: Expr,
    pub span: Span,
}
