#!/usr/bin/env bash
# Remote URLs given on the command line: a malformed HOST[:PORT] (an empty
# port went to port 80, issue 25) is refused with exit 2 and a message that
# names it, by `ki remote add`, `ki remote set-url` and a URL given in place
# of a remote's name, and nothing is recorded or contacted.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/testlib.bash" "$@"

ki init "$KI_STORE" >/dev/null || fail init
expect_exit 0 ki remote add good "oci://127.0.0.1:5000/ki/x" --insecure
for url in "oci://127.0.0.1:/ki/x" "oci://localhost:/ki/x" "oci://[::1]:/ki/x"; do
  expect_exit 2 ki remote add bad "$url" --insecure
  expect_contains "$ERR" "empty port after ':'" "remote add $url"
  expect_exit 2 ki remote set-url good "$url" --insecure
  expect_contains "$ERR" "empty port" "remote set-url $url"
  expect_exit 2 ki pull --insecure "$url" some-ref
  expect_contains "$ERR" "empty port" "pull $url"
  expect_exit 2 ki push --insecure "$url" some-ref
  expect_contains "$ERR" "empty port" "push $url"
done
for url in "oci://127.0.0.1:0/ki/x" "oci://127.0.0.1:65536/ki/x" "oci://127.0.0.1:5x/ki/x" \
           "oci://127.0.0.1:5000:1/ki/x"; do
  expect_exit 2 ki remote add bad "$url" --insecure
  expect_contains "$ERR" "bad port" "remote add $url"
done
for url in "oci://:5000/ki/x" "oci://[::1/ki/x" "oci://[]:5000/ki/x" "oci://[::1]x/ki/x" "oci://a_b/ki/x"; do
  expect_exit 2 ki remote add bad "$url"
  expect_contains "$ERR" "$url" "remote add $url names the URL"
done
expect_exit 0 ki remote list
expect_contains "$OUT" "oci://127.0.0.1:5000/ki/x" "the good remote is unchanged"
case "$OUT" in *bad*) fail "a refused URL was recorded: $OUT" ;; esac
# What is accepted: a name, IPv4 and IPv6 with and without a port.
for url in "oci://registry.example.com/ki/x" "oci://registry.example.com:443/ki/x" "oci://[::1]:5000/ki/x" \
           "oci://[::1]/ki/x" "oci://10.0.0.1:65535/ki/x"; do
  expect_exit 0 ki remote set-url good "$url"
done
finish
