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
        return q->cfg->breaker_failures > 0 && flow_probe_take(q->cfg->name) ? 1 : 0;
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
    int cooldown = qc->breaker_cooldown;
    if (hint > cooldown) {
        cooldown = hint;
    }
    if (flow_trip(qc->name, cooldown, now)) {
        job_log(TWICE_LOG_WARN, j,
                "circuit breaker opened: %d transient failures within %ds; queue %s paused "
                "for %ds",
                n, qc->breaker_window, qc->name, cooldown);
    }
    return 0; /* the failure that opens it counts, as the ones before it did */
}

/* After a run: a transient one counts toward the threshold, a probe's
 * outcome is reported (how is its name in the log: "failed", "ran past its
 * timeout"). */
static void
after(struct twice_job *j, int transient, int hint, const char *how, int *open, int *delay)
{
    const struct config_queue *qc = j->qcfg;
    *open = 0;
    *delay = 0;
    if (qc->breaker_failures <= 0) {
        return;
    }
    if (j->probe) {
        flow_probe_done(qc->name, !transient);
        job_log(TWICE_LOG_INFO, j, "breaker probe %s", transient ? how : "succeeded");
        j->probe = 0; /* a FIFO retry in place is no second probe */
        if (transient) {
            *open = 1;
            *delay = qc->breaker_cooldown;
        }
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
