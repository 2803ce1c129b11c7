#!/usr/bin/env bash
# Every test: Rust core (native), bindings (wasm under Node), then the built package (node --test).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
bash scripts/setup.sh

step() { printf '\n== %s\n' "$*"; }
step "format and lints"
cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings
cargo clippy --target wasm32-unknown-unknown --all-targets -- -D warnings
step "core (native cargo test)"
cargo test
step "bindings (wasm-bindgen-test under Node)"
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
  cargo test --target wasm32-unknown-unknown --tests
step "package (node --test against pkg/)"
bash scripts/build.sh
node --test js-tests/
