"""Issue 16.3 and 16.4 against real PostgreSQL, the SQS emulator and the HTTP receiver.

Rate limits (rate_limit on a plugin or a queue) are shared by every worker of every
twiced host on the same database: two hosts running the sync plugin at 20/s start their
requests no faster than that together, as the receiver's timestamps show.

A queue's time limit on a handler run (timeout, timeout_grace): a run past it is a failed
attempt: its key is released and its message retried, then dead-lettered as timeout; the
worker whose thread is stuck is replaced, and its other jobs are not lost. Effects are
lines (effect_file) that the tests count."""

import json
import os
import re
import tempfile
import time

import twicetest
import twiceconf as tc

FOREVER_MS = 10 ** 9  # eleven days: a handler that never returns


def with_rate_limit(entry, per_second, burst=None):
    """A plugin or queue entry of twiceconf with a rate_limit group added."""
    group = "per_second = %s;" % per_second
    if burst is not None:
        group += " burst = %s;" % burst
    return entry[:-1].rstrip() + " rate_limit = { %s }; }" % group


def busiest_window(times, width):
    """The most of times (seconds) inside any window of width seconds."""
    times = sorted(times)
    most, first = 0, 0
    for last, t in enumerate(times):
        while t - times[first] >= width:
            first += 1
        most = max(most, last - first + 1)
    return most


