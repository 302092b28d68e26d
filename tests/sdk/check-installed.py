#!/usr/bin/env python3
"""check-installed.py - the SDK works from where it is installed, as an outside team uses it.

Installs the build's `dev` component into a fresh prefix (`cmake --install BUILD --prefix
DIR --component dev`, as a developer without root does), then, with PKG_CONFIG_PATH on that
prefix only: pkg-config names the prefix (the .pc files are written at install time, not
with the configured /usr/local), the installed example hello.c builds with strict ISO C
flags and `pkg-config --cflags twice-plugin`, and a unit test of it against the installed
mock host builds with `pkg-config --cflags --libs twice-mock` and passes. Then the `runtime`
component into the same prefix (under a DESTDIR, which keeps the configured /usr/local/etc
paths of twice.conf and logrotate off the machine): the bundled plugins land under the prefix,
where pkg-config's plugindir says they are. Exit 0, or 1 with one line per problem. Run by
ctest as unit/sdk-installed.

    check-installed.py --build DIR --libdir LIBDIR [--link-flag FLAG]...
"""
import argparse
import os
import subprocess
import sys
import tempfile

TEST = r"""
#include <stdio.h>
#include <string.h>
#include <twice/mock.h>

int
main(int argc, char **argv)
{
    char err[256];
    twice_mock *m = argc > 1 ? twice_mock_open(argv[1], err, sizeof(err)) : NULL;
    if (m == NULL || twice_mock_init(m) != 0) {
        fprintf(stderr, "%s\n", m == NULL ? err : twice_mock_error(m));
        return 1;
    }
    twice_mock_job *j = twice_mock_job_new(m, "{\"id\":42,\"name\":\"Ana\"}");
    twice_status st = twice_mock_run(j);
    const char *key = twice_mock_job_key(j);
    int ok = st == TWICE_DONE && key != NULL && strcmp(key, "hello:42") == 0;
    printf("%s\n", ok ? "ok" : "FAILED");
    twice_mock_job_free(j);
    twice_mock_free(m);
    return !ok;
}
"""
STRICT = ["-std=c11", "-pedantic", "-Wall", "-Wextra", "-Werror"]
problems = []


def run(cmd, what, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        problems.append("%s: exit %d: %s%s" % (what, r.returncode, r.stdout, r.stderr))
        return None
    return r.stdout.strip()


def check(args, prefix, tmp):
    if run(["cmake", "--install", args.build, "--prefix", prefix, "--component", "dev"],
           "cmake --install") is None:
        return
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(prefix, args.libdir, "pkgconfig"))
    said = run(["pkg-config", "--variable=prefix", "twice-plugin"], "pkg-config prefix", env)
    if said is not None and said != prefix:
        problems.append("pkg-config says twice-plugin's prefix is %r, not %r" % (said, prefix))
    cflags = run(["pkg-config", "--cflags", "twice-plugin"], "pkg-config --cflags", env)
    mock = run(["pkg-config", "--cflags", "--libs", "twice-mock"], "pkg-config twice-mock", env)
    if cflags is None or mock is None:
        return
    so = os.path.join(tmp, "hello.so")
    hello = os.path.join(prefix, "share", "doc", "twice-dev", "examples", "hello.c")
    if run(["cc", "-shared", "-fPIC", "-fvisibility=hidden"] + STRICT + cflags.split() +
           ["-o", so, hello], "building the installed hello.c") is None:
        return
    src, exe = os.path.join(tmp, "test-hello.c"), os.path.join(tmp, "test-hello")
    with open(src, "w", encoding="utf-8") as f:
        f.write(TEST)
    if run(["cc"] + STRICT + ["-o", exe, src] + mock.split() + args.link_flag,
           "building a mock host test") is None:
        return
    said = run([exe, so], "the mock host test")
    if said is not None and said != "ok":
        problems.append("the mock host test said %r" % said)
    check_plugins(args, prefix, tmp, env)


def check_plugins(args, prefix, tmp, env):
    """The bundled plugins follow --prefix, and pkg-config says where they are."""
    plugindir = os.path.join(prefix, args.libdir, "twice", "plugins")
    said = run(["pkg-config", "--variable=plugindir", "twice-plugin"], "pkg-config plugindir",
               env)
    if said is not None and said != plugindir:
        problems.append("pkg-config says the plugins are in %r, not %r" % (said, plugindir))
    destdir = os.path.join(tmp, "destdir")
    if run(["cmake", "--install", args.build, "--prefix", prefix, "--component", "runtime"],
           "cmake --install --component runtime", dict(os.environ, DESTDIR=destdir)) is None:
        return
    where = destdir + plugindir
    found = sorted(os.listdir(where)) if os.path.isdir(where) else []
    if "exec.so" not in found:
        problems.append("cmake --install --prefix %s put no plugins in %s (found %s)" %
                        (prefix, plugindir, found))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--libdir", required=True)
    ap.add_argument("--link-flag", action="append", default=[])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)
        check(args, os.path.join(tmp, "prefix"), tmp)
    for p in problems:
        print("check-installed: " + p, file=sys.stderr)
    print("check-installed: %s" % ("FAILED" if problems else "ok"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
