//! The backend's integration tests, one module per topic in one test binary (`it`): each test
//! binary links Cranelift and egg, so one binary instead of one per file saves a link per file
//! in every build. Run one topic with `cargo test -p tfn-backend --test it <module>::`.
//!
//! `autotests = false` (`backend/Cargo.toml`): a new file here is a module of this binary, not
//! a binary of its own; the workspace's tidy test (`tests/tidy.rs`) checks every file in this
//! directory is reachable from here.

mod common;
mod math_jit;

mod aot;
mod cache;
mod copy_kernels;
mod math_accuracy;
mod matmul_epilogue;
mod packed_gemm;
mod random_graphs;
mod run_cases;
mod scans;
mod threads;
mod wide;
