"""twicetest: the harness every Python integration test imports.

Used by: every tests/integration/test_*.py (test_harness.py tests the harness itself),
and outside the tests by scripts/demo.py, scripts/create-queues.py, scripts/envtool.py
and bench/ (common.py, bench.py, cgrind.py).

What it is for: talking to the real test servers that scripts/testenv.sh starts on
127.0.0.1 (the SQS emulator, PostgreSQL, the SMTP sink, the HTTP receiver) and
driving the twiced daemon as a process. What it is not: a mock of any of them, or
a place for assertions about twice itself (those belong in the test_*.py files).

Stdlib and psycopg2 only; runs on Debian's /usr/bin/python3.

    class MyTest(twicetest.TwiceTestCase):
        def test_x(self):
            url, dlq = self.queue_pair("x")
            dsn = self.new_database("x")
            d = self.start_twiced(CONFIG, QUEUE_URL=url, DSN=dsn)
            d.wait_log(r"ready")
"""

import base64
import datetime
import email
import email.policy
import glob
import hashlib
import hmac
import itertools
import json
import os
import re
import shutil
import signal
import socket
import string
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

# Test credentials. fauxqs does not check signatures, but it reads the region from the
# credential scope, and tests grep logs for these values to prove secrets stay out.
TEST_ACCESS_KEY_ID = "AKIDTWICETEST0000000"
TEST_SECRET_ACCESS_KEY = "twiceTestSecret/DoNotLog+0123456789abcdef"

REQUIRED_VARS = (
    "TWICE_TEST_RUN_DIR",
    "TWICE_TEST_PGHOST",
    "TWICE_TEST_PGPORT",
    "TWICE_TEST_PGUSER",
    "TWICE_TEST_PGPASSWORD",
    "TWICE_TEST_PGDSN",
    "TWICE_TEST_SQS_ENDPOINT",
    "TWICE_TEST_REGION",
    "TWICE_TEST_SMTP_PORT",
    "TWICE_TEST_SMTP_DIR",
    "TWICE_TEST_SMTP_USER",
    "TWICE_TEST_SMTP_PASSWORD",
    "TWICE_TEST_HTTP_PORT",
    "TWICE_TEST_HTTP_URL",
    "TWICE_BIN_DIR",
    "TWICE_TEST_PLUGIN_DIR",
    "TWICE_PLUGIN_BUILD_DIR",
    "TWICE_SOURCE_DIR",
)

_counter = itertools.count(1)


def unique_name(prefix, limit=63):
    """A name no other test (or parallel test process) uses: prefix-pid-n-random.

    Only [A-Za-z0-9_-] survive, so the result is valid for SQS queues, database
    names (after lower()) and URL path segments. limit caps the length.
    """
    clean = re.sub(r"[^A-Za-z0-9_-]", "-", prefix) or "t"
    tail = "-%d-%d-%s" % (os.getpid(), next(_counter), os.urandom(3).hex())
    return clean[: max(1, limit - len(tail))] + tail


