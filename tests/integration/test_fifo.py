"""FIFO queues, against the emulator's FIFO support: jobs of one
MessageGroupId run one at a time and in order, groups run concurrently, a RETRY holds
back the rest of its group until the retried message is done, every receive carries a
ReceiveRequestAttemptId, and a dead letter keeps its group id with a fresh deduplication
id. Effects are rows of the transactional fixture effect_tx, keyed GROUP-SEQ; their
commit times give the order. SQS requests pass through fakeaws.SqsProxy, which records
them (and checks their signatures)."""

import collections
import copy
import json
import re
import unittest

import fakeaws
import twicetest
import twiceconf as tc

EFFECT_TX = "effect-tx"
GROUPS = ("alpha", "beta", "gamma")
PER_GROUP = 50
RETRIED = 17  # in each group, this message fails twice, then succeeds


class Fifo(twicetest.TwiceTestCase):
    def setUp(self):
        super().setUp()
        ledger = fakeaws.Ledger()
        ledger.add(twicetest.TEST_ACCESS_KEY_ID, twicetest.TEST_SECRET_ACCESS_KEY)
        self.proxy = fakeaws.SqsProxy(ledger, self.env.sqs_endpoint).start()
        self.addCleanup(self.proxy.stop)

    def setup_fifo(self, prefix, **queue_options):
        url, dlq = self.queue_pair(prefix, fifo=True)
        dsn = self.new_database(prefix)
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        port = tc.free_port()
        proxied = copy.copy(self.env)
        proxied.sqs_endpoint = self.proxy.url
        options = {"concurrency": 8, "visibility_timeout": 10, "max_attempts": 10,
                   "backoff": (1, 2)}
        options.update(queue_options)
        conf = tc.config(proxied, dsn, [tc.queue(prefix, url, dlq, EFFECT_TX, **options)],
                         [tc.plugin(EFFECT_TX, tc.test_plugin(self.env, "effect_tx"))],
                         metrics_port=port)
        return url, dlq, dsn, port, conf

    def effects(self, dsn):
        """(group, seq, attempt, at) in commit order."""
        rows = self.pg.query(dsn, "SELECT key, attempt, at FROM effects ORDER BY at, key")
        out = []
        for key, attempt, at in rows:
            m = re.fullmatch(r"effect:(\w+)-(\d+)", key)
            self.assertIsNotNone(m, key)
            out.append((m.group(1), int(m.group(2)), attempt, at))
        return out

    def send_in_order(self, url):
        """50 messages per group, each group's in sequence order, the groups' batches
        interleaved: alpha 0-9, beta 0-9, gamma 0-9, alpha 10-19, ..."""
        for start in range(0, PER_GROUP, 10):
            for g in GROUPS:
                batch = []
                for seq in range(start, start + 10):
                    body = {"id": "%s-%03d" % (g, seq), "sleep_ms": 20}
                    if seq == RETRIED:
                        body["fail_until"] = 3
                    batch.append({"body": json.dumps(body), "group": g,
                                  "dedup": "%s-%03d" % (g, seq)})
                self.sqs.send_batch(url, batch)

    def test_three_groups_in_order_concurrently_with_retries(self):
        url, dlq, dsn, port, conf = self.setup_fifo("fifo-order")
        self.send_in_order(url)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        total = len(GROUPS) * PER_GROUP
        twicetest.wait_until(lambda: len(self.effects(dsn)) >= total, timeout=180,
                             interval=0.5, message="not every message was processed")
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=30)
        rows = self.effects(dsn)
        self.assertEqual(len(rows), total, "one effect per message")

        by_group = collections.defaultdict(list)
        for g, seq, attempt, _ in rows:
            by_group[g].append((seq, attempt))
        for g in GROUPS:
            self.assertEqual([s for s, _ in by_group[g]], list(range(PER_GROUP)),
                             "group %s ran out of order" % g)
            self.assertEqual(dict(by_group[g])[RETRIED], 3, "retried twice, done on the third")
            # Retried in place, its runs are counted with the key all the same.
            key = "effect:%s-%03d" % (g, RETRIED)
            self.assertEqual(self.pg.query(dsn, "SELECT state, attempts FROM twice_idempotency "
                                                "WHERE idempotency_key = %s", (key,)),
                             [("completed", 3)])

        # Concurrently across groups: their runs overlap in time and interleave.
        spans = {g: (min(r[3] for r in rows if r[0] == g), max(r[3] for r in rows if r[0] == g))
                 for g in GROUPS}
        self.assertLess(max(s[0] for s in spans.values()), min(s[1] for s in spans.values()),
                        "every group started before any finished: %s" % spans)
        switches = sum(1 for a, b in zip(rows, rows[1:]) if a[0] != b[0])
        self.assertGreaterEqual(switches, 50, "groups interleave")

        retries = re.findall(r"retry in \d+s \(attempt (\d+) of 10", d.log_text())
        self.assertEqual(sorted(retries), ["1", "1", "1", "2", "2", "2"])
        # The acker counts a job after its delete returns: the queue can be empty a
        # moment before the last jobs are counted.
        twicetest.wait_until(lambda: tc.metric_sum(tc.scrape(port), "twice_jobs_finished_total",
                                                   outcome="done") >= total, timeout=10,
                             message="not every job was counted done")
        samples = tc.scrape(port)
        self.assertEqual(tc.metric_sum(samples, "twice_jobs_finished_total", outcome="retry"), 6)
        self.assertEqual(tc.metric_sum(samples, "twice_jobs_finished_total", outcome="done"),
                         total)

        receives = [json.loads(r.body) for r in self.proxy.requests()
                    if r.target == "ReceiveMessage"]
        self.assertTrue(receives)
        ids = [b.get("ReceiveRequestAttemptId") for b in receives]
        self.assertNotIn(None, ids, "every FIFO receive names its attempt")
        self.assertEqual(len(set(ids)), len(ids), "a new attempt id for each new receive")
        self.assertEqual(self.proxy.refused(), [])
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        self.assertEqual(d.stop(), 0)

    def test_dead_letter_keeps_its_group_with_a_fresh_dedup_id(self):
        url, dlq, dsn, port, conf = self.setup_fifo("fifo-dlq")
        entries = [{"body": json.dumps({"id": "delta-000"}), "group": "delta", "dedup": "d0"},
                   {"body": json.dumps({"id": "delta-001", "reject": True}), "group": "delta",
                    "dedup": "d1"},
                   {"body": json.dumps({"id": "delta-002"}), "group": "delta", "dedup": "d2"}]
        ids = self.sqs.send_batch(url, entries)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        letters = []

        def collect():
            letters.extend(self.sqs.receive(dlq, max=10, visibility=60))
            return letters
        twicetest.wait_until(collect, timeout=30, message="no dead letter")
        twicetest.wait_until(lambda: len(self.effects(dsn)) == 2, timeout=30)
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=30)
        self.assertEqual(len(letters), 1)
        m = letters[0]
        self.assertEqual(m["Attributes"]["MessageGroupId"], "delta")
        self.assertNotEqual(m["Attributes"].get("MessageDeduplicationId"), "d1")
        self.assertTrue(m["Attributes"].get("MessageDeduplicationId"))
        self.assertEqual(m["MessageAttributes"]["twice-source-message-id"]["StringValue"],
                         ids[1])
        self.assertEqual(m["MessageAttributes"]["twice-reason"]["StringValue"], "rejected")
        # The rest of the group went on after the rejected message, in order.
        self.assertEqual([(g, s) for g, s, _, _ in self.effects(dsn)],
                         [("delta", 0), ("delta", 2)])
        self.assertEqual(d.stop(), 0)


if __name__ == "__main__":
    unittest.main()
