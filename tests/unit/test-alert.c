/*
 * test-alert.c - the pure half of alert.h: the rise/repeat/resolve rule over
 * sequences of checks, counting dead letters per (reason, plugin) with at
 * most five examples, the text (escaped, Slack-safe), the webhook's JSON
 * document, the mail, the retry delays and the URL origin logged for a
 * sink. Not a test of delivery (test_alerts.py does that against real
 * servers).
 */
#include "alert.h"
#include "check.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* A day of one DLQ: each step is (depth, letters) at t = 10, 20, 30 ... */
static void
test_rule_sequence(void)
{
    struct alert_rule r = ALERT_RULE_INIT;
    int repeat = 60;
    CHECK_INT(alert_rule_step(&r, 0, 0, 10, repeat), ALERT_NONE);   /* empty at start */
    CHECK_INT(alert_rule_step(&r, 1, 1, 20, repeat), ALERT_ALERT);  /* went non-empty */
    CHECK_INT(alert_rule_step(&r, 1, 0, 30, repeat), ALERT_NONE);   /* nothing new */
    CHECK_INT(alert_rule_step(&r, 2, 1, 40, repeat), ALERT_REPORT); /* a second poison message */
    CHECK_INT(alert_rule_step(&r, 2, 0, 50, repeat), ALERT_NONE);
    CHECK_INT(alert_rule_step(&r, 2, 0, 99, repeat), ALERT_NONE);    /* 59 s after the report */
    CHECK_INT(alert_rule_step(&r, 2, 0, 100, repeat), ALERT_REPEAT); /* 60 s: "still 2" */
    CHECK_INT(alert_rule_step(&r, 2, 0, 110, repeat), ALERT_NONE);
    CHECK_INT(alert_rule_step(&r, 1, 0, 120, repeat), ALERT_NONE); /* draining is not news */
    CHECK_INT(alert_rule_step(&r, 0, 0, 130, repeat), ALERT_RESOLVED);
    CHECK_INT(alert_rule_step(&r, 0, 0, 140, repeat), ALERT_NONE);
    CHECK_INT(alert_rule_step(&r, 3, 0, 150, repeat), ALERT_ALERT); /* non-empty again */
    CHECK_INT(r.depth, 3);
    CHECK_INT(r.last_sent, 150);
}

static void
test_rule_edges(void)
{
    struct alert_rule r = ALERT_RULE_INIT;
    /* Non-empty at start: announced once. */
    CHECK_INT(alert_rule_step(&r, 4, 0, 10, 60), ALERT_ALERT);
    /* The depth cannot be read: no notice, the known depth stays... */
    CHECK_INT(alert_rule_step(&r, -1, 0, 20, 60), ALERT_NONE);
    CHECK_INT(r.depth, 4);
    /* ...but dead letters twice sent are still reported. */
    CHECK_INT(alert_rule_step(&r, -1, 2, 30, 60), ALERT_REPORT);
    /* Back: no rise against what was known, so no new alert. */
    CHECK_INT(alert_rule_step(&r, 4, 0, 40, 60), ALERT_NONE);
    /* A rise without twice's letters (SQS's own redrive policy): reported. */
    CHECK_INT(alert_rule_step(&r, 5, 0, 50, 60), ALERT_REPORT);
    /* Letters while the depth fell (someone redrove meanwhile): reported. */
    CHECK_INT(alert_rule_step(&r, 3, 1, 60, 60), ALERT_REPORT);

    /* repeat_after 0: never repeats. */
    struct alert_rule q = ALERT_RULE_INIT;
    CHECK_INT(alert_rule_step(&q, 1, 0, 10, 0), ALERT_ALERT);
    CHECK_INT(alert_rule_step(&q, 1, 0, 100000, 0), ALERT_NONE);
    /* Empty at the first check with letters (dead-lettered and drained at
     * once): a report, and no resolved (it was never non-empty for us). */
    struct alert_rule e = ALERT_RULE_INIT;
    CHECK_INT(alert_rule_step(&e, 0, 1, 10, 60), ALERT_REPORT);
    CHECK_INT(alert_rule_step(&e, 0, 0, 20, 60), ALERT_NONE);
    /* Resolved resets the repeat clock. */
    CHECK_INT(alert_rule_step(&e, 1, 0, 30, 60), ALERT_ALERT);
    CHECK_INT(alert_rule_step(&e, 0, 0, 40, 60), ALERT_RESOLVED);
    CHECK_INT(e.last_sent, 0);
}

