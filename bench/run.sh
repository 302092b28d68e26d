#!/usr/bin/env bash
# run.sh: THE benchmark command (issues 9 and 19). Installs what it needs (scripts/deps.sh, npm ci
# in bench/), builds twiced in release mode in build-bench/, starts the test servers with
# scripts/testenv.sh in a temporary RUN_DIR, runs bench/bench.py, always stops the servers,
# and exits non-zero when any run lost or double-handled a message. Not a test: it asserts
# no timings; the figures are for bench/README.md.
#
#   bench/run.sh [N] [--quick] [--rounds R] [--twiced W:C[:R[:I:G]]] [--consumer P:C]
#                [--latency P50:P99] [--hosts N] [--no-callgrind]
#                [--no-pg-stat-statements] [--start-cost] [--keep]
#     N               messages per run (default 20000, 5000 with --latency alone; 10% of
#                     them are duplicates)
#     --quick         check the harness: N=2000, 1 round, no tuning, a short callgrind run
#     --rounds R      rounds of the mode's runs (default 3)
#     --twiced W:C[:R[:I:G]]  twiced workers:concurrency[:receivers[:max_inflight:
#                     receives_per_claim]] instead of tuning them
#     --consumer P:C  sqs-consumer processes:consumers per process instead of tuning them
#     --latency P50:P99  a proxy delays every SQS call of the contenders (milliseconds,
#                     lognormal, plus 1 call in 1,000 taking 2 s); runs twiced and
#                     sqs-consumer at their defaults and tuned, and counts SQS calls
#     --hosts N       1, 2, 4 ... N independent twiced masters on one database and one
#                     queue (with --latency: behind the proxy)
#     --baseline REV  also build twiced at git revision REV (in build-bench-baseline/)
#                     and run it in every round beside this tree's, with the same
#                     settings: what a change does, under the same background load
#     --baseline-build DIR  the same with a build directory made elsewhere
#     --no-callgrind  skip the instructions-per-message figure (standard mode only)
#     --no-pg-stat-statements  do not load pg_stat_statements (no statement counts)
#     --start-cost    also start each contender R times on an empty queue and report
#                     what one start costs (CPU, PostgreSQL CPU), apart from its messages
#     --keep          keep RUN_DIR (logs, configs, callgrind output) after the run
# The report is printed and written to build-bench/bench-results.txt (+ .json).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
PY=/usr/bin/python3
keep=0
baseline_rev=
bench_args=()

while [ $# -gt 0 ]; do
    case $1 in
    --quick) bench_args+=(2000 --rounds 1 --quick) ;;
    --keep) keep=1 ;;
    --baseline)
        [ $# -ge 2 ] || { echo "run.sh: $1 needs a value" >&2; exit 2; }
        baseline_rev=$2
        shift
        ;;
    --rounds | --twiced | --consumer | --latency | --hosts | --baseline-build)
        [ $# -ge 2 ] || { echo "run.sh: $1 needs a value" >&2; exit 2; }
        bench_args+=("$1" "$2")
        shift
        ;;
    --no-callgrind | --no-pg-stat-statements | --start-cost) bench_args+=("$1") ;;
    -h | --help)
        sed -n '2,/^set /p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
        exit 0
        ;;
    [0-9]*) bench_args+=("$1") ;;
    *)
        echo "run.sh: unknown option $1 (see --help)" >&2
        exit 2
        ;;
    esac
    shift
done

cd "$root"
bash scripts/deps.sh

# The peers, exactly as locked in bench/package-lock.json (stamped like deps.sh does).
lock=$here/package-lock.json
stamp=$here/node_modules/.twice-lock.sha256
want=$(sha256sum "$lock" | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "run.sh: npm ci in bench/"
    (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$want" >"$stamp"
fi

echo "run.sh: building twiced (Release) in build-bench/"
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DTWICE_TESTS=OFF >/dev/null
cmake --build build-bench -j2 >/dev/null

# The baseline: the tree of REV as git has it, built the same way (kept while REV is the
# same commit, so that a second comparison does not build it again).
if [ -n "$baseline_rev" ]; then
    rev=$(git rev-parse --verify --quiet "$baseline_rev^{commit}") ||
        { echo "run.sh: --baseline: no commit $baseline_rev" >&2; exit 2; }
    base=build-bench-baseline
    if [ "$(cat "$base/rev" 2>/dev/null)" != "$rev" ]; then
        echo "run.sh: building twiced at $rev (Release) in $base/"
        rm -rf "$base"
        mkdir -p "$base/src"
        git archive "$rev" | tar -x -C "$base/src"
    fi
    cmake -S "$base/src" -B "$base/build" -DCMAKE_BUILD_TYPE=Release -DTWICE_TESTS=OFF \
        >/dev/null
    cmake --build "$base/build" -j2 >/dev/null
    echo "$rev" >"$base/rev"
    bench_args+=(--baseline-build "$base/build")
fi

run_dir=$(mktemp -d "${TMPDIR:-/tmp}/twice-bench.XXXXXX")
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
    bash "$root/scripts/testenv.sh" down "$run_dir" >>"$run_dir.down.log" 2>&1 ||
        cat "$run_dir.down.log" >&2
    if [ "$keep" = 1 ]; then
        echo "run.sh: kept $run_dir" >&2
    else
        rm -rf "$run_dir"
    fi
    rm -f "$run_dir.down.log"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

bash "$root/scripts/testenv.sh" up "$run_dir"
# shellcheck disable=SC1091
. "$run_dir/env.sh"
$PY "$here/bench.py" --build-dir build-bench --out build-bench/bench-results.txt \
    "${bench_args[@]}"
