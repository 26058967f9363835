//! The reference interpreter: runs a [`Graph`] op by op over `ndarray`, materialising every
//! intermediate in standard (row-major) layout.
//!
//! It is the reference every compiled kernel is tested against and the benchmark baseline, so it
//! is written to be obviously correct first, and reasonably fast second (whole-array `mapv`,
//! `Zip` and broadcasting views, never per-element index arithmetic in hot loops).
//!
//! # Semantics
//!
//! - Elementwise ops broadcast NumPy style; the inputs of one op have the same dtype.
//! - Floats: transcendentals through `libm` (`f32` uses the `f32` functions, e.g. `tanhf`);
//!   `round` is half to even; `sign` of NaN is NaN and of ±0 is +0; `rsqrt(x) = 1 / sqrt(x)`;
//!   `sigmoid` is `1 / (1 + exp(-x))` for `x >= 0` and `exp(x) / (1 + exp(x))` below (no
//!   overflow); `maximum`/`minimum` propagate NaN like NumPy; `pow` is `powf`.
//! - Integers: `add`, `sub`, `mul`, `neg`, `abs` and integer sums and products wrap on
//!   overflow; integer `div`, `pow`, `floor`, `ceil`, `round` are not defined (the op table
//!   restricts them to floats).
//! - Bool: `eq`, `ne` and `logical_*` only (the op table gives bools no order and no arithmetic).
//! - Every (op, dtype) pair outside the op table ([`crate::op::Op::operand_dtypes`]) is an
//!   error; the per-element definitions are [`scalar`], which constant folding
//!   ([`fold_unary`], [`fold_binary`], [`fold_mul_add`], [`fold_cast`]) also runs.
//! - Reductions over axes of size 0: `sum` = 0, `prod` = 1, `mean` = NaN, `max`/`min` fail with
//!   [`InterpError::ZeroSizeReduction`]. `f32` sums, means and products accumulate in `f64`.
//!   `argmax` returns the first index of the maximum, a NaN counting as the maximum;
//!   `argmin` the first index of the minimum, a NaN counting as the minimum (NumPy); both fail
//!   on an axis of size 0 like NumPy.
//! - `cumsum`/`cumprod` accumulate sequentially in the operand's dtype (integers wrap), like
//!   NumPy's; `iota` is the index along its axis converted to its dtype.
//! - `cast`: float → int truncates toward zero, saturates, NaN → 0 (Rust `as`); int → int wraps;
//!   bool → number is 0/1; number → bool is `!= 0` (NaN → true).
//! - `slice` is Python slicing (negative indices, clamping, negative steps).
//! - `rand_like`/`randn_like`: [`crate::random`] on [`crate::philox`]'s words of each flat
//!   index; a key that is not `i64` of shape `[]` or `[2]` is an [`InterpError::Shape`].
//! - Results of every node are checked against the node's type (dtype, and the shape that
//!   [`crate::bind::concrete_shape`] gives after [`bind_sizes`]); a difference is an
//!   [`InterpError::Internal`], never a panic.

mod broadcast;
mod cast;
mod elementwise;
mod fold;
mod index;
mod matmul;
pub mod random;
mod reduce;
pub mod scalar;
mod scan;
pub use scan::cumprod_grad_lane;
mod shape_ops;
mod window;

pub use crate::op_index::row_major_strides;
pub use fold::{fold_binary, fold_cast, fold_cast_value, fold_mul_add, fold_unary};

use crate::attr::Attr;
use crate::bind::{bind_sizes, try_concrete_shape, BindError};
use crate::dtype::DType;
use crate::graph::{Graph, Node, ValueId};
use crate::op::Op;
use crate::tensor::Tensor;
use std::borrow::Cow;
use thiserror::Error;

/// Kernels for [`Op::Extern`] nodes, registered from Rust.
pub trait ExternKernels: Sync {
    /// Runs extern op `name` with its attributes and tensor inputs. The result must have
    /// `out_shape` and `out_dtype` (checked by the caller).
    fn call(
        &self,
        name: &str,
        attrs: &[Attr],
        inputs: &[Tensor],
        out_shape: &[usize],
        out_dtype: DType,
    ) -> Result<Tensor, String>;
}

/// The extern table of [`run`]: has no kernels.
pub struct NoExterns;

impl ExternKernels for NoExterns {
    fn call(
        &self,
        name: &str,
        _attrs: &[Attr],
        _inputs: &[Tensor],
        _out_shape: &[usize],
        _out_dtype: DType,
    ) -> Result<Tensor, String> {
        Err(format!("no kernel is registered for extern op `{name}`"))
    }
}

