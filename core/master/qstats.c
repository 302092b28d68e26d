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
    int failing; /* the last read failed (logged once) */
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
    for (int i = 0; i < 3; i++) {
        if (counts[i] >= 0) {
            metrics_gauge_set(MET_QUEUE_MESSAGES, q->name, states[i], (double) counts[i]);
        }
    }
}

void
qstats_run(struct qstats *s, struct sqs_client *sqs, const struct flag *stop)
{
    for (size_t i = 0; i < s->n && !flag_is_up(stop); i++) {
        struct qstats_queue *q = &s->q[i];
        if (sqs != NULL) {
            read_counts(q, sqs, stop);
        }
        double oldest = metrics_gauge_take(MET_AGE_WINDOW, q->name, NULL);
        metrics_gauge_set(MET_QUEUE_OLDEST_AGE, q->name, NULL, oldest);
    }
    int64_t now = clock_mono_ms();
    s->due += s->interval_ms;
    if (s->due < now) { /* a slow round: do not catch up in a burst */
        s->due = now + s->interval_ms;
    }
}
