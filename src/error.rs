//! The error type of [`crate::Session`]: every failure of loading or calling is a value.

use tfn_ir::diagnostic::render_all;
use tfn_ir::{Diagnostic, SourceMap};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A source file failed to parse or check. `rendered` holds the rustc-style text.
    #[error("{rendered}")]
    Load { diagnostics: Vec<Diagnostic>, rendered: String },
    /// A source file could not be read.
    #[error("cannot read `{path}`: {message}")]
    Io { path: String, message: String },
    /// No function or op of that name is loaded.
    #[error("unknown function `{name}`{}", suggestion.as_ref().map(|s| format!("; did you mean `{s}`?")).unwrap_or_default())]
    UnknownFunction { name: String, suggestion: Option<String> },
    /// The call's arguments fit no overload, or the function cannot be instantiated for
    /// them (dtype constraint, static shape conflict, ...). `rendered` names the culprit.
    #[error("{rendered}")]
    Call { diagnostics: Vec<Diagnostic>, rendered: String },
    /// An [`crate::Instantiated`] handle was called with arguments of another signature.
    #[error("the handle was instantiated for `{expected}` but called with `{got}`")]
    Signature { expected: String, got: String },
    /// The arguments' runtime sizes do not fit together (names both shapes).
    #[error("{0}")]
    Shape(String),
    /// A value the signature does not dispatch on has the wrong dtype or is no tensor: a
    /// cotangent of a vjp, which must be a tensor of its result's dtype.
    #[error("{0}")]
    DType(String),
    /// An output buffer passed to `call_into` does not fit the result.
    #[error("output {index}: {message}")]
    Output { index: usize, message: String },
    /// The environment configures tfn wrongly (e.g. `TFN_MAX_TENSOR_BYTES=abc`).
    #[error("{0}")]
    Config(String),
    /// Running the function failed (e.g. an extern kernel reported an error).
    #[error("{0}")]
    Runtime(String),
    /// A checkpoint could not be read, bound or written (names the file, the tensor and the
    /// parameter).
    #[error("{0}")]
    Weights(crate::weights::WeightsError),
    /// The call was stopped between two trips of a loop because [`crate::interrupt`]'s check
    /// asked for it (Ctrl-C in Python).
    #[error("interrupted")]
    Interrupted,
    /// A bug in tfn, not in the caller's program: please report it.
    #[error("internal compiler error: {0}")]
    Internal(String),
}

/// A result of another type than its signature's (`Element::from_result` in the code
/// `tfn-build` generates): a bug, not the caller's.
impl From<tfn_ir::call::ResultTypeError> for Error {
    fn from(e: tfn_ir::call::ResultTypeError) -> Error {
        Error::Internal(e.0)
    }
}

impl Error {
    /// A call error caused by the call's sizes (not its signature) is a [`Error::Shape`].
    pub(crate) fn into_shape_error(self) -> Error {
        match self {
            Error::Call { rendered, .. } => Error::Shape(rendered),
            other => other,
        }
    }

    pub(crate) fn from_diagnostics(
        kind: DiagKind,
        diags: Vec<Diagnostic>,
        sources: &SourceMap,
    ) -> Error {
        let rendered = render_all(&diags, sources).trim_end().to_string();
        match kind {
            DiagKind::Load => Error::Load { diagnostics: diags, rendered },
            DiagKind::Call => Error::Call { diagnostics: diags, rendered },
        }
    }
}

pub(crate) enum DiagKind {
    Load,
    Call,
}
