//! The `tfn` crate's integration tests, one module per topic in one test binary (`it`): each
//! test binary links the whole compiler (Cranelift and egg included), so one binary instead of
//! one per file saves a link per file in every build. Run one topic with
//! `cargo test -p tfn --test it <module>::` (for example `cli::`, `session_api::`).
//!
//! The modules share one process: a test must not change process-wide state (environment
//! variables, the current directory) in-process. `fallbacks` needs `TFN_INJECT_FAULT` set, so
//! it runs that test in a child process.
//!
//! `autotests = false` (`Cargo.toml`): a new file here is a module of this binary, not a
//! binary of its own; the tidy test (`tidy`) checks every file in every crate's `tests/` is
//! reachable from its binary.

// The `tfnc` binary as users run it.
mod cli;
mod cli_graph;
mod cli_robustness;
mod fallbacks;

// The `Session` API and whole programs through it.
mod allocations;
mod derived_sizes;
mod index_ops;
mod large_programs;
mod loops;
mod numerics;
mod one_hot;
mod profile;
mod random;
mod session_api;
mod size_values;
mod storage_dtypes;
mod thread_counts;
mod weights;

// File tests (`tests/cases/`).
mod filetests;
mod filetests_exec;

// Property tests: random programs, JIT against the interpreter (and loops against their
// unrolled forms).
mod loop_fuzz;
mod random_index;
mod random_views;
mod random_window;

// The examples' models at toy sizes.
mod char_lm;
mod cnn;
mod minilm;

// The repository's own rules: `//!` docs, ARCHITECTURE.md's paths, test binaries.
mod tidy;
