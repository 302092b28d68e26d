#!/usr/bin/env bash
# package-test.sh: the packaging check. Builds the packages (twice and twice-dev as .deb,
# twice and twice-devel as .rpm) in build-pkg/, runs lintian on the .debs (no errors, no
# warnings), compares the package contents with packaging/expected/, then installs the .debs
# on this machine and checks what a user gets: twiced --version, twiced -t on the installed
# configuration with a DSN and queue URLs filled in, the system user, the systemd unit
# (systemd-analyze verify), the man pages, pkg-config, the example plugin built out of tree
# and loaded with twicectl plugin check, a unit test against the mock host; at last it
# removes and purges the packages and checks that nothing is left. Needs root (dpkg -i) and
# Debian; idempotent (a leftover install is purged first). Not for: development builds or
# ctest (scripts/test.sh), or installing twice for real.
#
#   scripts/package-test.sh [--keep] [--update-expected]
#     --keep              leave the packages installed (and the work directory) afterwards
#     --update-expected   write the current contents into packaging/expected/ and exit
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
build=$root/build-pkg
expected_dir=$root/packaging/expected
keep=0
update=0

while [ $# -gt 0 ]; do
    case $1 in
    --keep) keep=1 ;;
    --update-expected) update=1 ;;
    -h | --help)
        sed -n '2,/^set /p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "package-test.sh: unknown option $1 (see --help)" >&2
        exit 2
        ;;
    esac
    shift
done

failures=0
die() {
    echo "package-test: FAIL: $*" >&2
    exit 1
}
fail() {
    echo "package-test: FAIL: $*" >&2
    failures=$((failures + 1))
}
ok() {
    echo "package-test: ok: $*"
}
step() {
    echo "package-test: --- $* ($((SECONDS - start))s)"
}

[ "$(id -u)" = 0 ] || die "needs root (it installs and purges the .deb packages)"
start=$SECONDS

# ---- tools ----
need=()
for tool in cmake:cmake cc:gcc lintian:lintian rpm:rpm rpmbuild:rpm dpkg-shlibdeps:dpkg-dev \
    dpkg-architecture:dpkg-dev systemd-analyze:systemd man:man-db pkg-config:pkg-config \
    strip:binutils; do
    command -v "${tool%%:*}" >/dev/null || need+=("${tool#*:}")
