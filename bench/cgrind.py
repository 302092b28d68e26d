"""cgrind.py: instructions per message of one twiced worker, counted by callgrind
(bench/run.sh without --no-callgrind). The count does not depend on the machine's load,
which makes it the figure to compare before and after a change of the hot path.

Not for: timing anything. Needs valgrind (callgrind_control, callgrind_annotate).
"""

import os
import re
import signal
import subprocess
import time

from common import (BenchError, clean_env, end_run, message_plan, preload_unchecked,
                    twicetest)

CALLGRIND_MESSAGES = 2000
CALLGRIND_CONCURRENCY = 32  # fixed, so that the figure compares across runs
CALLGRIND_VISIBILITY = 600


def wait_settled(ctx, dsn, p, connections=2, timeout=120):
    """Wait until the worker's acker and receiver are connected to PostgreSQL and idle,
    then a second more. The receiver connects in its own thread after "worker ready":
    a connection set-up (SCRAM, some 67 M instructions) that fell into the measured window
    added up to 110,000 instructions per message to a 500-message run."""
    name = dsn.rsplit("/", 1)[-1].split("?", 1)[0]
    sql = ("SELECT count(*), count(*) FILTER (WHERE state = 'idle') FROM pg_stat_activity "
           "WHERE datname = %s AND pid <> pg_backend_pid()")
    deadline = time.monotonic() + timeout
    while True:
        total, idle = ctx.pg.query(ctx.pg.env.pg_dsn, sql, (name,))[0]
        if total >= connections and idle == total:
            break
        if time.monotonic() > deadline or p.poll() is not None:
            raise BenchError("callgrind: the worker's %d connections never settled (%d, %d idle)"
                             % (connections, total, idle))
        time.sleep(0.2)
    time.sleep(1.0)


def callgrind(ctx, concurrency=CALLGRIND_CONCURRENCY, n=CALLGRIND_MESSAGES):
    """Instructions one twiced worker executes per message: a worker process (twiced-worker
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
        f.write(ctx.twiced_config(url, dlq_url, dsn, (1, concurrency, 1), count_file,
                                  ctx.endpoint, visibility=CALLGRIND_VISIBILITY))
    fd = os.open(conf, os.O_RDONLY)
    plugin_fd = os.open(ctx.noop, os.O_RDONLY)  # as the master hands a worker its plugins
    # the worker's own executable (twiced-worker, beside twiced), or twiced itself in
    # the trees before the split (a --baseline build)
    worker = ctx.twiced + "-worker" if os.path.exists(ctx.twiced + "-worker") else ctx.twiced
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--callgrind-out-file=" + out,
           worker, "--worker", "--config-fd", str(fd), "--shm-fd", "-1", "--ctl-fd", "-1",
           "--slot", "0", "--generation", "1", "--master-pid", str(os.getpid()),
           "--config-path", conf, "--instance", "0123456789abcdef",
           "--plugin-fds", str(plugin_fd)]
    logf = open(log_path, "ab")
    p = subprocess.Popen(cmd, cwd=ctx.work, env=clean_env(), stdin=subprocess.DEVNULL,
                         stdout=logf, stderr=subprocess.STDOUT, pass_fds=(fd, plugin_fd))
    logf.close()
    os.close(fd)
    os.close(plugin_fd)
    try:
        wait_for_log(log_path, "worker ready", p, 120)
        wait_settled(ctx, dsn, p)
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
        rows, completed, _ = ctx.pg.key_states(dsn, "twice_idempotency")
        if (calls, rows, completed) != (d, d, d):
            raise BenchError("callgrind: %d handler calls, %d rows, %d completed; want %d"
                             % (calls, rows, completed, d))
    finally:
        end_run(ctx, p, (url, dlq_url), dsn)
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
