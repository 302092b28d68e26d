"""Reload on SIGHUP with no lost and no duplicated job, crash
isolation, and systemd notifications. Real PostgreSQL and SQS emulator."""

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest

import faultproxy
import twicetest
import twiceconf as tc


class ReloadSetup:
    """What the reload tests share (test_reload_load.py too): one queue of effect_tx in a
    database of the test's own, a configuration to rewrite, a reload to wait for."""

    def plugin_dir(self):
        """A plugin directory of the test's own (safe permissions) holding a copy of
        effect_tx.so version 1."""
        d = tempfile.mkdtemp(dir=self.env.run_dir)
        os.chmod(d, 0o755)
        shutil.copy(tc.test_plugin(self.env, "effect_tx"), os.path.join(d, "effect.so"))
        return d

    def swap_plugin(self, directory, fixture):
        """Install a new version the way packages do: copy beside, then rename over."""
        tmp = os.path.join(directory, ".effect.so.new")
        shutil.copy(tc.test_plugin(self.env, fixture), tmp)
        os.rename(tmp, os.path.join(directory, "effect.so"))

    def write_config(self, d, text):
        with open(d.config_path, "w") as f:
            f.write(text.replace("$$", "$"))

    def setup(self, prefix, workers=2, plugin_path=None, **queue_options):
        url, dlq = self.queue_pair(prefix)
        dsn = self.new_database(prefix)
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        port = tc.free_port()
        self.url, self.dlq, self.dsn, self.port = url, dlq, dsn, port
        self.workers = workers
        self.plugin_path = plugin_path or os.path.join(self.plugin_dir(), "effect.so")
        self.queue_options = dict({"concurrency": 8, "visibility_timeout": 10}, **queue_options)
        return self.conf()

    def conf(self, workers=None, plugin_path=None, extra_plugins=(), log_level="info",
             port=None, extra="", **plugin_settings):
        queues = [tc.queue("jobs", self.url, self.dlq, "effect-tx", **self.queue_options)]
        plugins = [tc.plugin("effect-tx", plugin_path or self.plugin_path, **plugin_settings)]
        plugins += list(extra_plugins)
        return tc.config(self.env, self.dsn, queues, plugins, workers=workers or self.workers,
                         metrics_port=port or self.port, log_level=log_level, drain_timeout=10,
                         extra=extra)

    def effects(self):
        return self.pg.query(self.dsn, "SELECT key, version FROM effects ORDER BY at")

    def reload(self, d, expect=r"reload done: generation (\d+) ready"):
        mark = d.mark()
        d.signal(signal.SIGHUP)
        return d.wait_log(expect, timeout=60, since=mark)


