"""syscalls.py: system calls and user/system CPU per message of one twiced master with one
worker, by difference of two drains (N_SMALL and N_LARGE preloaded messages), so that
start-up and stop cancel out. Not part of bench/run.sh and not a test: a tool for a
change of the hot path (bench/README.md, "Round eleven"). Needs perf (`perf trace -s`),
root or perf_event_paranoid <= 1 for tracepoints; the servers of scripts/testenv.sh.

    . RUN_DIR/env.sh; python3 bench/syscalls.py --build-dir build-bench [--twiced 1:4:4:512:10]
        [--small 2000] [--large 12000] [--cpu-only] [--keep]

Per system call and per thread (the per-thread table shows which loop makes them), and
utime/stime of the worker from /proc (a run without perf, since tracing costs the traced
process system time).
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time

from common import BenchError, clean_env, end_run, log, message_plan, preload, twicetest
import bench
from sysstat import HZ, descendants


def worker_pid(master):
    kids = [p for p in descendants([master]) if p != master]
    return kids[0] if kids else None


def proc_ticks(pid):
    """(utime, stime, voluntary, involuntary context switches) of a process, all threads."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    vol = invol = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches:"):
                        vol += int(line.split()[1])
                    elif line.startswith("nonvoluntary_ctxt_switches:"):
                        invol += int(line.split()[1])
        except FileNotFoundError:
            pass
    return int(fields[11]), int(fields[12]), vol, invol


def drain(ctx, settings, n, trace, work):
    """One drain of n preloaded messages by a fresh master. Returns (proc_ticks of the
    worker at the end of the drain, perf's summary text or None)."""
    bodies, d = message_plan(n)
    url, dlq_url = ctx.sqs.create_queue_pair(twicetest.unique_name("bench-sys", 60))
    dsn = ctx.pg.new_database("bench_sys")
    home = os.path.join(work, "run-%d-%s" % (n, "trace" if trace else "cpu"))
    os.makedirs(home)
    conf = os.path.join(home, "twice.conf")
    with open(conf, "w") as f:
        f.write(ctx.twiced_config(url, dlq_url, dsn, settings, os.path.join(home, "counts"),
                                  ctx.endpoint))
    preload(ctx.sqs, url, bodies)
    cmd = [ctx.twiced, "-f", "-c", conf]
    out = os.path.join(home, "perf.txt")
    if trace:
        cmd = ["perf", "trace", "-s", "-o", out, "--"] + cmd
    logf = open(os.path.join(home, "twiced.log"), "ab")
    p = subprocess.Popen(cmd, cwd=home, env=clean_env(), stdin=subprocess.DEVNULL,
                         stdout=logf, stderr=subprocess.STDOUT, start_new_session=True)
    logf.close()
    try:
        master = p.pid
        if trace:
            deadline = time.monotonic() + 10
            while not [c for c in descendants([p.pid]) if c != p.pid]:
                if time.monotonic() > deadline:
                    raise BenchError("perf never started twiced")
                time.sleep(0.01)
            master = [c for c in descendants([p.pid]) if c != p.pid][0]
        ticks, deadline = None, time.monotonic() + 300
        while sum(ctx.sqs.counts(url)) != 0:
            if time.monotonic() > deadline or p.poll() is not None:
                raise BenchError("the queue was not drained (logs in %s)" % home)
            time.sleep(0.05)
        w = worker_pid(master)
        if w is not None:
            ticks = proc_ticks(w)
        os.kill(master, signal.SIGTERM)
        if p.wait(timeout=90) != 0:
            raise BenchError("exit %d (logs in %s)" % (p.returncode, home))
        rows, completed, _ = ctx.pg.key_states(dsn, "twice_idempotency")
        if (rows, completed) != (d, d):
            raise BenchError("%d rows, %d completed, want %d" % (rows, completed, d))
    finally:
        end_run(ctx, p, (url, dlq_url), dsn)
    text = None
    if trace:
        with open(out) as f:
            text = f.read()
    return ticks, text


def parse_perf(text):
    """perf trace -s: {tid: {syscall: calls}} (every process and thread of the tree)."""
    threads, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"^\s*(\S+) \((\d+)\), (\d+) events", line)
        if m:
            cur = threads.setdefault(int(m.group(2)), {})
            continue
        m = re.match(r"^\s+([a-z_0-9]+)\s+(\d+)\s+(\d+)\s+[\d.]+", line)
        if m and cur is not None:
            cur[m.group(1)] = cur.get(m.group(1), 0) + int(m.group(2))
    return threads


def totals(threads):
    out = {}
    for calls in threads.values():
        for name, c in calls.items():
            out[name] = out.get(name, 0) + c
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--twiced", type=bench.parse_pair, default=(1, 4, 4, 512, 10))
    ap.add_argument("--small", type=int, default=2000)
    ap.add_argument("--large", type=int, default=12000)
    ap.add_argument("--cpu-only", action="store_true")
    ap.add_argument("--trace-only", action="store_true")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    ns = argparse.Namespace(build_dir=args.build_dir, log_level="info", baseline_build=None,
                            no_pg_stat_statements=True, prefill=0, latency=None)
    ctx = bench.Context(ns)
    per = args.large - args.small
    try:
        if not args.trace_only:
            cpu = {}
            for n in (args.small, args.large):
                cpu[n] = drain(ctx, args.twiced, n, False, ctx.work)[0]
            du = (cpu[args.large][0] - cpu[args.small][0]) / HZ
            ds = (cpu[args.large][1] - cpu[args.small][1]) / HZ
            print("worker CPU per 10,000 messages: user %.3f s, system %.3f s (%d%% system)"
                  % (du * 1e4 / per, ds * 1e4 / per, 100 * ds / max(du + ds, 1e-9)))
            print("context switches per message: voluntary %.3f, involuntary %.3f"
                  % ((cpu[args.large][2] - cpu[args.small][2]) / per,
                     (cpu[args.large][3] - cpu[args.small][3]) / per))
        if not args.cpu_only:
            sc = {}
            for n in (args.small, args.large):
                sc[n] = parse_perf(drain(ctx, args.twiced, n, True, ctx.work)[1])
            big, small = totals(sc[args.large]), totals(sc[args.small])
            diff = {k: big.get(k, 0) - small.get(k, 0) for k in set(big) | set(small)}
            print("system calls per message (whole tree, %d - %d messages):"
                  % (args.large, args.small))
            for k, v in sorted(diff.items(), key=lambda kv: -kv[1]):
                if abs(v) / per >= 0.005:
                    print("  %-16s %6.3f" % (k, v / per))
            print("  %-16s %6.3f" % ("total", sum(diff.values()) / per))
            print("per thread of the large run (calls per message of the large run):")
            for tid, calls in sorted(sc[args.large].items(), key=lambda kv: -sum(kv[1].values())):
                tot = sum(calls.values())
                if tot / args.large < 0.01:
                    continue
                top = sorted(calls.items(), key=lambda kv: -kv[1])[:6]
                print("  %7d %6.3f  %s" % (tid, tot / args.large, ", ".join(
                    "%s %.3f" % (k, v / args.large) for k, v in top)))
    finally:
        ctx.close()
        if args.keep:
            log("kept %s" % ctx.work)
        else:
            shutil.rmtree(ctx.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (BenchError, subprocess.TimeoutExpired) as e:
        log("FAILED: %s" % e)
        sys.exit(1)
