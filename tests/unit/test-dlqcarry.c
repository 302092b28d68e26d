/*
 * test-dlqcarry.c - what a stopping DLQ monitor leaves to the next in the
 * shared region (proc/dlqcarry.h): a record written and read back (the
 * cursor, rules by DLQ URL, each sink's notices oldest first with their
 * attempts), one its writer left half-written or another version wrote is
 * dropped, the bounds (the newest notices of a sink are kept, the oldest
 * dropped), the pages it used freed once read; and the alert sender's half
 * (duty/alert_sink.c): what it leaves at its stop, the drop said in the
 * log, and what the next sender adopts (attempts counted on, tried at once,
 * dropped for a sink no longer configured). Delivery itself is
 * test_alerts.py's; here the webhook is a closed port.
 */
#include "alert.h"
#include "check.h"
#include "resident.h"
#include "clock.h"
#include "config.h"
#include "dlqcarry.h"
#include "log.h"
#include "shm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void
notice_of(struct alert_notice *n, int i)
{
    char queue[32];
    snprintf(queue, sizeof(queue), "q-%d", i);
    alert_notice_init(n, queue, "http://sqs.local/000000000000/q-dlq", "host1", 1000 + i);
    n->kind = ALERT_REPEAT;
    n->depth = i;
}

/* The queue name of the k-th notice of sink. */
static const char *
queue_at(const struct dlqcarry *r, int sink, size_t k)
{
    static struct alert_notice n;
    const struct dlqcarry_notice *c = dlqcarry_notice_at(r, sink, k);
    if (c == NULL) {
        return "(none)";
    }
    memcpy(&n, c->notice, sizeof(n));
    return n.queue;
}

static void
test_written_and_read_back(struct dlqcarry *r)
{
    CHECK_INT(dlqcarry_open(r, sizeof(struct alert_notice)), DLQCARRY_NONE); /* a first start */
    dlqcarry_begin(r, 42, sizeof(struct alert_notice));
    CHECK_INT(dlqcarry_put_rule(r, "http://sqs.local/000000000000/a-dlq", 3, 1700), 0);
    CHECK_INT(dlqcarry_put_rule(r, "http://sqs.local/000000000000/b-dlq", -1, 0), 0);
    /* Two queues with one DLQ: the rule put last is the one read, as before. */
    CHECK_INT(dlqcarry_put_rule(r, "http://sqs.local/000000000000/a-dlq", 5, 1800), 0);
    struct alert_notice n;
    for (int i = 0; i < 3; i++) {
        notice_of(&n, i);
        CHECK_INT(dlqcarry_put_notice(r, 0, i + 1, 5000 + i, &n), 0);
    }
    notice_of(&n, 7);
    CHECK_INT(dlqcarry_put_notice(r, 1, 2, 6000, &n), 0);
    CHECK_INT(dlqcarry_put_notice(r, DLQCARRY_SINKS, 0, 0, &n), -1);
    dlqcarry_end(r);

    CHECK_INT(dlqcarry_open(r, sizeof(struct alert_notice)), DLQCARRY_OK);
    CHECK_INT(dlqcarry_cursor(r), 42);
    int64_t depth = 0, last = 0;
    CHECK_INT(dlqcarry_get_rule(r, "http://sqs.local/000000000000/a-dlq", &depth, &last), 1);
    CHECK_INT(depth, 5);
    CHECK_INT(last, 1800);
    CHECK_INT(dlqcarry_get_rule(r, "http://sqs.local/000000000000/b-dlq", &depth, &last), 1);
    CHECK_INT(depth, -1);
    CHECK_INT(dlqcarry_get_rule(r, "http://sqs.local/000000000000/c-dlq", &depth, &last), 0);
    CHECK_INT(dlqcarry_notices(r, 0), 3);
    CHECK_INT(dlqcarry_notices(r, 1), 1);
    CHECK_INT(dlqcarry_notices(r, 2), 0);
    CHECK_STR(queue_at(r, 0, 0), "q-0");
    CHECK_STR(queue_at(r, 0, 2), "q-2");
    CHECK_STR(queue_at(r, 1, 0), "q-7");
    CHECK(dlqcarry_notice_at(r, 0, 3) == NULL);
    CHECK_INT(dlqcarry_notice_at(r, 0, 1)->attempts, 2);
    CHECK_INT(dlqcarry_notice_at(r, 0, 1)->due_ms, 5001);
    struct alert_notice back;
    memcpy(&back, dlqcarry_notice_at(r, 1, 0)->notice, sizeof(back));
    notice_of(&n, 7);
    CHECK(memcmp(&back, &n, sizeof(n)) == 0); /* every byte of the notice */

    dlqcarry_clear(r); /* read once */
    CHECK_INT(dlqcarry_open(r, sizeof(struct alert_notice)), DLQCARRY_NONE);
}

