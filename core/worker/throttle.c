/*
 * throttle.c - waiting for rate-limit tokens in a worker (see throttle.h): the
 * limits of the process, the connection that leases chunks, and the wait.
 */
#include "throttle.h"

#include "clock.h"
#include "config.h"
#include "idem.h"
#include "lifecycle.h"
#include "instance.h"
#include "job.h"
#include "log.h"
#include "metrics.h"
#include "ratelimit.h"
#include "shm.h"
#include "tokens.h"
#include "worker.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The longest nap between two looks at an empty bucket, ms. */
#define THROTTLE_NAP_MS     20
/* A failed lease: wait this long before the next, ms; report every 10 s. */
#define THROTTLE_DOWN_MS    1000
#define THROTTLE_REPORT_SEC 10

/* One limit as this process applies it. */
struct throttle {
    char name[SHM_LABEL]; /* "plugin:NAME" or "queue:NAME": its row and its metric label */
    int per_second;
    int burst;
    int chunk; /* tokens per lease: a tenth of a second's worth, at least 1 */
    struct shm_limit *bucket;
};

/* The process's limits and the connection that leases their tokens (opened on
 * first use, one lease at a time). */
struct throttles {
    struct throttle *queue;   /* parallel to w->queues; per_second 0: none */
    struct throttle *plugin;  /* parallel to w->plugins */
    pthread_mutex_t mu;       /* the store */
    struct idem_store *store; /* NULL until the first lease */
    time_t reported;          /* the last failure report */
};

static int
limit_init(struct throttle *t, const char *kind, const char *name, int per_second, int burst)
{
    t->per_second = per_second;
    if (per_second <= 0) {
        return 0;
    }
    snprintf(t->name, sizeof(t->name), "%s:%s", kind, name);
    t->burst = burst > 0 ? burst : per_second;
    t->chunk = per_second / 10 > 0 ? per_second / 10 : 1;
    if (t->chunk > t->burst) {
        t->chunk = t->burst;
    }
    t->bucket = ratelimit_bucket(t->name);
    return t->bucket != NULL ? 0 : -1;
}

int
throttle_setup(struct worker *w, char *err, size_t errlen)
{
    struct throttles *ts = calloc(1, sizeof(*ts));
    if (ts == NULL || (ts->queue = calloc(w->nqueues + 1, sizeof(*ts->queue))) == NULL ||
        (ts->plugin = calloc(w->nplugins + 1, sizeof(*ts->plugin))) == NULL) {
        goto oom;
    }
    pthread_mutex_init(&ts->mu, NULL);
    w->throttles = ts;
    for (size_t i = 0; i < w->nqueues; i++) {
        const struct config_queue *qc = w->queues[i].cfg;
        if (limit_init(&ts->queue[i], "queue", qc->name, qc->rate_per_second, qc->rate_burst)) {
            goto oom;
        }
    }
    for (size_t i = 0; i < w->nplugins; i++) {
        const struct config_plugin *pc = w->plugins[i].cfg;
        if (limit_init(&ts->plugin[i], "plugin", pc->name, pc->rate_per_second, pc->rate_burst)) {
            goto oom;
        }
    }
    return 0;
oom:
    if (w->throttles == NULL && ts != NULL) {
        free(ts->queue);
        free(ts);
    }
    snprintf(err, errlen, "rate limits: out of memory");
    return -1;
}

void
throttle_free(struct worker *w)
{
    struct throttles *ts = w->throttles;
    if (ts == NULL) {
        return;
    }
    idem_close(ts->store);
    pthread_mutex_destroy(&ts->mu);
    free(ts->queue);
    free(ts->plugin);
    free(ts);
    w->throttles = NULL;
}

