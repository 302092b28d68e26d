"""faultproxy: a small HTTP reverse proxy of the tests' own, between twiced and the
SQS emulator, that injects the faults production brings; and a TCP forwarder that
takes a server (PostgreSQL) away and gives it back.

What it is for: making the real emulator unreachable (connections refused), or
answering every request with a chosen status and error body (500s, throttling),
or passing requests through unchanged - switched at run time by the test. It
also counts what it saw, by operation. Not a mock: in "pass" mode every request
goes to the real emulator and its real answer comes back (unless the test sets
`rewrite`, to add what the emulator lacks, such as a system attribute SQS has).
TcpProxy does the same for any TCP server, at the level of connections: up (bytes
forwarded as they are), down (every connection cut, new ones refused), hanging
(every connection cut, new ones accepted and never answered) or frozen (a server
stopped, SIGSTOP: the open connections stay open and carry nothing until thawed, new
ones are accepted and wait), so one test
can lose the run's shared PostgreSQL without taking it from the others; and, for
PostgreSQL, it can lose one answer: the statement runs and commits, the connection is
cut before its answer reaches the client (cut_answer).

Used by: test_sqs_faults.py, test_metrics.py, test_tracing.py, test_breaker.py,
test_outbox.py, test_guard.py, test_reload.py, test_reload_load.py.
"""

