/*
 * ctl_dlq.c - `twicectl dlq list|redrive|delete|purge`: a queue's dead
 * letters.
 *
 * SQS has no way to look at a message without receiving it. `list`
 * receives each dead letter with a short visibility timeout (so paging
 * does not see it twice) and makes it visible again at once when done:
 * nothing is deleted or changed, but each listing counts as a receive in
 * the letters' ApproximateReceiveCount. `redrive` sends a letter back to
 * its source queue and deletes it from the DLQ only once that send was
 * accepted; `delete` deletes chosen letters. Not the building of dead
 * letters: dlq.c.
 */
#include "buf.h"
#include "config.h"
#include "ctl.h"
#include "plural.h"
#include "dlq.h"
#include "sendcheck.h"
#include "sqs.h"
#include "sqs_limits.h"
#include "sqs_parse.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LIST_VISIBILITY    30 /* seconds a listed letter is hidden while paging */
#define REDRIVE_VISIBILITY 60 /* seconds a letter is hidden while being redriven */
#define LIST_DEFAULT_MAX   100
#define LIST_MAX           10000
#define KEY_CHARS          40
#define BODY_CHARS         50

static const char dlq_help[] =
    "usage: twicectl dlq list QUEUE [--max N] [--json]\n"
    "       twicectl dlq redrive QUEUE (--id MESSAGE_ID... | --all) [--json]\n"
    "       twicectl dlq delete QUEUE --id MESSAGE_ID... [--json]\n"
    "       twicectl dlq purge QUEUE --yes\n"
    "\n"
    "QUEUE is the source queue's configured name or url, or its DLQ's url.\n"
    "'twicectl dlq COMMAND --help' tells more.\n";

static const char list_help[] =
    "usage: twicectl dlq list QUEUE [--max N] [--json]\n"
    "\n"
    "Show the dead letters of QUEUE: the DLQ copy's message id and the original\n"
    "message's (twice-source-message-id, the id twiced's log lines name), reason,\n"
    "plugin, attempts, key and the first bytes of the body (escaped). --json prints\n"
    "both ids (message_id, source_message_id), every attribute and the whole body.\n"
    "At most N letters (default 100).\n"
    "\n"
    "SQS cannot show a message without receiving it: each letter is hidden for up\n"
    "to 30 seconds while the list is read and made visible again at the end. Nothing\n"
    "is changed or deleted, but every listing counts as a receive of each letter.\n"
    "On a FIFO DLQ, SQS hands out a group's next messages only once the earlier\n"
    "ones are visible again: at most 10 letters per message group are shown.\n";

static const char redrive_help[] =
    "usage: twicectl dlq redrive QUEUE (--id MESSAGE_ID... | --all) [--json]\n"
    "\n"
    "Send dead letters back to their source queue (attribute twice-source-queue;\n"
    "only a configured queue's url is accepted), with their body and user\n"
    "attributes but without twice's twice-* attributes (twice-outbox-id, a\n"
    "follow-up message's own, stays); FIFO letters keep their\n"
    "group and get a new deduplication id. Each letter is deleted from the DLQ\n"
    "only after its send was accepted. --id takes the message id `dlq list`\n"
    "shows (or the original message's id) and may be repeated. Prints how many\n"
    "were redriven, failed and skipped (skipped: no usable source queue).\n"
    "Exit code 1 when any failed or an --id was not found.\n"
    "\n"
    "--all takes the letters that were in the DLQ when the command started, each\n"
    "once: a letter whose SentTimestamp is later than the start (by this host's\n"
    "clock), a letter this run redrove and twiced dead-lettered again, and letters\n"
    "past the DLQ's depth at the start (ApproximateNumberOfMessages, NotVisible\n"
    "and Delayed) are left for the next run, which the command says. SentTimestamp\n"
    "is SQS's clock: with this host's clock behind it, the letters of that gap\n"
    "wait for the next run; ahead of it, the other two rules still end the run.\n";

static const char delete_help[] =
    "usage: twicectl dlq delete QUEUE --id MESSAGE_ID... [--json]\n"
    "\n"
    "Delete the dead letters with these ids (the message id `dlq list` shows, or\n"
    "the original message's) from QUEUE's dead-letter queue, leaving the others.\n"
    "A payload the letter's body points to in S3 is not deleted. Prints how many\n"
    "were deleted; exit code 1 when one failed or an --id was not found.\n";

