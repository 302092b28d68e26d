#!/usr/bin/env python3
"""check-layers.py - core/ keeps the layers core/README.md describes.

Reads the map in core/README.md (folder | uses | what) and checks the tree against it:
  - every folder of core/ is in the map, and every folder in the map exists;
  - every #include "x.h" of a file in core/ names a header of its own layer or of a
    layer below it (the closure of "uses");
  - no two modules (x.c with x.h) include each other, and modules form no loop;
  - core/CMakeLists.txt links each layer with exactly the layers the map says it uses;
  - the SDK's mock host (sdk/mock/) has no include loop either.
Exit 0 when all hold, 1 with one line per problem. `--self-test` plants a bad include
and loops in a copy of core/ and sdk/mock/ and checks that all are reported (the checker
can fail).
"""
import os
import re
import shutil
import sys
import tempfile

ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*([^|]*)\|")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
LAYER_CALL = re.compile(r"twice_layer\((\w+)([^)]*)\)", re.S)


def read_map(core):
    """{name: set(uses)} from the README's table; a folder is "base", a file "twiced.c"."""
    layers = {}
    with open(os.path.join(core, "README.md"), encoding="utf-8") as f:
        for line in f:
            m = ROW.match(line)
            if not m or m.group(1) == "folder":
                continue
            name = m.group(1).rstrip("/")
            uses = {u.strip() for u in m.group(2).split(",") if u.strip() not in ("", "—", "-")}
            layers[name] = uses
    return layers


def closure(layers, name):
    seen, todo = set(), list(layers.get(name, ()))
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo.extend(layers.get(n, ()))
    return seen


def sources(core):
    """(layer, path) of every .c/.h under core/, the top-level files as their own layer."""
    for entry in sorted(os.listdir(core)):
        p = os.path.join(core, entry)
        if os.path.isdir(p):
            for f in sorted(os.listdir(p)):
                if f.endswith((".c", ".h")):
                    yield entry, os.path.join(p, f)
        elif entry.endswith(".c"):
            yield entry, p


def header_homes(core):
    homes = {"version.h": "base"}  # generated from base/version.h.in
    for layer, path in sources(core):
        if path.endswith(".h"):
            homes[os.path.basename(path)] = layer
    return homes


def check_folders(core, layers, problems):
    dirs = {d for d in os.listdir(core) if os.path.isdir(os.path.join(core, d))}
    tops = {f for f in os.listdir(core) if f.endswith(".c")}
    for d in sorted((dirs | tops) - set(layers)):
        problems.append(f"core/{d}: not described in core/README.md's map")
    for name in sorted(set(layers) - dirs - tops):
        problems.append(f"core/README.md: {name} is in the map but not in core/")
    for name, uses in sorted(layers.items()):
        for u in sorted(uses - set(layers)):
            problems.append(f"core/README.md: {name} uses {u}, which is not a layer")


def module(layer, path):
    return layer + "/" + os.path.splitext(os.path.basename(path))[0]


def check_includes(core, layers, problems):
    homes = header_homes(core)
    edges = {}
    for layer, path in sources(core):
        allowed = closure(layers, layer) | {layer}
        rel = os.path.relpath(path, os.path.dirname(core))
        with open(path, encoding="utf-8") as f:
            text = f.read()
        me = module(layer, path)
        for inc in INCLUDE.findall(text):
            home = homes.get(os.path.basename(inc))
            if home is None:
                problems.append(f"{rel}: includes {inc}, which is no header of core/")
                continue
            if home not in allowed:
                problems.append(f"{rel}: includes {inc} from {home}/, a layer {layer} may not "
                                f"use (it uses {', '.join(sorted(closure(layers, layer))) or 'nothing'})")
            other = home + "/" + os.path.splitext(os.path.basename(inc))[0]
            if other != me:
                edges.setdefault(me, set()).add(other)
    for a in sorted(edges):
        for b in sorted(edges[a]):
            if a < b and a in edges.get(b, ()):
                problems.append(f"core/{a} and core/{b} include each other")
    for loop in loops(edges):
        if len(loop) > 2:
            problems.append("modules include each other in a loop: " + " -> ".join(loop))


