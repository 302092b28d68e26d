"""Plugin files that someone other than root (or twiced's own user)
could replace are refused, end to end: by `twiced -t` and by a start of twiced, each
with the reason and the command that fixes it. The cases: a file writable by group or
others, a directory writable by others, a file owned by another non-root user, and
symlinks into (or kept in) a writable directory. Not for the path walk's corner cases
(test-loader does those without a daemon).

The fixture plugin is copied into directories this test makes under the run directory,
so only the modes set here decide.
"""

import os
import pwd
import re
import shutil
import subprocess
import tempfile
import unittest

import twicetest
import twiceconf as tc

PLUGIN = "effect-tx"


class PluginPerms(twicetest.TwiceTestCase):
    def setUp(self):
        super().setUp()
        self.url, self.dlq = self.queue_pair("perms")

    def safe_dir(self, mode=0o755):
        """A new directory only we can write (then chmod'ed to mode); removed after."""
        d = tempfile.mkdtemp(prefix="plugins-", dir=self.env.run_dir)
        os.chmod(d, mode)
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        return d

    def copy_plugin(self, directory, mode=0o644):
        path = os.path.join(directory, "effect_tx.so")
        shutil.copy(tc.test_plugin(self.env, "effect_tx"), path)
        os.chmod(path, mode)
        return path

    def daemon(self, plugin_path):
        conf = tc.config(self.env, self.new_database("perms"),
                         [tc.queue("perms", self.url, self.dlq, PLUGIN)],
                         [tc.plugin(PLUGIN, plugin_path)])
        return self.twiced(conf)

    def refused(self, plugin_path, reason):
        """`twiced -t` and a start both refuse plugin_path saying reason (a regex)."""
        want = re.compile(r"twice\.conf:\d+: plugin '%s': plugin %s: %s"
                          % (PLUGIN, re.escape(plugin_path), reason))
        d = self.daemon(plugin_path)
        r = d.check_config()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertRegex(r.stdout + r.stderr, want)
        # the refusal is the only line: the probe child skips the file, it does not fail
        self.assertEqual(len((r.stdout + r.stderr).splitlines()), 1, r.stdout + r.stderr)
        d.start()
        try:
            code = d.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.fail("twiced started with a refused plugin. Log:\n%s" % d.log_tail())
        self.assertNotEqual(code, 0)
        log = d.log_text()
        self.assertRegex(log, want)
        self.assertIn("not starting", log)
        self.assertNotIn("ready: generation", log)

    def test_refusal_leaves_the_other_plugins_checked(self):
        """A refused file does not stop `twiced -t` from checking the other plugins: one
        run reports both the refused file and another plugin's unknown setting."""
        bad = self.copy_plugin(self.safe_dir(0o777))
        good = tc.test_plugin(self.env, "echo_ok")
        conf = tc.config(self.env, self.new_database("perms"),
                         [tc.queue("perms", self.url, self.dlq, PLUGIN),
                          tc.queue("other", *self.queue_pair("perms-other"), "echo")],
                         [tc.plugin(PLUGIN, bad), tc.plugin("echo", good, no_such_setting="x")])
        r = self.twiced(conf).check_config()
        out = r.stdout + r.stderr
        self.assertEqual(r.returncode, 1, out)
        self.assertRegex(out, r"twice\.conf:\d+: plugin '%s': plugin %s: directory .* is "
                         r"writable by group and others" % (PLUGIN, re.escape(bad)))
        self.assertRegex(out, r"twice\.conf:\d+: plugin 'echo': .*no_such_setting")
        self.assertNotIn("probe:", out)
        self.assertEqual(len(out.splitlines()), 2, out)

    def test_safe_plugin_is_accepted(self):
        """The control: the same file in a directory only we can write is loaded."""
        path = self.copy_plugin(self.safe_dir())
        d = self.daemon(path)
        r = d.check_config()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        d.start()
        d.wait_log(r"ready: generation 1", timeout=20)
        self.assertEqual(d.stop(), 0)

    def test_file_writable_by_group(self):
        path = self.copy_plugin(self.safe_dir(), 0o664)
        self.refused(path, r"file %s is writable by group \(chmod g-w %s\)"
                     % (re.escape(path), re.escape(path)))

    def test_file_writable_by_others(self):
        path = self.copy_plugin(self.safe_dir(), 0o646)
        self.refused(path, r"file %s is writable by others \(chmod o-w %s\)"
                     % (re.escape(path), re.escape(path)))

    def test_directory_writable_by_others(self):
        d = self.safe_dir()
        path = self.copy_plugin(d)
        os.chmod(d, 0o757)
        self.refused(path, r"directory %s is writable by others \(chmod o-w %s\)"
                     % (re.escape(d), re.escape(d)))

    def test_sticky_directory_of_the_file_is_refused_too(self):
        """/tmp-like (1777) is fine above a plugin, never as its own directory."""
        d = self.safe_dir()
        path = self.copy_plugin(d)
        os.chmod(d, 0o1777)
        self.refused(path, r"directory %s is writable by group and others \(sticky, but anyone "
                           r"can add files to it" % re.escape(d))

    def test_file_owned_by_another_user(self):
        if os.geteuid() != 0:
            self.skipTest("needs root to give a file away (CI runs as root)")
        nobody = pwd.getpwnam("nobody").pw_uid
        path = self.copy_plugin(self.safe_dir())
        os.chown(path, nobody, -1)
        self.refused(path, r"file %s is owned by uid %d, not root \(chown root %s\)"
                     % (re.escape(path), nobody, re.escape(path)))

    def test_symlink_into_a_writable_directory(self):
        writable = self.safe_dir()
        target = self.copy_plugin(writable)
        os.chmod(writable, 0o777)
        link = os.path.join(self.safe_dir(), "effect_tx.so")
        os.symlink(target, link)
        self.refused(link, r"directory %s is writable by group and others \(chmod go-w %s\)"
                     % (re.escape(writable), re.escape(writable)))

    def test_symlink_kept_in_a_writable_directory(self):
        """A safe file behind a link that anyone could repoint is refused as well."""
        target = self.copy_plugin(self.safe_dir())
        links = self.safe_dir()
        link = os.path.join(links, "effect_tx.so")
        os.symlink(target, link)
        os.chmod(links, 0o757)
        self.refused(link, r"directory %s is writable by others \(chmod o-w %s\)"
                     % (re.escape(links), re.escape(links)))

    def test_symlink_owned_by_another_user(self):
        if os.geteuid() != 0:
            self.skipTest("needs root to give a symlink away (CI runs as root)")
        nobody = pwd.getpwnam("nobody").pw_uid
        target = self.copy_plugin(self.safe_dir())
        link = os.path.join(self.safe_dir(), "effect_tx.so")
        os.symlink(target, link)
        os.lchown(link, nobody, -1)
        self.refused(link, r"symlink %s is owned by uid %d, not root \(chown -h root %s\)"
                     % (re.escape(link), nobody, re.escape(link)))


if __name__ == "__main__":
    unittest.main()