static const char purge_help[] = "usage: twicectl dlq purge QUEUE --yes\n"
                                 "\n"
                                 "Delete every message in QUEUE's dead-letter queue "
                                 "(PurgeQueue). There is no undo.\n";

/* ---- lists of copied strings: receipt handles to make visible again,
 * message ids already met ---- */

struct held {
    char **strs;
    size_t n, cap;
};

/* Append a copy of s; 0, or -1 on ENOMEM (a receipt handle that is not
 * held reappears when its visibility timeout ends). */
static int
hold(struct held *h, const char *s)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 32;
        char **grown = realloc(h->strs, cap * sizeof(*grown));
        if (grown == NULL) {
            return -1;
        }
        h->strs = grown;
        h->cap = cap;
    }
    if ((h->strs[h->n] = strdup(s)) == NULL) {
        return -1;
    }
    h->n++;
    return 0;
}

static int
held_has(const struct held *h, const char *s)
{
    for (size_t i = 0; i < h->n; i++) {
        if (strcmp(h->strs[i], s) == 0) {
            return 1;
        }
    }
    return 0;
}

static void
held_free(struct held *h)
{
    for (size_t i = 0; i < h->n; i++) {
        free(h->strs[i]);
    }
    free(h->strs);
    memset(h, 0, sizeof(*h));
}

/* Visibility 0 for every held message, a batch per call; frees h. */
static void
release(struct sqs_client *sqs, const char *url, struct held *h, int visibility)
{
    size_t failed = 0;
    for (size_t i = 0; i < h->n; i += SQS_BATCH_MAX) {
        struct sqs_batch_entry e[SQS_BATCH_MAX];
        struct sqs_batch_result r[SQS_BATCH_MAX];
        struct sqs_error err;
        size_t n = h->n - i < SQS_BATCH_MAX ? h->n - i : SQS_BATCH_MAX;
        for (size_t j = 0; j < n; j++) {
            e[j] = (struct sqs_batch_entry){sqs_batch_id(j), h->strs[i + j], 0};
        }
        if (sqs_change_visibility_batch(sqs, url, e, n, r, &err) != 0) {
            failed += n;
            continue;
        }
        for (size_t j = 0; j < n; j++) {
            failed += !r[j].ok;
        }
    }
    if (failed > 0) {
        fprintf(stderr,
                "twicectl: %zu dead letters could not be made visible again at once; "
                "they will be within %d seconds\n",
                failed, visibility);
    }
    held_free(h);
}

static int
seen(const struct sqs_message *all, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(all[i].message_id, id) == 0) {
            return 1;
        }
    }
    return 0;
}

/* A letter's attribute as text, NULL when absent or binary. */
static const char *
attr(const struct sqs_message *m, const char *name)
{
    const struct sqs_attr *a = sqs_attr_find(m->attrs, m->nattrs, name);
    return a != NULL ? a->string_value : NULL;
}

static int
recv_batch(struct sqs_client *sqs, const char *url, int max, int visibility,
           struct sqs_message **msgs, size_t *n, struct sqs_error *err)
{
    struct sqs_receive_opts o = {max < SQS_RECEIVE_MAX ? max : SQS_RECEIVE_MAX, 1, visibility,
                                 NULL};
    return sqs_receive(sqs, url, &o, msgs, n, err);
}

/* ---- list ---- */

/* Receive up to max letters (moved into *all, owned by the caller). */
static int
collect(struct sqs_client *sqs, const struct config_queue *q, long max, struct sqs_message **all,
        size_t *n)
{
    struct held h = {0};
    struct sqs_error err;
    int rc = CTL_OK;
    *all = calloc((size_t) max, sizeof(**all));
    *n = 0;
    if (*all == NULL) {
        return ctl_fail("out of memory");
    }
    while (*n < (size_t) max) {
        struct sqs_message *batch = NULL;
        size_t got = 0;
        if (recv_batch(sqs, q->dlq_url, (int) ((size_t) max - *n), LIST_VISIBILITY, &batch, &got,
                       &err) != 0) {
            rc = ctl_sqs_fail(q->name, "dead-letter queue: ReceiveMessage", &err);
            break;
        }
        size_t fresh = 0;
        for (size_t i = 0; i < got; i++) {
            hold(&h, batch[i].receipt_handle);
            if (*n < (size_t) max && !seen(*all, *n, batch[i].message_id)) {
                (*all)[(*n)++] = batch[i];
                memset(&batch[i], 0, sizeof(batch[i]));
                fresh++;
            }
        }
        sqs_messages_free(batch, got);
        if (fresh == 0) {
            break;
        }
    }
    release(sqs, q->dlq_url, &h, LIST_VISIBILITY);
    return rc;
}

