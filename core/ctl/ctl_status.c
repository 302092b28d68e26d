/*
 * ctl_status.c - `twicectl status`: for each configured queue the messages
 * visible, in flight and delayed, and the depth of its DLQ, from
 * GetQueueAttributes (approximate numbers, as SQS gives them). Not the
 * daemon's health: that is the metrics listener's /healthz.
 */
#include "buf.h"
#include "config.h"
#include "ctl.h"
#include "idem.h"
#include "pause.h"
#include "sqs.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char status_help[] =
    "usage: twicectl status [QUEUE...] [--json]\n"
    "\n"
    "For each configured queue (or the ones named): messages visible, in flight\n"
    "(received, not yet deleted), delayed, and in its dead-letter queue. SQS's\n"
    "numbers are approximate. PAUSED says whether hosts receive from it: - (they\n"
    "do), the reason of a `twicectl pause` and its end, or breaker (its circuit\n"
    "breaker is open, or probing), read from the idempotency database (? when it\n"
    "cannot be read). Exit code 1 when a queue could not be read (the\n"
    "others are still shown). Each call has --timeout SECONDS (default 10); once\n"
    "the endpoint has not answered in time, the other queues are not asked.\n";

struct counts {
    long visible, in_flight, delayed, dlq; /* -1: unknown */
};

/* The calls of one run. Once the endpoint has not answered within the
 * timeout, the other calls are not made: they would wait as long for the
 * same endpoint. */
struct asker {
    struct sqs_client *sqs;
    int gave_up;
    size_t skipped;
};

/* The three counts of url; 0, or -1 after printing why. */
static int
read_counts(struct asker *a, const char *name, const char *what, const char *url, long out[3])
{
    struct sqs_error err;
    if (a->gave_up) {
        a->skipped++;
        return -1;
    }
    if (sqs_queue_counts(a->sqs, url, out, &err) != 0) {
        char label[256];
        snprintf(label, sizeof(label), "%s%s", name, what);
        ctl_sqs_fail(label, "GetQueueAttributes", &err);
        a->gave_up = err.transport && strcmp(err.code, "Timeout") == 0;
        return -1;
    }
    return 0;
}

/* 0 when both the queue and its DLQ were read. */
static int
queue_counts(struct asker *a, const struct config_queue *q, struct counts *c)
{
    long main[3] = {-1, -1, -1}, dlq[3] = {-1, -1, -1};
    int rc = read_counts(a, q->name, "", q->url, main);
    rc |= read_counts(a, q->name, " (dead-letter queue)", q->dlq_url, dlq);
    c->visible = main[0];
    c->in_flight = main[1];
    c->delayed = main[2];
    c->dlq = dlq[0] < 0 ? -1 : dlq[0] + (dlq[1] > 0 ? dlq[1] : 0) + (dlq[2] > 0 ? dlq[2] : 0);
    return rc;
}

static void
cell(char *out, size_t cap, long v)
{
    if (v < 0) {
        snprintf(out, cap, "?");
    } else {
        snprintf(out, cap, "%ld", v);
    }
}

/* The pause table, or NULL (*failed set) when it cannot be read. */
static struct pause_row *
read_pauses(struct ctl *c, size_t *n, int *failed)
{
    char err[512];
    struct pause_row *rows = NULL;
    struct idem_store *s = ctl_store(c);
    *n = 0;
    *failed = s == NULL || idem_pause_list(s, &rows, n, err, sizeof(err)) != 0;
    if (s != NULL && *failed) {
        ctl_fail("pauses: %s", err);
    }
    return rows;
}

/* q's pause, escaped for a terminal, into b (reset first). */
static void
pause_cell(struct buf *b, const struct pause_row *rows, size_t n, int failed, const char *q)
{
    char text[PAUSE_REASON_MAX + 64];
    const struct pause_row *r = NULL;
    for (size_t i = 0; i < n && r == NULL; i++) {
        r = strcmp(rows[i].queue, q) == 0 ? &rows[i] : NULL;
    }
    ctl_pause_describe(r, text, sizeof(text));
    buf_reset(b);
    if (failed) {
        buf_puts(b, "?");
    } else {
        ctl_escape(b, text, strlen(text), 60);
    }
}

