/*
 * handler.c - a queue's pool of handler threads in a worker: each takes a
 * job (or a FIFO group's chain of jobs, run in order), runs the plugin's
 * handle(), turns the answer into an action for the acker, and hands the
 * job over. Transactional plugins run inside a transaction on the thread's
 * own connection that also completes the key.
 */
#include "handler.h"

#include "acker.h"
#include "advice.h"
#include "backoff.h"
#include "breaker.h"
#include "cnum.h"
#include "config.h"
#include "hostapi.h"
#include "idem.h"
#include "instance.h"
#include "job.h"
#include "lifecycle.h"
#include "log.h"
#include "metrics.h"
#include "outbox.h"
#include "shm.h"
#include "sqs_limits.h"
#include "throttle.h"
#include "timeout.h"
#include "verdict.h"
#include "worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A handler thread's own state. */
struct handler {
    struct wqueue *q;
    int index;                /* among the worker's handler threads: its shm job record */
    struct idem_store *store; /* transactional plugins only, connected lazily */
    int store_down;           /* log an outage once, not per job */
};

/* Turn handle()'s answer into the job's action (lifecycle.c). Returns 1 when
 * the verdict is to run the job again here after j->delay (a FIFO retry). */
static int
decide(struct twice_job *j, twice_status st)
{
    struct lifecycle_run run = {
        .status = st,
        .attempt = j->attempt,
        .retry_after = j->retry_after,
        .error = j->error,
        .random = st == TWICE_DONE ? 0 : backoff_random(), /* only a retry draws */
    };
    breaker_after_run(j, st, &run.breaker_open, &run.open_delay);
    struct lifecycle_verdict v;
    lifecycle_on_handled(&j->queue->policy, &run, &v);
    verdict_apply(j, &v);
    return v.in_place;
}

/* Give the job back for a reason that is not its fault (lifecycle.c). */
static void
give_back(struct twice_job *j, enum lifecycle_failure why, int wait_left, const char *error)
{
    struct lifecycle_verdict v;
    lifecycle_on_failure(why, wait_left, error, &v);
    verdict_apply(j, &v);
}

/* The thread's connection for transactional plugins; NULL while down. Made
 * again when it is not idem_usable: lost, or a statement of ours failed on it
 * through the store's fault (a stale statement_timeout, a revoked grant), so
 * that the next job runs on the role's settings as they are now. A
 * statement of ours on it that PostgreSQL does not answer within
 * LIFECYCLE_ANSWER_MAX_MS fails as one whose connection dropped (the run's
 * job is given back, or its COMMIT looked up: commit_landed). */
static struct idem_store *
handler_store(struct handler *h)
{
    const struct config *c = h->q->w->cfg;
    char err[512];
    if (h->store != NULL && idem_usable(h->store)) {
        return h->store;
    }
    /* our own statements bounded (the plugin's, on idem_pgconn, are its own) */
    const struct idem_wait bounded = {.answer_ms = LIFECYCLE_ANSWER_MAX_MS};
    int rc = h->store == NULL
                 ? idem_open_waiting(c->idempotency.dsn, c->idempotency.table, h->q->w->owner,
                                     &bounded, &h->store, err, sizeof(err))
                 : idem_reconnect(h->store, err, sizeof(err));
    if (rc != 0) {
        if (!h->store_down) {
            log_error("queue %s: transactional handler: database unreachable: %s", h->q->cfg->name,
                      err);
        }
        h->store_down = 1;
        return NULL;
    }
    h->store_down = 0;
    return h->store;
}

/* The messages the job staged, into the outbox in its open transaction
 * (before its key is completed: both commit together or neither). On
 * failure the transaction is rolled back. */
static int
stage_outbox(struct handler *h, struct idem_store *s, struct twice_job *j, char *err,
             size_t errlen)
{
    struct outbox_job oj = {j->key, j->qcfg->name, j->plugin->name, &j->outbox};
    if (j->outbox.n == 0 ||
        outbox_insert(s, h->q->w->cfg->idempotency.table, &oj, 1, err, errlen) == 0) {
        return 0;
    }
    idem_tx_rollback(s, NULL, 0);
    return -1;
}

/* Roll back a transactional run that did not end DONE. Returns 1 when the
 * connection was gone: the run's statements failed with it, so its RETRY or
 * REJECT (most often the plugin's answer to the error it got) is the
 * store's fault and not the job's: given back, not counted, as after a
 * statement that failed through the store's fault (store_aborted). */
static int
tx_lost(struct idem_store *s, struct twice_job *j, char *err, size_t errlen)
{
    int gone = !idem_connected(s);
    if (!gone && idem_tx_rollback(s, err, errlen) == 0) {
        return 0;
    }
    if (!gone) {
        job_log(TWICE_LOG_WARN, j, "rollback failed (the connection is reset): %s", err);
    }
    return !idem_connected(s);
}

