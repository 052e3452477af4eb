# flashinfer-bench solutions under ki's harness on the CPU (issue 23):
# `ki import flashinfer-bench` of Solution JSON (path rules refused with
# clear errors, traces linked), `ki run --device cpu` of a torch solution in
# each calling style and of the definition's reference, one `ki run` with
# --speedup ranking all three in one group, `ki rerun`, and what ki says when
# python3 or torch is missing (everything else still works).
# Needs python3 with torch (Debian: python3-torch, which scripts/install-deps.sh
# installs): skipped, saying so, only when no python3 on PATH or KI_PYTHON has it.
source "$(dirname "$0")/testlib.bash" "$@"
ROOT=$(readlink -f "$DATA/../..")
RUN="$DATA/run"
SOL="$RUN/fib-solutions"
WL=gqa-paged-decode-h32-kv4-d128-ps1-27ef153a
REF=gqa-paged-decode-h32-kv4-d128-ps1.reference

# The python3 with torch: KI_PYTHON, python3 on PATH, then Debian's own.
PY=""
for c in "${KI_PYTHON:-}" python3 /usr/bin/python3; do
  [ -n "$c" ] || continue
  if "$c" -c 'import torch' >/dev/null 2>&1; then PY=$(command -v "$c"); break; fi
done
if [ -z "$PY" ]; then
  echo "Python kernel tests skipped: no python3 with torch (apt-get install python3-torch, or set KI_PYTHON)"
  exit 77
fi
export KI_PYTHON="$PY"
echo "python: $PY ($("$PY" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__)'))"

ki init "$WORK/store" >/dev/null
expect_exit 0 ki import flashinfer-bench "$RUN/flashinfer-trace"
expect_contains "$OUT" "ImplementationRevision   1 new, 0 existing (0 solutions" "the definition's reference is an implementation"
expect_exit 0 ki import flashinfer-bench "$SOL"
expect_contains "$OUT" "ImplementationRevision   3 new, 1 existing (3 solutions" "three solutions imported, the reference again"
expect_contains "$OUT" "traces linked            1 of 2 lines name a solution ki has" "a trace linked to its solution"
expect_exit 0 ki import flashinfer-bench "$SOL" --json
expect_contains "$OUT" '"tracesLinked": 1' "json summary"
expect_exit 0 ki show ki-torch-gqa-decode-returning
expect_contains "$OUT" "flashinfer_bench_returning" "calling style in the callable"
expect_exit 0 ki show ki-triton-gqa-decode
expect_contains "$OUT" "kernel.py" "entry file"

