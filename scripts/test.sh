#!/usr/bin/env bash
# The test command (README, .ci/run): installs what the tests need, builds
# ki and its tests, and runs the whole suite. GPU tests skip, saying so, when
# no GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
jobs=$(nproc 2>/dev/null || echo 2)
ctest --test-dir build --output-on-failure -j"$jobs" "$@"
