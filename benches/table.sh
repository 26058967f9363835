#!/usr/bin/env bash
# Prints the docs/benchmarks.md table: every workload of benches/workloads.tfn through
# `tfnc bench` (JIT and interpreter, one thread, outputs preallocated), as markdown.
#
#   bash benches/table.sh                 # 256K and 16M elements
#   SIZES="262144" bash benches/table.sh  # one size
#   THREADS=2 bash benches/table.sh       # the JIT on 2 threads (the interpreter stays on 1)
#
# Pin it to a core on a shared machine: `taskset -c 0 bash benches/table.sh`.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin tfnc
tfnc="${CARGO_TARGET_DIR:-target}/release/tfnc"
sizes=${SIZES:-"262144 16777216"}
millis=${MILLIS:-1500}
threads=${THREADS:-1}

# shellcheck source=benches/workload_args.sh
source benches/workload_args.sh

echo "| workload | elements | JIT µs | JIT GB/s | interpreter µs | JIT speed-up | first call ms |"
echo "|---|---|---|---|---|---|---|"
for n in $sizes; do
  for w in saxpy gelu bias_relu softmax layernorm total; do
    # shellcheck disable=SC2046
    jit=$("$tfnc" bench benches/workloads.tfn "$w" $(args_for "$w" "$n") --threads "$threads" --json --millis "$millis")
    # shellcheck disable=SC2046
    interp=$("$tfnc" bench benches/workloads.tfn "$w" $(args_for "$w" "$n") --backend interp --threads 1 --json --millis "$millis")
    python3 - "$w" "$n" "$jit" "$interp" <<'PY'
import json, sys
w, n, jit, interp = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3]), json.loads(sys.argv[4])
print(f"| {w} | {n} | {jit['median_us']:.1f} | {jit['gbps']:.1f} | {interp['median_us']:.1f} "
      f"| {interp['median_us'] / jit['median_us']:.1f}× | {jit['first_call_us'] / 1e3:.2f} |")
PY
  done
done
