#!/usr/bin/env python3
"""check-locale.py - the host reads and writes numbers, and compares ASCII text, in the C
locale only.

A plugin may call setlocale(); from then on strtod and printf's %f, %g, %e and %a read and
write the plugin's decimal point ("1,5") in every thread of the process. The host's own
numbers (keys, /metrics, the log, the store's answers) must not follow: they go through
core/text/cnum.h (cnum_strtod, cnum_snprintf) or buf_printf and the log, which use it.
This refuses, in core/ and sdk/mock/, a call of strtod, strtof, strtold, atof or the scanf
family, a call of the plain printf family whose format has a float conversion, and any
call of the v*printf family (its format comes from a caller, who may pass "%.1f").
The same setlocale() changes case: under tr_TR.UTF-8 tolower('I') is 'I' and
strcasecmp("ID", "id") != 0, and under a Latin-1 locale isalpha(0xE9) is true. So this also
refuses strcasecmp, strncasecmp, tolower, toupper and the is*() classes that follow the
locale (isalpha, isalnum, islower, isupper, isspace, isprint, isgraph, ispunct, iscntrl,
isblank): the host's protocol and configuration text goes through core/text/ascii.h
(ascii_strcasecmp, ascii_tolower, ascii_isalpha...). isdigit and isxdigit are the ASCII
digits in every locale and stay allowed. And it changes language: once a plugin called
setlocale(LC_ALL, ""), glibc translates strerror, perror and strsignal, so the host's
messages, which tests, docs and alerts quote, would too; core/ and sdk/mock/ use
cnum_strerror and cnum_strsignal (cnum.h), the C locale's texts.

The bundled plugins (plugins/) are held to the same rules: they share a worker with any
other plugin, whose setlocale() changes them too. There the ASCII helpers are
plugins/settings-common's plugin_ascii_* and plugin_c_vsnprintf (settings_common.h), since
plugins cannot use core/text/. Their tests (plugins/*/tests/) and the fixture plugins
(tests/plugins/) are not checked: tests put locales in force on purpose, and fixtures stand
for third-party plugins, which may write in the locale they chose (setlocale_de does, to show
that the host's numbers do not follow).

Exit 0 when there is none, 1 with one FILE:LINE line per call. Run by ctest as unit/locale;
--self-test shows that it finds each kind.
"""
import os
import re
import sys
import tempfile

EXEMPT = {os.path.join("core", "text", "cnum.c"),
          os.path.join("plugins", "settings-common", "c_format.c")}
TOPS = (("core",), ("sdk", "mock"), ("plugins",))
SKIPPED_DIRS = {"tests"}  # plugins/*/tests/: tests put locales in force on purpose
READERS = re.compile(r"\b(strtod|strtof|strtold|atof|sscanf|vsscanf|fscanf|vfscanf|scanf)\s*\(")
PRINTERS = re.compile(r"\b(printf|fprintf|dprintf|sprintf|snprintf|asprintf)\s*\(")
VPRINTERS = re.compile(r"\b(vprintf|vfprintf|vsprintf|vsnprintf|vdprintf|vasprintf)\s*\(")
FLOAT_CONV = re.compile(r"%[-+ #0']*(?:\d+|\*)?(?:\.(?:\d+|\*)?)?(?:hh|h|ll|l|L|q|j|z|t)?"
                        r"[aAeEfFgG]")
LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
ERRTEXTS = re.compile(r"\b(strerror|perror|strsignal)\s*\(")
CASERS = re.compile(r"\b(strcasecmp|strncasecmp|tolower|toupper|isalpha|isalnum|islower|isupper"
                    r"|isspace|isprint|isgraph|ispunct|iscntrl|isblank)\s*\(")
COMMENT = re.compile(r""""(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|/\*.*?\*/|//[^\n]*""", re.S)


def strip_comments(text):
    """text with comments blanked (newlines kept, so line numbers hold); string and
    character literals are skipped whole, so "http://" starts no comment."""
    return COMMENT.sub(lambda m: m.group(0) if m.group(0)[0] in "\"'"
                       else re.sub(r"[^\n]", " ", m.group(0)), text)


def call_args(text, start):
    """The text from the call's '(' at start to its matching ')' (strings skipped)."""
    depth, i = 0, start
    while i < len(text):
        c = text[i]
        if c == '"' or c == "'":
            m = re.compile(r"%s(?:[^%s\\\n]|\\.)*%s" % (c, c, c)).match(text, i)
            i = m.end() if m else i + 1
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
        i += 1
    return text[start:]


# What to use instead, in the host (core/, sdk/mock/) and in the bundled plugins.
ADVICE = {
    "host": {"read": "use cnum_strtod (cnum.h)",
             "vprint": "use cnum_vsnprintf, cnum_vfprintf (cnum.h) or buf_vprintf",
             "case": "use ascii_%s (ascii.h)",
             "print": "use cnum_snprintf (cnum.h) or buf_printf"},
    "plugin": {"read": "use strtod_l with a C locale object (newlocale)",
               "vprint": "use plugin_c_vsnprintf (settings_common.h)",
               "case": "use plugin_ascii_%s, or add it beside the others (settings_common.h)",
               "print": "use plugin_c_vsnprintf (settings_common.h)"},
}

HOST_ERRTEXT = {"strerror": "cnum_strerror (cnum.h)",
                "perror": "fprintf with cnum_strerror(errno) (cnum.h)",
                "strsignal": "cnum_strsignal (cnum.h)"}