/// Why running a graph failed.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum InterpError {
    /// The input shapes do not fit the graph's parameters.
    #[error(transparent)]
    Bind(#[from] BindError),
    #[error("`{param}` must have dtype {expected}, got {got}")]
    InputDType { param: String, expected: DType, got: DType },
    /// `max`/`min`/`argmax` over an axis of size 0.
    #[error("zero-size reduction: `{op}` ({node}) reduces an axis of size 0")]
    ZeroSizeReduction { node: ValueId, op: String },
    /// A shape the data gives at run time does not fit the op (e.g. `reshape` of the wrong
    /// number of elements).
    #[error("`{op}` ({node}): {message}")]
    Shape { node: ValueId, op: String, message: String },
    /// An indexed op (`gather`, `index_select`, `scatter_add`, `index_add`) met an index
    /// outside its axis.
    #[error("`{op}` ({node}) along axis {axis}: {error}")]
    IndexOutOfRange { node: ValueId, op: String, axis: u32, error: crate::op_index::IndexError },
    /// An extern kernel failed or returned the wrong dtype or shape.
    #[error("extern op `{name}` ({node}): {message}")]
    Extern { node: ValueId, name: String, message: String },
    /// The op is not defined for this dtype; the prelude should have rejected the call.
    #[error("`{op}` ({node}) is not defined for {dtype}")]
    Unsupported { node: ValueId, op: String, dtype: DType },
    /// The graph is inconsistent with itself. This always represents a bug in the compiler.
    #[error("internal error at `{op}` ({node}): {message}")]
    Internal { node: ValueId, op: String, message: String },
}

/// The failure of one op, before [`run`] attaches the node it happened at.
#[derive(Debug)]
pub(crate) enum OpError {
    Unsupported(DType),
    ZeroSizeReduction,
    Shape(String),
    Extern(String),
    Index(crate::op_index::IndexError),
    Internal(String),
}

impl OpError {
    fn at(self, node: ValueId, op: &Op) -> InterpError {
        let op_name = op.name();
        match self {
            OpError::Unsupported(dtype) => InterpError::Unsupported { node, op: op_name, dtype },
            OpError::ZeroSizeReduction => InterpError::ZeroSizeReduction { node, op: op_name },
            OpError::Shape(message) => InterpError::Shape { node, op: op_name, message },
            OpError::Extern(message) => {
                let name = match op {
                    Op::Extern { name, .. } => name.clone(),
                    _ => op_name,
                };
                InterpError::Extern { node, name, message }
            }
            OpError::Index(error) => {
                let axis = match op {
                    Op::Index { axis, .. } => *axis,
                    _ => 0,
                };
                InterpError::IndexOutOfRange { node, op: op_name, axis, error }
            }
            OpError::Internal(message) => InterpError::Internal { node, op: op_name, message },
        }
    }
}

pub(crate) type OpResult = Result<Tensor, OpError>;

/// Applies the same generic expression to the array inside any [`Tensor`], rewrapping the
/// result in the same variant.
macro_rules! map_any {
    ($t:expr, $a:ident => $body:expr) => {
        match $t {
            Tensor::Bool($a) => Tensor::Bool($body),
            Tensor::I8($a) => Tensor::I8($body),
            Tensor::U8($a) => Tensor::U8($body),
            Tensor::F16($a) => Tensor::F16($body),
            Tensor::BF16($a) => Tensor::BF16($body),
            Tensor::I32($a) => Tensor::I32($body),
            Tensor::I64($a) => Tensor::I64($body),
            Tensor::F32($a) => Tensor::F32($body),
            Tensor::F64($a) => Tensor::F64($body),
        }
    };
}
pub(crate) use map_any;

/// Runs `graph` on `inputs` (one per parameter, in order). Extern ops fail.
pub fn run(graph: &Graph, inputs: &[Tensor]) -> Result<Vec<Tensor>, InterpError> {
    run_with_externs(graph, inputs, &NoExterns)
}

