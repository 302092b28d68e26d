/*
 * verdict.c - carrying out a lifecycle verdict on a job (see verdict.h): the
 * counters and the log line it names, then the job's action. Deciding is
 * lifecycle.c's; the side effects on SQS and PostgreSQL are the acker's.
 */
#include "verdict.h"

#include "config.h"
#include "instance.h"
#include "jobspan.h"
#include "lifecycle.h"
#include "metrics.h"

enum job_action
verdict_apply(struct twice_job *j, const struct lifecycle_verdict *v)
{
    const char *queue = j->qcfg->name;
    const char *plugin = j->plugin != NULL ? j->plugin->name : "";
    if (v->attempt > 0) {
        j->attempt = v->attempt; /* before the log line, which names it */
    }
    if (v->conflict) {
        metrics_count(MET_CONFLICTS, queue, plugin, NULL, 1);
    }
    if (v->has_log) {
        job_log(v->log_level, j, "%s%s%s", v->log.before, v->log.arg, v->log.after);
    }
    if (v->duplicate != NULL) {
        metrics_count(MET_DUPLICATES, queue, plugin, v->duplicate, 1);
    }
    j->counted = v->counted;
    jobspan_verdict(j, v);
    if (v->action == JOB_ACT_DEADLETTER) {
        j->runs = v->runs;
        job_deadletter(j, v->reason, "%s%s%s", v->detail.before, v->detail.arg, v->detail.after);
    } else {
        j->action = v->action;
        j->delay = v->delay;
    }
    return j->action;
}
