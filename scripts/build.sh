#!/usr/bin/env bash
# Builds the npm package into pkg/: Rust -> wasm -> wasm-bindgen ES module -> wasm-opt -> template.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"

cargo build --release --target wasm32-unknown-unknown
rm -rf pkg
wasm-bindgen target/wasm32-unknown-unknown/release/odds_gate.wasm \
  --target experimental-nodejs-module --out-dir pkg
wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
  --enable-reference-types --enable-multivalue --enable-mutable-globals \
  pkg/odds_gate_bg.wasm -o pkg/odds_gate_bg.wasm
cp -R pkg-template/. pkg/
echo "built pkg/ ($(wc -c < pkg/odds_gate_bg.wasm) bytes of wasm)"
