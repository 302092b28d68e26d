"""The SQS endpoint unreachable, failing, throttling or hanging: a worker stopped while
its deletes cannot reach SQS, receives that back off and recover, and a delete that is
never answered while another job runs past its lease. Real servers; a
fault proxy of the tests' own stands between twiced and the emulator (PostgreSQL's
faults, which restart the shared server, are in test_serial_faults.py)."""

import json
import os
import re
import subprocess
import tempfile
import time
import unittest

import faultproxy
import twicetest
import twiceconf as tc


class SqsFaults(twicetest.TwiceTestCase):
    def setup_tx(self, prefix, endpoint, **queue_options):
        url, dlq = self.queue_pair(prefix)
        dsn = self.new_database(prefix)
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        options = dict({"concurrency": 8, "visibility_timeout": 10, "max_attempts": 5},
                       **queue_options)
        conf = tc.config(self.env, dsn, [tc.queue("jobs", url, dlq, "effect-tx", **options)],
                         [tc.plugin("effect-tx", tc.test_plugin(self.env, "effect_tx"))],
                         workers=1, endpoint=endpoint)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        return url, dlq, dsn, d

    def test_sigterm_with_sqs_unreachable_stops_within_the_drain(self):
        # The endpoint goes away while four jobs run; SIGTERM. The jobs finish and
        # their keys complete, but no delete can reach SQS: the worker must still
        # leave on its own, shortly after drain_timeout (not be killed by the master
        # at drain_timeout + 15 s), and the messages it could not delete come back
        # after their visibility timeout as duplicates of completed keys.
        proxy = faultproxy.FaultProxy(*faultproxy.split_endpoint(self.env.sqs_endpoint))
        self.addCleanup(proxy.close)
        url, dlq = self.queue_pair("termsqs")
        dsn = self.new_database("termsqs")
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        port = tc.free_port()
        conf = tc.config(self.env, dsn,
                         [tc.queue("jobs", url, dlq, "effect-tx", concurrency=4,
                                   visibility_timeout=5, wait_time=1)],
                         [tc.plugin("effect-tx", tc.test_plugin(self.env, "effect_tx"))],
                         workers=1, metrics_port=port, endpoint=proxy.endpoint, drain_timeout=2)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        self.sqs.send_batch(url, [json.dumps({"id": "t%d" % i, "sleep_ms": 1000})
                                  for i in range(4)])
        twicetest.wait_until(lambda: tc.metric_sum(tc.scrape(port), "twice_jobs_in_flight")
                             == 4, timeout=15, message="the four jobs never ran together")
        proxy.refuse()
        began = time.monotonic()
        self.assertEqual(d.stop(timeout=30), 0, "stopped on its own, not killed")
        self.assertLess(time.monotonic() - began, 2 + 10 + 4,
                        "left before the master's kill at 2 + 15 s")
        self.assertNotRegex(d.log_text(), r"did not stop in time")
        self.assertRegex(d.log_text(), r"acknowledgements still failing; their messages come "
                                       r"back after their visibility timeouts")
        self.assertEqual(self.distinct_effects(dsn), (4, 4))
        proxy.passthrough()
        again = self.start_twiced(conf)
        again.wait_log(r"ready: generation 1", timeout=20)
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=30,
                             message="the undeleted messages were not deleted as duplicates")
        self.assertEqual(self.distinct_effects(dsn), (4, 4), "no job ran twice")
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        self.assertEqual(again.stop(timeout=30), 0)

    def test_a_receive_answer_that_trickles_does_not_hold_up_a_stop(self):
        # SQS (or a proxy in between) sends a ReceiveMessage answer one byte every
        # 50 ms, and SIGTERM comes while it arrives. The receive used to ignore the
        # stop once a byte had come and hold it until the call's own limit (wait_time
        # + 10 s: 15 s here, 30 s at the default wait), past drain_timeout (2 s). Now
        # an answer still arriving a second after the stop is cut: the stop takes
        # about that second, and the message in the answer is not lost but hidden
        # until its visibility timeout (3 s) ends, as the log says; it never ran.
        proxy = faultproxy.FaultProxy(*faultproxy.split_endpoint(self.env.sqs_endpoint))
        self.addCleanup(proxy.close)
        url, dlq = self.queue_pair("trickle")
        dsn = self.new_database("trickle")
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        conf = tc.config(self.env, dsn,
                         [tc.queue("jobs", url, dlq, "effect-tx", visibility_timeout=3,
                                   wait_time=5)],
                         [tc.plugin("effect-tx", tc.test_plugin(self.env, "effect_tx"))],
                         workers=1, endpoint=proxy.endpoint, drain_timeout=2)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        proxy.trickle("ReceiveMessage", needle=b"ReceiptHandle")
        self.sqs.send(url, json.dumps({"id": "drip"}))
        self.assertTrue(proxy.trickling.wait(15), "no receive answer trickled")
        time.sleep(0.5)
        began = time.monotonic()
        self.assertEqual(d.stop(timeout=30), 0)
        took = time.monotonic() - began
        self.assertLess(took, 2 + 3, "the stop waited %.1f s for the trickle" % took)
        self.assertRegex(d.log_text(), r"queue jobs: ReceiveMessage: its answer was still "
                                       r"arriving at the stop; the messages in it come back "
                                       r"after their visibility timeout \(3 s\)")
        twicetest.wait_until(lambda: self.sqs.receive(url, visibility=30), timeout=15,
                             message="the message in the cut answer did not come back")
        self.assertEqual(self.distinct_effects(dsn), (0, 0), "it never ran")

    def long_job_behind_proxy(self, prefix, concurrency, sleep_ms):
        """twiced running effect_file on a new queue pair (visibility 4 s) through a
        FaultProxy, with one job that sleeps sleep_ms already running. Returns (proxy,
        url, dlq, effects file, metrics port, twiced)."""
        proxy = faultproxy.FaultProxy(*faultproxy.split_endpoint(self.env.sqs_endpoint))
        self.addCleanup(proxy.close)
        url, dlq = self.queue_pair(prefix)
        effects = os.path.join(tempfile.mkdtemp(dir=self.env.run_dir), "effects.txt")
        port = tc.free_port()
        conf = tc.config(self.env, self.new_database(prefix),
                         [tc.queue("jobs", url, dlq, "effect-file", concurrency=concurrency,
                                   visibility_timeout=4, wait_time=1)],
                         [tc.plugin("effect-file", tc.test_plugin(self.env, "effect_file"),
                                    file=effects)], workers=1, metrics_port=port,
                         endpoint=proxy.endpoint)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        self.sqs.send(url, json.dumps({"id": "long", "sleep_ms": sleep_ms}))
        twicetest.wait_until(lambda: tc.metric_sum(tc.scrape(port), "twice_jobs_in_flight")
                             == 1, timeout=15, message="the long job never started")
        return proxy, url, dlq, effects, port, d

    def test_a_delete_that_hangs_does_not_hold_up_the_heartbeat(self):
        # A job runs longer than its visibility timeout (4 s) when SQS stops answering
        # the acknowledger's DeleteMessageBatch of another job (a black-holed
        # connection, an answer that never comes). Each attempt of that call used to
        # hold the acknowledger's thread, and with it the heartbeat, for 30 s: the
        # running job's visibility and its key's lease (4 + 5 s) were not extended, its
        # message was received again and, the lease lapsed, ran a second time beside
        # the first. Now the acknowledger's calls end within what the heartbeat can
        # spare; the delete is tried again after the heartbeat has run. Then SQS
        # refuses the heartbeat's extensions entry by entry (HTTP 200, Failed), as past
        # a message's 12 hours: that used to go unsaid.
        proxy, url, dlq, effects, port, d = self.long_job_behind_proxy("hangdel", 3, 20000)
        proxy.hang(only="DeleteMessageBatch")
        self.sqs.send(url, json.dumps({"id": "short"}))
        twicetest.wait_until(lambda: proxy.seen["hang"] > 0, timeout=15,
                             message="the short job's delete never came")
        time.sleep(10)  # past the lease of the long job (4 + lease_margin s), twice
        self.assertEqual(len(self.lines(effects)), 1, "only the short job ran")
        # The long job runs on; SQS now refuses its heartbeat's extensions (4 s) entry
        # by entry, HTTP 200, as it does past the 12 hours a message can stay hidden.
        mark = d.mark()
        proxy.rewrite = self.past_twelve_hours
        proxy.passthrough()
        d.wait_log(r"queue jobs: heartbeat: SQS refused to change the visibility of 1 of 1 "
                   r"messages \(InvalidParameterValue: .*43200 seconds.*\): they may be "
                   r"received again", timeout=10, since=mark)
        proxy.rewrite = None
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=30,
                             message="the queue did not end empty")
        self.assertEqual(sorted(self.lines(effects)), ["effect:long", "effect:short"],
                         "each ran once")
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        self.assertEqual(d.stop(timeout=30), 0)

    def test_slow_dead_letters_in_one_pass_do_not_starve_the_heartbeat(self):
        # A long job runs (visibility 4 s, lease 4 + 2 s) when nine jobs are rejected
        # together and SQS answers each SendMessage to the DLQ in 1.2 s: each call
        # within the acknowledger's bound (1.5 s here), but one pass of nine took
        # 11 s without the heartbeat, so the long job's message came back, its lease
        # lapsed and it ran a second time beside the first. The heartbeat now looks
        # between the calls.
        proxy, url, dlq, effects, port, d = self.long_job_behind_proxy("slowpass", 10, 12000)
        proxy.slow("SendMessage", 1.2)
        self.sqs.send_batch(url, [json.dumps({"id": "r%d" % i, "reject": True})
                                  for i in range(9)])
        twicetest.wait_until(lambda: self.sqs.counts(dlq)[0] == 9, timeout=40,
                             message="the nine dead letters were not sent")
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=30,
                             message="the queue did not end empty")
        self.assertEqual(self.lines(effects), ["effect:long"], "the long job ran once")
        self.assertNotRegex(d.log_text(), r"lease lost while running")
        self.assertEqual(d.stop(timeout=30), 0)

    def test_connections_reset_mid_answer(self):
        # The network drops the connection halfway through an answer (headers and
        # half the body, then a reset), after SQS did the work, once per action:
        # a ReceiveMessage's messages stay hidden until their visibility timeout
        # (3 s) and then run, once; a DeleteMessageBatch, and a retry's
        # ChangeMessageVisibilityBatch, are tried again; a
        # SendMessage to the DLQ is sent again, and the DLQ gets the letter twice,
        # both copies with the same twice-source-message-id (README says so). One
        # line per failing state, and no job runs twice.
        proxy = faultproxy.FaultProxy(*faultproxy.split_endpoint(self.env.sqs_endpoint))
        self.addCleanup(proxy.close)
        url, dlq, dsn, d = self.setup_tx("reset", proxy.endpoint, visibility_timeout=3,
                                         wait_time=1)
        mark = d.mark()
        # Four receives cut in a row: the first hides c1; the SQS client's own
        # retries (3 attempts) absorb a single reset, so the receiver fails once.
        proxy.cut("ReceiveMessage", times=4)
        self.sqs.send(url, json.dumps({"id": "c1"}))
        twicetest.wait_until(lambda: self.distinct_effects(dsn) == (1, 1), timeout=20,
                             message="the message of the cut receive did not run")
        self.assertEqual(proxy.cuts, 4)
        proxy.cut("DeleteMessageBatch")
        self.sqs.send(url, json.dumps({"id": "c2"}))
        twicetest.wait_until(lambda: proxy.cuts == 5, timeout=15, message="no delete cut")
        proxy.cut("ChangeMessageVisibilityBatch")
        self.sqs.send(url, json.dumps({"id": "c4", "fail_until": 2}))
        twicetest.wait_until(lambda: proxy.cuts == 6, timeout=15,
                             message="no visibility change cut")
        proxy.cut("SendMessage")
        self.sqs.send(url, json.dumps({"id": "c3", "reject": True}))
        twicetest.wait_until(lambda: self.sqs.counts(dlq)[0] >= 2, timeout=20,
                             message="the dead letter was not sent again")
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=20,
                             message="the queue did not end empty")
        twicetest.wait_until(lambda: self.distinct_effects(dsn) == (3, 3), timeout=20,
                             message="c4 did not run at its second attempt")
        self.assertEqual(self.distinct_effects(dsn), (3, 3), "c1, c2 and c4 ran, once each")
        letters = self.sqs.receive(dlq, visibility=60)
        self.assertEqual(len(letters), 2, letters)
        ids = {m["MessageAttributes"]["twice-source-message-id"]["StringValue"]
               for m in letters}
        self.assertEqual(len(ids), 1, "the copies name the same source message")
        log = d.log_text()[mark:]
        self.assertEqual(len(re.findall(r"queue jobs: ReceiveMessage: .*backing off", log)), 1,
                         log)
        self.assertRegex(log, r"receiving again after 1 failed attempts")
        self.assertEqual(d.stop(timeout=30), 0)

    def fauxqs(self, port):
        """A private emulator on port (the run's is shared by other tests), answering."""
        p = subprocess.Popen(["node", os.path.join(self.env.source_dir, "scripts", "fauxqs.mjs"),
                              "--port", str(port), "--modules",
                              os.path.join(self.env.source_dir, "tests", "node_modules")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(lambda: (p.kill(), p.wait()))
        sqs = twicetest.Sqs("http://127.0.0.1:%d" % port, self.env.region)
        twicetest.wait_until(lambda: self._answers(sqs), timeout=20,
                             message="the private emulator did not start")
        return p, sqs

    @staticmethod
    def _answers(sqs):
        try:
            sqs.call("ListQueues", {})
            return True
        except (OSError, twicetest.SqsError):
            return False

    def test_emulator_restarted_mid_run(self):
        # The SQS endpoint restarts: unreachable for a moment, then back without the
        # queue (the emulator keeps nothing), which comes back a while later, its DLQ
        # not yet. twiced says each state once, backs off, and receives again without
        # a restart. A message to dead-letter while its DLQ does not exist
        # (QueueDoesNotExist) is not deleted from its queue, which would lose it: it
        # is given back for the hour lifecycle.h says, with one line saying why.
        port = faultproxy.free_port_now()
        emu, sqs = self.fauxqs(port)
        name = twicetest.unique_name("restart")
        url, dlq = sqs.create_queue_pair(name)
        dsn = self.new_database("restart")
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        conf = tc.config(self.env, dsn, [tc.queue("jobs", url, dlq, "effect-tx", wait_time=1)],
                         [tc.plugin("effect-tx", tc.test_plugin(self.env, "effect_tx"))],
                         workers=1, endpoint="http://127.0.0.1:%d" % port)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        sqs.send(url, json.dumps({"id": "before"}))
        twicetest.wait_until(lambda: self.distinct_effects(dsn) == (1, 1), timeout=15)
        mark = d.mark()
        emu.kill()
        emu.wait()
        d.wait_log(r"queue jobs: ReceiveMessage: CouldNotConnect.*backing off", timeout=15,
                   since=mark)
        emu, sqs = self.fauxqs(port)
        d.wait_log(r"queue jobs: ReceiveMessage: (AWS\.SimpleQueueService\.NonExistentQueue|"
                   r"QueueDoesNotExist).*backing off", timeout=30, since=mark)
        self.assertEqual(sqs.create_queue(name), url)
        sqs.send(url, json.dumps({"id": "after"}))
        sqs.send(url, json.dumps({"id": "nodlq", "reject": True}))
        twicetest.wait_until(lambda: self.distinct_effects(dsn) == (2, 2), timeout=30,
                             message="nothing ran after the emulator came back")
        d.wait_log(r"nodlq.*the dead-letter queue refused the dead letter: \(rejected\) "
                   r"SendMessage: (AWS\.SimpleQueueService\.NonExistentQueue|QueueDoesNotExist)"
                   r".*giving the message back for 3600s", timeout=15, since=mark)
        twicetest.wait_until(lambda: sqs.counts(url) == (0, 1, 0), timeout=10,
                             message="the message to dead-letter was not kept, hidden")
        log = d.log_text()[mark:]
        self.assertEqual(len(re.findall(r"queue jobs: ReceiveMessage: .*backing off", log)), 2,
                         log)
        self.assertRegex(log, r"queue jobs: receiving again after \d+ failed attempts")
        self.assertTrue(d.running())
        self.assertEqual(d.stop(timeout=30), 0)

    @staticmethod
    def past_twelve_hours(target, request, data):
        """A FaultProxy rewrite: a ChangeMessageVisibilityBatch of 4 s visibility (the
        heartbeat's) answered as SQS answers past a message's 12 hours."""
        entries = (request or {}).get("Entries", [])
        if not target.endswith(".ChangeMessageVisibilityBatch") or \
                any(e.get("VisibilityTimeout") != 4 for e in entries):
            return data
        return json.dumps({"Successful": [], "Failed": [
            {"Id": e["Id"], "SenderFault": True, "Code": "InvalidParameterValue",
             "Message": "Value 4 for parameter VisibilityTimeout is invalid. Reason: Total "
                        "VisibilityTimeout for the message is beyond the limit [43200 seconds]"}
            for e in entries]}).encode()

    @staticmethod
    def lines(path):
        """The keys of effect_file's lines, in order."""
        try:
            with open(path) as f:
                return [line.split()[0] for line in f.read().splitlines()]
        except FileNotFoundError:
            return []

    def test_sqs_unreachable_then_failing_then_throttling(self):
        proxy = faultproxy.FaultProxy(*faultproxy.split_endpoint(self.env.sqs_endpoint))
        self.addCleanup(proxy.close)
        url, dlq, dsn, d = self.setup_tx("sqsfault", proxy.endpoint, wait_time=1)
        # Each phase lasts at least its floor and until twiced has met the state
        # (its one log line): the receive backoff keeps growing through the phases
        # (every one fails) towards its 20 s cap, so a fixed window may hold no
        # receive at all. 12 s unreachable is several failed receives (1, 2, 4 s...
        # apart), enough to show one line for them all and the backoff at work.
        phases = [
            ("unreachable", 12, r"CouldNotConnect", lambda: proxy.refuse()),
            ("500", 10, r"InternalFailure",
             lambda: proxy.answer(500, "InternalFailure", "injected")),
            ("403 RequestThrottled", 8, r"RequestThrottled", lambda: proxy.answer(
                403, "RequestThrottled", "Rate exceeded", "RequestThrottled;Sender")),
            ("400 ThrottlingException", 8, r"ThrottlingException", lambda: proxy.answer(
                400, "ThrottlingException", "Rate exceeded")),
        ]
        mark = d.mark()
        sent = 0
        rate = {}
        for name, floor, code, start in phases:
            before = dict(proxy.seen)
            since = d.mark()
            start()
            began = time.monotonic()
            line = re.compile(r"queue jobs: ReceiveMessage: %s.*backing off" % code)
            while (time.monotonic() - began < floor
                   or not line.search(d.log_text(), since)):
                self.assertLess(time.monotonic() - began, 90,
                                "no ReceiveMessage failure logged during %s" % name)
                self.sqs.send(url, json.dumps({"id": "f%d" % sent}))
                sent += 1
                time.sleep(0.5)
            rate[name] = (proxy.seen["status"] - before["status"]) / (time.monotonic() - began)
            self.assertTrue(d.running(), "twiced exited during %s" % name)
        proxy.passthrough()
        twicetest.wait_until(lambda: self.distinct_effects(dsn)[0] == sent, timeout=120,
                             message="the queue was not drained after the endpoint recovered")
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=30)
        self.assertEqual(self.distinct_effects(dsn), (sent, sent))
        log = d.log_text()[mark:]
        failures = re.findall(r"queue jobs: ReceiveMessage: .*backing off", log)
        # One line per state (unreachable, 500, throttled x2), not one per request.
        self.assertLessEqual(len(failures), 6, "\n".join(failures))
        self.assertRegex(log, r"receiving again after \d+ failed attempts")
        # Backed off: well under one request per poll (~1/s with wait_time 1),
        # counting heartbeats and acknowledgements that share the endpoint.
        for name in ("500", "403 RequestThrottled", "400 ThrottlingException"):
            self.assertLess(rate[name], 2.5, "requests/s during %s: %.2f" % (name, rate[name]))
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        self.assertEqual(d.stop(timeout=30), 0)


if __name__ == "__main__":
    unittest.main()
