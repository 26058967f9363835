//! # tfn-ir
//!
//! The middle of the compiler, and the only crate every other layer depends on:
//!
//! - [`library`]: the function library (ops, extern ops, composed functions, gradients,
//!   rewrite rules) as the front end hands it over, generic over attributes and dtypes;
//! - [`graph`]: the SSA graph of primitive [`op::Op`]s that one call signature lowers to, with a
//!   dtype and a symbolic [`shape::Shape`] on every value;
//! - [`bind`] and [`interp`]: binding runtime sizes, and the reference interpreter;
//!   [`guards`]: what an instance assumes about derived sizes being 1;
//! - [`text`]: the IR text format, printed and parsed back;
//! - [`call`]: the values of a call as the Rust APIs (`tfn`, `tfn-rt`) take and return them;
//! - [`diagnostic`] and [`span`]: the one diagnostic type, shared by every layer.
//!
//! Architecture invariant: this crate depends on no parser, optimiser or code generator.

#![forbid(unsafe_code)]

pub mod attr;
pub mod bind;
pub mod call;
pub mod diagnostic;
pub mod dispatch;
pub mod dtype;
pub mod graph;
pub mod guards;
pub mod interp;
pub mod library;
pub mod lower;
pub mod op;
pub mod op_index;
pub mod op_window;
pub mod philox;
pub mod program;
pub mod random;
pub mod rng;
pub mod shape;
pub mod span;
pub mod storage;
pub mod tensor;
pub mod tensor_value;
pub mod text;
pub mod verify;

pub use attr::{Attr, Scalar};
pub use bind::{bind_sizes, concrete_shape, describable, BindError};
pub use diagnostic::{Diagnostic, Severity};
pub use dtype::{DType, DTypeSet};
pub use graph::{Graph, GraphParam, Node, Origin, TensorType, ValueId};
pub use guards::SizeGuards;
pub use half;
pub use interp::{run, run_with_externs, ExternKernels, InterpError};
pub use library::Library;
pub use lower::{instantiate, ArgSpec, DimSpec, Instance, LowerError, ParamSource};
pub use op::{BinaryOp, Op, RandomDist, ReduceOp, ScanOp, UnaryOp};
pub use op_index::{IndexError, IndexKind};
pub use op_window::{WindowAttrs, WindowKind};
pub use shape::{Dim, DimExpr, Shape, Sym, SymDef};
pub use span::{FileId, SourceMap, Span};
pub use tensor::{align_pad, aligned_array, Tensor, BUFFER_ALIGN};
pub use tensor_value::{TensorValue, TensorViewMut};
pub use text::{parse_graph, print_graph, ParseError};
pub use verify::{verify, VerifyError};
