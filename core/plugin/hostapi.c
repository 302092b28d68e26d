/*
 * hostapi.c - the twice_api table (what plugins may ask of the host) and the
 * brackets around every call into plugin code. Everything handed to a
 * plugin is borrowed from the job and lives until handle() returns.
 */
#include "hostapi.h"

#include "buf.h"
#include "config.h"
#include "idem.h"
#include "instance.h"
#include "job.h"
#include "jsonpath.h"
#include "keytmpl.h"
#include "log.h"
#include "sqs_limits.h"
#include "utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The plugin whose code runs on this thread: names log lines without a job. */
static _Thread_local const char *current_plugin;

struct twice_settings {
    const struct config_plugin *cfg;
    const twice_setting *decl;
};

/* A plugin's log line carries its job's context, or at least the name of
 * the plugin being called. */
static void
api_log_ctx(const struct twice_job *j, struct log_job *ctx)
{
    memset(ctx, 0, sizeof(*ctx));
    if (j != NULL) {
        job_log_ctx(j, ctx);
    }
    if (ctx->plugin == NULL) {
        ctx->plugin = current_plugin;
    }
}

static void
api_log(const twice_job *job, twice_log_level level, const char *fmt, ...)
{
    struct log_job ctx;
    if ((int) level < TWICE_LOG_ERROR || level > TWICE_LOG_DEBUG) {
        level = TWICE_LOG_INFO;
    }
    api_log_ctx(job, &ctx);
    va_list ap;
    va_start(ap, fmt);
    log_vjob(level, &ctx, fmt, ap);
    va_end(ap);
}

static const char *
api_body(const twice_job *job, size_t *len)
{
    if (len != NULL) {
        *len = job->msg.body != NULL ? job->msg.body_len : 0;
    }
    return job->msg.body != NULL ? job->msg.body : "";
}

/* The API takes const jobs; parsing the body lazily and keeping strings
 * alive are the host's bookkeeping, invisible to the plugin. */
static struct twice_job *
mutable_job(const twice_job *job)
{
    return (struct twice_job *) job;
}

static const char *
api_field(const twice_job *job, const char *path, size_t *len)
{
    struct twice_job *j = mutable_job(job);
    json_t *v = jsonpath_get(job_body(j), path);
    struct buf b = BUF_INIT;
    const char *out = NULL;
    if (v != NULL && jsonpath_scalar_text(v, &b) == 0 && !b.failed) {
        out = job_keep(j, buf_str(&b), b.len);
        if (out != NULL && len != NULL) {
            *len = b.len;
        }
    }
    buf_free(&b);
    return out;
}

static const char *
api_field_json(const twice_job *job, const char *path, size_t *len)
{
    struct twice_job *j = mutable_job(job);
    json_t *v = jsonpath_get(job_body(j), path);
    if (v == NULL) {
        return NULL;
    }
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
    if (s == NULL) {
        return NULL;
    }
    const char *out = job_keep(j, s, strlen(s));
    if (out != NULL && len != NULL) {
        *len = strlen(s);
    }
    free(s);
    return out;
}

static const char *
api_attr(const twice_job *job, const char *name, size_t *len)
{
    const struct sqs_attr *a = sqs_attr_find(job->msg.attrs, job->msg.nattrs, name);
    if (a == NULL || a->string_value == NULL) {
        return NULL;
    }
    if (len != NULL) {
        *len = strlen(a->string_value);
    }
    return a->string_value;
}

static const char *
api_key(const twice_job *job)
{
    return job->key != NULL ? job->key : "";
}

static int
api_attempt(const twice_job *job)
{
    return job->attempt;
}

static const char *
api_message_id(const twice_job *job)
{
    return job->msg.message_id != NULL ? job->msg.message_id : "";
}

static const char *
api_group_id(const twice_job *job)
{
    return job->msg.group_id;
}

static const char *
api_setting(const twice_settings *s, const char *name)
{
    if (s == NULL || name == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < s->cfg->nsettings; i++) {
        if (strcmp(s->cfg->settings[i].name, name) == 0) {
            return s->cfg->settings[i].value;
        }
    }
    for (const twice_setting *d = s->decl; d != NULL && d->name != NULL; d++) {
        if (strcmp(d->name, name) == 0) {
            return d->default_value;
        }
    }
    return NULL;
}

static void *
api_db(const twice_job *job)
{
    return job->db != NULL ? idem_pgconn(job->db) : NULL;
}

static void
api_retry_after(twice_job *job, unsigned seconds)
{
    job->retry_after = seconds > SQS_VISIBILITY_MAX ? SQS_VISIBILITY_MAX : (int) seconds;
}