/* The connection went during j's COMMIT: whether that COMMIT landed, the key
 * reading completed by j's message on a new connection (0 when it does not,
 * or the store cannot say: the job is then given back, and its claim tells). */
static int
commit_landed(struct handler *h, struct twice_job *j)
{
    struct idem_store *s = handler_store(h);
    const char *key = j->key, *id = j->msg.message_id;
    int completed = 0;
    char err[512];
    if (s == NULL || idem_completed_by(s, &key, &id, 1, &completed, err, sizeof(err)) != 0) {
        return 0;
    }
    return completed;
}

/* The completion of a transactional run that ended DONE: the follow-ups
 * staged and the key completed with the plugin's work, in one COMMIT.
 * Returns 1 when that committed (or the job's verdict is set otherwise: the
 * store lost or refusing, not the job's fault), 0 when it failed through the
 * job's own data (err says why): a RETRY, counted. own: a statement of the
 * plugin's aborted the transaction through the plugin's fault, which stays
 * the job's though an earlier one, rolled back to a savepoint, marked the
 * connection. */
static int
complete_transactional(struct handler *h, struct twice_job *j, struct idem_store *s, int own,
                       char *err, size_t errlen)
{
    if (stage_outbox(h, s, j, err, errlen) == 0 &&
        idem_tx_complete(s, j->key, j->attempt, err, errlen) == 0) {
        j->key_completed = 1;
        shared_int_set(&j->claimed, 0);
        return 1;
    }
    metrics_count(MET_PG_ERRORS, "tx_commit", NULL, NULL, 1);
    struct lifecycle_verdict v;
    if (!idem_connected(s)) {
        /* The database went away: it comes back when the store does,
         * unless its COMMIT landed before the connection went. */
        if (lifecycle_on_commit_unknown(commit_landed(h, j), err, &v) == JOB_ACT_COMPLETE) {
            j->key_completed = 1;
            shared_int_set(&j->claimed, 0);
        }
    } else if (!idem_usable(s) && !own) {
        /* refused through the store's fault on a live connection */
        lifecycle_on_commit_refused(&j->queue->policy, j->receives, j->attempt, backoff_random(),
                                    err, &v);
    } else {
        return 0;
    }
    verdict_apply(j, &v);
    return 1;
}

/* What the plugin's statements told (idem_watch_end): one that failed
 * through the store's fault has marked the connection, say so; and a run
 * the plugin's own statement aborted with no error of the plugin's says
 * that statement's SQLSTATE and message (its DLQ reason, its log line). */
static void
plugin_statements(struct twice_job *j, const struct idem_watched *w)
{
    if (w->store_fault[0] != '\0') {
        job_log(TWICE_LOG_WARN, j,
                "a statement of the plugin failed through the store's fault (SQLSTATE %s): "
                "the handler's connection is made again before its next job",
                w->store_fault);
    }
    if (w->aborted && !w->by_store && (j->error == NULL || j->error[0] == '\0')) {
        char *e = NULL;
        if (asprintf(&e, "a statement of the plugin failed (%s)", w->error) >= 0) {
            free(j->error);
            j->error = e; /* else the plugin's empty word stands */
        }
    }
}

/* A run that did not end DONE, whose transaction a statement of the
 * plugin's aborted through the store's fault (w->by_store): rolled back and
 * given back uncounted (lifecycle_on_store_aborted). */
static void
store_aborted(struct twice_job *j, struct idem_store *s, twice_status st,
              const struct idem_watched *w)
{
    (void) idem_tx_rollback(s, NULL, 0); /* a failure shows in idem_usable */
    metrics_count(MET_PG_ERRORS, "tx_run", NULL, NULL, 1);
    struct lifecycle_verdict v;
    lifecycle_on_store_aborted(&j->queue->policy, st, j->receives, j->attempt, backoff_random(),
                               w->error, &v);
    verdict_apply(j, &v);
    outbox_staged_clear(&j->outbox);
}

/* handle() inside the transaction that completes the key, on the thread's
 * connection s (NULL while down). Returns decide()'s answer (0 when the job
 * was given back or left alone). */
