/*
 * dlqmon.c - the master's DLQ monitor (see dlqmon.h): one thread, one SQS
 * client, one check of every DLQ per interval. A DLQ's depth counts every
 * message in it (visible, in flight, delayed), so `twicectl dlq list`
 * holding messages for a moment does not look like a drain. Not the rule
 * or the wording of notices (alert.c), nor their delivery (alert_sink.c).
 * Its thread and client also refresh the queue gauges (qstats.c), on their
 * own interval.
 */
#include "dlqmon.h"

#include "sqs_setup.h"

#include "alert.h"
#include "atomics.h"
#include "clock.h"
#include "config.h"
#include "creds.h"
#include "dlqcarry.h"
#include "log.h"
#include "metrics.h"
#include "qstats.h"
#include "shm.h"
#include "sqs.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LETTERS_CHUNK  64  /* shm events read per call */
#define LATE_LETTER_MS 250 /* wait once for dead letters a rise has not explained yet */

struct watched {
    char *name;
    char *dlq_url;
    char *where; /* "dlq_url of queue 'NAME' at FILE:LINE", for a missing queue's hint */
    struct alert_rule rule;
    long depth;                 /* this check's, -1 unknown */
    int failing;                /* the depth could not be read last time (logged once) */
    struct alert_notice notice; /* this check's */
};

struct dlqmon {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct flag stop;
    int interval;
    int repeat_after;
    char host[256];
    struct watched *q;
    size_t nq;
    struct sqs_endpoint ep;
    struct creds_chain *creds;
    struct sqs_client *sqs; /* NULL when no endpoint could be resolved */
    uint64_t cursor;        /* shm dead-letter events read so far */
    struct alert_sender *sender;
    struct qstats *stats;    /* the queue gauges, refreshed on this thread; NULL: off */
    struct dlqcarry *record; /* the shared record kept after each check (NULL: none) */
};

/* Every message in the DLQ, or -1 (logged when it starts failing). */
static long
read_depth(struct dlqmon *m, struct watched *w)
{
    long counts[3];
    struct sqs_error err;
    if (m->sqs == NULL) {
        return -1;
    }
    if (sqs_queue_counts(m->sqs, w->dlq_url, counts, &err) != 0) {
        if (!w->failing && !flag_is_up(&m->stop)) {
            char what[1280];
            sqs_error_describe_at(&err, "GetQueueAttributes", w->where, what, sizeof(what));
            log_warn("dlq monitor: queue %s: dead-letter queue: %s (will retry)", w->name, what);
        }
        w->failing = 1;
        return -1;
    }
    long depth = 0;
    for (size_t i = 0; i < 3; i++) {
        depth += counts[i] > 0 ? counts[i] : 0;
    }
    if (w->failing) {
        log_info("dlq monitor: queue %s: dead-letter queue readable again", w->name);
    }
    w->failing = 0;
    return depth;
}

static struct watched *
find(struct dlqmon *m, const char *name)
{
    for (size_t i = 0; i < m->nq; i++) {
        if (strcmp(m->q[i].name, name) == 0) {
            return &m->q[i];
        }
    }
    return NULL;
}

/* Add the dead letters recorded since the last read to their notices. */
static void
read_letters(struct dlqmon *m)
{
    struct shm_dlq_event ev[LETTERS_CHUNK];
    size_t got;
    do {
        uint64_t lost = 0;
        got = shm_dlq_read(&m->cursor, ev, LETTERS_CHUNK, &lost);
        if (lost > 0) {
            log_warn("dlq monitor: %llu dead letters came too fast to be recorded one by one",
                     (unsigned long long) lost);
            for (size_t i = 0; i < m->nq; i++) {
                m->q[i].notice.lost += (long) lost;
            }
        }
        for (size_t i = 0; i < got; i++) {
            struct watched *w = find(m, ev[i].queue);
            if (w == NULL) {
                log_warn("dlq monitor: message %s of queue %s, no longer configured, was "
                         "dead-lettered (%s)",
                         ev[i].message_id, ev[i].queue, ev[i].reason);
                continue;
            }
            alert_notice_add_letter(&w->notice, ev[i].reason, ev[i].plugin, ev[i].message_id,
                                    ev[i].key, ev[i].at);
        }
    } while (got == LETTERS_CHUNK);
}

