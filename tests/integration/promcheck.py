"""A strict reader of the Prometheus text exposition format (0.0.4), stricter than
prometheus_client's parser, which accepts invalid UTF-8 (as replacement characters),
HELP or TYPE twice and a family's samples split apart. check() raises AssertionError
naming the first rule a /metrics body breaks and returns ({(name, labels): value},
{family: type}), where labels is a tuple of (name, value) pairs in order."""

import math
import re

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
TYPES = ("counter", "gauge", "histogram", "summary", "untyped")


def _labels(text, i, where):
    """Parse {a="b",...} from text[i] == "{"; returns (pairs, index after "}")."""
    pairs, i = [], i + 1
    while text[i] != "}":
        m = LABEL.match(text, i)
        if not m:
            raise AssertionError("%s: bad label name at %r" % (where, text[i:i + 20]))
        name, i = m.group(0), m.end()
        if text[i:i + 2] != '="':
            raise AssertionError("%s: label %s without =\"" % (where, name))
        i += 2
        value = []
        while text[i] != '"':
            c = text[i]
            if c == "\\":
                nxt = text[i + 1]
                if nxt not in '\\"n':
                    raise AssertionError("%s: label %s: bad escape \\%s" % (where, name, nxt))
                value.append({"\\": "\\", '"': '"', "n": "\n"}[nxt])
                i += 2
            else:
                value.append(c)
                i += 1
        i += 1
        if name in dict(pairs):
            raise AssertionError("%s: label %s twice" % (where, name))
        pairs.append((name, "".join(value)))
        if text[i] == ",":
            i += 1
        elif text[i] != "}":
            raise AssertionError("%s: expected , or } after label %s" % (where, name))
    return tuple(pairs), i + 1


def _family(name, types):
    """The family a sample name belongs to (histogram suffixes stripped)."""
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[:-len(suffix)]
        if name.endswith(suffix) and types.get(base) in ("histogram", "summary"):
            return base
    return name


def _check_histograms(samples, types):
    groups = {}
    for (name, labels), value in samples.items():
        fam = _family(name, types)
        if types.get(fam) != "histogram":
            continue
        key = (fam, tuple(p for p in labels if p[0] != "le"))
        g = groups.setdefault(key, {"buckets": [], "sum": None, "count": None})
        if name.endswith("_bucket"):
            le = dict(labels).get("le")
            if le is None:
                raise AssertionError("%s: a bucket without le" % name)
            g["buckets"].append((math.inf if le == "+Inf" else float(le), value))
        elif name.endswith("_sum"):
            g["sum"] = value
        else:
            g["count"] = value
    for (fam, labels), g in groups.items():
        where = "%s%s" % (fam, dict(labels))
        if g["sum"] is None or g["count"] is None or not g["buckets"]:
            raise AssertionError("%s: buckets, _sum and _count must all be there" % where)
        bounds = [b for b, _ in g["buckets"]]
        if bounds != sorted(bounds) or bounds[-1] != math.inf:
            raise AssertionError("%s: le must rise and end with +Inf: %s" % (where, bounds))
        counts = [c for _, c in g["buckets"]]
        if counts != sorted(counts):
            raise AssertionError("%s: buckets must be cumulative: %s" % (where, counts))
        if counts[-1] != g["count"]:
            raise AssertionError("%s: +Inf %s != _count %s" % (where, counts[-1], g["count"]))


def check(body):
    """Check a /metrics body (bytes); returns its samples and its families' types."""
    try:
        text = body.decode("utf-8", errors="strict")
    except UnicodeDecodeError as e:
        raise AssertionError("not UTF-8 at byte %d: %r" % (e.start, body[e.start - 40:e.end + 10]))
    if not text.endswith("\n"):
        raise AssertionError("the body must end with a newline")
    helps, types, samples, done, current = set(), {}, {}, set(), None
    for n, line in enumerate(text[:-1].split("\n"), 1):
        where = "line %d" % n
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                name = parts[2]
                if not NAME.fullmatch(name):
                    raise AssertionError("%s: bad metric name %r" % (where, name))
                if name != current and current is not None:
                    done.add(current)
                if name in done:
                    raise AssertionError("%s: %s comes back after other families" % (where, name))
                current = name
                if parts[1] == "HELP":
                    if name in helps:
                        raise AssertionError("%s: HELP %s twice" % (where, name))
                    if re.search(r"\\[^\\n]", parts[3] if len(parts) > 3 else ""):
                        raise AssertionError("%s: HELP %s: bad escape" % (where, name))
                    helps.add(name)
                else:
                    if name in types:
                        raise AssertionError("%s: TYPE %s twice" % (where, name))
                    if len(parts) != 4 or parts[3] not in TYPES:
                        raise AssertionError("%s: bad TYPE line %r" % (where, line))
                    if any(_family(s, {name: parts[3]}) == name for s, _ in samples):
                        raise AssertionError("%s: TYPE %s after its samples" % (where, name))
                    types[name] = parts[3]
            continue
        if line == "":
            continue
        m = NAME.match(line)
        if not m:
            raise AssertionError("%s: bad sample %r" % (where, line))
        name, i = m.group(0), m.end()
        labels = ()
        if i < len(line) and line[i] == "{":
            try:
                labels, i = _labels(line, i, where)
            except IndexError:
                raise AssertionError("%s: unterminated labels %r" % (where, line)) from None
        rest = line[i:].split(" ")
        if rest[0] != "" or len(rest) not in (2, 3):
            raise AssertionError("%s: bad value part %r" % (where, line[i:]))
        value = float(rest[1])
        fam = _family(name, types)
        if fam not in types or fam not in helps:
            raise AssertionError("%s: %s has no HELP or TYPE before it" % (where, fam))
        if fam != current:
            raise AssertionError("%s: %s apart from its family's lines" % (where, name))
        if types[fam] == "counter" and (value < 0 or math.isnan(value)):
            raise AssertionError("%s: counter %s is %s" % (where, name, value))
        key = (name, labels)
        if key in samples:
            raise AssertionError("%s: series %s%s twice" % (where, name, dict(labels)))
        samples[key] = value
    _check_histograms(samples, types)
    return samples, types


def went_down(before, after, types):
    """The counter and histogram series of before that are lower or gone in after."""
    return {k: (v, after.get(k)) for k, v in before.items()
            if types.get(_family(k[0], types)) in ("counter", "histogram")
            and (after.get(k) is None or after[k] < v)}
