#!/usr/bin/env bash
# Checks that `tfnc` (cargo build --release --bin tfnc), the examples (which also build the
# dev-dependencies), the Python module (the wheel) and the typed example resolve the same
# features for every dependency they share: otherwise each of them recompiles the shared crates
# (Cranelift, egg, gemm, ...) in its own configuration instead of reusing one release build.
# The pins that make them agree are in the root Cargo.toml. Takes about a second (no build).
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# One line per crate: `name version features` (deduplicated).
features() {
    cargo tree --locked --quiet -f '{p} {f}' --prefix none "$@" | sed 's/ (\*)$//' | sort -u
}
features -p tfn -e normal,build >"$work/tfnc"
features -p tfn -e normal,build,dev >"$work/examples"
features -p tfn-python -e normal,build >"$work/wheel"
features -p tfn-example-typed -e normal,build >"$work/typed"
status=0
for config in examples wheel typed; do
    # Crates of `tfnc` whose features differ in the other configuration (new crates are fine).
    changed=$(comm -23 "$work/tfnc" "$work/$config")
    if [ -n "$changed" ]; then
        echo "error: these dependencies of tfnc get other features when building the $config:" >&2
        echo "$changed" | sed 's/^/  /' >&2
        grep -F -f <(echo "$changed" | cut -d' ' -f1 | sed 's/$/ /') "$work/$config" | sed 's/^/  now: /' >&2
        status=1
    fi
done
[ "$status" = 0 ] && echo "tfnc, the examples, the wheel and the typed example share every dependency's features"
exit "$status"