class RateLimit(twicetest.TwiceTestCase):
    def sync_config(self, dsn, url, dlq, rx, port, per_second=20, burst=5):
        plugin = with_rate_limit(
            tc.plugin("sync", os.path.join(self.env.plugin_build_dir, "sync.so"),
                      url=rx.url + "/api/{entity}/{id}"), per_second, burst)
        return tc.config(self.env, dsn, [tc.queue("rl", url, dlq, "sync", concurrency=8)],
                         [plugin], workers=2, metrics_port=port)

    def test_two_hosts_share_one_limit(self):
        # The acceptance: 20/s (burst 5) on the sync plugin, two twiced
        # hosts (separate configurations, one database and queue), 400 messages.
        # Bounds: in any 2 s window at most 2 x 20 x 1.1 + burst requests start (a
        # host may hold one leased chunk, a tenth of a second's worth, beyond the
        # shared bucket); the whole run takes 400/20 s within 25 %. Both are bounds
        # on the receiver's own clock over 20 s, not micro-timings.
        url, dlq = self.queue_pair("rl")
        dsn = self.new_database("rl")
        rx = self.http_receiver()
        ports = [tc.free_port(), tc.free_port()]
        entries = [{"body": json.dumps({"type": "sync", "entity": "c", "id": i, "version": 1,
                                        "data": {"n": i}})} for i in range(400)]
        for i in range(0, 400, 10):
            self.sqs.send_batch(url, entries[i:i + 10])
        hosts = [self.start_twiced(self.sync_config(dsn, url, dlq, rx, p)) for p in ports]
        twicetest.wait_until(lambda: len(rx.requests()) >= 400, timeout=60,
                             message="the 400 requests were not all made")
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=20,
                             message="the queue did not end empty")
        reqs = rx.requests()
        self.assertEqual(len({r["headers"]["idempotency-key"] for r in reqs}), 400)
        self.assertEqual(len(reqs), 400, "each exactly once")
        times = [r["time"] for r in reqs]
        most = busiest_window(times, 2.0)
        total = max(times) - min(times)
        self.assertLessEqual(most, 2 * 20 * 1.1 + 5, "busiest 2 s window: %d requests" % most)
        self.assertGreaterEqual(total, 400 / 20 * 0.75, "took %.1fs" % total)
        self.assertLessEqual(total, 400 / 20 * 1.25, "took %.1fs" % total)
        waited = [tc.metric_sum(tc.scrape(p), "twice_rate_limited_seconds_total",
                                limit="plugin:sync") for p in ports]
        done = [tc.metric_sum(tc.scrape(p), "twice_jobs_finished_total", outcome="done")
                for p in ports]
        self.assertTrue(all(n > 0 for n in done), "both hosts worked: %s" % done)
        self.assertTrue(all(w > 0 for w in waited), "both hosts waited: %s" % waited)
        self.assertEqual(sum(done), 400)
        for d in hosts:
            self.assertEqual(d.stop(), 0)

    def test_waiting_jobs_stay_in_flight_uncounted_and_receiving_slows(self):
        # A queue's limit of 1/s (burst 1) on a queue whose visibility timeout (4 s)
        # is far shorter than the wait of the last of 8 jobs (~7 s): the waiting
        # jobs are extended by the heartbeat (no redelivery, no takeover), they are
        # no attempts (each runs as attempt 1), and no more than concurrency (4)
        # messages are taken at once.
        url, dlq = self.queue_pair("rlq")
        dsn = self.new_database("rlq")
        effects = os.path.join(tempfile.mkdtemp(dir=self.env.run_dir), "effects.txt")
        port = tc.free_port()
        queue = with_rate_limit(tc.queue("rlq", url, dlq, "effect-file", concurrency=4,
                                         visibility_timeout=4), 1, 1)
        conf = tc.config(self.env, dsn, [queue],
                         [tc.plugin("effect-file", tc.test_plugin(self.env, "effect_file"),
                                    file=effects)], metrics_port=port)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1: 1/1", timeout=20)
        for i in range(8):
            self.sqs.send(url, json.dumps({"id": "r%d" % i}))
        most_in_flight = 0
        deadline = time.time() + 30
        while len(Timeout.lines(effects)) < 8 and time.time() < deadline:
            most_in_flight = max(most_in_flight, self.sqs.counts(url)[1])
            time.sleep(0.2)
        lines = Timeout.lines(effects)
        self.assertEqual(sorted(lines), sorted(("effect:r%d" % i, 1) for i in range(8)))
        self.assertLessEqual(most_in_flight, 4)
        self.assertEqual(self.pg.query(dsn, "SELECT count(*) FROM twice_idempotency_rate_limits "
                                            "WHERE name = 'queue:rlq'"), [(1,)])
        waited = tc.metric_sum(tc.scrape(port), "twice_rate_limited_seconds_total",
                               limit="queue:rlq")
        self.assertGreater(waited, 5)
        log = d.log_text()
        self.assertNotRegex(log, r"taking over|duplicate|live lease|lease lost")
        self.assertEqual(d.stop(), 0)

    def test_a_job_under_a_queue_and_a_plugin_limit_holds_neither_token_while_waiting(self):
        # A queue limited to 5/s routes "slow" messages to a plugin limited to 2/s and
        # "fast" ones to a plugin without a limit. The slow jobs wait for their plugin;
        # a job that took its queue token and then waited would start later on a token
        # spent earlier, so the queue's jobs would start at the fast ones' 5/s plus the
        # slow ones' 2/s once fast messages arrive. A job takes both tokens together:
        # the queue's starts stay within 5/s (plus its burst and one leased chunk), the
        # slow plugin's within 2/s, and all of them run once.
        url, dlq = self.queue_pair("rl2")
        dsn = self.new_database("rl2")
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        path = tc.test_plugin(self.env, "effect_tx")
        plugins = [with_rate_limit(tc.plugin("slow", path), 2, 1), tc.plugin("fast", path)]
        queue = with_rate_limit(tc.queue("rl2", url, dlq, routes=[("slow", "slow"),
                                                                   ("fast", "fast")],
                                         route_by="type", concurrency=40,
                                         visibility_timeout=30), 5, 1)
        d = self.start_twiced(tc.config(self.env, dsn, [queue], plugins))
        d.wait_log(r"ready: generation 1: 1/1", timeout=20)

        def send(kind, n):
            entries = [{"body": json.dumps({"id": "%s%d" % (kind, i), "type": kind})}
                       for i in range(n)]
            for i in range(0, n, 10):
                self.sqs.send_batch(url, entries[i:i + 10])

        # The slow jobs alone first, long enough for a dozen of them to wait (for their
        # plugin, or for both limits), then the fast ones.
        send("slow", 24)
        twicetest.wait_until(lambda: self.sqs.counts(url)[0] == 0, timeout=10,
                             message="the slow messages received")
        time.sleep(4)
        send("fast", 40)
        twicetest.wait_until(lambda: self.pg.query(dsn, "SELECT count(*) FROM effects")[0][0]
                             >= 64, timeout=40, message="every job ran")
        rows = self.pg.query(dsn, "SELECT key, extract(epoch FROM at)::float8 FROM effects")
        self.assertEqual(len(rows), 64, "each once")
        self.assertEqual(len({k for k, _ in rows}), 64)
        everything = [t for _, t in rows]
        slow = [t for k, t in rows if "slow" in k]
        # In any 4 s: the rate's worth (10 % for the clocks), the burst and one chunk a
        # host may hold; a job holding its queue token while it waited made it about 28.
        most = busiest_window(everything, 4.0)
        self.assertLessEqual(most, 4 * 5 * 1.1 + 1 + 1, "the queue's busiest 4 s: %d" % most)
        most = busiest_window(slow, 4.0)
        self.assertLessEqual(most, 4 * 2 * 1.1 + 1 + 1, "the slow plugin's busiest 4 s: %d"
                             % most)
        self.assertEqual(d.stop(), 0)

    def test_bad_rate_limits_are_refused_with_their_line(self):
        # A rate of 0 or below, a burst of 0, a rate written as text, a group without
        # its rate: FILE:LINE: what is wrong, and twiced -t exits 1.
        url, dlq = self.queue_pair("rlbad")
        plugin = tc.plugin("effect-file", tc.test_plugin(self.env, "effect_file"), file="/x")
        queue = tc.queue("rlbad", url, dlq, "effect-file")
        cases = (
            (with_rate_limit(plugin, 0), queue,
             r"plugin 'effect-file': rate_limit\.per_second: 0 is out of range"),
            (with_rate_limit(plugin, -5, 2), queue,
             r"plugin 'effect-file': rate_limit\.per_second: -5 is out of range"),
            (plugin, with_rate_limit(queue, 5, 0),
             r"queue 'rlbad': rate_limit\.burst: 0 is out of range"),
            (plugin, with_rate_limit(queue, '"5/s"'),
             r"queue 'rlbad': rate_limit\.per_second: expected an integer"),
            (plugin[:-1] + " rate_limit = { burst = 3; }; }", queue,
             r"plugin 'effect-file': rate_limit: per_second is required"),
        )
        for plugin_entry, queue_entry, want in cases:
            conf = tc.config(self.env, "postgresql://nobody@127.0.0.1:1/x", [queue_entry],
                             [plugin_entry])
            done = self.twiced(conf).check_config()
            self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
            self.assertRegex(done.stdout + done.stderr, r"twice\.conf:\d+: " + want)


