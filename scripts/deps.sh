#!/usr/bin/env bash
# deps.sh: installs every build and test dependency of twice on Debian 12: the missing
# Debian packages (apt-get, as root or through sudo) and the pinned SQS emulator (npm ci
# in tests/). Idempotent, and fast when everything is there. Not for: starting servers
# (testenv.sh) or building (test.sh).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")

PACKAGES=(
    build-essential cmake pkg-config clang clang-format git
    libcurl4-openssl-dev libssl-dev libpq-dev libconfig-dev libjansson-dev libyajl-dev
    libmicrohttpd-dev
    postgresql pgbouncer
    python3 python3-psycopg2 python3-aiosmtpd python3-prometheus-client pyflakes3 python3-yaml
    valgrind libfuzzer-14-dev lintian rpm curl logrotate
    locales  # localedef, de_DE and tr_TR: the locale tests build them without root
)

die() {
    echo "deps: $*" >&2
    exit 1
}

installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q '^install ok installed$'
}

missing=()
for p in "${PACKAGES[@]}"; do
    installed "$p" || missing+=("$p")
done
# Node.js may come from elsewhere (this project's machines have NodeSource's, which
# bundles npm): only install Debian's when there is no node at all.
if ! command -v node >/dev/null; then
    missing+=(nodejs npm)
elif ! command -v npm >/dev/null; then
    missing+=(npm)
fi

if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        sudo=()
    elif command -v sudo >/dev/null; then
        sudo=(sudo)
    else
        die "missing packages: ${missing[*]}; install them as root (no sudo here):" \
            "apt-get install ${missing[*]}"
    fi
    echo "deps: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
        die "apt-get install ${missing[*]} failed"
fi

# de_DE.UTF-8, the decimal-comma locale, and tr_TR.UTF-8, where strcasecmp("ID", "id")
# != 0: the locale tests put them in force (a plugin may call setlocale). Without them
# the tests build their own with localedef into a temporary LOCPATH, which works without
# root but is slower.
for loc in de_DE tr_TR; do
    if ! locale -a 2>/dev/null | grep -qx "$loc.utf8"; then
        if [ "$(id -u)" = 0 ]; then
            localedef -i "$loc" -f UTF-8 "$loc.UTF-8" || die "localedef $loc.UTF-8 failed"
        elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
            sudo localedef -i "$loc" -f UTF-8 "$loc.UTF-8" || die "localedef $loc.UTF-8 failed"
        else
            echo "deps: note: no $loc.UTF-8 locale; the locale tests will build their own" >&2
        fi
    fi
done

node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
    echo "deps: warning: node $(node --version) is older than fauxqs 1.9.2 wants (>= 20)" >&2
fi

# The emulator, exactly as locked in tests/package-lock.json. A stamp of the lock file
# skips `npm ci` (which always reinstalls) when node_modules already matches it.
lock=$root/tests/package-lock.json
stamp=$root/tests/node_modules/.twice-lock.sha256
want=$(sha256sum "$lock" | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] ||
    [ ! -f "$root/tests/node_modules/fauxqs/package.json" ]; then
    echo "deps: npm ci in tests/"
    (cd "$root/tests" && npm ci --no-audit --no-fund --loglevel=error) ||
        die "npm ci in tests/ failed"
    echo "$want" >"$stamp"
fi
