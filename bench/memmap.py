"""memmap.py: where twiced's peak RSS is, mapping by mapping. One master with its
worker(s) drains N preloaded messages at the bench's settings; every 50 ms the summed
VmRSS of the tree is read as bench.py reads it, and at each new peak the smaps of every
process is kept; the table is of that peak. Not part of bench/run.sh and not a test: a
tool for a change of what twiced maps (bench/README.md, "Memory"). Needs the servers of
scripts/testenv.sh.

    . RUN_DIR/env.sh; python3 bench/memmap.py --build-dir build-bench [--twiced 1:4:4:512:10]
        [-n 10000] [--rounds 1] [--min-kb 100] [--anon] [--keep] [--env NAME=VALUE ...]

Rows are per process: each shared library (text r-x; read-only r--, which holds the
relocated .data.rel.ro, the anonymous part; data rw- and its .bss), twiced's own file, [heap], thread stacks (an anonymous mapping right above
a guard page), malloc's arenas (the rest of the anonymous mappings), the shared-memory
region (memfd:twice-shm) and the rest.
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time

from common import BenchError, clean_env, end_run, log, message_plan, preload, twicetest
import bench
from sysstat import descendants, rss_kib

MAP_RE = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) (\S{4}) \S+ \S+ \d+\s*(.*)$")


def read_smaps(pid):
    """[(start, end, perms, name, {field: kB})] of one process."""
    out = []
    try:
        with open("/proc/%d/smaps" % pid) as f:
            text = f.read()
    except OSError:
        return out
    for line in text.splitlines():
        m = MAP_RE.match(line)
        if m:
            out.append((int(m.group(1), 16), int(m.group(2), 16), m.group(3), m.group(4), {}))
        elif out and line.endswith(" kB"):
            k, v = line.split(":", 1)
            out[-1][4][k] = int(v.split()[0])
    return out


def classify(maps):
    """{row: [rss, anonymous]} in kB: libraries by name and part, heap, stacks, arenas."""
    rows, prev_file = {}, None
    for i, (start, end, perms, name, f) in enumerate(maps):
        if name.startswith("/"):
            base = os.path.basename(name)
            base = re.sub(r"\.so[.0-9]*$", ".so", base)
            part = {"r-xp": "text", "r--p": "read-only", "rw-p": "data"}.get(perms, perms)
            row, prev_file = "%s %s" % (base, part), base
        elif name == "" and prev_file and i and maps[i - 1][1] == start and \
                maps[i - 1][2] == "rw-p":
            row = "%s bss" % prev_file  # anonymous, right after a library's data
        elif name == "":
            prev_file = None
            guard = i and maps[i - 1][1] == start and maps[i - 1][2] == "---p"
            size = end - start
            if perms == "---p":
                row = "reserved (no access)"
            elif guard and size >= 1 << 20 and size < 64 << 20:
                row = "thread stacks"
            else:
                row = "malloc arenas and other anonymous"
        else:
            prev_file = None
            row = name
        r = rows.setdefault(row, [0, 0])
        r[0] += f.get("Rss", 0)
        r[1] += f.get("Anonymous", 0)
    return rows


# The parts of the second table: a row's first word (a library's file name) to its part.
PARTS = [
    ("OpenSSL (libcrypto, libssl)", ("libcrypto.so", "libssl.so")),
    ("GnuTLS and its own (gnutls, p11-kit, nettle, hogweed, gmp, tasn1, unistring, idn2, ffi)",
     ("libgnutls.so", "libp11-kit.so", "libnettle.so", "libhogweed.so", "libgmp.so",
      "libtasn1.so", "libunistring.so", "libidn2.so", "libffi.so")),
    ("Kerberos (krb5, gssapi_krb5, k5crypto, krb5support, com_err, keyutils, resolv)",
     ("libkrb5.so", "libgssapi_krb5.so", "libk5crypto.so", "libkrb5support.so",
      "libcom_err.so", "libkeyutils.so", "libresolv.so")),
    ("libcurl and its other libraries (ssh2, rtmp, ldap, lber, sasl2, nghttp2, psl, zstd, "
     "brotli, z)", ("libcurl.so", "libssh2.so", "librtmp.so", "libldap-2.5.so", "liblber-2.5.so",
                    "libsasl2.so", "libnghttp2.so", "libpsl.so", "libzstd.so",
                    "libbrotlidec.so", "libbrotlicommon.so", "libz.so")),
    ("libpq", ("libpq.so",)),
    ("libc, ld.so, libm", ("libc.so", "ld-linux-x86-64.so", "libm.so")),
    ("jansson, yajl, libconfig, libmicrohttpd", ("libjansson.so", "libyajl.so",
                                                 "libconfig.so", "libmicrohttpd.so")),
    ("twiced's own file (text, read-only, data)", ("twiced",)),
    ("heap, malloc arenas, thread stacks, main stack", ("[heap]", "malloc", "thread",
                                                        "[stack]")),
    ("shared region (memfd:twice-shm)", ("memfd:twice-shm",)),
]


def part_of(row):
    first = row.split(" ")[0]
    for name, firsts in PARTS:
        if first in firsts:
            return name
    return "other (vdso, vvar, plugin, reserved)"


def drain(ctx, settings, n, work, extra_env):
    """One drain of n preloaded messages by a fresh master. Returns (peak summed VmRSS in
    kB, {pid: (role, smaps at that peak)})."""
    bodies, d = message_plan(n)
    url, dlq_url = ctx.sqs.create_queue_pair(twicetest.unique_name("bench-mem", 60))
    dsn = ctx.pg.new_database("bench_mem")
    home = os.path.join(work, "run-%d-%d" % (n, ctx.seq()))
    os.makedirs(home)
    conf = os.path.join(home, "twice.conf")
    with open(conf, "w") as f:
        f.write(ctx.twiced_config(url, dlq_url, dsn, settings, os.path.join(home, "counts"),
                                  ctx.endpoint))
    preload(ctx.sqs, url, bodies)
    env = clean_env()
    env.update(extra_env)
    logf = open(os.path.join(home, "twiced.log"), "ab")
    p = subprocess.Popen([ctx.twiced, "-f", "-c", conf], cwd=home, env=env,
                         stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT,
                         start_new_session=True)
    logf.close()
    peak, at_peak, pids = 0, {}, [p.pid]
    try:
        deadline = time.monotonic() + 300
        i = 0
        while sum(ctx.sqs.counts(url)) != 0:
            if time.monotonic() > deadline or p.poll() is not None:
                raise BenchError("the queue was not drained (logs in %s)" % home)
            if i < 20 or i % 10 == 0:
                pids = descendants([p.pid])
            i += 1
            total = sum(rss_kib(q) for q in pids)
            if total > peak:
                peak = total
                at_peak = {q: ("master" if q == p.pid else "worker", read_smaps(q))
                           for q in pids}
            time.sleep(0.05)
        os.kill(p.pid, signal.SIGTERM)
        if p.wait(timeout=90) != 0:
            raise BenchError("exit %d (logs in %s)" % (p.returncode, home))
        rows, completed, _ = ctx.pg.key_states(dsn, "twice_idempotency")
        if (rows, completed) != (d, d):
            raise BenchError("%d rows, %d completed, want %d" % (rows, completed, d))
    finally:
        end_run(ctx, p, (url, dlq_url), dsn)
    return peak, at_peak


def report(peak, at_peak, min_kb, anon):
    """The table of one peak: per row, RSS (anonymous) of each process; with anon, every
    anonymous mapping of min_kb or more as well."""
    roles = sorted(at_peak.items(), key=lambda kv: (kv[1][0] != "master", kv[0]))
    for _, (role, maps) in roles if anon else ():
        for start, end, perms, name, f in maps:
            if name == "" and f.get("Rss", 0) >= min_kb:
                print("%s: anonymous %x %s %d kB of %d kB" % (role, start, perms, f["Rss"],
                                                             (end - start) >> 10))
    per = [(role, classify(maps)) for _, (role, maps) in roles]
    names = sorted({r for _, rows in per for r in rows},
                   key=lambda r: -sum(rows.get(r, [0])[0] for _, rows in per))
    print("peak summed VmRSS: %.1f MB (%s)" % (peak / 1024.0, ", ".join(
        "%s %.1f MB" % (role, sum(v[0] for v in rows.values()) / 1024.0)
        for role, rows in per)))
    print("| mapping | %s |" % " | ".join("%s kB (anon)" % role for role, _ in per))
    print("| --- |%s" % (" ---: |" * len(per)))
    rest = [0] * len(per)
    for name in names:
        vals = [rows.get(name, [0, 0]) for _, rows in per]
        if max(v[0] for v in vals) < min_kb:
            for j, v in enumerate(vals):
                rest[j] += v[0]
            continue
        print("| %s | %s |" % (name, " | ".join("%d (%d)" % tuple(v) for v in vals)))
    print("| rest (rows under %d kB) | %s |" % (min_kb, " | ".join(str(r) for r in rest)))
    print("| **total** | %s |" % " | ".join(
        "**%d** (%d)" % (sum(v[0] for v in rows.values()), sum(v[1] for v in rows.values()))
        for _, rows in per))
    print()
    print("| part | %s | together kB |" % " | ".join("%s kB (anon)" % role for role, _ in per))
    print("| --- |%s ---: |" % (" ---: |" * len(per)))
    parts = [{} for _ in per]
    for j, (_, rows) in enumerate(per):
        for row, v in rows.items():
            acc = parts[j].setdefault(part_of(row), [0, 0])
            acc[0] += v[0]
            acc[1] += v[1]
    order = [n for n, _ in PARTS] + ["other (vdso, vvar, plugin, reserved)"]
    for name in order:
        vals = [pp.get(name, [0, 0]) for pp in parts]
        print("| %s | %s | %d |" % (name, " | ".join("%d (%d)" % tuple(v) for v in vals),
                                   sum(v[0] for v in vals)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--twiced", type=bench.parse_pair, default=(1, 4, 4, 512, 10))
    ap.add_argument("-n", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--min-kb", type=int, default=100)
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE for twiced")
    ap.add_argument("--anon", action="store_true", help="list large anonymous mappings")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    ns = argparse.Namespace(build_dir=args.build_dir, log_level="info", baseline_build=None,
                            no_pg_stat_statements=True, prefill=0, latency=None)
    ctx = bench.Context(ns)
    extra = dict(e.split("=", 1) for e in args.env)
    try:
        for _ in range(args.rounds):
            report(*drain(ctx, args.twiced, args.n, ctx.work, extra), args.min_kb, args.anon)
    finally:
        ctx.close()
        if args.keep:
            log("kept %s" % ctx.work)
        else:
            shutil.rmtree(ctx.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (BenchError, subprocess.TimeoutExpired) as e:
        log("FAILED: %s" % e)
        sys.exit(1)
