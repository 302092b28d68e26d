/*
 * job.c - creating and freeing jobs, and the small pieces of state every
 * stage of a job shares (its parsed body, its kept strings, its DLQ verdict).
 * The stages themselves live in the worker (receiver.c, handler.c, acker.c),
 * which decides each job's fate with lifecycle.c.
 */
#include "job.h"

#include "buf.h"
#include "config.h"
#include "envelope.h"
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
    j->shm_idx = -1;
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
    if (j->env != NULL) {
        envelope_free(j->env);
        free(j->env);
    }
    free(j->payload);
    free(j->pointer);
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
        size_t len;
        const char *text = job_view(j, &len);
        j->body = jsondoc_parse(text, len, j->body_error, sizeof(j->body_error));
    }
    return j->body;
}

const char *
job_view(const struct twice_job *j, size_t *len)
{
    if (j->view != NULL) {
        *len = j->view_len;
        return j->view;
    }
    *len = j->msg.body != NULL ? j->msg.body_len : 0;
    return j->msg.body != NULL ? j->msg.body : "";
}

void
job_set_view(struct twice_job *j, const char *text, size_t len)
{
    jsondoc_free(j->body);
    j->body = NULL;
    j->body_parsed = 0;
    j->view = text;
    j->view_len = len;
}

const struct sqs_attr *
job_attr(const struct twice_job *j, const char *name)
{
    const struct sqs_attr *a = NULL;
    if (j->env != NULL) {
        a = sqs_attr_find(j->env->attrs, j->env->nattrs, name);
    }
    return a != NULL ? a : sqs_attr_find(j->msg.attrs, j->msg.nattrs, name);
}

const struct sqs_attr *
job_attr_at(const struct twice_job *j, size_t i)
{
    if (i < j->msg.nattrs) {
        return &j->msg.attrs[i];
    }
    i -= j->msg.nattrs;
    return j->env != NULL && i < j->env->nattrs ? &j->env->attrs[i] : NULL;
}

void
job_deadletter(struct twice_job *j, const char *reason, const char *fmt, ...)
{
    struct buf b = BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&b, fmt, ap);
    va_end(ap);
    cut_error(&b); /* JOB_ERROR_MAX: the rule the mock host follows too */
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
