#!/usr/bin/env bash
# package-test.sh: the packaging check. Builds the packages (twice and twice-dev as .deb,
# twice and twice-devel as .rpm) in build-pkg/, runs lintian on the .debs (no errors, no
# warnings), compares the package contents with packaging/expected/, checks the maintainer
# scripts and rpm scriptlets the packages carry (sh -n, shellcheck -s sh), then installs the
# .debs on this machine and checks what a user gets: twiced --version, twiced -t on the
# installed configuration with a DSN and queue URLs filled in, the system user, the systemd
# unit (systemd-analyze verify), the man pages, pkg-config, the example plugin built out of
# tree and loaded with twicectl plugin check, a unit test against the mock host, an upgrade
# from a previous package (an edited conffile, an admin's plugin, the enablement and logs
# kept); at last it removes and purges the packages and checks that nothing is left. The
# README's commands for building the packages, installing them and writing a plugin are
# read from README.md and run as written (sudo is the user's own: the script runs as root),
# so the README cannot go stale. Needs root (apt-get, dpkg) and Debian; idempotent (a
# leftover install is purged first). Not for: development builds or ctest (scripts/test.sh),
# or installing twice for real.
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
readme=$root/README.md
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
    strip:binutils logrotate:logrotate shellcheck:shellcheck; do
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

