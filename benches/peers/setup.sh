#!/usr/bin/env bash
# Creates benches/peers/.venv with the peers the benchmarks compare against (numpy, jax[cpu]);
# with --torch also torch (several GB: on demand only, never in CI).
#   bash benches/peers/setup.sh && benches/peers/.venv/bin/python benches/peers/char_lm_jax.py --help
#   bash benches/peers/setup.sh --torch    # for benches/vs_peers.sh's torch columns
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ ! -x "$here/.venv/bin/python" ]; then
    python3 -m venv "$here/.venv"
fi
"$here/.venv/bin/pip" install --quiet --upgrade pip
"$here/.venv/bin/pip" install --quiet numpy "jax[cpu]"
if [ "${1:-}" = "--torch" ]; then
    "$here/.venv/bin/pip" install --quiet torch
    "$here/.venv/bin/python" -c "import torch; print('torch', torch.__version__)"
fi
"$here/.venv/bin/python" -c "import jax; print('jax', jax.__version__, 'ready in', '$here/.venv')"