def _free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(fn, timeout=10.0, interval=0.1, message=None):
    """Call fn until it returns something truthy; return that value.

    Raises AssertionError with message (and fn's last value) after timeout seconds.
    Exceptions from fn propagate: a broken probe is a failure, not a reason to wait.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() >= deadline:
            what = message or "condition not met"
            raise AssertionError("%s (waited %.1fs; last value %r)" % (what, timeout, value))
        time.sleep(interval)


class EnvError(AssertionError):
    """The test environment is missing: a failure, never a skip."""


class Env:
    """The test run's servers and build paths, from the environment.

    TWICE_TEST_* come from RUN_DIR/env.sh (scripts/testenv.sh up), the rest from ctest.
    A missing variable raises EnvError, so the test fails and says what to run.
    """

    def __init__(self, environ=None):
        environ = os.environ if environ is None else environ
        missing = [name for name in REQUIRED_VARS if not environ.get(name)]
        if missing:
            raise EnvError(
                "test environment missing (%s): run the tests with scripts/test.sh, which "
                "starts the servers and runs ctest; or `scripts/testenv.sh up DIR`, "
                "`. DIR/env.sh` and ctest in the build directory" % ", ".join(missing)
            )
        self.vars = {name: environ[name] for name in REQUIRED_VARS}
        self.run_dir = environ["TWICE_TEST_RUN_DIR"]
        self.pg_host = environ["TWICE_TEST_PGHOST"]
        self.pg_port = int(environ["TWICE_TEST_PGPORT"])
        self.pg_user = environ["TWICE_TEST_PGUSER"]
        self.pg_password = environ["TWICE_TEST_PGPASSWORD"]
        self.pg_dsn = environ["TWICE_TEST_PGDSN"]
        self.sqs_endpoint = environ["TWICE_TEST_SQS_ENDPOINT"]
        # fauxqs answers SNS and S3 on its SQS port (older env.sh files lack these)
        self.sns_endpoint = environ.get("TWICE_TEST_SNS_ENDPOINT", self.sqs_endpoint)
        self.s3_endpoint = environ.get("TWICE_TEST_S3_ENDPOINT", self.sqs_endpoint)
        self.region = environ["TWICE_TEST_REGION"]
        self.smtp_host = "127.0.0.1"
        self.smtp_port = int(environ["TWICE_TEST_SMTP_PORT"])
        self.smtp_dir = environ["TWICE_TEST_SMTP_DIR"]
        self.smtp_user = environ["TWICE_TEST_SMTP_USER"]
        self.smtp_password = environ["TWICE_TEST_SMTP_PASSWORD"]
        self.http_port = int(environ["TWICE_TEST_HTTP_PORT"])
        self.http_url = environ["TWICE_TEST_HTTP_URL"].rstrip("/")
        self.bin_dir = environ["TWICE_BIN_DIR"]
        self.test_plugin_dir = environ["TWICE_TEST_PLUGIN_DIR"]
        self.plugin_build_dir = environ["TWICE_PLUGIN_BUILD_DIR"]
        self.source_dir = environ["TWICE_SOURCE_DIR"]
        self.aws_access_key_id = TEST_ACCESS_KEY_ID
        self.aws_secret_access_key = TEST_SECRET_ACCESS_KEY

    def binary(self, name):
        """Path of a built program (twiced, twicectl) in TWICE_BIN_DIR."""
        return os.path.join(self.bin_dir, name)

    def template_values(self):
        """The $NAMES every config template may use (see Twiced)."""
        return {
            "SQS_ENDPOINT": self.sqs_endpoint,
            "REGION": self.region,
            "PGDSN": self.pg_dsn,
            "PLUGIN_DIR": self.plugin_build_dir,
            "TEST_PLUGIN_DIR": self.test_plugin_dir,
            "HTTP_URL": self.http_url,
            "SMTP_HOST": self.smtp_host,
            "SMTP_PORT": str(self.smtp_port),
            "SMTP_USER": self.smtp_user,
            "SMTP_PASSWORD": self.smtp_password,
            "SOURCE_DIR": self.source_dir,
        }


# --------------------------------------------------------------------------- SigV4


def _hmac(key, text):
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()


def sigv4_sign(method, url, headers, body, region, service, access_key, secret_key, amz_date):
    """Sign a request with AWS Signature Version 4; return the Authorization value.

    headers: the headers to sign (name -> value, Host included); body: bytes; url: its
    path and query are canonicalised (the query sorted). Pure: tests check it against
    the published vectors.
    """
    parts = urllib.parse.urlsplit(url)
    path = urllib.parse.quote(parts.path or "/", safe="/-_.~")
    pairs = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    query = "&".join(
        "%s=%s" % (urllib.parse.quote(k, safe="-_.~"), urllib.parse.quote(v, safe="-_.~"))
        for k, v in sorted(pairs)
    )
    canon = {}
    for name, value in headers.items():
        canon[name.lower()] = " ".join(str(value).split())
    signed = ";".join(sorted(canon))
    creq = "\n".join(
        [
            method,
            path,
            query,
            "".join("%s:%s\n" % (n, canon[n]) for n in sorted(canon)),
            signed,
            hashlib.sha256(body).hexdigest(),
        ]
    )
    scope = "%s/%s/%s/aws4_request" % (amz_date[:8], region, service)
    sts = "\n".join(
        ["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(creq.encode()).hexdigest()]
    )
    key = _hmac(("AWS4" + secret_key).encode(), amz_date[:8])
    for part in (region, service, "aws4_request"):
        key = _hmac(key, part)
    signature = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
    return "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s" % (
        access_key,
        scope,
        signed,
        signature,
    )


# --------------------------------------------------------------------------- SQS


class SqsError(Exception):
    """An SQS error answer: code is the __type suffix (QueueDoesNotExist, ...)."""

    def __init__(self, operation, status, code, message):
        super().__init__("%s: HTTP %s %s: %s" % (operation, status, code, message))
        self.operation = operation
        self.status = status
        self.code = code
        self.message = message


def _message_attributes(attrs):
    """name -> str | int | float | bytes | full SQS dict, as SQS MessageAttributes."""
    out = {}
    for name, value in (attrs or {}).items():
        if isinstance(value, dict):
            out[name] = value
        elif isinstance(value, bytes):
            out[name] = {"DataType": "Binary", "BinaryValue": base64.b64encode(value).decode()}
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[name] = {"DataType": "Number", "StringValue": str(value)}
        else:
            out[name] = {"DataType": "String", "StringValue": str(value)}
    return out


def _handle(message_or_handle):
    if isinstance(message_or_handle, dict):
        return message_or_handle["ReceiptHandle"]
    return message_or_handle


class Sqs:
    """A small SQS JSON-protocol client (urllib, real SigV4) for the emulator.

    Messages come back as SQS returns them: dicts with MessageId, ReceiptHandle, Body,
    Attributes (system attributes, strings) and MessageAttributes.
    """

    def __init__(self, endpoint, region="us-east-1", access_key=TEST_ACCESS_KEY_ID,
                 secret_key=TEST_SECRET_ACCESS_KEY, timeout=30):
        self.endpoint = endpoint.rstrip("/") + "/"
        self.region = region
        self.access_key = access_key
        self.secret_key = secret_key
        self.timeout = timeout

    @classmethod
    def from_env(cls, env):
        return cls(env.sqs_endpoint, env.region)

    unique_name = staticmethod(unique_name)

    def call(self, operation, params):
        """One signed POST; returns the decoded JSON answer or raises SqsError."""
        body = json.dumps(params).encode()
        amz_date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        headers = {
            "Content-Type": "application/x-amz-json-1.0",
            "Host": urllib.parse.urlsplit(self.endpoint).netloc,
            "X-Amz-Date": amz_date,
            "X-Amz-Target": "AmazonSQS." + operation,
        }
        headers["Authorization"] = sigv4_sign(
            "POST", self.endpoint, dict(headers), body, self.region,
            "sqs", self.access_key, self.secret_key, amz_date)
        req = urllib.request.Request(self.endpoint, data=body, headers=headers, method="POST")
        wait = params.get("WaitTimeSeconds", 0)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout + wait) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                err = json.loads(raw or b"{}")
            except ValueError:
                err = {"message": raw.decode("utf-8", "replace")}
            code = str(err.get("__type", e.code)).split(":")[0].rsplit("#", 1)[-1]
            raise SqsError(operation, e.code, code,
                           err.get("message") or err.get("Message") or "") from None
        except urllib.error.URLError as e:
            raise SqsError(operation, 0, "Unreachable",
                           "cannot reach the SQS emulator at %s (%s): is scripts/testenv.sh "
                           "up?" % (self.endpoint, e.reason)) from None
        return json.loads(raw) if raw.strip() else {}

    def create_queue(self, name, attributes=None):
        """Create (or find, if identical) a queue; returns its URL."""
        params = {"QueueName": name}
        if name.endswith(".fifo"):
            attributes = dict(attributes or {}, FifoQueue="true")
        if attributes:
            params["Attributes"] = {k: str(v) for k, v in attributes.items()}
        return self.call("CreateQueue", params)["QueueUrl"]

    def create_queue_pair(self, name, fifo=False, attributes=None, max_receive_count=100):
        """A queue and its DLQ (NAME-dlq) with a RedrivePolicy; returns (url, dlq_url).

        maxReceiveCount is high (100) so that twice's own max_attempts decides when a
        message goes to the DLQ, not the emulator's redrive.
        """
        suffix = ".fifo" if fifo else ""
        if name.endswith(".fifo"):
            name = name[: -len(".fifo")]
        dlq_url = self.create_queue(name + "-dlq" + suffix)
        policy = {"deadLetterTargetArn": self.queue_arn(dlq_url),
                  "maxReceiveCount": max_receive_count}
        attrs = dict(attributes or {}, RedrivePolicy=json.dumps(policy))
        return self.create_queue(name + suffix, attrs), dlq_url

    def delete_queue(self, url):
        self.call("DeleteQueue", {"QueueUrl": url})

    def attributes(self, url, names=("All",)):
        """GetQueueAttributes: name -> string value."""
        res = self.call("GetQueueAttributes", {"QueueUrl": url, "AttributeNames": list(names)})
        return res.get("Attributes", {})

    def queue_arn(self, url):
        return self.attributes(url, ["QueueArn"])["QueueArn"]

    def send(self, url, body, attrs=None, group=None, dedup=None, delay=None):
        """SendMessage; body is a str (dicts/lists are JSON-encoded). Returns MessageId."""
        params = {"QueueUrl": url, "MessageBody": self._body(body)}
        params.update(self._send_options(attrs, group, dedup, delay))
        return self.call("SendMessage", params)["MessageId"]

    def send_batch(self, url, entries):
        """SendMessageBatch of up to 10 entries: bodies, or dicts with body, attrs,
        group, dedup, delay. Returns the message ids in entry order; any failed entry
        raises SqsError."""
        batch = []
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict) or "body" not in entry:
                entry = {"body": entry}
            item = {"Id": "m%d" % i, "MessageBody": self._body(entry["body"])}
            item.update(self._send_options(entry.get("attrs"), entry.get("group"),
                                           entry.get("dedup"), entry.get("delay")))
            batch.append(item)
        res = self.call("SendMessageBatch", {"QueueUrl": url, "Entries": batch})
        if res.get("Failed"):
            f = res["Failed"][0]
            raise SqsError("SendMessageBatch", 200, f.get("Code"), f.get("Message", ""))
        ids = {ok["Id"]: ok["MessageId"] for ok in res.get("Successful", [])}
        return [ids["m%d" % i] for i in range(len(batch))]

    @staticmethod
    def _body(body):
        return body if isinstance(body, str) else json.dumps(body)

    @staticmethod
    def _send_options(attrs, group, dedup, delay):
        opts = {}
        if attrs:
            opts["MessageAttributes"] = _message_attributes(attrs)
        if group is not None:
            opts["MessageGroupId"] = group
        if dedup is not None:
            opts["MessageDeduplicationId"] = dedup
        if delay is not None:
            opts["DelaySeconds"] = int(delay)
        return opts

    def receive(self, url, max=10, wait=0, visibility=None, attrs=True):  # noqa: A002
        """ReceiveMessage; returns a list of message dicts (maybe empty)."""
        params = {"QueueUrl": url, "MaxNumberOfMessages": max, "WaitTimeSeconds": wait}
        if visibility is not None:
            params["VisibilityTimeout"] = visibility
        if attrs:
            params["AttributeNames"] = ["All"]
            params["MessageSystemAttributeNames"] = ["All"]
            params["MessageAttributeNames"] = ["All"]
        return self.call("ReceiveMessage", params).get("Messages", [])

    def delete(self, url, message):
        """DeleteMessage; message is a received dict or its receipt handle."""
        self.call("DeleteMessage", {"QueueUrl": url, "ReceiptHandle": _handle(message)})

    def change_visibility(self, url, message, timeout):
        self.call("ChangeMessageVisibility", {"QueueUrl": url,
                                              "ReceiptHandle": _handle(message),
                                              "VisibilityTimeout": int(timeout)})

    def purge(self, url):
        self.call("PurgeQueue", {"QueueUrl": url})

    def counts(self, url):
        """(visible, in_flight, delayed) from the Approximate* attributes."""
        a = self.attributes(url, ["ApproximateNumberOfMessages",
                                  "ApproximateNumberOfMessagesNotVisible",
                                  "ApproximateNumberOfMessagesDelayed"])
        return (int(a.get("ApproximateNumberOfMessages", 0)),
                int(a.get("ApproximateNumberOfMessagesNotVisible", 0)),
                int(a.get("ApproximateNumberOfMessagesDelayed", 0)))

    def drain(self, url, visibility=30):
        """Receive until empty: every message visible now (they stay in flight for
        `visibility` seconds, so nothing is returned twice)."""
        out = []
        while True:
            batch = self.receive(url, max=10, wait=0, visibility=visibility)
            if not batch:
                return out
            out.extend(batch)


# --------------------------------------------------------------------------- PostgreSQL


class Pg:
    """Throwaway databases in the run's PostgreSQL cluster (psycopg2, autocommit)."""

    def __init__(self, env):
        self.env = env

    def dsn(self, dbname):
        """libpq URI for dbname, password included (twiced configs use it as is)."""
        return "postgresql://%s:%s@%s:%d/%s" % (
            urllib.parse.quote(self.env.pg_user, safe=""),
            urllib.parse.quote(self.env.pg_password, safe=""),
            self.env.pg_host, self.env.pg_port, dbname)

    def connect(self, dsn=None):
        """A new autocommit connection; the caller closes it."""
        import psycopg2  # only Pg needs it; Sqs is used by scripts without it

        conn = psycopg2.connect(dsn or self.env.pg_dsn, connect_timeout=10)
        conn.autocommit = True
        return conn

    def new_database(self, prefix="t"):
        """CREATE DATABASE with a unique name; returns its DSN."""
        name = unique_name(prefix, limit=63).lower().replace("-", "_")
        self.query(self.env.pg_dsn, 'CREATE DATABASE "%s"' % name)
        return self.dsn(name)

    def drop_database(self, dsn):
        name = urllib.parse.urlsplit(dsn).path.lstrip("/")
        self.query(self.env.pg_dsn, 'DROP DATABASE IF EXISTS "%s" WITH (FORCE)' % name)

    def query(self, dsn, sql, params=None):
        """Run one statement; returns its rows (a list of tuples, [] if none)."""
        conn = self.connect(dsn)
        try:
            with conn.cursor() as cur:
                cur.execute(sql, params)
                return cur.fetchall() if cur.description is not None else []
        finally:
            conn.close()


