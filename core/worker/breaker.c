/*
 * breaker.c - a queue's circuit breaker in a worker (breaker.h): reads and
 * updates the host's shared flow state (flow.h) around each job. The policy
 * of what an open breaker does to a message is lifecycle.c's; recording the
 * breaker in PostgreSQL and alerting are the master's (pausewatch.c).
 */
#include "breaker.h"

#include "config.h"
#include "flow.h"
#include "instance.h"
#include "job.h"
#include "lifecycle.h"
#include "log.h"
#include "verdict.h"
#include "worker.h"

#include <time.h>

static int64_t
now_s(void)
{
    return (int64_t) time(NULL);
}

/* Seconds until the breaker of queue may close, at least 1; cooldown when
 * unknown. */
static int
cooldown_left(const struct config_queue *qc)
{
    int64_t left = flow_open_until(qc->name) - now_s();
    if (left < 1) {
        return qc->breaker_cooldown > 0 ? qc->breaker_cooldown : 1;
    }
    return left > LIFECYCLE_MAX_DELAY ? LIFECYCLE_MAX_DELAY : (int) left;
}

int
breaker_receivable(struct wqueue *q)
{
    switch (flow_mode(q->cfg->name, now_s())) {
    case FLOW_RUN:
        return -1;
    case FLOW_PROBING:
        /* probes are granted by the master, also on a host without this
         * queue's breaker (pausewatch.c): someone must find out it is back */
        return flow_probe_take(q->cfg->name) ? 1 : 0;
    default:
        return 0;
    }
}

void
breaker_probe_unused(struct wqueue *q)
{
    flow_probe_give_back(q->cfg->name);
}

int
breaker_paused(struct wqueue *q)
{
    return flow_mode(q->cfg->name, now_s()) != FLOW_RUN;
}

int
breaker_before_run(struct twice_job *j)
{
    const struct config_queue *qc = j->qcfg;
    if (qc->breaker_failures <= 0 || j->probe) {
        return 0;
    }
    enum flow_mode m = flow_mode(qc->name, now_s());
    if (m != FLOW_OPEN && m != FLOW_PROBING) {
        return 0;
    }
    struct lifecycle_verdict v;
    lifecycle_on_failure(LIFECYCLE_BREAKER_OPEN, cooldown_left(qc), NULL, &v);
    verdict_apply(j, &v);
    return 1;
}

/* Open the breaker of the job's queue at its threshold; 1 when it is open.
 * hint: the seconds the plugin said its downstream is out (0 unknown), a
 * longer cooldown than the queue's. */
static int
count_failure(struct twice_job *j, int hint)
{
    const struct config_queue *qc = j->qcfg;
    int64_t now = now_s();
    enum flow_mode m = flow_mode(qc->name, now);
    if (m == FLOW_OPEN || m == FLOW_PROBING) {
        return 1;
    }
    if (m == FLOW_PAUSED) {
        return 0; /* an operator's pause: failures are not the breaker's to count */
    }
    int n = flow_failure(qc->name, qc->breaker_window, now);
    if (n < qc->breaker_failures) {
        return 0;
    }
    /* A downstream's Retry-After lengthens the cooldown up to cooldown_max,
     * not past it: past the cap a probe finds out whether it came back. */
    int cooldown = qc->breaker_cooldown;
    int cap = qc->breaker_cap > cooldown ? qc->breaker_cap : cooldown;
    if (hint > cooldown) {
        cooldown = hint < cap ? hint : cap;
    }
    if (flow_trip(qc->name, cooldown, now)) {
        job_log(TWICE_LOG_WARN, j,
                "circuit breaker opened: %d transient failures within %ds; queue %s paused "
                "for %ds",
                n, qc->breaker_window, qc->name, cooldown);
    }
    return 0; /* the failure that opens it counts, as the ones before it did */
}

/* The first to tell the breaker a run's outcome: its handler, or the
 * heartbeat when the run passed its timeout. A transactional run goes on
 * past it (its transaction holds its key): its later answer is not counted
 * again, nor reported as a second probe outcome. */
static int
first_to_tell(struct twice_job *j)
{
    int none = 0;
    return __atomic_compare_exchange_n(&j->breaker_told, &none, 1, 0, __ATOMIC_ACQ_REL,
                                       __ATOMIC_ACQUIRE);
}

/* A probe's outcome, reported (how is its name in the log: "failed", "ran
 * past its timeout"). A host without the queue's breaker runs probes too. */
static void
probe_done(struct twice_job *j, int transient, const char *how, int *open, int *delay)
{
    const struct config_queue *qc = j->qcfg;
    flow_probe_done(qc->name, !transient);
    job_log(TWICE_LOG_INFO, j, "breaker probe %s", transient ? how : "succeeded");
    __atomic_store_n(&j->probe, 0, __ATOMIC_RELEASE); /* a FIFO retry in place is no probe */
    if (transient) {
        /* Hidden for the cooldown; a host without the breaker knows none: its
         * message waits in the queue, which no host receives from while open. */
        *open = 1;
        *delay = qc->breaker_failures > 0 && qc->breaker_cooldown > 0 ? qc->breaker_cooldown : 1;
    }
}

/* After a run: a transient one counts toward the threshold, a probe's
 * outcome is reported; a run told already is only not counted while open. */
static void
after(struct twice_job *j, int transient, int hint, const char *how, int *open, int *delay)
{
    const struct config_queue *qc = j->qcfg;
    *open = 0;
    *delay = 0;
    int probe = __atomic_load_n(&j->probe, __ATOMIC_ACQUIRE);
    if (qc->breaker_failures <= 0 && !probe) {
        return;
    }
    if (!first_to_tell(j)) {
        enum flow_mode m = flow_mode(qc->name, now_s());
        if (transient && (m == FLOW_OPEN || m == FLOW_PROBING)) {
            *open = 1;
            *delay = cooldown_left(qc);
        }
        return;
    }
    if (probe) {
        probe_done(j, transient, how, open, delay);
        return;
    }
    if (transient && count_failure(j, hint)) {
        *open = 1;
        *delay = cooldown_left(qc);
    }
}

void
breaker_after_run(struct twice_job *j, twice_status st, int *open, int *delay)
{
    after(j, st != TWICE_DONE && st != TWICE_REJECT, j->downstream_secs, "failed", open, delay);
}

void
breaker_after_timeout(struct twice_job *j, int *open, int *delay)
{
    after(j, 1, 0, "ran past its timeout", open, delay);
}
