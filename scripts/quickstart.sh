#!/usr/bin/env bash
# The README's first command: build `tfnc` (release), check examples/nn.tfn, run its MLP through
# the JIT and through the interpreter (tfn's reference) and compare the two results, show the
# fused kernels of `gelu`, and say where `tfnc` is. Needs a Rust toolchain (cargo); the first
# run compiles about 150 crates (see README.md for how long on a 2-core machine), later runs
# take seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
tfnc="$target/release/tfnc"

echo "== building tfnc (cargo build --release --bin tfnc; cargo prints each crate it compiles)"
start=$(date +%s)
cargo build --release --locked --bin tfnc
echo "built in $(( $(date +%s) - start )) s"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo
echo "== tfnc check examples/nn.tfn"
"$tfnc" check examples/nn.tfn

args=(--arg x=examples/data/x.npy --arg w1=examples/data/w1.npy --arg b1=examples/data/b1.npy
      --arg w2=examples/data/w2.npy --arg b2=examples/data/b2.npy)
echo
echo "== mlp through the JIT (compiled kernels) and through the interpreter (the reference)"
"$tfnc" run examples/nn.tfn mlp "${args[@]}" --backend jit
"$tfnc" run examples/nn.tfn mlp "${args[@]}" --backend jit --out "$work/jit.npy"
"$tfnc" run examples/nn.tfn mlp "${args[@]}" --backend interp --out "$work/interp.npy"
# The comparison is itself a tfn function, run on the interpreter: the largest |jit - interp|
# and the largest |interp|, so that the tolerance is relative.
cat >"$work/compare.tfn" <<'TFN'
fn compare(Tensor a, Tensor b) -> (Tensor, Tensor) {
    return (max(abs(a - b)), max(abs(b)))
}
TFN
summary=$("$tfnc" run "$work/compare.tfn" compare --arg a="$work/jit.npy" \
          --arg b="$work/interp.npy" --backend interp)
# `out0: f32[] min=2.384e-7 max=2.384e-7 mean=... [2.384e-7]`: the value is the max.
value() { sed -n "s/^$1: .* max=\([^ ]*\) .*/\1/p" <<<"$summary"; }
diff=$(value out0)
scale=$(value out1)
if [ -z "$diff" ] || [ -z "$scale" ]; then
    echo "error: cannot read the comparison:" >&2
    echo "$summary" >&2
    exit 1
fi
# f32 results of the same math in another order (fused, vectorised, FMA): within 1e-5 relative.
if awk -v d="$diff" -v s="$scale" 'BEGIN { exit !(d <= 1e-5 * (s > 1 ? s : 1)) }'; then
    echo "the JIT and the interpreter agree: max |jit - interp| = $diff (largest |value| $scale)"
else
    echo "error: the JIT and the interpreter disagree: max |jit - interp| = $diff (largest |value| $scale)" >&2
    exit 1
fi

echo
echo "== gelu's fused kernels (tfnc ir --stage fused)"
"$tfnc" ir examples/nn.tfn --fn gelu --stage fused --arg 'x=f32[4, 8]'

echo
echo "== tfnc is $tfnc"
echo "   to call it as \`tfnc\`: cargo install --locked --path .   (copies it to ~/.cargo/bin)"
case "$target" in /*) dir="$target/release" ;; *) dir="$PWD/$target/release" ;; esac
echo "   or, for this shell:     export PATH=\"$dir:\$PATH\""
