/*
 * jobspan.c - the span of each job in a worker (see jobspan.h): where its
 * context comes from, which moments become events, and which outcome and
 * attributes it ends with. The ids, the encoding and the export are
 * trace/'s; the job's fate is lifecycle.c's.
 */
#include "jobspan.h"

#include "config.h"
#include "exporter.h"
#include "instance.h"
#include "job.h"
#include "lifecycle.h"
#include "log.h"
#include "span.h"

#include <stdio.h>
#include <string.h>

/* How long a stopping worker may spend sending its last spans. */
#define JOBSPAN_FLUSH_MS 2000

void
jobspan_start(const struct config *c)
{
    char desc[600], err[600];
    if (exporter_start(c, desc, sizeof(desc), err, sizeof(err)) != 0) {
        log_error("tracing is off in this worker: %s", err);
    } else if (desc[0] != '\0') {
        log_info("tracing: %s", desc);
    }
}

void
jobspan_stop(void)
{
    exporter_stop(JOBSPAN_FLUSH_MS);
}

/* The message's traceparent attribute: 1 and *out when valid, 0 when
 * absent, -1 with *why when present but not to be trusted. */
static int
incoming_traceparent(const struct twice_job *j, struct tracectx *out, const char **why)
{
    const struct sqs_attr *a = sqs_attr_find(j->msg.attrs, j->msg.nattrs, "traceparent");
    if (a == NULL) {
        return 0;
    }
    if (a->string_value == NULL) {
        *why = "a Binary attribute, not a String";
        return -1;
    }
    return tracectx_parse_traceparent(a->string_value, strlen(a->string_value), out, why) == 0
               ? 1
               : -1;
}

void
jobspan_begin(struct twice_job *j)
{
    if (!exporter_on()) {
        return;
    }
    struct tracectx parent, link;
    const char *bad_parent = NULL, *bad_link = NULL;
    int has_parent = incoming_traceparent(j, &parent, &bad_parent) == 1;
    int has_link = 0;
    if (!has_parent && j->msg.aws_trace_header != NULL) {
        has_link = tracectx_parse_xray(j->msg.aws_trace_header, strlen(j->msg.aws_trace_header),
                                       &link, &bad_link) == 0;
    }
    struct span *s = span_new(has_parent ? &parent : NULL, has_link ? &link : NULL);
    if (s == NULL) {
        return; /* no memory or no random bytes: this job goes untraced */
    }
    span_copy(s->queue, sizeof(s->queue), j->qcfg->name);
    if (bad_parent != NULL) {
        span_event(s, 0, "invalid traceparent", "twice.invalid.reason", bad_parent);
        job_log(TWICE_LOG_DEBUG, j, "traceparent attribute ignored (%s): a new trace", bad_parent);
    }
    if (bad_link != NULL) {
        span_event(s, 0, "invalid AWSTraceHeader", "twice.invalid.reason", bad_link);
        job_log(TWICE_LOG_DEBUG, j, "AWSTraceHeader ignored (%s)", bad_link);
    }
    j->span = s;
}

void
jobspan_verdict(struct twice_job *j, const struct lifecycle_verdict *v)
{
    struct span *s = j->span;
    char delay[24];
    if (s == NULL) {
        return;
    }
    if (v->duplicate != NULL) {
        span_event(s, 0, "duplicate", "twice.duplicate.kind", v->duplicate);
    }
    snprintf(delay, sizeof(delay), "%d", v->delay);
    switch (v->action) {
    case JOB_ACT_NONE: /* only a claim lets a job run */
        span_event(s, 0, "claimed", NULL, NULL);
        break;
    case JOB_ACT_RETRY:
        span_event(s, 0, "retry", "twice.retry.delay_seconds", delay);
        break;
    case JOB_ACT_DEADLETTER:
        span_event(s, 0, "dead_letter", "twice.dlq.reason", v->reason);
        break;
    case JOB_ACT_HIDE:
        span_event(s, 0, "hidden", "twice.hide.seconds", delay);
        break;
    case JOB_ACT_RETURN:
        span_event(s, 0, "returned", NULL, NULL);
        break;
    default:
        break;
    }
}

static int
has_event(const struct span *s, const char *name)
{
    for (int i = 0; i < s->nevents; i++) {
        if (strcmp(s->events[i].name, name) == 0) {
            return 1;
        }
    }
    return 0;
}

/* What became of the job, as twice.outcome says it. */
static const char *
outcome(const struct twice_job *j)
{
    switch (j->action) {
    case JOB_ACT_COMPLETE:
        return "done";
    case JOB_ACT_DELETE:
        return "duplicate";
    case JOB_ACT_RETRY:
        return "retry";
    case JOB_ACT_DEADLETTER:
        return !j->dlq_sent                         ? "unacknowledged"
               : strcmp(j->reason, "rejected") == 0 ? "rejected"
                                                    : "dead_lettered";
    case JOB_ACT_HIDE:
        return "hidden";
    case JOB_ACT_RETURN:
        return "returned";
    default: /* acknowledging failed too often, or the worker stopped first */
        return "unacknowledged";
    }
}

void
jobspan_end(struct twice_job *j)
{
    struct span *s = j->span;
    if (s == NULL) {
        return;
    }
    j->span = NULL;
    s->end_ns = span_now_ns();
    if (j->started_at.tv_sec != 0 || j->started_at.tv_nsec != 0) {
        span_event(s, span_mono_to_unix(s, &j->started_at), "handle", NULL, NULL);
    }
    if (j->action == JOB_ACT_DEADLETTER && !has_event(s, "dead_letter")) {
        span_event(s, 0, "dead_letter", "twice.dlq.reason", j->reason); /* decided on receipt */
    }
    s->outcome = outcome(j);
    s->error = j->action == JOB_ACT_RETRY || j->action == JOB_ACT_DEADLETTER;
    if (s->error) {
        span_copy(s->status_message, sizeof(s->status_message),
                  j->error != NULL ? j->error : j->reason);
    }
    span_copy(s->plugin, sizeof(s->plugin), j->plugin != NULL ? j->plugin->name : NULL);
    span_copy(s->message_id, sizeof(s->message_id), j->msg.message_id);
    span_copy(s->key, sizeof(s->key), j->key);
    s->attempt = j->attempt;
    s->body_size = (long long) j->msg.body_len;
    exporter_submit(s);
}
