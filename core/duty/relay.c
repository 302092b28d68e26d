/*
 * relay.c - the master's outbox relay (relay.h): one thread, one PostgreSQL
 * connection that LISTENs for committed follow-ups, one SQS client. A cycle
 * is two statements whatever the number of rows (claim, then record what
 * SQS said) plus SendMessageBatch calls of up to ten messages; what could
 * not be sent is logged once per queue and reason. A call that failed is
 * refused for good only when its error does not pass (sqs_error_passes: the
 * queue or the message is at fault); throttling, 5xx, credentials, clock
 * skew and TLS keep the rows pending, tried again every RELAY_BACKOFF s. A
 * message of a batch that SQS refused alone is refused for good when SQS
 * says it is the sender's fault (its content). Not the outbox's SQL
 * (idem/outbox.c) nor the checks done at send() (plugin/send.c).
 */
#include "relay.h"

#include "sqs_setup.h"

#include "atomics.h"
#include "buf.h"
#include "clock.h"
#include "dbdown.h"
#include "followup.h"
#include "config.h"
#include "creds.h"
#include "idem.h"
#include "log.h"
#include "metrics.h"
#include "outbox.h"
#include "shm.h"
#include "sqs.h"
#include "sqs_limits.h"
#include "stopwait.h"

#include <libpq-fe.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(RELAY_SEND_MS + RELAY_CALL_MS < RELAY_LEASE * 1000 - 5000,
               "a cycle records what SQS said before its claim lapses");

/* Queues whose sends failed for now, remembered so that each reason is
 * logged once (and the recovery once) rather than on every retry. */
#define TROUBLE_MAX 32

/* A queue URL and why sending to it failed for now, as logged. */
struct trouble {
    char *url;
    char *why;
};

struct relay {
    pthread_t thread;
    struct flag stop; /* raised by relay_stop */
    char *dsn;
    char *table;
    char *owner; /* what its claims are marked with (outbox_claim) */
    struct sqs_endpoint ep;
    struct creds_chain *creds;
    struct sqs_client *sqs; /* NULL when no endpoint could be resolved */
    struct idem_store *store;
    int listening;
    int down;    /* the database is unreachable (logged once) */
    int refused; /* it answers but refuses the claims (read-only, a grant): logged once */
    struct stopwait wait;
    int64_t stats_at;
    struct trouble trouble[TROUBLE_MAX]; /* the first ntrouble are in use, oldest first */
    size_t ntrouble;
};

/* What one cycle decided for its rows (arrays of RELAY_BATCH), with the rows
 * themselves for the log. */
struct verdicts {
    long long sent[RELAY_BATCH], refused[RELAY_BATCH], later[RELAY_BATCH];
    const char *refused_why[RELAY_BATCH], *later_why[RELAY_BATCH];
    const struct outbox_row *sent_row[RELAY_BATCH], *refused_row[RELAY_BATCH],
        *later_row[RELAY_BATCH];
    size_t nsent, nrefused, nlater;
    char why[RELAY_BATCH][256];
};

/* ---- the database side ---- */

/* The store's tick (stopwait.h): a statement in flight at a stop is given up
 * after half a second (a batch's completion then as one whose answer was
 * lost: its rows are sent again), so that the stop's join is not held by a
 * frozen server. */
static int
relay_wait_tick(void *arg)
{
    struct relay *r = arg;
    return stopwait_over(&r->wait, flag_is_up(&r->stop), 500);
}

/* The relay's connection, LISTENing; NULL while the database is down. */
static struct idem_store *
relay_store(struct relay *r)
{
    char err[512];
    if (r->store != NULL && idem_usable(r->store) && r->listening) {
        return r->store;
    }
    r->listening = 0;
    int rc = stopwait_ensure(&r->store, r->dsn, r->table, "relay", NULL, relay_wait_tick, r, err,
                             sizeof(err));
    if (rc == 0) {
        rc = outbox_migrate(r->store, r->table, err, sizeof(err));
    }
    if (rc == 0) {
        rc = outbox_listen(r->store, err, sizeof(err));
    }
    if (dbdown_note(&r->down, rc, "outbox relay", "relay", err, "will retry") != 0) {
        r->refused = 0; /* the outage's line says it; its end is said once */
        return NULL;
    }
    r->listening = 1;
    return r->store;
}

