/*
 * advice.c - p99 handler durations and the visibility-timeout warning (see
 * advice.h). Windows live in the worker's memory; "warned at" lives in the
 * shared region so that N workers give one warning, not N.
 */
#include "advice.h"

#include "config.h"
#include "instance.h"
#include "log.h"
#include "metrics.h"
#include "shm.h"
#include "sqs_limits.h"
#include "worker.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

double
advice_p99(double *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_double);
    size_t rank = (size_t) ceil(0.99 * (double) n); /* nearest rank, 1-based */
    return v[rank > 0 ? rank - 1 : 0];
}

int
advice_suggest(double p99)
{
    double s = ceil(2.0 * p99);
    return s < 1 ? 1 : s > SQS_VISIBILITY_MAX ? SQS_VISIBILITY_MAX : (int) s;
}

void
advice_record(struct wqueue *q, size_t p, double seconds)
{
    if (q->advice == NULL || p >= q->w->nplugins) {
        return;
    }
    pthread_mutex_lock(&q->mu);
    struct advice_window *win = &q->advice[p];
    win->d[win->next] = seconds;
    win->next = (win->next + 1) % ADVICE_WINDOW;
    if (win->n < ADVICE_WINDOW) {
        win->n++;
    }
    pthread_mutex_unlock(&q->mu);
}

/* The p99 of one window, or -1 with too few samples. */
static double
window_p99(struct wqueue *q, size_t p, double *scratch)
{
    pthread_mutex_lock(&q->mu);
    size_t n = q->advice[p].n;
    memcpy(scratch, q->advice[p].d, n * sizeof(*scratch));
    pthread_mutex_unlock(&q->mu);
    return n < ADVICE_MIN_SAMPLES ? -1 : advice_p99(scratch, n);
}

static void
advise(const struct wqueue *q, const char *plugin, double p99)
{
    int vis = q->cfg->visibility_timeout;
    if ((double) vis >= 2.0 * p99 ||
        !shm_advice_due(q->cfg->name, plugin, time(NULL), ADVICE_EVERY)) {
        return;
    }
    log_warn("queue %s: plugin %s: p99 handler duration is %.1fs, more than half the "
             "visibility timeout (%ds): slow jobs are kept alive by extensions, but size "
             "visibility_timeout to at least %d (2 x p99) so a stalled heartbeat cannot cause "
             "redeliveries",
             q->cfg->name, plugin, p99, vis, advice_suggest(p99));
}

void
advice_tick(struct worker *w)
{
    double *scratch = malloc(ADVICE_WINDOW * sizeof(*scratch));
    if (scratch == NULL) {
        return;
    }
    for (size_t qi = 0; qi < w->nqueues; qi++) {
        struct wqueue *q = &w->queues[qi];
        for (size_t p = 0; q->advice != NULL && p < w->nplugins; p++) {
            double p99 = window_p99(q, p, scratch);
            if (p99 < 0) {
                continue;
            }
            metrics_gauge_set(MET_P99, q->cfg->name, w->plugins[p].name, p99);
            advise(q, w->plugins[p].name, p99);
        }
    }
    free(scratch);
}
