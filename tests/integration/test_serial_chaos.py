"""The chaos run. 5,000 messages (20% duplicates by key) while
a random worker is killed every 2 s, PostgreSQL is restarted once and the
configuration is reloaded 3 times: every distinct key ends with exactly one effect
row (transactional plugin), the queue and the in-flight count end at zero, the DLQ
is empty. Prints the figures in one line.

The messages are sent over about 12 s, and the reloads and the restart happen on a
timetable inside that window, each waited for (a reload counts once twiced has logged
its outcome), so the run does not depend on how fast this machine is.

Soak mode, by hand: TWICE_CHAOS_MESSAGES=50000 ctest -R test_serial_chaos
(or run this file with the environment of scripts/testenv.sh)."""

import json
import os
import random
import signal
import subprocess
import threading
import time
import unittest

import psycopg2

import twicetest
import twiceconf as tc

MESSAGES = int(os.environ.get("TWICE_CHAOS_MESSAGES", "5000"))


class Chaos(twicetest.TwiceTestCase):
    def test_chaos(self):
        url, dlq = self.queue_pair("chaos")
        dsn = self.new_database("chaos")
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        port = tc.free_port()
        conf = tc.config(self.env, dsn,
                         [tc.queue("jobs", url, dlq, "effect-tx", concurrency=16,
                                   visibility_timeout=5, max_attempts=25, wait_time=1,
                                   backoff=(1, 5))],
                         [tc.plugin("effect-tx", tc.test_plugin(self.env, "effect_tx"))],
                         workers=3, metrics_port=port, drain_timeout=5)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1: 3/3", timeout=30)

        distinct = MESSAGES * 4 // 5
        keys = ["c%d" % i for i in range(distinct)]
        keys += [random.choice(keys) for _ in range(MESSAGES - distinct)]
        random.shuffle(keys)
        done = threading.Event()
        figures = {"kills": 0, "reloads": 0, "pg_restarts": 0}

        batches = [keys[i:i + 10] for i in range(0, len(keys), 10)]
        pace = 12.0 / len(batches)  # seconds per batch: the stream lasts about 12 s

        def produce():
            started = time.monotonic()
            for n, batch in enumerate(batches):
                self.sqs.send_batch(url, [json.dumps({"id": k}) for k in batch])
                ahead = started + (n + 1) * pace - time.monotonic()
                if ahead > 0:
                    time.sleep(ahead)

        def killer():
            while not done.wait(2):
                pids = d.worker_pids()
                if pids:
                    try:
                        os.kill(random.choice(pids), signal.SIGKILL)
                        figures["kills"] += 1
                    except ProcessLookupError:
                        pass

        def reload_once():
            mark = d.mark()
            d.signal(signal.SIGHUP)
            d.wait_log(r"reload (done|failed|refused)", since=mark, timeout=120)
            figures["reloads"] += 1

        def restart_postgres():
            subprocess.run(["bash", os.path.join(self.env.source_dir, "scripts", "testenv.sh"),
                            "pg-restart", self.env.run_dir], check=True, capture_output=True,
                           timeout=120)
            figures["pg_restarts"] += 1

        def events():
            started = time.monotonic()
            for at, event in ((2, reload_once), (4, restart_postgres), (6, reload_once),
                              (9, reload_once)):
                time.sleep(max(0, started + at - time.monotonic()))
                event()

        producer = threading.Thread(target=produce)
        agent = threading.Thread(target=killer)
        timetable = threading.Thread(target=events)
        t0 = time.monotonic()
        producer.start()
        agent.start()
        timetable.start()
        producer.join()
        timetable.join()

        def effects():
            try:
                return self.pg.query(dsn, "SELECT count(DISTINCT key), count(*) FROM effects")[0]
            except psycopg2.OperationalError:  # the restart: ask again later
                return (-1, -1)
        try:
            twicetest.wait_until(lambda: effects()[0] == distinct, timeout=max(300, MESSAGES / 20),
                                 interval=1, message="not every key ran")
        finally:
            done.set()
            agent.join()
        # The chaos is over (at least 3 reloads and one PostgreSQL restart happened).
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=120,
                             interval=1, message="the queue did not end empty")
        elapsed = time.monotonic() - t0
        keys_done, rows = effects()
        samples = tc.scrape(port)
        dups = tc.metric_sum(samples, "twice_duplicates_skipped_total", kind="completed")
        print("\nchaos: messages=%d distinct=%d kills=%d reloads=%d pg_restarts=%d "
              "duplicates_absorbed=%d effects=%d seconds=%.0f"
              % (MESSAGES, distinct, figures["kills"], figures["reloads"], figures["pg_restarts"],
                 dups, rows, elapsed))
        self.assertEqual(figures["reloads"], 3)
        self.assertGreaterEqual(tc.metric_sum(samples, "twice_reloads_total"), 3)
        self.assertEqual(figures["pg_restarts"], 1)
        self.assertGreater(figures["kills"], 0)
        self.assertEqual((keys_done, rows), (distinct, distinct), "exactly one effect per key")
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0), "the DLQ is empty")
        self.assertEqual(tc.metric_sum(samples, "twice_jobs_in_flight"), 0)
        self.assertTrue(d.running())
        self.assertEqual(d.stop(timeout=30), 0)


if __name__ == "__main__":
    unittest.main()
