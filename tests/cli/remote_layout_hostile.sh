#!/usr/bin/env bash
# ki pull from, and ki push to, an OCI image layout that is hostile or
# damaged (issue 25 item 5; docs/format.md, "Image layouts"): a FIFO as
# `oci-layout`, `index.json` or a blob file is refused at once (a plain open
# would block for ever), a symbolic link anywhere inside the layout is
# never followed (not for reading, not for writing: `blobs` or
# `blobs/sha256` as a link refuses the push and nothing is written where it
# points; a link at a blob's name is replaced by the blob), and descriptor
# sizes are checked as the image-spec says (an int64 >= 0, the manifest cap
# before reading, a blob file of another size refused from its fstat before
# it is read). Each refusal: the documented exit code, `ki: error:` naming
# the file, nothing stored, no scratch file.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/testlib.bash" "$@"
trap 'chmod -R u+w "$WORK" 2>/dev/null; rm -rf "$WORK"' EXIT

head -c 300000 /dev/urandom >small.bin   # held whole by a pull (under 1 MiB)
head -c 2097152 /dev/urandom >big.bin    # streamed through a scratch file
SMALL="sha256:$(sha256sum small.bin | cut -d' ' -f1)"
BIG="sha256:$(sha256sum big.bin | cut -d' ' -f1)"
expect_exit 0 ki init src
expect_exit 0 ki --store src add --blob small.bin big.bin
expect_exit 0 ki --store src push "oci-layout:$WORK/good" "$SMALL" "$BIG"
[ -f good/blobs/sha256/${SMALL#sha256:} ] && [ -f good/blobs/sha256/${BIG#sha256:} ] || fail "the layout lacks the blob files"
# The manifest of a digest's closure: the file index.json's tag names.
manifest_of() {  # manifest_of DIGEST: the hex of its closure manifest in good/
  python3 -c 'import json,sys
for m in json.load(open(sys.argv[1]))["manifests"]:
    if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == "ki-" + sys.argv[2]:
        print(m["digest"][7:])' good/index.json "${1#sha256:}"
}
MAN_SMALL=$(manifest_of "$SMALL")
[ -n "$MAN_SMALL" ] || fail "no manifest of the small blob in index.json"

n=0
# refused LAYOUT DIGEST EXIT MESSAGE: a pull from LAYOUT fails so, within
# 10 s (a FIFO that were opened blocking would hold it until killed at
# 20 s), storing nothing and leaving no scratch file.
refused() {
  local lay=$1 digest=$2 code=$3 message=$4
  n=$((n + 1))
  expect_exit 0 ki init "dst$n"
  local t0 ms
  t0=$(date +%s%N)
  OUT=$(timeout 20 "$KI_BIN" --store "dst$n" pull "oci-layout:$WORK/$lay" "$digest" 2>"$WORK/err")
  local rc=$?
  ERR=$(cat "$WORK/err")
  ms=$((($(date +%s%N) - t0) / 1000000))
  echo "$lay ${digest:0:15}: exit $rc after $ms ms"
  [ "$rc" = "$code" ] || fail "pull from $lay: exit $rc, expected $code: $ERR"
  expect_contains "$ERR" "ki: error: " "$lay: the error's form"
  expect_contains "$ERR" "$message" "$lay: the error names the cause"
  [ "$ms" -lt 10000 ] || fail "$lay: took $ms ms"
  local stored
  stored=$(find "dst$n/.ki/objects" -type f -not -path '*/incoming/*' | wc -l)
  [ "$stored" = 0 ] || fail "$lay: $stored objects stored"
  [ -z "$(ls -A "dst$n/.ki/objects/incoming" 2>/dev/null)" ] || fail "$lay: scratch files left: $(ls "dst$n/.ki/objects/incoming")"
}
copy() { rm -rf "$WORK/$1"; cp -a "$WORK/good" "$WORK/$1"; chmod -R u+w "$WORK/$1"; }

# ---- FIFOs: refused without blocking, exit 5, the file named
for f in oci-layout index.json "blobs/sha256/$MAN_SMALL" "blobs/sha256/${SMALL#sha256:}" "blobs/sha256/${BIG#sha256:}"; do
  copy fifo
  rm "fifo/$f" && mkfifo "fifo/$f"
  digest=$SMALL
  case "$f" in *"${BIG#sha256:}") digest=$BIG ;; esac
  refused fifo "$digest" 5 "refusing to use $WORK/fifo/$f: not a regular file"
  expect_contains "$ERR" "OCI image layout $WORK/fifo (it may hold regular files only)" "fifo $f: the layout named"
done

# ---- symbolic links inside the layout are not followed, wherever they lead
mkdir outside
for f in oci-layout index.json "blobs/sha256/$MAN_SMALL" "blobs/sha256/${BIG#sha256:}"; do
  copy link
  cp "link/$f" outside/target && rm "link/$f" && ln -s "$WORK/outside/target" "link/$f"
  digest=$SMALL
  case "$f" in *"${BIG#sha256:}") digest=$BIG ;; esac
  refused link "$digest" 5 "refusing to use $WORK/link/$f: it is a symbolic link"
  rm outside/target
