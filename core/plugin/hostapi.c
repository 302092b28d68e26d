/*
 * hostapi.c - the twice_api table (what plugins may ask of the host) and the
 * brackets around every call into plugin code. Everything handed to a
 * plugin is borrowed from the job and lives until handle() returns.
 */
#include "hostapi.h"

#include "buf.h"
#include "cnum.h"
#include "config.h"
#include "deadjob.h"
#include "envelope.h"
#include "escape.h"
#include "fdguard.h"
#include "idem.h"
#include "instance.h"
#include "job.h"
#include "jsonpath.h"
#include "keytmpl.h"
#include "loader.h"
#include "log.h"
#include "sqs_limits.h"
#include "utf8.h"
#include "span.h"
#include "tracectx.h"
#include "send.h"

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The plugin whose code runs on this thread: names log lines without a job. */
static _Thread_local const char *current_plugin;

/* While init() runs: the last error (else warning) it logged, the cause
 * hostapi_init reports (twiced -t prints it, not only the log line). */
#define INIT_CAUSE_MAX 400
static _Thread_local int init_capture;
static _Thread_local char init_cause[INIT_CAUSE_MAX];
static _Thread_local int init_cause_level;
/* The declared setting init() blamed with api->setting_error() (the
 * declaration's own name), else NULL: the cause then stays its words. */
static _Thread_local const char *init_setting;

/* The settings init() or describe() is being handed on this thread: the
 * only ones api->setting and api->setting_error read. They live on the
 * caller's stack, so a plugin that kept the pointer and reads it later
 * (in handle) would read a dead frame: it gets NULL and an error line. */
static _Thread_local const struct twice_settings *live_settings;

/* derive_key() runs on this thread: api->field hands numbers in the form a
 * key template spells them, so keys made by plugins never change either. */
static _Thread_local int deriving_key;

/* The job whose handle() or derive_key() runs on this thread: the only one
 * the API's job functions take (plugin.h: a job is valid during that call,
 * on that thread). A handle kept and used later, or from another thread,
 * is told by one compare, without reading the job it points to (freed by
 * then). What cannot be told: a kept pointer that happens to equal the job
 * now running on the same thread (its memory reused): that call reads a
 * live job, the wrong one, and does not crash. */
static _Thread_local const struct twice_job *live_job;

static atomic_uint dead_job_said; /* a bit per enum deadjob_fn: said already */

static const char *called_last(void);

/* Whether job is not the one running on this thread (live_job): then the
 * call is refused, and said once per function for the process, naming the
 * plugin on this thread, else the plugin called last (a plugin's own
 * thread runs none). One compare when the job is live. */
static int
dead_job(const twice_job *job, enum deadjob_fn fn)
{
    if (job == live_job && job != NULL) {
        return 0;
    }
    unsigned bit = 1u << fn;
    if ((atomic_fetch_or(&dead_job_said, bit) & bit) == 0) {
        char line[512]; /* the words, shared with the SDK's mock host (text/deadjob.c) */
        const char *plugin = current_plugin != NULL ? current_plugin : called_last();
        deadjob_line(line, sizeof(line), plugin, current_plugin == NULL, fn);
        log_error("%s", line);
    }
    return 1;
}

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
    if (job != NULL && dead_job(job, DEADJOB_LOG)) {
        job = NULL; /* the line, without the job it cannot read */
    }
    api_log_ctx(job, &ctx);
    va_list ap;
    va_start(ap, fmt);
    if (init_capture && init_setting == NULL && level <= TWICE_LOG_WARN &&
        (int) level <= init_cause_level) {
        va_list copy;
        va_copy(copy, ap);
        utf8_mark_cut(init_cause, sizeof(init_cause),
                      cnum_vsnprintf(init_cause, sizeof(init_cause), fmt, copy));
        va_end(copy);
        init_cause_level = level;
    }
    log_vjob(level, &ctx, fmt, ap);
    va_end(ap);
}

static const char *
api_body(const twice_job *job, size_t *len)
{
    if (dead_job(job, DEADJOB_BODY)) {
        return NULL;
    }
    size_t n;
    const char *text = job_view(job, &n);
    if (len != NULL) {
        *len = n;
    }
    return text;
}

/* The API takes const jobs; parsing the body lazily and keeping strings
 * alive are the host's bookkeeping, invisible to the plugin. */
static struct twice_job *
mutable_job(const twice_job *job)
{
    return (struct twice_job *) job;
}

