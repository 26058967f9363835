//! Checkpoints: tensors by name from and to **safetensors** files.
//!
//! - [`Weights`] (`file.rs`): a safetensors file, memory-mapped; its header is validated
//!   against the file (by the `safetensors` crate, plus tfn's own bounds) before anything is
//!   read, and tensors are borrowed from the mapping, never copied (except `bool` tensors,
//!   whose bytes are checked, and data not aligned for its dtype).
//! - [`Mapping`] (`mapping.rs`): how a function's parameters are named in a checkpoint,
//!   `param=tensor-pattern[:T]`; `{i}` stacks `i = 0, 1, …` along a new leading axis, `:T`
//!   reads a stored `[out, in]` matrix as `[in, out]` (a transposed view).
//! - [`Bound`], [`NamedTensors`], the [`Store`] and [`Params`] traits (`bind.rs`): a store of
//!   named tensors with a mapping applied, which [`crate::Session::call_with`] (`call.rs`)
//!   asks for the parameters a call does not give.
//! - [`save_safetensors`] (`write.rs`): writes named tensors, atomically.
//!
//! Every failure is a [`WeightsError`] naming the file, the tensor and, when binding, the
//! parameter.

mod bind;
mod call;
mod error;
mod file;
mod mapping;
mod write;

pub use bind::{Bound, NamedTensors, ParamTensor, Params, Store};
pub use call::BoundArgs;
pub(crate) use call::{explain, merged, no_such_param};
pub use error::WeightsError;
pub(crate) use file::tensor_view;
pub use file::Weights;
pub use mapping::{MapEntry, Mapping};
pub use write::{encode_safetensors, save_safetensors};
