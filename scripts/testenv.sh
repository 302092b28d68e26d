#!/usr/bin/env bash
# testenv.sh: starts and stops the servers of one test run, all on 127.0.0.1 and free
# ports: a throwaway PostgreSQL cluster, the SQS emulator fauxqs (which answers SNS and
# S3 on the same port), an SMTP sink and an HTTP receiver. Not for: installing anything
# (deps.sh) or running tests (test.sh).
#
#   scripts/testenv.sh up RUN_DIR     start everything, wait until each answers, write
#                                     RUN_DIR/env.sh (the TWICE_TEST_* variables)
#   scripts/testenv.sh down RUN_DIR   stop everything started there (safe to repeat)
#   scripts/testenv.sh env RUN_DIR    print RUN_DIR/env.sh
#   scripts/testenv.sh pg-restart RUN_DIR
#                                     restart PostgreSQL (pg_ctl restart -m fast): the
#                                     outage of the fault tests
#
# Layout of RUN_DIR: pg/ (data/, log, sockets), fauxqs.log, smtp.log, http.log, mail/,
# *.pid, env.sh. As root, PostgreSQL runs as the `postgres` user, so RUN_DIR must be
# reachable by it (a directory under /tmp is).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
PY=/usr/bin/python3
PGUSER_NAME=twice_test
SMTP_USER=twice
SMTP_PASSWORD=twice-smtp-test
WAIT_SECONDS=${TWICE_TESTENV_WAIT:-30}
# name:script pairs; the script name is checked in /proc before a pid is signalled.
SERVERS="fauxqs:fauxqs.mjs smtp:smtp-sink.py http:http-receiver.py"

die() {
    echo "testenv: $*" >&2
    exit 1
}

usage() {
    echo "usage: $0 up|down|env|pg-restart RUN_DIR" >&2
    exit 2
}

is_root() { [ "$(id -u)" = 0 ]; }

# Run a PostgreSQL program as the cluster's owner: `postgres` when we are root (initdb
# refuses root), ourselves otherwise. From inside pg/, so that user can stat its cwd.
as_pg() {
    if is_root; then
        (cd "$run_dir/pg" && runuser -u postgres -- "$@")
    else
        (cd "$run_dir/pg" && "$@")
    fi
}

