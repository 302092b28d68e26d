"""The bundled exec plugin run by twiced with real handler programs: the SDK's Python
example handles 200 messages with 50 duplicate intents with exactly 150 effects; a
handler killed mid-job is restarted and the job retried, with one effect; a handler
printing non-JSON has its job retried, then dead-lettered after max_attempts with the
reason; a late stray answer of one job never completes the next (message_id echoed); a
handler that exits between jobs while a child of its holds its stdout is replaced before
the next job, which it would have cost an attempt; a handler whose stderr is redirected
is kept; a megabyte on stderr stalls nothing and is
logged with the job's context;
handler processes, and the helpers they started, end with their worker (drained, reloaded
or killed outright) and leave no
zombie; a bad setting is refused by `twiced -t` at the FILE:LINE that sets it, in an
@include file too.
Handlers: sdk/examples/exec-handler.py and plugins/exec/tests/handlers/behave.py."""

import json
import os
import random
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import settingcheck
import twicetest
import twiceconf as tc


def alive(pid):
    """Running, and not a zombie either."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def children(parent):
    """(pid, name) of the running children of process parent."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    name, fields = f.read().split("(", 1)[1].rsplit(")", 1)
                    fields = fields.split()
            except (OSError, ValueError):
                continue
            if int(fields[1]) == parent and fields[0] not in ("Z", "X"):
                out.append((int(entry), name))
    return out


def _descendants(root):
    """(pid, stat fields after the name) of every descendant of process root, zombies
    included."""
    procs = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    procs[int(entry)] = f.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
    out, todo = [], [root]
    while todo:
        parent = todo.pop()
        for pid, st in procs.items():
            if int(st[1]) == parent:
                out.append((pid, st))
                todo.append(pid)
    return out


def handler_pids(parent):
    """Pids of the running children of process parent (a worker's handlers), without
    each one's guard (twice-guard: it kills the handler's group when the worker dies)."""
    return sorted(pid for pid, name in children(parent) if name != "twice-guard")