/* Lease a chunk of t's tokens into its bucket (this caller won the right to). */
static void
lease(struct worker *w, struct throttle *t, long long now)
{
    struct throttles *ts = w->throttles;
    const struct config *c = w->cfg;
    char err[512] = "";
    int granted = 0, rc = -1;
    pthread_mutex_lock(&ts->mu);
    if (ts->store != NULL && !idem_usable(ts->store)) {
        rc = idem_reconnect(ts->store, err, sizeof(err));
    } else if (ts->store == NULL) {
        /* a lease unanswered fails as a lost connection: its jobs wait, not for ever */
        const struct idem_wait bounded = {.answer_ms = LIFECYCLE_ANSWER_MAX_MS};
        rc = idem_open_waiting(c->idempotency.dsn, c->idempotency.table, w->owner, &bounded,
                               &ts->store, err, sizeof(err));
    } else {
        rc = 0;
    }
    if (rc == 0) {
        rc = tokens_lease(ts->store, t->name, t->per_second, t->burst, t->chunk, &granted, err,
                          sizeof(err));
    }
    time_t wall = time(NULL);
    if (rc != 0 && wall - ts->reported >= THROTTLE_REPORT_SEC) {
        ts->reported = wall;
        log_warn("rate limit %s: cannot lease tokens (its jobs wait): %s", t->name, err);
    }
    pthread_mutex_unlock(&ts->mu);
    if (rc != 0) {
        metrics_count(MET_PG_ERRORS, "rate_limit", NULL, NULL, 1);
    }
    /* None left: ask again when a chunk's worth has refilled. */
    long long refill = (long long) t->chunk * 1000 / t->per_second;
    long long next = now + (rc != 0 ? THROTTLE_DOWN_MS : refill < 10 ? 10 : refill);
    ratelimit_lease_end(t->bucket, granted, next);
}

/* One step of waiting for t, whose bucket was empty: lease a chunk when this
 * caller may, else nap until a lease is worth asking for (at most
 * THROTTLE_NAP_MS). 1 when it napped. */
static int
wait_step(struct worker *w, struct throttle *t)
{
    long long now = (long long) clock_mono_ms();
    if (ratelimit_lease_begin(t->bucket, now)) {
        lease(w, t, now);
        return 0;
    }
    long long next = ratelimit_next_lease(t->bucket);
    long long ms = next > now ? next - now : 1;
    ms = ms > THROTTLE_NAP_MS ? THROTTLE_NAP_MS : ms;
    struct timespec nap = {0, (long) ms * 1000000L};
    nanosleep(&nap, NULL);
    return 1;
}

/* Take one token of each of lim[0..n) or none: 1 when all were taken, 0
 * when one was empty (those taken before it are given back at once). */
static int
take_each(struct throttle *const *lim, size_t n)
{
    size_t got = 0;
    while (got < n && ratelimit_take(lim[got]->bucket)) {
        got++;
    }
    if (got == n) {
        return 1;
    }
    while (got > 0) {
        ratelimit_give(lim[--got]->bucket);
    }
    return 0;
}

/*
 * Wait until one token of each of lim[0..n) (n <= 2, the scarcer first) can
 * be taken, and take them together. A job holds no token while it waits for
 * another: a token taken and then held would be spent before its job starts,
 * so the job would start later than its limit allowed (a queue's jobs would
 * start at its own rate plus what its plugin let through late) or, drained
 * meanwhile, never. While a limit is empty the job waits on that one,
 * taking nothing; a token taken when the other was emptied meanwhile is put
 * back. The time waited on each goes to its twice_rate_limited_seconds_total.
 * 0, or -1 when draining first.
 */
static int
take_all(struct worker *w, struct throttle *const *lim, size_t n)
{
    double waited[2] = {0, 0};
    int napped[2] = {0, 0}, rc = 0;
    while (!take_each(lim, n)) {
        size_t empty = 0;
        while (empty + 1 < n && ratelimit_has(lim[empty]->bucket)) {
            empty++;
        }
        if (ratelimit_has(lim[empty]->bucket)) {
            continue; /* refilled meanwhile: try again */
        }
        if (flag_is_up(&w->draining)) {
            rc = -1;
            break;
        }
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        napped[empty] |= wait_step(w, lim[empty]);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        waited[empty] += job_elapsed(&t0, &t1);
    }
    for (size_t i = 0; i < n; i++) {
        if (napped[i]) {
            metrics_count_seconds(MET_RATE_LIMITED, lim[i]->name, waited[i]);
        }
    }
    return rc;
}

int
throttle_wait(struct twice_job *j)
{
    struct wqueue *q = j->queue;
    struct worker *w = q->w;
    struct throttles *ts = w->throttles;
    if (ts == NULL) {
        return 0;
    }
    struct throttle *ql = &ts->queue[q - w->queues];
    struct throttle *pl = j->plugin != NULL ? &ts->plugin[j->plugin->index] : NULL;
    struct throttle *lim[2];
    size_t n = 0;
    if (pl != NULL && pl->per_second > 0) {
        lim[n++] = pl;
    }
    if (ql->per_second > 0) {
        lim[n++] = ql;
    }
    if (n == 2 && lim[1]->per_second < lim[0]->per_second) {
        lim[0] = ql; /* the scarcer first */
        lim[1] = pl;
    }
    return n > 0 ? take_all(w, lim, n) : 0;
}