/* URLs longer than the record keeps are told apart by their hash and length. */
static void
test_long_urls(struct dlqcarry *r)
{
    char a[600], b[600];
    memset(a, 'x', sizeof(a) - 1);
    a[sizeof(a) - 1] = '\0';
    memcpy(b, a, sizeof(b));
    b[500] = 'y';
    dlqcarry_begin(r, 0, sizeof(struct alert_notice));
    CHECK_INT(dlqcarry_put_rule(r, a, 1, 10), 0);
    CHECK_INT(dlqcarry_put_rule(r, b, 2, 20), 0);
    dlqcarry_end(r);
    CHECK_INT(dlqcarry_open(r, sizeof(struct alert_notice)), DLQCARRY_OK);
    int64_t depth = 0, last = 0;
    CHECK_INT(dlqcarry_get_rule(r, a, &depth, &last), 1);
    CHECK_INT(depth, 1);
    CHECK_INT(dlqcarry_get_rule(r, b, &depth, &last), 1);
    CHECK_INT(depth, 2);
    a[400] = '\0'; /* a prefix of both */
    CHECK_INT(dlqcarry_get_rule(r, a, &depth, &last), 0);
    dlqcarry_clear(r);
}

/* A writer that died between its first and last store, a record of another
 * version or notice size, or counts out of range: dropped, and cleared. */
static void
test_torn_and_foreign(struct dlqcarry *r)
{
    struct alert_notice n;
    notice_of(&n, 1);
    dlqcarry_begin(r, 9, sizeof(n));
    CHECK_INT(dlqcarry_put_rule(r, "http://sqs.local/000000000000/a-dlq", 3, 1700), 0);
    CHECK_INT(dlqcarry_put_notice(r, 0, 1, 0, &n), 0);
    /* no dlqcarry_end: the writer is gone */
    CHECK_INT(dlqcarry_open(r, sizeof(n)), DLQCARRY_TORN);
    CHECK_INT(dlqcarry_open(r, sizeof(n)), DLQCARRY_NONE); /* dropped once, said once */

    dlqcarry_begin(r, 9, sizeof(n));
    dlqcarry_end(r);
    r->version = DLQCARRY_VERSION + 1;
    CHECK_INT(dlqcarry_open(r, sizeof(n)), DLQCARRY_OTHER_KIND);
    CHECK_INT(dlqcarry_open(r, sizeof(n)), DLQCARRY_NONE);

    dlqcarry_begin(r, 9, sizeof(n) - 8);
    dlqcarry_end(r);
    CHECK_INT(dlqcarry_open(r, sizeof(n)), DLQCARRY_OTHER_KIND);

    dlqcarry_begin(r, 9, sizeof(n));
    dlqcarry_end(r);
    r->sinks[1].count = DLQCARRY_PER_SINK + 1;
    CHECK_INT(dlqcarry_open(r, sizeof(n)), DLQCARRY_OTHER_KIND);
    dlqcarry_begin(r, 9, sizeof(n));
    dlqcarry_end(r);
    r->nrules = DLQCARRY_RULES + 1;
    CHECK_INT(dlqcarry_open(r, sizeof(n)), DLQCARRY_OTHER_KIND);
}

