//! The exceptions of the `tfn` module and the mapping of [`tfn::Error`] onto them.
//!
//! Every tfn exception derives from `tfn.Error` *and* from the builtin a Python caller
//! expects, so `except ValueError` and `except tfn.Error` both work:
//!
//! | class | bases | raised for |
//! |---|---|---|
//! | `CompileError` | `Error` | a `.tfn` source that does not parse or check (text: the rustc-style diagnostic) |
//! | `DispatchError` | `Error`, `TypeError` | a call no overload accepts (every candidate and why) |
//! | `DTypeError` | `Error`, `TypeError`, `ValueError` | the same when only dtypes disagree, a dtype clash inside the function, or a `vjp` cotangent of another dtype than its result |
//! | `ShapeError` | `Error`, `ValueError` | sizes that do not fit (naming the argument and both shapes), a bad `out=` |
//! | `CallError` | `Error`, `ValueError` | any other reason the call cannot be compiled (a literal that does not fit, ...) |
//! | `UnknownFunctionError` | `Error`, `AttributeError` | no function of that name |
//! | `RunError` | `Error`, `RuntimeError` | a failure while running (an index out of range, an extern kernel) |
//! | `InternalError` | `Error`, `RuntimeError` | a bug in tfn |
//! | `CheckpointError` | `Error`, `ValueError` | a safetensors file that is not valid, a parameter without a tensor or with a tensor of another dtype (names the tensor and the parameter), a bad mapping |
//!
//! The classes are made with `type(name, bases, {})` because PyO3's `create_exception!`
//! takes a single base.

use pyo3::exceptions::{PyAttributeError, PyException, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};
use tfn_ir::dispatch::{ArgKind, RejectionKind};

/// The exception classes, made once per interpreter.
pub struct Classes {
    pub error: Py<PyType>,
    pub compile: Py<PyType>,
    pub dispatch: Py<PyType>,
    pub dtype: Py<PyType>,
    pub shape: Py<PyType>,
    pub call: Py<PyType>,
    pub unknown: Py<PyType>,
    pub run: Py<PyType>,
    pub internal: Py<PyType>,
    pub checkpoint: Py<PyType>,
    pub warning: Py<PyType>,
}

static CLASSES: PyOnceLock<Classes> = PyOnceLock::new();

fn make(
    py: Python<'_>,
    name: &str,
    bases: Vec<Bound<'_, PyType>>,
    doc: &str,
) -> PyResult<Py<PyType>> {
    let ty = py.get_type::<PyType>();
    let dict = PyDict::new(py);
    dict.set_item("__module__", "tfn")?;
    dict.set_item("__doc__", doc)?;
    let made = ty.call1((name, PyTuple::new(py, bases)?, dict))?;
    Ok(made.cast_into::<PyType>()?.unbind())
}

