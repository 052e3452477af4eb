#!/usr/bin/env bash
# ki key / trust / sign / verify / audit: the happy path, the evidence ladder,
# and every bad input of issue 5, each with its message and exit code.
# Usage (ctest): bash sign_cli.sh <ki binary> <tests/data dir>
set -u
KI_BIN=$1
DATA=$2
HERE=$(cd "$(dirname "$0")" && pwd)  # prompt_pty.py
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export KI_HOME=$T/home KI_STORE=$T/store
unset KI_PASSPHRASE
fails=0

ki() { "$KI_BIN" "$@"; }
# expect CODE PATTERN -- command...: runs it, checks exit code and that
# stdout+stderr match PATTERN (grep -E), and reports.
expect() {
  local code=$1 pattern=$2
  shift 3
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" != "$code" ]; then
    echo "FAIL ($rc, wanted $code): $*"; echo "$out" | sed 's/^/    /'; fails=$((fails + 1)); return
  fi
  if [ -n "$pattern" ] && ! grep -qE -- "$pattern" <<<"$out"; then
    echo "FAIL (no /$pattern/): $*"; echo "$out" | sed 's/^/    /'; fails=$((fails + 1)); return
  fi
  echo "ok   $*"
}
objects() { ki audit | sed -n 's/^\([0-9]*\) objects (.*/\1/p'; }
# The level as `ki show` prints it: "verified" or "verified,disputed".
level() { ki show "$1" | sed -n 's/^  level  *//p' | sed 's/, /,/'; }
# edit_envelope IN OUT PYTHON: rewrites the envelope JSON `e` (payload decoded as `p`).
edit_envelope() {
  python3 - "$1" "$2" "$3" <<'PY'
import base64, json, sys
src, dst, code = sys.argv[1], sys.argv[2], sys.argv[3]
e = json.load(open(src))
p = base64.b64decode(e["payload"])
exec(code)
json.dump(e, open(dst, "w"))
PY
}

ki init "$T/store" >/dev/null || exit 1
ki add "$DATA/kernelindex/fixtures/"*.manifest.json >/dev/null || exit 1
RUN=$(ki resolve BenchmarkRun/sol-trace-gqa-paged-decode-h32-kv4-d128-ps1-27ef153a)
PROTO=$(ki resolve BenchmarkProtocol/flashinfer-bench-trace)

# --- keys
expect 0 "keyid" -- ki key generate alice --no-passphrase
expect 0 "passphrase-protected" -- env KI_PASSPHRASE=correct-horse "$KI_BIN" key generate bob
expect 0 "" -- ki key generate carol --no-passphrase
expect 0 "" -- ki key generate dave --no-passphrase
expect 4 "already exists" -- ki key generate alice --no-passphrase
expect 4 "empty passphrase" -- env KI_PASSPHRASE= "$KI_BIN" key generate erin
expect 4 "key name" -- ki key generate ../evil --no-passphrase
mode=$(stat -c %a "$KI_HOME/keys/bob.key")
[ "$mode" = 600 ] && echo "ok   secret key file mode 600" || { echo "FAIL mode $mode"; fails=$((fails + 1)); }
grep -q "^secret: " "$KI_HOME/keys/bob.key" && ! grep -q "correct-horse" "$KI_HOME/keys/bob.key" &&
  echo "ok   passphrase not in key file" || { echo "FAIL key file"; fails=$((fails + 1)); }
expect 0 "^alice	[0-9a-f]{64}	none	ed25519:" -- ki key list
expect 0 "^ed25519:[A-Za-z0-9+/]{43}=$" -- ki key export alice
expect 3 "no key named" -- ki key export nobody
# A key generate killed between creating its temporary and linking it left
# keys/NAME.key.tmp-PID-N, for --no-passphrase the secret in clear, for
# ever. The next ki key list / generate removes it once its pid is gone,
# saying so; a live writer's temporary stays.
sleep 60 & live=$!
sleep 0 & dead=$!
wait "$dead"
printf 'ki-secret-key v1\nsecret: in clear\n' >"$KI_HOME/keys/zed.key.tmp-$dead-0"
printf 'x' >"$KI_HOME/keys/zed.key.tmp-$live-0"
expect 0 "removed .*/zed\.key\.tmp-$dead-0, left by a ki key generate" -- ki key list
[ ! -e "$KI_HOME/keys/zed.key.tmp-$dead-0" ] && [ -e "$KI_HOME/keys/zed.key.tmp-$live-0" ] &&
  echo "ok   the dead writer's temporary is gone, the live one's kept" ||
  { echo "FAIL temporaries: $(ls "$KI_HOME/keys")"; fails=$((fails + 1)); }