static int
by_sent(const void *a, const void *b)
{
    const struct sqs_message *x = a, *y = b;
    return (x->sent_timestamp_ms > y->sent_timestamp_ms) -
           (x->sent_timestamp_ms < y->sent_timestamp_ms);
}

/* One row per letter: the DLQ copy's id, then the original's (the id the
 * logs name), then twice's attributes and the body. */
static int
print_table(const struct sqs_message *all, size_t n)
{
    enum { NCOLS = 7 };
    static const char *const head[NCOLS] = {
        "DLQ MESSAGE ID", "ORIGINAL MESSAGE ID", "REASON", "PLUGIN", "ATTEMPTS", "KEY", "BODY"};
    struct ctl_table *t = ctl_table_new(NCOLS, head);
    static const char *const attrs[] = {"twice-source-message-id", "twice-reason", "twice-plugin",
                                        "twice-attempts", "twice-key"};
    static const size_t widths[] = {0, 0, 0, 0, KEY_CHARS};
    for (size_t i = 0; i < n; i++) {
        const struct sqs_message *m = &all[i];
        /* Any producer can write to a DLQ: every cell is escaped. */
        struct buf cell[NCOLS];
        const char *row[NCOLS];
        for (size_t c = 0; c < NCOLS; c++) {
            cell[c] = (struct buf) BUF_INIT;
        }
        ctl_escape(&cell[0], m->message_id, strlen(m->message_id), 0);
        for (size_t a = 0; a < 5; a++) {
            const char *v = attr(m, attrs[a]);
            ctl_escape(&cell[a + 1], v != NULL ? v : "-", v != NULL ? strlen(v) : 1, widths[a]);
        }
        ctl_escape(&cell[6], m->body != NULL ? m->body : "", m->body_len, BODY_CHARS);
        for (size_t c = 0; c < NCOLS; c++) {
            row[c] = buf_str(&cell[c]);
        }
        ctl_table_add(t, row);
        for (size_t c = 0; c < NCOLS; c++) {
            buf_free(&cell[c]);
        }
    }
    return ctl_table_print(t);
}

/* A JSON string of SQS text (valid XML characters, so UTF-8). */
static json_t *
jtext(const char *s, size_t len)
{
    json_t *v = s != NULL ? json_stringn(s, len) : json_null();
    if (v == NULL && s != NULL) {
        char *clean = malloc(len + 1);
        if (clean != NULL) {
            dlq_sanitize(s, clean, len + 1);
            v = json_string(clean);
            free(clean);
        }
    }
    return v;
}

static json_t *
attrs_json(const struct sqs_message *m)
{
    json_t *o = json_object();
    for (size_t i = 0; o != NULL && i < m->nattrs; i++) {
        const struct sqs_attr *a = &m->attrs[i];
        json_t *v;
        if (a->string_value != NULL) {
            v = json_pack("{s:s,s:o}", "DataType", a->data_type, "StringValue",
                          jtext(a->string_value, strlen(a->string_value)));
        } else {
            struct buf b64 = BUF_INIT;
            sqs_base64_encode(a->binary, a->binary_len, &b64);
            v = json_pack("{s:s,s:s}", "DataType", a->data_type, "BinaryValue", buf_str(&b64));
            buf_free(&b64);
        }
        json_object_set_new(o, a->name, v);
    }
    return o;
}

static json_t *
nullable(const char *s)
{
    return s != NULL ? jtext(s, strlen(s)) : json_null();
}