/* Refresh the gauges, at most every RELAY_STATS_MS. */
static void
refresh_stats(struct relay *r, struct idem_store *s)
{
    int64_t now = clock_mono_ms();
    if (now - r->stats_at < RELAY_STATS_MS) {
        return;
    }
    r->stats_at = now;
    long pending = 0, refused = 0;
    double oldest = 0;
    char err[512];
    if (outbox_stats(s, r->table, &pending, &refused, &oldest, err, sizeof(err)) != 0) {
        metrics_count(MET_PG_ERRORS, "outbox_stats", NULL, NULL, 1);
        return;
    }
    metrics_gauge_set(MET_OUTBOX_PENDING, NULL, NULL, (double) pending);
    metrics_gauge_set(MET_OUTBOX_REFUSED_ROWS, NULL, NULL, (double) refused);
    metrics_gauge_set(MET_OUTBOX_OLDEST, NULL, NULL, oldest);
}

/*
 * Wait for a NOTIFY, the poll interval or stop; then linger RELAY_LINGER_MS
 * so that commits arriving together are claimed together. Returns 0, or -1
 * when the connection broke.
 */
static int
wait_for_work(struct relay *r, struct idem_store *s)
{
    PGconn *conn = idem_pgconn(s);
    int64_t until = clock_mono_ms() + RELAY_POLL_MS;
    int woken = 0;
    while (!flag_is_up(&r->stop) && !woken && clock_mono_ms() < until) {
        struct pollfd p = {.fd = PQsocket(conn), .events = POLLIN};
        if (poll(&p, 1, 200) > 0 && PQconsumeInput(conn) == 0) {
            return -1;
        }
        PGnotify *n;
        while ((n = PQnotifies(conn)) != NULL) {
            woken = 1;
            PQfreemem(n);
        }
    }
    if (woken && !flag_is_up(&r->stop)) {
        struct timespec linger = {0, RELAY_LINGER_MS * 1000000L};
        nanosleep(&linger, NULL);
        PQconsumeInput(conn);
        PGnotify *n;
        while ((n = PQnotifies(conn)) != NULL) {
            PQfreemem(n);
        }
    }
    return 0;
}

/* ---- the SQS side ---- */

/* Record a row's verdict: sent, refused for good, or to try again later.
 * Logging is report()'s, once per queue and reason. */
static void
verdict(struct verdicts *v, const struct outbox_row *w, int ok, int permanent, const char *why)
{
    if (ok) {
        v->sent_row[v->nsent] = w;
        v->sent[v->nsent++] = w->id;
        metrics_count(MET_OUTBOX_SENT, w->queue, "relay", NULL, 1);
        return;
    }
    size_t i = v->nrefused + v->nlater;
    /* cut to the room kept per row: the reason is logged and stored, not parsed */
    snprintf(v->why[i], sizeof(v->why[i]), "%.*s", (int) sizeof(v->why[i]) - 1, why);
    if (!permanent) {
        v->later_row[v->nlater] = w;
        v->later[v->nlater] = w->id;
        v->later_why[v->nlater++] = v->why[i];
        return;
    }
    v->refused_row[v->nrefused] = w;
    v->refused[v->nrefused] = w->id;
    v->refused_why[v->nrefused++] = v->why[i];
    metrics_count(MET_OUTBOX_REFUSED, w->queue, NULL, NULL, 1);
    char id[32];
    snprintf(id, sizeof(id), "outbox:%lld", w->id);
    shm_dlq_event(w->source_queue, w->plugin, "outbox-refused", id, w->key);
}

