"""Spans per job over OTLP/HTTP, seen by a real (small) OTLP receiver: one span per job
with its parent from the message's traceparent, a link from AWSTraceHeader, the
messaging attributes and events; the job's traceparent handed to the sync plugin and on
to its HTTP requests; a collector that is down or slow costs spans (counted), never jobs;
twicectl send --traceparent.

fauxqs (the SQS emulator) keeps no AWSTraceHeader: SendMessage's MessageSystemAttributes
are ignored. So the test's proxy in front of it plays that part of SQS: when a
ReceiveMessage asks for AWSTraceHeader (and only then: the test also proves twiced asks),
it sets the system attribute of each received message from the X-Ray header the test put
in the message body's "xray" field, as SQS would return the one set at send time.
"""

import json
import os
import subprocess
import tempfile
import time

import faultproxy
import otlpreceiver
import twicetest
import twiceconf as tc

TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
TP_UNSAMPLED = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
XRAY = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"


def inject_xray(target, request, data):
    """The proxy's rewrite: SQS's AWSTraceHeader, which fauxqs lacks (see above)."""
    if not target.endswith(".ReceiveMessage") or not request:
        return data
    if "AWSTraceHeader" not in request.get("MessageSystemAttributeNames", []):
        return data
    doc = json.loads(data)
    for m in doc.get("Messages", []):
        try:
            xray = json.loads(m["Body"]).get("xray")
        except (ValueError, AttributeError):
            xray = None
        if xray:
            m.setdefault("Attributes", {})["AWSTraceHeader"] = xray
    return json.dumps(doc).encode()


def tracing(endpoint, **options):
    values = {"exporter": "otlp", "endpoint": endpoint, "export_interval_ms": 100}
    values.update(options)
    return "tracing = { %s };" % " ".join(tc.setting(k, v) for k, v in values.items())


