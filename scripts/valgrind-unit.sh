#!/usr/bin/env bash
# valgrind-unit.sh: runs every unit test program (ctest label "unit", the fuzz corpus
# replays included; not the tests that run cc or cmake) under valgrind memcheck, with the
# command, environment and working directory ctest would use, and exits 1 if any test fails
# or valgrind reports an error or a definite leak; one test per core at a time. Builds
# BUILD_DIR (default build/, a normal build: valgrind cannot run ASan binaries).
# Not for: integration tests (they need the servers), or possible/indirect leaks.
#
#   scripts/valgrind-unit.sh [BUILD_DIR] [-R REGEX]
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
build=build
regex=
while [ $# -gt 0 ]; do
    case $1 in
    -R)
        [ $# -ge 2 ] || { echo "valgrind-unit.sh: -R needs a regex" >&2; exit 2; }
        regex=$2
        shift
        ;;
    -h | --help)
        sed -n '2,/^set /p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
        exit 0
        ;;
    *) build=$1 ;;
    esac
    shift
done
if ! command -v valgrind >/dev/null; then
    echo "valgrind-unit.sh: valgrind is not installed (scripts/deps.sh installs it)" >&2
    exit 2
fi

cd "$root"
if grep -qE '^TWICE_(SANITIZE|FUZZ):BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
    echo "valgrind-unit.sh: $build/ is a sanitizer build; use a normal one (build/)" >&2
    exit 2
fi
echo "valgrind-unit.sh: building in $build/"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$build" -j2 >/dev/null

logs=$root/$build/valgrind
rm -rf "$logs"
mkdir -p "$logs"
cd "$build"
ctest --show-only=json-v1 -L unit ${regex:+-R "$regex"} >"$logs/tests.json"

# ctest's JSON gives each test's command, environment and working directory exactly.
exec /usr/bin/python3 - "$logs" "$root/tests/valgrind.supp" <<'PY'
import concurrent.futures, json, os, re, subprocess, sys

logs, supp = sys.argv[1], sys.argv[2]
with open(os.path.join(logs, "tests.json")) as f:
    tests = json.load(f)["tests"]
vg = ["valgrind", "--quiet", "--error-exitcode=99", "--leak-check=full",
      "--errors-for-leak-kinds=definite", "--show-leak-kinds=definite",
      "--suppressions=" + supp, "--num-callers=30"]
build = os.path.dirname(logs)


def check(t):
    """Runs one test under memcheck; returns (its line, what to show when it failed)."""
    props = {p["name"]: p["value"] for p in t.get("properties", [])}
    env = dict(os.environ)
    env.update(v.split("=", 1) for v in props.get("ENVIRONMENT", []))
    log = os.path.join(logs, t["name"].replace("/", "_") + ".log")
    cmd = vg + ["--log-file=" + log] + t["command"]
    out = subprocess.run(cmd, env=env, cwd=props.get("WORKING_DIRECTORY"),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    # valgrind 3.19 does not know pidfd_open (434): it answers ENOSYS, which the
    # exec plugin handles (it then watches handlers by EOF only), and warns on
    # every call. That warning is about valgrind, not a defect of ours.
    report = re.sub(r"--\d+-- WARNING: unhandled [\w-]+ syscall: 434\n(--\d+-- [^\n]*\n?){0,4}",
                    "", open(log, errors="replace").read()).strip()
    verdict = ("valgrind errors" if out.returncode == 99 else
               "test failed (exit %d)" % out.returncode if out.returncode else
               "valgrind output" if report else "ok")
    detail = out.stdout.decode(errors="replace")[-3000:] + report[-6000:] + "\n"
    return verdict, detail


# Tests that run a tool (cc, cmake -P) check our files, not our code: no memcheck.
mine = []
for t in tests:
    if os.path.realpath(t["command"][0]).startswith(os.path.realpath(build) + os.sep):
        mine.append(t)
    else:
        print("valgrind-unit.sh: %-28s skipped (runs %s, not a twice program)"
              % (t["name"], os.path.basename(t["command"][0])), flush=True)
# One test per core at a time (ctest runs them side by side too); lines in ctest's order.
failed, checked = [], len(mine)
with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
    for t, (verdict, detail) in zip(mine, pool.map(check, mine)):
        print("valgrind-unit.sh: %-28s %s" % (t["name"], verdict), flush=True)
        if verdict != "ok":
            failed.append(t["name"])
            sys.stdout.write(detail)
print("valgrind-unit.sh: %d of %d unit test programs clean under memcheck%s"
      % (checked - len(failed), checked, "; failed: " + ", ".join(failed) if failed else ""))
sys.exit(1 if failed or not checked else 0)
PY
