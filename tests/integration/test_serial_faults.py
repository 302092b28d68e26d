"""PostgreSQL restarted in the middle of a stream. Real servers. Runs alone
(RUN_SERIAL): it restarts the run's PostgreSQL. The SQS endpoint's faults, which
need nothing restarted, are in test_sqs_faults.py."""

import json
import os
import subprocess
import threading
import time
import unittest

import twicetest
import twiceconf as tc


def restart_postgres(env):
    script = os.path.join(env.source_dir, "scripts", "testenv.sh")
    subprocess.run(["bash", script, "pg-restart", env.run_dir], check=True,
                   capture_output=True, timeout=120)


class Faults(twicetest.TwiceTestCase):
    def test_postgres_restart_in_the_middle_of_2000_messages(self):
        url, dlq = self.queue_pair("pgrestart")
        dsn = self.new_database("pgrestart")
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        conf = tc.config(self.env, dsn,
                         [tc.queue("jobs", url, dlq, "effect-tx", concurrency=8,
                                   visibility_timeout=10, max_attempts=5)],
                         [tc.plugin("effect-tx", tc.test_plugin(self.env, "effect_tx"))],
                         workers=2)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        total = 2000

        def produce():
            for i in range(0, total, 10):
                self.sqs.send_batch(url, [json.dumps({"id": "p%d" % n})
                                          for n in range(i, i + 10)])
                time.sleep(0.05)

        producer = threading.Thread(target=produce)
        producer.start()
        twicetest.wait_until(lambda: self.distinct_effects(dsn)[0] >= 300, timeout=60)
        restart_postgres(self.env)
        producer.join()
        twicetest.wait_until(lambda: self.distinct_effects(dsn)[0] == total, timeout=180,
                             message="not every key ran after the restart")
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=60)
        distinct, rows = self.distinct_effects(dsn)
        self.assertEqual((distinct, rows), (total, total), "exactly one effect per key")
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0), "nothing dead-lettered by the outage")
        log = d.log_text()
        self.assertRegex(log, r"idempotency store unreachable, not receiving until it is back")
        self.assertRegex(log, r"idempotency store reachable again; receiving")
        self.assertTrue(d.running())
        self.assertEqual(d.stop(timeout=30), 0)


if __name__ == "__main__":
    unittest.main()
