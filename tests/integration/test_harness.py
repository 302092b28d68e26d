"""test_harness: the harness (twicetest.py) against the real test servers.

For: proving that what every integration test stands on works — the SQS client and
its signing, throwaway databases, the SMTP sink, the HTTP receiver, and the process
handling of Twiced (driven here by a stand-in daemon). Not for: testing twice itself.
"""

import hashlib
import json
import os
import smtplib
import stat
import tempfile
import time
import unittest
import urllib.error
import urllib.request
from email.message import EmailMessage

import psycopg2

import twicetest
from twicetest import Env, EnvError, Sqs, SqsError, TwiceTestCase, sigv4_sign, wait_until

# Published SigV4 vectors (AWS test suite, as in shared/testdata/sigv4) and the SQS
# JSON worked example of shared/reference/sqs-json-protocol.md.
AKID = "AKIDEXAMPLE"
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
DATE = "20150830T123600Z"


class SigV4Test(unittest.TestCase):
    def sign(self, headers, body, service, host):
        headers = dict(headers, Host=host, **{"X-Amz-Date": DATE})
        return sigv4_sign("POST", "https://%s/" % host, headers, body, "us-east-1", service,
                          AKID, SECRET, DATE)

    def test_post_vanilla(self):
        self.assertEqual(
            self.sign({}, b"", "service", "example.amazonaws.com"),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request,"
            " SignedHeaders=host;x-amz-date, Signature="
            "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b")

    def test_post_with_body(self):
        auth = self.sign({"Content-Type": "application/x-www-form-urlencoded"},
                         b"Param1=value1", "service", "example.amazonaws.com")
        self.assertTrue(auth.endswith(
            "SignedHeaders=content-type;host;x-amz-date, Signature="
            "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"), auth)

    def test_sqs_json_receive_example(self):
        body = (b'{"QueueUrl":"https://sqs.us-east-1.amazonaws.com/123456789012/MyQueue",'
                b'"MaxNumberOfMessages":10,"WaitTimeSeconds":20}')
        auth = self.sign({"Content-Type": "application/x-amz-json-1.0",
                          "X-Amz-Target": "AmazonSQS.ReceiveMessage"},
                         body, "sqs", "sqs.us-east-1.amazonaws.com")
        self.assertIn("SignedHeaders=content-type;host;x-amz-date;x-amz-target,", auth)
        self.assertTrue(auth.endswith(
            "Signature=fd4887b7bed7b9584c3fcfe39e4d993a298c39f2aba11362acba4ff41e1c0bb6"), auth)


class EnvTest(unittest.TestCase):
    def test_missing_environment_is_a_failure_with_a_hint(self):
        with self.assertRaises(AssertionError) as cm:
            Env({})
        self.assertIsInstance(cm.exception, EnvError)
        self.assertIn("scripts/test.sh", str(cm.exception))

    def test_names_the_missing_variable(self):
        full = {name: "1" for name in twicetest.REQUIRED_VARS}
        Env(full)
        del full["TWICE_TEST_PGDSN"]
        with self.assertRaisesRegex(EnvError, "TWICE_TEST_PGDSN"):
            Env(full)

    def test_wait_until(self):
        state = {"n": 0}

        def bump():
            state["n"] += 1
            return state["n"] >= 3 and state["n"]

        self.assertEqual(wait_until(bump, timeout=5, interval=0.01), 3)
        with self.assertRaisesRegex(AssertionError, "never true"):
            wait_until(lambda: False, timeout=0.2, interval=0.05, message="never true")


