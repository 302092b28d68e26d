"""TLS to the SQS endpoint is always verified. A local HTTPS proxy in
front of the SQS emulator, with a self-signed certificate made by `openssl req` here,
is refused by twiced (certificate verify failed) until aws.ca_file names that
certificate; then jobs run through it. A certificate that does not verify keeps the
outbox's follow-up messages pending, sent once it does again. And no switch to turn verification off exists:
the source tree never sets CURLOPT_SSL_VERIFYPEER/VERIFYHOST to anything but on, and
`insecure_skip_verify` is neither code nor a setting. Not for SMTP or webhook TLS
(the alert tests own those sinks).
"""

import http.server
import json
import os
import re
import shutil
import ssl
import subprocess
import tempfile
import threading
import unittest
import urllib.error
import urllib.request

import twicetest
import twiceconf as tc

PLUGIN = "effect-tx"


def make_certificate(directory):
    """A self-signed certificate for 127.0.0.1 (and localhost): (cert, key) paths."""
    cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=twice-test-endpoint", "-keyout", key, "-out", cert,
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, capture_output=True)
    return cert, key


class TlsProxy:
    """HTTPS on 127.0.0.1 that forwards each POST to the SQS emulator as it is."""

    def __init__(self, upstream, cert, key):
        upstream = upstream.rstrip("/") + "/"
        self.handshakes_refused = 0
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):  # noqa: N802 (http.server's naming)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("host", "content-length", "connection")}
                req = urllib.request.Request(upstream, data=body, headers=headers, method="POST")
                try:
                    with urllib.request.urlopen(req, timeout=60) as r:
                        status, data, ctype = r.status, r.read(), r.headers.get("Content-Type")
                except urllib.error.HTTPError as e:
                    status, data, ctype = e.code, e.read(), e.headers.get("Content-Type")
                self.send_response(status)
                self.send_header("Content-Type", ctype or "application/x-amz-json-1.0")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                proxy.handshakes_refused += 1  # a client that gave up on our certificate

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self.ctx = ctx  # present() changes the certificate of later handshakes
        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True,
                                             do_handshake_on_connect=False)
        self.url = "https://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def present(self, cert, key):
        """Present this certificate from the next handshake on."""
        self.ctx.load_cert_chain(cert, key)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Tls(twicetest.TwiceTestCase):
    def setUp(self):
        super().setUp()
        self.dir = tempfile.mkdtemp(prefix="tls-", dir=self.env.run_dir)
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        self.cert, key = make_certificate(self.dir)
        self.proxy = TlsProxy(self.env.sqs_endpoint, self.cert, key)
        self.addCleanup(self.proxy.close)
        self.url, self.dlq = self.queue_pair("tls")
        self.dsn = self.new_database("tls")
        self.pg.query(self.dsn, tc.EFFECTS_TABLE)

    def config(self, ca_file=None):
        conf = tc.config(self.env, self.dsn, [tc.queue("tls", self.url, self.dlq, PLUGIN)],
                         [tc.plugin(PLUGIN, tc.test_plugin(self.env, "effect_tx"))],
                         endpoint=self.proxy.url)
        endpoint = tc.setting("endpoint", self.proxy.url)
        self.assertIn(endpoint, conf)
        if ca_file is None:
            return conf
        return conf.replace(endpoint, endpoint + " " + tc.setting("ca_file", ca_file))

    def test_the_proxy_works(self):
        """The control: the proxy answers SQS calls for a client that trusts it."""
        ctx = ssl.create_default_context(cafile=self.cert)
        req = urllib.request.Request(self.proxy.url + "/", method="POST", data=json.dumps(
            {"QueueUrl": self.url, "AttributeNames": ["QueueArn"]}).encode(), headers={
                "Content-Type": "application/x-amz-json-1.0",
                "X-Amz-Target": "AmazonSQS.GetQueueAttributes",
                "Authorization": "AWS4-HMAC-SHA256 Credential=%s/20260101/%s/sqs/aws4_request, "
                                 "SignedHeaders=host, Signature=0" % (
                                     twicetest.TEST_ACCESS_KEY_ID, self.env.region)})
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
            self.assertIn("QueueArn", json.loads(r.read())["Attributes"])

    def test_self_signed_endpoint_is_refused(self):
        d = self.start_twiced(self.config())
        d.wait_log(r"(ReceiveMessage|GetQueueAttributes): TLSVerifyFailed: "
                   r"https://127\.0\.0\.1:\d+: "
                   r"(SSL certificate problem|.*certificate verify failed)",
                   timeout=30)
        self.sqs.send(self.url, json.dumps({"id": "never"}))
        self.assertNotIn("ready: generation", d.log_text(), "an endpoint it cannot trust")
        twicetest.wait_until(lambda: self.proxy.handshakes_refused >= 2, timeout=30,
                             message="twiced kept trying, and kept refusing the certificate")
        self.assertEqual(self.pg.query(self.dsn, "SELECT count(*) FROM effects"), [(0,)])
        self.assertEqual(self.sqs.counts(self.url)[0], 1, "the message was never received")
        self.assertEqual(d.stop(), 0)

    def test_ca_file_makes_it_trusted(self):
        d = self.start_twiced(self.config(ca_file=self.cert))
        d.wait_log(r"ready: generation 1", timeout=20)
        self.sqs.send(self.url, json.dumps({"id": "through-tls"}))
        twicetest.wait_until(
            lambda: self.pg.query(self.dsn, "SELECT key FROM effects")
            == [("effect:through-tls",)],
            timeout=30, message="the job did not run through the TLS endpoint")
        twicetest.wait_until(lambda: self.sqs.counts(self.url) == (0, 0, 0), timeout=30)
        self.assertNotRegex(d.log_text(), r"certificate|SSL")
        self.assertEqual(d.stop(), 0)

    def test_a_ca_file_of_another_ca_is_refused(self):
        other, _ = make_certificate(tempfile.mkdtemp(prefix="other-", dir=self.dir))
        d = self.start_twiced(self.config(ca_file=other))
        d.wait_log(r"(ReceiveMessage|GetQueueAttributes): TLSVerifyFailed: "
                   r"https://127\.0\.0\.1:\d+: "
                   r"(SSL certificate problem|.*certificate verify failed)",
                   timeout=30)
        self.assertEqual(d.stop(), 0)

    def test_a_follow_up_waits_out_a_certificate_that_does_not_verify(self):
        # The endpoint presents a certificate aws.ca_file does not trust (a renewal gone
        # wrong): no fault of the follow-up messages waiting in the outbox, so the relay
        # keeps them pending rather than refused for good, and sends each once when the
        # endpoint presents a trusted certificate again.
        sink, _ = self.queue_pair("tlssink")
        other_cert, other_key = make_certificate(tempfile.mkdtemp(prefix="other-", dir=self.dir))
        self.proxy.present(other_cert, other_key)
        d = self.start_twiced(self.config(ca_file=self.cert))
        twicetest.wait_until(lambda: self.pg.query(
            self.dsn, "SELECT to_regclass('twice_idempotency_outbox') IS NOT NULL")[0][0],
            timeout=20, message="the relay made its table")
        self.pg.query(self.dsn, "INSERT INTO twice_idempotency_outbox (source_key, idx, "
                      "source_queue, plugin, queue, queue_url, body) VALUES ('effect:src', 0, "
                      "'tls', %s, 'tlssink', %s, 'follow-up')", (PLUGIN, sink))
        self.pg.query(self.dsn, "SELECT pg_notify('twice_outbox', '')")

        def rows():
            return self.pg.query(self.dsn, "SELECT state, error FROM twice_idempotency_outbox")

        twicetest.wait_until(lambda: "TLSVerifyFailed" in (rows()[0][1] or ""), timeout=30,
                             message="the relay tried: %s" % rows())
        self.assertEqual(rows()[0][0], "pending", rows())
        self.assertEqual(self.sqs.counts(sink)[0], 0)
        self.proxy.present(self.cert, os.path.join(self.dir, "key.pem"))
        twicetest.wait_until(lambda: rows() == [], timeout=20, message="sent: %s" % rows())
        got = self.sqs.receive(sink, max=10, wait=2)
        self.assertEqual([m["Body"] for m in got], ["follow-up"])
        self.assertEqual(self.sqs.receive(sink, max=10, wait=1), [], "sent once")
        self.assertNotIn("refused for good", d.log_text())
        self.assertEqual(d.stop(), 0)


