/*
 * job.c - creating and freeing jobs, and the small pieces of state every
 * stage of a job shares (its parsed body, its kept strings, its DLQ verdict).
 * The stages themselves live in the worker (receiver.c, handler.c, acker.c),
 * which decides each job's fate with lifecycle.c.
 */
#include "job.h"

#include "buf.h"
#include "config.h"
#include "instance.h"
#include "jsonpath.h"
#include "log.h"
#include "span.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct twice_job *
job_new(struct wqueue *q, const struct config_queue *qc, struct sqs_message *m)
{
    struct twice_job *j = calloc(1, sizeof(*j));
    if (j == NULL) {
        return NULL;
    }
    j->queue = q;
    j->qcfg = qc;
    j->msg = *m;
    memset(m, 0, sizeof(*m));
    j->receives = j->msg.receive_count > 0 ? j->msg.receive_count : 1;
    j->retry_after = -1;
    clock_gettime(CLOCK_MONOTONIC, &j->received_at);
    j->extended_at = j->received_at;
    return j;
}

void
job_free(struct twice_job *j)
{
    if (j == NULL) {
        return;
    }
    sqs_message_clear(&j->msg);
    jsondoc_free(j->body);
    arena_free(&j->scratch);
    free(j->key);
    free(j->error);
    span_free(j->span);
    outbox_staged_clear(&j->outbox);
    free(j);
}

void
job_log_ctx(const struct twice_job *j, struct log_job *ctx)
{
    memset(ctx, 0, sizeof(*ctx));
    ctx->queue = j->qcfg != NULL ? j->qcfg->name : NULL;
    ctx->message_id = j->msg.message_id;
    ctx->plugin = j->plugin != NULL ? j->plugin->name : NULL;
    ctx->key = j->key;
    ctx->attempt = j->attempt;
}

void
job_log(twice_log_level level, const struct twice_job *j, const char *fmt, ...)
{
    struct log_job ctx;
    job_log_ctx(j, &ctx);
    va_list ap;
    va_start(ap, fmt);
    log_vjob(level, &ctx, fmt, ap);
    va_end(ap);
}

struct jsondoc *
job_body(struct twice_job *j)
{
    if (!j->body_parsed) {
        j->body_parsed = 1;
        j->body =
            jsondoc_parse(j->msg.body, j->msg.body_len, j->body_error, sizeof(j->body_error));
    }
    return j->body;
}

void
job_deadletter(struct twice_job *j, const char *reason, const char *fmt, ...)
{
    struct buf b = BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&b, fmt, ap);
    va_end(ap);
    free(j->error);
    j->error = buf_steal(&b);
    snprintf(j->reason, sizeof(j->reason), "%s", reason);
    j->action = JOB_ACT_DEADLETTER;
}

/* Strings handed to plugins live in the job's arena: freed all at once
 * when the job ends. */
const char *
job_keep(struct twice_job *j, const char *s, size_t len)
{
    return arena_strndup(&j->scratch, s, len);
}

double
job_elapsed(const struct timespec *a, const struct timespec *b)
{
    return (double) (b->tv_sec - a->tv_sec) + (double) (b->tv_nsec - a->tv_nsec) / 1e9;
}