/* More notices than a sink keeps: the newest are, the oldest dropped, one
 * report each; more rules than queues can be: refused. */
static void
test_bounds(struct dlqcarry *r)
{
    struct alert_notice n;
    dlqcarry_begin(r, 0, sizeof(n));
    int dropped = 0;
    for (int i = 0; i < DLQCARRY_PER_SINK + 5; i++) {
        notice_of(&n, i);
        int rc = dlqcarry_put_notice(r, 1, 0, 0, &n);
        CHECK(rc == 0 || rc == 1);
        dropped += rc;
    }
    CHECK_INT(dropped, 5);
    for (int i = 0; i < DLQCARRY_RULES; i++) {
        CHECK_INT(dlqcarry_put_rule(r, "http://sqs.local/000000000000/x-dlq", 0, 0), 0);
    }
    CHECK_INT(dlqcarry_put_rule(r, "http://sqs.local/000000000000/y-dlq", 0, 0), -1);
    dlqcarry_end(r);
    CHECK_INT(dlqcarry_open(r, sizeof(n)), DLQCARRY_OK);
    CHECK_INT(dlqcarry_notices(r, 1), DLQCARRY_PER_SINK);
    CHECK_STR(queue_at(r, 1, 0), "q-5");
    char last[32];
    snprintf(last, sizeof(last), "q-%d", DLQCARRY_PER_SINK + 4);
    CHECK_STR(queue_at(r, 1, DLQCARRY_PER_SINK - 1), last);
    dlqcarry_clear(r);
}

/* In the region: untouched, it costs nothing; written, the pages of what
 * was written; read and cleared, its pages are given back. */
static void
test_pages_in_the_region(struct dlqcarry *r)
{
    CHECK(resident_pages(r, sizeof(*r)) <= 1); /* the first, shared with what precedes */
    struct alert_notice n;
    notice_of(&n, 0);
    dlqcarry_begin(r, 1, sizeof(n));
    for (int i = 0; i < 10; i++) {
        CHECK_INT(dlqcarry_put_rule(r, "http://sqs.local/000000000000/a-dlq", 0, 0), 0);
    }
    for (int i = 0; i < 10; i++) {
        CHECK_INT(dlqcarry_put_notice(r, 0, 0, 0, &n), 0);
    }
    dlqcarry_end(r);
    long written = resident_pages(r, sizeof(*r));
    /* the header and rules, 10 notices of 5.5 KB, the other sink's head */
    CHECK(written >= 14 && written <= 22);
    CHECK_INT(dlqcarry_open(r, sizeof(n)), DLQCARRY_OK);
    dlqcarry_clear(r);
    CHECK(resident_pages(r, sizeof(*r)) <= 1); /* the first, shared with what precedes */
    CHECK_INT(dlqcarry_open(r, sizeof(n)), DLQCARRY_NONE);
}

/* The whole log so far. */
static char *
read_log(const char *path)
{
    static char text[65536];
    FILE *f = fopen(path, "r");
    size_t n = f != NULL ? fread(text, 1, sizeof(text) - 1, f) : 0;
    text[n] = '\0';
    if (f != NULL) {
        fclose(f);
    }
    return text;
}

static int
log_says(const char *path, const char *what, int timeout_ms)
{
    int64_t end = clock_mono_ms() + timeout_ms;
    do {
        if (strstr(read_log(path), what) != NULL) {
            return 1;
        }
        usleep(20000);
    } while (clock_mono_ms() < end);
    return 0;
}

/* The sender's half: a webhook that refuses connections keeps everything
 * waiting; its stop leaves the newest DLQCARRY_PER_SINK and says what it
 * dropped; the next sender tries the oldest kept at once with its attempts
 * counted on, and one without a webhook drops them, saying why. */
