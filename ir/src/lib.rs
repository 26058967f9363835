//! # tfn-ir
//!
//! The middle of the compiler, and the only crate every other layer depends on:
//!
//! - [`library`]: the function library (ops, extern ops, composed functions, gradients,
//!   rewrite rules) as the front end hands it over, generic over attributes and dtypes;
//! - [`graph`]: the SSA graph of primitive [`op::Op`]s that one call signature lowers to, with a
//!   dtype and a symbolic [`shape::Shape`] on every value;
//! - [`diagnostic`] and [`span`]: the one diagnostic type, shared by every layer.
//!
//! Architecture invariant: this crate depends on no parser, optimiser or code generator.

pub mod attr;
pub mod diagnostic;
pub mod dtype;
pub mod graph;
pub mod library;
pub mod op;
pub mod shape;
pub mod span;
pub mod tensor;

pub use attr::{Attr, Scalar};
pub use diagnostic::{Diagnostic, Severity};
pub use dtype::DType;
pub use graph::{Graph, GraphParam, Node, Origin, TensorType, ValueId};
pub use library::Library;
pub use op::{BinaryOp, Op, ReduceOp, UnaryOp};
pub use shape::{Dim, DimExpr, Shape, Sym, SymDef};
pub use span::{FileId, SourceMap, Span};
pub use tensor::Tensor;