# --------------------------------------------------------------------------- SMTP sink


class Mail:
    """One message the SMTP sink stored: envelope (from its JSON sidecar) and content."""

    def __init__(self, meta_path):
        with open(meta_path, encoding="utf-8") as f:
            meta = json.load(f)
        self.path = meta_path[: -len(".json")] + ".eml"
        self.number = meta["n"]
        self.mail_from = meta["mail_from"]
        self.rcpt_tos = meta["rcpt_tos"]
        self.auth_user = meta.get("auth_user")
        with open(self.path, "rb") as f:
            self.data = f.read()
        self.message = email.message_from_bytes(self.data, policy=email.policy.default)
        self.subject = self.message.get("Subject", "")

    def text(self):
        """The plain-text body (else the HTML one), decoded, with \n line ends (the
        stored message keeps the wire's \r\n)."""
        part = self.message.get_body(preferencelist=("plain", "html"))
        return part.get_content().replace("\r\n", "\n") if part is not None else ""

    def __repr__(self):
        return "<Mail %d from %s to %s: %r>" % (self.number, self.mail_from, self.rcpt_tos,
                                                self.subject)


class Mailbox:
    """Reads what the SMTP sink stored in TWICE_TEST_SMTP_DIR (<n>.eml + <n>.json)."""

    def __init__(self, env):
        self.dir = env.smtp_dir

    def messages(self, to=None):
        """Every stored message, oldest first; only those with envelope recipient `to`
        (case-insensitive) when given."""
        names = [n for n in os.listdir(self.dir) if re.fullmatch(r"\d+\.json", n)]
        out = [Mail(os.path.join(self.dir, n)) for n in sorted(names, key=lambda n: int(n[:-5]))]
        if to is not None:
            out = [m for m in out if to.lower() in (r.lower() for r in m.rcpt_tos)]
        return out

    def wait_for(self, to, count=1, timeout=10):
        """Wait until at least count messages for `to` arrived; returns them all."""
        return wait_until(lambda: len(self.messages(to)) >= count and self.messages(to),
                          timeout, message="%d message(s) to %s" % (count, to))


