"""bench.py: the benchmark of issues 9 and 19, run by bench/run.sh (servers up, twiced built).

What it is for: preloading a queue of the SQS emulator and draining it with each contender
in turn - (a) twiced + the no-op plugin with the full idempotency guard, (b) sqs-consumer
with a batched PostgreSQL claim, (c) a bare receive+delete loop - measuring messages/s,
CPU seconds per 10,000 messages, peak RSS, and what each run costs PostgreSQL (statements,
commits, WAL, CPU); checking that no message was lost or handled twice (it exits non-zero
otherwise); and a callgrind count of instructions per message of one twiced worker.
Two more modes: --latency puts a proxy that delays every SQS call in front of the
emulator; --hosts runs several twiced masters on one database and one queue. Not a test:
it asserts no timings.

Stdlib and psycopg2 only; runs on Debian's /usr/bin/python3 with the variables of
scripts/testenv.sh's env.sh in its environment. The parts: common.py (SQS client, message
plan, PostgreSQL), sysstat.py (/proc), dbwork.py (PostgreSQL's counters), cgrind.py
(callgrind), report.py (the text), startcost.py (a start's own cost), latency-proxy.mjs
(the proxy).
"""

import argparse
import datetime
import functools
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from common import (HERE, PREFILL_PREFIX, ROOT, BenchError, Pg, Sqs, clean_env, end_run, log,
                    message_plan, preload, quote, twicetest)
import cgrind
import dbwork
import report
import startcost
import sysstat
from sysstat import HZ, descendants, pss_kib, rss_kib, tree_ticks

SAMPLE_S = 0.05          # RSS and queue sampling period
STALL_S = 60             # no progress for this long: the run fails
LEASE_MARGIN = 5
VISIBILITY = 30
WAIT = 1                 # long-poll seconds of every contender

# twiced's built-in workers, concurrency and receivers (core/config.c): what a
# configuration that leaves them out runs with, and what the latency mode calls defaults.
TWICED_BUILTIN = (2, 8, 1)
# sqs-consumer out of the box: one process with one Consumer.
CONSUMER_BUILTIN = (1, 1)


# --------------------------------------------------------------------------- contenders


class Contender:
    """One way of draining the queue. launch() starts its processes and returns once they
    are ready to start; go() starts the drain; stop() ends it and returns its counts;
    check() raises BenchError unless nothing was lost or double-handled."""

    kind = ""
    gated = True  # False: it starts draining as soon as it is launched (twiced)

    def __init__(self, ctx, settings, hosts=1):
        self.ctx = ctx
        self.settings = settings
        self.hosts = hosts
        self.procs = []

    table = None  # its idempotency table (for --prefill)

    def prepare(self, url, dlq_url, dsn):
        """Create the contender's tables in dsn's database, before the queue is filled."""

    def prefill_sql(self):
        """INSERT ... SELECT of %(k)s completed keys named %(prefix)s..., none of them the
        run's."""
        return None

    def roots(self):
        return [p.pid for p in self.procs]

    def instances(self):
        """Independent processes (twiced masters, Node processes) the contender ran."""
        return len(self.procs)

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


@functools.lru_cache(maxsize=None)
def knows_claim_settings(twiced):
    """Whether the twiced binary at this path has max_inflight and receives_per_claim
    (their names are in its settings table); read once per path."""
    with open(twiced, "rb") as f:
        return b"receives_per_claim" in f.read()