printf 'x' >"$KI_HOME/keys/zed.key.tmp-$dead-1"
expect 0 "removed .*/zed\.key\.tmp-$dead-1" -- ki key generate zed --no-passphrase
kill "$live"; wait "$live" 2>/dev/null
expect 0 "removed .*/zed\.key\.tmp-$live-0" -- ki key list
# Ctrl-C (or kill, or a closed terminal) at the passphrase prompt left the
# terminal with echo off. The prompt now restores it and ends by the signal.
python3 - "$KI_BIN" "$KI_HOME" <<'PY' || fails=$((fails + 1))
# Runs ki key generate on a new pseudo-terminal (its controlling terminal)
# and ends it at the passphrase prompt as a user would; echo must be on again.
import os, signal, subprocess, sys, termios, time, fcntl
ki, home = sys.argv[1], sys.argv[2]
def case(how):
    master, slave = os.openpty()
    def child():
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
    env = dict(os.environ, KI_HOME=home)
    env.pop("KI_PASSPHRASE", None)
    p = subprocess.Popen([ki, "key", "generate", "tty-" + how], stdin=slave, stdout=slave, stderr=slave,
                         preexec_fn=child, env=env, close_fds=True)
    out = b""
    deadline = time.time() + 20
    while b"passphrase for the new key" not in out and time.time() < deadline:
        out += os.read(master, 1024)
    # The prompt is written before echo goes off: wait until it is off.
    while termios.tcgetattr(slave)[3] & termios.ECHO and time.time() < deadline:
        time.sleep(0.01)
    off = not termios.tcgetattr(slave)[3] & termios.ECHO
    if how == "typed":
        os.write(master, b"pw\n")
        while b"again" not in out and time.time() < deadline:
            out += os.read(master, 1024)
        while termios.tcgetattr(slave)[3] & termios.ECHO and time.time() < deadline:
            time.sleep(0.01)
        os.write(master, b"pw\n")
        sig = 0
    elif how == "ctrl-c":
        os.write(master, b"\x03")
        sig = signal.SIGINT
    else:
        sig = {"term": signal.SIGTERM, "hup": signal.SIGHUP}[how]
        os.kill(p.pid, sig)
    rc = p.wait(timeout=20)
    on = bool(termios.tcgetattr(slave)[3] & termios.ECHO)
    os.close(master); os.close(slave)
    ok = off and on and rc == -sig
    print(("ok  " if ok else "FAIL") + " %s at the passphrase prompt: echo off while asking %s, on after %s, exit %s"
          % (how, off, on, rc))
    return ok
sys.exit(0 if all([case(h) for h in ("typed", "ctrl-c", "term", "hup")]) else 1)
PY
# Ctrl-Z at the passphrase prompt stopped ki with echo off: the user's shell
# typed blind until fg. Now echo is on while ki is stopped, and off again
# (the prompt written again) once it is continued; the passphrase typed
# then is the one kept (checked by signing with it below).
python3 - "$KI_BIN" "$KI_HOME" "$HERE" <<'PY' || fails=$((fails + 1))
# The shell (prompt_pty.py) starts ki in its own foreground process group (a
# group the kernel may stop: not orphaned), types Ctrl-Z, waits for the stop
# (WUNTRACED) and sends SIGCONT. Without job control ki shares the shell's
# group, which is orphaned: the kernel does not stop it.
import os, signal, sys, time
sys.path.insert(0, sys.argv[3])
from prompt_pty import PROMPT, echo, run_case
ki, home = sys.argv[1], sys.argv[2]
def ctrl_z(name, job_control):
    def play(sh):
        sh.start_ki(ki, home, name, own_group=job_control, foreground=True)
        checks = []
        out = sh.read_until(PROMPT, b"")
        checks.append(("echo off while asking", sh.wait_echo_off()))
        os.write(sh.master, b"xx\x1a")  # typed, then Ctrl-Z: the partial line is dropped
        if job_control:
            _, st = os.waitpid(sh.pid, os.WUNTRACED)
            checks.append(("stopped by SIGTSTP", os.WIFSTOPPED(st) and os.WSTOPSIG(st) == signal.SIGTSTP))
            checks.append(("echo on while stopped", echo(sh.slave)))
            time.sleep(0.2)  # still stopped, still echo on
            checks.append(("echo still on while stopped", echo(sh.slave)))
            os.kill(sh.pid, signal.SIGCONT)
        # Continued (or, orphaned, never stopped): asked again, echo off again.
        return sh.answer_again(out, checks)
    return run_case(play, "Ctrl-Z at the passphrase prompt (%s)" % (
        "job control" if job_control else "orphaned, not stopped"))