/* A scalar as a plugin is handed it: numbers exactly as the producer wrote
 * them, but inside derive_key() in the form keys have always had. */
static const char *
api_field(const twice_job *job, const char *path, size_t *len)
{
    if (dead_job(job, DEADJOB_FIELD)) {
        return NULL;
    }
    struct twice_job *j = mutable_job(job);
    const struct jsondoc_value *v = jsonpath_get(job_body(j), path);
    struct buf b = BUF_INIT;
    const char *out = NULL;
    int rc = deriving_key ? jsonpath_key_text(v, &b) : jsonpath_field_text(v, &b);
    if (v != NULL && rc == 0 && !b.failed) {
        out = job_keep(j, buf_str(&b), b.len);
        if (out != NULL && len != NULL) {
            *len = b.len;
        }
    }
    buf_free(&b);
    return out;
}

/* Any value as the producer wrote it: its original text, numbers, escapes
 * and all (so 19.99 stays 19.99 on its way to another system). */
static const char *
api_field_json(const twice_job *job, const char *path, size_t *len)
{
    if (dead_job(job, DEADJOB_FIELD_JSON)) {
        return NULL;
    }
    struct twice_job *j = mutable_job(job);
    struct jsondoc *d = job_body(j);
    const struct jsondoc_value *v = jsonpath_get(d, path);
    if (v == NULL) {
        return NULL;
    }
    size_t n;
    const char *raw = jsondoc_raw(d, v, &n);
    const char *out = job_keep(j, raw, n);
    if (out != NULL && len != NULL) {
        *len = n;
    }
    return out;
}

static const char *
api_attr(const twice_job *job, const char *name, size_t *len)
{
    if (dead_job(job, DEADJOB_ATTR)) {
        return NULL;
    }
    const struct sqs_attr *a = job_attr(job, name);
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
    if (dead_job(job, DEADJOB_KEY)) {
        return "";
    }
    return job->key != NULL ? job->key : "";
}

static int
api_attempt(const twice_job *job)
{
    if (dead_job(job, DEADJOB_ATTEMPT)) {
        return 0;
    }
    return job->attempt;
}

static const char *
api_message_id(const twice_job *job)
{
    if (dead_job(job, DEADJOB_MESSAGE_ID)) {
        return "";
    }
    return job->msg.message_id != NULL ? job->msg.message_id : "";
}

static const char *
api_group_id(const twice_job *job)
{
    if (dead_job(job, DEADJOB_GROUP_ID)) {
        return NULL;
    }
    return job->msg.group_id;
}

/* The declaration of setting name, or NULL when the plugin declares none
 * by that name. */
static const twice_setting *
declared(const twice_settings *s, const char *name)
{
    for (const twice_setting *d = s != NULL ? s->decl : NULL; d != NULL && d->name != NULL; d++) {
        if (name != NULL && strcmp(d->name, name) == 0) {
            return d;
        }
    }
    return NULL;
}

/* A plugin read settings outside init() or describe(): said, never read. */
static void
dead_settings(const char *fn, const char *name)
{
    struct log_job ctx;
    api_log_ctx(NULL, &ctx);
    log_job(TWICE_LOG_ERROR, &ctx,
            "api->%s(\"%s\") outside init() and describe(): a plugin's settings are only "
            "valid there (copy what you keep)",
            fn, name != NULL ? name : "(null)");
}

static const char *
api_setting(const twice_settings *s, const char *name)
{
    if (s == NULL || name == NULL) {
        return NULL;
    }
    if (s != live_settings) {
        dead_settings("setting", name);
        return NULL;
    }
    for (size_t i = 0; i < s->cfg->nsettings; i++) {
        if (strcmp(s->cfg->settings[i].name, name) == 0) {
            return s->cfg->settings[i].value;
        }
    }
    const twice_setting *d = declared(s, name);
    return d != NULL ? d->default_value : NULL;
}

/* A setting's value init() cannot use (ABI 1.2): inside init(), remembered
 * with the setting so hostapi_init reports it once, at the setting's line
 * (twiced -t, a reload and a worker each say that line); elsewhere, and
 * for a setting the plugin does not declare, logged. */