DLQ_LIMIT = 262144  # the DLQ's MaximumMessageSize in DeadLetterSize


def sqs_bytes(body, attrs):
    """A message's size as SQS counts it: body, then each attribute's name, data
    type and value, in UTF-8."""
    size = len(body.encode())
    for name, a in attrs.items():
        size += len((name + a["DataType"] + a.get("StringValue", "")).encode())
    return size


class DeadLetterSize(twicetest.TwiceTestCase):
    """Dead letters of bodies near the DLQ's size limit: built to fit it (twice's
    optional attributes cut, never the body), or, when even the smallest letter
    is too large, the message given back for long with one clear error instead
    of SendMessage retried in place on every delivery."""

    def setup_queues(self, prefix):
        """A source queue (SQS's 1 MiB) whose DLQ takes at most DLQ_LIMIT bytes, a
        database, and effect_tx keyed k:{id} with max_attempts 1."""
        name = twicetest.unique_name(prefix, limit=60)
        dlq = self.sqs.create_queue(name + "-dlq", {"MaximumMessageSize": DLQ_LIMIT})
        url = self.sqs.create_queue(name)
        dsn = self.new_database(prefix)
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        port = tc.free_port()
        q = tc.queue(prefix, url, dlq, "effect-tx", key="k:{id}", max_attempts=1)
        conf = tc.config(self.env, dsn, [q],
                         [tc.plugin("effect-tx", tc.test_plugin(self.env, "effect_tx"))],
                         metrics_port=port)
        return url, dlq, dsn, port, conf

    @staticmethod
    def least(url, reason, body):
        """The smallest letter's size: body, twice-reason and the source's id and
        queue (an SQS message id is 36 characters)."""
        return len(body.encode()) + sum(len(s) for s in (
            "twice-reason", "String", reason, "twice-source-message-id", "String", "x" * 36,
            "twice-source-queue", "String", url))

    @staticmethod
    def padded(fields, size):
        """A JSON object of fields and a "pad" string, exactly size bytes."""
        text = json.dumps(dict(fields, pad=""))
        return json.dumps(dict(fields, pad="x" * (size - len(text))))

    def test_near_limit_bodies_are_dead_lettered_within_the_dlqs_limit(self):
        url, dlq, dsn, port, conf = self.setup_queues("dlqfit")
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        room = DLQ_LIMIT - self.least(url, "missing-key-field", "")
        cases = {
            # only the least letter fits (not even twice-plugin)
            "invalid-json": "x" * (DLQ_LIMIT - self.least(url, "invalid-json", "") - 5),
            # twice-error shortened or left out
            "missing-key-field": self.padded({"noid": 1}, room - 40),
            "rejected": self.padded({"id": "near", "reject": True}, room - 80),
        }
        ids = {self.sqs.send(url, body): reason for reason, body in cases.items()}
        letters = []
        twicetest.wait_until(lambda: letters.extend(self.sqs.receive(dlq, visibility=60)) or
                             len(letters) >= 3, timeout=30,
                             message="the near-limit messages were not all dead-lettered:\n" +
                             d.log_tail())
        by_source = {m["MessageAttributes"]["twice-source-message-id"]["StringValue"]: m
                     for m in letters}
        self.assertEqual(set(by_source), set(ids))
        for mid, reason in ids.items():
            m = by_source[mid]
            attrs = m["MessageAttributes"]
            self.assertEqual(attrs["twice-reason"]["StringValue"], reason)
            self.assertEqual(attrs["twice-source-queue"]["StringValue"], url)
            self.assertEqual(m["Body"], cases[reason], "the body is never cut")
            self.assertLessEqual(sqs_bytes(m["Body"], attrs), DLQ_LIMIT)
        self.assertNotIn("twice-plugin", by_source[[k for k, v in ids.items()
                                                    if v == "invalid-json"][0]]["MessageAttributes"])
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=15,
                             message="the source queue did not end empty")
        self.assertRegex(d.log_text(), r"was cut to fit the 262144 bytes its DLQ accepts")
        self.assertNotRegex(d.log_text(), r"sending to the DLQ failed|refused the dead letter")
        self.assertEqual(tc.metric_sum(tc.scrape(port), "twice_sqs_requests_total",
                                       action="SendMessage", result="error"), 0)
        self.assertEqual(self.pg.query(dsn, "SELECT count(*) FROM twice_idempotency"), [(0,)],
                         "a dead letter forgets its key")
        self.assertEqual(d.stop(), 0)

    def test_a_letter_the_dlq_can_never_take_is_given_back_not_hammered(self):
        # A body as large as the DLQ's limit, not JSON; and one a REJECTed job
        # carries: no letter can fit. One error line each says why, nothing is
        # sent, the messages wait given back for an hour, and the rejected one's
        # key is released with its run counted (not left in progress).
        url, dlq, dsn, port, conf = self.setup_queues("dlqbig")
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        self.sqs.send(url, "x" * DLQ_LIMIT)
        self.sqs.send(url, self.padded({"id": "big", "reject": True}, DLQ_LIMIT - 10))
        for reason in ("invalid-json", "rejected"):
            d.wait_log(r"error .*the dead-letter queue refused the dead letter: \(%s\) the dead "
                       r"letter is \d+ bytes even without twice's optional attributes, over the "
                       r"262144 bytes the dead-letter queue accepts .*; giving the message back "
                       r"for 3600s" % reason, timeout=20)
        time.sleep(3)
        log = d.log_text()
        self.assertEqual(len(re.findall(r"refused the dead letter", log)), 2, log)
        self.assertNotRegex(log, r"sending to the DLQ failed")
        self.assertEqual(tc.metric_sum(tc.scrape(port), "twice_sqs_requests_total",
                                       action="SendMessage"), 0, "nothing was sent")
        self.assertEqual(self.sqs.counts(url), (0, 2, 0), "both given back, invisible")
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        self.assertEqual(self.pg.query(dsn, "SELECT idempotency_key, state, attempts "
                                            "FROM twice_idempotency"),
                         [("k:big", "released", 1)])
        self.assertEqual(d.stop(), 0)

    def test_a_limit_lowered_after_the_start_is_learned_from_the_refusal(self):
        # The DLQ's limit drops to 200000 after the workers asked for it: the first
        # letter is refused for its size, and sent again cut to what SQS said.
        url, dlq, dsn, port, conf = self.setup_queues("dlqlow")
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        self.sqs.call("SetQueueAttributes", {"QueueUrl": dlq,
                                             "Attributes": {"MaximumMessageSize": "200000"}})
        body = "y" * (200000 - self.least(url, "invalid-json", "") - 5)
        mid = self.sqs.send(url, body)
        twicetest.wait_until(lambda: self.sqs.counts(dlq)[0] == 1, timeout=20,
                             message="not dead-lettered:\n" + d.log_tail())
        m = self.sqs.receive(dlq, visibility=60)[0]
        self.assertEqual(m["MessageAttributes"]["twice-source-message-id"]["StringValue"], mid)
        self.assertEqual(m["Body"], body)
        samples = tc.scrape(port)
        self.assertEqual(tc.metric_sum(samples, "twice_sqs_requests_total",
                                       action="SendMessage", result="error"), 1)
        self.assertEqual(tc.metric_sum(samples, "twice_sqs_requests_total",
                                       action="SendMessage", result="ok"), 1)
        self.assertRegex(d.log_text(), r"was cut to fit the 200000 bytes its DLQ accepts")
        self.assertEqual(d.stop(), 0)


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

    def test_a_transactional_handler_past_its_timeout_counts_as_a_crash(self):
        # A transactional run holds its key's row: it is not cut short at the limit.
        # Its worker is replaced after the grace, the run counted as one that crashed
        # its worker; the other jobs commit once each and the message ends in the DLQ
        # as worker-crashed with both runs counted.
        url, dlq = self.queue_pair("tmotx")
        dsn = self.new_database("tmotx")
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        q = tc.queue("tmotx", url, dlq, "effect-tx", concurrency=2, visibility_timeout=3,
                     max_attempts=2, backoff=(1, 1), timeout=3, timeout_grace=1)
        conf = tc.config(self.env, dsn, [q],
                         [tc.plugin("effect-tx", tc.test_plugin(self.env, "effect_tx"))],
                         drain_timeout=1, lease_margin=1)  # 1 s: see below
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1: 1/1", timeout=20)
        # A replaced worker drains for drain_timeout before its stuck run's key is
        # freed for the next attempt: its other jobs (0.1 s) are done long before, so
        # 1 s drains the same as 3 s did, twice over 2 s sooner.
        self.sqs.send(url, json.dumps({"id": "hang", "sleep_ms": FOREVER_MS}))
        for i in range(4):
            self.sqs.send(url, json.dumps({"id": "t%d" % i, "sleep_ms": 100}))
        twicetest.wait_until(lambda: self.sqs.counts(dlq)[0] == 1, timeout=60,
                             message="the hanging transactional job was not dead-lettered")
        letter = self.sqs.drain(dlq, visibility=60)[0]
        self.assertEqual(self.attr(letter, "twice-reason"), "worker-crashed")
        self.assertEqual(self.attr(letter, "twice-attempts"), "2")
        rows = self.pg.query(dsn, "SELECT key, count(*) FROM effects GROUP BY key ORDER BY key")
        self.assertEqual(rows, [("effect:t%d" % i, 1) for i in range(4)])
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=20,
                             message="the queue did not end empty")
        log = d.log_text()
        self.assertRegex(log, r"key=effect:hang .*ran past its timeout \(3s\); a transactional "
                              r"run holds its key")
        self.assertRegex(log, r"the run counts as one that crashed its worker")
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