# --------------------------------------------------------------------------- HTTP receiver


class HttpReceiver:
    """One path prefix on the run's HTTP receiver: scripted answers and recordings.

    url is the base URL to hand to twiced (requests to url + "/anything" count too).
    Each instance has a unique prefix, so tests do not see each other's requests.
    """

    def __init__(self, env, prefix=None):
        self.base = env.http_url
        self.prefix = (prefix or unique_name("h")).strip("/")
        self.url = "%s/%s" % (self.base, self.prefix)

    def _call(self, method, kind, payload=None):
        data = None if payload is None else json.dumps(payload).encode()
        req = urllib.request.Request("%s/%s/%s" % (self.base, kind, self.prefix), data=data,
                                     method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read() or b"null")

    def script(self, **behaviour):
        """Script answers for this prefix: fail_first=N, status, retry_after,
        then_status, delay_ms, body, then_body (see scripts/http-receiver.py)."""
        return self._call("POST", "_control", behaviour)

    def requests(self):
        """Recorded requests, oldest first: dicts with method, path, query, headers
        (lower-case names), body (text), body_b64, status (what was answered), conn
        (which TCP connection it came on: equal numbers, the same connection)."""
        return self._call("GET", "_requests")

    def reset(self):
        return self._call("POST", "_reset", {})

    def wait_requests(self, count=1, timeout=10):
        return wait_until(lambda: len(self.requests()) >= count and self.requests(), timeout,
                          message="%d request(s) under %s" % (count, self.url))