class Twiced(Contender):
    """hosts independent twiced masters (each its own configuration, work directory and
    count file) on one queue and one database. settings None: the built-in defaults."""

    kind = "twiced"
    gated = False

    def build(self):
        """(twiced, noop.so) this contender runs."""
        return self.ctx.twiced, self.ctx.noop

    def label(self):
        settings = self.run_settings()
        if settings is None:
            text = "defaults (workers=%d concurrency=%d receivers=%d)" % TWICED_BUILTIN
        else:
            text = "workers=%d concurrency=%d receivers=%d" % settings[:3]
            if len(settings) > 3:
                text += " max_inflight=%d receives_per_claim=%d" % settings[3:]
        return text + (" x %d hosts" % self.hosts if self.hosts > 1 else "")

    def run_settings(self):
        """The settings its configuration gets: a build older than max_inflight and
        receives_per_claim (a baseline) runs without them."""
        if self.settings is None or len(self.settings) == 3:
            return self.settings
        return self.settings if knows_claim_settings(self.build()[0]) else self.settings[:3]

    table = "twice_idempotency"

    def prepare(self, url, dlq_url, dsn):
        """twiced's own migration creates the table: one master runs until it is ready,
        then stops. On a queue of its own: a long poll it leaves behind would take the
        first message of the run's queue and hide it for a visibility timeout."""
        home = os.path.join(self.ctx.work, "twiced-%d-migrate" % self.ctx.seq())
        os.makedirs(home)
        path = os.path.join(home, "twice.conf")
        urls = self.ctx.sqs.create_queue_pair(twicetest.unique_name("bench-migrate", 60))
        with open(path, "w") as f:
            f.write(self.ctx.twiced_config(urls[0], urls[1], dsn, (1, 1, 1),
                                           os.path.join(home, "noop-counts"),
                                           self.ctx.endpoint, noop=self.build()[1]))
        log_path = os.path.join(home, "twiced.log")
        with open(log_path, "ab") as logf:
            p = subprocess.Popen([self.build()[0], "-f", "-c", path], cwd=home,
                                 env=clean_env(), stdin=subprocess.DEVNULL, stdout=logf,
                                 stderr=subprocess.STDOUT, start_new_session=True)
        try:
            cgrind.wait_for_log(log_path, "ready: generation", p, 60)
            p.send_signal(signal.SIGTERM)
            if p.wait(timeout=60) != 0:
                raise BenchError("twiced (migration) exited with %d (log: %s)"
                                 % (p.returncode, log_path))
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            for u in urls:
                self.ctx.sqs.delete_queue(u)

    def prefill_sql(self):
        return ("INSERT INTO twice_idempotency (idempotency_key, state, processed_at,"
                " payload_sha256, message_id) SELECT '%(prefix)s' || lpad(g::text, 9, '0'),"
                " 'completed', now(), sha256(g::text::bytea), gen_random_uuid()::text"
                " FROM generate_series(1, %(k)s) g")

    def launch(self, url, dlq_url, dsn):
        self.dsn = dsn
        self.count_files = []
        run = self.ctx.seq()
        for h in range(self.hosts):
            home = os.path.join(self.ctx.work, "twiced-%d-host%d" % (run, h))
            os.makedirs(home)
            count_file = os.path.join(home, "noop-counts")
            self.count_files.append(count_file)
            path = os.path.join(home, "twice.conf")
            with open(path, "w") as f:
                f.write(self.ctx.twiced_config(url, dlq_url, dsn, self.run_settings(),
                                               count_file,
                                               self.ctx.contender_endpoint(),
                                               noop=self.build()[1]))
            self.log_path = os.path.join(home, "twiced.log")
            with open(self.log_path, "ab") as logf:
                self.procs.append(subprocess.Popen(
                    [self.build()[0], "-f", "-c", path], cwd=home, env=clean_env(),
                    stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT,
                    start_new_session=True))

    def stop(self):
        for p in self.procs:
            p.send_signal(signal.SIGTERM)
        for p in self.procs:
            rc = p.wait(timeout=90)
            if rc != 0:
                raise BenchError("twiced exited with %d (logs in %s)" % (rc, self.ctx.work))
        calls, lines = 0, 0
        for count_file in self.count_files:
            if os.path.exists(count_file):
                with open(count_file) as f:
                    for line in f:
                        calls += int(line.split()[1])
                        lines += 1
        return {"handled": calls, "workers_reported": lines}

    def check(self, res, n, d):
        rows, completed, pre = self.ctx.pg.key_states(self.dsn, "twice_idempotency")
        workers = (self.settings or TWICED_BUILTIN)[0] * self.hosts
        problems = []
        if res["workers_reported"] < workers:
            problems.append("only %d of %d workers reported their call count"
                            % (res["workers_reported"], workers))
        if res["handled"] != d:
            problems.append("the no-op handler ran %d times for %d distinct keys"
                            % (res["handled"], d))
        if (rows, completed) != (d, d):
            problems.append("idempotency table: %d rows, %d completed; want %d and %d"
                            % (rows, completed, d, d))
        if pre != self.ctx.prefill:
            problems.append("the %d keys completed before the run are no longer all there and "
                            "completed" % self.ctx.prefill)
        return problems


class TwicedBaseline(Twiced):
    """twiced from another build (--baseline-build): the same runs, so that a round
    compares a change with what it changes under the same background load."""

    kind = "twiced-baseline"

    def build(self):
        return self.ctx.baseline


