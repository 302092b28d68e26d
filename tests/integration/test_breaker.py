"""Issue 16.2: a queue's circuit breaker. When its downstream is down, transient
failures open the breaker: the queue pauses on every host (reason breaker), jobs
received but not started go back uncounted, a RETRY while it is open costs no attempt,
and after the cooldown one probe job runs; a failed probe opens it again for twice the
cooldown (up to cooldown_max), a successful one resumes the queue. Nothing reaches the
dead-letter queue because of the outage. Real SQS emulator, PostgreSQL, SMTP sink
(behind a TCP relay the test takes down) and HTTP receiver (the alert webhook)."""

import json
import os
import time
import unittest

import tcpproxy
import twicetest
import twiceconf as tc

OUTAGE = 60  # seconds the mail relay is down


class Breaker(twicetest.TwiceTestCase):
    def welcome_conf(self, url, dlq, dsn, port, smtp_port, hook, breaker):
        templates = os.path.join(self.env.source_dir, "etc", "templates")
        plugin = tc.plugin("welcome-email", os.path.join(self.env.plugin_build_dir,
                                                         "welcome_email.so"),
                           smtp_url="smtp://127.0.0.1:%d" % smtp_port, timeout=5,
                           subject="Welcome, {{name}}!", **{
                               "from": "welcome@twice.test",
                               "template_text": os.path.join(templates, "welcome.txt"),
                               "template_html": os.path.join(templates, "welcome.html")})
        q = tc.queue("welcome", url, dlq, "welcome-email", concurrency=4, visibility_timeout=10,
                     max_attempts=3)
        q = q.replace("backoff = {", "breaker = %s backoff = {" % breaker)
        alerts = "alerts = { dlq_check_interval = 1; webhook = { url = %s; }; };" % (
            tc.quote(hook.url + "/breaker"))
        return tc.config(self.env, dsn, [q], [plugin], metrics_port=port, extra=alerts)

    @staticmethod
    def notices(hook, kind):
        return [json.loads(r["body"]) for r in hook.requests()
                if r["status"] < 300 and json.loads(r["body"])["kind"] == kind]

    def test_an_smtp_outage_dead_letters_nothing_and_spends_no_attempts(self):
        url, dlq = self.queue_pair("breaker")
        dsn = self.new_database("breaker")
        hook = self.http_receiver()
        relay = tcpproxy.TcpProxy("127.0.0.1", self.env.smtp_port, up=False)
        self.addCleanup(relay.close)
        port = tc.free_port()
        conf = self.welcome_conf(url, dlq, dsn, port, relay.port, hook,
                                 "{ failures = 10; window = 30; cooldown = 10; "
                                 "cooldown_max = 20; probes = 1; }")
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)

        domain = "b%s.example.com" % os.urandom(4).hex()
        total = 300
        for i in range(0, total, 10):
            self.sqs.send_batch(url, [json.dumps({
                "type": "welcome-email", "candidateId": n, "email": "c%d@%s" % (n, domain),
                "name": "C%d" % n}) for n in range(i, i + 10)])
        down_since = time.monotonic()

        d.wait_log(r"circuit breaker opened: \d+ transient failures", timeout=20)
        d.wait_log(r"queue welcome: breaker open: not receiving", timeout=5)
        twicetest.wait_until(lambda: tc.metric_sum(tc.scrape(port), "twice_queue_paused",
                                                   queue="welcome", reason="breaker") == 1,
                             timeout=5, message="twice_queue_paused{reason=breaker}")
        d.wait_log(r"queue welcome: breaker probe failed: the breaker opens again", timeout=30)
        self.assertEqual(self.pg.query(dsn, "SELECT cooldown FROM twice_idempotency_pause"),
                         [(20,)], "a failed probe doubles the cooldown, up to cooldown_max")

        time.sleep(max(0, OUTAGE - (time.monotonic() - down_since)))
        relay.up()
        twicetest.wait_until(lambda: self.pg.query(
            dsn, "SELECT count(*) FROM twice_idempotency WHERE state = 'completed'")[0][0]
            == total, timeout=90, interval=1, message="all 300 jobs completed")
        twicetest.wait_until(lambda: self.notices(hook, "resumed"), timeout=10,
                             message="a resumed notice")
        time.sleep(2)

        self.assertEqual(sum(self.sqs.counts(dlq)), 0, "no dead letters")
        mails = [m for m in self.mailbox().messages()
                 if m.rcpt_tos and m.rcpt_tos[0].endswith("@" + domain)]
        per = {}
        for m in mails:
            per[m.rcpt_tos[0]] = per.get(m.rcpt_tos[0], 0) + 1
        self.assertEqual(len(per), total, "every candidate got a mail")
        self.assertEqual(set(per.values()), {1}, "each exactly once")
        most = self.pg.query(dsn, "SELECT max(attempts) FROM twice_idempotency")[0][0]
        self.assertLessEqual(most, 2, "no message with more than 2 counted attempts")
        paused = self.notices(hook, "paused")
        self.assertEqual(len(paused), 1, paused)
        self.assertEqual(paused[0]["reason"], "breaker")
        self.assertEqual(len(self.notices(hook, "resumed")), 1)
        self.assertEqual(tc.metric_sum(tc.scrape(port), "twice_queue_paused", queue="welcome"),
                         0)
        self.assertEqual(self.pg.query(dsn, "SELECT count(*) FROM twice_idempotency_pause"),
                         [(0,)])
        self.assertEqual(d.stop(), 0)


if __name__ == "__main__":
    unittest.main()