/* A rise that the recorded dead letters do not explain yet: a worker may be
 * between its DLQ send and its record. */
static int
unexplained_rise(const struct dlqmon *m)
{
    for (size_t i = 0; i < m->nq; i++) {
        const struct watched *w = &m->q[i];
        long before = w->rule.depth > 0 ? w->rule.depth : 0;
        if (w->depth > before && w->depth - before > w->notice.letters) {
            return 1;
        }
    }
    return 0;
}

/* Interruptible sleep; 0, or -1 when stopping. */
static int
pause_ms(struct dlqmon *m, int ms)
{
    struct timespec ts = clock_after_ms(CLOCK_MONOTONIC, ms);
    pthread_mutex_lock(&m->mu);
    while (!flag_is_up(&m->stop) && pthread_cond_timedwait(&m->cv, &m->mu, &ts) == 0) {
    }
    int stop = flag_is_up(&m->stop);
    pthread_mutex_unlock(&m->mu);
    return stop ? -1 : 0;
}

/* Log a notice on one line (so alerting works with no sink at all). */
static void
log_notice(const struct alert_notice *n)
{
    char *text = alert_notice_text(n, 0);
    if (text == NULL) {
        return;
    }
    for (char *p = text; *p != '\0'; p++) {
        *p = *p == '\n' ? '|' : *p;
    }
    const char *what = n->kind == ALERT_PAUSED || n->kind == ALERT_RESUMED ? "queue" : "dlq";
    if (n->kind == ALERT_RESOLVED || n->kind == ALERT_RESUMED) {
        log_info("%s %s: %s", what, alert_kind_name(n->kind), text);
    } else {
        log_warn("%s %s: %s", what, alert_kind_name(n->kind), text);
    }
    free(text);
}

static void
check(struct dlqmon *m)
{
    int64_t now = (int64_t) time(NULL);
    for (size_t i = 0; i < m->nq && !flag_is_up(&m->stop); i++) {
        struct watched *w = &m->q[i];
        alert_notice_init(&w->notice, w->name, w->dlq_url, m->host, now);
        w->depth = read_depth(m, w);
        if (w->depth >= 0) {
            metrics_gauge_set(MET_DLQ_DEPTH, w->name, NULL, (double) w->depth);
        }
    }
    read_letters(m);
    if (unexplained_rise(m) && pause_ms(m, LATE_LETTER_MS) == 0) {
        read_letters(m);
    }
    for (size_t i = 0; i < m->nq && !flag_is_up(&m->stop); i++) {
        struct watched *w = &m->q[i];
        struct alert_notice *n = &w->notice;
        n->previous = w->rule.depth;
        n->depth = w->depth;
        n->kind = alert_rule_step(&w->rule, w->depth, n->letters, now, m->repeat_after);
        if (n->kind != ALERT_NONE) {
            log_notice(n);
            alert_sender_post(m->sender, n);
        }
    }
}

/* Begin carry over with the cursor and the rule of each DLQ; how many
 * rules did not fit. */
static size_t
put_rules(struct dlqmon *m, struct dlqcarry *carry)
{
    dlqcarry_begin(carry, m->cursor, sizeof(struct alert_notice));
    size_t left = 0;
    for (size_t i = 0; i < m->nq; i++) {
        const struct alert_rule *r = &m->q[i].rule;
        left += dlqcarry_put_rule(carry, m->q[i].dlq_url, r->depth, r->last_sent) != 0;
    }
    return left;
}