static void
test_letters(void)
{
    struct alert_notice n;
    alert_notice_init(&n, "jobs", "http://q/jobs-dlq", "host1", 1000);
    CHECK_INT(n.depth, -1);
    CHECK_INT(n.previous, -1);
    for (int i = 0; i < 7; i++) {
        char id[16], key[16];
        snprintf(id, sizeof(id), "m%d", i);
        snprintf(key, sizeof(key), "k%d", i);
        alert_notice_add_letter(&n, i < 4 ? "rejected" : "max-attempts", "mail", id, key, 990);
    }
    alert_notice_add_letter(&n, "rejected", NULL, "m7", NULL, 991);
    CHECK_INT(n.letters, 8);
    CHECK_INT(n.ncounts, 3);
    CHECK_STR(n.counts[0].reason, "rejected");
    CHECK_INT(n.counts[0].n, 4);
    CHECK_INT(n.counts[1].n, 3);
    CHECK_STR(n.counts[2].plugin, "-");
    CHECK_INT(n.nexamples, ALERT_EXAMPLES);
    CHECK_STR(n.examples[4].message_id, "m4");
    CHECK_STR(n.examples[4].reason, "max-attempts");

    /* More distinct pairs than fit are counted as "other". */
    struct alert_notice m;
    alert_notice_init(&m, "q", "u", "h", 0);
    for (int i = 0; i < ALERT_COUNTS + 3; i++) {
        char plugin[16];
        snprintf(plugin, sizeof(plugin), "p%d", i);
        alert_notice_add_letter(&m, "rejected", plugin, "id", "k", 0);
    }
    CHECK_INT(m.ncounts, ALERT_COUNTS);
    CHECK_INT(m.other_counts, 3);
    CHECK_INT(m.letters, ALERT_COUNTS + 3);
}

static struct alert_notice
sample(enum alert_kind kind, long previous, long depth)
{
    struct alert_notice n;
    alert_notice_init(&n, "jobs", "http://q/jobs-dlq", "host1", 1796205662);
    n.kind = kind;
    n.previous = previous;
    n.depth = depth;
    return n;
}

static void
test_text(void)
{
    struct alert_notice n = sample(ALERT_ALERT, 0, 1);
    alert_notice_add_letter(&n, "rejected", "effect-tx", "m-1", "effect:<!channel>\n&x", 0);
    char *t = alert_notice_text(&n, 0);
    CHECK_CONTAINS(t, "[twice@host1] queue jobs: dead-letter queue went from empty to 1 "
                      "message (+1)\n");
    CHECK_CONTAINS(t, "Dead-lettered by twice since the last check: 1 (rejected from "
                      "effect-tx: 1)");
    /* An untrusted key cannot add a line. */
    CHECK_CONTAINS(t, "- message m-1 key effect:<!channel>\\n&x: rejected (plugin effect-tx)");
    CHECK_CONTAINS(t, "twicectl dlq list jobs");
    free(t);
    t = alert_notice_text(&n, 1);
    CHECK_CONTAINS(t, "key effect:&lt;!channel&gt;\\n&amp;x:");
    CHECK(strstr(t, "<!channel>") == NULL);
    free(t);

    struct alert_notice h = sample(ALERT_ALERT, -1, 3);
    t = alert_notice_text(&h, 0);
    CHECK_CONTAINS(t, "queue jobs: dead-letter queue holds 3 messages");
    free(t);
    h = sample(ALERT_REPORT, 1, 2);
    t = alert_notice_text(&h, 0);
    CHECK_CONTAINS(t, "dead-letter queue rose from 1 to 2 messages (+1)");
    free(t);
    h = sample(ALERT_REPORT, 2, 2);
    h.letters = 1;
    t = alert_notice_text(&h, 0);
    CHECK_CONTAINS(t, "1 message dead-lettered since the last check (dead-letter queue holds 2)");
    free(t);
    h = sample(ALERT_REPEAT, 2, 2);
    t = alert_notice_text(&h, 0);
    CHECK_CONTAINS(t, "dead-letter queue still holds 2 messages");
    free(t);
    h = sample(ALERT_RESOLVED, 2, 0);
    t = alert_notice_text(&h, 0);
    CHECK_STR(t, "[twice@host1] queue jobs: dead-letter queue is empty again (was 2)");
    free(t);
}

