"""The idempotency guard when PostgreSQL loses a connection: a statement whose answer
never arrived may have committed, and what twice does next must follow what the key's
row says, not the lost answer. A dead letter the DLQ keeps failing must not leave its
key in progress. And a job that finished while PostgreSQL was gone must not run again
because its worker stopped (SIGTERM, a reload's drain) before the completion could be
written (its follow-ups then sent straight to SQS, each once), nor because PostgreSQL
stayed away longer than the acknowledger's tries (a failover) while its worker ran on.
A server that takes no writes after a failover, and a store that refuses claims while
its connection stays up (a revoked grant, a statement_timeout set for twiced's role), are
waited for, not a reason to dead-letter the messages that arrive meanwhile; connections
the server ended while
idle are connected again before a job needs them.
Real PostgreSQL (behind faultproxy.TcpProxy, which can lose one answer after its
statement committed) and the SQS emulator (behind faultproxy.FaultProxy, to fail
SendMessage); effects are lines (effect_file) or rows (effect_tx) that the tests count."""

import datetime
import hashlib
import json
import os
import re
import signal
import tempfile
import threading
import time
import urllib.parse

import faultproxy
import twicetest
import twiceconf as tc

PLUGIN = "effect-file"


class Guard(twicetest.TwiceTestCase):
    def setup_proxied(self, prefix, drain_timeout=10, **queue_options):
        """A queue pair, a database reached through a TcpProxy, and twiced running
        effect_file on it. Returns (url, dlq, dsn, proxy, effects file, metrics port,
        twiced); the configuration is self.conf."""
        url, dlq, dsn, proxy, effects, port = self.conf_proxied(prefix, drain_timeout,
                                                               **queue_options)
        d = self.start_twiced(self.conf)
        d.wait_log(r"ready: generation 1: 1/1", timeout=20)
        return url, dlq, dsn, proxy, effects, port, d

    def conf_proxied(self, prefix, drain_timeout=10, **queue_options):
        """setup_proxied's queues, database, proxy and configuration (self.conf; its
        pid file self.pid_file), twiced not started. Returns (url, dlq, dsn, proxy,
        effects file, metrics port)."""
        url, dlq = self.queue_pair(prefix)
        dsn = self.new_database(prefix)
        proxy = faultproxy.TcpProxy(self.env.pg_host, self.env.pg_port)
        self.addCleanup(proxy.close)
        via = dsn.replace(":%d/" % self.env.pg_port, ":%d/" % proxy.port)
        effects = os.path.join(tempfile.mkdtemp(dir=self.env.run_dir), "effects.txt")
        self.pid_file = os.path.join(os.path.dirname(effects), "twiced.pid")
        port = tc.free_port()
        conf = tc.config(self.env, via, [tc.queue(prefix, url, dlq, PLUGIN, **queue_options)],
                         [tc.plugin(PLUGIN, tc.test_plugin(self.env, "effect_file"),
                                    file=effects)], metrics_port=port,
                         drain_timeout=drain_timeout,
                         extra=tc.setting("pid_file", self.pid_file))
        self.conf = conf
        return url, dlq, dsn, proxy, effects, port

    @staticmethod
    def lines(path):
        """(key, message id, attempt) of each effect line, in order."""
        try:
            with open(path) as f:
                return [tuple(line.split()) for line in f.read().splitlines()]
        except FileNotFoundError:
            return []

    def key_row(self, dsn, key):
        rows = self.pg.query(dsn, "SELECT state, owner IS NULL, attempts FROM twice_idempotency"
                                  " WHERE idempotency_key = %s", (key,))
        return rows[0] if rows else None

    @staticmethod
    def log_time(stamp):
        """Seconds of a log line's timestamp (2026-12-06T08:56:10.598Z)."""
        return datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()

    def wait_empty(self, url, timeout=20):
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=timeout,
                             message="queue %s did not end empty" % url)

    def test_a_claim_whose_answer_was_lost_runs_at_once(self):
        # The claim commits (the key is in progress under this worker), then the
        # connection is cut before its answer arrives. A claim is idempotent, so the
        # receiver claims again at once on a new connection and gets the key: the
        # job runs now, once, as attempt 1 - not after its own lease lapses (the
        # visibility timeout, 30 s here), nor twice.
        url, dlq, dsn, proxy, effects, port, d = self.setup_proxied(
            "lostclaim", visibility_timeout=30)
        proxy.cut_answer(b"effect:lostclaim-1")
        began = time.monotonic()
        self.sqs.send(url, json.dumps({"id": "lostclaim-1"}))
        twicetest.wait_until(lambda: self.lines(effects), timeout=10,
                             message="the job did not run within 10 s of its lost claim")
        self.assertLess(time.monotonic() - began, 10)
        self.assertEqual(proxy.cuts, 1, "the claim's answer was lost")
        self.wait_empty(url)
        self.assertEqual([(k, a) for k, _, a in self.lines(effects)],
                         [("effect:lostclaim-1", "1")])
        self.assertEqual(self.key_row(dsn, "effect:lostclaim-1"), ("completed", True, 1))
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        self.assertEqual(d.stop(), 0)

    def test_a_claim_whose_answer_was_lost_twice_runs_when_its_message_comes_back(self):
        # The claim commits and its answer is lost, and so is the answer of the same
        # claim sent again on a new connection (a flapping link): the receiver gives
        # the messages back, their keys in progress under this worker with no job
        # running them. When a message comes back, the worker's claim names the lost
        # claim's token and takes its key back at once: the job runs once, as attempt
        # 1, within seconds - it used to wait for its own lease (30 s here). A copy of
        # a message whose job runs is still not run beside it (the first test of
        # test_attempts covers a copy received while its job runs).
        url, dlq, dsn, proxy, effects, port, d = self.setup_proxied(
            "lost2claim", visibility_timeout=30)
        for n in (1, 2):
            proxy.cut_answer(b"effect:lost2claim-%d" % n, times=2)
            began = time.monotonic()
            self.sqs.send(url, json.dumps({"id": "lost2claim-%d" % n}))
            twicetest.wait_until(lambda: len(self.lines(effects)) == n, timeout=15,
                                 message="job %d did not run within 15 s of its lost "
                                         "claims" % n)
            self.assertLess(time.monotonic() - began, 15)
            self.assertEqual(proxy.cuts, 2 * n, "both answers of claim %d were lost" % n)
        d.wait_log(r"queue lost2claim: claiming 1 key failed, giving the messages back: "
                   r"claim .*\(on a new connection, after: claim ", timeout=5)
        self.wait_empty(url)
        self.assertEqual([(k, a) for k, _, a in self.lines(effects)],
                         [("effect:lost2claim-1", "1"), ("effect:lost2claim-2", "1")])
        for n in (1, 2):
            self.assertEqual(self.key_row(dsn, "effect:lost2claim-%d" % n),
                             ("completed", True, 1))
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        self.assertNotIn("held by a live lease", d.log_text())
        self.assertEqual(d.stop(), 0)

    def test_a_reject_after_postgresql_dropped_the_connection_is_not_counted(self):
        # A transactional plugin whose statement failed because PostgreSQL ended its
        # connection mid-run (a failover, pg_terminate_backend), and which answers that
        # failure with REJECT: its statements failed with the connection, so the run is
        # the store's, not the job's. The message is given back uncounted and runs again
        # once, as attempt 1. It used to be dead-lettered at once (max_attempts 1 here),
        # a good message lost to the DLQ by a failover.
        url, dlq = self.queue_pair("lostreject")
        dsn = self.new_database("lostreject")
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        db = dsn.rsplit("/", 1)[1]
        conf = tc.config(self.env, dsn, [tc.queue("lostreject", url, dlq, "effect-tx",
                                                  max_attempts=1)],
                         [tc.plugin("effect-tx", tc.test_plugin(self.env, "effect_tx"))])
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1: 1/1", timeout=20)
        mark = d.mark()
        self.sqs.send(url, json.dumps({"id": "lostreject-1", "sleep_ms": 1500,
                                       "sql_reject": True}))

        def in_transaction():  # the handler's, open while the plugin sleeps
            return self.pg.query(self.env.pg_dsn, "SELECT count(*) FROM pg_stat_activity "
                                 "WHERE datname = %s AND state = 'idle in transaction'",
                                 (db,))[0][0] > 0
        twicetest.wait_until(in_transaction, timeout=10,
                             message="the handler's transaction did not begin")
        self.pg.query(self.env.pg_dsn, "SELECT count(pg_terminate_backend(pid)) FROM "
                                       "pg_stat_activity WHERE datname = %s", (db,))
        d.wait_log(r"transaction lost with the connection \(.*\); giving the message back "
                   r"\(not counted\)", since=mark, timeout=15)
        twicetest.wait_until(lambda: self.distinct_effects(dsn)[0] == 1, timeout=20,
                             message="the job did not run again after its lost transaction")
        self.wait_empty(url)
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0), "nothing dead-lettered")
        self.assertEqual(self.key_row(dsn, "effect:lostreject-1"), ("completed", True, 1))
        self.assertEqual(d.stop(), 0)

    def test_a_claim_answered_but_not_committed_is_not_taken(self):
        # The claim runs on PostgreSQL and its rows are on their way, but its
        # implicit transaction commits only at the Sync that follows it, and the
        # server ends the connection before then (pg_terminate_backend): it sends the
        # claim's rows, then its goodbye, and rolls the claim back. The claim failed
        # with its connection: the receiver claims again at once on a new one and the
        # job runs once, as attempt 1, its key completed. It used to take the rows for
        # a claim: the job ran on a key nobody held, its completion found no row
        # ("another worker took the key over") and its message came back after its
        # visibility timeout to run a second time.
        url, dlq, dsn, proxy, effects, port, d = self.setup_proxied(
            "uncommitted", visibility_timeout=30)
        proxy.hold_sync(b"effect:uncommitted-1")
        self.sqs.send(url, json.dumps({"id": "uncommitted-1"}))
        self.assertTrue(proxy.sync_held.wait(10), "the claim's Sync was held back")
        time.sleep(0.3)  # the claim has run and waits for its Sync
        self.pg.query(self.env.pg_dsn, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                                       " WHERE datname = %s AND application_name = 'twice'",
                      (dsn.rsplit("/", 1)[1],))
        twicetest.wait_until(lambda: self.lines(effects), timeout=10,
                             message="the job did not run within 10 s of its claim")
        self.wait_empty(url, timeout=10)
        self.assertNotIn("took the key over", d.log_text())
        self.assertEqual([(k, a) for k, _, a in self.lines(effects)],
                         [("effect:uncommitted-1", "1")])
        self.assertEqual(self.key_row(dsn, "effect:uncommitted-1"), ("completed", True, 1))
        self.assertEqual(d.stop(), 0)

    def test_a_store_that_freezes_mid_run_gives_the_claimed_messages_back(self):
        # Three jobs run, then PostgreSQL freezes as the next batch's claim reaches it:
        # the connection stays open and nothing answers. The claim used to wait for
        # ever: its messages came back only at their visibility timeout, to a receiver
        # that blocked on the next claim as well. Now it is given up as a claim that
        # failed after a third of the visibility timeout (4 s: the least, 2 s): its
        # messages are given back at once, the receiver reconnects with a backoff, the
        # worker stays up and /readyz says the store does not answer. Once it thaws,
        # the given-up claim reaches the server and commits (the proxy forwards what
        # waited): a lease of this worker's that nothing runs under, so its key is
        # hidden until that lease lapses (4 + 2 s) and then taken over. Every key runs
        # exactly once.
        url, dlq, dsn, proxy, effects, port, d = self.setup_proxied(
            "frozenclaim", visibility_timeout=4)
        for i in range(1, 4):
            self.sqs.send(url, json.dumps({"id": "frozenclaim-%d" % i}))
        twicetest.wait_until(lambda: len(self.lines(effects)) == 3, timeout=10,
                             message="the first jobs did not run")
        self.assertEqual(tc.http_status(port, "/readyz")[0], 200)
        proxy.freeze_on(b"twice_claim_")
        for i in range(4, 7):
            self.sqs.send(url, json.dumps({"id": "frozenclaim-%d" % i}))
        twicetest.wait_until(lambda: proxy.frozen, timeout=5, message="no claim froze")
        d.wait_log(r"error .*queue frozenclaim: claiming \d keys? failed, giving the messages "
                   r"back: claim \(table twice_idempotency\): no answer from PostgreSQL within "
                   r"2 s", timeout=5)
        twicetest.wait_until(lambda: self.sqs.counts(url)[0] >= 1, timeout=3,
                             message="the messages were not given back before their "
                                     "visibility timeout")
        twicetest.wait_until(lambda: (lambda r: r[0] == 503 and r[1].startswith(
            "idempotency store "))(tc.http_status(port, "/readyz")), timeout=12,
            message="/readyz did not say that PostgreSQL does not answer")
        self.assertGreaterEqual(tc.metric_sum(tc.scrape(port), "twice_pg_errors_total",
                                              operation="claim"), 1)
        self.assertTrue(d.running())
        self.assertNotIn("exited", d.log_text())
        proxy.thaw()
        self.wait_empty(url, timeout=20)
        self.assertEqual(sorted(k for k, _, _ in self.lines(effects)),
                         ["effect:frozenclaim-%d" % i for i in range(1, 7)], "each once")
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        self.assertEqual(d.stop(), 0)

    def test_a_completion_whose_answer_was_lost_is_done(self):
        # The acknowledger's completion commits, then the connection is cut before
        # its answer arrives. Sent again on a new connection it finds the key no
        # longer in progress under this worker; the key reads completed by this very
        # message, so that completion was ours: the message is deleted now and the
        # job counted done - not "lease lost", left to come back as a duplicate
        # after its visibility timeout (30 s).
        url, dlq, dsn, proxy, effects, port, d = self.setup_proxied(
            "lostdone", visibility_timeout=30)
        self.sqs.send(url, json.dumps({"id": "lostdone-1", "sleep_ms": 1500}))
        twicetest.wait_until(lambda: tc.metric_sum(tc.scrape(port), "twice_jobs_in_flight"),
                             timeout=10, message="the job never started")
        proxy.cut_answer(b"twice_complete_")
        began = time.monotonic()
        self.wait_empty(url, timeout=10)
        self.assertLess(time.monotonic() - began, 10)
        self.assertEqual(proxy.cuts, 1, "the completion's answer was lost")
        d.wait_log(r"info .*key=effect:lostdone-1 .*the completion's answer was lost with the "
                   r"connection, and the key reads completed by this message: done")
        self.assertEqual([(k, a) for k, _, a in self.lines(effects)],
                         [("effect:lostdone-1", "1")])
        self.assertEqual(self.key_row(dsn, "effect:lostdone-1"), ("completed", True, 1))
        tc.wait_metric(port, "twice_jobs_finished_total", 1, outcome="done")
        log = d.log_text()
        self.assertNotIn("lease lost", log)
        self.assertNotIn("duplicate", log)
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        self.assertEqual(d.stop(), 0)

    def test_a_store_that_hangs_does_not_hold_up_the_heartbeat(self):
        # PostgreSQL stops answering while a job runs longer than its visibility
        # timeout (4 s), twice over. First its connections are cut, and a new one is
        # accepted and never answered: the acknowledger's reconnect used to wait for
        # it on the heartbeat's thread (connect_timeout, 10 s). Then, once it has
        # connected again, the server freezes on that established connection (a
        # stopped backend, a stalled pooler: the socket stays open, nothing comes
        # back) while the heartbeat's lease extension is on it: the statement used to
        # hold the heartbeat for as long as the server stayed frozen. Either way the
        # message's visibility was not extended in time: it came back and was
        # received again while its job still ran. Now the visibility is extended
        # while the acknowledger waits on PostgreSQL: the message stays hidden, is
        # received once and handled once, and the job completes once the store
        # answers again.
        url, dlq, dsn, proxy, effects, port, d = self.setup_proxied(
            "hangstore", visibility_timeout=4)
        self.sqs.send(url, json.dumps({"id": "hang-1", "sleep_ms": 14000}))
        twicetest.wait_until(lambda: tc.metric_sum(tc.scrape(port), "twice_jobs_in_flight"),
                             timeout=10, message="the job never started")

        def received_once_for(seconds):
            began = time.monotonic()
            while time.monotonic() - began < seconds:
                self.assertEqual(
                    tc.metric_sum(tc.scrape(port), "twice_messages_received_total"), 1,
                    "the message came back while its job ran")
                time.sleep(0.25)

        proxy.hang()
        received_once_for(5.5)  # past a visibility timeout
        proxy.resume()
        # The acknowledger's own line (a receiver's says "queue ...: idempotency store
        # reachable again" and may come first: frozen then, the acknowledger's new
        # connection would wait unsent, and no lease extension would reach the server).
        d.wait_log(r"\]: idempotency store reachable again", timeout=10)
        # The server freezes as the next lease extension reaches it. (A freeze() right
        # after the line raced the extension the reconnect sends at once: when the
        # freeze held that one's answer, no later extension was sent, and the test
        # saw none reach the frozen server.)
        proxy.freeze_on(b"twice_extend_")
        twicetest.wait_until(lambda: proxy.frozen, timeout=8,
                             message="no lease extension reached the server")
        received_once_for(6)  # past a visibility timeout, the extension stuck
        self.assertIn(b"twice_extend_", proxy.frozen_requests,
                      "the lease extension was sent to the frozen server")
        proxy.thaw()
        self.wait_empty(url, timeout=20)
        self.assertEqual([(k, a) for k, _, a in self.lines(effects)], [("effect:hang-1", "1")])
        self.assertEqual(tc.metric_sum(tc.scrape(port), "twice_messages_received_total"), 1)
        self.assertEqual(self.key_row(dsn, "effect:hang-1"), ("completed", True, 1))
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        self.assertEqual(d.stop(), 0)

    def flow(self, prefix, fault):
        """60 messages sent over 2 s while fault(proxy, dsn, stop) runs again and
        again on a thread until stop is set: each must be handled once, as attempt 1, within 20 s of the first -
        none waits out its visibility timeout (30 s). Returns the proxy."""
        url, dlq, dsn, proxy, effects, port, d = self.setup_proxied(
            prefix, visibility_timeout=30, concurrency=8)
        stop = threading.Event()

        def faults():
            while not stop.is_set():
                fault(proxy, dsn, stop)
            proxy.cut_answer(None)

        thread = threading.Thread(target=faults)
        thread.start()
        self.addCleanup(stop.set)
        total = 60
        began = time.monotonic()
        try:
            for i in range(0, total, 10):
                self.sqs.send_batch(url, [json.dumps({"id": "%s-%d" % (prefix, n),
                                                      "sleep_ms": 50})
                                          for n in range(i, i + 10)])
                time.sleep(0.3)
            twicetest.wait_until(lambda: len(self.lines(effects)) >= total, timeout=20,
                                 message="not every message ran within 20 s")
        finally:
            stop.set()
            thread.join()
        self.assertLess(time.monotonic() - began, 20)
        self.wait_empty(url)
        done = self.lines(effects)
        self.assertEqual(sorted(k for k, _, _ in done),
                         sorted("effect:%s-%d" % (prefix, n) for n in range(total)),
                         "each ran once")
        self.assertEqual({a for _, _, a in done}, {"1"})
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        self.assertEqual(d.stop(), 0)
        return proxy

    def test_connections_cut_while_messages_flow_delay_nothing(self):
        # PostgreSQL ends twiced's connections again and again (pg_terminate_backend,
        # as an operator, a pooler or a failover does) while messages flow.
        cuts = []

        def terminate(proxy, dsn, stop):
            cuts.append(self.pg.query(
                self.env.pg_dsn, "SELECT count(pg_terminate_backend(pid)) FROM "
                                 "pg_stat_activity WHERE datname = %s AND "
                                 "application_name = 'twice'", (dsn.rsplit("/", 1)[1],))[0][0])
            # Not faster: a reconnect (TCP, SCRAM, its statements) on a loaded machine
            # takes longer than 0.15 s, and cut that often the store never comes back
            # until the cuts stop (seen under CI's load: receivers waited 20 s).
            time.sleep(0.5)

        self.flow("flowcut", terminate)
        self.assertGreater(sum(cuts), 5, "connections were cut")

    def test_claims_losing_answers_while_messages_flow_delay_nothing(self):
        # Claims commit and lose their answers with their connections again and
        # again while messages flow (one every 0.3 s at most).
        def lose_a_claim_answer(proxy, dsn, stop):
            before = proxy.cuts
            proxy.cut_answer(b"twice_claim_")
            while proxy.cuts == before and not stop.is_set():
                time.sleep(0.05)
            time.sleep(0.3)

        proxy = self.flow("flowlost", lose_a_claim_answer)
        self.assertGreater(proxy.cuts, 2, "claims lost their answers")

    def test_a_dead_letter_the_dlq_keeps_failing_releases_its_key(self):
        # max_attempts 1: the job's only run fails, so it is dead-lettered; the DLQ
        # answers every SendMessage with ExpiredToken (credentials that a refresh
        # fixes: worth trying again, like a 500) until the acknowledger gives up
        # (ack_tries 3: after about 3 s). The run is recorded and the key released at once, the message
        # given back for a while: when it comes back it is dead-lettered at its
        # claim, without running again - not left in progress until its lease
        # lapses and then run once more as if its worker had hung.
        sqs = faultproxy.FaultProxy(*faultproxy.split_endpoint(self.env.sqs_endpoint))
        self.addCleanup(sqs.close)
        url, dlq = self.queue_pair("dlqdown")
        dsn = self.new_database("dlqdown")
        effects = os.path.join(tempfile.mkdtemp(dir=self.env.run_dir), "effects.txt")
        port = tc.free_port()
        conf = tc.config(self.env, dsn, [tc.queue("dlqdown", url, dlq, PLUGIN, max_attempts=1,
                                                  visibility_timeout=4, ack_tries=3)],
                         [tc.plugin(PLUGIN, tc.test_plugin(self.env, "effect_file"),
                                    file=effects)], endpoint=sqs.endpoint, lease_margin=1,
                         metrics_port=port)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1: 1/1", timeout=20)
        sqs.answer(400, "ExpiredToken", "The security token included in the request is expired",
                   query_code="ExpiredToken;Sender", only="SendMessage")
        self.sqs.send(url, json.dumps({"id": "dlqdown-1", "fail_until": 9}))
        d.wait_log(r"error .*attempt=1: the dead-letter queue could not take the dead letter "
                   r"for now: \(max-attempts\) SendMessage: ExpiredToken: .*; giving the "
                   r"message back for 300s, its key released with its runs", timeout=60)
        self.assertEqual(self.key_row(dsn, "effect:dlqdown-1"), ("released", True, 1))
        time.sleep(7)  # past the visibility timeout and the lease
        self.assertNotIn("taking over", d.log_text())
        self.assertEqual(tc.metric_sum(tc.scrape(port), "twice_handler_duration_seconds_count"),
                         1, "it ran once")
        self.assertEqual(self.key_row(dsn, "effect:dlqdown-1"), ("released", True, 1))
        self.assertEqual(self.sqs.counts(url)[1], 1, "given back, hidden")
        self.assertEqual(self.lines(effects), [])
        self.assertEqual(d.stop(), 0)

    def test_a_transaction_whose_commit_answer_was_lost_is_done(self):
        # A transactional job's COMMIT (its effect and its key's completion) commits,
        # then the connection is cut before the answer arrives. On a new connection the
        # key reads completed by this message: the job is done and its message
        # deleted now - not given back to come back as a duplicate.
        url, dlq = self.queue_pair("losttx")
        dsn = self.new_database("losttx")
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        proxy = faultproxy.TcpProxy(self.env.pg_host, self.env.pg_port)
        self.addCleanup(proxy.close)
        via = dsn.replace(":%d/" % self.env.pg_port, ":%d/" % proxy.port)
        port = tc.free_port()
        conf = tc.config(self.env, via, [tc.queue("losttx", url, dlq, "effect-tx",
                                                  visibility_timeout=30)],
                         [tc.plugin("effect-tx", tc.test_plugin(self.env, "effect_tx"))],
                         metrics_port=port)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1: 1/1", timeout=20)
        self.sqs.send(url, json.dumps({"id": "losttx-1", "sleep_ms": 1500}))
        twicetest.wait_until(lambda: tc.metric_sum(tc.scrape(port), "twice_jobs_in_flight"),
                             timeout=10, message="the job never started")
        proxy.cut_answer(b"COMMIT\x00")
        d.wait_log(r"info .*key=effect:losttx-1 .*the commit's answer was lost with the "
                   r"connection, and the key reads completed by this message: done", timeout=10)
        self.assertEqual(proxy.cuts, 1, "the commit's answer was lost")
        self.wait_empty(url, timeout=5)
        self.assertEqual(self.pg.query(dsn, "SELECT key, attempt FROM effects"),
                         [("effect:losttx-1", 1)])
        self.assertEqual(self.key_row(dsn, "effect:losttx-1"), ("completed", True, 1))
        tc.wait_metric(port, "twice_jobs_finished_total", 1, outcome="done")
        self.assertNotIn("duplicate", d.log_text())
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        self.assertEqual(d.stop(), 0)

    STOP_UNWRITTEN = (r"warn .*key=effect:%s .*stopping before its completion could be "
                      r"written \(.*\): its effect happened, so its message is deleted; its "
                      r"key stays in progress, not completed, until its lease lapses")

    def finish_unwritten(self, prefix, sleep_ms, drain_timeout, before_done=None,
                         fault="down"):
        """twiced (visibility timeout 4 s, lease 6 s) runs one job of sleep_ms; once it
        runs, before_done(twiced) (if any), then PostgreSQL goes away (fault: the
        proxy's down, or freeze: its connections stay open and answer nothing) before
        the job finishes. Returns (url, dlq, dsn, proxy, effects, twiced) once the job's
        effect is there: DONE, its completion unwritable."""
        url, dlq, dsn, proxy, effects, port, d = self.setup_proxied(
            prefix, drain_timeout=drain_timeout, visibility_timeout=4)
        self.sqs.send(url, json.dumps({"id": "%s-1" % prefix, "sleep_ms": sleep_ms}))
        twicetest.wait_until(lambda: tc.metric_sum(tc.scrape(port), "twice_jobs_in_flight"),
                             timeout=10, message="the job never started")
        if before_done is not None:
            before_done(d)
        getattr(proxy, fault)()
        self.assertEqual(self.lines(effects), [], "PostgreSQL went away before the job ended")
        twicetest.wait_until(lambda: self.lines(effects), timeout=10,
                             message="the job did not finish")
        return url, dlq, dsn, proxy, effects, d

    def assert_ran_once_after_restart(self, prefix, url, dlq, dsn, proxy, effects, d):
        """The stopped worker deleted the message of the job whose completion it could not
        write; PostgreSQL comes back and twiced (d, or a new one) runs on: the job does not
        run again. Its message was the only way back for it: counted gone at the stop
        (visible, in flight and delayed alike, and the emulator counts exactly), it cannot
        come back once its lease (4 + 2 s) lapses, so no wait for that lapse is needed."""
        at_stop = self.sqs.counts(url)
        self.assertEqual(at_stop, (0, 0, 0), "the message of the job that finished was "
                                             "deleted at the stop, not left to come back")
        proxy.up()
        if d is None:
            d = self.start_twiced(self.conf)
            d.wait_log(r"ready: generation 1: 1/1", timeout=20)
        self.wait_empty(url, timeout=20)
        self.assertEqual([(k, a) for k, _, a in self.lines(effects)],
                         [("effect:%s-1" % prefix, "1")], "it ran once")
        self.assertNotIn("taking over", d.log_text())
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        self.assertEqual(d.stop(), 0)

    def test_a_job_done_as_postgresql_went_away_does_not_run_again_after_a_stop(self):
        # The handler finishes (its email is sent) while PostgreSQL does not answer,
        # and twiced is stopped: the completion cannot be written before the worker
        # must exit. Left, the message would come back after its visibility timeout,
        # meet its key still in progress with a lapsed lease, be taken over and run
        # again: a second email. Its effect happened and it staged nothing, so its
        # message is deleted, with a warning naming the key that stays in progress.
        # PostgreSQL froze here: its connections stay open and the completion, sent on
        # one, is never answered. The acknowledger gives it up once the drain gives up
        # on the job (drain_timeout, 1 s); it used to wait for the answer for ever, and
        # the worker never exited. The threads of the host's duties on PostgreSQL
        # (janitor, pause watch, health check, outbox relay; the master's, before they
        # moved into the leading worker) give theirs up too, within a grace after the
        # stop (at most 2 s, the janitor's): they used to wait for the thaw, with the
        # pid file left and no "stopped" line (systemd would have killed twiced at its
        # stop timeout).
        url, dlq, dsn, proxy, effects, d = self.finish_unwritten("stopdone", 1000, 1,
                                                                 fault="freeze")
        began = time.monotonic()
        mark = d.mark()
        d.signal(signal.SIGTERM)
        d.wait_log(r"worker \d+ \(generation 1\) drained and exited", timeout=25, since=mark)
        self.assertLess(time.monotonic() - began, 20, "within drain_timeout + 10 s")
        self.assertRegex(d.log_text(), self.STOP_UNWRITTEN % "stopdone-1")
        twicetest.wait_until(lambda: d.proc.poll() is not None, timeout=8,
                             message="the master did not exit while PostgreSQL was frozen")
        self.assertEqual(d.stop(), 0)
        d.wait_log(r"master\[%d\]: stopped$" % d.proc.pid, timeout=1, since=mark)
        self.assertFalse(os.path.exists(self.pid_file), "the pid file is removed")
        proxy.thaw()
        self.assert_ran_once_after_restart("stopdone", url, dlq, dsn, proxy, effects, None)

    def test_a_store_that_freezes_as_twiced_starts_does_not_hold_its_stop(self):
        # PostgreSQL freezes just as the first statement on a new connection reaches
        # it, at three moments of a start: the master's check of the store (is it a
        # standby?), the worker's readiness check (the same question, then the
        # migration) and the outbox relay's LISTEN; and, once twiced is ready, as a
        # receiver claims a message's key. The other connections of twiced freeze
        # with it. These statements (and the connects) used to wait as libpq does,
        # for ever on an open connection: the master did not take the SIGTERM (its
        # start check), or the worker never exited (its readiness check, or its drain
        # joining the receiver), or the master never joined its relay. Now each gives
        # up at the stop: twiced exits within a few seconds of the SIGTERM (the
        # janitor's 2 s grace the longest), says "stopped" and removes its pid file.
        url, dlq, dsn, first, effects, port = self.conf_proxied("startfrozen")
        via = self.conf
        for moment, marker, nth in (("start check", b"pg_is_in_recovery", 1),
                                    ("ready check", b"pg_is_in_recovery", 2),
                                    ("relay LISTEN", b"LISTEN", 1),
                                    ("claim", b"twice_claim_", 1)):
            with self.subTest(moment=moment):
                proxy = faultproxy.TcpProxy(self.env.pg_host, self.env.pg_port)
                self.addCleanup(proxy.close)
                self.conf = via.replace(":%d/" % first.port, ":%d/" % proxy.port)
                proxy.freeze_on(marker, nth)
                d = self.start_twiced(self.conf)
                try:
                    if moment == "claim":
                        d.wait_log(r"ready: generation 1: 1/1", timeout=20)
                        self.sqs.send(url, json.dumps({"id": "startfrozen-1"}))
                    twicetest.wait_until(lambda: proxy.frozen, timeout=20,
                                         message="%s: PostgreSQL was never asked" % moment)
                    time.sleep(0.5)  # the others meet the frozen server too
                    d.signal(signal.SIGTERM)
                    twicetest.wait_until(lambda: d.proc.poll() is not None, timeout=8,
                                         message="%s: twiced did not exit within 8 s of its "
                                                 "SIGTERM while PostgreSQL was frozen" % moment)
                    self.assertEqual(d.stop(), 0)
                    d.wait_log(r"master\[%d\]: stopped$" % d.proc.pid, timeout=1)
                    self.assertFalse(os.path.exists(self.pid_file), "the pid file is removed")
                finally:
                    d.kill()  # a twiced still held holds its pid file too
                    proxy.close()

    def test_a_job_done_as_postgresql_went_away_does_not_run_again_after_a_reload(self):
        # The same at a reload: the new generation is ready (PostgreSQL still there),
        # the old one drains its running job (drain_timeout 8 s), which finishes once
        # PostgreSQL has gone.
        # The old worker exits without the completion; the new generation must not run
        # the job again when PostgreSQL comes back.
        def reload(d):
            mark = d.mark()
            d.signal(signal.SIGHUP)
            d.wait_log(r"reload done: generation 2 ready", timeout=20, since=mark)

        url, dlq, dsn, proxy, effects, d = self.finish_unwritten("reloaddone", 5000, 8, reload)
        d.wait_log(r"worker \d+ \(generation 1\) drained and exited", timeout=30)
        self.assertRegex(d.log_text(), self.STOP_UNWRITTEN % "reloaddone-1")
        self.assert_ran_once_after_restart("reloaddone", url, dlq, dsn, proxy, effects, d)

    def test_a_job_done_as_postgresql_went_away_does_not_run_again_after_a_drain_deadline(self):
        # The same when another job still runs at the drain deadline (drain_timeout 1 s):
        # the drain gives that one back (unfinished, it is to run again) and the
        # acknowledger leaves at once. The finished job is settled then: deleted, not
        # left (nor given back with the unfinished one) to run again.
        url, dlq, dsn, proxy, effects, port, d = self.setup_proxied(
            "deadlinedone", drain_timeout=1, visibility_timeout=4, concurrency=2)
        self.sqs.send(url, json.dumps({"id": "deadlinedone-1", "sleep_ms": 1500}))
        self.sqs.send(url, json.dumps({"id": "deadlinedone-2", "sleep_ms": 30000}))
        twicetest.wait_until(
            lambda: tc.metric_sum(tc.scrape(port), "twice_jobs_in_flight") == 2,
            timeout=10, message="the jobs never started")
        proxy.down()
        self.assertEqual(self.lines(effects), [], "PostgreSQL went away before the job ended")
        twicetest.wait_until(lambda: self.lines(effects), timeout=10,
                             message="the short job did not finish")
        self.assertEqual(d.stop(timeout=30), 0)
        log = d.log_text()
        self.assertIn("queue deadlinedone: drain deadline: gave back 1 unfinished job", log)
        self.assertRegex(log, self.STOP_UNWRITTEN % "deadlinedone-1")
        at_stop = self.sqs.counts(url)
        proxy.up()
        d = self.start_twiced(self.conf)
        d.wait_log(r"ready: generation 1: 1/1", timeout=20)
        time.sleep(8)  # past the visibility timeout and the lease, had it been left
        self.assertEqual([(k, a) for k, _, a in self.lines(effects)],
                         [("effect:deadlinedone-1", "1")], "the finished job ran once")
        self.assertEqual(at_stop[0] + at_stop[1], 1, "only the unfinished job's message is left")
        self.assertEqual(d.stop(), 0)  # the unfinished one, running again, is given back

    def test_a_job_done_as_postgresql_went_away_does_not_run_again_while_twiced_runs(self):
        # A failover: PostgreSQL is unreachable for longer than the acknowledger's
        # tries (ack_tries 3 here, about 3 s; 8 by default, about 22 s) while twiced
        # keeps running. The finished job's completion
        # is tried again until PostgreSQL is back, its message kept hidden (visibility
        # timeout 2 s, extended by the heartbeat) - not given up to come back, be taken
        # over once its lease (2 + 2 s) lapsed and run again: a second email after
        # every failover. Once PostgreSQL answers, the key is completed (its lease
        # lapsed, but nobody took it over) and the message deleted.
        url, dlq, dsn, proxy, effects, port, d = self.setup_proxied(
            "failover", visibility_timeout=2, ack_tries=3)
        self.sqs.send(url, json.dumps({"id": "failover-1", "sleep_ms": 1000}))
        twicetest.wait_until(lambda: tc.metric_sum(tc.scrape(port), "twice_jobs_in_flight"),
                             timeout=10, message="the job never started")
        proxy.down()
        twicetest.wait_until(lambda: self.lines(effects), timeout=10,
                             message="the job did not finish")
        d.wait_log(r"key=effect:failover-1 .*completing the key failed 3 times", timeout=40)
        time.sleep(4)  # past the visibility timeout: given up, it would be back by now
        self.assertEqual(self.sqs.counts(url), (0, 1, 0), "its message is kept hidden")
        proxy.up()
        # Empty (visible, in flight and delayed): its message was deleted, so the job
        # has no way back to run again; no wait for one is needed.
        self.wait_empty(url, timeout=30)
        self.assertEqual([(k, a) for k, _, a in self.lines(effects)],
                         [("effect:failover-1", "1")], "it ran once")
        self.assertEqual(self.key_row(dsn, "effect:failover-1"), ("completed", True, 1))
        log = d.log_text()
        self.assertRegex(log, r"warn .*key=effect:failover-1 .*completing the key failed 3 "
                              r"times, the idempotency store unreachable: trying again every "
                              r"few seconds while the worker runs")
        self.assertNotIn("taking over", log)
        self.assertNotIn("giving up", log)
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        self.assertEqual(d.stop(), 0)

    def test_a_server_that_takes_no_writes_is_waited_for_not_dead_lettered(self):
        # A failover that leaves the dsn on a server that takes no writes: a standby, or
        # (here) default_transaction_read_only set by a DBA, every connection cut as a
        # failover cuts them. Each claim is refused ("cannot execute ... in a read-only
        # transaction"); a receiver that went on receiving would give every message back
        # after each refusal, a receive nearer max_receives each time, and dead-letter good
        # messages within minutes (within seconds here: max_receives 2). The receiver waits
        # for it as for a store that is down: it connects again and asks before it
        # receives, says once what to do, and runs the messages once writes are taken.
        url, dlq = self.queue_pair("readonly")
        dsn = self.new_database("readonly")
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        db = dsn.rsplit("/", 1)[1]
        conf = tc.config(self.env, dsn, [tc.queue("readonly", url, dlq, "effect-tx",
                                                  max_attempts=1, max_receives=2)],
                         [tc.plugin("effect-tx", tc.test_plugin(self.env, "effect_tx"))])
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1: 1/1", timeout=20)

        def failover(read_only):
            self.pg.query(self.env.pg_dsn, 'ALTER DATABASE "%s" %s' % (
                db, "SET default_transaction_read_only = on" if read_only
                else "RESET default_transaction_read_only"))
            self.pg.query(self.env.pg_dsn, "SELECT count(pg_terminate_backend(pid)) FROM "
                                           "pg_stat_activity WHERE datname = %s", (db,))

        mark = d.mark()  # before: a receiver may meet it at once, reconnecting
        failover(True)
        self.sqs.send_batch(url, [json.dumps({"id": "ro-%d" % i}) for i in range(3)])
        # A receiver may meet it at a claim, or (its connection ended while it waited on
        # SQS) at its reconnect, before it receives.
        d.wait_log(r"queue readonly: (claiming \d keys? failed, giving the messages back: "
                   r"claim .*read-only transaction|idempotency store unreachable|the "
                   r"idempotency store refuses claims)", since=mark, timeout=20)
        time.sleep(4)  # a receiver still receiving would have dead-lettered them by now
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0), "nothing dead-lettered")
        self.assertEqual(self.distinct_effects(dsn), (0, 0))
        d.wait_log(r"error .*queue readonly: the idempotency store refuses claims \(SQLSTATE "
                   r"25006\), not receiving until one can be written: the server takes no "
                   r"writes \(transaction_read_only is on: .*point the dsn at the primary, or "
                   r"reset the setting", since=mark)
        failover(False)
        twicetest.wait_until(lambda: self.distinct_effects(dsn)[0] == 3, timeout=30,
                             message="the messages did not run once writes were taken")
        # The failover back cuts the connections too: a receiver whose try was on one
        # when it was cut says the store was unreachable, and then that it is back.
        d.wait_log(r"queue readonly: (the idempotency store takes claims again|idempotency "
                   r"store reachable again); receiving", since=mark)
        self.wait_empty(url)
        self.assertEqual(self.distinct_effects(dsn), (3, 3), "each ran once")
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        log = d.log_text()
        # the outbox's errors are said as the keys' are: the table, and what to do
        hint = r" \(the server takes no writes: a standby, or default_transaction_read_only is on"
        for said in (r"refuses claims \(SQLSTATE 25006\)",
                     r"outbox relay: outbox claim \(table twice_idempotency_outbox\): .*"
                     r"read-only transaction" + hint,
                     r"janitor: purge keys .*read-only transaction" + hint):
            self.assertEqual(len(re.findall(said, log)), 1, "said once: " + said)
        self.assertEqual(d.stop(), 0)

    def test_claims_refused_on_a_live_connection_are_waited_for_not_dead_lettered(self):
        # A DBA's change that leaves the connection up but refuses the receiver's claims:
        # a revoked grant (42501), then a statement_timeout set for twiced's role that a
        # lock on the table runs its claims into (57014). A receiver that went on receiving
        # would give every message back after each refusal, a receive nearer max_receives
        # each time, and dead-letter good messages within minutes (within seconds here:
        # max_receives 2). It checks that a claim can be written (a claim check, rolled
        # back) before it receives again, says once what is wrong and what to check (and
        # /readyz says why the queue does not receive), and runs the messages once a check
        # passes.
        role = twicetest.unique_name("refused", limit=40).lower().replace("-", "_")
        password = "Rf-5c1d0e7b"
        self.pg.query(self.env.pg_dsn, "CREATE ROLE %s LOGIN PASSWORD '%s'" % (role, password))
        self.addCleanup(self.pg.query, self.env.pg_dsn, "DROP ROLE IF EXISTS %s" % role)
        url, dlq = self.queue_pair("refused")
        dsn = self.new_database("refused")
        with open(os.path.join(self.env.source_dir, "etc", "schema.sql")) as f:
            self.pg.query(dsn, f.read())
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        self.pg.query(dsn, "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "
                           "public TO %s; GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO %s"
                           % (role, role))
        parts = urllib.parse.urlsplit(dsn)
        as_role = parts._replace(netloc="%s:%s@%s:%d" % (role, password, self.env.pg_host,
                                                         self.env.pg_port)).geturl()
        port = tc.free_port()
        conf = tc.config(self.env, as_role, [tc.queue("refused", url, dlq, "effect-tx",
                                                      max_attempts=1, max_receives=2)],
                         [tc.plugin("effect-tx", tc.test_plugin(self.env, "effect_tx"))],
                         metrics_port=port)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1: 1/1", timeout=20)

        def refused(mark, state, batch, until_fixed, fix, readyz=False):
            # mark: taken before the refusal was set up, which a receiver may meet at once
            # (its first connection's claim check, before it has received at all)
            self.sqs.send_batch(url, [json.dumps({"id": "%s-%d" % (state, i)})
                                      for i in range(3)])
            d.wait_log(r"error .*queue refused: the idempotency store refuses claims "
                       r"\(SQLSTATE %s\), not receiving until one can be written: claim "
                       r"\(table twice_idempotency\): %s" % (state, until_fixed), since=mark,
                       timeout=20)
            time.sleep(4)  # a receiver still receiving would have dead-lettered them by now
            self.assertEqual(self.sqs.counts(dlq), (0, 0, 0), "nothing dead-lettered")
            self.assertEqual(self.distinct_effects(dsn), (batch, batch))
            if readyz:  # once no receive is recent (2 x (wait_time + 3 s)), it says why
                # (a store check of the master's slowed by a loaded machine may speak first
                # for a while: it is the cause that must come)
                why = (r"queue refused(: no successful receive for \d+s \(limit 8s\)| has "
                       r"not received yet); the idempotency store refuses its claims "
                       r"\(SQLSTATE %s\)\n" % state)
                seen = []
                try:
                    twicetest.wait_until(lambda: (lambda r: seen.append(r) or r[0] == 503 and
                                                  re.fullmatch(why, r[1]))(
                        tc.http_status(port, "/readyz")), timeout=30, interval=0.5)
                except AssertionError:
                    self.fail("/readyz did not say why; its last answers: %r" % (seen[-3:],))
            fix()
            twicetest.wait_until(lambda: self.distinct_effects(dsn)[0] == batch + 3, timeout=30,
                                 message="the messages did not run once claims were taken")
            d.wait_log(r"queue refused: the idempotency store takes claims again; receiving",
                       since=mark)
            if readyz:
                twicetest.wait_until(lambda: tc.http_status(port, "/readyz")[0] == 200,
                                     timeout=20, message="/readyz did not say ready again")

        mark = d.mark()
        self.pg.query(dsn, "REVOKE INSERT, UPDATE ON twice_idempotency FROM %s" % role)
        refused(mark, "42501", 0, r"permission denied for table twice_idempotency \(grant the role "
                            r"SELECT, INSERT, UPDATE, DELETE on the tables",
                lambda: self.pg.query(dsn, "GRANT INSERT, UPDATE ON twice_idempotency TO %s"
                                      % role), readyz=True)

        # A setting for the role reaches new connections: the DBA's, and the fix alike.
        mark = d.mark()
        self.pg.query(self.env.pg_dsn, "ALTER ROLE %s SET statement_timeout = 300" % role)
        locker = self.pg.connect(dsn)
        self.addCleanup(locker.close)
        locker.cursor().execute("BEGIN; LOCK TABLE twice_idempotency IN ACCESS EXCLUSIVE MODE")
        self.pg.query(self.env.pg_dsn, "SELECT count(pg_terminate_backend(pid)) FROM "
                                       "pg_stat_activity WHERE usename = %s", (role,))

        def unlock():
            locker.cursor().execute("ROLLBACK")
            self.pg.query(self.env.pg_dsn, "ALTER ROLE %s RESET statement_timeout" % role)

        refused(mark, "57014", 3, r"canceling statement due to statement timeout \(cut short by a "
                            r"statement_timeout", unlock)
        self.wait_empty(url)
        self.assertEqual(self.distinct_effects(dsn), (6, 6), "each ran once")
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        self.assertGreater(tc.metric_sum(tc.scrape(port), "twice_pg_errors_total",
                                         operation="claim_check"), 0)
        log = d.log_text()
        for state in ("42501", "57014"):
            self.assertEqual(len(re.findall(r"refuses claims \(SQLSTATE %s\)" % state, log)), 1,
                             "said once: " + state)
        self.assertEqual(d.stop(), 0)

    def test_a_message_whose_own_claim_fails_is_dead_lettered_and_the_others_run(self):
        # The other side of waiting for a store that refuses claims: a claim that fails
        # because of a message's own data, here a key a LATIN1 database cannot hold (the
        # dsn's client_encoding is UTF8). The claim check passes, so the store is not
        # waited for: the batch's keys are claimed one by one, the good messages run, and
        # the bad one goes back until max_receives dead-letters it, not blocking the queue.
        # It goes back for the RETRY backoff (base 1 s here), not at once: it would only
        # fail again, its receives spent in a tight loop.
        url, dlq = self.queue_pair("latin1")
        name = twicetest.unique_name("latin1").lower().replace("-", "_")
        self.pg.query(self.env.pg_dsn, "CREATE DATABASE \"%s\" ENCODING 'LATIN1' LC_COLLATE 'C' "
                                       "LC_CTYPE 'C' TEMPLATE template0" % name)
        dsn = self.pg.dsn(name)
        self.addCleanup(self.pg.drop_database, dsn)
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        bodies = [json.dumps({"id": i}) for i in ("ok-1", "\u65e5\u672c", "ok-2")]
        self.sqs.send_batch(url, bodies)
        conf = tc.config(self.env, dsn + "?client_encoding=UTF8",
                         [tc.queue("latin1", url, dlq, "effect-tx", max_attempts=1,
                                   max_receives=2)],
                         [tc.plugin("effect-tx", tc.test_plugin(self.env, "effect_tx"))])
        d = self.start_twiced(conf)
        twicetest.wait_until(lambda: self.sqs.counts(dlq)[0] == 1, timeout=30,
                             message="the message whose claim fails was not dead-lettered")
        twicetest.wait_until(lambda: self.distinct_effects(dsn) == (2, 2), timeout=20)
        self.wait_empty(url)
        self.assertEqual(self.pg.query(dsn, "SELECT key FROM effects ORDER BY key"),
                         [("effect:ok-1",), ("effect:ok-2",)])
        log = d.log_text()
        self.assertRegex(log, r"dead-lettered \(max-receives\): received 3 times "
                              r"\(max_receives 2\) and its claim failed: claim .*has no "
                              r"equivalent in encoding")
        self.assertNotIn("refuses claims", log)
        # each give-back waited its delay before the next receive met the message
        stamp = r"^(\S+) \w+ worker\[\d+\] "
        backs = re.findall(stamp + r".*its claim failed alone, giving it back for (\d+) s: ",
                           log, re.M)
        dead = re.findall(stamp + r".*dead-lettered \(max-receives\)", log, re.M)
        self.assertEqual(len(backs), 2, "given back twice, each for a delay: %r" % backs)
        self.assertEqual(len(dead), 1)
        times = [self.log_time(t) for t, _ in backs] + [self.log_time(dead[0])]
        for (_, delay), at, then in zip(backs, times, times[1:]):
            self.assertIn(int(delay), (1, 2), "the RETRY backoff's: at least 1 s, at most "
                                              "base * 2^(receives-1)")
            self.assertGreaterEqual(then - at, int(delay) - 0.05, "back only after its delay")
        self.assertEqual(d.stop(), 0)

    def test_connections_the_server_ended_while_idle_delay_nothing(self):
        # A DBA's idle_session_timeout (here 1 s) ends twiced's connections while no
        # job uses them: the handlers' (transactional plugins), the acknowledger's. The
        # next job must not be the one that finds out: its transaction failing, its
        # release failing in turn, its key held until its lease ends (12 s here; a round
        # may take 8) before it could run. Each connection is checked (the server's FATAL
        # and close read) before a statement goes out, and connected again.
        url, dlq = self.queue_pair("idle")
        dsn = self.new_database("idle")
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        self.pg.query(self.env.pg_dsn, 'ALTER DATABASE "%s" SET idle_session_timeout = 1000'
                      % dsn.rsplit("/", 1)[1])
        conf = tc.config(self.env, dsn, [tc.queue("idle", url, dlq, "effect-tx",
                                                  max_attempts=1)],
                         [tc.plugin("effect-tx", tc.test_plugin(self.env, "effect_tx"))])
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1: 1/1", timeout=20)
        for rnd in range(3):
            time.sleep(1.5)  # every connection idle past the timeout: ended by the server
            self.sqs.send_batch(url, [json.dumps({"id": "idle-%d-%d" % (rnd, i)})
                                      for i in range(3)])
            twicetest.wait_until(lambda: self.distinct_effects(dsn)[0] == 3 * (rnd + 1),
                                 timeout=8, message="a job waited for a lease (round %d)" % rnd)
        self.wait_empty(url)
        self.assertEqual(self.distinct_effects(dsn), (9, 9), "each ran once")
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        log = d.log_text()
        for unwanted in ("releasing", "taking over", "held by a live lease", "unreachable"):
            self.assertNotIn(unwanted, log)
        self.assertEqual(d.stop(), 0)

    def test_a_server_slow_to_take_new_connections_is_not_said_to_be_unreachable(self):
        # A loaded server, or TLS and SCRAM over a long link, may take a second to
        # answer a new connection: that is no outage. The server ends twiced's idle
        # connections (idle_session_timeout 1 s) and each is made again through a
        # proxy that holds new ones 1 s: every job runs once, and no line says the
        # store is unreachable (the acknowledger said so, an error line that pages
        # someone, of any reconnect not answered within 250 ms). A server that does
        # not answer for longer is still said to be unreachable, and back.
        url, dlq, dsn, proxy, effects, port = self.conf_proxied("slowconn", max_attempts=1)
        self.pg.query(self.env.pg_dsn, 'ALTER DATABASE "%s" SET idle_session_timeout = 1000'
                      % dsn.rsplit("/", 1)[1])
        d = self.start_twiced(self.conf)
        d.wait_log(r"ready: generation 1: 1/1", timeout=20)
        proxy.slow_connects(1.0)
        for rnd in range(3):
            time.sleep(1.5)  # every connection idle past the timeout: ended by the server
            self.sqs.send_batch(url, [json.dumps({"id": "slow-%d-%d" % (rnd, i)})
                                      for i in range(3)])
            twicetest.wait_until(lambda: len(self.lines(effects)) == 3 * (rnd + 1),
                                 timeout=15, message="round %d did not run" % rnd)
        self.wait_empty(url)
        self.assertEqual(sorted(k for k, _, _ in self.lines(effects)),
                         sorted("effect:slow-%d-%d" % (r, i) for r in range(3) for i in range(3)),
                         "each ran once")
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        self.assertNotIn("unreachable", d.log_text())

        mark = d.mark()
        proxy.slow_connects(6.0)
        time.sleep(1.5)
        self.sqs.send(url, json.dumps({"id": "slower"}))
        d.wait_log(r"error .*\]: idempotency store unreachable \(acknowledgements wait\): a "
                   r"new connection is not answered after \d+ ms \(still trying\)",
                   since=mark, timeout=20)
        d.wait_log(r"info .*\]: idempotency store reachable again", since=mark, timeout=20)
        self.wait_empty(url)
        self.assertEqual(self.key_row(dsn, "effect:slower"), ("completed", True, 1))
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        self.assertEqual(d.stop(), 0)

    STALE_FAULT = """
        CREATE SEQUENCE stale_tries; CREATE SEQUENCE stale_first; CREATE SEQUENCE stale_last;
        CREATE FUNCTION stale_fault() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.state = 'completed' AND OLD.state IS DISTINCT FROM 'completed' THEN
                PERFORM setval('stale_last', pg_backend_pid());
                IF nextval('stale_tries') = 1 THEN
                    PERFORM setval('stale_first', pg_backend_pid());
                    RAISE EXCEPTION 'canceling statement due to statement timeout'
                        USING ERRCODE = 'query_canceled';
                END IF;
            END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER stale_fault BEFORE UPDATE ON twice_idempotency
            FOR EACH ROW EXECUTE FUNCTION stale_fault();"""

    # A completion its own data fails (a deferred constraint at its COMMIT) once, for
    # key effect:data; a COMMIT the store fails (53100, a server out of disk, raised by a
    # deferred trigger at COMMIT itself) once, for key effect:commit; and a statement of
    # the plugin's own (its effect's INSERT) that fails through the store (57014, as a
    # stale statement_timeout would) once, for key effect:plugin (the plugin answers
    # RETRY) and for key effect:reject (it answers REJECT); sequences record the
    # backends.
    DATA_AND_PLUGIN_FAULTS = """
        CREATE SEQUENCE data_tries; CREATE SEQUENCE commit_tries;
        CREATE FUNCTION data_fault() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.state = 'completed' AND OLD.state IS DISTINCT FROM 'completed' THEN
                IF NEW.idempotency_key = 'effect:data' AND nextval('data_tries') = 1 THEN
                    RAISE EXCEPTION 'the effect breaks a rule of its data'
                        USING ERRCODE = 'check_violation';
                END IF;
                IF NEW.idempotency_key = 'effect:commit' THEN
                    IF nextval('commit_tries') = 1 THEN
                        RAISE EXCEPTION 'could not extend file: No space left on device'
                            USING ERRCODE = 'disk_full';
                    END IF;
                END IF;
            END IF;
            RETURN NULL;
        END $$;
        CREATE CONSTRAINT TRIGGER data_fault AFTER UPDATE ON twice_idempotency
            DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION data_fault();
        CREATE SEQUENCE plugin_tries; CREATE SEQUENCE plugin_first;
        CREATE SEQUENCE plugin_last; CREATE SEQUENCE reject_tries;
        CREATE FUNCTION plugin_fault() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.key = 'effect:reject' AND nextval('reject_tries') = 1 THEN
                RAISE EXCEPTION 'canceling statement due to statement timeout'
                    USING ERRCODE = 'query_canceled';
            END IF;
            IF NEW.key = 'effect:plugin' THEN
                PERFORM setval('plugin_last', pg_backend_pid());
                IF nextval('plugin_tries') = 1 THEN
                    PERFORM setval('plugin_first', pg_backend_pid());
                    RAISE EXCEPTION 'canceling statement due to statement timeout'
                        USING ERRCODE = 'query_canceled';
                END IF;
            END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER plugin_fault BEFORE INSERT ON effects
            FOR EACH ROW EXECUTE FUNCTION plugin_fault();"""

    def test_a_completion_that_fails_through_the_store_is_retried_on_a_new_connection(self):
        # A connection keeps the role's settings from its start: after ALTER ROLE ...
        # RESET statement_timeout a connection opened while it was set still cuts
        # statements short, and only a new one is rid of it. So every connection twiced
        # keeps follows one rule: a statement that fails through the store's fault
        # (57014 here, which a trigger raises on the first completion, as a stale
        # statement_timeout would) while the connection stays up makes it again before
        # its next use: a transactional handler's (its job retried) and the
        # acknowledger's (its completion tried again). Sequences, which no rollback
        # undoes, record the backend of the failed completion and of the last one.
        # The transactional job's work was rolled back with its refused completion, so
        # that run is not counted: it runs again as attempt 1. A completion its own data
        # fails at COMMIT is the job's fault and counts (attempt 2). A statement of the
        # plugin's own that fails through the store (read through libpq's events) marks
        # the connection the same way: the plugin's retry runs on a new one, and that
        # run, aborted by the store, is not counted whatever the plugin answered (RETRY
        # or REJECT): it runs again as attempt 1, and a REJECT dead-letters nothing.
        url_tx, dlq_tx = self.queue_pair("stale-tx")
        url_ack, dlq_ack = self.queue_pair("stale-ack")
        dsn = self.new_database("stale")
        with open(os.path.join(self.env.source_dir, "etc", "schema.sql")) as f:
            self.pg.query(dsn, f.read())
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        self.pg.query(dsn, self.STALE_FAULT)
        self.pg.query(dsn, self.DATA_AND_PLUGIN_FAULTS)
        effects = os.path.join(tempfile.mkdtemp(dir=self.env.run_dir), "effects.txt")
        conf = tc.config(self.env, dsn,
                         [tc.queue("stale-tx", url_tx, dlq_tx, "effect-tx", concurrency=1,
                                   max_attempts=2, backoff=(1, 1)),
                          tc.queue("stale-ack", url_ack, dlq_ack, PLUGIN, max_attempts=1)],
                         [tc.plugin("effect-tx", tc.test_plugin(self.env, "effect_tx")),
                          tc.plugin(PLUGIN, tc.test_plugin(self.env, "effect_file"),
                                    file=effects)])
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1: 1/1", timeout=20)

        def backends(prefix="stale"):
            return self.pg.query(dsn, "SELECT (SELECT last_value FROM {0}_first), "
                                      "(SELECT last_value FROM {0}_last), "
                                      "(SELECT last_value FROM {0}_tries)".format(prefix))[0]

        def attempts(key):
            return (self.pg.query(dsn, "SELECT attempt FROM effects WHERE key = %s",
                                  ("effect:" + key,)),
                    self.key_row(dsn, "effect:" + key))

        self.sqs.send(url_tx, json.dumps({"id": "tx"}))
        twicetest.wait_until(lambda: self.distinct_effects(dsn) == (1, 1), timeout=20,
                             message="the transactional job did not run again")
        d.wait_log(r"warn .*key=effect:tx .*the store refused its completion \(tx complete "
                   r".*statement timeout.*\): its work was rolled back with it; given back "
                   r"for \d+s, attempt 1 not counted", timeout=5)
        first, last, tries = backends()
        self.assertEqual(tries, 2, "its completion failed once, then committed")
        self.assertNotEqual(first, last, "the handler's retry ran on a new connection")
        self.assertEqual(attempts("tx"), ([(1,)], ("completed", True, 1)),
                         "the refused run was not counted: it ran again as attempt 1")

        self.sqs.send(url_tx, json.dumps({"id": "data"}))
        twicetest.wait_until(lambda: self.distinct_effects(dsn) == (2, 2), timeout=20,
                             message="the job whose data failed its COMMIT did not run again")
        d.wait_log(r"error .*key=effect:data .*commit failed, nothing was applied: .*the "
                   r"effect breaks a rule of its data", timeout=5)
        self.assertEqual(attempts("data"), ([(2,)], ("completed", True, 2)),
                         "a COMMIT its own data failed counts")

        # A COMMIT the store refuses (53100 at COMMIT itself, not at a statement before
        # it) rolled the work back with it: given back uncounted, it runs again as
        # attempt 1 and completes once.
        self.sqs.send(url_tx, json.dumps({"id": "commit"}))
        twicetest.wait_until(lambda: self.distinct_effects(dsn) == (3, 3), timeout=20,
                             message="the job whose COMMIT the store refused did not run again")
        d.wait_log(r"warn .*key=effect:commit .*the store refused its completion \(tx "
                   r"complete: COMMIT .*No space left on device.*\): its work was rolled back "
                   r"with it; given back for \d+s, attempt 1 not counted", timeout=5)
        self.assertEqual(self.pg.query(dsn, "SELECT last_value FROM commit_tries"), [(2,)],
                         "its COMMIT failed once, then committed")
        self.assertEqual(attempts("commit"), ([(1,)], ("completed", True, 1)),
                         "the refused COMMIT was not counted: it ran again as attempt 1")

        self.sqs.send(url_tx, json.dumps({"id": "plugin"}))
        twicetest.wait_until(lambda: self.distinct_effects(dsn) == (4, 4), timeout=20,
                             message="the job whose statement the store refused did not run "
                                     "again")
        d.wait_log(r"warn .*key=effect:plugin .*a statement of the plugin failed through the "
                   r"store's fault \(SQLSTATE 57014\): the handler's connection is made "
                   r"again before its next job", timeout=5)
        d.wait_log(r"warn .*key=effect:plugin .*a statement of the plugin failed through the "
                   r"store's fault \(SQLSTATE 57014: canceling statement due to statement "
                   r"timeout\), aborting its transaction, so its RETRY is not the job's: given "
                   r"back for \d+s, attempt 1 not counted", timeout=5)
        first, last, tries = backends("plugin")
        self.assertEqual(tries, 2, "its insert failed once, then was made")
        self.assertNotEqual(first, last, "the plugin's retry ran on a new connection")
        self.assertEqual(attempts("plugin"), ([(1,)], ("completed", True, 1)),
                         "the run the store aborted was not counted: it ran again as attempt 1")

        self.sqs.send(url_tx, json.dumps({"id": "reject", "sql_reject": True}))
        twicetest.wait_until(lambda: self.distinct_effects(dsn) == (5, 5), timeout=20,
                             message="the job that rejected after the store's fault did not "
                                     "run again")
        d.wait_log(r"warn .*key=effect:reject .*\(SQLSTATE 57014: .*\), aborting its "
                   r"transaction, so its REJECT is not the job's: given back for \d+s, "
                   r"attempt 1 not counted", timeout=5)
        self.assertEqual(attempts("reject"), ([(1,)], ("completed", True, 1)),
                         "a REJECT after the store's fault was not counted nor dead-lettered")

        self.pg.query(dsn, "SELECT setval('stale_tries', 1, false)")
        self.sqs.send(url_ack, json.dumps({"id": "ack"}))
        twicetest.wait_until(lambda: (self.key_row(dsn, "effect:ack") or ("",))[0] ==
                             "completed", timeout=20, message="the completion was not written")
        first, last, tries = backends()
        self.assertEqual(tries, 2, "its completion failed once, then was written")
        self.assertNotEqual(first, last, "the acknowledger's retry ran on a new connection")
        self.assertEqual(len(self.lines(effects)), 1, "it ran once")
        for url, dlq in ((url_tx, dlq_tx), (url_ack, dlq_ack)):
            self.wait_empty(url)
            self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        self.assertNotIn("unreachable", d.log_text())
        self.assertEqual(d.stop(), 0)

    def setup_sender(self, prefix, drain_timeout, fifo=False):
        """A queue run by outbox_sender (visibility timeout 4 s, lease 6 s), a queue its
        follow-ups go to (FIFO when fifo) that nobody consumes, a database reached
        through a TcpProxy, and twiced. Returns (url, dlq, sink, dsn, proxy, port, conf,
        twiced)."""
        url, dlq = self.queue_pair(prefix)
        sink, _ = self.queue_pair(prefix + "sink", fifo=fifo)
        dsn = self.new_database(prefix)
        proxy = faultproxy.TcpProxy(self.env.pg_host, self.env.pg_port)
        self.addCleanup(proxy.close)
        via = dsn.replace(":%d/" % self.env.pg_port, ":%d/" % proxy.port)
        port = tc.free_port()
        conf = tc.config(self.env, via, [tc.queue(prefix, url, dlq, "outbox-sender",
                                                  visibility_timeout=4)],
                         [tc.plugin("outbox-sender", tc.test_plugin(self.env, "outbox_sender"))],
                         metrics_port=port, drain_timeout=drain_timeout)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1: 1/1", timeout=20)
        return url, dlq, sink, dsn, proxy, port, conf, d

    def receive_for(self, url, seconds):
        """Every message that arrives on url within seconds (each deleted)."""
        got = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for m in self.sqs.receive(url, max=10, wait=1):
                got.append(m)
                self.sqs.delete(url, m)
        return got

    def receive_at_least(self, url, count, timeout=10):
        """Every message on url (each deleted) once count have arrived, and any arriving
        within a second after them."""
        got = []
        twicetest.wait_until(lambda: got.extend(self.receive_for(url, 1)) or len(got) >= count,
                             timeout=timeout, message="fewer than %d messages arrived" % count)
        return got + self.receive_for(url, 1)

    @staticmethod
    def attr(message, name):
        return message.get("MessageAttributes", {}).get(name, {}).get("StringValue")

    SENT_DIRECTLY = (r"warn .*key=send:%s .*sent its 2 follow-up messages directly to SQS "
                     r"\(the outbox could not take them\), stopping before its completion "
                     r"could be written \(.*\): its effect happened, so its message is "
                     r"deleted")

    def assert_sent_once_and_not_run_again(self, prefix, url, dlq, sink, dsn, proxy, conf, d,
                                           port=None):
        """At the stop the job's two follow-ups went straight to SQS, each once, and its
        message was deleted; PostgreSQL comes back and twiced (d, or a new one) runs on:
        the job does not run again (its key would be completed) and nothing more arrives
        (the outbox never had them, so the relay sends nothing: with d's metrics port, the
        follow-ups counted sent are still the two sent directly). Both follow from what is
        counted before PostgreSQL is back, with no wait for a lapse: the message was the
        job's only way back, counted gone at the stop (visible, in flight and delayed alike,
        and the emulator counts exactly), and the outbox, read while no relay can reach it,
        holds nothing to send again. Returns the follow-ups received."""
        at_stop = self.sqs.counts(url)
        in_outbox = self.pg.query(dsn, "SELECT count(*) FROM twice_idempotency_outbox")
        proxy.up()
        if d is None:
            d = self.start_twiced(conf)
            d.wait_log(r"ready: generation 1: 1/1", timeout=20)
        got = self.receive_at_least(sink, 2)
        self.assertEqual(at_stop, (0, 0, 0), "its message was deleted at the stop")
        self.assertEqual(in_outbox, [(0,)], "nothing in the outbox for the relay to send")
        self.assertEqual(self.sqs.counts(url), (0, 0, 0), "and it did not come back")
        self.assertEqual(sorted(self.attr(m, "twice-outbox-id") for m in got),
                         ["send:%s-1#0" % prefix, "send:%s-1#1" % prefix],
                         "each follow-up arrived once, with its twice-outbox-id")
        self.assertEqual(sorted(json.loads(m["Body"])["i"] for m in got), [0, 1])
        self.assertTrue(all(self.attr(m, "origin") == "outbox-sender" for m in got),
                        "with the attributes the handler gave")
        self.assertNotEqual(self.key_row(dsn, "send:%s-1" % prefix)[0], "completed",
                            "the job did not run again")
        self.assertEqual(self.pg.query(dsn, "SELECT count(*) FROM twice_idempotency_outbox"),
                         [(0,)], "nothing in the outbox for the relay to send again")
        self.assertNotIn("taking over", d.log_text())
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        if port is not None:
            samples = tc.scrape(port)
            self.assertEqual(tc.metric_sum(samples, "twice_outbox_sent_total"), 2)
            self.assertEqual(tc.metric_sum(samples, "twice_outbox_sent_total", via="relay"), 0)
        self.assertEqual(d.stop(), 0)
        return got

    def test_a_job_that_staged_follow_ups_sends_them_to_sqs_when_its_completion_is_unwritten(
            self):
        # A job that staged follow-up messages finishes as PostgreSQL goes away, and
        # twiced stops (SIGTERM). The outbox cannot take its follow-ups, but SQS can:
        # they are sent straight to it as the relay would send them, and then its
        # message is deleted like that of a job that staged nothing. Left, the message
        # would come back and run the job again (a second email) to stage them anew.
        url, dlq, sink, dsn, proxy, port, conf, d = self.setup_sender("stopsend", 1)
        self.sqs.send(url, json.dumps({"id": "stopsend-1", "to": sink, "n": 2,
                                       "sleep_ms": 1000}))
        twicetest.wait_until(lambda: tc.metric_sum(tc.scrape(port), "twice_jobs_in_flight"),
                             timeout=10, message="the job never started")
        proxy.down()
        d.wait_log(r"completing the key", timeout=10)
        self.assertEqual(d.stop(timeout=30), 0)
        log = d.log_text()
        self.assertRegex(log, self.SENT_DIRECTLY % "stopsend-1")
        self.assertEqual(len(re.findall(r"key=send:stopsend-1 .*stopping before", log)), 1,
                         "one warning")
        self.assert_sent_once_and_not_run_again("stopsend", url, dlq, sink, dsn, proxy, conf,
                                                None)

    def test_follow_ups_of_a_job_finished_in_a_reload_drain_go_straight_to_a_fifo_queue(
            self):
        # The same at a reload: the new generation is ready, the old one drains its
        # running job (drain_timeout 8 s), which finishes once PostgreSQL has gone. Its
        # follow-ups go to a FIFO queue: with their group, and the deduplication id the
        # relay derives from twice-outbox-id, so a resend within SQS's 5 minutes is
        # dropped by SQS itself.
        url, dlq, sink, dsn, proxy, port, conf, d = self.setup_sender("reloadsend", 8,
                                                                      fifo=True)
        self.sqs.send(url, json.dumps({"id": "reloadsend-1", "to": sink, "n": 2,
                                       "group": "g7", "sleep_ms": 5000}))
        twicetest.wait_until(lambda: tc.metric_sum(tc.scrape(port), "twice_jobs_in_flight"),
                             timeout=10, message="the job never started")
        mark = d.mark()
        d.signal(signal.SIGHUP)
        d.wait_log(r"reload done: generation 2 ready", timeout=20, since=mark)
        proxy.down()
        d.wait_log(r"worker \d+ \(generation 1\) drained and exited", timeout=30)
        self.assertRegex(d.log_text(), self.SENT_DIRECTLY % "reloadsend-1")
        # Counted as follow-ups sent, as the relay's are, telling one from the other.
        self.assertEqual(tc.metric_sum(tc.scrape(port), "twice_outbox_sent_total",
                                       queue=sink, via="direct"), 2)
        got = self.assert_sent_once_and_not_run_again("reloadsend", url, dlq, sink, dsn, proxy,
                                                      conf, d, port)
        self.assertTrue(all(m["Attributes"]["MessageGroupId"] == "g7" for m in got))
        self.assertEqual(sorted(m["Attributes"].get("MessageDeduplicationId") for m in got),
                         sorted(hashlib.sha256(("send:reloadsend-1#%d" % i).encode())
                                .hexdigest() for i in range(2)))

    def test_a_job_whose_follow_ups_sqs_refuses_at_a_stop_keeps_its_message(self):
        # The same stop, but SQS refuses the follow-ups (their queue does not exist):
        # the message is left, as before, so the job runs again rather than lose them;
        # once PostgreSQL is back, that run's follow-ups go to the outbox (where the
        # relay keeps them as refused until the queue exists), its key completed.
        url, dlq, sink, dsn, proxy, port, conf, d = self.setup_sender("stopgone", 1)
        missing = sink.rsplit("/", 1)[0] + "/" + twicetest.unique_name("gone")
        self.sqs.send(url, json.dumps({"id": "stopgone-1", "to": missing, "n": 2,
                                       "sleep_ms": 1000}))
        twicetest.wait_until(lambda: tc.metric_sum(tc.scrape(port), "twice_jobs_in_flight"),
                             timeout=10, message="the job never started")
        proxy.down()
        d.wait_log(r"completing the key", timeout=10)
        self.assertEqual(d.stop(timeout=30), 0)
        self.assertRegex(d.log_text(), r"warn .*key=send:stopgone-1 .*stopping before its "
                         r"completion could be written, sending its 2 follow-up messages "
                         r"directly to SQS failed \(queue \S+/%s: SendMessageBatch: "
                         r"QueueDoesNotExist.*\), so its message is left"
                         % re.escape(missing.rsplit("/", 1)[1]))
        self.assertEqual(sum(self.sqs.counts(url)), 1, "its message is left")
        proxy.up()
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1: 1/1", timeout=20)
        self.wait_empty(url, timeout=30)
        twicetest.wait_until(
            lambda: self.pg.query(dsn, "SELECT source_key, idx, state FROM "
                                       "twice_idempotency_outbox ORDER BY idx")
            == [("send:stopgone-1", 0, "refused"), ("send:stopgone-1", 1, "refused")],
            timeout=20, message="the run's follow-ups were not kept in the outbox")
        self.assertEqual(self.key_row(dsn, "send:stopgone-1"), ("completed", True, 1))
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        self.assertEqual(d.stop(), 0)

    def test_follow_ups_a_lost_commit_may_have_written_are_not_also_sent_at_a_stop(self):
        # The completion's COMMIT commits (the follow-ups are in the outbox) but its
        # answer is lost with the connection, and PostgreSQL stays away until twiced
        # stops. The worker cannot tell whether the outbox has them, so it must not send
        # them straight to SQS as well: its message is left, the relay sends them once
        # PostgreSQL is back, and the message, back too, is a duplicate of its completed
        # key. Each follow-up arrives once.
        url, dlq, sink, dsn, proxy, port, conf, d = self.setup_sender("lostsend", 1)
        self.sqs.send(url, json.dumps({"id": "lostsend-1", "to": sink, "n": 2,
                                       "sleep_ms": 1000}))
        twicetest.wait_until(lambda: tc.metric_sum(tc.scrape(port), "twice_jobs_in_flight"),
                             timeout=10, message="the job never started")
        # Down at the cut: a down() after it left the master's relay, woken by that
        # COMMIT's NOTIFY, ~80 ms under load to claim, send and delete the follow-ups.
        proxy.cut_answer(b"COMMIT\x00", then_down=True)
        twicetest.wait_until(lambda: proxy.cuts == 1, timeout=10, interval=0.01,
                             message="the COMMIT's answer was not lost")
        self.assertEqual(d.stop(timeout=30), 0)
        self.assertRegex(d.log_text(), r"warn .*key=send:lostsend-1 .*stopping before its "
                         r"completion could be written \(.*\): a COMMIT of it got no answer, "
                         r"so its 2 follow-up messages may be in the outbox; its message is "
                         r"left")
        self.assertEqual(sum(self.sqs.counts(url)), 1, "its message is left")
        self.assertEqual(self.pg.query(dsn, "SELECT count(*) FROM twice_idempotency_outbox"),
                         [(2,)], "the COMMIT wrote them")
        proxy.up()
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1: 1/1", timeout=20)
        # The message back (a duplicate of its completed key, deleted) and the outbox sent:
        # nothing is left that could send them again.
        got = []
        twicetest.wait_until(
            lambda: got.extend(self.receive_for(sink, 1)) or (
                self.sqs.counts(url) == (0, 0, 0) and self.pg.query(
                    dsn, "SELECT count(*) FROM twice_idempotency_outbox") == [(0,)]),
            timeout=30, message="the message did not come back, or the outbox was not sent")
        got += self.receive_for(sink, 1)
        self.assertEqual(sorted(self.attr(m, "twice-outbox-id") for m in got),
                         ["send:lostsend-1#0", "send:lostsend-1#1"], "each sent once")
        self.wait_empty(url, timeout=20)
        self.assertEqual(self.key_row(dsn, "send:lostsend-1"), ("completed", True, 1))
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        self.assertEqual(d.stop(), 0)
