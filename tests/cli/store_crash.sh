#!/usr/bin/env bash
# kill -9 during `ki add` of many files leaves a store whose audit is clean;
# running the add again completes it.
source "$(dirname "$0")/testlib.bash" "$@"

expect_exit 0 ki init store
python3 - <<'PY'
import json, os
os.mkdir("many")
for i in range(3000):
    doc = {"apiVersion": "kernelindex.dev/v1alpha1", "kind": "SoftwareProject",
           "metadata": {"name": "project-%d" % i, "title": "t" * 150},
           "spec": {"name": "Project %d" % i, "repository": "https://example.invalid/p/%d" % i}}
    open("many/p%04d.json" % i, "w").write(json.dumps(doc, indent=2))
for i in range(20):
    open("many/blob%02d.bin" % i, "wb").write(os.urandom(200000))
PY
for delay in 0.05 0.1 0.15 0.2 0.3 0.4; do
  "$KI_BIN" add many/* >/dev/null 2>&1 &
  pid=$!
  sleep "$delay"
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  expect_exit 0 ki audit || echo "after kill at ${delay}s" >&2
done
expect_exit 0 ki add many/*
[ "$(echo "$OUT" | wc -l)" = 3020 ] || fail "add completes: $(echo "$OUT" | wc -l) lines"
expect_exit 0 ki audit
expect_contains "$OUT" "0 faults" "final audit"
expect_exit 0 ki ls --kind SoftwareProject
[ "$(echo "$OUT" | wc -l)" = 3000 ] || fail "3000 projects stored"
finish
