#!/usr/bin/env bash
# ki pull from a hostile registry (tests/cli/hostile_registry.py, on
# loopback, started and stopped here): a manifest dripped 2 bytes every
# 0.5 s, a blob that stalls after 1,000 bytes, a 4 MiB blob at 4 bytes a
# second, wrong digests, bodies shorter or longer than announced, a redirect
# to another host, and Bearer token realms on another host or another port
# that would collect the password. Each pull fails within its documented
# bound with the documented exit code and a message that names the cause,
# stores nothing and leaves no scratch file; no realm or other host ever
# sees the credentials. Short time limits (the pull options) keep it to
# seconds.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/testlib.bash" "$@"
SERVER_PID=""
trap '[ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; chmod -R u+w "$WORK" 2>/dev/null; rm -rf "$WORK"' EXIT

python3 "$HERE/hostile_registry.py" "$WORK/ports" &
SERVER_PID=$!
for _ in $(seq 100); do [ -s "$WORK/ports" ] && break; sleep 0.1; done
[ -s "$WORK/ports" ] || { fail "the hostile registry did not start"; finish; }
read -r PORT OTHER_PORT <"$WORK/ports"
REG="oci://127.0.0.1:$PORT/ki/hostile"
# The server's control requests, through bash's /dev/tcp (a python3 or
# curl per request would cost more than the cases).
control() {  # control METHOD PATH [BODY]: prints the response body
  local body=${3:-}
  exec 3<>"/dev/tcp/127.0.0.1/$PORT" || return 1
  printf '%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' \
    "$1" "$2" "${#body}" "$body" >&3
  sed '1,/^\r$/d' <&3
  exec 3>&-
}
mode() { control POST /_mode "$1" >/dev/null || fail "cannot set mode $1"; }
seen() { control GET /_seen; }

head -c 300000 /dev/urandom >small.bin
head -c 4194304 /dev/urandom >big.bin
SMALL="sha256:$(sha256sum small.bin | cut -d' ' -f1)"
BIG="sha256:$(sha256sum big.bin | cut -d' ' -f1)"
expect_exit 0 ki init src
expect_exit 0 ki --store src add --blob small.bin big.bin
expect_exit 0 ki --store src push --insecure "$REG" "$SMALL" "$BIG"

# Limits: 1 s below 1 KiB/s, a 3 s deadline (the rate makes it 3 s for
# anything under 1 GB); a request that hits one is tried twice.
LIMITS=(--low-speed-time 1 --timeout 3 --min-rate 1000000000)
n=0
# hostile MODE DIGEST EXIT MESSAGE MAX_SECONDS
hostile() {
  local m=$1 digest=$2 code=$3 message=$4 max=$5
  n=$((n + 1))
  mode "$m"
  expect_exit 0 ki init "dst$n"
  local t0 ms
  t0=$(date +%s%N)
  expect_exit "$code" ki --store "dst$n" pull --insecure "${LIMITS[@]}" "$REG" "$digest"
  ms=$((($(date +%s%N) - t0) / 1000000))
  echo "$m ${digest:0:15}: exit $code after $ms ms"
  expect_contains "$ERR" "$message" "$m: the error names the cause"
  expect_contains "$ERR" "ki: error: " "$m: the error's form"
  [ "$ms" -lt $((max * 1000)) ] || fail "$m: took $ms ms, more than $max s"
  local stored
  stored=$(find "dst$n/.ki/objects" -type f -not -path '*/incoming/*' | wc -l)
  [ "$stored" = 0 ] || fail "$m: $stored objects stored"
  [ -z "$(ls -A "dst$n/.ki/objects/incoming" 2>/dev/null)" ] || fail "$m: scratch files left: $(ls "dst$n/.ki/objects/incoming")"
}

