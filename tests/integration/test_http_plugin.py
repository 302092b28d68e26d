"""The bundled http plugin run by twiced against a real service on loopback that
counts effects by Idempotency-Key (an effect: a request it answered 2xx): 200 messages
with 50 duplicate intents give 150 effects over kept-alive connections; 503 twice then
200 gives one effect after three requests; 422 dead-letters the message with the
response text; a Twice-Retry-After header delays the retry; TLS is verified against
ca_file; a bearer token from a file reaches the service and never the log; a queue's
own key overrides the plugin's; a reload on SIGHUP takes new settings; bad settings
are refused by `twiced -t` at the FILE:LINE that sets them (in an @include file too),
a bad default at its settings group's line."""

import http.server
import json
import os
import random
import re
import signal
import subprocess
import ssl
import tempfile
import threading
import time
import unittest

import settingcheck
import twicetest
import twiceconf as tc
from test_tls import make_certificate


class EffectService:
    """HTTP (or HTTPS) on 127.0.0.1. POST /ok/... answers 200; /flaky/... 503 with
    Retry-After: 1 to the first two requests of each key, then 200; /invalid/... 422 with
    a text; /later/... 200 with Twice-Retry-After: 2 to the first request of each key,
    /shouted/... the same header in capitals (TWICE-RETRY-AFTER: 2).
    Every request is recorded (path, headers, body, its TCP connection, the status)."""

    def __init__(self, cert=None):
        self.lock = threading.Lock()
        self.requests = []
        self.seen = {}  # (kind, key) -> requests so far
        self.connections = 0
        service = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                with service.lock:
                    service.connections += 1
                    self.conn = service.connections

            def do_POST(self):  # noqa: N802 (http.server's naming)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                status, headers, text = service.answer(self, body)
                payload = text.encode()
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        scheme = "http"
        if cert is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*cert)
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
            scheme = "https"
        self.url = "%s://127.0.0.1:%d" % (scheme, self.server.server_address[1])
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, handler, body):
        kind = handler.path.strip("/").split("/")[0]
        key = handler.headers.get("Idempotency-Key")
        with self.lock:
            n = self.seen[(kind, key)] = self.seen.get((kind, key), 0) + 1
            status, headers, text = 200, {}, "ok"
            if kind == "flaky" and n <= 2:
                status, headers, text = 503, {"Retry-After": "1"}, "busy"
            elif kind == "invalid":
                status, text = 422, 'field "email" is not an address'
            elif kind == "later" and n == 1:
                headers = {"Twice-Retry-After": "2"}
            elif kind == "shouted" and n == 1:
                headers = {"TWICE-RETRY-AFTER": "2"}
            elif kind == "echo":  # a careless service: quotes the credentials it refuses
                status, text = 401, "unauthorized: got %s" % handler.headers.get("Authorization")
            elif kind == "echocut":  # the same, the token across the 1024 bytes kept
                auth = handler.headers.get("Authorization")
                status, text = 401, "u" * (1024 - len("Bearer ") - 10) + auth
            self.requests.append({"path": handler.path, "key": key, "conn": handler.conn,
                                  "headers": dict(handler.headers), "status": status,
                                  "twice_retry": any(h.lower() == "twice-retry-after"
                                                     for h in headers),
                                  "body": body.decode("utf-8", "replace"), "at": time.time()})
        return status, headers, text

    def effects(self, kind=None):
        """{key: number of effects}: 2xx answers without a request for a delay."""
        with self.lock:
            out = {}
            for r in self.requests:
                if 200 <= r["status"] < 300 and not r["twice_retry"] and (
                        kind is None or r["path"].strip("/").startswith(kind)):
                    out[r["key"]] = out.get(r["key"], 0) + 1
            return out

    def of(self, kind):
        with self.lock:
            return [r for r in self.requests if r["path"].strip("/").startswith(kind)]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class HttpPlugin(settingcheck.SettingRefusal, twicetest.TwiceTestCase):
    def setUp(self):
        super().setUp()
        self.service = EffectService()
        self.addCleanup(self.service.close)

    def plugin(self, url, **settings):
        return tc.plugin("h", os.path.join(self.env.plugin_build_dir, "http.so"), url=url,
                         **settings)

    def start(self, plugins, prefix="http", dsn=None, **queue_options):
        url, dlq = self.queue_pair(prefix)
        dsn = dsn or self.new_database(prefix)
        options = {"concurrency": 8, "max_attempts": 5, "backoff": (1, 2)}
        options.update(queue_options)
        conf = tc.config(self.env, dsn, [tc.queue(prefix, url, dlq, "h", **options)], plugins)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=30)
        return url, dlq, dsn, d

    def drained(self, url, timeout=60):
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=timeout,
                             message="the queue was not drained")

    def test_duplicate_intents_one_effect_each(self):
        url, dlq, dsn, d = self.start([self.plugin(self.service.url + "/ok/{kind}",
                                                   key="order:{orderId}")])
        ids = list(range(150)) + [random.randrange(150) for _ in range(50)]
        random.shuffle(ids)
        bodies = [json.dumps({"kind": "order", "orderId": i, "amount": i * 10}) for i in ids]
        for i in range(0, len(bodies), 10):
            self.sqs.send_batch(url, bodies[i:i + 10])
        twicetest.wait_until(lambda: len(self.service.effects()) == 150, timeout=90,
                             message="150 effects")
        self.drained(url)
        time.sleep(1)
        effects = self.service.effects()
        self.assertEqual(len(effects), 150, "one effect per intent")
        self.assertEqual(set(effects.values()), {1}, "no intent had two effects")
        self.assertEqual(set(effects), {"order:%d" % i for i in range(150)})
        keys = self.pg.query(dsn, "SELECT idempotency_key FROM twice_idempotency "
                                  "WHERE state = 'completed'")
        self.assertEqual({k for (k,) in keys}, set(effects), "the stored keys are the sent ones")
        reqs = self.service.of("ok")
        self.assertEqual(len(reqs), 150, "a duplicate never reached the service")
        self.assertTrue(all(r["body"] in bodies for r in reqs), "the body as sent")
        conns = {r["conn"] for r in reqs}
        self.assertLessEqual(len(conns), 16, "kept-alive connections, not one per job")
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        self.assertEqual(d.stop(), 0)

    def test_503_twice_then_200_is_one_effect(self):
        url, dlq, dsn, d = self.start([self.plugin(self.service.url + "/flaky",
                                                   key="order:{orderId}")])
        mid = self.sqs.send(url, json.dumps({"orderId": 7}))
        twicetest.wait_until(lambda: self.service.effects("flaky"), timeout=60)
        self.drained(url)
        reqs = self.service.of("flaky")
        self.assertEqual([r["status"] for r in reqs], [503, 503, 200])
        self.assertEqual([r["headers"]["X-Twice-Attempt"] for r in reqs], ["1", "2", "3"])
        self.assertEqual({r["headers"]["X-Twice-Message-Id"] for r in reqs}, {mid})
        self.assertGreaterEqual(reqs[1]["at"] - reqs[0]["at"], 0.9, "Retry-After: 1")
        self.assertEqual(self.service.effects("flaky"), {"order:7": 1})
        self.assertRegex(d.log_text(), r"HTTP 503: busy")
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        self.assertEqual(d.stop(), 0)

    def test_422_is_dead_lettered_with_the_response(self):
        url, dlq, dsn, d = self.start([self.plugin(self.service.url + "/invalid",
                                                   key="user:{userId}")])
        self.sqs.send(url, json.dumps({"userId": "u-1", "email": "not an address"}))
        letters = []
        twicetest.wait_until(lambda: letters.extend(self.sqs.receive(dlq, visibility=60)) or
                             letters, timeout=30, message="a dead letter")
        attrs = letters[0]["MessageAttributes"]
        self.assertEqual(attrs["twice-reason"]["StringValue"], "rejected")
        self.assertEqual(attrs["twice-error"]["StringValue"],
                         'HTTP 422: field "email" is not an address')
        self.assertEqual(json.loads(letters[0]["Body"])["userId"], "u-1", "the body untouched")
        self.assertEqual(len(self.service.of("invalid")), 1, "rejected at once, not retried")
        self.assertEqual(self.service.effects(), {})
        self.assertEqual(d.stop(), 0)

    def test_a_password_in_the_url_is_never_logged_or_dead_lettered(self):
        # Nothing listens on port 1: the POST fails, the job is dead-lettered with
        # the error; neither the log nor the letter shows the url's password.
        url, dlq, dsn, d = self.start([self.plugin("http://bob:Pa55word@127.0.0.1:1/x?sig=abc",
                                                   key="k:{id}")], max_attempts=1)
        self.sqs.send(url, json.dumps({"id": 1}))
        letters = []
        twicetest.wait_until(lambda: letters.extend(self.sqs.receive(dlq, visibility=60)) or
                             letters, timeout=30, message="a dead letter")
        error = letters[0]["MessageAttributes"]["twice-error"]["StringValue"]
        self.assertIn("POST failed", error)
        self.assertEqual(d.stop(), 0)
        for text in (error, d.log_text()):
            self.assertNotIn("Pa55word", text)
            self.assertNotIn("sig=abc", text)
        ctl = subprocess.run([self.env.binary("twicectl"), "plugin", "check",
                              os.path.join(self.env.plugin_build_dir, "http.so"),
                              "url=http://bob:Pa55word@127.0.0.1:1/x?sig=abc"],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(ctl.returncode, 0, ctl.stderr)
        self.assertIn("POST the body to http://bob:***@127.0.0.1:1/x?... ", ctl.stdout)
        self.assertNotIn("Pa55word", ctl.stdout + ctl.stderr)
        self.assertNotIn("sig=abc", ctl.stdout + ctl.stderr)

    def test_twice_retry_after_delays_the_retry(self):
        url, dlq, dsn, d = self.start([self.plugin(self.service.url + "/later",
                                                   key="k:{id}")])
        self.sqs.send(url, json.dumps({"id": 1}))
        twicetest.wait_until(lambda: self.service.effects("later"), timeout=40)
        reqs = self.service.of("later")
        self.assertEqual(len(reqs), 2)
        self.assertGreaterEqual(reqs[1]["at"] - reqs[0]["at"], 1.8, "Twice-Retry-After: 2")
        self.assertEqual(d.stop(), 0)

    def test_tls_token_queue_key_and_headers(self):
        tmp = tempfile.mkdtemp(dir=self.env.run_dir)
        cert = make_certificate(tmp)
        tls = EffectService(cert)
        self.addCleanup(tls.close)
        token = os.path.join(tmp, "token")
        secret = "tok-%s" % os.urandom(8).hex()
        with open(token, "w") as f:
            f.write(secret + "\n")
        os.chmod(token, 0o600)
        dsn = self.new_database("tls")
        settings = {"token_file": token, "content_type": "application/vnd.order+json"}
        # Not trusted without ca_file: every attempt fails verification, nothing lands.
        url, dlq, dsn, d = self.start([self.plugin(tls.url + "/ok", **settings)], prefix="tls",
                                      dsn=dsn, key="invoice:{detail.invoiceId}")
        self.sqs.send(url, json.dumps({"detail": {"invoiceId": "INV-1"}}))
        d.wait_log(r"POST failed: .*(certificate|SSL)", timeout=30)
        self.assertEqual(tls.requests, [])
        self.assertEqual(d.stop(), 0)
        # Trusted with it: done, with the queue's key and every header.
        url2, dlq2, _, d2 = self.start(
            [self.plugin(tls.url + "/ok", ca_file=cert[0], **settings)], prefix="tls2",
            dsn=dsn, key="invoice:{detail.invoiceId}")
        mid = self.sqs.send(url2, json.dumps({"detail": {"invoiceId": "INV-2"}}))
        twicetest.wait_until(lambda: tls.effects(), timeout=30)
        r = tls.requests[0]
        self.assertEqual(r["key"], "invoice:INV-2")
        self.assertEqual(r["headers"]["Authorization"], "Bearer " + secret)
        self.assertEqual(r["headers"]["Content-Type"], "application/vnd.order+json")
        self.assertEqual(r["headers"]["X-Twice-Message-Id"], mid)
        self.assertEqual(r["headers"]["X-Twice-Queue"], "tls2")
        self.assertNotIn("Traceparent", r["headers"], "no trace context: no header")
        self.assertEqual(d2.stop(), 0)
        # A service that echoes the token in its refusal: blanked in the log and the letter;
        # across the end of the 1 KB kept, it never shows either.
        error, d3 = self.refused_letter(tls.url + "/echo", "tls3", dsn, ca_file=cert[0],
                                        **settings)
        self.assertIn("unauthorized: got Bearer " + "*" * len(secret), error)
        cut_error, d4 = self.refused_letter(tls.url + "/echocut", "tls4", dsn, ca_file=cert[0],
                                            **settings)
        self.assertIn("uuuBearer ", d4.log_text())
        for log in (d.log_text(), d2.log_text(), d3.log_text(), d4.log_text()):
            self.assertNotIn(secret, log)
            self.assertNotIn(secret[:10], log)
        self.assertNotIn(secret, error)
        self.assertNotIn(secret[:10], cut_error)

    def refused_letter(self, url, prefix, dsn, **settings):
        """One job POSTed to url, which refuses it: its letter's twice-error and the
        (stopped) twiced."""
        queue, dlq, _, d = self.start([self.plugin(url, **settings)], prefix=prefix, dsn=dsn,
                                      key="invoice:{detail.invoiceId}")
        self.sqs.send(queue, json.dumps({"detail": {"invoiceId": prefix}}))
        letter, = twicetest.wait_until(lambda: self.sqs.drain(dlq), timeout=30,
                                       message="the refused job was not dead-lettered")
        self.assertEqual(d.stop(), 0)
        return letter["MessageAttributes"]["twice-error"]["StringValue"], d

    def test_reload_takes_new_settings(self):
        url, dlq = self.queue_pair("reload")
        dsn = self.new_database("reload")
        conf = lambda path: tc.config(  # noqa: E731
            self.env, dsn, [tc.queue("reload", url, dlq, "h", backoff=(1, 2))],
            [self.plugin(self.service.url + path, key="r:{n}")])
        d = self.start_twiced(conf("/ok/a"))
        d.wait_log(r"ready: generation 1", timeout=30)
        self.sqs.send(url, json.dumps({"n": 1}))
        twicetest.wait_until(lambda: self.service.of("ok/a"), timeout=30)
        with open(d.config_path, "w") as f:
            f.write(conf("/ok/b").replace("$$", "$"))
        d.signal(signal.SIGHUP)
        d.wait_log(r"ready: generation 2", timeout=30)
        self.sqs.send(url, json.dumps({"n": 2}))
        twicetest.wait_until(lambda: self.service.of("ok/b"), timeout=30)
        self.assertEqual([r["key"] for r in self.service.of("ok/b")], ["r:2"])
        self.assertEqual(d.stop(), 0)

    def check_refused(self, plugin, queue_options, want_line_of, want):
        """`twiced -t` refuses the configuration with `FILE:LINE: want`, LINE being the
        line holding want_line_of."""
        url, dlq = self.queue_pair("bad")
        conf = tc.config(self.env, "dbname=x", [tc.queue("bad", url, dlq, "h", **queue_options)],
                         [plugin]).replace(" settings = {", "\n settings = {\n")
        conf = re.sub(r"; (key|url) = ", r";\n \1 = ", conf)
        d = self.twiced(conf)
        r = d.check_config()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        line = next(i for i, text in enumerate(d.config_text.splitlines(), 1)
                    if want_line_of in text)
        self.assertIn("%s:%d: %s" % (d.config_path, line, want), r.stdout + r.stderr)

    def check_setting_refused(self, settings, setting, want, include=None):
        """Plugin h with these settings is refused for setting SETTING with WANT at the
        line that sets it, or its settings group's line when it is set nowhere
        (settingcheck)."""
        url, dlq = self.queue_pair("bad")
        entry = tc.plugin_lines("h", os.path.join(self.env.plugin_build_dir, "http.so"),
                                settings, include and settingcheck.INCLUDE)
        conf = tc.config(self.env, "dbname=x", [tc.queue("bad", url, dlq, "h")], [entry])
        self.assert_setting_refused(conf, "h", setting, want, include)

    def test_bad_settings_are_refused_with_file_and_line(self):
        ok = self.service.url + "/ok"
        self.check_refused(self.plugin(ok, key="k:{id"), {}, 'key = "k:{id"',
                           "plugin 'h': setting 'key': key template \"k:{id\": column 3: "
                           "unterminated field")
        self.check_refused(self.plugin(ok), {}, 'name = "bad"',
                           "queue 'bad': no key for plugin 'h': set key in this queue, or the "
                           "plugin's setting 'key'")
        self.check_refused(self.plugin(ok), {"key": "q:{id"}, 'key = "q:{id"',
                           "queue 'bad': key \"q:{id\": column 3: unterminated field")

    def test_a_bad_value_is_refused_at_the_line_that_sets_it(self):
        ok = self.service.url + "/ok"
        self.check_setting_refused({"key": "k:{id}", "url": "ftp://x/"}, "url",
                                   "must start with http:// or https://")
        self.check_setting_refused({"url": ok, "key": "k:{id}", "timeout": 0}, "timeout",
                                   "must be 1-3600 seconds")
        self.check_setting_refused({"url": ok, "key": "k:{id}",
                                    "retry_statuses": "429,5xx,7xx"}, "retry_statuses",
                                   "'7xx' is not a status (100-599) or a class of them "
                                   "(1xx-5xx)")
        self.check_setting_refused({"url": ok, "key": "k:{id}", "ca_file": "/nonexistent.pem"},
                                   "ca_file", "/nonexistent.pem: No such file or directory")

    def test_a_bad_default_is_refused_at_the_settings_group(self):
        # 5xx as DONE: retry_statuses, left at its default 429,5xx, says it again. It is
        # set nowhere, so twiced points at the group it would be set in.
        self.check_setting_refused({"url": self.service.url + "/ok", "key": "k:{id}",
                                    "done_statuses": "2xx,5xx"}, "retry_statuses",
                                   "5xx is also in done_statuses")

    def test_a_bad_setting_in_an_included_file_is_refused_at_its_line(self):
        self.check_setting_refused({"url": self.service.url + "/ok"}, "content_type",
                                   "must be a media type on one line, such as "
                                   "application/json",
                                   include={"key": "k:{id}", "timeout": 5, "content_type": ""})

if __name__ == "__main__":
    unittest.main()