sys.exit(0 if all([ctrl_z("tty-ctrl-z", True), ctrl_z("tty-ctrl-z-orphan", False)]) else 1)
PY
# The prompt in the background: a ki stopped at the prompt (kill -STOP) and
# continued with bg read the terminal from the background and was stopped
# by SIGTTIN with echo off; a ki started with & is stopped by SIGTTOU when
# it turns echo off. Either way it is now stopped with echo on, and once
# brought to the foreground (fg) turns echo off and writes the prompt again.
python3 - "$KI_BIN" "$KI_HOME" "$HERE" <<'PY' || fails=$((fails + 1))
# The shell (prompt_pty.py) starts ki in its own process group and moves the
# terminal between the groups (tcsetpgrp) as bg and fg do; it ignores
# SIGTTOU, since it sets the terminal from the background.
import os, signal, sys, time
sys.path.insert(0, sys.argv[3])
from prompt_pty import PROMPT, echo, run_case
ki, home = sys.argv[1], sys.argv[2]
def background(name, start_in_background):
    def play(sh):
        signal.signal(signal.SIGTTOU, signal.SIG_IGN)
        sh.start_ki(ki, home, name, own_group=True, foreground=not start_in_background)
        checks = []
        out = sh.read_until(PROMPT, b"")
        if start_in_background:
            expected = signal.SIGTTOU
        else:
            expected = signal.SIGTTIN
            checks.append(("echo off while asking", sh.wait_echo_off()))
            os.kill(sh.pid, signal.SIGSTOP)  # stopped at the prompt (echo off: SIGSTOP cannot be caught)
            checks.append(("stopped by SIGSTOP", sh.wait_stopped() == signal.SIGSTOP))
            os.tcsetpgrp(sh.slave, os.getpgrp())  # bg: the shell keeps the terminal
            os.kill(sh.pid, signal.SIGCONT)
        stop = sh.wait_stopped()
        checks.append(("stopped by %s (got %s)" % (signal.Signals(expected).name, stop), stop == expected))
        checks.append(("echo on while stopped", echo(sh.slave)))
        time.sleep(0.2)
        checks.append(("echo still on while stopped", echo(sh.slave)))
        os.tcsetpgrp(sh.slave, sh.pid)  # fg
        os.kill(sh.pid, signal.SIGCONT)
        return sh.answer_again(out, checks)
    return run_case(play, "the passphrase prompt in the background (%s)" % (
        "started with &" if start_in_background else "kill -STOP, bg, fg"))
sys.exit(0 if all([background("tty-bg-ttin", False), background("tty-bg-ttou", True)]) else 1)
PY

# --- trust
expect 0 "trusted alice" -- ki trust add "$(ki key export alice)" --name alice --role runner
ki key export dave >"$T/dave.pub"
expect 0 "trusted dave" -- ki trust add "$T/dave.pub" --name dave --role runner
expect 0 "trusted bob" -- ki trust add "$(ki key export bob)" --name bob
expect 4 "already trusted" -- ki trust add "$(ki key export carol)" --name bob
expect 4 "ed25519:" -- ki trust add "not-a-key" --name x
expect 4 "base64" -- ki trust add "ed25519:@@@@" --name x
expect 2 "" -- ki trust add "$(ki key export carol)" --name x --role admin
expect 0 "alice	runner" -- ki trust list
# A hand-edited trust list with a field of the wrong type is invalid input
# naming the entry and field (it was nlohmann's type_error, exit 5).
mkdir -p "$T/badhome"
printf '{"format":"ki-trust/v1","keys":[{"publicKey":"%s","name":"x","role":1}]}\n' "$(ki key export alice)" >"$T/badhome/trust.json"
expect 4 'trust.json: keys\[0\]: `role` is a number, not a string' -- env KI_HOME="$T/badhome" "$KI_BIN" trust list
printf '{"format":"ki-trust/v1","revoked":[{"publicKey":"%s","name":"x","removedAt":[]}]}\n' "$(ki key export alice)" >"$T/badhome/trust.json"
expect 4 'trust.json: revoked\[0\]: `removedAt` is an array, not a string' -- env KI_HOME="$T/badhome" "$KI_BIN" trust list
printf '{"format":1}\n' >"$T/badhome/trust.json"
expect 4 'not a ki trust list' -- env KI_HOME="$T/badhome" "$KI_BIN" trust list

