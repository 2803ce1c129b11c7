#!/usr/bin/env bash
# The main job: install what is missing, build the package, run the eight-worker demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
node demo/eight-workers.mjs
