/*
 * qstats.c - the queue gauges for autoscaling (see qstats.h): SQS's
 * approximate counts by state, and the oldest message age workers saw.
 */
#include "qstats.h"

#include "atomics.h"
#include "clock.h"
#include "config.h"
#include "log.h"
#include "metrics.h"
#include "sqs.h"

#include <stdlib.h>
#include <string.h>

struct qstats_queue {
    char *name, *url;
    int failing;  /* the last read failed (logged once) */
    long visible; /* the latest ApproximateNumberOfMessages read, -1 none */
    int64_t set;  /* when its oldest age was last set (CLOCK_MONOTONIC ms) */
};

struct qstats {
    int64_t interval_ms;
    int64_t due;
    struct qstats_queue *q;
    size_t n;
};

/* SQS's attribute order in sqs_queue_counts, as the state label says it. */
static const char *const states[3] = {"visible", "in_flight", "delayed"};

struct qstats *
qstats_new(const struct config *c)
{
    if (c->metrics.queue_stats_interval <= 0 || c->metrics.listen == NULL) {
        return NULL;
    }
    struct qstats *s = calloc(1, sizeof(*s));
    if (s == NULL || (s->q = calloc(c->nqueues ? c->nqueues : 1, sizeof(*s->q))) == NULL) {
        free(s);
        return NULL;
    }
    s->interval_ms = (int64_t) c->metrics.queue_stats_interval * 1000;
    s->due = clock_mono_ms();
    for (; s->n < c->nqueues; s->n++) {
        struct qstats_queue *q = &s->q[s->n];
        q->visible = -1;
        q->set = s->due;
        q->name = strdup(c->queues[s->n].name);
        q->url = strdup(c->queues[s->n].url);
        if (q->name == NULL || q->url == NULL) {
            s->n++;
            qstats_free(s);
            return NULL;
        }
    }
    return s;
}

void
qstats_free(struct qstats *s)
{
    if (s == NULL) {
        return;
    }
    for (size_t i = 0; i < s->n; i++) {
        free(s->q[i].name);
        free(s->q[i].url);
    }
    free(s->q);
    free(s);
}

int64_t
qstats_due(const struct qstats *s)
{
    return s->due;
}

static void
read_counts(struct qstats_queue *q, struct sqs_client *sqs, const struct flag *stop)
{
    long counts[3];
    struct sqs_error err;
    if (sqs_queue_counts(sqs, q->url, counts, &err) != 0) {
        if (!q->failing && !flag_is_up(stop)) {
            char what[800];
            sqs_error_describe(&err, "GetQueueAttributes", what, sizeof(what));
            log_warn("queue %s: queue gauges not refreshed: %s (will retry)", q->name, what);
            q->failing = 1;
        }
        return;
    }
    if (q->failing) {
        log_info("queue %s: queue gauges refreshed again", q->name);
    }
    q->failing = 0;
    q->visible = counts[0];
    for (int i = 0; i < 3; i++) {
        if (counts[i] >= 0) {
            metrics_gauge_set(MET_QUEUE_MESSAGES, q->name, states[i], (double) counts[i]);
        }
    }
}

double
qstats_oldest_age(double last, double elapsed, double received, int emptied, long visible)
{
    if (received > 0) {
        return received;
    }
    if (emptied || visible == 0) {
        return 0;
    }
    return visible > 0 ? last + (elapsed > 0 ? elapsed : 0) : last;
}

/* Set q's oldest age from what the workers saw since it was last set. The
 * gauge itself is the last value, so a reload (a new qstats) keeps it. */
static void
set_oldest(struct qstats_queue *q)
{
    int64_t now = clock_mono_ms();
    double last = metrics_gauge_get(MET_QUEUE_OLDEST_AGE, q->name, NULL);
    double received = metrics_gauge_take(MET_AGE_WINDOW, q->name, NULL);
    int emptied = metrics_gauge_take(MET_EMPTY_WINDOW, q->name, NULL) > 0;
    double elapsed = (double) (now - q->set) / 1000.0;
    metrics_gauge_set(MET_QUEUE_OLDEST_AGE, q->name, NULL,
                      qstats_oldest_age(last, elapsed, received, emptied, q->visible));
    q->set = now;
}

void
qstats_run(struct qstats *s, struct sqs_client *sqs, const struct flag *stop)
{
    for (size_t i = 0; i < s->n && !flag_is_up(stop); i++) {
        struct qstats_queue *q = &s->q[i];
        if (sqs != NULL) {
            read_counts(q, sqs, stop);
        }
        set_oldest(q);
    }
    int64_t now = clock_mono_ms();
    s->due += s->interval_ms;
    if (s->due < now) { /* a slow round: do not catch up in a burst */
        s->due = now + s->interval_ms;
    }
}