class SqsConsumer(Contender):
    kind = "sqs-consumer"

    def label(self):
        return "processes=%d consumers=%d" % self.settings

    table = "peer_idempotency"

    def prepare(self, url, dlq_url, dsn):
        self.ctx.pg.query(dsn, "CREATE TABLE peer_idempotency (idempotency_key text PRIMARY KEY,"
                          " state text NOT NULL, owner text, lease_until timestamptz,"
                          " processed_at timestamptz NOT NULL)")

    def prefill_sql(self):
        return ("INSERT INTO peer_idempotency (idempotency_key, state, processed_at)"
                " SELECT '%(prefix)s' || lpad(g::text, 9, '0'), 'completed', now()"
                " FROM generate_series(1, %(k)s) g")

    def launch(self, url, dlq_url, dsn):
        procs, consumers = self.settings
        self.dsn = dsn
        self.launch_node("consumer.mjs", [
            "--endpoint", self.ctx.contender_endpoint(), "--region", self.ctx.region,
            "--queue", url, "--dsn", dsn, "--table", "peer_idempotency",
            "--consumers", str(consumers), "--wait", str(WAIT), "--visibility",
            str(VISIBILITY), "--lease-margin", str(LEASE_MARGIN)], procs)

    def stop(self):
        return self.stop_node()

    def check(self, res, n, d):
        rows, completed, pre = self.ctx.pg.key_states(self.dsn, "peer_idempotency")
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
        if pre != self.ctx.prefill:
            problems.append("the %d keys completed before the run are no longer all there and "
                            "completed" % self.ctx.prefill)
        return problems


class Bare(Contender):
    kind = "bare"

    def label(self):
        return "loops=%d" % self.settings

    def launch(self, url, dlq_url, dsn):
        self.launch_node("bare.mjs", [
            "--endpoint", self.ctx.contender_endpoint(), "--region", self.ctx.region,
            "--queue", url, "--loops", str(self.settings), "--wait", str(WAIT),
            "--visibility", str(VISIBILITY)], 1)

    def stop(self):
        return self.stop_node()

    def check(self, res, n, d):
        if (res["received"], res["deleted"], res["failed"], res["errors"]) != (n, n, 0, 0):
            return ["received %d, deleted %d, %d failed deletes, %d errors; want %d, %d, 0, 0"
                    % (res["received"], res["deleted"], res["failed"], res["errors"], n, n)]
        return []


# --------------------------------------------------------------------------- latency proxy