static void
test_json(void)
{
    struct alert_notice n = sample(ALERT_REPORT, 1, 3);
    alert_notice_add_letter(&n, "rejected", "effect-tx", "m-1", "effect:k1", 1796205660);
    alert_notice_add_letter(&n, "max-attempts", "effect-tx", "m-2", "", 1796205661);
    char bad[] = {'k', (char) 0xff, 'x', 0};
    alert_notice_add_letter(&n, "rejected", "effect-tx", "m-3", bad, 1796205661);
    char *doc = alert_notice_json(&n);
    json_error_t e;
    json_t *v = json_loads(doc, 0, &e);
    CHECK(v != NULL);
    CHECK_STR(json_string_value(json_object_get(v, "kind")), "report");
    CHECK_STR(json_string_value(json_object_get(v, "queue")), "jobs");
    CHECK_STR(json_string_value(json_object_get(v, "dlq_url")), "http://q/jobs-dlq");
    CHECK_INT(json_integer_value(json_object_get(v, "dlq_depth")), 3);
    CHECK_INT(json_integer_value(json_object_get(v, "previous_depth")), 1);
    CHECK_INT(json_integer_value(json_object_get(v, "dead_letters_total")), 3);
    CHECK_STR(json_string_value(json_object_get(v, "host")), "host1");
    CHECK_STR(json_string_value(json_object_get(v, "time")), "2026-12-02T10:01:02Z");
    CHECK_CONTAINS(json_string_value(json_object_get(v, "text")), "rose from 1 to 3");
    json_t *counts = json_object_get(v, "counts");
    CHECK_INT(json_array_size(counts), 2);
    CHECK_STR(json_string_value(json_object_get(json_array_get(counts, 0), "reason")), "rejected");
    CHECK_INT(json_integer_value(json_object_get(json_array_get(counts, 0), "count")), 2);
    json_t *letters = json_object_get(v, "dead_letters");
    CHECK_INT(json_array_size(letters), 3);
    json_t *l0 = json_array_get(letters, 0);
    CHECK_STR(json_string_value(json_object_get(l0, "message_id")), "m-1");
    CHECK_STR(json_string_value(json_object_get(l0, "key")), "effect:k1");
    CHECK_STR(json_string_value(json_object_get(l0, "time")), "2026-12-02T10:01:00Z");
    CHECK(json_is_null(json_object_get(json_array_get(letters, 1), "key")));
    CHECK_STR(json_string_value(json_object_get(json_array_get(letters, 2), "key")), "k?x");
    json_decref(v);
    free(doc);

    struct alert_notice u = sample(ALERT_REPORT, -1, -1);
    doc = alert_notice_json(&u);
    v = json_loads(doc, 0, &e);
    CHECK(json_is_null(json_object_get(v, "dlq_depth")));
    CHECK(json_is_null(json_object_get(v, "previous_depth")));
    CHECK_INT(json_array_size(json_object_get(v, "dead_letters")), 0);
    json_decref(v);
    free(doc);
}

/* A queue paused and resumed (issue 16.1): the reason and the end in the text
 * and the document, escaped like every untrusted text; no DLQ advice. */
static void
test_pause_notices(void)
{
    struct alert_notice n = sample(ALERT_PAUSED, -1, -1);
    snprintf(n.pause_reason, sizeof(n.pause_reason), "deploy <b>\n@channel");
    n.pause_until = 1796205662;
    char *text = alert_notice_text(&n, 1);
    CHECK_CONTAINS(text, "[twice@host1] queue jobs: paused (deploy &lt;b&gt;\\n@channel)");
    CHECK_CONTAINS(text, "Until: 2026-12-02T10:01:02Z");
    CHECK_CONTAINS(text, "twicectl resume jobs");
    CHECK(strstr(text, "dlq") == NULL);
    free(text);
    char *doc = alert_notice_json(&n);
    json_error_t e;
    json_t *v = json_loads(doc, 0, &e);
    CHECK_STR(json_string_value(json_object_get(v, "kind")), "paused");
    CHECK_STR(json_string_value(json_object_get(v, "reason")), "deploy <b>\n@channel");
    CHECK_STR(json_string_value(json_object_get(v, "until")), "2026-12-02T10:01:02Z");
    json_decref(v);
    free(doc);

    snprintf(n.pause_reason, sizeof(n.pause_reason), "breaker");
    text = alert_notice_text(&n, 0);
    CHECK_CONTAINS(text, "circuit breaker opened");
    CHECK_CONTAINS(text, "Probe after: 2026-12-02T10:01:02Z");
    free(text);

    struct alert_notice r = sample(ALERT_RESUMED, -1, -1);
    text = alert_notice_text(&r, 0);
    CHECK_STR(text, "[twice@host1] queue jobs: resumed");
    free(text);
    doc = alert_notice_json(&r);
    v = json_loads(doc, 0, &e);
    CHECK_STR(json_string_value(json_object_get(v, "kind")), "resumed");
    CHECK(json_is_null(json_object_get(v, "until")));
    json_decref(v);
    free(doc);
}

