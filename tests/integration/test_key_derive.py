"""`twicectl key derive` prints the key twiced uses. One configuration with every bundled
plugin (welcome-email, match-recompute, sync, http, exec), a queue that overrides its
plugin's key, a routed queue and a derive_key() plugin: twiced handles one message on
each, and for each the key `twicectl key derive --json` prints is the key in the
idempotency table, with its template and source. Messages that would be dead-lettered
print the reason and exit 1; a FIFO queue's messages need --group. And `twicectl plugin check` shows where the http and exec
plugins' keys come from and their answer mapping."""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

import twicetest
import twiceconf as tc


class KeyDerive(twicetest.TwiceTestCase):
    def so(self, name):
        return os.path.join(self.env.plugin_build_dir, name + ".so")

    def matches_db(self, dsn):
        with open(os.path.join(self.env.source_dir, "etc", "schema-matches.sql")) as f:
            self.pg.query(dsn, f.read())
        self.pg.query(dsn, "INSERT INTO roles (id, title, version) VALUES (7, 'Backend', 3)")

    def setUp(self):
        super().setUp()
        self.dir = tempfile.mkdtemp(dir=self.env.run_dir)
        os.chmod(self.dir, 0o755)
        templates = os.path.join(self.env.source_dir, "etc", "templates")
        http = self.http_receiver()
        self.plugins = [
            tc.plugin("welcome-email", self.so("welcome_email"),
                      smtp_url="smtp://127.0.0.1:%d" % self.env.smtp_port,
                      **{"from": "w@twice.test"},
                      template_text=os.path.join(templates, "welcome.txt"),
                      template_html=os.path.join(templates, "welcome.html")),
            tc.plugin("match-recompute", self.so("match_recompute")),
            tc.plugin("sync", self.so("sync"), url=http.url + "/{entity}/{id}"),
            tc.plugin("http", self.so("http"), url=http.url + "/jobs", key="order:{orderId}"),
            tc.plugin("exec", self.so("exec"), directory=self.dir,
                      command="python3 -u " + os.path.join(self.env.source_dir, "sdk",
                                                           "examples", "exec-handler.py"),
                      key="exec-order:{orderId}"),
            tc.plugin("derived", tc.test_plugin(self.env, "derived_key"), prefix="Acme"),
        ]
        rcpt = "ana-%s@example.com" % os.urandom(3).hex()
        # queue name -> (plugin or routes, queue options, body, attributes)
        self.cases = {
            "welcome": ("welcome-email", {}, {"type": "welcome-email", "candidateId": 42,
                                              "email": rcpt, "name": "Ana"}),
            "matches": ("match-recompute", {}, {"roleId": 7, "roleVersion": 3}),
            "sync": ("sync", {}, {"entity": "candidate", "id": 9, "version": 2, "data": {}}),
            "http": ("http", {}, {"orderId": "A-1"}),
            "exec": ("exec", {}, {"orderId": 5, "amount": 3}),
            "override": ("http", {"key": "invoice:{detail.invoiceId}:{attr:Tenant}"},
                         {"orderId": "A-2", "detail": {"invoiceId": "INV-7"}}),
            "derived": ("derived", {}, {"email": "Bo@Example.COM"}),
            "routed": ([("a", "http"), ("b", "exec")], {"route_by": "kind"},
                       {"kind": "b", "orderId": 77, "amount": 1}),
        }
        self.urls, queues = {}, []
        for name, (plugin, options, _) in self.cases.items():
            url, dlq = self.queue_pair(name)
            self.urls[name] = url
            opts = dict(options, backoff=(1, 2))
            if isinstance(plugin, list):
                queues.append(tc.queue(name, url, dlq, routes=plugin, **opts))
            else:
                queues.append(tc.queue(name, url, dlq, plugin, **opts))
        self.dsn = self.new_database("derive")
        self.matches_db(self.dsn)
        self.conf = tc.config(self.env, self.dsn, queues, self.plugins)

    def derive(self, d, queue, body, *args):
        cmd = [self.env.binary("twicectl"), "-c", d.config_path, "key", "derive", "--queue",
               queue, *args, json.dumps(body)]
        return subprocess.run(cmd, capture_output=True, text=True, env=d.process_env,
                              timeout=60)

    def test_the_daemon_stores_the_derived_keys(self):
        d = self.start_twiced(self.conf)
        d.wait_log(r"ready: generation 1", timeout=30)
        derived = {}
        for name, (_, _, body) in self.cases.items():
            attrs = {"Tenant": "acme"} if name == "override" else None
            args = ["--json"] + (["--attr", "Tenant=acme"] if attrs else [])
            r = self.derive(d, name, body, *args)
            self.assertEqual(r.returncode, 0, r.stderr)
            derived[name] = json.loads(r.stdout)
            self.sqs.send(self.urls[name], json.dumps(body), attrs=attrs)
        for name, url in self.urls.items():
            twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=60,
                                 message="queue %s drained" % name)
        stored = {k for (k,) in self.pg.query(self.dsn, "SELECT idempotency_key FROM "
                                                        "twice_idempotency WHERE state = "
                                                        "'completed'")}
        self.assertEqual({r["key"] for r in derived.values()}, stored)
        want = {"welcome": ("welcome-email:42", "plugin template"),
                "matches": ("match-recompute:7:3", "plugin template"),
                "sync": ("sync:candidate:9:2", "plugin template"),
                "http": ("order:A-1", "plugin setting"),
                "exec": ("exec-order:5", "plugin setting"),
                "override": ("invoice:INV-7:acme", "queue key"),
                "derived": ("acme:bo@example.com", "derive_key"),
                "routed": ("exec-order:77", "plugin setting")}
        for name, (key, source) in want.items():
            self.assertEqual((derived[name]["key"], derived[name]["source"]), (key, source), name)
        self.assertEqual(derived["override"]["template"],
                         "invoice:{detail.invoiceId}:{attr:Tenant}")
        self.assertEqual(derived["override"]["where"],
                         "%s:%d" % (d.config_path, self.line_of(d, "invoice:{detail")))
        self.assertEqual(derived["http"]["where"],
                         "%s:%d" % (d.config_path, self.line_of(d, 'key = "order:')))
        self.assertEqual((derived["routed"]["plugin"], derived["routed"]["route"]),
                         ("exec", "kind = b"))
        self.assertIsNone(derived["derived"]["template"])
        self.assertEqual(d.stop(), 0)

    @staticmethod
    def line_of(d, text):
        return next(i for i, t in enumerate(d.config_text.splitlines(), 1) if text in t)

    def test_dead_letters_are_explained(self):
        d = self.twiced(self.conf)
        r = self.derive(d, "override", {"orderId": 1})
        self.assertEqual(r.returncode, 1)
        self.assertIn("dead letter: missing-key-field: missing key field detail.invoiceId",
                      r.stdout)
        self.assertIn("source:      the queue's key (%s:" % d.config_path, r.stdout)
        r = self.derive(d, "routed", {"kind": "c"}, "--json")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(json.loads(r.stdout)["dead_letter"],
                         {"reason": "unknown-route", "detail": "no route for kind = c"})
        r = self.derive(d, "routed", {"kind": {"name": "b"}}, "--json")
        self.assertEqual(json.loads(r.stdout)["dead_letter"]["detail"],
                         "no route for kind = (an object)", "there, but no text: not (missing)")
        r = self.derive(d, "derived", {"name": "x"})
        self.assertEqual(r.returncode, 1)
        self.assertIn("dead letter: bad-key-field: derive_key: no email", r.stdout)
        r = self.derive(d, "nope", {})
        self.assertEqual(r.returncode, 1)

    def test_fifo_queues_need_the_group(self):
        base = "http://sqs.us-east-1.localhost:1/000000000000/derive"
        conf = tc.config(self.env, self.dsn,
                         [tc.queue("f", base + ".fifo", base + "-dlq.fifo", "http",
                                   key="g:{msg:group}:{orderId}")], self.plugins)
        d = self.twiced(conf)
        r = self.derive(d, "f", {"orderId": 1})
        self.assertEqual(r.returncode, 2)
        self.assertIn("queue f is a FIFO queue: --group is required", r.stderr)
        r = self.derive(d, "f", {"orderId": 1}, "--group", "tenant-9", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["key"], "g:tenant-9:1")

    def test_plugin_check_shows_key_and_mapping(self):
        ctl = self.env.binary("twicectl")
        r = subprocess.run([ctl, "plugin", "check", self.so("http"), "url=http://127.0.0.1:9/x",
                            "retry_statuses=408,429,5xx"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("key:        none: setting 'key' is not given, so every queue using the "
                      "plugin must set key", r.stdout)
        self.assertIn("  2xx: DONE\n", r.stdout)
        self.assertIn("  408,429,5xx: RETRY, after Retry-After when the answer has one\n",
                      r.stdout)
        self.assertIn("  4xx: REJECT", r.stdout)
        r = subprocess.run([ctl, "plugin", "check", self.so("exec"), "command=/bin/cat",
                            "key=job:{id}", "--json"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual((doc["key_template"], doc["key_source"], doc["key_setting"]),
                         ("job:{id}", "plugin setting 'key'", "key"))
        self.assertTrue(any("RETRY, the process restarted" in line for line in doc["mapping"]))

    def test_plugin_check_refuses_what_exec_would_not_run(self):
        # describe() checks the command as init does: a check that passes
        # here must not meet "cannot run" in every job later.
        ctl = self.env.binary("twicectl")
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        script = os.path.join(tmp, "handler")
        with open(script, "w") as f:
            f.write("#!/no/such/interpreter\n")
        os.chmod(script, 0o755)
        for settings, why in (
                (["command=" + os.path.join(tmp, "missing.py")],
                 "setting 'command': %s: No such file or directory"
                 % os.path.join(tmp, "missing.py")),
                (["command=" + script], "its interpreter /no/such/interpreter"),
                (["command=/bin/cat", "timeout=0"], "setting 'timeout': must be 1-86400"),
                (["command=/bin/cat", "directory=" + os.path.join(tmp, "gone")],
                 "setting 'directory'")):
            r = subprocess.run([ctl, "plugin", "check", self.so("exec")] + settings,
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 1, (settings, r.stdout, r.stderr))
            self.assertIn("twicectl: plugin check: plugin 'exec': ", r.stderr)
            self.assertIn(why, r.stderr)
            self.assertNotIn("all accepted", r.stdout)
            doc = json.loads(subprocess.run(
                [ctl, "plugin", "check", self.so("exec"), "--json"] + settings,
                capture_output=True, text=True).stdout)
            self.assertTrue(any(why in p for p in doc["problems"]), doc["problems"])
        r = subprocess.run([ctl, "plugin", "check", self.so("exec"), "command=cat"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"run cat \(no shell; the program: /\S*/cat\), one process "
                                   r"per running job")


if __name__ == "__main__":
    unittest.main()
