#!/usr/bin/env bash
# fuzz.sh: builds the libFuzzer targets (clang, build-fuzz/) and runs each one for SECONDS
# (default 60) on a copy of its committed seed corpus and past crash inputs (nothing under
# tests/fuzz/ is ever written), prints each target's executions, and exits 1 if any target
# crashed, leaked, timed out or ran out of memory. The input that did it is kept under
# build-fuzz/fuzz-artifacts/<target>/ and its path printed: fix the bug, then commit the
# input to tests/fuzz/regress/<target>/ (ctest replays it in every build).
# Not for: reproducing one input (run build-fuzz/fuzz/<target> FILE), or growing the corpus.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     TARGET: fuzz-keytmpl, ... (default: all)
#   FUZZ_RSS_MB (default 2048) caps each target's memory; FUZZ_JOBS (default: the number
#   of cores) targets run at a time.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
seconds=${1:-60}
[ $# -gt 0 ] && shift
case $seconds in
'' | *[!0-9]*)
    echo "fuzz.sh: SECONDS must be a number of seconds, not '$seconds'" >&2
    exit 2
    ;;
esac
rss_mb=${FUZZ_RSS_MB:-2048}
cd "$root"

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    for src in tests/fuzz/fuzz-*.c; do
        targets+=("$(basename "$src" .c)")
    done
fi

echo "fuzz.sh: building in build-fuzz/ (clang, libFuzzer, ASan+UBSan)"
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DTWICE_FUZZ=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz --target fuzz -j2 >/dev/null

work=$(mktemp -d "${TMPDIR:-/tmp}/twice-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
artifacts=$root/build-fuzz/fuzz-artifacts
export LSAN_OPTIONS="suppressions=$root/tests/fuzz/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export TWICE_FUZZ_CONFIG_DIR=$work/config-dir # fuzz-config's scratch directory
mkdir -p "$TWICE_FUZZ_CONFIG_DIR"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

# One target: fuzz it, then print its line (or its report); the exit code says whether
# it passed. Output goes to $work/$t.out so that targets run side by side do not mix.
fuzz_one() {
    local t=$1 bin=build-fuzz/fuzz/$1 log=$work/$1.log rc=0
    mkdir -p "$work/$t" "$artifacts/$t"
    cp -R "tests/fuzz/corpus/$t/." "$work/$t/"
    if [ -d "tests/fuzz/regress/$t" ]; then
        cp -R "tests/fuzz/regress/$t/." "$work/$t/"
    fi
    local args=(-max_total_time="$seconds" -rss_limit_mb="$rss_mb" -timeout=20
                -print_final_stats=1 -artifact_prefix="$artifacts/$t/")
    [ -f "tests/fuzz/$t.dict" ] && args+=(-dict="tests/fuzz/$t.dict")
    "$bin" "${args[@]}" "$work/$t" >"$log" 2>&1 || rc=$?
    local runs corpus
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    corpus=$(find "$work/$t" -type f | wc -l)
    if [ "$rc" = 0 ]; then
        printf 'fuzz.sh: %-18s %10s executions in %ss, corpus %s inputs\n' "$t" "${runs:-?}" \
            "$seconds" "$corpus"
        return 0
    fi
    local unit pattern='^(==[0-9]+== ?ERROR|.*broken promise|.*runtime error)'
    unit=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
    echo "fuzz.sh: $t FAILED (exit $rc) after ${runs:-?} executions; its report:"
    grep -E -A25 "$pattern" "$log" | head -n 60 || tail -n 40 "$log"
    cp "$log" "$artifacts/$t/last.log"
    echo "fuzz.sh: $t: input kept in ${unit:-$artifacts/$t/}"
    echo "fuzz.sh: $t: whole log in $artifacts/$t/last.log"
    return 1
}

for t in "${targets[@]}"; do
    [ -x "build-fuzz/fuzz/$t" ] || { echo "fuzz.sh: no target $t (see tests/fuzz/)" >&2; exit 2; }
done
# FUZZ_JOBS targets at a time (default: one per core): each still gets SECONDS of its
# own, and the whole run takes about SECONDS * targets / FUZZ_JOBS.
jobs=${FUZZ_JOBS:-$(nproc)}
for t in "${targets[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
        wait -n || true
    done
    { rc=0; fuzz_one "$t" >"$work/$t.out" 2>&1 || rc=$?; echo "$rc" >"$work/$t.rc"; } &
done
wait
status=0
for t in "${targets[@]}"; do
    if [ "$(cat "$work/$t.rc" 2>/dev/null)" = 0 ]; then
        cat "$work/$t.out"
    else
        status=1
        cat "$work/$t.out" >&2
    fi
done
exit $status