static json_t *
letter_json(const struct sqs_message *m)
{
    const char *attempts = attr(m, "twice-attempts");
    return json_pack(
        "{s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:I,s:i,s:o,s:o}", "message_id", m->message_id,
        "source_message_id", nullable(attr(m, "twice-source-message-id")), "source_queue",
        nullable(attr(m, "twice-source-queue")), "reason", nullable(attr(m, "twice-reason")),
        "error", nullable(attr(m, "twice-error")), "plugin", nullable(attr(m, "twice-plugin")),
        "attempts", attempts != NULL ? json_integer(atol(attempts)) : json_null(), "key",
        nullable(attr(m, "twice-key")), "group_id", nullable(m->group_id), "sent_timestamp_ms",
        (json_int_t) m->sent_timestamp_ms, "receive_count", m->receive_count, "body",
        jtext(m->body, m->body_len), "attributes", attrs_json(m));
}

static int
dlq_list(struct ctl *c, int argc, char **argv)
{
    static const struct option longopts[] = {{"max", 1, NULL, 'm'}, CTL_LONG_OPTIONS};
    long max = LIST_DEFAULT_MAX;
    int opt, rc;
    while ((opt = getopt_long(argc, argv, ":c:h", longopts, NULL)) != -1) {
        if (opt == 'm') {
            if ((max = ctl_number("dlq list", "--max", optarg, LIST_MAX)) < 0) {
                return CTL_USAGE;
            }
        } else if ((rc = ctl_option(c, "dlq list", list_help, opt, argc, argv)) >= 0) {
            return rc;
        }
    }
    if (argc - optind != 1) {
        return ctl_usage_error("dlq list", "expected one QUEUE");
    }
    const struct config_queue *q = ctl_queue(c, argv[optind], 1);
    struct sqs_client *sqs = q != NULL ? ctl_sqs(c) : NULL;
    if (sqs == NULL) {
        return CTL_FAIL;
    }
    struct sqs_message *all = NULL;
    size_t n = 0;
    rc = collect(sqs, q, max, &all, &n);
    if (rc == CTL_OK) {
        qsort(all, n, sizeof(*all), by_sent);
        if (c->json) {
            json_t *arr = json_array();
            for (size_t i = 0; arr != NULL && i < n; i++) {
                json_array_append_new(arr, letter_json(&all[i]));
            }
            rc = ctl_print_json(arr);
        } else {
            rc = print_table(all, n);
        }
    }
    sqs_messages_free(all, n);
    return rc;
}

/* ---- redrive ---- */

static int
add(struct ctl_redrive *r, const struct sqs_attr *a, char *err, size_t errlen)
{
    if (r->nattrs == CTL_MAX_ATTRS) {
        snprintf(err, errlen, "more than %d attributes", CTL_MAX_ATTRS);
        return -1;
    }
    r->attrs[r->nattrs++] = *a;
    return 0;
}

/* The attributes twice-packed-attributes holds (see dlq.c). */
static int
unpack(struct ctl_redrive *r, const char *packed, char *err, size_t errlen)
{
    r->packed = json_loads(packed, 0, NULL);
    if (!json_is_object(r->packed)) {
        snprintf(err, errlen, "twice-packed-attributes is not a JSON object");
        return -1;
    }
    const char *name;
    json_t *v;
    json_object_foreach(r->packed, name, v)
    {
        const char *type = json_string_value(json_object_get(v, "DataType"));
        const char *str = json_string_value(json_object_get(v, "StringValue"));
        const char *b64 = json_string_value(json_object_get(v, "BinaryValue"));
        struct sqs_attr a = {(char *) name, (char *) type, (char *) str, NULL, 0};
        if (type == NULL || (str == NULL && b64 == NULL)) {
            snprintf(err, errlen,
                     "twice-packed-attributes: attribute '%s' has no DataType or "
                     "value",
                     name);
            return -1;
        }
        if (sendcheck_twice_attr(name)) {
            continue;
        }
        if (r->nattrs == CTL_MAX_ATTRS) {
            snprintf(err, errlen, "more than %d attributes", CTL_MAX_ATTRS);
            return -1;
        }
        if (str == NULL) {
            if (sqs_base64_decode(b64, strlen(b64), &a.binary, &a.binary_len) != 0) {
                snprintf(err, errlen, "twice-packed-attributes: attribute '%s' is not base64",
                         name);
                return -1;
            }
            r->binary[r->nattrs] = a.binary;
        }
        r->attrs[r->nattrs++] = a;
    }
    return 0;
}

