#!/usr/bin/python3
"""demo.py: the body of scripts/demo.sh - twiced doing real work, then a report.

For: showing a newcomer what twice does with the servers scripts/testenv.sh
started (their addresses come from RUN_DIR/env.sh). Not a test: it asserts
nothing, it prints what happened to each message, read back from twiced's own
JSON log, the DLQ, the SMTP sink, the HTTP receiver and PostgreSQL.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
import twicetest  # noqa: E402

CONFIG = """
workers = 2;
drain_timeout = 10;
log = {{ level = "debug"; format = "json"; }};
aws = {{ region = "{region}"; endpoint = "{endpoint}"; }};
idempotency = {{ dsn = "{dsn}"; }};
metrics = {{ listen = "127.0.0.1:{metrics_port}"; }};
plugin_dir = "{build}/plugins";
plugins = (
  {{ name = "welcome-email"; path = "welcome_email.so";
     settings = {{ smtp_url = "smtp://127.0.0.1:{smtp_port}"; from = "welcome@twice.demo";
                  template_text = "{root}/etc/templates/welcome.txt";
                  template_html = "{root}/etc/templates/welcome.html"; }}; }},
  {{ name = "match-recompute"; path = "match_recompute.so"; }},
  {{ name = "sync"; path = "sync.so"; settings = {{ url = "{http}/crm/{{entity}}/{{id}}"; }}; }}
);
queues = (
  {{ name = "jobs"; url = "{url}"; dlq_url = "{dlq}"; route_by = "type";
     routes = ( {{ value = "welcome-email"; plugin = "welcome-email"; }},
                {{ value = "match-recompute"; plugin = "match-recompute"; }},
                {{ value = "sync"; plugin = "sync"; }} );
     wait_time = 1; visibility_timeout = 10; max_attempts = 3; }}
);
"""

MESSAGES = [
    ("welcome Ana", {"type": "welcome-email", "candidateId": 42, "email": "ana@example.com",
                     "name": "Ana"}),
    ("welcome Ana again (a re-sent message)", {"type": "welcome-email", "candidateId": 42,
                                               "email": "ana@example.com", "name": "Ana"}),
    ("recompute role 7 v3", {"type": "match-recompute", "roleId": 7, "roleVersion": 3}),
    ("recompute role 7 v3 again", {"type": "match-recompute", "roleId": 7, "roleVersion": 3}),
    ("sync candidate 42 v9", {"type": "sync", "entity": "candidate", "id": 42, "version": 9,
                              "data": {"name": "Ana", "stage": "hired"}}),
    ("sync candidate 42 v9 again", {"type": "sync", "entity": "candidate", "id": 42,
                                    "version": 9, "data": {"name": "Ana", "stage": "hired"}}),
    ("poison: welcome without an email", {"type": "welcome-email", "candidateId": 99,
                                          "name": "Nobody"}),
    ("poison: not JSON at all", "this is not json {"),
]


def setup_database(pg, root):
    dsn = pg.new_database("demo")
    with open(os.path.join(root, "etc", "schema-matches.sql")) as f:
        pg.query(dsn, f.read())
    pg.query(dsn, "INSERT INTO roles VALUES (7, 'Backend engineer', 3)")
    pg.query(dsn, "INSERT INTO role_skills VALUES (7, 'C', 3), (7, 'PostgreSQL', 2), (7, 'SQS', 1)")
    pg.query(dsn, "INSERT INTO candidates VALUES (1, 'Ana', '{C,PostgreSQL,SQS}'), "
                  "(2, 'Bo', '{C,SQS}'), (3, 'Cy', '{Java}')")
    return dsn


def outcome(events):
    """What twiced's log says about one message, in words."""
    for e in events:
        text = e.get("msg", "")
        if text.startswith("dead-lettered"):
            return text
        if text.startswith("duplicate"):
            return "duplicate, skipped (%s)" % text
        if text.startswith("done"):
            return "done (key %s)" % e.get("key")
    return "still in progress"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", required=True)
    p.add_argument("--run-dir", required=True)
    args = p.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.environ.update(TWICE_BIN_DIR=os.path.join(args.build, "bin"),
                      TWICE_TEST_PLUGIN_DIR=os.path.join(args.build, "tests", "plugins"),
                      TWICE_PLUGIN_BUILD_DIR=os.path.join(args.build, "plugins"),
                      TWICE_SOURCE_DIR=root)
    env = twicetest.Env()
    sqs = twicetest.Sqs.from_env(env)
    pg = twicetest.Pg(env)
    url, dlq = sqs.create_queue_pair(twicetest.unique_name("demo"))
    dsn = setup_database(pg, root)
    from twiceconf import free_port  # noqa: E402
    port = free_port()
    conf = CONFIG.format(region=env.region, endpoint=env.sqs_endpoint, dsn=dsn, build=args.build,
                         root=root, smtp_port=env.smtp_port, http=env.http_url + "/demo",
                         url=url, dlq=dlq, metrics_port=port)
    workdir = os.path.join(args.run_dir, "twiced")
    os.makedirs(workdir, exist_ok=True)  # before Twiced writes its twice.conf there
    d = twicetest.Twiced(env, conf.replace("$", "$$"), workdir=workdir)
    print("demo: starting twiced (config %s)" % d.config_path)
    d.start()
    d.wait_log(r'"msg":"ready: generation 1', timeout=30)
    # The servers may have served an earlier run (the test of this demo, a kept run
    # directory): count only this run's mail and requests.
    mailbox = twicetest.Mailbox(env)
    mails_before = len(mailbox.messages(to="ana@example.com"))
    crm = twicetest.HttpReceiver(env, "demo")
    crm.reset()
    sent = []
    for label, body in MESSAGES:
        mid = sqs.send(url, body if isinstance(body, str) else json.dumps(body))
        sent.append((label, mid))
        time.sleep(0.3)  # one after the other, so a re-send meets a completed key
    twicetest.wait_until(lambda: sqs.counts(url) == (0, 0, 0), timeout=60,
                         message="the queue did not drain")
    time.sleep(1)
    code = d.stop()
    events = {}
    for line in d.log_text().splitlines():
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if "message_id" in e:
            events.setdefault(e["message_id"], []).append(e)
    print("\nWhat happened to each message:")
    for label, mid in sent:
        print("  %-40s %s  %s" % (label, mid[:8], outcome(events.get(mid, []))))
    letters = sqs.drain(dlq)
    print("\nDead-letter queue (%d messages):" % len(letters))
    for m in letters:
        a = m.get("MessageAttributes", {})
        print("  %s  reason=%s  %s" % (a["twice-source-message-id"]["StringValue"][:8],
                                       a["twice-reason"]["StringValue"],
                                       a.get("twice-error", {}).get("StringValue", "")))
    mails = mailbox.messages(to="ana@example.com")[mails_before:]
    print("\nEmails to ana@example.com: %d (subject %r)" % (len(mails),
          mails[0].subject if mails else None))
    reqs = crm.requests()
    print("Requests the CRM received: %d %s" % (len(reqs), [(r["method"], r["path"],
          r["headers"].get("idempotency-key")) for r in reqs]))
    rows = pg.query(dsn, "SELECT candidate_id, score FROM matches WHERE role_id = 7 ORDER BY 1")
    print("Matches of role 7: %s" % ", ".join("candidate %d: %s" % r for r in rows))
    print("\ntwiced exited with %d; its log: %s" % (code, d.log_path))
    pg.drop_database(dsn)
    return 0 if code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