static void
api_setting_error(const twice_settings *s, const char *name, const char *fmt, ...)
{
    char why[INIT_CAUSE_MAX];
    va_list ap;
    va_start(ap, fmt);
    utf8_mark_cut(why, sizeof(why), cnum_vsnprintf(why, sizeof(why), fmt, ap));
    va_end(ap);
    if (s != live_settings) {
        dead_settings("setting_error", name);
        return;
    }
    const twice_setting *d = declared(s, name);
    struct log_job ctx;
    api_log_ctx(NULL, &ctx);
    if (d == NULL) {
        log_job(TWICE_LOG_ERROR, &ctx, "setting error for an undeclared setting '%s': %s",
                name != NULL ? name : "(null)", why);
        return;
    }
    if (!init_capture) {
        log_job(TWICE_LOG_ERROR, &ctx, "setting '%s': %s", d->name, why);
        return;
    }
    init_setting = d->name;
    snprintf(init_cause, sizeof(init_cause), "%s", why);
}

static void *
api_db(const twice_job *job)
{
    if (dead_job(job, DEADJOB_DB)) {
        return NULL;
    }
    return job->db != NULL ? idem_pgconn(job->db) : NULL;
}

static void
api_retry_after(twice_job *job, unsigned seconds)
{
    if (dead_job(job, DEADJOB_RETRY_AFTER)) {
        return;
    }
    job->retry_after = seconds > SQS_VISIBILITY_MAX ? SQS_VISIBILITY_MAX : (int) seconds;
}

/* Counted by the queue's breaker (worker/breaker.c) once handle() returns. */
static void
api_downstream_unavailable(twice_job *job, unsigned seconds)
{
    if (dead_job(job, DEADJOB_DOWNSTREAM)) {
        return;
    }
    job->downstream = 1;
    job->downstream_secs = seconds > SQS_VISIBILITY_MAX ? SQS_VISIBILITY_MAX : (int) seconds;
    if (job->retry_after < 0 && seconds > 0) {
        job->retry_after = job->downstream_secs;
    }
}

static void
set_error_v(struct twice_job *job, const char *fmt, va_list ap)
{
    struct buf b = BUF_INIT;
    buf_vprintf(&b, fmt, ap);
    char *text = buf_steal(&b);
    if (text != NULL) {
        free(job->error);
        job->error = text;
    }
}

/* The job's error, set by the host itself (outside the plugin's call too). */
static void __attribute__((format(printf, 2, 3)))
host_error(struct twice_job *job, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_error_v(job, fmt, ap);
    va_end(ap);
}

static void
api_error(twice_job *job, const char *fmt, ...)
{
    if (dead_job(job, DEADJOB_ERROR)) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    set_error_v(job, fmt, ap);
    va_end(ap);
}

/* The job's span when it has one; else the message's valid traceparent,
 * kept with the job (see plugin.h for why it is passed on). */
static const char *
api_traceparent(const twice_job *job)
{
    if (dead_job(job, DEADJOB_TRACEPARENT)) {
        return NULL;
    }
    if (job->span != NULL) {
        return job->span->traceparent;
    }
    const struct sqs_attr *a = sqs_attr_find(job->msg.attrs, job->msg.nattrs, "traceparent");
    struct tracectx c;
    if (a == NULL || a->string_value == NULL ||
        tracectx_parse_traceparent(a->string_value, strlen(a->string_value), &c, NULL) != 0) {
        return NULL;
    }
    char text[TRACECTX_TRACEPARENT_LEN + 1];
    tracectx_format_traceparent(&c, text);
    return job_keep(mutable_job(job), text, TRACECTX_TRACEPARENT_LEN);
}

/* "" outside a job (job NULL, as in init()) rather than a crash; the mock
 * host answers the same. */
static const char *
api_queue(const twice_job *job)
{
    if (job != NULL && dead_job(job, DEADJOB_QUEUE)) {
        return "";
    }
    return job != NULL && job->qcfg != NULL && job->qcfg->name != NULL ? job->qcfg->name : "";
}

static const char *
api_attr_name(const twice_job *job, size_t i)
{
    if (dead_job(job, DEADJOB_ATTR_NAME)) {
        return NULL;
    }
    const struct sqs_attr *a = job_attr_at(job, i);
    return a != NULL ? a->name : NULL;
}

/* Check and stage a follow-up message (send.c has the rules). A refusal
 * becomes the job's error and makes a DONE count as REJECT. */
