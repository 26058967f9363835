//! # tfn
//!
//! A compiler for a small tensor language that emits fused, vectorised CPU kernels.
//! This crate is the top of the stack: [`Session`] (load `.tfn` files, call their functions
//! with `ndarray` arguments) and the `tfnc` command-line driver.
//!
//! ```no_run
//! use tfn::{Session, Value};
//! let s = Session::new();
//! s.load_str("nn.tfn", "fn twice(Tensor x) -> Tensor { return x + x }").unwrap();
//! let x = ndarray::ArrayD::<f32>::ones(ndarray::IxDyn(&[4]));
//! let y = s.call("twice", &[Value::from(x.view())]).unwrap();
//! ```

// `deny`, not `forbid`: the one exception is memory-mapping a checkpoint
// (`weights/file.rs`, `map`), which `memmap2` can only offer as `unsafe`.
#![deny(unsafe_code)]

pub mod aot;
pub mod cli;
mod error;
pub mod gradcheck;
mod handle;
pub mod interrupt;
pub mod npy;
pub mod pipeline;
mod profile;
mod program;
mod session;
mod signature;
mod value;
pub mod weights;

pub use error::Error;
pub use handle::Instantiated;
pub use profile::{KernelProfile, Profile, Roofline};
pub use session::{Backend, ExternFn, Session, SessionOptions, Stats, MAX_THREADS};
pub use tfn_ir::call::{Element, Scalar};
pub use tfn_ir::{half, Attr, DType, Diagnostic, Tensor};
pub use value::{OutputMut, TensorValue, Value};
pub use weights::{save_safetensors, Mapping, Weights};
