#!/usr/bin/env bash
# The Python door's tests (called by scripts/test.sh): a fresh venv, `pip install ./python`
# (maturin builds the abi3 wheel in release mode), then the pytest suite against NumPy and, when
# it installs, jax; with Dask, mpi4py and Open MPI for the distributed tests. Set TFN_PY_JAX=0
# to skip installing jax (its tests then skip), TFN_PY_DIST=0 to skip the distributed ones.
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

# The distributed tests (tests/test_dask.py, tests/test_mpi.py): Dask and mpi4py from PyPI, Open
# MPI from Debian (mpirun, and mpicc if mpi4py has to build). TFN_PY_DIST=0 skips installing
# them (those tests then skip); so does a machine without apt-get or root, saying so.
if [ "${TFN_PY_DIST:-1}" = 1 ]; then
    start=$(date +%s)
    if ! command -v mpirun >/dev/null 2>&1; then
        if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
            echo "python: installing Open MPI (apt-get install openmpi-bin libopenmpi-dev)"
            apt-get update -qq >/dev/null
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
                openmpi-bin libopenmpi-dev >/dev/null
        else
            echo "python: no mpirun, and no apt-get as root to install Open MPI: the MPI tests skip"
        fi
    fi
    "$venv/bin/pip" install --quiet "dask[distributed]" mpi4py \
        || echo "python: dask or mpi4py did not install: their tests skip"
    echo "python: Open MPI, dask and mpi4py ready in $(( $(date +%s) - start )) s"
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
