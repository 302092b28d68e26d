"""The bundled plugins (welcome-email, match-recompute, sync) run by twiced against
the real SMTP sink, PostgreSQL, the HTTP receiver and the SQS emulator, each absorbing
duplicates by intent; etc/twice.conf passes `twiced -t` with all three; a bad sync
setting is refused at the line that sets it. Plugins built against the header of every
shipped ABI minor load and run; newer ABIs are refused by name (OldPlugins)."""

import json
import os
import re
import signal
import tempfile
import time
import unittest

import settingcheck
import twicetest
import twiceconf as tc


class BundledPlugins(settingcheck.SettingRefusal, twicetest.TwiceTestCase):
    def plugin_path(self, name):
        return os.path.join(self.env.plugin_build_dir, name + ".so")

    def templates(self):
        return os.path.join(self.env.source_dir, "etc", "templates")

    def run_one(self, prefix, plugin_name, so, settings, db_setup=None, **queue_options):
        url, dlq = self.queue_pair(prefix)
        dsn = self.new_database(prefix)
        if db_setup:
            db_setup(dsn)
        port = tc.free_port()
        conf = tc.config(self.env, dsn, [tc.queue(prefix, url, dlq, plugin_name, **queue_options)],
                         [tc.plugin(plugin_name, self.plugin_path(so), **settings)],
                         metrics_port=port)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        return url, dlq, dsn, port, d

    def test_welcome_email_ten_sends_one_email(self):
        rcpt = "ana-%s@example.com" % os.urandom(4).hex()
        url, dlq, dsn, port, d = self.run_one(
            "welcome", "welcome-email", "welcome_email",
            {"smtp_url": "smtp://127.0.0.1:%d" % self.env.smtp_port,
             "from": "welcome@twice.test", "subject": "Welcome, {{name}}!",
             "template_text": os.path.join(self.templates(), "welcome.txt"),
             "template_html": os.path.join(self.templates(), "welcome.html")},
            concurrency=4)
        body = {"type": "welcome-email", "candidateId": 4242, "email": rcpt,
                "name": "Ana <&> Lima"}
        for i in range(10):
            self.sqs.send(url, json.dumps(body))
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=40,
                             message="the sends were not all handled")
        time.sleep(1)
        mails = self.mailbox().messages(to=rcpt)
        self.assertEqual(len(mails), 1, "ten sends of one candidate: one email")
        m = mails[0]
        self.assertEqual(m.rcpt_tos, [rcpt])
        self.assertEqual(m.mail_from, "welcome@twice.test")
        self.assertEqual(m.subject, "Welcome, Ana <&> Lima!")
        self.assertIn("Ana <&> Lima", m.text())
        html = m.message.get_body(preferencelist=("html",)).get_content()
        self.assertIn("Ana &lt;&amp;&gt; Lima", html)
        self.assertRegex(m.message["Message-ID"],
                         r"^<welcome-email\.4242\.[0-9a-f]{16}@twice\.test>$", "the From domain")
        dups = tc.metric_sum(tc.scrape(port), "twice_duplicates_skipped_total")
        self.assertGreaterEqual(dups, 9)
        self.assertEqual(d.stop(), 0)

    def test_welcome_email_bad_mailbox_goes_to_the_dlq(self):
        url, dlq, dsn, port, d = self.run_one(
            "welcome-bad", "welcome-email", "welcome_email",
            {"smtp_url": "smtp://127.0.0.1:%d" % self.env.smtp_port, "from": "w@twice.test",
             "template_text": os.path.join(self.templates(), "welcome.txt"),
             "template_html": os.path.join(self.templates(), "welcome.html")})
        self.sqs.send(url, json.dumps({"type": "welcome-email", "candidateId": 1,
                                       "email": "reject-%s@example.com" % os.urandom(3).hex(),
                                       "name": "X"}))
        self.sqs.send(url, json.dumps({"type": "welcome-email", "candidateId": 2, "name": "Y"}))
        letters = []
        twicetest.wait_until(lambda: letters.extend(self.sqs.receive(dlq, visibility=60)) or
                             len(letters) >= 2, timeout=30)
        errors = sorted(m["MessageAttributes"]["twice-error"]["StringValue"] for m in letters)
        self.assertRegex(errors[0], r"^550 ")
        self.assertIn("twice-test-sink", errors[0], "the server's own reply")
        self.assertIn("email", errors[1])
        for m in letters:
            self.assertEqual(m["MessageAttributes"]["twice-reason"]["StringValue"], "rejected")
        self.assertEqual(d.stop(), 0)

    def test_welcome_email_relay_refusing_the_session_is_retried_not_dead_lettered(self):
        # A relay that answers 530 (authentication required) to MAIL FROM, or 554 to
        # EHLO and HELO (it serves not this client), refuses every message, whatever its
        # recipient: the message waits (retried; a breaker counts it), with what to
        # check, instead of being dead-lettered as a bad mailbox is. (The 530 was
        # dead-lettered at once as rejected, with the relay's words.) Two queues, one
        # twiced: the sink refuses EHLO by the client's name, curl's smtp:// URL path.
        templates = {"template_text": os.path.join(self.templates(), "welcome.txt"),
                     "template_html": os.path.join(self.templates(), "welcome.html")}
        relays = {"welcome-auth": ("smtp://127.0.0.1:%d" % self.env.smtp_port,
                                   "auth-required@twice.test"),
                  "welcome-ehlo": ("smtp://127.0.0.1:%d/refuse-ehlo.twice.test"
                                   % self.env.smtp_port, "welcome@twice.test")}
        dsn = self.new_database("welcome-auth")
        queues, plugins, urls, dlqs = [], [], [], []
        for name, (smtp_url, sender) in relays.items():
            url, dlq = self.queue_pair(name)
            urls.append(url)
            dlqs.append(dlq)
            queues.append(tc.queue(name, url, dlq, name, max_attempts=5, backoff=(1, 1)))
            plugins.append(tc.plugin(name, self.plugin_path("welcome_email"),
                                     smtp_url=smtp_url, **dict(templates, **{"from": sender})))
        d = self.start_twiced(tc.config(self.env, dsn, queues, plugins))
        d.wait_log(r"ready: generation 1", timeout=20)
        for n, url in enumerate(urls):  # keys of their own: welcome-email:{candidateId}
            self.sqs.send(url, json.dumps({"type": "welcome-email", "candidateId": n,
                                           "name": "A", "email": "ana-%s@example.com"
                                           % os.urandom(3).hex()}))
        d.wait_log(r"retry in \d+s \(attempt 1 of 5.*\): SMTP relay refused the session before "
                   r"any recipient: 530 5\.7\.0 twice-test-sink: authentication required .*"
                   r"check smtp_url, username/password and from", timeout=20)
        d.wait_log(r"retry in \d+s \(attempt 1 of 5.*\): SMTP relay refused the session before "
                   r"any recipient: 554 5\.7\.1 twice-test-sink: no service for "
                   r"<refuse-ehlo\.twice\.test>", timeout=20)
        self.assertEqual(sum(sum(self.sqs.counts(dlq)) for dlq in dlqs), 0,
                         "nothing dead-lettered")
        self.assertNotIn("dead-lettered", d.log_text())
        self.assertEqual(d.stop(), 0)

    def matches_db(self, dsn):
        with open(os.path.join(self.env.source_dir, "etc", "schema-matches.sql")) as f:
            self.pg.query(dsn, f.read())
        self.pg.query(dsn, "INSERT INTO roles (id, title, version) VALUES (7, 'Backend', 3)")
        self.pg.query(dsn, "INSERT INTO role_skills (role_id, skill, weight) VALUES "
                           "(7, 'C', 3), (7, 'PostgreSQL', 2), (7, 'SQS', 1)")
        self.pg.query(dsn, "INSERT INTO candidates (id, name, skills) VALUES "
                           "(1, 'Ana', '{C,PostgreSQL,SQS}'), (2, 'Bo', '{C}'), "
                           "(3, 'Cy', '{Java}')")

    def matches(self, dsn):
        return dict(self.pg.query(dsn, "SELECT candidate_id, score::float8 FROM matches "
                                       "WHERE role_id = 7"))

    def test_match_recompute(self):
        url, dlq, dsn, port, d = self.run_one("matches", "match-recompute", "match_recompute",
                                              {}, db_setup=self.matches_db, max_attempts=5,
                                              backoff=(1, 2))
        msg = json.dumps({"type": "match-recompute", "roleId": 7, "roleVersion": 3})
        for _ in range(5):  # five duplicate deliveries of one version
            self.sqs.send(url, msg)
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=30)
        self.assertEqual(self.matches(dsn), {1: 1.0, 2: 0.5})
        keys = self.pg.query(dsn, "SELECT idempotency_key, state FROM twice_idempotency")
        self.assertEqual(keys, [("match-recompute:7:3", "completed")])
        # Candidates change and the role is edited: version 4 recomputes.
        self.pg.query(dsn, "UPDATE candidates SET skills = '{C,SQS}' WHERE id = 2")
        self.pg.query(dsn, "UPDATE roles SET version = 4 WHERE id = 7")
        self.sqs.send(url, json.dumps({"type": "match-recompute", "roleId": 7, "roleVersion": 4}))
        twicetest.wait_until(lambda: self.matches(dsn).get(2) == 0.6667, timeout=30)
        self.assertEqual(self.matches(dsn), {1: 1.0, 2: 0.6667})
        # An error midway (a constraint the new rows break): the old rows stay and
        # the job is retried; once the cause is gone it succeeds.
        self.pg.query(dsn, "ALTER TABLE matches ADD CONSTRAINT no_perfect CHECK (score < 1) "
                           "NOT VALID")
        self.pg.query(dsn, "UPDATE roles SET version = 5 WHERE id = 7")
        self.sqs.send(url, json.dumps({"type": "match-recompute", "roleId": 7, "roleVersion": 5}))
        d.wait_log(r"retry in \d+s \(attempt 1 of 5", timeout=20)
        self.assertEqual(self.matches(dsn), {1: 1.0, 2: 0.6667}, "rolled back")
        self.pg.query(dsn, "ALTER TABLE matches DROP CONSTRAINT no_perfect")
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=30)
        versions = {v for (v,) in self.pg.query(dsn, "SELECT computed_for_version FROM "
                                                     "matches WHERE role_id = 7")}
        self.assertEqual(versions, {5})
        self.assertEqual(d.stop(), 0)

    def test_sync(self):
        rx = self.http_receiver()
        url, dlq, dsn, port, d = self.run_one(
            "sync", "sync", "sync", {"url": rx.url + "/api/{entity}/{id}"},
            max_attempts=5, backoff=(1, 2))
        # Duplicates: the receiver sees each key at most once after completion.
        rec = {"type": "sync", "entity": "candidate", "id": 42, "version": 9,
               "data": {"name": "Ana"}}
        self.sqs.send(url, json.dumps(rec))
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=20)
        for _ in range(3):
            self.sqs.send(url, json.dumps(rec))
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=20)
        reqs = rx.requests()
        self.assertEqual(len(reqs), 1)
        self.assertEqual(reqs[0]["method"], "PUT")
        self.assertTrue(reqs[0]["path"].endswith("/api/candidate/42"))
        self.assertEqual(reqs[0]["headers"]["idempotency-key"], "sync:candidate:42:9")
        self.assertEqual(json.loads(reqs[0]["body"]), {"name": "Ana"})
        # 503 twice (with Retry-After), then 200: done on the third attempt.
        rx.reset()
        rx.script(fail_first=2, status=503, retry_after="1", then_status=200)
        rec2 = dict(rec, id=43)
        self.sqs.send(url, json.dumps(rec2))
        twicetest.wait_until(lambda: len(rx.requests()) == 3 and
                             self.sqs.counts(url) == (0, 0, 0), timeout=30)
        self.assertEqual([r["status"] for r in rx.requests()], [503, 503, 200])
        self.assertEqual({r["headers"]["idempotency-key"] for r in rx.requests()},
                         {"sync:candidate:43:9"})
        # 400: to the DLQ with the status and the response.
        rx.reset()
        rx.script(status=400, body={"error": "unknown field"})
        self.sqs.send(url, json.dumps(dict(rec, id=44)))
        letters = []
        twicetest.wait_until(lambda: letters.extend(self.sqs.receive(dlq, visibility=60))
                             or letters, timeout=30)
        attrs = letters[0]["MessageAttributes"]
        self.assertEqual(attrs["twice-reason"]["StringValue"], "rejected")
        self.assertRegex(attrs["twice-error"]["StringValue"], r"^HTTP 400: .*unknown field")
        # No connection per message: 12 records over one worker with 4 handler
        # threads come on at most 4 connections (the receiver numbers them).
        rx.reset()
        for i in range(12):
            self.sqs.send(url, json.dumps(dict(rec, id=100 + i)))
        twicetest.wait_until(lambda: len(rx.requests()) == 12 and
                             self.sqs.counts(url) == (0, 0, 0), timeout=30)
        conns = {r["conn"] for r in rx.requests()}
        self.assertLessEqual(len(conns), 4, "12 messages, %d connections" % len(conns))
        self.assertEqual(d.stop(), 0)

    def test_sync_forwards_numbers_as_written(self):
        """Issue 14.10/14.11 through the daemon: what the producer wrote reaches the
        endpoint byte for byte (19.99 is not 19.989999999999998; a 30-digit integer,
        "\\u0000" and a repeated name are JSON too), while the key spells the numbers
        it is made of as keys always have (1.50 as 1.5)."""
        rx = self.http_receiver()
        url, dlq, dsn, port, d = self.run_one(
            "syncnum", "sync", "sync", {"url": rx.url + "/api/{entity}/{id}"})
        data = ('{"price":19.99,"rate":0.1,"qty":1.50,"e":1E3,"neg":-0.0,'
                '"big":123456789012345678901234567890,"n":"a\\u0000b","dup":1,"dup":2}')
        body = ('{"type":"sync","entity":"price","id":123456789012345678901234567890,'
                '"version":1.50,"data":%s}' % data)
        self.sqs.send(url, body)
        twicetest.wait_until(lambda: len(rx.requests()) == 1 and
                             self.sqs.counts(url) == (0, 0, 0), timeout=20)
        req = rx.requests()[0]
        self.assertEqual(req["status"], 200)
        self.assertEqual(req["body"], data)
        self.assertTrue(req["path"].endswith("/api/price/123456789012345678901234567890"),
                        req["path"])
        self.assertEqual(req["headers"]["idempotency-key"],
                         "sync:price:123456789012345678901234567890:1.5")
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        self.assertEqual(d.stop(), 0)

    def test_reference_config_loads_all_three_plugins(self):
        with open(os.path.join(self.env.source_dir, "etc", "twice.conf")) as f:
            text = f.read()
        text = text.replace('#plugin_dir = "/usr/lib/x86_64-linux-gnu/twice/plugins";',
                            'plugin_dir = "%s";' % self.env.plugin_build_dir)
        # No template_text/template_html: in the build tree, welcome-email's defaults
        # are the source tree's templates (they named an installed path, and init
        # failed in every checkout).
        d = self.twiced(text.replace("$", "$$"))
        r = d.check_config()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("configuration and 3 plugins OK", r.stdout)

    @staticmethod
    def line_of(text, needle):
        """The 1-based number of the first line of text that contains needle."""
        for n, line in enumerate(text.splitlines(), 1):
            if needle in line:
                return n
        raise AssertionError("%r is not in:\n%s" % (needle, text))

    def test_check_prints_why_init_failed(self):
        """twiced -t said only "init failed (returned -1; see its log lines)": the
        problem line carries the reason, at the line of the setting to fix."""
        url, dlq = self.queue_pair("initfail")
        missing = os.path.join(self.env.run_dir, "no-such-dir", "welcome.txt")
        welcome = tc.plugin("welcome-email", self.plugin_path("welcome_email"),
                            smtp_url="smtp://127.0.0.1:%d" % self.env.smtp_port,
                            **{"from": "welcome@twice.test", "template_text": missing})
        conf = tc.config(self.env, self.new_database("initfail"),
                         [tc.queue("initfail", url, dlq, "welcome-email")], [welcome])
        d = self.twiced(conf)
        r = d.check_config()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertRegex(r.stdout + r.stderr, r"(?m)^%s:%d: plugin 'welcome-email': setting "
                         r"'template_text': template %s: No such file or directory$"
                         % (re.escape(d.config_path), self.line_of(d.config_text, missing),
                            re.escape(missing)))

    def blame_config(self, settings_text, include=None):
        """A twice.conf whose one plugin is setting_blame with settings_text as its
        settings group (several lines); with include (a file name), the plugin entry
        goes into that file beside twice.conf, pulled in with @include. Returns
        (Twiced, the path of the file holding the entry, that file's text)."""
        url, dlq = self.queue_pair("blame")
        entry = ('{ name = "blamer";\n  path = "%s";\n  settings = {\n%s\n  }; }'
                 % (tc.test_plugin(self.env, "setting_blame"), settings_text))
        plugins = entry if include is None else '\n@include "%s"\n' % include
        conf = tc.config(self.env, self.env.pg_dsn, [tc.queue("blame", url, dlq, "blamer")],
                         [plugins])
        d = self.twiced(conf.replace("$", "$$"))
        if include is None:
            return d, d.config_path, d.config_text
        text = "\n# the plugin, kept apart\n" + entry + "\n"
        path = os.path.join(d.workdir, include)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return d, path, text

    def check_blamed(self, d, file, line, setting):
        r = d.check_config()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        want = ("%s:%d: plugin 'blamer': setting '%s': blamed by the fixture"
                % (file, line, setting))
        self.assertRegex(r.stdout + r.stderr, r"(?m)^%s \(limit \d+\)$" % re.escape(want))
        # said once: the host does not also log what it reports at the line
        self.assertEqual((r.stdout + r.stderr).count("blamed by the fixture"), 1,
                         r.stdout + r.stderr)
        # the log line the plugin wrote after it is in the log, not the problem
        self.assertNotRegex(r.stdout + r.stderr, r"(?m)^/\S+:\d+: .*a later log line")

    def test_setting_error_points_at_the_setting(self):
        """api->setting_error (ABI 1.2): the host reports a value a plugin's init()
        refused at the line that sets it, wherever that is: a line of the settings
        group, the group itself for a declared default, a file pulled in with
        @include. A name the plugin does not declare leaves the plugin's entry and
        its own words."""
        settings = '    blame = "limit";\n\n    limit = 5;\n    label = "y";'
        for include in (None, "blamer.inc"):
            d, path, text = self.blame_config(settings, include)
            self.check_blamed(d, path, self.line_of(text, "limit = 5;"), "limit")

        d, path, text = self.blame_config('    label = "y";\n    blame = "label";')
        self.check_blamed(d, path, self.line_of(text, 'label = "y";'), "label")

        d, path, text = self.blame_config('    blame = "limit";')  # limit left at its default
        self.check_blamed(d, path, self.line_of(text, "settings = {"), "limit")

        d, _, _ = self.blame_config('    blame = "no_such_setting";')
        r = d.check_config()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("setting error for an undeclared setting 'no_such_setting': blamed by "
                      "the fixture", r.stderr)
        self.assertIn("%s:%d: plugin 'blamer': init failed: a later log line"
                      % (d.config_path, self.line_of(d.config_text, 'name = "blamer";')),
                      r.stdout + r.stderr)

        d, _, _ = self.blame_config('    blame = "";')
        r = d.check_config()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

        # blamed, yet init() succeeded: not a refusal, but not lost either
        d, _, _ = self.blame_config('    blame = "+label";')
        r = d.check_config()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stderr, r"warn .*plugin 'blamer': setting 'label': blamed, yet "
                         r"init went on")

    def test_check_survives_a_plugin_that_prints_or_exits_in_init(self):
        """The probe reported on its standard output, so a line a plugin's init()
        printed there (a banner, a debug printf) was taken for a problem: `twiced -t`
        and every reload refused a good plugin, saying only that line. It goes to
        stderr now, and an exit() in init() names the plugin, as a crash does."""
        d, _, _ = self.blame_config('    stdout = "hello from init";')
        r = d.check_config()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("hello from init", r.stderr)
        self.assertNotIn("hello from init", r.stdout)

        # At the plugin entry's FILE:LINE, an @include'd file's too (it said only
        # the main file, without a line).
        for include in (None, "blamer.inc"):
            d, path, text = self.blame_config('    exit = 3;', include=include)
            line = text[:text.index('{ name = "blamer"')].count("\n") + 1
            r = d.check_config()
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn("%s:%d: plugin 'blamer': exited the check with code 3"
                          % (path, line), r.stdout + r.stderr)

    def check_sync_refused(self, settings, setting, want):
        """sync with these settings is refused for setting SETTING with WANT at the line
        that sets it (settingcheck)."""
        url, dlq = self.queue_pair("syncbad")
        entry = tc.plugin_lines("sync", self.plugin_path("sync"), settings)
        conf = tc.config(self.env, "dbname=x", [tc.queue("syncbad", url, dlq, "sync")], [entry])
        self.assert_setting_refused(conf, "sync", setting, want)

    def test_sync_bad_settings_are_refused_at_their_line(self):
        url = "http://127.0.0.1:9/api/{entity}/{id}"
        self.check_sync_refused({"url": url, "method": "PATCH"}, "method", "must be PUT or POST")
        self.check_sync_refused({"url": url, "timeout": 601}, "timeout", "must be 1-600 seconds")
        self.check_sync_refused({"url": "http://127.0.0.1:9/{id"}, "url",
                                "has a '{' that does not start a {field} of [A-Za-z0-9_.-]")
        # of the pair, the one that is set without the other
        self.check_sync_refused({"url": url, "timeout": 5, "auth_env": "TWICE_SYNC_TOKEN"},
                                "auth_env", "needs auth_header too (the header it is the value "
                                "of)")


