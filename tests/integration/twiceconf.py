"""twiceconf: building twice.conf texts and reading /metrics for integration tests.

What it is for: the configuration blocks every lifecycle test writes (queues,
plugins, the idempotency store), a free port for the metrics listener, and
scraping /metrics with a real Prometheus text-format parser. Not for
assertions: those stay in the test_*.py files.

Used by: every tests/integration/test_*.py but test_harness.py, and scripts/demo.py.
"""

import os
import socket
import time
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def quote(value):
    """A libconfig string literal. '$' is doubled because Twiced runs the text
    through string.Template."""
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return '"%s"' % text.replace("$", "$$")


def setting(name, value):
    if isinstance(value, bool):
        return "%s = %s;" % (name, "true" if value else "false")
    if isinstance(value, int):
        return "%s = %d;" % (name, value)
    return "%s = %s;" % (name, quote(value))


def plugin(name, path, **settings):
    body = " ".join(setting(k, v) for k, v in settings.items())
    block = "{ name = %s; path = %s;" % (quote(name), quote(path))
    if settings:
        block += " settings = { %s };" % body
    return block + " }"


def plugin_lines(name, path, settings, include=None):
    """plugin(), laid out for tests of where an error is placed: the entry's first line,
    then its settings group's, then one line a setting (of the dict settings, in its
    order), and the entry's last line starting with "}". include: a file name the group pulls
    in with @include after those settings (include_text() writes its settings).
    settingcheck.py finds where twiced should place an error in one of them."""
    lines = ["{ name = %s; path = %s;" % (quote(name), quote(path)), "  settings = {"]
    lines += ["    " + setting(k, v) for k, v in settings.items()]
    if include is not None:
        lines.append("@include %s" % quote(include))
    return "\n".join(lines + ["  };", "}"])


def include_text(settings):
    """The text of an @include file of plugin_lines(): one line a setting. '$' is not
    doubled: Twiced runs only the configuration through string.Template."""
    return "".join(setting(k, v).replace("$$", "$") + "\n" for k, v in settings.items())


def queue(name, url, dlq_url, plugin_name=None, routes=None, route_by=None, **options):
    """A queue entry. Defaults suit tests: short polls and visibility timeouts."""
    values = {"concurrency": 4, "batch_size": 10, "wait_time": 1, "visibility_timeout": 10,
              "max_attempts": 5}
    values.update(options)
    backoff = values.pop("backoff", (1, 30))
    parts = [setting("name", name), setting("url", url), setting("dlq_url", dlq_url)]
    if plugin_name is not None:
        parts.append(setting("plugin", plugin_name))
    if route_by is not None:
        parts.append(setting("route_by", route_by))
        entries = ", ".join("{ value = %s; plugin = %s; }" % (quote(v), quote(p))
                            for v, p in routes)
        parts.append("routes = ( %s );" % entries)
    parts += [setting(k, v) for k, v in values.items()]
    parts.append("backoff = { base = %d; cap = %d; };" % backoff)
    return "{ %s }" % " ".join(parts)


def config(env, dsn, queues, plugins, workers=1, drain_timeout=10, metrics_port=None,
           log_level="info", on_conflict="skip", lease_margin=2, extra="", endpoint=None,
           log_format="text", queue_stats_interval=None, s3_endpoint=None, log_file=None,
           p99_interval=None):
    """A whole twice.conf for the test servers of env (endpoint: another way to the
    emulator, such as a fault proxy; s3_endpoint: aws.s3_endpoint, for payloads in S3;
    log_file: log.file; queue_stats_interval, p99_interval: metrics.*, default if None)."""
    stats = "".join(" " + setting(k, v) for k, v in (("queue_stats_interval", queue_stats_interval),
                                                     ("p99_interval", p99_interval))
                    if v is not None)
    lines = [
        setting("workers", workers),
        setting("drain_timeout", drain_timeout),
        "log = { %s %s %s };" % (setting("level", log_level), setting("format", log_format),
                                 setting("file", log_file) if log_file else ""),
        "aws = { %s %s %s };" % (setting("region", env.region),
                                 setting("endpoint", endpoint or env.sqs_endpoint),
                                 setting("s3_endpoint", s3_endpoint) if s3_endpoint else ""),
        "idempotency = { %s %s %s %s };" % (
            setting("dsn", dsn), setting("on_conflict", on_conflict),
            setting("lease_margin", lease_margin), setting("janitor_interval", 1)),
        "metrics = { %s%s };" % (setting("listen", "127.0.0.1:%d" % metrics_port
                                         if metrics_port else ""), stats),
        "plugins = ( %s );" % ",\n  ".join(plugins),
        "queues = ( %s );" % ",\n  ".join(queues),
        extra,
    ]
    return "\n".join(lines) + "\n"


def test_plugin(env, name):
    return os.path.join(env.test_plugin_dir, name + ".so")


def scrape(port, timeout=5):
    """/metrics parsed into {(name, frozenset(labels.items())): value}."""
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=timeout) as r:
        text = r.read().decode("utf-8")
    samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    return samples


def metric_sum(samples, name, **labels):
    """The sum of every sample of `name` whose labels include `labels`."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= set(ls))


def wait_metric(port, name, expected, timeout=15, **labels):
    """Wait until the counter `name` (summed over `labels`) is `expected`; fail
    at once if it passes it, or with the last value at the timeout. A job's
    counters are bumped after its SQS calls and a drained worker's are folded
    into the master's when it exits, so a queue seen empty can be a moment
    ahead of them. Returns the last scrape."""
    deadline = time.monotonic() + timeout
    while True:
        samples = scrape(port)
        value = metric_sum(samples, name, **labels)
        if value == expected:
            return samples
        if value > expected or time.monotonic() >= deadline:
            raise AssertionError("%s%s is %s, expected %s" % (name, labels or "", value,
                                                               expected))
        time.sleep(0.2)


def http_status(port, path, timeout=5):
    """(status, body) of GET path on the metrics listener."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=timeout) as r:
            return r.status, r.read().decode("utf-8")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8")


EFFECTS_TABLE = """CREATE TABLE effects (
    key TEXT NOT NULL, message_id TEXT NOT NULL, version TEXT NOT NULL,
    attempt INT NOT NULL, at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp())"""
