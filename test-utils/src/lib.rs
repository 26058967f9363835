//! # tfn-test-utils
//!
//! The one test toolkit of the workspace (dev-only, never published): every crate's unit and
//! integration tests take their random data, property-test configuration and tensor comparison
//! from here instead of keeping their own copies.
//!
//! - [`Rng`]: the project's one generator ([`tfn_ir::rng::SplitMix`]) with test-data helpers;
//!   [`random_tensor`], [`random_array`] and [`random_inputs`] draw from it.
//! - [`proptest_config`]: the configuration of every `proptest!` block (a fixed seed and a
//!   per-test case count, both overridden by `PROPTEST_RNG_SEED`/`PROPTEST_CASES`), and
//!   [`fuzz_cases`]/[`fuzz_seed`] for the hand-rolled fuzzers (`TFN_FUZZ_CASES`,
//!   `TFN_FUZZ_SEED`).
//! - [`compare`]/[`assert_close`] with a named [`Tolerance`]: the one documented policy for
//!   how close a computed tensor must be to its reference (see [`tolerance`]).
//! - [`zeros_like`] and [`bits`]: small tensor utilities the comparisons need; [`diff`]: the
//!   line diff expectation (file) tests print; [`random_graph`]: the random op graphs of the
//!   differential tests, and [`graph_source`] to write one as a `.tfn` function; [`Scratch`]: a test's directory, removed when it
//!   passes.
//!
//! Dependency direction: this crate depends on `tfn-ir` (for [`tfn_ir::DType`] and
//! [`tfn_ir::Tensor`]); the library crates name it only as a dev-dependency.

pub mod config;
pub mod diff;
pub mod random;
pub mod random_graph;
pub mod scratch;
pub mod tensors;
pub mod tolerance;

pub use config::{fuzz_cases, fuzz_seed, proptest_config};
pub use diff::diff;
pub use random::{random_array, random_inputs, random_tensor, Rng};
pub use random_graph::{graph_signature, graph_source, random_graph, stored_in, GRAPH_DTYPES};
pub use scratch::Scratch;
pub use tensors::{bits, zeros_like};
pub use tfn_ir::rng::SplitMix;
pub use tolerance::{assert_close, compare, Bound, Tolerance};