class SqsHarnessTest(TwiceTestCase):
    def test_round_trip_with_attributes(self):
        url, _ = self.queue_pair("rt")
        body = json.dumps({"candidateId": 42, "name": "Zoë"})
        mid = self.sqs.send(url, body, attrs={"kind": "welcome", "n": 7, "raw": b"\x00\x01"})
        msgs = self.sqs.receive(url, wait=1)
        self.assertEqual(len(msgs), 1)
        m = msgs[0]
        self.assertEqual(m["MessageId"], mid)
        self.assertEqual(m["Body"], body)
        self.assertEqual(m["MD5OfBody"], hashlib.md5(body.encode()).hexdigest())
        self.assertEqual(m["Attributes"]["ApproximateReceiveCount"], "1")
        attrs = m["MessageAttributes"]
        self.assertEqual(attrs["kind"], {"DataType": "String", "StringValue": "welcome"})
        self.assertEqual(attrs["n"]["DataType"], "Number")
        self.assertEqual(attrs["n"]["StringValue"], "7")
        self.assertEqual(attrs["raw"]["BinaryValue"], "AAE=")
        self.assertEqual(self.sqs.counts(url), (0, 1, 0))
        self.sqs.delete(url, m)
        self.assertEqual(self.sqs.counts(url), (0, 0, 0))
        self.assertEqual(self.sqs.receive(url), [])

    def test_counts_visibility_drain_purge(self):
        url, _ = self.queue_pair("counts")
        ids = self.sqs.send_batch(url, ["a", "b", {"body": "c", "attrs": {"k": "v"}}])
        self.assertEqual(len(set(ids)), 3)
        self.sqs.send(url, "later", delay=60)
        self.assertEqual(self.sqs.counts(url), (3, 0, 1))
        first = self.sqs.receive(url, max=1, visibility=30)
        self.assertEqual(len(first), 1)
        self.assertEqual(self.sqs.counts(url), (2, 1, 1))
        self.sqs.change_visibility(url, first[0], 0)
        drained = self.sqs.drain(url)
        self.assertEqual(sorted(m["Body"] for m in drained), ["a", "b", "c"])
        again = [m for m in drained if m["MessageId"] == first[0]["MessageId"]]
        self.assertEqual(again[0]["Attributes"]["ApproximateReceiveCount"], "2")
        self.assertEqual(self.sqs.counts(url), (0, 3, 1))
        self.sqs.purge(url)
        self.assertEqual(self.sqs.counts(url), (0, 0, 0))

    def test_fifo_queue_orders_and_deduplicates(self):
        url, dlq = self.queue_pair("fifo", fifo=True)
        self.assertTrue(url.endswith(".fifo") and dlq.endswith("-dlq.fifo"), (url, dlq))
        ids = [self.sqs.send(url, "m%d" % i, group="g1", dedup="d%d" % i) for i in range(3)]
        self.assertEqual(self.sqs.send(url, "m0 again", group="g1", dedup="d0"), ids[0])
        self.assertEqual(self.sqs.counts(url), (3, 0, 0))
        # fauxqs hands out one message per group per receive (SQS may give several);
        # the group stays locked while its message is in flight.
        bodies = []
        for _ in range(3):
            [m] = self.sqs.receive(url, wait=1)
            self.assertEqual(m["Attributes"]["MessageGroupId"], "g1")
            self.assertEqual(self.sqs.receive(url), [])
            bodies.append(m["Body"])
            self.sqs.delete(url, m)
        self.assertEqual(bodies, ["m0", "m1", "m2"])

    def test_queue_pair_has_redrive_policy_to_its_dlq(self):
        url, dlq = self.queue_pair("redrive", attributes={"VisibilityTimeout": 5})
        attrs = self.sqs.attributes(url)
        policy = json.loads(attrs["RedrivePolicy"])
        self.assertEqual(int(policy["maxReceiveCount"]), 100)
        self.assertEqual(policy["deadLetterTargetArn"], self.sqs.queue_arn(dlq))
        self.assertEqual(attrs["VisibilityTimeout"], "5")

    def test_region_comes_from_the_signature(self):
        name = twicetest.unique_name("region")
        self.assertIn("sqs.us-east-1.", self.sqs.create_queue(name))
        other = Sqs(self.env.sqs_endpoint, region="eu-west-1")
        self.assertIn("sqs.eu-west-1.", other.create_queue(name + "-eu"))

    def test_errors_are_raised_with_their_code(self):
        url, _ = self.queue_pair("gone")
        missing = url.rsplit("/", 1)[0] + "/" + twicetest.unique_name("nosuchqueue")
        with self.assertRaises(SqsError) as cm:
            self.sqs.send(missing, "x")
        self.assertEqual(cm.exception.code, "QueueDoesNotExist")


class PgHarnessTest(TwiceTestCase):
    def test_new_database_and_query(self):
        dsn = self.new_database("harness")
        self.assertIn(self.env.pg_password, dsn)
        name = dsn.rsplit("/", 1)[1]
        self.assertEqual(self.pg.query(dsn, "SELECT current_database()"), [(name,)])
        self.pg.query(dsn, "CREATE TABLE t (k text PRIMARY KEY, n int)")
        self.pg.query(dsn, "INSERT INTO t VALUES (%s, %s), (%s, %s)", ("a", 1, "b", 2))
        self.assertEqual(self.pg.query(dsn, "SELECT k, n FROM t ORDER BY k"),
                         [("a", 1), ("b", 2)])
        other = self.new_database("harness")
        self.assertNotEqual(other, dsn)
        self.assertEqual(self.pg.query(other, "SELECT to_regclass('t')"), [(None,)])

    def test_tcp_needs_the_password(self):
        wrong = self.env.pg_dsn.replace(self.env.pg_password, "not-the-password")
        with self.assertRaisesRegex(psycopg2.OperationalError, "password authentication"):
            psycopg2.connect(wrong, connect_timeout=5)

    def test_drop_database(self):
        dsn = self.pg.new_database("dropme")
        self.pg.drop_database(dsn)
        with self.assertRaisesRegex(psycopg2.OperationalError, "does not exist"):
            psycopg2.connect(dsn, connect_timeout=5)