# ---- the README's commands ----
# The n-th code block indented by 4 spaces in the section "## $1" of README.md (fenced
# blocks skipped), unindented: commands exactly as a reader copies them.
readme_block() {
    awk -v want="## $1" -v n="$2" '
        /^## / { section = ($0 == want); next }
        !section { next }
        /^```/ { fenced = !fenced; inblock = 0; next }
        fenced { next }
        /^    / { if (!inblock) { block++; inblock = 1 } if (block == n) print substr($0, 5); next }
        { inblock = 0 }' "$readme"
}
# The first ```$2 fenced block of the section "## $1".
readme_fence() {
    awk -v want="## $1" -v lang="$2" '
        /^## / { section = ($0 == want); next }
        !section || done { next }
        $0 == "```" lang { fenced = 1; next }
        fenced && /^```/ { fenced = 0; done = 1; next }
        fenced { print }' "$readme"
}
# Run a README block (from readme_block) with bash -e in directory $2; its output in log $3.
# The README's file names carry this machine's architecture; sudo is a no-op (we are root);
# a question (apt-get's "Do you want to continue?") is answered yes, as its reader would.
shim=$work/shim
mkdir -p "$shim"
printf '#!/bin/sh\nexec "$@"\n' >"$shim/sudo"
chmod 755 "$shim/sudo"
run_readme() {
    local script=$work/readme-$3.sh
    printf '%s\n' "$1" | sed -e "s/_amd64\.deb/_${debarch}.deb/g" >"$script"
    [ -s "$script" ] || die "no such command block in README.md (for $3)"
    echo "package-test: README.md, as written:"
    sed 's/^/    /' "$script"
    printf 'y\ny\n' | (cd "$2" && PATH=$shim:$PATH CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) \
        DEBIAN_FRONTEND=noninteractive bash -e "$script") >"$work/$3.log" 2>&1
}

# ---- build ----
step "building the packages in build-pkg/, as README.md says"
if installed twice || installed twice-dev; then
    echo "package-test: purging a previous install of twice first"
    purge || die "could not purge the installed twice packages"
fi
rm -f "$build"/*.deb "$build"/*.rpm
[ "$build" = "$root/build-pkg" ] || die "the README builds in build-pkg/"
run_readme "$(readme_block "Install from packages" 1)" "$root" build ||
    { tail -40 "$work/build.log" >&2; die "the README's build commands failed"; }

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
for lib in libcurl4 libpq5 libconfig9 libjansson4 libyajl2 libmicrohttpd12 libssl3 adduser; do
    [[ "$deps" == *"$lib"* ]] || fail "twice.deb does not depend on $lib (Depends: $deps)"
done
# twiced speaks the sd_notify protocol itself (core/proc/notify.c): libsystemd and the
# libraries it brings must not come back into every process.
[[ "$deps" != *libsystemd* ]] || fail "twice.deb depends on libsystemd (Depends: $deps)"
[[ "$(dpkg-deb -f "$deb_dev" Depends)" == *"twice (= $pkgversion)"* ]] ||
    fail "twice-dev.deb does not depend on twice (= $pkgversion)"
[ "$(dpkg-deb -f "$deb_run" Version)" = "$pkgversion" ] ||
    fail "twice.deb version is not $pkgversion"
[ "$(dpkg-deb --ctrl-tarfile "$deb_run" | tar -xOf - ./conffiles | sort)" = \
    "$(printf '%s\n' /etc/logrotate.d/twice /etc/twice/twice.conf)" ] ||
    fail "twice.deb: its conffiles are not /etc/twice/twice.conf and /etc/logrotate.d/twice"
if dpkg-deb --ctrl-tarfile "$deb_run" | tar -xOf - ./postinst ./prerm ./postrm |
    grep -E '^[^#]*(systemctl|deb-systemd-invoke) .*[[:space:]](start|enable)([[:space:]]|$)' \
        >&2; then
    fail "twice.deb's maintainer scripts start or enable the service"
fi
rpm -qp --qf '[%{FILEFLAGS:fflags} %{FILENAMES}\n]' "$rpm_run" |
    grep -qx 'cn /etc/twice/twice.conf' ||
    fail "twice.rpm: /etc/twice/twice.conf is not %config(noreplace)"
rpm -qp --qf '[%{FILEFLAGS:fflags} %{FILENAMES}\n]' "$rpm_run" |
    grep -qx 'cn /etc/logrotate.d/twice' ||
    fail "twice.rpm: /etc/logrotate.d/twice is not %config(noreplace)"
rpm -qpR "$rpm_run" >"$work/rpm-requires"
for lib in libcurl.so.4 libpq.so.5 libconfig.so.9 libjansson.so.4 libyajl.so.2 \
    libmicrohttpd.so.12; do
    grep -q "^$lib()" "$work/rpm-requires" || fail "twice.rpm does not require $lib"
done
rpm -qpR "$rpm_dev" | grep -qx "twice = $pkgversion" ||
    fail "twice-devel.rpm does not require twice = $pkgversion"
rpm -qp --scripts "$rpm_run" | grep -q systemd-sysusers ||
    fail "twice.rpm does not create its user"
# %pre's useradd (shadow-utils; shadow on SUSE), which a minimal image may lack: rpm
# must install it before it runs %pre (Requires(pre)).
rpm -qp --qf '[%{REQUIREFLAGS:deptype} %{REQUIRENAME}\n]' "$rpm_run" |
    grep -qx 'pre (shadow-utils or shadow)' ||
    fail "twice.rpm has no Requires(pre): (shadow-utils or shadow) for the useradd of its %pre"
# %pre feeds systemd-sysusers the line of the sysusers.d file it installs: the same user.
sysusers_line=$(grep -v '^#' "$root/packaging/sysusers.d/twice.conf")
rpm -qp --scripts "$rpm_run" | grep -qF "echo '$sysusers_line' | systemd-sysusers -" ||
    fail "twice.rpm's %pre does not create the user of sysusers.d/twice.conf ($sysusers_line)"
ok "dependencies, conffile, %config(noreplace), scripts"

# The maintainer scripts and scriptlets as the packages carry them, each run by /bin/sh
# (dash on Debian, bash on Fedora; on a minimal image neither systemd nor a shell beyond
# sh): POSIX sh syntax, and shellcheck's sh dialect. The .rpm's run only where rpm is the
# package manager, so a mistake in them shows nowhere else on this machine.
step "maintainer scripts and scriptlets: sh -n, shellcheck -s sh"
scripts=$work/scripts
mkdir -p "$scripts"
before=$failures
dpkg-deb --ctrl-tarfile "$deb_run" | tar -xf - -C "$scripts" ./postinst ./prerm ./postrm
for s in PREIN POSTIN PREUN POSTUN; do
    [ "$(rpm -qp --qf "%{${s}PROG}" "$rpm_run")" = /bin/sh ] ||
        fail "twice.rpm's $s scriptlet is not run by /bin/sh"
    rpm -qp --qf "%{$s}" "$rpm_run" >"$scripts/rpm-$s"
done
for s in "$scripts"/*; do
    if ! sh -n "$s" 2>"$work/sh-n.log" ||
        ! shellcheck -s sh "$s" >"$work/shellcheck.log" 2>&1; then
        cat "$work/sh-n.log" "$work/shellcheck.log" >&2
        fail "the package script ${s##*/} (sh -n, shellcheck -s sh)"
    fi
done
[ "$failures" != "$before" ] ||
    ok "postinst, prerm, postrm and %pre, %post, %preun, %postun: sh -n and shellcheck clean"

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
step "installing twice as README.md says"
run_readme "$(readme_block "Install from packages" 2)" "$root" install ||
    { cat "$work/install.log" >&2; die "the README's install command failed"; }
installed twice || { cat "$work/install.log" >&2; die "twice is not installed"; }
ok "installed twice with the README's command"

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

# logrotate reads the installed stanza (--debug: rotates nothing) for the documented log
# path, and its postrotate names the installed twiced.
lr=/etc/logrotate.d/twice
if logrotate --debug "$lr" >"$work/logrotate.log" 2>&1 &&
    ! grep -qi "error" "$work/logrotate.log"; then
    ok "logrotate --debug $lr"
else
    cat "$work/logrotate.log" >&2
    fail "logrotate --debug $lr"
fi
grep -q '^/var/log/twice/\*\.log {$' "$lr" || fail "$lr does not rotate /var/log/twice/*.log"
grep -q '/usr/sbin/twiced -s reopen -p /run/twice/twiced.pid' "$lr" ||
    fail "$lr does not run twiced -s reopen"

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
    KillMode=mixed NoNewPrivileges=yes ProtectSystem=strict Restart=on-failure; do
    grep -qx "$k" "$unit" || fail "$unit lacks $k"
done
# systemctl reload: the check of the file ExecStart runs first (systemd runs ExecReload=
# lines in order and stops at the first that fails, so a broken file fails the reload with
# its FILE:LINE in systemctl status), then the SIGHUP; nothing else.
reloads=$(sed -n 's/^ExecReload=//p' "$unit")
[ "$reloads" = "$(printf '%s\n' '/usr/sbin/twiced -t -c /etc/twice/twice.conf' \
    "/bin/kill -HUP \$MAINPID")" ] ||
    fail "$unit: ExecReload= is not twiced -t on twice.conf, then kill -HUP: $reloads"
# A start the configuration refuses exits 78 (EX_CONFIG), which the unit does not restart
# (every RestartSec for ever otherwise); the installed twiced on the broken copy says so.
prevent=$(sed -n 's/^RestartPreventExitStatus=//p' "$unit")
code=0
twiced -f -c "$work/bad.conf" >"$work/bad-start.out" 2>&1 || code=$?
if [ "$code" != 78 ] || [ "$prevent" != 78 ]; then
    cat "$work/bad-start.out" >&2
    fail "a start on a broken configuration exits $code; $unit: RestartPreventExitStatus=$prevent" \
        "(both must be 78)"
fi
# The exec plugin's handlers inherit the unit's sandbox: under MemoryDenyWriteExecute=yes a
# JIT runtime (node, the example of twice-exec(7)) aborts at its first compiled function.
! grep -q '^MemoryDenyWriteExecute=yes' "$unit" ||
    fail "$unit sets MemoryDenyWriteExecute=yes: node handlers of the exec plugin abort"
stop=$(sed -n 's/^TimeoutStopSec=//p' "$unit")
drain=$(sed -n 's/^drain_timeout = \([0-9]*\);/\1/p' /etc/twice/twice.conf)
[ "${stop:-0}" -gt "${drain:-0}" ] ||
    fail "TimeoutStopSec ($stop) is not above drain_timeout ($drain)"
for page in twiced.8 twicectl.1 twice.conf.5 twice-http.7 twice-exec.7; do
    path=$(man -w "${page%.*}" 2>/dev/null | head -1)
    [ -n "$path" ] || { fail "man ${page%.*}: not found"; continue; }
    warnings=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$path" 2>&1 >/dev/null ||
        true)
    [ -z "$warnings" ] || fail "man page $path: $warnings"
done
ok "man pages found, no groff warnings"
# The bridge plugins are installed, load, and say how they map answers; the exec
# plugin's examples are where twice-exec(7) says.
out=$(twicectl plugin check "$plugindir/http.so" url=http://127.0.0.1:9/jobs 2>&1) ||
    fail "twicectl plugin check http.so: $out"
grep -qF '2xx: DONE' <<<"$out" || fail "http.so describes no mapping: $out"
out=$(twicectl plugin check "$plugindir/exec.so" command=/bin/cat key='k:{id}' 2>&1) ||
    fail "twicectl plugin check exec.so: $out"
grep -qF 'template k:{id}' <<<"$out" || fail "exec.so shows no key template: $out"
for f in exec-handler.py exec-handler.js; do
    [ -f /usr/share/doc/twice/examples/$f ] || fail "no /usr/share/doc/twice/examples/$f"
done
ok "the http and exec plugins and the exec examples are installed"
# One default configuration file, the packages': in --help and the man pages.
twiced --help | grep -qF '(default /etc/twice/twice.conf)' ||
    fail "twiced --help does not name /etc/twice/twice.conf as its default"
twicectl --help | grep -qF 'default /etc/twice/twice.conf)' ||
    fail "twicectl --help does not name /etc/twice/twice.conf as its default"
for page in twiced twicectl twice.conf; do
    man -P cat "$page" 2>/dev/null | grep -qF /etc/twice/twice.conf ||
        fail "man $page does not name /etc/twice/twice.conf"
done
man -P cat twice.conf 2>/dev/null | grep -q 'receivers' ||
    fail "twice.conf(5) does not list the settings (no receivers)"
ok "twiced, twicectl and the man pages name /etc/twice/twice.conf"

# ---- SDK: the README's plugin, pkg-config, out-of-tree plugin, mock host ----
step "writing a plugin as README.md says, from a machine without twice"
# The section's install command must bring twice along: it starts from a machine where
# twice is not installed (its configuration stays, as after apt-get remove).
dpkg --remove twice >"$work/remove-for-sdk.log" 2>&1 ||
    { cat "$work/remove-for-sdk.log" >&2; die "dpkg --remove twice"; }
readme_dir=$work/readme
mkdir -m 700 "$readme_dir"
ln -s "$build" "$readme_dir/build-pkg"
run_readme "$(readme_block "Write your own plugin" 1)" "$readme_dir" plugin ||
    { cat "$work/plugin.log" >&2; die "the README's plugin commands failed"; }
if installed twice && installed twice-dev && grep -q 'hello:{id}' "$work/plugin.log"; then
    ok "the README's install, build and plugin check of hello.so"
else
    cat "$work/plugin.log" >&2
    die "the README's plugin commands did not install twice and twice-dev and check hello.so"
fi
readme_fence "Write your own plugin" c >"$readme_dir/hello/test-hello.c"
if run_readme "$(readme_block "Write your own plugin" 2)" "$readme_dir/hello" mock &&
    grep -q '^ok: key hello:42$' "$work/mock.log"; then
    ok "the README's unit test of hello.so against the mock host"
else
    cat "$work/mock.log" >&2
    fail "the README's test-hello.c against the mock host"
fi
opt_created=0
[ -e /opt/twice ] || opt_created=1
if run_readme "$(readme_block "Write your own plugin" 3)" "$readme_dir/hello" rename &&
    [ "$(stat -c '%a %U' /opt/twice/plugins/hello.so)" = "644 root" ] &&
    [ ! -e /opt/twice/plugins/hello.so.new ]; then
    ok "the README's install of hello.so by rename"
else
    cat "$work/rename.log" >&2
    fail "the README's install of hello.so by rename"
fi
sed 's|^plugins = (|&\n    { name = "hello"; path = "/opt/twice/plugins/hello.so"; },|' "$conf" \
    >"$work/opt-hello.conf"
twiced -t -c "$work/opt-hello.conf" >"$work/opt-hello-t.out" 2>&1 ||
    { cat "$work/opt-hello-t.out" >&2; fail "twiced -t with /opt/twice/plugins/hello.so"; }
[ "$opt_created" = 0 ] || rm -rf /opt/twice
path=$(man -w twice-plugin 2>/dev/null | head -1)
warnings=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$path" 2>&1 >/dev/null || true)
if [ -z "$path" ] || [ -n "$warnings" ]; then
    fail "man twice-plugin: ${path:-not found} $warnings"
fi

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

# ---- upgrade ----
# From a previous package (this one repacked as $version-0 with another conffile, as a
# release that changed twice.conf ships it), in what an admin does in between: edit
# twice.conf, add a plugin of theirs, enable the service, let it log. The noninteractive
# upgrade Debian documents (--force-confdef --force-confold; without them dpkg asks)
# must keep all of it.
step "upgrade from a previous package"
prev=$work/prev
# man-db's trigger (~10 s a run) waits until the removal below: these steps leave it pending.
dpkg --no-triggers --purge twice-dev twice >"$work/upgrade.log" 2>&1 || true
dpkg-deb -R "$deb_run" "$prev"
sed -i "s/^Version: .*/Version: $version-0/" "$prev/DEBIAN/control"
echo '# as a previous release shipped it' >>"$prev/etc/twice/twice.conf"
sed -i '/^ *[a-f0-9]\{32\} *etc\/twice\/twice.conf$/d' "$prev/DEBIAN/md5sums"
dpkg-deb --root-owner-group -Zgzip -z1 -b "$prev" "$work/prev.deb" >>"$work/upgrade.log"
wants=/etc/systemd/system/multi-user.target.wants/twice.service
if DEBIAN_FRONTEND=noninteractive dpkg --no-triggers -i "$work/prev.deb" </dev/null \
    >>"$work/upgrade.log" 2>&1; then
    sed -i 's/^workers = .*/workers = 3; # the admin'"'"'s/' /etc/twice/twice.conf
    cp "$plugindir/sync.so" "$plugindir/mine.so"
    systemctl enable twice >>"$work/upgrade.log" 2>&1 ||
        { mkdir -p "${wants%/*}" && ln -sf /usr/lib/systemd/system/twice.service "$wants"; }
    install -d -o twice -g twice -m 750 /var/log/twice # what LogsDirectory= makes
    echo 'a line' >/var/log/twice/twice.log
    DEBIAN_FRONTEND=noninteractive dpkg --no-triggers -i --force-confdef --force-confold \
        "$deb_run" "$deb_dev" </dev/null >>"$work/upgrade.log" 2>&1 ||
        { cat "$work/upgrade.log" >&2; fail "the noninteractive upgrade from $version-0"; }
else
    cat "$work/upgrade.log" >&2
    fail "installing the previous package ($version-0)"
fi
[ "$(dpkg-query -W -f='${Version}' twice)" = "$pkgversion" ] || fail "twice is not upgraded"
grep -q "^workers = 3; # the admin's$" /etc/twice/twice.conf ||
    fail "the upgrade did not keep the admin's /etc/twice/twice.conf"
for f in /etc/twice/twice.conf /etc/twice/twice.conf.dpkg-dist; do
    perm=$(stat -c '%a %U:%G' "$f" 2>&1)
    [ "$perm" = "640 root:twice" ] || fail "after the upgrade $f is $perm, not 640 root:twice"
done
[ -f "$plugindir/mine.so" ] || fail "the upgrade removed a plugin the admin added"
[ -L "$wants" ] || fail "the upgrade disabled twice.service"
[ -f /var/log/twice/twice.log ] || fail "the upgrade removed /var/log/twice/twice.log"
runuser -u twice -- twiced -t -c /etc/twice/twice.conf >"$work/t-upgrade.out" 2>&1 ||
    { cat "$work/t-upgrade.out" >&2; fail "twiced -t as twice on the kept configuration"; }
rm -f "$plugindir/mine.so"
ok "upgraded from $version-0: configuration, its mode, plugins, enablement and logs kept"

# ---- remove and purge ----
if [ "$keep" = 1 ]; then
    echo "package-test: --keep: not removing the packages"
else
    step "remove and purge"
    dpkg --remove twice-dev twice >"$work/remove.log" 2>&1 ||
        { cat "$work/remove.log" >&2; fail "dpkg --remove"; }
    [ -f /etc/twice/twice.conf ] || fail "removing (not purging) twice deleted its conffile"
    [ -f /var/log/twice/twice.log ] || fail "removing (not purging) twice deleted its logs"
    [ ! -e /usr/sbin/twiced ] || fail "/usr/sbin/twiced is still there after removing twice"
    dpkg --purge twice-dev twice >"$work/purge.log" 2>&1 ||
        { cat "$work/purge.log" >&2; fail "dpkg --purge"; }
    for p in /etc/twice /usr/sbin/twiced /usr/bin/twicectl "/usr/lib/$multiarch/twice" \
        /usr/share/twice /usr/include/twice /usr/share/doc/twice /usr/share/doc/twice-dev \
        /usr/lib/systemd/system/twice.service /usr/lib/sysusers.d/twice.conf \
        "/usr/lib/$multiarch/pkgconfig/twice-plugin.pc" "/usr/lib/$multiarch/libtwice-mock.a" \
        /var/log/twice; do
        [ ! -e "$p" ] || fail "$p is left after the purge"
    done
    # systemctl enable's link (made in the upgrade step), dangling once the unit is gone.
    [ ! -L "$wants" ] || fail "$wants is left after the purge"
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