/* After each check: the cursor and the rules in the record, so that a
 * monitor whose process dies (the leading worker, killed or crashed) leaves
 * what it knew and the next does not announce again a DLQ it had announced.
 * Its undelivered notices are carried only by a monitor that stops. */
static void
keep(struct dlqmon *m)
{
    if (m->record != NULL) {
        put_rules(m, m->record);
        dlqcarry_end(m->record);
    }
}

static void *
dlqmon_main(void *arg)
{
    struct dlqmon *m = arg;
    int64_t next = clock_mono_ms();
    pthread_mutex_lock(&m->mu);
    while (!flag_is_up(&m->stop)) {
        int64_t now = clock_mono_ms();
        int64_t wake =
            m->stats != NULL && qstats_due(m->stats) < next ? qstats_due(m->stats) : next;
        if (now < wake) {
            struct timespec ts = clock_after_ms(CLOCK_MONOTONIC, wake - now);
            pthread_cond_timedwait(&m->cv, &m->mu, &ts);
            continue;
        }
        pthread_mutex_unlock(&m->mu);
        if (m->stats != NULL && now >= qstats_due(m->stats)) {
            qstats_run(m->stats, m->sqs, &m->stop);
        }
        if (now >= next) {
            check(m);
            keep(m);
            next += (int64_t) m->interval * 1000;
            if (next < clock_mono_ms()) { /* a slow check: do not catch up in a burst */
                next = clock_mono_ms() + (int64_t) m->interval * 1000;
            }
        }
        pthread_mutex_lock(&m->mu);
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

/* ---- start and stop ---- */

/* Carry on from what the previous monitor left in carry (NULL: nothing):
 * its cursor and the rule of each DLQ it watched too. Returns carry when
 * it was taken (its notices are for the sender to adopt, then the caller
 * clears it), else NULL; a record that cannot be trusted is dropped, and
 * the log says so. */
static struct dlqcarry *
restore(struct dlqmon *m, struct dlqcarry *carry)
{
    enum dlqcarry_found found =
        carry != NULL ? dlqcarry_open(carry, sizeof(struct alert_notice)) : DLQCARRY_NONE;
    if (found == DLQCARRY_TORN || found == DLQCARRY_OTHER_KIND) {
        log_warn("dlq monitor: the previous monitor's state %s: starting afresh (a DLQ that is "
                 "not empty is announced again; notices it had not delivered are lost)",
                 found == DLQCARRY_TORN ? "was left half-written" : "is of another version");
    }
    if (found != DLQCARRY_OK) {
        return NULL;
    }
    m->cursor = dlqcarry_cursor(carry);
    for (size_t i = 0; i < m->nq; i++) {
        int64_t depth, last_sent;
        if (dlqcarry_get_rule(carry, m->q[i].dlq_url, &depth, &last_sent)) {
            m->q[i].rule.depth = (long) depth;
            m->q[i].rule.last_sent = last_sent;
        }
    }
    return carry;
}

void
dlqmon_carry_clear(struct dlqcarry *carry)
{
    if (carry != NULL) {
        dlqcarry_clear(carry);
    }
}

/* Stop the sender and leave the cursor, the rules and the undelivered
 * notices in carry for the next monitor (NULL: dropped). */
static void
save(struct dlqmon *m, struct dlqcarry *carry)
{
    if (carry == NULL) {
        alert_sender_stop(m->sender, NULL);
        m->sender = NULL;
        return;
    }
    size_t left = put_rules(m, carry);
    alert_sender_stop(m->sender, carry);
    m->sender = NULL;
    dlqcarry_end(carry);
    if (left > 0) {
        log_warn("dlq monitor: %zu DLQs' state not carried over (more than %d queues)", left,
                 DLQCARRY_RULES);
    }
}

static void
dlqmon_free(struct dlqmon *m)
{
    for (size_t i = 0; i < m->nq; i++) {
        free(m->q[i].name);
        free(m->q[i].where);
        free(m->q[i].dlq_url);
    }
    free(m->q);
    qstats_free(m->stats);
    sqs_client_free(m->sqs);
    sqs_endpoint_free(&m->ep);
    creds_chain_free(m->creds);
    pthread_mutex_destroy(&m->mu);
    pthread_cond_destroy(&m->cv);
    free(m);
}

/* The SQS client; without one the monitor still reports dead letters. */
static void
connect_sqs(struct dlqmon *m, const struct config *c)
{
    char err[512];
    if (sqs_setup(c, &m->ep, &m->creds, err, sizeof(err)) != 0) {
        log_error("dlq monitor: %s (DLQ depths are not checked)", err);
        return;
    }
    m->sqs = sqs_client_new(&m->ep, m->creds);
    if (m->sqs != NULL) {
        sqs_client_set_cancel(m->sqs, &m->stop);
    }
}

static struct dlqmon *
dlqmon_new(const struct config *c)
{
    struct dlqmon *m = calloc(1, sizeof(*m));
    if (m == NULL) {
        return NULL;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->cv, &ca);
    pthread_condattr_destroy(&ca);
    m->interval = c->alerts.dlq_check_interval > 0 ? c->alerts.dlq_check_interval : 60;
    m->repeat_after = c->alerts.repeat_after;
    if (gethostname(m->host, sizeof(m->host) - 1) != 0) {
        snprintf(m->host, sizeof(m->host), "localhost");
    }
    m->q = calloc(c->nqueues ? c->nqueues : 1, sizeof(*m->q));
    if (m->q == NULL) {
        dlqmon_free(m);
        return NULL;
    }
    for (; m->nq < c->nqueues; m->nq++) {
        struct watched *w = &m->q[m->nq];
        struct alert_rule init = ALERT_RULE_INIT;
        w->rule = init;
        w->name = strdup(c->queues[m->nq].name);
        w->dlq_url = strdup(c->queues[m->nq].dlq_url);
        char where[512];
        config_queue_where(&c->queues[m->nq], "dlq_url", where, sizeof(where));
        w->where = strdup(where);
        if (w->name == NULL || w->dlq_url == NULL || w->where == NULL) {
            m->nq++;
            dlqmon_free(m);
            return NULL;
        }
    }
    connect_sqs(m, c);
    m->stats = qstats_new(c);
    return m;
}

void
dlqmon_post(struct dlqmon *m, const struct alert_notice *n)
{
    log_notice(n);
    if (m != NULL) {
        alert_sender_post(m->sender, n);
    }
}

struct dlqmon *
dlqmon_start(const struct config *c, struct dlqcarry *carry)
{
    struct dlqmon *m = dlqmon_new(c);
    if (m == NULL) {
        log_error("dlq monitor: cannot start: out of memory (no DLQ alerts)");
        return NULL;
    }
    m->record = carry;
    struct dlqcarry *taken = restore(m, carry);
    m->sender = alert_sender_start(c, taken);
    if (taken != NULL) {
        dlqcarry_clear(taken);
    }
    if (pthread_create(&m->thread, NULL, dlqmon_main, m) != 0) {
        log_error("dlq monitor: cannot start its thread (no DLQ alerts)");
        save(m, carry); /* what it took, for the next start */
        dlqmon_free(m);
        return NULL;
    }
    return m;
}

void
dlqmon_ask_stop(struct dlqmon *m)
{
    if (m == NULL) {
        return;
    }
    pthread_mutex_lock(&m->mu);
    flag_raise(&m->stop);
    pthread_cond_signal(&m->cv);
    pthread_mutex_unlock(&m->mu);
}

void
dlqmon_stop(struct dlqmon *m, struct dlqcarry *carry)
{
    if (m == NULL) {
        return;
    }
    dlqmon_ask_stop(m);
    pthread_join(m->thread, NULL);
    save(m, carry);
    dlqmon_free(m);
}
