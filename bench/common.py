"""common.py: what every part of the benchmark shares: its error, its log line, the SQS
client of the preload and the queue sampling, the message plan, the environment of the
contenders and the run's PostgreSQL.

Not for: measuring (sysstat.py, dbwork.py) or deciding anything (bench.py). Stdlib and
psycopg2 only; runs on Debian's /usr/bin/python3.
"""

import datetime
import http.client
import json
import os
import sys
import types
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import twicetest  # noqa: E402  (the project's SQS client and SigV4, reused)


class BenchError(Exception):
    """A run that lost or double-handled messages, or could not run: exit non-zero."""


def log(text):
    print("bench: " + text, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- SQS


class Sqs(twicetest.Sqs):
    """twicetest's client over one kept-alive HTTP connection (preloading 20,000
    messages one new connection per call would take longer than the drain)."""

    def __init__(self, endpoint, region):
        super().__init__(endpoint, region)
        self.parts = urllib.parse.urlsplit(self.endpoint)
        self.conn = None

    def call(self, operation, params):
        body = json.dumps(params).encode()
        amz_date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        headers = {
            "Content-Type": "application/x-amz-json-1.0",
            "Host": self.parts.netloc,
            "X-Amz-Date": amz_date,
            "X-Amz-Target": "AmazonSQS." + operation,
        }
        headers["Authorization"] = twicetest.sigv4_sign(
            "POST", self.endpoint, dict(headers), body, self.region, "sqs",
            self.access_key, self.secret_key, amz_date)
        for attempt in (1, 2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.parts.hostname, self.parts.port,
                                                       timeout=60)
            try:
                self.conn.request("POST", "/", body=body, headers=headers)
                resp = self.conn.getresponse()
                raw = resp.read()
                break
            except (OSError, http.client.HTTPException) as e:
                self.conn.close()
                self.conn = None
                if attempt == 2:
                    raise BenchError("%s: cannot reach the emulator at %s: %s"
                                     % (operation, self.endpoint, e)) from None
        if resp.status != 200:
            raise BenchError("%s: HTTP %d: %s" % (operation, resp.status, raw[:300]))
        return json.loads(raw) if raw.strip() else {}


def message_plan(n):
    """The bodies of a run: n messages over d = n - n//10 distinct keys, so 10% of the
    messages repeat an earlier key (the same body, a new message). The first half of the
    originals comes first; the repeats (of the first n//10 keys) are spread among the
    second half, so a repeat arrives long after its original was completed, as a
    redelivery or a double send would. Returns (bodies, d)."""
    dups = n // 10
    d = n - dups
    keys = ["k%07d" % i for i in range(d)]
    first, rest = keys[: d // 2], keys[d // 2:]
    order = list(first)
    every = max(1, len(rest) // max(1, dups))
    j = 0
    for i, k in enumerate(rest):
        order.append(k)
        if j < dups and i % every == every - 1:
            order.append(keys[j])
            j += 1
    order.extend(keys[j:dups])
    return [json.dumps({"id": k}) for k in order], d


def preload(sqs, url, bodies):
    for i in range(0, len(bodies), 10):
        chunk = bodies[i:i + 10]
        out = sqs.call("SendMessageBatch", {
            "QueueUrl": url,
            "Entries": [{"Id": str(j), "MessageBody": b} for j, b in enumerate(chunk)]})
        if out.get("Failed") or len(out.get("Successful", [])) != len(chunk):
            raise BenchError("preload: SendMessageBatch failed: %r" % out.get("Failed"))
    visible, inflight, delayed = sqs.counts(url)
    if (visible, inflight, delayed) != (len(bodies), 0, 0):
        raise BenchError("preload: queue holds %d visible, %d in flight, %d delayed; want %d"
                         % (visible, inflight, delayed, len(bodies)))


def end_run(ctx, proc, urls, dsn):
    """After a run, whatever happened: kill proc (a Popen, or None) if it still runs,
    delete the run's queues (one already gone is no error) and its database."""
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait()
    for u in urls:
        try:
            ctx.sqs.delete_queue(u)
        except (BenchError, twicetest.SqsError):
            pass
    ctx.pg.drop_database(dsn)


def clean_env(extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["AWS_ACCESS_KEY_ID"] = twicetest.TEST_ACCESS_KEY_ID
    env["AWS_SECRET_ACCESS_KEY"] = twicetest.TEST_SECRET_ACCESS_KEY
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    env.update(extra or {})
    return env


# The keys of --prefill: completed before the run, never one of its keys.
PREFILL_PREFIX = "noop:pre"


class Pg(twicetest.Pg):
    """The run's PostgreSQL: a fresh database per run (psycopg2, autocommit); the
    connections, queries and databases of the tests' harness, on the bench's DSN."""

    def __init__(self, dsn):
        super().__init__(types.SimpleNamespace(pg_dsn=dsn))
        self.admin_dsn = dsn
        self.parts = urllib.parse.urlsplit(dsn)

    def dsn(self, dbname):
        return urllib.parse.urlunsplit(self.parts._replace(path="/" + dbname))

    def key_states(self, dsn, table):
        """(rows, completed rows) of an idempotency table, leaving out the keys the bench
        put there before the run (PREFILL_PREFIX); and whether those are all still there,
        completed (the number of them, else -1)."""
        rows = self.query(dsn, 'SELECT count(*) FILTER (WHERE NOT pre),'
                          ' count(*) FILTER (WHERE NOT pre AND state = %%s),'
                          ' count(*) FILTER (WHERE pre), count(*) FILTER (WHERE pre AND'
                          ' state = %%s) FROM (SELECT idempotency_key LIKE %%s AS pre, state'
                          ' FROM "%s") t' % table, ("completed", "completed",
                                                    PREFILL_PREFIX + "%"))
        rows_, completed, pre, pre_completed = rows[0]
        return rows_, completed, pre if pre == pre_completed else -1


def preload_unchecked(sqs, url, bodies):
    for i in range(0, len(bodies), 10):
        sqs.call("SendMessageBatch", {"QueueUrl": url, "Entries": [
            {"Id": str(j), "MessageBody": b} for j, b in enumerate(bodies[i:i + 10])]})


def quote(value):
    """A libconfig string literal."""
    return '"%s"' % str(value).replace("\\", "\\\\").replace('"', '\\"')