pg_bindir() {
    if [ -n "${TWICE_PG_BINDIR:-}" ]; then
        echo "$TWICE_PG_BINDIR"
    elif [ -x /usr/lib/postgresql/15/bin/initdb ]; then
        echo /usr/lib/postgresql/15/bin
    else
        local d best=
        for d in /usr/lib/postgresql/*/bin; do
            [ -x "$d/initdb" ] && best=$d
        done
        [ -n "$best" ] ||
            die "no PostgreSQL server binaries in /usr/lib/postgresql: run scripts/deps.sh"
        echo "$best"
    fi
}

show_log() {
    if [ -f "$1" ]; then
        echo "---- $1 (last lines) ----" >&2
        tail -n 40 "$1" >&2
        echo "----" >&2
    fi
}

# A pid from a pid file, if that process is alive and runs the expected program.
live_pid() {
    local pidfile=$1 want=$2 pid
    [ -f "$pidfile" ] || return 1
    pid=$(head -n 1 "$pidfile")
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    [ -r "/proc/$pid/cmdline" ] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$want" || return 1
    echo "$pid"
}

pg_up() {
    local bindir pgdir=$run_dir/pg sockdir
    bindir=$(pg_bindir)
    mkdir -p "$pgdir"
    if is_root; then
        id postgres >/dev/null 2>&1 || die "no postgres system user: run scripts/deps.sh"
        chmod 711 "$run_dir"
        chown postgres:postgres "$pgdir"
        chmod 700 "$pgdir"
        runuser -u postgres -- test -w "$pgdir" ||
            die "user postgres cannot reach $pgdir (a parent directory is closed to it):" \
                "use a RUN_DIR under /tmp"
    fi
    # Unix socket paths are limited to 107 bytes: use a short directory if need be.
    sockdir=$pgdir
    if [ $((${#pgdir} + 20)) -gt 100 ]; then
        sockdir=$(mktemp -d /tmp/twpg.XXXXXX)
        echo "$sockdir" >"$run_dir/pg-sockdir"
        if is_root; then chown postgres:postgres "$sockdir"; fi
    fi
    (umask 077 && printf '%s\n' "$pg_password" >"$pgdir/pwfile")
    if is_root; then chown postgres:postgres "$pgdir/pwfile"; fi
    if ! as_pg "$bindir/initdb" -D "$pgdir/data" -U "$PGUSER_NAME" --pwfile="$pgdir/pwfile" \
        --auth-local=scram-sha-256 --auth-host=scram-sha-256 -E UTF8 --no-locale --no-sync \
        >"$pgdir/initdb.log" 2>&1; then
        rm -f "$pgdir/pwfile"
        show_log "$pgdir/initdb.log"
        die "initdb failed"
    fi
    rm -f "$pgdir/pwfile"
    cat >>"$pgdir/data/postgresql.conf" <<EOF

# twice test run (scripts/testenv.sh)
listen_addresses = '127.0.0.1'
port = $pg_port
unix_socket_directories = '$sockdir'
max_connections = 200
fsync = on
synchronous_commit = on
log_line_prefix = '%m [%p] %q%u@%d '
shared_preload_libraries = 'pg_stat_statements'
EOF
    if ! as_pg "$bindir/pg_ctl" -D "$pgdir/data" -l "$pgdir/log" -w -t 60 start \
        >"$pgdir/pg_ctl.log" 2>&1; then
        show_log "$pgdir/pg_ctl.log"
        show_log "$pgdir/log"
        die "PostgreSQL did not start on 127.0.0.1:$pg_port"
    fi
    if ! TWICE_TEST_PGUSER=$PGUSER_NAME TWICE_TEST_PGPASSWORD=$pg_password \
        $PY "$here/envtool.py" wait pg "$pg_port" --timeout "$WAIT_SECONDS"; then
        show_log "$pgdir/log"
        die "PostgreSQL does not accept the twice_test password on 127.0.0.1:$pg_port"
    fi
}

pg_down() {
    local pgdir=$run_dir/pg pid
    if [ -f "$pgdir/data/postmaster.pid" ]; then
        if ! as_pg "$(pg_bindir)/pg_ctl" -D "$pgdir/data" -m fast -w -t 30 stop \
            >>"$pgdir/pg_ctl.log" 2>&1; then
            pid=$(live_pid "$pgdir/data/postmaster.pid" postgres || true)
            if [ -n "$pid" ]; then
                echo "testenv: pg_ctl stop failed; killing postmaster $pid" >&2
                kill -KILL "$pid" 2>/dev/null || true
            fi
        fi
    fi
    if [ -f "$run_dir/pg-sockdir" ]; then
        rm -rf "$(cat "$run_dir/pg-sockdir")"
        rm -f "$run_dir/pg-sockdir"
    fi
}

# start_server NAME KIND PORT COMMAND...: run COMMAND in the background with its output
# in RUN_DIR/NAME.log, record its pid, and wait until it answers.
start_server() {
    local name=$1 kind=$2 port=$3
    shift 3
    "$@" >"$run_dir/$name.log" 2>&1 </dev/null &
    local pid=$!
    echo "$pid" >"$run_dir/$name.pid"
    if ! $PY "$here/envtool.py" wait "$kind" "$port" --pid "$pid" \
        --timeout "$WAIT_SECONDS"; then
        show_log "$run_dir/$name.log"
        die "$name did not start on 127.0.0.1:$port"
    fi
}

stop_server() {
    local name=$1 script=$2 pid
    pid=$(live_pid "$run_dir/$name.pid" "$script" || true)
    if [ -n "$pid" ]; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 100); do
            live_pid "$run_dir/$name.pid" "$script" >/dev/null || break
            sleep 0.1
        done
        if live_pid "$run_dir/$name.pid" "$script" >/dev/null; then
            echo "testenv: $name (pid $pid) ignored SIGTERM; killing it" >&2
            kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    rm -f "$run_dir/$name.pid"
}

write_env() {
    local tmp=$run_dir/.env.sh.tmp
    local pg_dsn=postgresql://$PGUSER_NAME:$pg_password@127.0.0.1:$pg_port/postgres
    {
        echo "# Written by scripts/testenv.sh up: the servers of this test run."
        echo "# Source it (. $run_dir/env.sh) before running ctest by hand."
        printf 'export TWICE_TEST_RUN_DIR=%q\n' "$run_dir"
        echo "export TWICE_TEST_PGHOST=127.0.0.1"
        echo "export TWICE_TEST_PGPORT=$pg_port"
        echo "export TWICE_TEST_PGUSER=$PGUSER_NAME"
        echo "export TWICE_TEST_PGPASSWORD=$pg_password"
        echo "export TWICE_TEST_PGDSN=$pg_dsn"
        echo "export TWICE_TEST_SQS_ENDPOINT=http://127.0.0.1:$sqs_port"
        # fauxqs serves SNS (query protocol) and S3 (path-style: /bucket/key) on the same port
        echo "export TWICE_TEST_SNS_ENDPOINT=http://127.0.0.1:$sqs_port"
        echo "export TWICE_TEST_S3_ENDPOINT=http://127.0.0.1:$sqs_port"
        echo "export TWICE_TEST_REGION=us-east-1"
        echo "export TWICE_TEST_SMTP_PORT=$smtp_port"
        printf 'export TWICE_TEST_SMTP_DIR=%q\n' "$run_dir/mail"
        echo "export TWICE_TEST_SMTP_USER=$SMTP_USER"
        echo "export TWICE_TEST_SMTP_PASSWORD=$SMTP_PASSWORD"
        echo "export TWICE_TEST_HTTP_PORT=$http_port"
        echo "export TWICE_TEST_HTTP_URL=http://127.0.0.1:$http_port"
    } >"$tmp"
    mv "$tmp" "$run_dir/env.sh"
}

# `up` on a RUN_DIR that is up would orphan its servers: refuse, before the EXIT trap
# that stops everything on failure is set.
refuse_if_up() {
    local entry
    for entry in $SERVERS; do
        if live_pid "$run_dir/${entry%%:*}.pid" "${entry#*:}" >/dev/null; then
            die "servers already running in $run_dir: run '$0 down $run_dir' first"
        fi
    done
    if [ -f "$run_dir/pg/data/postmaster.pid" ]; then
        die "PostgreSQL already running in $run_dir: run '$0 down $run_dir' first"
    fi
}

do_up() {
    rm -rf "$run_dir/pg" "$run_dir/mail" "$run_dir/env.sh"
    [ -x $PY ] || die "$PY not found: run scripts/deps.sh"
    command -v node >/dev/null || die "node not found: run scripts/deps.sh"
    [ -f "$root/tests/node_modules/fauxqs/package.json" ] ||
        die "fauxqs is not installed in tests/node_modules: run scripts/deps.sh"

    read -r pg_port sqs_port smtp_port http_port < <($PY "$here/envtool.py" ports 4)
    [ -n "${http_port:-}" ] || die "could not pick free ports (scripts/envtool.py ports)"
    pg_password=$($PY "$here/envtool.py" secret)
    mkdir -p "$run_dir/mail"

    start_server fauxqs sqs "$sqs_port" node "$here/fauxqs.mjs" --port "$sqs_port" \
        --modules "$root/tests/node_modules"
    start_server smtp smtp "$smtp_port" $PY "$here/smtp-sink.py" --port "$smtp_port" \
        --dir "$run_dir/mail" --user "$SMTP_USER" --password "$SMTP_PASSWORD"
    start_server http http "$http_port" $PY "$here/http-receiver.py" --port "$http_port"
    pg_up
    write_env
    echo "testenv: up in $run_dir (PostgreSQL :$pg_port, SQS :$sqs_port," \
        "SMTP :$smtp_port, HTTP :$http_port)"
}

do_down() {
    local entry
    [ -d "$run_dir" ] || return 0
    pg_down
    for entry in $SERVERS; do
        stop_server "${entry%%:*}" "${entry#*:}"
    done
    rm -f "$run_dir/env.sh"
}

# EXIT trap of `up`: on failure, stop whatever was started.
up_failed() {
    if [ "$1" -ne 0 ]; then
        do_down
    fi
}

cmd=${1:-}
run_dir=${2:-}
if [ -z "$cmd" ] || [ -z "$run_dir" ]; then
    usage
fi
case $cmd in
up)
    mkdir -p "$run_dir"
    run_dir=$(cd "$run_dir" && pwd)
    refuse_if_up
    # Whatever made `up` fail, leave nothing running behind it.
    trap 'up_failed $?' EXIT
    do_up
    ;;
down)
    [ -d "$run_dir" ] || exit 0
    run_dir=$(cd "$run_dir" && pwd)
    do_down
    ;;
env)
    [ -f "$run_dir/env.sh" ] || die "no $run_dir/env.sh: run '$0 up $run_dir' first"
    cat "$run_dir/env.sh"
    ;;
pg-restart)
    run_dir=$(cd "$run_dir" && pwd)
    as_pg "$(pg_bindir)/pg_ctl" -D "$run_dir/pg/data" -l "$run_dir/pg/log" -m fast -w -t 60 \
        restart >>"$run_dir/pg/pg_ctl.log" 2>&1 || {
        show_log "$run_dir/pg/log"
        die "PostgreSQL did not restart"
    }
    ;;
*) usage ;;
esac