# --- signing and the evidence ladder
expect 0 "^reported$" -- level "$RUN"
expect 0 "reviewed	$RUN	bob \(trusted\)" -- env KI_PASSPHRASE=correct-horse "$KI_BIN" sign "$RUN" --key bob --predicate reviewed --note "checked the harness"
expect 0 "^reported$" -- level "$RUN"
# a trusted reviewer's reproduction and an untrusted key's do not count
expect 0 "" -- env KI_PASSPHRASE=correct-horse "$KI_BIN" sign "$RUN" --key bob --predicate reproduced --run-digest "$RUN" --latency-ns 352000 --ratio 0.997 --machine m1
expect 0 "carol \(untrusted\)" -- ki sign "$RUN" --key carol --predicate reproduced --run-digest "$RUN" --latency-ns 352000 --ratio 0.997 --machine m1
expect 0 "^reported$" -- level "$RUN"
expect 0 "" -- ki sign "$RUN" --key alice --predicate reproduced --run-digest "$RUN" --latency-ns 351000 --ratio 0.994 --machine m1
expect 0 "^verified$" -- level "$RUN"
# the same machine twice is not a replication; another runner on another machine is
expect 0 "" -- ki sign "$RUN" --key dave --predicate reproduced --run-digest "$RUN" --latency-ns 353000 --ratio 1.0 --machine m1
expect 0 "^verified$" -- level "$RUN"
expect 0 "" -- ki sign "$RUN" --key dave --predicate reproduced --run-digest "$RUN" --latency-ns 353000 --ratio 1.0 --machine m2
expect 0 "^replicated$" -- level "$RUN"
expect 0 "disputed" -- ki sign "$RUN" --key alice --predicate disputed --note "3x slower on m3" --run-digest "$RUN" --latency-ns 1e6 --ratio 2.8 --machine m3 --failed
expect 0 "^replicated,disputed$" -- level "$RUN"
expect 0 "level +replicated, disputed" -- ki show "$RUN"
expect 0 '"level": "replicated"' -- ki show --json "$RUN"
expect 0 "^attestation	trusted	.*	reproduced	$RUN	trusted alice" -- ki verify "$RUN"
expect 0 "7 attestations: 6 trusted, 1 not trusted, 0 faults" -- ki verify "$RUN"
expect 0 '"check": "payloadType"' -- ki verify --json "$RUN"
expect 0 "7 attestations: 6 trusted" -- ki audit

# --- usage
expect 2 "" -- ki sign "$RUN" --key alice --predicate approved
expect 2 "needs --run-digest" -- ki sign "$RUN" --key alice --predicate reproduced
expect 2 "belong to reproduced" -- ki sign "$RUN" --key alice --predicate reviewed --machine m1
# The request's own facts are checked before the passphrase: a wrong one is not what is reported.
expect 2 "latency must be a positive" -- env KI_PASSPHRASE=wrong "$KI_BIN" sign "$RUN" --key bob --predicate reproduced --run-digest "$RUN" --latency-ns=-5 --ratio 1 --machine m1
expect 2 "needs evidence" -- env KI_PASSPHRASE=wrong "$KI_BIN" sign "$RUN" --key bob --predicate disputed

# --- bad input: keys
before=$(objects)
expect 3 "no key named .nosuch." -- ki sign "$RUN" --key nosuch --predicate reviewed
expect 4 "wrong passphrase for key .bob." -- env KI_PASSPHRASE=wrong "$KI_BIN" sign "$RUN" --key bob --predicate reviewed
if command -v setsid >/dev/null; then
  expect 4 "set KI_PASSPHRASE" -- setsid -w "$KI_BIN" sign "$RUN" --key bob --predicate reviewed
