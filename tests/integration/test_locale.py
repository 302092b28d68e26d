"""A plugin that calls setlocale(LC_ALL, "de_DE.UTF-8") in its init (as a library using the
user's locale does) changes how the whole worker reads and writes numbers: "1,5". twiced's
own numbers must not follow: the keys of {"amount": 1.5} and {"amount": 1.7} stay
"amount:1.5" and "amount:1.7" (two jobs, not one and a false duplicate), a real duplicate
is still recognized, the worker's log writes "0.012s", and /metrics stays a valid
exposition. The plugin's own output keeps its locale ("1,50"). Under tr_TR.UTF-8, where
libc's strcasecmp("ID", "id") != 0, the http plugin beside it still reads a header sent in
capitals. The locale is the system's, else built with localedef into a temporary LOCPATH
(Debian's `locales`, scripts/deps.sh): no root needed."""

import json
import os
import subprocess
import tempfile
import unittest
import urllib.request

import promcheck
import twicetest
import twiceconf as tc
from test_http_plugin import EffectService


def comma_locale_env(run_dir, name="de_DE"):
    """The environment twiced needs for its plugin's setlocale("NAME.UTF-8"): none when
    the system has that locale (scripts/deps.sh makes it when run as root), else LOCPATH
    to one localedef builds here. With LOCPATH set, glibc's newlocale() keeps its copy of
    the path (44 bytes from __argz_add_sep; libp11-kit's constructor calls it in every
    process): that one leak of glibc's is suppressed for LeakSanitizer in a sanitizer
    build."""
    have = subprocess.run(["locale", "-a"], capture_output=True, text=True).stdout.split()
    if name + ".utf8" in have:
        return {}
    path = tempfile.mkdtemp(dir=run_dir)
    r = subprocess.run(["localedef", "-i", name, "-f", "UTF-8",
                        os.path.join(path, name + ".UTF-8")],
                       capture_output=True, text=True, timeout=120)
    if not os.path.exists(os.path.join(path, name + ".UTF-8", "LC_NUMERIC")):
        raise AssertionError("localedef could not build %s.UTF-8 (install Debian's "
                             "`locales`, scripts/deps.sh): %s" % (name, r.stderr))
    supp = os.path.join(path, "lsan.supp")
    with open(supp, "w") as f:
        f.write("leak:__argz_add_sep\n")  # the frame the fast unwinder reaches
    lsan = os.environ.get("LSAN_OPTIONS", "")
    return {"LOCPATH": path,
            "LSAN_OPTIONS": (lsan + ":" if lsan else "") + "suppressions=" + supp}


class CommaLocale(twicetest.TwiceTestCase):
    def test_keys_duplicates_log_and_metrics_ignore_a_plugins_locale(self):
        url, dlq = self.queue_pair("locale")
        dsn = self.new_database("locale")
        lines_path = os.path.join(tempfile.mkdtemp(dir=self.env.run_dir), "jobs.txt")
        port = tc.free_port()
        conf = tc.config(self.env, dsn, [tc.queue("jobs", url, dlq, "comma")],
                         [tc.plugin("comma", tc.test_plugin(self.env, "setlocale_de"),
                                    file=lines_path)],
                         metrics_port=port, log_level="debug")
        d = self.start_twiced(conf, extra_env=comma_locale_env(self.env.run_dir))
        d.wait_log(r"ready: generation 1", timeout=20)

        def lines():
            if not os.path.exists(lines_path):
                return []
            with open(lines_path) as f:
                return sorted(line.strip() for line in f if line.strip())

        self.sqs.send(url, json.dumps({"amount": 1.5}))
        self.sqs.send(url, json.dumps({"amount": 1.7}))
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=20,
                             message="the two messages were not handled and deleted")
        twicetest.wait_until(lambda: len(lines()) >= 2, timeout=5,
                             message="1.7 was taken for a duplicate of 1.5: %s" % lines())
        # the keys in C's spelling; the plugin's own text in the locale it chose
        self.assertEqual(lines(), ["amount:1.5 1,50", "amount:1.7 1,70"])

        self.sqs.send(url, '{"amount": 1.50}')  # 1.5's key, spelt otherwise: a duplicate
        tc.wait_metric(port, "twice_duplicates_skipped_total", 1, timeout=20)
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=10)
        self.assertEqual(len(lines()), 2)
        stored = sorted(k for (k,) in self.pg.query(
            dsn, "SELECT idempotency_key FROM twice_idempotency WHERE state = 'completed'"))
        self.assertEqual(stored, ["amount:1.5", "amount:1.7"])

        log = d.log_text()
        self.assertRegex(log, r"done \(\d+\.\d{3}s after it was received\)")
        self.assertNotRegex(log, r"\d,\d{3}s after")
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
            samples, types = promcheck.check(r.read())
        self.assertEqual(types["twice_handler_duration_seconds"], "histogram")
        self.assertEqual(d.stop(), 0)


class TurkishLocale(twicetest.TwiceTestCase):
    def test_http_plugin_reads_a_header_in_capitals_beside_a_turkish_plugin(self):
        """One plugin of the worker sets tr_TR.UTF-8; the bundled http plugin beside it
        still takes a service's "TWICE-RETRY-AFTER: 2" for Twice-Retry-After and asks
        again 2 s later. libc's strncasecmp there takes 'I' and 'i' for two letters:
        the header was missed and the job taken as done after one request."""
        service = EffectService()
        self.addCleanup(service.close)
        url, dlq = self.queue_pair("turkish")
        dsn = self.new_database("turkish")
        lines_path = os.path.join(tempfile.mkdtemp(dir=self.env.run_dir), "jobs.txt")
        plugins = [tc.plugin("turkish", tc.test_plugin(self.env, "setlocale_de"),
                             file=lines_path, locale="tr_TR.UTF-8"),
                   tc.plugin("h", os.path.join(self.env.plugin_build_dir, "http.so"),
                             url=service.url + "/shouted", key="k:{id}")]
        conf = tc.config(self.env, dsn, [tc.queue("jobs", url, dlq, "h")], plugins)
        d = self.start_twiced(conf, extra_env=comma_locale_env(self.env.run_dir, "tr_TR"))
        d.wait_log(r"ready: generation 1", timeout=20)
        self.sqs.send(url, json.dumps({"id": 1}))
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=30,
                             message="the message was not handled")
        reqs = service.of("shouted")
        self.assertEqual(len(reqs), 2, "TWICE-RETRY-AFTER was not taken for a delay")
        self.assertGreaterEqual(reqs[1]["at"] - reqs[0]["at"], 1.8)
        self.assertEqual(d.stop(), 0)

if __name__ == "__main__":
    unittest.main()
