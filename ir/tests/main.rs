//! The IR crate's integration tests (binding and running graphs, the NumPy-generated
//! interpreter cases, the random ops' statistics, the text format), one module per topic in
//! one test binary (`it`). Run one topic with `cargo test -p tfn-ir --test it <module>::`.
//!
//! `autotests = false` (`ir/Cargo.toml`): a new file here is a module of this binary, not a
//! binary of its own; the workspace's tidy test (`tests/tidy.rs`) checks every file in this
//! directory is reachable from here.

mod common;

mod bind_and_run;
mod interp_cases;
mod random_stats;
mod text_format;
