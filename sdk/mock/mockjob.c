/*
 * mockjob.c - the mock host's fake jobs: a body, attributes, a group id and
 * an attempt, run through key derivation (mockkey.c) and handle() as the
 * host runs them, with what came back kept for the test. Not a simulation
 * of the job lifecycle: no claim, retry, DLQ or transaction happens here.
 */
#include "buf.h"
#include "cut.h"
#include "jsonpath.h"
#include "mock_internal.h"
#include "mockapi.h"
#include "mockkey.h"
#include "tracectx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

twice_mock_job *
twice_mock_job_new(twice_mock *m, const char *body)
{
    struct twice_job *j = calloc(1, sizeof(*j));
    if (j == NULL) {
        return NULL;
    }
    j->mock = m;
    j->attempt = 1;
    j->retry_after = -1;
    j->downstream_unavailable = -1;
    j->body = strdup(body != NULL ? body : "");
    pthread_mutex_lock(&m->lock);
    unsigned long id = ++m->next_id;
    pthread_mutex_unlock(&m->lock);
    if (j->body == NULL || asprintf(&j->message_id, "mock-message-%lu", id) < 0) {
        j->message_id = NULL;
        twice_mock_job_free((twice_mock_job *) j);
        return NULL;
    }
    j->body_len = strlen(j->body);
    /* Parsed by the host's own parser: a bare scalar accepted (it simply
     * has no fields), a repeated name read as its last, the same reason
     * when it fails. */
    j->root = jsondoc_parse(j->body, j->body_len, j->body_error, sizeof(j->body_error));
    return (twice_mock_job *) j;
}

/* Forget the messages a run staged. */
static void
clear_sent(struct twice_job *j)
{
    for (size_t i = 0; i < j->nsent; i++) {
        free(j->sent[i].url);
        free(j->sent[i].body);
        free(j->sent[i].group_id);
        free(j->sent[i].attrs_json);
    }
    free(j->sent);
    j->sent = NULL;
    j->nsent = j->capsent = 0;
    j->send_refused = 0;
}

static void
clear_results(struct twice_job *j)
{
    clear_sent(j);
    free(j->key);
    free(j->error);
    j->key = j->error = NULL;
    j->reason = NULL;
    j->retry_after = -1;
    j->downstream_unavailable = -1;
    j->handled = 0;
    mocklog_clear(&j->log);
    for (size_t i = 0; i < j->nkept; i++) {
        free(j->kept[i]);
    }
    free(j->kept);
    j->kept = NULL;
    j->nkept = j->capkept = 0;
}

void
twice_mock_job_free(twice_mock_job *mj)
{
    struct twice_job *j = (struct twice_job *) mj;
    if (j == NULL) {
        return;
    }
    clear_results(j);
    for (size_t i = 0; i < j->nattrs; i++) {
        free(j->attrs[i].name);
        free(j->attrs[i].type);
        free(j->attrs[i].value);
    }
    free(j->attrs);
    jsondoc_free(j->root);
    free(j->body);
    free(j->message_id);
    free(j->group_id);
    free(j->queue);
    free(j->traceparent);
    free(j);
}

int
twice_mock_job_attr(twice_mock_job *mj, const char *name, const char *type, const char *value)
{
    struct twice_job *j = (struct twice_job *) mj;
    struct mock_attr *a = realloc(j->attrs, (j->nattrs + 1) * sizeof(*a));
    if (a == NULL) {
        return -1;
    }
    j->attrs = a;
    struct mock_attr at = {strdup(name), strdup(type != NULL ? type : "String"),
                           strdup(value != NULL ? value : "")};
    if (at.name == NULL || at.type == NULL || at.value == NULL) {
        free(at.name);
        free(at.type);
        free(at.value);
        return -1;
    }
    j->attrs[j->nattrs++] = at;
    return 0;
}

/* Replace *slot with a copy of s (NULL clears it when allow_null). */
static int
replace(char **slot, const char *s, int allow_null)
{
    char *copy = NULL;
    if (s == NULL && !allow_null) {
        return -1;
    }
    if (s != NULL && (copy = strdup(s)) == NULL) {
        return -1;
    }
    free(*slot);
    *slot = copy;
    return 0;
}

int
twice_mock_job_message_id(twice_mock_job *mj, const char *message_id)
{
    return replace(&((struct twice_job *) mj)->message_id, message_id, 0);
}

int
twice_mock_job_queue(twice_mock_job *mj, const char *queue)
{
    return replace(&((struct twice_job *) mj)->queue, queue, 0);
}

int
twice_mock_job_group(twice_mock_job *mj, const char *group_id)
{
    return replace(&((struct twice_job *) mj)->group_id, group_id, 1);
}

void
twice_mock_job_attempt(twice_mock_job *mj, int attempt)
{
    ((struct twice_job *) mj)->attempt = attempt;
}