pub fn classes(py: Python<'_>) -> PyResult<&'static Classes> {
    CLASSES.get_or_try_init(py, || {
        let error =
            make(py, "Error", vec![py.get_type::<PyException>()], "Base class of tfn's errors.")?;
        let e = || error.bind(py).clone();
        let type_error = || py.get_type::<PyTypeError>();
        let value_error = || py.get_type::<PyValueError>();
        let runtime_error = || py.get_type::<PyRuntimeError>();
        Ok(Classes {
            compile: make(
                py,
                "CompileError",
                vec![e()],
                "A .tfn source failed to parse or check; str() is the rustc-style diagnostic.",
            )?,
            dispatch: make(
                py,
                "DispatchError",
                vec![e(), type_error()],
                "No overload of the function accepts the arguments (each candidate and why).",
            )?,
            dtype: make(
                py,
                "DTypeError",
                vec![e(), type_error(), value_error()],
                "The arguments' dtypes do not fit the signature or each other.",
            )?,
            shape: make(
                py,
                "ShapeError",
                vec![e(), value_error()],
                "The arguments' sizes do not fit (names the argument and both shapes).",
            )?,
            call: make(
                py,
                "CallError",
                vec![e(), value_error()],
                "The function cannot be compiled for these arguments.",
            )?,
            unknown: make(
                py,
                "UnknownFunctionError",
                vec![e(), py.get_type::<PyAttributeError>()],
                "No function of that name is loaded.",
            )?,
            run: make(
                py,
                "RunError",
                vec![e(), runtime_error()],
                "Running the function failed (an index out of range, an extern kernel's error).",
            )?,
            internal: make(
                py,
                "InternalError",
                vec![e(), runtime_error()],
                "A bug in tfn, not in the caller's program: please report it.",
            )?,
            checkpoint: make(
                py,
                "CheckpointError",
                vec![e(), value_error()],
                "A checkpoint cannot be read, or its tensors do not fit the parameters they bind (names the tensor and the parameter).",
            )?,
            warning: make(
                py,
                "TfnWarning",
                vec![py.get_type::<pyo3::exceptions::PyUserWarning>()],
                "A warning of the .tfn checker (e.g. an overload masked by an earlier one).",
            )?,
            error,
        })
    })
}

/// A Python exception of class `ty` with message `msg`.
pub fn raise(py: Python<'_>, ty: &Py<PyType>, msg: impl Into<String>) -> PyErr {
    let msg: String = msg.into();
    match ty.bind(py).call1((msg.clone(),)) {
        Ok(instance) => PyErr::from_value(instance),
        Err(e) => e,
    }
}

fn pick(py: Python<'_>, f: impl FnOnce(&Classes) -> &Py<PyType>) -> PyResult<Py<PyType>> {
    Ok(f(classes(py)?).clone_ref(py))
}

/// The exception for a [`tfn::Error`]. `kinds` re-dispatches a call that no overload
/// accepted, to tell a dtype-only rejection (`DTypeError`) from any other (`DispatchError`).
pub fn to_py(
    py: Python<'_>,
    e: tfn::Error,
    kinds: Option<&dyn Fn() -> Vec<RejectionKind>>,
) -> PyErr {
    let text = match &e {
        // A load error is the checker's report, as `tfnc check` prints it.
        tfn::Error::Load { .. } => e.to_string(),
        // A call error is one message, without the closing "aborting due to" line.
        _ => without_summary(&e.to_string()),
    };
    let class = match &e {
        tfn::Error::Load { .. } => pick(py, |c| &c.compile),
        tfn::Error::Io { .. } => {
            return pyo3::exceptions::PyOSError::new_err(text);
        }
        tfn::Error::UnknownFunction { .. } => pick(py, |c| &c.unknown),
        tfn::Error::Call { diagnostics, .. } => {
            let first = diagnostics.first();
            let code = first.map_or("", |d| d.code);
            let top_level = first.is_some_and(|d| d.primary.is_none());
            match code {
                "E0502" if top_level => {
                    let dtype_only = kinds.is_some_and(|k| {
                        let kinds = k();
                        !kinds.is_empty() && kinds.iter().all(|k| is_dtype_kind(*k))
                    });
                    if dtype_only {
                        pick(py, |c| &c.dtype)
                    } else {
                        pick(py, |c| &c.dispatch)
                    }
                }
                // A call inside the function that no overload accepts: its arguments' dtypes
                // clash (`x + y` with f32 and f64), the signature let them through.
                "E0502" => pick(py, |c| &c.dtype),
                "E0503" | "E0505" | "E0510" => pick(py, |c| &c.shape),
                _ => pick(py, |c| &c.call),
            }
        }
        tfn::Error::Signature { .. } => pick(py, |c| &c.dispatch),
        tfn::Error::Shape(_) | tfn::Error::Output { .. } => pick(py, |c| &c.shape),
        tfn::Error::DType(_) => pick(py, |c| &c.dtype),
        tfn::Error::Config(_) => pick(py, |c| &c.call),
        tfn::Error::Runtime(_) => pick(py, |c| &c.run),
        tfn::Error::Internal(_) => pick(py, |c| &c.internal),
        // Stopped by `interrupt::check`: the exception Python's signal handler raised there
        // (KeyboardInterrupt for Ctrl-C), which it left pending.
        tfn::Error::Interrupted => {
            return PyErr::take(py)
                .unwrap_or_else(|| pyo3::exceptions::PyKeyboardInterrupt::new_err("interrupted"));
        }
        tfn::Error::Weights(tfn::weights::WeightsError::Io { source, .. }) => {
            return os_error(source.kind(), text);
        }
        tfn::Error::Weights(tfn::weights::WeightsError::Write { .. }) => {
            return pyo3::exceptions::PyOSError::new_err(text);
        }
        tfn::Error::Weights(_) => pick(py, |c| &c.checkpoint),
        // `tfn::Error` is non-exhaustive only in spirit: a new variant is a tfn.Error.
        #[allow(unreachable_patterns)]
        _ => pick(py, |c| &c.error),
    };
    match class {
        Ok(class) => raise(py, &class, text),
        Err(e) => e,
    }
}

fn is_dtype_kind(k: RejectionKind) -> bool {
    matches!(
        k,
        RejectionKind::DTypeConstraint | RejectionKind::DTypeMismatch | RejectionKind::FixedDType
    )
}

/// The dispatcher's view of a call's argument (as lowering builds it).
pub fn arg_kind(v: &tfn::Value) -> ArgKind {
    match v {
        tfn::Value::Tensor(t) => {
            ArgKind::Tensor { dtype: Some(t.dtype()), rank: Some(t.shape().len()) }
        }
        tfn::Value::TensorList(ts) => {
            let first = ts.first().map(|t| t.dtype());
            let dtype = if ts.iter().all(|t| Some(t.dtype()) == first) { first } else { None };
            ArgKind::TensorList { dtype, len: Some(ts.len()) }
        }
        tfn::Value::Attr(a) => ArgKind::of_attr(a.clone()),
    }
}

/// The text without rustc's closing `error: aborting due to N error(s)` line.
fn without_summary(text: &str) -> String {
    let lines: Vec<&str> =
        text.lines().filter(|l| !l.starts_with("error: aborting due to")).collect();
    lines.join("\n").trim_end().to_string()
}

/// The `OSError` subclass Python raises for an I/O error of this kind (`FileNotFoundError`
/// for a missing file, as `open` does), else `OSError`.
fn os_error(kind: std::io::ErrorKind, text: String) -> PyErr {
    use pyo3::exceptions::{
        PyFileNotFoundError, PyIsADirectoryError, PyNotADirectoryError, PyOSError,
        PyPermissionError,
    };
    use std::io::ErrorKind;
    match kind {
        ErrorKind::NotFound => PyFileNotFoundError::new_err(text),
        ErrorKind::PermissionDenied => PyPermissionError::new_err(text),
        ErrorKind::IsADirectory => PyIsADirectoryError::new_err(text),
        ErrorKind::NotADirectory => PyNotADirectoryError::new_err(text),
        _ => PyOSError::new_err(text),
    }
}