class ExecPlugin(settingcheck.SettingRefusal, twicetest.TwiceTestCase):
    def setUp(self):
        super().setUp()
        self.dir = tempfile.mkdtemp(dir=self.env.run_dir)
        os.chmod(self.dir, 0o755)
        self.behave = os.path.join(self.env.source_dir, "plugins", "exec", "tests", "handlers",
                                   "behave.py")
        self.example = os.path.join(self.env.source_dir, "sdk", "examples", "exec-handler.py")

    def plugin(self, command, **settings):
        settings.setdefault("directory", self.dir)
        return tc.plugin("x", os.path.join(self.env.plugin_build_dir, "exec.so"),
                         command=command, **settings)

    def config(self, plugin, prefix, **options):
        url, dlq = self.queue_pair(prefix)
        dsn = self.new_database(prefix)
        opts = {"concurrency": 4, "max_attempts": 5, "backoff": (1, 2)}
        opts.update(options)
        return url, dlq, dsn, tc.config(self.env, dsn, [tc.queue(prefix, url, dlq, "x", **opts)],
                                        [plugin])

    def start(self, plugin, prefix="exec", **options):
        url, dlq, dsn, conf = self.config(plugin, prefix, **options)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=30)
        return url, dlq, dsn, d

    def drained(self, url, timeout=60):
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=timeout,
                             message="the queue was not drained")

    def lines(self, name):
        try:
            with open(os.path.join(self.dir, name)) as f:
                return f.read().splitlines()
        except FileNotFoundError:
            return []

    def test_python_example_exact_effects(self):
        url, dlq, dsn, d = self.start(self.plugin("python3 -u " + self.example,
                                                  key="order:{orderId}"))
        ids = list(range(150)) + [random.randrange(150) for _ in range(50)]
        random.shuffle(ids)
        bodies = [json.dumps({"orderId": i, "amount": i, "quantity": 2}) for i in ids]
        for i in range(0, len(bodies), 10):
            self.sqs.send_batch(url, bodies[i:i + 10])
        twicetest.wait_until(lambda: len(self.lines("orders.log")) >= 150, timeout=90,
                             message="150 orders")
        self.drained(url)
        time.sleep(1)
        orders = self.lines("orders.log")
        self.assertEqual(len(orders), 150, "one effect per intent, none twice")
        self.assertEqual(set(orders), {"order:%d %d" % (i, 2 * i) for i in range(150)})
        self.assertLessEqual(len(handler_pids(d.worker_pids()[0])), 4,
                             "at most one handler per running job")
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        self.assertEqual(d.stop(), 0)

    def test_relative_paths_mean_the_configuration_directory(self):
        """twiced works in its configuration's directory, in front, with -d and under
        systemd alike, so a relative exec command and log.file mean the same to twiced -t
        run from / and to a daemon started from elsewhere (-d used to move it to /, where
        every worker failed to start). A relative -p stays where twiced was started."""
        plugin = tc.plugin("x", os.path.join(self.env.plugin_build_dir, "exec.so"),
                           command="./handler.py", key="order:{orderId}")
        url, dlq, dsn, conf = self.config(plugin, "execrel")
        d = self.twiced(conf.replace("log = {", 'log = { file = "daemon.log";', 1))
        handler = os.path.join(d.workdir, "handler.py")
        shutil.copy(self.example, handler)
        os.chmod(handler, 0o755)
        r = subprocess.run([d.binary, "-t", "-c", d.config_path], capture_output=True, text=True,
                           env=d.process_env, cwd="/", timeout=60)
        self.assertEqual((r.returncode, r.stderr), (0, ""), r.stdout)
        pid_file = os.path.join(self.dir, "rel.pid")
        r = subprocess.run([d.binary, "-d", "-c", d.config_path, "-p", "rel.pid"],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           env=d.process_env, cwd=self.dir, timeout=90)
        self.assertEqual(r.returncode, 0, r.stderr)
        pid = int(twicetest.wait_until(lambda: os.path.exists(pid_file) and open(pid_file).read(),
                                       timeout=10))
        self.addCleanup(lambda: os.path.exists("/proc/%d" % pid) and os.kill(pid, signal.SIGKILL))
        self.sqs.send_batch(url, [json.dumps({"orderId": i, "amount": 3}) for i in range(5)])
        orders = os.path.join(d.workdir, "orders.log")
        twicetest.wait_until(lambda: os.path.exists(orders) and len(open(orders).readlines()) == 5,
                             timeout=60, message="the handler ran from the configuration's directory")
        self.drained(url)
        with open(os.path.join(d.workdir, "daemon.log")) as f:
            log = f.read()
        self.assertIn("ready: generation 1", log)
        self.assertNotIn("worker not started", log)
        r = subprocess.run([d.binary, "-s", "stop", "-p", pid_file], capture_output=True,
                           text=True, env=d.process_env, cwd="/", timeout=30)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        twicetest.wait_until(lambda: not os.path.exists("/proc/%d" % pid), timeout=30,
                             message="the daemon did not stop")
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))

    def test_killed_mid_job_is_restarted_and_retried(self):
        url, dlq, dsn, d = self.start(self.plugin("python3 -u " + self.behave, key="k:{id}"))
        pid_file, effects = os.path.join(self.dir, "pid"), os.path.join(self.dir, "effects")
        self.sqs.send(url, json.dumps({"id": 1, "do": "sleep", "seconds": 30, "on_attempt": [1],
                                       "pid_file": pid_file, "effect": effects}))
        twicetest.wait_until(lambda: self.lines("pid"), timeout=30,
                             message="the handler started the job")
        first = int(self.lines("pid")[0])
        os.kill(first, signal.SIGKILL)
        d.wait_log(r"handler %d was killed by signal 9 \(Killed\) before answering" % first,
                   timeout=20)
        twicetest.wait_until(lambda: self.lines("effects"), timeout=30,
                             message="the job retried")
        self.drained(url)
        self.assertEqual(self.lines("effects"), ["k:1"], "one effect")
        self.assertNotEqual(int(self.lines("pid")[0]), first, "a new handler process")
        self.assertFalse(alive(first), "the killed handler was reaped")
        self.assertEqual(d.stop(), 0)

    def test_garbage_is_retried_then_dead_lettered(self):
        url, dlq, dsn, d = self.start(self.plugin("python3 -u " + self.behave, key="k:{id}"),
                                      max_attempts=3)
        self.sqs.send(url, json.dumps({"id": 2, "do": "garbage"}))
        letters = []
        twicetest.wait_until(lambda: letters.extend(self.sqs.receive(dlq, visibility=60)) or
                             letters, timeout=60, message="a dead letter")
        attrs = letters[0]["MessageAttributes"]
        self.assertEqual(attrs["twice-reason"]["StringValue"], "max-attempts")
        self.assertRegex(attrs["twice-error"]["StringValue"],
                         r"handler \d+ answered something that is not JSON: 'this is not JSON'")
        # the last attempt's line may follow its dead letter by a moment
        twicetest.wait_until(lambda: set(re.findall(r" attempt=(\d): .*not JSON",
                                                    d.log_text())) == {"1", "2", "3"},
                             timeout=10, message="three attempts, each on a fresh handler")
        self.assertEqual(d.stop(), 0)

    def test_a_handler_slower_to_start_than_its_timeout_does_its_jobs(self):
        """Every handler process takes 3 s to start and the timeout is 1 s: the default
        start_timeout lets each process's first job finish, on its first attempt."""
        url, dlq, dsn, d = self.start(self.plugin("python3 -u " + self.behave, key="k:{id}",
                                                  env="START_DELAY=3 LANG=C", timeout=1))
        effects = os.path.join(self.dir, "effects")
        self.sqs.send_batch(url, [json.dumps({"id": i, "effect": effects}) for i in range(6)])
        twicetest.wait_until(lambda: len(self.lines("effects")) == 6, timeout=60,
                             message="every job done")
        self.drained(url)
        self.assertEqual(sorted(self.lines("effects")), ["k:%d" % i for i in range(6)])
        self.assertNotIn("did not answer", d.log_text())
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        self.assertEqual(d.stop(), 0)

    def test_a_late_stray_answer_never_completes_the_next_job(self):
        """The handler answers job 1, then writes a second answer 2 s later, while job 2
        (which it would reject) already waits in the same process for its answer. The
        stray line echoes job 1's message_id: it is not taken as job 2's answer (which
        deleted job 2 unhandled); the handler is restarted, job 2 retried and rejected to
        the dead-letter queue."""
        url, dlq, dsn, d = self.start(self.plugin("python3 -u " + self.behave, key="k:{id}",
                                                  processes=1), concurrency=1)
        effects = os.path.join(self.dir, "effects")
        self.sqs.send(url, json.dumps({"id": 1, "do": "stray", "seconds": 2, "effect": effects}))
        twicetest.wait_until(lambda: self.lines("effects"), timeout=30,
                             message="job 1 answered")
        self.sqs.send(url, json.dumps({"id": 2, "do": "reject"}))
        letters = []
        twicetest.wait_until(lambda: letters.extend(self.sqs.receive(dlq, visibility=60)) or
                             letters, timeout=60, message="job 2 dead-lettered")
        self.assertEqual(json.loads(letters[0]["Body"])["id"], 2)
        self.assertEqual(letters[0]["MessageAttributes"]["twice-error"]["StringValue"],
                         "no such customer")
        log = d.log_text()
        self.assertRegex(log, r"key=k:2 attempt=1: .*handler \d+ answered for another job "
                              r"\(message_id '[^']+', not this job's '[^']+'; restarted\)")
        self.drained(url)
        self.assertEqual(self.lines("effects"), ["k:1"])
        self.assertEqual(d.stop(), 0)

    def test_a_handler_gone_while_its_child_holds_stdout_is_replaced(self):
        """The handler answers job 1 and exits, leaving a helper process it started
        (which inherited its stdout) running. Its end is seen while it is idle: job 2
        goes to a new process and is done on its first attempt (it used to be sent to
        the dead handler and wait out the timeout: "did not answer within 20 s"), and
        the helper, of the handler's process group, is killed with it."""
        url, dlq, dsn, d = self.start(self.plugin("python3 -u " + self.behave, key="k:{id}",
                                                  timeout=20, start_timeout=0), concurrency=1)
        effects, child = os.path.join(self.dir, "effects"), os.path.join(self.dir, "child")
        self.sqs.send(url, json.dumps({"id": 1, "effect": effects, "exit_after": True,
                                       "background": 60, "child_pid_file": child}))
        d.wait_log(r"exec handler \d+ exited with status 0 while idle", timeout=30)
        twicetest.wait_until(lambda: not alive(int(self.lines("child")[0])), timeout=10,
                             message="the helper was killed with the handler")
        t0 = time.monotonic()
        self.sqs.send(url, json.dumps({"id": 2, "effect": effects}))
        twicetest.wait_until(lambda: len(self.lines("effects")) == 2, timeout=30,
                             message="job 2 done")
        self.assertLess(time.monotonic() - t0, 15)
        self.drained(url)
        self.assertNotIn("did not answer", d.log_text())
        self.assertNotIn("key=k:2 attempt=2", d.log_text())
        self.assertEqual(d.stop(), 0)

    def pid1_wrapper(self):
        """A script that runs twiced as PID 1 of a new PID namespace, as a container
        without an init does (the namespace's init killed with it); None where this
        machine cannot make one."""
        cmd = ["unshare"] + ([] if os.getuid() == 0 else ["--user", "--map-root-user"])
        cmd += ["--pid", "--fork", "--mount-proc", "--kill-child"]
        if subprocess.run(cmd + ["true"], capture_output=True).returncode != 0:
            return None
        wrapper = os.path.join(self.dir, "pid1.sh")
        with open(wrapper, "w") as f:
            f.write('#!/bin/sh\nexec %s -- %s "$@"\n' % (" ".join(cmd),
                                                        self.env.binary("twiced")))
        os.chmod(wrapper, 0o755)
        return wrapper

    def test_as_pid_1_orphans_are_reaped_and_signals_reach_the_master(self):
        """twiced as a container's PID 1 (etc/kubernetes runs it so): the helper a
        handler leaves behind when it exits is reparented to PID 1 and killed with the
        handler's group; it must be reaped, not left a zombie (zombies fill a pod's PID
        limit until no fork works). SIGHUP and SIGTERM sent to PID 1 reach the master:
        a reload, then a clean stop with exit status 0."""
        wrapper = self.pid1_wrapper()
        if wrapper is None:
            self.skipTest("this machine cannot make a PID namespace (unshare)")
        url, dlq, dsn, conf = self.config(self.plugin("python3 -u " + self.behave, key="k:{id}",
                                                      start_timeout=0), "pid1", concurrency=1)
        d = self.start_twiced(conf, binary=wrapper)
        d.wait_log(r"ready: generation 1", timeout=30)
        init = [pid for pid, _ in children(d.pid)]
        self.assertEqual(len(init), 1, "unshare's one child is the namespace's PID 1")
        init = init[0]
        effects = os.path.join(self.dir, "effects")
        self.sqs.send(url, json.dumps({"id": 1, "effect": effects, "exit_after": True,
                                       "background": 60,
                                       "child_pid_file": os.path.join(self.dir, "child")}))
        d.wait_log(r"exec handler \d+ exited with status 0 while idle", timeout=30)
        self.drained(url)

        def zombies():
            return ["pid %d, parent %s" % (pid, st[1]) for pid, st in _descendants(d.pid)
                    if st[0] == "Z"]

        twicetest.wait_until(lambda: not zombies(), timeout=10,
                             message="zombies under PID 1 reaped: %s" % (zombies(),))
        self.assertEqual(self.lines("effects"), ["k:1"])
        mark = d.mark()
        os.kill(init, signal.SIGHUP)
        d.wait_log(r"reload done: generation 2 ready", since=mark, timeout=30)
        os.kill(init, signal.SIGTERM)
        self.assertEqual(d.proc.wait(timeout=30), 0, d.log_tail())
        self.assertRegex(d.log_text()[mark:], r"worker \d+ \(generation 2\) drained and exited")

    def test_a_handler_with_its_stderr_redirected_is_kept(self):
        """A wrapper sends the handler's stderr to its own file: the closed pipe is no
        death, and one process does every job, none killed."""
        wrapper = os.path.join(self.dir, "wrapper.sh")
        with open(wrapper, "w") as f:
            f.write("#!/bin/sh\nexec python3 -u %s 2>>%s/own.log\n" % (self.behave, self.dir))
        os.chmod(wrapper, 0o755)
        url, dlq, dsn, d = self.start(self.plugin(wrapper, key="k:{id}"), concurrency=1)
        pid_file = os.path.join(self.dir, "pid")
        pids = set()
        for i in range(4):
            self.sqs.send(url, json.dumps({"id": i, "pid_file": pid_file}))
            self.drained(url)
            pids.add(int(self.lines("pid")[0]))
            time.sleep(0.5)  # idle: the supervisor watches it
        self.assertEqual(len(pids), 1, "one handler process did every job")
        self.assertNotIn("killed", d.log_text())
        self.assertEqual(d.stop(), 0)

    def test_a_megabyte_of_stderr_stalls_nothing(self):
        url, dlq, dsn, d = self.start(self.plugin("python3 -u " + self.behave, key="k:{id}"),
                                      concurrency=2)
        effects = os.path.join(self.dir, "effects")
        t0 = time.monotonic()
        self.sqs.send(url, json.dumps({"id": 1, "do": "stderr", "bytes": 1 << 20,
                                       "effect": effects}))
        self.sqs.send_batch(url, [json.dumps({"id": i, "effect": effects})
                                  for i in range(2, 12)])
        twicetest.wait_until(lambda: len(self.lines("effects")) == 11, timeout=60,
                             message="every job done")
        self.assertLess(time.monotonic() - t0, 45)
        log = d.log_text()
        self.assertGreaterEqual(log.count("stderr: " + "x" * 99), 10000, "every line logged")
        self.assertRegex(log, r"queue=exec msg=\S+ plugin=x key=k:1 attempt=1: handler \d+ "
                              r"stderr: x{99}\n", "with the job's context")
        self.assertEqual(d.stop(), 0)

    def test_handlers_end_with_their_worker(self):
        url, dlq, dsn, conf = self.config(self.plugin("python3 -u " + self.behave, key="k:{id}"),
                                          "life")
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=30)
        self.sqs.send_batch(url, [json.dumps({"id": i, "do": "sleep", "seconds": 0.5})
                                  for i in range(4)])
        self.drained(url)
        worker = d.worker_pids()[0]
        first = handler_pids(worker)
        self.assertTrue(first, "handlers are running")
        # A reload: the old worker drains, its handlers end; the new one starts its own.
        mark = d.mark()
        d.signal(signal.SIGHUP)
        d.wait_log(r"ready: generation 2", timeout=30, since=mark)
        twicetest.wait_until(lambda: not any(alive(p) for p in first), timeout=15,
                             message="the old generation's handlers ended")
        self.sqs.send(url, json.dumps({"id": 9}))
        self.drained(url)
        worker = d.worker_pids()[0]
        second = handler_pids(worker)
        self.assertTrue(second)
        # A worker killed outright: its handlers die with it (no orphan, no zombie).
        os.kill(worker, signal.SIGKILL)
        twicetest.wait_until(lambda: not any(alive(p) for p in second), timeout=15,
                             message="the killed worker's handlers ended")
        d.wait_log(r"ready", timeout=30, since=mark)
        self.sqs.send(url, json.dumps({"id": 10}))
        self.drained(url)
        third = handler_pids(d.worker_pids()[0])
        self.assertEqual(d.stop(), 0)
        self.assertFalse(any(alive(p) for p in third), "stopped: every handler ended")

    def test_a_killed_worker_takes_its_handlers_helpers_with_it(self):
        """A worker killed outright mid-job (SIGKILL, as the OOM killer does): its handler
        dies with it, and so does the helper process the handler started (it used to be
        left running for ever, as the kernel's parent-death signal reaches the handler
        alone), within two seconds; each handler has one guard beside it; the job is not
        lost: it runs again on the new worker (attempt 2, as after any crash) and is done
        once."""
        url, dlq, dsn, d = self.start(self.plugin("python3 -u " + self.behave, key="k:{id}",
                                                  timeout=60),
                                      concurrency=1, visibility_timeout=3)
        effects, child = os.path.join(self.dir, "effects"), os.path.join(self.dir, "child")
        pid_file = os.path.join(self.dir, "pid")
        self.sqs.send(url, json.dumps({"id": 1, "do": "sleep", "seconds": 3, "background": 60,
                                       "child_pid_file": child, "pid_file": pid_file,
                                       "effect": effects}))
        twicetest.wait_until(lambda: self.lines("pid") and self.lines("child"), timeout=30,
                             message="the handler started its helper")
        handler, helper = int(self.lines("pid")[0]), int(self.lines("child")[0])
        self.addCleanup(lambda: alive(helper) and os.kill(helper, signal.SIGKILL))
        worker = d.worker_pids()[0]
        self.assertEqual(sorted(name for _, name in children(worker)),
                         ["python3", "twice-guard"], "the handler and its guard")
        self.assertTrue(alive(helper))
        os.remove(pid_file)
        os.remove(child)
        os.kill(worker, signal.SIGKILL)
        twicetest.wait_until(lambda: not alive(handler) and not alive(helper), timeout=2,
                             message="the killed worker's handler and its helper ended")
        twicetest.wait_until(lambda: self.lines("effects") == ["k:1"], timeout=60,
                             message="the job ran again and was done")
        self.drained(url)
        self.assertEqual(self.lines("effects"), ["k:1"])
        self.assertEqual(self.sqs.counts(dlq), (0, 0, 0))
        # As for any crashed worker: the run it lost counts as an attempt.
        self.assertRegex(d.log_text(), r"key=k:1 attempt=2: taking over: the previous run "
                                       r"crashed its worker")
        second = int(self.lines("child")[0])
        self.assertEqual(d.stop(), 0)
        twicetest.wait_until(lambda: not alive(second), timeout=5,
                             message="stopped: the second helper ended too")

    def check_refused(self, settings, setting, want, include=None):
        """Plugin x with these settings (command first, directory added) is refused for
        setting SETTING with WANT at the line that sets it (settingcheck)."""
        settings = dict(settings)
        settings.setdefault("directory", self.dir)
        entry = tc.plugin_lines("x", os.path.join(self.env.plugin_build_dir, "exec.so"),
                                settings, include and settingcheck.INCLUDE)
        self.assert_setting_refused(self.config(entry, "bad")[3], "x", setting, want, include)

    def test_bad_settings_are_refused_at_their_line(self):
        behave = {"command": "python3 " + self.behave, "key": "k:{id}"}
        self.check_refused({"command": "no-such-handler-program", "key": "k:{id}"}, "command",
                           "'no-such-handler-program' is not an executable file in PATH")
        self.check_refused(dict(behave, timeout=0), "timeout", "must be 1-86400 seconds")
        self.check_refused(dict(behave, directory="/nonexistent"), "directory",
                           "/nonexistent: No such file or directory")
        self.check_refused(dict(behave, env="A"), "env",
                           "word 1 is not NAME=value (it is not shown: it may be part of a "
                           "value; use a JSON object for values with blanks)")
        self.check_refused(dict(behave, pass_env="PATH A-B"), "pass_env",
                           "'A-B' is not a variable name")

    def test_a_bad_setting_in_an_included_file_is_refused_at_its_line(self):
        self.check_refused({"command": "python3 " + self.behave},
                           "start_timeout", "must be 0-3600 seconds",
                           include={"key": "k:{id}", "timeout": 5, "start_timeout": 3601})

if __name__ == "__main__":
    unittest.main()