# --------------------------------------------------------------------------- twiced


def _proc_stat(pid):
    """(ppid, pgrp) of a live process; None if it is gone or a zombie (it has exited,
    only its parent has not reaped it yet)."""
    try:
        with open("/proc/%s/stat" % pid, encoding="utf-8", errors="replace") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[1]), int(fields[2])


def _processes_where(pred):
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _proc_stat(entry)
            if st is not None and pred(st):
                out.append(int(entry))
    return sorted(out)


class Twiced:
    """One twiced master under test, in its own process group and work directory.

    config is a string.Template: $SQS_ENDPOINT, $REGION, $PGDSN, $PLUGIN_DIR,
    $TEST_PLUGIN_DIR, $HTTP_URL, $SMTP_HOST, $SMTP_PORT, $SMTP_USER, $SMTP_PASSWORD,
    $SOURCE_DIR, $WORKDIR plus the caller's keyword values ($$ is a literal $). A
    missing name raises KeyError. Output (stdout and stderr) goes to log_path.
    """

    def __init__(self, env, config, workdir=None, extra_env=None, binary=None, **values):
        self.env = env
        base = os.path.join(env.run_dir, "twiced")
        os.makedirs(base, exist_ok=True)
        self.workdir = workdir or tempfile.mkdtemp(prefix="twiced-", dir=base)
        self.binary = binary or env.binary("twiced")
        self.config_path = os.path.join(self.workdir, "twice.conf")
        self.log_path = os.path.join(self.workdir, "twiced.log")
        subst = dict(env.template_values(), WORKDIR=self.workdir)
        subst.update({k: str(v) for k, v in values.items()})
        self.config_text = string.Template(config).substitute(subst)
        with open(self.config_path, "w", encoding="utf-8") as f:
            f.write(self.config_text)
        self.proc = None
        self.process_env = self._process_env(extra_env)

    @staticmethod
    def _process_env(extra_env):
        """The inherited environment without the caller's AWS settings, plus the test
        credentials and whatever the test passes (None removes a variable)."""
        penv = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        penv["AWS_ACCESS_KEY_ID"] = TEST_ACCESS_KEY_ID
        penv["AWS_SECRET_ACCESS_KEY"] = TEST_SECRET_ACCESS_KEY
        penv["AWS_EC2_METADATA_DISABLED"] = "true"
        for name, value in (extra_env or {}).items():
            if value is None:
                penv.pop(name, None)
            else:
                penv[name] = str(value)
        return penv

    def start(self, args=("-f",)):
        """Start `twiced ARGS -c CONFIG`; returns self."""
        if self.proc is not None:
            raise RuntimeError("twiced already started")
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [self.binary, *args, "-c", self.config_path], stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT, env=self.process_env,
                cwd=self.workdir, start_new_session=True)
        return self

    def check_config(self, timeout=60):
        """Run `twiced -t -c CONFIG`; returns the CompletedProcess (text output)."""
        return subprocess.run([self.binary, "-t", "-c", self.config_path],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              env=self.process_env, cwd=self.workdir, timeout=timeout)

    @property
    def pid(self):
        return self.proc.pid

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def log_text(self):
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def log_tail(self, lines=60):
        return "\n".join(self.log_text().splitlines()[-lines:])

    def mark(self):
        """The log's current length: pass as since= to wait for something new."""
        return len(self.log_text())

    def wait_log(self, regex, timeout=10, since=0):
        """Wait until the log (from offset `since`) matches regex; returns the match.

        Fails at once if twiced exits without having logged it.
        """
        pattern = re.compile(regex, re.MULTILINE)
        deadline = time.monotonic() + timeout
        while True:
            exited = self.proc is not None and self.proc.poll() is not None
            m = pattern.search(self.log_text(), since)
            if m:
                return m
            if exited or time.monotonic() >= deadline:
                why = ("twiced exited with %s" % self.proc.returncode if exited
                       else "waited %.1fs" % timeout)
                raise AssertionError("twiced log never matched /%s/ (%s). Log tail:\n%s"
                                     % (regex, why, self.log_tail()))
            time.sleep(0.05)

    def worker_pids(self):
        """Pids of the master's child processes (its workers), sorted."""
        return _processes_where(lambda st: st[0] == self.proc.pid)

    def group_pids(self):
        """Every live process in twiced's process group (master included)."""
        return _processes_where(lambda st: st[1] == self.proc.pid)

    def signal(self, sig):
        os.kill(self.proc.pid, sig)

    def stop(self, timeout=15, check_leftovers=True):
        """SIGTERM, then wait; returns the exit code (negative: killed by a signal).

        If twiced overstays timeout it is SIGKILLed and this fails; so does a master
        that exits leaving workers behind (they are killed first).
        """
        if self.proc.poll() is None:
            try:
                self.signal(signal.SIGTERM)
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                raise AssertionError("twiced did not exit within %ss of SIGTERM (killed). "
                                     "Log tail:\n%s" % (timeout, self.log_tail())) from None
        left = self._kill_group()
        if left and check_leftovers:
            raise AssertionError("twiced exited but left processes %s behind (killed)" % left)
        return self.proc.returncode

    def kill(self):
        """SIGKILL the master and everything in its process group."""
        if self.proc is not None:
            self._kill_group()
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()

    def _kill_group(self):
        left = self.group_pids()
        if left:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            wait_until(lambda: not self.group_pids(), 10, 0.05,
                       message="process group %d did not die" % self.proc.pid)
        return left

    def close(self):
        """Make sure nothing of this twiced is left running (used by cleanups)."""
        if self.proc is not None:
            if self.proc.poll() is None:
                try:
                    self.stop(check_leftovers=False)
                except AssertionError:
                    pass
            self.kill()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# --------------------------------------------------------------------------- TestCase