class Reload(ReloadSetup, twicetest.TwiceTestCase):
    def test_stream_of_2000_through_5_reloads_and_a_plugin_swap(self):
        conf = self.setup("reload")
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1: 2/2", timeout=20)
        total = 2000
        sent = threading.Event()
        swapped = threading.Event()

        def producer():
            # Half before the plugin swap, half after it: on a fast run the whole
            # stream could otherwise be sent and done before the third reload.
            for i in range(0, total, 10):
                if i == total // 2 and not swapped.wait(timeout=60):
                    return
                self.sqs.send_batch(self.url, [json.dumps({"id": "r%d" % n})
                                               for n in range(i, i + 10)])
                time.sleep(0.02)
            sent.set()

        t = threading.Thread(target=producer)
        t.start()
        swapped_at = None
        for n in range(5):
            time.sleep(1.0)
            if n == 2:
                self.swap_plugin(os.path.dirname(self.plugin_path), "effect_tx_v2")
            self.reload(d)
            if n == 2:
                swapped_at = self.pg.query(self.dsn, "SELECT clock_timestamp()")[0][0]
                swapped.set()
        t.join()
        self.assertTrue(sent.is_set())
        twicetest.wait_until(lambda: self.pg.query(self.dsn, "SELECT count(DISTINCT key) "
                                                              "FROM effects")[0][0] == total,
                             timeout=120, message="not every key ran")
        twicetest.wait_until(lambda: self.sqs.counts(self.url) == (0, 0, 0), timeout=30)
        rows = self.effects()
        self.assertEqual(len(rows), total, "exactly one effect row per key")
        self.assertEqual(self.sqs.counts(self.dlq), (0, 0, 0))
        after = self.pg.query(self.dsn, "SELECT DISTINCT version FROM effects WHERE at > %s",
                              (swapped_at,))
        self.assertEqual(after, [("2",)], "after the swap only the new code runs")
        self.assertIn(("1",), self.pg.query(self.dsn, "SELECT DISTINCT version FROM effects"))
        # Counters survive reloads: the drained generations' are folded in.
        samples = tc.wait_metric(self.port, "twice_jobs_finished_total", total, outcome="done")
        self.assertEqual(tc.metric_sum(samples, "twice_reloads_total", result="ok"), 5)
        self.assertEqual(d.stop(timeout=30), 0)

    def test_reloads_asked_for_during_a_reload_are_queued_and_collapse(self):
        """Two quick `systemctl reload`s: the second is not dropped, it runs once the first
        is done, with the newest file; a burst of them is one more reload."""
        self.setup("queued", workers=1)
        slow = {"init_sleep_ms": 1500}  # each generation takes 1.5 s to start
        d = self.start_twiced(self.conf(**slow))
        d.wait_log(r"ready: generation 1: 1/1", timeout=30)
        self.write_config(d, self.conf(workers=2, **slow))
        mark = d.mark()
        d.signal(signal.SIGHUP)
        d.wait_log(r"reloading ", since=mark, timeout=10)
        self.write_config(d, self.conf(workers=3, **slow))
        for _ in range(3):
            d.signal(signal.SIGHUP)
            time.sleep(0.1)
        d.wait_log(r"reload done: generation 2 ready", since=mark, timeout=60)
        d.wait_log(r"reload done: generation 3 ready", since=mark, timeout=60)
        self.assertRegex(d.log_text()[mark:], r"still starting: queued")
        twicetest.wait_until(lambda: len(d.worker_pids()) == 3, timeout=30,
                             message="generation 2 did not drain")
        time.sleep(2)
        self.assertNotIn("generation 4", d.log_text(), "the burst became one reload")
        self.assertEqual(tc.metric_sum(tc.scrape(self.port), "twice_reloads_total",
                                       result="ok"), 2)
        self.sqs.send(self.url, json.dumps({"id": "after"}))
        twicetest.wait_until(lambda: len(self.effects()) == 1, timeout=30)
        self.assertEqual(d.stop(), 0)

    def test_refused_reloads_keep_the_old_generation_working(self):
        conf = self.setup("refuse", workers=1)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        # A broken configuration: refused with FILE:LINE, nothing changes.
        self.write_config(d, conf.replace("workers = 1;", "workers = \"many\";"))
        mark = d.mark()
        d.signal(signal.SIGHUP)
        d.wait_log(r"reload: %s:\d+: workers: expected an integer" % re.escape(d.config_path),
                   since=mark, timeout=20)
        d.wait_log(r"reload refused .*generation 1 keeps running", since=mark, timeout=20)
        for i in range(20):
            self.sqs.send(self.url, json.dumps({"id": "during-%d" % i}))
        # A plugin built for ABI major+1: refused by name, with both versions.
        newer = tc.test_plugin(self.env, "newer_major")
        self.write_config(d, self.conf(plugin_path=newer))
        mark = d.mark()
        d.signal(signal.SIGHUP)
        d.wait_log(r"reload: .*%s: built for ABI 2\.0, host supports 1\.0-1\.2" % re.escape(newer),
                   since=mark, timeout=30)
        d.wait_log(r"reload refused", since=mark, timeout=20)
        for i in range(20, 40):
            self.sqs.send(self.url, json.dumps({"id": "during-%d" % i}))
        twicetest.wait_until(lambda: len(self.effects()) == 40, timeout=30,
                             message="the old generation stopped processing")
        self.assertEqual(tc.metric_sum(tc.scrape(self.port), "twice_reloads_total",
                                       result="failed"), 2)
        self.assertNotIn("generation 2", d.log_text())
        self.assertEqual(d.stop(), 0)

    def test_a_reload_that_moves_the_keys_table_is_refused(self):
        # A typo in idempotency.table at a reload would start a second generation on an
        # empty table while the first finishes its jobs in the old one: a message
        # already handled would run again. Refused with FILE:LINE; nothing created.
        conf = self.setup("movetable", workers=1)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        self.sqs.send(self.url, json.dumps({"id": "before"}))
        twicetest.wait_until(lambda: len(self.effects()) == 1, timeout=20)
        self.write_config(d, conf.replace("idempotency = { ",
                                          "idempotency = {\n  table = \"twice_idempotenci\"; ",
                                          1))
        mark = d.mark()
        d.signal(signal.SIGHUP)
        d.wait_log(r"reload: %s:\d+: idempotency.table: a reload cannot move the keys from "
                   r"'twice_idempotency' to 'twice_idempotenci'" % re.escape(d.config_path),
                   since=mark, timeout=20)
        d.wait_log(r"reload refused .*generation 1 keeps running", since=mark, timeout=20)
        # the same message again is still a duplicate, judged by the old table
        self.sqs.send(self.url, json.dumps({"id": "before"}))
        d.wait_log(r"duplicate: key completed", since=mark, timeout=20)
        self.assertEqual([k for k, _ in self.effects()], ["effect:before"])
        self.assertEqual(self.pg.query(self.dsn, "SELECT to_regclass('twice_idempotenci') "
                                                 "IS NULL")[0][0], True)
        self.assertNotIn("generation 2", d.log_text())
        self.assertEqual(d.stop(), 0)

    def test_a_reload_that_moves_the_keys_to_another_database_is_refused(self):
        # A dsn that names another database at a reload would start a second
        # generation on an empty store while the first drains: a message already
        # handled would run again. Refused with FILE:LINE; another dsn string for
        # the same database (host, port, password, options: a failover or a
        # rotation) is taken; one that does not connect is refused, not tried, and so
        # is one whose server takes the connection and then answers nothing: the
        # check used to wait for it for ever, the master's loop with it.
        conf = self.setup("movedb", workers=1)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        self.sqs.send(self.url, json.dumps({"id": "before"}))
        twicetest.wait_until(lambda: len(self.effects()) == 1, timeout=20)
        here = self.dsn.rsplit("/", 1)[1]
        other = self.new_database("movedb-other")
        self.write_config(d, conf.replace(self.dsn, other))
        mark = d.mark()
        d.signal(signal.SIGHUP)
        d.wait_log(r"reload: %s:\d+: idempotency.dsn: a reload cannot move the keys: it "
                   r"reaches database '%s', not '%s'"
                   % (re.escape(d.config_path), other.rsplit("/", 1)[1], here),
                   since=mark, timeout=20)
        d.wait_log(r"reload refused .*generation 1 keeps running", since=mark, timeout=20)
        self.sqs.send(self.url, json.dumps({"id": "before"}))
        d.wait_log(r"duplicate: key completed", since=mark, timeout=20)
        self.assertEqual(self.pg.query(other, "SELECT to_regclass('twice_idempotency') IS NULL"),
                         [(True,)])
        # a dsn that does not connect: refused at once, the running one untouched
        closed = "postgresql://nobody:secret@127.0.0.1:%d/%s" % (tc.free_port(), here)
        self.write_config(d, conf.replace(self.dsn, closed))
        mark = d.mark()
        d.signal(signal.SIGHUP)
        d.wait_log(r"reload: %s:\d+: idempotency.dsn: the new dsn does not connect \(.*\); a "
                   r"reload that changes the dsn must check that it reaches the keys generation "
                   r"1 uses" % re.escape(d.config_path), since=mark, timeout=20)
        d.wait_log(r"reload refused .*generation 1 keeps running", since=mark, timeout=20)
        # the same database through a server that freezes at the check's first
        # statement: refused after 5 s, as one that does not connect
        proxy = faultproxy.TcpProxy(self.env.pg_host, self.env.pg_port)
        self.addCleanup(proxy.close)
        proxy.freeze_on(b"current_database()")
        self.write_config(d, conf.replace(":%d/" % self.env.pg_port, ":%d/" % proxy.port))
        mark = d.mark()
        d.signal(signal.SIGHUP)
        d.wait_log(r"reload: %s:\d+: idempotency.dsn: the new dsn does not connect \(its server "
                   r"does not answer within 5 s: .*\); a reload that changes the dsn must check"
                   % re.escape(d.config_path), since=mark, timeout=15)
        d.wait_log(r"reload refused .*generation 1 keeps running", since=mark, timeout=5)
        self.assertTrue(proxy.frozen, "the check's statement reached the frozen server")
        # the same database by another dsn: taken, and its keys still judge duplicates
        self.write_config(d, conf.replace(self.dsn, self.dsn + "?application_name=rotated"))
        mark = d.mark()
        self.reload(d)
        self.sqs.send(self.url, json.dumps({"id": "before"}))
        d.wait_log(r"duplicate: key completed", since=mark, timeout=20)
        self.assertEqual([k for k, _ in self.effects()], ["effect:before"])
        self.assertNotIn("secret", d.log_text())
        self.assertEqual(d.stop(), 0)

    def test_a_stop_during_a_reloads_store_check_is_not_held_by_a_frozen_store(self):
        # A reload's store check (in the probe child) waits up to 5 s for a server
        # that took the connection and says nothing. A stop signal then abandons the
        # reload at once: twiced drains and exits without waiting the check out, and
        # says nothing against the dsn, which the check never judged.
        conf = self.setup("stopcheck", workers=1)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        proxy = faultproxy.TcpProxy(self.env.pg_host, self.env.pg_port)
        self.addCleanup(proxy.close)
        proxy.freeze_on(b"current_database()")
        self.write_config(d, conf.replace(":%d/" % self.env.pg_port, ":%d/" % proxy.port))
        mark = d.mark()
        d.signal(signal.SIGHUP)
        twicetest.wait_until(lambda: proxy.frozen, timeout=10,
                             message="the reload's check did not reach the frozen server")
        began = time.monotonic()
        self.assertEqual(d.stop(timeout=10), 0)
        self.assertLess(time.monotonic() - began, 3, "the stop waited for the store check")
        log = d.log_text()[mark:]
        self.assertRegex(log, r"reload abandoned: a stop signal came while it was checked; "
                              r"generation 1 stops unchanged")
        self.assertNotIn("idempotency.dsn", log)
        self.assertNotIn("reload refused", log)

    def test_a_dsn_that_reaches_a_standby_is_refused_at_once(self):
        # A standby in recovery is the same database of the same cluster (its keys
        # table too), so the identity check takes it; but nothing can be written
        # there: a generation started on it would wait for ready_timeout and fail.
        # The reload is refused at once with FILE:LINE, the workers stay; a first
        # start and `twiced -t --connect` say the same and exit 1, without waiting.
        conf = self.setup("standby", workers=1)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        self.sqs.send(self.url, json.dumps({"id": "before"}))
        twicetest.wait_until(lambda: len(self.effects()) == 1, timeout=20)
        port = self.pg_standby()  # after the keys table exists: it has it too
        standby = self.dsn.replace(":%d/" % self.env.pg_port, ":%d/" % port)
        self.assertEqual(self.pg.query(standby, "SELECT pg_is_in_recovery(), "
                                                "to_regclass('twice_idempotency') IS NOT NULL"),
                         [(True, True)])
        on_standby = conf.replace(self.dsn, standby)
        refusal = (r"%s:\d+: idempotency.dsn: the server is a standby in recovery "
                   r"\(read-only\): twiced cannot write its keys there; point the dsn at the "
                   r"primary")
        self.write_config(d, on_standby)
        mark = d.mark()
        began = time.monotonic()
        d.signal(signal.SIGHUP)
        d.wait_log(r"reload: " + refusal % re.escape(d.config_path), since=mark, timeout=15)
        d.wait_log(r"reload refused .*generation 1 keeps running", since=mark, timeout=5)
        self.assertLess(time.monotonic() - began, 15, "not after ready_timeout (60 s)")
        self.sqs.send(self.url, json.dumps({"id": "before"}))
        d.wait_log(r"duplicate: key completed", since=mark, timeout=20)
        self.assertNotIn("generation 2", d.log_text())
        self.assertEqual(d.stop(), 0)
        # twiced -t --connect, and a first start: the same, at once
        first = self.twiced(on_standby)
        for args in (["-t", "--connect"], ["-f"]):
            r = subprocess.run([first.binary, *args, "-c", first.config_path],
                               capture_output=True, text=True, env=first.process_env,
                               cwd=first.workdir, timeout=30)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertRegex(r.stderr, refusal % re.escape(first.config_path))
        self.assertEqual([k for k, _ in self.effects()], ["effect:before"])

    def crash_and_respawn(self, d, since):
        """Crash the only worker with a message (which then runs at its next attempt);
        returns once the worker is back and ready."""
        time.sleep(1.5)  # a long poll the last crash cut off ends (wait_time 1) unanswered
        self.sqs.send(self.url, json.dumps({"id": "crash-%d" % since, "crash_until": 2}))
        m = d.wait_log(r"worker (\d+) \(generation \d+\) killed by signal 11", since=since,
                       timeout=30)
        d.wait_log(r"worker ready: generation", since=m.end(), timeout=30)
        return m.end()

    def test_a_refused_reload_does_not_keep_a_crashed_worker_down(self):
        """A generation respawns with the plugin bytes it loaded: the file on disk is now a
        build for another ABI (the reload of it was refused), yet a worker that crashes
        comes back with the old plugin instead of being refused for good."""
        conf = self.setup("respawn", workers=1, visibility_timeout=3)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1: 1/1", timeout=20)
        self.swap_plugin(os.path.dirname(self.plugin_path), "newer_major")
        mark = d.mark()
        d.signal(signal.SIGHUP)
        d.wait_log(r"reload refused .*generation 1 keeps running", since=mark, timeout=30)
        self.crash_and_respawn(d, mark)
        log = d.log_text()[mark:]
        self.assertRegex(log, r"plugin 'effect-tx': %s was replaced or removed after generation "
                              r"1 loaded it: running generation 1's copy"
                         % re.escape(self.plugin_path))
        self.assertNotIn("worker not started", log)
        twicetest.wait_until(lambda: tc.http_status(self.port, "/readyz")[0] == 200,
                             timeout=30, message="/readyz stayed 503 after the respawn")
        self.sqs.send(self.url, json.dumps({"id": "after"}))
        twicetest.wait_until(lambda: ("effect:after", "1") in self.effects(), timeout=30,
                             message="the respawned worker does not run the old plugin")
        self.assertEqual(d.stop(), 0)

    def test_respawns_keep_plugins_that_load_libraries_beside_themselves(self):
        """A plugin behind a symlink in plugin_dir that dlopens a library from its own
        directory: started, respawned after a crash, and respawned again after the
        symlink was pointed at a new version (the generation keeps the old one)."""
        base = tempfile.mkdtemp(dir=self.env.run_dir)
        os.chmod(base, 0o755)
        for version in ("v1", "v2"):
            os.makedirs(os.path.join(base, version), 0o755)
            shutil.copy(tc.test_plugin(self.env, "dlopen_sibling"),
                        os.path.join(base, version, "sibling.so"))
            shutil.copy(tc.test_plugin(self.env, "echo_ok"), os.path.join(base, version, "dep.so"))
        os.symlink(os.path.join("v1", "sibling.so"), os.path.join(base, "current.so"))
        self.setup("sibling", workers=1, visibility_timeout=3)
        conf = self.conf(extra_plugins=[tc.plugin("sibling", "current.so")],
                         extra="plugin_dir = %s;" % tc.quote(base))
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1: 1/1", timeout=20)
        v1 = os.path.join(base, "v1")
        self.assertIn("loaded my sibling from %s" % v1, d.log_text())
        at = self.crash_and_respawn(d, 0)
        os.symlink(os.path.join("v2", "sibling.so"), os.path.join(base, "next.so"))
        os.rename(os.path.join(base, "next.so"), os.path.join(base, "current.so"))
        at = self.crash_and_respawn(d, at)
        loaded = re.findall(r"worker\[\d+\] plugin=sibling: loaded my sibling from (\S+)",
                            d.log_text())
        self.assertEqual(loaded, [v1] * 3, "the start and two respawns, all from v1")
        mark = d.mark()
        self.reload(d)
        d.wait_log(r"loaded my sibling from %s\n" % re.escape(os.path.join(base, "v2")),
                   since=mark, timeout=10)
        self.assertEqual(d.stop(), 0)

    def test_added_and_removed_plugins_and_master_settings(self):
        conf = self.setup("change", workers=1)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1: 1/1", timeout=20)
        url2, dlq2 = self.queue_pair("change2")
        effects2 = os.path.join(tempfile.mkdtemp(dir=self.env.run_dir), "effects.txt")
        new_port = tc.free_port()
        text = self.conf(workers=2, port=new_port, log_level="debug",
                         extra_plugins=[tc.plugin("effect-file",
                                                  tc.test_plugin(self.env, "effect_file"),
                                                  file=effects2)])
        text = text.replace("queues = ( ", "queues = ( %s,\n  " % tc.queue(
            "files", url2, dlq2, "effect-file"))
        text += 'user = "nobody";\n'
        self.write_config(d, text)
        m = self.reload(d)
        gen = m.group(1)
        self.assertIn("user: changing it needs a restart", d.log_text())
        d.wait_log(r"worker \d+ \(generation 1\) drained and exited", timeout=30)
        self.assertEqual(len(d.worker_pids()), 2, "worker count took effect")
        status, _ = tc.http_status(new_port, "/healthz")
        self.assertEqual(status, 200, "the new metrics address serves")
        with self.assertRaises(OSError):
            tc.http_status(self.port, "/healthz", timeout=2)
        self.sqs.send(url2, json.dumps({"id": "f1"}))
        twicetest.wait_until(lambda: os.path.exists(effects2) and "effect:f1" in
                             open(effects2).read(), timeout=20,
                             message="the added plugin's queue is not consumed")
        # log level took effect: the job's debug line, which its acknowledger writes
        # a moment after the handler wrote the effect (so waited for, not read at once)
        d.wait_log(r"debug worker\[\d+\]", timeout=10)
        # Remove the added plugin and queue again: its queue is no longer consumed.
        self.write_config(d, self.conf(workers=1))
        self.reload(d)
        twicetest.wait_until(lambda: len(re.findall(r"worker \d+ \(generation %s\) drained "
                                                    r"and exited" % gen, d.log_text())) == 2,
                             timeout=30, message="generation %s did not drain" % gen)
        self.sqs.send(url2, json.dumps({"id": "f2"}))
        time.sleep(3)
        self.assertNotIn("effect:f2", open(effects2).read())
        self.assertEqual(self.sqs.counts(url2)[0], 1)
        self.assertEqual(d.stop(), 0)

    def test_a_crashing_message_takes_down_only_its_worker(self):
        conf = self.setup("crash", max_attempts=3, visibility_timeout=3)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1: 2/2", timeout=20)
        poison = self.sqs.send(self.url, json.dumps({"id": "poison", "crash": True}))
        for i in range(30):
            self.sqs.send(self.url, json.dumps({"id": "good-%d" % i}))
            time.sleep(0.1)
        d.wait_log(r"worker \d+ \(generation 1\) killed by signal 11 \(Segmentation fault\) "
                   r"while running plugin effect-tx on message %s \(queue jobs\)" % poison,
                   timeout=20)
        twicetest.wait_until(lambda: len(self.effects()) == 30, timeout=60,
                             message="the good messages stopped flowing")
        letters = []

        def dead_letter():
            letters.extend(self.sqs.receive(self.dlq, max=10, visibility=60))
            return letters
        twicetest.wait_until(dead_letter, timeout=60, message="the poison never reached the DLQ")
        attrs = letters[0]["MessageAttributes"]
        self.assertEqual(attrs["twice-reason"]["StringValue"], "worker-crashed")
        self.assertEqual(attrs["twice-source-message-id"]["StringValue"], poison)
        self.assertRegex(d.log_text(), r"only the run of message %s counts" % poison)
        self.assertTrue(d.running(), "the master never exits")
        crashes = re.findall(r"killed by signal 11", d.log_text())
        self.assertEqual(len(crashes), 3, "max_attempts deliveries, then the DLQ")
        self.assertRegex(d.log_text(), r"worker \d+ \(generation 1\) exited; starting another "
                         r"in its place in 0\.5s")
        self.assertRegex(d.log_text(), r"worker \d+ \(generation 1\) exited; starting another "
                         r"in its place in 1\.0s")
        samples = tc.scrape(self.port)
        self.assertEqual(tc.metric_sum(samples, "twice_worker_restarts_total", cause="signal"), 3)
        twicetest.wait_until(lambda: self.sqs.counts(self.url) == (0, 0, 0), timeout=20)
        self.assertEqual(len(self.effects()), 30)
        # good messages the poison took down with it are not counted against
        # them, however often that happened: only the poison is dead-lettered
        self.assertEqual(self.sqs.counts(self.dlq), (0, 1, 0))
        self.assertEqual(d.stop(), 0)

    def test_a_job_the_crash_took_down_is_not_counted_against_it(self):
        # one worker: the bystander is mid-handle whenever the poison crashes
        conf = self.setup("bystander", workers=1, max_attempts=2, visibility_timeout=3)
        poison = self.sqs.send(self.url, json.dumps({"id": "poison", "crash": True,
                                                     "sleep_ms": 1000}))
        bystander = self.sqs.send(self.url, json.dumps({"id": "bystander", "sleep_ms": 2500}))
        d = self.start_twiced(conf)
        twicetest.wait_until(lambda: [k for k, _ in self.effects()] == ["effect:bystander"],
                             timeout=60,
                             message="the bystander never completed")
        twicetest.wait_until(lambda: self.sqs.counts(self.dlq) == (1, 0, 0), timeout=30,
                             message="the poison never reached the DLQ")
        # The acker deletes a source after its dead letter is accepted and a message
        # after its effect commits: both a moment later (longer under TSan).
        twicetest.wait_until(lambda: self.sqs.counts(self.url) == (0, 0, 0), timeout=20,
                             message="the queue did not end empty")
        [letter] = self.sqs.receive(self.dlq, max=10, visibility=60)
        self.assertEqual(letter["MessageAttributes"]["twice-source-message-id"]["StringValue"],
                         poison)
        log = d.log_text()
        self.assertGreaterEqual(len(re.findall(r"msg=%s .*cut short when its worker went away"
                                               % bystander, log)), 1)
        self.assertEqual(len(re.findall(r"killed by signal 11", log)), 2)
        self.assertEqual(d.stop(), 0)

    def test_a_plugin_file_written_in_place_is_named(self):
        # `cp new.so loaded.so` writes into the file the workers have mapped:
        # they crash or misbehave, and the operator should learn why from the
        # log rather than blame the messages. Same bytes here: nothing breaks.
        conf = self.setup("inplace", workers=1, max_attempts=5, visibility_timeout=3)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1: 1/1", timeout=20)

        def write_in_place():
            with open(self.plugin_path, "r+b") as f:
                data = f.read()
                f.seek(0)
                f.write(data)
        said = (r"plugin 'effect-tx': %s was written in place while generation %%d runs it"
                % re.escape(self.plugin_path))
        write_in_place()
        d.wait_log(said % 1, timeout=10)
        self.sqs.send(self.url, json.dumps({"id": "after-cp"}))
        twicetest.wait_until(lambda: len(self.effects()) == 1, timeout=30,
                             message="the job after the write never ran")
        self.assertEqual(len(re.findall(said % 1, d.log_text())), 1, "said once")
        # installed by rename and reloaded: the new generation checked what it
        # runs, and a rename is no write into a loaded file
        self.swap_plugin(os.path.dirname(self.plugin_path), "effect_tx")
        self.reload(d)
        time.sleep(2)
        self.assertNotRegex(d.log_text(), said % 2)
        # a crash after a write in place points at it
        write_in_place()
        d.wait_log(said % 2, timeout=10)
        self.sqs.send(self.url, json.dumps({"id": "poison", "crash": True}))
        d.wait_log(r"killed by signal 11 \(Segmentation fault\) while running plugin effect-tx "
                   r"on message \S+ \(queue jobs\) \(a plugin file of its generation was "
                   r"written in place: see above\)", timeout=30)
        self.assertEqual(d.stop(), 0)

    def test_sigterm_during_a_reload_still_drains(self):
        conf = self.setup("termreload", workers=1)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        for i in range(10):
            self.sqs.send(self.url, json.dumps({"id": "s%d" % i, "sleep_ms": 1500}))
        time.sleep(0.5)
        d.signal(signal.SIGHUP)
        d.signal(signal.SIGTERM)
        self.assertEqual(d.stop(timeout=30), 0)
        done = {r[0] for r in self.effects()}
        time.sleep(4)
        back = {"effect:" + json.loads(m["Body"])["id"] for m in self.sqs.drain(self.url)}
        self.assertEqual(done | back, {"effect:s%d" % i for i in range(10)})
        self.assertEqual(done & back, set())


