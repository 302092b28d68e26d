"""Issue 16.2: a queue's circuit breaker. When its downstream is down, transient
failures open the breaker: the queue pauses on every host (reason breaker), jobs
received but not started go back uncounted, a RETRY while it is open costs no attempt,
and after the cooldown one probe job runs; a failed probe opens it again for twice the
cooldown (up to cooldown_max), a successful one resumes the queue. Nothing reaches the
dead-letter queue because of the outage; a run past the queue's timeout (a downstream that
hangs) is such a failure too, also a transactional run's. A host without a breaker of its
own follows another's and probes it. A relay refusing service at its greeting is down, not
a bad address. Real SQS emulator, PostgreSQL, SMTP sink (behind faultproxy's TCP relay,
which the test takes down or has refuse service) and HTTP receiver (the alert webhook)."""

import json
import os
import re
import tempfile
import time
import unittest

import faultproxy
import twicetest
import twiceconf as tc


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
        relay = faultproxy.TcpProxy("127.0.0.1", self.env.smtp_port)
        self.addCleanup(relay.close)
        relay.down()  # the mail relay is down from the start
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

        d.wait_log(r"circuit breaker opened: \d+ transient failures", timeout=20)
        d.wait_log(r"queue welcome: breaker open: not receiving", timeout=5)
        twicetest.wait_until(lambda: tc.metric_sum(tc.scrape(port), "twice_queue_paused",
                                                   queue="welcome", reason="breaker") == 1,
                             timeout=5, message="twice_queue_paused{reason=breaker}")
        # The probe finds the relay up but refusing service at its greeting (554, RFC
        # 5321 3.1): the relay is down for every message, not this one's address. (Were
        # it read as a final refusal, the probe "succeeded" with a dead letter and the
        # rest followed it into the DLQ.)
        relay.greet("554 5.3.2 twice-test: no service")
        relay.up()
        d.wait_log(r"queue welcome: breaker probe failed: the breaker opens again", timeout=30)
        self.assertRegex(d.log_text(), r"SMTP relay refused the session before any recipient: "
                                       r"554 5\.3\.2 twice-test: no service")
        self.assertEqual(self.pg.query(dsn, "SELECT cooldown FROM twice_idempotency_pause"),
                         [(20,)], "a failed probe doubles the cooldown, up to cooldown_max")

        # The relay comes back once a probe has failed: the outage has then run
        # through the opening, a cooldown and a failed probe, and the next probe (20 s
        # on) finds it up. (It stayed down a fixed 60 s, through two more failed
        # probes that showed nothing new and cost 40 s.)
        relay.greet(None)
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

    def sync_conf(self, url, dlq, dsn, port, rx, failures, **qopts):
        plugin = tc.plugin("sync", os.path.join(self.env.plugin_build_dir, "sync.so"),
                           url=rx.url + "/api/{entity}/{id}")
        q = tc.queue("sync", url, dlq, "sync", **qopts)
        if failures:  # else no breaker group
            q = q.replace("backoff = {", "breaker = { failures = %d; window = 30; cooldown = 3; "
                          "cooldown_max = 6; }; backoff = {" % failures)
        return tc.config(self.env, dsn, [q], [plugin], metrics_port=port)

    def test_a_breaker_opened_on_one_host_pauses_the_other_which_probes_it_alone(self):
        # Two hosts (own configs and work directories, same database and queue); the
        # endpoint answers 503 with no end in sight. max_attempts 2 and a long backoff:
        # the runs before the breaker opened count, and a message whose next run would
        # be its last may fail again while the breaker is open without being
        # dead-lettered. The second host has no breaker of its own: it pauses with the
        # first's, and once the first is gone it probes alone (it never did: the queue
        # stayed paused until `twicectl resume`). Then the endpoint comes back: its
        # probe closes the breaker.
        url, dlq = self.queue_pair("sync2")
        dsn = self.new_database("sync2")
        rx = self.http_receiver()
        # 503 with Retry-After: 8: a message that failed comes back only after its host
        # has heard of the breaker (within 2 s). The cooldown it asks for is capped by
        # cooldown_max (6).
        rx.script(status=503, retry_after="8")
        ports = [tc.free_port(), tc.free_port()]
        # The second host has no breaker: it stops because the first one's breaker
        # paused the queue in PostgreSQL.
        confs = [self.sync_conf(url, dlq, dsn, p, rx, failures, concurrency=2, max_attempts=2,
                                visibility_timeout=10, backoff=(4, 4))
                 for p, failures in zip(ports, (3, 0))]
        hosts = [self.start_twiced(c) for c in confs]
        for h in hosts:
            h.wait_log(r"ready: generation 1", timeout=20)
        total = 20
        self.sqs.send_batch(url, [json.dumps({"type": "sync", "entity": "c", "id": n,
                                              "version": 1, "data": {"n": n}})
                                  for n in range(10)])
        self.sqs.send_batch(url, [json.dumps({"type": "sync", "entity": "c", "id": n,
                                              "version": 1, "data": {"n": n}})
                                  for n in range(10, total)])
        # Two handler threads can fail at once: the one that opens it may count 4.
        opened = hosts[0].wait_log(r"circuit breaker opened: (\d+) transient failures",
                                   timeout=15)
        self.assertIn(int(opened.group(1)), (3, 4), "opened at its threshold of 3")
        for h in hosts:
            h.wait_log(r"queue sync: breaker open: not receiving", timeout=15)
        self.assertNotIn("circuit breaker opened", hosts[1].log_text())
        self.assertEqual(self.pg.query(dsn, "SELECT cooldown FROM twice_idempotency_pause"),
                         [(6,)], "Retry-After 8 is capped by cooldown_max 6 (it set 8)")
        self.assertEqual(hosts[0].stop(), 0)
        # A failed probe opens it again: nothing is dead-lettered.
        hosts[1].wait_log(r"queue sync: breaker probe failed: the breaker opens again, its "
                          r"cooldown kept", timeout=25)
        self.assertEqual(self.pg.query(dsn, "SELECT cooldown FROM twice_idempotency_pause"),
                         [(6,)], "a host without a breaker doubles no cooldown")
        self.assertEqual(sum(self.sqs.counts(dlq)), 0, "nothing dead-lettered while open")
        rx.script(status=200)
        twicetest.wait_until(lambda: self.pg.query(
            dsn, "SELECT count(*) FROM twice_idempotency WHERE state = 'completed'")[0][0]
            == total, timeout=40, interval=0.5, message="every record synced")
        self.assertEqual(sum(self.sqs.counts(dlq)), 0, "no dead letters")
        self.assertLessEqual(self.pg.query(dsn, "SELECT max(attempts) FROM twice_idempotency")
                             [0][0], 2)
        done = {}
        for r in rx.requests():
            if r["status"] == 200:
                done[r["path"]] = done.get(r["path"], 0) + 1
        self.assertEqual(len(done), total)
        self.assertEqual(set(done.values()), {1}, "each record synced once")
        hosts[1].wait_log(r"queue sync: breaker probe succeeded: closing the breaker", timeout=5)
        hosts[1].wait_log(r"queue sync: receiving", timeout=5)
        self.assertEqual(hosts[1].stop(), 0)

    def test_runs_past_their_timeout_open_the_breaker_and_spend_no_last_attempt(self):
        # A downstream that never answers: each run goes past the queue's timeout.
        # Such a run is a transient failure as a RETRY is: they open the breaker, a
        # probe that times out opens it again, and while it is open a run past its
        # timeout costs no attempt. Each message's second run would be its last
        # (max_attempts 2), at least timeout_grace + 2 s after its first: with the
        # breaker blind to timeouts all three were dead-lettered as `timeout` by then.
        url, dlq = self.queue_pair("hang")
        dsn = self.new_database("hang")
        effects = os.path.join(tempfile.mkdtemp(dir=self.env.run_dir), "effects.txt")
        q = tc.queue("hang", url, dlq, "effect-file", concurrency=2, visibility_timeout=5,
                     max_attempts=2, backoff=(1, 1), timeout=1, timeout_grace=3)
        q = q.replace("backoff = {", "breaker = { failures = 2; window = 30; cooldown = 2; "
                      "cooldown_max = 4; }; backoff = {")
        plugin = tc.plugin("effect-file", tc.test_plugin(self.env, "effect_file"), file=effects)
        d = self.start_twiced(tc.config(self.env, dsn, [q], [plugin]))
        d.wait_log(r"ready: generation 1", timeout=20)
        sent = time.monotonic()
        self.sqs.send_batch(url, [json.dumps({"id": "h%d" % n, "sleep_ms": 3000})
                                  for n in range(3)])
        d.wait_log(r"circuit breaker opened: \d+ transient failures", timeout=15)
        d.wait_log(r"queue hang: breaker probe failed: the breaker opens again", timeout=20)
        self.assertEqual(self.pg.query(dsn, "SELECT cooldown FROM twice_idempotency_pause"),
                         [(4,)], "a probe past its timeout doubles the cooldown")
        time.sleep(max(0.0, sent + 10 - time.monotonic()))
        self.assertEqual(sum(self.sqs.counts(dlq)), 0, "nothing dead-lettered for the outage")
        self.assertLessEqual(self.pg.query(dsn, "SELECT max(attempts) FROM twice_idempotency")
                             [0][0], 1, "only the runs before it opened count")
        self.assertRegex(d.log_text(), r"key=effect:h\d .*ran past its timeout \(1s\) on "
                                       r"attempt \d+: the queue's breaker is open")
        self.assertEqual(d.stop(), 0)

    def test_transactional_runs_past_their_timeout_open_the_breaker(self):
        # A transactional run is not cut short at its timeout (its transaction holds
        # its key) but its downstream hangs all the same: the breaker counts it when it
        # passes the timeout, and not again when it ends. (It was never counted: these
        # two runs past it, then DONE, left the breaker shut.)
        url, dlq = self.queue_pair("hangtx")
        dsn = self.new_database("hangtx")
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        q = tc.queue("hangtx", url, dlq, "effect-tx", concurrency=2, visibility_timeout=10,
                     max_attempts=2, backoff=(1, 1), timeout=1, timeout_grace=30)
        q = q.replace("backoff = {", "breaker = { failures = 2; window = 30; cooldown = 30; "
                      "}; backoff = {")
        plugin = tc.plugin("effect-tx", tc.test_plugin(self.env, "effect_tx"))
        d = self.start_twiced(tc.config(self.env, dsn, [q], [plugin]))
        d.wait_log(r"ready: generation 1", timeout=20)
        self.sqs.send_batch(url, [json.dumps({"id": "x%d" % n, "sleep_ms": 2500})
                                  for n in range(2)])
        d.wait_log(r"circuit breaker opened: 2 transient failures", timeout=10)
        d.wait_log(r"queue hangtx: breaker open: not receiving", timeout=5)
        twicetest.wait_until(lambda: self.pg.query(
            dsn, "SELECT count(*) FROM twice_idempotency WHERE state = 'completed'")[0][0] == 2,
            timeout=10, message="both runs committed when they ended")
        self.assertEqual(self.pg.query(dsn, "SELECT key, count(*) FROM effects GROUP BY key "
                                            "ORDER BY key"),
                         [("effect:x0", 1), ("effect:x1", 1)])
        self.assertEqual(self.pg.query(dsn, "SELECT kind FROM twice_idempotency_pause"),
                         [("breaker",)])
        self.assertEqual(d.stop(), 0)

    def test_an_opening_on_another_host_clears_this_hosts_failures(self):
        # Two hosts share queue "flap"'s breaker (the pause table's row is by queue
        # name) but receive from queues of their own, so the test says which host runs
        # what. B counts 2 failures of its 3; A's breaker opens (1 of 1) and closes
        # after a probe. B's one failure after that is its first: the outage A's
        # breaker stood for took B's count with it. (Kept, 2 + 1 opened it again at
        # once: a flap.)
        effects = os.path.join(tempfile.mkdtemp(dir=self.env.run_dir), "effects.txt")
        dsn = self.new_database("flap")
        plugin = tc.plugin("effect-file", tc.test_plugin(self.env, "effect_file"), file=effects)
        urls, hosts = [], []
        for failures in (1, 3):
            url, dlq = self.queue_pair("flap")
            # max_attempts 1: a failed message is dead-lettered, never run again
            q = tc.queue("flap", url, dlq, "effect-file", concurrency=2, visibility_timeout=10,
                         max_attempts=1)
            q = q.replace("backoff = {", "breaker = { failures = %d; window = 60; cooldown = 3; "
                          "cooldown_max = 3; }; backoff = {" % failures)
            urls.append(url)
            hosts.append(self.start_twiced(tc.config(self.env, dsn, [q], [plugin])))
        for h in hosts:
            h.wait_log(r"ready: generation 1", timeout=20)
        a, b = hosts

        def fail(url, name):
            self.sqs.send(url, json.dumps({"id": name, "fail_until": 99}))

        fail(urls[1], "b1")
        fail(urls[1], "b2")
        twicetest.wait_until(lambda: len(re.findall(r"key=effect:b[12] attempt=1: ",
                                                    b.log_text())) == 2,
                             timeout=10, message="B's two failures")
        fail(urls[0], "a1")
        a.wait_log(r"circuit breaker opened: 1 transient failures", timeout=10)
        b.wait_log(r"queue flap: breaker (open: not receiving|probing)", timeout=5)
        for url, name in zip(urls, ("oka", "okb")):  # the probe's job, on either host
            self.sqs.send(url, json.dumps({"id": name}))
        for h in hosts:
            h.wait_log(r"queue flap: receiving", timeout=15)
        fail(urls[1], "b3")
        b.wait_log(r"key=effect:b3 attempt=1: ", timeout=10)
        time.sleep(0.5)
        self.assertNotIn("circuit breaker opened", b.log_text(),
                         "B's first failure after A's opening does not open it again")
        for h in hosts:
            self.assertEqual(h.stop(), 0)

    def test_several_probes_failing_one_after_another_double_the_cooldown_once(self):
        # probes = 3: the first outcome decides the round. The three probe jobs end
        # 0.6 s apart (their sleeps), over several of the pause watch's ticks: the
        # later failures are of a round already decided. (They were each recorded as
        # a failed probe of their own: the cooldown doubled three times, 2 -> 16 s.)
        url, dlq = self.queue_pair("probes")
        dsn = self.new_database("probes")
        effects = os.path.join(tempfile.mkdtemp(dir=self.env.run_dir), "effects.txt")
        q = tc.queue("probes", url, dlq, "effect-file", concurrency=3, visibility_timeout=10,
                     max_attempts=5, backoff=(1, 1))
        q = q.replace("backoff = {", "breaker = { failures = 3; window = 30; cooldown = 2; "
                      "cooldown_max = 32; probes = 3; }; backoff = {")
        plugin = tc.plugin("effect-file", tc.test_plugin(self.env, "effect_file"), file=effects)
        d = self.start_twiced(tc.config(self.env, dsn, [q], [plugin]))
        d.wait_log(r"ready: generation 1", timeout=20)
        self.sqs.send_batch(url, [json.dumps({"id": "p%d" % n, "fail_until": 99,
                                              "sleep_ms": 600 * (n % 3)}) for n in range(6)])
        d.wait_log(r"queue probes: breaker cooldown over: running 3 probe jobs", timeout=20)
        d.wait_log(r"queue probes: breaker probe failed: the breaker opens again", timeout=10)
        time.sleep(2.5)  # the last probe's sleep is 1.2 s; the next round is 4 s on
        self.assertEqual(self.pg.query(dsn, "SELECT cooldown FROM twice_idempotency_pause"),
                         [(4,)], "one round, one doubling")
        self.assertEqual(len(re.findall(r"breaker probe failed: the breaker opens again",
                                        d.log_text())), 1, "one outcome recorded per round")
        self.assertEqual(sum(self.sqs.counts(dlq)), 0)
        self.assertEqual(d.stop(), 0)


if __name__ == "__main__":
    unittest.main()