import http.client
import http.server
import json
import socket
import socketserver
import struct
import threading
import time


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class FaultProxy:
    """Listen on 127.0.0.1:<port>, forward to target_host:target_port.

    modes: "pass" (forward; trickle() makes chosen answers drip, slow() chosen
    requests wait before they are forwarded, cut() resets chosen answers halfway), "refuse" (the listening socket is closed: connect
    fails), "status" (answer with self.status, self.body and self.headers; only
    the requests of self.only, an SQS action, when it is set: the others pass),
    "hang" (read the request and never answer, until passthrough(): then the
    connection is cut; also only self.only's when it is set).
    """

    def __init__(self, target_host, target_port):
        self.target = (target_host, target_port)
        self.mode = "pass"
        self.status, self.body, self.headers = 500, b"", {}
        self.only = None
        self.seen = {"pass": 0, "status": 0, "hang": 0}
        self.released = threading.Event()  # ends the hangs of "hang" mode
        self.operations = []  # (X-Amz-Target, request body as JSON) of each request
        self.rewrite = None  # fn(target, request JSON, response bytes) -> response bytes
        self.trickle_only = None  # trickle(): the SQS action whose answers trickle
        self.trickle_needle = b""  # ... when they hold these bytes
        self.trickle_gap = 0.05  # ... one byte every this many seconds
        self.trickling = threading.Event()  # set once a trickle began
        self.slow_only, self.slow_s = None, 0  # slow(): the action answered late, by how much
        self.cut_only, self.cut_left = None, 0  # cut(): the action whose answers are cut, how many
        self.cuts = 0  # answers cut so far
        self.lock = threading.Lock()
        self.port = None
        self._server = None
        self._thread = None
        self.start()

    @property
    def endpoint(self):
        return "http://127.0.0.1:%d" % self.port

    def _handler(self):
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                target = self.headers.get("X-Amz-Target", "")
                try:
                    request = json.loads(body or b"{}")
                except ValueError:
                    request = None
                with proxy.lock:
                    mode = proxy.mode
                    if mode in ("status", "hang") and proxy.only and \
                            not target.endswith("." + proxy.only):
                        mode = "pass"
                    if mode in proxy.seen:
                        proxy.seen[mode] += 1
                    proxy.operations.append((target, request))
                    rewrite = proxy.rewrite
                if mode == "refuse":  # a connection opened before refuse(): cut it
                    self.close_connection = True
                    try:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                    return
                if mode == "status":
                    self._answer(proxy.status, proxy.body, proxy.headers)
                    return
                if mode == "hang":
                    proxy.released.wait(300)
                    self.close_connection = True
                    return
                with proxy.lock:
                    late = proxy.slow_s if proxy.slow_only is not None and \
                        target.endswith("." + proxy.slow_only) else 0
                if late:
                    time.sleep(late)
                conn = http.client.HTTPConnection(*proxy.target, timeout=60)
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("connection", "keep-alive")}
                conn.request("POST", self.path, body, headers)
                r = conn.getresponse()
                data = r.read()
                if rewrite is not None and r.status == 200:
                    data = rewrite(target, request, data)
                out = {k: v for k, v in r.getheaders()
                       if k.lower() not in ("connection", "keep-alive", "transfer-encoding",
                                            "content-length")}
                conn.close()
                with proxy.lock:
                    trickle = (proxy.trickle_only is not None
                               and target.endswith("." + proxy.trickle_only)
                               and proxy.trickle_needle in data)
                    cut = (proxy.cut_left > 0 and r.status == 200
                           and target.endswith("." + proxy.cut_only))
                    if cut:
                        proxy.cut_left -= 1
                        proxy.cuts += 1
                if cut:
                    self._cut(data, out)
                    return
                self._answer(r.status, data, out, proxy.trickle_gap if trickle else 0)

            def _cut(self, data, headers):
                """The answer's headers and half its body, then a reset (RST)."""
                self.close_connection = True
                try:
                    self.send_response(200)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data[:len(data) // 2])
                    self.wfile.flush()
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                               struct.pack("ii", 1, 0))
                    self.connection.close()
                except OSError:
                    pass

            def _answer(self, status, data, headers, gap=0):
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if not gap:
                        self.wfile.write(data)
                        return
                    self.wfile.flush()
                    proxy.trickling.set()
                    for i in range(len(data)):
                        self.wfile.write(data[i:i + 1])
                        self.wfile.flush()
                        time.sleep(gap)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True  # twiced gave up (a cancelled long poll)

        return Handler

    def start(self):
        """Listen (again, on the same port when it had one)."""
        deadline = time.monotonic() + 10
        while True:
            try:
                self._server = _Server(("127.0.0.1", self.port or 0), self._handler())
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def refuse(self):
        """Stop listening and drop open connections: the endpoint is unreachable."""
        with self.lock:
            self.mode = "refuse"
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def answer(self, status, code, message="injected by the test", query_code=None, only=None):
        """Answer every request (of the action `only`, when given) with an SQS-style
        JSON error."""
        if self._server is None:
            self.start()
        body = ('{"__type":"com.amazonaws.sqs#%s","message":"%s"}' % (code, message)).encode()
        headers = {"Content-Type": "application/x-amz-json-1.0"}
        if query_code:
            headers["x-amzn-query-error"] = query_code
        with self.lock:
            self.status, self.body, self.headers = status, body, headers
            self.only = only
            self.mode = "status"

    def hang(self, only=None):
        """Take every request (of the action `only`, when given) and never answer it:
        an SQS call that stalls (a black-holed connection, an answer that never comes).
        Until passthrough(), which cuts the hung connections."""
        if self._server is None:
            self.start()
        with self.lock:
            self.released.clear()
            self.only = only
            self.mode = "hang"

    def trickle(self, only, needle=b"", gap=0.05):
        """Pass requests through, but send the answers of the action `only` that hold
        needle one byte every gap seconds, headers first (a slow link, a proxy that
        drips): trickling is set once one began. None: no more."""
        with self.lock:
            self.trickle_only, self.trickle_needle, self.trickle_gap = only, needle, gap
            self.trickling.clear()

    def slow(self, only, seconds):
        """Pass requests through, each of the action `only` after waiting this long
        (an SQS that answers slowly, but answers). None: no more."""
        with self.lock:
            self.slow_only, self.slow_s = only, seconds

    def cut(self, only, times=1):
        """Pass requests through, but cut the next `times` answers of the action `only`
        (after the emulator did the work): headers and half the body, then a
        connection reset, as a network that drops a connection mid-answer."""
        with self.lock:
            self.cut_only, self.cut_left = only, times

    def passthrough(self):
        """Forward to the real emulator again."""
        if self._server is None:
            self.start()
        with self.lock:
            self.mode = "pass"
        self.released.set()

    def close(self):
        self.released.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


# PostgreSQL's ReadyForQuery message: the server sends it once a statement's
# transaction has ended (an autocommit statement's commit comes before it).
_READY_FOR_QUERY = b"Z\x00\x00\x00\x05"
# A Sync message (client to server): the implicit transaction of the extended
# protocol's statements before it commits there.
_SYNC = b"S\x00\x00\x00\x04"


