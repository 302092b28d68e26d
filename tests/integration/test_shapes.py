"""Real message shapes (issue 17), against fauxqs's SNS, S3 and SQS: a queue subscribed to an
SNS topic (raw delivery off) keys its jobs from inside the notification and its
MessageAttributes, never by the SNS MessageId, and follows a Message that is an S3 pointer
(the SNS extended client); EventBridge events and S3 event notifications are keyed from
inside; a 2 MB body sent with `twicectl send` travels through S3 and is processed once,
its object deleted after DONE with delete_payload; `twicectl key derive` unwraps the
envelope as twiced does; and bad shapes (a Message that is not a string or is a job
encoded twice, pointers to a bad bucket, a missing or too large object, a pointer that is
not JSON) are dead-lettered with their reason and original body while twiced stays up.
What fauxqs's S3 cannot answer (403, an object bigger than the limit seen from its
requests) comes from the test environment's HTTP receiver standing in for S3. Also an S3
that is down (messages given back), a fair queue's group is in the unit test (fauxqs drops
MessageGroupId on standard queues), `twicectl send --delay` and `twicectl dlq delete
--id`."""

import json
import os
import re
import subprocess
import time
import unittest

import snss3
import twicetest
import twiceconf as tc


def reason(letter):
    return letter["MessageAttributes"]["twice-reason"]["StringValue"]


