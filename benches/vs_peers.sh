#!/usr/bin/env bash
# tfn against jax.jit, torch eager and torch.compile, side by side, cell by cell in one window
# (docs/benchmarks.md): every workload of benches/workloads.tfn at 4K, 256K, 4M and 16M
# elements; tfn through `tfnc bench` (call_into, outputs preallocated), jax through
# benches/peers/workloads_jax.py, torch through benches/peers/workloads_torch.py (both engines).
# The last column is tfn's speed-up over the fastest peer of the row.
#
#   taskset -c 0 bash benches/vs_peers.sh        # 1 thread each (pinned)
#   THREADS=2 bash benches/vs_peers.sh           # 2 threads each
#   SIZES="262144" TFN_SIMD=128 bash benches/vs_peers.sh   # one size, tfn's 128-bit fallback
#   PEERS=jax bash benches/vs_peers.sh           # without torch
#   ISA=avx2 bash benches/vs_peers.sh            # every engine held to AVX2 (an AVX2-only CPU):
#                                                # TFN_SIMD=avx2, XLA's --xla_cpu_max_isa=AVX2,
#                                                # torch's ATEN_CPU_CAPABILITY=avx2 (eager and Inductor)
#
# Needs benches/peers/.venv (`bash benches/peers/setup.sh`, jax; `--torch` adds torch, several
# GB, never installed by CI). A peer that is not installed shows as "–".
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin tfnc
tfnc="${CARGO_TARGET_DIR:-target}/release/tfnc"
py=${PEERS_PYTHON:-benches/peers/.venv/bin/python}
[ -x "$py" ] || bash benches/peers/setup.sh
sizes=${SIZES:-"4096 262144 4194304 16777216"}
threads=${THREADS:-1}
millis=${MILLIS:-800}
peers=${PEERS:-"jax torch"}
case ${ISA:-native} in
  native) ;;
  avx2) export TFN_SIMD=avx2 PEERS_XLA_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 ;;
  *) echo "vs_peers.sh: ISA=${ISA} (expected native or avx2)" >&2; exit 2 ;;
esac
has() { "$py" -c "import $1" 2>/dev/null; }
with_jax=no; with_torch=no
case " $peers " in *" jax "*) has jax && with_jax=yes ;; esac
case " $peers " in *" torch "*) has torch && with_torch=yes ;; esac

# shellcheck source=benches/workload_args.sh
source benches/workload_args.sh

echo "| workload | elements | tfn µs | tfn GB/s | jax.jit µs | torch eager µs | torch.compile µs | tfn speed-up over the fastest peer |"
echo "|---|---|---|---|---|---|---|---|"
for n in $sizes; do
  for w in saxpy gelu bias_relu softmax layernorm total; do
    # shellcheck disable=SC2046
    tfn=$("$tfnc" bench benches/workloads.tfn "$w" $(args_for "$w" "$n") --threads "$threads" --json --millis "$millis")
    jax='{}'; torch='{}'
    [ $with_jax = yes ] && jax=$("$py" benches/peers/workloads_jax.py --threads "$threads" "$w" "$n")
    [ $with_torch = yes ] && torch=$("$py" benches/peers/workloads_torch.py --threads "$threads" "$w" "$n")
    python3 - "$w" "$n" "$tfn" "$jax" "$torch" <<'PY'
import json, sys
w, n = sys.argv[1], int(sys.argv[2])
tfn, jax, torch = (json.loads(a) for a in sys.argv[3:6])
peers = [jax.get("median_us"), torch.get("eager_us"), torch.get("compile_us")]
cell = lambda v: "–" if v is None else f"{v:.1f}"
fastest = min((p for p in peers if p is not None), default=None)
ratio = "–" if fastest is None else f"{fastest / tfn['median_us']:.2f}×"
print(f"| {w} | {n} | {tfn['median_us']:.1f} | {tfn['gbps']:.1f} | "
      + " | ".join(cell(p) for p in peers) + f" | {ratio} |")
PY
  done
done
