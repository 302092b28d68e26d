"""The idempotent job lifecycle against real PostgreSQL and the
SQS emulator. Effects are rows (transactional fixture effect_tx) or lines
(non-transactional effect_file) that these tests count: exactly one per key means
exactly once."""

import json
import os
import re
import signal
import tempfile
import time
import unittest

import twicetest
import twiceconf as tc

EFFECT_TX = "effect-tx"


class Lifecycle(twicetest.TwiceTestCase):
    def setup_tx(self, prefix, fifo=False, queue_options=None, conf_options=None,
                 routes=None):
        """A queue pair, a database with the effects table, and a config running
        effect_tx on the queue. Returns (url, dlq, dsn, metrics_port, config)."""
        url, dlq = self.queue_pair(prefix, fifo=fifo)
        dsn = self.new_database(prefix)
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        port = tc.free_port()
        plugin_path = tc.test_plugin(self.env, "effect_tx")
        qopts = dict(queue_options or {})
        if routes:
            q = tc.queue(prefix, url, dlq, routes=routes, route_by="type", **qopts)
        else:
            q = tc.queue(prefix, url, dlq, EFFECT_TX, **qopts)
        conf = tc.config(self.env, dsn, [q], [tc.plugin(EFFECT_TX, plugin_path)],
                         metrics_port=port, **(conf_options or {}))
        return url, dlq, dsn, port, conf

    def effects(self, dsn, key=None):
        if key is None:
            return self.pg.query(dsn, "SELECT key, message_id, version, attempt FROM effects "
                                      "ORDER BY at")
        return self.pg.query(dsn, "SELECT key, message_id, version, attempt FROM effects "
                                  "WHERE key = %s ORDER BY at", (key,))

    def wait_empty(self, url, timeout=30):
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=timeout,
                             message="queue %s did not end empty: %s" % (url, self.sqs.counts(url)))

    def test_duplicates_by_key_have_one_effect(self):
        url, dlq, dsn, port, conf = self.setup_tx(
            "dups", queue_options={"concurrency": 8}, conf_options={"workers": 2})
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1: 2/2", timeout=20)
        entries = []
        for copy in range(4):  # interleaved: k0..k49, then again, 4 times
            for k in range(50):
                entries.append({"body": json.dumps({"id": "k%d" % k})})
        for i in range(0, len(entries), 10):
            self.sqs.send_batch(url, entries[i:i + 10])
        twicetest.wait_until(lambda: len(self.effects(dsn)) >= 50, timeout=60,
                             message="not every key ran")
        self.wait_empty(url, timeout=60)
        rows = self.effects(dsn)
        self.assertEqual(len(rows), 50, "one effect row per distinct key")
        self.assertEqual(len({r[0] for r in rows}), 50)
        tc.wait_metric(port, "twice_duplicates_skipped_total", 150, kind="completed")
        samples = tc.wait_metric(port, "twice_jobs_finished_total", 50, outcome="done")
        self.assertEqual(tc.metric_sum(samples, "twice_messages_received_total") >= 200, True)
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        self.assertEqual(d.stop(), 0)

    def test_duplicates_within_one_claim_follow_their_leader(self):
        # 100 messages over 37 keys, all waiting before twiced starts, so that a
        # claim gathers up to 100 of them: copies of a key in one claim ride with
        # the first (its leader) and are deleted once it completes.
        url, dlq, dsn, port, conf = self.setup_tx(
            "inbatch", queue_options={"concurrency": 100, "receives_per_claim": 10,
                                      "max_inflight": 200})
        order = [(i * 7) % 37 for i in range(100)]
        for i in range(0, 100, 10):
            self.sqs.send_batch(url, [{"body": json.dumps({"id": "k%d" % k})}
                                      for k in order[i:i + 10]])
        d = self.start_twiced(conf)
        twicetest.wait_until(lambda: len(self.effects(dsn)) >= 37, timeout=30,
                             message="not every key ran")
        self.wait_empty(url)
        rows = self.effects(dsn)
        self.assertEqual(sorted(r[0] for r in rows), sorted("effect:k%d" % k for k in range(37)),
                         "one effect per key")
        tc.wait_metric(port, "twice_duplicates_skipped_total", 63)
        self.assertEqual(tc.metric_sum(tc.scrape(port), "twice_duplicates_skipped_total"), 63)
        self.assertRegex(d.log_text(), r"key=effect:k\d+: duplicate of \S+ in the same batch")
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        self.assertEqual(d.stop(), 0)

    def test_slow_handler_is_kept_alive_by_the_heartbeat(self):
        # A run three visibility timeouts long (6 s, 2 s each) is received once: its
        # visibility extended in time, never lapsed into a second delivery.
        url, dlq, dsn, port, conf = self.setup_tx(
            "slow", queue_options={"visibility_timeout": 2})
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        self.sqs.send(url, json.dumps({"id": "slow", "sleep_ms": 6000}))
        twicetest.wait_until(lambda: len(self.effects(dsn)) == 1, timeout=30)
        # Empty (visible, in flight and delayed): no copy is left that could run
        # again, so no wait past a visibility timeout is needed for that.
        self.wait_empty(url)
        self.assertEqual(len(self.effects(dsn)), 1)
        self.assertEqual(tc.metric_sum(tc.scrape(port), "twice_messages_received_total"), 1,
                         "received again while it ran")
        self.assertNotIn("taking over", d.log_text())
        self.assertGreaterEqual(tc.metric_sum(tc.scrape(port), "twice_lease_extensions_total"),
                                3)
        self.assertEqual(d.stop(), 0)

    def test_a_short_visibility_timeout_is_extended_before_it_lapses(self):
        # The heartbeat must renew a message's visibility before it runs out,
        # however short the queue's visibility_timeout (1 s is allowed): a job
        # running several timeouts long is never received a second time, while a
        # free handler keeps a receiver polling. One queue for each timeout (1, 2
        # and 3 s), side by side in one twiced: each renewed on its own schedule.
        url, dlq, dsn, port, conf = self.setup_tx(
            "shortvis1", queue_options={"visibility_timeout": 1, "concurrency": 2})
        urls = {1: url}
        for vis in (2, 3):
            urls[vis], more_dlq = self.queue_pair("shortvis%d" % vis)
            q = tc.queue("shortvis%d" % vis, urls[vis], more_dlq, EFFECT_TX,
                         visibility_timeout=vis, concurrency=2)
            conf = conf.replace("queues = ( ", "queues = ( %s,\n  " % q, 1)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        for vis, url in urls.items():
            self.sqs.send(url, json.dumps({"id": "slow%d" % vis, "sleep_ms": 5000}))
        twicetest.wait_until(lambda: len(self.effects(dsn)) == 3, timeout=30)
        for vis, url in urls.items():
            with self.subTest(visibility_timeout=vis):
                self.wait_empty(url)
                self.assertEqual(tc.metric_sum(tc.scrape(port), "twice_messages_received_total",
                                               queue="shortvis%d" % vis),
                                 1, "received again while it ran:\n" + d.log_text()[-3000:])
        self.assertNotRegex(d.log_text(), r"live lease|taking over")
        self.assertEqual(d.stop(), 0)

    def _worker_pid(self, d):
        pids = d.worker_pids()
        self.assertEqual(len(pids), 1, pids)
        return pids[0]

    def test_kill_9_mid_transactional_job_redoes_it_once(self):
        url, dlq, dsn, port, conf = self.setup_tx(
            "kill", queue_options={"visibility_timeout": 3})
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        self.sqs.send(url, json.dumps({"id": "victim", "sleep_ms": 2500}))
        twicetest.wait_until(lambda: tc.metric_sum(tc.scrape(port), "twice_jobs_in_flight") == 1,
                             timeout=10, message="the job never started")
        pid = self._worker_pid(d)
        os.kill(pid, signal.SIGKILL)
        d.wait_log(r"worker %d \(generation 1\) killed by signal 9.*effect-tx on message" % pid,
                   timeout=10)
        d.wait_log(r"worker ready: generation 1", timeout=20, since=d.mark() - 1)
        twicetest.wait_until(lambda: len(self.effects(dsn)) == 1, timeout=30,
                             message="the job was not redone after the crash")
        self.wait_empty(url)
        rows = self.effects(dsn)
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0][3], 2, "redone on the second delivery")
        self.assertIn("taking over", d.log_text())
        self.assertEqual(d.stop(), 0)

    def test_kill_9_mid_outside_effect_job_completes_its_key_once(self):
        url, dlq = self.queue_pair("killf")
        dsn = self.new_database("killf")
        effects = os.path.join(tempfile.mkdtemp(dir=self.env.run_dir), "effects.txt")
        port = tc.free_port()
        conf = tc.config(self.env, dsn,
                         [tc.queue("killf", url, dlq, "effect-file", visibility_timeout=3)],
                         [tc.plugin("effect-file", tc.test_plugin(self.env, "effect_file"),
                                    file=effects)], metrics_port=port)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        self.sqs.send(url, json.dumps({"id": "victim", "sleep_ms": 2500}))
        twicetest.wait_until(lambda: tc.metric_sum(tc.scrape(port), "twice_jobs_in_flight") == 1,
                             timeout=10)
        os.kill(self._worker_pid(d), signal.SIGKILL)
        self.wait_empty(url, timeout=40)
        with open(effects) as f:
            lines = [line for line in f if line.startswith("effect:victim ")]
        self.assertGreaterEqual(len(lines), 1, "at least once")
        rows = self.pg.query(dsn, "SELECT state FROM twice_idempotency "
                                  "WHERE idempotency_key = 'effect:victim'")
        self.assertEqual(rows, [("completed",)])
        self.assertEqual(d.stop(), 0)

    def test_retry_twice_then_done_backs_off_more_each_time(self):
        url, dlq, dsn, port, conf = self.setup_tx(
            "retry", queue_options={"backoff": (1, 60), "max_attempts": 5})
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        self.sqs.send(url, json.dumps({"id": "flaky", "fail_until": 3}))
        twicetest.wait_until(lambda: len(self.effects(dsn)) == 1, timeout=40)
        self.wait_empty(url)
        rows = self.effects(dsn)
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0][3], 3, "done on the third attempt")
        retries = re.findall(r"retry in (\d+)s \(attempt (\d) of 5, backoff ceiling (\d+)s\)",
                             d.log_text())
        self.assertEqual([int(a) for _, a, _ in retries], [1, 2])
        ceilings = [int(c) for _, _, c in retries]
        self.assertLess(ceilings[0], ceilings[1], "the backoff ceiling grows")
        for delay, _, ceiling in retries:
            self.assertLessEqual(int(delay), int(ceiling))
        tc.wait_metric(port, "twice_jobs_finished_total", 2, outcome="retry")
        self.assertEqual(d.stop(), 0)

    def dlq_messages(self, dlq, count, timeout=30):
        got = []

        def collect():
            got.extend(self.sqs.receive(dlq, max=10, visibility=60))
            return len(got) >= count
        twicetest.wait_until(collect, timeout=timeout,
                             message="expected %d dead letters" % count)
        return got

    @staticmethod
    def attr(message, name):
        return message["MessageAttributes"][name]["StringValue"]

    def test_every_permanent_failure_lands_in_the_dlq_with_its_reason(self):
        url, dlq, dsn, port, conf = self.setup_tx(
            "dlq", queue_options={"max_attempts": 2, "backoff": (1, 1)},
            routes=[("effect", EFFECT_TX)])
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        cases = {
            "rejected": {"type": "effect", "id": "r1", "reject": True},
            "max-attempts": {"type": "effect", "id": "m1", "fail_until": 99},
            "missing-key-field": {"type": "effect", "noid": 1},
            "invalid-json": "{not json",
            "unknown-route": {"type": "nobody-handles-this", "id": "u1"},
        }
        ids = {}
        for reason, body in cases.items():
            text = body if isinstance(body, str) else json.dumps(body)
            ids[self.sqs.send(url, text, attrs={"origin": "test"})] = reason
        letters = self.dlq_messages(dlq, len(cases))
        self.wait_empty(url)
        by_source = {self.attr(m, "twice-source-message-id"): m for m in letters}
        self.assertEqual(set(by_source), set(ids))
        for mid, reason in ids.items():
            m = by_source[mid]
            self.assertEqual(self.attr(m, "twice-reason"), reason)
            self.assertEqual(self.attr(m, "twice-source-queue"), url)
            self.assertEqual(self.attr(m, "origin"), "test", "user attributes are kept")
            self.assertTrue(self.attr(m, "twice-attempts").isdigit())
        self.assertEqual(self.attr(by_source[[k for k, v in ids.items()
                                               if v == "max-attempts"][0]], "twice-attempts"),
                         "2")
        self.assertEqual(by_source[[k for k, v in ids.items() if v == "invalid-json"][0]]["Body"],
                         "{not json", "the original body is kept")
        self.assertEqual(self.effects(dsn), [])
        self.assertEqual(d.stop(), 0)

    def _conflict(self, on_conflict):
        url, dlq, dsn, port, conf = self.setup_tx(
            "conf-" + on_conflict, conf_options={"on_conflict": on_conflict})
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        first = self.sqs.send(url, json.dumps({"id": "same", "payload": "A"}))
        twicetest.wait_until(lambda: len(self.effects(dsn)) == 1, timeout=20)
        second = self.sqs.send(url, json.dumps({"id": "same", "payload": "B"}))
        d.wait_log(r"payload conflict: key completed by message %s" % first, timeout=20)
        self.wait_empty(url)
        self.assertEqual(len(self.effects(dsn)), 1)
        tc.wait_metric(port, "twice_payload_conflicts_total", 1)
        return d, dlq, second

    def test_conflict_skip(self):
        d, dlq, _ = self._conflict("skip")
        time.sleep(1)
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        self.assertEqual(d.stop(), 0)

    def test_conflict_reject(self):
        d, dlq, second = self._conflict("reject")
        m = self.dlq_messages(dlq, 1)[0]
        self.assertEqual(self.attr(m, "twice-reason"), "payload-conflict")
        self.assertEqual(self.attr(m, "twice-source-message-id"), second)
        self.assertEqual(d.stop(), 0)

    def _started_for_drain(self, prefix, concurrency, drain_timeout):
        """A transactional queue's twiced, ready, that drains for drain_timeout seconds."""
        url, dlq, dsn, port, conf = self.setup_tx(
            prefix, queue_options={"concurrency": concurrency, "visibility_timeout": 30},
            conf_options={"drain_timeout": drain_timeout})
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        return url, dsn, port, conf, d

    def test_sigterm_with_20_in_flight_loses_nothing(self):
        url, dsn, port, conf, d = self._started_for_drain("term", 20, 5)
        # Ten finish within the drain timeout, ten do not and must be given back. The
        # short ones must outlast the spread of the twenty starts: each handler's first
        # job waits for its own PostgreSQL connection (effect_tx is transactional), and
        # under ASan with three other tests the twenty, received in 0.2 s, started over
        # 1.5 to 2.2 s (1 s jobs: 19 at most in flight). 3.5 s, ended within the drain.
        for b in range(2):
            self.sqs.send_batch(url, [json.dumps({"id": "t%d" % i,
                                                  "sleep_ms": 3500 if i % 2 == 0 else 8000})
                                      for i in range(b * 10, b * 10 + 10)])
        twicetest.wait_until(lambda: tc.metric_sum(tc.scrape(port), "twice_jobs_in_flight")
                             == 20, timeout=15, message="20 jobs never ran at once")
        self.assertEqual(d.stop(timeout=20), 0)
        done = {r[0] for r in self.effects(dsn)}
        # Given back: visible at once, or (transactional, still locked by the dying
        # handler) after a few seconds, by when the master has ended its lease.
        time.sleep(4)
        back = self.sqs.drain(url, visibility=2)
        back_keys = {"effect:" + json.loads(m["Body"])["id"] for m in back}
        self.assertEqual(len(back), len(back_keys))
        self.assertEqual(done | back_keys, {"effect:t%d" % i for i in range(20)},
                         "each job completed or visible again: nothing lost")
        self.assertGreaterEqual(len(done), 10)
        self.assertEqual(self.sqs.counts(url)[0], 0)
        # A job can be both: given back at the deadline while its COMMIT was on its
        # way (a slow machine: a short job still committing at 5 s), or sent just
        # before the worker exited, which the server then commits. The guarantee is
        # not "one or the other" but one effect: such a message comes back once and
        # the next start deletes it as a duplicate of its completed key.
        both = done & back_keys
        # The rest run once on the next start: still one effect per key.
        d2 = self.start_twiced(conf)
        d2.wait_log(r"ready: generation 1", timeout=20)
        self.wait_empty(url, timeout=40)
        rows = self.effects(dsn)
        self.assertEqual(len(rows), 20)
        self.assertEqual(len({r[0] for r in rows}), 20)
        log = d2.log_text()
        for key in both:
            self.assertRegex(log, r"key=%s[: ].*duplicate: key completed by message"
                             % re.escape(key))
        self.assertEqual(d2.stop(timeout=20), 0)

    def test_one_job_given_back_at_the_drain_deadline_is_counted_in_the_singular(self):
        url, dsn, port, conf, d = self._started_for_drain("term1", 2, 1)
        self.sqs.send(url, json.dumps({"id": "slow", "sleep_ms": 8000}))
        twicetest.wait_until(lambda: tc.metric_sum(tc.scrape(port), "twice_jobs_in_flight")
                             == 1, timeout=15, message="the job never ran")
        self.assertEqual(d.stop(timeout=20), 0)
        self.assertRegex(d.log_text(), r"queue term1: drain deadline: gave back 1 unfinished "
                                       r"job\n")

    def test_classic_two_column_table_is_migrated_in_place(self):
        url, dlq, dsn, port, conf = self.setup_tx("classic")
        self.pg.query(dsn, "CREATE TABLE twice_idempotency (idempotency_key TEXT PRIMARY KEY, "
                           "processed_at TIMESTAMPTZ NOT NULL DEFAULT now())")
        self.pg.query(dsn, "INSERT INTO twice_idempotency VALUES ('effect:old-1'), "
                           "('effect:old-2')")
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        self.sqs.send(url, json.dumps({"id": "old-1"}))
        self.sqs.send(url, json.dumps({"id": "new-1"}))
        twicetest.wait_until(lambda: len(self.effects(dsn)) == 1, timeout=20)
        self.wait_empty(url)
        self.assertEqual([r[0] for r in self.effects(dsn)], ["effect:new-1"])
        states = dict(self.pg.query(dsn, "SELECT idempotency_key, state FROM twice_idempotency"))
        self.assertEqual(states, {"effect:old-1": "completed", "effect:old-2": "completed",
                                  "effect:new-1": "completed"})
        self.assertIn("duplicate: key completed by message (migrated)", d.log_text())
        self.assertEqual(d.stop(), 0)

    def test_first_twiced_table_with_a_dead_workers_leases_is_taken_over(self):
        # The keys table as the first twiced made it (a check of two states, a
        # janitor index of (state, processed_at)), left by a worker that died: a
        # completed key, a lease that has lapsed and one that lapses in 3 s. Today's
        # twiced migrates it, deletes the completed key's message unrun, runs the
        # lapsed one at once and the live one only after its lease, and retries a
        # new job (a released key, which the old check did not allow) (itest-idem's
        # test_migrate_shapes covers every other shape of the table's history).
        url, dlq, dsn, port, conf = self.setup_tx("firsttable")
        self.pg.query(dsn, "CREATE TABLE twice_idempotency (idempotency_key TEXT PRIMARY KEY, "
                           "processed_at TIMESTAMPTZ NOT NULL DEFAULT now()); "
                           "ALTER TABLE twice_idempotency ADD COLUMN state TEXT NOT NULL "
                           "DEFAULT 'completed' CHECK (state IN ('in_progress', 'completed')), "
                           "ADD COLUMN owner TEXT, ADD COLUMN lease_until TIMESTAMPTZ, "
                           "ADD COLUMN payload_sha256 BYTEA, ADD COLUMN message_id TEXT, "
                           "ADD COLUMN attempts INTEGER NOT NULL DEFAULT 1, "
                           "ADD COLUMN created_at TIMESTAMPTZ NOT NULL DEFAULT now(); "
                           "CREATE INDEX twice_idempotency_janitor_idx "
                           "ON twice_idempotency (state, processed_at)")
        self.pg.query(dsn, "INSERT INTO twice_idempotency (idempotency_key, state, owner, "
                           "lease_until, message_id) VALUES "
                           "('effect:done', 'completed', NULL, NULL, 'm-old'), "
                           "('effect:lapsed', 'in_progress', 'old:1', now() - interval '1 minute',"
                           " 'm-old'), "
                           "('effect:live', 'in_progress', 'old:1', now() + interval '3 seconds',"
                           " 'm-old')")
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        for job in ("done", "lapsed", "live"):
            self.sqs.send(url, json.dumps({"id": job}))
        # a new key's first run fails: released, a state the old check refused
        self.sqs.send(url, json.dumps({"id": "retried", "fail_until": 2}))
        self.wait_empty(url)
        self.assertEqual(sorted(r[0] for r in self.effects(dsn)),
                         ["effect:lapsed", "effect:live", "effect:retried"])
        states = dict(self.pg.query(dsn, "SELECT idempotency_key, state FROM twice_idempotency"))
        self.assertEqual(states, {"effect:done": "completed", "effect:lapsed": "completed",
                                  "effect:live": "completed", "effect:retried": "completed"})
        log = d.log_text()
        self.assertRegex(log, r"key=effect:done: duplicate: key completed by message m-old")
        # that version counted claims, the lapsed one among them: given back by the
        # migration, so the takeover is the job's first counted attempt, as for any
        # lapsed lease (it was attempt 2, and a queue with max_attempts 1 dead-lettered
        # the job unrun)
        self.assertRegex(log, r"key=effect:lapsed attempt=1: taking over")
        self.assertRegex(log, r"key=effect:live: key held by a live lease \(message m-old\)")
        self.assertRegex(log, r"key=effect:live attempt=1: taking over")
        self.assertEqual(d.stop(), 0)

    def test_janitor_deletes_expired_completed_keys(self):
        url, dlq, dsn, port, conf = self.setup_tx("janitor")
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        self.sqs.send(url, json.dumps({"id": "fresh"}))
        twicetest.wait_until(lambda: len(self.effects(dsn)) == 1, timeout=20)
        # Completed keys, and the free ones that keep a retried or cut-short job's
        # count (released, crashed, interrupted), go after the retention; a fresh
        # free key stays.
        self.pg.query(dsn, "INSERT INTO twice_idempotency (idempotency_key, state, attempts, "
                           "processed_at) VALUES "
                           "('effect:ancient', 'completed', 1, now() - interval '30 days'), "
                           "('effect:old-retry', 'released', 2, now() - interval '30 days'), "
                           "('effect:old-crash', 'crashed', 1, now() - interval '30 days'), "
                           "('effect:old-cut', 'interrupted', 0, now() - interval '30 days'), "
                           "('effect:retrying', 'released', 1, now())")
        twicetest.wait_until(
            lambda: self.pg.query(dsn, "SELECT count(*) FROM twice_idempotency WHERE "
                                       "idempotency_key LIKE 'effect:old-%' OR "
                                       "idempotency_key = 'effect:ancient'")[0][0] == 0,
            timeout=15, message="the janitor did not delete expired keys")
        keys = [r[0] for r in self.pg.query(dsn, "SELECT idempotency_key FROM "
                                                 "twice_idempotency ORDER BY 1")]
        self.assertEqual(keys, ["effect:fresh", "effect:retrying"], "unexpired keys stay")
        self.assertEqual(d.stop(), 0)


if __name__ == "__main__":
    unittest.main()