int
ctl_redrive_build(const struct sqs_message *m, struct ctl_redrive *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof(*r));
    const char *packed = NULL;
    for (size_t i = 0; i < m->nattrs; i++) {
        const struct sqs_attr *a = &m->attrs[i];
        if (strcmp(a->name, "twice-packed-attributes") == 0) {
            packed = a->string_value;
        } else if (!sendcheck_twice_attr(a->name) && add(r, a, err, errlen) != 0) {
            return -1;
        }
    }
    if (packed != NULL && unpack(r, packed, err, errlen) != 0) {
        ctl_redrive_free(r);
        return -1;
    }
    snprintf(r->dedup, sizeof(r->dedup), "redrive-%s", m->message_id);
    return 0;
}

void
ctl_redrive_free(struct ctl_redrive *r)
{
    for (size_t i = 0; i < CTL_MAX_ATTRS; i++) {
        free(r->binary[i]);
    }
    json_decref(r->packed);
    memset(r, 0, sizeof(*r));
}

struct redrive {
    struct ctl *c;
    const struct config_queue *q; /* whose DLQ */
    struct sqs_client *sqs;
    char **ids; /* --id values (borrowed from argv); NULL with --all */
    int *found;
    size_t nids;
    long redriven, failed, skipped; /* redriven: deleted, for `delete` */
    struct held held;               /* letters left in the DLQ */
    int del;                        /* `delete`: delete the chosen letters */
    int64_t start_ms;               /* host's clock when the command started */
    long depth;                     /* --all: the DLQ's depth at the start; -1 unknown */
    long taken;                     /* --all: letters handled so far */
    long late, over;                /* --all: left as newer than the start, or past depth */
    struct held sent;               /* ids of the messages this run sent back */
};

static const struct config_queue *
source_queue(const struct config *cfg, const char *url)
{
    for (size_t i = 0; url != NULL && i < cfg->nqueues; i++) {
        if (strcmp(cfg->queues[i].url, url) == 0) {
            return &cfg->queues[i];
        }
    }
    return NULL;
}

static void
skip(struct redrive *rd, const struct sqs_message *m, const char *why)
{
    fprintf(stderr, "twicectl: dlq redrive: message %s skipped: %s\n", m->message_id, why);
    rd->skipped++;
    hold(&rd->held, m->receipt_handle);
}

/* Send one letter back, then delete it from the DLQ. */
static void
redrive_one(struct redrive *rd, const struct sqs_message *m)
{
    const char *url = attr(m, "twice-source-queue");
    const struct config_queue *to = source_queue(rd->c->cfg, url);
    char err[1024], id[128] = "";
    struct ctl_redrive r;
    struct sqs_error se;
    if (url == NULL) {
        return skip(rd, m, "no twice-source-queue attribute (it was not dead-lettered by twice)");
    }
    if (to == NULL) {
        return skip(rd, m, "its twice-source-queue is not the url of a configured queue");
    }
    if (to->fifo && m->group_id == NULL) {
        return skip(rd, m, "the source queue is FIFO but the letter has no message group");
    }
    if (ctl_redrive_build(m, &r, err, sizeof(err)) != 0) {
        return skip(rd, m, err);
    }
    struct sqs_send_entry e = {NULL,
                               m->body,
                               m->body_len,
                               r.attrs,
                               r.nattrs,
                               -1,
                               m->group_id, /* FIFO, or a fair queue's tenant */
                               to->fifo ? r.dedup : NULL};
    int sent = sqs_send(rd->sqs, to->url, &e, id, sizeof(id), &se);
    ctl_redrive_free(&r);
    if (sent != 0) {
        sqs_error_describe(&se, "SendMessage", err, sizeof(err));
        fprintf(stderr, "twicectl: dlq redrive: message %s: queue %s: %s\n", m->message_id,
                to->name, err);
        rd->failed++;
        hold(&rd->held, m->receipt_handle);
        return;
    }
    if (sqs_delete(rd->sqs, rd->q->dlq_url, m->receipt_handle, &se) != 0) {
        sqs_error_describe(&se, "DeleteMessage", err, sizeof(err));
        fprintf(stderr,
                "twicectl: dlq redrive: message %s was sent to queue %s as %s but "
                "stays in the DLQ: %s\n",
                m->message_id, to->name, id, err);
        rd->failed++;
        return;
    }
    rd->redriven++;
    hold(&rd->sent, id); /* ENOMEM: the time and depth rules still hold */
    if (!rd->c->json) {
        printf("redriven %s to queue %s as %s\n", m->message_id, to->name, id);
    }
}

