"""tcpproxy: a TCP relay of the tests' own, in front of a real server (the SMTP sink),
that a test takes down and brings back to play an outage.

What it is for: "down" closes the listening socket (connections are refused, as from
a server that is gone) and cuts the connections in progress; "up" listens again on
the same port and relays every byte both ways unchanged. Not a mock: while up, the
real server answers. It counts the connections it relayed.

Used by: test_breaker.py.
"""

import socket
import threading


class TcpProxy:
    """Listen on 127.0.0.1:<port> (a free one), relay to target_host:target_port."""

    def __init__(self, target_host, target_port, up=True):
        self.target = (target_host, target_port)
        self.lock = threading.Lock()
        self.relayed = 0
        self._listener = None
        self._conns = []
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        if up:
            self.up()

    def up(self):
        """Accept and relay again (no-op when up)."""
        with self.lock:
            if self._listener is not None:
                return
            ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            ls.bind(("127.0.0.1", self.port))
            ls.listen(64)
            self._listener = ls
        threading.Thread(target=self._accept, args=(ls,), daemon=True).start()

    def down(self):
        """Refuse connections and cut the open ones (no-op when down)."""
        with self.lock:
            ls, self._listener = self._listener, None
            conns, self._conns = self._conns, []
        if ls is not None:
            ls.close()
        for c in conns:
            self._close(c)

    close = down

    @staticmethod
    def _close(s):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()

    def _accept(self, ls):
        while True:
            try:
                client, _ = ls.accept()
            except OSError:
                return  # closed by down()
            try:
                server = socket.create_connection(self.target, timeout=10)
            except OSError:
                self._close(client)
                continue
            with self.lock:
                if self._listener is not ls:
                    self._close(client)
                    self._close(server)
                    continue
                self.relayed += 1
                self._conns += [client, server]
            pair = {"left": 2, "socks": (client, server)}
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b, pair), daemon=True).start()

    def _pipe(self, src, dst, pair):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            with self.lock:
                pair["left"] -= 1
                done = pair["left"] == 0
                if done:
                    self._conns = [c for c in self._conns if c not in pair["socks"]]
            if done:
                for c in pair["socks"]:
                    c.close()
