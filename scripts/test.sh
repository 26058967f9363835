#!/usr/bin/env bash
# The README's second command: every test CI runs (`.ci/run` calls this and
# scripts/quickstart.sh, nothing else). Needs a Rust toolchain (cargo; rustfmt and clippy are
# used when installed) and, for the Python part, python3 with `venv` and access to a package
# index (pip installs maturin, numpy, pytest and, if it can, jax into a throw-away venv), and
# aarch64-linux-gnu-gcc with qemu-aarch64 (installed with apt-get when run as root; see below).
# TFN_PY=0 skips the Python part.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
step() {
    echo
    echo "== $1 ($(( $(date +%s) - started )) s)"
}

step "format (cargo fmt --check)"
if cargo fmt --version >/dev/null 2>&1; then
    cargo fmt --all -- --check
else
    echo "rustfmt not installed; skipping the format check"
fi

step "lints (cargo clippy, warnings are errors)"
if cargo clippy --version >/dev/null 2>&1; then
    cargo clippy --workspace --all-targets --locked -- -D warnings
else
    echo "clippy not installed; skipping lints"
fi

step "one release build: tfnc, the examples and the wheel resolve the same dependency features"
bash scripts/same-features.sh

step "cross tools for tests/cli/aot.rs: aarch64-linux-gnu-gcc and qemu-aarch64"
# The aarch64 objects of `tfnc build --target aarch64-unknown-linux-gnu` are linked by Debian's
# cross compiler and run under qemu-user. TFN_REQUIRE_CROSS=1 makes their test fail instead of
# skipping when the tools are missing; TFN_REQUIRE_CROSS=0 lets it skip.
if ! command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || ! command -v qemu-aarch64 >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        echo "installing gcc-aarch64-linux-gnu and qemu-user (apt-get)"
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user >/dev/null
    else
        echo "no aarch64-linux-gnu-gcc or qemu-aarch64, and no apt-get as root to install them:"
        echo "install gcc-aarch64-linux-gnu and qemu-user, or set TFN_REQUIRE_CROSS=0 to skip"
    fi
fi
export TFN_REQUIRE_CROSS="${TFN_REQUIRE_CROSS:-1}"

step "the Rust tests (cargo test --workspace; includes the docs' commands, tests/cli.rs)"
# JIT kernels cached on disk by one test process and loaded by another are compiled again and
# compared (TFN_CODE_CACHE=check, backend/src/code_cache.rs); the cache lives under target/.
export TFN_CODE_CACHE="${TFN_CODE_CACHE:-check}"
export TFN_CACHE_DIR="${TFN_CACHE_DIR:-$PWD/target/tfn-cache}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --workspace --locked 2>&1 | tee "$log"
# One closing line for the whole workspace (cargo prints one per test binary).
awk '/^test result:/ { passed += $4; failed += $6 } END { printf "tests: %d passed, %d failed\n", passed, failed }' "$log"

step "typed bindings: examples/typed runs, and a .tfn error fails a crate's build at file:line:col"
cargo run -q --locked -p tfn-example-typed
bash tfn-build/tests/scratch_build.sh

if [ "${TFN_PY:-1}" = 1 ]; then
    step "the Python module: the wheel (release, sharing target/) in a fresh venv, pytest"
    bash python/ci.sh
else
    step "the Python module: skipped (TFN_PY=0)"
fi

step "all tests passed"
