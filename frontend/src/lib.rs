//! # tfn-frontend
//!
//! `.tfn` source → checked [`tfn_ir::Library`] templates.
//!
//! Pipeline of one load ([`load_source`]): [`prepare`](mod@prepare) (newlines inside brackets,
//! nesting limits) → [`parser`] (pest grammar `grammar/tfn.pest` + Pratt parser → [`ast`]) →
//! [`check`] (every load-time rule; all diagnostics of the batch) → [`convert`] (AST →
//! templates, operators desugared to prelude calls) → added to the library. [`print_library`]
//! prints templates back as canonical `.tfn`.
//!
//! Architecture invariant: no pest type leaves this crate; everything user-facing is a
//! [`tfn_ir::Diagnostic`], and no input makes any function here panic.
//!
//! The language, its diagnostics and their codes are documented in `docs/language.md`.

#![forbid(unsafe_code)]

pub mod ast;
pub mod check;
pub mod convert;
mod load;
pub mod loader;
pub mod parser;
mod prepare;
pub mod print;
mod suggest;
mod syntax_error;

pub use load::{
    file_ids, load_source, prelude, PRELUDE, PRELUDE_GRADS, PRELUDE_GRADS_NAME, PRELUDE_NAME,
};
pub use loader::{
    read_source_file, resolve_path, FsLoader, MemLoader, SourceLoader, MAX_SOURCE_BYTES,
    STD_MODULES, STD_NN, STD_OPTIM,
};
pub use print::{print_library, signature_text};
pub use suggest::closest;
