"""The operator's handles on a running twiced, the nginx way: the pid file
(pid_file, -p; written by the master, also under -d, refused while a live twiced holds it,
removed at exit), `twiced -s reload|stop|quit|reopen` (reopen: log.file after logrotate),
process titles that say which process is the master, what a signal sent to a worker
instead of the master does, and a start with the standard descriptors closed. Real
servers."""

import grp
import json
import os
import pwd
import re
import signal
import subprocess
import unittest

import twicetest
import twiceconf as tc


def maps(pid):
    """The files pid has mapped (/proc/PID/maps), or "" when it is gone."""
    try:
        with open("/proc/%d/maps" % pid, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def title(pid):
    """What ps shows for pid (its command line), or None when it is gone."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().rstrip(b"\0").replace(b"\0", b" ").decode()
    except OSError:
        return None


def read(path):
    """The text of path, or None when it does not exist."""
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return None


def alive(pid):
    st = twicetest._proc_stat(pid)
    return st is not None


class Operator(twicetest.TwiceTestCase):
    def conf(self, prefix, pid_file="$WORKDIR/twiced.pid", workers=2, drain_timeout=10,
             log_file=None, **plugin_settings):
        self.url, self.dlq = self.queue_pair(prefix)
        self.dsn = self.new_database(prefix)
        self.pg.query(self.dsn, tc.EFFECTS_TABLE)
        self.port = tc.free_port()
        extra = "pid_file = %s;" % tc.quote(pid_file).replace("$$", "$") if pid_file else ""
        return tc.config(self.env, self.dsn,
                         [tc.queue("jobs", self.url, self.dlq, "effect-tx", concurrency=8)],
                         [tc.plugin("effect-tx", tc.test_plugin(self.env, "effect_tx"),
                                    **plugin_settings)],
                         workers=workers, metrics_port=self.port, drain_timeout=drain_timeout,
                         extra=extra, log_file=log_file)

    def ctl(self, d, *args, pid_file=None):
        """twiced -s ...: (exit code, stderr)."""
        cmd = [d.binary, "-c", d.config_path] + (["-p", pid_file] if pid_file else [])
        r = subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=30,
                           env=d.process_env, cwd=d.workdir, stdin=subprocess.DEVNULL)
        return r.returncode, r.stderr

    def effects(self):
        return {r[0] for r in self.pg.query(self.dsn, "SELECT key FROM effects")}

    def test_pid_file_and_signals_by_name(self):
        d = self.start_twiced(self.conf("pidfile"))
        d.wait_log(r"ready: generation 1: 2/2", timeout=30)
        pid_file = os.path.join(d.workdir, "twiced.pid")
        self.assertEqual(read(pid_file), "%d\n" % d.pid)
        # A second twiced with the same pid file is refused, and says by whom.
        other = self.twiced(d.config_text.replace("$", "$$"))
        other.start()
        self.assertEqual(other.proc.wait(timeout=60), 1)
        self.assertIn("not starting: twiced is already running as pid %d (pid file %s)"
                      % (d.pid, pid_file), other.log_text())
        self.assertEqual(read(pid_file), "%d\n" % d.pid, "the refused one left it alone")
        # reload, by name
        mark = d.mark()
        self.assertEqual(self.ctl(d, "-s", "reload"), (0, ""))
        d.wait_log(r"reload done: generation 2 ready", since=mark, timeout=30)
        self.assertEqual(self.ctl(d, "-s", "restart")[0], 2)
        # -t, -s and -d go alone: -t -s reload used to reload without the test
        for args in (("-t", "-s", "reload"), ("-s", "reload", "-d"), ("-d", "-t")):
            code, err = self.ctl(d, *args)
            self.assertEqual(code, 2, args)
            self.assertIn("twiced: -t, -s and -d go alone: give one of them", err)
        self.assertEqual(self.ctl(d, "-s", "reload", pid_file="twiced.pid"), (0, ""),
                         "-p FILE: from the working directory")
        d.wait_log(r"reload done: generation 3 ready", since=mark, timeout=30)
        self.assertNotIn("generation 4", d.log_text()[mark:], "the refused ones sent nothing")
        # stop, by name: drains, exits 0, removes the pid file
        self.assertEqual(self.ctl(d, "-s", "stop"), (0, ""))
        self.assertEqual(d.proc.wait(timeout=30), 0)
        self.assertFalse(os.path.exists(pid_file))
        code, err = self.ctl(d, "-s", "reload")
        self.assertEqual(code, 1)
        self.assertIn("%s: No such file or directory (is twiced running?)" % pid_file, err)
        self.assertIn("pid_file as %s sets it now; a change since twiced started takes effect "
                      "at its next start (give -p with the file it uses)" % d.config_path, err)
        code, err = self.ctl(d, "-s", "reload", pid_file=pid_file)
        self.assertNotIn("pid_file as", err, "given with -p: nothing to say of pid_file")

    def test_reopen_after_logrotate_create_and_copytruncate(self):
        """log.file under logrotate: `create` moves the file away and runs `twiced -s
        reopen` (SIGUSR1), after which the master and every worker write to a new file of
        that name, with no reload and no job lost; `copytruncate` empties it in place,
        and appended lines start at its beginning, not past a hole of NUL bytes."""
        # log.file is the harness's own log (relative: beside the configuration), so
        # wait_log reads what twiced writes there.
        d = self.start_twiced(self.conf("rotate", log_file="twiced.log"))
        d.wait_log(r"ready: generation 1: 2/2", timeout=20)
        workers = d.worker_pids()
        self.sqs.send(self.url, json.dumps({"id": "before"}))
        twicetest.wait_until(lambda: self.effects() == {"effect:before"}, timeout=15)
        rotated = d.log_path + ".1"
        os.rename(d.log_path, rotated)  # logrotate's create: move, then postrotate
        self.assertEqual(self.ctl(d, "-s", "reopen"), (0, ""))
        twicetest.wait_until(lambda: len(re.findall(r"(master|worker)\[\d+\]: log file reopened",
                                                    d.log_text())) == 3, timeout=10,
                             message="the master and both workers reopen:\n" + d.log_text())
        self.assertEqual(d.worker_pids(), workers, "a reopen is not a reload")
        self.sqs.send(self.url, json.dumps({"id": "after"}))
        twicetest.wait_until(lambda: self.effects() == {"effect:before", "effect:after"}, timeout=15)
        for pid in workers:  # a worker's own line lands in the new file
            os.kill(pid, signal.SIGHUP)
        twicetest.wait_until(lambda: d.log_text().count("ignoring SIGHUP") == 2, timeout=10)
        with open(rotated) as f:
            old = f.read()
        self.assertIn("ready: generation 1", old)
        self.assertNotIn("ignoring SIGHUP", old)
        self.assertNotIn("generation 2", d.log_text())
        # copytruncate: copy, then truncate in place; no reopen needed.
        with open(d.log_path, "r+") as f:
            f.truncate(0)
        for pid in workers:
            os.kill(pid, signal.SIGHUP)
        twicetest.wait_until(lambda: d.log_text().count("ignoring SIGHUP") == 2, timeout=10)
        with open(d.log_path, "rb") as f:
            self.assertFalse(f.read().startswith(b"\0"), "no hole before the new lines")
        self.assertEqual(d.stop(), 0)

    def test_the_packaged_logrotate_stanza_rotates_a_running_twiced_log(self):
        """The packages' /etc/logrotate.d/twice (etc/twice.logrotate), pointed at this
        test's directory, pid file and twiced: `logrotate -f` moves the log away and its
        postrotate makes the master and every worker write to a new file of that name;
        with twiced stopped, the rotation still succeeds (nothing to reopen)."""
        logdir = os.path.join(self.env.run_dir, "twiced", twicetest.unique_name("rotate"))
        os.makedirs(logdir, mode=0o755)
        log, pid_file = os.path.join(logdir, "twice.log"), os.path.join(logdir, "twiced.pid")
        conf = self.conf("lrotate", pid_file=pid_file, log_file=log)
        d = self.start_twiced(conf)
        twicetest.wait_until(lambda: "ready: generation 1: 2/2" in (read(log) or ""),
                             timeout=30, message="the log file never said ready")
        with open(os.path.join(self.env.source_dir, "etc", "twice.logrotate")) as f:
            stanza = f.read()
        owner = "%s %s" % (pwd.getpwuid(os.getuid()).pw_name, grp.getgrgid(os.getgid()).gr_name)
        for packaged, here in (("/var/log/twice/", logdir + "/"),
                               ("/run/twice/twiced.pid", pid_file),
                               ("/usr/sbin/twiced", d.binary), ("twice twice", owner)):
            self.assertIn(packaged, stanza)
            stanza = stanza.replace(packaged, here)
        lr_conf = os.path.join(logdir, "logrotate.conf")
        with open(lr_conf, "w") as f:
            f.write(stanza)
        state = os.path.join(logdir, "logrotate.state")

        def logrotate():
            r = subprocess.run(["logrotate", "-f", "-s", state, lr_conf], capture_output=True,
                               text=True, timeout=60, stdin=subprocess.DEVNULL)
            self.assertEqual((r.returncode, r.stderr), (0, ""), r.stdout)

        logrotate()
        with open(log + ".1") as f:
            self.assertIn("ready: generation 1", f.read())
        twicetest.wait_until(lambda: len(re.findall(r"(master|worker)\[\d+\]: log file "
                                                    r"reopened", read(log) or "")) == 3,
                             timeout=10, message="the master and both workers reopen")
        self.sqs.send(self.url, json.dumps({"id": "after"}))
        twicetest.wait_until(lambda: self.effects() == {"effect:after"}, timeout=15)
        for pid in d.worker_pids():  # a worker's own line lands in the new file
            os.kill(pid, signal.SIGHUP)
        twicetest.wait_until(lambda: (read(log) or "").count("ignoring SIGHUP") == 2,
                             timeout=10, message="the workers' lines in the new file")
        self.assertNotIn("ignoring SIGHUP", read(log + ".1"))
        self.assertEqual(d.stop(), 0)
        self.assertFalse(os.path.exists(pid_file))
        logrotate()  # twiced is not running: postrotate must not fail
        self.assertTrue(os.path.exists(log + ".2.gz"), os.listdir(logdir))

    def test_reopen_without_a_log_file_changes_nothing(self):
        """Lines go to standard error: `twiced -s reopen` (or a plain SIGUSR1) neither
        stops twiced nor a worker."""
        d = self.start_twiced(self.conf("noreopen", workers=1))
        d.wait_log(r"ready: generation 1: 1/1", timeout=20)
        workers = d.worker_pids()
        self.assertEqual(self.ctl(d, "-s", "reopen"), (0, ""))
        os.kill(workers[0], signal.SIGUSR1)
        self.sqs.send(self.url, json.dumps({"id": "still"}))
        twicetest.wait_until(lambda: self.effects() == {"effect:still"}, timeout=15)
        self.assertTrue(d.running())
        self.assertEqual(d.worker_pids(), workers)
        self.assertNotIn("killed by signal", d.log_text())
        self.assertEqual(d.stop(), 0)

    def test_stale_pid_file_is_taken_over_and_not_signalled(self):
        conf = self.conf("stale")
        d = self.twiced(conf)
        pid_file = os.path.join(d.workdir, "twiced.pid")
        with open(pid_file, "w") as f:
            f.write("%d\n" % os.getpid())  # a live process, but not a twiced holding it
        code, err = self.ctl(d, "-s", "stop")
        self.assertEqual(code, 1)
        self.assertIn("pid file %s is stale: no twiced holds it" % pid_file, err)
        d.start()
        d.wait_log(r"ready: generation 1", timeout=30)
        self.assertEqual(read(pid_file), "%d\n" % d.pid)
        self.assertEqual(d.stop(), 0)

    def test_no_pid_file_configured(self):
        d = self.twiced(self.conf("nopid", pid_file=None))
        code, err = self.ctl(d, "-s", "reload")
        self.assertEqual(code, 1)
        self.assertIn("%s sets no pid_file; give -p FILE" % d.config_path, err)

    def test_daemon_writes_its_own_pid_and_stops_by_name(self):
        """A relative pid_file is taken from the configuration's directory, wherever twiced
        and twiced -s are started from; -d writes the daemon's pid, not its parent's."""
        d = self.twiced(self.conf("daemon", pid_file="run/twiced.pid"))
        pid_file = os.path.join(d.workdir, "run", "twiced.pid")
        os.makedirs(os.path.dirname(pid_file))
        r = subprocess.run([d.binary, "-d", "-c", d.config_path], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, env=d.process_env,
                           cwd=self.env.run_dir, timeout=90)
        self.assertEqual(r.returncode, 0, r.stderr)
        # no log.file: said before detaching, not discarded with the rest
        self.assertRegex(r.stderr, r"warn master\[\d+\]: log.file is not set: the daemon's log "
                         r"lines \(-d\) are discarded; set log.file in %s"
                         % re.escape(d.config_path))
        pid = int(twicetest.wait_until(lambda: read(pid_file), timeout=10))
        self.addCleanup(lambda: alive(pid) and os.kill(pid, signal.SIGKILL))
        self.assertTrue(alive(pid))
        self.assertEqual(title(pid), "twiced: master")
        r = subprocess.run([d.binary, "-c", d.config_path, "-s", "stop"], capture_output=True,
                           text=True, env=d.process_env, cwd="/", timeout=30)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        twicetest.wait_until(lambda: not alive(pid), timeout=30, message="the daemon did not stop")
        self.assertFalse(os.path.exists(pid_file), "removed at exit, by the daemon")

    def test_a_stop_while_the_plugins_are_checked_is_a_clean_stop(self):
        """SIGTERM while the probe runs a plugin's slow init (30 s): the check is cut short,
        the master says why it stops, leaves no probe, no pid file, and exits 0 at once
        instead of dying by the signal."""
        d = self.start_twiced(self.conf("earlystop", init_sleep_ms=30000))
        pid_file = os.path.join(d.workdir, "twiced.pid")
        [probe] = twicetest.wait_until(
            lambda: [p for p in d.worker_pids() if title(p) == "twiced: probe"], timeout=10,
            message="the probe did not start")
        d.signal(signal.SIGTERM)
        self.assertEqual(d.proc.wait(timeout=15), 0, d.log_tail())
        self.assertRegex(d.log_text(), r"master\[%d\]: SIGTERM while starting: stopping before "
                         r"any worker started\n.*master\[%d\]: stopped\n" % (d.pid, d.pid))
        self.assertFalse(alive(probe), "the probe was left running")
        self.assertFalse(os.path.exists(pid_file))
        self.assertNotIn("not starting", d.log_text())
        self.assertEqual(d.stop(), 0, "no process of twiced's is left")

    def test_a_stop_while_the_first_generation_starts_is_a_clean_stop(self):
        """SIGINT once the master runs and its workers are still in init: they drain, the pid
        file goes, exit 0."""
        d = self.start_twiced(self.conf("startstop", workers=1, init_sleep_ms=1500))
        pid_file = os.path.join(d.workdir, "twiced.pid")
        d.wait_log(r"twiced starting: 1 worker", timeout=30)
        self.assertEqual(read(pid_file), "%d\n" % d.pid)
        d.signal(signal.SIGINT)
        self.assertEqual(d.proc.wait(timeout=30), 0, d.log_tail())
        self.assertIn("stopping: draining 1 worker", d.log_text())
        self.assertFalse(os.path.exists(pid_file))
        self.assertEqual(d.stop(), 0, "no process of twiced's is left")

    def test_a_stop_during_a_reloads_plugin_check_does_not_wait_for_it(self):
        """SIGTERM while a reload's probe runs a plugin's slow init (30 s): the check is
        abandoned, the running generation drains and twiced exits 0 at once, instead of
        a stop that waits out the init (up to the probe's 60 s) first. What the check had
        found wrong by then (another plugin lacks a setting it requires) is logged with
        its FILE:LINE all the same: the abandon used to hide it."""
        d = self.start_twiced(self.conf("reloadstop", workers=1, init_sleep_ms=1))
        d.wait_log(r"ready: generation 1", timeout=30)
        ghost = tc.plugin("ghost", tc.test_plugin(self.env, "effect_file")) + ",\n  "
        with open(d.config_path, "w", encoding="utf-8") as f:
            f.write(d.config_text.replace("init_sleep_ms = 1;", "init_sleep_ms = 30000;")
                    .replace("plugins = ( ", "plugins = ( " + ghost))
        mark = d.mark()
        d.signal(signal.SIGHUP)
        [probe] = twicetest.wait_until(
            lambda: [p for p in d.worker_pids() if title(p) == "twiced: probe"], timeout=10,
            message="the reload's probe did not start")
        # The stop comes once the probe has checked ghost (its problem written) and is in
        # the slow plugin's init: the plugin it checks second is mapped by then.
        twicetest.wait_until(lambda: "effect_tx" in maps(probe), timeout=10,
                             message="the probe did not reach the slow plugin")
        d.signal(signal.SIGTERM)
        self.assertEqual(d.proc.wait(timeout=15), 0, d.log_tail())
        log = d.log_text()
        self.assertRegex(log[mark:], r"reload: %s:\d+: plugin 'ghost': .*\n(.*\n)*.*"
                                     r"reload abandoned: a stop signal came while its plugins "
                                     r"were checked; generation 1 stops unchanged\n"
                         % re.escape(d.config_path))
        self.assertIn("stopping: draining 1 worker", log)
        self.assertNotIn("reload refused", log)
        self.assertFalse(alive(probe), "the probe was left running")
        self.assertEqual(d.stop(), 0, "no process of twiced's is left")

    def test_quit_lets_running_jobs_finish_stop_hands_them_back(self):
        d = self.start_twiced(self.conf("quit", workers=1, drain_timeout=1))
        d.wait_log(r"ready: generation 1", timeout=30)
        for i in range(4):
            self.sqs.send(self.url, json.dumps({"id": "q%d" % i, "sleep_ms": 4000}))
        twicetest.wait_until(lambda: tc.metric_sum(tc.scrape(self.port), "twice_jobs_in_flight")
                             == 4, timeout=20, message="the jobs did not start")
        self.assertEqual(self.ctl(d, "-s", "quit"), (0, ""))
        self.assertEqual(d.proc.wait(timeout=30), 0)
        self.assertEqual(self.effects(), {"effect:q%d" % i for i in range(4)},
                         "quit waited for the running jobs, past drain_timeout")
        self.assertIn("quitting: 1 worker finishes its running jobs", d.log_text())
        self.assertNotIn("giving back", d.log_text())

    def test_titles_say_which_process_is_which(self):
        d = self.start_twiced(self.conf("titles", init_sleep_ms=1500))
        d.wait_log(r"ready: generation 1: 2/2", timeout=30)
        self.assertEqual(title(d.pid), "twiced: master")
        self.assertEqual([title(p) for p in d.worker_pids()],
                         ["twiced: worker (generation 1)"] * 2)
        mark = d.mark()
        d.signal(signal.SIGHUP)  # the probe runs init, which takes 1.5 s here
        probe = twicetest.wait_until(
            lambda: [t for t in map(title, d.worker_pids()) if t == "twiced: probe"], timeout=10,
            message="no probe seen")
        self.assertEqual(probe, ["twiced: probe"])
        d.wait_log(r"reload done: generation 2 ready", since=mark, timeout=30)
        twicetest.wait_until(lambda: [title(p) for p in d.worker_pids()] ==
                             ["twiced: worker (generation 2)"] * 2, timeout=30)
        self.assertEqual(d.stop(), 0)

    def test_signals_sent_to_a_worker_are_named_and_it_is_replaced(self):
        d = self.start_twiced(self.conf("worker-term", workers=1))
        d.wait_log(r"ready: generation 1: 1/1", timeout=30)
        [worker] = d.worker_pids()
        os.kill(worker, signal.SIGHUP)
        d.wait_log(r"worker\[%d\]: ignoring SIGHUP from pid %d \(python3\): reloading is the "
                   r"master's \(twiced -s reload" % (worker, os.getpid()), timeout=10)
        self.assertEqual(d.worker_pids(), [worker], "a HUP to a worker changes nothing")
        os.kill(worker, signal.SIGTERM)
        d.wait_log(r"worker\[%d\]: SIGTERM from pid %d \(python3\), not from the master: this "
                   r"worker drains and exits, and the master starts another in its place"
                   % (worker, os.getpid()), timeout=10)
        d.wait_log(r"worker %d \(generation 1\) drained and exited: pid %d, not the master, sent "
                   r"it a stop signal; starting another in its place" % (worker, os.getpid()),
                   timeout=30)
        [replacement] = twicetest.wait_until(
            lambda: [p for p in d.worker_pids() if p != worker], timeout=10)
        self.assertNotRegex(d.log_text(), r"exited; starting another in its place in")
        self.assertEqual(tc.metric_sum(tc.scrape(self.port), "twice_worker_restarts_total",
                                       cause="stopped"), 1)
        self.sqs.send(self.url, json.dumps({"id": "after"}))
        twicetest.wait_until(lambda: self.effects() == {"effect:after"}, timeout=30)
        self.assertEqual(d.stop(), 0)

    def test_a_log_file_that_cannot_be_written_is_refused_before_the_start(self):
        # log.file in a directory that does not exist, or naming a directory: twiced -t
        # points at its line, and twiced does not start, in the foreground or detached
        # (where, once detached, not one line would be seen), saying why on stderr.
        missing = os.path.join(self.env.run_dir, twicetest.unique_name("nodir"), "twiced.log")
        for path in (missing, self.env.run_dir):
            conf = self.conf("logcheck", pid_file=None, workers=1).replace(
                "log = { ", "log = {\n    file = %s; " % tc.quote(path), 1)
            d = self.twiced(conf)
            r = d.check_config()
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertRegex(r.stdout + r.stderr, r"^%s:4: log.file %s: cannot be written: "
                             % (re.escape(d.config_path), re.escape(path)))
            for mode in ("-f", "-d"):
                r = subprocess.run([d.binary, mode, "-c", d.config_path], capture_output=True,
                                   text=True, env=d.process_env, cwd=d.workdir, timeout=30,
                                   stdin=subprocess.DEVNULL)
                # 78 (EX_CONFIG): a restart meets it again (twice.service does not)
                self.assertEqual(r.returncode, 78, r.stderr)
                self.assertRegex(r.stderr, r"not starting: log.file %s: (No such file or "
                                 r"directory|Is a directory)" % re.escape(path))
            self.assertFalse(os.path.exists(missing))

    def test_a_named_pipe_log_file_needs_its_reader(self):
        """log.file naming a named pipe (a log shipper's) that no process reads: twiced -t
        points at its line and says so, and twiced does not start, naming the line too,
        rather than passing the check and failing at the start. With a reader, the
        check passes and twiced logs through the pipe."""
        fifo = os.path.join(self.env.run_dir, twicetest.unique_name("logpipe"))
        os.mkfifo(fifo)
        self.addCleanup(os.remove, fifo)
        conf = self.conf("logpipe", pid_file=None, workers=1).replace(
            "log = { ", "log = {\n    file = %s; " % tc.quote(fifo), 1)
        d = self.twiced(conf)
        where = r"%s:4: log.file %s: cannot be written: a named pipe that no process reads" % (
            re.escape(d.config_path), re.escape(fifo))
        r = d.check_config()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertRegex(r.stdout + r.stderr, "^" + where)
        r = subprocess.run([d.binary, "-f", "-c", d.config_path], capture_output=True,
                           text=True, env=d.process_env, cwd=d.workdir, timeout=30,
                           stdin=subprocess.DEVNULL)
        self.assertEqual(r.returncode, 78, r.stderr)
        self.assertRegex(r.stderr, where)
        self.assertIn("not starting: log.file %s: a named pipe that no process reads" % fifo,
                      r.stderr)
        # A reader (non-blocking, so it never waits for a writer) drains the pipe.
        rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        self.addCleanup(os.close, rfd)
        got = bytearray()

        def drained():
            while True:
                try:
                    chunk = os.read(rfd, 65536)
                except BlockingIOError:
                    break
                if not chunk:
                    break
                got.extend(chunk)
            return got.decode(errors="replace")

        r = d.check_config()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        d = self.start_twiced(conf)
        twicetest.wait_until(lambda: "ready: generation 1" in drained(), timeout=30,
                             message="no ready line through the pipe")
        self.assertEqual(d.stop(), 0)

    def test_a_log_file_gone_at_reload_is_reported_where_logging_goes_on(self):
        # The log file's directory is removed, then a reload: the master cannot
        # reopen log.file and logs to stderr from then on. The line that says so
        # must be on stderr too, not in the unlinked file nobody can read.
        logdir = os.path.join(self.env.run_dir, "twiced", twicetest.unique_name("logs"))
        os.makedirs(logdir)
        path = os.path.join(logdir, "twiced.log")
        conf = self.conf("logfile", pid_file=None, workers=1).replace(
            "log = { ", "log = { file = %s; " % tc.quote(path), 1)
        d = self.start_twiced(conf)
        twicetest.wait_until(lambda: "ready: generation 1" in (read(path) or ""), timeout=30,
                             message="the log file never said ready")
        os.remove(path)
        os.rmdir(logdir)
        mark = d.mark()
        d.signal(signal.SIGHUP)
        d.wait_log(r"reload done: generation 2 ready", since=mark, timeout=30)
        self.assertRegex(d.log_text()[mark:], r"master\[%d\]: log.file %s: No such file or "
                         r"directory \(logging to stderr\)" % (d.pid, re.escape(path)))
        self.assertEqual(d.stop(), 0)

    def test_a_log_file_that_refuses_lines_is_said_once_on_stderr(self):
        # A full disk: every write to log.file fails (/dev/full answers ENOSPC).
        # twiced works on, and each process says so once on stderr instead of
        # losing its lines in silence, not once per line.
        conf = self.conf("logfull", pid_file=None, workers=1).replace(
            "log = { level = \"info\"", "log = { file = \"/dev/full\"; level = \"debug\"", 1)
        self.assertIn("/dev/full", conf)
        d = self.start_twiced(conf)
        notice = r"log.file: writing failed \(No space left on device\): lines are lost"
        d.wait_log(notice, timeout=30)
        twicetest.wait_until(lambda: tc.http_status(self.port, "/readyz")[0] == 200,
                             timeout=30, message="not ready")
        before = len(re.findall(notice, d.log_text()))
        for i in range(0, 20, 10):
            self.sqs.send_batch(self.url, [json.dumps({"id": "full%d" % n})
                                           for n in range(i, i + 10)])
        twicetest.wait_until(lambda: self.pg.query(self.dsn, "SELECT count(*) FROM effects")
                             [0][0] == 20, timeout=30, message="the jobs did not run")
        self.assertEqual(len(re.findall(notice, d.log_text())), before,
                         "said once per process, not once per line")
        self.assertLessEqual(before, 3, "the master, the probe and the worker at most")
        self.assertEqual(d.stop(), 0)

    def test_closed_standard_descriptors_at_start(self):
        """`twiced -f >&- <&- 2>&-` (a supervisor or a script that closes them): the
        configuration's snapshot took descriptor 1, which the probe child points at its
        stderr, and twiced exited 1 ("cannot read the configuration: Bad file
        descriptor"), said nowhere. It runs, logging to log.file."""
        conf = self.conf("closedfds", pid_file=None, workers=1).replace(
            "log = { level", "log = { file = \"$WORKDIR/twiced.log\"; level", 1)
        d = self.twiced(conf)
        self.assertIn(d.log_path, d.config_text)

        def close_std():
            for fd in (0, 1, 2):
                os.close(fd)
        d.proc = subprocess.Popen([d.binary, "-f", "-c", d.config_path], env=d.process_env,
                                  cwd=d.workdir, start_new_session=True, preexec_fn=close_std)
        d.wait_log(r"ready: generation 1: 1/1", timeout=30)
        self.sqs.send(self.url, json.dumps({"id": "closed-fds"}))
        twicetest.wait_until(lambda: self.effects() == {"effect:closed-fds"}, timeout=30,
                             message="the job did not run")
        self.assertEqual(d.stop(), 0)


if __name__ == "__main__":
    unittest.main()
