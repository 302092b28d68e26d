#!/usr/bin/python3
"""behave.py - an exec handler for tests that does what each job's body asks.

Body {"do": ...}: "ok" (done), "reject", "retry" (retry_after 7), "garbage" (a line
that is not JSON), "die" (exit 3 before answering), "sleep" (SECONDS, then done; with
"on_attempt": [N...] only on those attempts),
"stderr" (BYTES of stderr in 100-byte lines, then done), "long_line" (BYTES of stderr
without a newline), "two_lines" (done twice), "no_newline" (done without the
line's newline), "close_stdout" (closes its stdin and stdout, then sleeps 30 s), "stray" (done, then SECONDS later, 0.3 by
default, done again: a late stray line), "echo" (done, the request line written
to the file named by ECHO_FILE), "env" (done, the environment and the working
directory written to ECHO_FILE). With "pid_file", its pid is written there first;
with "effect", the key is appended to that file before answering done (an effect);
with "stderr_after", that many bytes of stderr are written after the answer in 100-byte
lines, each flushed, before the next job is read (a handler logging between jobs).
With "background": SECONDS, it first starts a child (sleep SECONDS) that inherits its
stdout and stderr and outlives it, its pid written to the file named by "child_pid_file"
(a helper process left running); with "exit_after", it exits 0 right after its answer.
Every answer echoes the request's message_id (as twice-exec(7) advises), unless
ECHO_ID=0 is in the environment (a handler of the days before).
START_DELAY in the environment: seconds it sleeps before reading its first job (a
slow start: a big interpreter, heavy imports).
Used by: plugins/exec/tests/test-exec.c, tests/integration/test_exec_plugin.py.
"""
import json
import os
import subprocess
import sys
import time


def answer(job, obj, twice=False, newline="\n"):
    """One line (two in one write with twice: a handler out of protocol)."""
    if os.environ.get("ECHO_ID", "1") != "0":
        obj["message_id"] = job["message_id"]
    sys.stdout.write((json.dumps(obj) + newline) * (2 if twice else 1))
    sys.stdout.flush()


def run(job, req):
    body = json.loads(job["body"])
    if body.get("background"):
        child = subprocess.Popen(["sleep", str(body["background"])])
        with open(body["child_pid_file"], "w") as f:
            f.write(str(child.pid))
    handle(job, req, body)
    if body.get("exit_after"):
        sys.exit(0)
    if body.get("do") == "stray":
        time.sleep(float(body.get("seconds", 0.3)))
        answer(job, {"status": "done"})
    for _ in range(int(body.get("stderr_after", 0)) // 100):
        sys.stderr.write("z" * 99 + "\n")
        sys.stderr.flush()


def handle(job, req, body):
    do = body.get("do", "ok")
    if body.get("pid_file"):
        with open(body["pid_file"], "w") as f:
            f.write(str(os.getpid()))
    if do == "die":
        sys.exit(3)
    if do == "close_stdout":
        os.close(0)
        os.close(1)
        time.sleep(30)
    if do == "sleep" and job["attempt"] in body.get("on_attempt", [job["attempt"]]):
        time.sleep(float(body.get("seconds", 5)))
    if do == "stderr":
        line = "x" * 99 + "\n"
        for _ in range(int(body.get("bytes", 1 << 20)) // 100):
            sys.stderr.write(line)
        sys.stderr.flush()
    if do == "long_line":
        sys.stderr.write("y" * int(body.get("bytes", 10000)) + "\n")
        sys.stderr.flush()
    if do in ("echo", "env"):
        out = req if do == "echo" else json.dumps({"env": dict(os.environ), "cwd": os.getcwd()})
        with open(os.environ["ECHO_FILE"], "w") as f:
            f.write(out)
    if do == "garbage":
        sys.stdout.write("this is not JSON\n")
        sys.stdout.flush()
        return
    if do == "reject":
        return answer(job, {"status": "reject", "error": "no such customer"})
    if do == "retry":
        return answer(job, {"status": "retry", "error": "busy", "retry_after": 7})
    if body.get("effect"):
        with open(body["effect"], "a") as f:
            f.write(job["key"] + "\n")
    answer(job, {"status": "done"}, twice=do == "two_lines",
           newline="" if do == "no_newline" else "\n")


time.sleep(float(os.environ.get("START_DELAY", "0")))
for req in sys.stdin:
    run(json.loads(req), req)
