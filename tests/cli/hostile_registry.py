#!/usr/bin/env python3
"""A hostile OCI registry on loopback, for tests/cli/remote_hostile.sh.

In mode "normal" it is a small in-memory distribution-spec registry (enough
for `ki push` and `ki pull`: uploads by POST/PATCH/PUT, blobs, manifests,
tags/list; no referrers API). `POST /_mode` with a mode name as its body
switches how it answers pulls afterwards:

  drip-manifest       GET manifest: 2 bytes every 0.5 s
  stall-blob          GET blob: the first 1,000 bytes, then nothing (open)
  crawl-blob          GET blob: 4 bytes a second into its full Content-Length
  trickle-blob        GET blob: 512 bytes every 0.1 s (5 KiB/s: above the
                      low-speed limit, far below --min-rate) into its full
                      Content-Length
  wrong-digest        GET blob: the right length, one byte changed
  short-body          GET blob: Content-Length of the blob, half of it, close
  long-body           GET blob: the blob and more bytes than announced
  redirect-elsewhere  GET blob: 307 to another host (127.1.0.1), which serves
                      other bytes
  realm-elsewhere     every /v2/ request: 401, Bearer realm on 127.1.0.1
  realm-other-port    every /v2/ request: 401, Bearer realm on 127.0.0.1,
                      another port, plain http

The other host logs the Authorization header of each request it gets;
`GET /_seen` returns them as a JSON list. Started as
`hostile_registry.py PORTFILE`: writes "<port> <other port>" to PORTFILE
once listening, and serves until killed. Standard library only.
"""
import hashlib
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STATE = {"mode": "normal", "blobs": {}, "manifests": {}, "tags": {}, "uploads": {}, "seen": [], "next": 1}
LOCK = threading.Lock()
OTHER = {"port": 0}  # the other host's port (127.1.0.1 and 127.0.0.1 both)


