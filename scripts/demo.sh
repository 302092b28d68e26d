#!/usr/bin/env bash
# demo.sh: THE demo command. Sets up everything on this machine (dependencies, a
# build, a throwaway PostgreSQL, the SQS emulator, an SMTP sink and an HTTP
# receiver on 127.0.0.1), runs twiced with the three bundled plugins, sends a few
# messages - a duplicate of each and a poison one among them - and prints what
# happened to every message. Stops everything it started at the end.
#
#   scripts/demo.sh [--keep]   --keep: leave the run directory (logs, mail) behind
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
keep=0
[ "${1:-}" = "--keep" ] && keep=1

cd "$root"
bash "$here/deps.sh"
echo "demo: building in build/"
# The build test.sh makes too (Debug), so that running one after the other
# does not rebuild everything.
cmake -S . -B build -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build -j2 >/dev/null

run_dir=$(mktemp -d "${TMPDIR:-/tmp}/twice-demo.XXXXXX")
chmod 755 "$run_dir"
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
    bash "$here/testenv.sh" down "$run_dir" >/dev/null 2>&1 || true
    if [ "$keep" = 1 ]; then
        echo "demo: kept $run_dir"
    else
        # the report names twiced's log in it: say that it is gone, and how to keep it
        rm -rf "$run_dir"
        echo "demo: removed $run_dir and its logs (scripts/demo.sh --keep keeps them)"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

bash "$here/testenv.sh" up "$run_dir" >/dev/null
# shellcheck disable=SC1091
. "$run_dir/env.sh"
/usr/bin/python3 "$here/demo.py" --build "$root/build" --run-dir "$run_dir"