fi
chmod 644 "$KI_HOME/keys/alice.key"
expect 5 "accessible by group or others \(mode 0644\)" -- ki sign "$RUN" --key alice --predicate reviewed
chmod 640 "$KI_HOME/keys/alice.key"
expect 5 "accessible by group or others" -- ki sign "$RUN" --key alice --predicate reviewed
chmod 600 "$KI_HOME/keys/alice.key"
expect 3 "" -- ki sign sha256:0000000000000000000000000000000000000000000000000000000000000000 --key alice --predicate reviewed
after=$(objects)
[ "$before" = "$after" ] && echo "ok   nothing stored by failed signs ($after objects)" ||
  { echo "FAIL objects $before -> $after"; fails=$((fails + 1)); }

# --- bad input: envelopes (filed with ki sign --envelope; nothing stored on failure)
ENV=$(ki verify --json "$RUN" | python3 -c 'import json,sys; print([a["envelope"] for a in json.load(sys.stdin)["attestations"] if a.get("predicate")=="reviewed"][0])')
ki cat "$ENV" >"$T/good.json"
edit_envelope "$T/good.json" "$T/tampered-payload.json" 'e["payload"] = base64.b64encode(p.replace(b"checked the harness", b"checked the harnesS")).decode()'
edit_envelope "$T/good.json" "$T/tampered-sig.json" 's = bytearray(base64.b64decode(e["signatures"][0]["sig"])); s[5] ^= 1; e["signatures"][0]["sig"] = base64.b64encode(bytes(s)).decode()'
edit_envelope "$T/good.json" "$T/wrong-type.json" 'e["payloadType"] = "application/json"'
edit_envelope "$T/good.json" "$T/truncated-sig.json" 'e["signatures"][0]["sig"] = e["signatures"][0]["sig"][:-4]'
edit_envelope "$T/good.json" "$T/nonb64-payload.json" 'e["payload"] = "!!" + e["payload"][2:]'
edit_envelope "$T/good.json" "$T/truncated-payload.json" 'e["payload"] = e["payload"][:-1]'
edit_envelope "$T/good.json" "$T/no-sigs.json" 'e["signatures"] = []'
edit_envelope "$T/good.json" "$T/moved.json" 'e["payload"] = base64.b64encode(p.replace("'"${RUN#sha256:}"'".encode(), "'"${PROTO#sha256:}"'".encode())).decode()'
# a co-signature by a key nobody knows (the signer's own stays)
edit_envelope "$T/good.json" "$T/unknown-key.json" 'e["signatures"].append({"keyid": "ab" * 32, "sig": base64.b64encode(bytes(64)).decode()})'
# every ki predicate names its signer, the key that signed (it was not checked)
edit_envelope "$T/good.json" "$T/no-signer.json" 'd = json.loads(p); del d["predicate"]["signer"]; e["payload"] = base64.b64encode(json.dumps(d).encode()).decode()'
edit_envelope "$T/good.json" "$T/other-signer.json" 'e["signatures"][0]["keyid"] = "ab" * 32'
before=$(objects)
expect 1 "signature by bob does not verify" -- ki sign --envelope "$T/tampered-payload.json"
expect 1 "signature by bob does not verify" -- ki sign --envelope "$T/tampered-sig.json"
expect 1 "subject: the statement is about $RUN, not $PROTO" -- ki sign "$PROTO" --envelope "$T/good.json"
expect 1 "signature by bob does not verify" -- ki sign --envelope "$T/moved.json"
# payloadType is signed (PAE): changed, the signature no longer verifies,
# and DSSE checks the signature first (issue 18 item 7).
expect 1 "signature by bob does not verify" -- ki sign --envelope "$T/wrong-type.json"
expect 4 "sig.* (base64|64)" -- ki sign --envelope "$T/truncated-sig.json"
expect 4 "payload.* base64" -- ki sign --envelope "$T/nonb64-payload.json"
expect 4 "payload.* base64" -- ki sign --envelope "$T/truncated-payload.json"
expect 4 "no signatures" -- ki sign --envelope "$T/no-sigs.json"
# An altered payload is the failed signature it is, not the field it lacks:
# the payload is parsed only once no known key says it was altered.
expect 1 "signature by bob does not verify" -- ki sign --envelope "$T/no-signer.json"
expect 1 "signature by bob does not verify" -- ki sign "$RUN" --envelope "$T/no-signer.json"
expect 4 "predicate: .signer. names key [0-9a-f]{16}, which made none of the envelope's signatures" -- ki sign --envelope "$T/other-signer.json"
echo '{"payload": "e30=", "payload": "e30=", "payloadType": "x", "signatures": []}' >"$T/dup.json"
expect 4 "duplicate" -- ki sign --envelope "$T/dup.json"
# an envelope on standard input is limited as a file is (it was read whole, without end)
expect 4 "standard input: over the limit of 1048576 bytes" -- bash -c 'head -c 3000000 /dev/zero | "$0" sign --envelope -' "$KI_BIN"
after=$(objects)
[ "$before" = "$after" ] && echo "ok   nothing stored by failed imports" ||
  { echo "FAIL objects $before -> $after"; fails=$((fails + 1)); }
