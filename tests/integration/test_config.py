"""Configurations that are not what a person wrote (a NUL byte from a zero-filled
disk, /dev/zero, a runaway generated file) are refused at once with FILE:LINE by
`twiced -t`, by the daemon at reload (the running workers stay), and by twicectl;
a file with hundreds of problems prints a bounded list that says how many were left
out. A start refused for its configuration exits 78 (EX_CONFIG), one whose store is
not ready exits 1. Uses the fixtures echo_ok, effect_file and newer_major."""

import json
import os
import re
import signal
import subprocess
import tempfile
import unittest

import twicetest
import twiceconf as tc

NUL = "a NUL byte: a configuration is text"
TOO_LARGE = "larger than 4 MiB, the most twice reads of a configuration"
# Generous: each of these ends in well under a second; without the limits they
# ran for minutes or for ever.
AT_ONCE = 20


class Refused(twicetest.TwiceTestCase):
    def base(self):
        return """idempotency = { dsn = "postgresql://nobody@127.0.0.1:1/x"; };
plugins = ( { name = "p"; path = "%s"; } );
queues = ( { name = "q"; url = "http://127.0.0.1:1/0/q"; dlq_url = "http://127.0.0.1:1/0/q-dlq";
  plugin = "p"; } );
""" % tc.test_plugin(self.env, "echo_ok")

    def write(self, data, name="twice.conf"):
        path = os.path.join(tempfile.mkdtemp(dir=self.env.run_dir), name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def check(self, path, aws_env=None):
        """twiced -t; with aws_env, in an environment of those AWS_* variables only."""
        twiced = self.env.binary("twiced")
        penv = None
        if aws_env is not None:
            penv = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
            penv.update(aws_env)
        return subprocess.run([twiced, "-t", "-c", path], stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=AT_ONCE,
                              errors="replace", env=penv)

    def assert_each_refused(self, path, setting, cases, said):
        """For each (value, why) of cases, path holding the base and then setting % value
        (line 5) fails `twiced -t`, which says so at that line: said % why."""
        for value, why in cases:
            with open(path, "w") as f:
                f.write(self.base() + setting % value + "\n")
            r = self.check(path)
            self.assertEqual(r.returncode, 1, value + r.stdout + r.stderr)
            self.assertIn("%s:5: %s" % (path, said % why), r.stderr, value)
            self.assertNotIn("OK", r.stdout)

    def test_nul_between_settings_is_refused_at_its_line(self):
        # As reported: a valid file, a NUL, then a setting that was ignored.
        path = self.write(self.base().encode() + b"\0workers = 999;\n")
        self.assertEqual(self.check(self.write(self.base().encode())).returncode, 0)
        r = self.check(path)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertRegex(r.stderr, r"(?m)^%s:5: %s" % (re.escape(path), NUL))
        self.assertNotIn("OK", r.stdout)

    def test_nul_in_an_included_file_is_refused_at_its_line(self):
        path = self.write(self.base().encode() + b'@include "extra.inc"\n')
        inc = os.path.join(os.path.dirname(path), "extra.inc")
        with open(inc, "wb") as f:
            # in a comment, where libconfig itself skipped it silently
            f.write(b"drain_timeout = 5;\n# zero-filled after a crash: \0\0\0\n")
        r = self.check(path)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertRegex(r.stderr, r"(?m)^%s:2: %s" % (re.escape(inc), NUL))

    def test_a_user_that_does_not_exist_fails_the_check_at_its_line(self):
        """`twiced -t` said OK to `user = "twcie"`, and then twiced refused to start
        ("not starting: user twcie: no such user"): systemctl start failed after the
        check the README has people run first."""
        path = self.write((self.base() + 'workers = 1;\nuser = "twice-no-such-user";\n')
                          .encode())
        r = self.check(path)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertRegex(r.stderr, r"(?m)^%s:6: user twice-no-such-user: no such user$"
                         % re.escape(path))
        self.assertNotIn("OK", r.stdout)

    def test_a_pid_file_the_start_refuses_fails_the_check_at_its_line(self):
        """`twiced -t` said OK to `pid_file = "/run/twice"` (the directory) and to a
        symbolic link, and then twiced refused to start ("not starting: pid_file
        /run/twice: Is a directory"). A pid file not there yet is fine: systemd makes
        /run/twice at the start."""
        path = self.write(self.base().encode())
        top = os.path.dirname(path)
        os.mkdir(os.path.join(top, "run"))
        os.symlink(os.path.join(top, "elsewhere.pid"), os.path.join(top, "link.pid"))
        cases = [('"run"', "%s/run: Is a directory" % top),
                 ('"run/"', "%s/run/: Is a directory" % top),
                 ('"link.pid"', "%s/link.pid: a symbolic link (twiced does not follow one"
                  % top),
                 ('"twice.conf/x.pid"', "%s/twice.conf/x.pid: Not a directory" % top)]
        self.assert_each_refused(path, "pid_file = %s;", cases, "pid_file %s")
        # In an included file, its line there; a file still to be made is fine.
        inc = os.path.join(top, "pid.inc")
        with open(inc, "w") as f:
            f.write('workers = 1;\npid_file = "run";\n')
        with open(path, "w") as f:
            f.write(self.base() + '@include "pid.inc"\n')
        r = self.check(path)
        self.assertIn("%s:2: pid_file %s/run: Is a directory" % (inc, top), r.stderr)
        with open(inc, "w") as f:
            f.write('pid_file = "run/twiced.pid";\n')
        r = self.check(path)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_a_ca_file_twiced_cannot_read_fails_the_check_at_its_line(self):
        """aws.ca_file naming a file not there, or a directory, passed `twiced -t`;
        then every https call to AWS failed its certificate check and the workers
        never became ready. A relative path is taken from the file's directory."""
        path = self.write(self.base().encode())
        top = os.path.dirname(path)
        os.mkdir(os.path.join(top, "certs"))
        with open(os.path.join(top, "ca.pem"), "w") as f:
            f.write("-----BEGIN CERTIFICATE-----\n")  # read by libcurl, not by the check
        cases = [('"missing.pem"', "%s/missing.pem: No such file or directory" % top),
                 ('"certs"', "%s/certs: not a regular file" % top)]
        self.assert_each_refused(path, "aws = { ca_file = %s; };", cases,
                                 "aws.ca_file %s (no https endpoint could be verified)")
        with open(path, "w") as f:
            f.write(self.base() + 'aws = { ca_file = "ca.pem"; };\n')
        r = self.check(path)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_the_region_and_endpoints_of_the_environment_are_checked(self):
        """A region from AWS_REGION or the profile, and an endpoint from AWS_ENDPOINT_URL*,
        passed `twiced -t` unread and failed every worker's first request as a signing or
        endpoint error; the daemon now refuses them too, before it starts anything."""
        path = self.write(self.base().encode())
        nofile = os.path.join(os.path.dirname(path), "no-aws-config")
        rule = "not a region name (lowercase letters, digits and '-', like us-east-1)"
        r = self.check(path, {"AWS_REGION": "us east 1", "AWS_CONFIG_FILE": nofile})
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(r.stderr.strip(), "AWS_REGION=us east 1: " + rule)
        self.assertNotIn("OK", r.stdout)
        # the profile's region, named by its file and section
        conf = os.path.join(os.path.dirname(path), "aws-config")
        with open(conf, "w") as f:
            f.write("[default]\nregion = eu-west-1\n\n[profile ops]\nregion = Frankfurt\n")
        r = self.check(path, {"AWS_CONFIG_FILE": conf, "AWS_PROFILE": "ops"})
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(r.stderr.strip(), "%s, [profile ops] region=Frankfurt: %s"
                         % (conf, rule))
        self.assertEqual(self.check(path, {"AWS_CONFIG_FILE": conf}).returncode, 0)
        # an endpoint; S3's only matters to a queue that keeps payloads there
        bad = {"AWS_REGION": "eu-west-1", "AWS_CONFIG_FILE": nofile,
               "AWS_ENDPOINT_URL": "http://127.0.0.1:1/base",
               "AWS_ENDPOINT_URL_SQS": "http://127.0.0.1:99999"}
        r = self.check(path, bad)
        self.assertEqual(r.stderr.strip(), "AWS_ENDPOINT_URL_SQS: not a usable SQS endpoint "
                         "URL: has a port that is not a number from 1 to 65535")
        del bad["AWS_ENDPOINT_URL_SQS"]
        self.assertEqual(self.check(path, bad).returncode, 0)
        # STS's own, whenever it is set: the credential chain may call STS
        r = self.check(path, dict(bad, AWS_ENDPOINT_URL_STS="sts.local:4566"))
        self.assertEqual(r.stderr.strip(), "AWS_ENDPOINT_URL_STS: not a usable STS endpoint "
                         "URL: must start with http:// or https://")
        # STS reads AWS_ENDPOINT_URL too: checked when SQS does not (aws.endpoint set)
        own = self.write((self.base() + 'aws = { endpoint = "http://127.0.0.1:1"; };\n').encode())
        r = self.check(own, dict(bad, AWS_ENDPOINT_URL="sts.local:4566"))
        self.assertEqual(r.stderr.strip(), "AWS_ENDPOINT_URL: not a usable STS endpoint "
                         "URL: must start with http:// or https://")
        r = self.check(path, dict(bad, AWS_ENDPOINT_URL="sts.local:4566"))
        self.assertEqual(r.stderr.strip(), "AWS_ENDPOINT_URL: not a usable SQS endpoint "
                         "URL: must start with http:// or https://")  # said once
        s3 = self.write(self.base().replace('plugin = "p";',
                                            'plugin = "p"; payload_bucket = "payloads";').encode())
        r = self.check(s3, bad)
        self.assertEqual(r.stderr.strip(), "AWS_ENDPOINT_URL: not a usable S3 endpoint URL: "
                         "has a path after host[:port]")
        # aws.region wins: the environment's is not read, so it is not refused
        good = self.write((self.base() + 'aws = { region = "local"; };\n').encode())
        self.assertEqual(self.check(good, {"AWS_REGION": "us east 1"}).returncode, 0)
        # the daemon refuses to start with what -t refuses, and says why
        d = twicetest.Twiced(self.env, self.base(), extra_env={"AWS_REGION": "us east 1",
                                                                "AWS_CONFIG_FILE": nofile})
        d.start()
        self.assertEqual(d.proc.wait(timeout=AT_ONCE), 78)  # EX_CONFIG, as for the file
        with open(d.log_path) as f:
            self.assertIn("AWS_REGION=us east 1: " + rule, f.read())

    def test_url_settings_are_checked_at_their_line(self):
        """Every URL setting has the queue URL's shape check: a space, a port past
        65535 or an S3 endpoint with a path passed as http(s) and failed later."""
        text = self.base() + """aws = {
  endpoint = "http://127.0.0.1:4566/ x";
  s3_endpoint = "http://127.0.0.1:4566/bucket";
};
tracing = { endpoint = "http://collector:431800/v1/traces"; };
alerts = { webhook = { url = "https:///hook?token=secret"; }; };
"""
        path = self.write(text.encode())
        r = self.check(path)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(r.stderr.strip().split("\n"), [
            "%s:6: aws.endpoint: not a usable endpoint URL: contains a space" % path,
            "%s:7: aws.s3_endpoint: not a usable S3 endpoint URL (http[s]://host[:port]): has "
            "a path after host[:port]" % path,
            "%s:10: alerts.webhook.url: not a usable URL: has no host" % path,
            "%s:9: tracing.endpoint: not a usable URL: has a port that is not a number from 1 "
            "to 65535" % path])
        self.assertNotIn("secret", r.stderr)

    def test_worker_max_rss_takes_a_size_and_refuses_others_at_its_line(self):
        path = self.write(b"")
        for ok in ('"512M"', '"2G"', "268435456", "0"):
            with open(path, "w") as f:
                f.write(self.base() + "worker_max_rss = %s;\n" % ok)
            r = self.check(path)
            self.assertEqual(r.returncode, 0, ok + r.stdout + r.stderr)
        self.assert_each_refused(
            path, "worker_max_rss = %s;",
            [('"512MB"', "'512MB' is not a size (bytes, or a number with K, M or G: \"512M\")"),
             ("512", "512 bytes is out of range (0, or 1M-1024G)"),
             ("true", 'expected a size ("512M") or an integer, got a boolean')],
            "worker_max_rss: %s")

    def test_a_queue_that_polls_another_queues_dlq_is_a_warning(self):
        """A redrive handler polls another queue's DLQ on purpose; a url copied from the
        wrong line does it by mistake. twiced -t says so at the url's line and passes."""
        second = """  plugin = "p"; },
  { name = "redrive"; url = "http://127.0.0.1:1/0/q-dlq";
  dlq_url = "http://127.0.0.1:1/0/r-dlq"; plugin = "p"; } );
"""
        path = self.write(self.base().replace('  plugin = "p"; } );\n', second).encode())
        r = self.check(path)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("warning: %s:5: queue 'redrive': url is the dlq_url of queue 'q' (line 3): "
                      "twiced will run 'q's dead letters through this queue's plugin; right for "
                      "a redrive handler, otherwise set url to another queue" % path, r.stderr)
        self.assertIn("OK", r.stdout)

    def test_dev_zero_ends_at_once(self):
        r = self.check("/dev/zero")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.strip(), "/dev/zero: " + TOO_LARGE + " (with its @include "
                         "files)")
        ctl = subprocess.run([self.env.binary("twicectl"), "-c", "/dev/zero", "status"],
                             stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             timeout=AT_ONCE)
        self.assertEqual(ctl.returncode, 1)
        self.assertIn("/dev/zero: " + TOO_LARGE, ctl.stderr)

    def test_a_50_mb_file_ends_at_once(self):
        line = b"# " + b"x" * 97 + b"\n"
        path = self.write(self.base().encode() + line * (50 * 1024 * 1024 // len(line)))
        r = self.check(path)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.strip(), "%s: %s (with its @include files)" % (path, TOO_LARGE))
        os.unlink(path)

    def test_56000_settings_in_one_group_end_at_once(self):
        # 1 MB: within the size limit, but libconfig took 39 s over it.
        extra = "".join("s%d = 1;\n" % i for i in range(56000))
        text = self.base().replace('path = "', 'settings = {\n%s};\n path = "' % extra)
        path = self.write(text.encode())
        r = self.check(path)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.strip(), "%s:1003: more than 1000 settings in one group: "
                         "twice reads at most that many" % path)

    def test_hundreds_of_problems_are_listed_up_to_50(self):
        text = self.base() + "".join("unknown_%d = %d;\n" % (i, i) for i in range(300))
        path = self.write(text.encode())
        r = self.check(path)
        self.assertEqual(r.returncode, 1)
        lines = r.stderr.strip().split("\n")
        self.assertEqual(len(lines), 51, r.stderr)
        for line in lines[:50]:
            self.assertTrue(line.startswith(path + ":"), line)
        self.assertEqual(lines[50], "... 250 more problems not shown")

    def test_without_proc_the_plugin_check_says_why(self):
        """In a chroot or container without /proc mounted the plugin check only said
        "plugin check failed with exit code 127". twiced now starts its probe from the
        twiced-worker it opened (no /proc needed), and the probe loads each plugin from
        the descriptor its generation keeps, through /proc/self/fd: that is what is
        missing, and it is said at the plugin's line."""
        cmd = ["unshare"] + ([] if os.getuid() == 0 else ["--user", "--map-root-user"])
        cmd += ["--mount", "--propagation", "private"]
        if subprocess.run(cmd + ["true"], capture_output=True).returncode != 0:
            self.skipTest("this machine cannot make a mount namespace (unshare)")
        path = self.write(self.base().encode())
        r = subprocess.run(cmd + ["sh", "-c", 'mount -t tmpfs none /proc && exec "$0" -t -c "$1"',
                                  self.env.binary("twiced"), path],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=AT_ONCE, errors="replace")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        # (a line of its own: a sanitizer build says first that it misses /proc too)
        self.assertRegex(r.stderr, re.compile(r"^%s:\d+: plugin 'p': .*: /proc/self/fd/\d+: "
                                              r"No such file or directory \(is /proc mounted\?\)"
                                              % re.escape(path), re.M))
        self.assertNotIn("exit code 127", r.stderr)

    def start(self, path, mode="-f"):
        """A start of twiced on path, as twice.service's ExecStart runs it (or -d)."""
        return subprocess.run([self.env.binary("twiced"), mode, "-c", path],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=AT_ONCE, errors="replace")

    def test_a_start_the_configuration_refuses_exits_78(self):
        """A start refused for its configuration, a plugin, its user or pid_file exited 1,
        as one whose store is not ready in time does, and twice.service
        (Restart=on-failure, RestartSec=5) started it again every 5 s for ever, filling
        the journal. It exits 78 (EX_CONFIG), which the unit does not restart
        (RestartPreventExitStatus=78), also from -d's foreground process; a store not
        ready within ready_timeout still exits 1, so that systemd tries again while the
        database comes up."""
        base = self.base() + "workers = 1;\n"
        cases = [
            ("syntax", base.replace("workers = 1;", 'workers = "two";'),
             r"(?m)^%s:5: workers: expected an integer"),
            ("plugin", base.replace(tc.test_plugin(self.env, "echo_ok"),
                                    tc.test_plugin(self.env, "newer_major")),
             r"(?m)^%s:2: plugin 'p': .*built for ABI 2\.0"),
            ("user", base + 'user = "twice-no-such-user";\n',
             r"not starting: user twice-no-such-user: no such user"),
            ("pid_file", base + 'pid_file = "run/";\n',
             r"not starting: pid_file \S*/run/: Is a directory"),
        ]
        for what, text, want in cases:
            path = self.write(text.encode())
            for mode in ("-f", "-d") if what == "syntax" else ("-f",):
                r = self.start(path, mode)
                self.assertEqual(r.returncode, 78, "%s %s: %s" % (what, mode, r.stderr))
                self.assertRegex(r.stderr, want % re.escape(path) if "%s" in want else want)
                self.assertIn("not starting", r.stderr)
        # The control: a good file whose store does not answer (the database still
        # starting) fails at ready_timeout with 1, which the unit restarts.
        path = self.write((base + "ready_timeout = 1;\n").encode())
        self.assertEqual(self.check(path).returncode, 0)
        r = self.start(path)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("not started: generation 1 was not ready within ready_timeout", r.stderr)


