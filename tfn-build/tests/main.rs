//! `tfn-build`'s integration tests in one test binary (`it`): the build-script side
//! (diagnostics, `cargo:` directives, output files) and the generated modules against their
//! blessed snapshots. Run one with `cargo test -p tfn-build --test it <module>::`.
//!
//! `snapshot` changes the process's current directory while it checks (under a lock);
//! `build_script` uses absolute paths only, so the two share a process safely.
//!
//! `autotests = false` (`tfn-build/Cargo.toml`): a new file here is a module of this binary,
//! not a binary of its own; the workspace's tidy test (`tests/tidy.rs`) checks every file in
//! this directory is reachable from here.

mod build_script;
mod snapshot;
