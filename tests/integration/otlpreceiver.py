"""otlpreceiver: a small OTLP/HTTP traces receiver of the tests' own (JSON encoding), standing
in for an OpenTelemetry collector on 127.0.0.1.

What it is for: receiving what twiced's exporter POSTs to /v1/traces, decoding the
ExportTraceServiceRequest JSON and keeping every span with its resource, so a test can
look at spans as a collector would see them; answering slowly or not at all when a test
wants a slow or absent collector. Not a validator of all of OTLP: it checks the parts
twice writes (hex ids of the right length, nanosecond strings, known span kinds).

Used by: test_tracing.py.
"""

import http.server
import json
import socketserver
import threading
import time


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def _attrs(items):
    """OTLP attribute list -> {key: value} (stringValue as str, intValue as int)."""
    out = {}
    for kv in items or []:
        v = kv["value"]
        if "stringValue" in v:
            out[kv["key"]] = v["stringValue"]
        elif "intValue" in v:
            out[kv["key"]] = int(v["intValue"])
        else:
            out[kv["key"]] = v
    return out


def _check_id(value, hex_digits, what):
    if not isinstance(value, str) or len(value) != hex_digits or value.lower() != value:
        raise ValueError("%s %r is not %d lower-case hex digits" % (what, value, hex_digits))
    int(value, 16)


def decode(body):
    """An ExportTraceServiceRequest (JSON text) -> list of span dicts, each with
    "resource" and "attributes" as plain dicts and "events" with their attributes."""
    doc = json.loads(body)
    spans = []
    for rs in doc["resourceSpans"]:
        resource = _attrs(rs.get("resource", {}).get("attributes"))
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                _check_id(s["traceId"], 32, "traceId")
                _check_id(s["spanId"], 16, "spanId")
                if "parentSpanId" in s:
                    _check_id(s["parentSpanId"], 16, "parentSpanId")
                start, end = int(s["startTimeUnixNano"]), int(s["endTimeUnixNano"])
                if not 0 < start <= end:
                    raise ValueError("bad span times %d..%d" % (start, end))
                span = dict(s, resource=resource, scope=ss.get("scope", {}),
                            attributes=_attrs(s.get("attributes")))
                span["events"] = [dict(e, attributes=_attrs(e.get("attributes")))
                                  for e in s.get("events", [])]
                spans.append(span)
    return spans


class OtlpReceiver:
    """Listen on 127.0.0.1:<free port>; self.url is the traces endpoint.

    delay: seconds to wait before answering each request (a slow collector).
    status: the HTTP status of the answers (200 by default).
    pending: requests received and not answered yet (waiting out the delay).
    """

    def __init__(self):
        self.lock = threading.Lock()
        self.requests = []  # (headers dict, body bytes)
        self.errors = []  # decode problems: a test fails on any
        self.delay = 0.0
        self.status = 200
        self.pending = 0
        self._server = _Server(("127.0.0.1", 0), self._handler())
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self):
        return "http://127.0.0.1:%d/v1/traces" % self.port

    def _handler(self):
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver.lock:
                    delay, status = receiver.delay, receiver.status
                    receiver.pending += 1
                if delay:
                    time.sleep(delay)
                with receiver.lock:
                    receiver.pending -= 1
                    receiver.requests.append((dict(self.headers.items()), body))
                    try:
                        decode(body)
                    except (ValueError, KeyError, TypeError) as e:
                        receiver.errors.append("%s: %s" % (type(e).__name__, e))
                answer = b"{}"
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(answer)))
                    self.end_headers()
                    self.wfile.write(answer)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True  # the exporter gave up (its timeout)

        return Handler

    def spans(self):
        """Every span received so far, oldest request first."""
        with self.lock:
            bodies = [b for _, b in self.requests]
        out = []
        for b in bodies:
            try:
                out.extend(decode(b))
            except (ValueError, KeyError, TypeError):
                pass  # recorded in self.errors
        return out

    def close(self):
        self._server.shutdown()
        self._server.server_close()
