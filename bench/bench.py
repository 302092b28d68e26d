"""bench.py: the benchmark of issue 9, run by bench/run.sh (servers up, twiced built).

What it is for: preloading a queue of the SQS emulator, draining it with each contender in
turn - (a) twiced + the no-op plugin with the full idempotency guard, (b) sqs-consumer with
a batched PostgreSQL claim, (c) a bare receive+delete loop - measuring messages/s, CPU
seconds per 10,000 messages and peak RSS of each contender's processes, checking that no
message was lost or handled twice (it exits non-zero otherwise), and a callgrind count of
instructions per message of one twiced worker. Not a test: it asserts no timings.

Stdlib and psycopg2 only; runs on Debian's /usr/bin/python3 with the variables of
scripts/testenv.sh's env.sh in its environment.
"""

import argparse
import datetime
import http.client
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import twicetest  # noqa: E402  (the project's SQS client and SigV4, reused)

HZ = os.sysconf("SC_CLK_TCK")
SAMPLE_S = 0.05          # RSS and queue sampling period
STALL_S = 60             # no progress for this long: the run fails
LEASE_MARGIN = 5
VISIBILITY = 30
WAIT = 1                 # long-poll seconds of every contender
CALLGRIND_MESSAGES = 2000
CALLGRIND_CONCURRENCY = 32  # fixed, so that the figure compares across runs
CALLGRIND_VISIBILITY = 600


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


# --------------------------------------------------------------------------- processes


def proc_stat(pid):
    """(ppid, cpu ticks of the process and its reaped children) or None when gone."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            text = f.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[1]), sum(int(x) for x in fields[11:15])


def descendants(roots):
    """The live processes of the trees under roots, roots included."""
    children = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = proc_stat(int(name))
            if st is not None:
                children.setdefault(st[0], []).append(int(name))
    out, todo = [], list(roots)
    while todo:
        pid = todo.pop()
        if proc_stat(pid) is not None:
            out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def tree_ticks(pids):
    """CPU ticks of these processes, each with its reaped children (utime + stime +
    cutime + cstime): a child that exits moves its time into its parent's."""
    return sum(st[1] for st in map(proc_stat, pids) if st is not None)