done
copy link
rm -rf link/blobs/sha256 && mkdir outside/sha256 && cp good/blobs/sha256/* outside/sha256/ && ln -s "$WORK/outside/sha256" link/blobs/sha256
refused link "$SMALL" 5 "\`blobs/sha256\` must be a directory inside the layout: refusing to use $WORK/link/blobs/sha256: it is a symbolic link"
rm -rf outside/sha256

# A push through a linked `blobs` or `blobs/sha256` (to a directory, or
# dangling) writes nothing where it points.
expect_exit 0 ki init src2
expect_exit 0 ki --store src2 add --blob big.bin
for case in blobs blobs/sha256 dangling-blobs dangling-sha256; do
  rm -rf push outside && mkdir -p push/blobs outside
  case $case in
    blobs) rmdir push/blobs && ln -s "$WORK/outside" push/blobs ;;
    blobs/sha256) ln -s "$WORK/outside" push/blobs/sha256 ;;
    dangling-blobs) rmdir push/blobs && ln -s "$WORK/outside/none" push/blobs ;;
    dangling-sha256) ln -s "$WORK/outside/none" push/blobs/sha256 ;;
  esac
  expect_exit 5 ki --store src2 push "oci-layout:$WORK/push" "$BIG"
  expect_contains "$ERR" "must be a directory inside the layout" "push through $case"
  expect_contains "$ERR" "it is a symbolic link" "push through $case"
  [ -z "$(ls -A outside)" ] || fail "push through $case wrote outside the layout: $(ls -A outside)"
done
# `oci-layout` or `index.json` a link: the push refuses it too.
for f in oci-layout index.json; do
  copy push
  cp "push/$f" outside/target && rm "push/$f" && ln -s "$WORK/outside/target" "push/$f"
  expect_exit 5 ki --store src2 push "oci-layout:$WORK/push" "$BIG"
  expect_contains "$ERR" "refusing to use $WORK/push/$f: it is a symbolic link" "push with $f a link"
  cmp -s "push/$f" "good/$f" || fail "push with $f a link changed the file it points to"
  rm outside/target
done
# A link at a blob's name, to a file with the blob's very bytes: not taken
# for the blob (a pull would refuse it); the push writes the blob file over
# the link, and where the link points is left as it was.
copy push
blob="push/blobs/sha256/${BIG#sha256:}"
cp "$blob" outside/copy && chmod u+w outside/copy && rm "$blob" && ln -s "$WORK/outside/copy" "$blob"
before=$(stat -c '%i %Y' outside/copy)
expect_exit 0 ki --store src2 push "oci-layout:$WORK/push" "$BIG"
expect_contains "$OUT" "1 sent" "a link at a blob's name is not the blob"
[ -L "$blob" ] && fail "the push left the link at the blob's name"
[ -f "$blob" ] || fail "the push wrote no blob file"
cmp -s "$blob" big.bin || fail "the blob file the push wrote has other bytes"
[ "$(stat -c '%i %Y' outside/copy)" = "$before" ] || fail "the push wrote through the link"
expect_exit 0 ki init dst-relinked
expect_exit 0 ki --store dst-relinked pull "oci-layout:$WORK/push" "$BIG"
ki --store dst-relinked cat "$BIG" | cmp -s - big.bin || fail "the blob pulled from the repaired layout has other bytes"

# ---- descriptor sizes in index.json (an int64 >= 0; a manifest's at most
# the 4 MiB cap, checked before reading)
set_size() {  # set_size LAYOUT JSON_VALUE: the small blob's manifest gets this `size`
  python3 -c 'import json,sys
p=sys.argv[1]+"/index.json"; j=json.load(open(p))
for m in j["manifests"]:
    if m["digest"]=="sha256:"+sys.argv[2]: m["size"]=json.loads(sys.argv[3])
json.dump(j,open(p,"w"))' "$WORK/$1" "$MAN_SMALL" "$2"
}
real=$(stat -c %s "good/blobs/sha256/$MAN_SMALL")
copy size
set_size size 10000000000
refused size "$SMALL" 4 "\`size\` 10000000000 is over the manifest limit"
set_size size -1
refused size "$SMALL" 4 "\`size\` is -1, negative"
set_size size '"12"'
refused size "$SMALL" 4 "\`size\` is a string \"12\", not an integer"
# Within the cap but not the file's size: refused from the file's fstat,
# before a byte is read (exit 1, the file named).
set_size size $((real + 1))
refused size "$SMALL" 1 "has $real bytes, its descriptor announces $((real + 1)) ($WORK/size/blobs/sha256/$MAN_SMALL)"
set_size size $((real - 1))
refused size "$SMALL" 1 "has $real bytes, its descriptor announces $((real - 1))"
# A layer's file of another size than the manifest's descriptor: a held
# blob and a streamed one, longer and shorter.
copy size
printf 'x' >>"size/blobs/sha256/${SMALL#sha256:}"
refused size "$SMALL" 1 "has 300001 bytes, its descriptor announces 300000"
truncate -s 2097151 "size/blobs/sha256/${BIG#sha256:}"
refused size "$BIG" 1 "has 2097151 bytes, its descriptor announces 2097152"
copy size
printf 'x' >>"size/blobs/sha256/${BIG#sha256:}"
refused size "$BIG" 1 "has 2097153 bytes, its descriptor announces 2097152"

# The good layout pulls.
expect_exit 0 ki init dst-good
expect_exit 0 ki --store dst-good pull "oci-layout:$WORK/good" "$SMALL" "$BIG"
ki --store dst-good cat "$BIG" | cmp -s - big.bin || fail "the pulled blob has other bytes"
finish
