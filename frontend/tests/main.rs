//! The front end's integration tests, one module per topic in one test binary (`it`): the
//! workspace's file tests (`tests/filetests.rs`: the `parse` and `diag` stages of
//! `tests/cases/`, so the front end is tested on its own), the source fuzzer, hostile sources
//! and the op table. Run one topic with `cargo test -p tfn-frontend --test it <module>::`.
//!
//! `autotests = false` (`frontend/Cargo.toml`): a new file here is a module of this binary,
//! not a binary of its own; the workspace's tidy test (`tests/tidy.rs`) checks every file in
//! this directory is reachable from here.

#[path = "../../tests/filetests.rs"]
mod filetests;

mod fuzz;
mod hostile;
mod op_table;
