#!/usr/bin/env bash
# test.sh: THE test command. Installs dependencies (deps.sh), builds twice normally in
# build/, with ASan+UBSan in build-asan/ and with TSan in build-tsan/, starts the test
# servers (testenv.sh) in a temporary RUN_DIR, fuzzes every libFuzzer target for a bounded
# time (fuzz.sh, TWICE_FUZZ_SECONDS each, default 20), runs the unit tests under valgrind
# (valgrind-unit.sh), builds, lints, installs and purges the packages (package-test.sh),
# then runs ctest in build/ and build-asan/, and the tests that exercise threads in
# build-tsan/; always stops the servers, and exits with the status of the first failure.
# Not for: the demo, or leaving servers up (use testenv.sh for that).
#
#   scripts/test.sh [--quick] [-R REGEX] [--keep]
#     --quick    normal build and ctest only (no sanitizers, fuzzing, valgrind, packages)
#     -R REGEX   only the ctest tests matching REGEX (also under TSan, instead of its set)
#     --keep     keep RUN_DIR (logs, mail, twiced work dirs) after the run
#   TWICE_CTEST_JOBS=N  tests ctest runs at once in build/ and build-asan/ (default 4)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
quick=0
keep=0
# The integration tests mostly wait (visibility timeouts, backoffs, drains):
# three at once on two cores took the normal and ASan stages from ~630 and
# ~730 s to ~485 and ~530 s with no test slower to pass. Four: six of the
# longest files at -j4 took 230 s and ~170 s of CPU in all (their python and
# twiced 58 s, the servers ~114 s), two cores under half busy. TSan stays at
# two (its processes are CPU-bound).
ctest_args=(--output-on-failure "-j${TWICE_CTEST_JOBS:-4}")
regex=

while [ $# -gt 0 ]; do
    case $1 in
    --quick) quick=1 ;;
    --keep) keep=1 ;;
    -R)
        [ $# -ge 2 ] || { echo "test.sh: -R needs a regex" >&2; exit 2; }
        regex=$2
        shift
        ;;
    -h | --help)
        sed -n '2,/^set /p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "test.sh: unknown option $1 (see --help)" >&2
        exit 2
        ;;
    esac
    shift
done

[ -z "$regex" ] || ctest_args+=(-R "$regex")

# Under TSan: the unit tests (the credential chain's refresh thread, log
# reopens, the plugins' own concurrent tests), the C integration tests (a
# long poll cancelled from another thread) and the daemon tests whose
# threads do the work: the worker's receivers, handlers, acknowledger and
# heartbeat, drain and abandon (basic, lifecycle, fifo, plugins), and the
# master's DLQ monitor, alert sender, HTTP endpoints, janitor and reload
# (alerts, metrics, reload). Left out: format and layer checks (no code
# runs), the fuzz replays (no threads), test_creds (waiting on expiries; its refresh thread is
# test-creds-refresh's), test_serial_* (minutes, run alone) and the tests of
# single-threaded logic (CLI, hostile input, TLS, secrets, permissions).
tsan_tests='^(unit/|integration/(itest-|plugin-|'
tsan_tests+='test_(basic|lifecycle|fifo|plugins|alerts|metrics|reload|claims)$))'
tsan_skip='^unit/(clang-format|layers|exports-|sdk-example|sdk-cxx|sdk-installed)'

cd "$root"
start=$SECONDS
bash "$here/deps.sh"

build() {
    local dir=$1
    shift
    echo "test.sh: building in $dir/"
    cmake -S . -B "$dir" "$@" >/dev/null
    cmake --build "$dir" -j2
}
build build -DCMAKE_BUILD_TYPE=Debug
if [ "$quick" = 0 ]; then
    build build-asan -DTWICE_SANITIZE=ON
    build build-tsan -DTWICE_SANITIZE=thread
fi

run_dir=$(mktemp -d "${TMPDIR:-/tmp}/twice-test.XXXXXX")
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
    bash "$here/testenv.sh" down "$run_dir" >>"$run_dir.down.log" 2>&1 ||
        { cat "$run_dir.down.log" >&2; }
    if [ "$keep" = 1 ]; then
        echo "test.sh: kept $run_dir" >&2
    else
        rm -rf "$run_dir"
    fi
    rm -f "$run_dir.down.log"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

bash "$here/testenv.sh" up "$run_dir"
# shellcheck disable=SC1091
. "$run_dir/env.sh"
echo "test.sh: setup took $((SECONDS - start))s"

status=0
# Checks outside ctest first, so the run ends with ctest's own summary.
if [ "$quick" = 0 ]; then
    # 20 s a target: a smoke run, not a campaign. Each run starts from the
    # committed seeds with a new random seed, so CI's runs add up over time;
    # 10 s less each (ten targets, two at a time) gives CI back ~50 s, which
    # the whole run (39.4 minutes at 30 s) needs to stay under 40.
    echo "test.sh: fuzzing each target for ${TWICE_FUZZ_SECONDS:-20}s (scripts/fuzz.sh)"
    bash "$here/fuzz.sh" "${TWICE_FUZZ_SECONDS:-20}" || status=$?
fi
if [ "$status" = 0 ] && [ "$quick" = 0 ]; then
    echo "test.sh: unit tests under valgrind memcheck (scripts/valgrind-unit.sh)"
    bash "$here/valgrind-unit.sh" build || status=$?
fi
if [ "$status" = 0 ] && [ "$quick" = 0 ]; then
    echo "test.sh: packaging (scripts/package-test.sh)"
    bash "$here/package-test.sh" || status=$?
fi
if [ "$status" = 0 ]; then
    echo "test.sh: ctest in build/"
    (cd build && ctest "${ctest_args[@]}") || status=$?
fi
if [ "$status" = 0 ] && [ "$quick" = 0 ]; then
    echo "test.sh: ctest in build-asan/ (AddressSanitizer + UndefinedBehaviorSanitizer)"
    (cd build-asan &&
        ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 \
            UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
            ctest "${ctest_args[@]}") || status=$?
fi
if [ "$status" = 0 ] && [ "$quick" = 0 ]; then
    echo "test.sh: ctest in build-tsan/ (ThreadSanitizer), the tests that exercise threads"
    tsan_start=$SECONDS
    tsan_select=(-R "$tsan_tests" -E "$tsan_skip")
    [ -z "$regex" ] || tsan_select=(-R "$regex")
    # Every process (twiced's workers too) writes its reports to a file of its
    # own: a race in a child the tests do not watch still fails the run.
    mkdir -p "$run_dir/tsan"
    (cd build-tsan &&
        TSAN_OPTIONS="log_path=$run_dir/tsan/report second_deadlock_stack=1" \
            ctest --output-on-failure -j2 "${tsan_select[@]}") || status=$?
    for report in "$run_dir"/tsan/report.*; do
        [ -e "$report" ] || continue
        echo "test.sh: ThreadSanitizer report ($report):" >&2
        cat "$report" >&2
        status=1
    done
    echo "test.sh: the TSan stage took $((SECONDS - tsan_start))s"
fi
echo "test.sh: $((SECONDS - start))s in all"
exit $status
