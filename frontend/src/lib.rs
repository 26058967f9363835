//! # tfn-frontend
//!
//! The front end of tfn: `.tfn` source → checked [`tfn_ir::Library`] templates.
pub mod ast;
pub mod parser;
mod prepare;
mod syntax_error;