class SmtpHarnessTest(TwiceTestCase):
    def message(self, to, subject="hello"):
        msg = EmailMessage()
        msg["From"] = "twice@example.test"
        msg["To"] = to
        msg["Subject"] = subject
        msg.set_content("Welcome aboard.\n")
        return msg

    def smtp(self):
        return smtplib.SMTP(self.env.smtp_host, self.env.smtp_port, timeout=10)

    def test_accepts_and_stores_with_envelope(self):
        to = "ok-%s@example.test" % twicetest.unique_name("m")
        with self.smtp() as s:
            s.send_message(self.message(to, "Welcome, Ada"), from_addr="bounce@example.test")
        [mail] = self.mailbox().wait_for(to)
        self.assertEqual(mail.mail_from, "bounce@example.test")
        self.assertEqual(mail.rcpt_tos, [to])
        self.assertEqual(mail.subject, "Welcome, Ada")
        self.assertEqual(mail.text(), "Welcome aboard.\n")
        self.assertIsNone(mail.auth_user)
        self.assertEqual(self.mailbox().messages(to="other-" + to), [])

    def test_auth_is_optional_but_checked(self):
        to = "auth-%s@example.test" % twicetest.unique_name("m")
        with self.smtp() as s:
            s.login(self.env.smtp_user, self.env.smtp_password)
            s.send_message(self.message(to))
        [mail] = self.mailbox().wait_for(to)
        self.assertEqual(mail.auth_user, self.env.smtp_user)
        with self.smtp() as s:
            with self.assertRaises(smtplib.SMTPAuthenticationError) as cm:
                s.login(self.env.smtp_user, "wrong")
        self.assertEqual(cm.exception.smtp_code, 535)

    def test_tempfail_and_reject_at_rcpt(self):
        for local, code in (("tempfail", 451), ("reject", 550)):
            to = "%s-%s@example.test" % (local, twicetest.unique_name("m"))
            with self.smtp() as s:
                with self.assertRaises(smtplib.SMTPRecipientsRefused) as cm:
                    s.send_message(self.message(to))
            got_code, text = cm.exception.recipients[to]
            self.assertEqual(got_code, code)
            self.assertIn(b"twice-test-sink", text)
            self.assertEqual(self.mailbox().messages(to), [])

    def test_tempfail_and_reject_at_data(self):
        for local, code in (("tempfail-data", 451), ("reject-data", 550)):
            to = "%s-%s@example.test" % (local, twicetest.unique_name("m"))
            with self.smtp() as s:
                with self.assertRaises(smtplib.SMTPDataError) as cm:
                    s.send_message(self.message(to))
            self.assertEqual(cm.exception.smtp_code, code)
            self.assertEqual(self.mailbox().messages(to), [])


def http(method, url, body=None, headers=None):
    """(status, headers, body text) without raising on 4xx/5xx."""
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()


class HttpHarnessTest(TwiceTestCase):
    def test_records_requests(self):
        rx = self.http_receiver()
        status, _, body = http("POST", rx.url + "/hook?x=1", b'{"a":1}',
                               {"Content-Type": "application/json", "X-Test": "yes"})
        self.assertEqual((status, json.loads(body)), (200, {"ok": True}))
        [req] = rx.requests()
        self.assertEqual((req["method"], req["path"], req["query"]),
                         ("POST", "/%s/hook" % rx.prefix, "x=1"))
        self.assertEqual(req["headers"]["x-test"], "yes")
        self.assertEqual(json.loads(req["body"]), {"a": 1})
        self.assertEqual(req["status"], 200)

    def test_fail_first_then_succeed(self):
        rx = self.http_receiver()
        rx.script(fail_first=2, status=503, retry_after="1", then_status=200)
        answers = [http("POST", rx.url, b"{}") for _ in range(3)]
        self.assertEqual([a[0] for a in answers], [503, 503, 200])
        self.assertEqual([a[1].get("Retry-After") for a in answers], ["1", "1", None])
        self.assertEqual([r["status"] for r in rx.wait_requests(3)], [503, 503, 200])

    def test_fixed_status_and_prefix_isolation(self):
        conflict, plain = self.http_receiver(), self.http_receiver()
        conflict.script(status=409)
        self.assertEqual([http("PUT", conflict.url + "/x", b"1")[0] for _ in range(2)],
                         [409, 409])
        self.assertEqual(http("PUT", plain.url + "/x", b"1")[0], 200)
        self.assertEqual(len(conflict.requests()), 2)
        self.assertEqual(len(plain.requests()), 1)
        # segment boundary: "<prefix>x" is not under "<prefix>"
        self.assertEqual(http("GET", conflict.url + "x")[0], 200)

    def test_reset_and_delay(self):
        rx = self.http_receiver()
        rx.script(status=500, delay_ms=300)
        start = time.monotonic()
        self.assertEqual(http("GET", rx.url)[0], 500)
        self.assertGreaterEqual(time.monotonic() - start, 0.3)
        rx.reset()
        self.assertEqual(rx.requests(), [])
        self.assertEqual(http("GET", rx.url)[0], 200)


