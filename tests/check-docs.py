#!/usr/bin/env python3
"""check-docs.py - what a user copies from the documentation still works with this build.

Reads README.md, docs/*.md, sdk/**/*.md, the man pages (packaging/man/), etc/ (twice.conf,
the systemd unit, the logrotate file, the Kubernetes manifests' commands) and the comments of
sdk/examples/, takes out every code block (Markdown fenced and indented blocks, man .nf/.fi
and .EX/.EE blocks with the man escapes undone) and checks each by its kind:

- twice.conf (a block with `name = value;` lines, etc/twice.conf, an example's entry): goes
  through this build's `twiced -t -c` (no --connect: nothing is asked of a server). A fragment
  is wrapped in the smallest complete configuration: one line before it sets `plugin_dir` to
  the build's plugins (or its own plugin_dir is pointed there) and `idempotency` if it lacks
  it; after it come the `plugins` it lacks (each plugin its queues name becomes the http
  plugin under that name, keyed) and the `queues` it lacks (one queue for its first plugin).
  A line that is only `...` (the rest of a list) is dropped with the comma before it; a
  plugin path is replaced by this build's file of that name (hello.so: the SDK's example,
  built here as the README builds it); an exec handler's `directory` by one that exists.
- etc/twice.conf also with every commented example in force at once (uncommented(): the
  `#name = value;` lines and the commented blocks; STAND_INS for the files they name).
- inline settings (`rate_limit = { ... }`, `tracing.exporter = "otlp"`): a span naming a
  setting of twice.conf(5) with a value must fit in a queue, at the top, or in a top-level
  group that has a setting of its name (COMPANIONS adds what a setting needs beside it);
  a `group.name` of a top-level group without a value must be a setting twice.conf(5) lists,
  and so must the name of a `name = value` span (FOREIGN lists other programs' settings).
- C (cc -std=c11 -Wall -Wextra -Werror against sdk/include and sdk/mock, no scaffolding: a
  snippet is a whole file): a plugin is built and loaded by `twicectl plugin check`, a test
  against the mock host is linked with the build's libtwice-mock.a and run beside hello.so
  as the README runs it, anything else is compiled with -fsyntax-only.
- every `twiced ...` and `twicectl ...` command line, in blocks and inline (`...` in
  Markdown, .B lines and \\fB...\\fR in man pages, the README's twicectl table, the .TP heads of
  twicectl(1)'s COMMANDS and of both OPTIONS sections): the twicectl command and subcommand
  exist and every option shown is one `twicectl help COMMAND [SUB]` (or the global usage)
  lists; for twiced, one `twiced --help` lists, and `-s` takes the signal named. A shown
  `twicectl plugin check FILE.so NAME=...` is run on this build's file. The other way round,
  every command, subcommand and option the help lists has its entry in the man page.
- output the docs show that needs no server (OUTPUTS): made again with this build and
  compared, `...` in the doc standing for any text and FILE:LINE for any file and line.
- `api->name`, twice_mock_*, TWICE_DONE and the like the docs name are in the SDK's headers;
  twice-plugin(3) lists every host API function with its number of parameters.
- a metric the docs name is one twiced exports; a man page they name (twice-http(7),
  `man twiced`) is one packaging/man has.
- twice-http(7) and twice-exec(7) document exactly the settings (and defaults) the plugins
  declare.
- a list of the bundled plugin files names them all; a packaged path the docs name is in a
  package's expected contents (packaging/expected/); a repository path (core/..., tests/...)
  they name exists.

A block that is deliberately wrong says so just before it: `<!-- check-docs: error TEXT -->`
in Markdown, `.\\" check-docs: error TEXT` in a man page; `twiced -t` must then fail with
TEXT in its output. `check-docs: skip REASON` leaves a block out (the reason is required).
Exit 0, or 1 with one line per problem (FILE:LINE: what). Run by ctest as unit/docs, with
TWICE_BIN_DIR, TWICE_PLUGIN_BUILD_DIR, TWICE_BUILD_DIR and TWICE_TEST_PLUGIN_DIR set.
"""
import glob
import json
import os
import pwd
import re
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
problems = []
counts = {"conf": 0, "inline": 0, "c": 0, "command": 0, "output": 0}


def problem(where, text):
    problems.append("%s: %s" % (where, text))


# ---------------------------------------------------------------------------
# Blocks


class Block:
    """A code block of a doc: its file, first line, text (as the reader sees it) and the
    check-docs marker before it, if any."""

    def __init__(self, path, line, text, marker, kind_hint=""):
        self.path, self.line, self.text = path, line, text
        self.marker, self.kind_hint = marker, kind_hint

    def where(self, offset=0):
        return "%s:%d" % (os.path.relpath(self.path, ROOT), self.line + offset)


MARKER = re.compile(r"check-docs:\s*(error|skip)\s*(.*?)\s*(?:-->)?\s*$")


def marker_before(lines, i):
    """The check-docs marker on the nearest non-blank line above line i, or None."""
    j = i - 1
    while j >= 0 and lines[j].strip() in ("", ".PP", ".RS", ".nf", ".EX", "```"):
        j -= 1
    if j >= 0:
        m = MARKER.search(lines[j])
        if m:
            return (m.group(1), m.group(2))
    return None