static int
api_send(twice_job *job, const char *queue, const char *body, size_t len, int delay_seconds,
         const char *group_id, const char *const *attrs)
{
    if (dead_job(job, DEADJOB_SEND)) {
        return -1;
    }
    struct outbox_msg m;
    char why[600];
    int rc = send_prepare(job->cfg, api_key(job), job->outbox.n, queue, body, len, delay_seconds,
                          group_id, attrs, &m, why, sizeof(why));
    if (rc == 0 && outbox_stage(&job->outbox, &m) != 0) {
        outbox_msg_clear(&m);
        snprintf(why, sizeof(why), "send to queue %.200s: out of memory", queue);
        rc = -1;
    }
    if (rc != 0) {
        job->send_refused = 1;
        host_error(job, "%s", why);
    }
    return rc;
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
    .traceparent = api_traceparent,
    .queue = api_queue,
    .attr_name = api_attr_name,
    .downstream_unavailable = api_downstream_unavailable,
    .send = api_send,
    .setting_error = api_setting_error,
};

/* Seconds a forked copy gets to write its one log line (left_in_child). */
#define CHILD_LINE_SECONDS 5

/* Set in the child of every fork() of this process (pthread_atfork): what
 * tells a copy the plugin forked from the process that called it, without a
 * system call around each plugin call. The host's own children exec. */
static volatile sig_atomic_t forked_copy;
static pthread_once_t fork_watch = PTHREAD_ONCE_INIT;
/* The plugin function this thread is in (with current_plugin and live_job):
 * what a copy forked from it says it returned from. */
static _Thread_local const char *current_fn;
/* The line a copy writes when it returns into the host, built by the thread
 * that forks, just before the fork: in the copy, a lock another thread held
 * at the fork (malloc's; the time zone's, which the SQS client's signing
 * takes) is held for ever, so the copy may only write and exit. */
static _Thread_local char *copy_line;

/* Before any fork() by this thread: in a plugin call, the copy's line. */
static void
on_fork_prepare(void)
{
    if (current_fn == NULL || copy_line != NULL) {
        return;
    }
    struct log_job ctx;
    api_log_ctx(live_job, &ctx);
    int pid = (int) getpid();
    copy_line = log_build_job(TWICE_LOG_ERROR, &ctx,
                              "%s() returned in a child process the plugin forked (a copy of pid "
                              "%d): a plugin's child must exec or _exit(), so the copy is ended "
                              "here and pid %d goes on",
                              current_fn, pid, pid);
}

/* In the process that forked: the copy's line is the copy's. */
static void
on_fork_parent(void)
{
    free(copy_line);
    copy_line = NULL;
}

static void
on_fork_child(void)
{
    forked_copy = 1;
}

static void
watch_forks(void)
{
    pthread_atfork(on_fork_prepare, on_fork_parent, on_fork_child);
}

/* Before a call into plugin code (fn, the function called): forks are
 * watched from the first. */
static void
before_plugin_call(const char *fn)
{
    pthread_once(&fork_watch, watch_forks);
    current_fn = fn;
}

/*
 * After a plugin function returned: a plugin that fork()ed and returned in
 * the child as well (it meant to exec or _exit there) made a copy of the
 * worker with one thread, the plugin's, which would go on as one: a job
 * answered twice, then a process that waits for ever for work no thread of
 * it brings, with the worker's connections open and no parent-death
 * signal. In the copy, say so once (the line built before the fork) and end
 * it; the worker that made the call goes on as if nothing happened. The
 * write is bounded by an alarm: a log pipe nobody reads.
 */
static void
left_in_child(void)
{
    current_fn = NULL;
    if (!forked_copy) {
        return;
    }
    sigset_t alarm_only;
    sigemptyset(&alarm_only);
    sigaddset(&alarm_only, SIGALRM);
    signal(SIGALRM, SIG_DFL);
    pthread_sigmask(SIG_UNBLOCK, &alarm_only, NULL);
    alarm(CHILD_LINE_SECONDS);
    if (copy_line != NULL) {
        log_write_built(copy_line);
    }
    _exit(70);
}

/* What the process does once a plugin closed its descriptors (besides the
 * line): NULL, nothing. Set once before any plugin call. */
static void (*descriptors_closed_hook)(void);
/* The plugin whose init() or handle() was called last, by any thread: the
 * one a close of the descriptors found later is put down to. */
static _Atomic(const char *) last_called;

/* Note p as the plugin called last: a compare, a store only when it changes. */
static void
note_called(const char *plugin)
{
    if (atomic_load_explicit(&last_called, memory_order_relaxed) != plugin) {
        atomic_store_explicit(&last_called, plugin, memory_order_relaxed);
    }
}