# a valid envelope whose key nobody knows is filed, reported, and never counted
expect 0 "unknown-key" -- ki sign --envelope "$T/unknown-key.json"
expect 0 "attestation	trusted	.*	reviewed	.*trusted bob .*unknown-key" -- ki verify "$RUN"

# --- revocation: a removed runner key no longer counts, and says so
expect 0 "removed dave" -- ki trust remove dave
expect 0 "^verified,disputed$" -- level "$RUN"
expect 0 "revoked dave" -- ki verify "$RUN"
expect 0 "dave	revoked" -- ki trust list
expect 0 "removed alice" -- ki trust remove alice
expect 0 "^reported$" -- level "$RUN"
# Removing a removed key again (a retry after a failed directory fsync, whose
# new list was in place) is what was asked: exit 0, saying so (it was exit 3).
expect 0 "already removed alice	[0-9a-f]{64}	\(revoked at " -- ki trust remove alice
expect 3 "no trusted key" -- ki trust remove nobody
expect 0 "trusted alice" -- ki trust add "$(ki key export alice)" --name alice --role runner
expect 0 "^verified,disputed$" -- level "$RUN"
chmod 666 "$KI_HOME/trust.json"
expect 5 "writable by group or others" -- ki verify "$RUN"
chmod 644 "$KI_HOME/trust.json"

# The keys made at the prompt across a Ctrl-Z keep the passphrase typed after
# it, not the line dropped by the stop; so do those made across a stop in
# the background.
for k in tty-ctrl-z tty-ctrl-z-orphan tty-bg-ttin tty-bg-ttou; do
  expect 4 "wrong passphrase for key .$k." -- env KI_PASSPHRASE=xxpw "$KI_BIN" sign "$RUN" --key "$k" --predicate reviewed
  expect 0 "$k \(untrusted\)" -- env KI_PASSPHRASE=pw "$KI_BIN" sign "$RUN" --key "$k" --predicate reviewed
done

# --- concurrent updates: trust add / remove read, change and write the
# list; two at once used to lose one's change (8 of 20 parallel adds kept).
# They now hold an exclusive lock on trust.json.lock across all three.
(
  export KI_HOME=$T/parallel
  for i in $(seq 1 20); do
    "$KI_BIN" trust add "ed25519:$(head -c 32 /dev/urandom | base64)" --name "p$i" --role runner >/dev/null 2>"$T/p$i.err" &
  done
  wait
  n=$("$KI_BIN" trust list | grep -c "	runner	")
  [ "$n" = 20 ] && echo "ok   20 parallel trust adds: all 20 listed" ||
    { echo "FAIL 20 parallel trust adds: $n listed"; cat "$T"/p*.err; exit 1; }
  for i in $(seq 1 10); do "$KI_BIN" trust remove "p$i" >/dev/null 2>"$T/r$i.err" & done
  wait
  n=$("$KI_BIN" trust list | grep -c "	revoked	"); m=$("$KI_BIN" trust list | grep -c "	runner	")
  [ "$n" = 10 ] && [ "$m" = 10 ] && echo "ok   10 parallel trust removes: 10 revoked, 10 still trusted" ||
    { echo "FAIL 10 parallel trust removes: $n revoked, $m trusted"; cat "$T"/r*.err; exit 1; }
) || fails=$((fails + 1))

if [ "$fails" -ne 0 ]; then
  echo "$fails failures"
  exit 1
fi
echo "all sign CLI cases pass"
