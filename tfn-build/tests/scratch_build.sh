#!/usr/bin/env bash
# A real `cargo build` of a scratch crate using tfn-build (run by scripts/test.sh): with a `.tfn`
# error the build must fail and print the diagnostic at file:line:col; fixed, it must build and
# its typed call must run. Shares the workspace's target directory: the dependencies are reused;
# tfn's own crates are compiled again (a path dependency of another workspace gets other
# artifact hashes), unoptimised as in the workspace (about a minute; optimised, as the `"*"`
# override alone made them, they took ten).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/src" "$dir/ops"
cat >"$dir/Cargo.toml" <<TOML
[package]
name = "tfn-scratch-typed"
version = "0.0.0"
edition = "2021"
publish = false

[workspace]

[dependencies]
tfn = { path = "$root" }
ndarray = "0.16"

[build-dependencies]
tfn-build = { path = "$root/tfn-build" }

# As in the workspace, so the shared target directory's artifacts are reused: dependencies
# optimised, tfn's own crates (members there, path dependencies here) not.
[profile.dev.package."*"]
opt-level = 2
[profile.dev.package.tfn]
opt-level = 0
[profile.dev.package.tfn-ir]
opt-level = 0
[profile.dev.package.tfn-frontend]
opt-level = 0
[profile.dev.package.tfn-passes]
opt-level = 0
[profile.dev.package.tfn-backend]
opt-level = 0
[profile.dev.package.tfn-build]
opt-level = 0
TOML
cp "$root/Cargo.lock" "$dir/Cargo.lock"
echo 'fn main() { tfn_build::compile("ops/f.tfn").unwrap(); }' >"$dir/build.rs"
cat >"$dir/src/main.rs" <<'RS'
#![deny(warnings)]
mod f {
    include!(concat!(env!("OUT_DIR"), "/f.rs"));
}
fn main() {
    let lib = f::Lib::new().unwrap();
    let x = ndarray::array![1.0f32, 2.0];
    println!("{}", lib.twice(x.view()).unwrap());
}
RS
printf 'fn twice(Tensor<f32> x) -> Tensor<f32> {\n    return x + y\n}\n' >"$dir/ops/f.tfn"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
if (cd "$dir" && cargo build -q 2>"$dir/err.txt"); then
  echo "scratch build with a .tfn error succeeded" >&2
  exit 1
fi
if ! grep -q -- "--> ops/f.tfn:2:16" "$dir/err.txt"; then
  echo "the failed build does not point at ops/f.tfn:2:16:" >&2
  cat "$dir/err.txt" >&2
  exit 1
fi
printf 'fn twice(Tensor<f32> x) -> Tensor<f32> {\n    return x + x\n}\n' >"$dir/ops/f.tfn"
out="$(cd "$dir" && cargo run -q 2>&1)"
if [ "$out" != "[2, 4]" ] && [ "$out" != "[2.0, 4.0]" ]; then
  echo "unexpected output of the fixed scratch crate: $out" >&2
  exit 1
fi
echo "scratch crate: error at ops/f.tfn:2:16 fails the build; fixed, prints $out"
