"""DLQ alerting: twiced's master watches each DLQ and tells a
webhook (the run's HTTP receiver) and a mailbox (the run's SMTP sink) when poison
messages arrive, when more come, and when the DLQ is empty again, with retries when a
sink fails, while jobs keep being processed. Real SQS emulator, PostgreSQL, HTTP and
SMTP servers; the poison is the effect_tx fixture's {"reject": true}."""

import json
import os
import signal
import subprocess
import time
import unittest

import twicetest
import twiceconf as tc

EFFECT_TX = "effect-tx"
INTERVAL = 1  # alerts.dlq_check_interval in these tests


def alerts_block(webhook=None, header=None, smtp=None, repeat_after=3600):
    parts = [tc.setting("dlq_check_interval", INTERVAL), tc.setting("repeat_after", repeat_after)]
    if webhook:
        hook = tc.setting("url", webhook) + " " + tc.setting("timeout", 5)
        if header:
            hook += " " + tc.setting("header", header)
        parts.append("webhook = { %s };" % hook)
    if smtp:
        parts.append("smtp = { %s };" % " ".join(tc.setting(k, v) for k, v in smtp.items()))
    return "alerts = { %s };" % " ".join(parts)


class Alerts(twicetest.TwiceTestCase):
    def start(self, prefix, alerts, metrics=True):
        """A queue pair, a database with the effects table, and twiced running effect_tx
        with the given alerts block. Returns (url, dlq, dsn, port, twiced)."""
        url, dlq = self.queue_pair(prefix)
        dsn = self.new_database(prefix)
        self.pg.query(dsn, tc.EFFECTS_TABLE)
        port = tc.free_port() if metrics else None
        conf = tc.config(self.env, dsn, [tc.queue(prefix, url, dlq, EFFECT_TX)],
                         [tc.plugin(EFFECT_TX, tc.test_plugin(self.env, "effect_tx"))],
                         metrics_port=port, extra=alerts)
        d = self.start_twiced(conf)
        d.wait_log(r"ready: generation 1", timeout=20)
        return url, dlq, dsn, port, d

    @staticmethod
    def notices(receiver, kind=None):
        """Webhook documents received (only answered with 2xx ones), oldest first."""
        out = []
        for r in receiver.requests():
            if r["status"] < 300:
                doc = json.loads(r["body"])
                if kind is None or doc["kind"] == kind:
                    out.append(doc)
        return out

    def wait_notice(self, receiver, kind, pred=lambda doc: True, timeout=15):
        return twicetest.wait_until(
            lambda: [n for n in self.notices(receiver, kind) if pred(n)], timeout=timeout,
            message="a %s notice" % kind)[0]

    def effects(self, dsn):
        return self.pg.query(dsn, "SELECT key FROM effects")

    def assert_no_secrets(self, d, *secrets):
        log = d.log_text()
        for s in secrets:
            self.assertNotIn(s, log)

    def test_poison_alerts_once_reports_the_next_and_resolves_on_purge(self):
        hook = self.http_receiver()
        url, dlq, dsn, port, d = self.start(
            "poison", alerts_block(webhook=hook.url + "/T0/secret-path?token=s3cr3t",
                                   header="X-Hook-Auth: hdr-s3cr3t"))
        time.sleep(2 * INTERVAL + 0.5)  # checks of an empty DLQ say nothing
        self.assertEqual(hook.requests(), [])

        first = self.sqs.send(url, json.dumps({"id": "p1", "reject": True}))
        twicetest.wait_until(lambda: sum(self.sqs.counts(dlq)) == 1, timeout=20, interval=0.05)
        arrived = time.monotonic()
        alert = self.wait_notice(hook, "alert")
        self.assertLessEqual(time.monotonic() - arrived, 2 * INTERVAL + 1.0,
                             "alerted within two check intervals")
        self.assertEqual(alert["queue"], "poison")
        self.assertEqual(alert["dlq_url"], dlq)
        self.assertEqual((alert["previous_depth"], alert["dlq_depth"]), (0, 1))
        self.assertEqual(alert["dead_letters_total"], 1)
        self.assertEqual(alert["counts"], [{"reason": "rejected", "plugin": EFFECT_TX,
                                            "count": 1}])
        letter = alert["dead_letters"][0]
        self.assertEqual((letter["message_id"], letter["key"], letter["reason"]),
                         (first, "effect:p1", "rejected"))
        self.assertIn("queue poison: dead-letter queue went from empty to 1 message",
                      alert["text"])
        self.assertIn("rejected", alert["text"])
        self.assertTrue(alert["host"] and alert["time"].endswith("Z"))
        req = hook.requests()[0]
        self.assertEqual(req["method"], "POST")
        self.assertEqual(req["headers"]["content-type"], "application/json")
        self.assertEqual(req["headers"]["x-hook-auth"], "hdr-s3cr3t")
        self.assertEqual(req["path"], "/%s/T0/secret-path" % hook.prefix)

        # A second poison message: no second "went non-empty" alert, but a report
        # that lists it.
        second = self.sqs.send(url, json.dumps({"id": "p2", "reject": True}))
        report = self.wait_notice(
            hook, "report", lambda n: any(x["message_id"] == second for x in n["dead_letters"]))
        self.assertEqual((report["previous_depth"], report["dlq_depth"]), (1, 2))
        self.assertEqual(report["dead_letters"][0]["key"], "effect:p2")
        self.assertIn("rose from 1 to 2 messages", report["text"])
        time.sleep(2 * INTERVAL)
        self.assertEqual(len(self.notices(hook, "alert")), 1)

        # A reload keeps what the monitor knew: the DLQ is not announced again.
        mark = d.mark()
        d.signal(signal.SIGHUP)
        d.wait_log(r"reload done", timeout=30, since=mark)
        time.sleep(2 * INTERVAL + 0.5)
        self.assertEqual([n["kind"] for n in self.notices(hook)], ["alert", "report"])

        # Purging the DLQ resolves it.
        r = subprocess.run([self.env.binary("twicectl"), "-c", d.config_path, "dlq", "purge",
                            "poison", "--yes"], capture_output=True, text=True,
                           env=d.process_env, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        resolved = self.wait_notice(hook, "resolved")
        self.assertEqual((resolved["previous_depth"], resolved["dlq_depth"]), (2, 0))
        self.assertIn("dead-letter queue is empty again", resolved["text"])
        self.assertEqual([n["kind"] for n in self.notices(hook)],
                         ["alert", "report", "resolved"])

        samples = tc.scrape(port)
        self.assertEqual(tc.metric_sum(samples, "twice_alerts_total", sink="webhook",
                                       result="sent"), 3)
        self.assertEqual(tc.metric_sum(samples, "twice_dlq_depth", queue="poison"), 0)
        self.assert_no_secrets(d, "secret-path", "s3cr3t", "T0/")
        self.assertIn("sent by webhook to http://127.0.0.1:%d" % self.env.http_port,
                      d.log_text())
        self.assertEqual(d.stop(), 0)

    def test_webhook_failing_three_times_delivers_on_the_fourth_try_while_jobs_run(self):
        hook = self.http_receiver()
        hook.script(fail_first=3, status=500)
        url, dlq, dsn, port, d = self.start("flaky", alerts_block(webhook=hook.url + "/hookpath?k=v-secret"))
        self.sqs.send(url, json.dumps({"id": "poison", "reject": True}))
        hook.wait_requests(1, timeout=15)
        # Jobs keep running while the alert is being retried (1 + 2 + 4 seconds).
        for i in range(0, 20, 10):
            self.sqs.send_batch(url, [json.dumps({"id": "ok%d" % j}) for j in range(i, i + 10)])
        twicetest.wait_until(lambda: len(self.effects(dsn)) == 20, timeout=6,
                             message="jobs did not run while the alert was retried")
        self.assertLess(len(hook.requests()), 4, "all 20 jobs ran before the 4th try")
        reqs = hook.wait_requests(4, timeout=15)
        self.assertEqual([r["status"] for r in reqs], [500, 500, 500, 200])
        self.assertEqual({json.loads(r["body"])["kind"] for r in reqs}, {"alert"})
        gaps = [reqs[i + 1]["time"] - reqs[i]["time"] for i in range(3)]
        for gap, want in zip(gaps, (1, 2, 4)):
            self.assertGreaterEqual(gap, want - 0.2, gaps)
            self.assertLess(gap, want + 1.5, gaps)
        log = d.log_text()
        for n, delay in ((1, 1), (2, 2), (3, 4)):
            self.assertIn("failed: HTTP 500 (attempt %d of 12; retrying in %ds)" % (n, delay),
                          log)
        samples = tc.scrape(port)
        self.assertEqual(tc.metric_sum(samples, "twice_alerts_total", sink="webhook",
                                       result="failed"), 3)
        self.assertEqual(tc.metric_sum(samples, "twice_alerts_total", sink="webhook",
                                       result="sent"), 1)
        self.assert_no_secrets(d, "hookpath", "v-secret")
        self.assertTrue(d.running())
        self.assertEqual(d.stop(), 0)

    def test_an_alert_undelivered_at_a_reload_reaches_the_mended_webhook_once(self):
        hook = self.http_receiver()
        closed = "http://127.0.0.1:%d/hook" % tc.free_port()  # nobody listens: refused
        url, dlq, dsn, port, d = self.start("carried", alerts_block(webhook=closed),
                                            metrics=False)
        mid = self.sqs.send(url, json.dumps({"id": "c1", "reject": True}))
        d.wait_log(r"alert: alert about queue carried: webhook to http://127\.0\.0\.1:\d+ "
                   r"failed: .*\(attempt 1 of 12", timeout=15)

        # The operator mends the URL and reloads: the waiting alert goes there at once,
        # as it was made before the reload, and is not made again.
        with open(d.config_path, "w") as f:
            f.write(d.config_text.replace(closed, hook.url + "/hook"))
        mark = d.mark()
        d.signal(signal.SIGHUP)
        alert = self.wait_notice(hook, "alert", timeout=10)
        self.assertEqual((alert["previous_depth"], alert["dlq_depth"]), (0, 1))
        self.assertEqual([x["message_id"] for x in alert["dead_letters"]], [mid])
        d.wait_log(r"reload done", timeout=30, since=mark)
        time.sleep(2 * INTERVAL + 0.5)
        self.assertEqual([n["kind"] for n in self.notices(hook)], ["alert"])
        self.assertEqual(len(hook.requests()), 1)
        self.assertEqual(d.stop(), 0)

    def test_a_killed_leader_does_not_make_its_successor_announce_again(self):
        # The DLQ monitor runs in the worker that leads the host's duties. One that
        # dies (SIGKILL, the OOM killer, a plugin's crash) writes nothing as it stops:
        # its successor started afresh and announced the same non-empty DLQ again, at
        # every respawn of a crash loop. The monitor keeps what it knew in the shared
        # region after each check, and the next one carries on from it.
        hook = self.http_receiver()
        url, dlq, dsn, port, d = self.start("killed", alerts_block(webhook=hook.url + "/hook"),
                                            metrics=False)
        self.sqs.send(url, json.dumps({"id": "k1", "reject": True}))
        self.wait_notice(hook, "alert", timeout=15)
        time.sleep(2 * INTERVAL + 0.5)  # a check after the alert: what it knew is kept
        pid = d.worker_pids()[0]
        mark = d.mark()
        os.kill(pid, signal.SIGKILL)
        d.wait_log(r"worker\[\d+\]: leading this host's duties", timeout=20, since=mark)
        time.sleep(3 * INTERVAL + 0.5)  # the successor's checks
        self.assertEqual([n["kind"] for n in self.notices(hook)], ["alert"])
        self.assertEqual(d.stop(), 0)

    def test_email_alert_reaches_the_mailbox_without_a_metrics_listener(self):
        to = twicetest.unique_name("oncall").lower() + "@example.com"
        smtp = {"url": "smtp://%s:%d" % (self.env.smtp_host, self.env.smtp_port),
                "from": "twice@example.com", "to": to, "username": self.env.smtp_user,
                "password": self.env.smtp_password, "timeout": 5}
        url, dlq, dsn, port, d = self.start("mail", alerts_block(smtp=smtp), metrics=False)
        mid = self.sqs.send(url, json.dumps({"id": "m1", "reject": True}))
        mail = self.mailbox().wait_for(to, timeout=15)[0]
        self.assertEqual(mail.mail_from, "twice@example.com")
        self.assertEqual(mail.auth_user, self.env.smtp_user)
        self.assertIn("queue mail: dead-letter queue went from empty to 1 message",
                      mail.subject)
        text = mail.text()
        self.assertIn("Dead-lettered by twice since the last check: 1 (rejected from "
                      "effect-tx: 1)", text)
        self.assertIn("- message %s key effect:m1: rejected" % mid, text)
        self.assertIn("twicectl dlq list mail", text)
        self.assertEqual(mail.message["X-Twice-Kind"], "alert")
        self.assertIn("dlq alert: ", d.log_text(), "every notice is logged as well")
        self.assert_no_secrets(d, self.env.smtp_password)
        self.assertEqual(d.stop(), 0)

    def test_undeliverable_mail_is_given_up_and_logged_without_crashing(self):
        to = "reject-" + twicetest.unique_name("x").lower() + "@example.com"
        smtp = {"url": "smtp://%s:%d" % (self.env.smtp_host, self.env.smtp_port),
                "from": "twice@example.com", "to": to}
        url, dlq, dsn, port, d = self.start("nomail", alerts_block(smtp=smtp))
        self.sqs.send(url, json.dumps({"id": "n1", "reject": True}))
        d.wait_log(r"alert: alert about queue nomail could not be sent by smtp to "
                   r"smtp://127\.0\.0\.1:%d: .*550.*giving up" % self.env.smtp_port, timeout=15)
        self.sqs.send(url, json.dumps({"id": "fine"}))
        twicetest.wait_until(lambda: self.effects(dsn) == [("effect:fine",)], timeout=15)
        self.assertEqual(tc.metric_sum(tc.scrape(port), "twice_alerts_total", sink="smtp",
                                       result="failed"), 1)
        self.assertTrue(d.running())
        self.assertEqual(d.stop(), 0)


if __name__ == "__main__":
    unittest.main()
