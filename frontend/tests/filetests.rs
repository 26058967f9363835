//! Runs the workspace's file tests (`tests/filetests.rs`: the `parse` and `diag` stages of
//! `tests/cases/`) as part of this crate's tests, so the front end is tested on its own.

#[path = "../../tests/filetests.rs"]
mod filetests;
