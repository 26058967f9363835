#!/usr/bin/env bash
# tfn and jax.jit side by side, cell by cell in one window (docs/benchmarks.md):
# every workload of benches/workloads.tfn at 4K, 256K, 4M and 16M elements, tfn through
# `tfnc bench` (call_into, outputs preallocated), jax through benches/peers/workloads_jax.py.
#
#   taskset -c 0 bash benches/vs_jax.sh        # 1 thread each (pinned)
#   THREADS=2 bash benches/vs_jax.sh           # 2 threads each (tfn's and jax's default here)
#   SIZES="262144" TFN_SIMD=128 bash benches/vs_jax.sh   # one size, tfn's 128-bit fallback
#
# Needs benches/peers/.venv (created by `bash benches/peers/setup.sh` when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin tfnc
tfnc="${CARGO_TARGET_DIR:-target}/release/tfnc"
py=benches/peers/.venv/bin/python
[ -x "$py" ] || bash benches/peers/setup.sh
sizes=${SIZES:-"4096 262144 4194304 16777216"}
threads=${THREADS:-1}
millis=${MILLIS:-800}

args_for() { # workload size -> --arg list
  local n=$2 rows=$(( $2 / 1024 ))
  case $1 in
    saxpy) echo "--arg x=f32[$n] --arg z=f32[$n]" ;;
    gelu|total) echo "--arg x=f32[$n]" ;;
    bias_relu) echo "--arg x=f32[$rows,1024] --arg bias=f32[1024]" ;;
    softmax|layernorm) echo "--arg x=f32[$rows,1024]" ;;
  esac
}

echo "| workload | elements | tfn µs | tfn GB/s | jax.jit µs | tfn speed-up |"
echo "|---|---|---|---|---|---|"
for n in $sizes; do
  for w in saxpy gelu bias_relu softmax layernorm total; do
    # shellcheck disable=SC2046
    tfn=$("$tfnc" bench benches/workloads.tfn "$w" $(args_for "$w" "$n") --threads "$threads" --json --millis "$millis")
    jax=$("$py" benches/peers/workloads_jax.py --threads "$threads" "$w" "$n")
    python3 - "$w" "$n" "$tfn" "$jax" <<'PY'
import json, sys
w, n, tfn, jax = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3]), json.loads(sys.argv[4])
print(f"| {w} | {n} | {tfn['median_us']:.1f} | {tfn['gbps']:.1f} | {jax['median_us']:.1f} "
      f"| {jax['median_us'] / tfn['median_us']:.2f}× |")
PY
  done
done