int
twice_mock_job_traceparent(twice_mock_job *mj, const char *traceparent)
{
    struct tracectx c;
    if (traceparent == NULL ||
        tracectx_parse_traceparent(traceparent, strlen(traceparent), &c, NULL) != 0) {
        return -1;
    }
    return replace(&((struct twice_job *) mj)->traceparent, traceparent, 0);
}

void
twice_mock_job_db(twice_mock_job *mj, void *pgconn)
{
    ((struct twice_job *) mj)->db = pgconn;
}

/* ---- running a job ---- */

/* A dead-lettered job's error as its twice-error keeps it: the first
 * JOB_ERROR_MAX bytes, cut between characters, then "..." (text/cut.c,
 * twiced's job_deadletter). Returns st. */
static twice_status
dead_letter_error(struct twice_job *j, twice_status st)
{
    if (j->error == NULL || strlen(j->error) <= JOB_ERROR_MAX) {
        return st;
    }
    struct buf b = BUF_INIT;
    buf_puts(&b, j->error);
    cut_error(&b);
    char *cut = buf_steal(&b);
    if (cut != NULL) {
        free(j->error);
        j->error = cut;
    }
    return st;
}

twice_status
twice_mock_run(twice_mock_job *mj)
{
    struct twice_job *j = (struct twice_job *) mj;
    struct twice_mock *m = j->mock;
    clear_results(j);
    if (!m->initialized && m->plugin->init != NULL) {
        mockapi_job_error(j, "twice_mock_run before a successful twice_mock_init");
        return TWICE_RETRY;
    }
    if (mockkey_derive(j) != 0) {
        return dead_letter_error(j, TWICE_REJECT);
    }
    j->handled = 1;
    mockapi_set_current(m);
    mockapi_set_job(j);
    twice_status st = m->plugin->handle(m->state, j);
    mockapi_set_job(NULL);
    mockapi_set_current(NULL);
    if (st != TWICE_DONE && st != TWICE_RETRY && st != TWICE_REJECT) {
        /* the host says it the same way, as its own error (not api->error:
         * the job's handle() has returned) */
        mockapi_job_error(j, "handle() returned %d, not DONE, RETRY or REJECT", (int) st);
        st = TWICE_RETRY;
    }
    if (st == TWICE_DONE && j->send_refused) {
        st = TWICE_REJECT; /* as the host: the refused send() is the job's error */
    }
    if (st != TWICE_DONE) {
        clear_sent(j); /* the host sends nothing of a RETRY or REJECT */
    }
    j->reason = st == TWICE_REJECT ? "rejected" : NULL;
    return st == TWICE_REJECT ? dead_letter_error(j, st) : st;
}

size_t
twice_mock_job_sent_count(const twice_mock_job *mj)
{
    return ((const struct twice_job *) mj)->nsent;
}

const char *
twice_mock_job_sent(const twice_mock_job *mj, size_t i, const char **url, const char **group_id,
                    int *delay, const char **attrs_json)
{
    const struct twice_job *j = (const struct twice_job *) mj;
    if (i >= j->nsent) {
        return NULL;
    }
    const struct mock_sent *s = &j->sent[i];
    if (url != NULL) {
        *url = s->url;
    }
    if (group_id != NULL) {
        *group_id = s->group_id;
    }
    if (delay != NULL) {
        *delay = s->delay;
    }
    if (attrs_json != NULL) {
        *attrs_json = s->attrs_json;
    }
    return s->body;
}

const char *
twice_mock_job_key(const twice_mock_job *mj)
{
    return ((const struct twice_job *) mj)->key;
}

const char *
twice_mock_job_reason(const twice_mock_job *mj)
{
    return ((const struct twice_job *) mj)->reason;
}

const char *
twice_mock_job_error(const twice_mock_job *mj)
{
    return ((const struct twice_job *) mj)->error;
}

int
twice_mock_job_retry_after(const twice_mock_job *mj)
{
    return ((const struct twice_job *) mj)->retry_after;
}

int
twice_mock_job_downstream_unavailable(const twice_mock_job *mj)
{
    return ((const struct twice_job *) mj)->downstream_unavailable;
}

int
twice_mock_job_handled(const twice_mock_job *mj)
{
    return ((const struct twice_job *) mj)->handled;
}

size_t
twice_mock_job_log_count(const twice_mock_job *mj)
{
    return ((const struct twice_job *) mj)->log.n;
}

const char *
twice_mock_job_log_text(const twice_mock_job *mj, size_t i, twice_log_level *level)
{
    const struct twice_job *j = (const struct twice_job *) mj;
    if (i >= j->log.n) {
        return NULL;
    }
    if (level != NULL) {
        *level = j->log.lines[i].level;
    }
    return j->log.lines[i].text;
}
