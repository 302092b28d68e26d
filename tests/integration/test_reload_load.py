"""Reloads as a demanding operator runs them: a burst of SIGHUPs while messages flow,
a failover of PostgreSQL at a reload, a reload while PostgreSQL is down, a plugin whose
init fails (setting_blame), a plugin replaced under load (effect_tx by effect_tx_v2,
renamed over or copied in place), a queue removed with messages in flight, a SIGHUP
before the first generation is ready. Real PostgreSQL (behind faultproxy.TcpProxy where
it must go away) and the SQS emulator; every job is effect_tx's, one row per run, so
counting rows per key proves exactly-once. Beside test_reload.py, so that each file
stays short for ctest -j2."""

import json
import os
import re
import shutil
import signal
import tempfile
import threading
import time

import faultproxy
import test_reload
import twicetest
import twiceconf as tc


class ReloadLoad(test_reload.ReloadSetup, twicetest.TwiceTestCase):
    def proxied(self):
        """Put self.dsn behind a TcpProxy of the test's own; returns the proxy."""
        proxy = faultproxy.TcpProxy(self.env.pg_host, self.env.pg_port)
        self.addCleanup(proxy.close)
        self.direct = self.dsn
        self.dsn = self.dsn.replace(":%d/" % self.env.pg_port, ":%d/" % proxy.port)
        return proxy

    def distinct(self):
        return tuple(self.pg.query(self.direct if hasattr(self, "direct") else self.dsn,
                                   "SELECT count(DISTINCT key), count(*) FROM effects")[0])

    def test_a_burst_of_sighups_while_500_messages_flow(self):
        self.setup("burst", workers=2)
        d = self.start_twiced(self.conf())
        d.wait_log(r"ready: generation 1: 2/2", timeout=20)
        total = 500

        def producer():
            for i in range(0, total, 10):
                self.sqs.send_batch(self.url, [json.dumps({"id": "b%d" % n, "sleep_ms": 20})
                                               for n in range(i, i + 10)])
                time.sleep(0.01)

        t = threading.Thread(target=producer)
        t.start()
        mark = d.mark()
        time.sleep(0.3)
        for _ in range(10):
            d.signal(signal.SIGHUP)
            time.sleep(0.1)
        t.join()
        twicetest.wait_until(lambda: self.distinct()[0] == total, timeout=60,
                             message="not every key ran")
        twicetest.wait_until(lambda: self.sqs.counts(self.url) == (0, 0, 0), timeout=30)
        self.assertEqual(self.distinct(), (total, total), "exactly one effect per key")
        self.assertEqual(self.sqs.counts(self.dlq), (0, 0, 0))
        twicetest.wait_until(lambda: len(d.worker_pids()) == 2, timeout=30,
                             message="the process count did not return to workers = 2")
        log = d.log_text()[mark:]
        self.assertNotIn("reload failed", log)
        self.assertEqual(d.stop(), 0)

    def test_failover_at_a_reload_while_the_old_primary_is_gone(self):
        # The running dsn's server goes away; the reload points at the same cluster
        # by another address: taken, judged by what the master learned while the old
        # one answered, and its keys still judge duplicates.
        self.setup("failover", workers=1)
        proxy = self.proxied()
        conf = self.conf()
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        self.sqs.send(self.url, json.dumps({"id": "before"}))
        twicetest.wait_until(lambda: self.distinct()[0] == 1, timeout=20)
        proxy.down()
        self.write_config(d, conf.replace(self.dsn, self.direct))
        mark = d.mark()
        self.reload(d)
        self.sqs.send(self.url, json.dumps({"id": "before"}))
        self.sqs.send(self.url, json.dumps({"id": "after"}))
        d.wait_log(r"duplicate: key completed", since=mark, timeout=20)
        twicetest.wait_until(lambda: self.distinct() == (2, 2), timeout=20)
        self.assertEqual(d.stop(), 0)

    def test_a_service_file_that_moves_the_database_under_the_same_dsn(self):
        # "service=twice" is written the same before and after, but the service
        # file now names another database: the reload is refused all the same.
        self.setup("service", workers=1)
        other = self.new_database("service-other")
        services = os.path.join(tempfile.mkdtemp(dir=self.env.run_dir), "pg_service.conf")

        def service(dsn):
            with open(services, "w") as f:
                f.write("[twice]\nhost=%s\nport=%d\nuser=%s\npassword=%s\ndbname=%s\n"
                        % (self.env.pg_host, self.env.pg_port, self.env.pg_user,
                           self.env.pg_password, dsn.rsplit("/", 1)[1]))
        service(self.dsn)
        conf = self.conf().replace(self.dsn, "service=twice")
        d = self.start_twiced(conf, extra_env={"PGSERVICEFILE": services})
        d.wait_log(r"ready: generation 1", timeout=20)
        self.sqs.send(self.url, json.dumps({"id": "before"}))
        twicetest.wait_until(lambda: self.distinct()[0] == 1, timeout=20)
        service(other)
        mark = d.mark()
        d.signal(signal.SIGHUP)
        d.wait_log(r"reload: %s:\d+: idempotency.dsn: it now reaches other keys than generation "
                   r"1 uses: it reaches database '%s', not '%s'; it is written as before"
                   % (re.escape(d.config_path), other.rsplit("/", 1)[1],
                      self.dsn.rsplit("/", 1)[1]), since=mark, timeout=20)
        d.wait_log(r"reload refused .*generation 1 keeps running", since=mark, timeout=20)
        # put back, the same reload is taken
        service(self.dsn)
        self.reload(d)
        self.sqs.send(self.url, json.dumps({"id": "before"}))
        d.wait_log(r"duplicate: key completed", since=mark, timeout=20)
        self.assertEqual(self.distinct(), (1, 1))
        self.assertEqual(d.stop(), 0)

    def test_a_dsn_whose_search_path_finds_no_keys_table_is_refused(self):
        # Same database, but the new dsn's search_path finds another schema: its
        # generation would create an empty keys table there. The running store's
        # table did not exist yet when the master first connected (its workers
        # create it), and the reload comes at once.
        self.setup("schema", workers=1)
        self.pg.query(self.dsn, "CREATE SCHEMA other")
        conf = self.conf()
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        self.sqs.send(self.url, json.dumps({"id": "before"}))
        twicetest.wait_until(lambda: self.distinct()[0] == 1, timeout=20)
        self.write_config(d, conf.replace(self.dsn, self.dsn + "?options=-csearch_path%3Dother"))
        mark = d.mark()
        d.signal(signal.SIGHUP)
        d.wait_log(r"reload: %s:\d+: idempotency.dsn: a reload cannot move the keys: the keys "
                   r"table twice_idempotency is not there for it" % re.escape(d.config_path),
                   since=mark, timeout=20)
        d.wait_log(r"reload refused .*generation 1 keeps running", since=mark, timeout=20)
        self.assertEqual(self.pg.query(self.dsn, "SELECT to_regclass('other.twice_idempotency') "
                                                 "IS NULL"), [(True,)])
        self.assertEqual(d.stop(), 0)

    def test_a_reload_while_postgresql_is_down(self):
        # The new generation cannot get ready: abandoned after ready_timeout, the old
        # one keeps its jobs; once PostgreSQL is back every job runs once.
        self.setup("pgdown", workers=1, visibility_timeout=4)
        proxy = self.proxied()
        d = self.start_twiced(self.conf(extra="ready_timeout = 5;"))
        d.wait_log(r"ready: generation 1", timeout=20)
        for i in range(5):
            self.sqs.send(self.url, json.dumps({"id": "a%d" % i}))
        twicetest.wait_until(lambda: self.distinct()[0] == 5, timeout=20)
        proxy.down()
        mark = d.mark()
        d.signal(signal.SIGHUP)
        d.wait_log(r"reload failed: generation 2 was not ready within 5s \(worker \d+: "
                   r"idempotency store: cannot connect to PostgreSQL.*\); generation 1 keeps "
                   r"running", since=mark, timeout=30)
        for i in range(5):
            self.sqs.send(self.url, json.dumps({"id": "b%d" % i}))
        time.sleep(2)
        proxy.up()
        twicetest.wait_until(lambda: self.distinct() == (10, 10), timeout=40,
                             message="jobs sent while PostgreSQL was down did not run once")
        twicetest.wait_until(lambda: len(d.worker_pids()) == 1, timeout=30)
        self.assertEqual(self.sqs.counts(self.dlq), (0, 0, 0))
        self.assertEqual(d.stop(), 0)

    def test_a_reload_with_a_plugin_whose_init_fails(self):
        # refused by the probe with the plugin's name and line; generation 1 works on
        self.setup("initfail", workers=1)
        conf = self.conf()
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        bad = tc.plugin("blamer", tc.test_plugin(self.env, "setting_blame"), blame="limit")
        self.write_config(d, self.conf(extra_plugins=[bad]))
        mark = d.mark()
        d.signal(signal.SIGHUP)
        d.wait_log(r"reload refused .*generation 1 keeps running", since=mark, timeout=30)
        self.assertRegex(d.log_text()[mark:], r"reload: %s:\d+: plugin 'blamer': setting "
                                              r"'limit': blamed" % re.escape(d.config_path))
        self.sqs.send(self.url, json.dumps({"id": "after"}))
        twicetest.wait_until(lambda: self.distinct()[0] == 1, timeout=20)
        self.assertEqual(d.stop(), 0)

    def test_a_reload_that_removes_a_queue_with_messages_in_flight(self):
        # The old generation drains: the jobs running finish, the messages it held
        # unstarted go back to the queue at once, none waits out its 60 s visibility.
        self.setup("rmqueue", workers=1, visibility_timeout=60)
        url2, dlq2 = self.queue_pair("rmqueue2")
        q2 = tc.queue("gone", url2, dlq2, "effect-tx", concurrency=2, visibility_timeout=60)
        both = self.conf().replace("queues = ( ", "queues = ( %s,\n  " % q2, 1)
        d = self.start_twiced(both)
        d.wait_log(r"ready: generation 1", timeout=20)
        for i in range(10):
            self.sqs.send(url2, json.dumps({"id": "g%d" % i, "sleep_ms": 3000}))
        twicetest.wait_until(lambda: self.sqs.counts(url2)[1] >= 2, timeout=20)
        self.write_config(d, self.conf())
        self.reload(d)
        twicetest.wait_until(lambda: len(d.worker_pids()) == 1, timeout=30)
        visible, inflight, _ = self.sqs.counts(url2)
        self.assertEqual(inflight, 0, "messages of the removed queue left in flight")
        self.assertEqual(self.distinct()[0] + visible, 10)
        self.assertEqual(d.stop(), 0)

    def replace_under_load(self, prefix, replace):
        """200 slow jobs flowing; replace(directory) installs effect_tx_v2, then a
        reload; every key must run exactly once, and the workers come back to 2."""
        self.setup(prefix, workers=2, visibility_timeout=5, max_attempts=10)
        d = self.start_twiced(self.conf())
        d.wait_log(r"ready: generation 1: 2/2", timeout=20)
        total = 200
        for i in range(0, total, 10):
            self.sqs.send_batch(self.url, [json.dumps({"id": "p%d" % n, "sleep_ms": 50})
                                           for n in range(i, i + 10)])
        twicetest.wait_until(lambda: self.distinct()[0] >= 20, timeout=20)
        mark = d.mark()
        replace(os.path.dirname(self.plugin_path))
        self.reload(d)
        twicetest.wait_until(lambda: self.distinct()[0] == total, timeout=90,
                             message="not every key ran")
        self.assertEqual(self.distinct(), (total, total), "exactly one effect per key")
        self.assertEqual(self.sqs.counts(self.dlq), (0, 0, 0))
        twicetest.wait_until(lambda: len(d.worker_pids()) == 2, timeout=30)
        self.assertEqual(d.stop(), 0)
        return d.log_text()[mark:]

    def test_a_plugin_renamed_over_under_load(self):
        log = self.replace_under_load("mvplugin", lambda d: self.swap_plugin(d, "effect_tx_v2"))
        self.assertNotIn("killed by signal", log)
        self.assertNotIn("written in place", log)

    def test_a_plugin_copied_over_under_load(self):
        def copy_over(directory):
            shutil.copyfile(tc.test_plugin(self.env, "effect_tx_v2"),
                            os.path.join(directory, "effect.so"))
        # The running workers may crash on the rewritten code: the log names the
        # write, and their jobs run again on their next delivery, still once each.
        log = self.replace_under_load("cpplugin", copy_over)
        self.assertRegex(log, r"plugin 'effect-tx': .* was written in place while generation "
                              r"1 runs it")

    def test_sighup_before_the_first_generation_is_ready(self):
        # A reload (or a log rotation's USR1) sent while twiced starts: while the
        # probe checks the plugins it used to kill twiced (the default action of
        # both). Now it is held, and the reload runs once the loop does: its
        # generation takes over, and the workers end at the configured two.
        self.setup("early", workers=2)
        d = self.start_twiced(self.conf(init_sleep_ms=1500))  # the probe: 1.5 s
        time.sleep(0.3)
        d.signal(signal.SIGUSR1)
        d.signal(signal.SIGHUP)
        d.wait_log(r"ready: generation \d: 2/2", timeout=30)
        d.wait_log(r"reload done: generation 2 ready", timeout=30)
        twicetest.wait_until(lambda: len(d.worker_pids()) == 2, timeout=30,
                             message="generation 1 did not drain")
        self.sqs.send(self.url, json.dumps({"id": "after"}))
        twicetest.wait_until(lambda: self.distinct()[0] == 1, timeout=20)
        self.assertNotIn("generation 3", d.log_text())
        self.assertEqual(d.stop(), 0)


if __name__ == "__main__":
    import unittest
    unittest.main()
