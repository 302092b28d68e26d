"""No secret ever reaches a log. A full run at log level debug, then
the runs that fail (a wrong database password, an unreachable SQS endpoint, a DSN that
does not parse, a plugin whose SMTP login cannot proceed), with every secret set to a
recognisable value: the AWS secret key and session token (environment), the database
password (DSN), the SMTP password and the webhook's header and URL token (alerts), a
plugin's password setting. Every byte twiced, `twiced -t` and twicectl print is
searched for each. Not for what the servers log (they are test fixtures).
"""

import json
import os
import subprocess
import unittest
import urllib.parse

import twicetest
import twiceconf as tc

PLUGIN = "effect-tx"
AWS_SECRET = "SecretKey/TwiceMustNotLog+5f2a9c41d7e3"
AWS_TOKEN = "SessionToken//TwiceMustNotLog/IQoJb3JpZ2luX2VjEPr0kEn=="
WEBHOOK_HEADER_SECRET = "HookHeaderTwiceMustNotLog7c1e"
WEBHOOK_URL_SECRET = "HookPathTwiceMustNotLog93b0d"
PLUGIN_PASSWORD = "PluginSmtpPassTwiceMustNotLog4411"
WRONG_DB_PASSWORD = "WrongDbPassTwiceMustNotLog8d2f"