/* "paused" of --json: null when not paused, else {reason, breaker, until}. */
static json_t *
pause_json(const struct pause_row *rows, size_t n, int failed, const char *q)
{
    char text[PAUSE_REASON_MAX + 64];
    for (size_t i = 0; !failed && i < n; i++) {
        const struct pause_row *r = &rows[i];
        if (strcmp(r->queue, q) != 0) {
            continue;
        }
        ctl_pause_describe(r, text, sizeof(text));
        if (strcmp(text, "-") == 0) {
            break;
        }
        char until[40];
        ctl_time(r->until, until, sizeof(until));
        return json_pack("{s:s,s:b,s:o}", "reason", r->reason, "breaker", r->breaker, "until",
                         r->until > 0 ? json_string(until) : json_null());
    }
    return json_null();
}

static json_t *
jnum(long v)
{
    return v >= 0 ? json_integer(v) : json_null();
}

/* The queues to show: those named, or all. NULL after printing why. */
static const struct config_queue **
pick(struct ctl *c, int argc, char **argv, size_t *n)
{
    const struct config *cfg = ctl_config(c);
    if (cfg == NULL) {
        return NULL;
    }
    size_t want = argc > optind ? (size_t) (argc - optind) : cfg->nqueues;
    const struct config_queue **qs = calloc(want ? want : 1, sizeof(*qs));
    if (qs == NULL) {
        ctl_fail("out of memory");
        return NULL;
    }
    for (*n = 0; *n < want; (*n)++) {
        qs[*n] = argc > optind ? ctl_queue(c, argv[optind + (int) *n], 0) : &cfg->queues[*n];
        if (qs[*n] == NULL) {
            free(qs);
            return NULL;
        }
    }
    return qs;
}

int
ctl_status(struct ctl *c, int argc, char **argv)
{
    static const struct option longopts[] = {CTL_LONG_OPTIONS};
    int opt, rc;
    while ((opt = getopt_long(argc, argv, ":c:h", longopts, NULL)) != -1) {
        if ((rc = ctl_option(c, "status", status_help, opt, argc, argv)) >= 0) {
            return rc;
        }
    }
    size_t n = 0;
    const struct config_queue **qs = pick(c, argc, argv, &n);
    struct sqs_client *sqs = qs != NULL ? ctl_sqs(c) : NULL;
    if (sqs == NULL) {
        free(qs);
        return CTL_FAIL;
    }
    static const char *const head[] = {"QUEUE",   "VISIBLE", "IN FLIGHT",
                                       "DELAYED", "DLQ",     "PAUSED"};
    struct ctl_table *t = c->json ? NULL : ctl_table_new(6, head);
    size_t npauses = 0;
    int pauses_failed = 0;
    struct pause_row *pauses = read_pauses(c, &npauses, &pauses_failed);
    struct buf paused = BUF_INIT;
    json_t *arr = c->json ? json_array() : NULL;
    rc = CTL_OK;
    struct asker a = {sqs, 0, 0};
    for (size_t i = 0; i < n; i++) {
        struct counts k;
        if (queue_counts(&a, qs[i], &k) != 0) {
            rc = CTL_FAIL;
        }
        pause_cell(&paused, pauses, npauses, pauses_failed, qs[i]->name);
        if (arr != NULL) {
            json_array_append_new(
                arr, json_pack("{s:s,s:s,s:o,s:o,s:o,s:s,s:o,s:o}", "queue", qs[i]->name, "url",
                               qs[i]->url, "visible", jnum(k.visible), "in_flight",
                               jnum(k.in_flight), "delayed", jnum(k.delayed), "dlq_url",
                               qs[i]->dlq_url, "dlq", jnum(k.dlq), "paused",
                               pause_json(pauses, npauses, pauses_failed, qs[i]->name)));
            continue;
        }
        char v[24], f[24], d[24], l[24];
        cell(v, sizeof(v), k.visible);
        cell(f, sizeof(f), k.in_flight);
        cell(d, sizeof(d), k.delayed);
        cell(l, sizeof(l), k.dlq);
        const char *row[] = {qs[i]->name, v, f, d, l, buf_str(&paused)};
        ctl_table_add(t, row);
    }
    free(qs);
    free(pauses);
    buf_free(&paused);
    if (pauses_failed) {
        rc = CTL_FAIL;
    }
    if (a.skipped > 0) {
        ctl_fail("%zu more SQS call%s not made after the timeout (shown as ?)", a.skipped,
                 a.skipped == 1 ? " was" : "s were");
    }
    int prc = c->json ? ctl_print_json(arr) : ctl_table_print(t);
    return rc != CTL_OK ? rc : prc;
}