/* Whether m is selected; marks the --id it matches. */
static int
selected(struct redrive *rd, const struct sqs_message *m)
{
    if (rd->ids == NULL) {
        return 1;
    }
    const char *source = attr(m, "twice-source-message-id");
    int hit = 0;
    for (size_t i = 0; i < rd->nids; i++) {
        if (strcmp(rd->ids[i], m->message_id) == 0 ||
            (source != NULL && strcmp(rd->ids[i], source) == 0)) {
            rd->found[i] = hit = 1;
        }
    }
    return hit;
}

static int
all_found(const struct redrive *rd)
{
    for (size_t i = 0; rd->ids != NULL && i < rd->nids; i++) {
        if (!rd->found[i]) {
            return 0;
        }
    }
    return rd->ids != NULL;
}

/* `delete`: one chosen letter goes. */
static void
delete_one(struct redrive *rd, const struct sqs_message *m)
{
    struct sqs_error se;
    char err[1024];
    if (sqs_delete(rd->sqs, rd->q->dlq_url, m->receipt_handle, &se) != 0) {
        sqs_error_describe(&se, "DeleteMessage", err, sizeof(err));
        fprintf(stderr, "twicectl: dlq delete: message %s: %s\n", m->message_id, err);
        rd->failed++;
        hold(&rd->held, m->receipt_handle);
        return;
    }
    rd->redriven++;
    if (!rd->c->json) {
        printf("deleted %s from the dead-letter queue of %s\n", m->message_id, rd->q->name);
    }
}

/* Milliseconds since the epoch on this host's clock, as SentTimestamp. */
static int64_t
wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Whether m reached the DLQ after the command started: sent later than the
 * start by this host's clock, or a letter whose original is a message this
 * run sent back (twiced dead-lettered it again). Such a letter is left, so a
 * letter that fails again at once cannot keep the run going for ever.
 */
static int
late(const struct redrive *rd, const struct sqs_message *m)
{
    const char *source = attr(m, "twice-source-message-id");
    return m->sent_timestamp_ms > rd->start_ms || (source != NULL && held_has(&rd->sent, source));
}

/*
 * The DLQ's depth now (visible, in flight and delayed), which bounds what
 * --all takes even when the host's clock is ahead of SQS's; -1 when SQS
 * does not say (then the other rules bound the run).
 */
static long
dlq_depth(struct redrive *rd)
{
    long counts[3];
    struct sqs_error err;
    if (sqs_queue_counts(rd->sqs, rd->q->dlq_url, counts, &err) != 0 || counts[0] < 0 ||
        counts[1] < 0) {
        return -1;
    }
    return counts[0] + counts[1] + (counts[2] > 0 ? counts[2] : 0);
}

/* With --all, whether m, met for the first time, is taken: not late and
 * not past the depth at the start. Counts why a letter is left. --id takes
 * every letter it names. */
static int
take(struct redrive *rd, const struct sqs_message *m)
{
    if (rd->ids != NULL) {
        return 1;
    }
    if (late(rd, m)) {
        rd->late++;
        return 0;
    }
    if (rd->depth >= 0 && rd->taken >= rd->depth) {
        rd->over++;
        return 0;
    }
    return 1;
}

/* Receive batch after batch until a batch has no letter met for the first
 * time that is taken (for --all: that was in the DLQ when the command
 * started), or every --id was found. */