static void
test_sender(struct dlqcarry *r, const char *logpath)
{
    struct config c;
    memset(&c, 0, sizeof(c));
    c.alerts.webhook.url = "http://127.0.0.1:1/hook";
    c.alerts.webhook.timeout = 2;
    struct alert_sender *s = alert_sender_start(&c, NULL);
    CHECK(s != NULL);
    struct alert_notice n;
    for (int i = 0; i < DLQCARRY_PER_SINK + 3; i++) {
        notice_of(&n, i);
        alert_sender_post(s, &n);
    }
    CHECK(log_says(logpath,
                   "alert: repeat about queue q-0: webhook to http://127.0.0.1:1 "
                   "failed",
                   5000));
    dlqcarry_begin(r, 0, sizeof(n));
    alert_sender_stop(s, r);
    dlqcarry_end(r);
    CHECK(strstr(read_log(logpath), "alert: 3 undelivered notices dropped: the next monitor "
                                    "takes the newest 32 of each sink") != NULL);
    CHECK_INT(dlqcarry_open(r, sizeof(n)), DLQCARRY_OK);
    CHECK_INT(dlqcarry_notices(r, 0), DLQCARRY_PER_SINK);
    CHECK_STR(queue_at(r, 0, 0), "q-3");
    CHECK_INT(dlqcarry_notice_at(r, 0, 0)->attempts, 0); /* q-0 was the one tried */

    /* Far in the future, and with 4 tries made: tried at once, as the 5th. */
    struct dlqcarry_notice *first = (struct dlqcarry_notice *) dlqcarry_notice_at(r, 0, 0);
    first->attempts = 4;
    first->due_ms = clock_mono_ms() + 3600 * 1000;
    s = alert_sender_start(&c, r);
    CHECK(log_says(logpath, "about queue q-3: webhook to http://127.0.0.1:1 failed", 5000));
    CHECK(strstr(read_log(logpath), "(attempt 5 of 12; retrying in 16s)") != NULL);
    alert_sender_stop(s, NULL);

    /* Only a mail sink now: the webhook's notices have nowhere to go. */
    struct config m;
    memset(&m, 0, sizeof(m));
    char *to[] = {"oncall@example.com"};
    m.alerts.smtp.url = "smtp://127.0.0.1:1";
    m.alerts.smtp.from = "twice@example.com";
    m.alerts.smtp.to = to;
    m.alerts.smtp.nto = 1;
    s = alert_sender_start(&m, r);
    alert_sender_stop(s, NULL);
    CHECK(strstr(read_log(logpath), "alert: 32 undelivered notices dropped: their sink is no "
                                    "longer configured") != NULL);
    dlqcarry_clear(r);
}

int
main(void)
{
    struct dlqcarry *heap = calloc(1, sizeof(*heap));
    CHECK(heap != NULL);
    if (heap == NULL) {
        return check_done("test-dlqcarry");
    }
    test_written_and_read_back(heap);
    test_long_urls(heap);
    test_torn_and_foreign(heap);
    test_bounds(heap);

    CHECK(shm_dlq_carry() == NULL); /* no region yet */
    CHECK(shm_create() >= 0);
    struct dlqcarry *shared = shm_dlq_carry();
    CHECK(shared != NULL);
    if (shared != NULL) {
        test_pages_in_the_region(shared);
        test_written_and_read_back(shared);
        test_torn_and_foreign(shared);
    }

    char logpath[] = "/tmp/test-dlqcarry-XXXXXX";
    int fd = mkstemp(logpath);
    CHECK(fd >= 0);
    if (fd >= 0) {
        close(fd);
        CHECK_INT(log_open(logpath), 0);
        test_sender(heap, logpath);
        log_open(NULL);
        unlink(logpath);
    }
    free(heap);
    return check_done("test-dlqcarry");
}
