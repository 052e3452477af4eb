#!/usr/bin/env python3
"""Opens pages of a ki report in headless Chromium and checks them.

Speaks the DevTools protocol over a WebSocket (a minimal client here: the
standard library has none), so the test needs nothing beyond chromium and
python3. Usage:

  report_browser.py CHROMIUM SITE CHECKS.json [SCREENSHOT_DIR]

CHECKS.json is a list of {"page": "run/<hex>.html", "expect": {...}}; see
check_page for what "expect" may hold. Exit 0 when every check holds, 1
otherwise, printing each failure.
"""
import base64
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request


class WebSocket:
    """Just enough RFC 6455 for CDP: text frames, client masking, no extensions."""

    def __init__(self, url):
        m = re.match(r"ws://([^:/]+):(\d+)(/.*)", url)
        self.sock = socket.create_connection((m.group(1), int(m.group(2))), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        req = (f"GET {m.group(3)} HTTP/1.1\r\nHost: {m.group(1)}:{m.group(2)}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
        self.sock.sendall(req.encode())
        resp = b""
        while b"\r\n\r\n" not in resp:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise RuntimeError("websocket handshake: connection closed")
            resp += chunk
        head, self.buf = resp.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise RuntimeError("websocket handshake refused: " + head.decode(errors="replace"))

    def send(self, text):
        data = text.encode()
        mask = os.urandom(4)
        n = len(data)
        if n < 126:
            hdr = struct.pack("!BB", 0x81, 0x80 | n)
        elif n < 65536:
            hdr = struct.pack("!BBH", 0x81, 0x80 | 126, n)
        else:
            hdr = struct.pack("!BBQ", 0x81, 0x80 | 127, n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        self.sock.sendall(hdr + mask + masked)

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise RuntimeError("websocket closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self):
        message = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._read(8))[0]
            payload = self._read(n)
            op = b0 & 0x0F
            if op == 0x8:
                raise RuntimeError("websocket closed by the browser")
            if op in (0x9, 0xA):  # ping / pong: not sent by Chromium to clients, ignored
                continue
            message += payload
            if b0 & 0x80:
                return message.decode()


class Browser:
    def __init__(self, chromium):
        self.profile = tempfile.mkdtemp(prefix="ki-chromium-")
        args = [chromium, "--headless=new", "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
                f"--user-data-dir={self.profile}", "--no-first-run", "--no-default-browser-check",
                "--disable-gpu", "--disable-extensions", "--disable-background-networking",
                "--window-size=1200,900", "about:blank"]
        if os.geteuid() == 0:
            args.insert(1, "--no-sandbox")  # Chromium refuses to start its sandbox as root
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        port = None
        deadline = time.time() + 60
        while time.time() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                if self.proc.poll() is not None:
                    raise RuntimeError("chromium exited before it listened")
                continue
            m = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            if m:
                port = int(m.group(1))
                break
        if port is None:
            raise RuntimeError("chromium did not say where it listens")
        # Chromium's stderr is drained from here on so it never blocks on a full pipe.
        self.proc.stderr.close()
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30))
        page = next(t for t in targets if t["type"] == "page")
        self.ws = WebSocket(page["webSocketDebuggerUrl"])
        self.next_id = 0
        self.events = []
        for method in ("Page.enable", "Runtime.enable", "Log.enable"):
            self.call(method)
        self.call("Emulation.setDeviceMetricsOverride", width=1200, height=900, deviceScaleFactor=1, mobile=False)

    def call(self, method, **params):
        self.next_id += 1
        my = self.next_id
        self.ws.send(json.dumps({"id": my, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def wait_event(self, method, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            for i, e in enumerate(self.events):
                if e["method"] == method:
                    return self.events.pop(i)
            self.ws.sock.settimeout(max(0.1, deadline - time.time()))
            self.events.append(json.loads(self.ws.recv()))
        raise RuntimeError(f"no {method} within {timeout} s")

    def open(self, url):
        self.events = []
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired")
        time.sleep(0.2)  # the page's script runs at the end of <body>; let the plot settle
        # Events that arrived meanwhile are kept in self.events.
        self.call("Runtime.evaluate", expression="1")

    def evaluate(self, expression):
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"evaluate {expression!r}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def problems(self):
        """Console errors, uncaught exceptions and failed loads seen since open()."""
        out = []
        for e in self.events:
            m, p = e["method"], e.get("params", {})
            if m == "Runtime.exceptionThrown":
                out.append("exception: " + json.dumps(p.get("exceptionDetails", {}))[:400])
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert", "warning"):
                out.append("console." + p["type"] + ": " + json.dumps(p.get("args", []))[:400])
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
                out.append("log: " + p["entry"].get("text", "")[:400])
        return out

    def screenshot(self, path):
        r = self.call("Page.captureScreenshot", format="png")
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))

    def close(self):
        try:
            self.call("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


# Pixels of the plot's canvas that are not transparent: a drawn chart has thousands.
PLOT_PIXELS = """(() => { const c = document.getElementById('plot'); if (!c || !window.kiChart) return -1;
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;
  for (let i = 3; i < d.length; i += 4) if (d[i] !== 0) n++; return n; })()"""


def text_of(b, element_id):
    return b.evaluate(f"(() => {{ const e = document.getElementById({json.dumps(element_id)}); "
                      f"return e ? e.textContent : null; }})()")


def check_page(b, site, check, shots):
    failures = []
    page = check["page"]
    b.open("file://" + os.path.join(site, page))
    exp = check.get("expect", {})
    for p in b.problems():
        failures.append(f"{page}: {p}")
    if b.evaluate("document.readyState") != "complete":
        failures.append(f"{page}: did not finish loading")
    for element_id, want in exp.get("text", {}).items():
        got = text_of(b, element_id)
        if got is None or want not in got:
            failures.append(f"{page}: #{element_id} has {got!r}, wanted it to hold {want!r}")
    for want in exp.get("contains", []):
        if want not in b.evaluate("document.body.innerText"):
            failures.append(f"{page}: the page does not show {want!r}")
    for expression, want in exp.get("js", {}).items():
        got = b.evaluate(expression)
        if got != want:
            failures.append(f"{page}: {expression} is {got!r}, wanted {want!r}")
    if exp.get("plot"):
        n = b.evaluate(PLOT_PIXELS)
        if n is None or n < 500:
            failures.append(f"{page}: no plot drawn ({n} painted pixels on #plot)")
    if exp.get("filter"):
        # Typing into the filter hides the groups that do not match.
        f = exp["filter"]
        got = b.evaluate(f"""(() => {{ const i = document.getElementById('filter'); i.value = {json.dumps(f['type'])};
            i.dispatchEvent(new Event('input')); return [...document.querySelectorAll('#groups tbody tr')]
            .filter(r => !r.hidden).length; }})()""")
        if got != f["shown"]:
            failures.append(f"{page}: filter {f['type']!r} shows {got} groups, wanted {f['shown']}")
        b.evaluate("(() => { const i = document.getElementById('filter'); i.value = ''; "
                   "i.dispatchEvent(new Event('input')); })()")
    if shots and check.get("screenshot"):
        b.screenshot(os.path.join(shots, check["screenshot"]))
    return failures


def main():
    chromium, site, checks_path = sys.argv[1:4]
    shots = sys.argv[4] if len(sys.argv) > 4 else None
    checks = json.load(open(checks_path))
    b = Browser(chromium)
    failures = []
    try:
        for check in checks:
            failures += check_page(b, os.path.abspath(site), check, shots)
    finally:
        b.close()
    for f in failures:
        print("FAIL:", f)
    print(f"{len(checks)} pages opened, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