class Tracing(twicetest.TwiceTestCase):
    def setUp(self):
        super().setUp()
        self.otlp = otlpreceiver.OtlpReceiver()
        self.addCleanup(self.otlp.close)
        self.effects = tempfile.mktemp(prefix="effects-", dir=self.env.run_dir)

    def start(self, prefix, extra, endpoint=None, queues=None, plugins=None, env=None,
              metrics_port=None, **queue_options):
        url, dlq = self.queue_pair(prefix)
        dsn = self.new_database(prefix)
        options = dict({"max_attempts": 3, "backoff": (1, 1)}, **queue_options)
        queues = (queues or []) + [tc.queue("jobs", url, dlq, "effect-file", **options)]
        plugins = (plugins or []) + [tc.plugin("effect-file", tc.test_plugin(self.env,
                                                                               "effect_file"),
                                               file=self.effects)]
        conf = tc.config(self.env, dsn, queues, plugins, workers=2, extra=extra,
                         endpoint=endpoint, metrics_port=metrics_port)
        d = self.start_twiced(conf, extra_env=env)
        d.wait_log(r"ready: generation 1: 2/2", timeout=20)
        return url, d

    def spans_by_message(self):
        out = {}
        for s in self.otlp.spans():
            out.setdefault(s["attributes"].get("messaging.message.id"), []).append(s)
        return out

    @staticmethod
    def event_names(span):
        return [e["name"] for e in span["events"]]

    def test_one_span_per_job_with_parent_link_and_events(self):
        proxy = faultproxy.FaultProxy(*faultproxy.split_endpoint(self.env.sqs_endpoint))
        self.addCleanup(proxy.close)
        proxy.rewrite = inject_xray
        env = {"OTEL_SERVICE_NAME": "jobs-worker",
               "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=test%2C1,service.name=x"}
        url, d = self.start("trace", tracing(self.otlp.url), endpoint=proxy.endpoint, env=env)
        ids = {
            "parent": self.sqs.send(url, {"id": "p"}, attrs={"traceparent": TP}),
            "link": self.sqs.send(url, {"id": "l", "xray": XRAY}),
            "both": self.sqs.send(url, {"id": "b", "xray": XRAY}, attrs={"traceparent": TP}),
            "bad": self.sqs.send(url, {"id": "x"}, attrs={"traceparent": TP.upper()}),
            "badxray": self.sqs.send(url, {"id": "y", "xray": "Root=1-zz;Parent=00"}),
            "reject": self.sqs.send(url, {"id": "r", "reject": True}),
            "retry": self.sqs.send(url, {"id": "t", "fail_until": 2}),
            "nokey": self.sqs.send(url, {"no_id": 1}),
            "unsampled": self.sqs.send(url, {"id": "u"}, attrs={"traceparent": TP_UNSAMPLED}),
        }
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=30)
        ids["dup"] = self.sqs.send(url, {"id": "p"})  # completed already
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=30)
        want = {k: 1 for k in ids}
        want.update(retry=2, unsampled=0)  # two deliveries; its parent said "not sampled"

        def counted():
            got = self.spans_by_message()
            return {k: len(got.get(mid, [])) for k, mid in ids.items()} == want

        twicetest.wait_until(counted, timeout=15, message="one span per job, want %s" % want)
        time.sleep(0.5)  # and no more later
        self.assertTrue(counted(), self.spans_by_message())
        self.assertEqual(self.otlp.errors, [])
        spans = {k: sorted(self.spans_by_message().get(mid, []),
                           key=lambda s: s["attributes"]["twice.attempt"])
                 for k, mid in ids.items()}

        p = spans["parent"][0]
        self.assertEqual((p["traceId"], p["parentSpanId"]), (TP[3:35], TP[36:52]))
        self.assertEqual(p["links"], [])
        self.assertEqual((p["name"], p["kind"]), ("process jobs", 5))
        a = p["attributes"]
        self.assertEqual(a["messaging.system"], "aws_sqs")
        self.assertEqual(a["messaging.destination.name"], "jobs")
        self.assertEqual(a["messaging.message.id"], ids["parent"])
        self.assertEqual(a["messaging.operation.type"], "process")
        self.assertEqual((a["twice.key"], a["twice.plugin"], a["twice.outcome"],
                          a["twice.attempt"]), ("effect:p", "effect-file", "done", 1))
        self.assertEqual(self.event_names(p), ["claimed", "handle"])
        self.assertNotIn("status", p)
        res = p["resource"]
        self.assertEqual(res["service.name"], "jobs-worker")  # OTEL_SERVICE_NAME wins
        self.assertEqual(res["deployment.environment"], "test,1")
        self.assertIn("service.version", res)

        lk = spans["link"][0]
        self.assertNotIn("parentSpanId", lk)
        self.assertNotEqual(lk["traceId"], "5759e988bd862e3fe1be46a994272793")
        self.assertEqual([(x["traceId"], x["spanId"]) for x in lk["links"]],
                         [("5759e988bd862e3fe1be46a994272793", "53995c3f42cd8ad8")])
        b = spans["both"][0]  # a valid traceparent wins: parent, no link
        self.assertEqual((b["traceId"], b["parentSpanId"], b["links"]),
                         (TP[3:35], TP[36:52], []))

        for k in ("bad", "badxray"):  # malformed: a new trace, noted on the span
            s = spans[k][0]
            self.assertNotIn("parentSpanId", s)
            self.assertEqual(s["links"], [])
            self.assertNotEqual(s["traceId"], TP[3:35])
            self.assertEqual(s["attributes"]["twice.outcome"], "done")
        self.assertIn("invalid traceparent", self.event_names(spans["bad"][0]))
        self.assertIn("invalid AWSTraceHeader", self.event_names(spans["badxray"][0]))

        r = spans["reject"][0]
        self.assertEqual(r["attributes"]["twice.outcome"], "rejected")
        self.assertEqual(r["status"]["code"], 2)
        self.assertIn("rejected on request", r["status"]["message"])
        self.assertEqual(self.event_names(r), ["claimed", "handle", "dead_letter"])

        t1, t2 = spans["retry"]
        self.assertEqual((t1["attributes"]["twice.outcome"], t2["attributes"]["twice.outcome"]),
                         ("retry", "done"))
        self.assertEqual(t2["attributes"]["twice.attempt"], 2)
        self.assertIn("retry", self.event_names(t1))
        self.assertNotEqual(t1["spanId"], t2["spanId"])

        nk = spans["nokey"][0]  # dead-lettered before any handler ran
        self.assertEqual(nk["attributes"]["twice.outcome"], "dead_lettered")
        self.assertEqual(self.event_names(nk), ["dead_letter"])
        dup = spans["dup"][0]
        self.assertEqual(dup["attributes"]["twice.outcome"], "duplicate")
        self.assertEqual(self.event_names(dup), ["duplicate"])
        span_ids = [s["spanId"] for ss in spans.values() for s in ss]
        self.assertEqual(len(span_ids), len(set(span_ids)))
        asked = [r for t, r in proxy.operations if t.endswith(".ReceiveMessage")]
        self.assertTrue(asked and all("AWSTraceHeader" in r["MessageSystemAttributeNames"]
                                      for r in asked))
        self.assertEqual(d.stop(), 0)

    def sync_setup(self, extra):
        rx = self.http_receiver()
        surl, sdlq = self.queue_pair("sync")
        q = [tc.queue("sync", surl, sdlq, "sync")]
        p = [tc.plugin("sync", os.path.join(self.env.plugin_build_dir, "sync.so"),
                       url=rx.url + "/api/{entity}/{id}")]
        url, d = self.start("tsync", extra, queues=q, plugins=p)
        return rx, surl, d

    def test_sync_plugin_sends_the_jobs_traceparent(self):
        rx, surl, d = self.sync_setup(tracing(self.otlp.url))
        rec = {"type": "sync", "entity": "candidate", "id": 7, "version": 1, "data": {}}
        mid = self.sqs.send(surl, rec, attrs={"traceparent": TP})
        mid2 = self.sqs.send(surl, dict(rec, id=8))
        reqs = rx.wait_requests(2)
        twicetest.wait_until(lambda: {mid, mid2} <= set(self.spans_by_message()), timeout=15)
        by_key = {r["headers"]["idempotency-key"]: r["headers"].get("traceparent") for r in reqs}
        for m, key in ((mid, "sync:candidate:7:1"), (mid2, "sync:candidate:8:1")):
            span = self.spans_by_message()[m][0]
            # the request is a child of the job's own span, in the job's trace
            self.assertEqual(by_key[key], "00-%s-%s-01" % (span["traceId"], span["spanId"]))
        self.assertEqual(self.spans_by_message()[mid][0]["traceId"], TP[3:35])
        self.assertEqual(d.stop(), 0)

    def test_tracing_off_passes_the_incoming_traceparent_on(self):
        rx, surl, d = self.sync_setup(tracing(self.otlp.url, exporter="none"))
        rec = {"type": "sync", "entity": "candidate", "id": 9, "version": 1, "data": {}}
        self.sqs.send(surl, rec, attrs={"traceparent": TP})
        self.sqs.send(surl, dict(rec, id=10))
        self.sqs.send(surl, dict(rec, id=11), attrs={"traceparent": TP + "0"})
        reqs = rx.wait_requests(3)
        got = {r["headers"]["idempotency-key"]: r["headers"].get("traceparent") for r in reqs}
        self.assertEqual(got, {"sync:candidate:9:1": TP, "sync:candidate:10:1": None,
                               "sync:candidate:11:1": None})
        time.sleep(0.5)
        self.assertEqual(self.otlp.requests, [])  # no spans are made
        self.assertEqual(d.stop(), 0)

    def run_batch(self, extra, n, port):
        """Queue n jobs, start twiced, and time them from start to the last done."""
        url, dlq = self.queue_pair("rate")
        for i in range(0, n, 10):
            self.sqs.send_batch(url, [{"id": "j%d" % k} for k in range(i, min(n, i + 10))])
        dsn = self.new_database("rate")
        conf = tc.config(self.env, dsn, [tc.queue("jobs", url, dlq, "effect-file",
                                                  concurrency=8)],
                         [tc.plugin("effect-file", tc.test_plugin(self.env, "effect_file"),
                                    file=self.effects)],
                         workers=2, extra=extra, metrics_port=port)
        t0 = time.monotonic()
        d = self.start_twiced(conf)

        def done():
            try:
                s = tc.scrape(port)
            except OSError:
                return False
            return tc.metric_sum(s, "twice_jobs_finished_total", outcome="done") == n

        twicetest.wait_until(done, timeout=60, interval=0.05)
        return time.monotonic() - t0, d

    def test_collector_down_or_slow_costs_spans_not_jobs(self):
        n = 300
        port = tc.free_port()
        up, d = self.run_batch(tracing(self.otlp.url), n, port)
        twicetest.wait_until(lambda: len(self.otlp.spans()) == n, timeout=15)
        s = tc.scrape(port)
        self.assertEqual(tc.metric_sum(s, "twice_spans_exported_total"), n)
        self.assertEqual(tc.metric_sum(s, "twice_spans_dropped_total"), 0)
        self.assertEqual(d.stop(), 0)

        # Down: nothing listens. Every span is dropped and counted; jobs go on.
        port = tc.free_port()
        down, d = self.run_batch(tracing("http://127.0.0.1:%d/v1/traces" % tc.free_port()),
                                 n, port)
        twicetest.wait_until(lambda: tc.metric_sum(tc.scrape(port), "twice_spans_dropped_total",
                                                   reason="export_failed") == n, timeout=15)
        self.assertEqual(tc.metric_sum(tc.scrape(port), "twice_spans_exported_total"), 0)
        self.assertRegex(d.log_text(), r"tracing: exporting spans to http://127\.0\.0\.1:\d+/v1/"
                                       r"traces failed \(1 batches so far")
        self.assertEqual(d.stop(), 0)

        # Slow: each export takes longer than its timeout; the small buffer fills.
        self.otlp.delay = 3
        port = tc.free_port()
        slow, d = self.run_batch(tracing(self.otlp.url, buffer_spans=4, batch_spans=2,
                                         export_timeout=1), n, port)
        s = tc.scrape(port)
        dropped = tc.metric_sum(s, "twice_spans_dropped_total", reason="buffer_full")
        self.assertGreater(dropped, 0)
        # Measured, not asserted (a loaded machine would make any bound flaky).
        print("\n%d jobs: %.2fs with the collector up, %.2fs down, %.2fs slow "
              "(%d spans dropped for a full buffer)" % (n, up, down, slow, dropped))
        self.assertEqual(d.stop(), 0)

    def test_a_collector_that_never_answers_does_not_hold_a_stop(self):
        """A worker stopping gives its spans 2 s to leave, whatever export_timeout says: an
        export already waiting on a collector that accepted the request and never answers
        is cut short (its spans counted as dropped), not waited out."""
        self.otlp.delay = 120
        port = tc.free_port()
        url, d = self.start("hung", tracing(self.otlp.url, export_timeout=60),
                            metrics_port=port)
        self.sqs.send(url, {"id": "h"})
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=15)
        twicetest.wait_until(lambda: self.otlp.pending > 0, timeout=5,
                             message="the export reached the collector")
        t0 = time.monotonic()
        self.assertEqual(d.stop(timeout=60), 0)
        self.assertLess(time.monotonic() - t0, 8, "drain is quick; the hung export is cut")

    def test_environment_endpoint_and_a_bad_one(self):
        base = "http://127.0.0.1:%d" % self.otlp.port
        url, d = self.start("envep", 'tracing = { exporter = "otlp"; export_interval_ms = 100; };',
                            env={"OTEL_EXPORTER_OTLP_ENDPOINT": base})
        mid = self.sqs.send(url, {"id": "e"})
        twicetest.wait_until(lambda: mid in self.spans_by_message(), timeout=15)
        self.assertEqual(self.spans_by_message()[mid][0]["resource"]["service.name"], "twiced")
        self.assertEqual(d.stop(), 0)
        url, d = self.start("badep", 'tracing = { exporter = "otlp"; };',
                            env={"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "localhost:4318",
                                 "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20secret"})
        d.wait_log(r"tracing is off in this worker: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: not a "
                   r"usable URL: must start with http:// or https://")
        # said once at the start too, and by twiced -t, which passes: tracing never stops jobs
        bad = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: not a usable URL: must start with http:// "
               "or https:// (tracing will be off in every worker; jobs run)")
        self.assertIn(bad, d.log_text())
        r = subprocess.run([self.env.binary("twiced"), "-t", "-c", d.config_path],
                           capture_output=True, text=True, env=d.process_env, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "warning: %s\n" % bad)
        self.sqs.send(url, {"id": "f"})  # jobs run all the same
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=15)
        self.assertNotIn("secret", d.log_text() + r.stderr)
        self.assertEqual(d.stop(), 0)

    def test_twicectl_send_traceparent(self):
        url, d = self.start("ctl", tracing(self.otlp.url))
        ctl = [self.env.binary("twicectl"), "-c", d.config_path, "send", "jobs"]

        def send(*args):
            return subprocess.run(ctl + list(args), capture_output=True, text=True,
                                  env=d.process_env, timeout=60)

        r = send("--traceparent", TP, '{"id":"c"}')
        self.assertEqual(r.returncode, 0, r.stderr)
        mid = r.stdout.strip()
        twicetest.wait_until(lambda: mid in self.spans_by_message(), timeout=15)
        span = self.spans_by_message()[mid][0]
        self.assertEqual((span["traceId"], span["parentSpanId"]), (TP[3:35], TP[36:52]))
        for bad, why in ((TP.upper(), "the trace id is not 32 lower-case hex digits"),
                         ("00-" + "0" * 32 + TP[35:], "the trace id is all zeros"),
                         (TP + "-x", "version 00 must be exactly 55 characters")):
            r = send("--traceparent", bad, '{"id":"c"}')
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("--traceparent: not a W3C traceparent (%s)" % why, r.stderr)
        r = send("--traceparent", TP, "--attr", "traceparent=" + TP, "{}")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("traceparent given twice", r.stderr)
        time.sleep(1)
        self.assertEqual(len(self.otlp.spans()), 1)  # nothing else was sent
        self.assertEqual(d.stop(), 0)
