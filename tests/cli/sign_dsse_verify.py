#!/usr/bin/env python3
"""Independent check of one ki attestation: DSSE PAE + Ed25519 with PyNaCl.

Shares no code with ki. Usage:
  sign_dsse_verify.py ENVELOPE_FILE PUBKEY SUBJECT_DIGEST
PUBKEY is `ed25519:<base64>` (what `ki key export` prints); SUBJECT_DIGEST is
`sha256:<hex>`. Exit 0 when the envelope is a DSSE envelope of an in-toto
Statement v1 about SUBJECT_DIGEST signed by PUBKEY; 1 otherwise; 77 when
PyNaCl is not installed (the test is then skipped).
"""
import base64
import hashlib
import json
import sys

try:
    import nacl.exceptions
    import nacl.signing
except ImportError:
    print("python3-nacl is not installed: skipping", file=sys.stderr)
    sys.exit(77)


def pae(payload_type: bytes, payload: bytes) -> bytes:
    # DSSE protocol: "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body
    return b"DSSEv1 %d %s %d %s" % (len(payload_type), payload_type, len(payload), payload)


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def main():
    env_path, pubkey_text, subject = sys.argv[1], sys.argv[2].strip(), sys.argv[3]
    with open(env_path, "rb") as f:
        env = json.loads(f.read())
    if env.get("payloadType") != "application/vnd.in-toto+json":
        fail("payloadType is %r" % env.get("payloadType"))
    payload = base64.b64decode(env["payload"], validate=True)
    sigs = env.get("signatures") or fail("no signatures")
    if not pubkey_text.startswith("ed25519:"):
        fail("public key is not ed25519:<base64>")
    raw_key = base64.b64decode(pubkey_text[len("ed25519:"):], validate=True)
    keyid = hashlib.sha256(raw_key).hexdigest()
    verify_key = nacl.signing.VerifyKey(raw_key)
    message = pae(env["payloadType"].encode(), payload)
    ok = False
    for s in sigs:
        if s.get("keyid", keyid) != keyid:
            continue
        try:
            verify_key.verify(message, base64.b64decode(s["sig"], validate=True))
            ok = True
        except nacl.exceptions.BadSignatureError:
            fail("signature by %s does not verify" % keyid[:16])
    if not ok:
        fail("no signature by key %s" % keyid[:16])
    statement = json.loads(payload)
    if statement.get("_type") != "https://in-toto.io/Statement/v1":
        fail("not an in-toto Statement v1")
    want = subject.split(":", 1)[1]
    if not any(s.get("digest", {}).get("sha256") == want for s in statement.get("subject", [])):
        fail("statement is not about " + subject)
    print("ok: DSSE envelope verified by PyNaCl: %s signed by %s" % (statement["predicateType"], keyid[:16]))


if __name__ == "__main__":
    main()
