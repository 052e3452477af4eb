#!/usr/bin/env bash
# Trains ki's built-in zstd dictionaries (src/odb/dictionaries) from the
# KernelIndex export: the export is imported into a scratch store, and
# bench_train_dicts trains one dictionary per kind (and for documents and
# facts objects) on the objects whose digest's first byte is even, then
# measures them on the other half, which they have not seen.
#   bench/catalog/train_dicts.sh [BUILD_DIR]   (default build/; rebuild ki after)
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build}
EXPORT=tests/data/kernelindex-export/catalog-2026-08-16-0022af0b.jsonl.zst
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$B/ki" init "$T/s" >/dev/null
"$B/ki" --store "$T/s" import kernelindex "$EXPORT" >/dev/null 2>&1
rm -f src/odb/dictionaries/*.zdict
"$B/bench_train_dicts" "$T/s/.ki" src/odb/dictionaries --half even
ls -l src/odb/dictionaries
