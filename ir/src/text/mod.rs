//! The IR text format: [`print_graph`] and [`parse_graph`], with
//! `parse_graph(&print_graph(g)) == Ok(g)` for every graph (origins included).
//!
//! ```text
//! func gelu(x: f32[s0, s1]) -> (f32[s0]) {
//!   sym s0 = input(param 0 axis 0)
//!   sym s1 = input(param 0 axis 1)
//!   %0 = param 0 : f32[s0, s1]
//!   %1 = const 0.5 : f32[]
//!   %2 = mul %1, %0 : f32[s0, s1]
//!   %3 = sum %2 {axes=[1], keepdim=false} : f32[s0]
//!   return %3
//! }
//! ```
//!
//! - Header: the graph's name and its parameters' names and types, then the types of the
//!   results (redundant; the parser checks them). Names that are not identifiers
//!   (`[A-Za-z_][A-Za-z0-9_.]*`) are quoted like Rust strings.
//! - `sym sN = input(param P axis A, ...)` binds a size from parameter axes;
//!   `sym sN = EXPR` derives one: integers, symbols, fully parenthesised `(a + b)`, `-`, `*`,
//!   `/`, `ceil_div(EXPR, EXPR)` and `slice_len(EXPR, start, end|none, step)`.
//! - `check A == B` (after the symbols): two sizes (symbols or integers) the call must give
//!   equal values ([`crate::Graph::checks`]).
//! - One node per line, numbered in order from `%0`: `%N = OP OPERANDS {ATTRS} : TYPE`. Operands
//!   are earlier values; attributes are `key=value` in the order the printer writes them.
//!   `cast` has `{to=f64}`, reductions `{axes=[..], keepdim=..}`, `argmax` `{axis=.., keepdim=..}`,
//!   `transpose` `{perm=[..]}`, `concat` `{axis=..}`, `slice` `{axis, start, end, step}`,
//!   `full` `{value=..}`, `extern.NAME` `{attrs=[..]}`.
//! - Scalars: `true`/`false`, integers, floats that always contain `.`, `e`, `nan` or `inf`
//!   (printed by [`crate::attr::fmt_float`], so they read back bit-exactly; a NaN other than the
//!   canonical one is written `nan(0x...)` with its bits). In extern attributes, lists of floats
//!   are written with floats, and the empty float list as `float[]` (`[]` is an empty `Int[]`).
//! - A node with a non-default [`crate::Origin`] ends in `loc(FILE:START..END via "f", "g")`
//!   (either part may be missing): origins round-trip exactly. [`print_graph_without_origins`]
//!   leaves them out, for snapshots that should not change when source moves.
//! - `//` starts a comment to the end of the line. Whitespace, including newlines, is free.

mod attrs;
mod lex;
mod parse;
mod print;

pub use parse::{parse_graph, ParseError};
pub use print::{print_graph, print_graph_without_origins};
