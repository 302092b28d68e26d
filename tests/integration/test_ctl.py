"""The operator CLI: twicectl against the real SQS emulator,
PostgreSQL and twiced. Each test writes its own configuration and queues; twicectl
reads the same file twiced does. Effects are rows of the effect_tx fixture: one row
per key means the job ran once."""

import base64
import http.server
import json
import os
import re
import socket
import subprocess
import threading
import time
import unittest

import faultproxy
import twicetest
import twiceconf as tc

EFFECT_TX = "effect-tx"


class Ctl(twicetest.TwiceTestCase):
    def setup(self, prefix, fifo=False, table="effects", create_table=True, **qopts):
        """Queues, a database and a (not started) twiced for them. Returns
        (url, dlq, dsn, twiced)."""
        url, dlq = self.queue_pair(prefix, fifo=fifo)
        dsn = self.new_database(prefix)
        if create_table:
            self.pg.query(dsn, tc.EFFECTS_TABLE.replace("effects", table, 1))
        plugin = tc.plugin(EFFECT_TX, tc.test_plugin(self.env, "effect_tx"), table=table)
        conf = tc.config(self.env, dsn, [tc.queue(prefix, url, dlq, EFFECT_TX, **qopts)],
                         [plugin])
        return url, dlq, dsn, self.twiced(conf)

    def ctl(self, d, *args, input=None, code=0, timeout=120):
        """Run `twicectl -c CONFIG ARGS`; assert its exit code; return the result."""
        r = subprocess.run([self.env.binary("twicectl"), "-c", d.config_path, *args],
                           input=input, capture_output=True, text=True, env=d.process_env,
                           timeout=timeout)
        self.assertEqual(r.returncode, code, "twicectl %s: exit %d\nstdout: %s\nstderr: %s"
                         % (" ".join(args), r.returncode, r.stdout, r.stderr))
        self.assertNotIn(twicetest.TEST_SECRET_ACCESS_KEY, r.stdout + r.stderr)
        self.assertNotIn(self.env.pg_password, r.stdout + r.stderr)
        self.assertIsNone(self.SANITIZER_REPORT.search(r.stderr), r.stderr)
        return r

    def effects(self, dsn, table="effects"):
        return self.pg.query(dsn, "SELECT key, message_id FROM %s ORDER BY at" % table)

    def dlq_count(self, dlq):
        return sum(self.sqs.counts(dlq))

    def wait_dlq(self, dlq, count, timeout=30):
        twicetest.wait_until(lambda: self.dlq_count(dlq) >= count, timeout=timeout,
                             message="%d dead letters" % count)

    # ------------------------------------------------------------------ usage

    def test_help_and_exit_codes(self):
        url, dlq, dsn, d = self.setup("usage")
        r = self.ctl(d, "--help")
        self.assertIn("usage: twicectl", r.stdout)
        for cmd in ("send", "status", "dlq", "key", "plugin", "whoami", "--timeout SECONDS"):
            self.assertIn(cmd, r.stdout)
        self.assertIn("twicectl", self.ctl(d, "--version").stdout)
        self.ctl(d, code=2)
        self.assertIn("no command 'nope'", self.ctl(d, "nope", code=2).stderr)
        for args in (["send"], ["status"], ["dlq"], ["dlq", "list"], ["dlq", "redrive"],
                     ["dlq", "purge"], ["key"], ["key", "show"], ["key", "list"],
                     ["key", "forget"], ["plugin"], ["plugin", "check"]):
            out = self.ctl(d, *args, "--help").stdout
            self.assertRegex(out, r"usage: twicectl %s" % re.escape(args[0]), args)
            self.assertEqual(self.ctl(d, "help", *args).stdout, out, "help CMD is CMD --help")
        self.ctl(d, "send", "--bogus", code=2)
        self.ctl(d, "send", "usage", code=2)  # no BODY
        self.ctl(d, "dlq", "list", "usage", "--max", "zero", code=2)
        self.ctl(d, "dlq", "frob", "usage", code=2)
        self.assertIn("--yes", self.ctl(d, "dlq", "purge", "usage", code=2).stderr)
        self.assertIn("--yes", self.ctl(d, "key", "forget", "k", code=2).stderr)
        self.ctl(d, "dlq", "redrive", "usage", code=2)  # neither --id nor --all
        self.ctl(d, "dlq", "redrive", "usage", "--all", "--id", "x", code=2)
        self.ctl(d, "key", "list", "--state", "weird", code=2)
        # pause's options are no resume options: named as given, not by their value
        r = self.ctl(d, "resume", "usage", "--for", "1h", code=2)
        self.assertIn("resume: unknown option --for", r.stderr)
        r = self.ctl(d, "status", "ghost", code=1)
        self.assertIn("twicectl: no queue named 'ghost'", r.stderr)
        self.assertIn("(configured: usage)", r.stderr)
        # A broken configuration: each problem as FILE:LINE, exit 1.
        bad = os.path.join(d.workdir, "bad.conf")
        with open(bad, "w") as f:
            f.write("workers = 1;\nqueues = 7;\n")
        r = subprocess.run([self.env.binary("twicectl"), "-c", bad, "status"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(bad + ":", r.stderr)

    def test_summaries_and_man_page_name_every_subcommand_and_state(self):
        url, dlq, dsn, d = self.setup("helpdoc")
        top = self.ctl(d, "--help").stdout
        for cmd in ("dlq", "key", "outbox"):
            summary = re.search(r"^  %s +(.*)$" % cmd, top, re.M).group(1)
            usage = self.ctl(d, cmd, "--help").stdout
            for sub in set(re.findall(r"twicectl %s ([a-z]+)" % cmd, usage)):
                self.assertRegex(summary, r"\b%s\b" % sub, "twicectl --help: %s" % cmd)
        with open(os.path.join(self.env.source_dir, "packaging", "man", "twicectl.1")) as f:
            man = f.read()
        start = man.index(".B key list")
        key_list = man[start:man.index(".TP", start)]
        refused = self.ctl(d, "key", "list", "--state", "weird", code=2).stderr
        states = re.findall(r"[a-z_]+", refused.split("--state:")[1].split(", not")[0])
        states = [s for s in states if s != "or"]
        self.assertEqual(len(states), 5, refused)
        for state in states:
            self.assertRegex(key_list, r"\b%s\b" % state, "twicectl.1: key list --state")

    def test_errors_name_the_queue_action_and_hint(self):
        url, dlq, dsn, d = self.setup("ghost")
        self.sqs.delete_queue(url)
        r = self.ctl(d, "status", code=1)
        self.assertRegex(r.stderr, r"twicectl: queue ghost: GetQueueAttributes: "
                                   r"QueueDoesNotExist: .*\(check the queue url")
        r = self.ctl(d, "send", "ghost", "x", code=1)
        self.assertIn("twicectl: queue ghost: SendMessage: QueueDoesNotExist", r.stderr)
        # The environment's HTTP proxy (libcurl reads http_proxy) wants credentials:
        # its 407 is not SQS's "HTTP 407"; the hint names the variables.
        proxy = self.proxy_asking_for_credentials()
        d.process_env = dict(d.process_env, http_proxy=proxy, NO_PROXY="", no_proxy="")
        r = self.ctl(d, "send", "ghost", "x", code=1)
        self.assertIn("twicectl: queue ghost: SendMessage: ProxyAuthRequired: the HTTP proxy "
                      "answered 407 (the HTTP proxy of the environment wants credentials: "
                      "put them in HTTPS_PROXY or http_proxy, or name the endpoint's host in "
                      "NO_PROXY)", r.stderr)
        # An https endpoint: curl asks the proxy (https_proxy) for a tunnel, refused.
        conf = tc.config(self.env, dsn, [tc.queue("ghost", url, dlq, EFFECT_TX)],
                         [tc.plugin(EFFECT_TX, tc.test_plugin(self.env, "effect_tx"))],
                         endpoint="https://sqs.eu-west-1.amazonaws.com")
        tunnel = self.twiced(conf)
        tunnel.process_env = dict(tunnel.process_env, https_proxy=proxy, HTTPS_PROXY=proxy,
                                  NO_PROXY="", no_proxy="")
        r = self.ctl(tunnel, "send", "ghost", "x", code=1)
        self.assertIn("twicectl: queue ghost: SendMessage: ProxyAuthRequired: ", r.stderr)
        self.assertIn("response 407 (the HTTP proxy of the environment wants", r.stderr)

    def proxy_asking_for_credentials(self):
        """http://127.0.0.1:PORT of an HTTP proxy that answers every request 407."""
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_CONNECT(self):
                self.do_POST()

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                body = b"<html>407 Proxy Authentication Required</html>"
                self.send_response(407)
                self.send_header("Proxy-Authenticate", 'Basic realm="corp"')
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        return "http://127.0.0.1:%d" % srv.server_address[1]

    def silent_endpoint(self):
        """http://127.0.0.1:PORT of a server that accepts every connection and never
        answers (its sockets stay open until the test ends)."""
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(64)
        held = []

        def accept():
            while True:
                try:
                    held.append(srv.accept()[0])
                except OSError:
                    return
        threading.Thread(target=accept, daemon=True).start()

        def close():
            srv.close()
            for c in held:
                c.close()
        self.addCleanup(close)
        return "http://127.0.0.1:%d" % srv.getsockname()[1]

    def timed(self, d, *args, code=1):
        start = time.monotonic()
        r = self.ctl(d, *args, code=code)
        return r, time.monotonic() - start

    def test_timeout_names_the_endpoint_that_did_not_answer(self):
        """An endpoint that accepts connections and never answers held twicectl for
        181 s. Each SQS call now ends after --timeout (default 10 s), retries included,
        and the error names the endpoint; status stops asking after the first."""
        url, dlq = self.queue_pair("hole")
        hole = self.silent_endpoint()
        conf = tc.config(self.env, self.new_database("hole"),
                         [tc.queue("hole", url, dlq, EFFECT_TX),
                          tc.queue("hole2", url + "2", dlq + "2", EFFECT_TX)],
                         [tc.plugin(EFFECT_TX, tc.test_plugin(self.env, "effect_tx"))],
                         endpoint=hole)
        d = self.twiced(conf)
        said = ("GetQueueAttributes: Timeout: %s did not answer within 2 s "
                "(is the endpoint reachable?); --timeout SECONDS gives it longer" % hole)
        r, took = self.timed(d, "status", "--timeout", "2")
        self.assertIn("twicectl: queue hole: " + said, r.stderr)
        self.assertIn("3 more SQS calls were not made after the timeout", r.stderr)
        self.assertEqual([ln.split() for ln in r.stdout.splitlines()[1:]],
                         [["hole", "?", "?", "?", "?", "-"], ["hole2", "?", "?", "?", "?", "-"]])
        self.assertLess(took, 6, "bounded by --timeout, not 2 calls x 3 attempts x 30 s")
        r, took = self.timed(d, "--timeout", "1", "dlq", "list", "hole", "--json")
        self.assertIn("dead-letter queue: ReceiveMessage: Timeout: %s did not answer within 1 s"
                      % hole, r.stderr)
        self.assertLess(took, 5, "the long poll's 1 s wait plus --timeout")
        r, took = self.timed(d, "send", "hole", "x")
        self.assertIn("SendMessage: Timeout: %s did not answer within 10 s" % hole, r.stderr)
        self.assertTrue(9 <= took < 16, "the default is 10 s: took %.1f s" % took)
        for bad in ("0", "soon", "3601"):
            self.assertIn("--timeout", self.ctl(d, "status", "--timeout", bad, code=2).stderr)
        self.assertIn("--timeout", self.ctl(d, "--timeout", "x", "status", code=2).stderr)
        # A live endpoint answers well within a short timeout.
        live = self.twiced(tc.config(self.env, self.new_database("live"),
                                     [tc.queue("live", url, dlq, EFFECT_TX)],
                                     [tc.plugin(EFFECT_TX, tc.test_plugin(self.env,
                                                                          "effect_tx"))]))
        self.assertEqual(self.ctl(live, "--timeout", "1", "status").stdout.splitlines()[1]
                         .split(), ["live", "0", "0", "0", "0", "-"])

    # ------------------------------------------------------------------ send, status

    def test_a_store_that_does_not_answer_fails_the_commands_within_their_bound(self):
        """PostgreSQL takes the connection and says nothing (a frozen server or pooler):
        twicectl and `twiced -t --connect` used to wait until Ctrl-C. twicectl gives the
        connect, and each statement, --timeout; twiced -t --connect the dsn's
        connect_timeout. Each fails (exit 1) saying PostgreSQL did not answer and within
        how long, without the password."""
        dsn = self.new_database("frozenctl")
        url, dlq = self.queue_pair("frozenctl")
        plugin = tc.plugin(EFFECT_TX, tc.test_plugin(self.env, "effect_tx"))
        for moment, marker in (("connect", None), ("statement", b"SELECT")):
            with self.subTest(moment=moment):
                proxy = faultproxy.TcpProxy(self.env.pg_host, self.env.pg_port)
                self.addCleanup(proxy.close)
                via = dsn.replace(":%d/" % self.env.pg_port, ":%d/" % proxy.port)
                d = self.twiced(tc.config(self.env, via + "?connect_timeout=2",
                                          [tc.queue("frozenctl", url, dlq, EFFECT_TX)],
                                          [plugin]))
                if marker is None:
                    proxy.freeze()
                    said = r"cannot connect to PostgreSQL: no answer within 2 s"
                else:
                    proxy.freeze_on(marker)
                    said = r"no answer from PostgreSQL within 2 s: the connection is given up"
                r, took = self.timed(d, "--timeout", "2", "key", "show", "effect:x")
                self.assertRegex(r.stderr, "twicectl: .*" + said)
                self.assertLess(took, 6, "bounded by --timeout 2: took %.1f s" % took)
                self.assertTrue(proxy.frozen, "PostgreSQL was asked")
                proxy.thaw()
                if marker is not None:
                    proxy.freeze_on(b"pg_is_in_recovery")
                else:
                    proxy.freeze()
                start = time.monotonic()
                r = subprocess.run([d.binary, "-t", "--connect", "-c", d.config_path],
                                   capture_output=True, text=True, env=d.process_env,
                                   timeout=30)
                took = time.monotonic() - start
                self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
                self.assertRegex(r.stderr, r"%s:\d+: idempotency.dsn: .*%s"
                                 % (re.escape(d.config_path), said))
                self.assertNotIn(self.env.pg_password, r.stdout + r.stderr)
                self.assertLess(took, 8, "bounded by connect_timeout 2: took %.1f s" % took)
                proxy.close()

    def test_send_with_attributes_and_stdin(self):
        url, dlq, dsn, d = self.setup("send")
        mid = self.ctl(d, "send", "send", "--attr", "origin=cli", "--attr", "n=a=b",
                       '{"id":"s1"}').stdout.strip()
        self.assertRegex(mid, r"^[0-9a-f-]{36}$")
        r = self.ctl(d, "--json", "send", url, "-", input="line 1\nline \u00e9\n")
        mid2 = json.loads(r.stdout)["message_id"]
        got = {m["MessageId"]: m for m in self.sqs.drain(url)}
        self.assertEqual(set(got), {mid, mid2})
        self.assertEqual(got[mid]["Body"], '{"id":"s1"}')
        self.assertEqual(got[mid]["MessageAttributes"]["origin"],
                         {"DataType": "String", "StringValue": "cli"})
        self.assertEqual(got[mid]["MessageAttributes"]["n"]["StringValue"], "a=b")
        self.assertEqual(got[mid2]["Body"], "line 1\nline \u00e9\n")
        self.ctl(d, "send", "send", "--attr", "novalue", "x", code=2)
        # what SQS would refuse is said before the call, and nothing is sent
        self.assertIn("the body is empty: SQS refuses an empty message",
                      self.ctl(d, "send", "send", "", code=2).stderr)
        self.assertIn("the body is empty", self.ctl(d, "send", "send", "-", input="",
                                                    code=2).stderr)
        self.assertIn("--attr n: SQS refuses an empty value",
                      self.ctl(d, "send", "send", "--attr", "n=", "x", code=2).stderr)
        # SQS refuses MessageDeduplicationId on a standard queue (the emulator takes it)
        self.assertIn("queue send is a standard queue: --dedup-id is for FIFO queues",
                      self.ctl(d, "send", "send", "--dedup-id", "d1", "x", code=2).stderr)
        # twice's own attributes would be replaced in a dead letter: refused, but a
        # follow-up's twice-outbox-id may be sent by hand (to try a queue keyed on it)
        self.assertIn("--attr twice-reason: twice-* attributes are twice's own",
                      self.ctl(d, "send", "send", "--attr", "twice-reason=x", "x",
                               code=2).stderr)
        self.assertEqual(self.sqs.counts(url)[0], 0, "nothing new is visible")
        self.ctl(d, "send", "send", "--attr", "twice-outbox-id=k#0", "x")
        got = self.sqs.drain(url)
        self.assertEqual([m["MessageAttributes"]["twice-outbox-id"]["StringValue"]
                          for m in got], ["k#0"])

    def test_send_fifo_group_and_dedup(self):
        url, dlq, dsn, d = self.setup("sendf", fifo=True)
        self.assertIn("--group is required", self.ctl(d, "send", url, "x", code=2).stderr)
        # The delay is named first: --group would not make it work.
        self.assertIn("SQS takes no --delay per message there",
                      self.ctl(d, "send", url, "--delay", "5", "x", code=2).stderr)
        first = self.ctl(d, "send", url, "--group", "g1", "--dedup-id", "d1", "a").stdout
        self.ctl(d, "send", url, "--group", "g1", "--dedup-id", "d1", "a again")
        self.ctl(d, "send", url, "--group", "g2", "--dedup-id", "d2", "b")
        got = self.sqs.drain(url)
        by_body = {m["Body"]: m for m in got}
        self.assertEqual(set(by_body), {"a", "b"}, "the second d1 was deduplicated")
        self.assertEqual(by_body["a"]["MessageId"], first.strip())
        self.assertEqual(by_body["a"]["Attributes"]["MessageGroupId"], "g1")
        self.assertEqual(by_body["b"]["Attributes"]["MessageGroupId"], "g2")

    def test_status_numbers(self):
        url, dlq, dsn, d = self.setup("status")
        for i in range(3):
            self.sqs.send(url, "m%d" % i)
        self.sqs.send(url, "later", delay=60)
        self.sqs.receive(url, max=1, visibility=60)
        self.sqs.send(dlq, "dead 1")
        self.sqs.send(dlq, "dead 2")
        r = self.ctl(d, "status")
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0].split(),
                         ["QUEUE", "VISIBLE", "IN", "FLIGHT", "DELAYED", "DLQ", "PAUSED"])
        self.assertEqual(lines[1].split(), ["status", "2", "1", "1", "2", "-"])
        st = json.loads(self.ctl(d, "status", "--json").stdout)
        self.assertEqual(st, [{"queue": "status", "url": url, "visible": 2, "in_flight": 1,
                               "delayed": 1, "dlq_url": dlq, "dlq": 2, "paused": None}])
        # The queue's URL written another way (the scheme's and host's case) is
        # that queue, as twiced -t takes it; it was "no queue named ...".
        other = url.replace("http://", "HTTP://", 1)
        self.assertEqual(self.ctl(d, "status", other).stdout.splitlines()[1].split()[0],
                         "status")

    # ------------------------------------------------------------------ dlq

    def test_dlq_list_table_and_json_changes_nothing(self):
        url, dlq, dsn, d = self.setup("list")
        d.start()
        d.wait_log(r"ready: generation 1", timeout=20)
        body = '{"id":"r1","reject":true,\n"note":"x"}'
        sent = self.ctl(d, "send", "list", "--attr", "origin=test", body).stdout.strip()
        self.wait_dlq(dlq, 1)
        r = self.ctl(d, "dlq", "list", "list")
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0].split(), ["DLQ", "MESSAGE", "ID", "ORIGINAL", "MESSAGE", "ID",
                                            "REASON", "PLUGIN", "ATTEMPTS", "KEY", "BODY"])
        self.assertEqual(len(lines), 2, r.stdout)
        cols = lines[1].split()
        self.assertRegex(cols[0], r"^[0-9a-f-]{36}$")
        self.assertNotEqual(cols[0], sent, "the DLQ copy has an id of its own")
        self.assertEqual(cols[1], sent, "the original's id, the one the log lines name")
        self.assertEqual(cols[2:6], ["rejected", EFFECT_TX, "1", "effect:r1"])
        d.wait_log(r"msg=%s .*dead-lettered" % sent, timeout=5)
        self.assertIn('{"id":"r1","reject":true,\\n"note":"x"}', lines[1],
                      "the body on one line, control characters escaped")
        letters = json.loads(self.ctl(d, "--json", "dlq", "list", dlq).stdout)
        self.assertEqual(len(letters), 1)
        m = letters[0]
        self.assertEqual(m["message_id"], cols[0])
        self.assertEqual(m["source_message_id"], sent)
        self.assertEqual(m["source_queue"], url)
        self.assertEqual((m["reason"], m["plugin"], m["attempts"], m["key"]),
                         ("rejected", EFFECT_TX, 1, "effect:r1"))
        self.assertEqual(m["error"], "rejected on request of the message")
        self.assertEqual(m["body"], body)
        self.assertEqual(m["attributes"]["origin"], {"DataType": "String",
                                                     "StringValue": "test"})
        self.assertEqual(m["attributes"]["twice-reason"]["StringValue"], "rejected")
        # Listing deletes nothing and leaves every letter visible.
        self.assertEqual(self.dlq_count(dlq), 1)
        self.assertEqual(len(self.sqs.receive(dlq, max=10, visibility=0)), 1)
        # --max bounds the listing; more letters than one receive returns are all shown.
        for i in range(12):
            self.sqs.send(dlq, "extra %d" % i)
        self.assertEqual(len(json.loads(self.ctl(d, "dlq", "list", "list", "--json",
                                                 "--max", "5").stdout)), 5)
        self.assertEqual(len(json.loads(self.ctl(d, "dlq", "list", "list",
                                                 "--json").stdout)), 13)
        self.assertEqual(self.dlq_count(dlq), 13)
        self.assertEqual(len(self.sqs.receive(dlq, max=10, visibility=0)), 10)
        self.assertEqual(d.stop(), 0)

    def test_dlq_redrive_after_fixing_the_cause_runs_once(self):
        # The plugin writes to a table that does not exist yet (deployed before its
        # migration): every run fails with 42P01, the operator's to fix, so its RETRY is
        # given back uncounted (idem_plugin_state_stale) until max_receives (ten times
        # max_attempts) sends the message to the DLQ.
        url, dlq, dsn, d = self.setup("fix", table="effects_later", create_table=False,
                                      max_attempts=2, backoff=(1, 1))
        d.start()
        d.wait_log(r"ready: generation 1", timeout=20)
        self.ctl(d, "send", "fix", '{"id":"fixme"}')
        self.wait_dlq(dlq, 1)
        letters = json.loads(self.ctl(d, "--json", "dlq", "list", "fix").stdout)
        self.assertEqual([m["reason"] for m in letters], ["max-receives"])
        # Fix the cause, then send it back.
        self.pg.query(dsn, tc.EFFECTS_TABLE.replace("effects", "effects_later", 1))
        r = self.ctl(d, "dlq", "redrive", "fix", "--all")
        self.assertIn("redriven 1, failed 0, skipped 0", r.stdout)
        twicetest.wait_until(lambda: len(self.effects(dsn, "effects_later")) == 1, timeout=30,
                             message="the redriven job did not run")
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=20)
        time.sleep(2)
        self.assertEqual([k for k, _ in self.effects(dsn, "effects_later")], ["effect:fixme"])
        self.assertEqual(self.dlq_count(dlq), 0, "the DLQ is empty")
        self.assertEqual(d.stop(), 0)

    def test_dlq_redrive_of_a_follow_up_keyed_on_its_outbox_id_runs_it_once(self):
        # A follow-up message (the relay's twice-outbox-id on it) on a queue keyed
        # {attr:twice-outbox-id}, dead-lettered while its plugin cannot work: the letter
        # keeps that attribute and the redrive sends it back, so the job runs once under
        # the same key (without it, the redriven message has no key and dies again). Its
        # table is missing, the operator's fault: max_receives dead-letters it, not
        # max_attempts (test_dlq_redrive_after_fixing_the_cause_runs_once).
        url, dlq, dsn, d = self.setup("oid", table="effects_later", create_table=False,
                                      max_attempts=2, backoff=(1, 1),
                                      key="{attr:twice-outbox-id}")
        d.start()
        d.wait_log(r"ready: generation 1", timeout=20)
        self.sqs.send(url, json.dumps({"id": "follow"}),
                      attrs={"twice-outbox-id": "signup:42#0"})
        self.wait_dlq(dlq, 1)
        letters = json.loads(self.ctl(d, "--json", "dlq", "list", "oid").stdout)
        self.assertEqual([(m["reason"], m["key"]) for m in letters],
                         [("max-receives", "signup:42#0")])
        self.pg.query(dsn, tc.EFFECTS_TABLE.replace("effects", "effects_later", 1))
        self.assertIn("redriven 1, failed 0, skipped 0",
                      self.ctl(d, "dlq", "redrive", "oid", "--all").stdout)
        twicetest.wait_until(lambda: len(self.effects(dsn, "effects_later")) == 1, timeout=30,
                             message="the redriven follow-up did not run")
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=20)
        self.assertEqual([k for k, _ in self.effects(dsn, "effects_later")], ["signup:42#0"])
        self.assertEqual(self.dlq_count(dlq), 0, "not dead-lettered again")
        self.assertEqual(d.stop(), 0)

    def test_dlq_redrive_of_a_key_completed_meanwhile_is_a_duplicate(self):
        url, dlq, dsn, d = self.setup("dup", table="effects_later", create_table=False,
                                      max_attempts=2, backoff=(1, 1))
        d.start()
        d.wait_log(r"ready: generation 1", timeout=20)
        self.ctl(d, "send", "dup", '{"id":"same"}')
        self.wait_dlq(dlq, 1)
        self.pg.query(dsn, tc.EFFECTS_TABLE.replace("effects", "effects_later", 1))
        second = self.ctl(d, "send", "dup", '{"id":"same"}').stdout.strip()
        twicetest.wait_until(lambda: len(self.effects(dsn, "effects_later")) == 1, timeout=20)
        mark = d.mark()
        self.assertIn("redriven 1,", self.ctl(d, "dlq", "redrive", "dup", "--all").stdout)
        d.wait_log(r"duplicate: key completed by message %s" % second, timeout=20, since=mark)
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=20)
        self.assertEqual(self.effects(dsn, "effects_later"), [("effect:same", second)],
                         "no second effect")
        self.assertEqual(self.dlq_count(dlq), 0)
        self.assertEqual(d.stop(), 0)

    def test_dlq_redrive_all_of_letters_dead_lettered_again_at_once_ends(self):
        # Poison letters: twiced dead-letters each redriven one again at once, with a
        # new DLQ message id. --all takes the letters of the start, each once, and ends.
        url, dlq, dsn, d = self.setup("again")
        d.start()
        d.wait_log(r"ready: generation 1", timeout=20)
        for _ in range(3):
            self.ctl(d, "send", "again", "x")
        self.wait_dlq(dlq, 3)
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=20)
        before = {m["message_id"] for m in
                  json.loads(self.ctl(d, "--json", "dlq", "list", "again").stdout)}
        self.assertEqual(len(before), 3)
        start = time.monotonic()
        r = self.ctl(d, "dlq", "redrive", "again", "--all", timeout=30)
        self.assertLess(time.monotonic() - start, 15, "the command ends within seconds")
        self.assertIn("redriven 3, failed 0, skipped 0", r.stdout)
        lines = re.findall(r"^redriven (\S+) to queue again as (\S+)$", r.stdout, re.M)
        self.assertEqual(sorted(dlq_id for dlq_id, _ in lines), sorted(before),
                         "each letter of the start redriven once")
        # The poison letters fail again and are back in the DLQ, as new letters of the
        # messages the redrive sent.
        self.wait_dlq(dlq, 3)
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=20)
        after = json.loads(self.ctl(d, "--json", "dlq", "list", "again").stdout)
        self.assertEqual(sorted(m["source_message_id"] for m in after),
                         sorted(sent for _, sent in lines))
        self.assertEqual(d.stop(), 0)

    def test_dlq_redrive_keeps_body_and_user_attributes_and_refuses_strangers(self):
        url, dlq, dsn, d = self.setup("keep")
        packed = {"p1": {"DataType": "String", "StringValue": "packed one"},
                  "p2": {"DataType": "Binary",
                         "BinaryValue": base64.b64encode(b"\x00\x01bin").decode()}}
        good = self.sqs.send(dlq, "the body \u00e9", attrs={
            "twice-reason": "rejected", "twice-plugin": EFFECT_TX, "twice-attempts": 1,
            "twice-source-message-id": "orig-1", "twice-source-queue": url,
            "twice-key": "effect:x", "twice-error": "boom", "origin": "test", "n": 42,
            "twice-packed-attributes": json.dumps(packed)})
        stranger = self.sqs.send(dlq, "elsewhere", attrs={
            "twice-source-queue": url.replace("keep", "not-configured")})
        orphan = self.sqs.send(dlq, "from SQS's own redrive policy")
        other = self.sqs.send(dlq, "not selected", attrs={"twice-source-queue": url})
        r = self.ctl(d, "dlq", "redrive", "keep", "--id", good, "--id", stranger,
                     "--id", orphan, "--id", "no-such-id", code=1)
        self.assertIn("redriven 1, failed 0, skipped 2", r.stdout)
        self.assertIn("message %s skipped: its twice-source-queue is not the url of a "
                      "configured queue" % stranger, r.stderr)
        self.assertIn("message %s skipped: no twice-source-queue attribute" % orphan, r.stderr)
        self.assertIn("message no-such-id not found in the DLQ of keep", r.stderr)
        back = self.sqs.drain(url)
        self.assertEqual(len(back), 1)
        self.assertEqual(back[0]["Body"], "the body \u00e9")
        attrs = back[0]["MessageAttributes"]
        self.assertEqual(sorted(attrs), ["n", "origin", "p1", "p2"], "no twice-* attribute")
        self.assertEqual(attrs["n"], {"DataType": "Number", "StringValue": "42"})
        self.assertEqual(attrs["p1"]["StringValue"], "packed one")
        self.assertEqual(base64.b64decode(attrs["p2"]["BinaryValue"]), b"\x00\x01bin")
        # Skipped and unselected letters stay, visible at once.
        left = {m["MessageId"] for m in self.sqs.receive(dlq, max=10, visibility=0)}
        self.assertEqual(left, {stranger, orphan, other})

    def test_ten_user_attributes_keep_twices_diagnostics_and_come_back_whole(self):
        # SQS's most attributes (10) on a message its plugin rejects: the dead letter
        # still has twice-error and twice-key (the user's overflow is packed), and a
        # redrive gives back exactly the 10 attributes.
        url, dlq, dsn, d = self.setup("ten", max_attempts=1)
        attrs = {"s%d" % i: "value %d \u00e9" % i for i in range(6)}
        attrs.update({"n": 42, "f": {"DataType": "Number.float", "StringValue": "1.5"},
                      "b": b"\x00\xffbin", "c": {"DataType": "String.custom",
                                                 "StringValue": "custom"}})
        sent = twicetest._message_attributes(attrs)
        d.start()
        d.wait_log(r"ready: generation 1", timeout=20)
        self.sqs.send(url, json.dumps({"id": "ten", "reject": True}), attrs=attrs)
        self.wait_dlq(dlq, 1)
        self.assertEqual(d.stop(), 0)
        letters = json.loads(self.ctl(d, "--json", "dlq", "list", "ten").stdout)
        self.assertEqual(len(letters), 1)
        self.assertEqual(letters[0]["reason"], "rejected")
        self.assertEqual(letters[0]["error"], "rejected on request of the message")
        self.assertEqual(letters[0]["key"], "effect:ten")
        r = self.ctl(d, "dlq", "redrive", "ten", "--all")
        self.assertIn("redriven 1, failed 0, skipped 0", r.stdout)
        back = self.sqs.drain(url)
        self.assertEqual(len(back), 1)
        self.assertEqual(back[0]["MessageAttributes"], sent)

    def test_dlq_redrive_fifo_keeps_the_group(self):
        url, dlq, dsn, d = self.setup("rfifo", fifo=True)
        self.sqs.send(dlq, "one", group="g7", dedup="x1",
                      attrs={"twice-source-queue": url, "twice-reason": "rejected"})
        self.sqs.send(dlq, "two", group="g7", dedup="x2",
                      attrs={"twice-source-queue": url, "twice-reason": "rejected"})
        r = self.ctl(d, "--json", "dlq", "redrive", "rfifo", "--all")
        self.assertEqual(json.loads(r.stdout), {"queue": "rfifo", "redriven": 2, "failed": 0,
                                                "skipped": 0})
        back = []
        for _ in range(4):  # a group's next message comes once the previous is deleted
            for m in self.sqs.receive(url, max=10, visibility=30):
                back.append(m)
                self.sqs.delete(url, m)
        self.assertEqual([m["Body"] for m in back], ["one", "two"], "in order, one group")
        self.assertEqual({m["Attributes"]["MessageGroupId"] for m in back}, {"g7"})
        self.assertEqual(self.dlq_count(dlq), 0)

    def test_dlq_purge(self):
        url, dlq, dsn, d = self.setup("purge")
        for i in range(3):
            self.sqs.send(dlq, "dead %d" % i)
        self.ctl(d, "dlq", "purge", "purge", code=2)
        self.assertEqual(self.dlq_count(dlq), 3)
        r = self.ctl(d, "dlq", "purge", "purge", "--yes")
        self.assertIn("purged the dead-letter queue of purge", r.stdout)
        twicetest.wait_until(lambda: self.dlq_count(dlq) == 0, timeout=10)
        self.assertEqual(self.sqs.counts(url), (0, 0, 0), "the source queue is untouched")

    # ------------------------------------------------------------------ keys

    def test_key_show_list_forget_then_resend_runs_again(self):
        url, dlq, dsn, d = self.setup("keys")
        d.start()
        d.wait_log(r"ready: generation 1", timeout=20)
        ids = {}
        for k in ("a1", "a2", "b1"):
            ids[k] = self.ctl(d, "send", "keys", json.dumps({"id": k})).stdout.strip()
        twicetest.wait_until(lambda: len(self.effects(dsn)) == 3, timeout=20)
        twicetest.wait_until(lambda: self.sqs.counts(url) == (0, 0, 0), timeout=20)

        lines = self.ctl(d, "key", "list").stdout.splitlines()
        self.assertEqual(lines[0].split(), ["KEY", "STATE", "ATTEMPTS", "MESSAGE", "ID",
                                            "UPDATED"])
        self.assertEqual([ln.split()[:4] for ln in lines[1:]],
                         [["effect:a1", "completed", "1", ids["a1"]],
                          ["effect:a2", "completed", "1", ids["a2"]],
                          ["effect:b1", "completed", "1", ids["b1"]]])
        keys = [r["key"] for r in json.loads(self.ctl(d, "--json", "key", "list", "--prefix",
                                                      "effect:a").stdout)]
        self.assertEqual(keys, ["effect:a1", "effect:a2"])
        self.assertEqual(json.loads(self.ctl(d, "key", "list", "--state", "in_progress",
                                             "--json").stdout), [])
        r = self.ctl(d, "key", "list", "--max", "1")
        self.assertEqual(len(r.stdout.splitlines()), 2)
        self.assertIn("--max", r.stderr)

        out = self.ctl(d, "key", "show", "effect:a1").stdout
        self.assertRegex(out, r"key: +effect:a1\n")
        self.assertRegex(out, r"state: +completed\n")
        self.assertRegex(out, r"message id: +%s\n" % ids["a1"])
        self.assertRegex(out, r"payload sha256: +[0-9a-f]{64}\n")
        rec = json.loads(self.ctl(d, "key", "show", "effect:a1", "--json").stdout)
        self.assertEqual((rec["key"], rec["state"], rec["message_id"], rec["attempts"]),
                         ("effect:a1", "completed", ids["a1"], 1))
        self.assertIsNone(rec["owner"])

        self.ctl(d, "key", "forget", "effect:a1", "--yes")
        self.assertIn("no key 'effect:a1'", self.ctl(d, "key", "show", "effect:a1",
                                                     code=1).stderr)
        self.ctl(d, "key", "forget", "effect:a1", "--yes", code=1)
        # The same message again now runs its job again.
        again = self.ctl(d, "send", "keys", '{"id":"a1"}').stdout.strip()
        twicetest.wait_until(lambda: len(self.effects(dsn)) == 4, timeout=20,
                             message="the forgotten key's job did not run again")
        self.assertEqual([m for k, m in self.effects(dsn) if k == "effect:a1"],
                         [ids["a1"], again])
        self.assertEqual(d.stop(), 0)

    def test_key_of_a_retried_job_shows_its_runs_and_forget_starts_it_afresh(self):
        url, dlq, dsn, d = self.setup("retried", max_attempts=5)
        d.start()
        d.wait_log(r"ready: generation 1", timeout=20)
        mid = self.ctl(d, "send", "retried", json.dumps({"id": "r1", "fail_until": 99,
                                                         "retry_after": 60})).stdout.strip()
        d.wait_log(r"retry in 60s \(attempt 1 of 5", timeout=20)
        twicetest.wait_until(lambda: self.pg.query(dsn, "SELECT state FROM twice_idempotency")
                             == [("released",)], timeout=10)
        out = self.ctl(d, "key", "show", "effect:r1").stdout
        self.assertRegex(out, r"state: +released\n")
        self.assertRegex(out, r"attempts: +1\n")
        self.assertRegex(out, r"since: +\S+")
        self.assertNotIn("owner:", out)
        rec = json.loads(self.ctl(d, "key", "show", "effect:r1", "--json").stdout)
        self.assertEqual((rec["state"], rec["attempts"], rec["message_id"], rec["owner"]),
                         ("released", 1, mid, None))
        self.assertIsNotNone(rec["processed_at"])
        listed = json.loads(self.ctl(d, "--json", "key", "list", "--state", "released").stdout)
        self.assertEqual([(r["key"], r["attempts"]) for r in listed], [("effect:r1", 1)])
        for state in ("crashed", "interrupted", "completed", "in_progress"):
            self.assertEqual(json.loads(self.ctl(d, "--json", "key", "list", "--state",
                                                 state).stdout), [], state)
        self.assertIn("released, crashed, interrupted",
                      self.ctl(d, "key", "list", "--state", "weird", code=2).stderr)
        # Forgotten: the key and its count are gone (its next run is attempt 1).
        self.ctl(d, "key", "forget", "effect:r1", "--yes")
        self.ctl(d, "key", "show", "effect:r1", code=1)
        self.assertEqual(d.stop(), 0)

    def test_commands_on_a_database_twiced_never_ran_against_say_what_is_missing(self):
        # Before twiced's first start (or with a DSN naming another database or
        # search_path) the tables twicectl reads are not there: each command names the
        # table, the schema and database it looked in, and what to do; never libpq's
        # "relation ... does not exist".
        url, dlq, dsn, d = self.setup("fresh")
        db = dsn.rsplit("/", 1)[1]
        todo = ("twiced creates it when it first starts; if twiced has run, check "
                "idempotency.dsn (the database, and its search_path) and idempotency.table "
                "in %s" % d.config_path)
        for table, commands in (
                ("outbox table twice_idempotency_outbox",
                 [("outbox", "list"), ("outbox", "retry", "--all"), ("outbox", "delete", "7")]),
                ("key table twice_idempotency",
                 [("key", "show", "k"), ("key", "list"), ("key", "forget", "k", "--yes")])):
            for args in commands:
                r = self.ctl(d, *args, code=1)
                self.assertEqual(r.stderr, "twicectl: %s %s: no %s in schema public of "
                                 "database %s: %s\n" % (args[0], args[1], table, db, todo))
        # A pause before the first start is recorded, with a word that no twiced has
        # run against this database yet (or that it is the wrong one).
        r = self.ctl(d, "pause", "fresh")
        self.assertIn("twicectl: pause: warning: no key table twice_idempotency in schema "
                      "public of database %s: no twiced has run against this database yet"
                      % db, r.stderr)
        self.ctl(d, "resume", "fresh")
        # A search_path none of whose schemas exists.
        self.pg.query(dsn, "CREATE SCHEMA ops")
        for path, where in (("nosuch", "in database %s (no schema of its search_path nosuch "
                                       "exists)" % db),
                            ("ops", "in schema ops of database %s" % db)):
            conf = tc.config(self.env, dsn + "?options=-csearch_path%%3D%s" % path,
                             [tc.queue("fresh", url, dlq, EFFECT_TX)],
                             [tc.plugin(EFFECT_TX, tc.test_plugin(self.env, "effect_tx"))])
            other = self.twiced(conf)
            r = self.ctl(other, "outbox", "list", code=1)
            self.assertIn("outbox list: no outbox table twice_idempotency_outbox %s: "
                          % where, r.stderr)
        # Once twiced has run, the same commands answer.
        d.start()
        d.wait_log(r"ready: generation 1", timeout=20)
        self.assertEqual(self.ctl(d, "outbox", "list", "--json").stdout.strip(), "[]")
        self.assertEqual(self.ctl(d, "key", "list", "--json").stdout.strip(), "[]")
        r = self.ctl(d, "pause", "fresh")
        self.assertNotIn("warning", r.stderr)
        self.ctl(d, "resume", "fresh")
        self.assertEqual(d.stop(), 0)

    def test_an_error_of_the_pause_table_names_that_table(self):
        # The pause table is twice's too, next to the key table; an error of its own
        # names it, not the key table (which a DBA would look at in vain).
        url, dlq, dsn, d = self.setup("pausetbl")
        with open(os.path.join(self.env.source_dir, "etc", "schema.sql")) as f:
            self.pg.query(dsn, f.read())
        self.pg.query(dsn, "ALTER TABLE twice_idempotency_pause ADD CONSTRAINT refused "
                           "CHECK (false) NOT VALID")
        r = self.ctl(d, "pause", "pausetbl", code=1)
        self.assertRegex(r.stderr, r"\(table twice_idempotency_pause\): new row for relation "
                                   r"\"twice_idempotency_pause\" violates check constraint")

    def test_key_errors_name_forget_and_escape_the_key_and_owner(self):
        url, dlq, dsn, d = self.setup("keyesc")
        # No idempotency table yet: the error names the command that was run.
        r = self.ctl(d, "key", "forget", "x", "--yes", code=1)
        self.assertIn("key forget: no key table twice_idempotency", r.stderr)
        self.assertNotIn("show key", r.stderr)
        with open(os.path.join(self.env.source_dir, "etc", "schema.sql")) as f:
            self.pg.query(dsn, f.read())
        # A key or owner never reaches the terminal raw: not in an error, a usage
        # message or the warning about a key in progress.
        r = self.ctl(d, "key", "show", "k\nx", code=1)
        self.assertIn("no key 'k\\nx' in table", r.stderr)
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
        r = self.ctl(d, "key", "forget", "\x1b[31mX", "--yes", code=1)
        self.assertIn("no key '\\x1b[31mX' in table", r.stderr)
        r = self.ctl(d, "key", "forget", "\x1b[31mX", code=2)
        self.assertIn("'\\x1b[31mX'", r.stderr)
        r = self.ctl(d, "key", "show", "a\u202eb", code=1)
        self.assertIn("no key 'a\\u202eb'", r.stderr)
        self.pg.query(dsn, "INSERT INTO twice_idempotency (idempotency_key, state, owner, "
                           "lease_until) VALUES (%s, 'in_progress', %s, now() + interval '1 h')",
                      ("busy\x1b]0;t\x07", "host\r\u2066w"))
        r = self.ctl(d, "key", "forget", "busy\x1b]0;t\x07", "--yes")
        self.assertIn("warning: key 'busy\\x1b]0;t\\x07' was in progress (owner "
                      "host\\r\\u2066w)", r.stderr)
        self.assertIn("forgot key busy\\x1b]0;t\\x07:", r.stdout)
        for out in (r.stdout, r.stderr):
            self.assertNotRegex(out, "[\x1b\x07\r\u2066]")

    def test_arguments_repeated_in_errors_are_escaped_and_cut(self):
        url, dlq, dsn, d = self.setup("argesc")
        # A queue name, message id or option value pasted from a log or a message can
        # hold a newline (a fake second line), terminal escapes or bidi controls.
        bad = "q\x1b[31mX\nfake: line\u202e\x07"
        shown = "q\\x1b[31mX\\nfake: line\\u202e\\x07"
        cases = [
            (("status", bad), 1, "no queue named '%s'" % shown),
            (("dlq", "list", bad), 1, "no queue named '%s'" % shown),
            (("send", bad, "body"), 1, "no queue named '%s'" % shown),
            (("pause", bad), 1, "no queue named '%s'" % shown),
            (("key", "derive", "--queue", bad, "{}"), 1, "no queue named '%s'" % shown),
            (("dlq", "redrive", "argesc", "--id", bad), 1, "message %s not found" % shown),
            (("dlq", "delete", "argesc", "--id", bad), 1, "message %s not found" % shown),
            ((bad,), 2, "no command '%s'" % shown),
            (("help", bad), 2, "no command '%s'" % shown),
            (("--timeout", bad, "status"), 2, "got '%s'" % shown),
            (("dlq", bad), 2, "no dlq command '%s'" % shown),
            (("key", bad), 2, "no key command '%s'" % shown),
            (("outbox", bad), 2, "no outbox command '%s'" % shown),
            (("plugin", bad), 2, "no plugin command '%s'" % shown),
            (("outbox", "retry", bad), 2, "got '%s'" % shown),
            (("key", "list", "--state", bad), 2, "not '%s'" % shown),
            (("key", "list", bad), 2, "unexpected argument '%s'" % shown),
            (("outbox", "list", "--state", bad), 2, "not '%s'" % shown),
            (("send", "argesc", "--attr", bad, "body"), 2, "got '%s'" % shown),
            (("send", "argesc", "--attr", bad + "=", "body"), 2, "--attr %s: SQS" % shown),
            (("send", "argesc", "--delay", bad, "body"), 2, "got '%s'" % shown),
            (("pause", "argesc", "--for", bad), 2, "--for: '%s'" % shown),
            (("plugin", "check", "--settings", bad), 2, "not '%s'" % shown),
        ]
        for args, code, want in cases:
            r = self.ctl(d, *args, code=code)
            self.assertIn(want, r.stderr, args)
            self.assertNotRegex(r.stderr, "[\x1b\x07\u202e]", args)
            self.assertNotIn("\nfake: line", r.stderr, args)
        # A 100 kB name is repeated up to 200 characters, not whole.
        r = self.ctl(d, "status", "Q" * 100000, code=1)
        self.assertIn("no queue named '%s...'" % ("Q" * 200), r.stderr)
        self.assertLess(len(r.stderr), 1000)
        # So is a key that is not there (one pasted with the rest of a log line):
        # key show and key forget printed all 100 kB back.
        with open(os.path.join(self.env.source_dir, "etc", "schema.sql")) as f:
            self.pg.query(dsn, f.read())
        for args, code in ((("key", "show"), 1), (("key", "forget"), 2),
                           (("key", "forget", "--yes"), 1)):
            r = self.ctl(d, *(args + ("K" * 100000,)), code=code)
            self.assertIn("'%s...'" % ("K" * 200), r.stderr, args)
            self.assertLess(len(r.stderr), 1000, args)

    # ------------------------------------------------------------------ plugins

    def test_whoami_says_where_the_credentials_came_from_and_nothing_secret(self):
        url, dlq, dsn, d = self.setup("whoami")
        d.process_env["AWS_SESSION_TOKEN"] = "whoami-session-token-secret"
        r = self.ctl(d, "whoami")
        self.assertRegex(r.stdout, r"(?m)^provider:?\s+env\b")
        self.assertIn(twicetest.TEST_ACCESS_KEY_ID[-4:], r.stdout)
        self.assertNotIn(twicetest.TEST_ACCESS_KEY_ID, r.stdout, "only the last 4 characters")
        self.assertIn(self.env.region, r.stdout)
        self.assertNotIn("whoami-session-token-secret", r.stdout + r.stderr)
        j = json.loads(self.ctl(d, "--json", "whoami").stdout)
        self.assertEqual(j["provider"], "env")
        self.assertEqual(j["region"], self.env.region)
        self.assertTrue(j["access_key_id_last4"].endswith(twicetest.TEST_ACCESS_KEY_ID[-4:]))

    def test_plugin_check_good_and_bad(self):
        url, dlq, dsn, d = self.setup("plug")
        path = lambda name: tc.test_plugin(self.env, name)  # noqa: E731
        out = self.ctl(d, "plugin", "check", path("echo_ok")).stdout
        self.assertIn("load rule:  accepted (built for ABI 1.2; host supports 1.0-1.2)", out)
        self.assertRegex(out, r"name: +echo_ok\n")
        self.assertRegex(out, r"version: +1.0.0\n")
        self.assertRegex(out, r"key: +template echo:\{id\} \(plugin template\)\n")
        self.assertRegex(out, r"settings: +none\n")
        out = self.ctl(d, "plugin", "check", path("effect_tx")).stdout
        self.assertRegex(out, r"flags: +transactional\n")
        self.assertRegex(out, r"\n  table +string +no +effects +table the effect rows go to\n")
        doc = json.loads(self.ctl(d, "plugin", "check", path("settings_decl"), "--json",
                                  "--settings", "url=http://x", "timeout=5").stdout)
        self.assertEqual((doc["name"], doc["abi"], doc["accepted"], doc["problems"]),
                         ("settings_decl", "1.2", True, []))
        self.assertEqual([(s["name"], s["type"], s["required"], s["default"])
                          for s in doc["settings"]],
                         [("url", "string", True, None), ("timeout", "int", False, "10"),
                          ("verbose", "bool", False, None)])
        r = self.ctl(d, "plugin", "check", path("settings_decl"), "--settings", "timeout=soon",
                     "--settings", "verbos=true", code=1)
        self.assertIn("setting 'timeout' must be an int, not a string", r.stderr)
        self.assertIn("unknown setting 'verbos' (did you mean 'verbose'?)", r.stderr)
        self.assertIn("missing required setting 'url'", r.stderr)
        r = self.ctl(d, "plugin", "check", path("newer_major"), code=1)
        self.assertIn("newer_major.so: built for ABI 2.0, host supports 1.0-1.2", r.stderr)
        self.assertEqual(r.stdout, "")
        # a bare name is a file of the current directory here, of plugin_dir for twiced
        r = self.ctl(d, "plugin", "check", "echo_ok.so", code=1)
        self.assertIn("echo_ok.so: No such file or directory (a FILE without '/' is looked for "
                      "in the current directory; twiced looks for it in plugin_dir", r.stderr)
        r = self.ctl(d, "plugin", "check", path("no_entry"), code=1)
        self.assertIn("no_entry.so: no entry point", r.stderr)
        r = self.ctl(d, "plugin", "check", path("abort_on_load"), code=1)
        self.assertIn("abort_on_load.so crashed the check with signal 6", r.stderr)
        self.ctl(d, "plugin", "check", path("does_not_exist"), code=1)

    def test_plugin_check_missing_required_setting_and_several_files(self):
        """A plugin twiced would refuse for want of a required setting fails the check
        also when no settings are given (it passed with exit 0); several files are each
        checked, with the settings that follow each one."""
        url, dlq, dsn, d = self.setup("plugs")
        path = lambda name: tc.test_plugin(self.env, name)  # noqa: E731
        r = self.ctl(d, "plugin", "check", path("settings_decl"), code=1)
        self.assertRegex(r.stdout, r"name: +settings_decl\n", "the report is still shown")
        self.assertIn("twicectl: plugin check: plugin 'settings_decl': missing required "
                      "setting 'url' (where to send)", r.stderr)
        self.assertIn("no settings were given: name them with --settings NAME=VALUE", r.stderr)
        doc = json.loads(self.ctl(d, "--json", "plugin", "check", path("settings_decl"),
                                  code=1).stdout)
        self.assertEqual(doc["problems"], ["plugin 'settings_decl': missing required setting "
                                           "'url' (where to send)"])
        self.assertIn("settings check: none given, none required",
                      self.ctl(d, "plugin", "check", path("echo_ok")).stdout)
        # Several files: each with the settings after it (or, first, before it).
        r = self.ctl(d, "plugin", "check", path("echo_ok"), path("settings_decl"),
                     "url=http://x", "--settings", "timeout=5")
        self.assertEqual(re.findall(r"(?m)^name: +(\S+)$", r.stdout),
                         ["echo_ok", "settings_decl"])
        self.assertIn("settings check: 2 given, all accepted", r.stdout)
        self.ctl(d, "plugin", "check", "--settings", "url=http://x", path("settings_decl"),
                 path("echo_ok"))
        r = self.ctl(d, "plugin", "check", path("settings_decl"), "url=x", path("echo_ok"),
                     "url=y", code=1)
        self.assertIn("unknown setting 'url'", r.stderr, "echo_ok's settings are its own")
        docs = json.loads(self.ctl(d, "plugin", "check", path("echo_ok"), path("no_entry"),
                                   path("settings_decl"), "--json", code=1).stdout)
        self.assertEqual([(x["file"], x["accepted"]) for x in docs],
                         [(path("echo_ok"), True), (path("no_entry"), False),
                          (path("settings_decl"), True)])
        self.assertIn("no entry point", docs[1]["problems"][0])
        self.assertEqual(len(docs[2]["problems"]), 1)
        # A second path that is no plugin is checked and named, not taken for a setting.
        r = self.ctl(d, "plugin", "check", path("echo_ok"), "oops", code=1)
        self.assertRegex(r.stdout, r"name: +echo_ok\n")
        self.assertIn("oops: No such file or directory", r.stderr)
        r = self.ctl(d, "plugin", "check", path("echo_ok"), "--settings", "oops", code=2)
        self.assertIn("settings are NAME=VALUE, not 'oops'", r.stderr)


if __name__ == "__main__":
    unittest.main()