static const char *
called_last(void)
{
    return atomic_load_explicit(&last_called, memory_order_relaxed);
}

/* fdguard's: the descriptors were found closed (fdguard.h). Said once each
 * time, naming the plugin called last; the store's connections and the
 * HTTP clients make theirs again at their next use. */
static void
descriptors_closed(void)
{
    const char *plugin = called_last();
    if (plugin != NULL) {
        log_warn("plugin '%s' (the plugin called last) closed twiced's descriptors (a daemonising "
                 "library, a closefrom(3)?): the worker's connections and log file are made "
                 "again; fix the plugin, which must close only descriptors it opened",
                 plugin);
    } else {
        log_warn("a plugin closed twiced's descriptors (a daemonising library, a closefrom(3)?): "
                 "the worker's connections and log file are made again");
    }
    if (descriptors_closed_hook != NULL) {
        descriptors_closed_hook();
    }
}

void
hostapi_on_descriptors_closed(void (*fn)(void))
{
    descriptors_closed_hook = fn;
    fdguard_on_closed(descriptors_closed);
}

/* Where an init() failure sends the operator: the blamed setting's line,
 * its settings group's when the value is the declared default, else the
 * plugin's entry. conf_file stands in for a file the config does not name. */
static void
init_where(const struct config_plugin *cp, const char *setting, const char *conf_file,
           const char **file, int *line)
{
    *file = cp->file;
    *line = cp->line;
    if (setting != NULL) {
        *file = cp->settings_file;
        *line = cp->settings_line;
        for (size_t i = 0; i < cp->nsettings; i++) {
            if (strcmp(cp->settings[i].name, setting) == 0) {
                *file = cp->settings[i].file;
                *line = cp->settings[i].line;
            }
        }
    }
    if (*file == NULL) {
        *file = conf_file;
    }
}

int
hostapi_init(struct plugin_instance *p, const char *conf_file, char *err, size_t errlen)
{
    const twice_plugin *d = p->lp.desc;
    struct twice_settings settings = {p->cfg, d->settings};
    int rc = 0;
    if (d->init != NULL) {
        current_plugin = p->name;
        init_capture = 1;
        init_cause[0] = '\0';
        init_cause_level = TWICE_LOG_WARN;
        init_setting = NULL;
        live_settings = &settings;
        before_plugin_call("init");
        note_called(p->name);
        rc = d->init(&host_api, &settings, &p->lp.state);
        left_in_child();
        (void) fdguard_check(); /* once per plugin at start: worth its system call */
        live_settings = NULL;
        init_capture = 0;
        current_plugin = NULL;
    }
    if (rc != 0) {
        /* the plugin's own words, made safe for one line */
        struct buf cause = BUF_INIT;
        const char *file;
        int line;
        init_where(p->cfg, init_setting, conf_file, &file, &line);
        escape_unquoted(&cause, init_cause, strlen(init_cause));
        if (init_setting != NULL && !cause.failed) {
            snprintf(err, errlen, "%s:%d: plugin '%s': setting '%s': %s", file, line, p->name,
                     init_setting, buf_str(&cause));
        } else if (init_cause[0] != '\0' && !cause.failed) {
            snprintf(err, errlen, "%s:%d: plugin '%s': init failed: %s", file, line, p->name,
                     buf_str(&cause));
        } else {
            snprintf(err, errlen,
                     "%s:%d: plugin '%s': init failed (returned %d and logged no reason)", file,
                     line, p->name, rc);
        }
        buf_free(&cause);
        init_setting = NULL;
        return -1;
    }
    if (init_setting != NULL) {
        /* blamed, yet init() went on: not lost, and not a failure */
        log_warn("plugin '%s': setting '%s': %s", p->name, init_setting, init_cause);
        init_setting = NULL;
    }
    p->lp.initialized = 1;
    return 0;
}

void
hostapi_fini(struct plugin_instance *p)
{
    if (p->lp.initialized && p->lp.desc->fini != NULL) {
        current_plugin = p->name;
        before_plugin_call("fini");
        p->lp.desc->fini(p->lp.state);
        left_in_child();
        current_plugin = NULL;
    }
    p->lp.initialized = 0;
}

/* A key from derive_key() must obey what templates obey (keytmpl.c says
 * what: not empty, no control characters, UTF-8, at most TWICE_KEY_MAX). */
