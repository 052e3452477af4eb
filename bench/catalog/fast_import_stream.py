#!/usr/bin/env python3
"""Writes a `git fast-import` stream holding, as blobs, the same objects that
`ki import kernelindex` stores for an export: every manifest's identity body
(RFC 8785 canonical JSON of {apiVersion, kind, spec}) and its document.

usage: fast_import_stream.py EXPORT.jsonl[.zst] > stream
(zstd input is decompressed with the zstd command.)
"""
import json
import subprocess
import sys


def number(v):
    # ECMAScript Number.prototype.toString, enough for this data.
    if isinstance(v, bool):
        raise TypeError
    if isinstance(v, int) or float(v).is_integer() and abs(v) < 1e21:
        return str(int(v))
    r = repr(float(v))
    if "e" in r:
        m, e = r.split("e")
        e = int(e)
        return m + "e" + ("+" if e >= 0 else "-") + str(abs(e))
    return r


def canonical(o):
    if o is None:
        return "null"
    if o is True:
        return "true"
    if o is False:
        return "false"
    if isinstance(o, (int, float)):
        return number(o)
    if isinstance(o, str):
        return json.dumps(o, ensure_ascii=False)
    if isinstance(o, list):
        return "[" + ",".join(canonical(x) for x in o) + "]"
    keys = sorted(o, key=lambda k: k.encode("utf-16-be"))
    return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + canonical(o[k]) for k in keys) + "}"


def manifests(row, table):
    m = row.get("manifest")
    if not isinstance(m, dict):
        return []
    if table == "benchmark_runs":
        return [m[p] for p in ("run", "protocol", "environment") if isinstance(m.get(p), dict)]
    return [m]


def main():
    path = sys.argv[1]
    if path.endswith(".zst"):
        text = subprocess.run(["zstd", "-dc", path], check=True, capture_output=True).stdout.decode()
    else:
        text = open(path, encoding="utf-8").read()
    out = sys.stdout.buffer
    seen = set()
    for line in text.splitlines():
        if not line.strip():
            continue
        o = json.loads(line)
        for m in manifests(o["row"], o["table"]):
            body = {"apiVersion": m["apiVersion"], "kind": m["kind"], "spec": m["spec"]}
            for blob in (canonical(body).encode(), json.dumps(m, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()):
                if blob in seen:
                    continue
                seen.add(blob)
                out.write(b"blob\ndata %d\n" % len(blob))
                out.write(blob)
                out.write(b"\n")


if __name__ == "__main__":
    main()
