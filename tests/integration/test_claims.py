"""How a worker fills its claims (issue 19): receives_per_claim gathers full receives into
one claim statement, and max_inflight lets a worker hold more messages than it has
handler threads. Both against the real emulator and PostgreSQL. A claim's size is read
from the rows themselves: every key one claim statement inserts gets that transaction's
now() as created_at, which the completion leaves alone."""

import json

import twicetest
import twiceconf as tc


class Claims(twicetest.TwiceTestCase):
    def start(self, prefix, n, sleep_ms=0, **queue_options):
        """n messages of distinct keys, all sent before twiced starts; twiced with
        effect_tx and one receiver. Returns (url, dlq, dsn, metrics port, twiced)."""
        url, dlq = self.queue_pair(prefix)
        dsn = self.new_database(prefix)
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        for i in range(0, n, 10):
            self.sqs.send_batch(url, [json.dumps({"id": "%s-%d" % (prefix, j),
                                                  "sleep_ms": sleep_ms})
                                      for j in range(i, min(n, i + 10))])
        port = tc.free_port()
        conf = tc.config(self.env, dsn,
                         [tc.queue(prefix, url, dlq, "fx", receivers=1, **queue_options)],
                         [tc.plugin("fx", tc.test_plugin(self.env, "effect_tx"))],
                         metrics_port=port)
        return url, dlq, dsn, port, self.start_twiced(conf)

    def drained(self, prefix, n, url, dlq, dsn, port, d):
        """Every message handled exactly once and deleted, nothing dead-lettered, and
        no message received twice. Returns the sizes of the claims, largest first."""
        twicetest.wait_until(lambda: self.pg.query(dsn, "SELECT count(*) FROM effects")[0][0]
                             >= n, timeout=60, message="not every message was handled")
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=20,
                             message="messages were not deleted")
        tc.wait_metric(port, "twice_messages_received_total", n)
        self.assertEqual(self.pg.query(dsn, "SELECT count(DISTINCT key), count(*) FROM effects"),
                         [(n, n)])
        self.assertEqual(self.pg.query(dsn, "SELECT count(*) FROM twice_idempotency"
                                            " WHERE state = 'completed'"), [(n,)])
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        self.assertEqual(d.stop(), 0)
        rows = self.pg.query(dsn, "SELECT count(*) FROM twice_idempotency GROUP BY created_at"
                                  " ORDER BY 1 DESC")
        return [r[0] for r in rows]

    def test_full_receives_are_claimed_together(self):
        url, dlq, dsn, port, d = self.start("gather", 60, concurrency=40, receives_per_claim=4)
        sizes = self.drained("gather", 60, url, dlq, dsn, port, d)
        # A receive brings at most 10: a larger claim gathered several.
        self.assertGreater(sizes[0], 10, sizes)
        self.assertLessEqual(sizes[0], 40, sizes)  # never more than the free slots

    def test_one_receive_per_claim_by_default(self):
        url, dlq, dsn, port, d = self.start("single", 60, concurrency=40)
        sizes = self.drained("single", 60, url, dlq, dsn, port, d)
        self.assertLessEqual(sizes[0], 10, sizes)

    def test_messages_beyond_the_handler_threads_wait_hidden(self):
        # Two handler threads, 16 messages held: the last waits about 4.8 s for a thread,
        # beyond the 4 s visibility timeout; the heartbeat keeps it hidden (the received
        # count stays 16) and its key leased (nothing runs twice). Not 2 s: the heartbeat
        # ticks each second and extends at half the timeout, which left no margin under
        # ThreadSanitizer (a CI run received 8 of them again).
        url, dlq, dsn, port, d = self.start("held", 16, sleep_ms=600, concurrency=2,
                                            max_inflight=16, receives_per_claim=2,
                                            visibility_timeout=4)
        sizes = self.drained("held", 16, url, dlq, dsn, port, d)
        # Claims are bound by max_inflight, not by the two threads.
        self.assertGreater(sizes[0], 2, sizes)
        peak = self.pg.query(dsn, "SELECT max(c) FROM (SELECT count(*) AS c FROM effects a"
                                  " JOIN effects b ON b.at BETWEEN a.at - interval '350 ms'"
                                  " AND a.at GROUP BY a.key) x")[0][0]
        self.assertLessEqual(peak, 2 + 1)  # about two handlers at a time, never sixteen

    def test_a_drain_gives_back_what_waits_for_a_thread(self):
        url, dlq, dsn, port, d = self.start("drain", 20, sleep_ms=500, concurrency=2,
                                            max_inflight=20, visibility_timeout=30)
        twicetest.wait_until(lambda: self.pg.query(dsn, "SELECT count(*) FROM effects")[0][0]
                             >= 2, timeout=30, message="no message was handled")
        # Far more received than the two threads have run: the rest wait for a thread
        # (with slots bound by the threads, received would be handled + 2).
        received = tc.metric_sum(tc.scrape(port), "twice_messages_received_total")
        self.assertGreaterEqual(received, 10)
        self.assertEqual(d.stop(), 0)
        done = self.pg.query(dsn, "SELECT count(*) FROM effects")[0][0]
        self.assertLess(done, 20)  # the stop did not wait for every held message
        # What waited was given back at once, not left hidden for the visibility timeout:
        # a second twiced finishes the rest well within it.
        port2 = tc.free_port()
        conf = tc.config(self.env, dsn,
                         [tc.queue("drain", url, dlq, "fx", receivers=1, concurrency=4,
                                   visibility_timeout=30)],
                         [tc.plugin("fx", tc.test_plugin(self.env, "effect_tx"))],
                         metrics_port=port2)
        d2 = self.start_twiced(conf)
        twicetest.wait_until(lambda: self.pg.query(dsn, "SELECT count(*) FROM effects")[0][0]
                             >= 20, timeout=20, message="held messages were not given back")
        self.assertEqual(self.pg.query(dsn, "SELECT count(DISTINCT key), count(*) FROM effects"),
                         [(20, 20)])
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=20,
                             message="messages were not deleted")
        self.assertEqual(d2.stop(), 0)


if __name__ == "__main__":
    import unittest
    unittest.main()