static int
derive_with_plugin(const struct plugin_instance *p, struct twice_job *j, struct buf *out)
{
    char key[TWICE_KEY_MAX + 1];
    struct buf why = BUF_INIT;
    current_plugin = p->name;
    deriving_key = 1;
    before_plugin_call("derive_key");
    live_job = j;
    int n = p->lp.desc->derive_key(p->lp.state, j, key, sizeof(key));
    live_job = NULL;
    left_in_child();
    deriving_key = 0;
    current_plugin = NULL;
    enum keytmpl_result r = keytmpl_check_derived(key, n, j->error, &why);
    if (r == KEYTMPL_OK && buf_append(out, key, (size_t) n) != 0) {
        r = KEYTMPL_BAD_VALUE;
        buf_puts(&why, "out of memory deriving the key");
    }
    if (r != KEYTMPL_OK) {
        job_deadletter(j, keytmpl_reason(r), "%s", buf_str(&why));
    }
    buf_free(&why);
    return r == KEYTMPL_OK ? 0 : -1;
}

/* keytmpl's view of the message's attributes (keytmpl knows nothing of
 * SQS); ctx is the job. */
static int
message_attr(const void *ctx, const char *name, struct keytmpl_attr *out)
{
    const struct sqs_attr *a = job_attr(ctx, name);
    if (a == NULL) {
        return -1;
    }
    *out = (struct keytmpl_attr){a->data_type, a->string_value};
    return 0;
}

int
hostapi_derive_key(const struct plugin_instance *p, const struct keytmpl *queue_key,
                   struct twice_job *j, struct buf *out)
{
    const struct keytmpl *t = queue_key != NULL ? queue_key : p->lp.tmpl;
    if (t == NULL && p->lp.desc->derive_key != NULL) {
        return derive_with_plugin(p, j, out);
    }
    if (t == NULL) {
        /* keying_check_queues refuses such a configuration before it runs */
        job_deadletter(j, "bad-key-field",
                       "plugin '%s' has no key template and queue %s sets "
                       "no key",
                       p->name, j->qcfg != NULL ? j->qcfg->name : "?");
        return -1;
    }
    struct keytmpl_input in = {
        .attr = message_attr,
        .attr_ctx = j,
        .group_id = j->msg.group_id,
        .msg = j->env != NULL ? j->env->msg : NULL,
    };
    if (keytmpl_needs_body(t)) {
        in.body = job_body(j);
        in.body_error = j->body_error;
    }
    char err[256];
    enum keytmpl_result r = keytmpl_expand(t, &in, out, err, sizeof(err));
    if (r != KEYTMPL_OK) {
        job_deadletter(j, keytmpl_reason(r), "%s", err);
        return -1;
    }
    return 0;
}

int
hostapi_describe(const struct loaded_plugin *lp, const struct config_plugin *cp, char *buf,
                 size_t cap)
{
    loader_describe_fn describe = loader_describe(lp->desc);
    struct twice_settings settings = {cp, lp->desc->settings};
    if (describe == NULL || cap == 0) {
        return 0;
    }
    buf[0] = '\0';
    current_plugin = cp->name;
    live_settings = &settings;
    before_plugin_call("describe");
    int rc = describe(&host_api, &settings, buf, cap);
    left_in_child();
    live_settings = NULL;
    current_plugin = NULL;
    buf[cap - 1] = '\0';
    return rc == 0 ? 1 : -1;
}

twice_status
hostapi_handle(const struct plugin_instance *p, struct twice_job *j)
{
    outbox_staged_clear(&j->outbox); /* a run stages afresh, from index 0 */
    j->send_refused = 0;
    current_plugin = p->name;
    before_plugin_call("handle");
    note_called(p->name);
    live_job = j;
    twice_status st = p->lp.desc->handle(p->lp.state, j);
    live_job = NULL;
    left_in_child();
    current_plugin = NULL;
    if (st != TWICE_DONE && st != TWICE_RETRY && st != TWICE_REJECT) {
        host_error(j, "handle() returned %d, not DONE, RETRY or REJECT", (int) st);
        st = TWICE_RETRY;
    }
    if (st == TWICE_DONE && j->send_refused) {
        st = TWICE_REJECT; /* the job could not say what it meant to: its error says why */
    }
    if (st != TWICE_DONE) {
        outbox_staged_clear(&j->outbox);
    }
    return st;
}