def problems_in(rel, text):
    text = strip_comments(text)
    advice = ADVICE["plugin" if rel.split(os.sep)[0] == "plugins" else "host"]
    out = []
    for m in READERS.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        out.append("%s:%d: %s() reads the locale's decimal point: %s"
                   % (rel, line, m.group(1), advice["read"]))
    for m in VPRINTERS.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        out.append("%s:%d: %s() formats a caller's format in the process's locale: %s"
                   % (rel, line, m.group(1), advice["vprint"]))
    if advice is ADVICE["host"]:
        for m in ERRTEXTS.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            out.append("%s:%d: %s() says it in the language of the locale a plugin set (glibc "
                       "translates it): use %s" % (rel, line, m.group(1), HOST_ERRTEXT[m.group(1)]))
    for m in CASERS.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        why = ("tr_TR: 'I' is not 'i'" if m.group(1)[0] != "i"
               else "Latin-1: isalpha(0xE9)")
        out.append("%s:%d: %s() follows the locale a plugin set (%s): %s"
                   % (rel, line, m.group(1), why, advice["case"] % m.group(1)))
    for m in PRINTERS.finditer(text):
        if text[m.start() - 1:m.start()] in ("_", "."):
            continue
        fmt = "".join(LITERAL.findall(call_args(text, m.end() - 1))).replace("%%", "")
        if FLOAT_CONV.search(fmt):
            line = text.count("\n", 0, m.start()) + 1
            out.append("%s:%d: %s() of a float writes the locale's decimal point: %s"
                       % (rel, line, m.group(1), advice["print"]))
    return out


def check(root):
    problems = []
    for top in TOPS:
        for folder, dirs, files in os.walk(os.path.join(root, *top)):
            if top == ("plugins",):
                dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
            dirs.sort()
            for f in sorted(files):
                if not f.endswith((".c", ".h")):
                    continue
                path = os.path.join(folder, f)
                rel = os.path.relpath(path, root)
                if rel in EXEMPT:
                    continue
                with open(path, encoding="utf-8") as fh:
                    problems += problems_in(rel, fh.read())
    return problems


def self_test():
    """Each kind of call is found, and the allowed ones are not."""
    bad = ('double d = strtod(s, NULL);\n'
           'snprintf(b, n, "%s took %.1fs", name,\n'
           '         secs);\n'
           'fprintf(stderr, "x=%" "g\\n", x);\n'
           'int k = sscanf(s, "%d", &v);\n'
           'vsnprintf(why, n, fmt, ap);\n'
           'if (strcasecmp(h, "Content-Type") == 0 ||\n'
           '    strncasecmp(u, "http://", 7) == 0) c = tolower(c);\n'
           'if (isalnum(c) || isspace (c)) c = toupper(c);\n'
           'log_error("open %s: %s", p, strerror(errno)); perror("x");\n'
           'snprintf(b, n, "%s", strsignal(s));\n')
    good = ('/* strtod(s) and "%f" in a comment */\n'
            'snprintf(b, n, "%s: 100%% of %d", s, i);\n'
            'cnum_snprintf(b, n, "%.17g", d);\n'
            'buf_printf(b, "%.3f", d);\n'
            'double d = cnum_strtod(s, NULL);\n'
            'cnum_vsnprintf(why, n, fmt, ap);\n'
            'if (ascii_strcasecmp(h, "Content-Type") == 0) c = ascii_tolower(c);\n'
            'if (isdigit(c) || isxdigit(c) || ascii_isalnum(c)) c = ascii_toupper(c);\n'
            '/* tolower(c) and strcasecmp() in a comment */\n'
            'log_error("open %s: %s", p, cnum_strerror(errno)); x = strerror_l(e, c);\n'
            'snprintf(b, n, "%s", cnum_strsignal(s));\n')
    found = problems_in("bad.c", bad)
    lines = [p.split(":")[1] for p in found]
    want = ["1", "5", "6", "10", "10", "11", "7", "8", "8", "9", "9", "9", "2", "4"]
    if lines != want:
        print("self-test: expected problems at lines %s; got %s" % (", ".join(want), found))
        return 1
    if problems_in("good.c", good):
        print("self-test: false alarm: %s" % problems_in("good.c", good))
        return 1
    if problems_in(os.path.join("plugins", "p", "a.c"), 'x = strerror(errno);\n'):
        print("self-test: a plugin's strerror is its own business")
        return 1
    if "plugin_ascii_isspace" not in "".join(problems_in(os.path.join("plugins", "p", "a.c"),
                                                         "if (isspace(c)) n++;\n")):
        print("self-test: a plugin is not pointed at plugin_ascii_isspace")
        return 1
    with tempfile.TemporaryDirectory() as root:
        for rel in (("plugins", "p", "a.c"), ("plugins", "p", "tests", "t.c"),
                    ("tests", "plugins", "f.c")):
            os.makedirs(os.path.join(root, *rel[:-1]), exist_ok=True)
            with open(os.path.join(root, *rel), "w", encoding="utf-8") as fh:
                fh.write("if (isspace(c)) n++;\n")
        walked = [p.split(":")[0] for p in check(root)]
        if walked != [os.path.join("plugins", "p", "a.c")]:
            print("self-test: plugins/ walked wrong: %s" % walked)
            return 1
    print("self-test OK")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    problems = check(root)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
