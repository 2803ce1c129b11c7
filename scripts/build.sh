#!/usr/bin/env bash
# Builds the npm package into pkg/: Rust -> wasm -> wasm-bindgen ES module -> wasm-opt -> template.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"

cargo build --release --target wasm32-unknown-unknown
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
wasm-opt -O3 \
  --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
  --enable-reference-types --enable-multivalue --enable-mutable-globals \
  --strip-producers --strip-target-features \
  "$out/odds_gate_bg.wasm" -o "$out/odds_gate_bg.wasm"
cp -R pkg-template/. "$out/"
chmod 755 "$out"
old=$(mktemp -d "$PWD/.pkg-old.XXXXXX")
[ -d pkg ] && mv pkg "$old/pkg"
mv "$out" pkg
rm -rf "$old"
echo "built pkg/ ($(wc -c < pkg/odds_gate_bg.wasm) bytes of wasm)"
