/*
 * pausewatch.c - the master's pause watch (see pausewatch.h): one thread,
 * one PostgreSQL connection opened on demand. Each tick it carries the
 * workers' breaker trips and probe outcomes to the pause table; every
 * PAUSEWATCH_READ_MS (and at once after such a change) it reads the table,
 * settles pauses that ended, claims due probes, and publishes each queue's
 * mode to shared memory. Not the SQL (idem/pause.c) nor the breaker's
 * counting (worker/breaker.c).
 */
#include "pausewatch.h"

#include "alert.h"
#include "clock.h"
#include "config.h"
#include "dbdown.h"
#include "dlqmon.h"
#include "flow.h"
#include "idem.h"
#include "log.h"
#include "metrics.h"
#include "pause.h"
#include "stopwait.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A configured queue as the watch follows it. */
struct watched_queue {
    char name[PAUSE_QUEUE_MAX];
    char dlq_url[512];
    int breaker;       /* its breaker is configured here */
    int cooldown_max;  /* seconds; 0 without a breaker here: a failed probe keeps it */
    int probes;        /* granted per cooldown */
    int probe_lease;   /* seconds a probe may take before another host may try */
    int trip;          /* a trip not yet recorded (its cooldown), 0 none */
    int result;        /* a probe outcome not yet recorded, 0 none */
    int decided;       /* this round of probes has its outcome recorded */
    int64_t probe_end; /* monotonic ms: our probe's lease ends; 0: we hold none */
    enum flow_mode mode;
    char gauge_reason[PAUSE_REASON_MAX]; /* the twice_queue_paused series shown */
    int gauge_shown; /* what this watch showed: 0 nothing yet, 1 running, 2 paused */
};

struct pausewatch {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    char *dsn;
    char *table;
    char owner[320]; /* host:pid, the probe's owner */
    char host[256];
    struct dlqmon *alerts;
    struct watched_queue *q;
    size_t nq;

    struct idem_store *store; /* the thread's own */
    int down;
    struct stopwait wait;
};

/* The store's tick (stopwait.h): a statement in flight at a stop is given up
 * after half a second (a breaker's trip or probe being recorded), so that
 * the stop's join is not held by a frozen server. */
static int
pausewatch_wait_tick(void *arg)
{
    struct pausewatch *p = arg;
    pthread_mutex_lock(&p->mu);
    int stop = p->stop;
    pthread_mutex_unlock(&p->mu);
    return stopwait_over(&p->wait, stop, 500);
}

static struct idem_store *
store(struct pausewatch *p)
{
    char err[512];
    int fresh = 0;
    int rc = stopwait_ensure(&p->store, p->dsn, p->table, "pausewatch", &fresh,
                             pausewatch_wait_tick, p, err, sizeof(err));
    if (rc == 0 && fresh) {
        rc = idem_pause_migrate(p->store, err, sizeof(err));
    }
    if (dbdown_note(&p->down, rc, "pause watch", "pause", err,
                    "queue pauses are not read; will retry") != 0) {
        return NULL;
    }
    return p->store;
}

/* Send a paused or resumed notice about q (logged too). */
static void
announce(struct pausewatch *p, const struct watched_queue *q, enum alert_kind kind,
         const struct pause_row *r)
{
    struct alert_notice n;
    alert_notice_init(&n, q->name, q->dlq_url, p->host, (int64_t) time(NULL));
    n.kind = kind;
    if (r != NULL) {
        snprintf(n.pause_reason, sizeof(n.pause_reason), "%s", r->reason);
        n.pause_until = r->until;
    }
    dlqmon_post(p->alerts, &n);
}

/* twice_queue_paused{queue,reason}: one series per queue, the current
 * reason at 1 while paused (reason NULL: "" at 0 while it runs). The
 * reasons before leave the exposition, also those a pause watch before a
 * reload showed: a series per reason ever seen would pile up on dashboards. */
static void
set_gauge(struct watched_queue *q, const char *reason)
{
    const char *label = reason != NULL ? reason : "";
    int shown = reason != NULL ? 2 : 1;
    if (q->gauge_shown == shown && strcmp(label, q->gauge_reason) == 0) {
        return; /* as shown: no walk over the series every read */
    }
    metrics_gauge_only(MET_QUEUE_PAUSED, q->name, label, shown - 1);
    snprintf(q->gauge_reason, sizeof(q->gauge_reason), "%s", label);
    q->gauge_shown = shown;
}

/* Carry the workers' trips and probe outcomes to the table; 1 when
 * something changed there. A round's first probe outcome decides it: with
 * several probes, those that end after it was recorded are not another
 * failure (each would double the cooldown again) nor a late success. */