/* ---- the log: each reason once ---- */

/* How many of rows[from..n) go to rows[from]'s queue for the same reason;
 * -1 when an earlier row had them (that group is counted already). */
static long
group_size(const struct outbox_row *const *rows, const char *const *why, size_t from, size_t n)
{
    for (size_t i = 0; i < from; i++) {
        if (strcmp(rows[i]->url, rows[from]->url) == 0 && strcmp(why[i], why[from]) == 0) {
            return -1;
        }
    }
    long count = 0;
    for (size_t i = from; i < n; i++) {
        count += strcmp(rows[i]->url, rows[from]->url) == 0 && strcmp(why[i], why[from]) == 0;
    }
    return count;
}

/* The index of (url, why) among r's troubled queues (why NULL: any reason),
 * or -1. */
static long
trouble_find(const struct relay *r, const char *url, const char *why)
{
    for (size_t i = 0; i < r->ntrouble; i++) {
        if (strcmp(r->trouble[i].url, url) == 0 &&
            (why == NULL || strcmp(r->trouble[i].why, why) == 0)) {
            return (long) i;
        }
    }
    return -1;
}

static void
trouble_drop(struct relay *r, size_t i)
{
    free(r->trouble[i].url);
    free(r->trouble[i].why);
    memmove(&r->trouble[i], &r->trouble[i + 1], (r->ntrouble - i - 1) * sizeof(r->trouble[0]));
    r->ntrouble--;
}

/* Remember (url, why) as logged, forgetting the oldest when full. Out of
 * memory it is not remembered: logged again next time, which is harmless. */
static void
trouble_add(struct relay *r, const char *url, const char *why)
{
    if (r->ntrouble == TROUBLE_MAX) {
        trouble_drop(r, 0);
    }
    char *u = strdup(url), *w = strdup(why);
    if (u == NULL || w == NULL) {
        free(u);
        free(w);
        return;
    }
    r->trouble[r->ntrouble++] = (struct trouble){u, w};
}

/*
 * Say what a cycle could not send, once per queue and reason rather than
 * once per message: a queue refused for good is logged with the count of
 * messages it kept (each cycle that meets it), a queue failing for now when
 * its reason is new (not again on every retry, every RELAY_BACKOFF seconds,
 * while the outage lasts), and once more when it takes messages again.
 */
static void
report(struct relay *r, const struct verdicts *v)
{
    for (size_t i = 0; i < v->nrefused; i++) {
        long n = group_size(v->refused_row, v->refused_why, i, v->nrefused);
        const struct outbox_row *w = v->refused_row[i];
        if (n > 0) {
            log_warn("outbox relay: %ld message%s to queue %s (from %s#%d on) refused for good, "
                     "kept as refused (twicectl outbox list --state refused): %s",
                     n, n == 1 ? "" : "s", w->queue, w->key, w->idx, v->refused_why[i]);
        }
    }
    for (size_t i = 0; i < v->nsent; i++) {
        const struct outbox_row *w = v->sent_row[i];
        long t = trouble_find(r, w->url, NULL);
        if (t >= 0) {
            log_info("outbox relay: queue %s takes messages again", w->queue);
        }
        for (; t >= 0; t = trouble_find(r, w->url, NULL)) {
            trouble_drop(r, (size_t) t);
        }
    }
    for (size_t i = 0; i < v->nlater; i++) {
        long n = group_size(v->later_row, v->later_why, i, v->nlater);
        const struct outbox_row *w = v->later_row[i];
        if (n > 0 && trouble_find(r, w->url, v->later_why[i]) < 0) {
            log_warn("outbox relay: %ld message%s to queue %s not sent for now, tried again "
                     "every %d s (said once; twicectl outbox list): %s",
                     n, n == 1 ? "" : "s", w->queue, RELAY_BACKOFF, v->later_why[i]);
            trouble_add(r, w->url, v->later_why[i]);
        }
    }
}