def loops(edges):
    """Strongly connected components of more than one module (Tarjan), sorted."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def check_cmake(core, layers, problems):
    with open(os.path.join(core, "CMakeLists.txt"), encoding="utf-8") as f:
        text = f.read()
    built = {}
    for name, args in LAYER_CALL.findall(text):
        if name == "name":  # the function's own definition
            continue
        built[name] = set(re.findall(r"twice_(\w+)", args)) - {"sdk"}
    for prog in ("twiced", "twiced-worker"):  # the executables' mains, core/PROG.c
        m = re.search(r"target_link_libraries\(%s PRIVATE([^)]*)\)" % re.escape(prog), text)
        if m:
            built[prog + ".c"] = set(re.findall(r"twice_(\w+)", m.group(1)))
    for name, uses in sorted(layers.items()):
        if name not in built:
            problems.append(f"core/CMakeLists.txt: no library for {name}")
        elif built[name] != uses:
            problems.append(f"core/CMakeLists.txt: {name} links {', '.join(sorted(built[name])) or 'nothing'}"
                            f", the map says {', '.join(sorted(uses)) or 'nothing'}")


def check_mock(mock, problems):
    """sdk/mock/: no two files include each other, and no loop. The public twice/mock.h is
    no node: several files implement it, and none calls another through it."""
    names = {os.path.splitext(f)[0] for f in os.listdir(mock) if f.endswith((".c", ".h"))}
    edges = {}
    for f in sorted(os.listdir(mock)):
        if not f.endswith((".c", ".h")):
            continue
        me = os.path.splitext(f)[0]
        with open(os.path.join(mock, f), encoding="utf-8") as fh:
            text = fh.read()
        for inc in INCLUDE.findall(text):
            other = os.path.splitext(inc)[0]
            if "/" not in inc and other in names and other != me:
                edges.setdefault(me, set()).add(other)
    for loop in loops(edges):
        problems.append("sdk/mock: files include each other in a loop: " + " -> ".join(loop))


def check(core):
    problems = []
    layers = read_map(core)
    if not layers:
        return ["core/README.md: no map (a table of folder | uses | what)"]
    check_folders(core, layers, problems)
    check_includes(core, layers, problems)
    check_cmake(core, layers, problems)
    mock = os.path.join(os.path.dirname(core), "sdk", "mock")
    if os.path.isdir(mock):
        check_mock(mock, problems)
    return problems


def self_test(core):
    """A copy with an upward include and a two-module loop must fail with both named."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "core")
        shutil.copytree(core, copy)
        mock = os.path.join(tmp, "sdk", "mock")
        shutil.copytree(os.path.join(os.path.dirname(core), "sdk", "mock"), mock)
        with open(os.path.join(mock, "mocklog.h"), "a", encoding="utf-8") as f:
            f.write('\n#include "mockapi.h"\n')
        with open(os.path.join(copy, "base", "log.c"), "a", encoding="utf-8") as f:
            f.write('\n#include "worker.h"\n')
        with open(os.path.join(copy, "base", "clock.h"), "a", encoding="utf-8") as f:
            f.write('\n#include "backoff.h"\n')
        with open(os.path.join(copy, "base", "backoff.c"), "a", encoding="utf-8") as f:
            f.write('\n#include "clock.h"\n')
        os.mkdir(os.path.join(copy, "stray"))
        problems = check(copy)
    want = ["core/base/log.c: includes worker.h from worker/",
            "core/base/backoff and core/base/clock include each other",
            "core/stray: not described",
            "sdk/mock: files include each other in a loop: mock_internal -> mockapi -> mocklog"]
    missing = [w for w in want if not any(p.startswith(w) for p in problems)]
    for w in missing:
        print(f"self-test: the checker did not report: {w}", file=sys.stderr)
    return 1 if missing else 0


def main():
    core = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "core")
    core = os.path.normpath(core)
    if sys.argv[1:] == ["--self-test"]:
        return self_test(core)
    problems = check(core)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
