#!/usr/bin/env bash
# Builds the npm package into pkg/: Rust -> wasm -> wasm-bindgen ES module -> wasm-opt -> template.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"

# Two modules from one source (Cargo.toml's features): the main one, which the package loads at
# import, and the simulator's, which simulate() and new Gate() load on first use (sim.js), so the
# fetch wrapper never compiles the simulator. The second has its own target dir: sharing one, each
# build would recompile the crate for the other's features.
cargo build --release --target wasm32-unknown-unknown --no-default-features --features serde,fetch
cargo build --release --target wasm32-unknown-unknown --no-default-features --features serde,sim \
  --target-dir target/sim
# Build beside pkg/ and swap it in, so a test running meanwhile never sees half a package.
out=$(mktemp -d "$PWD/.pkg-build.XXXXXX")
trap 'rm -rf "$out"' EXIT
# --keep-debug keeps the function names for bench/size.mjs's table of the module's parts (a copy
# in target/); wasm-opt below drops them from the shipped module.
wasm-bindgen target/wasm32-unknown-unknown/release/odds_gate.wasm \
  --target experimental-nodejs-module --keep-debug --out-dir "$out"
cp "$out/odds_gate_bg.wasm" target/odds_gate_bg.named.wasm
# One JS module where wasm-bindgen writes one per snippet: each costs a cold start its own
# resolve, read and compile (scripts/inline-snippets.mjs says how, and what it measured).
node scripts/inline-snippets.mjs "$out"
# Speed first (the call path runs for every request): -O3 rather than -Os or -Oz, which save
# about 1% here (the size is the compiler's inlining, opt-level in Cargo.toml). The producers and
# target_features sections only describe the build; nothing reads them.
optimise() {
  wasm-opt -O3 \
    --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
    --enable-reference-types --enable-multivalue --enable-mutable-globals \
    --strip-producers --strip-target-features \
    "$1" -o "$1"
}
optimise "$out/odds_gate_bg.wasm"
# The simulator's module as CommonJS (`--target nodejs`), which sim.js requires: its glue reads
# and compiles the wasm synchronously, so simulate() stays synchronous. .cjs because the package
# is "type": "module". It calls no snippet (the check keeps it so: a snippet is an ES module).
wasm-bindgen target/sim/wasm32-unknown-unknown/release/odds_gate.wasm \
  --target nodejs --out-name odds_gate_sim --out-dir "$out/sim"
if grep -q snippets "$out/sim/odds_gate_sim.js"; then
  echo "the simulator's module imports a snippet, which its CommonJS glue cannot require" >&2
  exit 1
fi
mv "$out/sim/odds_gate_sim.js" "$out/sim/odds_gate_sim.cjs"
rm -rf "$out/sim/snippets" "$out/sim/"*.d.ts
optimise "$out/sim/odds_gate_sim_bg.wasm"
cp -R pkg-template/. "$out/"
# The edge entry's glue (edge.js): the same module with its wasm imported, no Node builtins.
node scripts/edge-glue.mjs "$out"
cp LICENSE "$out/LICENSE"
# The package's README is the repository's, with the guide it links to (docs/, named in "files").
cp README.md "$out/README.md"
mkdir "$out/docs"
cp docs/*.md "$out/docs/"
chmod 755 "$out"
old=$(mktemp -d "$PWD/.pkg-old.XXXXXX")
[ -d pkg ] && mv pkg "$old/pkg"
mv "$out" pkg
rm -rf "$old"
echo "built pkg/ ($(wc -c < pkg/odds_gate_bg.wasm) bytes of wasm, the simulator's \
$(wc -c < pkg/sim/odds_gate_sim_bg.wasm))"