# A stand-in for twiced: enough of a master (forks workers, logs, obeys SIGTERM) to
# exercise Twiced's process handling until the real daemon exists. Its config file
# picks the misbehaviour: "ignore_term", "orphan_workers" or "exit_now".
FAKE_DAEMON = r'''#!/usr/bin/python3
import os, signal, sys, time
conf = open(sys.argv[sys.argv.index("-c") + 1]).read()
print("args:", " ".join(sys.argv[1:]))
print("aws key:", os.environ.get("AWS_ACCESS_KEY_ID"), flush=True)
if "exit_now" in conf:
    sys.exit(3)
kids = []
def term(*_):
    if "ignore_term" in conf:
        return
    if "orphan_workers" not in conf:
        for k in kids:
            os.kill(k, signal.SIGTERM)
            os.waitpid(k, 0)
    print("stopped", flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, term)  # before "workers:", which tests wait for
for _ in range(2):
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        while True:
            time.sleep(1)
    kids.append(pid)
print("workers: %d" % len(kids), flush=True)
while True:
    time.sleep(0.1)
'''


class TwicedHarnessTest(TwiceTestCase):
    def setUp(self):
        super().setUp()
        fd, self.fake = tempfile.mkstemp(prefix="fake-twiced-", dir=self.env.run_dir)
        with os.fdopen(fd, "w") as f:
            f.write(FAKE_DAEMON)
        os.chmod(self.fake, stat.S_IRWXU)
        self.addCleanup(os.unlink, self.fake)

    def test_config_template_log_workers_and_stop(self):
        d = self.start_twiced('aws = { endpoint = "$SQS_ENDPOINT"; region = "$REGION"; };\n'
                              'queue = "$QUEUE"; cost = "$$5";\n',
                              binary=self.fake, QUEUE="jobs")
        self.assertIn('endpoint = "%s"' % self.env.sqs_endpoint, d.config_text)
        self.assertIn('queue = "jobs"; cost = "$5"', d.config_text)
        d.wait_log(r"^workers: 2$")
        self.assertIn("args: -f -c %s" % d.config_path, d.log_text())
        self.assertIn("aws key: %s" % twicetest.TEST_ACCESS_KEY_ID, d.log_text())
        workers = d.worker_pids()
        self.assertEqual(len(workers), 2)
        self.assertEqual(d.stop(), 0)
        self.assertIn("stopped", d.log_text())
        self.assertEqual(d.group_pids(), [])

    def test_missing_template_value_is_an_error(self):
        with self.assertRaises(KeyError):
            self.twiced("queue = \"$NOT_GIVEN\";", binary=self.fake)

    def test_overstaying_twiced_is_killed_and_fails(self):
        d = self.start_twiced("ignore_term", binary=self.fake)
        d.wait_log("workers: 2")
        with self.assertRaisesRegex(AssertionError, "did not exit within 1s"):
            d.stop(timeout=1)
        self.assertFalse(d.running())
        self.assertEqual(d.group_pids(), [])

    def test_workers_left_behind_fail_and_are_killed(self):
        d = self.start_twiced("orphan_workers", binary=self.fake)
        d.wait_log("workers: 2")
        workers = d.worker_pids()
        with self.assertRaisesRegex(AssertionError, "left processes"):
            d.stop()
        self.assertEqual([p for p in workers if twicetest._proc_stat(p)], [])

    def test_wait_log_fails_fast_when_twiced_exits(self):
        d = self.start_twiced("exit_now", binary=self.fake)
        start = time.monotonic()
        with self.assertRaisesRegex(AssertionError, "exited with 3"):
            d.wait_log("never printed", timeout=30)
        self.assertLess(time.monotonic() - start, 10)


if __name__ == "__main__":
    unittest.main()