class NoWayToSkipVerification(unittest.TestCase):
    """Cheap, and it keeps a `VERIFYPEER, 0L` for debugging from ever being merged."""

    SOURCES = ("core", "sdk", "plugins", "etc", "scripts")

    def source_files(self):
        root = os.environ.get("TWICE_SOURCE_DIR") or os.path.join(os.path.dirname(__file__),
                                                                   "..", "..")
        found = []
        for top in self.SOURCES:
            for dirpath, _, names in os.walk(os.path.join(root, top)):
                found += [os.path.join(dirpath, n) for n in names
                          if not n.endswith((".so", ".o", ".a"))]
        self.assertTrue(any(f.endswith("http.c") for f in found), "the source tree was found")
        return found

    def test_curl_always_verifies(self):
        setting = re.compile(r"CURLOPT_SSL_VERIFY(PEER|HOST)\s*,\s*([^)]*)\)")
        allowed = {"PEER": "1L", "HOST": "2L"}
        seen = 0
        for path in self.source_files():
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            for m in setting.finditer(text):
                seen += 1
                self.assertEqual(m.group(2).strip(), allowed[m.group(1)],
                                 "%s sets %s" % (path, m.group(0)))
            self.assertNotIn("insecure_skip_verify", text.lower(), path)
            self.assertNotRegex(text, r"CURLOPT_PROXY_SSL_VERIFY(PEER|HOST)\s*,\s*0", path)
        self.assertGreaterEqual(seen, 2, "http.c sets both options explicitly")


class NoSuchSetting(twicetest.TwiceTestCase):
    def test_insecure_skip_verify_is_an_unknown_setting(self):
        url, dlq = self.queue_pair("tlsconf")
        conf = tc.config(self.env, self.env.pg_dsn, [tc.queue("q", url, dlq, PLUGIN)],
                         [tc.plugin(PLUGIN, tc.test_plugin(self.env, "effect_tx"))])
        aws = 'aws = { %s' % tc.setting("region", self.env.region)
        self.assertIn(aws, conf)
        conf = conf.replace(aws, aws + " insecure_skip_verify = true;")
        r = self.twiced(conf).check_config()
        self.assertEqual(r.returncode, 1)
        self.assertRegex(r.stdout + r.stderr, r"twice\.conf:\d+: unknown setting "
                                              r"'insecure_skip_verify' in aws")


if __name__ == "__main__":
    unittest.main()
