//! The optimiser's, fusion's and autodiff's integration tests, one module per topic in one
//! test binary (`it`): each test binary links egg, so one binary instead of one per file saves
//! a link per file in every build. Run one topic with
//! `cargo test -p tfn-passes --test it <module>::`.
//!
//! `autotests = false` (`passes/Cargo.toml`): a new file here is a module of this binary, not
//! a binary of its own; the workspace's tidy test (`tests/tidy.rs`) checks every file in this
//! directory is reachable from here.

mod autodiff_common;
mod optimize_common;

mod autodiff_composed;
mod autodiff_primitives;
mod optimize_random;
mod optimize_simplify;
mod optimize_soundness;
mod optimize_timing;
mod optimize_user_rules;
