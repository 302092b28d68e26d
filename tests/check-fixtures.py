#!/usr/bin/env python3
"""check-fixtures.py - every fixture plugin says which tests use it, and says it right.

Each tests/plugins/NAME.c ends its opening comment with "Used by: FILE, FILE." naming the
test files (tests/unit/*.c, tests/integration/*.py) that load it. This checks that list
against the test files that mention NAME as a word: none missing, none extra. Exit 0 when
every fixture agrees, 1 with one line per problem. Run by ctest as unit/fixtures.
"""
import os
import re
import sys

USED_BY = re.compile(r"Used by:(.*?)\*/", re.S)
FILE = re.compile(r"[\w-]+\.(?:c|py)\b")


def test_files(root):
    """{basename: text} of the unit and integration tests that can load a fixture."""
    out = {}
    for sub, ext in (("unit", ".c"), ("integration", ".py")):
        folder = os.path.join(root, "tests", sub)
        for f in sorted(os.listdir(folder)):
            if f.endswith(ext):
                with open(os.path.join(folder, f), encoding="utf-8") as fh:
                    out[f] = fh.read()
    return out


def check(root):
    problems = []
    tests = test_files(root)
    folder = os.path.join(root, "tests", "plugins")
    for f in sorted(os.listdir(folder)):
        if not f.endswith(".c"):
            continue
        name = f[:-2]
        with open(os.path.join(folder, f), encoding="utf-8") as fh:
            head = fh.read().split("*/", 1)[0] + "*/"
        m = USED_BY.search(head)
        if m is None:
            problems.append(f"tests/plugins/{f}: no \"Used by:\" line in its opening comment")
            continue
        said = set(FILE.findall(m.group(1)))
        word = re.compile(r"\b" + re.escape(name) + r"\b")
        used = {t for t, text in tests.items() if word.search(text)}
        for t in sorted(used - said):
            problems.append(f"tests/plugins/{f}: used by {t}, which its \"Used by:\" line omits")
        for t in sorted(said - used):
            problems.append(f"tests/plugins/{f}: \"Used by:\" names {t}, which does not use it")
    return problems


def main():
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    problems = check(root)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