class SystemdNotify(twicetest.TwiceTestCase):
    def test_ready_reloading_stopping_and_status(self):
        url, dlq = self.queue_pair("notify")
        dsn = self.new_database("notify")
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        conf = tc.config(self.env, dsn, [tc.queue("jobs", url, dlq, "effect-tx")],
                         [tc.plugin("effect-tx", tc.test_plugin(self.env, "effect_tx"))])
        sock_path, sock = self.notify_socket()
        d = self.start_twiced(conf, extra_env={"NOTIFY_SOCKET": sock_path})

        def next_message(want):
            while True:
                msg = sock.recv(4096).decode()
                if want in msg.split("\n"):
                    return msg

        self.assertRegex(next_message("READY=1"), r"STATUS=generation 1: 1/1 workers ready")
        d.signal(signal.SIGHUP)
        self.assertIn("MONOTONIC_USEC=", next_message("RELOADING=1"))
        self.assertRegex(next_message("READY=1"), r"STATUS=generation 2")
        d.signal(signal.SIGTERM)
        self.assertIn("STATUS=stopping", next_message("STOPPING=1"))
        self.assertEqual(d.stop(), 0)

    def test_foreground_by_default_and_daemon_only_when_asked(self):
        url, dlq = self.queue_pair("fg")
        dsn = self.new_database("fg")
        conf = tc.config(self.env, dsn, [tc.queue("jobs", url, dlq, "effect-tx")],
                         [tc.plugin("effect-tx", tc.test_plugin(self.env, "effect_tx"))])
        d = self.start_twiced(conf, args=())
        d.wait_log(r"ready: generation 1", timeout=20)
        self.assertTrue(d.running(), "without -d twiced stays in the foreground")
        self.assertEqual(d.stop(), 0)

    def test_daemon_reports_a_bad_configuration_before_it_detaches(self):
        url, dlq = self.queue_pair("dbad")
        dsn = self.new_database("dbad")
        conf = tc.config(self.env, dsn, [tc.queue("jobs", url, dlq, "effect-tx")],
                         [tc.plugin("effect-tx", tc.test_plugin(self.env, "effect_tx"))])
        d = self.twiced(conf + "\nbogus = 1;\n")
        line = len(d.config_text.splitlines())
        r = subprocess.run([d.binary, "-d", "-c", d.config_path], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, env=d.process_env, cwd=d.workdir,
                           timeout=60)
        self.assertEqual(r.returncode, 78, r.stderr)  # EX_CONFIG: not worth a restart
        self.assertIn("%s:%d: unknown setting 'bogus'" % (d.config_path, line), r.stderr)


if __name__ == "__main__":
    unittest.main()
