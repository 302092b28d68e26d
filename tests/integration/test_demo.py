"""The README's first command, scripts/demo.sh, does what README.md says it does.

demo.sh installs, builds and starts the servers, then runs scripts/demo.py; this test runs
demo.py against the servers the test run already has and this tree's build, and checks
its report: each job done once, each re-sent duplicate skipped, both poison messages in
the dead-letter queue with their reasons, one email, one CRM request, the matches
computed, and twiced stopping cleanly. A newcomer's first command that rots is found here,
not by the newcomer. Run twice against one set of servers (CI's stages), so the demo must
count only its own run's mail and requests."""

import os
import re
import subprocess
import sys
import tempfile
import unittest

import twicetest

EXPECTED = [
    ("welcome Ana", r"done \(key welcome-email:42\)"),
    (r"welcome Ana again \(a re-sent message\)", r"duplicate, skipped \(duplicate: key completed"),
    ("recompute role 7 v3", r"done \(key match-recompute:7:3\)"),
    ("recompute role 7 v3 again", r"duplicate, skipped"),
    ("sync candidate 42 v9", r"done \(key sync:candidate:42:9\)"),
    ("sync candidate 42 v9 again", r"duplicate, skipped"),
    ("poison: welcome without an email", r"dead-lettered \(rejected\): message has no email"),
    ("poison: not JSON at all", r"dead-lettered \(invalid-json\): routing by type: "),
]


class DemoTest(unittest.TestCase):
    def test_the_demo_reports_each_message_as_readme_says(self):
        env = twicetest.Env()
        with tempfile.TemporaryDirectory(prefix="twice-demo-test.") as run_dir:
            p = subprocess.run([sys.executable, os.path.join(env.source_dir, "scripts", "demo.py"),
                                "--build", os.environ["TWICE_BUILD_DIR"], "--run-dir", run_dir],
                               capture_output=True, text=True, timeout=150)
        out = p.stdout
        self.assertEqual(p.returncode, 0, out + p.stderr)
        for label, fate in EXPECTED:
            self.assertRegex(out, r"\n  %s +[0-9a-f]{8}  %s" % (label, fate), out)
        self.assertIn("Dead-letter queue (2 messages):", out)
        self.assertRegex(out, r"reason=rejected  message has no email")
        self.assertRegex(out, r"reason=invalid-json  routing by type")
        self.assertIn("Emails to ana@example.com: 1 (subject 'Welcome, Ana!')", out)
        self.assertIn("Requests the CRM received: 1 [('PUT', '/demo/crm/candidate/42', "
                      "'sync:candidate:42:9')]", out)
        self.assertIn("Matches of role 7: candidate 1: 1.0000, candidate 2: 0.6667", out)
        self.assertRegex(out, r"twiced exited with 0")
        self.assertEqual(len(re.findall(r"\n  (welcome|recompute|sync|poison)", out)), 8, out)


if __name__ == "__main__":
    unittest.main()
