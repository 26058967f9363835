//! How many random cases a test runs, and from which seed: [`proptest_config`] for
//! `proptest!` blocks, [`fuzz_cases`]/[`fuzz_seed`] for hand-rolled fuzz loops.
//!
//! A plain `cargo test` is deterministic: every property test runs its own case count from its
//! own fixed seed, so a failure reproduces on every machine. The environment explores further:
//!
//! | variable | meaning | read by |
//! |---|---|---|
//! | `PROPTEST_CASES` | cases of every `proptest!` block (replaces each test's own count) | [`proptest_config`] |
//! | `PROPTEST_RNG_SEED` | seed of every `proptest!` block (replaces each test's own seed) | [`proptest_config`] |
//! | `PROPTEST_MAX_SHRINK_ITERS` | shrink steps after a failure (default [`MAX_SHRINK_ITERS`]) | [`proptest_config`] |
//! | `TFN_FUZZ_CASES` | cases of the hand-rolled fuzzers (the front end's source mutator) | [`fuzz_cases`] |
//! | `TFN_FUZZ_SEED` | their seed | [`fuzz_seed`] |
//!
//! `.ci/run` sets `TFN_FUZZ_CASES`; `PROPTEST_CASES` is for exploring locally (for example
//! `PROPTEST_CASES=5000 cargo test -p tfn-backend random_graphs`).

use proptest::test_runner::{Config as ProptestConfig, RngSeed};

/// Shrink steps after a failure unless `PROPTEST_MAX_SHRINK_ITERS` says otherwise: enough to
/// shrink a random program to its shortest failing prefix, bounded so a failure reports in
/// seconds.
pub const MAX_SHRINK_ITERS: u32 = 300;

fn env_set(name: &str) -> bool {
    std::env::var_os(name).is_some()
}

/// The configuration of a `proptest!` block: `cases` cases from the fixed seed `seed`, unless
/// `PROPTEST_CASES`/`PROPTEST_RNG_SEED` are set (then theirs); no regression files are
/// written (a failure prints its seed and shrunk case instead).
///
/// Adjust a field with struct update syntax where a test needs to:
/// `ProptestConfig { max_shrink_iters: 50, ..proptest_config(100, 7) }`.
pub fn proptest_config(cases: u32, seed: u64) -> ProptestConfig {
    // `default()` has already read every `PROPTEST_*` variable.
    let default = ProptestConfig::default();
    ProptestConfig {
        cases: if env_set("PROPTEST_CASES") { default.cases } else { cases },
        rng_seed: match default.rng_seed {
            RngSeed::Random => RngSeed::Fixed(seed),
            fixed => fixed,
        },
        max_shrink_iters: if env_set("PROPTEST_MAX_SHRINK_ITERS") {
            default.max_shrink_iters
        } else {
            MAX_SHRINK_ITERS
        },
        failure_persistence: None,
        ..default
    }
}

/// `TFN_FUZZ_CASES` if it is set to a number, else `default`.
pub fn fuzz_cases(default: usize) -> usize {
    std::env::var("TFN_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// `TFN_FUZZ_SEED` if it is set to a number, else `default`.
pub fn fuzz_seed(default: u64) -> u64 {
    std::env::var("TFN_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}
