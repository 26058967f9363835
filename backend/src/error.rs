//! Errors of the backend: compiling kernels and running compiled functions.

use tfn_ir::bind::BindError;
use tfn_ir::interp::InterpError;
use tfn_ir::DType;
use thiserror::Error;

/// Why one kernel could not be compiled to machine code. The executor answers `Unsupported`
/// by running that kernel with the interpreter instead, so it is not a user-facing failure.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum CodegenError {
    /// The code generator has no lowering for this op, dtype or layout (yet).
    #[error("unsupported by the code generator: {0}")]
    Unsupported(String),
    /// Cranelift rejected the function. This always represents a bug in the code generator.
    #[error("cranelift: {0}")]
    Cranelift(String),
    /// The kernel is inconsistent with its graph. This always represents a bug in fusion.
    #[error("internal error: {0}")]
    Internal(String),
}

/// Why a call of a [`crate::CompiledFunction`] failed.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum RunError {
    /// The input shapes do not fit the function's parameters.
    #[error(transparent)]
    Bind(#[from] BindError),
    #[error("expected {expected} input(s), got {got}")]
    InputCount { expected: usize, got: usize },
    #[error("expected {expected} output buffer(s), got {got}")]
    OutputCount { expected: usize, got: usize },
    #[error("`{param}` must have dtype {expected}, got {got}")]
    InputDType { param: String, expected: DType, got: DType },
    #[error(
        "output {index} must be {expected_dtype}{expected_shape:?}, got {got_dtype}{got_shape:?}"
    )]
    OutputType {
        index: usize,
        expected_dtype: DType,
        expected_shape: Vec<usize>,
        got_dtype: DType,
        got_shape: Vec<usize>,
    },
    /// `max`, `min`, `argmax` or `argmin` over an axis of size 0 (named by `op`).
    #[error("zero-size reduction: `{op}` over an axis of size 0")]
    ZeroSizeReduction { op: String },
    /// An indexed op met an index outside its axis (both backends report it the same way).
    #[error("`{op}` ({node}) along axis {axis}: {error}")]
    IndexOutOfRange { node: tfn_ir::ValueId, op: String, axis: u32, error: tfn_ir::IndexError },
    /// Sizes known only at run time do not fit the op (e.g. a `gather` index larger than `x`).
    #[error("`{op}` ({node}): {message}")]
    Shape { node: tfn_ir::ValueId, op: String, message: String },
    /// A kernel run by the interpreter (fallback, copy or extern) failed.
    #[error(transparent)]
    Interp(#[from] InterpError),
    /// The function is inconsistent with itself. This always represents a bug in the backend.
    #[error("internal error: {0}")]
    Internal(String),
    /// A loop of a program cannot run with these shapes (a stacked input with too few rows,
    /// a carried value changing shape).
    #[error("{0}")]
    LoopShape(String),
    /// A loop of a program failed on the values (a `while` past its `at most`).
    #[error("{0}")]
    LoopRun(String),
    /// An op that computes indices (`arange`, `iota_like`, an index op) along an axis longer
    /// than the JIT's 32-bit index lanes reach: a documented limit, not a bug.
    #[error(
        "an index along an axis of {size} elements: the JIT computes indices in 32 bits, so an \
         axis it indexes has at most 2147483647 elements (the interpreter backend has no such \
         limit)"
    )]
    AxisTooLong { size: usize },
    /// The memory for a value could not be allocated (a process memory limit, a full machine).
    #[error("not enough memory for a {dtype}{shape:?} value ({} bytes)", value_bytes(*dtype, shape))]
    OutOfMemory { dtype: DType, shape: Vec<usize> },
}

/// The bytes of a `dtype` value of `shape` (exact: no overflow in `u128`).
fn value_bytes(dtype: DType, shape: &[usize]) -> u128 {
    shape.iter().fold(dtype.size_bytes() as u128, |b, &d| b.saturating_mul(d as u128))
}

/// A program's loops fail with these (`tfn_ir::program::run`).
impl tfn_ir::program::run::RunFailure for RunError {
    fn shape(message: String) -> Self {
        RunError::LoopShape(message)
    }
    fn runtime(message: String) -> Self {
        RunError::LoopRun(message)
    }
    fn internal(message: String) -> Self {
        RunError::Internal(message)
    }
    fn bind(e: BindError) -> Self {
        RunError::Bind(e)
    }
    fn in_trip(self, at: &str) -> Self {
        match self {
            RunError::LoopShape(m) => RunError::LoopShape(m + at),
            RunError::LoopRun(m) => RunError::LoopRun(m + at),
            other => other,
        }
    }
    fn config(message: String) -> Self {
        RunError::LoopRun(message)
    }
    fn input_dtype(param: String, expected: DType, got: DType) -> Self {
        RunError::InputDType { param, expected, got }
    }
}
