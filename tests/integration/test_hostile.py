"""Hostile messages against the real daemon, PostgreSQL and the SQS
emulator. Each message an attacker (or a buggy producer) can get into a queue ends in
the DLQ with a clear reason, or is handled; no worker crashes; and no log line is broken
by the content, in the text and in the JSON log format. Not for the parsers' corner
cases one by one: the unit tests and the fuzz targets cover those.

What cannot arrive, so is not sent here: invalid UTF-8 and characters outside SQS's set
(#x9 #xA #xD #x20-#xD7FF #xE000-#xFFFD #x10000-#x10FFFF), NUL among them. SQS refuses
such a SendMessage with InvalidMessageContents (the emulator too, which
test_unsendable_characters_are_refused_by_sqs pins), and any invalid bytes on the wire
reach SQS decoded as U+FFFD. What can arrive is their JSON spelling: "\\ud800" (a lone
surrogate, refused), "\\u0000" (fine in a body, refused in a key), numbers past 64 bits
and past the double range, a repeated name (JSON all three: handled). Attribute values
may hold \\t \\n \\r (the emulator accepts more than SQS; the test sends only what SQS
accepts).
"""

import json
import re
import unittest

import twicetest
import twiceconf as tc

EFFECT_TX = "effect-tx"
ECHO = "hostile-echo"
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (error|warn|info|debug) ")

# SQS accepts all of these in attribute values: \x7f, C1 controls (U+0085 NEL, U+009B
# CSI, which some terminals obey) and U+2028, which some readers take as a line end.
NOTE = "tab\there\nnl\x7fdel\u0085nel\u009b[31mcsi\u2028ls"
NOTE_ESCAPED = "tab\\there\\nnl\\x7fdel\\u0085nel\\u009b[31mcsi\\u2028ls"
LINE_BREAKERS = re.compile("[\x00-\x1f\x7f\x80-\x9f\u2028\u2029]")
DEEP = '{"id":"deep","v":' + "[" * 10000 + "]" * 10000 + "}"
LONG_ID = "k" * 600

# Bodies for effect-tx (key "effect:{id}"): body -> the DLQ reason, or None for handled.
BODY_CASES = {
    "lone-surrogate": ('{"id":"s1","v":"\\ud800"}', "invalid-json"),
    "escaped-nul": ('{"id":"n\\u0000ul"}', "bad-key-field"),
    "escaped-nul-elsewhere": ('{"id":"nul-ok","v":"a\\u0000b"}', None),
    "deep-nesting": (DEEP, "invalid-json"),
    "huge-real": ('{"id":"r1","v":1e400}', None),
    "huge-integer": ('{"id":123456789012345678901234567890}', None),
    "duplicate-member": ('{"id":"d1","id":"d2"}', None),
    "not-json-multiline": ('not json\n\t"quoted" \\ line\r\n', "invalid-json"),
    "key-too-long": (json.dumps({"id": LONG_ID}), "key-too-long"),
    "control-in-key": ('{"id":"a\\u001b[31mred"}', "bad-key-field"),
    "newline-in-key": ('{"id":"a\\nb"}', "bad-key-field"),
    "object-key": ('{"id":{"nested":1}}', "bad-key-field"),
    "unicode-key-ok": ('{"id":"ok-\\u2028-\\u00e9-\\ud83d\\ude00"}', None),
}
# The keys of the body cases that are handled: one effect row each.
HANDLED_KEYS = {"effect:nul-ok", "effect:r1", "effect:123456789012345678901234567890",
                "effect:d2", "effect:ok-\u2028-\u00e9-\U0001F600"}

