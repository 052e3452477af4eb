#!/usr/bin/env bash
# ki's main job on a local store, from nothing: install dependencies, build,
# create a store, add the seed record and the KernelIndex example registry,
# show the seed run and verify it.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
ki=./build/ki
store=${KI_DEMO_STORE:-demo}
data=tests/data/kernelindex
seed=$data/fixtures/gpt-o3_cuda_5548d0.gqa_paged_decode_h32_kv4_d128_ps1.manifest.json

set -x
$ki init "$store"
$ki --store "$store" add "$seed"
$ki --store "$store" add "$data"/examples/*.yaml
$ki --store "$store" show sol-trace-gqa-paged-decode-h32-kv4-d128-ps1-27ef153a
$ki --store "$store" verify sol-trace-gqa-paged-decode-h32-kv4-d128-ps1-27ef153a
