"""Issue 16.1: `twicectl pause QUEUE` stops every twiced host that shares the
idempotency database from receiving, within seconds; `twicectl resume` starts them
again; the pause lives in PostgreSQL, so a restarted twiced keeps it; status, /metrics
and the alert sinks show it. Two hosts are two twiced processes with their own
configurations and work directories on the same database and queue. Real SQS
emulator, PostgreSQL and HTTP receiver (the webhook); effects are rows of the
effect_tx fixture."""

import json
import signal
import subprocess
import time
import unittest

import twicetest
import twiceconf as tc

EFFECT_TX = "effect-tx"
PAUSED = r"queue %s: paused: not receiving"


class Pause(twicetest.TwiceTestCase):
    def conf(self, name, url, dlq, dsn, port, hook=None, **qopts):
        alerts = ""
        if hook is not None:
            alerts = "alerts = { dlq_check_interval = 1; webhook = { url = %s; }; };" % (
                tc.quote(hook.url + "/pause"))
        return tc.config(self.env, dsn, [tc.queue(name, url, dlq, EFFECT_TX, **qopts)],
                         [tc.plugin(EFFECT_TX, tc.test_plugin(self.env, "effect_tx"))],
                         metrics_port=port, extra=alerts)

    def start(self, conf):
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        return d

    def ctl(self, d, *args, code=0):
        r = subprocess.run([self.env.binary("twicectl"), "-c", d.config_path, *args],
                           capture_output=True, text=True, env=d.process_env, timeout=60)
        self.assertEqual(r.returncode, code, "twicectl %s: exit %d\nstdout: %s\nstderr: %s"
                         % (" ".join(args), r.returncode, r.stdout, r.stderr))
        self.assertIsNone(self.SANITIZER_REPORT.search(r.stderr), r.stderr)
        return r

    def effects(self, dsn):
        return len(self.pg.query(dsn, "SELECT key FROM effects"))

    def send(self, url, prefix, n):
        for i in range(0, n, 10):
            self.sqs.send_batch(url, [json.dumps({"id": "%s%d" % (prefix, k)})
                                      for k in range(i, min(n, i + 10))])

    @staticmethod
    def notices(hook, kind):
        return [json.loads(r["body"]) for r in hook.requests()
                if r["status"] < 300 and json.loads(r["body"])["kind"] == kind]

    def test_pause_stops_both_hosts_resume_restarts_and_a_restart_keeps_it(self):
        url, dlq = self.queue_pair("pause")
        dsn = self.new_database("pause")
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        hook = self.http_receiver()
        ports = [tc.free_port(), tc.free_port()]
        confs = [self.conf("pause", url, dlq, dsn, p, hook) for p in ports]
        hosts = [self.start(c) for c in confs]
        self.send(url, "a", 20)
        twicetest.wait_until(lambda: self.effects(dsn) == 20, timeout=20,
                             message="the first 20 jobs")

        marks = [h.mark() for h in hosts]
        paused_at = time.monotonic()
        out = self.ctl(hosts[0], "pause", "pause", "--reason", "maintenance window").stdout
        self.assertIn("queue pause paused", out)
        for h, m in zip(hosts, marks):
            h.wait_log(PAUSED % "pause", since=m, timeout=5)
        self.assertLess(time.monotonic() - paused_at, 5, "both hosts stop within 5 s")

        self.send(url, "b", 20)
        time.sleep(4)
        self.assertEqual(self.effects(dsn), 20, "nothing received while paused")
        self.assertEqual(self.sqs.counts(url)[0], 20, "the messages wait in the queue")
        for p in ports:
            self.assertEqual(tc.metric_sum(tc.scrape(p), "twice_queue_paused", queue="pause",
                                           reason="maintenance window"), 1)
        status = self.ctl(hosts[1], "status").stdout
        self.assertRegex(status, r"PAUSED")
        self.assertRegex(status, r"pause .* maintenance window")
        doc = json.loads(self.ctl(hosts[1], "--json", "status").stdout)
        self.assertEqual(doc[0]["paused"]["reason"], "maintenance window")

        # A restart keeps the pause: it lives in PostgreSQL.
        self.assertEqual(hosts[1].stop(), 0)
        hosts[1] = self.start(confs[1])
        hosts[1].wait_log(PAUSED % "pause", timeout=5)
        # And a reload of the other host (a new generation of workers) keeps it too.
        mark = hosts[0].mark()
        hosts[0].signal(signal.SIGHUP)
        hosts[0].wait_log(r"reload done: generation 2 ready", since=mark, timeout=30)
        time.sleep(3)
        self.assertEqual(self.effects(dsn), 20, "still paused after a restart and a reload")

        resumed_at = time.monotonic()
        self.assertIn("resumed", self.ctl(hosts[1], "resume", "pause").stdout)
        twicetest.wait_until(lambda: self.effects(dsn) == 40, timeout=15,
                             message="the 20 held jobs after resume")
        self.assertLess(time.monotonic() - resumed_at, 10)
        twicetest.wait_until(lambda: self.notices(hook, "resumed"), timeout=10,
                             message="a resumed notice")
        time.sleep(2)
        paused = self.notices(hook, "paused")
        self.assertEqual(len(paused), 1, "one host announces the pause")
        self.assertEqual(paused[0]["reason"], "maintenance window")
        self.assertEqual(len(self.notices(hook, "resumed")), 1, "and one its end")
        for p in ports:
            self.assertEqual(tc.metric_sum(tc.scrape(p), "twice_queue_paused", queue="pause"), 0)
        self.assertEqual(self.ctl(hosts[0], "resume", "pause", code=1).stderr.strip(),
                         "twicectl: queue pause is not paused")
        self.assertEqual(sum(self.sqs.counts(dlq)), 0)
        for h in hosts:
            self.assertEqual(h.stop(), 0)

    def test_a_pause_for_a_while_ends_by_itself(self):
        url, dlq = self.queue_pair("while")
        dsn = self.new_database("while")
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        d = self.twiced(self.conf("while", url, dlq, dsn, None))
        self.ctl(d, "pause", "while", "--for", "4s")  # before twiced ever ran
        d.start()
        d.wait_log(r"ready: generation 1", timeout=20)
        d.wait_log(PAUSED % "while", timeout=5)
        self.send(url, "w", 5)
        time.sleep(1.5)
        self.assertEqual(self.effects(dsn), 0, "paused from the start")
        twicetest.wait_until(lambda: self.effects(dsn) == 5, timeout=15,
                             message="the jobs once the pause ended")
        d.wait_log(r"queue while: receiving", timeout=5)
        self.assertEqual(d.stop(), 0)

    def test_bad_input(self):
        url, dlq = self.queue_pair("bad")
        dsn = self.new_database("bad")
        d = self.twiced(self.conf("bad", url, dlq, dsn, None))
        r = self.ctl(d, "pause", "nosuch", code=1)
        self.assertIn("no queue named 'nosuch'", r.stderr)
        self.ctl(d, "resume", "nosuch", code=1)
        for bad in ("0", "-5", "5x", "1h30", "", "h", "1.5h", "99999d", "1m-1s"):
            r = self.ctl(d, "pause", "bad", "--for", bad, code=2)
            self.assertIn("is not a duration", r.stderr, bad)
        self.ctl(d, "pause", code=2)
        self.ctl(d, "pause", "bad", "bad", code=2)
        self.ctl(d, "pause", "bad", "--reason", "breaker", code=2)
        self.ctl(d, "resume", "bad", "--for", "1m", code=2)
        self.assertIn("is not paused", self.ctl(d, "resume", "bad", code=1).stderr)
        self.assertEqual(self.pg.query(dsn, "SELECT count(*) FROM twice_idempotency_pause"),
                         [(0,)], "nothing written by a refused command")
        self.assertIn("for 5400s", self.ctl(d, "pause", "bad", "--for", "1h30m").stdout)
        self.assertIn("until `twicectl resume", self.ctl(d, "pause", "bad").stdout)
        self.ctl(d, "resume", "bad")
        self.assertRegex(self.ctl(d, "pause", "--help").stdout, r"usage: twicectl pause")
        self.assertRegex(self.ctl(d, "help", "resume").stdout, r"usage: twicectl resume")

        # The breaker's settings: a threshold of 0 or below is refused with FILE:LINE.
        for breaker, want in (("{ failures = 0; }", r"failures"),
                              ("{ failures = -3; }", r"failures"),
                              ("{ failures = 5; cooldown = 0; }", r"cooldown"),
                              ("{ failures = 5; window = -1; }", r"window"),
                              ("{ window = 5; }", r"failures"),
                              ("{ failures = 5; probes = 0; }", r"probes")):
            conf = self.conf("bad", url, dlq, dsn, None).replace(
                "backoff = {", "breaker = %s backoff = {" % breaker)
            r = self.twiced(conf).check_config()
            self.assertEqual(r.returncode, 1, breaker + r.stdout + r.stderr)
            self.assertRegex(r.stdout + r.stderr, r"twice\.conf:\d+: .*%s" % want, breaker)


if __name__ == "__main__":
    unittest.main()
