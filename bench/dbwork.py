"""dbwork.py: what a benchmark run costs PostgreSQL, from its own counters (issue 19).

What it is for: turning on pg_stat_statements in the throwaway cluster of
scripts/testenv.sh, and taking before/after snapshots of one run's database: statements
(pg_stat_statements, per statement text; without it, pg_stat_database's tuple counters
stand in and the report says so), commits and rollbacks (pg_stat_database), WAL
(pg_current_wal_lsn and pg_stat_wal, cluster-wide: checkpoints and autovacuum count too)
and the rows of its tables (pg_stat_user_tables: inserts, updates, HOT updates, deletes).
Not for: PostgreSQL's CPU time (bench.py reads /proc), or any assertion.

Stdlib and psycopg2 only.
"""

import os
import subprocess
import time
import urllib.parse

PGSS = "pg_stat_statements"


def _name(dsn):
    return urllib.parse.urlsplit(dsn).path.lstrip("/")


def enable_statements(pg, root, run_dir, log):
    """Load pg_stat_statements into the run's cluster (ALTER SYSTEM, then a restart by
    scripts/testenv.sh pg-restart) and create the extension in the admin database.
    Returns True when its view answers; False (after logging why) otherwise, and the
    report then counts statements from pg_stat_database's tuple counters instead."""
    try:
        libs = pg.query(pg.admin_dsn, "SHOW shared_preload_libraries")[0][0]
        if PGSS not in libs.split(","):
            pg.query(pg.admin_dsn, "ALTER SYSTEM SET shared_preload_libraries = %s",
                     (",".join(x for x in (libs, PGSS) if x),))
            subprocess.run(["bash", os.path.join(root, "scripts", "testenv.sh"), "pg-restart",
                            run_dir], check=True, capture_output=True, timeout=120)
        pg.query(pg.admin_dsn, "CREATE EXTENSION IF NOT EXISTS " + PGSS)
        pg.query(pg.admin_dsn, "SELECT count(*) FROM " + PGSS)
        return True
    except Exception as e:  # noqa: BLE001 - any failure means: fall back, say why
        log("pg_stat_statements is not available (%s): counting statements from "
            "pg_stat_database's tuple counters instead" % str(e).strip().splitlines()[0])
        return False


def wait_disconnected(pg, dsn, timeout=15):
    """Wait until no backend is connected to dsn's database: a backend writes its
    counters to the shared statistics when it exits, so only then are they complete."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        n = pg.query(pg.admin_dsn, "SELECT count(*) FROM pg_stat_activity WHERE datname = %s",
                     (_name(dsn),))[0][0]
        if n == 0:
            return True
        time.sleep(0.05)
    return False


def snapshot(pg, dsn, with_statements):
    """The counters of dsn's database now (a dict, see diff). The tables' counters need
    a connection to the database itself, whose own commit would count: they are read
    first, and the rest once that connection has gone (its statement is left out)."""
    tables = {}
    for rel, ins, upd, hot, dele, av in pg.query(dsn, """
            SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del,
                   autovacuum_count + autoanalyze_count FROM pg_stat_user_tables"""):
        tables[rel] = (ins, upd, hot, dele, av)
    wait_disconnected(pg, dsn)
    name = _name(dsn)
    snap = {}
    rows = pg.query(pg.admin_dsn, """
        SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint,
               w.wal_records, w.wal_fpi, w.wal_bytes::bigint,
               d.xact_commit, d.xact_rollback, d.tup_inserted, d.tup_updated, d.tup_deleted,
               d.tup_returned, d.tup_fetched, d.oid
        FROM pg_stat_wal w,
             (SELECT s.*, db.oid FROM pg_stat_database s JOIN pg_database db
              ON db.datname = s.datname WHERE s.datname = %s) d""", (name,))
    (snap["wal_lsn"], snap["wal_records"], snap["wal_fpi"], snap["wal_bytes"],
     snap["commits"], snap["rollbacks"], snap["tup_inserted"], snap["tup_updated"],
     snap["tup_deleted"], snap["tup_returned"], snap["tup_fetched"], oid) = rows[0]
    snap["statements"] = {}
    if with_statements:
        for q, calls, nrows, ms, wal, dirtied in pg.query(pg.admin_dsn, """
                SELECT query, sum(calls)::bigint, sum(rows)::bigint, sum(total_exec_time),
                       sum(wal_bytes)::bigint, sum(shared_blks_dirtied)::bigint
                FROM pg_stat_statements WHERE dbid = %s AND query NOT LIKE %s
                GROUP BY query""", (oid, "%pg_stat_user_tables%")):
            snap["statements"][q] = (calls, nrows, ms, wal, dirtied)
    snap["tables"] = tables
    return snap


def diff(before, after, n, seconds):
    """What happened between two snapshots, as totals and per message (n messages,
    drained in `seconds`). statements is pg_stat_statements' count of statement runs
    (BEGIN and COMMIT included), or, without it, None."""
    d = {k: after[k] - before[k] for k in ("wal_lsn", "wal_records", "wal_fpi", "wal_bytes",
                                           "commits", "rollbacks", "tup_inserted",
                                           "tup_updated", "tup_deleted", "tup_returned",
                                           "tup_fetched")}
    stmts = []
    for q, vals in after["statements"].items():
        old = before["statements"].get(q, (0, 0, 0.0, 0, 0))
        calls, rows, ms, wal, dirtied = (a - b for a, b in zip(vals, old))
        if calls > 0:
            stmts.append({"query": q, "calls": calls, "rows": rows, "ms": ms, "wal": wal,
                          "dirtied": dirtied})
    stmts.sort(key=lambda s: -s["calls"])
    tables = {}
    for rel, vals in after["tables"].items():
        old = before["tables"].get(rel, (0, 0, 0, 0, 0))
        tables[rel] = [a - b for a, b in zip(vals, old)]
    upd = sum(t[1] for t in tables.values())
    hot = sum(t[2] for t in tables.values())
    out = {
        "statements": sum(s["calls"] for s in stmts) if after["statements"] else None,
        "commits": d["commits"],
        "rollbacks": d["rollbacks"],
        "wal_bytes": d["wal_lsn"],
        "wal_records": d["wal_records"],
        "wal_fpi": d["wal_fpi"],
        "rows_written": d["tup_inserted"] + d["tup_updated"] + d["tup_deleted"],
        "hot_share": hot / upd if upd else None,
        "by_statement": stmts,
        "tables": tables,
    }
    per = {"statements_per_msg": None if out["statements"] is None else out["statements"] / n,
           "commits_per_msg": out["commits"] / n,
           "wal_bytes_per_msg": out["wal_bytes"] / n,
           "rows_written_per_msg": out["rows_written"] / n,
           "commits_per_s": out["commits"] / seconds,
           "statements_per_s": None if out["statements"] is None
           else out["statements"] / seconds,
           "wal_mb_per_s": out["wal_bytes"] / seconds / 1e6}
    out.update(per)
    return out