class LatencyProxy:
    """latency-proxy.mjs between the contenders and the emulator (--latency). The bench's
    own calls (preload, queue counts) go to the emulator directly."""

    def __init__(self, work, upstream, p50, p99):
        self.log_path = os.path.join(work, "latency-proxy.log")
        with open(self.log_path, "ab") as logf:
            self.proc = subprocess.Popen(
                ["node", os.path.join(HERE, "latency-proxy.mjs"), "--upstream", upstream,
                 "--p50", str(p50), "--p99", str(p99)], cwd=HERE, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=logf, text=True)
        line = self.proc.stdout.readline().split()
        if len(line) != 2 or line[0] != "listening":
            raise BenchError("latency proxy did not start (log: %s)" % self.log_path)
        self.endpoint = "http://127.0.0.1:%s" % line[1]
        self.pid = self.proc.pid

    def _send(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def reset(self):
        self._send("reset")

    def stats(self):
        self._send("stats")
        return json.loads(self.proc.stdout.readline())

    def stop(self):
        if self.proc.poll() is None:
            self._send("stop")
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# --------------------------------------------------------------------------- one run


class Context:
    """What every run shares: servers, binaries, a work directory, the latency proxy."""

    def __init__(self, args):
        self.endpoint = os.environ["TWICE_TEST_SQS_ENDPOINT"]
        self.region = os.environ["TWICE_TEST_REGION"]
        self.sqs = Sqs(self.endpoint, self.region)
        self.pg = Pg(os.environ["TWICE_TEST_PGDSN"])
        self.build = os.path.abspath(args.build_dir)
        self.twiced = os.path.join(self.build, "bin", "twiced")
        self.noop = os.path.join(self.build, "bench", "noop.so")
        run_dir = os.environ["TWICE_TEST_RUN_DIR"]
        # Fresh for every invocation: count files must not add up across runs.
        self.work = tempfile.mkdtemp(prefix=time.strftime("bench-%Y%m%d-%H%M%S-"),
                                     dir=run_dir)
        self.log_level = args.log_level
        self.baseline = None
        if args.baseline_build is not None:
            base = os.path.abspath(args.baseline_build)
            self.baseline = (os.path.join(base, "bin", "twiced"),
                             os.path.join(base, "bench", "noop.so"))
            for path in self.baseline:
                if not os.path.exists(path):
                    raise BenchError("--baseline-build: no %s" % path)
        with open(os.path.join(run_dir, "fauxqs.pid")) as f:
            self.fauxqs_pid = int(f.readline())
        # Before reading the postmaster's pid: enabling it restarts PostgreSQL.
        self.pgss = (not args.no_pg_stat_statements and
                     dbwork.enable_statements(self.pg, ROOT, run_dir, log))
        with open(os.path.join(run_dir, "pg", "data", "postmaster.pid")) as f:
            self.pg_pid = int(f.readline())
        self.prefill = args.prefill
        self.proxy = None
        if args.latency is not None:
            self.proxy = LatencyProxy(self.work, self.endpoint, *args.latency)
        self._seq = 0

    def seq(self):
        self._seq += 1
        return self._seq

    def contender_endpoint(self):
        return self.proxy.endpoint if self.proxy is not None else self.endpoint

    def close(self):
        if self.proxy is not None:
            self.proxy.stop()

    def twiced_config(self, url, dlq_url, dsn, settings, count_file, endpoint,
                      visibility=VISIBILITY, noop=None):
        """A twice.conf for the bench queue; settings (workers, concurrency, receivers[,
        max_inflight, receives_per_claim]), or None for twiced's built-in defaults of all three; noop: the plugin's path
        (default this build's)."""
        q = quote
        tuning = ["", ""]
        if settings is not None:
            tuning = ["workers = %d;" % settings[0],
                      " concurrency = %d; receivers = %d;" % settings[1:3]]
            if len(settings) > 3:
                tuning[1] += " max_inflight = %d; receives_per_claim = %d;" % settings[3:]
        return "\n".join([
            tuning[0],
            "drain_timeout = 30;",
            "log = { level = %s; format = \"text\"; };" % q(self.log_level),
            "aws = { region = %s; endpoint = %s; };" % (q(self.region), q(endpoint)),
            "idempotency = { dsn = %s; lease_margin = %d; };" % (q(dsn), LEASE_MARGIN),
            "plugins = ( { name = \"noop\"; path = %s; settings = { count_file = %s; }; } );"
            % (q(noop or self.noop), q(count_file)),
            "queues = ( { name = \"bench\"; url = %s; dlq_url = %s; plugin = \"noop\";%s"
            " batch_size = 10; wait_time = %d; visibility_timeout = %d; max_attempts = 5; } );"
            % (q(url), q(dlq_url), tuning[1], WAIT, visibility),
            ""])


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


class Clocks:
    """CPU ticks at one moment: the contender's tree, the emulator's, PostgreSQL's
    (postmaster, backends, autovacuum, checkpointer), the proxy's, this script's, the
    kernel threads', and the whole machine's (/proc/stat). Two of them make a run's CPU
    figures; what the machine spent beyond all those is other processes' (noise)."""

    def __init__(self, ctx, contender, count_contender=True):
        self.contender = tree_ticks(descendants(contender.roots())) if count_contender else 0
        self.emulator = tree_ticks(descendants([ctx.fauxqs_pid]))
        self.pg = tree_ticks(descendants([ctx.pg_pid]))
        self.proxy = tree_ticks([ctx.proxy.pid]) if ctx.proxy is not None else 0
        t = os.times()
        self.me = (t.user + t.system) * HZ
        self.kernel = sysstat.kernel_ticks()
        self.busy, self.steal, self.total = sysstat.machine_ticks()

    def figures(self, start, n, seconds):
        """Per 10,000 messages and in cores busy (CPU seconds per second)."""
        d = {k: getattr(self, k) - getattr(start, k) for k in
             ("contender", "emulator", "pg", "proxy", "me", "busy", "steal", "total")}
        d["kernel"] = sysstat.kernel_delta(start.kernel, self.kernel)
        ours = d["contender"] + d["emulator"] + d["pg"] + d["proxy"] + d["me"] + d["kernel"]
        per10k = 10000 / n / HZ
        return {"cpu_s": d["contender"] / HZ, "cpu_per_10k": d["contender"] * per10k,
                "emulator_cpu_per_10k": d["emulator"] * per10k,
                "pg_cpu_per_10k": d["pg"] * per10k,
                "proxy_cpu_per_10k": d["proxy"] * per10k,
                "pg_cores": d["pg"] / HZ / seconds,
                "emulator_cores": d["emulator"] / HZ / seconds,
                "proxy_cores": d["proxy"] / HZ / seconds,
                "contender_cores": d["contender"] / HZ / seconds,
                "kernel_cores": d["kernel"] / HZ / seconds,
                "machine_busy": d["busy"] / max(1, d["total"]),
                "steal_share": d["steal"] / max(1, d["total"]),
                "others_cores": max(0.0, (d["busy"] - ours) / HZ / seconds)}


def sqs_figures(stats, n):
    """Calls per message by action, as the latency proxy counted them (the drain only)."""
    calls = stats["calls"]
    total = sum(calls.values())
    return {"sqs_requests_per_msg": total / n,
            "receives_per_msg": calls.get("ReceiveMessage", 0) / n,
            "empty_receives_per_msg": stats["empty_receives"] / n,
            "deletes_per_msg": (calls.get("DeleteMessageBatch", 0) +
                                calls.get("DeleteMessage", 0)) / n,
            "visibility_per_msg": (calls.get("ChangeMessageVisibilityBatch", 0) +
                                   calls.get("ChangeMessageVisibility", 0)) / n,
            "sqs_calls": calls, "slow_calls": stats["slow"], "proxy_errors": stats["errors"],
            "proxy_max_open": stats["max_open"]}


def prefill(ctx, dsn, contender):
    """ctx.prefill completed keys from earlier in the contender's table, then VACUUM
    (ANALYZE): a table with a history and planner statistics, as in production, where
    a fresh one would be planned as empty for the whole run."""
    ctx.pg.query(dsn, contender.prefill_sql() % {"k": int(ctx.prefill),
                                                 "prefix": PREFILL_PREFIX})
    ctx.pg.query(dsn, 'VACUUM (ANALYZE) "%s"' % contender.table)


def figures(c, n, d, seconds, peaks, clocks, dbs, proxy):
    """The figures of one run, from what run_once measured: peaks (RSS, PSS in KiB),
    clocks (Clocks at start and end), dbs (dbwork snapshots before and after) and the
    proxy's counters (or None)."""
    fig = {"kind": c.kind, "settings": c.label(), "n": n, "distinct": d,
           "instances": c.instances(), "seconds": seconds, "msgs_per_s": n / seconds,
           "msgs_per_s_per_instance": n / seconds / c.instances(),
           "peak_rss_mb": peaks[0] / 1024.0, "peak_pss_mb": peaks[1] / 1024.0}
    fig.update(clocks[1].figures(clocks[0], n, seconds))
    db = dbwork.diff(dbs[0], dbs[1], n, seconds)
    fig["db"] = db
    fig.update({k: db[k] for k in ("statements_per_msg", "commits_per_msg",
                                   "wal_bytes_per_msg", "rows_written_per_msg", "hot_share",
                                   "commits_per_s", "statements_per_s", "wal_mb_per_s")})
    fig["wal_fpi_per_1k"] = db["wal_fpi"] * 1000 / n
    if proxy is not None:
        fig.update(sqs_figures(proxy, n))
    return fig


def run_once(ctx, cls, settings, n, hosts=1):
    """Preload n messages, drain them with one contender, check, measure. Returns a dict
    of figures; raises BenchError when anything was lost or handled twice."""
    bodies, d = message_plan(n)
    url, dlq_url = ctx.sqs.create_queue_pair(twicetest.unique_name("bench-" + cls.kind, 60))
    dsn = ctx.pg.new_database("bench_" + cls.kind.replace("-", "_"))
    c = cls(ctx, settings, hosts)
    try:
        c.prepare(url, dlq_url, dsn)
        if ctx.prefill and c.prefill_sql() is not None:
            prefill(ctx, dsn, c)
        preload(ctx.sqs, url, bodies)
        db0 = dbwork.snapshot(ctx.pg, dsn, ctx.pgss)
        if ctx.proxy is not None:
            ctx.proxy.reset()
        c.launch(url, dlq_url, dsn)
        t0 = time.monotonic()
        clk0 = Clocks(ctx, c, c.gated)
        if c.gated:
            c.go()
        t1, peak, peak_pss = sample_until_drained(ctx, c, url, n, t0)
        clk1 = Clocks(ctx, c)
        proxy = ctx.proxy.stats() if ctx.proxy is not None else None
        res = c.stop()
        if not dbwork.wait_disconnected(ctx.pg, dsn):
            log("%s: its database connections outlived it; commits may be undercounted"
                % cls.kind)
        db1 = dbwork.snapshot(ctx.pg, dsn, ctx.pgss)
        problems = c.check(res, n, d)
        left, dlq_left = ctx.sqs.counts(url), ctx.sqs.counts(dlq_url)
        if left != (0, 0, 0) or dlq_left != (0, 0, 0):
            problems.append("queue holds %s (visible, in flight, delayed), its DLQ %s; want "
                            "nothing" % (left, dlq_left))
        if problems:
            raise BenchError("%s (%s): %s" % (cls.kind, c.label(), "; ".join(problems)))
    finally:
        c.kill()
        end_run(ctx, None, (url, dlq_url), dsn)
    fig = figures(c, n, d, t1 - t0, (peak, peak_pss), (clk0, clk1), (db0, db1), proxy)
    log_run(fig)
    return fig


def log_run(fig):
    stm = fig["statements_per_msg"]
    log("%-12s %-34s %6.0f msg/s %5.2f CPU s/10k %6.1f MB RSS | PostgreSQL %.2f CPU s/10k, "
        "%s stmt, %.3f commits, %.0f WAL bytes per msg | emulator %.2f CPU s/10k%s | "
        "kernel threads %.2f, others %.2f cores"
        % (fig["kind"], fig["settings"], fig["msgs_per_s"], fig["cpu_per_10k"],
           fig["peak_rss_mb"], fig["pg_cpu_per_10k"], "?" if stm is None else "%.3f" % stm,
           fig["commits_per_msg"], fig["wal_bytes_per_msg"], fig["emulator_cpu_per_10k"],
           "" if "sqs_requests_per_msg" not in fig else
           " | %.3f SQS calls/msg, proxy %.0f%% of a core"
           % (fig["sqs_requests_per_msg"], 100 * fig["proxy_cores"]),
           fig["kernel_cores"], fig["others_cores"]))


# --------------------------------------------------------------------------- the modes


# W:C:R[:max_inflight:receives_per_claim]; the last two hold more messages than threads
# and claim several receives at once (bench/README.md, "Claims that cover more keys").
# The no-op handler takes microseconds, so a few handler threads keep up: the low-concurrency
# candidates wake fewer threads per message (bench/README.md, "Tuned for cost"). Two
# receivers drain as fast as four here, with larger claims and two connections fewer to
# start (bench/README.md, round nineteen).
TWICED_CANDIDATES = [(1, 32, 4), (1, 64, 6), (2, 32, 3), (1, 16, 4, 256, 4), (1, 32, 6, 512, 10),
                     (1, 4, 4, 512, 10), (1, 8, 4, 512, 10), (1, 4, 2, 512, 10)]
CONSUMER_CANDIDATES = [(1, 4), (1, 8), (1, 16), (2, 8)]
BARE_LOOPS = 4
# Used without tuning (--quick): the best of the candidates on the 2-core machine.
TWICED_DEFAULT = (1, 32, 4)
CONSUMER_DEFAULT = (1, 8)
# With --latency, waiting on SQS is what limits a receive loop: more of them.
# (Measured at 20:150 ms: one worker's acknowledger sends its SQS calls one at a time, so
# workers, not receivers, raise twiced's rate.)
LATENCY_TWICED_CANDIDATES = [(1, 64, 8), (2, 64, 8), (4, 32, 4), (4, 32, 4, 128, 2)]
LATENCY_CONSUMER_CANDIDATES = [(1, 16), (1, 32), (2, 16)]
LATENCY_TWICED_DEFAULT = (4, 32, 4)
LATENCY_CONSUMER_DEFAULT = (1, 16)


def parse_pair(text):
    """P:C for sqs-consumer; W:C[:R[:I:G]] for twiced (receivers per worker, default 1;
    max_inflight and receives_per_claim, default twiced's)."""
    values = tuple(int(x) for x in text.split(":"))
    if len(values) not in (2, 3, 5):
        raise argparse.ArgumentTypeError("want W:C, W:C:R or W:C:R:I:G, got %s" % text)
    return values


def parse_latency(text):
    """P50:P99 in milliseconds, 0 <= P50 <= P99 (0:0: the proxy without delays)."""
    try:
        p50, p99 = (float(x) for x in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError("want P50:P99 in milliseconds, e.g. 20:150") from None
    if not 0 <= p50 <= p99 or (p50 == 0) != (p99 == 0):
        raise argparse.ArgumentTypeError("want 0 < P50 <= P99 (or 0:0), got %s" % text)
    return p50, p99


def host_counts(n):
    """1, 2, 4, ... up to n, and n."""
    out, k = [], 1
    while k < n:
        out.append(k)
        k *= 2
    return out + [n]


TUNE_SPEED_SHARE = 0.9  # a candidate this close to the fastest competes on CPU


def pick(tried):
    """The tuned settings from [(settings, msg/s, CPU s per 10k)]: of the candidates within
    TUNE_SPEED_SHARE of the fastest, the one that spends the least CPU per message (what a
    team paying for the hosts would choose). The same rule for every contender."""
    fastest = max(t[1] for t in tried)
    near = [t for t in tried if t[1] >= TUNE_SPEED_SHARE * fastest]
    return min(near, key=lambda t: t[2])[0]


def tune(ctx, cls, candidates, n):
    tried = []
    for settings in candidates:
        fig = run_once(ctx, cls, settings, n)
        tried.append((settings, fig["msgs_per_s"], fig["cpu_per_10k"]))
        log("%s tuning: %s: %.0f msg/s, %.2f CPU s / 10k msgs"
            % (cls.kind, cls(ctx, settings).label(), tried[-1][1], tried[-1][2]))
    best = pick(tried)
    log("%s: best %s" % (cls.kind, cls(ctx, best).label()))
    return best


def plan(ctx, args):
    """The mode's runs of one round: (key, contender class, settings, hosts)."""
    tune_n = max(2000, args.n // 4)
    if args.hosts is not None:
        tw = args.twiced or TWICED_DEFAULT
        return [("hosts-%d" % k, Twiced, tw, k) for k in host_counts(args.hosts)]
    if args.latency is not None:
        cands = (LATENCY_TWICED_CANDIDATES, LATENCY_CONSUMER_CANDIDATES,
                 LATENCY_TWICED_DEFAULT, LATENCY_CONSUMER_DEFAULT)
    else:
        cands = (TWICED_CANDIDATES, CONSUMER_CANDIDATES, TWICED_DEFAULT, CONSUMER_DEFAULT)
    if args.quick:
        tw = args.twiced or cands[2]
        co = args.consumer or cands[3]
    else:
        tw = args.twiced or tune(ctx, Twiced, cands[0], tune_n)
        co = args.consumer or tune(ctx, SqsConsumer, cands[1], tune_n)
    base = [("twiced-baseline", TwicedBaseline, tw, 1)] if ctx.baseline is not None else []
    if args.latency is not None:
        return [("twiced-default", Twiced, None, 1), ("twiced", Twiced, tw, 1)] + base + [
            ("sqs-consumer-default", SqsConsumer, CONSUMER_BUILTIN, 1),
            ("sqs-consumer", SqsConsumer, co, 1)]
    return [("twiced", Twiced, tw, 1)] + base + [("sqs-consumer", SqsConsumer, co, 1),
                                                  ("bare", Bare, BARE_LOOPS, 1)]


def warm_up(ctx, args, runs):
    """One unmeasured run of the plan's first, as large as a measured one, before round
    1 (not with --quick). The first run after the servers start found the emulator's
    JIT, PostgreSQL's caches and the contender's binary cold: in five runs of
    2026-12-04 that run drained at 6,500-8,100 msg/s where the same build did
    9,400-11,000 in the later rounds, and it is always a twiced run. A warm-up of N/5
    messages drained at ~3,000 msg/s: still cold. Tuning, when there is some, warms
    them up the same way."""
    if args.quick:
        return
    key, cls, settings, hosts = runs[0]
    n = args.n
    fig = run_once(ctx, cls, settings, n, hosts)
    log("warm-up (%s, %d messages, not counted): %.0f msg/s" % (key, n, fig["msgs_per_s"]))


def run_round(ctx, runs, n):
    """One round: every run of the plan back to back, with the load average before and
    after. A round is noisy when either is above the number of cores."""
    before = sysstat.loadavg()
    figs = {key: run_once(ctx, cls, settings, n, hosts) for key, cls, settings, hosts in runs}
    after = sysstat.loadavg()
    noisy = max(before, after) > os.cpu_count()
    return {"figs": figs, "load_before": before, "load_after": after, "noisy": noisy}


def revision():
    def git(*args):
        return subprocess.run(["git", "-C", ROOT, *args], capture_output=True,
                              text=True).stdout.strip()
    rev = git("rev-parse", "--short=12", "HEAD")
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", "core", "sdk")
    return rev + ("-dirty" if dirty else "")


def summarize(rounds, keys, pairs):
    """Medians per run key, and for each (a, b) pair the medians of the per-round ratios
    a/b (the runs of a round share its background load)."""
    med = {}
    for key in keys:
        figs = [r["figs"][key] for r in rounds]
        med[key] = {"settings": figs[0]["settings"], "instances": figs[0]["instances"]}
        for name, value in figs[0].items():
            if value is None or isinstance(value, (int, float)) and not isinstance(value, bool):
                vals = [f[name] for f in figs if f.get(name) is not None]
                med[key][name] = statistics.median(vals) if vals else None
    ratios = {}
    for a, b in pairs:
        for name in report.RATIO_FIGURES:
            vals = [r["figs"][a][name] / r["figs"][b][name] for r in rounds
                    if r["figs"][a].get(name) is not None and r["figs"][b].get(name)]
            ratios[(a, b, name)] = statistics.median(vals) if vals else None
    return med, ratios


def mode_pairs(args):
    base = [("twiced", "twiced-baseline")] if args.baseline_build is not None else []
    if args.hosts is not None:
        return []
    if args.latency is not None:
        return [("twiced-default", "sqs-consumer-default"), ("twiced", "sqs-consumer")] + base
    return [("twiced", "sqs-consumer"), ("twiced", "bare")] + base


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("n", nargs="?", type=int,
                    help="messages per run (default 20000; 5000 with --latency)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--twiced", type=parse_pair, metavar="W:C[:R[:I:G]]",
                    help="twiced workers:concurrency[:receivers[:max_inflight:"
                         "receives_per_claim]] (default: tuned)")
    ap.add_argument("--consumer", type=parse_pair, metavar="P:C",
                    help="sqs-consumer processes:consumers each (default: tuned)")
    ap.add_argument("--latency", type=parse_latency, metavar="P50:P99",
                    help="delay every SQS call of the contenders (milliseconds)")
    ap.add_argument("--hosts", type=int, metavar="N",
                    help="N independent twiced masters on one database and queue "
                         "(runs 1, 2, 4 ... N of them)")
    ap.add_argument("--baseline-build", metavar="DIR",
                    help="also run twiced from this build directory (bin/twiced, "
                         "bench/noop.so) in every round, with the same settings")
    ap.add_argument("--prefill", type=int, metavar="K",
                    help="completed keys in each contender's table before a run, vacuumed "
                         "and analysed (default 100000, 10000 with --quick; 0: empty)")
    ap.add_argument("--no-callgrind", action="store_true")
    ap.add_argument("--no-pg-stat-statements", action="store_true",
                    help="do not load pg_stat_statements (statements are then not counted)")
    ap.add_argument("--start-cost", action="store_true",
                    help="also measure what one start of each contender costs, apart "
                         "from its messages (startcost.py; standard mode)")
    ap.add_argument("--quick", action="store_true",
                    help="no tuning (default settings) and a short callgrind run")
    ap.add_argument("--log-level", default="info", help="twiced's log level (default info)")
    ap.add_argument("--out", help="also write the report (text) and OUT.json here")
    args = ap.parse_args()
    if args.n is None:
        args.n = 5000 if args.latency is not None and args.hosts is None else 20000
    if args.n < 100 or args.rounds < 1 or (args.hosts is not None and args.hosts < 1):
        ap.error("n must be >= 100, rounds >= 1 and hosts >= 1")
    if args.prefill is None:
        args.prefill = 10000 if args.quick else 100000
    if args.prefill < 0:
        ap.error("--prefill must be >= 0")
    if args.twiced is not None and len(args.twiced) == 2:
        args.twiced = args.twiced + (1,)
    return args


def main():
    args = parse_args()
    ctx = Context(args)
    try:
        return run(ctx, args)
    finally:
        ctx.close()


def run(ctx, args):
    mode = ("hosts" if args.hosts is not None else "latency" if args.latency is not None
            else "standard")
    info = {"date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
            "revision": revision(), "machine": sysstat.machine(), "n": args.n,
            "distinct": message_plan(args.n)[1], "mode": mode, "latency": args.latency,
            "hosts": args.hosts, "pg_stat_statements": ctx.pgss,
            "baseline": args.baseline_build, "prefill": args.prefill}
    log("twiced %s, %s mode, %d messages, %d rounds; work files in %s"
        % (info["revision"], mode, args.n, args.rounds, ctx.work))
    runs = plan(ctx, args)
    keys = [r[0] for r in runs]
    warm_up(ctx, args, runs)
    rounds = []
    for i in range(args.rounds):
        log("round %d of %d" % (i + 1, args.rounds))
        # The order turns each round (a b c, b c a, c a b): no run is always first.
        k = i % len(runs)
        rounds.append(run_round(ctx, runs[k:] + runs[:k], args.n))
    med, ratios = summarize(rounds, keys, mode_pairs(args))
    cg = None
    if mode == "standard" and not args.no_callgrind:
        n_cg = 500 if args.quick else cgrind.CALLGRIND_MESSAGES
        log("callgrind: one worker, %d messages" % n_cg)
        cg = cgrind.callgrind(ctx, n=n_cg)
    text = report.render(info, keys, med, ratios, rounds, cg)
    if mode == "standard" and args.start_cost:
        log("start-up: each contender %d times, on an empty queue" % args.rounds)
        text += "\n\n" + startcost.run(ctx, Clocks, [r[:3] for r in runs if r[1] is not Bare],
                                        args.rounds, args.n)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
        with open(args.out + ".json", "w") as f:
            json.dump({"info": info, "keys": keys, "medians": med,
                       "ratios": [{"a": a, "b": b, "figure": k, "ratio": v}
                                  for (a, b, k), v in ratios.items()],
                       "rounds": rounds, "callgrind": cg}, f, indent=2)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (BenchError, subprocess.TimeoutExpired) as e:
        log("FAILED: %s" % e)
        sys.exit(1)
