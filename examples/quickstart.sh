#!/usr/bin/env bash
# The README's main job: check an example file, then run its MLP through the JIT and the
# interpreter and compare the two results.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin tfnc
tfnc="${CARGO_TARGET_DIR:-target}/release/tfnc"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
args=(--arg x=examples/data/x.npy --arg w1=examples/data/w1.npy --arg b1=examples/data/b1.npy
      --arg w2=examples/data/w2.npy --arg b2=examples/data/b2.npy)
"$tfnc" check examples/nn.tfn
echo "mlp through the JIT:"
"$tfnc" run examples/nn.tfn mlp "${args[@]}" --backend jit
"$tfnc" run examples/nn.tfn mlp "${args[@]}" --backend jit --out "$out/jit.npy"
"$tfnc" run examples/nn.tfn mlp "${args[@]}" --backend interp --out "$out/interp.npy"
echo "gelu, fused (kernels):"
"$tfnc" ir examples/nn.tfn --fn gelu --stage fused --arg 'x=f32[4, 8]'
