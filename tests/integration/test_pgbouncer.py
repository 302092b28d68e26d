"""twiced behind Debian's pgbouncer (issue 19): session and transaction pooling.

Each test starts its own pgbouncer on a free 127.0.0.1 port in front of the run's
PostgreSQL. Session pooling gives every twiced connection a server connection of its own
for its whole life. Transaction pooling hands a server connection to a client for one
transaction only; pgbouncer 1.18 (Debian 12) does not carry prepared statements between
server connections (1.21+ can, with max_prepared_statements). twiced works with it
anyway (core/idem/idem_stmt.c):

- its hot-path statements are named for a hash of their text (the table name
  included), so a name another client prepared on the same server connection is the
  same statement: two deployments with different idempotency tables in one database
  never run each other's SQL;
- a statement missing on the server connection at hand ("does not exist") is prepared
  and run in one pipeline ending in one Sync, which pgbouncer keeps on one server
  connection;
- inside a transaction (a transactional handler's) the store's statements are unnamed,
  and pgbouncer keeps the transaction on one server connection.
"""

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

import twicetest
import twiceconf as tc

PGBOUNCER = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
EFFECT_TX = "effect-tx"


class PgBouncer:
    """One pgbouncer in front of the run's PostgreSQL, in its own directory under the
    run directory, listening on a free 127.0.0.1 port; stop() ends it. As root it runs
    as `postgres` (pgbouncer refuses root), so its directory is handed to that user."""

    def __init__(self, env, pool_mode, **settings):
        if not os.path.exists(PGBOUNCER):
            raise twicetest.EnvError("pgbouncer is not installed: run scripts/deps.sh")
        self.env = env
        self.dir = tempfile.mkdtemp(prefix="pgbouncer-", dir=env.run_dir)
        self.port = tc.free_port()
        self.log_path = os.path.join(self.dir, "pgbouncer.log")
        ini = os.path.join(self.dir, "pgbouncer.ini")
        userlist = os.path.join(self.dir, "userlist.txt")
        values = {
            "listen_addr": "127.0.0.1",
            "listen_port": self.port,
            "unix_socket_dir": "",
            "auth_type": "scram-sha-256",
            "auth_file": userlist,
            "admin_users": env.pg_user,
            "pool_mode": pool_mode,
            "default_pool_size": 20,
            "max_client_conn": 200,
            "logfile": self.log_path,
        }
        values.update(settings)
        with open(ini, "w") as f:
            f.write("[databases]\n* = host=127.0.0.1 port=%d\n\n[pgbouncer]\n"
                    % env.pg_port)
            for name, value in values.items():
                f.write("%s = %s\n" % (name, value))
        with open(userlist, "w") as f:
            f.write('"%s" "%s"\n' % (env.pg_user, env.pg_password))
        cmd = [PGBOUNCER, ini]
        if os.getuid() == 0:
            shutil.chown(self.dir, "postgres")
            for path in (ini, userlist):
                shutil.chown(path, "postgres")
                os.chmod(path, 0o600)
            cmd[1:1] = ["-u", "postgres"]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, cwd=self.dir)
        twicetest.wait_until(self._listening, timeout=10,
                             message="pgbouncer did not listen on 127.0.0.1:%d (log: %s)"
                             % (self.port, self.log_path))

    def _listening(self):
        if self.proc.poll() is not None:
            raise AssertionError("pgbouncer exited with %s:\n%s"
                                 % (self.proc.returncode, self.log_tail()))
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
            return True
        except OSError:
            return False

    def log_tail(self, lines=30):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return "(no log)"

    def dsn(self, direct_dsn):
        """The DSN of direct_dsn's database through this pgbouncer."""
        name = direct_dsn.rsplit("/", 1)[1]
        return twicetest.Pg(self.env).dsn(name).replace(
            ":%d/" % self.env.pg_port, ":%d/" % self.port)

    def admin(self, command):
        """One command on pgbouncer's admin console: rows as dicts."""
        import psycopg2

        conn = psycopg2.connect(host="127.0.0.1", port=self.port, user=self.env.pg_user,
                                password=self.env.pg_password, dbname="pgbouncer",
                                connect_timeout=10)
        conn.autocommit = True
        try:
            with conn.cursor() as cur:
                cur.execute(command)
                if cur.description is None:
                    return []
                names = [d[0] for d in cur.description]
                return [dict(zip(names, row)) for row in cur.fetchall()]
        finally:
            conn.close()

    def transactions(self, dsn):
        """Transactions pgbouncer has carried for dsn's database (SHOW STATS)."""
        name = dsn.rsplit("/", 1)[1]
        return sum(int(r["total_xact_count"]) for r in self.admin("SHOW STATS")
                   if r["database"] == name)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Pooling(twicetest.TwiceTestCase):
    def bouncer(self, pool_mode, **settings):
        b = PgBouncer(self.env, pool_mode, **settings)
        self.addCleanup(b.stop)
        return b

    def deployment(self, prefix, dsn, via, table=None, effects="effects", workers=2,
                   concurrency=4, max_attempts=5):
        """A queue pair and a started twiced running effect_tx (its effect rows in
        `effects`) whose idempotency store goes through `via`. Returns (twiced, url,
        dlq)."""
        url, dlq = self.queue_pair(prefix)
        q = tc.queue(prefix, url, dlq, EFFECT_TX, concurrency=concurrency,
                     max_attempts=max_attempts, backoff=(1, 2))
        conf = tc.config(self.env, via, [q],
                         [tc.plugin(EFFECT_TX, tc.test_plugin(self.env, "effect_tx"),
                                    table=effects)], workers=workers)
        if table is not None:
            conf = conf.replace("idempotency = {", "idempotency = { table = %s;"
                                % tc.quote(table), 1)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=30)
        return d, url, dlq

    def send_ids(self, url, ids):
        for i in range(0, len(ids), 10):
            self.sqs.send_batch(url, [json.dumps({"id": k}) for k in ids[i:i + 10]])

    def wait_empty(self, url, timeout=60):
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=timeout,
                             message="queue %s did not end empty" % url)

    def effects(self, dsn, table="effects"):
        """key -> list of attempts its effect rows were written at."""
        out = {}
        for key, attempt in self.pg.query(dsn, 'SELECT key, attempt FROM "%s"' % table):
            out.setdefault(key, []).append(attempt)
        return out

    def errors(self, d):
        return [line for line in d.log_text().splitlines() if " error " in line]

    def assert_exactly_once(self, d, dsn, url, dlq, ids, table="effects",
                            idem_table="twice_idempotency"):
        """Every id's effect exactly once, at its first attempt; its key completed; the
        queue and its DLQ empty; no error in the log."""
        self.wait_empty(url)
        want = {"effect:%s" % k: [1] for k in set(ids)}
        self.assertEqual(self.effects(dsn, table), want)
        rows = self.pg.query(dsn, 'SELECT count(*) FILTER (WHERE state = %%s), count(*) '
                                  'FROM "%s"' % idem_table, ("completed",))
        self.assertEqual(rows[0], (len(want), len(want)))
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        self.assertEqual(self.errors(d), [])

    def test_session_pooling_runs_every_key_once(self):
        """Session pooling: the migration, the named statements, transactional
        handlers and twicectl all work; pgbouncer carries every transaction."""
        b = self.bouncer("session")
        dsn = self.new_database("pgbs")
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        d, url, dlq = self.deployment("pgbs", dsn, b.dsn(dsn))
        ids = ["s%d" % (i % 40) for i in range(60)]  # 20 duplicates
        self.send_ids(url, ids)
        self.assert_exactly_once(d, dsn, url, dlq, ids)
        self.assertGreater(b.transactions(dsn), 40)
        r = subprocess.run([self.env.binary("twicectl"), "-c", d.config_path, "key", "show",
                            "effect:s7"], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("completed", r.stdout)
        self.assertEqual(d.stop(), 0)

    def test_transaction_pooling_works_apart_from_named_statements(self):
        """Transaction pooling with ONE server connection per database: the migration
        under its transaction-scoped advisory lock, the claims, transactional handlers
        (BEGIN ... COMMIT on one server connection) and twicectl's unnamed statements all
        work. Every client's named statements meet on that one server connection; the
        tests below cover several deployments and changing server connections."""
        b = self.bouncer("transaction", default_pool_size=1)
        dsn = self.new_database("pgbt")
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        d, url, dlq = self.deployment("pgbt", dsn, b.dsn(dsn))
        ids = ["t%d" % (i % 40) for i in range(60)]
        self.send_ids(url, ids)
        self.assert_exactly_once(d, dsn, url, dlq, ids)
        self.assertGreater(b.transactions(dsn), 40)
        ctl = [self.env.binary("twicectl"), "-c", d.config_path, "key"]
        r = subprocess.run(ctl + ["show", "effect:t7"], capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("completed", r.stdout)
        r = subprocess.run(ctl + ["forget", "effect:t7", "--yes"], capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(d.stop(), 0)

    def test_transaction_pooling_keeps_two_tables_apart(self):
        """Two deployments sharing a database through one transaction pool, each with its
        own idempotency table and the same plugin, each run their own messages. With one
        statement name for every table (before issue 19), the second one's prepare found
        the first one's claim statement on the shared server connection, took it for its
        own, claimed in the FIRST one's table, found the keys completed there and deleted
        its messages without running the handler."""
        b = self.bouncer("transaction", default_pool_size=1)
        dsn = self.new_database("pgb2")
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        self.pg.query(dsn, tc.EFFECTS_TABLE.replace("effects", "effects_b", 1))
        ids = ["k%d" % i for i in range(10)]
        a, url_a, dlq_a = self.deployment("pgba", dsn, b.dsn(dsn), table="idem_a",
                                          workers=1)
        self.send_ids(url_a, ids)
        self.assert_exactly_once(a, dsn, url_a, dlq_a, ids, idem_table="idem_a")
        bb, url_b, dlq_b = self.deployment("pgbb", dsn, b.dsn(dsn), table="idem_b",
                                           effects="effects_b", workers=1)
        self.send_ids(url_b, ids)
        self.assert_exactly_once(bb, dsn, url_b, dlq_b, ids, table="effects_b",
                                 idem_table="idem_b")

    def test_transaction_pooling_survives_new_server_connections(self):
        """pgbouncer replaces server connections (server_lifetime, server_idle_timeout, a
        pool that grows under load), and a statement twiced prepared on one is missing on
        the next. Here server connections live 0.3 s and four of them take turns, so what
        an hour of production does happens in seconds: every key still runs exactly once,
        at its first attempt, with no error (before issue 19: claims failed with
        "prepared statement ... does not exist" and transactional handlers' work was rolled
        back and run again at a later attempt). The test stops at the first error."""
        b = self.bouncer("transaction", default_pool_size=4, server_round_robin=1,
                         server_lifetime=0.3)
        dsn = self.new_database("pgbl")
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        d, url, dlq = self.deployment("pgbl", dsn, b.dsn(dsn))
        ids = ["l%d" % i for i in range(200)]
        for i in range(0, len(ids), 20):  # over 5 s: many server lifetimes
            self.send_ids(url, ids[i:i + 20])
            if self.errors(d):
                break
            time.sleep(0.5)
        twicetest.wait_until(lambda: self.errors(d) or self.sqs.counts(url) == (0, 0, 0),
                             timeout=60, message="queue %s did not end empty" % url)
        self.assertEqual(self.errors(d), [])
        self.assert_exactly_once(d, dsn, url, dlq, ids)

if __name__ == "__main__":
    unittest.main()
