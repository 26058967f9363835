//! [`WeightsError`]: what can go wrong reading, binding or writing a checkpoint.

/// A checkpoint error. Each names the file (`origin`), and the tensor and parameter when
/// one is concerned.
#[derive(Debug, thiserror::Error)]
pub enum WeightsError {
    #[error("cannot read `{path}`: {source}")]
    Io { path: String, source: std::io::Error },
    /// The file is not a valid safetensors file (or lies about its contents).
    #[error("`{path}` is not a safetensors file tfn can read: {reason}")]
    Format { path: String, reason: String },
    /// A tensor of the file cannot be used (a dtype tfn does not have, invalid bytes).
    #[error("tensor `{tensor}` of `{origin}`: {reason}")]
    Tensor { origin: String, tensor: String, reason: String },
    /// A parameter has no tensor (by its name or by its mapping).
    #[error("parameter `{param}` of `{function}`: {reason}")]
    Missing { function: String, param: String, reason: String },
    /// A tensor does not fit the parameter it is bound to (dtype, rank).
    #[error("parameter `{param}` of `{function}`: {reason}")]
    Mismatch { function: String, param: String, reason: String },
    /// A mapping is malformed or ambiguous.
    #[error("{0}")]
    Mapping(String),
    /// Writing failed (I/O: a missing directory, a full disk).
    #[error("cannot write `{path}`: {reason}")]
    Write { path: String, reason: String },
    /// What was asked cannot be written (two tensors of one name, a reserved name).
    #[error("cannot write `{path}`: {reason}")]
    Unwritable { path: String, reason: String },
}
