#!/usr/bin/env bash
# The Python door's tests (called by scripts/test.sh): a fresh venv, `pip install ./python`
# (maturin builds the abi3 wheel in release mode), then the pytest suite against NumPy and, when
# it installs, jax. Set TFN_PY_JAX=0 to skip installing jax (its tests then skip).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
venv="$work/venv"

python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --upgrade pip
"$venv/bin/pip" install --quiet pytest numpy
if [ "${TFN_PY_JAX:-1}" = 1 ]; then
    "$venv/bin/pip" install --quiet "jax[cpu]" || echo "jax did not install: its comparisons skip"
fi

# maturin builds in the workspace's target directory, so the wheel reuses the release build of
# scripts/quickstart.sh (the same features: see scripts/same-features.sh) and compiles only
# the Python module and its own dependencies (pyo3, numpy).
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$(cd "$here/.." && pwd)/target}"
echo "python: building the wheel (cargo build --release in $CARGO_TARGET_DIR) and installing it"
start=$(date +%s)
"$venv/bin/pip" install --quiet "$here"
echo "python: wheel built and installed in $(( $(date +%s) - start )) s"

# From tests/, so `import tfn` is the installed package, not the source tree's python/tfn.
cd "$here/tests"
export TFN_STRICT=1   # a compiler fallback fails the suite, as in `cargo test`
"$venv/bin/python" -m pytest -q -p no:cacheprovider