class TcpProxy:
    """Listen on 127.0.0.1:<port> and forward every connection to target, byte for byte,
    until down(); up() listens again on the same port."""

    def __init__(self, target_host, target_port):
        self.target = (target_host, target_port)
        self.port = None
        self.lock = threading.Lock()
        self.conns = []
        self._listener = None
        self._cut_marker = None  # bytes: the request whose answer is to be lost
        self._cut_down = False  # cut_answer(then_down): down() at that cut
        self._cut_left = 0  # cut_answer(times): requests left to cut
        self.cuts = 0  # answers lost so far
        self.accepted = 0  # connections accepted so far
        self.hanging = False  # hang(): new connections are held, never answered
        self.connect_delay = 0  # slow_connects(): seconds before a new one is forwarded
        self.greeting = None  # greet(): bytes every new connection gets instead of the server
        self.held = []
        self.frozen = False  # freeze(): nothing moves on any connection until thaw()
        self.thawed = threading.Condition(self.lock)
        self.frozen_requests = b""  # client to server bytes that arrived while frozen
        self._freeze_marker = None  # freeze_on(): the request that freezes the server
        self._freeze_skip = 0  # ... after this many more requests holding it
        self._hold_marker = None  # hold_sync(): the request whose Sync is held back
        self.sync_held = threading.Event()  # set once hold_sync() held a Sync back
        self.up()

    def hold_sync(self, marker):
        """Forward the next request (client to server bytes) that holds marker
        without its closing Sync, and drop that Sync: PostgreSQL runs the request's
        statements but, waiting for the Sync, neither commits nor answers (until it
        ends the connection: then it sends what it had, uncommitted, and its
        goodbye). sync_held is set once it is held. Once."""
        with self.lock:
            self._hold_marker = marker

    def cut_answer(self, marker, then_down=False, times=1):
        """Lose the answer of the next request (client to server bytes) that holds
        marker: the request reaches PostgreSQL and runs to its end (ReadyForQuery,
        after the commit), and then both sides of that connection are cut instead of
        the answer being forwarded. Once, or for the next `times` such requests;
        self.cuts counts the cuts done. None: no more. then_down: the proxy goes
        down() at that cut, before self.cuts counts it, so nothing else reaches
        PostgreSQL after that commit (a test's own down() comes tens of ms later on a
        loaded machine: time for the outbox relay, woken by the commit's NOTIFY, to
        claim, send and delete what it wrote)."""
        with self.lock:
            self._cut_marker, self._cut_down = marker, then_down
            self._cut_left = times

    def up(self):
        """Listen (again, on the same port); nothing to do when listening."""
        if self._listener is not None:
            return
        deadline = time.monotonic() + 10
        while True:
            try:
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("127.0.0.1", self.port or 0))
                break
            except OSError:
                s.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        s.listen(64)
        self.port = s.getsockname()[1]
        self._listener = s
        threading.Thread(target=self._accept, args=(s,), daemon=True).start()

    def _accept(self, listener):
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed by down()
            with self.lock:
                self.accepted += 1
                if self.hanging or self.frozen:
                    self.held.append(client)
                    continue
                delay = self.connect_delay
                greeting = self.greeting
            if greeting is not None:
                threading.Thread(target=self._refuse, args=(client, greeting),
                                 daemon=True).start()
                continue
            if delay > 0:
                threading.Timer(delay, self._forward, (client,)).start()
            else:
                self._forward(client)

    def greet(self, line):
        """A server that answers but refuses service from its first word (an SMTP
        relay's "554 no service" greeting, RFC 5321 3.1): each new connection gets
        line, then 503 to every command but QUIT (221), and is closed. Open ones are
        not touched. None: forwarded again."""
        with self.lock:
            self.greeting = line.encode() + b"\r\n" if line is not None else None

    @staticmethod
    def _refuse(client, greeting):
        try:
            client.settimeout(10)
            client.sendall(greeting)
            f = client.makefile("rb")
            for command in f:
                if command[:4].upper() == b"QUIT":
                    client.sendall(b"221 closing\r\n")
                    break
                client.sendall(b"503 5.5.1 no service\r\n")
        except OSError:
            pass
        finally:
            client.close()

    def slow_connects(self, seconds):
        """New connections wait this long before they are forwarded (a server far
        away, TLS and authentication that take their time); open ones are not
        touched. 0: at once again."""
        with self.lock:
            self.connect_delay = seconds

    def _forward(self, client):
        """Connect client to the target and pipe both ways."""
        try:
            server = socket.create_connection(self.target, timeout=5)
        except OSError:
            client.close()
            return
        server.settimeout(None)
        with self.lock:
            self.conns += [client, server]
        armed = threading.Event()  # this connection's next answer is to be lost
        threading.Thread(target=self._pipe, args=(client, server, self._arm, armed, True),
                         daemon=True).start()
        threading.Thread(target=self._pipe, args=(server, client, self._cut, armed, False),
                         daemon=True).start()

    def _arm(self, data, armed):
        """Client to server: a request holding the marker arms its connection.
        Forward data (True), or what hold_sync() lets through of it (bytes)."""
        with self.lock:
            if (self._hold_marker is not None and self._hold_marker in data
                    and data.endswith(_SYNC)):
                self._hold_marker = None
                self.sync_held.set()
                return data[:-len(_SYNC)]
            if self._cut_marker is not None and self._cut_marker in data:
                self._cut_left -= 1
                if self._cut_left <= 0:
                    self._cut_marker = None
                armed.set()
        return True

    def _cut(self, data, armed):
        """Server to client: once armed, swallow the answer up to its ReadyForQuery,
        then end the connection (False) without forwarding it."""
        if not armed.is_set():
            return True
        swallowed = getattr(armed, "swallowed", b"") + data
        armed.swallowed = swallowed
        if _READY_FOR_QUERY not in swallowed:
            return None  # swallowed, keep reading
        with self.lock:
            down, self._cut_down = self._cut_down, False
        if down:
            self.down()
        with self.lock:
            self.cuts += 1
        return False

    def _hold_while_frozen(self, data, request):
        """While frozen, keep data (and, by not reading, what follows it in the
        kernel's buffers) until thaw(); requests are noted in frozen_requests. A
        request that freeze_on() waits for freezes the server first."""
        with self.lock:
            if request and self._freeze_marker is not None and self._freeze_marker in data:
                if self._freeze_skip > 0:
                    self._freeze_skip -= 1
                else:
                    self._freeze_marker = None
                    self.frozen = True
                    self.frozen_requests = b""
            if self.frozen and request:
                self.frozen_requests += data
            while self.frozen:
                self.thawed.wait()

    def _pipe(self, src, dst, look, armed, request):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                self._hold_while_frozen(data, request)
                verdict = look(data, armed)
                if verdict is False:
                    break
                if isinstance(verdict, bytes):
                    dst.sendall(verdict)
                elif verdict:
                    dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def down(self):
        """Refuse new connections and cut the open ones: the server is gone."""
        if self._listener is not None:
            try:
                self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
            except OSError:
                pass
            self._listener.close()
            self._listener = None
        with self.lock:
            conns, self.conns = self.conns, []
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()

    def hang(self):
        """A server that stops answering (a host gone without a word, a network that
        drops packets): the open connections are cut, and new ones are accepted and
        then never answered (a client waits its connect_timeout), until resume()."""
        with self.lock:
            self.hanging = True
            conns, self.conns = self.conns, []
        self._close_all(conns)

    def resume(self):
        """After hang(): the held connections are closed, new ones forwarded again."""
        with self.lock:
            self.hanging = False
            held, self.held = self.held, []
        self._close_all(held)

    def freeze(self):
        """A server that stops without a word (SIGSTOP, a stalled host or pooler) on
        established connections: they stay open, and nothing is forwarded on them
        either way (a statement sent now waits, unanswered, in the buffers); new
        connections are accepted and wait too. Until thaw()."""
        with self.lock:
            self.frozen = True
            self.frozen_requests = b""

    def freeze_on(self, marker, nth=1):
        """Freeze (as freeze()) the moment the nth request from now holding marker
        (client to server bytes, e.g. a statement's text) arrives, before it is
        forwarded: the server stops just as that statement reaches it. Once."""
        with self.lock:
            self._freeze_marker = marker
            self._freeze_skip = nth - 1

    def thaw(self):
        """After freeze(): what waited is forwarded, as a server that goes on does
        (a statement sent while frozen runs now), and so are the new connections."""
        with self.lock:
            self.frozen = False
            held, self.held = self.held, []
            self.thawed.notify_all()
        for c in held:
            self._forward(c)

    @staticmethod
    def _close_all(conns):
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()

    def close(self):
        with self.lock:
            self.frozen = False
            self.thawed.notify_all()
        self.down()
        self.resume()


def split_endpoint(endpoint):
    """("127.0.0.1", 4566) from "http://127.0.0.1:4566"."""
    hostport = endpoint.split("://", 1)[1].rstrip("/")
    host, port = hostport.rsplit(":", 1)
    return host, int(port)


def free_port_now():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