static int
record_requests(struct pausewatch *p, struct idem_store *s)
{
    char err[512];
    int changed = 0;
    for (size_t i = 0; i < p->nq; i++) {
        struct watched_queue *q = &p->q[i];
        int t = flow_take_trip(q->name);
        q->trip = t > 0 ? t : q->trip;
        int res = flow_take_probe_result(q->name);
        if (res > 0 && !q->decided && q->result == 0) {
            q->result = res; /* the round's first: a later probe's is of a decided round */
        }
        if (q->trip > 0) {
            int rc = idem_pause_trip(s, q->name, q->trip, err, sizeof(err));
            if (rc < 0) {
                log_warn("queue %s: recording its breaker: %s (will retry)", q->name, err);
                return changed;
            }
            log_warn("queue %s: circuit breaker open for %ds%s", q->name, q->trip,
                     rc == 0 ? " (the queue was paused already)" : "; every host pauses it");
            q->trip = 0;
            changed = 1;
        }
        if (q->result > 0) {
            int ok = q->result == 1;
            if (idem_pause_probe_end(s, q->name, ok, q->cooldown_max, err, sizeof(err)) != 0) {
                log_warn("queue %s: recording the probe: %s (will retry)", q->name, err);
                return changed;
            }
            log_info("queue %s: breaker probe %s", q->name,
                     ok           ? "succeeded: closing the breaker"
                     : q->breaker ? "failed: the breaker opens again, its cooldown doubled"
                                  : "failed: the breaker opens again, its cooldown kept (no "
                                    "breaker configured here)");
            q->result = 0;
            q->probe_end = 0;
            q->decided = 1;
            changed = 1;
        }
    }
    return changed;
}

/* A breaker's cooldown is over: take the probe (one host wins) and grant
 * this host's workers its probe jobs. A host without the queue's breaker
 * (another host's opened it) takes part too, with one probe job, and keeps
 * the cooldown on a failure (copy_queues): were only the hosts with it to
 * probe, the queue would stay paused for good once they are gone. */
static void
claim_probe(struct pausewatch *p, struct idem_store *s, struct watched_queue *q)
{
    char err[512];
    if (q->probe_end != 0 && clock_mono_ms() < q->probe_end) {
        return;
    }
    int rc = idem_pause_probe_claim(s, q->name, p->owner, q->probe_lease, err, sizeof(err));
    if (rc < 0) {
        log_warn("queue %s: claiming the breaker's probe: %s", q->name, err);
    } else if (rc == 1) {
        q->probe_end = clock_mono_ms() + (int64_t) q->probe_lease * 1000;
        q->decided = 0;
        flow_grant_probes(q->name, q->probes);
        log_info("queue %s: breaker cooldown over: running %d probe job%s", q->name, q->probes,
                 q->probes == 1 ? "" : "s");
    }
}

/* The mode of q from its row (NULL: none), announcing what changed. */
static enum flow_mode
settle(struct pausewatch *p, struct idem_store *s, struct watched_queue *q,
       const struct pause_row *r)
{
    char err[512];
    int over = r != NULL && (r->resumed || (!r->breaker && r->until > 0 && r->until <= r->now));
    if (over) {
        int announced = 0;
        int rc = idem_pause_finish(s, q->name, &announced, err, sizeof(err));
        if (rc < 0) {
            log_warn("queue %s: ending its pause: %s", q->name, err);
        } else if (rc == 1 && announced) {
            announce(p, q, ALERT_RESUMED, r);
        }
        return FLOW_RUN;
    }
    if (r == NULL) {
        return FLOW_RUN;
    }
    if (!r->announced && idem_pause_announce(s, q->name, err, sizeof(err)) == 1) {
        announce(p, q, ALERT_PAUSED, r);
    }
    if (!r->breaker) {
        return FLOW_PAUSED;
    }
    if (r->until > r->now) {
        return FLOW_OPEN;
    }
    claim_probe(p, s, q);
    return FLOW_PROBING;
}