if __name__ == "__main__":
    unittest.main()


class OldPlugins(twicetest.TwiceTestCase):
    """Plugins users built against an older SDK header keep working after an upgrade.

    old_abi_1_0, old_abi_1_1 and old_abi_1_2 are built against the plugin header as each
    ABI minor first shipped (tests/plugins/abi/plugin-1.X.h, copied from git history) and
    hand twiced their descriptor from the end of a mapped page: a host that read one field
    past the size they were built with would crash the probe or the worker. Each runs a
    job, its key derived as it declares (a template in 1.0, a key setting in 1.1,
    derive_key in 1.2). Plugins of an ABI this host does not support (newer_minor: 1.3,
    newer_major: 2.0) are refused by name with both versions at `twiced -t`, at a reload
    (the running workers stay and keep working) and at the start."""

    MINORS = (("old_abi_1_0", "old10"), ("old_abi_1_1", "old11"), ("old_abi_1_2", "old12"))

    def conf(self, dsn, queues, paths):
        plugins = [tc.plugin(name.replace("_", "-"), paths.get(name, tc.test_plugin(self.env,
                                                                                      name)),
                             file=self.effects_path)
                   for name, _ in self.MINORS]
        return tc.config(self.env, dsn, queues, plugins, workers=1)

    def effects(self):
        try:
            with open(self.effects_path, encoding="utf-8") as f:
                return sorted(f.read().splitlines())
        except FileNotFoundError:
            return []

    def expected(self, job_id):
        return sorted("%s %s:%s %s" % (name, prefix, job_id,
                                       "-" if prefix == "old10" else "old-" + name[-3:])
                      for name, prefix in self.MINORS)

    def send_all(self, urls, job_id):
        for url in urls:
            self.sqs.send(url, json.dumps({"id": job_id}))

    def test_plugins_of_every_shipped_abi_load_and_newer_ones_are_refused(self):
        dsn = self.new_database("oldabi")
        self.effects_path = os.path.join(tempfile.mkdtemp(dir=self.env.run_dir), "effects")
        queues, urls = [], []
        for name, _ in self.MINORS:
            url, dlq = self.queue_pair("oldabi")
            urls.append(url)
            queues.append(tc.queue("old-" + name[-3:], url, dlq, name.replace("_", "-")))
        d = self.twiced(self.conf(dsn, queues, {}))
        r = d.check_config()
        self.assertEqual(r.returncode, 0, r.stderr)
        d.start()
        d.wait_log(r"ready: generation 1", timeout=20)
        workers = d.worker_pids()
        self.send_all(urls, "a1")
        twicetest.wait_until(lambda: len(self.effects()) == 3, timeout=20,
                             message="the old plugins did not all run their job")
        self.assertEqual(self.effects(), self.expected("a1"))
        keys = self.pg.query(dsn, "SELECT idempotency_key, state FROM twice_idempotency"
                                  " ORDER BY 1")
        self.assertEqual([tuple(k) for k in keys],
                         [("old10:a1", "completed"), ("old11:a1", "completed"),
                          ("old12:a1", "completed")])

        # Newer ABIs in place of two of them: refused by name, with both versions.
        minor = tc.test_plugin(self.env, "newer_minor")
        major = tc.test_plugin(self.env, "newer_major")
        newer = self.conf(dsn, queues, {"old_abi_1_0": minor, "old_abi_1_2": major})
        refusals = [r"%s: built for ABI 1\.3, host supports 1\.0-1\.2" % re.escape(minor),
                    r"%s: built for ABI 2\.0, host supports 1\.0-1\.2" % re.escape(major)]
        with open(d.config_path, "w", encoding="utf-8") as f:
            f.write(newer.replace("$$", "$"))
        r = d.check_config()
        self.assertEqual(r.returncode, 1, r.stderr)
        for refusal in refusals:
            self.assertRegex(r.stderr, r"%s:\d+: plugin 'old-abi-1-\d': %s"
                             % (re.escape(d.config_path), refusal))
        mark = d.mark()
        d.signal(signal.SIGHUP)
        d.wait_log(r"reload refused", since=mark, timeout=30)
        for refusal in refusals:
            d.wait_log(refusal, since=mark, timeout=5)
        self.send_all(urls, "a2")
        twicetest.wait_until(lambda: len(self.effects()) == 6, timeout=20,
                             message="generation 1 stopped working after the refused reload")
        self.assertEqual(self.effects(), sorted(self.expected("a1") + self.expected("a2")))
        self.assertEqual(d.worker_pids(), workers, "the workers were replaced")
        self.assertNotIn("generation 2", d.log_text())
        self.assertEqual(d.stop(), 0)

        started = self.twiced(newer)
        started.start()
        started.proc.wait(30)
        self.assertNotEqual(started.proc.returncode, 0)
        for refusal in refusals:
            self.assertRegex(started.log_text(), refusal)
