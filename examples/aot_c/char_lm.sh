#!/usr/bin/env bash
# Builds the char-LM's forward (examples/char_lm/model.tfn's `gpt`) ahead of time and links the
# C client examples/aot_c/char_lm.c with it (docs/aot.md):
#
#   examples/aot_c/char_lm.sh OUT_DIR [HEADS [SCALE]]
#
# writes OUT_DIR/lm.o, lm.h, libtfn_rt.a and the program OUT_DIR/char_lm. HEADS (default 4)
# and SCALE (default 0.17677669529663687 = 1 / sqrt(128 / 4), model.tfn's 1 / sqrt(C / H))
# are baked into the object, as is p=0.0 (no dropout: the forward of inference). Every size
# (batch, context, channels, vocabulary, depth) is `?`: fixed only at the call. Runs `tfnc`
# from PATH (or $TFNC) and the system `cc` (or $CC); from the repository's root.
set -euo pipefail
out=${1:?usage: char_lm.sh OUT_DIR [HEADS [SCALE]]}
heads=${2:-4}
scale=${3:-0.17677669529663687}
args=(--arg 'tokens=i64[?, ?]' --arg 'key=i64[2]' --arg 'wte=f32[?, ?]' --arg 'wpe=f32[?, ?]')
for w in ln1_g ln1_b bo ln2_g ln2_b b1 b2; do args+=(--arg "$w=f32[?, ?]"); done
for w in wq wk wv wo w1 w2; do args+=(--arg "$w=f32[?, ?, ?]"); done
args+=(--arg 'lnf_g=f32[?]' --arg 'lnf_b=f32[?]' --arg "heads=$heads" --arg "scale=$scale" --arg p=0.0)
"${TFNC:-tfnc}" build examples/char_lm/model.tfn --fn gpt "${args[@]}" -o "$out" --prefix lm
"${CC:-cc}" -O2 -I"$out" examples/aot_c/char_lm.c "$out/lm.o" "$out/libtfn_rt.a" \
    -lpthread -ldl -lm -o "$out/char_lm"