static int
redrive_all(struct redrive *rd)
{
    struct held seen_ids = {0};
    int rc = CTL_OK;
    rd->start_ms = wall_ms();
    rd->depth = rd->ids == NULL ? dlq_depth(rd) : -1;
    while (!all_found(rd)) {
        struct sqs_message *batch = NULL;
        size_t got = 0, fresh = 0;
        struct sqs_error err;
        if (recv_batch(rd->sqs, rd->q->dlq_url, SQS_RECEIVE_MAX, REDRIVE_VISIBILITY, &batch, &got,
                       &err) != 0) {
            rc = ctl_sqs_fail(rd->q->name, "dead-letter queue: ReceiveMessage", &err);
            break;
        }
        for (size_t i = 0; i < got; i++) {
            const struct sqs_message *m = &batch[i];
            int again = held_has(&seen_ids, m->message_id);
            /* ENOMEM: not counted as new, so the loop still ends */
            int kept = !again && hold(&seen_ids, m->message_id) == 0;
            if (again || !take(rd, m)) {
                hold(&rd->held, m->receipt_handle);
                continue;
            }
            fresh += kept;
            if (!selected(rd, m)) {
                hold(&rd->held, m->receipt_handle);
                continue;
            }
            rd->taken++;
            if (rd->del) {
                delete_one(rd, m);
            } else {
                redrive_one(rd, m);
            }
        }
        sqs_messages_free(batch, got);
        if (fresh == 0) {
            break;
        }
    }
    held_free(&seen_ids);
    held_free(&rd->sent);
    return rc;
}

/* Say which letters --all left for the next run, and why. */
static void
report_left(const struct redrive *rd)
{
    if (rd->late > 0) {
        const char *were = rd->late == 1 ? "was" : "were";
        fprintf(stderr,
                "twicectl: dlq redrive: %ld letter%s reached the dead-letter queue of %s after "
                "the command started (or %s redriven by it and dead-lettered again) and %s "
                "left for the next run\n",
                rd->late, plural_s(rd->late), rd->q->name, were, were);
    }
    if (rd->over > 0) {
        fprintf(stderr,
                "twicectl: dlq redrive: stopped after %ld letter%s, the depth of the "
                "dead-letter queue of %s when the command started; %ld more %s left for the "
                "next run\n",
                rd->taken, plural_s(rd->taken), rd->q->name, rd->over,
                rd->over == 1 ? "was" : "were");
    }
}

static int
redrive_report(struct redrive *rd, int rc)
{
    for (size_t i = 0; rd->ids != NULL && i < rd->nids; i++) {
        if (!rd->found[i]) {
            char shown[CTL_ARG_SIZE];
            fprintf(stderr, "twicectl: dlq %s: message %s not found in the DLQ of %s\n",
                    rd->del ? "delete" : "redrive", ctl_arg(shown, rd->ids[i]), rd->q->name);
            rc = CTL_FAIL;
        }
    }
    if (rd->failed > 0) {
        rc = CTL_FAIL;
    }
    report_left(rd);
    if (rd->del && rd->c->json) {
        int prc = ctl_print_json(json_pack("{s:s,s:I,s:I}", "queue", rd->q->name, "deleted",
                                           (json_int_t) rd->redriven, "failed",
                                           (json_int_t) rd->failed));
        return rc != CTL_OK ? rc : prc;
    }
    if (rd->del) {
        printf("deleted %ld, failed %ld\n", rd->redriven, rd->failed);
        return rc;
    }
    if (rd->c->json) {
        int prc = ctl_print_json(json_pack(
            "{s:s,s:I,s:I,s:I}", "queue", rd->q->name, "redriven", (json_int_t) rd->redriven,
            "failed", (json_int_t) rd->failed, "skipped", (json_int_t) rd->skipped));
        return rc != CTL_OK ? rc : prc;
    }
    printf("redriven %ld, failed %ld, skipped %ld\n", rd->redriven, rd->failed, rd->skipped);
    return rc;
}