class ReloadRefused(twicetest.TwiceTestCase):
    def test_a_damaged_or_runaway_file_on_reload_leaves_the_workers_running(self):
        url, dlq = self.queue_pair("cfgtext")
        dsn = self.new_database("cfgtext")
        effects = os.path.join(tempfile.mkdtemp(dir=self.env.run_dir), "effects.txt")
        conf = tc.config(self.env, dsn, [tc.queue("q", url, dlq, "effect-file")],
                         [tc.plugin("effect-file", tc.test_plugin(self.env, "effect_file"),
                                    file=effects)], workers=2)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        workers = d.worker_pids()
        self.assertEqual(len(workers), 2)
        text = d.config_text
        # an @include file that ends inside a comment took the next settings for comment
        inc = os.path.join(os.path.dirname(d.config_path), "tuning.inc")
        with open(inc, "w") as f:
            f.write("drain_timeout = 5;\n/* workers = 1;\n")
        cases = [
            (text.encode() + b"\0workers = 7;\n",
             r"reload: %s:\d+: %s" % (re.escape(d.config_path), NUL)),
            (text.encode() + b"#" * (5 * 1024 * 1024) + b"\n",
             r"reload: %s: %s" % (re.escape(d.config_path), TOO_LARGE)),
            (text.encode() + b'@include "tuning.inc"\nworkers = 7; /* */\n',
             r"reload: %s:2: a /\* comment starts here and is not closed before the end of "
             r"this @include file" % re.escape(inc)),
        ]
        sent = 0
        for data, expect in cases:
            with open(d.config_path, "wb") as f:
                f.write(data)
            mark = d.mark()
            d.signal(signal.SIGHUP)
            d.wait_log(expect, since=mark, timeout=20)
            d.wait_log(r"reload refused \(1 problem\); generation 1 keeps running unchanged",
                       since=mark, timeout=20)
            for _ in range(5):
                self.sqs.send(url, json.dumps({"id": "after-%d" % sent}))
                sent += 1
            twicetest.wait_until(lambda: self._lines(effects) >= sent, timeout=20,
                                 message="the running workers stopped handling messages")
            self.assertEqual(d.worker_pids(), workers, "the workers were replaced")
        self.assertNotIn("generation 2", d.log_text())
        self.assertEqual(d.stop(), 0)

    def test_a_named_pipe_on_reload_is_refused_at_once(self):
        # twice.conf replaced by a FIFO nobody writes to: open() waited for a
        # writer for ever, and the master with it (no reload answer, SIGTERM unheard).
        url, dlq = self.queue_pair("cfgfifo")
        dsn = self.new_database("cfgfifo")
        effects = os.path.join(tempfile.mkdtemp(dir=self.env.run_dir), "effects.txt")
        conf = tc.config(self.env, dsn, [tc.queue("q", url, dlq, "effect-file")],
                         [tc.plugin("effect-file", tc.test_plugin(self.env, "effect_file"),
                                    file=effects)])
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        workers = d.worker_pids()
        os.unlink(d.config_path)
        os.mkfifo(d.config_path)
        r = subprocess.run([self.env.binary("twiced"), "-t", "-c", d.config_path],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=AT_ONCE)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.strip(), "%s: cannot read the configuration: a named pipe "
                         "that nothing writes to" % d.config_path)
        mark = d.mark()
        d.signal(signal.SIGHUP)
        d.wait_log(r"reload: %s: cannot read the configuration: a named pipe"
                   % re.escape(d.config_path), since=mark, timeout=AT_ONCE)
        d.wait_log(r"reload refused \(1 problem\); generation 1 keeps running unchanged",
                   since=mark, timeout=AT_ONCE)
        self.sqs.send(url, json.dumps({"id": "after-fifo"}))
        twicetest.wait_until(lambda: self._lines(effects) >= 1, timeout=20,
                             message="the running workers stopped handling messages")
        self.assertEqual(d.worker_pids(), workers, "the workers were replaced")
        os.unlink(d.config_path)
        self.assertEqual(d.stop(), 0)

    @staticmethod
    def _lines(path):
        if not os.path.exists(path):
            return 0
        with open(path) as f:
            return sum(1 for line in f if line.strip())


if __name__ == "__main__":
    unittest.main()
