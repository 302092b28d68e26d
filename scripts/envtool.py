#!/usr/bin/python3
"""envtool.py: small helpers for scripts/testenv.sh (free ports, secrets, readiness).

For: the few steps of starting the test servers that shell does badly. Not for: starting
or stopping anything; testenv.sh owns the processes.

    envtool.py ports N                       N distinct free TCP ports on 127.0.0.1
    envtool.py secret                        a random hex password
    envtool.py wait KIND PORT [--pid P] [--timeout S]
        KIND: pg (connects as $TWICE_TEST_PGUSER with $TWICE_TEST_PGPASSWORD), sqs,
        smtp, http. Exit 0 once the server answers; 1 if the timeout passes or
        process P dies first.
"""

import argparse
import os
import secrets
import smtplib
import socket
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
import twicetest  # noqa: E402  (the harness's SigV4 client, for the SQS probe)


def free_ports(count):
    """Bind count sockets to port 0 at once (so the ports differ), then release them.

    A port could in theory be taken again before the server binds it; the server then
    fails to start and testenv.sh says so.
    """
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def probe(kind, port):
    """One readiness check; raises on failure."""
    if kind == "pg":
        import psycopg2

        conn = psycopg2.connect(host="127.0.0.1", port=port, dbname="postgres",
                                user=os.environ["TWICE_TEST_PGUSER"],
                                password=os.environ["TWICE_TEST_PGPASSWORD"],
                                connect_timeout=3)
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT 1")
        finally:
            conn.close()
    elif kind == "sqs":
        twicetest.Sqs("http://127.0.0.1:%d" % port, timeout=3).call("ListQueues", {})
    elif kind == "smtp":
        with smtplib.SMTP("127.0.0.1", port, timeout=3) as s:
            s.ehlo("envtool")
            s.noop()
    elif kind == "http":
        with urllib.request.urlopen("http://127.0.0.1:%d/_requests/" % port, timeout=3) as r:
            r.read()
    else:
        raise ValueError("unknown kind %r" % kind)


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie has exited too
    try:
        with open("/proc/%d/stat" % pid, encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait(kind, port, pid, timeout):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if pid and not alive(pid):
            print("envtool: %s server (pid %d) exited before it answered" % (kind, pid),
                  file=sys.stderr)
            return 1
        try:
            probe(kind, port)
            return 0
        except Exception as e:  # any failure means "not yet"; the last one is reported
            last = e
        time.sleep(0.1)
    print("envtool: %s server on 127.0.0.1:%d did not answer within %ss (last error: %s)"
          % (kind, port, timeout, last), file=sys.stderr)
    return 1


def main():
    p = argparse.ArgumentParser(description="helpers for scripts/testenv.sh")
    sub = p.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("ports")
    sp.add_argument("count", type=int)
    sub.add_parser("secret")
    sw = sub.add_parser("wait")
    sw.add_argument("kind", choices=["pg", "sqs", "smtp", "http"])
    sw.add_argument("port", type=int)
    sw.add_argument("--pid", type=int, default=0)
    sw.add_argument("--timeout", type=float, default=30)
    args = p.parse_args()
    if args.cmd == "ports":
        print(" ".join(str(port) for port in free_ports(args.count)))
        return 0
    if args.cmd == "secret":
        print(secrets.token_hex(16))
        return 0
    return wait(args.kind, args.port, args.pid, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