/// Runs `graph` on `inputs`, calling `externs` for [`Op::Extern`] nodes.
pub fn run_with_externs(
    graph: &Graph,
    inputs: &[Tensor],
    externs: &dyn ExternKernels,
) -> Result<Vec<Tensor>, InterpError> {
    let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
    let sizes = bind_sizes(graph, &shapes)?;
    for (param, input) in graph.params.iter().zip(inputs) {
        if param.ty.dtype != input.dtype() {
            return Err(InterpError::InputDType {
                param: param.name.clone(),
                expected: param.ty.dtype,
                got: input.dtype(),
            });
        }
    }

    let last_use = last_uses(graph);
    let mut slots: Vec<Option<Cow<'_, Tensor>>> = vec![None; graph.nodes.len()];
    for (index, node) in graph.nodes.iter().enumerate() {
        let id = ValueId(index as u32);
        let internal =
            |message: String| InterpError::Internal { node: id, op: node.op.name(), message };
        let expected = try_concrete_shape(&node.ty.shape, &sizes)
            .ok_or_else(|| internal("the node's shape uses an unbound symbol".into()))?;
        let result: Cow<'_, Tensor> = match node.op {
            Op::Param(p) => {
                let input = inputs
                    .get(p as usize)
                    .ok_or_else(|| internal(format!("there is no parameter {p}")))?;
                Cow::Borrowed(input)
            }
            _ => {
                let mut args = Vec::with_capacity(node.inputs.len());
                for v in &node.inputs {
                    match slots.get(v.index()).and_then(|s| s.as_deref()) {
                        Some(t) => args.push(t),
                        None => return Err(internal(format!("operand {v} is not available"))),
                    }
                }
                let t =
                    eval_node(node, &args, &expected, externs).map_err(|e| e.at(id, &node.op))?;
                Cow::Owned(standard_layout(t))
            }
        };
        if result.dtype() != node.ty.dtype || result.shape() != expected.as_slice() {
            return Err(internal(format!(
                "the result is {}{:?} but the node's type says {}{:?}",
                result.dtype(),
                result.shape(),
                node.ty.dtype,
                expected
            )));
        }
        slots[index] = Some(result);
        for v in node.inputs.iter().chain(std::iter::once(&id)) {
            if last_use.get(v.index()) == Some(&Some(index)) {
                slots[v.index()] = None;
            }
        }
    }

    graph
        .outputs
        .iter()
        .map(|v| match slots.get(v.index()).and_then(|s| s.as_deref()) {
            Some(t) => Ok(standard_layout(t.clone())),
            None => Err(InterpError::Internal {
                node: *v,
                op: "return".into(),
                message: format!("output {v} does not exist"),
            }),
        })
        .collect()
}

/// For each value, the index of the last node reading it (itself when nothing does), or `None`
/// for graph outputs, which live to the end.
fn last_uses(graph: &Graph) -> Vec<Option<usize>> {
    let mut last: Vec<Option<usize>> = (0..graph.nodes.len()).map(Some).collect();
    for (i, node) in graph.nodes.iter().enumerate() {
        for v in &node.inputs {
            if let Some(slot) = last.get_mut(v.index()) {
                *slot = slot.map(|l| l.max(i));
            }
        }
    }
    for v in &graph.outputs {
        if let Some(slot) = last.get_mut(v.index()) {
            *slot = None;
        }
    }
    last
}

fn standard_layout(t: Tensor) -> Tensor {
    map_any!(t, a => if a.is_standard_layout() { a } else { a.as_standard_layout().into_owned() })
}

fn arity(args: &[&Tensor], n: usize) -> Result<(), OpError> {
    if args.len() == n {
        Ok(())
    } else {
        Err(OpError::Internal(format!("expected {n} operand(s), got {}", args.len())))
    }
}

