"""snss3: small SNS (query protocol) and S3 (path-style REST) clients for the emulator.

What it is for: the integration tests of envelopes and payloads in S3 (test_shapes.py)
create topics, subscribe queues, publish, and put, read and delete objects in fauxqs,
which answers SNS and S3 on its SQS port (env.sns_endpoint, env.s3_endpoint). Requests
are signed with twicetest.sigv4_sign. Not for assertions.

Used by: test_shapes.py.
"""

import datetime
import hashlib
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET

import twicetest


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def _find(root, name):
    """The text of the first element called name, namespaces ignored."""
    for el in root.iter():
        if el.tag.rsplit("}", 1)[-1] == name:
            return el.text
    return None


class Sns:
    """CreateTopic, Subscribe (to an SQS queue) and Publish."""

    def __init__(self, env):
        self.endpoint = env.sns_endpoint.rstrip("/") + "/"
        self.region = env.region
        self.env = env

    def call(self, action, params):
        form = dict(params, Action=action, Version="2010-03-31")
        body = urllib.parse.urlencode(form).encode()
        date = _now()
        headers = {"Content-Type": "application/x-www-form-urlencoded",
                   "Host": urllib.parse.urlsplit(self.endpoint).netloc, "X-Amz-Date": date}
        headers["Authorization"] = twicetest.sigv4_sign(
            "POST", self.endpoint, dict(headers), body, self.region, "sns",
            self.env.aws_access_key_id, self.env.aws_secret_access_key, date)
        req = urllib.request.Request(self.endpoint, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return ET.fromstring(r.read())
        except urllib.error.HTTPError as e:
            raise AssertionError("SNS %s: HTTP %d: %s" % (action, e.code, e.read()[:300]))

    def create_topic(self, name):
        return _find(self.call("CreateTopic", {"Name": name}), "TopicArn")

    def subscribe_queue(self, topic_arn, queue_arn, raw=False):
        params = {"TopicArn": topic_arn, "Protocol": "sqs", "Endpoint": queue_arn,
                  "Attributes.entry.1.key": "RawMessageDelivery",
                  "Attributes.entry.1.value": "true" if raw else "false"}
        return _find(self.call("Subscribe", params), "SubscriptionArn")

    def publish(self, topic_arn, message, attrs=None):
        """Publish a message (str) with String attributes; returns the SNS MessageId."""
        params = {"TopicArn": topic_arn, "Message": message}
        for i, (name, value) in enumerate(sorted((attrs or {}).items()), start=1):
            params["MessageAttributes.entry.%d.Name" % i] = name
            params["MessageAttributes.entry.%d.Value.DataType" % i] = "String"
            params["MessageAttributes.entry.%d.Value.StringValue" % i] = value
        return _find(self.call("Publish", params), "MessageId")


class S3:
    """Buckets and objects, path-style: ENDPOINT/bucket/key."""

    def __init__(self, env):
        self.endpoint = env.s3_endpoint.rstrip("/")
        self.region = env.region
        self.env = env

    def request(self, method, path, body=b""):
        """(status, body bytes, headers) of one signed request; never raises for a status."""
        url = self.endpoint + urllib.parse.quote(path, safe="/-_.~")
        date = _now()
        headers = {"Host": urllib.parse.urlsplit(url).netloc, "X-Amz-Date": date,
                   "X-Amz-Content-Sha256": hashlib.sha256(body).hexdigest()}
        headers["Authorization"] = twicetest.sigv4_sign(
            method, url, dict(headers), body, self.region, "s3",
            self.env.aws_access_key_id, self.env.aws_secret_access_key, date)
        if method == "PUT":
            headers["Content-Type"] = "application/octet-stream"
        req = urllib.request.Request(url, data=body if method == "PUT" else None,
                                     headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, r.read(), dict(r.headers)
        except urllib.error.HTTPError as e:
            return e.code, e.read(), dict(e.headers)

    def create_bucket(self, bucket):
        status, body, _ = self.request("PUT", "/" + bucket)
        assert status in (200, 409), "CreateBucket %s: %d %s" % (bucket, status, body[:200])

    def put(self, bucket, key, data):
        status, body, _ = self.request("PUT", "/%s/%s" % (bucket, key), data)
        assert status == 200, "PutObject: %d %s" % (status, body[:200])

    def get(self, bucket, key):
        """The object's bytes, or None when it does not exist."""
        status, body, _ = self.request("GET", "/%s/%s" % (bucket, key))
        return body if status == 200 else None

    def exists(self, bucket, key):
        return self.request("HEAD", "/%s/%s" % (bucket, key))[0] == 200