# Messages for hostile-echo (key "hostile:{attr:Tenant}"): (body, attrs, reason or None).
ATTR_CASES = {
    "tab-in-tenant": ("{}", {"Tenant": "t\tab"}, "bad-key-field"),
    "newline-in-tenant": ("{}", {"Tenant": "t\r\nnew"}, "bad-key-field"),
    "tenant-too-long": ("{}", {"Tenant": "x" * 600}, "key-too-long"),
    "binary-tenant": ("{}", {"Tenant": b"\x00\x01"}, "bad-key-field"),
    "no-tenant": ("{}", {"Other": "x"}, "missing-key-field"),
    "echo-reject": ("multi\nline\tbody \"quote\" \\ backslash \u2028",
                    {"Tenant": "t-rej", "Note": "line1\nline2\r\n\tend", "Action": "reject"},
                    "rejected"),
    "echo-done": ("done\nbody\t\u00e9", {"Tenant": "t-ok", "Note": NOTE}, None),
}


class Hostile(twicetest.TwiceTestCase):
    def setup(self, fmt, max_bytes):
        """Two queues (body keys, attribute keys), a database, twiced at log level debug
        in format fmt. Returns (daemon, queues, dsn) with queues[name] = (url, dlq)."""
        dsn = self.new_database("hostile")
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        queues = {"body": self.queue_pair("hb"), "attr": self.queue_pair("ha")}
        conf = tc.config(
            self.env, dsn,
            [tc.queue("body", *queues["body"], EFFECT_TX, max_attempts=1),
             tc.queue("attr", *queues["attr"], ECHO, max_attempts=1)],
            [tc.plugin(EFFECT_TX, tc.test_plugin(self.env, "effect_tx")),
             tc.plugin(ECHO, tc.test_plugin(self.env, "hostile_echo"))],
            log_level="debug", log_format=fmt, extra="max_message_bytes = %d;" % max_bytes)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        return d, queues, dsn

    def letters(self, dlq, count, timeout=40):
        """Exactly count dead letters, by source message id."""
        got = {}

        def collect():
            for m in self.sqs.receive(dlq, max=10, visibility=120):
                got[m["MessageAttributes"]["twice-source-message-id"]["StringValue"]] = m
            return len(got) >= count
        twicetest.wait_until(collect, timeout=timeout,
                             message="expected %d dead letters" % count)
        return got

    def wait_empty(self, url, timeout=40):
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=timeout,
                             message="queue %s did not end empty" % url)

    def check_log(self, d, fmt):
        """Every line is one whole record; returns the records' texts (msg)."""
        text = d.log_text()
        self.assertNotIn("killed by signal", text)
        self.assertTrue(text.endswith("\n"))
        msgs = []
        for n, line in enumerate(text[:-1].split("\n"), 1):
            if fmt == "json":
                try:
                    rec = json.loads(line)
                except ValueError:
                    self.fail("log line %d is not JSON: %r" % (n, line[:300]))
                self.assertIn("ts", rec, line[:300])
                msgs.append(rec.get("msg", ""))
            else:
                self.assertRegex(line, TIMESTAMP, "log line %d is broken" % n)
                self.assertIsNone(LINE_BREAKERS.search(line), "log line %d: %r" % (n, line))
                msgs.append(line)
        return msgs

    def run_cases(self, fmt):
        d, queues, dsn = self.setup(fmt, 65536)
        workers = d.worker_pids()
        expect = {}  # message id -> (case, reason)
        for case, (body, reason) in BODY_CASES.items():
            expect[self.sqs.send(queues["body"][0], body, attrs={"case": case})] = (case, reason)
        big = json.dumps({"id": "big", "pad": "p" * 70000})
        expect[self.sqs.send(queues["body"][0], big)] = ("too-large", "too-large")
        for case, (body, attrs, reason) in ATTR_CASES.items():
            expect[self.sqs.send(queues["attr"][0], body, attrs=attrs)] = (case, reason)

        dead = {mid: v for mid, v in expect.items() if v[1] is not None}
        letters = self.letters(queues["body"][1], sum(1 for v in dead.values()
                                                      if v[0] in BODY_CASES or
                                                      v[0] == "too-large"))
        letters.update(self.letters(queues["attr"][1],
                                    sum(1 for v in dead.values() if v[0] in ATTR_CASES)))
        self.wait_empty(queues["body"][0])
        self.wait_empty(queues["attr"][0])
        self.assertEqual(set(letters), set(dead))
        for mid, (case, reason) in dead.items():
            attrs = letters[mid]["MessageAttributes"]
            self.assertEqual(attrs["twice-reason"]["StringValue"], reason, case)
            self.assertTrue(attrs["twice-error"]["StringValue"].strip(), case)
        by_case = {v[0]: letters[mid] for mid, v in dead.items()}

        def err(case):
            return by_case[case]["MessageAttributes"]["twice-error"]["StringValue"]
        self.assertIn("max_message_bytes", err("too-large"))
        self.assertRegex(err("deep-nesting"), r"line 1 column \d+")
        self.assertIn("contains a NUL character", err("escaped-nul"))
        self.assertIn("line1\nline2", err("echo-reject"), "the plugin's error, kept whole")
        self.assertEqual(by_case["echo-reject"]["Body"], ATTR_CASES["echo-reject"][0])
        self.assertEqual(by_case["deep-nesting"]["Body"], DEEP, "the original body is kept")

        rows = self.pg.query(dsn, "SELECT key FROM effects")
        self.assertEqual(sorted(r[0] for r in rows), sorted(HANDLED_KEYS))
        self.assertEqual(d.worker_pids(), workers, "no worker was replaced")
        self.assertEqual(d.stop(), 0)

        msgs = self.check_log(d, fmt)
        echoed = [m for m in msgs if "body [" in m]
        self.assertEqual(len(echoed), 2, "the plugin logged both messages it handled")
        rejected = [m for m in msgs if "dead-lettered (rejected): rejected: note [" in m]
        self.assertEqual(len(rejected), 1, "the host logs the plugin's error")
        if fmt == "json":
            self.assertTrue(any("note [line1\nline2\r\n\tend]" in m for m in echoed), echoed)
            self.assertTrue(any("note [%s]" % NOTE in m for m in echoed), echoed)
        else:
            self.assertTrue(any("note [line1\\nline2\\r\\n\\tend]" in m for m in echoed),
                            echoed)
            self.assertTrue(any("note [%s]" % NOTE_ESCAPED in m for m in echoed), echoed)
            # The message is not a quoted field: quotes and backslashes stay as
            # they are (control characters are escaped), so no text is escaped twice.
            self.assertTrue(any('body [multi\\nline\\tbody "quote" \\ backslash' in m
                                for m in echoed), echoed)

    def test_hostile_messages_text_log(self):
        self.run_cases("text")

    def test_hostile_messages_json_log(self):
        self.run_cases("json")

    def test_max_message_bytes_1024(self):
        d, queues, dsn = self.setup("text", 1024)
        url, dlq = queues["body"]
        head = '{"id":"fits","pad":"'
        fits = head + "p" * (1024 - len(head) - 2) + '"}'
        self.assertEqual(len(fits.encode()), 1024)
        over = fits.replace('"fits"', '"over"').replace('"p', '"pp', 1)
        self.assertEqual(len(over.encode()), 1025)
        ids = {self.sqs.send(url, over): "over", self.sqs.send(url, DEEP): "deep"}
        self.sqs.send(url, fits)
        letters = self.letters(dlq, 2)
        self.wait_empty(url)
        self.assertEqual(set(letters), set(ids))
        for m in letters.values():
            attrs = m["MessageAttributes"]
            self.assertEqual(attrs["twice-reason"]["StringValue"], "too-large")
            self.assertIn("max_message_bytes (1024)", attrs["twice-error"]["StringValue"])
        self.assertEqual(self.pg.query(dsn, "SELECT key FROM effects"), [("effect:fits",)])
        self.assertEqual(d.stop(), 0)
        self.check_log(d, "text")

    def test_unsendable_characters_are_refused_by_sqs(self):
        """What the module docstring says cannot arrive: the emulator refuses it as SQS
        does, so a twice worker never sees it in a body."""
        url, _ = self.queue_pair("unsendable")
        for body in ("\ud800", "a\x00b", "a\x01b", "\ufffe"):
            with self.assertRaises(twicetest.SqsError) as cm:
                self.sqs.send(url, body)
            self.assertEqual(cm.exception.code, "InvalidMessageContents", repr(body))


if __name__ == "__main__":
    unittest.main()