def digest_of(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()


class Quiet(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def handle(self):
        # A TLS ClientHello (0x16) to this plain-http server: a 400 at once,
        # as Go's net/http (the CNCF registry) answers one.
        try:
            first = self.connection.recv(1, socket.MSG_PEEK)
        except OSError:
            return
        if first == b"\x16":
            self.connection.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        super().handle()

    def log_message(self, *args):
        pass

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def reply(self, status, body=b"", headers=(), length=None):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def paced(self, status, body, headers, piece, every, stop_after=None):
        """Sends `body` `piece` bytes at a time, one piece every `every` s; after
        `stop_after` bytes, holds the connection without sending."""
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.flush()
        sent = 0
        try:
            while sent < len(body):
                if stop_after is not None and sent >= stop_after:
                    while True:  # until the client gives up (the read below sees EOF)
                        self.connection.settimeout(0.2)
                        try:
                            if self.connection.recv(1) == b"":
                                break
                        except OSError as e:
                            if "timed out" not in str(e):
                                break
                    break
                n = min(piece, len(body) - sent, (stop_after - sent) if stop_after is not None else piece)
                self.wfile.write(body[sent:sent + n])
                self.wfile.flush()
                sent += n
                time.sleep(every)
        except OSError:
            pass
        self.close_connection = True


class OtherHost(Quiet):
    """Another host: a token realm, or a storage backend a blob is redirected to."""

    def handle_any(self):
        self.body()
        with LOCK:
            STATE["seen"].append(self.headers.get("Authorization") or "")
        if self.path.startswith("/token"):
            self.reply(200, b'{"token":"anonymous"}', [("Content-Type", "application/json")])
        else:
            self.reply(200, b"these are not the bytes of the digest asked for")

    do_GET = do_HEAD = do_POST = handle_any


class Registry(Quiet):
    def do_POST(self):
        if self.path == "/_mode":
            with LOCK:
                STATE["mode"] = self.body().decode().strip()
            return self.reply(200)
        if self.hostile_auth():
            return
        self.body()
        if "/blobs/uploads/" in self.path:
            with LOCK:
                uid = str(STATE["next"])
                STATE["next"] += 1
                STATE["uploads"][uid] = b""
            repo = self.path.split("/blobs/uploads/")[0]
            return self.reply(202, headers=[("Location", repo + "/blobs/uploads/" + uid), ("Range", "0-0")])
        self.reply(404)

    def do_PATCH(self):
        data = self.body()
        uid = self.path.split("/blobs/uploads/")[1].split("?")[0]
        with LOCK:
            STATE["uploads"][uid] += data
        self.reply(202, headers=[("Location", self.path.split("?")[0])])

    def do_PUT(self):
        data = self.body()
        path, _, query = self.path.partition("?")
        if "/blobs/uploads/" in path:
            uid = path.split("/blobs/uploads/")[1]
            want = query.split("digest=")[1].split("&")[0].replace("%3A", ":")
            with LOCK:
                blob = STATE["uploads"].pop(uid, b"") + data
                if digest_of(blob) != want:
                    return self.reply(400, b'{"errors":[{"code":"DIGEST_INVALID"}]}')
                STATE["blobs"][want] = blob
            return self.reply(201, headers=[("Docker-Content-Digest", want)])
        if "/manifests/" in path:
            ref = path.split("/manifests/")[1]
            d = digest_of(data)
            with LOCK:
                STATE["manifests"][d] = (data, self.headers.get("Content-Type"))
                if not ref.startswith("sha256:"):
                    STATE["tags"][ref] = d
            return self.reply(201, headers=[("Docker-Content-Digest", d)])
        self.reply(404)

    def hostile_auth(self):
        mode = STATE["mode"]
        if mode not in ("realm-elsewhere", "realm-other-port") or not self.path.startswith("/v2/"):
            return False
        if self.headers.get("Authorization") == "Bearer good":
            return False
        host = "127.1.0.1" if mode == "realm-elsewhere" else "127.0.0.1"
        realm = 'Bearer realm="http://%s:%d/token",service="hostile"' % (host, OTHER["port"])
        self.reply(401, b'{"errors":[{"code":"UNAUTHORIZED"}]}', [("WWW-Authenticate", realm)])
        return True

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        if self.path == "/_seen":
            with LOCK:
                return self.reply(200, json.dumps(STATE["seen"]).encode())
        if self.hostile_auth():
            return
        mode = STATE["mode"]
        path = self.path.split("?")[0]
        if path == "/v2/":
            return self.reply(200, b"{}")
        if path.endswith("/tags/list"):
            with LOCK:
                tags = sorted(STATE["tags"])
            return self.reply(200, json.dumps({"name": "x", "tags": tags}).encode())
        if "/manifests/" in path:
            ref = path.split("/manifests/")[1]
            with LOCK:
                d = STATE["tags"].get(ref, ref)
                m = STATE["manifests"].get(d)
            if m is None:
                return self.reply(404, b'{"errors":[{"code":"MANIFEST_UNKNOWN"}]}')
            headers = [("Content-Type", m[1]), ("Docker-Content-Digest", d)]
            if mode == "drip-manifest" and self.command == "GET":
                return self.paced(200, m[0], headers, 2, 0.5)
            return self.reply(200, m[0], headers)
        if "/blobs/" in path:
            d = path.split("/blobs/")[1]
            with LOCK:
                blob = STATE["blobs"].get(d)
            if blob is None:
                return self.reply(404, b'{"errors":[{"code":"BLOB_UNKNOWN"}]}')
            headers = [("Docker-Content-Digest", d)]
            if self.command == "HEAD" or mode == "normal" or mode == "drip-manifest":
                return self.reply(200, blob, headers)
            if mode == "stall-blob":
                return self.paced(200, blob, headers, 1000, 0.01, stop_after=1000)
            if mode == "crawl-blob":
                return self.paced(200, blob, headers, 4, 1.0)
            if mode == "trickle-blob":
                return self.paced(200, blob, headers, 512, 0.1)
            if mode == "wrong-digest":
                return self.reply(200, blob[:-1] + bytes([blob[-1] ^ 1]), headers)
            if mode == "short-body":
                self.reply(200, blob[: len(blob) // 2], headers, length=len(blob))
                self.close_connection = True
                return
            if mode == "long-body":
                return self.reply(200, blob + b"and some more", headers)
            if mode == "redirect-elsewhere":
                return self.reply(307, headers=[("Location", "http://127.1.0.1:%d/storage/blob" % OTHER["port"])])
        self.reply(404, b"{}")


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a client that gave up (what the tests provoke) is no news


def main():
    other = Server(("127.1.0.1", 0), OtherHost)
    OTHER["port"] = other.server_address[1]
    # The same port on 127.0.0.1: "the registry's host, another port".
    other_local = Server(("127.0.0.1", OTHER["port"]), OtherHost)
    reg = Server(("127.0.0.1", 0), Registry)
    for s in (other, other_local):
        threading.Thread(target=s.serve_forever, daemon=True).start()
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write("%d %d\n" % (reg.server_address[1], OTHER["port"]))
    import os
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    reg.serve_forever()


if __name__ == "__main__":
    main()
