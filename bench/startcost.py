"""startcost.py: what one start of each contender costs, apart from its messages
(bench/run.sh --start-cost).

What it is for: the run figures of bench.py begin when twiced is spawned (its start-up
counts against it) and when the Node peer is told to go, after it has loaded its modules
and connected its pool. A start is a fixed cost, the same for 2,000 messages or for a
week of them, so in a run of N messages it weighs 10,000 / N of its size in every
"per 10,000 messages" figure of twiced, and nothing in the peer's. This measures it: each
contender is launched as in a run, with its settings and a table made as in a run, on an
empty queue, and its CPU and PostgreSQL's (postmaster, backends, background processes)
are read from launch until it is ready (twiced: the master's "ready: generation" line;
the peer: its "ready", where bench.py says go) and SETTLE_S more, in which twiced's
receivers finish the claim check each makes on its new connection.

Not for: any per-message figure (bench.py), or any assertion.
"""

import statistics
import time

from common import end_run, log, twicetest
import cgrind
import sysstat

SETTLE_S = 2.0


def backends(ctx, dsn):
    """Connections to dsn's database other than this script's."""
    return ctx.pg.query(dsn, "SELECT count(*) FROM pg_stat_activity"
                        " WHERE datname = current_database() AND pid <> pg_backend_pid()")[0][0]


def measure_once(ctx, clocks, cls, settings):
    """One start of cls with settings on an empty queue: a dict of CPU seconds (own,
    PostgreSQL), seconds to ready and connections once settled."""
    url, dlq_url = ctx.sqs.create_queue_pair(twicetest.unique_name("start-" + cls.kind, 60))
    dsn = ctx.pg.new_database("start_" + cls.kind.replace("-", "_"))
    c = cls(ctx, settings)
    try:
        c.prepare(url, dlq_url, dsn)
        clk0 = clocks(ctx, c, False)
        t0 = time.monotonic()
        c.launch(url, dlq_url, dsn)
        if not c.gated:
            cgrind.wait_for_log(c.log_path, "ready: generation", c.procs[0], 60)
        ready_s = time.monotonic() - t0
        time.sleep(SETTLE_S)
        clk1 = clocks(ctx, c)
        conns = backends(ctx, dsn)
        if not c.gated:
            c.stop()  # twiced ends as in a run (SIGTERM); the peer, never started, is killed
    finally:
        c.kill()
        end_run(ctx, None, (url, dlq_url), dsn)
    return {"cpu_s": (clk1.contender - clk0.contender) / sysstat.HZ,
            "pg_cpu_s": (clk1.pg - clk0.pg) / sysstat.HZ,
            "ready_s": ready_s, "backends": conns}


def run(ctx, clocks, contenders, rounds, n):
    """rounds starts of each (key, class, settings) in contenders, the order turning each
    round; prints the medians and, for a run of n messages, what they add per 10,000.
    clocks: bench.Clocks (passed in: this module is imported by bench.py)."""
    got = {key: [] for key, _, _ in contenders}
    for i in range(rounds):
        k = i % len(contenders)
        for key, cls, settings in contenders[k:] + contenders[:k]:
            fig = measure_once(ctx, clocks, cls, settings)
            log("start of %-12s CPU %.2f s, PostgreSQL CPU %.2f s, ready after %.2f s, "
                "%d connections" % (key, fig["cpu_s"], fig["pg_cpu_s"], fig["ready_s"],
                                    fig["backends"]))
            got[key].append(fig)
    per10k = 10000 / n
    lines = ["One start, apart from its messages (medians of %d; launch to ready + %.0f s,"
             " empty queue)" % (rounds, SETTLE_S), "",
             "| contender | CPU s | PostgreSQL CPU s | ready after, s | connections |"
             " in a run of %d messages: CPU s / 10k, PostgreSQL CPU s / 10k |" % n,
             "| --- | ---: | ---: | ---: | ---: | --- |"]
    for key, cls, _ in contenders:
        med = {f: statistics.median(r[f] for r in got[key])
               for f in ("cpu_s", "pg_cpu_s", "ready_s", "backends")}
        counted = not cls.gated  # spawned at the start of its run figures
        lines.append("| %s | %.2f | %.2f | %.2f | %d | %s |" % (
            key, med["cpu_s"], med["pg_cpu_s"], med["ready_s"], med["backends"],
            "%.2f, %.2f (counted in its figures)" % (med["cpu_s"] * per10k,
                                                   med["pg_cpu_s"] * per10k)
            if counted else "none (its figures begin at go)"))
    return "\n".join(lines)
