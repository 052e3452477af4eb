#!/usr/bin/env python3
"""Where the bytes of a store's `objects` table go (issue 17.5).

  mdb_dump -s objects STORE/.ki/index | bench/catalog/frame_sizes.py

Reads mdb_dump's hex output (one key line, one value line per entry) and
tallies, per media type (and kind for manifests): frames, their bytes, the
bytes of their headers (magic .. header-check, docs/format.md "Object
frame"), of the media-type text inside those headers (none in version 4), how many use a zstd
dictionary, and how many are LMDB overflow values. A value over what fits
in a 4 KiB page beside another (the node limit, ~2 KB) is put on pages of
its own, whose unused tail is lost: those are counted with the bytes they
waste. Nothing here decompresses a payload.
"""
import collections
import struct
import sys

PAGE = 4096
# LMDB: a node larger than (page - 16 header) / 2 - 2 goes to overflow pages;
# a node is 8 bytes of header + key + value.
NODE_MAX = (PAGE - 16) // 2 - 2
# Media type codes of frame version 4 (docs/format.md, "Index").
CODES = {1: "application/vnd.kernelindex.manifest+json", 2: "application/vnd.kernelindex.document+json",
         3: "application/vnd.kernelindex.document+yaml", 4: "application/vnd.ki.catalog.facts.v1+json",
         5: "application/vnd.ki.catalog.import.v1+json", 6: "application/vnd.ki.zstd-dictionary",
         7: "application/vnd.dsse.envelope.v1+json"}


def varint(b, i):
    """LEB128 at b[i]: (value, the index after it)."""
    v, shift = 0, 0
    while True:
        v |= (b[i] & 0x7F) << shift
        shift += 7
        i += 1
        if not b[i - 1] & 0x80:
            return v, i


def entries(lines):
    it = iter(lines)
    for line in it:
        if line.startswith("HEADER=END"):
            break
    while True:
        k = next(it, None)
        if k is None or k.startswith("DATA=END"):
            return
        v = next(it)
        yield bytes.fromhex(k.strip()), bytes.fromhex(v.strip())


def main():
    rows = collections.defaultdict(lambda: collections.Counter())
    total = collections.Counter()
    sizes = []
    for key, frame in entries(sys.stdin):
        if len(key) == 4:  # format 12: keyed by number, the row is the digest then the frame
            if len(frame) == 32:
                total["loose (digest only)"] += 1
                continue
            frame = frame[32:]
        if frame[:4] != b"KIOB":
            total["not a frame"] += 1
            continue
        version, typ, kind, flags = frame[4], frame[5], frame[6], frame[7]
        if version == 5:  # varint raw size, a code byte (0: varint length + text), dict-id, check
            raw_size, j = varint(frame, 8)
            code = frame[j]
            j += 1
            mt_len = 0
            if code == 0:
                mt_len, j = varint(frame, j)
                media = frame[j:j + mt_len].decode("utf-8", "replace")
                j += mt_len
            else:
                media = CODES.get(code, "code %d" % code)
            dict_id = bool(flags & 2)
            header = j + (4 if dict_id else 0) + 4
        else:
            (mt_len,) = struct.unpack_from("<H", frame, 16)
            (raw_size,) = struct.unpack_from("<Q", frame, 8)
        if version == 5:
            pass
        elif version == 4:  # the media type by its code, no text; flags bit 1: a dict-id
            media = CODES.get(mt_len, "code %d" % mt_len)
            mt_len = 0
            dict_id = bool(flags & 2)
        else:
            media = frame[18:18 + mt_len].decode("utf-8", "replace")
            dict_id = version == 3
        if version != 5:
            header = 18 + mt_len + (4 if dict_id else 0) + (4 if version >= 2 else 0)
        what = media if typ == 1 else "manifest kind %d" % kind
        r = rows[what]
        for c in (r, total):
            c["frames"] += 1
            c["bytes"] += len(frame)
            c["header"] += header
            c["media-type text"] += mt_len
            c["payload"] += len(frame) - header
            c["dictionary"] += dict_id
            c["raw"] += not (flags & 1)
            c["raw bytes"] += raw_size
        node = 8 + len(key) + len(frame)
        if node > NODE_MAX:
            pages = -(-(16 + len(frame)) // PAGE)
            for c in (r, total):
                c["overflow"] += 1
                c["overflow pages"] += pages
                c["overflow waste"] += pages * PAGE - 16 - len(frame)
        sizes.append(len(frame))
    cols = ["frames", "bytes", "raw bytes", "header", "media-type text", "payload", "dictionary", "raw",
            "overflow", "overflow pages", "overflow waste"]
    print("| what | " + " | ".join(cols) + " |")
    print("| --- |" + " ---: |" * len(cols))
    for what, r in sorted(rows.items(), key=lambda kv: -kv[1]["bytes"]):
        print("| %s | " % what + " | ".join("{:,}".format(r[c]) for c in cols) + " |")
    print("| **all** | " + " | ".join("{:,}".format(total[c]) for c in cols) + " |")
    if sizes:
        sizes.sort()
        n = len(sizes)
        print("\nframe bytes: median %d, p90 %d, p99 %d, max %d; %d frames over LMDB's node limit (%d bytes)" %
              (sizes[n // 2], sizes[n * 9 // 10], sizes[n * 99 // 100], sizes[-1], total["overflow"], NODE_MAX))
    if total["not a frame"]:
        print("%d values are not frames" % total["not a frame"])


if __name__ == "__main__":
    main()