class TwiceTestCase(unittest.TestCase):
    """Base class: self.env, self.sqs, self.pg and helpers that clean up after
    themselves (even when the test fails; a failed test also prints twiced's log)."""

    def setUp(self):
        super().setUp()
        self.env = Env()
        self.sqs = Sqs.from_env(self.env)
        self.pg = Pg(self.env)

    def _failed(self):
        """Has this test failed so far? Read from the running TestResult (unittest
        has no public hook for it); if that is not reachable, say yes, so a log is
        printed rather than lost."""
        result = getattr(getattr(self, "_outcome", None), "result", None)
        if result is None:
            return True
        bad = list(getattr(result, "failures", [])) + list(getattr(result, "errors", []))
        return any(getattr(test, "test_case", test) is self for test, _ in bad)

    def queue_pair(self, prefix="q", fifo=False, attributes=None):
        """A fresh queue and DLQ with unique names; returns (url, dlq_url)."""
        name = unique_name(prefix, limit=80 - len("-dlq.fifo"))
        return self.sqs.create_queue_pair(name, fifo=fifo, attributes=attributes)

    def new_database(self, prefix="t"):
        """A fresh database (dropped after the test); returns its DSN."""
        dsn = self.pg.new_database(prefix)
        self.addCleanup(self.pg.drop_database, dsn)
        return dsn

    def pg_standby(self):
        """A hot standby of the run's PostgreSQL cluster, still in recovery (it streams
        from the run's server and is never promoted): pg_basebackup -R of the whole
        cluster (the databases made so far included) and pg_ctl start on a free port, as
        the cluster's owner (`postgres` when we are root). Stopped and removed after the
        test; a few seconds. Returns its port: a dsn of the run's server with that port
        reaches the same database of the same cluster, read-only."""
        bindir = os.environ.get("TWICE_PG_BINDIR") or "/usr/lib/postgresql/15/bin"
        if not os.path.exists(os.path.join(bindir, "pg_basebackup")):
            found = sorted(d for d in glob.glob("/usr/lib/postgresql/*/bin")
                           if os.path.exists(os.path.join(d, "pg_basebackup")))
            if not found:
                raise EnvError("no pg_basebackup in /usr/lib/postgresql: run scripts/deps.sh")
            bindir = found[-1]
        top = tempfile.mkdtemp(prefix="standby-", dir=self.env.run_dir)
        self.addCleanup(shutil.rmtree, top, True)
        as_owner = []
        if os.getuid() == 0:
            shutil.chown(top, "postgres")
            as_owner = ["runuser", "-u", "postgres", "--"]
        os.chmod(top, 0o700)
        data, port = os.path.join(top, "data"), _free_port()
        env = dict(os.environ, PGPASSWORD=self.env.pg_password)

        def run(*args):
            r = subprocess.run(as_owner + list(args), capture_output=True, text=True,
                               env=env, cwd=top, timeout=60)
            if r.returncode != 0:
                raise AssertionError("%s failed: %s%s" % (args[0], r.stdout, r.stderr))

        run(os.path.join(bindir, "pg_basebackup"), "-h", self.env.pg_host, "-p",
            str(self.env.pg_port), "-U", self.env.pg_user, "-D", data, "-R", "-c", "fast",
            "-X", "stream")
        pg_ctl = os.path.join(bindir, "pg_ctl")
        run(pg_ctl, "-D", data, "-l", os.path.join(top, "log"), "-w", "-t", "30", "-o",
            "-p %d -c unix_socket_directories=%s -c shared_preload_libraries=" % (port, top),
            "start")
        self.addCleanup(subprocess.run, as_owner + [pg_ctl, "-D", data, "-m", "immediate",
                                                    "-w", "stop"],
                        capture_output=True, cwd=top, timeout=60)
        return port

    def distinct_effects(self, dsn):
        """(distinct keys, rows) in the effects table (tc.EFFECTS_TABLE) of dsn: equal
        when no job had a second effect."""
        return tuple(self.pg.query(dsn, "SELECT count(DISTINCT key), count(*) FROM effects")[0])

    def mailbox(self):
        return Mailbox(self.env)

    def http_receiver(self, prefix=None):
        return HttpReceiver(self.env, prefix)

    def notify_socket(self, timeout=30, abstract=False):
        """A datagram socket standing in for systemd's NOTIFY_SOCKET (closed after the
        test), with a receive timeout; returns (NOTIFY_SOCKET value, socket). abstract:
        a Linux abstract-namespace name instead of a file ("@name" in NOTIFY_SOCKET,
        a leading NUL byte in the address), which sd_notify(3) allows."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.addCleanup(sock.close)
        if abstract:
            name = unique_name("twice-test")
            sock.bind("\0" + name)
            value = "@" + name
        else:
            value = os.path.join(tempfile.mkdtemp(dir=self.env.run_dir), "notify.sock")
            sock.bind(value)
        sock.settimeout(timeout)
        return value, sock

    def twiced(self, config, **kwargs):
        """A Twiced (not started) that is stopped and reported on after the test."""
        d = Twiced(self.env, config, **kwargs)
        self.addCleanup(self._close_twiced, d)
        return d

    def start_twiced(self, config, args=("-f",), **kwargs):
        return self.twiced(config, **kwargs).start(args)

    SANITIZER_REPORT = re.compile(r"ERROR: (Address|Leak)Sanitizer|runtime error: "
                                  r"|WARNING: ThreadSanitizer")

    def _close_twiced(self, d):
        d.close()
        report = self.SANITIZER_REPORT.search(d.log_text())
        if report:
            raise AssertionError("twiced's log holds a sanitizer report (%s):\n%s"
                                 % (d.log_path, d.log_tail(80)))
        if self._failed():
            sys.stderr.write("\n--- twiced log (%s), last lines ---\n%s\n---\n"
                             % (d.log_path, d.log_tail()))
