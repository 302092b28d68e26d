"""/metrics counts exactly what happened (parsed with a
Prometheus text-format parser), survives a reload and a killed worker, /readyz
follows the SQS endpoint's reachability, and the visibility-timeout advice."""

import json
import os
import re
import resource
import signal
import socket
import subprocess
import time
import unittest
import urllib.request

import faultproxy
import promcheck
import twicetest
import twiceconf as tc


class Metrics(twicetest.TwiceTestCase):
    def start(self, prefix, endpoint=None, workers=2, p99_interval=None, pg_proxy=None,
              **queue_options):
        """twiced running effect-tx on a new queue pair and database (reached through
        pg_proxy, a faultproxy.TcpProxy, when given)."""
        url, dlq = self.queue_pair(prefix)
        dsn = self.new_database(prefix)
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        port = tc.free_port()
        options = dict({"max_attempts": 2}, **queue_options)
        via = dsn if pg_proxy is None else dsn.replace(":%d/" % self.env.pg_port,
                                                       ":%d/" % pg_proxy.port)
        conf = tc.config(self.env, via, [tc.queue("jobs", url, dlq, "effect-tx", **options)],
                         [tc.plugin("effect-tx", tc.test_plugin(self.env, "effect_tx"))],
                         workers=workers, metrics_port=port, endpoint=endpoint,
                         p99_interval=p99_interval)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1: %d/%d" % (workers, workers), timeout=20)
        return url, dlq, dsn, port, d

    @staticmethod
    def readyz_503(port, message):
        """Wait until /readyz answers 503; returns its body."""
        return twicetest.wait_until(
            lambda: (lambda r: r[1] if r[0] == 503 else None)(tc.http_status(port, "/readyz")),
            timeout=20, message=message)

    def counts(self, port):
        s = tc.scrape(port)
        return {
            "received": tc.metric_sum(s, "twice_messages_received_total", queue="jobs"),
            "done": tc.metric_sum(s, "twice_jobs_finished_total", queue="jobs",
                                  plugin="effect-tx", outcome="done"),
            "rejected": tc.metric_sum(s, "twice_jobs_finished_total", outcome="rejected"),
            "dups": tc.metric_sum(s, "twice_duplicates_skipped_total", kind="completed"),
            "dead": tc.metric_sum(s, "twice_dead_lettered_total", queue="jobs",
                                  plugin="effect-tx", reason="rejected"),
            "durations": tc.metric_sum(s, "twice_handler_duration_seconds_count"),
        }

    def test_known_traffic_is_counted_exactly_and_never_goes_backwards(self):
        url, dlq, dsn, port, d = self.start("metrics")
        n_done, n_dups, n_dead = 20, 10, 3
        for i in range(n_done):
            self.sqs.send(url, json.dumps({"id": "m%d" % i}))
        for i in range(n_dead):
            self.sqs.send(url, json.dumps({"id": "bad%d" % i, "reject": True}))
        twicetest.wait_until(lambda: self.counts(port)["done"] == n_done, timeout=30)
        for i in range(n_dups):  # the same intent again, after completion
            self.sqs.send(url, json.dumps({"id": "m%d" % i}))
        want = {"received": n_done + n_dups + n_dead, "done": n_done, "rejected": n_dead,
                "dups": n_dups, "dead": n_dead, "durations": n_done + n_dead}
        twicetest.wait_until(lambda: self.counts(port) == want, timeout=30,
                             message="metrics never matched %s" % want)
        time.sleep(1.5)  # nothing counts twice later
        self.assertEqual(self.counts(port), want)
        samples = tc.scrape(port)
        self.assertEqual(samples[("twice_build_info",
                                  frozenset({("version", "0.1.0"), ("abi", "1.2")}))], 1)
        self.assertGreater(tc.metric_sum(samples, "twice_sqs_requests_total",
                                         action="ReceiveMessage", result="ok"), 0)
        self.assertEqual(tc.metric_sum(samples, "twice_jobs_in_flight"), 0)
        # A reload and a killed worker: the counts stay.
        mark = d.mark()
        d.signal(signal.SIGHUP)
        d.wait_log(r"reload done", since=mark, timeout=30)
        twicetest.wait_until(lambda: len(re.findall(r"\(generation 1\) drained and exited",
                                                    d.log_text())) == 2, timeout=30)
        self.assertEqual(self.counts(port), want)
        os.kill(d.worker_pids()[0], signal.SIGKILL)
        d.wait_log(r"killed by signal 9", timeout=10)
        self.assertEqual(self.counts(port), want)
        self.sqs.send(url, json.dumps({"id": "after"}))
        want.update(received=want["received"] + 1, done=n_done + 1,
                    durations=want["durations"] + 1)
        twicetest.wait_until(lambda: self.counts(port) == want, timeout=30)
        restarts = tc.metric_sum(tc.scrape(port), "twice_worker_restarts_total", cause="signal")
        self.assertEqual(restarts, 1)
        self.assertEqual(d.stop(), 0)

    def test_series_of_names_a_reload_removed_leave_once_their_workers_exit(self):
        """A queue and a plugin whose names carry the deploy's version: after each reload,
        once the old generation's worker has exited, /metrics shows the new names and no
        longer the old ones: no ghost still reporting, no series piling up, and the series
        table's use (twice_metric_series) falls as their slots are freed."""
        url, dlq = self.queue_pair("rename")
        dsn = self.new_database("rename")
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        port = tc.free_port()
        path = tc.test_plugin(self.env, "effect_tx")

        def conf(v):
            return tc.config(self.env, dsn, [tc.queue("jobs-v%d" % v, url, dlq, "fx-v%d" % v)],
                             [tc.plugin("fx-v%d" % v, path)], metrics_port=port)

        def done(v):
            return tc.metric_sum(tc.scrape(port), "twice_jobs_finished_total",
                                 queue="jobs-v%d" % v, plugin="fx-v%d" % v, outcome="done")

        def versions():  # of the names any series of /metrics has
            return {int(m.group(1)) for (_, labels) in tc.scrape(port) for _, val in labels
                    for m in [re.fullmatch(r"(?:jobs|fx)-v(\d+)", val)] if m}

        def in_use():  # slots of the instance's series table
            return tc.metric_sum(tc.scrape(port), "twice_metric_series")

        d = self.start_twiced(conf(1))
        d.wait_log(r"ready: generation 1: 1/1", timeout=20)
        self.assertEqual(tc.metric_sum(tc.scrape(port), "twice_metric_series_capacity"), 8192)
        for v in range(1, 5):
            if v > 1:
                before = in_use()  # ~24, v - 1's names' among them: its job's, the gauges
                with open(d.config_path, "w") as f:
                    f.write(conf(v).replace("$$", "$"))
                mark = d.mark()
                d.signal(signal.SIGHUP)
                d.wait_log(r"\(generation %d\) drained and exited" % (v - 1), since=mark,
                           timeout=30)
                d.wait_log(r"metrics: \d+ series of queues and plugins no longer configured "
                           r"freed", since=mark, timeout=10)
                # Fewer, though v's queue already has the master's gauges: no job ran yet.
                self.assertLess(in_use(), before, "v%d's series were freed" % (v - 1))
            self.sqs.send(url, json.dumps({"id": "v%d" % v}))
            twicetest.wait_until(lambda: done(v) == 1, timeout=20,
                                 message="jobs-v%d's job was never counted" % v)
            twicetest.wait_until(lambda: versions() == {v}, timeout=10,
                                 message="/metrics shows versions %s" % versions())
        self.assertEqual(d.stop(), 0)

    def test_a_long_poll_cut_short_by_a_reload_is_cancelled_not_an_error(self):
        url, dlq, dsn, port, d = self.start("cancel", wait_time=20)
        time.sleep(1.5)  # every receiver is inside its 20 s long poll when the reload comes
        mark = d.mark()
        d.signal(signal.SIGHUP)
        d.wait_log(r"reload done", since=mark, timeout=30)
        twicetest.wait_until(lambda: len(re.findall(r"\(generation 1\) drained and exited",
                                                    d.log_text())) == 2, timeout=30,
                             message="generation 1 did not drain")
        s = tc.scrape(port)
        receives = {r: tc.metric_sum(s, "twice_sqs_requests_total", action="ReceiveMessage",
                                     result=r) for r in ("ok", "error", "cancelled")}
        self.assertGreaterEqual(receives["cancelled"], 2, receives)
        self.assertEqual(receives["error"], 0, receives)
        self.assertEqual(tc.metric_sum(s, "twice_sqs_errors_total"), 0)
        self.assertEqual(d.stop(), 0)

    def test_short_polls_of_an_empty_queue_wait_between_receives(self):
        """wait_time = 0: SQS answers short polls at once and bills each one. A receiver
        whose short poll got nothing waits 1 s before the next, so 2 workers with 2
        receivers each ask an empty queue about 4 times a second (it was as fast as the
        network allowed: hundreds); a message sent is still handled at once."""
        url, dlq, dsn, port, d = self.start("short", wait_time=0, receivers=2)

        def receives():
            return tc.metric_sum(tc.scrape(port), "twice_sqs_requests_total",
                                 action="ReceiveMessage")
        time.sleep(1)
        before, t0 = receives(), time.monotonic()
        time.sleep(4)
        made, elapsed = receives() - before, time.monotonic() - t0
        self.assertGreaterEqual(made, 4, "the receivers stopped asking")
        self.assertLessEqual(made, 4 * (elapsed + 1), "%d receives in %.1f s" % (made, elapsed))
        self.sqs.send(url, json.dumps({"id": "short-1"}))
        twicetest.wait_until(lambda: self.counts(port)["done"] == 1, timeout=10,
                             message="a message sent to a short-polled queue was not handled")
        self.assertEqual(d.stop(), 0)

    def test_a_busy_metrics_port_is_reported_with_its_reason_and_jobs_still_run(self):
        """metrics.listen on a port another process holds: one log line with the system's
        reason (not libmicrohttpd's own "Failed to bind to port 0" on stderr), and the
        workers run without the endpoints. A reload that moves working endpoints onto that
        port keeps them where they were: it closed them, and the probes watching the
        running workers failed."""
        holder = socket.socket()
        self.addCleanup(holder.close)
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        url, dlq = self.queue_pair("busyport")
        dsn = self.new_database("busyport")
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        conf = tc.config(self.env, dsn, [tc.queue("jobs", url, dlq, "effect-tx")],
                         [tc.plugin("effect-tx", tc.test_plugin(self.env, "effect_tx"))],
                         metrics_port=port)
        d = self.start_twiced(conf)
        d.wait_log(r"metrics: cannot listen on 127\.0\.0\.1:%d: Address already in use "
                   r"\(metrics and health endpoints are off\)" % port, timeout=20)
        d.wait_log(r"ready: generation 1", timeout=20)
        self.sqs.send(url, json.dumps({"id": "busy-1"}))
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=20,
                             message="the message was not handled")
        self.assertNotIn("Failed to bind", d.log_text())
        free = tc.free_port()
        for listen, expect in ((free, r"reload done"),
                               (port, r"metrics: cannot listen on 127\.0\.0\.1:%d: Address "
                                r"already in use \(the endpoints stay on 127\.0\.0\.1:%d\)"
                                % (port, free))):
            with open(d.config_path, "w") as f:
                f.write(d.config_text.replace("127.0.0.1:%d" % port, "127.0.0.1:%d" % listen))
            mark = d.mark()
            d.signal(signal.SIGHUP)
            d.wait_log(expect, since=mark, timeout=20)
            d.wait_log(r"reload done", since=mark, timeout=20)
            self.assertEqual(tc.http_status(free, "/healthz"), (200, "ok\n"))
        self.assertEqual(d.stop(), 0)

    def test_readyz_follows_the_sqs_endpoint(self):
        proxy = faultproxy.FaultProxy(*faultproxy.split_endpoint(self.env.sqs_endpoint))
        self.addCleanup(proxy.close)
        url, dlq, dsn, port, d = self.start("ready", endpoint=proxy.endpoint, wait_time=1)
        self.assertEqual(tc.http_status(port, "/healthz"), (200, "ok\n"))
        twicetest.wait_until(lambda: tc.http_status(port, "/readyz")[0] == 200, timeout=10)
        proxy.refuse()
        body = self.readyz_503(port, "/readyz stayed 200 with SQS unreachable")
        self.assertRegex(body, r"^queue jobs: no successful receive for \d+s")
        self.assertEqual(tc.http_status(port, "/healthz")[0], 200, "the master is alive")
        proxy.passthrough()
        twicetest.wait_until(lambda: tc.http_status(port, "/readyz")[0] == 200, timeout=40,
                             message="/readyz did not recover")
        self.sqs.send(url, json.dumps({"id": "after-outage"}))
        twicetest.wait_until(lambda: self.pg.query(dsn, "SELECT count(*) FROM effects")[0][0]
                             == 1, timeout=30)
        self.assertEqual(d.stop(), 0)

    def test_readyz_follows_postgres_while_idle(self):
        """No message flows, so only the master's periodic health check can notice that
        PostgreSQL went away (and came back)."""
        pg = faultproxy.TcpProxy(self.env.pg_host, self.env.pg_port)
        self.addCleanup(pg.close)
        url, dlq = self.queue_pair("pgready")
        name = twicetest.unique_name("pgready").lower().replace("-", "_")
        self.pg.query(self.env.pg_dsn, 'CREATE DATABASE "%s"' % name)
        direct = self.pg.dsn(name)
        self.addCleanup(self.pg.drop_database, direct)
        self.pg.query(direct, tc.EFFECTS_TABLE)
        via = direct.replace(":%d/" % self.env.pg_port, ":%d/" % pg.port)
        port = tc.free_port()
        conf = tc.config(self.env, via, [tc.queue("jobs", url, dlq, "effect-tx", wait_time=2)],
                         [tc.plugin("effect-tx", tc.test_plugin(self.env, "effect_tx"))],
                         metrics_port=port)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=30)
        twicetest.wait_until(lambda: tc.http_status(port, "/readyz")[0] == 200, timeout=20)
        pg.down()
        body = self.readyz_503(port, "/readyz stayed 200 with PostgreSQL gone")
        self.assertRegex(body, r"^idempotency store does not answer: ")
        d.wait_log(r"the idempotency store does not answer: .*; /readyz says 503", timeout=5)
        self.assertEqual(tc.metric_sum(tc.scrape(port), "twice_messages_received_total"), 0,
                         "idle: no message told it")
        pg.up()
        twicetest.wait_until(lambda: tc.http_status(port, "/readyz")[0] == 200, timeout=30,
                             message="/readyz did not come back with PostgreSQL")
        d.wait_log(r"the idempotency store answers again", timeout=5)
        self.sqs.send(url, json.dumps({"id": "after-outage"}))
        twicetest.wait_until(lambda: self.pg.query(direct, "SELECT count(*) FROM effects")[0][0]
                             == 1, timeout=60)
        self.assertEqual(d.stop(), 0)

    def test_readyz_stays_200_when_only_its_connection_was_cut(self):
        """PostgreSQL ends twiced's connections (pg_terminate_backend, as an operator
        or a pooler's restart does) but answers at once on new ones: the store is
        up, so /readyz must not say 503 for a health check or more, nor log an
        outage that was none."""
        url, dlq, dsn, port, d = self.start("pgcut", workers=1)
        twicetest.wait_until(lambda: tc.http_status(port, "/readyz")[0] == 200, timeout=20)
        mark = d.mark()
        name = dsn.rsplit("/", 1)[1]
        cut = self.pg.query(self.env.pg_dsn, "SELECT count(pg_terminate_backend(pid)) FROM "
                                             "pg_stat_activity WHERE datname = %s AND "
                                             "application_name = 'twice'", (name,))[0][0]
        self.assertGreaterEqual(cut, 1)
        answers = []
        began = time.monotonic()
        while time.monotonic() - began < 7:  # at least two health checks (every 3 s)
            answers.append(tc.http_status(port, "/readyz"))
            time.sleep(0.1)
        self.assertEqual([a for a in answers if a[0] != 200], [])
        self.assertNotIn("does not answer", d.log_text()[mark:])
        self.sqs.send(url, json.dumps({"id": "after-cut"}))
        twicetest.wait_until(lambda: self.pg.query(dsn, "SELECT count(*) FROM effects")[0][0]
                             == 1, timeout=30)
        self.assertEqual(d.stop(), 0)

    def test_slow_plugin_gets_the_visibility_timeout_advice(self):
        """Handler durations are the handler's: a transactional plugin's connection,
        opened at its first job on each handler thread, is not counted in them (a
        slow connect would read as a slow plugin, and under a sanitizer as one near
        the visibility timeout)."""
        proxy = faultproxy.TcpProxy(self.env.pg_host, self.env.pg_port)
        self.addCleanup(proxy.close)
        url, dlq, dsn, port, d = self.start("advice", workers=1, visibility_timeout=4,
                                            concurrency=10, p99_interval=1, pg_proxy=proxy)
        proxy.slow_connects(1.5)

        def p99s():
            return [v for (n, ls), v in tc.scrape(port).items()
                    if n == "twice_handler_p99_seconds" and ("queue", "jobs") in set(ls)]
        # p99_interval = 1 is read: 20 fast jobs make the gauge appear (at a reading),
        # and the slow ones below move it at a reading ~3 s later. Ignored, the next
        # reading (every 10 s by default) would come 10 s after the first: the 7 s
        # below cannot pass (checked with heartbeat.c reading the default).
        self.assertEqual(p99s(), [], "no p99 before 20 runs")
        for i in range(0, 20, 10):
            self.sqs.send_batch(url, [json.dumps({"id": "f%d" % n}) for n in range(i, i + 10)])
        fast = twicetest.wait_until(p99s, timeout=30, interval=0.05)
        self.assertLess(fast[0], 1.0)
        seen = time.monotonic()
        for i in range(0, 30, 10):
            self.sqs.send_batch(url, [json.dumps({"id": "s%d" % n, "sleep_ms": 2500})
                                      for n in range(i, i + 10)])
        twicetest.wait_until(lambda: [v for v in p99s() if v >= 2.5], timeout=30, interval=0.05)
        self.assertLess(time.monotonic() - seen, 7.0, "the p99 moved at the next readings")
        m = d.wait_log(r"queue jobs: plugin effect-tx: p99 handler duration is ([\d.]+)s, "
                       r"more than half the visibility timeout \(4s\).* at least (\d+) ",
                       timeout=60)
        p99, suggested = float(m.group(1)), int(m.group(2))
        self.assertGreaterEqual(p99, 2.5)
        self.assertLess(p99, 4.0)
        # 2 x p99 rounded up, from the p99 before the log rounded it to 0.1 s
        self.assertIn(suggested, range(int(-(-2 * (p99 - 0.05) // 1)),
                                       int(-(-2 * (p99 + 0.05) // 1)) + 1))
        gauge = tc.metric_sum(tc.scrape(port), "twice_handler_p99_seconds", queue="jobs",
                              plugin="effect-tx")
        self.assertAlmostEqual(gauge, p99, delta=0.05)
        time.sleep(2.5)  # two readings or more later, the p99 still above half
        self.assertEqual(len(re.findall(r"p99 handler duration", d.log_text())), 1,
                         "once per hour, for the whole instance")
        self.assertEqual(d.stop(), 0)

    def test_queue_gauges_and_message_ages(self):
        """100 messages, 40 handled: the master's gauges show the 60 left (visible and in
        flight) within an interval; every received message's age is observed; the counts
        cost one GetQueueAttributes per queue per interval, whatever the workers."""
        proxy = faultproxy.FaultProxy(*faultproxy.split_endpoint(self.env.sqs_endpoint))
        self.addCleanup(proxy.close)
        url, dlq = self.queue_pair("gauges")
        dsn = self.new_database("gauges")
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        for i in range(0, 40, 10):
            self.sqs.send_batch(url, [json.dumps({"id": "f%d" % k}) for k in range(i, i + 10)])
        port = tc.free_port()
        conf = tc.config(self.env, dsn, [tc.queue("jobs", url, dlq, "effect-tx", concurrency=1,
                                                  batch_size=1)],
                         [tc.plugin("effect-tx", tc.test_plugin(self.env, "effect_tx"))],
                         workers=2, metrics_port=port, endpoint=proxy.endpoint, drain_timeout=1,
                         queue_stats_interval=1)
        t0 = time.monotonic()
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1: 2/2", timeout=20)

        def gauge(s, name, **labels):
            return tc.metric_sum(s, name, queue="jobs", **labels)

        twicetest.wait_until(lambda: self.counts(port)["done"] == 40, timeout=30)
        # The oldest age the workers saw shows for one interval.
        oldest = twicetest.wait_until(
            lambda: gauge(tc.scrape(port), "twice_queue_oldest_age_seconds"), timeout=5,
            interval=0.05, message="twice_queue_oldest_age_seconds stayed 0")
        self.assertLess(oldest, time.monotonic() - t0 + 5)
        for i in range(0, 60, 10):  # they run 30 s: two stay in flight, 58 visible
            self.sqs.send_batch(url, [json.dumps({"id": "s%d" % k, "sleep_ms": 30000})
                                      for k in range(i, i + 10)])

        def sixty():
            s = tc.scrape(port)
            vis, inf = (gauge(s, "twice_queue_messages", state=st)
                        for st in ("visible", "in_flight"))
            return (vis, inf) if vis + inf == 60 and inf > 0 else None

        vis, inf = twicetest.wait_until(sixty, timeout=5, interval=0.1,
                                        message="the gauges never showed 60 left")
        self.assertLessEqual(inf, 2, "two workers, concurrency 1")
        s = tc.scrape(port)
        self.assertEqual(gauge(s, "twice_queue_messages", state="delayed"), 0)
        received = gauge(s, "twice_messages_received_total")
        self.assertEqual(received, 40 + inf)
        self.assertEqual(gauge(s, "twice_message_age_seconds_count"), received)
        self.assertEqual(gauge(s, "twice_message_age_seconds_bucket", le="+Inf"), received)
        self.assertGreater(gauge(s, "twice_message_age_seconds_sum"), 0)
        elapsed = time.monotonic() - t0
        # the gauges' reads; each worker's readiness check (QueueArn) is not one of them
        reads = [r for t, r in proxy.operations
                 if t.endswith(".GetQueueAttributes") and r.get("QueueUrl") == url
                 and "ApproximateNumberOfMessages" in r.get("AttributeNames", [])]
        self.assertGreaterEqual(len(reads), 2)
        self.assertLessEqual(len(reads), elapsed / 1 + 2, "one read per interval, not per worker")
        self.assertEqual(d.stop(), 0)


class OldestAge(twicetest.TwiceTestCase):
    """twice_queue_oldest_age_seconds is what an autoscaler scales on: it reads 0 only
    when the queue is known empty, and grows while messages wait unreceived (every
    handler slot busy, the queue paused), rather than dropping to 0 exactly when more
    workers are needed."""

    def start(self, prefix, **queue_options):
        url, dlq = self.queue_pair(prefix)
        dsn = self.new_database(prefix)
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        port = tc.free_port()
        conf = tc.config(self.env, dsn, [tc.queue("jobs", url, dlq, "effect-tx",
                                                  **queue_options)],
                         [tc.plugin("effect-tx", tc.test_plugin(self.env, "effect_tx"))],
                         metrics_port=port, drain_timeout=1, queue_stats_interval=1)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1: 1/1", timeout=20)
        return url, dsn, port, d

    @staticmethod
    def oldest(port):
        return tc.metric_sum(tc.scrape(port), "twice_queue_oldest_age_seconds", queue="jobs")

    def assert_tracks(self, port, sent_at, seconds, ahead=0.5):
        """For `seconds`, every scrape shows the age of the messages sent at sent_at
        (monotonic), at most an interval and a little behind (ahead: or this far
        ahead): never 0, never going down."""
        last = 0
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            age, true = self.oldest(port), time.monotonic() - sent_at
            self.assertGreater(age, true - 2.5, "the gauge fell behind the waiting messages")
            self.assertLess(age, true + ahead)
            self.assertGreaterEqual(age, last)
            last = age
            time.sleep(0.25)

    def test_grows_while_every_handler_slot_is_busy(self):
        """One slot, held by a job that runs 30 s: the other messages wait, and the
        gauge keeps counting their age, interval after interval."""
        url, dsn, port, d = self.start("busy", concurrency=1, batch_size=1)
        sent_at = time.monotonic()
        self.sqs.send_batch(url, [json.dumps({"id": "b%d" % k, "sleep_ms": 30000})
                                  for k in range(5)])
        tc.wait_metric(port, "twice_messages_received_total", 1, queue="jobs")
        # A reading may fall between the send and the receive, which takes hundreds of
        # ms under load: it sees them visible and none received, and counts them from
        # the reading before, up to an interval ahead (CI's ASan stage, four tests on
        # two cores, read 0.89 with the messages at most 0.28 s old); the next reading
        # takes the received age, lower. From the first reading after the receive it is
        # that age grown, behind the real one: ahead only by SentTimestamp's ms.
        before = self.oldest(port)
        twicetest.wait_until(lambda: self.oldest(port) != before, timeout=5, interval=0.05,
                             message="no reading after the receive")
        self.assert_tracks(port, sent_at, 4, ahead=0.05)
        self.assertEqual(tc.metric_sum(tc.scrape(port), "twice_messages_received_total",
                                       queue="jobs"), 1, "the slot stayed busy")
        self.assertEqual(d.stop(), 0)

    def test_grows_while_paused_and_reads_0_once_the_queue_is_empty(self):
        """Paused, then messages sent (none ever received): the gauge grows from the
        first reading that sees them waiting; resumed, they are received and done, and
        it reads 0, the queue being empty."""
        url, dsn, port, d = self.start("paused", wait_time=1)
        r = subprocess.run([self.env.binary("twicectl"), "-c", d.config_path, "pause", "jobs",
                            "--reason", "autoscaler test"], capture_output=True, text=True,
                           env=d.process_env, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        d.wait_log(r"queue jobs: paused: not receiving", timeout=10)
        time.sleep(1.5)  # the long poll under way when it paused has ended
        sent_at = time.monotonic()
        self.sqs.send_batch(url, [json.dumps({"id": "p%d" % k}) for k in range(3)])
        twicetest.wait_until(lambda: self.oldest(port) >= 2, timeout=6, interval=0.1,
                             message="the gauge did not grow while paused")
        # counted from the reading before the first that saw them: up to an interval ahead
        self.assert_tracks(port, sent_at, 3, ahead=1.5)
        self.assertEqual(tc.metric_sum(tc.scrape(port), "twice_messages_received_total",
                                       queue="jobs"), 0, "nothing received while paused")
        r = subprocess.run([self.env.binary("twicectl"), "-c", d.config_path, "resume", "jobs"],
                           capture_output=True, text=True, env=d.process_env, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        twicetest.wait_until(lambda: self.pg.query(dsn, "SELECT count(*) FROM effects")[0][0]
                             == 3, timeout=20, message="the three jobs after the resume")
        twicetest.wait_until(lambda: self.oldest(port) == 0, timeout=5, interval=0.1,
                             message="the gauge of an empty queue is not 0")
        time.sleep(2.5)  # and stays 0: an empty queue is known empty, not waiting
        self.assertEqual(self.oldest(port), 0)
        self.assertEqual(d.stop(), 0)


class Exposition(twicetest.TwiceTestCase):
    """/metrics as a strict reader of the text format takes it (promcheck.py)."""

    start = Metrics.start
    counts = Metrics.counts

    def scrape_strict(self, port):
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
            return promcheck.check(r.read())

    def test_strictly_valid_with_a_hostile_pause_reason_and_counters_only_grow(self):
        """An operator's pause reason becomes a label value: quotes, a backslash, a
        newline and UTF-8 past what the shared region keeps of a label. The body stays
        valid UTF-8 (a cut label ends at a whole character; Prometheus drops a whole
        scrape over one bad byte), every family has one HELP and TYPE, histograms add
        up, and no counter goes down across a reload and a killed worker."""
        url, dlq, dsn, port, d = self.start("strict")
        for i in range(5):
            self.sqs.send(url, json.dumps({"id": "s%d" % i}))
        self.sqs.send(url, json.dumps({"id": "bad", "reject": True}))
        twicetest.wait_until(lambda: self.counts(port)["done"] == 5, timeout=30)
        reason = 'say "hi" \\ to\nthe "ops" ' + "\u20ac" * 40
        self.assertRaises(UnicodeDecodeError, reason.encode()[:95].decode)  # a cut mid-€
        r = subprocess.run([self.env.binary("twicectl"), "-c", d.config_path, "pause", "jobs",
                            "--reason", reason], capture_output=True, text=True,
                           env=d.process_env, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)

        def paused():
            samples, _ = self.scrape_strict(port)
            return [dict(k[1])["reason"] for k, v in samples.items()
                    if k[0] == "twice_queue_paused" and v == 1]

        shown = twicetest.wait_until(paused, timeout=10, message="twice_queue_paused")
        self.assertEqual(len(shown), 1)
        self.assertTrue(reason.startswith(shown[0]) and len(shown[0]) > 40, shown[0])
        before, types = self.scrape_strict(port)
        self.assertEqual(types["twice_handler_duration_seconds"], "histogram")
        mark = d.mark()
        d.signal(signal.SIGHUP)
        d.wait_log(r"reload done", since=mark, timeout=30)
        # a worker of generation 2: one of generation 1 may still be draining, and
        # gone by the time it is signalled
        twicetest.wait_until(lambda: len(re.findall(r"\(generation 1\) drained and exited",
                                                     d.log_text()[mark:])) == 2, timeout=30)
        os.kill(d.worker_pids()[0], signal.SIGKILL)
        d.wait_log(r"killed by signal 9", timeout=10)
        after, _ = self.scrape_strict(port)
        self.assertEqual(promcheck.went_down(before, after, types), {})
        for line in d.log_text().splitlines():  # the reason's newline starts no line
            self.assertRegex(line, r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z ")
        self.assertEqual(d.stop(), 0)


    def paused_series(self, port):
        """Every twice_queue_paused sample of the strictly read body, as sorted
        (queue, reason, value)."""
        samples, _ = self.scrape_strict(port)
        return sorted((dict(k[1])["queue"], dict(k[1])["reason"], v)
                      for k, v in samples.items() if k[0] == "twice_queue_paused")

    def ctl(self, d, *args):
        r = subprocess.run([self.env.binary("twicectl"), "-c", d.config_path, *args],
                           capture_output=True, text=True, env=d.process_env, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_the_paused_gauge_shows_only_the_current_pause(self):
        """One series per queue, whatever pauses came before: the current reason at 1
        while paused, reason "" at 0 while not. A reason once shown does not stay in
        the exposition (at 0, or at 1 after a reload) once the pause ends or changes."""
        url, dlq, dsn, port, d = self.start("pausegauge")

        def shows(*want):
            want, seen = sorted(want), []

            def now():
                seen[:] = self.paused_series(port)
                return seen == want

            try:
                twicetest.wait_until(now, timeout=10)
            except AssertionError:
                self.fail("twice_queue_paused: %r, not %r" % (seen, want))

        shows(("jobs", "", 0))
        self.ctl(d, "pause", "jobs", "--reason", "first reason")
        shows(("jobs", "first reason", 1))
        self.ctl(d, "resume", "jobs")
        shows(("jobs", "", 0))
        self.ctl(d, "pause", "jobs", "--reason", "second reason")
        shows(("jobs", "second reason", 1))
        self.ctl(d, "pause", "jobs", "--reason", "third reason")  # a new reason, still paused
        shows(("jobs", "third reason", 1))
        # A reload starts a new pause watch: what the old one showed is still replaced.
        mark = d.mark()
        d.signal(signal.SIGHUP)
        self.ctl(d, "resume", "jobs")
        d.wait_log(r"reload done", since=mark, timeout=30)
        shows(("jobs", "", 0))
        time.sleep(2.5)  # a pause watch round later, still one series
        self.assertEqual(self.paused_series(port), [("jobs", "", 0)])
        self.assertEqual(d.stop(), 0)


class HostileClients(twicetest.TwiceTestCase):
    """Clients of the metrics listener that misbehave, on purpose or not."""

    start = Metrics.start

    def hold(self, n, request, source="127.0.0.2"):
        """n connections to the listener from source, each having sent request (an
        unfinished one keeps its connection open); closed at the test's end."""
        socks = []
        self.addCleanup(lambda: [s.close() for s in socks])
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", self.port), timeout=5,
                                         source_address=(source, 0))
            socks.append(s)
            try:
                s.sendall(request)
            except OSError:
                pass  # refused at once: what a limit does
        return socks

    def raw(self, request):
        """The status line twiced answers a raw request with."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
            s.sendall(request)
            answer = b""
            while not answer.endswith(b"\n") or b"\r\n" not in answer:
                chunk = s.recv(4096)
                if not chunk:
                    break
                answer += chunk
            return answer.split(b"\r\n")[0].decode()

    def test_a_flood_of_slow_connections_leaves_scrapes_fast_and_the_log_quiet(self):
        """1,100 connections from one address that never finish their request (a
        slow-loris, or a broken client's pool): the master stays up, another address
        still scrapes at once, and the log does not get a line per connection. What a
        scanner tries next is answered: a huge request line, paths that climb, a POST
        (405 with the methods allowed)."""
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard != resource.RLIM_INFINITY and hard < 1400:
            self.skipTest("needs 1,400 descriptors, the hard limit is %d" % hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1400), hard))
        self.addCleanup(resource.setrlimit, resource.RLIMIT_NOFILE, (soft, hard))
        url, dlq, dsn, self.port, d = self.start("flood", workers=1)
        # Ready takes a first receive and a store check after the workers say so:
        # what the flood must not change is a /readyz that answers 200.
        twicetest.wait_until(lambda: tc.http_status(self.port, "/readyz")[0] == 200,
                             timeout=20, message="/readyz 200 before the flood")
        mark = d.mark()
        self.hold(1100, b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        time.sleep(1)
        for path in ("/metrics", "/healthz", "/readyz"):
            t0 = time.monotonic()
            status, body = tc.http_status(self.port, path, timeout=5)
            self.assertEqual(status, 200, "%s: %s" % (path, body))
            self.assertLess(time.monotonic() - t0, 1.0, path)
        self.assertTrue(d.running())
        self.assertLess(d.log_text()[mark:].count("metrics: "), 5, d.log_tail(10))
        # What a scanner tries: answered, never served from elsewhere.
        self.assertIn(" 414 ", self.raw(b"GET /" + b"a" * 200000 + b" HTTP/1.1\r\n\r\n"))
        for path in (b"/../metrics", b"/%2e%2e/etc/passwd", b"/metrics/../etc/passwd",
                     b"//etc/passwd"):
            self.assertIn(" 404 ", self.raw(b"GET " + path + b" HTTP/1.0\r\n\r\n"))
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
            s.sendall(b"POST /metrics HTTP/1.0\r\nContent-Length: 0\r\n\r\n")
            answer = s.makefile("rb").read().decode()
        self.assertIn(" 405 ", answer.split("\r\n")[0])
        self.assertIn("\r\nAllow: GET, HEAD\r\n", answer)
        self.assertEqual(d.stop(), 0)


class Dashboard(twicetest.TwiceTestCase):
    def test_every_dashboard_query_names_a_metric_twiced_exports(self):
        path = os.path.join(self.env.source_dir, "etc", "grafana-dashboard.json")
        with open(path) as f:
            dash = json.load(f)
        exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
        titles = " ".join(p["title"] for p in dash["panels"]).lower()
        for word in ("outcome", "duplicates", "dlq depth", "p99", "in flight", "recycled",
                     "series table"):
            self.assertIn(word, titles)
        url, dlq = self.queue_pair("dash")
        dsn = self.new_database("dash")
        port = tc.free_port()
        conf = tc.config(self.env, dsn, [tc.queue("jobs", url, dlq, "effect-tx")],
                         [tc.plugin("effect-tx", tc.test_plugin(self.env, "effect_tx"))],
                         metrics_port=port)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        _, text = tc.http_status(port, "/metrics")
        exported = set(re.findall(r"^# TYPE (\S+)", text, re.M))
        for expr in exprs:
            for name in re.findall(r"\b(twice_[a-z0-9_]+)", expr):
                base = re.sub(r"_(bucket|sum|count)$", "", name)
                self.assertIn(base, exported, "%s in %r" % (name, expr))
        self.assertEqual(d.stop(), 0)


if __name__ == "__main__":
    unittest.main()
