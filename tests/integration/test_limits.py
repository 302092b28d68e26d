"""Issue 16.4: a queue's time limit on a handler run (timeout, timeout_grace), against
real PostgreSQL and the SQS emulator. A run past it is a failed attempt: its key is
released and its message retried, then dead-lettered as timeout; the worker whose
thread is stuck is replaced, and its other jobs are not lost. Effects are lines
(effect_file) that the tests count."""

import json
import os
import re
import tempfile
import time

import twicetest
import twiceconf as tc

FOREVER_MS = 10 ** 9  # eleven days: a handler that never returns


class Timeout(twicetest.TwiceTestCase):
    def effect_file_config(self, prefix, workers=1, **queue_options):
        """A queue pair, a database and effect_file on the queue. Returns (url, dlq,
        effects file, config)."""
        url, dlq = self.queue_pair(prefix)
        dsn = self.new_database(prefix)
        effects = os.path.join(tempfile.mkdtemp(dir=self.env.run_dir), "effects.txt")
        q = tc.queue(prefix, url, dlq, "effect-file", **queue_options)
        conf = tc.config(self.env, dsn, [q],
                         [tc.plugin("effect-file", tc.test_plugin(self.env, "effect_file"),
                                    file=effects)],
                         workers=workers, drain_timeout=10)
        return url, dlq, effects, conf

    @staticmethod
    def lines(path):
        """Effect lines as (key, attempt)."""
        if not os.path.exists(path):
            return []
        with open(path, encoding="utf-8") as f:
            return [(p[0], int(p[2])) for p in (line.split() for line in f) if p]

    @staticmethod
    def attr(message, name):
        return message["MessageAttributes"][name]["StringValue"]

    def send_normal(self, url, first, count):
        for i in range(first, first + count):
            self.sqs.send(url, json.dumps({"id": "n%d" % i, "sleep_ms": 200}))

    def test_a_handler_that_never_returns_is_retried_then_dead_lettered_as_timeout(self):
        # The acceptance: timeout = 5, a handler that sleeps forever, the
        # other jobs of the same (only) worker flowing meanwhile and after its
        # replacement; nothing lost.
        url, dlq, effects, conf = self.effect_file_config(
            "tmo", concurrency=4, visibility_timeout=4, max_attempts=2, backoff=(1, 1),
            timeout=5, timeout_grace=1)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1: 1/1", timeout=20)
        self.sqs.send(url, json.dumps({"id": "hang", "sleep_ms": FOREVER_MS}))
        self.send_normal(url, 0, 6)
        d.wait_log(r"key=effect:hang .*ran past its timeout \(5s\) on attempt 1 of 2: retry in "
                   r"\d+s", timeout=20)
        self.send_normal(url, 6, 6)  # while the first worker is being replaced
        twicetest.wait_until(lambda: self.sqs.counts(dlq)[0] == 1, timeout=40,
                             message="the hanging job was not dead-lettered")
        letter = self.sqs.drain(dlq, visibility=60)[0]
        self.assertEqual(json.loads(letter["Body"])["id"], "hang")
        self.assertEqual(self.attr(letter, "twice-reason"), "timeout")
        self.assertEqual(self.attr(letter, "twice-attempts"), "2")
        self.assertEqual(self.attr(letter, "twice-error"),
                         "attempt 2 of 2 ran past its timeout (5s)")
        twicetest.wait_until(lambda: len(self.lines(effects)) == 12, timeout=30,
                             message="the other jobs did not all run")
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=20,
                             message="the queue did not end empty")
        keys = sorted(k for k, _ in self.lines(effects))
        self.assertEqual(keys, sorted("effect:n%d" % i for i in range(12)), "each exactly once")
        log = d.log_text()
        # Logged with its key and plugin; the worker replaced after each overrun.
        self.assertRegex(log, r"plugin=effect-file .*key=effect:hang .*attempt=2.*ran past its "
                              r"timeout \(5s\) on attempt 2 of 2: dead-lettering")
        self.assertGreaterEqual(len(re.findall(r"a handler ran past its timeout; replacing the "
                                               r"worker", log)), 1)
        # The stuck worker stopped receiving: the retry ran in its replacement.
        pids = re.findall(r"worker\[(\d+)\] .*key=effect:hang .*: ran past its timeout \(5s\) on",
                          log)
        self.assertEqual(len(pids), 2)
        self.assertNotEqual(pids[0], pids[1])
        self.assertNotRegex(log, r"killed by signal|ERROR.*worker .* exited")
        self.assertEqual(d.stop(), 0)

    def test_a_slow_run_under_its_timeout_is_left_alone(self):
        # A run that ends before its limit is a normal run, however long past the
        # visibility timeout it goes (the heartbeat keeps it).
        url, dlq, effects, conf = self.effect_file_config(
            "tmook", visibility_timeout=2, timeout=6, timeout_grace=1)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1: 1/1", timeout=20)
        self.sqs.send(url, json.dumps({"id": "slow", "sleep_ms": 4000}))
        twicetest.wait_until(lambda: self.lines(effects) == [("effect:slow", 1)], timeout=20,
                             message="the slow job did not finish")
        time.sleep(1)
        self.assertEqual(self.sqs.counts(dlq)[0], 0)
        self.assertNotRegex(d.log_text(), r"timeout \(6s\)|replacing the worker")
        self.assertEqual(d.stop(), 0)

    def test_timeout_settings_are_checked(self):
        # A negative limit and a duration written as text: FILE:LINE: what is wrong.
        for value, want in ((-1, r"timeout.*(-1|range|between|0)"),
                            ("5m", r"timeout.*(integer|number)")):
            url, dlq, effects, conf = self.effect_file_config("tmobad", timeout=value)
            done = self.twiced(conf).check_config()
            self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
            self.assertRegex(done.stdout + done.stderr, r"twice\.conf:\d+: .*" + want)
