#!/usr/bin/env bash
# ki's main job on a local store, from nothing: install dependencies, build
# the `ki` command (only it: scripts/test.sh builds the tests), create a
# store, add the seed record and the KernelIndex example registry, show the
# seed run and verify it. bench/results/quickstart-*.md has its timings.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
start=$(date +%s)
./scripts/build.sh --quick
built=$(date +%s)
ki=./build/ki
store=${KI_DEMO_STORE:-demo}
data=tests/data/kernelindex
seed=$data/fixtures/gpt-o3_cuda_5548d0.gqa_paged_decode_h32_kv4_d128_ps1.manifest.json
run=sol-trace-gqa-paged-decode-h32-kv4-d128-ps1-27ef153a

(
  set -x
  $ki init "$store"
  $ki --store "$store" add "$seed"
  $ki --store "$store" add "$data"/examples/*.yaml
  $ki --store "$store" show $run
  $ki --store "$store" verify $run
  $ki --store "$store" report "$store-report"
)

cat <<MSG

ki is built: $(pwd)/build/ki (in $((built - start)) s), and $store/ is a store holding the seed run.
Its web report: open $(pwd)/$store-report/index.html in a browser.
Try next:
  export PATH="\$PWD/build:\$PATH" KI_STORE=\$PWD/$store
  ki ls                       # every object: digest, kind, name
  ki show $run
  ki help                     # every command; ki help CMD for one
  ki import kernelindex tests/data/kernelindex-export/catalog-2026-08-16-0022af0b.jsonl.zst
                              # the KernelIndex catalog (then: ki rank 215ac4f9)
  ./scripts/test.sh           # build the tests and run them
MSG
