#!/usr/bin/python3
"""soak.py: hours of a twiced's life, compressed, to see what grows.

What it is for: one twiced (two queues, the effect_tx fixture plugin, metrics on) driven
through the events of weeks in production, in phases: (a) N messages (10% duplicates,
some retried, some rejected into the DLQ); (b) R reloads alternating two configurations
with messages flowing; (c) K SIGKILLs of a random worker; (d) SIGUSR1 log reopens after a
rename, as logrotate does; (e) a PostgreSQL restart and an emulator restart mid-flow. Each
phase is run in two halves; after each half, once the queues are drained, it records for
the master and every worker VmRSS, RssAnon, open fds, threads and /proc/PID/maps lines,
and the /metrics series count. A figure that grows in the second half about as much as in
the first grows with the phase's count rather than levelling off: it is flagged. Every
distinct key must have exactly one effect row (effect_tx writes it in the transaction that
completes the key), and the rejected keys none.

What it is not: a test (no CI runs it; nothing here asserts a timing) or a benchmark.

    scripts/testenv.sh up /tmp/rss-soak && . /tmp/rss-soak/env.sh
    bench/soak.py --build build-dev [-n 50000] [-r 50] [-k 20] [--reopens 20]

The emulator restart starts fauxqs again on its port and writes RUN_DIR/fauxqs.pid, so
`scripts/testenv.sh down RUN_DIR` still stops it. Stdlib and psycopg2 only (Debian's
python3). Exits 1 if an effect ran twice or not at all.
"""

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import common  # noqa: E402  (kept-alive SQS client, the tests' harness on its path)
import twicetest  # noqa: E402
import twiceconf as tc  # noqa: E402

FIGURES = ("rss", "anon", "fds", "thr", "maps")


