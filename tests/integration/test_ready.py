"""Ready means able to work: "ready", systemd's READY=1 and /readyz wait until every
worker is connected to PostgreSQL (the table created) and every queue and dead-letter
queue answered a GetQueueAttributes; a start that does not get there within
ready_timeout fails with the reason (exit 1, also under -d and systemd).
`twiced -t --connect` asks the same servers on demand. Real servers; the failures are
real ones: a wrong password, a database that does not exist yet, queues that do not, a
role without CREATE on the schema (enough once the tables exist), or without the grants a
claim needs."""

import json
import os
import re
import signal
import socket
import subprocess
import time
import unittest
import urllib.parse

import faultproxy
import twicetest
import twiceconf as tc

WRONG_PASSWORD = "NotThePassword0d1e"


class Ready(twicetest.TwiceTestCase):
    def conf(self, prefix, dsn=None, url=None, dlq=None, ready_timeout=60, workers=1):
        self.url, self.dlq = self.queue_pair(prefix)
        self.dsn = dsn or self.new_database(prefix)
        self.port = tc.free_port()
        queue = tc.queue("jobs", url or self.url, dlq or self.dlq, "effect-tx")
        return tc.config(self.env, self.dsn, [queue],
                         [tc.plugin("effect-tx", tc.test_plugin(self.env, "effect_tx"))],
                         workers=workers, metrics_port=self.port,
                         extra="ready_timeout = %d;" % ready_timeout)

    def wrong_password_dsn(self):
        name = urllib.parse.urlsplit(self.new_database("ready-pw")).path.lstrip("/")
        return "postgresql://%s:%s@%s:%d/%s" % (self.env.pg_user, WRONG_PASSWORD,
                                                self.env.pg_host, self.env.pg_port, name)

    def missing_queue_url(self):
        return self.url.rsplit("/", 1)[0] + "/" + twicetest.unique_name("missing")

    def test_wrong_database_password_is_never_ready_and_the_start_fails(self):
        d = self.start_twiced(self.conf("ready-pw", dsn=self.wrong_password_dsn(),
                                        ready_timeout=8, workers=2))
        d.wait_log(r"not ready: idempotency store: cannot connect to PostgreSQL: .*password "
                   r"authentication failed", timeout=20)
        status, body = twicetest.wait_until(
            lambda: (lambda r: r if r[0] == 503 and "idempotency" in r[1] else None)(
                tc.http_status(self.port, "/readyz")), timeout=10)
        self.assertRegex(body, r"^workers are not ready: worker \d+: idempotency store: cannot "
                               r"connect to PostgreSQL: .*password authentication failed")
        self.assertEqual(d.proc.wait(timeout=60), 1, "the start failed")
        log = d.log_text()
        self.assertNotIn("ready: generation", log)
        self.assertRegex(log, r"not started: generation 1 was not ready within ready_timeout "
                              r"\(8s\): worker \d+: idempotency store: .*password authentication "
                              r"failed")
        self.assertNotIn(WRONG_PASSWORD, log)
        self.assertEqual(d.group_pids(), [], "the workers went with it")

    def test_a_role_without_create_works_on_tables_their_owner_made(self):
        # A DBA's set-up: the tables made by their owner from etc/schema.sql, twiced's
        # role with only SELECT, INSERT, UPDATE, DELETE on them and no CREATE on the
        # schema. That is enough to work: no CREATE ... IF NOT EXISTS is run for a table
        # that is there (it needs CREATE on the schema even then). Before the tables
        # exist, the refusal says what to grant or apply. (The password is short and
        # part of a word of that refusal, "apply": the password is masked where it stands
        # whole, not inside other words.)
        role = twicetest.unique_name("nocreate", limit=40).lower().replace("-", "_")
        password = "app"
        self.pg.query(self.env.pg_dsn, "CREATE ROLE %s LOGIN PASSWORD '%s'" % (role, password))
        self.addCleanup(self.pg.query, self.env.pg_dsn, "DROP ROLE IF EXISTS %s" % role)
        other = role + "_b"  # for a reload to a role without the grants
        self.pg.query(self.env.pg_dsn, "CREATE ROLE %s LOGIN PASSWORD '%s'" % (other, password))
        self.addCleanup(self.pg.query, self.env.pg_dsn, "DROP ROLE IF EXISTS %s" % other)
        dsn = self.new_database("nocreate")
        self.pg.query(dsn, "REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        parts = urllib.parse.urlsplit(dsn)
        as_role = parts._replace(netloc="%s:%s@%s:%d" % (role, password, self.env.pg_host,
                                                         self.env.pg_port)).geturl()
        conf = self.conf("nocreate", dsn=as_role, ready_timeout=30)
        d = self.start_twiced(conf)
        d.wait_log(r"not ready: idempotency store: .*permission denied for schema public "
                   r"\(.*twiced needs CREATE on their schema, else apply etc/schema.sql as "
                   r"their owner\)", timeout=20)
        self.assertEqual(d.stop(), 0)
        with open(os.path.join(self.env.source_dir, "etc", "schema.sql")) as f:
            self.pg.query(dsn, f.read())
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        # Granted all but INSERT and UPDATE: the tables are there, but no key could be
        # claimed. A first start and `twiced -t --connect` write a claim (a claim check,
        # rolled back) and refuse at once, naming the role, what it lacks and the GRANT.
        self.pg.query(dsn, "GRANT SELECT, DELETE ON ALL TABLES IN SCHEMA public TO %s; GRANT "
                           "USAGE ON ALL SEQUENCES IN SCHEMA public TO %s" % (role, role))
        d = self.twiced(conf)
        for args in (["-t", "--connect"], ["-f"]):
            r = subprocess.run([d.binary, *args, "-c", d.config_path], capture_output=True,
                               text=True, env=d.process_env, cwd=d.workdir, timeout=30)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertRegex(r.stderr, r"%s:\d+: idempotency.dsn: role %s may not write claims "
                                       r"into table twice_idempotency \(it lacks INSERT, UPDATE "
                                       r"on it; twiced's workers need SELECT, INSERT, UPDATE, "
                                       r"DELETE\): GRANT INSERT, UPDATE ON \"twice_idempotency\" "
                                       r"TO %s\n" % (re.escape(d.config_path), role, role))
        self.pg.query(dsn, "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "
                      "public TO %s" % role)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1: 1/1", timeout=20)
        # A reload checks the store as the start does: a grant revoked before it, or a
        # dsn changed to a role without one, is refused at once naming the GRANT (not a
        # generation that stays not ready until ready_timeout), the running workers stay
        # and work; once granted, a reload is taken.
        refusal = (r"reload: %s:\d+: idempotency.dsn: role {0} may not write claims into "
                   r"table twice_idempotency \(it lacks INSERT, UPDATE on it; [^)]*\): GRANT "
                   r"INSERT, UPDATE ON \"twice_idempotency\" TO {0} \(a generation started on "
                   r"it could never be ready\); generation 1 keeps running; reload again once "
                   r"it is granted\n" % re.escape(d.config_path))
        self.pg.query(dsn, "REVOKE INSERT, UPDATE ON ALL TABLES IN SCHEMA public FROM %s" % role)
        mark = d.mark()
        d.signal(signal.SIGHUP)
        d.wait_log(refusal.format(role), timeout=20, since=mark)
        d.wait_log(r"reload refused \(1 problem\); generation 1 keeps running", timeout=5,
                   since=mark)
        self.pg.query(dsn, "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "
                           "public TO %s" % role)
        self.pg.query(dsn, "GRANT SELECT, DELETE ON ALL TABLES IN SCHEMA public TO %s; GRANT "
                           "USAGE ON ALL SEQUENCES IN SCHEMA public TO %s" % (other, other))
        as_other = as_role.replace("%s:%s@" % (role, password), "%s:%s@" % (other, password))
        with open(d.config_path, "w") as f:
            f.write(conf.replace(as_role, as_other))
        mark = d.mark()
        d.signal(signal.SIGHUP)
        d.wait_log(refusal.format(other), timeout=20, since=mark)
        d.wait_log(r"reload refused \(1 problem\); generation 1 keeps running", timeout=5,
                   since=mark)
        self.sqs.send_batch(self.url, [json.dumps({"id": "nc-%d" % i}) for i in range(3)])
        twicetest.wait_until(lambda: self.distinct_effects(dsn) == (3, 3), timeout=20,
                             message="the running workers did not handle the messages")
        self.pg.query(dsn, "GRANT INSERT, UPDATE ON ALL TABLES IN SCHEMA public TO %s" % other)
        d.signal(signal.SIGHUP)
        d.wait_log(r"reload done: generation 2 ready", timeout=20, since=mark)
        self.sqs.send_batch(self.url, [json.dumps({"id": "ok-%d" % i}) for i in range(3)])
        twicetest.wait_until(lambda: self.distinct_effects(dsn) == (6, 6), timeout=20)
        log = d.log_text()[mark:]
        self.assertNotIn("permission denied", log)
        self.assertNotIn("not ready", log)
        self.assertEqual(d.stop(), 0)

    def test_queues_that_do_not_exist_are_named(self):
        self.conf("ready-q")  # for a real DLQ and database
        missing = self.missing_queue_url()
        d = self.start_twiced(self.conf("ready-q", dsn=self.dsn, url=missing, ready_timeout=6))
        d.wait_log(r"not ready: queue jobs: url %s: GetQueueAttributes: " % re.escape(missing),
                   timeout=20)
        self.assertEqual(d.proc.wait(timeout=60), 1)
        self.assertNotIn("ready: generation", d.log_text())
        # the dead-letter queue counts too
        d2 = self.start_twiced(self.conf("ready-dlq", dlq=missing, ready_timeout=30))
        d2.wait_log(r"not ready: queue jobs: dlq_url %s: GetQueueAttributes: "
                    % re.escape(missing), timeout=20)
        self.assertNotIn("ready: generation", d2.log_text())
        d2.stop()

    def test_a_database_that_comes_later_makes_it_ready_then(self):
        name = twicetest.unique_name("later").lower().replace("-", "_")
        dsn = self.pg.dsn(name)
        d = self.start_twiced(self.conf("ready-later", dsn=dsn))
        d.wait_log(r"not ready: idempotency store: .*%s.* does not exist" % name, timeout=20)
        time.sleep(1)
        self.assertNotIn("ready: generation", d.log_text())
        self.pg.query(self.env.pg_dsn, 'CREATE DATABASE "%s"' % name)
        self.addCleanup(self.pg.drop_database, dsn)
        d.wait_log(r"ready: generation 1: 1/1", timeout=30)
        twicetest.wait_until(lambda: tc.http_status(self.port, "/readyz")[0] == 200, timeout=20)
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        self.sqs.send(self.url, '{"id": "later"}')
        twicetest.wait_until(lambda: self.pg.query(dsn, "SELECT key FROM effects") ==
                             [("effect:later",)], timeout=30)
        # A dead-letter queue deleted while twiced runs: the dead letter's error names
        # the setting to fix and its line (it said "check the queue url").
        self.sqs.delete_queue(self.dlq)
        self.sqs.send(self.url, '{"no": "id"}')
        with open(d.config_path) as f:
            line = next(i for i, t in enumerate(f, 1) if "dlq_url" in t)
        d.wait_log(r"the dead-letter queue refused the dead letter: .*QueueDoesNotExist.*"
                   r"\(check dlq_url of queue 'jobs' at %s:%d, and the region\)"
                   % (re.escape(d.config_path), line), timeout=30)
        self.assertEqual(d.stop(), 0)

    def test_systemd_hears_no_ready_and_the_daemon_exits_1(self):
        conf = self.conf("ready-sd", dsn=self.wrong_password_dsn(), ready_timeout=4)
        sock_path, sock = self.notify_socket(timeout=0.2)
        d = self.start_twiced(conf, extra_env={"NOTIFY_SOCKET": sock_path})
        self.assertEqual(d.proc.wait(timeout=60), 1)
        said = []
        try:
            while True:
                said.append(sock.recv(4096).decode())
        except socket.timeout:
            pass
        self.assertFalse([m for m in said if "READY=1" in m.split("\n")], said)
        # -d: the foreground process waits for the outcome and reports it
        r = subprocess.run([d.binary, "-d", "-c", d.config_path], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, env=d.process_env, cwd=d.workdir,
                           timeout=60)
        self.assertEqual(r.returncode, 1, r.stderr)
        # without log.file, -d first says that the daemon's lines are discarded
        self.assertRegex(r.stderr, r"^\S+ warn master\[\d+\]: log.file is not set: ")
        self.assertRegex(r.stderr, r"(?m)^twiced: not started: generation 1 was not ready within "
                                   r"ready_timeout \(4s\): worker \d+: idempotency store: .*"
                                   r"password authentication failed")
        self.assertNotIn(WRONG_PASSWORD, r.stderr)

    def test_systemd_hears_ready_and_stopping_on_an_abstract_socket(self):
        name, sock = self.notify_socket(abstract=True)
        d = self.start_twiced(self.conf("ready-abs"), extra_env={"NOTIFY_SOCKET": name})
        d.wait_log(r"ready: generation 1", timeout=30)
        sock.settimeout(5)  # sent before the log line; a wrong address never arrives
        self.assertEqual(sock.recv(4096), b"READY=1\nSTATUS=generation 1: 1/1 workers ready")
        d.signal(signal.SIGTERM)
        self.assertEqual(sock.recv(4096),
                         b"STOPPING=1\nSTATUS=stopping: draining in-flight jobs")
        self.assertEqual(d.stop(), 0)

    def test_a_notify_socket_that_is_not_valid_does_not_stop_the_work(self):
        """A relative path (a socket is there, in twiced's working directory, but
        sd_notify(3) takes only absolute paths and '@' names), bare "@", and names too
        long for an address: no notification, but ready and working all the same."""
        bad = {"rel": "notify.sock", "at": "@", "long": "/" + "x" * 300,
               "along": "@" + "x" * 300}
        runs = []
        for tag, value in bad.items():
            d = self.twiced(self.conf("ready-bad-" + tag), extra_env={"NOTIFY_SOCKET": value})
            self.pg.query(self.dsn, tc.EFFECTS_TABLE)
            runs.append((d, self.url, self.dsn, self.port))
        rel = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.addCleanup(rel.close)
        rel.bind(os.path.join(runs[0][0].workdir, "notify.sock"))
        for d, url, _, _ in runs:
            d.start()
            self.sqs.send(url, '{"id": "bad-notify"}')
        for d, url, dsn, port in runs:
            d.wait_log(r"ready: generation 1: 1/1", timeout=30)
            twicetest.wait_until(lambda: tc.http_status(port, "/readyz")[0] == 200, timeout=20)
            twicetest.wait_until(lambda: self.pg.query(dsn, "SELECT key FROM effects") ==
                                 [("effect:bad-notify",)], timeout=30)
        for d, _, _, _ in runs:
            self.assertEqual(d.stop(), 0)
        rel.setblocking(False)
        self.assertRaises(BlockingIOError, rel.recv, 4096)

    def test_the_health_check_asks_the_store_identity_once_per_connection(self):
        # The master's health check learns which keys its connection reaches, for a
        # reload's check of the dsn. With no keys table (here the dsn's search_path
        # names no schema, so the workers cannot create it and never get ready) it
        # asked again at every check, every 3 s, for as long as twiced ran: once per
        # connection is enough. Counted by the server (pg_stat_statements, which
        # scripts/testenv.sh preloads), in the test's own database.
        dsn = self.new_database("ready-ident")
        self.pg.query(dsn, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        name = urllib.parse.urlsplit(dsn).path.lstrip("/")
        nowhere = dsn + "?options=-csearch_path%3Dnowhere"
        d = self.start_twiced(self.conf("ready-ident", dsn=nowhere, ready_timeout=60))
        d.wait_log(r"not ready: idempotency store: ", timeout=20)

        def asked():
            return self.pg.query(dsn, "SELECT coalesce(sum(calls), 0)::int "
                                      "FROM pg_stat_statements s JOIN pg_database d "
                                      "ON d.oid = s.dbid WHERE d.datname = %s "
                                      "AND s.query LIKE '%%pg_control_system%%'", (name,))[0][0]
        twicetest.wait_until(lambda: asked() >= 1, timeout=15)
        time.sleep(7.5)  # the health check asks SELECT 1 every 3 s: two or three more
        self.assertTrue(d.running())
        self.assertEqual(asked(), 1, "the identity once, on the one connection")
        self.assertEqual(d.stop(), 0)

    def test_a_start_closes_no_connection_but_the_masters_grant_check(self):
        # Each connection costs PostgreSQL a backend's start (27 ms of CPU on the
        # 2-core VM of bench/README.md) and twiced a SCRAM exchange, on every start
        # and reload. A worker's readiness check hands its connection to the
        # acknowledger instead of closing it; the master's check of the grants,
        # before any worker runs, is the one connection a start makes and closes.
        # Counted at a proxy in front of PostgreSQL, against the connections open, at
        # the second start on the database: at the first, the janitor may sweep
        # before the workers have created the table, and connect again after that
        # failure (a slow machine; under ASan).
        dsn = self.new_database("ready-conns")
        proxy = faultproxy.TcpProxy(self.env.pg_host, self.env.pg_port)
        self.addCleanup(proxy.close)
        via = dsn.replace(":%d/" % self.env.pg_port, ":%d/" % proxy.port)
        conf = self.conf("ready-conns", dsn=via)

        def open_now():
            return self.pg.query(dsn, "SELECT count(*)::int FROM pg_stat_activity WHERE "
                                      "datname = current_database() AND "
                                      "pid <> pg_backend_pid()")[0][0]
        first = self.start_twiced(conf)
        first.wait_log(r"ready: generation 1: 1/1", timeout=30)
        self.assertEqual(first.stop(), 0)
        twicetest.wait_until(lambda: open_now() == 0, timeout=30)
        before = proxy.accepted
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1: 1/1", timeout=30)
        seen = []  # until the receivers and the duties have connected: unchanged for 1.5 s
        twicetest.wait_until(lambda: seen.append((open_now(), proxy.accepted - before)) or
                             (len(seen) >= 4 and len(set(seen[-4:])) == 1), timeout=30,
                             interval=0.5)
        live, made = seen[-1]
        self.assertGreaterEqual(live, 3, "health check, acknowledger, receiver")
        self.assertEqual(made - live, 1, "made %d connections, %d open" % (made, live))
        self.assertEqual(d.stop(), 0)

    def test_check_connect_says_what_does_not_answer(self):
        good = self.twiced(self.conf("connect"))
        r = subprocess.run([good.binary, "-t", "--connect", "-c", good.config_path],
                           capture_output=True, text=True, env=good.process_env, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("%s: PostgreSQL and 1 queue with their dead-letter queues answer"
                      % good.config_path, r.stdout)
        missing = self.missing_queue_url()
        bad = self.twiced(self.conf("connect-bad", dsn=self.wrong_password_dsn(), url=missing,
                                    dlq=missing + "-dlq"))
        plain = bad.check_config()
        self.assertEqual(plain.returncode, 0, "without --connect no server is asked")
        r = subprocess.run([bad.binary, "-t", "--connect", "-c", bad.config_path],
                           capture_output=True, text=True, env=bad.process_env, timeout=60)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        path = re.escape(bad.config_path)
        self.assertRegex(r.stderr, r"%s:\d+: idempotency.dsn: cannot connect to PostgreSQL: .*"
                                   r"password authentication failed" % path)
        self.assertRegex(r.stderr, r"%s:\d+: queue jobs: url %s: GetQueueAttributes: \S+"
                         % (path, re.escape(missing)))
        self.assertRegex(r.stderr, r"%s:\d+: queue jobs: dlq_url %s-dlq: GetQueueAttributes: "
                         % (path, re.escape(missing)))
        self.assertNotIn(WRONG_PASSWORD, r.stdout + r.stderr)

    def test_a_database_that_takes_no_writes_is_refused_at_once(self):
        # default_transaction_read_only set by a DBA for the database (or the role, the
        # server): no standby, but no key can be written there either. A reload refuses
        # it at once (its generation could never be ready), the running one kept; `twiced
        # -t --connect` and a first start say so with FILE:LINE and exit 1, as for a
        # standby: the three ask the same question (idem_takes_writes).
        conf = self.conf("ro-start")
        refusal = (r"%s:\d+: idempotency.dsn: the server takes no writes \(transaction_read_only "
                   r"is on: .*or reset the setting")
        running = self.start_twiced(conf)
        running.wait_log(r"ready: generation 1: 1/1", timeout=20)
        self.pg.query(self.env.pg_dsn, 'ALTER DATABASE "%s" SET default_transaction_read_only '
                                       "= on" % urllib.parse.urlsplit(self.dsn).path.lstrip("/"))
        mark = running.mark()
        running.signal(signal.SIGHUP)  # the dsn written as before: its server is asked all the same
        running.wait_log(r"reload: " + refusal % re.escape(running.config_path) + r" \(a "
                         r"generation started on it could never be ready\); generation 1 keeps "
                         r"running; reload again once it takes writes", since=mark, timeout=15)
        running.wait_log(r"reload refused .*generation 1 keeps running", since=mark, timeout=5)
        self.assertNotIn("generation 2", running.log_text())
        self.assertEqual(running.stop(), 0)
        d = self.twiced(conf)
        for args in (["-t", "--connect"], ["-f"]):
            r = subprocess.run([d.binary, *args, "-c", d.config_path], capture_output=True,
                               text=True, env=d.process_env, cwd=d.workdir, timeout=30)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertRegex(r.stderr, refusal % re.escape(d.config_path))

    def test_readyz_names_the_running_generation_through_a_failed_reload(self):
        """SQS unreachable, then a reload that cannot get ready (a new queue listed first):
        /readyz keeps judging the generation that runs, so it keeps naming the outage
        (queue jobs receives nothing, its receives fail with CouldNotConnect), never the
        queue of a generation that is only starting and is then abandoned. (A reload to a
        store that does not answer is refused before it starts anything: test_reload.py.)"""
        proxy = faultproxy.FaultProxy(*faultproxy.split_endpoint(self.env.sqs_endpoint))
        self.addCleanup(proxy.close)
        url, dlq = self.queue_pair("rdyreload")
        more_url, more_dlq = self.queue_pair("rdyreload-more")
        dsn = self.new_database("rdyreload")
        port = tc.free_port()

        def conf(queues, dsn):
            return tc.config(self.env, dsn, queues,
                             [tc.plugin("effect-tx", tc.test_plugin(self.env, "effect_tx"))],
                             metrics_port=port, endpoint=proxy.endpoint, drain_timeout=1,
                             extra="ready_timeout = 4;")
        jobs = tc.queue("jobs", url, dlq, "effect-tx", wait_time=1)
        d = self.start_twiced(conf([jobs], dsn))
        d.wait_log(r"ready: generation 1", timeout=20)
        twicetest.wait_until(lambda: tc.http_status(port, "/readyz")[0] == 200, timeout=10)
        proxy.refuse()
        outage = (r"^queue jobs: no successful receive for \d+s \(limit \d+s\); "
                  r"ReceiveMessage fails: CouldNotConnect\n")
        body = twicetest.wait_until(
            lambda: (lambda r: r[1] if r[0] == 503 else None)(tc.http_status(port, "/readyz")),
            timeout=20, message="/readyz stayed 200 with SQS unreachable")
        self.assertRegex(body, outage)

        more = tc.queue("more", more_url, more_dlq, "effect-tx", wait_time=1)
        with open(d.config_path, "w") as f:
            f.write(conf([more, jobs], dsn))
        mark = d.mark()
        d.signal(signal.SIGHUP)
        answers = []
        while not re.search(r"reload failed", d.log_text()[mark:]):
            answers.append(tc.http_status(port, "/readyz"))
            self.assertLess(len(answers), 200, "the reload neither failed nor finished")
            time.sleep(0.1)
        for _ in range(10):  # and after it failed
            answers.append(tc.http_status(port, "/readyz"))
            time.sleep(0.1)
        for status, body in answers:
            self.assertEqual(status, 503)
            self.assertRegex(body, outage)
        self.assertRegex(d.log_text()[mark:], r"reload failed: generation 2 was not ready")
        self.assertEqual(d.stop(), 0)


if __name__ == "__main__":
    unittest.main()