static int
run_transactional(struct handler *h, struct twice_job *j, struct idem_store *s)
{
    char err[512];
    int rc = s != NULL ? idem_tx_begin(s, j->key, err, sizeof(err)) : -1;
    if (rc == 0) {
        give_back(j, LIFECYCLE_LEASE_LOST, 0, NULL);
        shared_int_set(&j->claimed, 0);
        return 0;
    }
    if (rc < 0) {
        metrics_count(MET_PG_ERRORS, "tx_begin", NULL, NULL, 1);
        give_back(j, LIFECYCLE_TX_BEGIN_FAILED, 0, NULL);
        return 0;
    }
    j->db = s;
    idem_watch_begin(s);
    twice_status st = hostapi_handle(j->plugin, j);
    struct idem_watched w;
    idem_watch_end(s, &w);
    plugin_statements(j, &w);
    j->db = NULL;
    if (st != TWICE_DONE && w.by_store) {
        store_aborted(j, s, st, &w);
        return 0;
    }
    if (st == TWICE_DONE) {
        int settled = complete_transactional(h, j, s, w.aborted && !w.by_store, err, sizeof(err));
        outbox_staged_clear(&j->outbox); /* committed with the key, or dropped with the run */
        if (settled) {
            return j->key_completed ? decide(j, st) : 0;
        }
        free(j->error);
        j->error = strdup(err);
        st = TWICE_RETRY;
        job_log(TWICE_LOG_ERROR, j, "commit failed, nothing was applied: %s", err);
    } else if (tx_lost(s, j, err, sizeof(err))) {
        metrics_count(MET_PG_ERRORS, "tx_run", NULL, NULL, 1);
        give_back(j, LIFECYCLE_TX_LOST, 0, j->error);
        outbox_staged_clear(&j->outbox);
        return 0;
    }
    outbox_staged_clear(&j->outbox); /* committed with the key, or dropped with the run */
    return decide(j, st);
}

/* handle() once, with its bookkeeping (duration, in-flight gauge, the shared
 * process table, the time limit). Returns decide()'s answer. */
static int
run_handler(struct handler *h, struct twice_job *j)
{
    struct wqueue *q = h->q;
    /* A transactional plugin's connection first: connecting is twiced's time,
     * not the handler's (its duration, its p99 advice, its timeout). */
    struct idem_store *s = j->plugin->transactional ? handler_store(h) : NULL;
    clock_gettime(CLOCK_MONOTONIC, &j->started_at);
    metrics_gauge_add(MET_INFLIGHT, q->cfg->name, j->plugin->name, 1);
    int shm_idx = shm_job_begin(q->w->slot, h->index, (int) (q->cfg - q->w->cfg->queues),
                                (int) j->plugin->index, j->msg.message_id, j->attempt);
    __atomic_store_n(&j->breaker_told, 0, __ATOMIC_RELAXED); /* published by run_begin */
    timeout_run_begin(j, shm_idx);

    int again = 0;
    if (j->plugin->transactional) {
        again = run_transactional(h, j, s);
        timeout_run_end(j); /* never taken over: a transaction holds its key (timeout.h) */
    } else {
        twice_status st = hostapi_handle(j->plugin, j);
        again = timeout_run_end(j) ? decide(j, st) : 0;
    }

    shm_job_end(q->w->slot, shm_idx);
    __atomic_add_fetch(&q->w->runs, 1, __ATOMIC_RELAXED); /* worker_max_jobs: recycle.c */
    struct timespec end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    double seconds = job_elapsed(&j->started_at, &end);
    metrics_observe(MET_DURATION, q->cfg->name, j->plugin->name, seconds);
    advice_record(q, j->plugin->index, seconds);
    metrics_gauge_add(MET_INFLIGHT, q->cfg->name, j->plugin->name, -1);
    return again;
}

/* Run the job once, after waiting for its rate limits' tokens (throttle.h);
 * retried: a FIFO retry in place, its last run counted. Counted as running from
 * the wait on, so that a drain waits for it. Returns 1 when it is to run again
 * here (see decide()). */
static int
run_job(struct handler *h, struct twice_job *j, int retried)
{
    struct wqueue *q = h->q;
    pthread_mutex_lock(&q->mu);
    q->running++;
    pthread_mutex_unlock(&q->mu);
    int again = 0;
    if (throttle_wait(j) != 0) {
        if (retried) {
            j->attempt--; /* the run that asked for the retry is the one recorded */
        }
        give_back(j, retried ? LIFECYCLE_DRAIN_IN_BACKOFF : LIFECYCLE_DRAINING, 0, NULL);
    } else {
        again = run_handler(h, j);
    }
    pthread_mutex_lock(&q->mu);
    q->running--;
    pthread_mutex_unlock(&q->mu);
    return again;
}

/* Wait out a FIFO retry's delay; 0 when the worker started draining (the
 * job is then given back with the delay it has left). */
static int
fifo_backoff(struct twice_job *j)
{
    struct worker *w = j->queue->w;
    for (int waited = 0; waited < j->delay * 10; waited++) {
        if (flag_is_up(&w->draining)) {
            give_back(j, LIFECYCLE_DRAIN_IN_BACKOFF, j->delay - waited / 10, NULL);
            return 0;
        }
        struct timespec tick = {0, 100 * 1000000L};
        nanosleep(&tick, NULL);
    }
    return 1;
}

