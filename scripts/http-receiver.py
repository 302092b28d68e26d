#!/usr/bin/python3
"""http-receiver.py: the HTTP endpoint of the test environment (stdlib only, threaded).

For: receiving the webhooks and sync-plugin calls twice makes, recording each request
per path and answering as the test scripted it. Not for: TLS, or anything but
127.0.0.1. Started by scripts/testenv.sh; tests use it through twicetest.HttpReceiver.

Control API (PREFIX is a path prefix, matched on whole segments; tests use a unique
one each, so they can run in parallel):
    POST /_control/PREFIX  JSON {"fail_first": N, "status": 503, "retry_after": "1",
                           "then_status": 200, "delay_ms": 0, "body": ..., "then_body": ...}
        With fail_first: the first N requests get `status` (default 503, with a
        Retry-After header when retry_after is set), later ones `then_status` (200).
        Without fail_first: every request gets `status` (for 409, 400, ... modes).
        delay_ms delays every answer. body/then_body replace the default JSON body.
        headers: {"Name": "value"} sent with every answer.
        Posting a script again replaces it and restarts its count.
    GET  /_requests/PREFIX  the recorded requests under PREFIX, oldest first (JSON list);
                           each has "conn", a number per TCP connection (1, 2, ... in
                           accept order), so a test can count the connections a
                           client opened for its requests (keep-alive reuse)
    POST /_reset/PREFIX     forget requests and scripts under PREFIX (empty: all)
Any other request is recorded and answered by the longest matching script, or with
200 {"ok":true}.
"""

import argparse
import base64
import json
import os
import signal
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CONTROL = ("/_control/", "/_requests/", "/_reset/")


def norm(prefix):
    return urllib.parse.unquote(prefix).strip("/")


def under(path, prefix):
    """True if path (without query) lies under prefix, on segment boundaries."""
    p = path.strip("/")
    return prefix == "" or p == prefix or p.startswith(prefix + "/")


class State:
    """Recorded requests and scripts, shared by the handler threads (one lock)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.requests = []
        self.scripts = {}
        self.connections = 0  # accepted so far; never reset, so numbers stay unique

    def new_connection(self):
        with self.lock:
            self.connections += 1
            return self.connections

    def script(self, prefix, spec):
        with self.lock:
            self.scripts[prefix] = dict(spec, seen=0)

    def reset(self, prefix):
        with self.lock:
            self.requests = [r for r in self.requests if not under(r["path"], prefix)]
            for p in [p for p in self.scripts if under(p, prefix)]:
                del self.scripts[p]

    def recorded(self, prefix):
        with self.lock:
            return [r for r in self.requests if under(r["path"], prefix)]

    def answer(self, record):
        """Record a request; return (status, headers, body bytes, delay seconds)."""
        with self.lock:
            matches = [p for p in self.scripts if under(record["path"], p)]
            spec = self.scripts[max(matches, key=len)] if matches else {}
            spec["seen"] = spec.get("seen", 0) + 1
            if "fail_first" in spec:
                failing = spec["seen"] <= int(spec["fail_first"])
                status = int(spec.get("status", 503)) if failing else int(
                    spec.get("then_status", 200))
            else:
                failing = "status" in spec and int(spec["status"]) >= 300
                status = int(spec.get("status", 200))
            body = spec.get("body" if failing else "then_body")
            record["status"] = status
            record["index"] = len(self.requests)
            self.requests.append(record)
        headers = dict(spec.get("headers") or {})
        if failing and spec.get("retry_after") is not None:
            headers["Retry-After"] = str(spec["retry_after"])
        if body is None:
            body = {"ok": True} if status < 300 else {"ok": False,
                                                      "error": "scripted status %d" % status}
        if isinstance(body, str):
            payload, ctype = body.encode("utf-8"), "text/plain; charset=utf-8"
        else:
            payload, ctype = json.dumps(body).encode(), "application/json"
        headers["Content-Type"] = ctype
        return status, headers, payload, float(spec.get("delay_ms", 0)) / 1000.0


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "twice-test-http-receiver"
    state = None  # set by main()

    def setup(self):
        # One handler instance per accepted connection (its keep-alive
        # requests all pass through this instance): number it.
        super().setup()
        self.conn = self.state.new_connection()

    def log_request(self, code="-", size="-"):
        pass  # no line per request; errors still go through log_message

    def read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def send(self, status, payload, headers=None):
        self.send_response(status)
        for name, value in (headers or {"Content-Type": "application/json"}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def control(self, path, body):
        for kind in CONTROL:
            if path.startswith(kind) or path == kind.rstrip("/"):
                prefix = norm(path[len(kind):])
                break
        if kind == "/_requests/" and self.command == "GET":
            return self.send(200, json.dumps(self.state.recorded(prefix)).encode())
        if kind == "/_control/" and self.command == "POST":
            try:
                spec = json.loads(body or b"{}")
                assert isinstance(spec, dict)
            except (ValueError, AssertionError):
                return self.send(400, b'{"error":"body must be a JSON object"}')
            self.state.script(prefix, spec)
            return self.send(200, json.dumps({"prefix": prefix, "script": spec}).encode())
        if kind == "/_reset/" and self.command == "POST":
            self.state.reset(prefix)
            return self.send(200, b'{"reset":true}')
        return self.send(405, b'{"error":"use GET /_requests/, POST /_control/ or /_reset/"}')

    def handle_any(self):
        body = self.read_body()
        url = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(url.path)
        if path.startswith(CONTROL) or path in ("/_requests", "/_reset"):
            return self.control(path, body)
        text = body.decode("utf-8", "replace")
        record = {
            "method": self.command,
            "path": path,
            "query": url.query,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body": text,
            "body_b64": base64.b64encode(body).decode(),
            "time": time.time(),
            "conn": self.conn,
        }
        status, headers, payload, delay = self.state.answer(record)
        if delay > 0:
            time.sleep(delay)
        self.send(status, payload, headers)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = handle_any


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--pidfile")
    args = p.parse_args()
    Handler.state = State()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    # SIGTERM: stop serving from another thread (shutdown() blocks until the loop ends).
    signal.signal(signal.SIGTERM,
                  lambda *_: threading.Thread(target=server.shutdown, daemon=True).start())
    if args.pidfile:
        with open(args.pidfile, "w", encoding="utf-8") as f:
            f.write("%d\n" % os.getpid())
    print("http-receiver listening on http://127.0.0.1:%d" % args.port, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