/* Row w as the message SQS gets (followup.h): borrowed from w. */
static struct followup
followup_of(const struct outbox_row *w)
{
    return (struct followup){
        .key = w->key,
        .idx = w->idx,
        .url = w->url,
        .body = w->body,
        .body_len = w->body_len,
        .delay = w->delay,
        .group_id = w->group_id,
        .attrs = w->attrs,
    };
}

/* One SendMessageBatch of rows[0..n) (all to one URL). */
static void
send_chunk(struct relay *r, struct outbox_row **rows, size_t n, struct verdicts *v)
{
    struct followup f[SQS_BATCH_MAX];
    const struct followup *fp[SQS_BATCH_MAX];
    struct sqs_batch_result res[SQS_BATCH_MAX];
    struct sqs_error err;
    memset(&err, 0, sizeof(err));
    for (size_t i = 0; i < n; i++) {
        f[i] = followup_of(rows[i]);
        fp[i] = &f[i];
    }
    int rc = r->sqs != NULL ? followup_send_batch(r->sqs, fp, n, res, &err) : -1;
    char what[600];
    if (rc != 0) {
        sqs_error_describe(&err, "SendMessageBatch", what, sizeof(what));
        if (r->sqs == NULL) {
            snprintf(what, sizeof(what), "no SQS endpoint");
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (rc != 0) {
            verdict(v, rows[i], 0,
                    r->sqs != NULL && !sqs_error_passes(&err) && !flag_is_up(&r->stop), what);
        } else {
            snprintf(what, sizeof(what), "%s: %s", res[i].code, res[i].message);
            verdict(v, rows[i], res[i].ok, res[i].sender_fault, what);
        }
    }
}

static int
by_url(const void *a, const void *b)
{
    const struct outbox_row *x = *(struct outbox_row *const *) a;
    const struct outbox_row *y = *(struct outbox_row *const *) b;
    int c = strcmp(x->url, y->url);
    return c != 0 ? c : (x->id > y->id) - (x->id < y->id);
}

/* Send the claimed rows, by queue, in batches of ten and of at most 1 MiB as
 * SQS counts it (followup.h); past until (clock_mono_ms), the rows left wait
 * for a later cycle instead (RELAY_SEND_MS). */
static void
send_rows(struct relay *r, struct outbox_row *rows, size_t n, int64_t until, struct verdicts *v)
{
    struct outbox_row *order[RELAY_BATCH];
    size_t size[RELAY_BATCH];
    for (size_t i = 0; i < n; i++) {
        order[i] = &rows[i];
    }
    qsort(order, n, sizeof(order[0]), by_url);
    for (size_t i = 0; i < n; i++) {
        struct followup f = followup_of(order[i]);
        size[i] = followup_bytes(&f);
    }
    size_t start = 0;
    while (start < n) {
        size_t same = start;
        while (same < n && strcmp(order[same]->url, order[start]->url) == 0) {
            same++;
        }
        size_t end = start + followup_batch_len(&size[start], same - start);
        if (clock_mono_ms() < until) {
            send_chunk(r, &order[start], end - start, v);
        } else {
            for (size_t i = start; i < end; i++) {
                verdict(v, order[i], 0, 0,
                        "not sent yet: SQS answered slowly, and the relay's claim would "
                        "lapse before the rest were sent (sent in a later cycle)");
            }
        }
        start = end;
    }
}

/* One cycle: claim, send, record. Returns the rows claimed, or -1. */
static int
cycle(struct relay *r, struct idem_store *s, struct verdicts *v)
{
    struct outbox_row *rows = NULL;
    size_t n = 0;
    char err[512];
    int64_t until = clock_mono_ms() + RELAY_SEND_MS;
    int rc =
        outbox_claim(s, r->table, RELAY_BATCH, RELAY_LEASE, r->owner, &rows, &n, err, sizeof(err));
    if (dbdown_note(&r->refused, rc, "outbox relay", "outbox_claim", err,
                    "will retry; follow-up messages wait in the outbox") != 0) {
        return -1;
    }
    if (n > 0) {
        v->nsent = v->nrefused = v->nlater = 0;
        send_rows(r, rows, n, until, v);
        report(r, v);
        struct outbox_outcome o = {v->sent,  v->nsent,     v->refused, v->refused_why, v->nrefused,
                                   v->later, v->later_why, v->nlater,  RELAY_BACKOFF};
        if (outbox_finish(s, r->table, &o, err, sizeof(err)) != 0) {
            /* the claims lapse and the rows are sent again: their ids dedupe */
            metrics_count(MET_PG_ERRORS, "outbox_finish", NULL, NULL, 1);
            log_warn("outbox relay: %s", err);
        }
        r->stats_at = 0;
    }
    outbox_rows_free(rows, n);
    return (int) n;
}

static void *
relay_main(void *arg)
{
    struct relay *r = arg;
    struct verdicts *v = malloc(sizeof(*v));
    while (v != NULL && !flag_is_up(&r->stop)) {
        struct idem_store *s = relay_store(r);
        int n = s != NULL ? cycle(r, s, v) : -1;
        if (s != NULL && n >= 0) {
            refresh_stats(r, s);
        }
        if (n == RELAY_BATCH) {
            continue; /* more waiting */
        }
        if (s == NULL || n < 0 || wait_for_work(r, s) != 0) {
            r->listening = 0;
            for (int i = 0; i < 10 && !flag_is_up(&r->stop); i++) {
                struct timespec t = {0, 100 * 1000000L};
                nanosleep(&t, NULL);
            }
        }
    }
    if (v == NULL) {
        log_error("outbox relay: out of memory; follow-up messages are not sent");
    }
    free(v);
    return NULL;
}

/* ---- start and stop ---- */

static void
relay_free(struct relay *r)
{
    while (r->ntrouble > 0) {
        trouble_drop(r, r->ntrouble - 1);
    }
    idem_close(r->store);
    sqs_client_free(r->sqs);
    sqs_endpoint_free(&r->ep);
    creds_chain_free(r->creds);
    free(r->dsn);
    free(r->table);
    free(r->owner);
    free(r);
}

struct relay *
relay_start(const struct config *c, const char *owner)
{
    struct relay *r = calloc(1, sizeof(*r));
    char err[512];
    if (r == NULL || (r->dsn = strdup(c->idempotency.dsn)) == NULL ||
        (r->table = strdup(c->idempotency.table)) == NULL || (r->owner = strdup(owner)) == NULL) {
        log_error("outbox relay: cannot start: out of memory (follow-up messages wait)");
        if (r != NULL) {
            relay_free(r);
        }
        return NULL;
    }
    if (sqs_setup(c, &r->ep, &r->creds, err, sizeof(err)) != 0) {
        log_error("outbox relay: %s (follow-up messages wait in the outbox)", err);
    } else if ((r->sqs = sqs_client_new(&r->ep, r->creds)) != NULL) {
        sqs_client_set_cancel(r->sqs, &r->stop);
        sqs_client_set_timeout(r->sqs, RELAY_CALL_MS);
    }
    if (pthread_create(&r->thread, NULL, relay_main, r) != 0) {
        log_error("outbox relay: cannot start its thread (follow-up messages wait)");
        relay_free(r);
        return NULL;
    }
    return r;
}

void
relay_ask_stop(struct relay *r)
{
    if (r != NULL) {
        flag_raise(&r->stop);
    }
}

void
relay_stop(struct relay *r)
{
    if (r == NULL) {
        return;
    }
    relay_ask_stop(r);
    pthread_join(r->thread, NULL);
    relay_free(r);
}
