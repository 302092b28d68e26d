"""fakeaws.base: what the fake AWS servers share: a threaded HTTP/1.1 server on 127.0.0.1
that records every request and can be scripted to fail, and the ledger of credentials
the fakes hand out (which the SQS proxy checks signatures against)."""

import datetime
import http.server
import re
import secrets
import threading
import time
import urllib.parse

import twicetest

AUTH = re.compile(r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, "
                  r"SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$")


def iso_time(epoch):
    """2024-05-01T12:00:00Z for a POSIX time."""
    return datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


class Creds:
    """One credential set a fake handed out."""

    def __init__(self, source, lifetime, token=True):
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
        self.source = source
        self.access_key_id = "ASIA" + "".join(secrets.choice(alphabet) for _ in range(16))
        self.secret_access_key = secrets.token_urlsafe(30)
        # Real session tokens are long base64 with '/', '+' and '='.
        self.token = (secrets.token_urlsafe(200).replace("-", "+").replace("_", "/") + "=="
                      if token else None)
        self.expiration = None if lifetime is None else time.time() + lifetime
        self.issued = time.time()

    def expiration_text(self):
        return iso_time(self.expiration) if self.expiration is not None else None

    def __repr__(self):
        return "<Creds %s from %s>" % (self.access_key_id, self.source)


class Ledger:
    """Every credential set the fakes handed out, by access key id (thread-safe)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._by_id = {}

    def issue(self, source, lifetime=3600, token=True):
        """New random credentials from `source` valid for lifetime seconds (None: no
        expiry); remembered for the SQS proxy."""
        c = Creds(source, lifetime, token)
        with self._lock:
            self._by_id[c.access_key_id] = c
        return c

    def add(self, access_key_id, secret, token=None, expiration=None, source="static"):
        c = Creds(source, None, token=False)
        c.access_key_id, c.secret_access_key, c.token = access_key_id, secret, token
        c.expiration = expiration
        with self._lock:
            self._by_id[access_key_id] = c
        return c

    def get(self, access_key_id):
        with self._lock:
            return self._by_id.get(access_key_id)

    def all(self):
        with self._lock:
            return list(self._by_id.values())


def check_signature(ledger, req, service):
    """None when req is SigV4-signed for `service` with live credentials of the ledger
    (the session token sent and signed exactly when they have one), else (code,
    message) as AWS would answer. Sets req.access_key_id and req.token_signed."""
    req.access_key_id = None
    req.token_signed = False
    m = AUTH.match(req.headers.get("authorization", ""))
    if not m:
        return "IncompleteSignature", "no AWS4-HMAC-SHA256 Authorization header"
    akid, day, region, signed_service, signed, _ = m.groups()
    req.access_key_id = akid
    names = signed.split(";")
    req.token_signed = "x-amz-security-token" in names
    creds = ledger.get(akid)
    if creds is None:
        return "InvalidClientTokenId", "unknown access key id %s" % akid
    if creds.expiration is not None and time.time() >= creds.expiration:
        return "ExpiredToken", "The security token included in the request is expired"
    sent_token = req.headers.get("x-amz-security-token")
    if sent_token != creds.token or (creds.token is not None and not req.token_signed):
        return "InvalidClientTokenId", "session token missing, wrong or not signed"
    amz_date = req.headers.get("x-amz-date", "")
    if amz_date[:8] != day or signed_service != service:
        return "IncompleteSignature", "scope %s/%s does not match X-Amz-Date %s" % (
            day, signed_service, amz_date)
    missing = [n for n in names if n not in req.headers]
    if missing or "host" not in names:
        return "IncompleteSignature", "signed headers missing: %s" % (missing or ["host"])
    want = twicetest.sigv4_sign(req.method, "http://%s%s" % (req.headers["host"], req.path),
                                {n: req.headers[n] for n in names}, req.body, region,
                                service, akid, creds.secret_access_key, amz_date)
    if want != req.headers["authorization"]:
        return "SignatureDoesNotMatch", "the request signature does not match"
    return None


class Request:
    """One recorded request: method, path, query (dict of lists), headers (lower-case
    names), body (bytes), at (time.time()), status (what was answered)."""

    def __init__(self, method, target, headers, body):
        parts = urllib.parse.urlsplit(target)
        self.method = method
        self.path = parts.path
        self.query = urllib.parse.parse_qs(parts.query, keep_blank_values=True)
        self.headers = {k.lower(): v for k, v in headers.items()}
        self.body = body
        self.at = time.time()
        self.status = None
        self.note = None
        self.client_gone = False

    def form(self):
        """The body as an x-www-form-urlencoded dict (single values)."""
        return dict(urllib.parse.parse_qsl(self.body.decode("utf-8"), keep_blank_values=True))

    def __repr__(self):
        return "<%s %s -> %s>" % (self.method, self.path, self.status)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _any(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.owner._serve(self, Request(self.command, self.path, self.headers, body))

    do_GET = do_PUT = do_POST = do_DELETE = _any

    def log_message(self, fmt, *args):  # quiet: tests print what they need
        pass


class RecordingServer:
    """A threaded HTTP/1.1 server on 127.0.0.1 (a free port) that records every request.

    Subclasses implement answer(req) -> (status, headers dict, body bytes). fail_next()
    scripts failures ahead of answer(). Use as a context manager, or start()/stop().
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._requests = []
        self._failures = []  # [count, status, path_prefix, body]
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.owner = self
        self.port = self.httpd.server_address[1]
        self.url = "http://127.0.0.1:%d" % self.port
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True,
                                        name="%s-%d" % (type(self).__name__, self.port))

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def requests(self, path_prefix=""):
        """Recorded requests (oldest first) whose path starts with path_prefix."""
        with self._lock:
            return [r for r in self._requests if r.path.startswith(path_prefix)]

    def fail_next(self, count=1, status=500, path_prefix="", body=b""):
        """Answer the next `count` requests under path_prefix with status."""
        with self._lock:
            self._failures.append([count, status, path_prefix, body])

    def _scripted_failure(self, req):
        with self._lock:
            for f in self._failures:
                if f[0] > 0 and req.path.startswith(f[2]):
                    f[0] -= 1
                    return f[1], {}, f[3]
        return None

    def answer(self, req):
        raise NotImplementedError

    def _serve(self, handler, req):
        with self._lock:
            self._requests.append(req)
        try:
            status, headers, body = self._scripted_failure(req) or self.answer(req)
        except Exception as e:  # a bug in a fake must show, not hang the client
            status, headers, body = 599, {}, ("fake server error: %r" % e).encode()
        req.status = status
        try:
            handler.send_response(status)
            for name, value in headers.items():
                handler.send_header(name, value)
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            if req.method != "HEAD":
                handler.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up (twiced cancels its long polls when it stops).
            req.client_gone = True
            handler.close_connection = True


def random_token(n=40):
    return secrets.token_urlsafe(n)

