#!/usr/bin/env python3
"""check-master-links.py - twiced, the master, loads neither libcurl, libpq nor OpenSSL.

The master's work needs none of them: its workers and probes, another executable
(twiced-worker), talk to PostgreSQL and SQS, and the host's duties run in a worker
(worker/leadership.c). Each of those libraries costs a process that loads and uses it
about 11 MB of resident memory (bench/README.md, "Memory"), so twiced is linked with
--as-needed, and a call into one of them from the master's code would bring it back
silently. This reads the dynamic section of both executables (readelf -d) and checks
that twiced's NEEDED list has none of them and that twiced-worker's has all three (so
the check cannot pass by reading the wrong file).

usage: check-master-links.py BIN_DIR
"""
import re
import subprocess
import sys

HEAVY = ("libcurl", "libpq", "libssl", "libcrypto")


def needed(path):
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True)
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out.stdout)


def main():
    bindir = sys.argv[1]
    problems = []
    master = needed(bindir + "/twiced")
    worker = needed(bindir + "/twiced-worker")
    for lib in master:
        if lib.startswith(HEAVY):
            problems.append("twiced needs %s: a call from the master's code into it "
                            "(the master must leave that to its workers)" % lib)
    for want in ("libcurl", "libpq", "libcrypto"):
        if not any(lib.startswith(want) for lib in worker):
            problems.append("twiced-worker does not need %s: is this the right file?" % want)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
