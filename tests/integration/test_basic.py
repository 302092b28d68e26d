"""twiced as a process consumes real SQS messages (from the
emulator, sent with the AWS JSON protocol) with a real plugin, deletes them, and
its command line checks configurations and plugins the way operators rely on."""

import json
import os
import re
import subprocess
import tempfile
import unittest

import twicetest
import twiceconf as tc


class Consume(twicetest.TwiceTestCase):
    def test_handler_sees_every_body_and_queue_ends_empty(self):
        url, dlq = self.queue_pair("basic")
        dsn = self.new_database("basic")
        effects = os.path.join(tempfile.mkdtemp(dir=self.env.run_dir), "effects.txt")
        conf = tc.config(self.env, dsn,
                         [tc.queue("basic", url, dlq, "effect-file")],
                         [tc.plugin("effect-file", tc.test_plugin(self.env, "effect_file"),
                                    file=effects)])
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        sent = {}
        for i in range(12):
            mid = self.sqs.send(url, json.dumps({"id": "basic-%d" % i, "n": i}),
                                attrs={"origin": "test"})
            sent["effect:basic-%d" % i] = mid

        def lines():
            if not os.path.exists(effects):
                return []
            with open(effects) as f:
                return [line.split() for line in f if line.strip()]

        twicetest.wait_until(lambda: len(lines()) >= 12, timeout=20,
                             message="the handler did not run for every message")
        seen = {key: mid for key, mid, _attempt in lines()}
        self.assertEqual(seen, sent)  # each body's key, with its own message id
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=10,
                             message="messages were not deleted")
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        rows = self.pg.query(dsn, "SELECT count(*) FROM twice_idempotency "
                                  "WHERE state = 'completed'")
        self.assertEqual(rows[0][0], 12)
        self.assertEqual(d.stop(), 0)
        log = d.log_text()
        self.assertNotIn(twicetest.TEST_SECRET_ACCESS_KEY, log)
        self.assertNotIn(self.env.pg_password, log)


class CommandLine(twicetest.TwiceTestCase):
    def _check(self, text):
        d = self.twiced(text)
        return d.check_config(), d.config_path

    def base(self, plugin_path=None, queue_extra=""):
        url = "http://sqs.us-east-1.localhost:1/000000000000/q"
        return """idempotency = { dsn = "postgresql://nobody@127.0.0.1:1/x"; };
plugins = ( { name = "p"; path = "%s"; } );
queues = ( { name = "q"; url = "%s"; dlq_url = "%s-dlq"; plugin = "p"; %s } );
""" % (plugin_path or tc.test_plugin(self.env, "echo_ok"), url, url, queue_extra)

    def test_valid_configuration_passes(self):
        r, _ = self._check(self.base())
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        self.assertIn("configuration and 1 plugin OK", r.stdout)

    def test_problems_are_reported_as_file_line(self):
        text = self.base(queue_extra="visiblity_timeout = 5;").replace(
            "idempotency = {", "workers = \"two\";\nidempotency = {")
        text += 'queues2 = 1;\n'
        r, path = self._check(text)
        self.assertEqual(r.returncode, 1)
        out = r.stderr
        self.assertRegex(out, r"%s:1: workers: expected an integer" % path)
        self.assertRegex(out, r"%s:4: unknown setting 'visiblity_timeout'.*did you mean "
                              r"'visibility_timeout'" % path)
        self.assertRegex(out, r"%s:5: unknown setting 'queues2'" % path)

    def test_missing_queue_url_and_missing_plugin_file(self):
        text = """idempotency = { dsn = "postgresql://x@127.0.0.1:1/x"; };
plugins = ( { name = "p"; path = "/nonexistent/p.so"; } );
queues = ( { name = "q"; dlq_url = "http://h/1/q-dlq"; plugin = "p"; } );
"""
        r, path = self._check(text)
        self.assertEqual(r.returncode, 1)
        self.assertRegex(r.stderr, r"%s:3: queue 'q': missing required setting 'url'" % path)
        self.assertRegex(r.stderr, r"%s:2: plugin 'p': /nonexistent/p.so: No such file"
                         % path)

    def test_plugin_for_another_abi_is_refused_by_name(self):
        newer = tc.test_plugin(self.env, "newer_major")
        r, path = self._check(self.base(newer))
        self.assertEqual(r.returncode, 1)
        self.assertRegex(r.stderr, r"%s:2: plugin 'p': %s: built for ABI 2\.0, host "
                                   r"supports 1\.0-1\.2" % (path, newer))

    def test_bad_key_template_is_refused(self):
        bad = tc.test_plugin(self.env, "bad_template")
        r, _ = self._check(self.base(bad))
        self.assertEqual(r.returncode, 1)
        self.assertIn("unterminated field", r.stderr)

    def test_version_and_help(self):
        twiced = self.env.binary("twiced")
        r = subprocess.run([twiced, "--version"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"^twiced \d+\.\d+\.\d+ \(plugin ABI 1\.2\)")
        r = subprocess.run([twiced, "--help"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0)
        self.assertIn("-t, --test", r.stdout)
        # twiced(8)'s synopsis names every signal of -s that the usage line names
        signals = re.search(r"-s ([a-z|]+)\]", r.stdout).group(1).split("|")
        self.assertEqual(len(signals), 4, r.stdout)
        with open(os.path.join(self.env.source_dir, "packaging", "man", "twiced.8")) as f:
            man = f.read()
        synopsis = man[man.index(".SH SYNOPSIS"):man.index(".SH DESCRIPTION")]
        line = synopsis[synopsis.index(".B twiced \\-s"):]
        line = line[:line.index(".RB")]
        for name in signals:
            self.assertRegex(line, r"\b%s\b" % name, "twiced(8) SYNOPSIS: -s %s" % name)
        r = subprocess.run([twiced, "--bogus"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)


if __name__ == "__main__":
    unittest.main()