# A solution stored as one file is its file: its digest is the file's own.
MAIN_SHA=$(python3 -c '
import json, sys, hashlib
s = json.load(open(sys.argv[1]))
print(hashlib.sha256(s["sources"][0]["content"].encode()).hexdigest())' \
  "$SOL/solutions/ki-tests/gqa_paged/gqa_paged_decode_h32_kv4_d128_ps1/ki_torch_gqa_decode_dps.json")
expect_exit 0 ki show ki-torch-gqa-decode-dps
expect_contains "$OUT" "sha256:$MAIN_SHA" "one-file source stored as the file"

# Both calling styles and the reference, on the seed's workload, in one
# `ki run`, each timed beside the reference (--speedup).
expect_exit 0 ki run --implementation ki-torch-gqa-decode-dps --implementation ki-torch-gqa-decode-returning \
  --implementation $REF --workload $WL --device cpu --speedup --timeout 300
printf '%s\n' "$OUT"
N_PASSED=$(grep -c "status       passed" <<<"$OUT")
[ "$N_PASSED" = 3 ] || fail "three runs pass (got $N_PASSED)"
expect_contains "$OUT" "speedup      1.00x" "the reference's own speedup is 1"
N_SPEED=$(grep -c "speedup      [0-9.]*x (reference" <<<"$OUT")
[ "$N_SPEED" = 3 ] || fail "three runs carry a speedup factor (got $N_SPEED)"
RUN_DPS=$(sed -n 1p <<<"$OUT")
GROUPS_SEEN=$(grep "  group  " <<<"$OUT" | awk '{print $2}' | sort -u | wc -l)
[ "$GROUPS_SEEN" = 1 ] || fail "the three runs share one comparison group (got $GROUPS_SEEN)"
expect_exit 0 ki rank "$RUN_DPS"
printf '%s\n' "$OUT"
expect_contains "$OUT" "3 ranked" "three ranked in one group"
expect_contains "$OUT" "speedup" "ki rank shows the speedup factor"
expect_exit 0 ki rank "$RUN_DPS" --json
expect_contains "$OUT" '"speedupFactor": 1.0' "speedup in rank --json"
expect_exit 0 ki cat "$RUN_DPS"
expect_contains "$OUT" "reference_latency_ms" "run record names the reference latency as flashinfer-bench does"
expect_contains "$OUT" "speedup_factor" "run record names the speedup factor"
expect_exit 0 ki verify "$RUN_DPS"

# A rerun repeats it, reference timing included.
expect_exit 0 ki rerun "$RUN_DPS" --timeout 300
expect_contains "$OUT" "status        passed                            passed" "rerun of a Python run passes"
expect_contains "$OUT" "speedup      " "rerun times the reference again"

# A wrong solution is judged like any kernel: the comparator catches it.
mkdir -p wrong/definitions/gqa_paged wrong/solutions
cp "$SOL/definitions/gqa_paged/gqa_paged_decode_h32_kv4_d128_ps1.json" wrong/definitions/gqa_paged/
python3 - "$SOL/solutions/ki-tests/gqa_paged/gqa_paged_decode_h32_kv4_d128_ps1/ki_torch_gqa_decode_dps.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
s["name"] = "ki_torch_wrong"
s["sources"][0]["content"] += "\n_run = run\ndef run(*a):\n    _run(*a)\n    a[-2].mul_(1.5)\n"
json.dump(s, open("wrong/solutions/wrong.json", "w"))
s["name"] = "ki_torch_raises"
s["sources"][0]["content"] = "def run(*a):\n    raise ValueError('no kernel here')\n"
json.dump(s, open("wrong/solutions/raises.json", "w"))
s["name"] = "ki_cuda_tvm"
s["spec"]["language"] = "cuda"
s["spec"]["entry_point"] = "k.cu::run"
s["sources"] = [{"path": "k.cu", "content": "// nothing"}]
json.dump(s, open("wrong/solutions/tvm.json", "w"))
EOF
expect_exit 0 ki import flashinfer-bench wrong
expect_exit 1 ki run --implementation ki-torch-wrong --workload $WL --device cpu
expect_contains "$OUT" "status       incorrect_numerical" "a wrong torch solution fails the comparator"
expect_exit 1 ki run --implementation ki-torch-raises --workload $WL --device cpu
expect_contains "$OUT" "ValueError: no kernel here (main.py:2)" "a Python exception is the run's runtime_error, with its place"
expect_exit 4 ki run --implementation ki-cuda-tvm --workload $WL
expect_contains "$ERR" "binding \`tvm_ffi\`" "tvm-ffi binding refused, named"
expect_contains "$ERR" "TVM-FFI runtime is not packaged" "tvm-ffi refusal says why"
expect_exit 2 ki run --implementation ki-triton-gqa-decode --workload $WL --device cpu
expect_contains "$ERR" "triton implementation runs on a CUDA device" "triton needs a GPU"

# A C++ solution with binding torch: built by torch's extension builder in the
# run's child, called like a Python function. Needs the builder's own tools
# (ninja, Python.h, torch/extension.h; Debian: ninja-build, python3-dev, libtorch-dev, pybind11-dev,
# which install-deps.sh installs).
if "$PY" -c 'import os, shutil, sysconfig, torch.utils.cpp_extension
assert shutil.which("ninja") and os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))
dirs = torch.utils.cpp_extension.include_paths() + ["/usr/include", "/usr/local/include"]
for h in ("torch/extension.h", "pybind11/pybind11.h"):
    assert any(os.path.exists(os.path.join(d, h)) for d in dirs)' 2>/dev/null; then
  expect_exit 0 ki import flashinfer-bench "$RUN/fib-torch-ext"
  expect_exit 0 ki show ki-torch-ext-gqa-decode-cpu
  expect_contains "$OUT" "flashinfer_bench_binding_torch" "binding in the callable"
  expect_exit 0 ki run --implementation ki-torch-ext-gqa-decode-cpu --workload $WL --device cpu --timeout 900
  printf '%s\n' "$OUT"
  expect_contains "$OUT" "status       passed" "a torch-binding C++ solution passes on the CPU"
  expect_exit 0 ki rerun "$(sed -n 1p <<<"$OUT")" --timeout 900
  expect_contains "$OUT" "status        passed                            passed" "its rerun reuses the built extension"