def rss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def pss_kib(pid):
    """Proportional set size: shared pages divided among the processes that map them
    (what summing VmRSS over several processes of one program counts several times)."""
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def clean_env(extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["AWS_ACCESS_KEY_ID"] = twicetest.TEST_ACCESS_KEY_ID
    env["AWS_SECRET_ACCESS_KEY"] = twicetest.TEST_SECRET_ACCESS_KEY
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    env.update(extra or {})
    return env


class Pg:
    """The run's PostgreSQL: a fresh database per run (psycopg2, autocommit)."""

    def __init__(self, dsn):
        self.admin_dsn = dsn
        self.parts = urllib.parse.urlsplit(dsn)

    def dsn(self, dbname):
        return urllib.parse.urlunsplit(self.parts._replace(path="/" + dbname))

    def query(self, dsn, sql, params=None):
        import psycopg2

        conn = psycopg2.connect(dsn, connect_timeout=10)
        conn.autocommit = True
        try:
            with conn.cursor() as cur:
                cur.execute(sql, params)
                return cur.fetchall() if cur.description is not None else []
        finally:
            conn.close()

    def new_database(self, prefix):
        name = twicetest.unique_name(prefix, limit=63).lower().replace("-", "_")
        self.query(self.admin_dsn, 'CREATE DATABASE "%s"' % name)
        return self.dsn(name)

    def drop_database(self, dsn):
        name = urllib.parse.urlsplit(dsn).path.lstrip("/")
        self.query(self.admin_dsn, 'DROP DATABASE IF EXISTS "%s" WITH (FORCE)' % name)

    def key_states(self, dsn, table):
        """(rows, completed rows) of an idempotency table."""
        rows = self.query(dsn, 'SELECT count(*), count(*) FILTER (WHERE state = %%s) FROM "%s"'
                          % table, ("completed",))
        return rows[0]


# --------------------------------------------------------------------------- contenders


class Contender:
    """One way of draining the queue. launch() starts its processes and returns once they
    are ready to start; go() starts the drain; stop() ends it and returns its counts;
    check() raises BenchError unless nothing was lost or double-handled."""

    kind = ""
    gated = True  # False: it starts draining as soon as it is launched (twiced)

    def __init__(self, ctx, settings):
        self.ctx = ctx
        self.settings = settings
        self.procs = []

    def roots(self):
        return [p.pid for p in self.procs]

    def go(self):
        for p in self.procs:
            p.stdin.write("go\n")
            p.stdin.flush()

    def stop_node(self):
        totals = {}
        for p in self.procs:
            p.stdin.write("stop\n")
            p.stdin.flush()
        for p in self.procs:
            # A process that hangs on stop is killed, and the run fails below.
            watchdog = threading.Timer(60, p.kill)
            watchdog.start()
            try:
                line = p.stdout.readline()
                rc = p.wait(timeout=60)
            finally:
                watchdog.cancel()
            if rc != 0 or not line.strip():
                raise BenchError("%s: process %d exited with %s (log: %s)"
                                 % (self.kind, p.pid, rc, self.log_path))
            for k, v in json.loads(line).items():
                totals[k] = totals.get(k, 0) + v
        return totals

    def launch_node(self, script, args, copies):
        self.log_path = os.path.join(self.ctx.work, "%s.log" % self.kind)
        logf = open(self.log_path, "ab")
        try:
            for _ in range(copies):
                self.procs.append(subprocess.Popen(
                    ["node", os.path.join(HERE, script), *args], cwd=HERE, env=clean_env(),
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=logf, text=True))
        finally:
            logf.close()
        for p in self.procs:
            line = p.stdout.readline().strip()
            if line != "ready":
                raise BenchError("%s: process %d did not get ready (%r; log: %s)"
                                 % (self.kind, p.pid, line, self.log_path))

    def kill(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()


class Twiced(Contender):
    kind = "twiced"
    gated = False

    def label(self):
        return "workers=%d concurrency=%d receivers=%d" % self.settings

    def launch(self, url, dlq_url, dsn):
        workers, concurrency, receivers = self.settings
        self.dsn = dsn
        self.count_file = os.path.join(self.ctx.work, "noop-counts-%d" % self.ctx.seq())
        self.log_path = os.path.join(self.ctx.work, "twiced.log")
        config = self.ctx.twiced_config(url, dlq_url, dsn, workers, concurrency, receivers,
                                        self.count_file)
        path = os.path.join(self.ctx.work, "twice-%d.conf" % self.ctx.seq())
        with open(path, "w") as f:
            f.write(config)
        with open(self.log_path, "ab") as logf:
            self.procs.append(subprocess.Popen(
                [self.ctx.twiced, "-f", "-c", path], cwd=self.ctx.work, env=clean_env(),
                stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT,
                start_new_session=True))

    def stop(self):
        p = self.procs[0]
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=90)
        if rc != 0:
            raise BenchError("twiced exited with %d (log: %s)" % (rc, self.log_path))
        calls, lines = 0, 0
        if os.path.exists(self.count_file):
            with open(self.count_file) as f:
                for line in f:
                    calls += int(line.split()[1])
                    lines += 1
        return {"handled": calls, "workers_reported": lines}

    def check(self, res, n, d):
        rows, completed = self.ctx.pg.key_states(self.dsn, "twice_idempotency")
        problems = []
        if res["workers_reported"] < self.settings[0]:
            problems.append("only %d of %d workers reported their call count"
                            % (res["workers_reported"], self.settings[0]))
        if res["handled"] != d:
            problems.append("the no-op handler ran %d times for %d distinct keys"
                            % (res["handled"], d))
        if (rows, completed) != (d, d):
            problems.append("idempotency table: %d rows, %d completed; want %d and %d"
                            % (rows, completed, d, d))
        return problems


class SqsConsumer(Contender):
    kind = "sqs-consumer"

    def label(self):
        return "processes=%d consumers=%d" % self.settings

    def launch(self, url, dlq_url, dsn):
        procs, consumers = self.settings
        self.dsn = dsn
        self.ctx.pg.query(dsn, "CREATE TABLE peer_idempotency (idempotency_key text PRIMARY KEY,"
                          " state text NOT NULL, owner text, lease_until timestamptz,"
                          " processed_at timestamptz NOT NULL)")
        self.launch_node("consumer.mjs", [
            "--endpoint", self.ctx.endpoint, "--region", self.ctx.region, "--queue", url,
            "--dsn", dsn, "--table", "peer_idempotency", "--consumers", str(consumers),
            "--wait", str(WAIT), "--visibility", str(VISIBILITY),
            "--lease-margin", str(LEASE_MARGIN)], procs)

    def stop(self):
        return self.stop_node()

    def check(self, res, n, d):
        rows, completed = self.ctx.pg.key_states(self.dsn, "peer_idempotency")
        problems = []
        if res["handled"] != d:
            problems.append("the no-op handler ran %d times for %d distinct keys"
                            % (res["handled"], d))
        if res["acked"] != n:
            problems.append("%d messages acknowledged, want %d" % (res["acked"], n))
        if res["errors"] or res["lost_lease"]:
            problems.append("%d errors, %d lost leases" % (res["errors"], res["lost_lease"]))
        if (rows, completed) != (d, d):
            problems.append("idempotency table: %d rows, %d completed; want %d and %d"
                            % (rows, completed, d, d))
        return problems


class Bare(Contender):
    kind = "bare"

    def label(self):
        return "loops=%d" % self.settings

    def launch(self, url, dlq_url, dsn):
        self.launch_node("bare.mjs", [
            "--endpoint", self.ctx.endpoint, "--region", self.ctx.region, "--queue", url,
            "--loops", str(self.settings), "--wait", str(WAIT),
            "--visibility", str(VISIBILITY)], 1)

    def stop(self):
        return self.stop_node()

    def check(self, res, n, d):
        if (res["received"], res["deleted"], res["failed"], res["errors"]) != (n, n, 0, 0):
            return ["received %d, deleted %d, %d failed deletes, %d errors; want %d, %d, 0, 0"
                    % (res["received"], res["deleted"], res["failed"], res["errors"], n, n)]
        return []


# --------------------------------------------------------------------------- one run


class Context:
    """What every run shares: servers, binaries, a work directory."""

    def __init__(self, args):
        self.endpoint = os.environ["TWICE_TEST_SQS_ENDPOINT"]
        self.region = os.environ["TWICE_TEST_REGION"]
        self.sqs = Sqs(self.endpoint, self.region)
        self.pg = Pg(os.environ["TWICE_TEST_PGDSN"])
        self.build = os.path.abspath(args.build_dir)
        self.twiced = os.path.join(self.build, "bin", "twiced")
        self.noop = os.path.join(self.build, "bench", "noop.so")
        # Fresh for every invocation: count files must not add up across runs.
        self.work = tempfile.mkdtemp(prefix=time.strftime("bench-%Y%m%d-%H%M%S-"),
                                     dir=os.environ["TWICE_TEST_RUN_DIR"])
        self.log_level = args.log_level
        run_dir = os.environ["TWICE_TEST_RUN_DIR"]
        with open(os.path.join(run_dir, "fauxqs.pid")) as f:
            self.fauxqs_pid = int(f.readline())
        with open(os.path.join(run_dir, "pg", "data", "postmaster.pid")) as f:
            self.pg_pid = int(f.readline())
        self._seq = 0

    def seq(self):
        self._seq += 1
        return self._seq

    def twiced_config(self, url, dlq_url, dsn, workers, concurrency, receivers, count_file,
                      visibility=VISIBILITY):
        q = twicetest_quote
        return "\n".join([
            "workers = %d;" % workers,
            "drain_timeout = 30;",
            "log = { level = %s; format = \"text\"; };" % q(self.log_level),
            "aws = { region = %s; endpoint = %s; };" % (q(self.region), q(self.endpoint)),
            "idempotency = { dsn = %s; lease_margin = %d; };" % (q(dsn), LEASE_MARGIN),
            "plugins = ( { name = \"noop\"; path = %s; settings = { count_file = %s; }; } );"
            % (q(self.noop), q(count_file)),
            "queues = ( { name = \"bench\"; url = %s; dlq_url = %s; plugin = \"noop\";"
            " concurrency = %d; receivers = %d; batch_size = 10; wait_time = %d;"
            " visibility_timeout = %d; max_attempts = 5; } );"
            % (q(url), q(dlq_url), concurrency, receivers, WAIT, visibility),
            ""])


def twicetest_quote(value):
    return '"%s"' % str(value).replace("\\", "\\\\").replace('"', '\\"')


def sample_until_drained(ctx, contender, url, n, t0):
    """Sample the contender's RSS every SAMPLE_S until the queue is empty (nothing visible,
    in flight or delayed). Returns (end time, peak summed RSS, peak summed PSS) in KiB."""
    pids = contender.roots()
    peak, peak_pss, last_left, last_change, i = 0, 0, None, time.monotonic(), 0
    while True:
        if i < 20 or i % 10 == 0:
            pids = descendants(contender.roots())
        i += 1
        peak = max(peak, sum(rss_kib(p) for p in pids))
        peak_pss = max(peak_pss, sum(pss_kib(p) for p in pids))
        left = sum(ctx.sqs.counts(url))
        now = time.monotonic()
        if left == 0:
            return now, peak, peak_pss
        if left != last_left:
            last_left, last_change = left, now
        elif now - last_change > STALL_S:
            raise BenchError("%s stalled: %d messages left after %.0fs (%d%% drained)"
                             % (contender.kind, left, now - t0, 100 * (n - left) // n))
        for p in contender.procs:
            if p.poll() is not None:
                raise BenchError("%s: process %d exited with %s during the drain (log: %s)"
                                 % (contender.kind, p.pid, p.returncode,
                                    getattr(contender, "log_path", "?")))
        time.sleep(SAMPLE_S)


def server_ticks(ctx):
    """CPU ticks of the emulator and of PostgreSQL (postmaster and backends): not part of
    any contender's figures, but they tell which server a contender keeps busy."""
    return tree_ticks(descendants([ctx.fauxqs_pid])), tree_ticks(descendants([ctx.pg_pid]))


def run_once(ctx, cls, settings, n):
    """Preload n messages, drain them with one contender, check, measure. Returns a dict
    of figures; raises BenchError when anything was lost or handled twice."""
    bodies, d = message_plan(n)
    url, dlq_url = ctx.sqs.create_queue_pair(twicetest.unique_name("bench-" + cls.kind, 60))
    dsn = ctx.pg.new_database("bench_" + cls.kind.replace("-", "_"))
    c = cls(ctx, settings)
    try:
        preload(ctx.sqs, url, bodies)
        c.launch(url, dlq_url, dsn)
        t0 = time.monotonic()
        srv0 = server_ticks(ctx)
        cpu0 = tree_ticks(descendants(c.roots())) if c.gated else 0
        if c.gated:
            c.go()
        t1, peak, peak_pss = sample_until_drained(ctx, c, url, n, t0)
        cpu1 = tree_ticks(descendants(c.roots()))
        srv1 = server_ticks(ctx)
        res = c.stop()
        problems = c.check(res, n, d)
        left, dlq_left = ctx.sqs.counts(url), ctx.sqs.counts(dlq_url)
        if left != (0, 0, 0) or dlq_left != (0, 0, 0):
            problems.append("queue holds %s (visible, in flight, delayed), its DLQ %s; want "
                            "nothing" % (left, dlq_left))
        if problems:
            raise BenchError("%s (%s): %s" % (cls.kind, c.label(), "; ".join(problems)))
    finally:
        c.kill()
        for u in (url, dlq_url):
            try:
                ctx.sqs.delete_queue(u)
            except (BenchError, twicetest.SqsError):
                pass
        ctx.pg.drop_database(dsn)
    seconds = t1 - t0
    cpu = (cpu1 - cpu0) / HZ
    fig = {"kind": cls.kind, "settings": c.label(), "n": n, "distinct": d,
           "seconds": seconds, "msgs_per_s": n / seconds, "cpu_s": cpu,
           "cpu_per_10k": cpu * 10000 / n, "peak_rss_mb": peak / 1024.0,
           "peak_pss_mb": peak_pss / 1024.0,
           "emulator_cpu_per_10k": (srv1[0] - srv0[0]) / HZ * 10000 / n,
           "pg_cpu_per_10k": (srv1[1] - srv0[1]) / HZ * 10000 / n}
    log("%-12s %-26s %6.0f msg/s %6.2f CPU s/10k %6.1f MB RSS %6.1f MB PSS (%.2fs; "
        "emulator %.2f, PostgreSQL %.2f CPU s/10k)"
        % (cls.kind, c.label(), fig["msgs_per_s"], fig["cpu_per_10k"], fig["peak_rss_mb"],
           fig["peak_pss_mb"], seconds, fig["emulator_cpu_per_10k"], fig["pg_cpu_per_10k"]))
    return fig


# --------------------------------------------------------------------------- callgrind


def callgrind(ctx, concurrency, n=CALLGRIND_MESSAGES):
    """Instructions one twiced worker executes per message: a worker process (twiced
    --worker, as the master would start it, without a master) runs under callgrind with
    instrumentation off until it is ready; then it is switched on, n messages are sent and
    drained, and switched off again before the worker stops. Returns the figures as a
    dict: Ir per message, top functions by own cost, own cost by object.

    Without a master there is no shared region, so the worker's metrics calls return
    early: the figure leaves out their (small) cost."""
    bodies, d = message_plan(n)
    url, dlq_url = ctx.sqs.create_queue_pair(twicetest.unique_name("bench-cg", 60))
    dsn = ctx.pg.new_database("bench_cg")
    count_file = os.path.join(ctx.work, "noop-counts-cg-%d" % ctx.seq())
    conf = os.path.join(ctx.work, "twice-cg-%d.conf" % ctx.seq())
    out = os.path.join(ctx.work, "callgrind.out.%d" % ctx.seq())
    log_path = os.path.join(ctx.work, "callgrind.log")
    with open(conf, "w") as f:
        # A long visibility timeout: under callgrind the worker runs some 50 times slower,
        # and heartbeats (at half the timeout) would add calls a normal run never makes.
        f.write(ctx.twiced_config(url, dlq_url, dsn, 1, concurrency, 1, count_file,
                                  visibility=CALLGRIND_VISIBILITY))
    fd = os.open(conf, os.O_RDONLY)
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--callgrind-out-file=" + out,
           ctx.twiced, "--worker", "--config-fd", str(fd), "--shm-fd", "-1", "--ctl-fd", "-1",
           "--slot", "0", "--generation", "1", "--master-pid", str(os.getpid()),
           "--config-path", conf, "--instance", "0123456789abcdef"]
    logf = open(log_path, "ab")
    p = subprocess.Popen(cmd, cwd=ctx.work, env=clean_env(), stdin=subprocess.DEVNULL,
                         stdout=logf, stderr=subprocess.STDOUT, pass_fds=(fd,))
    logf.close()
    os.close(fd)
    try:
        wait_for_log(log_path, "worker ready", p, 120)
        control(p.pid, "-i", "on")
        preload_unchecked(ctx.sqs, url, bodies)
        deadline = time.monotonic() + 600
        while sum(ctx.sqs.counts(url)) != 0:
            if time.monotonic() > deadline or p.poll() is not None:
                raise BenchError("callgrind: the worker did not drain the queue (log: %s)"
                                 % log_path)
            time.sleep(0.2)
        control(p.pid, "-i", "off")
        p.send_signal(signal.SIGTERM)
        if p.wait(timeout=120) != 0:
            raise BenchError("callgrind: the worker exited with %d (log: %s)"
                             % (p.returncode, log_path))
        with open(count_file) as f:
            calls = sum(int(line.split()[1]) for line in f)
        rows, completed = ctx.pg.key_states(dsn, "twice_idempotency")
        if (calls, rows, completed) != (d, d, d):
            raise BenchError("callgrind: %d handler calls, %d rows, %d completed; want %d"
                             % (calls, rows, completed, d))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        for u in (url, dlq_url):
            ctx.sqs.delete_queue(u)
        ctx.pg.drop_database(dsn)
    ir, funcs, total = annotate(out, n)
    return {"settings": "concurrency=%d" % concurrency, "n": n, "ir_per_msg": ir,
            "total_ir": total, "functions": funcs, "objects": by_object(out, n),
            "file": out}


def wait_for_log(path, text, proc, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(path, errors="replace") as f:
            if text in f.read():
                return
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    raise BenchError("no %r in %s" % (text, path))


def control(pid, *args):
    r = subprocess.run(["callgrind_control", *args, str(pid)], capture_output=True, text=True,
                       timeout=60)
    if r.returncode != 0:
        raise BenchError("callgrind_control %s: %s" % (" ".join(args), r.stderr or r.stdout))


def preload_unchecked(sqs, url, bodies):
    for i in range(0, len(bodies), 10):
        sqs.call("SendMessageBatch", {"QueueUrl": url, "Entries": [
            {"Id": str(j), "MessageBody": b} for j, b in enumerate(bodies[i:i + 10])]})


def annotate(out, n, top=15):
    r = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", out],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise BenchError("callgrind_annotate: %s" % r.stderr)
    total = None
    funcs = []
    for line in r.stdout.splitlines():
        m = re.match(r"^\s*([\d,]+)\s+\(100\.0%\)\s+PROGRAM TOTALS", line)
        if m:
            total = int(m.group(1).replace(",", ""))
            continue
        m = re.match(r"^\s*([\d,]+)\s+\(\s*([\d.]+)%\)\s+(\S.*?)(?:\s+\[(.*)\])?$", line)
        if m and total is not None and len(funcs) < top:
            name = m.group(3)
            obj = os.path.basename(m.group(4)) if m.group(4) else ""
            funcs.append((int(m.group(1).replace(",", "")) / n, float(m.group(2)), name, obj))
    if total is None:
        raise BenchError("callgrind_annotate: no PROGRAM TOTALS in its output")
    return total / n, funcs, total


def by_object(out, n):
    """Own instructions per message summed by shared object, largest first."""
    r = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", out],
                       capture_output=True, text=True, timeout=120)
    objs = {}
    for line in r.stdout.splitlines():
        m = re.match(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+\S.*\[(.*)\]$", line)
        if m:
            obj = os.path.basename(m.group(2))
            objs[obj] = objs.get(obj, 0) + int(m.group(1).replace(",", ""))
    return sorted(((v / n, k) for k, v in objs.items()), reverse=True)


# --------------------------------------------------------------------------- the whole run


TWICED_CANDIDATES = [(1, 32, 2), (1, 32, 4), (1, 64, 6), (2, 32, 3)]
CONSUMER_CANDIDATES = [(1, 4), (1, 8), (1, 16), (2, 8)]
BARE_LOOPS = 4
# Used without tuning (--quick): the best of the candidates on the 2-core machine.
TWICED_DEFAULT = (1, 32, 4)
CONSUMER_DEFAULT = (1, 8)


def parse_pair(text):
    """W:C, or W:C:R for twiced (receivers per worker, default 1)."""
    return tuple(int(x) for x in text.split(":"))


def tune(ctx, cls, candidates, n):
    best = None
    for settings in candidates:
        fig = run_once(ctx, cls, settings, n)
        if best is None or fig["msgs_per_s"] > best[1]:
            best = (settings, fig["msgs_per_s"])
    log("%s: best %s" % (cls.kind, cls(ctx, best[0]).label()))
    return best[0]


def machine():
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kib = int(f.readline().split()[1])
    return {"nproc": os.cpu_count(), "cpu": cpu, "ram_gib": round(mem_kib / 1048576, 1),
            "kernel": platform.release(), "load_at_start": os.getloadavg()}


def revision():
    def git(*args):
        return subprocess.run(["git", "-C", ROOT, *args], capture_output=True,
                              text=True).stdout.strip()
    rev = git("rev-parse", "--short=12", "HEAD")
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", "core", "sdk")
    return rev + ("-dirty" if dirty else "")


def median(figs, key):
    return statistics.median(f[key] for f in figs)


FIGURES = ("msgs_per_s", "cpu_per_10k", "peak_rss_mb", "peak_pss_mb", "emulator_cpu_per_10k",
           "pg_cpu_per_10k")


def summarize(rounds):
    """Medians per contender and the medians of the per-round ratios (each round runs
    a, b and c back to back, so a ratio compares runs under the same background load)."""
    med = {}
    for kind in ("twiced", "sqs-consumer", "bare"):
        figs = [r[kind] for r in rounds]
        med[kind] = {k: median(figs, k) for k in FIGURES}
        med[kind]["settings"] = figs[0]["settings"]

    def ratio(a, b, key):
        return statistics.median(r[a][key] / r[b][key] for r in rounds)
    ratios = {
        "a/b msgs_per_s": ratio("twiced", "sqs-consumer", "msgs_per_s"),
        "a/c msgs_per_s": ratio("twiced", "bare", "msgs_per_s"),
        "a/b peak_rss": ratio("twiced", "sqs-consumer", "peak_rss_mb"),
        "a/b cpu_per_10k": ratio("twiced", "sqs-consumer", "cpu_per_10k"),
    }
    return med, ratios


def report(info, med, ratios, rounds, cg):
    lines = []
    add = lines.append
    add("twice benchmark, %s (twiced %s)" % (info["date"], info["revision"]))
    m = info["machine"]
    add("machine: %d CPUs, %s, %.1f GiB RAM, Linux %s; load average at start %.2f"
        % (m["nproc"], m["cpu"], m["ram_gib"], m["kernel"], m["load_at_start"][0]))
    add("%d messages per run over %d distinct keys (10%% duplicates), %d round(s) a b c"
        % (info["n"], info["distinct"], len(rounds)))
    add("")
    add("| contender | settings | msg/s | CPU s / 10k msgs | peak RSS MB | peak PSS MB |"
        " emulator CPU s / 10k | PostgreSQL CPU s / 10k |")
    add("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    names = {"twiced": "(a) twiced + no-op, guard on", "sqs-consumer":
             "(b) sqs-consumer + batched claim", "bare": "(c) bare receive+delete"}
    for kind in ("twiced", "sqs-consumer", "bare"):
        f = med[kind]
        add("| %s | %s | %.0f | %.2f | %.1f | %.1f | %.2f | %.2f |"
            % (names[kind], f["settings"], f["msgs_per_s"], f["cpu_per_10k"],
               f["peak_rss_mb"], f["peak_pss_mb"], f["emulator_cpu_per_10k"],
               f["pg_cpu_per_10k"]))
    add("")
    add("| target | measured (median of per-round ratios) | |")
    add("| --- | ---: | --- |")
    targets = [("twiced >= 5x sqs-consumer msg/s", ratios["a/b msgs_per_s"], ">=", 5.0),
               ("twiced >= 0.4x bare ceiling msg/s", ratios["a/c msgs_per_s"], ">=", 0.4),
               ("twiced peak RSS <= 25% of sqs-consumer's", ratios["a/b peak_rss"], "<=", 0.25),
               ("twiced CPU s/10k <= 10% of sqs-consumer's", ratios["a/b cpu_per_10k"], "<=",
                0.10)]
    for name, value, op, want in targets:
        ok = value >= want if op == ">=" else value <= want
        add("| %s | %.2f | %s |" % (name, value, "pass" if ok else "FAIL"))
    add("| zero lost, zero double-handled (every run checked) | all runs | pass |")
    add("")
    add("per round (msg/s a / b / c):")
    for i, r in enumerate(rounds, 1):
        add("  %d: %.0f / %.0f / %.0f" % (i, r["twiced"]["msgs_per_s"],
                                          r["sqs-consumer"]["msgs_per_s"],
                                          r["bare"]["msgs_per_s"]))
    if cg is not None:
        add("")
        add("callgrind: one twiced worker (%s), %d messages: %.0f instructions per message"
            % (cg["settings"], cg["n"], cg["ir_per_msg"]))
        add("  by object: " + ", ".join("%s %.0f" % (o, v) for v, o in cg["objects"][:8]))
        add("  top functions (own Ir per message):")
        for ir, pct, name, obj in cg["functions"]:
            add("    %8.0f %5.1f%%  %s [%s]" % (ir, pct, name, obj))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("n", nargs="?", type=int, default=20000, help="messages per run")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of a, b, c (default 3)")
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--twiced", type=parse_pair, metavar="W:C[:R]",
                    help="twiced workers:concurrency[:receivers] (default: tuned)")
    ap.add_argument("--consumer", type=parse_pair, metavar="P:C",
                    help="sqs-consumer processes:consumers each (default: tuned)")
    ap.add_argument("--no-callgrind", action="store_true")
    ap.add_argument("--quick", action="store_true",
                    help="no tuning (default settings) and a short callgrind run")
    ap.add_argument("--log-level", default="info", help="twiced's log level (default info)")
    ap.add_argument("--out", help="also write the report (text) and OUT.json here")
    args = ap.parse_args()
    if args.n < 100 or args.rounds < 1:
        ap.error("n must be >= 100 and rounds >= 1")

    ctx = Context(args)
    info = {"date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
            "revision": revision(), "machine": machine(), "n": args.n,
            "distinct": message_plan(args.n)[1]}
    log("twiced %s, %d messages, %d rounds; work files in %s"
        % (info["revision"], args.n, args.rounds, ctx.work))
    tune_n = max(2000, args.n // 4)
    if args.twiced is not None and len(args.twiced) == 2:
        args.twiced = args.twiced + (1,)
    if args.quick:
        tw = args.twiced or TWICED_DEFAULT
        co = args.consumer or CONSUMER_DEFAULT
    else:
        tw = args.twiced or tune(ctx, Twiced, TWICED_CANDIDATES, tune_n)
        co = args.consumer or tune(ctx, SqsConsumer, CONSUMER_CANDIDATES, tune_n)
    rounds = []
    for i in range(args.rounds):
        log("round %d of %d" % (i + 1, args.rounds))
        rounds.append({"twiced": run_once(ctx, Twiced, tw, args.n),
                       "sqs-consumer": run_once(ctx, SqsConsumer, co, args.n),
                       "bare": run_once(ctx, Bare, BARE_LOOPS, args.n)})
    med, ratios = summarize(rounds)
    cg = None
    if not args.no_callgrind:
        n_cg = 500 if args.quick else CALLGRIND_MESSAGES
        log("callgrind: one worker, %d messages" % n_cg)
        cg = callgrind(ctx, CALLGRIND_CONCURRENCY, n_cg)
    text = report(info, med, ratios, rounds, cg)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
        with open(args.out + ".json", "w") as f:
            json.dump({"info": info, "medians": med, "ratios": ratios, "rounds": rounds,
                       "callgrind": cg}, f, indent=2)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (BenchError, subprocess.TimeoutExpired) as e:
        log("FAILED: %s" % e)
        sys.exit(1)