def markdown_blocks(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks, i = [], 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            start, hint = i, line[3:].strip()
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                i += 1
            blocks.append(Block(path, start + 2, "\n".join(lines[start + 1:i]),
                                marker_before(lines, start), hint))
        elif line.startswith("    ") and (i == 0 or lines[i - 1].strip() == ""):
            start = i
            while i < len(lines) and (lines[i].startswith("    ") or
                                      (lines[i].strip() == "" and i + 1 < len(lines) and
                                       lines[i + 1].startswith("    "))):
                i += 1
            body = [x[4:] for x in lines[start:i]]
            blocks.append(Block(path, start + 1, "\n".join(body), marker_before(lines, start)))
            continue
        i += 1
    return blocks


def unman(text):
    """A man page's text as the reader sees it."""
    text = re.sub(r"\\f[BIRP]|\\f\(..|\\&|\\c$", "", text)
    for a, b in (("\\-", "-"), ("\\(dq", '"'), ("\\(aq", "'"), ("\\e", "\\"), ("\\ ", " "),
                 ("\\(em", "--"), ("\\(en", "-"), ("\\(bu", "*"), ("\\|", "")):
        text = text.replace(a, b)
    return text


def man_blocks(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks, i = [], 0
    while i < len(lines):
        if lines[i].startswith((".nf", ".EX")):
            start = i
            i += 1
            while i < len(lines) and not lines[i].startswith((".fi", ".EE")):
                i += 1
            body = [x for x in lines[start + 1:i] if not x.startswith('.\\"')]
            if not any(x.startswith(".") for x in body):  # formatted synopsis: not code
                blocks.append(Block(path, start + 2, unman("\n".join(body)),
                                    marker_before(lines, start)))
        i += 1
    return blocks


def doc_files():
    md = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    md += sorted(glob.glob(os.path.join(ROOT, "sdk", "**", "*.md"), recursive=True))
    man = sorted(p for p in glob.glob(os.path.join(ROOT, "packaging", "man", "*"))
                 if re.search(r"\.[0-9](\.in)?$", p))
    return md, man


def kind_of(block):
    t = block.text
    if block.kind_hint in ("c", "C") or re.search(r"^#include\s*<|^TWICE_PLUGIN\(", t, re.M):
        return "c"
    if block.kind_hint in ("yaml", "json", "python", "sh", "js"):
        return block.kind_hint
    if re.search(r"^\s*[a-z_][a-z0-9_.]*\s*=\s*(.*;|\(|\{)\s*(#.*|//.*)?$", t, re.M) and \
            not re.search(r"^(import \w|from [\w.]+ import|def \w+\(|class \w+[:(])", t, re.M):
        return "conf"
    return "text"


# ---------------------------------------------------------------------------
# twice.conf snippets


def env_dir(name, default):
    return os.environ.get(name) or os.path.join(os.environ.get("TWICE_BUILD_DIR", ""), default)


SCRATCH = tempfile.TemporaryDirectory(prefix="check-docs-")


def example_plugin():
    """The SDK's example hello.c built as the README builds it (pkg-config's flags being
    -I sdk/include), or None with a problem."""
    so = os.path.join(SCRATCH.name, "hello.so")
    if not os.path.exists(so):
        r = subprocess.run(["cc", "-shared", "-fPIC", "-fvisibility=hidden", "-Wall", "-Wextra",
                            "-Werror", "-I", os.path.join(ROOT, "sdk", "include"), "-o", so,
                            os.path.join(ROOT, "sdk", "examples", "hello.c")],
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            problem("sdk/examples/hello.c", "does not build: %s" % r.stderr.strip())
            return None
    return so


def find_plugin(base):
    """A plugin file of this build by its file name, or None."""
    if base == "hello.so":
        return example_plugin()
    dirs = [env_dir("TWICE_PLUGIN_BUILD_DIR", "plugins"), env_dir("TWICE_TEST_PLUGIN_DIR",
                                                                  "tests/plugins")]
    for d in dirs:
        if os.path.isfile(os.path.join(d, base)):
            return os.path.join(d, base)
    return None


def top_level_names(conf):
    """The settings a configuration text sets at its top level."""
    names, depth = set(), 0
    for line in conf.split("\n"):
        code = re.sub(r'"(\\.|[^"\\])*"', '""', line).split("#")[0].split("//")[0]
        if depth == 0:
            names.update(re.findall(r"(?:^|;)\s*([a-z_][a-z0-9_]*)\s*[=:]", code))
        depth += code.count("{") + code.count("(") - code.count("}") - code.count(")")
    return names


def complete(conf, where):
    """The snippet as a whole configuration twiced -t can check."""
    conf = re.sub(r",(\s*\n\s*\.\.\.,?\s*\n)", r"\1", conf)
    conf = re.sub(r"^\s*\.\.\.,?\s*$", "", conf, flags=re.M)

    def plugin_path(m):
        base = os.path.basename(m.group(2))
        found = find_plugin(base)
        if found is None:
            problem(where, "plugin file %s is not one this build makes" % base)
            return m.group(0)
        return '%s"%s"' % (m.group(1), found)
    conf = re.sub(r'(\bpath\s*=\s*)"([^"]+\.so)"', plugin_path, conf)
    # an exec handler's directory is the user's: one that exists here stands for it
    conf = re.sub(r'(\bdirectory\s*=\s*)"[^"]*"', r'\1"%s"' % SCRATCH.name, conf)
    names = top_level_names(conf)
    plugin_dir = '"%s"' % env_dir("TWICE_PLUGIN_BUILD_DIR", "plugins")
    head = [] if "plugin_dir" in names else ["plugin_dir = %s;" % plugin_dir]
    conf = re.sub(r'^(\s*plugin_dir\s*=\s*)"[^"]*"', lambda m: m.group(1) + plugin_dir, conf,
                  flags=re.M)
    if "idempotency" not in names:
        head.append('idempotency = { dsn = "host=127.0.0.1 dbname=twice user=twice"; };')
    tail = []
    if "plugins" not in names:
        used = sorted(set(re.findall(r'\bplugin\s*=\s*"([^"]+)"', conf))) or ["docs"]
        tail.append("plugins = (%s);" % ", ".join(
            '{ name = "%s"; path = "http.so"; settings = { url = "http://127.0.0.1:9/"; '
            'key = "docs:{id}"; }; }' % n for n in used))
    if "queues" not in names:
        m = re.search(r'\bname\s*=\s*"([^"]+)"', conf) if "plugins" in names else None
        tail.append('queues = ({ name = "docs"; plugin = "%s"; key = "docs:{id}"; '
                    'url = "https://sqs.eu-west-1.amazonaws.com/123456789012/docs"; '
                    'dlq_url = "https://sqs.eu-west-1.amazonaws.com/123456789012/docs-dlq"; '
                    '});' % (m.group(1) if m else "docs"))
    # The snippet's own lines keep their numbers: the wrapper goes on one line before it.
    return " ".join(head) + "\n" + conf + "\n" + "\n".join(tail) + "\n"


def twiced_test(conf, name="twice.conf"):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(conf)
        r = subprocess.run([os.path.join(os.environ["TWICE_BIN_DIR"], "twiced"), "-t", "-c",
                            path], capture_output=True, text=True, timeout=60, cwd=d,
                           env=dict(os.environ, AWS_EC2_METADATA_DISABLED="true",
                                    AWS_REGION="eu-west-1", **STAND_IN_ENV))
        return r.returncode, (r.stdout + r.stderr).replace(path, name).strip()


def check_conf(block, conf, note=""):
    """twiced -t on a completed snippet: passes, or fails with the marker's text."""
    counts["conf"] += 1
    rc, out = twiced_test(conf)
    if block.marker and block.marker[0] == "error":
        if rc == 0:
            problem(block.where(), "marked as an error, but twiced -t accepts it")
        elif block.marker[1] not in out:
            problem(block.where(), "twiced -t fails, but not with %r: %s" % (block.marker[1], out))
    elif rc != 0:
        for line in out.split("\n"):
            m = re.match(r"twice\.conf:(\d+): (.*)", line)
            # line 1 is the wrapper; the snippet starts on line 2
            problem(block.where(int(m.group(1)) - 2) if m else block.where(),
                    "twiced -t%s: %s" % (note, m.group(2) if m else line))


# Files and variables etc/twice.conf's commented examples name that a user has and this
# machine need not: what stands for them when the examples are uncommented.
STAND_INS = {
    "/usr/share/twice/templates/": os.path.join(ROOT, "etc", "templates") + "/",
    "/etc/twice/orders-ca.pem": "/etc/ssl/certs/ca-certificates.crt",
    "/etc/twice/orders.token": os.path.join(SCRATCH.name, "orders.token"),
    "/var/log/twice/": SCRATCH.name + "/",
}
with open(os.open(STAND_INS["/etc/twice/orders.token"], os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
    f.write("docs-token\n")
STAND_IN_ENV = {"CRM_TOKEN": "docs"}
# The packages create the user `twice`; before they are installed (a fresh machine, or
# `scripts/test.sh --quick`), the user running the check stands for it.
try:
    USER_STAND_IN = pwd.getpwnam("twice").pw_name
except KeyError:
    USER_STAND_IN = pwd.getpwuid(os.getuid()).pw_name


def uncommented(text):
    """etc/twice.conf with every commented example in force: `#name = value;` lines and the
    commented blocks (`#webhook = {`, `#, {` ... `#}`, their lines `#    ...`), each replacing
    a setting of its name in force in the same group (`listen = "";` then `#listen = ...`)."""
    for _ in range(2):  # twice: a block's own `#name` lines are examples in the example
        lines, out, active, stack, nextid, block = text.split("\n"), [], {}, [0], 1, 0
        for line in lines:
            m = re.match(r"^(\s*)#(?![ #!~-])(.*)$", line)
            if not m and block > 0:
                m = re.match(r"^(\s*)#((?:    |[})]).*)$", line)
            new = m.group(1) + m.group(2) if m else line
            code = re.sub(r'"(\\.|[^"\\])*"', '""', new).split("#")[0]
            if m or block > 0:
                block = max(0, block + code.count("{") + code.count("(") - code.count("}") -
                            code.count(")"))
            name = re.match(r"\s*([a-z_][a-z0-9_]*)\s*=", code) if m or not line.lstrip(
                ).startswith("#") else None
            if name:
                key = (stack[-1], name.group(1))
                if m and key in active and not out[active[key]].lstrip().startswith("#"):
                    j = active[key]
                    out[j] = re.sub(r"^(\s*)", r"\1#~", out[j])  # not an example
                active[key] = len(out)
            out.append(new)
            for ch in code:
                if ch in "{(":
                    stack.append(nextid)
                    nextid += 1
                elif ch in "})" and len(stack) > 1:
                    stack.pop()
        text = "\n".join(out)
    for a, b in STAND_INS.items():
        text = text.replace(a, b)
    return re.sub(r'^(\s*user\s*=\s*)"twice"', r'\1"%s"' % USER_STAND_IN, text, flags=re.M)


def settings_table():
    """Every setting's path as twice.conf(5) lists it, built from the settings table."""
    page = os.path.join(os.environ.get("TWICE_BUILD_DIR", ""), "packaging", "man", "twice.conf.5")
    try:
        text = open(page, encoding="utf-8").read()
    except OSError as e:
        problem("twice.conf.5", "not built (%s): setting names not checked" % e)
        return set()
    return set(re.findall(r"^\.TP\n\.B ([a-z_][a-z0-9_.]*)$", text, re.M))


TOP_GROUPS = ("log", "aws", "idempotency", "alerts", "metrics", "tracing")


def inline_settings(text, man):
    """(line, span) of every inline `name = value` and `group.name` a doc shows."""
    out = []
    for n, line in enumerate(text.split("\n"), 1):
        if man:
            spans = [unman(m) for m in re.findall(r"\\fB(.*?)\\f[RP]", line)]
            if re.match(r"\.B[RI]? ", line):
                arg = unman(line.split(" ", 1)[1])
                spans.append(arg[1:-1] if re.fullmatch(r'"[^"]*"', arg) else arg)
        else:
            spans = re.findall(r"`([^`]+)`", line)
        out += [(n, s.strip()) for s in spans]
    return out


def placements(name, assignment, table):
    """Configurations to try an inline `name = value` in: where such a setting may stand."""
    def nest(groups, inner):
        for g in reversed(groups):
            inner = "%s = { %s };" % (g, inner)
        return inner
    if "." in name:  # group.name = value: in its group, at the top or in the queue
        groups = name.split(".")[:-1]
        group = nest(groups, assignment[len(".".join(groups)) + 1:])
        return [(group, "")] if groups[0] in TOP_GROUPS else [("", group)]
    tries = []
    for path in sorted(table):  # in a top-level group with a setting of that name
        if path.endswith("." + name) and path.split(".")[0] in TOP_GROUPS:
            tries.append((nest(path.split(".")[:-1], assignment), ""))
    plain = [("", assignment), (assignment, "")]  # in the queue, at the top
    return plain + tries if name in table else tries + plain


# Queue settings that do not stand alone: what else the queue of the check gets with them.
COMPANIONS = {
    "route_by": 'routes = ({ value = "docs"; plugin = "docs"; });',
    "delete_payload": 'payload_bucket = "docs-payloads";',
}


_inline_seen = {}


def check_inline_setting(where, span, table):
    """An inline `name = value` fits a twice.conf (placements()); the same span once."""
    if span in _inline_seen:
        if _inline_seen[span]:
            problem(where, _inline_seen[span])
        return
    before = len(problems)
    check_one_setting(where, span, table)
    _inline_seen[span] = problems[-1].split(": ", 1)[1] if len(problems) > before else None


# `name = value` spans the docs show that are not twice.conf's: AWS's shared config,
# PostgreSQL's, a test fixture plugin's setting.
FOREIGN = {"credential_process", "synchronous_commit", "locale"}


def check_one_setting(where, span, table):
    m = re.match(r"([a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*)(\s*=\s*(.+?))?;?$", span)
    if not m:
        return
    name = m.group(1)
    lasts = {p.rsplit(".", 1)[-1] for p in table}
    if name.split(".")[0] in TOP_GROUPS and "." in name:
        if not m.group(2):
            if name not in table:
                problem(where, "no setting %s (twice.conf(5))" % name)
            return
    elif not m.group(2) or name in FOREIGN:
        return
    elif name not in lasts:
        if " = " not in span:  # a label or a libpq keyword (via="relay", gssencmode=disable)
            return
        problem(where, "`%s`: no twice.conf setting %s (twice.conf(5); another program's "
                "setting goes in tests/check-docs.py FOREIGN)" % (span, name))
        return
    counts["inline"] += 1
    assignment = "%s = %s;" % (name, m.group(3))
    first = None
    for top, in_queue in placements(name, assignment, table):
        if in_queue and name in COMPANIONS:
            in_queue += " " + COMPANIONS[name]
        conf = (top + "\n" + 'plugins = ({ name = "docs"; path = "http.so"; settings = { url = '
                '"http://127.0.0.1:9/"; key = "docs:{id}"; }; });\nqueues = ({ name = "docs"; '
                '%s url = "https://sqs.eu-west-1.amazonaws.com/123456789012/docs"; '
                'dlq_url = "https://sqs.eu-west-1.amazonaws.com/123456789012/docs-dlq"; %s });'
                % ("" if "route_by" in in_queue else 'plugin = "docs";', in_queue))
        rc, out = twiced_test(complete(conf, where))
        if rc == 0:
            return
        first = first or out.split("\n")[0]
    problem(where, "`%s` fits nowhere in a twice.conf: %s" % (span, first))


# ---------------------------------------------------------------------------
# C snippets


def cc(block, argv):
    """Runs cc on the block as a file (argv: cc's arguments, SRC for the file); a problem per
    error, at the doc's line. True when it compiled."""
    src = os.path.join(SCRATCH.name, "snippet.c")
    with open(src, "w", encoding="utf-8") as f:
        f.write(block.text + "\n")
    r = subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror",
                        "-I", os.path.join(ROOT, "sdk", "include"),
                        "-I", os.path.join(ROOT, "sdk", "mock")] +
                       [src if a == "SRC" else a for a in argv],
                       capture_output=True, text=True, timeout=60, cwd=SCRATCH.name)
    if r.returncode == 0:
        return True
    errors = re.findall(r"snippet\.c:(\d+):\d+: (error: .*)", r.stderr)
    for line, text in errors:
        problem(block.where(int(line) - 1), "cc: %s" % text)
    if not errors:
        problem(block.where(), "cc: %s" % r.stderr.strip())
    return False


def check_c(block):
    """A plugin is built as a plugin and loaded by `twicectl plugin check`; a test program
    against the mock host (README: test-hello.c) is linked with the build's mock library and
    run beside the SDK's example hello.so, as the README runs it; anything else compiles
    with -fsyntax-only."""
    counts["c"] += 1
    bindir = os.environ["TWICE_BIN_DIR"]
    if "TWICE_PLUGIN(" in block.text:
        so = os.path.join(SCRATCH.name, "snippet.so")
        if cc(block, ["-shared", "-fPIC", "-fvisibility=hidden", "-o", so, "SRC"]):
            r = subprocess.run([os.path.join(bindir, "twicectl"), "plugin", "check", so],
                               capture_output=True, text=True, timeout=60)
            if r.returncode != 0:
                problem(block.where(), "twicectl plugin check: %s" % (r.stdout + r.stderr).strip())
        return
    mock = os.path.join(os.environ.get("TWICE_BUILD_DIR", ""), "sdk", "mock", "libtwice-mock.a")
    if "twice/mock.h" in block.text and re.search(r"^main\(", block.text, re.M) and \
            os.path.exists(mock) and example_plugin():
        exe = os.path.join(SCRATCH.name, "snippet-test")
        if cc(block, ["-o", exe, "SRC", mock, "-lyajl", "-ldl", "-pthread"] + LINK_FLAGS):
            r = subprocess.run([exe], capture_output=True, text=True, timeout=60,
                               cwd=SCRATCH.name)
            if r.returncode != 0:
                problem(block.where(), "runs and fails: %s" % (r.stdout + r.stderr).strip())
        return
    cc(block, ["-fsyntax-only", "SRC"])


# ---------------------------------------------------------------------------
# Command lines

_runs = {}


def run(argv):
    """(exit code, output) of this build's twiced or twicectl with argv; each once."""
    if tuple(argv) not in _runs:
        path = [os.path.join(os.environ["TWICE_BIN_DIR"], argv[0])] + argv[1:]
        r = subprocess.run(path, capture_output=True, text=True, timeout=30,
                           env=dict(os.environ, AWS_EC2_METADATA_DISABLED="true"))
        _runs[tuple(argv)] = (r.returncode, r.stdout + r.stderr)
    return _runs[tuple(argv)]


def help_of(*words):
    """The help text of twiced, of twicectl, or of a twicectl command [subcommand]."""
    if words[0] == "twiced":
        return run(["twiced", "--help"])
    if len(words) == 1:
        return run(["twicectl", "--help"])
    return run(["twicectl", "help"] + list(words[1:]))


def options_in(text):
    return set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", text))


GLOBAL_CTL = {"-c", "--config", "--json", "--timeout", "--help", "--version", "-h", "-V"}
PLACEHOLDER = re.compile(r"^[A-Z][A-Z_.]*$|^\.\.\.|^<|^\[|^\(|^\||^[A-Z]+\.\.\.$")


def check_twicectl(where, words):
    i = 1
    while i < len(words) and words[i].startswith("-"):
        opt = words[i].split("=")[0]
        if opt not in GLOBAL_CTL:
            problem(where, "twicectl: no global option %s" % opt)
        i += 1 if "=" in words[i] or opt in ("--json", "--help", "--version", "-h", "-V") else 2
    if i >= len(words):
        return
    cmd = words[i]
    if cmd in ("help", "COMMAND") or PLACEHOLDER.match(cmd):
        return
    rc, usage = help_of("twicectl")
    if not re.search(r"^  %s\s" % re.escape(cmd), usage, re.M):
        problem(where, "twicectl has no command %r" % cmd)
        return
    rc, text = help_of("twicectl", cmd)
    sub = words[i + 1] if i + 1 < len(words) else None
    if not (sub and re.fullmatch(r"[a-z]+", sub) and
            re.search(r"^(?:usage:|      ) twicectl %s [a-z]+ " % cmd, text, re.M)):
        sub = None
    if sub:
        rc2, text2 = help_of("twicectl", cmd, sub)
        if rc2 != 0:
            problem(where, "twicectl %s has no subcommand %r" % (cmd, sub))
            return
        text = text2
    if (cmd, sub) == ("plugin", "check") and any(w.endswith(".so") for w in words):
        run_plugin_check(where, words[i + 2:])
    allowed = options_in(text) | GLOBAL_CTL
    for w in words[i + 1:]:
        for opt in re.findall(r"(?:^|[\[(|])(--?[a-z][\w-]*)", w):
            if opt not in allowed:
                problem(where, "twicectl %s%s: no option %s (twicectl help %s%s)" % (
                    cmd, " " + sub if sub else "", opt, cmd, " " + sub if sub else ""))


# What a doc's `NAME=...` stands for when a `twicectl plugin check` line is run here.
EXAMPLE_VALUES = {"command": "/bin/cat", "url": "http://127.0.0.1:9/"}


def run_plugin_check(where, args):
    """Runs a doc's `twicectl plugin check FILE.so [NAME=VALUE]...` on this build's file."""
    argv = ["twicectl", "plugin", "check"]
    for a in args:
        if a.endswith(".so"):
            if PLACEHOLDER.match(a) or a.startswith(("file.", "FILE.")):
                return
            if "/" not in a:
                problem(where, "twicectl plugin check %s: a file name is looked up in the "
                        "current directory, not in plugin_dir: give its path" % a)
                return
            found = find_plugin(os.path.basename(a))
            if found is None:
                problem(where, "plugin file %s is not one this build makes" % a)
                return
            argv.append(found)
        elif "=" in a and a.split("=", 1)[1] == "...":
            argv.append("%s=%s" % (a.split("=")[0], EXAMPLE_VALUES.get(a.split("=")[0], "x")))
        else:
            argv.append(a)
    rc, out = run(argv)
    if rc != 0:
        problem(where, "%s: exit %d: %s" % (" ".join(["twicectl", "plugin", "check"] + args), rc,
                                            out.strip().split("\n")[-1]))


def check_twiced(where, words):
    rc, text = help_of("twiced")
    allowed = options_in(text)
    for k, w in enumerate(words[1:], 1):
        for opt in re.findall(r"(?:^|[\[(|])(--?[a-zA-Z][\w-]*)", w):
            if opt not in allowed:
                problem(where, "twiced: no option %s (twiced --help)" % opt)
        if w in ("-s", "--signal") and k + 1 < len(words) and \
                re.fullmatch(r"[a-z][a-z0-9_-]*", words[k + 1]):
            sig = words[k + 1]
            if not re.search(r"\b%s\b" % sig, text.split("\n")[0]):
                problem(where, "twiced -s: no signal %r" % sig)


def check_command(where, line):
    line = re.sub(r"\s+#\s.*$", "", line).strip()
    line = re.sub(r"^(\$|sudo)\s+", "", line)
    m = re.search(r"(?:^|&&\s*|;\s*|\|\s*|\$\(\s*|\bthen\s+|^Exec\w+=)"
                  r"((?:/usr/s?bin/)?twice(?:d|ctl)\b.*)", line)
    if not m:
        return
    try:
        words = shlex.split(m.group(1).split("|")[0].split("&&")[0].split(";")[0].split(">")[0])
    except ValueError:
        words = m.group(1).split()
    if not words:
        return
    words[0] = os.path.basename(words[0])
    counts["command"] += 1
    (check_twicectl if words[0] == "twicectl" else check_twiced)(where, words)


def inline_commands(path, text, man):
    """Inline `twiced ...`/`twicectl ...` spans, with their line numbers."""
    out, section = [], ""
    for n, line in enumerate(text.split("\n"), 1):
        if man:
            if line.startswith(".B twice"):
                out.append((n, unman(line[3:]).replace('"', "")))
            for m in re.finditer(r"\\fB(twice(?:d|ctl) [^\\]*(?:\\-[^\\]*)*)\\f[RP]", line):
                out.append((n, unman(m.group(1))))
        else:
            for m in re.finditer(r"`((?:sudo )?twice(?:d|ctl) [^`]*)`", line):
                out.append((n, m.group(1)))
            if line.startswith("## "):
                section = line
            elif line.startswith("| `") and section.strip() == "## twicectl":
                # the command table: its first column's spans are twicectl command lines
                first = line.split(" | ")[0]
                out += [(n, "twicectl " + c.replace("\\|", "|"))
                        for c in re.findall(r"`([^`]+)`", first)]
    return out


def roff_text(line):
    """A man page line as printed: .B and .I join their arguments with blanks, .BR, .IR,
    .RB ... with nothing between them (roff's alternating fonts)."""
    m = re.match(r"^\.([BIR]{1,2})\s+(.*)$", line)
    if not m:
        return unman(line).strip()
    try:
        args = shlex.split(m.group(2).replace("\\", "\\\\"), posix=True)
    except ValueError:
        args = m.group(2).split()
    return unman(("" if len(m.group(1)) == 2 else " ").join(args)).strip()


def man_heads(path, section):
    """The .TP heads of a man page's section, as (line, text)."""
    lines = open(path, encoding="utf-8").read().split("\n")
    inside, out = False, []
    for n, line in enumerate(lines):
        if line.startswith(".SH"):
            inside = line.strip() == ".SH " + section
        elif inside and line.startswith(".TP") and n + 1 < len(lines):
            head = re.sub(r"\\fI(.*?)\\f[RBP]", lambda m: m.group(1).upper(), lines[n + 1])
            out.append((n + 2, roff_text(head)))
    return out


def check_plugin_pages():
    """twice-http(7) and twice-exec(7) name, in SETTINGS, exactly the settings their plugin
    declares (`twicectl --json plugin check`), with the defaults it declares."""
    for page, so, needed in (("twice-http.7", "http.so", "url=http://127.0.0.1:9/"),
                             ("twice-exec.7", "exec.so", "command=/bin/cat")):
        path = os.path.join(ROOT, "packaging", "man", page)
        rc, out = run(["twicectl", "--json", "plugin", "check",
                       os.path.join(os.environ["TWICE_PLUGIN_BUILD_DIR"], so), needed])
        try:
            declared = {d["name"]: d["default"] for d in json.loads(out)["settings"]}
        except (ValueError, KeyError) as e:
            problem("packaging/man/" + page, "twicectl plugin check %s: %s: %s" % (so, e, out))
            continue
        shown = set()
        for n, head in man_heads(path, "SETTINGS"):
            m = re.match(r"(.*?)(?: \(default (.*)\))?$", head)
            for name in m.group(1).split(", "):
                shown.add(name)
                if name not in declared:
                    problem("packaging/man/%s:%d" % (page, n),
                            "%s declares no setting %s" % (so, name))
                elif m.group(2) is not None and m.group(2) != declared[name]:
                    problem("packaging/man/%s:%d" % (page, n), "%s: default %s, %s declares %s"
                            % (name, m.group(2), so, declared[name]))
        for name in sorted(set(declared) - shown):
            problem("packaging/man/" + page, "SETTINGS has no entry for %s's %s" % (so, name))


def check_etc():
    """The command lines of etc/: the systemd unit's Exec lines, logrotate's postrotate, the
    Kubernetes containers' commands, and those twice.conf's comments show (indented or in
    backquotes)."""
    etc = os.path.join(ROOT, "etc")
    for name in ("twice.service", "twice.logrotate", "twice.conf"):
        path = os.path.join(etc, name)
        for n, line in enumerate(open(path, encoding="utf-8").read().split("\n"), 1):
            where = "etc/%s:%d" % (name, n)
            if line.startswith("#"):
                for span in re.findall(r"`((?:sudo )?twice(?:d|ctl) [^`]*)`", line):
                    check_command(where, span)
                if line.startswith("#    "):
                    check_command(where, line[1:])
            else:
                check_command(where, line)
    for path in sorted(glob.glob(os.path.join(etc, "kubernetes", "*.yaml"))):
        for n, line in enumerate(open(path, encoding="utf-8").read().split("\n"), 1):
            m = re.match(r"\s*(?:command|args):\s*(\[.*\])\s*$", line)
            if m and "twice" in m.group(1):
                check_command("%s:%d" % (os.path.relpath(path, ROOT), n),
                              shlex.join(json.loads(m.group(1))))


def balanced(text, start):
    """text from start (an opening brace or parenthesis) to its closing one, or None."""
    depth = 0
    for i in range(start, len(text)):
        depth += (text[i] in "({") - (text[i] in ")}")
        if depth == 0:
            return text[start:i + 1]
    return None


def check_sdk_examples():
    """The twice.conf entries and command lines the SDK's examples show in their comments
    (a Python example's docstring):
    a plugins list as it is, a lone plugin entry inside `plugins = ( ... );`."""
    for path in sorted(glob.glob(os.path.join(ROOT, "sdk", "examples", "*"))):
        rel = os.path.relpath(path, ROOT)
        lines = open(path, encoding="utf-8").read().split("\n")
        if path.endswith(".py"):  # the docstring says it
            comment = lines
        else:
            comment = [re.sub(r"^\s*(?:#!.*|#|//|/?\*+/?)", "", x) if
                       re.match(r"\s*(#|//|/?\*)", x) else "" for x in lines]
        text = "\n".join(comment)
        for m in re.finditer(r"plugins\s*=\s*\(|twice\.conf:\s*\{", text):
            snippet = balanced(text, m.end() - 1)
            line = text.count("\n", 0, m.start()) + 1
            if snippet is None:
                problem("%s:%d" % (rel, line), "a twice.conf entry that does not close")
                continue
            entry = snippet[1:-1] if snippet.startswith("(") else snippet
            block = Block(path, line, "plugins = (%s);" % entry, None)
            check_conf(block, complete(block.text, block.where()))
        for n, line in enumerate(comment, 1):
            if line.startswith("    "):
                check_command("%s:%d" % (rel, n), line)


def check_man_synopses():
    """twicectl(1)'s COMMANDS and both OPTIONS sections name what exists (each head is a
    command line), and name all of it: every command, subcommand and option the programs'
    help lists has its entry."""
    ctl = os.path.join(ROOT, "packaging", "man", "twicectl.1")
    daemon = os.path.join(ROOT, "packaging", "man", "twiced.8")
    heads = man_heads(ctl, "COMMANDS")
    for n, head in heads:
        check_command("packaging/man/twicectl.1:%d" % n, "twicectl " + head)
    for path, prog in ((ctl, "twicectl"), (daemon, "twiced")):
        opts = man_heads(path, "OPTIONS")
        for n, head in opts:
            for alternative in head.split(", "):  # -c, --config FILE
                check_command("%s:%d" % (os.path.relpath(path, ROOT), n),
                              prog + " " + alternative)
        documented = options_in(" ".join(h for _, h in opts))
        for opt in sorted(options_in(help_of(prog)[1].split("\n\n", 1)[-1]) - documented):
            problem(os.path.relpath(path, ROOT), "OPTIONS has no entry for %s (%s --help)"
                    % (opt, prog))
    usage = help_of("twicectl")[1]
    shown = {tuple(h.split()[:2]) for _, h in heads} | {(h.split()[0],) for _, h in heads}
    for cmd in re.findall(r"^  ([a-z]+)\s", usage, re.M):
        subs = re.findall(r"^(?:usage:|      ) twicectl %s ([a-z]+)" % cmd,
                          help_of("twicectl", cmd)[1], re.M)
        for want in [(cmd, sub) for sub in subs] or [(cmd,)]:
            if want not in shown:
                problem("packaging/man/twicectl.1", "COMMANDS has no entry for %s"
                        % " ".join(want))


# ---------------------------------------------------------------------------
# Output the docs show (made again here; no server needed)

OUTPUTS = [
    # twiced(8) EXAMPLES and the README's install section: a configuration with 3 plugins.
    ("packaging/man/twiced.8", "configuration and 3 plugins OK",
     'plugins = ({ name = "a"; path = "http.so"; settings = { url = "http://127.0.0.1:9/"; '
     'key = "a:{id}"; }; }, { name = "b"; path = "http.so"; settings = { url = '
     '"http://127.0.0.1:9/"; key = "b:{id}"; }; }, { name = "c"; path = "http.so"; settings '
     '= { url = "http://127.0.0.1:9/"; key = "c:{id}"; }; });'),
    ("README.md", "configuration and 3 plugins OK", None),
    # twice-exec(7): a malformed env.
    ("packaging/man/twice-exec.7", "word 1 is not NAME=value",
     '\n' * 10 + 'plugins = ({ name = "x"; path = "exec.so";\n'
     ' settings = { command = "/bin/cat"; key = "x:{id}"; env = "FOO"; }; });'),
    # README, "Write your own plugin": a setting init refuses.
    ("README.md", "setting 'greeting': must not be empty",
     '\n' * 10 + 'plugins = ({ name = "hello"; path = "hello.so";\n'
     '  settings = { greeting = ""; }; });'),
]


def shown_line(path, needle):
    """Where the doc shows the output with needle, and the output as shown: the line, or
    the code span holding needle (which may start on the line before)."""
    text = unman(open(os.path.join(ROOT, path), encoding="utf-8").read())
    lines = text.split("\n")
    for n, line in enumerate(lines, 1):
        if needle in line:
            at = line.index(needle)
            before = line[:at] if "`" in line[:at] else lines[n - 2] + " " + line[:at]
            if "`" not in before:
                return n, line.strip()
            after = line[at + len(needle):].split("`")[0]
            return n, (before.rsplit("`", 1)[1] + needle + after).strip()
    return None, None


def check_outputs():
    made = {}
    for path, needle, conf in OUTPUTS:
        if conf is not None:
            made[needle] = twiced_test(complete(conf, "tests/check-docs.py"))[1]
        n, shown = shown_line(path, needle)
        where = "%s:%s" % (path, n)
        if shown is None:
            problem(path, "no longer shows %r (tests/check-docs.py OUTPUTS)" % needle)
            continue
        out = made[needle]
        counts["output"] += 1
        # the doc's FILE:LINE and file names stand for any; `...` for any text
        pattern = re.escape(shown).replace(re.escape("..."), ".*")
        pattern = re.sub(r"(?:/etc/twice/)?twice\\\.conf(?::\d+)?|FILE:LINE",
                         r"[^ ]*twice\\.conf(?::\\d+)?", pattern)
        if not re.search(pattern, out):
            problem(where, "shows %r, twiced -t now prints %r" % (shown, out))


# ---------------------------------------------------------------------------
# Names of the SDK


def sdk_names():
    """The host API's functions (twice_api's members) and every identifier of the SDK's
    public headers (plugin.h, mock.h)."""
    headers = glob.glob(os.path.join(ROOT, "sdk", "include", "twice", "*.h")) + \
        glob.glob(os.path.join(ROOT, "sdk", "mock", "twice", "*.h"))
    text = "".join(open(h, encoding="utf-8").read() for h in headers)
    return set(re.findall(r"\(\*(\w+)\)\s*\(", text)), set(re.findall(r"\w+", text))


SDK_CONSTANT = re.compile(r"\bTWICE_(?:DONE|RETRY|REJECT|LOG_\w+|FLAG_\w+|SETTING_\w+|ABI_\w+|"
                          r"KEY_\w+|API_\w+|PLUGIN\w*|STATUS_\w+)\b|\btwice_mock_\w+|"
                          r"\btwice_[a-z_]+_t\b")


def check_sdk_names(path, text, names):
    """`api->name` is a function of the host API; twice_mock_*, TWICE_DONE ... are in the
    SDK's headers: a renamed function or constant in a doc fails here."""
    api, idents = names
    for n, line in enumerate(unman(text).split("\n"), 1):
        where = "%s:%d" % (os.path.relpath(path, ROOT), n)
        for fn in re.findall(r"\bapi->(\w+)", line):
            if fn not in api:
                problem(where, "api->%s: no such function in twice_api (sdk/include)" % fn)
        for m in SDK_CONSTANT.finditer(line):
            if m.group(0) not in idents and not m.group(0).startswith("TWICE_PLUGIN_"):
                problem(where, "%s: not in the SDK's headers" % m.group(0))


def struct_functions(header, struct):
    """{member: number of parameters} of a struct's function pointers in a header."""
    text = open(header, encoding="utf-8").read()
    body = re.search(r"typedef struct %s \{(.*?)\n\} %s;" % (struct, struct), text, re.S)
    out = {}
    for m in re.finditer(r"\(\*(\w+)\)\s*\(([^;]*?)\)\s*(?:TWICE_\w+\([^)]*\))?\s*;",
                         body.group(1) if body else "", re.S):
        out[m.group(1)] = len([a for a in m.group(2).split(",") if a.strip()])
    return out


def check_plugin_page():
    """twice-plugin(3)'s \"The host API\" has an entry for every function of twice_api, each
    with the header's number of parameters, and no other; \"The descriptor\"'s entries are
    fields of twice_plugin."""
    header = os.path.join(ROOT, "sdk", "include", "twice", "plugin.h")
    path = os.path.join(ROOT, "packaging", "man", "twice-plugin.3")
    api = struct_functions(header, "twice_api")
    lines = open(path, encoding="utf-8").read().split("\n")
    sub, shown = "", set()
    fields = set(re.findall(r"\b(\w+)\s*(?:;|\)\s*\()",
                            re.search(r"typedef struct twice_plugin \{(.*?)\n\} twice_plugin;",
                                      open(header, encoding="utf-8").read(), re.S).group(1)))
    for n, line in enumerate(lines):
        if line.startswith((".SS", ".SH")):
            sub = line
        if not line.startswith(".TP") or n + 1 >= len(lines):
            continue
        head, where = roff_text(lines[n + 1]), "packaging/man/twice-plugin.3:%d" % (n + 2)
        if sub == ".SS The host API":
            for fn, args in re.findall(r"(\w+)\(([^)]*)\)", head):
                shown.add(fn)
                if fn not in api:
                    problem(where, "%s: twice_api has no such function (plugin.h)" % fn)
                elif len(args.split(",")) != api[fn]:
                    problem(where, "%s(%s): plugin.h gives it %d parameters" % (fn, args, api[fn]))
        elif sub == ".SS The descriptor" and head.split()[0] not in fields:
            problem(where, "%s: no field of twice_plugin (plugin.h)" % head.split()[0])
    for fn in sorted(set(api) - shown):
        problem("packaging/man/twice-plugin.3", "The host API has no entry for %s()" % fn)


def exported_metrics():
    """The metric names core/proc/metrics.c renders (as tests/check-kubernetes.py reads them)."""
    with open(os.path.join(ROOT, "core", "proc", "metrics.c"), encoding="utf-8") as f:
        names = set(re.findall(r'"(twice_[a-z0-9_]+)"', f.read()))
    return {n for n in names if not n.startswith("twice_internal_")} | {"twice_build_info"}


# twice_* names in the docs that are no metric: SDK names aside (the headers'), the package
# file's twice_0.1.0, table and statement names, the test harness's role and layer probe.
NOT_METRICS = re.compile(r"twice_(0|test|layer|idem_\w+|claim_|add_plugin|idempotency)$")


def check_metric_names(path, text, exported, sdk_idents):
    """Any other twice_* name the docs use is a metric twiced exports."""
    for n, line in enumerate(unman(text).split("\n"), 1):
        for name in re.findall(r"\b(twice_[a-z0-9_]+)", line):
            if name in sdk_idents or name.startswith("twice_mock") or NOT_METRICS.match(name):
                continue
            if re.sub(r"_(bucket|sum|count)$", "", name) not in exported:
                problem("%s:%d" % (os.path.relpath(path, ROOT), n),
                        "%s is not a metric twiced exports (core/proc/metrics.c)" % name)


# ---------------------------------------------------------------------------
# Lists of what the packages install


def check_bundled_lists(path, text):
    """A sentence that lists bundled plugin files (it names welcome_email.so and sync.so)
    names every plugin this build makes."""
    built = sorted(os.path.basename(p) for p in
                   glob.glob(os.path.join(os.environ["TWICE_PLUGIN_BUILD_DIR"], "*.so")))
    lines = unman(text).split("\n")
    for n, line in enumerate(lines):
        if "welcome_email.so" in line:
            near = " ".join(lines[max(0, n - 2):n + 3])
            if "sync.so" in near:
                missing = [b for b in built if b not in near]
                if missing:
                    problem("%s:%d" % (os.path.relpath(path, ROOT), n + 1),
                            "lists the bundled plugins without %s" % ", ".join(missing))


PACKAGED = ("/usr/share/twice", "/usr/share/doc/twice", "/usr/lib/x86_64-linux-gnu/twice",
            "/usr/lib/<multiarch>/twice",
            "/usr/lib64/twice", "/usr/sbin/", "/usr/bin/twice", "/usr/lib/systemd/system/twice",
            "/etc/logrotate.d/twice", "/etc/twice/twice.conf", "/usr/include/twice")


def check_packaged_paths(path, text):
    """A file the docs say a package installs is in that package (packaging/expected/)."""
    listed = set()
    for f in glob.glob(os.path.join(ROOT, "packaging", "expected", "*.list")):
        listed.update(line.split()[-1] for line in open(f, encoding="utf-8") if line.strip())
    for n, line in enumerate(unman(text).split("\n"), 1):
        for p in re.findall(r"(?<![\w.])(/(?:usr|etc)/[\w./+<>-]*[\w/])", line):
            general = re.sub(r"^/usr/lib/(x86_64-linux-gnu|<multiarch>)/", "/usr/lib/@MULTIARCH@/",
                             p.rstrip("/"))
            if p.startswith(PACKAGED) and general not in listed:
                problem("%s:%d" % (os.path.relpath(path, ROOT), n),
                        "%s is in no package (packaging/expected/)" % p)


REPO_PATH = re.compile(r"(?<![\w./-])((?:core|tests|scripts|bench|etc|packaging|sdk|plugins|docs)"
                       r"/[\w./*<>-]*[\w*>]/?)")


def check_repo_paths(path, text):
    """A file of the repository the docs name is there (FILE.c, NAME/ placeholders aside)."""
    for n, line in enumerate(unman(text).split("\n"), 1):
        for p in REPO_PATH.findall(line):
            if re.search(r"[A-Z]{2,}|(?<![a-z])X(?![a-z])|[*<]", p):
                continue
            if not os.path.exists(os.path.join(ROOT, p)):
                problem("%s:%d" % (os.path.relpath(path, ROOT), n),
                        "%s: no such file in the repository" % p)


# ---------------------------------------------------------------------------


def check_block(block):
    if block.marker and block.marker[0] == "skip":
        if not block.marker[1]:
            problem(block.where(), "check-docs: skip without a reason")
        return
    kind = kind_of(block)
    if kind == "conf":
        check_conf(block, complete(block.text, block.where()))
    elif kind == "c":
        check_c(block)
    elif block.marker and block.marker[0] == "error":
        problem(block.where(), "marked as an error, but is no twice.conf")
    if kind not in ("conf", "c", "json", "yaml", "python", "js"):
        for k, line in enumerate(block.text.split("\n")):
            check_command(block.where(k), line)


def check_doc(path, man, known):
    """One Markdown file or man page: its blocks, then what it names inline."""
    table, names, metrics = known
    for block in (man_blocks(path) if man else markdown_blocks(path)):
        check_block(block)
    text = open(path, encoding="utf-8").read()
    check_names(path, text, names, metrics)
    check_bundled_lists(path, text)
    for n, cmd in inline_commands(path, text, man):
        check_command("%s:%d" % (os.path.relpath(path, ROOT), n), cmd)
    for n, span in inline_settings(text, man):
        check_inline_setting("%s:%d" % (os.path.relpath(path, ROOT), n), span, table)


def check_names(path, text, names, metrics):
    """The files, SDK names, metrics and man pages a text names exist."""
    check_packaged_paths(path, text)
    check_repo_paths(path, text)
    check_sdk_names(path, text, names)
    check_metric_names(path, text, metrics, names[1])
    check_man_refs(path, text)


def check_man_refs(path, text):
    """`man [N] twice...` and twice...(N) name a page packaging/man has, in that section."""
    pages = {re.sub(r"\.in$", "", os.path.basename(p)) for p in
             glob.glob(os.path.join(ROOT, "packaging", "man", "*"))}
    for n, line in enumerate(unman(text).split("\n"), 1):
        refs = re.findall(r"\bman (?:(\d) )?(twice[\w.-]*\w)", line)
        refs += [(sec, name) for name, sec in
                 re.findall(r"\b(twice[\w.-]*\w)\s?\((\d)\)", line)]
        for sec, name in refs:
            if not any(p == "%s.%s" % (name, sec) if sec else p.startswith(name + ".")
                       for p in pages):
                problem("%s:%d" % (os.path.relpath(path, ROOT), n),
                        "%s%s: no such man page in packaging/man" % (
                            name, "(%s)" % sec if sec else ""))


def check_reference(names, metrics):
    """etc/twice.conf as it is and with its commented examples in force."""
    ref = os.path.join(ROOT, "etc", "twice.conf")
    text = open(ref, encoding="utf-8").read()
    check_names(ref, text, names, metrics)
    check_conf(Block(ref, 1, "", None), complete(text, ref))
    check_conf(Block(ref, 1, "", None), complete(uncommented(text), ref),
               " (its commented examples in force)")


# --link-flag=FLAG arguments: what a sanitizer build's mock library needs at the link
# (tests/CMakeLists.txt passes the sanitizer's flag, as to tests/sdk/check-cxx.py).
LINK_FLAGS = []


def main():
    for arg in sys.argv[1:]:
        if not arg.startswith("--link-flag="):
            print("usage: check-docs.py [--link-flag=FLAG]...")
            return 2
        LINK_FLAGS.append(arg[len("--link-flag="):])
    for var in ("TWICE_BIN_DIR", "TWICE_PLUGIN_BUILD_DIR"):
        if not os.environ.get(var):
            print("check-docs: %s is not set (ctest sets it)" % var)
            return 1
    md, man = doc_files()
    known = (settings_table(), sdk_names(), exported_metrics())
    for path in md + man:
        check_doc(path, path in man, known)
    check_man_synopses()
    check_etc()
    check_plugin_pages()
    check_plugin_page()
    check_sdk_examples()
    check_reference(known[1], known[2])
    check_outputs()
    for p in problems:
        print(p)
    print("check-docs: %d twice.conf, %d inline settings, %d C, %d command lines, %d outputs "
          "checked; %d problems" % (counts["conf"], counts["inline"], counts["c"],
                                    counts["command"], counts["output"], len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