class Shapes(twicetest.TwiceTestCase):
    def setUp(self):
        super().setUp()
        self.sns = snss3.Sns(self.env)
        self.s3 = snss3.S3(self.env)
        self.bucket = twicetest.unique_name("tw-payloads", limit=40).lower().replace("_", "-")
        self.s3.create_bucket(self.bucket)
        self.effects = os.path.join(self.env.run_dir, twicetest.unique_name("effects") + ".txt")
        self.plugin = tc.plugin("effect", tc.test_plugin(self.env, "effect_file"),
                                file=self.effects)
        self.dsn = self.new_database("shapes")

    def lines(self):
        if not os.path.exists(self.effects):
            return []
        with open(self.effects) as f:
            return [line.split() for line in f if line.strip()]

    def keys(self):
        return [parts[0] for parts in self.lines()]

    def start(self, queues, extra="", run=True, s3_endpoint=None):
        conf = tc.config(self.env, self.dsn, queues, [self.plugin], extra=extra,
                         s3_endpoint=s3_endpoint or self.env.s3_endpoint)
        d = self.twiced(conf)
        if run:
            d.start()
            d.wait_log(r"ready: generation 1", timeout=30)
        return d

    def objects(self):
        """The keys in the test's bucket."""
        listing = self.s3.request("GET", "/" + self.bucket)[1].decode()
        return [part.split("</Key>")[0] for part in listing.split("<Key>")[1:]]

    def ctl(self, d, *args, stdin=None):
        return subprocess.run([self.env.binary("twicectl"), "-c", d.config_path, *args],
                              input=stdin, capture_output=True, text=True,
                              env=d.process_env, timeout=60)

    def drained(self, url, timeout=30):
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=timeout,
                             message="queue drained")

    def letters(self, dlq, count, timeout=30):
        got = []
        twicetest.wait_until(lambda: got.extend(self.sqs.drain(dlq)) or len(got) >= count,
                             timeout=timeout, message="%d dead letters" % count)
        return got

    def test_sns_fanout_keys_from_the_message(self):
        url, dlq = self.queue_pair("sns")
        topic = self.sns.create_topic(twicetest.unique_name("orders"))
        self.sns.subscribe_queue(topic, self.sqs.queue_arn(url), raw=False)
        d = self.start([tc.queue("sns", url, dlq, "effect", envelope="sns",
                                 key="order:{attr:Tenant}:{orderId}")])
        # 40 orders, and 10 more publishes of order 100: 50 notifications, 40 jobs
        orders = list(range(100, 140)) + [100] * 10
        sns_ids = [self.sns.publish(topic, json.dumps({"orderId": o, "n": n}),
                                    attrs={"Tenant": "acme"}) for n, o in enumerate(orders)]
        want = {"order:acme:%d" % o for o in range(100, 140)}
        self.drained(url, timeout=60)
        time.sleep(1)
        keys = self.keys()
        self.assertEqual(len(keys), 40, keys)
        self.assertEqual(set(keys), want)
        self.assertFalse(set(sns_ids) & {k.rsplit(":", 1)[-1] for k in keys})
        self.assertEqual(self.sqs.drain(dlq), [])
        # the SNS extended client: the Message is an S3 pointer, its size an SNS attribute
        self.s3.put(self.bucket, "order-999", b'{"orderId": 999}')
        pointer = json.dumps(["software.amazon.payloadoffloading.PayloadS3Pointer",
                              {"s3BucketName": self.bucket, "s3Key": "order-999"}])
        self.sns.publish(topic, pointer, attrs={"Tenant": "acme", "ExtendedPayloadSize": "16"})
        twicetest.wait_until(lambda: "order:acme:999" in self.keys(), timeout=20,
                             message="the pointer in the notification followed")
        self.assertEqual(len(self.keys()), 41)

        # twicectl key derive unwraps the notification the same way
        note = {"Type": "Notification", "MessageId": "m-1", "TopicArn": topic,
                "Message": json.dumps({"orderId": 100}),
                "MessageAttributes": {"Tenant": {"Type": "String", "Value": "acme"}}}
        r = self.ctl(d, "key", "derive", "--queue", "sns", "--json", json.dumps(note))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["key"], "order:acme:100")
        r = self.ctl(d, "key", "derive", "--queue", "sns", "--json", json.dumps({"orderId": 1}))
        self.assertEqual(r.returncode, 1)
        self.assertEqual(json.loads(r.stdout)["dead_letter"]["reason"], "bad-envelope")
        self.assertEqual(d.stop(), 0)

    def test_eventbridge_and_s3_events(self):
        eb_url, eb_dlq = self.queue_pair("eb")
        s3_url, s3_dlq = self.queue_pair("s3ev")
        d = self.start([
            tc.queue("eb", eb_url, eb_dlq, "effect", envelope="eventbridge",
                     key="{msg:source}:{msg:detail_type}:{invoiceId}"),
            tc.queue("s3ev", s3_url, s3_dlq, "effect", envelope="auto",
                     key="{Records.0.s3.bucket.name}/{Records.0.s3.object.key}"),
        ])
        event = {"version": "0", "id": "ev-1", "detail-type": "InvoicePaid", "source": "billing",
                 "account": "000000000000", "time": "2026-12-03T00:00:00Z",
                 "region": "us-east-1", "resources": [], "detail": {"invoiceId": "INV-9"}}
        for event_id in ("ev-1", "ev-2"):  # the same invoice twice: one effect
            self.sqs.send(eb_url, json.dumps(dict(event, id=event_id)))
        note = {"Records": [{"eventVersion": "2.1", "eventSource": "aws:s3",
                             "eventName": "ObjectCreated:Put",
                             "s3": {"bucket": {"name": "uploads"},
                                    "object": {"key": "cv/ana.pdf", "size": 1024}}}]}
        self.sqs.send(s3_url, json.dumps(note))
        self.drained(eb_url)
        self.drained(s3_url)
        time.sleep(1)
        self.assertEqual(sorted(self.keys()), ["billing:InvoicePaid:INV-9", "uploads/cv/ana.pdf"])
        r = self.ctl(d, "key", "derive", "--queue", "eb", "--json", json.dumps(event))
        self.assertEqual(json.loads(r.stdout)["key"], "billing:InvoicePaid:INV-9", r.stderr)
        self.assertEqual(d.stop(), 0)

    def test_large_payload_goes_through_s3(self):
        url, dlq = self.queue_pair("big")
        d = self.start([tc.queue("big", url, dlq, "effect", key="big:{id}",
                                 payload_bucket=self.bucket, delete_payload=True)], run=False)
        body = json.dumps({"id": "B-1", "blob": "x" * (2 << 20)})
        r = self.ctl(d, "send", "big", "-", stdin=body)
        self.assertEqual(r.returncode, 0, r.stderr)
        # what went to SQS is a pointer with the payload's size; the body is in S3
        msg, = self.sqs.receive(url, visibility=0)
        self.assertEqual(msg["MessageAttributes"]["ExtendedPayloadSize"]["StringValue"],
                         str(len(body)))
        cls, where = json.loads(msg["Body"])
        self.assertEqual(cls, "software.amazon.payloadoffloading.PayloadS3Pointer")
        self.assertEqual(where["s3BucketName"], self.bucket)
        self.assertEqual(self.objects(), [where["s3Key"]])
        self.assertEqual(self.s3.get(self.bucket, where["s3Key"]).decode(), body)
        d.start()
        self.drained(url, timeout=60)
        twicetest.wait_until(lambda: self.keys() == ["big:B-1"], timeout=10)
        # its object is deleted once the job is done
        twicetest.wait_until(lambda: self.objects() == [], timeout=10, message="payload deleted")

        # a pointer to an object that is not there: payload-missing, pointer kept
        pointer = json.dumps(["software.amazon.payloadoffloading.PayloadS3Pointer",
                              {"s3BucketName": self.bucket, "s3Key": "no-such-object"}])
        self.sqs.send(url, pointer, attrs={"ExtendedPayloadSize": 12345})
        letter, = self.letters(dlq, 1)
        self.assertEqual(reason(letter), "payload-missing")
        self.assertEqual(letter["Body"], pointer)
        self.assertEqual(self.keys(), ["big:B-1"])
        # a pointer to another bucket the credentials reach: not read, not deleted,
        # dead-lettered (whoever can send to the queue cannot aim delete_payload at it)
        other = twicetest.unique_name("tw-other", limit=40).lower().replace("_", "-")
        self.s3.create_bucket(other)
        self.s3.put(other, "precious", b'{"id": "P"}')
        elsewhere = json.dumps(["software.amazon.payloadoffloading.PayloadS3Pointer",
                                {"s3BucketName": other, "s3Key": "precious"}])
        self.sqs.send(url, elsewhere, attrs={"ExtendedPayloadSize": 11})
        letter, = self.letters(dlq, 1)
        self.assertEqual((reason(letter), letter["Body"]), ("payload-denied", elsewhere))
        self.assertIn("this queue's payloads are in %s" % self.bucket,
                      letter["MessageAttributes"]["twice-error"]["StringValue"])
        self.assertTrue(self.s3.exists(other, "precious"))
        self.assertEqual(self.keys(), ["big:B-1"])
        self.assertEqual(d.stop(), 0)
        # and delete_payload without payload_bucket is refused with its line
        loose = self.start([tc.queue("big", url, dlq, "effect", key="big:{id}",
                                     delete_payload=True)], run=False)
        r = loose.check_config()
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertRegex(r.stdout + r.stderr, r"%s:\d+: queue 'big': delete_payload needs "
                         r"payload_bucket" % re.escape(loose.config_path))

    def test_bad_shapes_are_dead_lettered(self):
        url, dlq = self.queue_pair("bad")
        env_url, env_dlq = self.queue_pair("badenv")
        d = self.start([tc.queue("bad", url, dlq, "effect", key="k:{id}"),
                        tc.queue("badenv", env_url, env_dlq, "effect", envelope="sns",
                                 key="k:{id}")],
                       extra="max_payload_bytes = 100000;")
        self.s3.put(self.bucket, "huge", b'{"id": "H"}' + b" " * 200000)
        self.s3.put(self.bucket, "small", b'{"id": "S"}')
        cls = "software.amazon.payloadoffloading.PayloadS3Pointer"
        bad = {
            "bad-payload-pointer": json.dumps([cls, {"s3BucketName": "Not_A..Bucket",
                                                     "s3Key": "small"}]),
            "payload-too-large": json.dumps([cls, {"s3BucketName": self.bucket,
                                                   "s3Key": "huge"}]),
        }
        not_json = '["%s", {"s3BucketName": "%s", "s3Key": "small"' % (cls, self.bucket)
        for body in bad.values():
            self.sqs.send(url, body)
        self.sqs.send(url, not_json)
        note = {"Type": "Notification", "MessageId": "m", "TopicArn": "arn:aws:sns:t",
                "Message": {"id": "not-a-string"}}
        self.sqs.send(env_url, json.dumps(note))
        self.sqs.send(env_url, json.dumps({"id": "plain"}))  # no envelope at all
        # a producer that serialised its job twice: the Message is a JSON string
        twice = dict(note, Message=json.dumps(json.dumps({"id": "twice"})))
        self.sqs.send(env_url, json.dumps(twice))
        letters = self.letters(dlq, 3)
        got = {letter["Body"]: reason(letter) for letter in letters}
        self.assertEqual(got, {bad["bad-payload-pointer"]: "bad-payload-pointer",
                               bad["payload-too-large"]: "payload-too-large",
                               not_json: "bad-payload-pointer"})
        env_letters = self.letters(env_dlq, 3)
        self.assertEqual({x["Body"]: reason(x) for x in env_letters},
                         {json.dumps(note): "bad-envelope",
                          json.dumps({"id": "plain"}): "bad-envelope",
                          json.dumps(twice): "missing-key-field"})
        self.assertIn("missing key field id (the body is a JSON string, not an object: "
                      "encoded twice?)",
                      [x["MessageAttributes"]["twice-error"]["StringValue"]
                       for x in env_letters])
        # twiced is up, and a good pointer still works
        self.assertTrue(d.running())
        self.sqs.send(url, json.dumps([cls, {"s3BucketName": self.bucket, "s3Key": "small"}]))
        twicetest.wait_until(lambda: self.keys() == ["k:S"], timeout=20)
        self.assertTrue(self.s3.exists(self.bucket, "small"))  # no delete_payload here
        self.assertEqual(d.stop(), 0)

    def test_check_connect_asks_for_each_payload_bucket(self):
        url, dlq = self.queue_pair("bucket-check")
        missing = twicetest.unique_name("tw-gone", limit=40).lower().replace("_", "-")
        good = self.start([tc.queue("jobs", url, dlq, "effect", payload_bucket=self.bucket)],
                          run=False)
        r = subprocess.run([good.binary, "-t", "--connect", "-c", good.config_path],
                           capture_output=True, text=True, env=good.process_env, timeout=90)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("and 1 payload bucket\n", r.stdout)
        bad = self.start([tc.queue("jobs", url, dlq, "effect", payload_bucket=missing)],
                         run=False)
        self.assertEqual(bad.check_config().returncode, 0, "without --connect S3 is not asked")
        r = subprocess.run([bad.binary, "-t", "--connect", "-c", bad.config_path],
                           capture_output=True, text=True, env=bad.process_env, timeout=90)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertRegex(r.stderr, r"%s:\d+: queue jobs: payload_bucket %s: NoSuchBucket"
                         % (re.escape(bad.config_path), missing))
        self.assertEqual(self.objects(), [], "the check writes nothing")

    def test_s3_down_gives_the_message_back(self):
        """An S3 that does not answer is no reason to dead-letter: the message comes back
        until max_receives says enough (max-receives, the pointer kept)."""
        url, dlq = self.queue_pair("s3down")
        closed = "http://127.0.0.1:%d" % tc.free_port()
        d = self.start([tc.queue("s3down", url, dlq, "effect", key="k:{id}", max_attempts=1,
                                 max_receives=2)], s3_endpoint=closed)
        pointer = json.dumps(["software.amazon.payloadoffloading.PayloadS3Pointer",
                              {"s3BucketName": self.bucket, "s3Key": "k"}])
        self.sqs.send(url, pointer)
        letter, = self.letters(dlq, 1, timeout=30)
        self.assertEqual(reason(letter), "max-receives")
        self.assertEqual(letter["Body"], pointer)
        self.assertGreaterEqual(int(letter["Attributes"]["ApproximateReceiveCount"]), 1)
        self.assertIn("payload could not be fetched", d.log_text())
        self.assertEqual(self.keys(), [])
        self.assertEqual(d.stop(), 0)

    def test_s3_answers_and_the_size_limit(self):
        """What S3 answers, with an S3 stand-in that records each request (the test
        environment's HTTP receiver): a 403 is payload-denied, a 404 payload-missing, an
        object over max_payload_bytes is refused after its HEAD, never downloaded; and
        every request is SigV4-signed for s3 with the payload's hash."""
        bucket = "tw-fake-" + os.urandom(4).hex()
        huge, denied, gone, fine, moved = (self.http_receiver("%s/%s" % (bucket, name))
                                           for name in ("huge", "denied", "gone", "fine", "moved"))
        huge.script(then_body="x" * 300000)
        denied.script(status=403, body="<Error><Code>AccessDenied</Code></Error>")
        gone.script(status=404, body="<Error><Code>NoSuchKey</Code></Error>")
        fine.script(then_body='{"id": "fine"}')
        moved.script(status=301, headers={"x-amz-bucket-region": "eu-west-1"})
        url, dlq = self.queue_pair("fake-s3")
        d = self.start([tc.queue("fake-s3", url, dlq, "effect", key="k:{id}")],
                       extra="max_payload_bytes = 100000;", s3_endpoint=self.env.http_url)
        cls = "software.amazon.payloadoffloading.PayloadS3Pointer"
        bodies = {name: json.dumps([cls, {"s3BucketName": bucket, "s3Key": name}])
                  for name in ("huge", "denied", "gone", "fine", "moved")}
        for body in bodies.values():
            self.sqs.send(url, body)
        got = {x["Body"]: reason(x) for x in self.letters(dlq, 3)}
        self.assertEqual(got, {bodies["huge"]: "payload-too-large",
                               bodies["denied"]: "payload-denied",
                               bodies["gone"]: "payload-missing"})
        twicetest.wait_until(lambda: self.keys() == ["k:fine"], timeout=20)
        self.assertEqual({r["method"] for r in huge.requests()}, {"HEAD"})
        reqs = fine.requests()
        self.assertEqual([r["method"] for r in reqs], ["HEAD", "GET"])
        for r in reqs:
            self.assertTrue(r["headers"]["authorization"].startswith("AWS4-HMAC-SHA256 "))
            self.assertIn("/%s/s3/aws4_request" % self.env.region, r["headers"]["authorization"])
            self.assertEqual(r["headers"]["x-amz-content-sha256"],
                             "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
            self.assertEqual(r["path"], "/%s/fine" % bucket)
        # a HEAD answered with a redirect has no body: the status and the region say why
        d.wait_log(r"HEAD: HTTP 301 PermanentRedirect \(the bucket is in region eu-west-1; "
                   r"check aws.region and aws.s3_endpoint\)", timeout=20)
        self.assertTrue(d.running())
        self.assertEqual(d.stop(), 0)

    def test_send_delay_and_dlq_delete(self):
        url, dlq = self.queue_pair("ops")
        d = self.start([tc.queue("ops", url, dlq, "effect", key="k:{id}")])
        r = self.ctl(d, "send", "ops", "--delay", "3", json.dumps({"id": "late"}))
        self.assertEqual(r.returncode, 0, r.stderr)
        time.sleep(1.5)
        self.assertEqual(self.keys(), [])
        twicetest.wait_until(lambda: self.keys() == ["k:late"], timeout=20)
        r = self.ctl(d, "send", "ops", "--delay", "901", "{}")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(d.stop(), 0)

        ids = [self.sqs.send(dlq, json.dumps({"n": i})) for i in range(3)]
        r = self.ctl(d, "dlq", "delete", "ops", "--id", ids[1])
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        left = sorted(m["MessageId"] for m in self.letters(dlq, 2))
        self.assertEqual(left, sorted([ids[0], ids[2]]))
        r = self.ctl(d, "dlq", "delete", "ops", "--id", "no-such-id")
        self.assertEqual(r.returncode, 1)


if __name__ == "__main__":
    unittest.main()
