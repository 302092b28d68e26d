#!/usr/bin/env python3
"""check-cxx.py - plugins can be written in C++ against the SDK, as its headers promise.

Builds tests/sdk/cxx_plugin.cpp with each C++ compiler found (c++, clang++) as a team
with strict flags would (-std=c++20 -pedantic -Wall -Wextra -Werror, and -std=c++17
without -pedantic), loads the result with `twicectl plugin check --json` (its entry point
must keep its C name) and runs cxx_mock_test.cpp, a unit test against the mock host
(<twice/mock.h>, libtwice-mock.a), built by the first compiler. Exit 0, or 1 with one
line per problem. Run by ctest as unit/sdk-cxx, with the paths of the build.

    check-cxx.py --twicectl PATH --mock-lib PATH --include DIR --mock-include DIR
                 [--link-flag FLAG]...
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
problems = []


def run(cmd, what):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        problems.append("%s: exit %d: %s%s" % (what, r.returncode, r.stdout, r.stderr))
        return None
    return r


def check_plugin(args, cxx, tmp):
    so = os.path.join(tmp, "cxx-%s.so" % os.path.basename(cxx))
    src = os.path.join(HERE, "cxx_plugin.cpp")
    base = [cxx, "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared", "-fvisibility=hidden",
            "-I", args.include, src]
    if run(base + ["-std=c++17", "-o", so], "%s -std=c++17" % cxx) is None:
        return None
    if run(base + ["-std=c++20", "-pedantic", "-o", so], "%s -std=c++20" % cxx) is None:
        return None
    os.chmod(so, 0o755)
    r = run([args.twicectl, "plugin", "check", "--json", so], "twicectl plugin check " + so)
    if r is None:
        return None
    doc = json.loads(r.stdout)
    got = (doc.get("name"), doc.get("key_template"), doc.get("problems"), doc.get("mapping"))
    want = ("cxx", "cxx:{id}", [], ["greets the message's name in C++"])
    if got != want:
        problems.append("%s: plugin check said %r, not %r" % (so, got, want))
    return so


def check_mock(args, cxx, so, tmp):
    exe = os.path.join(tmp, "cxx-mock-test")
    cmd = [cxx, "-std=c++20", "-Wall", "-Wextra", "-Werror", "-I", args.include,
           "-I", args.mock_include, os.path.join(HERE, "cxx_mock_test.cpp"), args.mock_lib,
           "-lyajl", "-lpthread", "-ldl", "-o", exe] + args.link_flag
    if run(cmd, "%s: the mock host's test" % cxx) is None:
        return
    r = run([exe, so], "the mock host's test")
    if r is not None and r.stdout.strip() != "ok":
        problems.append("the mock host's test said %r" % r.stdout)


def main():
    ap = argparse.ArgumentParser()
    for opt in ("--twicectl", "--mock-lib", "--include", "--mock-include"):
        ap.add_argument(opt, required=True)
    ap.add_argument("--link-flag", action="append", default=[])
    args = ap.parse_args()
    compilers = [c for c in (shutil.which("c++"), shutil.which("clang++")) if c]
    if not compilers:
        print("check-cxx: no C++ compiler (c++ or clang++): install g++", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)
        built = [check_plugin(args, cxx, tmp) for cxx in compilers]
        if built[0] is not None:
            check_mock(args, compilers[0], built[0], tmp)
    for p in problems:
        print("check-cxx: " + p, file=sys.stderr)
    print("check-cxx: %s (%s)" % ("FAILED" if problems else "ok", ", ".join(compilers)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
