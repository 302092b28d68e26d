/*
 * timeout.c - the time limit of a handler run (see timeout.h): the handshake
 * between a handler's thread and the heartbeat over who decides a message, what
 * the heartbeat does with a run past its limit, and when it asks for the worker's
 * replacement. Deciding is lifecycle.c's; the side effects are the acker's.
 */
#include "timeout.h"

#include "backoff.h"
#include "breaker.h"
#include "clock.h"
#include "config.h"
#include "instance.h"
#include "job.h"
#include "lifecycle.h"
#include "log.h"
#include "recycle.h"
#include "shm.h"
#include "worker.h"

#include <pthread.h>

/* run_ms once the heartbeat acted on the overrun, and once that run returned. */
#define RUN_ACTED    (-1LL)
#define RUN_RETURNED (-2LL)

void
timeout_run_begin(struct twice_job *j, int shm_idx)
{
    j->shm_idx = shm_idx;
    long long now = (long long) clock_mono_ms();
    __atomic_store_n(&j->run_ms, now > 0 ? now : 1, __ATOMIC_RELEASE);
}

int
timeout_run_end(struct twice_job *j)
{
    long long started = __atomic_load_n(&j->run_ms, __ATOMIC_ACQUIRE);
    if (started > 0 && __atomic_compare_exchange_n(&j->run_ms, &started, 0, 0, __ATOMIC_ACQ_REL,
                                                   __ATOMIC_ACQUIRE)) {
        return 1;
    }
    /* The heartbeat acted first: its writes to the job are visible now. */
    struct wqueue *q = j->queue;
    pthread_mutex_lock(&q->mu);
    q->overruns--;
    pthread_mutex_unlock(&q->mu);
    __atomic_store_n(&j->run_ms, RUN_RETURNED, __ATOMIC_RELEASE);
    job_log(TWICE_LOG_WARN, j,
            "the handler returned after its timeout (%ds): its answer is ignored, the message "
            "was already retried or dead-lettered",
            j->qcfg->timeout);
    j->action = JOB_ACT_NONE;
    return 0;
}

int
timeout_overrun(const struct twice_job *j)
{
    long long state = __atomic_load_n(&j->run_ms, __ATOMIC_ACQUIRE);
    return state < 0 || j->replace_asked;
}

/* A (non-transactional) run past its limit: take the decision from its handler,
 * count it for the queue's breaker (a failed probe, or an outage that opens it),
 * then retry, give back or dead-letter its message now. */
static void
act_on_overrun(struct twice_job *j, long long started, long long now, timeout_act_fn *act,
               void *arg)
{
    if (!__atomic_compare_exchange_n(&j->run_ms, &started, RUN_ACTED, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        return; /* it returned just now: its answer stands */
    }
    struct wqueue *q = j->queue;
    pthread_mutex_lock(&q->mu);
    q->overruns++;
    pthread_mutex_unlock(&q->mu);
    j->overrun_ms = now;
    int open = 0, open_delay = 0;
    breaker_after_timeout(j, &open, &open_delay);
    struct lifecycle_verdict v;
    lifecycle_on_timeout(&q->policy, j->attempt, open ? open_delay : 0, backoff_random(), &v);
    act(arg, j, &v);
}

/* A transactional run past its limit: its transaction holds the key's row, so it
 * is not cut short; its worker is replaced after the grace unless it ends. The
 * queue's breaker counts it now, as a run cut short (a downstream that hangs). */
static void
note_tx_overrun(struct twice_job *j, long long started, long long now)
{
    j->overrun_ms = now;
    j->overrun_run = started;
    job_log(TWICE_LOG_WARN, j,
            "ran past its timeout (%ds); a transactional run holds its key: its worker is "
            "replaced if it still runs in %ds",
            j->qcfg->timeout, j->qcfg->timeout_grace);
    int open = 0, open_delay = 0;
    breaker_after_timeout(j, &open, &open_delay); /* its message waits for the run's end */
}

/* Still running past the grace: stop extending it, and have the worker replaced
 * (a transactional run then counts as one that crashed its worker). */
static void
ask_replace(struct worker *w, struct twice_job *j, long long state)
{
    int tx = state > 0;
    if (tx && state != j->overrun_run) {
        return; /* that run ended; a later one (a FIFO retry) has its own limit */
    }
    j->replace_asked = 1;
    job_log(TWICE_LOG_ERROR, j,
            "handler still running %ds past its timeout (%ds): replacing this worker (a thread "
            "cannot be stopped)%s",
            j->qcfg->timeout_grace, j->qcfg->timeout,
            tx ? "; the run counts as one that crashed its worker" : "");
    if (tx) {
        shm_mark_job_crash(w->slot, j->shm_idx);
    }
    recycle_ask_replace(w, SHM_REPLACE_TIMEOUT);
}

void
timeout_check(struct worker *w, struct twice_job **jobs, size_t n, timeout_act_fn *act, void *arg)
{
    long long now = (long long) clock_mono_ms();
    for (size_t i = 0; i < n; i++) {
        struct twice_job *j = jobs[i];
        const struct config_queue *qc = j->qcfg;
        if (qc->timeout <= 0 || j->plugin == NULL || j->replace_asked) {
            continue;
        }
        long long state = __atomic_load_n(&j->run_ms, __ATOMIC_ACQUIRE);
        if (state > 0 && j->overrun_ms > 0 && state != j->overrun_run) {
            j->overrun_ms = 0; /* a transactional run past its limit ended; this is another */
        }
        if (state > 0 && j->overrun_ms == 0 && now - state >= (long long) qc->timeout * 1000) {
            if (j->plugin->transactional) {
                note_tx_overrun(j, state, now);
            } else {
                act_on_overrun(j, state, now, act, arg);
            }
            state = __atomic_load_n(&j->run_ms, __ATOMIC_ACQUIRE);
        }
        if (j->overrun_ms > 0 && now - j->overrun_ms >= (long long) qc->timeout_grace * 1000 &&
            state != 0 && state != RUN_RETURNED) {
            ask_replace(w, j, state);
        }
    }
}