/* Run a job until its verdict settles. A FIFO job that asked to retry is
 * retried here, after its backoff, with the rest of its group waiting behind
 * it, all still in flight (the heartbeat keeps them): giving it back would let
 * SQS count a receive against every message behind it that never ran.
 * Attempts are counted on the job. Standard queues retry through SQS instead
 * (the acker hides the message for the backoff). */
static void
run_settled(struct handler *h, struct twice_job *j)
{
    int again = run_job(h, j, 0);
    while (again && fifo_backoff(j)) {
        metrics_count(MET_FINISHED, j->queue->cfg->name, j->plugin->name, "retry", 1);
        free(j->error);
        j->error = NULL;
        j->retry_after = -1;
        j->downstream = 0;
        j->downstream_secs = 0;
        j->action = JOB_ACT_NONE;
        j->attempt++;
        again = run_job(h, j, 1);
    }
}

/* Run a chain (one job, or a FIFO group in order). Once a job of the
 * group is not done (given back at a drain), the rest are given back
 * untouched: SQS delivers them again after it, in order. */
static void
run_chain(struct handler *h, struct twice_job *j)
{
    int held_back = 0;
    while (j != NULL) {
        struct twice_job *next = j->group_next;
        j->group_next = NULL;
        if (held_back || flag_is_up(&h->q->w->draining)) {
            give_back(j, LIFECYCLE_DRAINING, 0, NULL);
        } else if (breaker_before_run(j)) {
            held_back = 1; /* the rest of its group goes back behind it */
        } else {
            run_settled(h, j);
            held_back = j->action != JOB_ACT_COMPLETE && j->action != JOB_ACT_DEADLETTER;
        }
        acker_submit(h->q->w->acker, j);
        j = next;
    }
}

static void *
handler_main(void *arg)
{
    struct handler *h = arg;
    struct wqueue *q = h->q;
    for (;;) {
        pthread_mutex_lock(&q->mu);
        while (q->head == NULL && !q->stop) {
            pthread_cond_wait(&q->work_cv, &q->mu);
        }
        struct twice_job *j = q->head;
        if (j == NULL) {
            pthread_mutex_unlock(&q->mu);
            break;
        }
        q->head = j->next;
        if (q->head == NULL) {
            q->tail = NULL;
        }
        pthread_mutex_unlock(&q->mu);
        run_chain(h, j);
    }
    idem_close(h->store);
    free(h);
    return NULL;
}

int
handlers_start(struct wqueue *q, char *err, size_t errlen)
{
    size_t n = (size_t) q->cfg->concurrency;
    q->handlers = calloc(n, sizeof(*q->handlers));
    if (q->handlers == NULL) {
        snprintf(err, errlen, "queue %s: out of memory", q->cfg->name);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        struct handler *h = calloc(1, sizeof(*h));
        if (h == NULL) {
            snprintf(err, errlen, "queue %s: out of memory", q->cfg->name);
            return -1;
        }
        h->q = q;
        h->index = q->w->handler_threads++;
        if (shm_jobs_grow(q->w->slot, h->index + 1) != 0) { /* config_check refuses this */
            free(h);
            snprintf(err, errlen, "queue %s: more than %d handler threads in one worker",
                     q->cfg->name, SHM_JOBS);
            return -1;
        }
        int rc = pthread_create(&q->handlers[i], NULL, handler_main, h);
        if (rc != 0) {
            free(h);
            snprintf(err, errlen, "queue %s: pthread_create: %s", q->cfg->name, cnum_strerror(rc));
            return -1;
        }
        q->nhandlers++;
    }
    return 0;
}

void
handlers_stop(struct wqueue *q)
{
    pthread_mutex_lock(&q->mu);
    q->stop = 1;
    pthread_cond_broadcast(&q->work_cv);
    pthread_mutex_unlock(&q->mu);
}

void
handlers_join(struct wqueue *q)
{
    for (size_t i = 0; i < q->nhandlers; i++) {
        pthread_join(q->handlers[i], NULL);
    }
    q->nhandlers = 0;
    free(q->handlers);
    q->handlers = NULL;
}

void
handlers_detach(struct wqueue *q)
{
    for (size_t i = 0; i < q->nhandlers; i++) {
        pthread_detach(q->handlers[i]);
    }
    q->nhandlers = 0;
}

/* Nothing left to wait for: no job waiting, none running but those past their
 * time limit whose message was already acted on (timeout.c). */
int
handlers_idle(struct wqueue *q)
{
    pthread_mutex_lock(&q->mu);
    int idle = q->running - q->overruns == 0 && q->head == NULL;
    pthread_mutex_unlock(&q->mu);
    return idle;
}

int
handlers_hung(struct wqueue *q)
{
    pthread_mutex_lock(&q->mu);
    int hung = q->overruns;
    pthread_mutex_unlock(&q->mu);
    return hung;
}