else
  echo "torch-binding case skipped: no ninja, Python.h, torch/extension.h or pybind11 for $PY (apt-get install ninja-build python3-dev libtorch-dev pybind11-dev)"
fi

# Path rules of Solution sources: each refused naming the file and the path.
bad_solution() {  # bad_solution NAME PYTHON-EDIT WANT
  rm -rf bad && mkdir -p bad/definitions/gqa_paged bad/solutions
  cp "$SOL/definitions/gqa_paged/gqa_paged_decode_h32_kv4_d128_ps1.json" bad/definitions/gqa_paged/
  python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))
$2
json.dump(s, open('bad/solutions/$1.json', 'w'))" \
    "$SOL/solutions/ki-tests/gqa_paged/gqa_paged_decode_h32_kv4_d128_ps1/ki_torch_gqa_decode_returning.json"
  expect_exit 4 ki import flashinfer-bench bad
  expect_contains "$ERR" "solutions/$1.json" "$1: names the file"
  expect_contains "$ERR" "$3" "$1: says what is wrong"
}
bad_solution dotdot 's["sources"][1]["path"] = "../helpers/__init__.py"' "leaves the solution (\`..\`)"
bad_solution absolute 's["sources"][1]["path"] = "/etc/passwd"' "is not relative"
bad_solution twice 's["sources"][2]["path"] = "./helpers/__init__.py"' "appears twice"
bad_solution noentry 's["spec"]["entry_point"] = "other.py::run"' "\`other.py\` is not among the sources"
bad_solution entryform 's["spec"]["entry_point"] = "main.py"' "not \`<file>::<function>\`"
bad_solution dps 's["spec"]["destination_passing_style"] = "yes"' "destination_passing_style"
expect_exit 3 ki show ki-torch-gqa-decode-returning-x  # nothing of a refused import was stored

# Without python3 or torch: ki says what is missing, and C-ABI runs still work.
KI_PYTHON="$WORK/no-such-python" expect_exit 3 ki run --implementation ki-torch-gqa-decode-dps --workload $WL --device cpu
expect_contains "$ERR" "cannot run ki-torch-gqa-decode-dps: Python: cannot run $WORK/no-such-python" "no python3"
printf '#!/bin/sh\nexec %s -S "$@"\n' "$PY" > notorch && chmod +x notorch  # -S: no site-packages, so no torch
KI_PYTHON="$WORK/notorch" expect_exit 3 ki run --implementation ki-torch-gqa-decode-dps --workload $WL --device cpu
expect_contains "$ERR" "cannot import torch (ModuleNotFoundError" "no torch, said"
expect_exit 0 ki add --implementation "$RUN/gqa_decode_cpu.cc" -I "$ROOT/include" --operation gqa-paged-decode-h32-kv4-d128-ps1 \
  --symbol test.gqa_decode.cpu --name test-cpu
KI_PYTHON="$WORK/notorch" expect_exit 0 ki run --implementation test-cpu --workload $WL --device cpu
expect_contains "$OUT" "status       passed" "a C-ABI kernel runs without torch"
KI_PYTHON="$WORK/notorch" expect_exit 3 ki run --implementation test-cpu --workload $WL --device cpu --speedup
expect_contains "$ERR" "with --speedup" "--speedup needs torch, said"
finish
