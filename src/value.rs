//! Call arguments and results of a [`crate::Session`]: tensors (borrowed or owned `ndarray`
//! arrays of any strides) and compile-time attribute values, defined in `tfn-ir`
//! (`tfn_ir::call`) so that the AOT runtime (`tfn-rt`) has the very same types.

pub use tfn_ir::call::Value;
pub use tfn_ir::TensorValue;

/// A caller-provided output buffer for [`crate::Session::call_into`]: the backend's one
/// mutable view type ([`tfn_backend::tensors::TensorViewMut`]), any dtype and strides.
pub use tfn_backend::tensors::TensorViewMut as OutputMut;