/* `redrive` and, with del, `delete` (which takes no --all). */
static int
dlq_redrive(struct ctl *c, int argc, char **argv, int del)
{
    static const struct option longopts[] = {
        {"id", 1, NULL, 'i'}, {"all", 0, NULL, 'a'}, CTL_LONG_OPTIONS};
    static const struct option delete_opts[] = {{"id", 1, NULL, 'i'}, CTL_LONG_OPTIONS};
    const char *cmd = del ? "dlq delete" : "dlq redrive";
    struct redrive rd;
    int opt, rc, all = 0;
    memset(&rd, 0, sizeof(rd));
    rd.del = del;
    rd.ids = calloc((size_t) argc, sizeof(*rd.ids));
    rd.found = calloc((size_t) argc, sizeof(*rd.found));
    if (rd.ids == NULL || rd.found == NULL) {
        free(rd.ids);
        free(rd.found);
        return ctl_fail("out of memory");
    }
    rc = -1;
    while (rc < 0 &&
           (opt = getopt_long(argc, argv, ":c:h", del ? delete_opts : longopts, NULL)) != -1) {
        if (opt == 'i') {
            rd.ids[rd.nids++] = optarg;
        } else if (opt == 'a') {
            all = 1;
        } else {
            rc = ctl_option(c, cmd, del ? delete_help : redrive_help, opt, argc, argv);
        }
    }
    if (rc < 0 && argc - optind != 1) {
        rc = ctl_usage_error(cmd, "expected one QUEUE");
    } else if (rc < 0 && del && rd.nids == 0) {
        rc = ctl_usage_error(cmd, "give --id MESSAGE_ID (repeatable)");
    } else if (rc < 0 && all == (rd.nids > 0)) {
        rc = ctl_usage_error(cmd, "give either --id MESSAGE_ID (repeatable) or --all");
    }
    if (rc < 0) {
        rd.c = c;
        rd.q = ctl_queue(c, argv[optind], 1);
        rd.sqs = rd.q != NULL ? ctl_sqs(c) : NULL;
        if (all) {
            free(rd.ids);
            rd.ids = NULL;
        }
        rc = rd.sqs == NULL ? CTL_FAIL : redrive_all(&rd);
        if (rd.sqs != NULL) {
            release(rd.sqs, rd.q->dlq_url, &rd.held, REDRIVE_VISIBILITY);
            rc = redrive_report(&rd, rc);
        }
    }
    free(rd.ids);
    free(rd.found);
    return rc;
}

/* ---- purge ---- */

static int
dlq_purge(struct ctl *c, int argc, char **argv)
{
    static const struct option longopts[] = {{"yes", 0, NULL, 'y'}, CTL_LONG_OPTIONS};
    int opt, rc, yes = 0;
    while ((opt = getopt_long(argc, argv, ":c:h", longopts, NULL)) != -1) {
        if (opt == 'y') {
            yes = 1;
        } else if ((rc = ctl_option(c, "dlq purge", purge_help, opt, argc, argv)) >= 0) {
            return rc;
        }
    }
    if (argc - optind != 1) {
        return ctl_usage_error("dlq purge", "expected one QUEUE");
    }
    if (!yes) {
        return ctl_usage_error("dlq purge", "this deletes every dead letter of %s; add --yes",
                               argv[optind]);
    }
    const struct config_queue *q = ctl_queue(c, argv[optind], 1);
    struct sqs_client *sqs = q != NULL ? ctl_sqs(c) : NULL;
    struct sqs_error err;
    if (sqs == NULL) {
        return CTL_FAIL;
    }
    if (sqs_purge(sqs, q->dlq_url, &err) != 0) {
        return ctl_sqs_fail(q->name, "dead-letter queue: PurgeQueue", &err);
    }
    printf("purged the dead-letter queue of %s (%s); SQS may take up to 60 seconds to delete "
           "every message\n",
           q->name, q->dlq_url);
    return CTL_OK;
}

int
ctl_dlq(struct ctl *c, int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(dlq_help, argc < 2 ? stderr : stdout);
        return argc < 2 ? CTL_USAGE : CTL_OK;
    }
    optind = 0;
    if (strcmp(argv[1], "list") == 0) {
        return dlq_list(c, argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "redrive") == 0) {
        return dlq_redrive(c, argc - 1, argv + 1, 0);
    }
    if (strcmp(argv[1], "delete") == 0) {
        return dlq_redrive(c, argc - 1, argv + 1, 1);
    }
    if (strcmp(argv[1], "purge") == 0) {
        return dlq_purge(c, argc - 1, argv + 1);
    }
    char shown[CTL_ARG_SIZE];
    return ctl_usage_error("dlq", "no dlq command '%s' (list, redrive, delete, purge)",
                           ctl_arg(shown, argv[1]));
}