/* Read the table and publish every queue's mode; 0, or -1 when unread. */
static int
read_table(struct pausewatch *p, struct idem_store *s)
{
    char err[512];
    struct pause_row *rows = NULL;
    size_t n = 0;
    if (idem_pause_list(s, &rows, &n, err, sizeof(err)) != 0) {
        metrics_count(MET_PG_ERRORS, "pause", NULL, NULL, 1);
        log_warn("pause watch: %s", err);
        return -1;
    }
    for (size_t i = 0; i < p->nq; i++) {
        struct watched_queue *q = &p->q[i];
        const struct pause_row *r = NULL;
        for (size_t k = 0; k < n && r == NULL; k++) {
            r = strcmp(rows[k].queue, q->name) == 0 ? &rows[k] : NULL;
        }
        enum flow_mode m = settle(p, s, q, r);
        int64_t until = r != NULL && r->breaker ? r->until : 0;
        if (m != q->mode) {
            log_info("queue %s: %s", q->name,
                     m == FLOW_RUN      ? "receiving"
                     : m == FLOW_PAUSED ? "paused: not receiving"
                     : m == FLOW_OPEN   ? "breaker open: not receiving"
                                        : "breaker probing");
            if (m != FLOW_PROBING) {
                q->probe_end = 0;
            }
        }
        q->mode = m;
        flow_publish(q->name, m, until);
        set_gauge(q, m == FLOW_RUN ? NULL : r->reason);
    }
    free(rows);
    flow_set_loaded();
    return 0;
}

static int
wait_ms(struct pausewatch *p, int ms)
{
    struct timespec ts = clock_after_ms(CLOCK_MONOTONIC, ms);
    pthread_mutex_lock(&p->mu);
    while (!p->stop && pthread_cond_timedwait(&p->cv, &p->mu, &ts) == 0) {
    }
    int stop = p->stop;
    pthread_mutex_unlock(&p->mu);
    return stop ? -1 : 0;
}

static void *
pausewatch_main(void *arg)
{
    struct pausewatch *p = arg;
    int64_t next_read = 0;
    do {
        struct idem_store *s = store(p);
        if (s == NULL) {
            continue;
        }
        int changed = record_requests(p, s);
        if ((changed || clock_mono_ms() >= next_read) && read_table(p, s) == 0) {
            next_read = clock_mono_ms() + PAUSEWATCH_READ_MS;
        }
    } while (wait_ms(p, PAUSEWATCH_TICK_MS) == 0);
    return NULL;
}

static void
pausewatch_free(struct pausewatch *p)
{
    idem_close(p->store);
    free(p->dsn);
    free(p->table);
    free(p->q);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p);
}

/* The watch's copy of c's queues. */
static int
copy_queues(struct pausewatch *p, const struct config *c)
{
    p->q = calloc(c->nqueues ? c->nqueues : 1, sizeof(*p->q));
    if (p->q == NULL) {
        return -1;
    }
    for (p->nq = 0; p->nq < c->nqueues; p->nq++) {
        const struct config_queue *cq = &c->queues[p->nq];
        struct watched_queue *q = &p->q[p->nq];
        snprintf(q->name, sizeof(q->name), "%s", cq->name);
        snprintf(q->dlq_url, sizeof(q->dlq_url), "%s", cq->dlq_url);
        q->breaker = cq->breaker_failures > 0;
        q->cooldown_max =
            cq->breaker_cap > cq->breaker_cooldown ? cq->breaker_cap : cq->breaker_cooldown;
        q->cooldown_max = q->breaker ? q->cooldown_max : 0;
        q->probes = cq->breaker_probes;
        q->probe_lease = cq->visibility_timeout + 30;
        q->mode = FLOW_RUN;
    }
    return 0;
}

struct pausewatch *
pausewatch_start(const struct config *c, struct dlqmon *alerts)
{
    struct pausewatch *p = calloc(1, sizeof(*p));
    if (p == NULL) {
        log_error("pause watch: out of memory (no queue receives until it runs)");
        return NULL;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, &ca);
    pthread_condattr_destroy(&ca);
    p->alerts = alerts;
    if (gethostname(p->host, sizeof(p->host) - 1) != 0) {
        snprintf(p->host, sizeof(p->host), "localhost");
    }
    snprintf(p->owner, sizeof(p->owner), "%s:%ld", p->host, (long) getpid());
    p->dsn = strdup(c->idempotency.dsn != NULL ? c->idempotency.dsn : "");
    p->table = strdup(c->idempotency.table != NULL ? c->idempotency.table : "");
    if (p->dsn == NULL || p->table == NULL || copy_queues(p, c) != 0 ||
        pthread_create(&p->thread, NULL, pausewatch_main, p) != 0) {
        log_error("pause watch: cannot start (no queue receives until it runs)");
        pausewatch_free(p);
        return NULL;
    }
    return p;
}

void
pausewatch_ask_stop(struct pausewatch *p)
{
    if (p == NULL) {
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

void
pausewatch_stop(struct pausewatch *p)
{
    if (p == NULL) {
        return;
    }
    pausewatch_ask_stop(p);
    pthread_join(p->thread, NULL);
    pausewatch_free(p);
}
