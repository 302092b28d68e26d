#!/usr/bin/env python3
"""check-abi-prefix.py - today's plugin header still lays out what shipped headers laid out.

tests/plugins/abi/plugin-MAJOR.MINOR.h are sdk/include/twice/plugin.h as each ABI minor first
shipped (plugins users built then still load: test_plugins.OldPlugins). Minors only append,
so for each of them, within today's header: struct twice_plugin, struct twice_api and
struct twice_setting start with the old members, same declarations in the same order; the
enums keep their values; the magic, the major and the flags keep theirs. A member inserted
before an old one moves every later one: a plugin built against the old header then calls
the wrong host function, which no loader check can see (both say the same minor). Exit 0,
or 1 with one line per difference. --self-test shows it finds a swap. Run by ctest as
unit/abi-prefix.
"""
import glob
import os
import re
import sys

STRUCTS = ("twice_plugin", "twice_api", "twice_setting")
ENUMS = ("twice_status", "twice_log_level", "twice_setting_type")
MACROS = ("TWICE_ABI_MAGIC", "TWICE_ABI_MAJOR", "TWICE_FLAG_TRANSACTIONAL", "TWICE_KEY_MAX")


def strip(text):
    """The header without comments and attribute macros, one space for any run of blanks."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = text.replace("\\\n", " ")
    return re.sub(r"TWICE_PRINTF\(\s*\d+\s*,\s*\d+\s*\)", " ", text)


def members(text, name):
    """The normalised member declarations of typedef struct NAME { ... } NAME;"""
    m = re.search(r"typedef struct %s \{(.*?)\} %s;" % (name, name), text, re.S)
    if m is None:
        return None
    return [re.sub(r"\s+", " ", d).strip() for d in m.group(1).split(";") if d.strip()]


def enum(text, name):
    m = re.search(r"typedef enum %s \{(.*?)\} %s;" % (name, name), text, re.S)
    if m is None:
        return None
    return [re.sub(r"\s+", "", e) for e in m.group(1).split(",") if e.strip()]


def macro(text, name):
    m = re.search(r"^#define %s\s+(\S+)" % name, text, re.M)
    return m.group(1) if m else None


def compare(old_name, old, new):
    """The differences between one shipped header's text and today's."""
    problems = []
    for s in STRUCTS:
        was, now = members(old, s), members(new, s)
        if was is None or now is None:
            problems.append("%s: struct %s not found" % (old_name, s))
            continue
        for i, decl in enumerate(was):
            if i >= len(now) or now[i] != decl:
                problems.append("%s: struct %s member %d was '%s', is now '%s'"
                                % (old_name, s, i, decl, now[i] if i < len(now) else "gone"))
                break
    for e in ENUMS:
        was, now = enum(old, e), enum(new, e)
        if was != now[:len(was or [])]:
            problems.append("%s: enum %s was %s, is now %s" % (old_name, e, was, now))
    for name in MACROS:
        if macro(old, name) != macro(new, name):
            problems.append("%s: %s was %s, is now %s"
                            % (old_name, name, macro(old, name), macro(new, name)))
    return problems


def check(root):
    with open(os.path.join(root, "sdk", "include", "twice", "plugin.h"), encoding="utf-8") as f:
        new = strip(f.read())
    olds = sorted(glob.glob(os.path.join(root, "tests", "plugins", "abi", "plugin-*.h")))
    if not olds:
        return ["tests/plugins/abi: no shipped headers found"]
    problems = []
    for path in olds:
        with open(path, encoding="utf-8") as f:
            problems += compare(os.path.relpath(path, root), strip(f.read()), new)
    return problems


def self_test(root):
    """Today's header against itself passes; with two host functions swapped, it fails."""
    with open(os.path.join(root, "sdk", "include", "twice", "plugin.h"), encoding="utf-8") as f:
        new = strip(f.read())
    swapped = re.sub(r"(\(\*body\)[^;]*;)(.*?)(\(\*field\)[^;]*;)",
                     lambda m: m.group(3) + m.group(2) + m.group(1), new, count=1, flags=re.S)
    if compare("today", new, new) or swapped == new or not compare("swapped", new, swapped):
        print("check-abi-prefix: the self-test did not see a swap")
        return 1
    return 0


def main():
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    if sys.argv[1:] == ["--self-test"]:
        return self_test(root)
    problems = check(root)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