fn eval_node(
    node: &Node,
    args: &[&Tensor],
    expected: &[usize],
    externs: &dyn ExternKernels,
) -> OpResult {
    let dtype = node.ty.dtype;
    // The op table's dtype row (`Op::operand_dtypes`), for every op in one place.
    let allowed = node.op.operand_dtypes();
    let data = if matches!(node.op, Op::Where) { args.get(1..).unwrap_or(&[]) } else { args };
    // An indexed op's index (operand 1) is i32/i64 whatever the data's dtype.
    let is_data = |i: usize| match &node.op {
        Op::Index { .. } => i != 1,
        Op::Window { kind, .. } => !kind.shape_only(i),
        _ => true,
    };
    let bad = data.iter().enumerate().find(|(i, t)| is_data(*i) && !allowed.contains(t.dtype()));
    if let Some((_, bad)) = bad {
        return Err(OpError::Unsupported(bad.dtype()));
    }
    match &node.op {
        Op::Param(_) => Err(OpError::Internal("parameters are not evaluated here".into())),
        Op::Const(value) => {
            arity(args, 0)?;
            Ok(cast::full(*value, dtype, &[]))
        }
        Op::Full { value } => {
            if args.len() > 1 {
                return Err(OpError::Internal("`full` takes at most one operand".into()));
            }
            if let Some(like) = args.first() {
                if like.shape() != expected {
                    return Err(OpError::Internal(format!(
                        "`full` copies the shape {:?} of its operand, but its type says {expected:?}",
                        like.shape()
                    )));
                }
            }
            Ok(cast::full(*value, dtype, expected))
        }
        Op::Random { dist } => {
            let (Some(key), true) = (args.first(), args.len() <= 2) else {
                return Err(OpError::Internal("`random` takes a key and a shape operand".into()));
            };
            if let Some(like) = args.get(1).filter(|l| l.shape() != expected) {
                return Err(OpError::Internal(format!(
                    "`{}` copies the shape {:?} of its operand, but its type says {expected:?}",
                    node.op.name(),
                    like.shape()
                )));
            }
            random::random(*dist, dtype, key, expected)
        }
        Op::Unary(op) => {
            arity(args, 1)?;
            elementwise::unary(*op, args[0])
        }
        Op::Binary(op) => {
            arity(args, 2)?;
            elementwise::binary(*op, args[0], args[1])
        }
        Op::Where => {
            arity(args, 3)?;
            elementwise::select(args[0], args[1], args[2])
        }
        Op::MulAdd => {
            arity(args, 3)?;
            elementwise::mul_add(args[0], args[1], args[2])
        }
        Op::Cast(to) => {
            arity(args, 1)?;
            Ok(cast::cast(args[0], *to))
        }
        Op::Reduce { op, axes, keepdim } => {
            arity(args, 1)?;
            reduce::reduce(*op, args[0], axes, *keepdim)
        }
        Op::ArgMax { axis, keepdim } => {
            arity(args, 1)?;
            reduce::argmax(args[0], *axis, *keepdim)
        }
        Op::ArgMin { axis, keepdim } => {
            arity(args, 1)?;
            reduce::argmin(args[0], *axis, *keepdim)
        }
        Op::Iota { axis } => {
            if args.len() > 1 {
                return Err(OpError::Internal("`iota` takes at most one operand".into()));
            }
            if let Some(like) = args.first() {
                if like.shape() != expected {
                    return Err(OpError::Internal(format!(
                        "`iota` copies the shape {:?} of its operand, but its type says {expected:?}",
                        like.shape()
                    )));
                }
            }
            scan::iota(expected, *axis, dtype)
        }
        Op::Scan { op, axis, exclusive, reverse } => {
            arity(args, 1)?;
            scan::scan(*op, args[0], *axis, *exclusive, *reverse)
        }
        Op::CumprodGrad { axis, exclusive, reverse } => {
            arity(args, 2)?;
            scan::cumprod_grad(args[0], args[1], *axis, *exclusive, *reverse)
        }
        Op::MatMul => {
            arity(args, 2)?;
            matmul::matmul(args[0], args[1])
        }
        Op::Reshape => {
            arity(args, 1)?;
            shape_ops::reshape(args[0], expected)
        }
        Op::Transpose { perm } => {
            arity(args, 1)?;
            shape_ops::transpose(args[0], perm)
        }
        Op::BroadcastTo => {
            arity(args, 1)?;
            broadcast::broadcast_to(args[0], expected)
        }
        Op::Concat { axis } => shape_ops::concat(args, *axis),
        Op::Slice { axis, start, end, step } => {
            arity(args, 1)?;
            shape_ops::slice(args[0], *axis, *start, *end, *step)
        }
        Op::Index { kind, axis } => {
            arity(args, kind.arity())?;
            index::eval(*kind, *axis, args)
        }
        Op::Window { kind, attrs } => window::eval(*kind, attrs, args, expected),
        Op::Extern { name, attrs } => {
            let owned: Vec<Tensor> = args.iter().map(|t| (*t).clone()).collect();
            let out =
                externs.call(name, attrs, &owned, expected, dtype).map_err(OpError::Extern)?;
            if out.dtype() != dtype || out.shape() != expected {
                return Err(OpError::Extern(format!(
                    "the kernel returned {}{:?}, expected {dtype}{expected:?}",
                    out.dtype(),
                    out.shape()
                )));
            }
            Ok(out)
        }
    }
}