static void
api_error(twice_job *job, const char *fmt, ...)
{
    struct buf b = BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&b, fmt, ap);
    va_end(ap);
    char *text = buf_steal(&b);
    if (text != NULL) {
        free(job->error);
        job->error = text;
    }
}

static const twice_api host_api = {
    .size = sizeof(twice_api),
    .abi_major = TWICE_ABI_MAJOR,
    .abi_minor = TWICE_ABI_MINOR,
    .log = api_log,
    .body = api_body,
    .field = api_field,
    .field_json = api_field_json,
    .attr = api_attr,
    .key = api_key,
    .attempt = api_attempt,
    .message_id = api_message_id,
    .group_id = api_group_id,
    .setting = api_setting,
    .db = api_db,
    .retry_after = api_retry_after,
    .error = api_error,
};

int
hostapi_init(struct plugin_instance *p, char *err, size_t errlen)
{
    const twice_plugin *d = p->lp.desc;
    struct twice_settings settings = {p->cfg, d->settings};
    int rc = 0;
    if (d->init != NULL) {
        current_plugin = p->name;
        rc = d->init(&host_api, &settings, &p->lp.state);
        current_plugin = NULL;
    }
    if (rc != 0) {
        snprintf(err, errlen, "plugin '%s': init failed (returned %d; see its log lines)", p->name,
                 rc);
        return -1;
    }
    p->lp.initialized = 1;
    return 0;
}

void
hostapi_fini(struct plugin_instance *p)
{
    if (p->lp.initialized && p->lp.desc->fini != NULL) {
        current_plugin = p->name;
        p->lp.desc->fini(p->lp.state);
        current_plugin = NULL;
    }
    p->lp.initialized = 0;
}

/* A key from derive_key() must obey what templates obey: not empty, no
 * control characters, at most TWICE_KEY_MAX bytes. */
static int
derive_with_plugin(const struct plugin_instance *p, struct twice_job *j, struct buf *out)
{
    char key[TWICE_KEY_MAX + 1];
    current_plugin = p->name;
    int n = p->lp.desc->derive_key(p->lp.state, j, key, sizeof(key));
    current_plugin = NULL;
    if (n < 0) {
        job_deadletter(j, "bad-key-field", "derive_key: %s",
                       j->error != NULL ? j->error : "the plugin found no key");
        return -1;
    }
    if (n == 0 || (size_t) n > TWICE_KEY_MAX) {
        job_deadletter(j, n == 0 ? "bad-key-field" : "key-too-long",
                       "derive_key returned %d bytes (1-%d allowed)", n, TWICE_KEY_MAX);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if ((unsigned char) key[i] < 0x20 || key[i] == 0x7f) {
            job_deadletter(j, "bad-key-field", "derive_key returned a control character");
            return -1;
        }
    }
    if (!utf8_valid(key, (size_t) n)) {
        /* PostgreSQL would refuse it, and with it the whole claimed batch. */
        job_deadletter(j, "bad-key-field", "derive_key returned bytes that are not UTF-8");
        return -1;
    }
    if (buf_append(out, key, (size_t) n) != 0) {
        job_deadletter(j, "bad-key-field", "out of memory deriving the key");
        return -1;
    }
    return 0;
}

int
hostapi_derive_key(const struct plugin_instance *p, struct twice_job *j, struct buf *out)
{
    if (p->lp.desc->derive_key != NULL) {
        return derive_with_plugin(p, j, out);
    }
    struct keytmpl_input in = {
        .attrs = j->msg.attrs,
        .nattrs = j->msg.nattrs,
        .group_id = j->msg.group_id,
    };
    if (keytmpl_needs_body(p->lp.tmpl)) {
        in.body = job_body(j);
        in.body_error = j->body_error;
    }
    char err[256];
    enum keytmpl_result r = keytmpl_expand(p->lp.tmpl, &in, out, err, sizeof(err));
    if (r != KEYTMPL_OK) {
        job_deadletter(j, keytmpl_reason(r), "%s", err);
        return -1;
    }
    return 0;
}

twice_status
hostapi_handle(const struct plugin_instance *p, struct twice_job *j)
{
    current_plugin = p->name;
    twice_status st = p->lp.desc->handle(p->lp.state, j);
    current_plugin = NULL;
    if (st != TWICE_DONE && st != TWICE_RETRY && st != TWICE_REJECT) {
        api_error(j, "handle() returned %d, not DONE, RETRY or REJECT", (int) st);
        st = TWICE_RETRY;
    }
    return st;
}
