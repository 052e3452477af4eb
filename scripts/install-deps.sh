#!/usr/bin/env bash
# Installs everything ki needs to build and test, from Debian 12 packages.
# Idempotent: packages already present are skipped, so a second run is quick.
set -euo pipefail

pkgs=(
  build-essential cmake pkg-config git zstd ccache lld
  libssl-dev libsodium-dev libzstd-dev liblmdb-dev lmdb-utils
  nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libgtest-dev libgmock-dev
  libcurl4-openssl-dev
  libmimalloc-dev  # the ki command's allocator (CMake KI_MALLOC)
  python3 python3-nacl python3-scipy
  python3-lmdb  # bench/catalog/layout_pages.py (LMDB layouts measured in a scratch env; /usr/bin/python3)
  # tests/cli/run_python.sh: torch for Python kernels on the CPU, and the shared
  # libpython ki embeds (python3-torch: ~175 packages, ~4 min on a fresh Debian 12);
  # torch/extension.h, pybind11, Python.h and ninja for torch's extension builder (binding torch)
  python3-torch libtorch-dev pybind11-dev libpython3.11 python3-dev ninja-build
  docker-registry skopeo
  slurm-wlm munge  # tests/cli/fleet_slurm.sh: a one-node Slurm cluster on 127.0.0.1
  clang libclang-rt-14-dev  # fuzz/: clang and its libFuzzer runtime (cmake -DKI_FUZZ=ON)
  libjs-chart.js  # ki report copies its chart.min.js into every site it writes
  chromium        # tests/cli/report_browser.sh opens the report in headless Chromium
)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