def log(text):
    print("soak: " + text, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- /proc


def status_kb(pid, name):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    return 0


def proc_figures(pid):
    """VmRSS and RssAnon (kB), open fds, threads and mappings of one process; None if
    it has gone."""
    try:
        with open("/proc/%d/maps" % pid) as f:
            maps = sum(1 for _ in f)
        return {"rss": status_kb(pid, "VmRSS"), "anon": status_kb(pid, "RssAnon"),
                "fds": len(os.listdir("/proc/%d/fd" % pid)),
                "thr": len(os.listdir("/proc/%d/task" % pid)), "maps": maps}
    except OSError:
        return None


def series(port):
    """The series of /metrics (its sample lines without their values: what a Prometheus
    stores as series)."""
    text = tc.http_status(port, "/metrics")[1]
    return [line.rsplit(" ", 1)[0] for line in text.splitlines()
            if line and not line.startswith("#")]


# --------------------------------------------------------------------------- the plan


class Plan:
    """The messages of the whole run and what each must leave behind."""

    def __init__(self):
        self.done_keys = set()     # distinct keys that must have exactly one effect
        self.rejected = set()      # keys that must have none (and a DLQ message)
        self.dlq_expected = 0
        self.serial = 0

    def bodies(self, n, tag, failing=True):
        """n bodies over n - n//10 keys (queue tag alternates a/b in the id): 10% repeat
        an earlier plain key; with failing, 2% of the keys retry once (fail_until 2) and
        0.5% are rejected."""
        out, plain = [], []
        distinct = n - n // 10
        for i in range(distinct):
            self.serial += 1
            key = "%s%07d" % (tag, self.serial)
            body = {"id": key}
            if failing and i % 200 == 7:
                body["reject"] = True
                self.rejected.add(key)
                self.dlq_expected += 1
            else:
                if failing and i % 50 == 3:
                    body["fail_until"] = 2
                self.done_keys.add(key)
                plain.append(key)
            out.append(body)
        for j in range(n // 10):
            out.insert(min(len(out), distinct // 2 + j * 9), {"id": plain[j % len(plain)]})
        return [json.dumps(b) for b in out]


# --------------------------------------------------------------------------- the run


class Soak:
    def __init__(self, args):
        self.args = args
        self.env = twicetest.Env()
        self.sqs = common.Sqs(self.env.sqs_endpoint, self.env.region)
        self.pg = twicetest.Pg(self.env)
        self.plan = Plan()
        self.rows = []
        self.prev = None
        self.name = twicetest.unique_name("soak")
        self.make_queues()
        self.dsn = self.pg.new_database("soak")
        self.pg.query(self.dsn, tc.EFFECTS_TABLE)
        self.port = tc.free_port()
        self.twiced = None
        self.generation = 0

    def make_queues(self):
        self.queues = [self.sqs.create_queue_pair(self.name + "-" + q) for q in ("a", "b")]

    def conf(self, variant):
        """The two configurations reloads alternate: concurrency and the plugin's
        init_sleep_ms differ."""
        plugin = tc.plugin("fx", tc.test_plugin(self.env, "effect_tx"),
                           init_sleep_ms=variant * 5)
        queues = [tc.queue("q" + q, url, dlq, "fx", concurrency=8 + variant * 2,
                           visibility_timeout=10, backoff=(1, 2))
                  for q, (url, dlq) in zip("ab", self.queues)]
        return tc.config(self.env, self.dsn, queues, [plugin], workers=2,
                         metrics_port=self.port, log_file="twiced-file.log")

    def start(self):
        self.twiced = twicetest.Twiced(self.env, self.conf(0), binary=self.args.binary)
        self.twiced.start()
        twicetest.wait_until(lambda: self.ready(), 60, 0.2, "twiced not ready")
        log("twiced %d ready (%s)" % (self.twiced.pid, self.twiced.workdir))

    def ready(self):
        if not self.twiced.running():
            raise RuntimeError("twiced exited: %s" % self.twiced.log_tail())
        try:
            return tc.http_status(self.port, "/readyz")[0] == 200
        except OSError:
            return False

    def send(self, bodies, pace=0.0, sqs=None, patient=False):
        """SendMessageBatch in tens, alternating the two queues; pace seconds between
        batches. patient: an emulator that is away (restarting) is waited for, up to
        60 s a batch."""
        sqs = sqs or self.sqs
        for i in range(0, len(bodies), 10):
            chunk = bodies[i:i + 10]
            entries = [{"Id": str(j), "MessageBody": b} for j, b in enumerate(chunk)]
            deadline = time.monotonic() + 60
            while True:
                try:
                    sqs.call("SendMessageBatch", {"QueueUrl": self.queues[(i // 10) % 2][0],
                                                  "Entries": entries})
                    break
                except (common.BenchError, twicetest.SqsError):
                    if not patient or time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
            if pace:
                time.sleep(pace)

    def flowing(self, bodies, pace):
        """A thread sending bodies at a pace (on its own connection) while the caller
        does something else."""
        sqs = common.Sqs(self.env.sqs_endpoint, self.env.region)
        t = threading.Thread(target=self.send, args=(bodies, pace, sqs, True), daemon=True)
        t.start()
        return t

    def drained(self, timeout=600):
        """Wait until both queues are empty and every expected effect is there."""
        want = len(self.plan.done_keys)

        def empty():
            if any(self.sqs.counts(url) != (0, 0, 0) for url, _ in self.queues):
                return False
            got = self.pg.query(self.dsn, "SELECT count(DISTINCT key) FROM effects")[0][0]
            return got >= want

        twicetest.wait_until(empty, timeout, 0.5, "queues not drained")
        time.sleep(1.5)  # let the acknowledger's last counters and the janitor settle

    def sample(self, label):
        self.drained()
        master = proc_figures(self.twiced.pid)
        workers = [w for w in (proc_figures(p) for p in self.twiced.worker_pids()) if w]
        names = series(self.port)
        row = {"label": label, "master": master, "workers": workers,
               "series": len(names), "series_names": names}
        self.rows.append(row)
        log("%-12s master %s, %d workers, %d series" % (label, master, len(workers),
                                                         row["series"]))

    # ---------------------------------------------------------------- phases

    def phase_messages(self, n):
        for half in (1, 2):
            self.send(self.plan.bodies(n // 2, "a"))
            self.sample("a%d msgs %d" % (half, n // 2 * half))

    def reload_to(self, variant):
        with open(self.twiced.config_path, "w") as f:
            f.write(self.conf(variant).replace("$$", "$"))
        self.twiced.signal(signal.SIGHUP)

    def phase_reloads(self, r):
        for half in (1, 2):
            t = self.flowing(self.plan.bodies(max(100, r * 20), "b"), 0.05)
            for i in range(r // 2):
                self.generation += 1
                self.reload_to(self.generation % 2)
                time.sleep(0.5)
            t.join()
            twicetest.wait_until(self.ready, 60, 0.2, "not ready after the reloads")
            self.sample("b%d reloads %d" % (half, r // 2 * half))

    def phase_kills(self, k):
        for half in (1, 2):
            t = self.flowing(self.plan.bodies(max(100, k * 40), "c"), 0.05)
            for i in range(k // 2):
                pids = self.twiced.worker_pids()
                os.kill(random.choice(pids), signal.SIGKILL)
                twicetest.wait_until(lambda: len(self.twiced.worker_pids()) == 2
                                     and self.ready(), 60, 0.1, "worker not respawned")
                time.sleep(0.3)
            t.join()
            self.sample("c%d kills %d" % (half, k // 2 * half))

    def phase_reopens(self, count):
        path = os.path.join(self.twiced.workdir, "twiced-file.log")
        for half in (1, 2):
            t = self.flowing(self.plan.bodies(500, "d"), 0.02)
            for i in range(count // 2):
                if os.path.exists(path):
                    os.replace(path, path + ".1")
                self.twiced.signal(signal.SIGUSR1)
                time.sleep(0.2)
            t.join()
            self.sample("d%d reopen %d" % (half, count // 2 * half))

    def phase_restarts(self):
        run_dir = self.env.run_dir
        t = self.flowing(self.plan.bodies(1000, "e", failing=False), 0.02)
        time.sleep(1)
        subprocess.run([os.path.join(ROOT, "scripts", "testenv.sh"), "pg-restart", run_dir],
                       check=True, stdout=subprocess.DEVNULL)
        t.join()
        self.sample("e1 pg restart")
        self.dlq_before_restart = self.dlq_problems()
        bodies = self.plan.bodies(1000, "e", failing=False)
        t = self.flowing(bodies, 0.02)
        time.sleep(1)
        self.restart_emulator(run_dir)
        t.join()
        # What the old emulator held is gone: send the whole stream again (the guard
        # skips the keys already completed); the DLQ is new and empty.
        self.plan.dlq_expected = 0
        self.send(bodies)
        self.sample("e2 sqs restart")

    def restart_emulator(self, run_dir):
        pidfile = os.path.join(run_dir, "fauxqs.pid")
        with open(pidfile) as f:
            pid = int(f.read())
        os.kill(pid, signal.SIGTERM)
        twicetest.wait_until(lambda: not os.path.exists("/proc/%d" % pid) or
                             open("/proc/%d/stat" % pid).read().split(")")[1].split()[0] == "Z",
                             10, 0.1, "fauxqs did not stop")
        port = urllib.parse.urlsplit(self.env.sqs_endpoint).port
        with open(os.path.join(run_dir, "fauxqs.log"), "ab") as out:
            p = subprocess.Popen(["node", os.path.join(ROOT, "scripts", "fauxqs.mjs"),
                                  "--port", str(port), "--modules",
                                  os.path.join(ROOT, "tests", "node_modules")],
                                 stdout=out, stderr=out, stdin=subprocess.DEVNULL,
                                 start_new_session=True)
        with open(pidfile, "w") as f:
            f.write("%d\n" % p.pid)
        self.sqs.conn = None

        def up():
            try:
                self.make_queues()
                return True
            except (common.BenchError, twicetest.SqsError):
                return False

        twicetest.wait_until(up, 30, 0.3, "fauxqs did not come back")

    # ---------------------------------------------------------------- checks

    def check_effects(self):
        rows = self.pg.query(self.dsn, "SELECT key, count(*) FROM effects GROUP BY key")
        ids = {k[len("effect:"):] if k.startswith("effect:") else k: c for k, c in rows}
        twice = sorted(k for k, c in ids.items() if c != 1)
        missing = sorted(self.plan.done_keys - set(ids))
        rejected_ran = sorted(self.plan.rejected & set(ids))
        problems = list(getattr(self, "dlq_before_restart", []))
        if twice:
            problems.append("%d keys ran more than once (%s...)" % (len(twice), twice[:5]))
        if missing:
            problems.append("%d keys never ran (%s...)" % (len(missing), missing[:5]))
        if rejected_ran:
            problems.append("%d rejected keys ran" % len(rejected_ran))
        problems += self.dlq_problems()
        log("effects: %d distinct keys, %d rows" % (len(ids), sum(ids.values())))
        return problems

    def dlq_problems(self):
        """The DLQs must hold one message per rejected key (none after the emulator
        restart, which empties them)."""
        dlq = sum(self.sqs.counts(d)[0] for _, d in self.queues)
        log("DLQs hold %d, expected %d" % (dlq, self.plan.dlq_expected))
        if dlq != self.plan.dlq_expected:
            return ["DLQs hold %d, expected %d" % (dlq, self.plan.dlq_expected)]
        return []

    def close(self):
        if self.twiced is not None:
            self.twiced.close()


# --------------------------------------------------------------------------- report


def worker_sum(row, fig):
    return sum(w[fig] for w in row["workers"])


def table(rows):
    head = ("| after | master RSS | anon | fds | thr | maps | workers RSS (sum) | anon | "
            "fds | thr | maps | /metrics series |")
    out = [head, "|" + " --- |" * 12]
    for r in rows:
        m = r["master"] or dict.fromkeys(FIGURES, 0)
        out.append("| %s | %s | %s | %s |" % (
            r["label"], " | ".join(str(m[f]) for f in FIGURES),
            " | ".join(str(worker_sum(r, f)) for f in FIGURES), r["series"]))
    return "\n".join(out)


def flags(rows):
    """Figures whose second half of a phase grew about as much as its first (both
    halves' deltas beyond noise: 256 kB of RSS, 0 of a count, 1 series: a label value
    seen first in the second half, such as the other queue's first lease duplicate,
    is not growth; the report lists the new series for a reader to judge)."""
    noise = {"rss": 256, "anon": 256}
    out = []
    for i in range(2, len(rows)):
        a, b, c = rows[i - 2], rows[i - 1], rows[i]
        if c["label"][:2] == "e2" or c["label"][1] != "2" or b["label"][:2] != c["label"][0] + "1":
            continue
        for who in ("master", "workers"):
            for f in FIGURES:
                def val(r):
                    return (r["master"] or {}).get(f, 0) if who == "master" else worker_sum(r, f)
                d1, d2 = val(b) - val(a), val(c) - val(b)
                if d2 > noise.get(f, 0) and d1 > noise.get(f, 0) and d2 >= d1 / 2:
                    out.append("%s %s %s: +%d then +%d" % (c["label"][0], who, f, d1, d2))
        d1, d2 = b["series"] - a["series"], c["series"] - b["series"]
        if d1 > 1 and d2 > 1 and d2 >= d1 / 2:
            out.append("%s /metrics series: +%d then +%d" % (c["label"][0], d1, d2))
    return out


def build_type(build):
    """CMAKE_BUILD_TYPE of the build directory, from its CMakeCache.txt."""
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith("CMAKE_BUILD_TYPE:"):
                    return line.split("=", 1)[1].strip() or "no type"
    except OSError:
        pass
    return "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build-dev"),
                    help="build directory (bin/twiced, tests/plugins/effect_tx.so)")
    ap.add_argument("-n", type=int, default=50000, help="messages of phase (a)")
    ap.add_argument("-r", type=int, default=50, help="reloads of phase (b)")
    ap.add_argument("-k", type=int, default=20, help="worker kills of phase (c)")
    ap.add_argument("--reopens", type=int, default=20, help="SIGUSR1s of phase (d)")
    ap.add_argument("--json", help="also write the samples here")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    os.environ.setdefault("TWICE_BIN_DIR", os.path.join(build, "bin"))
    os.environ.setdefault("TWICE_TEST_PLUGIN_DIR", os.path.join(build, "tests", "plugins"))
    os.environ.setdefault("TWICE_PLUGIN_BUILD_DIR", os.path.join(build, "plugins"))
    os.environ.setdefault("TWICE_SOURCE_DIR", ROOT)
    args.binary = os.path.join(os.environ["TWICE_BIN_DIR"], "twiced")
    soak = Soak(args)
    try:
        soak.start()
        soak.sample("start")
        soak.phase_messages(args.n)
        soak.phase_reloads(args.r)
        soak.phase_kills(args.k)
        soak.phase_reopens(args.reopens)
        soak.phase_restarts()
        problems = soak.check_effects()
    finally:
        soak.close()
    print("twiced %s (%s build), N=%d R=%d K=%d reopens=%d\n" % (
        args.binary, build_type(build), args.n, args.r, args.k, args.reopens))
    print(table(soak.rows))
    grown = flags(soak.rows)
    print("\ngrows with the count: %s" % ("; ".join(grown) if grown else "nothing"))
    for a, b in zip(soak.rows, soak.rows[1:]):
        new = sorted(set(b["series_names"]) - set(a["series_names"]))
        if new and a["label"] != "start":
            print("series new after %s (%d): %s" % (b["label"], len(new), ", ".join(new[:12])))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(soak.rows, f, indent=1)
    for p in problems:
        print("EXACTLY-ONCE: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