static void
test_email(void)
{
    struct alert_notice n = sample(ALERT_ALERT, 0, 1);
    alert_notice_add_letter(&n, "rejected", "effect-tx", "m-1", "effect:k1", 0);
    char *to[] = {"ops@example.com", "oncall@example.com\r\nBcc: evil@example.com"};
    char *mail = alert_notice_email(&n, "twice@example.com", to, 2);
    CHECK_CONTAINS(mail, "From: twice@example.com\r\n");
    CHECK_CONTAINS(mail, "To: ops@example.com, oncall@example.com??Bcc: evil@example.com\r\n");
    CHECK(strstr(mail, "\r\nBcc:") == NULL);
    CHECK_CONTAINS(mail, "Subject: [twice@host1] queue jobs: dead-letter queue went from "
                         "empty to 1 message (+1)\r\n");
    CHECK_CONTAINS(mail, "Date: Wed, 02 Dec 2026 10:01:02 +0000\r\n");
    CHECK_CONTAINS(mail, "Message-ID: <twice.1796205662.");
    CHECK_CONTAINS(mail, "Content-Type: text/plain; charset=utf-8\r\n");
    CHECK_CONTAINS(mail, "\r\n\r\n[twice@host1] queue jobs:");
    CHECK_CONTAINS(mail, "\r\n- message m-1 key effect:k1: rejected (plugin effect-tx)\r\n");
    /* Every line ends in CRLF: no bare LF. */
    for (const char *p = strchr(mail, '\n'); p != NULL; p = strchr(p + 1, '\n')) {
        CHECK(p > mail && p[-1] == '\r');
    }
    free(mail);
}

static void
test_retry_and_origin(void)
{
    CHECK_INT(alert_retry_delay(1), 1);
    CHECK_INT(alert_retry_delay(2), 2);
    CHECK_INT(alert_retry_delay(3), 4);
    CHECK_INT(alert_retry_delay(9), 256);
    CHECK_INT(alert_retry_delay(10), ALERT_RETRY_CAP);
    CHECK_INT(alert_retry_delay(1000), ALERT_RETRY_CAP);

    char o[256];
    /* credentials never cross the network in clear */
    CHECK_INT(alert_smtp_needs_tls("smtp://mail.example.com:587", 1), 1);
    CHECK_INT(alert_smtp_needs_tls("SMTP://10.0.0.5", 1), 1);
    CHECK_INT(alert_smtp_needs_tls("smtp://127.0.0.1:2525", 1), 0);
    CHECK_INT(alert_smtp_needs_tls("smtp://localhost:25", 1), 0);
    CHECK_INT(alert_smtp_needs_tls("smtp://[::1]:25", 1), 0);
    CHECK_INT(alert_smtp_needs_tls("smtp://127.0.0.1.evil.example:25", 1), 1);
    CHECK_INT(alert_smtp_needs_tls("smtp://mail.example.com:587", 0), 0);
    CHECK_INT(alert_smtp_needs_tls("smtps://mail.example.com:465", 1), 0);
    alert_url_origin("https://hooks.slack.com/services/T000/B000/XXXXSECRET", o, sizeof(o));
    CHECK_STR(o, "https://hooks.slack.com");
    alert_url_origin("http://127.0.0.1:8080/a/b?token=secret#x", o, sizeof(o));
    CHECK_STR(o, "http://127.0.0.1:8080");
    alert_url_origin("smtps://user:pa%2Fss@mail.example.com:465", o, sizeof(o));
    CHECK_STR(o, "smtps://mail.example.com:465");
    alert_url_origin("not a url at all", o, sizeof(o));
    CHECK(strstr(o, "not a url") == NULL);
}

int
main(void)
{
    test_rule_sequence();
    test_rule_edges();
    test_letters();
    test_text();
    test_json();
    test_pause_notices();
    test_email();
    test_retry_and_origin();
    return check_done("test-alert");
}
