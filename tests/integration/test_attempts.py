"""Issue 14: an attempt is a run of the handler, counted with the key in PostgreSQL,
not a delivery. Deliveries twice causes itself (hiding a duplicate behind a live
lease, a reload giving messages back, a claim that failed with the database) cost no
attempt; ApproximateReceiveCount is only a backstop (max_receives) for a message that
can never finish. Real PostgreSQL and SQS emulator; effects are rows (effect_tx) or
lines (effect_file) that the tests count."""

import json
import os
import re
import signal
import tempfile
import threading
import time
import unittest

import faultproxy
import twicetest
import twiceconf as tc

EFFECT_TX = "effect-tx"


class Attempts(twicetest.TwiceTestCase):
    def setup_tx(self, prefix, workers=1, endpoint=None, lease_margin=2, drain_timeout=10,
                 fifo=False, **queue_options):
        """A queue pair, a database with the effects table and a config running
        effect_tx. Returns (url, dlq, dsn, metrics_port, config)."""
        url, dlq = self.queue_pair(prefix, fifo=fifo)
        dsn = self.new_database(prefix)
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        port = tc.free_port()
        q = tc.queue(prefix, url, dlq, EFFECT_TX, **queue_options)
        conf = tc.config(self.env, dsn, [q], [tc.plugin(EFFECT_TX,
                                                        tc.test_plugin(self.env, "effect_tx"))],
                         workers=workers, metrics_port=port, endpoint=endpoint,
                         lease_margin=lease_margin, drain_timeout=drain_timeout)
        return url, dlq, dsn, port, conf

    def setup_file(self, prefix, queue_name=None, plugin_name="effect-file", extra="",
                   **queue_options):
        """A queue pair, a database and a config running effect_file, whose effects are
        lines in a file; the queue is named queue_name (default: prefix), the plugin
        plugin_name; extra: more top-level settings. Returns (url, dlq, dsn,
        metrics_port, effects file, config)."""
        url, dlq = self.queue_pair(prefix)
        dsn = self.new_database(prefix)
        effects = os.path.join(tempfile.mkdtemp(dir=self.env.run_dir), "effects.txt")
        port = tc.free_port()
        conf = tc.config(self.env, dsn, [tc.queue(queue_name or prefix, url, dlq, plugin_name,
                                                  **queue_options)],
                         [tc.plugin(plugin_name, tc.test_plugin(self.env, "effect_file"),
                                    file=effects)], metrics_port=port, extra=extra)
        return url, dlq, dsn, port, effects, conf

    @staticmethod
    def file_effects(path):
        """(key, message id, attempt) of each line effect_file wrote, in order."""
        try:
            with open(path) as f:
                return [tuple(line.split()) for line in f.read().splitlines()]
        except FileNotFoundError:
            return []

    def check_only_culprit_counted(self, d, url, dlq, effects, culprit, bystanders, death,
                                   queue=None, plugin="effect-file"):
        """The culprit ended its worker on each of its two runs (max_attempts 2; the log
        says death, then which message, plugin and queue (when given), names whole): it is
        dead-lettered as worker-crashed, and each bystander (key of an effect_file job) is
        done once, as attempt 1."""
        twicetest.wait_until(lambda: self.sqs.counts(dlq)[0] == 1, timeout=90,
                             message="the culprit never reached the DLQ")
        twicetest.wait_until(lambda: len(self.file_effects(effects)) == len(bystanders),
                             timeout=90, message="the bystanders did not all finish")
        self.wait_empty(url)
        done = self.file_effects(effects)
        self.assertEqual(sorted(k for k, _, _ in done), sorted(bystanders))
        self.assertEqual({a for _, _, a in done}, {"1"},
                         "no bystander had another job's death counted against it")
        [letter] = self.letters(dlq)
        self.assertEqual(self.attr(letter, "twice-reason"), "worker-crashed")
        self.assertEqual(self.attr(letter, "twice-source-message-id"), culprit)
        deaths = re.findall(death + r" while running plugin %s on message (\S+) \(queue %s\)"
                            % (re.escape(plugin), re.escape(queue) if queue else r"\S+"),
                            d.log_text())
        self.assertEqual(deaths, [culprit, culprit], "its two runs, both laid at it")
        self.assertEqual(d.stop(), 0)

    def start(self, conf, workers=1):
        """twiced on conf, once its workers are ready."""
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1: %d/%d" % (workers, workers), timeout=20)
        return d

    def effects(self, dsn):
        return self.pg.query(dsn, "SELECT key, message_id, attempt FROM effects ORDER BY at")

    def key_row(self, dsn, key):
        """(state, attempts) of a key, None when it has no row."""
        rows = self.pg.query(dsn, "SELECT state, attempts FROM twice_idempotency "
                                  "WHERE idempotency_key = %s", (key,))
        return rows[0] if rows else None

    def letters(self, dlq):
        """Every dead letter in dlq now (each stays hidden for a minute once read)."""
        return self.sqs.drain(dlq, visibility=60)

    @staticmethod
    def attr(message, name):
        return message["MessageAttributes"][name]["StringValue"]

    def in_flight(self, port):
        """Jobs inside handle() now; 0 while the metrics listener is not up yet."""
        try:
            return tc.metric_sum(tc.scrape(port), "twice_jobs_in_flight")
        except OSError:
            return 0

    def wait_empty(self, url, timeout=30):
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=timeout,
                             message="queue %s did not end empty" % url)

    def test_a_copy_hidden_behind_a_live_lease_runs_instead_of_dead_lettering(self):
        # Issue 14.1, scaled down: a 7 s run on a queue with visibility_timeout 2
        # and max_attempts 3, then RETRY (retry_after 60); the same body re-sent 1 s
        # after the job started meets the live lease again and again (hidden 1, 2,
        # then 4 s: met at about 1, 2 and 4 s, the run ending at 7 s). Its receives
        # are no attempts: once the key is released it runs, as attempt 2. (A 14 s
        # run met it the same three times and once more, 8 s later.)
        url, dlq, dsn, port, conf = self.setup_tx(
            "copy", lease_margin=1, concurrency=2, visibility_timeout=2, max_attempts=3)
        d = self.start(conf)
        body = json.dumps({"id": "slow", "fail_until": 2, "fail_sleep_ms": 7000,
                           "retry_after": 60})
        first = self.sqs.send(url, body)
        twicetest.wait_until(lambda: self.in_flight(port) == 1, timeout=10,
                             message="the job never started")
        time.sleep(1)
        copy = self.sqs.send(url, body)
        twicetest.wait_until(lambda: self.effects(dsn) or self.sqs.counts(dlq)[0], timeout=45,
                             message="the copy never ran")
        # The copy (or the original, had its visibility lapsed under load) ran as
        # the second attempt once the key was free.
        rows = self.effects(dsn)
        self.assertEqual([(k, a) for k, _, a in rows], [("effect:slow", 2)])
        self.assertIn(rows[0][1], (first, copy))
        self.assertEqual(self.key_row(dsn, "effect:slow"), ("completed", 2))
        hides = [int(s) for s in re.findall(r"msg=%s .*key held by a live lease .*hidden for "
                                            r"(\d+)s" % copy, d.log_text())]
        self.assertGreaterEqual(len(hides), 3, "met the live lease several times")
        self.assertEqual(hides[:2], [1, 2], "1 s, then doubling")
        self.assertEqual(self.letters(dlq), [], "nothing dead-lettered")
        self.assertEqual(d.stop(), 0)

    def test_a_duplicate_of_a_quick_job_is_looked_at_again_within_seconds(self):
        # Issue 14.19: the duplicate is hidden 1 s, then 2 s..., not for the whole
        # lease (visibility 30 + margin + 2 = 34 s).
        url, dlq, dsn, port, conf = self.setup_tx("quick", concurrency=2, visibility_timeout=30)
        d = self.start(conf)
        body = json.dumps({"id": "quick", "sleep_ms": 2000})
        self.sqs.send(url, body)
        twicetest.wait_until(lambda: self.in_flight(port) == 1, timeout=10,
                             message="the job never started")
        copy = self.sqs.send(url, body)
        d.wait_log(r"msg=%s .*key held by a live lease" % copy, timeout=10)
        sent = time.monotonic()
        d.wait_log(r"msg=%s .*duplicate: key completed by message" % copy, timeout=15)
        self.assertLess(time.monotonic() - sent, 10, "looked at again within seconds")
        self.wait_empty(url, timeout=10)
        self.assertEqual(len(self.effects(dsn)), 1)
        tc.wait_metric(port, "twice_duplicates_skipped_total", 1, kind="completed")
        self.assertEqual(d.stop(), 0)

    def test_reloads_dead_letter_nothing_that_did_not_run(self):
        # Issue 14.2: max_attempts 1, messages flowing, four SIGHUPs. Messages the
        # draining generation received (or its cancelled long polls took) come back
        # with a higher receive count: they must run, not go to the DLQ.
        url, dlq, dsn, port, conf = self.setup_tx(
            "reloads", workers=2, concurrency=4, visibility_timeout=3, max_attempts=1,
            wait_time=20)
        d = self.start(conf, workers=2)
        total = 300

        def produce():
            for i in range(0, total, 5):
                self.sqs.send_batch(url, [json.dumps({"id": "m%d" % n, "sleep_ms": 50})
                                          for n in range(i, i + 5)])
                time.sleep(0.05)

        producer = threading.Thread(target=produce)
        producer.start()
        for generation in range(2, 6):
            time.sleep(1.0)
            mark = d.mark()
            d.signal(signal.SIGHUP)
            d.wait_log(r"reload done: generation %d ready" % generation, timeout=60, since=mark)
        producer.join()
        twicetest.wait_until(lambda: len({r[0] for r in self.effects(dsn)}) == total,
                             timeout=90, message="not every message ran")
        self.wait_empty(url)
        letters = self.letters(dlq)
        self.assertEqual([(self.attr(m, "twice-reason"), self.attr(m, "twice-attempts"))
                          for m in letters], [], "dead-lettered without having run")
        rows = self.effects(dsn)
        self.assertEqual(len(rows), total, "one effect per message")
        self.assertEqual({r[2] for r in rows}, {1}, "every job ran as its first attempt")
        self.assertEqual(d.stop(timeout=30), 0)

    def cut_database(self, dsn):
        """A PostgreSQL outage for this database only: new connections are refused
        and twiced's open ones are terminated."""
        name = dsn.rsplit("/", 1)[1]
        self.pg.query(self.env.pg_dsn, 'ALTER DATABASE "%s" ALLOW_CONNECTIONS false' % name)
        self.addCleanup(self.restore_database, dsn)
        self.pg.query(self.env.pg_dsn, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                       "WHERE datname = %s AND application_name = 'twice'",
                      (name,))

    def restore_database(self, dsn):
        name = dsn.rsplit("/", 1)[1]
        self.pg.query(self.env.pg_dsn, 'ALTER DATABASE "%s" ALLOW_CONNECTIONS true' % name)

    def test_a_database_outage_burns_no_attempt(self):
        # Issue 14.3: messages received while the claim fails are given back by
        # each worker in turn; their next receive must still be their first run.
        # visibility_timeout 4: a release the cut connection lost leaves its key
        # claimed until its lease (visibility + margin) lapses; what is checked does
        # not depend on how long that takes, only that its run is not counted.
        url, dlq, dsn, port, conf = self.setup_tx(
            "pgout", workers=2, concurrency=4, visibility_timeout=4, max_attempts=1,
            wait_time=20)
        d = self.start(conf, workers=2)
        self.sqs.send(url, json.dumps({"id": "before"}))
        twicetest.wait_until(lambda: len(self.effects(dsn)) == 1, timeout=20)
        mark = d.mark()
        self.cut_database(dsn)
        self.sqs.send_batch(url, [json.dumps({"id": "during%d" % i}) for i in range(10)])
        d.wait_log(r"claiming \d+ keys? failed, giving the messages back", timeout=30,
                   since=mark)
        time.sleep(3)  # the other worker tries too; both back off
        self.restore_database(dsn)
        twicetest.wait_until(lambda: len(self.effects(dsn)) == 11, timeout=60,
                             message="not every message ran after the outage")
        self.wait_empty(url)
        self.assertEqual(self.letters(dlq), [], "nothing dead-lettered by the outage")
        self.assertEqual({r[2] for r in self.effects(dsn)}, {1}, "each ran as attempt 1")
        self.assertEqual(d.stop(timeout=30), 0)

    def test_a_transaction_cut_by_the_database_burns_no_attempt(self):
        # max_attempts 1: four transactional jobs are inside handle() when the
        # database terminates their connections; the plugin's statement fails and it
        # answers RETRY. That run is the store's fault, not the job's: each comes back
        # and runs as attempt 1, and nothing reaches the DLQ.
        # visibility_timeout 4 (> the 2.5 s runs, which the heartbeat extends anyway):
        # a release the cut connection lost waits out the key's lease, as above.
        url, dlq, dsn, port, conf = self.setup_tx(
            "txcut", concurrency=4, visibility_timeout=4, max_attempts=1)
        d = self.start(conf)
        self.sqs.send_batch(url, [json.dumps({"id": "cut%d" % i, "sleep_ms": 2500})
                                  for i in range(4)])
        twicetest.wait_until(lambda: self.in_flight(port) == 4, timeout=15,
                             message="the four jobs never ran together")
        # inside their transactions (a slow build may still be connecting the
        # handlers' sessions when the jobs count as in flight)
        name = dsn.rsplit("/", 1)[1]
        twicetest.wait_until(lambda: self.pg.query(
            self.env.pg_dsn, "SELECT count(*) FROM pg_stat_activity WHERE datname = %s"
            " AND state = 'idle in transaction'", (name,))[0][0] >= 4, timeout=15,
            message="the four jobs never were inside their transactions together")
        mark = d.mark()
        self.cut_database(dsn)
        d.wait_log(r"transaction lost with the connection", timeout=15, since=mark)
        self.restore_database(dsn)
        twicetest.wait_until(lambda: len(self.effects(dsn)) == 4, timeout=60,
                             message="not every job ran after the outage")
        self.wait_empty(url)
        self.assertEqual(self.letters(dlq), [], "nothing dead-lettered by the outage")
        self.assertEqual({r[2] for r in self.effects(dsn)}, {1}, "each ran as attempt 1")
        self.assertEqual(d.stop(timeout=30), 0)

    def fail_release_once(self, dsn):
        """Make the next release of a key fail once, as a database hiccup would:
        a trigger refuses it (a release is an UPDATE to released, or a DELETE of
        an in-progress row when the key has no run to keep)."""
        self.pg.query(dsn, """
            CREATE SEQUENCE fail_release_seq;
            CREATE FUNCTION fail_release() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF ((TG_OP = 'UPDATE' AND NEW.state = 'released')
                    OR (TG_OP = 'DELETE' AND OLD.state = 'in_progress'))
                   AND nextval('fail_release_seq') = 1 THEN
                    RAISE EXCEPTION 'release refused by the test';
                END IF;
                RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
            END $$;
            CREATE TRIGGER fail_release BEFORE UPDATE OR DELETE ON twice_idempotency
                FOR EACH ROW EXECUTE FUNCTION fail_release();""")

    def test_failed_release_drain_and_lease_wait_is_not_a_crash(self):
        # Issue 14.26: a RETRY whose release fails, the message meeting its own key's
        # lease, a reload draining the worker, then the key taken over. No worker
        # crashed: nothing may say worker-crashed, and the job still finishes.
        url, dlq, dsn, port, conf = self.setup_tx(
            "release", lease_margin=1, concurrency=2, visibility_timeout=3, max_attempts=2)
        d = self.start(conf)
        self.fail_release_once(dsn)
        self.sqs.send(url, json.dumps({"id": "relfail", "fail_until": 2, "retry_after": 1}))
        d.wait_log(r"releasing 1 key failed", timeout=20)
        d.wait_log(r"key held by a live lease", timeout=20)
        mark = d.mark()
        d.signal(signal.SIGHUP)
        d.wait_log(r"reload done: generation 2 ready", timeout=60, since=mark)
        twicetest.wait_until(lambda: self.effects(dsn), timeout=40,
                             message="the job never finished")
        self.wait_empty(url)
        self.assertEqual(self.letters(dlq), [])
        self.assertNotIn("worker-crashed", d.log_text())
        self.assertNotIn("crashed its worker", d.log_text())
        self.assertEqual(self.key_row(dsn, "effect:relfail")[0], "completed")
        self.assertEqual(d.stop(), 0)

    def test_acker_giving_up_on_a_completed_job_counts_it_done_once(self):
        # Gap (a): the key completed, but DeleteMessage keeps failing until the
        # acknowledger gives up (ack_tries 3: after about 3 s, not the default 22).
        # The job is done (counted once); its redelivery is a duplicate, deleted
        # without a second effect.
        proxy = faultproxy.FaultProxy(*faultproxy.split_endpoint(self.env.sqs_endpoint))
        self.addCleanup(proxy.close)
        url, dlq, dsn, port, conf = self.setup_tx("giveup", endpoint=proxy.endpoint,
                                                  visibility_timeout=3, ack_tries=3)
        d = self.start(conf)
        proxy.answer(500, "InternalFailure", only="DeleteMessageBatch")
        self.sqs.send(url, json.dumps({"id": "kept"}))
        d.wait_log(r"DeleteMessageBatch failed 3 times, giving up", timeout=60)
        proxy.passthrough()
        d.wait_log(r"duplicate: key completed by message", timeout=30)
        self.wait_empty(url)
        twicetest.wait_until(
            lambda: tc.metric_sum(tc.scrape(port), "twice_duplicates_skipped_total") == 1,
            timeout=10, message="the redelivery was not counted as a duplicate")
        samples = tc.scrape(port)
        self.assertEqual(tc.metric_sum(samples, "twice_jobs_finished_total", outcome="done"), 1)
        self.assertEqual(len(self.effects(dsn)), 1)
        self.assertEqual(d.stop(), 0)

    def test_a_job_whose_lease_was_taken_over_is_not_counted_done(self):
        # Gap (b): another worker took the key over while this one ran it; the
        # completion finds the key no longer ours. The new holder's run is the one
        # that counts: this one is neither counted done nor deleted.
        url, dlq, dsn, port, effects, conf = self.setup_file("stolen", visibility_timeout=5)
        d = self.start(conf)
        self.sqs.send(url, json.dumps({"id": "stolen", "sleep_ms": 2500}))
        twicetest.wait_until(lambda: self.in_flight(port) == 1, timeout=10,
                             message="the job never started")
        # What another worker's takeover leaves: its own owner and lease.
        self.pg.query(dsn, "UPDATE twice_idempotency SET owner = 'other-worker', "
                           "lease_until = now() + interval '1 hour' "
                           "WHERE idempotency_key = 'effect:stolen'")
        d.wait_log(r"lease lost before completion", timeout=20)
        time.sleep(0.5)
        samples = tc.scrape(port)
        self.assertEqual(tc.metric_sum(samples, "twice_jobs_finished_total", outcome="done"), 0)
        rows = self.pg.query(dsn, "SELECT state, owner FROM twice_idempotency")
        self.assertEqual(rows, [("in_progress", "other-worker")])
        self.assertEqual(self.sqs.counts(url)[1], 1, "the message is left to the new holder")
        self.assertEqual(d.stop(), 0)

    def test_a_crash_among_a_hundred_running_jobs_counts_only_its_own_run(self):
        # Every running job has its record in the shared table, however many run:
        # the poison crashes its worker as the 101st running job (the table once
        # held 64 and left later jobs out, so the crash fell on 64 bystanders and
        # the poison's own run was never counted). Only the poison's runs count.
        url, dlq, _, port, effects, conf = self.setup_file(
            "many", concurrency=110, receivers=4, visibility_timeout=3, max_attempts=2)
        d = self.start(conf)
        for i in range(0, 100, 10):
            self.sqs.send_batch(url, [json.dumps({"id": "b%d" % k, "sleep_ms": 4000})
                                      for k in range(i, i + 10)])
        twicetest.wait_until(lambda: self.in_flight(port) == 100, timeout=30,
                             message="the hundred jobs never ran at once")
        poison = self.sqs.send(url, json.dumps({"id": "poison", "crash": True}))
        self.check_only_culprit_counted(d, url, dlq, effects, poison,
                                        ["effect:b%d" % k for k in range(100)],
                                        r"killed by signal 11 \(Segmentation fault\)")

    def test_a_worker_past_worker_max_rss_is_recycled_without_costing_an_attempt(self):
        # A plugin that leaks 2 MiB a job, 4 jobs at a time, and a limit a worker (12 MiB
        # before any job, 35 under ASan) passes within a second or two: each worker past it
        # stops receiving, finishes its running jobs and exits, the master starting
        # another at once. Every message is done once, as attempt 1; nothing is
        # dead-lettered and the master sees no crash (the OOM killer would have counted
        # an attempt against every job inside handle()).
        url, dlq, _, port, effects, conf = self.setup_file(
            "recycle", concurrency=4, visibility_timeout=30, max_attempts=1,
            extra='worker_max_rss = "64M";')
        d = self.start(conf)
        ids = ["r%d" % k for k in range(100)]
        for i in range(0, len(ids), 10):
            self.sqs.send_batch(url, [json.dumps({"id": k, "leak_kb": 2048, "sleep_ms": 50})
                                      for k in ids[i:i + 10]])
        twicetest.wait_until(lambda: len(self.file_effects(effects)) >= len(ids), timeout=60,
                             message="the messages were not all handled")
        self.wait_empty(url)
        done = self.file_effects(effects)
        self.assertEqual(sorted(k for k, _, _ in done), sorted("effect:" + k for k in ids),
                         "every message handled exactly once")
        self.assertEqual({a for _, _, a in done}, {"1"}, "no job ran as attempt 2")
        self.assertEqual(self.sqs.counts(dlq)[0], 0, "nothing dead-lettered")

        def settled():
            """Each recycle logged is counted, drained and followed by a new worker
            (one the last jobs caused may still be under way)."""
            log = d.log_text()
            recycled = re.findall(r"worker (\d+): resident memory [\d.]+ MiB is past "
                                  r"worker_max_rss \(64\.0 MiB\): recycling it", log)
            ready = set(re.findall(r"worker\[(\d+)\]: worker ready", log))
            counted = tc.metric_sum(tc.scrape(port), "twice_worker_recycled_total", reason="rss")
            drained = all(re.search(r"worker %s \(generation 1\) drained and exited" % pid, log)
                          for pid in recycled)
            return (recycled and counted == len(recycled) and len(ready) == len(recycled) + 1
                    and drained and log)

        log = twicetest.wait_until(settled, timeout=15, message="the recycles did not add up")
        self.assertEqual(tc.metric_sum(tc.scrape(port), "twice_worker_restarts_total"), 0)
        self.assertNotRegex(log, r" error master\[", "the master logged no crash")
        self.assertEqual(d.stop(), 0)

    def test_a_worker_is_recycled_after_its_share_of_worker_max_jobs(self):
        # worker_max_jobs 10: each worker draws its share within 10% (9-11) and, once
        # it ran that many (looked at once a second), is recycled as worker_max_rss
        # recycles it: replaced at once, drained, every message done once as attempt 1.
        url, dlq, _, port, effects, conf = self.setup_file(
            "recyclejobs", concurrency=2, visibility_timeout=30, max_attempts=1,
            extra="worker_max_jobs = 10;")
        d = self.start(conf)
        ids = ["j%d" % k for k in range(40)]
        for i in range(0, len(ids), 10):
            self.sqs.send_batch(url, [json.dumps({"id": k, "sleep_ms": 100})
                                      for k in ids[i:i + 10]])
        twicetest.wait_until(lambda: len(self.file_effects(effects)) >= len(ids), timeout=60,
                             message="the messages were not all handled")
        self.wait_empty(url)
        done = self.file_effects(effects)
        self.assertEqual(sorted(k for k, _, _ in done), sorted("effect:" + k for k in ids))
        self.assertEqual({a for _, _, a in done}, {"1"}, "no job ran as attempt 2")
        self.assertEqual(self.sqs.counts(dlq)[0], 0, "nothing dead-lettered")

        def counted():
            """The recycles logged, once the metric counts each."""
            recycled = re.findall(r"worker (\d+): (\d+) jobs run, its share of "
                                  r"worker_max_jobs \(10, within 10%: (\d+)\): recycling it",
                                  d.log_text())
            n = tc.metric_sum(tc.scrape(port), "twice_worker_recycled_total", reason="jobs")
            return recycled if recycled and n == len(recycled) else None

        recycled = twicetest.wait_until(counted, timeout=15, message="no recycle counted")
        for _, runs, share in recycled:
            self.assertTrue(9 <= int(share) <= 11 and int(runs) >= int(share), recycled)
        self.assertEqual(tc.metric_sum(tc.scrape(port), "twice_worker_restarts_total"), 0)
        log = d.log_text()
        self.assertNotRegex(log, r" error master\[", "the master logged no crash")
        self.assertEqual(d.stop(), 0)

    def test_a_plugin_calling_exit_is_laid_at_its_own_job(self):
        # exit() inside handle() ends the worker as a crash does: only the run of the
        # job that called it counts (it once counted against every job running). The
        # master's line names the queue and plugin whole at 80 bytes, the longest a
        # name may be (the shared job record once kept 63 bytes of each).
        queue, plugin = "quit-" + "q" * 75, "effect-file-" + "p" * 68
        url, dlq, _, port, effects, conf = self.setup_file(
            "quit", queue_name=queue, plugin_name=plugin, concurrency=4, visibility_timeout=3,
            max_attempts=2)
        d = self.start(conf)
        self.sqs.send(url, json.dumps({"id": "bystander", "sleep_ms": 3000}))
        twicetest.wait_until(lambda: self.in_flight(port) == 1, timeout=20,
                             message="the bystander never started")
        quitter = self.sqs.send(url, json.dumps({"id": "quitter", "exit": True}))
        self.check_only_culprit_counted(d, url, dlq, effects, quitter, ["effect:bystander"],
                                        r"exited with code 3", queue=queue, plugin=plugin)

    def test_a_host_dying_mid_run_costs_no_attempt_but_the_backstop_ends_it(self):
        # The whole host dies with the job (master and workers at once: no crash is
        # recorded). Its run is not counted: a later delivery takes the key over and
        # runs it as attempt 1 again. A message that kills its host every time still
        # ends, as max-receives, once received more than max_receives times.
        url, dlq, dsn, port, conf = self.setup_tx(
            "host", lease_margin=0, visibility_timeout=2, max_attempts=1, max_receives=4)
        self.sqs.send(url, json.dumps({"id": "doom", "sleep_ms": 60000}))
        runs, logs = 0, ""
        for _ in range(6):
            d = self.start_twiced(conf)
            twicetest.wait_until(lambda: self.in_flight(port) == 1 or self.sqs.counts(dlq)[0],
                                 timeout=30, message="neither a run nor a dead letter")
            if self.sqs.counts(dlq)[0]:
                break
            runs += 1
            d.kill()  # the host: master and workers together
            logs += d.log_text()
        self.assertGreaterEqual(runs, 2, "it ran again after its host died")
        self.assertRegex(logs, r"attempt=1: taking over: the previous holder's lease expired "
                               r"before it recorded its run")
        self.assertNotRegex(logs, r"attempt=2")
        letter = self.letters(dlq)[0]
        self.assertEqual(self.attr(letter, "twice-reason"), "max-receives")
        self.assertEqual(self.attr(letter, "twice-attempts"), "0")
        self.assertIn("(max_receives 4)", self.attr(letter, "twice-error"))
        self.wait_empty(url)
        self.assertEqual(d.stop(), 0)

    def test_a_fifo_job_that_crashes_after_retries_in_place_counts_every_run(self):
        # On a FIFO queue a RETRY runs again in place, its count written only when
        # the job ends. A crash in the second run records that run's own number (2),
        # so the third run is the last (max_attempts 3): two crashes, not three.
        url, dlq, dsn, port, conf = self.setup_tx(
            "fifocrash", fifo=True, visibility_timeout=3, max_attempts=3, backoff=(1, 1))
        d = self.start(conf)
        self.sqs.send(url, json.dumps({"id": "fc", "fail_until": 99, "crash_from": 2}),
                      group="g", dedup="fc")
        twicetest.wait_until(lambda: self.sqs.counts(dlq)[0] == 1, timeout=60,
                             message="the crashing job was not dead-lettered")
        letter = self.letters(dlq)[0]
        self.assertEqual(self.attr(letter, "twice-reason"), "worker-crashed")
        self.assertEqual(self.attr(letter, "twice-attempts"), "3")
        log = d.log_text()
        self.assertEqual(len(re.findall(r"killed by signal 11", log)), 2)
        self.assertRegex(log, r"attempt=3: taking over: the previous run crashed its worker")
        self.assertEqual(d.stop(), 0)

    def test_retries_are_counted_in_the_key_and_reported_by_the_dead_letter(self):
        # A RETRY keeps the key, released, with its run counted; the next run is
        # attempt 2 for api->attempt() and the log; REJECT then reports 2 attempts
        # and forgets the key, so a redriven copy runs afresh from attempt 1.
        url, dlq, dsn, port, conf = self.setup_tx("reject", max_attempts=5)
        d = self.start(conf)
        body = json.dumps({"id": "rj", "fail_until": 99, "retry_after": 3, "reject_from": 2})
        first = self.sqs.send(url, body)
        d.wait_log(r"msg=%s .*attempt=1: retry in 3s \(attempt 1 of 5" % first, timeout=20)
        twicetest.wait_until(lambda: self.key_row(dsn, "effect:rj") == ("released", 1),
                             timeout=5, message="the retried key keeps its count")
        d.wait_log(r"msg=%s .*attempt=2: dead-lettered \(rejected\)" % first, timeout=20)
        letter = self.letters(dlq)[0]
        self.assertEqual(self.attr(letter, "twice-reason"), "rejected")
        self.assertEqual(self.attr(letter, "twice-attempts"), "2")
        twicetest.wait_until(lambda: self.key_row(dsn, "effect:rj") is None, timeout=5,
                             message="a dead letter forgets the key")
        again = self.sqs.send(url, body)
        d.wait_log(r"msg=%s .*attempt=1: retry in 3s \(attempt 1 of 5" % again, timeout=20)
        self.assertEqual(d.stop(), 0)

    def test_a_transactional_plugins_own_sql_error_counts_and_names_its_sqlstate(self):
        # A transactional plugin's own statement that fails through its own fault (a
        # syntax error, 42601; a RAISE of a function, P0001), the plugin answering DONE
        # all the same: nothing of the run landed (its transaction aborted), and the
        # store is fine, so each run is an attempt of the job's, retried with the
        # backoff and dead-lettered as max-attempts after max_attempts (2), the reason
        # naming the statement's SQLSTATE and message (not the 25P02 of what followed
        # it). The store is not marked (no "store's fault"): its connection is kept.
        url, dlq, dsn, port, conf = self.setup_tx("plugsql", max_attempts=2, backoff=(1, 1))
        self.pg.query(dsn, "CREATE FUNCTION effect_rule() RETURNS void LANGUAGE plpgsql AS "
                           "$$ BEGIN RAISE EXCEPTION 'the rule says no'; END $$")
        d = self.start(conf)
        sent = {self.sqs.send(url, json.dumps({"id": "syntax", "bad_sql": "syntax"})):
                ("syntax", r'SQLSTATE 42601: syntax error at or near "SELEC"'),
                self.sqs.send(url, json.dumps({"id": "rule", "bad_sql": "raise"})):
                ("rule", "SQLSTATE P0001: the rule says no")}
        twicetest.wait_until(lambda: self.sqs.counts(dlq)[0] == 2, timeout=30,
                             message="the two jobs were not dead-lettered")
        letters = self.letters(dlq)
        self.assertEqual(len(letters), 2)
        log = d.log_text()
        for letter in letters:
            key, sqlstate = sent[self.attr(letter, "twice-source-message-id")]
            self.assertEqual(self.attr(letter, "twice-reason"), "max-attempts")
            self.assertEqual(self.attr(letter, "twice-attempts"), "2")
            error = self.attr(letter, "twice-error")
            self.assertIn("attempt 2 of 2 failed: ", error)
            self.assertIn("a statement of the plugin failed (%s)" % sqlstate, error)
            self.assertNotIn("25P02", error)
            self.assertRegex(log, r"key=effect:%s .*attempt=1: retry in \d+s \(attempt 1 of 2"
                             % key)
        self.assertEqual(self.effects(dsn), [], "nothing of the runs landed")
        self.assertNotIn("store's fault", log)
        self.assertNotIn("not counted", log)
        self.wait_empty(url)
        self.assertEqual(d.stop(), 0)


if __name__ == "__main__":
    unittest.main()