# Time limits: exit 5, two attempts of at most the 3 s deadline each.
hostile drip-manifest "$SMALL" 5 "stayed below 1024 bytes/s for 1 s" 9
expect_contains "$ERR" "gave up after 2 attempts" "drip: tried twice"
hostile stall-blob "$BIG" 5 "stayed below 1024 bytes/s for 1 s" 9
hostile crawl-blob "$BIG" 5 "stayed below 1024 bytes/s for 1 s" 9
# 5 KiB/s into a blob announced as 4 MiB: above the low-speed limit, so
# only the deadline ends it. That deadline is earned by the bytes that
# moved (2 s plus 1 s per 64 KiB: about 2.2 s here), not granted for the
# size the server announced (2 s + 64 s per attempt, and 5 KiB/s into an
# announced 4 GiB was 18 h per attempt).
LIMITS=(--low-speed-time 1 --timeout 2)
hostile trickle-blob "$BIG" 5 "past the deadline of 2 s that they earn (2 s plus 1 s per 65536 bytes moved)" 12
expect_contains "$ERR" "gave up after 2 attempts" "trickle: tried twice"
# The whole pull's deadline (--total-timeout): with no deadline per request
# the trickle would take about 800 s; the pull ends after its 3 s, and is
# not tried again past them.
LIMITS=(--low-speed-time 1 --timeout 0 --total-timeout 3)
hostile trickle-blob "$BIG" 5 "ran past its whole deadline of 3 s (--total-timeout)" 8
case "$ERR" in *"after 2 attempts"*) fail "trickle, total: tried again past the whole deadline: $ERR" ;; esac
LIMITS=(--low-speed-time 1 --timeout 3 --min-rate 1000000000)
# Lies about the bytes: exit 1, at once.
hostile wrong-digest "$SMALL" 1 "hash to" 5
hostile wrong-digest "$BIG" 1 "received bytes that hash to" 5
hostile long-body "$SMALL" 1 "larger than the limit of 300000 bytes" 5
# A body cut short by a closed connection is retried (5 attempts, 3 s of
# backoff), then exit 5.
hostile short-body "$BIG" 5 "truncated response body" 12
# A redirect to another host: it gets no credentials, and its bytes are
# checked like any others.
export KI_REGISTRY_USER=user KI_REGISTRY_PASSWORD=secret
hostile redirect-elsewhere "$SMALL" 1 "the manifest announces 300000" 5
# Token realms that would collect the password: another host, and this
# host's other port over plain http. The realm is asked anonymously, the
# registry refuses that token, and the error says why.
hostile realm-elsewhere "$SMALL" 5 "credentials were not sent to the token realm http://127.1.0.1:$OTHER_PORT/token" 5
hostile realm-other-port "$SMALL" 5 "credentials were not sent to the token realm http://127.0.0.1:$OTHER_PORT/token" 5
SEEN=$(seen)
case "$SEEN" in
  '[""'*) ;;
  *) fail "the other host was not asked at all: $SEEN" ;;
esac
case "$SEEN" in
  *Basic* | *Bearer*) fail "the other host received credentials: $SEEN" ;;
esac
unset KI_REGISTRY_USER KI_REGISTRY_PASSWORD

# A pull killed (-9: no destructor runs) while it waits on a stalled blob
# leaves its scratch file; the next pull that streams removes it (its
# process is gone) and completes.
mode stall-blob
expect_exit 0 ki init dst-killed
"$KI_BIN" --store dst-killed pull --insecure "$REG" "$BIG" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 200); do
  [ -n "$(ls -A dst-killed/.ki/objects/incoming 2>/dev/null)" ] && break
  sleep 0.05
done
[ -n "$(ls -A dst-killed/.ki/objects/incoming 2>/dev/null)" ] || fail "the stalled pull has no scratch file to leave"
kill -9 $pid
wait $pid 2>/dev/null
mode normal
expect_exit 0 ki --store dst-killed pull --insecure "$REG" "$BIG"
[ -z "$(ls -A dst-killed/.ki/objects/incoming 2>/dev/null)" ] ||
  fail "the killed pull's scratch file outlived the next pull: $(ls dst-killed/.ki/objects/incoming)"

# The registry reached over https (no --insecure): the TLS failure says the
# server answers plain http and names the fix; the push does not advise a
# re-run, which could not help.
mode normal
expect_exit 0 ki --store src remote add plain "$REG"
expect_exit 5 ki --store src push plain "$SMALL"
expect_contains "$ERR" "127.0.0.1:$PORT answers plain http, not https" "TLS against plain http is named"
expect_contains "$ERR" "pass --insecure" "the fix is named"
case "$ERR" in *"run the same ki push again"*) fail "a TLS failure advises a re-run: $ERR" ;; esac
expect_exit 5 ki --store src pull plain "$SMALL"
expect_contains "$ERR" "ki remote set-url NAME URL --insecure" "pull names the fix for a configured remote"
# ... and the fix works: the same remote marked insecure pulls.
expect_exit 0 ki --store src remote set-url plain "$REG" --insecure
expect_exit 0 ki --store src pull plain "$SMALL"

# Options out of range are usage errors; the registry at full pace serves
# the same pull with the same limits.
expect_exit 2 ki --store src pull --insecure --low-speed-time 0 "$REG" "$SMALL"
mode normal
expect_exit 0 ki init dst-ok
expect_exit 0 ki --store dst-ok pull --insecure "${LIMITS[@]}" "$REG" "$SMALL" "$BIG"
ki --store dst-ok cat "$BIG" | cmp -s - big.bin || fail "the pulled blob has other bytes"
finish