done
if [ ${#need[@]} -gt 0 ]; then
    echo "package-test: installing ${need[*]}"
    apt-get update -qq || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" \
        >/dev/null || die "apt-get install ${need[*]} failed"
fi

version=$(sed -n 's/^project(twice VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
[ -n "$version" ] || die "no project version in CMakeLists.txt"
pkgversion=$version-1
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
debarch=$(dpkg-architecture -qDEB_HOST_ARCH)
rpmarch=$(uname -m)
plugindir=/usr/lib/$multiarch/twice/plugins

work=$(mktemp -d "${TMPDIR:-/tmp}/twice-pkgtest.XXXXXX")
installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q ' installed$'
}
purge() {
    local p pkgs=()
    for p in twice-dev twice; do
        if dpkg-query -W -f='${Status}' "$p" >/dev/null 2>&1; then
            pkgs+=("$p")
        fi
    done
    [ ${#pkgs[@]} -eq 0 ] || dpkg --purge "${pkgs[@]}" >"$work/purge.log" 2>&1 ||
        { cat "$work/purge.log" >&2; return 1; }
}
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
    if [ "$keep" = 1 ]; then
        echo "package-test: kept the installed packages and $work" >&2
        return
    fi
    purge || echo "package-test: purging the packages failed" >&2
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

# ---- build ----
step "building the packages in build-pkg/"
if installed twice || installed twice-dev; then
    echo "package-test: purging a previous install of twice first"
    purge || die "could not purge the installed twice packages"
fi
rm -f "$build"/*.deb "$build"/*.rpm
cmake -S "$root" -B "$build" -C "$root/packaging/package.cmake" >"$work/configure.log" 2>&1 ||
    { cat "$work/configure.log" >&2; die "cmake configure failed"; }
cmake --build "$build" -j"$(nproc)" --target package >"$work/build.log" 2>&1 ||
    { tail -40 "$work/build.log" >&2; die "cmake --build --target package failed"; }

deb_run=$build/twice_${pkgversion}_$debarch.deb
deb_dev=$build/twice-dev_${pkgversion}_$debarch.deb
rpm_run=$build/twice-$pkgversion.$rpmarch.rpm
rpm_dev=$build/twice-devel-$pkgversion.$rpmarch.rpm
for f in "$deb_run" "$deb_dev" "$rpm_run" "$rpm_dev"; do
    [ -f "$f" ] || die "missing package $f (made: $(cd "$build" && ls -- *.deb *.rpm 2>/dev/null))"
done
count=$(find "$build" -maxdepth 1 \( -name '*.deb' -o -name '*.rpm' \) | wc -l)
[ "$count" = 4 ] || fail "expected 2 .deb and 2 .rpm, found $count package files"
ok "2 .deb and 2 .rpm ($((SECONDS - start))s)"

# ---- contents ----
# "mode owner path" per entry, paths without the leading "." and the trailing "/", with the
# architecture-specific parts replaced so one list serves every architecture.
deb_list() {
    dpkg-deb -c "$1" | awk '{ p = $6; sub(/^\./, "", p); sub(/\/$/, "", p); if (p != "")
        print $1, $2, p }' | sed "s#/$multiarch\(/\|\$\)#/@MULTIARCH@\1#" | LC_ALL=C sort -k3
}
rpm_list() {
    rpm -qp --qf '[%{FILEMODES:perms} %{FILEUSERNAME}/%{FILEGROUPNAME} %{FILENAMES}\n]' "$1" |
        LC_ALL=C sort -k3
}
lists=("twice.deb:$deb_run:deb" "twice-dev.deb:$deb_dev:deb" "twice.rpm:$rpm_run:rpm"
    "twice-devel.rpm:$rpm_dev:rpm")
if [ "$update" = 1 ]; then
    mkdir -p "$expected_dir"
    for l in "${lists[@]}"; do
        IFS=: read -r name file kind <<<"$l"
        "${kind}_list" "$file" >"$expected_dir/$name.list"
        echo "package-test: wrote packaging/expected/$name.list"
    done
    exit 0
fi
step "contents against packaging/expected/"
for l in "${lists[@]}"; do
    IFS=: read -r name file kind <<<"$l"
    "${kind}_list" "$file" >"$work/$name.list"
    if diff -u "$expected_dir/$name.list" "$work/$name.list" >"$work/$name.diff"; then
        ok "contents of $(basename "$file")"
    else
        cat "$work/$name.diff" >&2
        fail "contents of $(basename "$file") differ from packaging/expected/$name.list" \
            "(if the change is meant: scripts/package-test.sh --update-expected)"
    fi
done

# ---- metadata ----
step "package metadata"
deps=$(dpkg-deb -f "$deb_run" Depends)
for lib in libcurl4 libpq5 libconfig9 libjansson4 libyajl2 libmicrohttpd12 libsystemd0 libssl3 \
    adduser; do
    [[ "$deps" == *"$lib"* ]] || fail "twice.deb does not depend on $lib (Depends: $deps)"
done
[[ "$(dpkg-deb -f "$deb_dev" Depends)" == *"twice (= $pkgversion)"* ]] ||
    fail "twice-dev.deb does not depend on twice (= $pkgversion)"
[ "$(dpkg-deb -f "$deb_run" Version)" = "$pkgversion" ] ||
    fail "twice.deb version is not $pkgversion"
[ "$(dpkg-deb --ctrl-tarfile "$deb_run" | tar -xOf - ./conffiles)" = /etc/twice/twice.conf ] ||
    fail "twice.deb: /etc/twice/twice.conf is not its one conffile"
if dpkg-deb --ctrl-tarfile "$deb_run" | tar -xOf - ./postinst ./prerm ./postrm |
    grep -E '^[^#]*(systemctl|deb-systemd-invoke) .*[[:space:]](start|enable)([[:space:]]|$)' \
        >&2; then
    fail "twice.deb's maintainer scripts start or enable the service"
fi
rpm -qp --qf '[%{FILEFLAGS:fflags} %{FILENAMES}\n]' "$rpm_run" |
    grep -qx 'cn /etc/twice/twice.conf' ||
    fail "twice.rpm: /etc/twice/twice.conf is not %config(noreplace)"
rpm -qpR "$rpm_run" >"$work/rpm-requires"
for lib in libcurl.so.4 libpq.so.5 libconfig.so.9 libjansson.so.4 libyajl.so.2 \
    libmicrohttpd.so.12; do
    grep -q "^$lib()" "$work/rpm-requires" || fail "twice.rpm does not require $lib"
done
rpm -qpR "$rpm_dev" | grep -qx "twice = $pkgversion" ||
    fail "twice-devel.rpm does not require twice = $pkgversion"
rpm -qp --scripts "$rpm_run" | grep -q systemd-sysusers ||
    fail "twice.rpm does not create its user"
ok "dependencies, conffile, %config(noreplace), scripts"

# ---- lintian ----
step "lintian"
if lintian --fail-on error,warning --info --pedantic "$deb_run" "$deb_dev" \
    >"$work/lintian.log" 2>&1; then
    grep -v '^running with root' "$work/lintian.log" || true
    ok "lintian: no errors or warnings"
else
    cat "$work/lintian.log" >&2
    fail "lintian found errors or warnings" \
        "(fix them, or override one in packaging/lintian/ with its reason)"
fi

# ---- install ----
step "installing the .debs"
if ! dpkg -i "$deb_run" "$deb_dev" >"$work/install.log" 2>&1; then
    echo "package-test: dpkg -i needs dependencies: apt-get -f install"
    DEBIAN_FRONTEND=noninteractive apt-get -f install -y -qq >>"$work/install.log" 2>&1 ||
        { cat "$work/install.log" >&2; die "installing the .debs failed"; }
fi
if ! installed twice || ! installed twice-dev; then
    cat "$work/install.log" >&2
    die "twice and twice-dev are not installed after dpkg -i"
fi
ok "installed twice and twice-dev"

out=$(twiced --version)
[[ "$out" == "twiced $version (plugin ABI "* ]] || fail "twiced --version says '$out'"
out=$(twicectl --version)
[[ "$out" == "twicectl $version"* ]] || fail "twicectl --version says '$out'"
IFS=: read -r _ _ uid gid _ home shell <<<"$(getent passwd twice)" || true
if [ -z "${uid:-}" ]; then
    fail "no user twice after the install"
else
    [ "$uid" -lt 1000 ] || fail "user twice is not a system user (uid $uid)"
    [[ "$shell" == */nologin ]] || fail "user twice has the login shell $shell"
    [ "$(getent group twice | cut -d: -f3)" = "$gid" ] || fail "user twice is not in group twice"
    ok "system user twice (uid $uid, home $home, shell $shell)"
fi
grep -qx "plugin_dir = \"$plugindir\";" /etc/twice/twice.conf ||
    fail "/etc/twice/twice.conf does not set plugin_dir = \"$plugindir\""
perm=$(stat -c '%a %U:%G' /etc/twice/twice.conf)
[ "$perm" = "640 root:twice" ] || fail "/etc/twice/twice.conf is $perm, not 640 root:twice"

# ---- the installed configuration ----
step "twiced -t on the installed configuration"
conf=$work/twice.conf
sqs=https://sqs.eu-central-1.amazonaws.com/000000000000/
sed -e 's|^\( *dsn = \)".*";|\1"host=db.example.org dbname=app user=twice";|' \
    -e 's#^\( *\)\(url\|dlq_url\) = "https://sqs\.[^"]*/\([^"/]*\)";#\1\2 = "'"$sqs"'app-\3";#' \
    /etc/twice/twice.conf >"$conf"
grep -q 'app-' "$conf" || fail "no queue URL to fill in in /etc/twice/twice.conf"
if twiced -t -c "$conf" >"$work/t.out" 2>&1; then
    ok "twiced -t: $(tail -1 "$work/t.out")"
else
    cat "$work/t.out" >&2
    fail "twiced -t fails on the installed configuration (DSN and queue URLs filled in)"
fi
# The service's user reads the installed file and may load the plugins.
if runuser -u twice -- twiced -t -c /etc/twice/twice.conf >"$work/t-user.out" 2>&1; then
    ok "twiced -t as the user twice on /etc/twice/twice.conf as installed"
else
    cat "$work/t-user.out" >&2
    fail "twiced -t as the user twice on /etc/twice/twice.conf as installed"
fi
# The check must be able to fail: a bad value gives FILE:LINE and exit 1.
sed 's/^workers = .*/workers = 0;/' "$conf" >"$work/bad.conf"
if twiced -t -c "$work/bad.conf" >"$work/bad.out" 2>&1 ||
    ! grep -q "^$work/bad.conf:[0-9]*: " "$work/bad.out"; then
    cat "$work/bad.out" >&2
    fail "twiced -t does not report workers = 0 as FILE:LINE with exit 1"
fi

# ---- systemd unit, man pages ----
step "systemd unit and man pages"
unit=/usr/lib/systemd/system/twice.service
if SYSTEMD_LOG_LEVEL=warning systemd-analyze verify "$unit" >"$work/verify.log" 2>&1 &&
    ! grep -q . "$work/verify.log"; then
    ok "systemd-analyze verify $unit"
else
    cat "$work/verify.log" >&2
    fail "systemd-analyze verify $unit"
fi
for k in Type=notify "ExecStart=/usr/sbin/twiced -f -c /etc/twice/twice.conf" User=twice \
    KillMode=mixed NoNewPrivileges=yes ProtectSystem=strict; do
    grep -qx "$k" "$unit" || fail "$unit lacks $k"
done
stop=$(sed -n 's/^TimeoutStopSec=//p' "$unit")
drain=$(sed -n 's/^drain_timeout = \([0-9]*\);/\1/p' /etc/twice/twice.conf)
[ "${stop:-0}" -gt "${drain:-0}" ] ||
    fail "TimeoutStopSec ($stop) is not above drain_timeout ($drain)"
for page in twiced.8 twicectl.1 twice.conf.5 twice-plugin.3; do
    path=$(man -w "${page%.*}" 2>/dev/null | head -1)
    [ -n "$path" ] || { fail "man ${page%.*}: not found"; continue; }
    warnings=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$path" 2>&1 >/dev/null ||
        true)
    [ -z "$warnings" ] || fail "man page $path: $warnings"
done
ok "man pages found, no groff warnings"

# ---- SDK: pkg-config, out-of-tree plugin, mock host ----
step "an out-of-tree plugin with the installed SDK"
[ "$(pkg-config --modversion twice-plugin)" = "$version" ] ||
    fail "pkg-config --modversion twice-plugin is not $version"
cflags=$(PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 pkg-config --cflags twice-plugin)
[ "${cflags% }" = "-I/usr/include" ] ||
    fail "pkg-config --cflags twice-plugin is not -I/usr/include"
[ "$(pkg-config --variable=plugindir twice-plugin)" = "$plugindir" ] ||
    fail "pkg-config --variable=plugindir twice-plugin is not $plugindir"
example=/usr/share/doc/twice-dev/examples/hello.c
plug=$work/plugin
mkdir -m 700 "$plug"
cp "$example" "$plug/hello.c"
# shellcheck disable=SC2046  # pkg-config's output is words
if (cd "$plug" && cc -shared -fPIC -fvisibility=hidden -Wall -Wextra -Werror -H \
    $(pkg-config --cflags twice-plugin) -o hello.so hello.c) 2>"$work/cc.log"; then
    grep -q '^\. /usr/include/twice/plugin\.h$' "$work/cc.log" ||
        fail "hello.c was not built with the installed /usr/include/twice/plugin.h"
    ok "built $example out of tree"
else
    cat "$work/cc.log" >&2
    fail "building $example with pkg-config --cflags twice-plugin"
fi
# twicectl plugin check: exit 0 and the descriptor for a good plugin; 1 for a bad one.
if twicectl plugin check "$plug/hello.so" >"$work/check.out" 2>&1 &&
    grep -q 'hello' "$work/check.out" && grep -q 'hello:{id}' "$work/check.out"; then
    ok "twicectl plugin check hello.so: $(head -1 "$work/check.out")"
else
    cat "$work/check.out" >&2
    fail "twicectl plugin check $plug/hello.so did not exit 0 with the descriptor" \
        "(name, key template)"
fi
printf 'int not_a_plugin(void);\nint not_a_plugin(void) { return 0; }\n' >"$plug/bad.c"
cc -shared -fPIC -o "$plug/bad.so" "$plug/bad.c"
rc=0
twicectl plugin check "$plug/bad.so" >"$work/bad-check.out" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "twicectl plugin check of a .so without entry point exits $rc, not 1"
# And the daemon loads it from the installed configuration.
sed 's|^plugins = (|&\n    { name = "hello"; path = "'"$plug"'/hello.so"; },|' "$conf" \
    >"$work/hello.conf"
twiced -t -c "$work/hello.conf" >"$work/hello-t.out" 2>&1 ||
    { cat "$work/hello-t.out" >&2; fail "twiced -t with the out-of-tree hello.so"; }

# The test defines a buf_append of its own: the mock host carries core's key code, but
# exports nothing beyond twice_mock_*, so a user's names never clash with core's.
cat >"$plug/test-hello.c" <<'EOF'
#include <stdio.h>
#include <string.h>
#include <twice/mock.h>

int buf_append(const char *s);
int
buf_append(const char *s)
{
    return (int) strlen(s);
}

int
main(int argc, char **argv)
{
    char err[256];
    twice_mock *m = argc > 1 ? twice_mock_open(argv[1], err, sizeof(err)) : NULL;
    if (m == NULL || twice_mock_init(m) != 0) {
        fprintf(stderr, "mock: %s\n", m == NULL ? err : twice_mock_error(m));
        return 1;
    }
    twice_mock_job *j = twice_mock_job_new(m, "{\"id\":42,\"name\":\"Ana\"}");
    twice_status st = twice_mock_run(j);
    const char *key = twice_mock_job_key(j);
    int bad = st != TWICE_DONE || key == NULL || strcmp(key, "hello:42") != 0;
    twice_mock_job_free(j);
    j = twice_mock_job_new(m, "{\"name\":\"no id\"}");
    bad |= twice_mock_run(j) != TWICE_REJECT || twice_mock_job_handled(j);
    const char *why = twice_mock_job_reason(j);
    bad |= why == NULL || strcmp(why, "missing-key-field") != 0 || buf_append("x") != 1;
    twice_mock_job_free(j);
    twice_mock_free(m);
    return bad;
}
EOF
# shellcheck disable=SC2046
if (cd "$plug" && cc -Wall -Wextra -Werror $(pkg-config --cflags twice-mock) -o test-hello \
    test-hello.c $(pkg-config --libs twice-mock)) >"$work/mock.log" 2>&1 &&
    "$plug/test-hello" "$plug/hello.so" >>"$work/mock.log" 2>&1; then
    ok "a unit test of hello.so against the installed mock host (pkg-config twice-mock)"
else
    cat "$work/mock.log" >&2
    fail "unit test of hello.so with pkg-config twice-mock"
fi

# ---- remove and purge ----
if [ "$keep" = 1 ]; then
    echo "package-test: --keep: not removing the packages"
else
    step "remove and purge"
    dpkg --remove twice-dev twice >"$work/remove.log" 2>&1 ||
        { cat "$work/remove.log" >&2; fail "dpkg --remove"; }
    [ -f /etc/twice/twice.conf ] || fail "removing (not purging) twice deleted its conffile"
    [ ! -e /usr/sbin/twiced ] || fail "/usr/sbin/twiced is still there after removing twice"
    dpkg --purge twice-dev twice >"$work/purge.log" 2>&1 ||
        { cat "$work/purge.log" >&2; fail "dpkg --purge"; }
    for p in /etc/twice /usr/sbin/twiced /usr/bin/twicectl "/usr/lib/$multiarch/twice" \
        /usr/share/twice /usr/include/twice /usr/share/doc/twice /usr/share/doc/twice-dev \
        /usr/lib/systemd/system/twice.service /usr/lib/sysusers.d/twice.conf \
        "/usr/lib/$multiarch/pkgconfig/twice-plugin.pc" "/usr/lib/$multiarch/libtwice-mock.a"; do
        [ ! -e "$p" ] || fail "$p is left after the purge"
    done
    for p in twice twice-dev; do
        st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
        [ -z "$st" ] || [ "$st" = not-installed ] || fail "$p is $st after the purge"
    done
    # Policy: the system user stays (files it wrote may remain; a reused uid would own them).
    getent passwd twice >/dev/null || fail "the user twice was removed; the policy is to keep it"
    ok "removed and purged: nothing left but the user twice (kept on purpose)"
fi

echo "package-test: took $((SECONDS - start))s"
if [ "$failures" -gt 0 ]; then
    echo "package-test: $failures check(s) FAILED" >&2
    exit 1
fi
echo "package-test: all checks passed"