class Secrets(twicetest.TwiceTestCase):
    def setUp(self):
        super().setUp()
        self.secrets = {
            "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
            "AWS_SESSION_TOKEN": AWS_TOKEN,
            "the database password": self.env.pg_password,
            "the SMTP password": self.env.smtp_password,
            "the webhook header": WEBHOOK_HEADER_SECRET,
            "the webhook URL token": WEBHOOK_URL_SECRET,
            "a plugin's password": PLUGIN_PASSWORD,
            "a wrong database password": WRONG_DB_PASSWORD,
        }
        self.outputs = []  # (what, text) of everything printed

    def assert_no_secret(self, what, text):
        self.outputs.append((what, text))
        for name, value in self.secrets.items():
            for form in {value, urllib.parse.quote(value, safe=""), json.dumps(value)[1:-1]}:
                self.assertNotIn(form, text, "%s appears in %s" % (name, what))

    def env_with_secrets(self):
        return {"AWS_SECRET_ACCESS_KEY": AWS_SECRET, "AWS_SESSION_TOKEN": AWS_TOKEN}

    def config(self, dsn, endpoint=None, extra_plugins=(), extra_queues=()):
        url, dlq = self.queue_pair("secrets")
        alerts = """alerts = {
            webhook = { url = %s; header = %s; };
            smtp = { url = %s; from = "twice@twice.test"; to = "ops@twice.test";
                     username = %s; password = %s; };
        };""" % (tc.quote("%s/hook/%s" % (self.env.http_url, WEBHOOK_URL_SECRET)),
                 tc.quote("X-Hook-Token: " + WEBHOOK_HEADER_SECRET),
                 tc.quote("smtp://127.0.0.1:%d" % self.env.smtp_port),
                 tc.quote(self.env.smtp_user), tc.quote(self.env.smtp_password))
        queues = [tc.queue("secrets", url, dlq, PLUGIN, max_attempts=2, backoff=(1, 1))]
        plugins = [tc.plugin(PLUGIN, tc.test_plugin(self.env, "effect_tx"))]
        conf = tc.config(self.env, dsn, queues + list(extra_queues),
                         plugins + list(extra_plugins), log_level="debug", endpoint=endpoint,
                         metrics_port=tc.free_port(), extra=alerts)
        return conf, url, dlq

    def daemon(self, conf):
        d = self.twiced(conf, extra_env=self.env_with_secrets())
        r = d.check_config()
        self.assert_no_secret("twiced -t", r.stdout + r.stderr)
        return d, r

    def twicectl(self, d):
        ctl = self.env.binary("twicectl")
        self.assertTrue(os.path.exists(ctl), ctl)
        for args in (["--version"], ["-c", d.config_path, "status"],
                     ["-c", d.config_path, "whoami"], ["-c", d.config_path, "dlq", "list"]):
            r = subprocess.run([ctl] + args, capture_output=True, text=True, timeout=60,
                               env=d.process_env, stdin=subprocess.DEVNULL)
            self.assert_no_secret("twicectl %s" % " ".join(args), r.stdout + r.stderr)

    def welcome_plugin(self):
        """welcome-email with an SMTP login: the sink offers no STARTTLS, so every send
        fails, and the error must not carry the password."""
        url, dlq = self.queue_pair("secrets-welcome")
        templates = os.path.join(self.env.source_dir, "etc", "templates")
        plugin = tc.plugin("welcome-email",
                           os.path.join(self.env.plugin_build_dir, "welcome_email.so"),
                           smtp_url="smtp://127.0.0.1:%d" % self.env.smtp_port,
                           **{"from": "w@twice.test"}, username="twice",
                           password=PLUGIN_PASSWORD,
                           template_text=os.path.join(templates, "welcome.txt"),
                           template_html=os.path.join(templates, "welcome.html"))
        queue = tc.queue("secrets-welcome", url, dlq, "welcome-email", max_attempts=2,
                         backoff=(1, 1))
        return plugin, queue, url, dlq

    def test_full_run_at_debug_level(self):
        dsn = self.new_database("secrets")
        self.assertIn(self.env.pg_password, dsn, "the DSN carries the password")
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        wplugin, wqueue, wurl, wdlq = self.welcome_plugin()
        conf, url, dlq = self.config(dsn, extra_plugins=[wplugin], extra_queues=[wqueue])
        d, r = self.daemon(conf)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        d.start()
        d.wait_log(r"ready: generation 1", timeout=20)
        for body in ({"id": "ok"}, {"id": "flaky", "fail_until": 2},
                     {"id": "rej", "reject": True}, "not json {"):
            self.sqs.send(url, body if isinstance(body, str) else json.dumps(body))
        self.sqs.send(wurl, json.dumps({"type": "welcome-email", "candidateId": 7,
                                        "email": "ana@twice.test", "name": "Ana"}))
        twicetest.wait_until(lambda: len(self.pg.query(dsn, "SELECT key FROM effects")) == 2,
                             timeout=30, message="ok and flaky ran")
        letters = []
        twicetest.wait_until(lambda: letters.extend(self.sqs.receive(dlq, visibility=60)) or
                             len(letters) >= 2, timeout=30, message="two dead letters")
        wletters = []
        twicetest.wait_until(lambda: wletters.extend(self.sqs.receive(wdlq, visibility=60)) or
                             wletters, timeout=40, message="the welcome job dead-lettered")
        for m in letters + wletters:
            self.assert_no_secret("a dead letter", json.dumps(m))
        self.twicectl(d)
        self.assertEqual(d.stop(), 0)
        text = d.log_text()
        self.assertRegex(text, r" debug ", "the run logged at debug level")
        self.assert_no_secret("twiced's log", text)

    def test_wrong_database_password(self):
        name = urllib.parse.urlsplit(self.new_database("secrets-pw")).path.lstrip("/")
        dsn = "postgresql://%s:%s@%s:%d/%s" % (self.env.pg_user, WRONG_DB_PASSWORD,
                                               self.env.pg_host, self.env.pg_port, name)
        conf, _, _ = self.config(dsn)
        d, _ = self.daemon(conf)
        d.start()
        d.wait_log(r"password authentication failed", timeout=30)
        self.twicectl(d)
        d.stop()
        self.assert_no_secret("twiced's log", d.log_text())

    def test_dsn_that_does_not_parse(self):
        dsn = "postgresql://%s:%s@%s:%d/x?no_such_option=1" % (
            self.env.pg_user, WRONG_DB_PASSWORD, self.env.pg_host, self.env.pg_port)
        conf, _, _ = self.config(dsn)
        d, _ = self.daemon(conf)
        d.start()
        # A master that refuses its configuration exits 78 by itself. Waiting for
        # that (rather than sending SIGTERM as soon as the error is logged) also
        # keeps the signal from landing in the sanitizer's exit-time leak check,
        # whose helper process would outlive the master for a moment.
        self.assertEqual(d.proc.wait(timeout=30), 78, "twiced refused to start (EX_CONFIG)")
        self.assertRegex(d.log_text(), r"not a valid libpq connection string")
        d.stop()
        self.assert_no_secret("twiced's log", d.log_text())

    def test_unreachable_sqs_endpoint(self):
        dsn = self.new_database("secrets-sqs")
        conf, _, _ = self.config(dsn, endpoint="http://127.0.0.1:%d" % tc.free_port())
        d, _ = self.daemon(conf)
        d.start()
        d.wait_log(r"(ReceiveMessage|GetQueueAttributes): .*(is the endpoint reachable\?)",
                   timeout=30)
        self.twicectl(d)
        d.stop()
        self.assert_no_secret("twiced's log", d.log_text())

    def test_the_search_can_fail(self):
        """The control: a secret in the text is found, whichever form it takes."""
        for text in (AWS_TOKEN, urllib.parse.quote(AWS_TOKEN, safe=""),
                     "x %s y" % self.env.pg_password):
            with self.assertRaises(AssertionError):
                self.assert_no_secret("a sample", text)


if __name__ == "__main__":
    unittest.main()
