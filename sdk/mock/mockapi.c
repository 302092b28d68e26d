/*
 * mockapi.c - the twice_api table the mock host hands to plugins, with the
 * semantics plugin.h documents: body paths, attributes and settings read
 * as the host reads them (jsonpath.c is the daemon's own), log lines
 * captured; a job that is not the one running on the calling thread
 * refused, as twiced refuses it. Fake jobs themselves are mockjob.c's.
 */
#include "mockapi.h"

#include "buf.h"
#include "cnum.h"
#include "cut.h"
#include "deadjob.h"
#include "escape.h"
#include "jsonpath.h"
#include "mock_internal.h"
#include "tracectx.h"
#include "utf8.h"

#include "sqs_limits.h"
#include "sendcheck.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static _Thread_local struct twice_mock *current_mock;
static _Thread_local int deriving_key;
static _Thread_local const struct twice_job *live_job; /* mockapi_set_job's */

/* The mock whose plugin was called last, by any thread: a refusal said on
 * a thread that runs no plugin call (the plugin's own) goes to its log, as
 * twiced names "the plugin called last". Written under called_lock, which
 * a line said into it holds too, so twice_mock_free (mockapi_forget) never
 * frees it under that line; read without the lock only to skip a store. */
static pthread_mutex_t called_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(struct twice_mock *) called_last;

void
mockapi_set_current(struct twice_mock *m)
{
    current_mock = m;
    if (m != NULL && atomic_load_explicit(&called_last, memory_order_relaxed) != m) {
        pthread_mutex_lock(&called_lock);
        atomic_store_explicit(&called_last, m, memory_order_relaxed);
        pthread_mutex_unlock(&called_lock);
    }
}

void
mockapi_set_job(const struct twice_job *j)
{
    live_job = j;
}

void
mockapi_forget(struct twice_mock *m)
{
    pthread_mutex_lock(&called_lock);
    if (atomic_load_explicit(&called_last, memory_order_relaxed) == m) {
        atomic_store_explicit(&called_last, NULL, memory_order_relaxed);
    }
    pthread_mutex_unlock(&called_lock);
}

/* The mock a line said on this thread without a job belongs to: the one
 * whose plugin call runs here, else the one called last (then *held: the
 * lock is held until let_go, so it is not freed meanwhile), or NULL. */
static struct twice_mock *
hold_mock(int *held)
{
    *held = current_mock == NULL;
    if (!*held) {
        return current_mock;
    }
    pthread_mutex_lock(&called_lock);
    return atomic_load_explicit(&called_last, memory_order_relaxed);
}

static void
let_go(int held)
{
    if (held) {
        pthread_mutex_unlock(&called_lock);
    }
}

/* A refusal's line where no mock takes it (every mock freed): stderr, once
 * per function for the process. */
static atomic_uint refused_said_nowhere;

/* Whether job is not the one running on this thread (live_job): then the
 * call is refused, counted for twice_mock_refused, and said once per
 * function per mock in twiced's words (text/deadjob.c), naming the plugin
 * on this thread, else the plugin called last. Compares the pointer only:
 * a kept job is freed by then. */
static int
dead_job(const twice_job *job, enum deadjob_fn fn)
{
    if (job == live_job && job != NULL) {
        return 0;
    }
    int held;
    struct twice_mock *m = hold_mock(&held);
    char line[512];
    deadjob_line(line, sizeof(line), m != NULL ? m->plugin->name : NULL, held, fn);
    unsigned bit = 1u << fn;
    if (m != NULL) {
        pthread_mutex_lock(&m->lock);
        m->refused[fn]++;
        int say = (m->refused_said & bit) == 0;
        m->refused_said |= bit;
        if (say) {
            mocklog_add(&m->log, TWICE_LOG_ERROR, line);
        }
        pthread_mutex_unlock(&m->lock);
        if (say && m->echo) {
            fprintf(stderr, "[error] %s: %s\n", m->plugin->name, line);
        }
    } else if ((atomic_fetch_or(&refused_said_nowhere, bit) & bit) == 0) {
        fprintf(stderr, "twice-mock: %s\n", line);
    }
    let_go(held);
    return 1;
}

void
mockapi_set_deriving(int on)
{
    deriving_key = on;
}

/* ---- the API table ---- */

static const char *level_names[] = {"error", "warn", "info", "debug"};

/* The bytes twiced's text line puts around a message of this call (time,
 * level, "worker[PID]", the job's fields, ": " and the newline), so the
 * mock cuts a message where twiced would (text/cut.c). The pid and time
 * are the test's: a real line differs by a digit or so. */
static size_t
line_around(const twice_job *job, const struct twice_mock *m, twice_log_level level)
{
    struct buf b = BUF_INIT;
    buf_cat(&b, "2026-12-05T14:03:07.123Z ", level_names[level], " worker[", NULL);
    buf_put_int(&b, (long long) getpid());
    buf_putc(&b, ']');
    if (job != NULL) {
        escape_field(&b, "queue", job->queue != NULL ? job->queue : "");
        escape_field(&b, "msg", job->message_id);
    }
    escape_field(&b, "plugin", m != NULL ? m->plugin->name : NULL);
    if (job != NULL) {
        escape_field(&b, "key", job->key);
        int attempt = deriving_key ? 0 : job->attempt;
        if (attempt > 0) {
            buf_printf(&b, " attempt=%d", attempt);
        }
    }
    buf_puts(&b, ": \n");
    size_t n = b.failed ? 0 : b.len;
    buf_free(&b);
    return n;
}

/* cut_message's question: does the line with this message fit? (ctx: the
 * bytes around it) */
static int
line_fits(const char *message, void *ctx)
{
    struct buf shown = BUF_INIT;
    escape_unquoted(&shown, message, strlen(message));
    int fits = !shown.failed && *(const size_t *) ctx + shown.len <= LOG_LINE_MAX;
    buf_free(&shown);
    return fits;
}

/* text (raw) as twiced's line carries it: escaped, and cut to fit the line
 * with " [... N bytes cut]". Returns an owned string, or NULL. */
static char *
shown_text(const twice_job *job, const struct twice_mock *m, twice_log_level level,
           const char *text)
{
    struct buf shown = BUF_INIT, cut = BUF_INIT;
    escape_unquoted(&shown, text, strlen(text));
    size_t around = line_around(job, m, level);
    if (!shown.failed && around + shown.len > LOG_LINE_MAX) {
        buf_reset(&shown);
        if (cut_message(text, line_fits, &around, &cut) == 0) {
            escape_unquoted(&shown, buf_str(&cut), cut.len);
        } else {
            shown.failed = 1;
        }
    }
    buf_free(&cut);
    char *out = shown.failed ? NULL : buf_steal(&shown);
    buf_free(&shown);
    return out;
}

/* A plugin's log line, captured (and echoed). Formatted in the C locale, as
 * the daemon's log does (buf_printf): "%.1f" is "1.5" whatever setlocale()
 * the plugin called. Captured as twiced writes its message (base/log.c):
 * control bytes and invalid UTF-8 escaped by text/escape.c, a message too
 * long for a line cut as text/cut.c cuts it, so a test
 * matches the line production shows. init()'s cause keeps the raw text:
 * twiced escapes it when it reports it (mock.c does the same). A job not
 * running on this thread is refused, and the line said without it, as
 * twiced does: into the mock the refusal went to. */
static void
api_log(const twice_job *job, twice_log_level level, const char *fmt, ...)
{
    struct buf b = BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    int n = buf_vprintf(&b, fmt, ap);
    va_end(ap);
    if ((int) level < TWICE_LOG_ERROR || level > TWICE_LOG_DEBUG) {
        level = TWICE_LOG_INFO;
    }
    int held = 0;
    struct twice_mock *m = current_mock;
    if (job != NULL && dead_job(job, DEADJOB_LOG)) {
        job = NULL; /* the line, without the job it cannot read */
        m = hold_mock(&held);
    } else if (job != NULL) {
        m = job->mock;
    }
    char *text = n == 0 ? shown_text(job, m, level, buf_str(&b)) : NULL;
    if (text == NULL) {
        let_go(held);
        buf_free(&b);
        return;
    }
    if (m == NULL) {
        fprintf(stderr, "twice-mock: log line outside any plugin call: %s\n", text);
    } else if (job != NULL) {
        /* A job belongs to one thread at a time: its own log needs no lock. */
        mocklog_add(&((struct twice_job *) job)->log, level, text);
    } else {
        pthread_mutex_lock(&m->lock);
        mocklog_add(&m->log, level, text);
        pthread_mutex_unlock(&m->lock);
    }
    if (m != NULL && job == NULL && m == current_mock && !m->initialized &&
        level <= TWICE_LOG_WARN && (int) level <= m->init_cause_level) {
        /* in init(): what its failure is reported with, as twiced does */
        utf8_mark_cut(m->init_cause, sizeof(m->init_cause),
                      snprintf(m->init_cause, sizeof(m->init_cause), "%s", buf_str(&b)));
        m->init_cause_level = level;
    }
    if (m != NULL && m->echo) {
        fprintf(stderr, "[%s] %s: %s\n", level_names[level], m->plugin->name, text);
    }
    let_go(held);
    free(text);
    buf_free(&b);
}

static const char *
api_body(const twice_job *job, size_t *len)
{
    if (dead_job(job, DEADJOB_BODY)) {
        return NULL;
    }
    if (len != NULL) {
        *len = job->body_len;
    }
    return job->body;
}

/* Keep a string of n bytes alive until the job is freed or run again; the
 * API hands out borrowed pointers. Takes ownership of s (freed on failure). */
static const char *
keep(const twice_job *job, char *s, size_t n, size_t *len)
{
    struct twice_job *j = (struct twice_job *) job;
    if (s == NULL) {
        return NULL;
    }
    if (j->nkept == j->capkept) {
        size_t cap = j->capkept != 0 ? j->capkept * 2 : 8;
        char **kept = realloc(j->kept, cap * sizeof(*kept));
        if (kept == NULL) {
            free(s);
            return NULL;
        }
        j->kept = kept;
        j->capkept = cap;
    }
    j->kept[j->nkept++] = s;
    if (len != NULL) {
        *len = n;
    }
    return s;
}

/* Numbers as the producer wrote them, but in derive_key() as keys spell
 * them: the daemon's rule (plugin/hostapi.c). */
static const char *
api_field(const twice_job *job, const char *path, size_t *len)
{
    if (dead_job(job, DEADJOB_FIELD)) {
        return NULL;
    }
    const struct jsondoc_value *v = jsonpath_get(job->root, path);
    struct buf text = BUF_INIT;
    int rc = deriving_key ? jsonpath_key_text(v, &text) : jsonpath_field_text(v, &text);
    if (v == NULL || rc != 0) {
        buf_free(&text);
        return NULL;
    }
    size_t n = text.len;
    return keep(job, buf_steal(&text), n, len);
}

/* The value's original text. *len is given: a string may hold "\u0000". */
static const char *
api_field_json(const twice_job *job, const char *path, size_t *len)
{
    if (dead_job(job, DEADJOB_FIELD_JSON)) {
        return NULL;
    }
    const struct jsondoc_value *v = jsonpath_get(job->root, path);
    if (v == NULL) {
        return NULL;
    }
    size_t n;
    const char *raw = jsondoc_raw(job->root, v, &n);
    char *copy = malloc(n + 1);
    if (copy != NULL) {
        memcpy(copy, raw, n);
        copy[n] = '\0';
    }
    return keep(job, copy, n, len);
}

const struct mock_attr *
mockapi_attr(const struct twice_job *j, const char *name)
{
    for (size_t i = j->nattrs; name != NULL && i > 0; i--) {
        if (strcmp(j->attrs[i - 1].name, name) == 0) {
            return &j->attrs[i - 1];
        }
    }
    return NULL;
}

/* A name given twice answers its last, as twiced (sqs_attr_find) and as a
 * body's repeated member: SQS never delivers a repeat, an SNS envelope's
 * JSON may hold one. A Binary one has no text, whatever came before it. */
static const char *
attr_text(const twice_job *job, const char *name, size_t *len)
{
    const struct mock_attr *a = mockapi_attr(job, name);
    if (a == NULL || strncmp(a->type, "Binary", 6) == 0) {
        return NULL;
    }
    if (len != NULL) {
        *len = strlen(a->value);
    }
    return a->value;
}

static const char *
api_attr(const twice_job *job, const char *name, size_t *len)
{
    if (dead_job(job, DEADJOB_ATTR)) {
        return NULL;
    }
    return attr_text(job, name, len);
}

static const char *
api_key(const twice_job *job)
{
    if (dead_job(job, DEADJOB_KEY)) {
        return "";
    }
    return job->key != NULL ? job->key : "";
}

/* 0 in derive_key(), as in twiced: the key is not claimed yet, so the
 * run has no number (twice_mock_job_attempt sets handle()'s). */
static int
api_attempt(const twice_job *job)
{
    if (dead_job(job, DEADJOB_ATTEMPT)) {
        return 0;
    }
    return deriving_key ? 0 : job->attempt;
}

static const char *
api_message_id(const twice_job *job)
{
    if (dead_job(job, DEADJOB_MESSAGE_ID)) {
        return "";
    }
    return job->message_id;
}

static const char *
api_group_id(const twice_job *job)
{
    if (dead_job(job, DEADJOB_GROUP_ID)) {
        return NULL;
    }
    return job->group_id;
}

/* Whether s may be read now: inside its mock's init(), as twiced hands a
 * plugin its settings only for init() and describe() (they live on its
 * stack); else an error line, as twiced logs it, and the caller gets
 * nothing. */
static int
live(const twice_settings *s, const char *fn, const char *name)
{
    if (s != NULL && current_mock != NULL && current_mock == s->mock &&
        !current_mock->initialized) {
        return 1;
    }
    api_log(NULL, TWICE_LOG_ERROR,
            "api->%s(\"%s\") outside init() and describe(): a plugin's settings are only "
            "valid there (copy what you keep)",
            fn, name != NULL ? name : "(null)");
    return 0;
}

static const char *
api_setting(const twice_settings *s, const char *name)
{
    if (s == NULL || name == NULL || !live(s, "setting", name)) {
        return NULL;
    }
    const struct twice_mock *m = s->mock;
    for (size_t i = 0; i < m->nsettings; i++) {
        if (strcmp(m->settings[i].name, name) == 0) {
            return m->settings[i].value;
        }
    }
    for (const twice_setting *d = m->plugin->settings; d != NULL && d->name != NULL; d++) {
        if (strcmp(d->name, name) == 0) {
            return d->default_value;
        }
    }
    return NULL;
}

/* A setting's value init() cannot use: inside init(), what
 * twice_mock_error() says (the host reports it once, at the line of
 * twice.conf that sets it); elsewhere (settings NULL too) an error log
 * line. A name the plugin does not declare is a bug in the plugin: logged,
 * not kept. As twiced: why cut between characters and marked "...", and
 * escaped for one line where it is reported. */
static void
api_setting_error(const twice_settings *s, const char *name, const char *fmt, ...)
{
    char why[400];
    va_list ap;
    va_start(ap, fmt);
    utf8_mark_cut(why, sizeof(why), cnum_vsnprintf(why, sizeof(why), fmt, ap));
    va_end(ap);
    if (!live(s, "setting_error", name)) {
        return;
    }
    const twice_setting *d = name != NULL ? s->mock->plugin->settings : NULL;
    while (d != NULL && d->name != NULL && strcmp(d->name, name) != 0) {
        d++;
    }
    if (d == NULL || d->name == NULL) {
        /* logged, but not init()'s cause: twiced logs it beside the plugin's lines */
        struct twice_mock *m = current_mock; /* live: in its init() */
        char cause[sizeof(m->init_cause)];
        int level = m->init_cause_level;
        memcpy(cause, m->init_cause, sizeof(cause));
        api_log(NULL, TWICE_LOG_ERROR, "setting error for an undeclared setting '%s': %s",
                name != NULL ? name : "(null)", why);
        memcpy(m->init_cause, cause, sizeof(cause));
        m->init_cause_level = level;
        return;
    }
    struct buf shown = BUF_INIT;
    escape_unquoted(&shown, why, strlen(why));
    utf8_mark_cut(current_mock->setting_error, sizeof(current_mock->setting_error),
                  snprintf(current_mock->setting_error, sizeof(current_mock->setting_error),
                           "setting '%s': %s", d->name, shown.failed ? "" : buf_str(&shown)));
    buf_free(&shown);
}

static void *
api_db(const twice_job *job)
{
    if (dead_job(job, DEADJOB_DB)) {
        return NULL;
    }
    return (job->mock->plugin->flags & TWICE_FLAG_TRANSACTIONAL) != 0 ? job->db : NULL;
}

static void
api_retry_after(twice_job *job, unsigned seconds)
{
    if (dead_job(job, DEADJOB_RETRY_AFTER)) {
        return;
    }
    job->retry_after = seconds > SQS_VISIBILITY_MAX ? SQS_VISIBILITY_MAX : (int) seconds;
}

/* As the host: recorded, and the job's retry_after when it has none. */
static void
api_downstream_unavailable(twice_job *job, unsigned seconds)
{
    if (dead_job(job, DEADJOB_DOWNSTREAM)) {
        return;
    }
    int s = seconds > SQS_VISIBILITY_MAX ? SQS_VISIBILITY_MAX : (int) seconds;
    job->downstream_unavailable = s;
    if (job->retry_after < 0 && s > 0) {
        job->retry_after = s;
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

void
mockapi_job_error(struct twice_job *j, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_error_v(j, fmt, ap);
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

/* As twiced: the span context (the test's), else the message's own valid
 * traceparent passed on as version 00 (tracing off), else NULL. */
static const char *
api_traceparent(const twice_job *job)
{
    struct tracectx c;
    if (dead_job(job, DEADJOB_TRACEPARENT)) {
        return NULL;
    }
    if (job->traceparent != NULL) {
        return job->traceparent;
    }
    const char *v = attr_text(job, "traceparent", NULL);
    if (v == NULL || tracectx_parse_traceparent(v, strlen(v), &c, NULL) != 0) {
        return NULL;
    }
    char *text = malloc(TRACECTX_TRACEPARENT_LEN + 1);
    if (text != NULL) {
        tracectx_format_traceparent(&c, text);
    }
    return keep(job, text, TRACECTX_TRACEPARENT_LEN, NULL);
}

/* The queue the test named, else "" as twiced answers for a job without a
 * configured queue name (and, in both, outside a job: job NULL). */
static const char *
api_queue(const twice_job *job)
{
    if (job != NULL && dead_job(job, DEADJOB_QUEUE)) {
        return "";
    }
    return job != NULL && job->queue != NULL ? job->queue : "";
}

static const char *
api_attr_name(const twice_job *job, size_t i)
{
    if (dead_job(job, DEADJOB_ATTR_NAME)) {
        return NULL;
    }
    return i < job->nattrs ? job->attrs[i].name : NULL;
}

/* The URL twice_mock_queue gave the queue name, or NULL
 * (sendcheck_resolve's lookup; ctx is the mock). */
static const char *
mock_queue_url(const void *ctx, const char *name)
{
    const struct twice_mock *m = ctx;
    for (size_t i = 0; i < m->nqueues; i++) {
        if (strcmp(m->queues[i].name, name) == 0) {
            return m->queues[i].value;
        }
    }
    return NULL;
}

/* The host's resolution and checks (text/sendcheck.c), the message kept
 * on the job. */
static int
api_send(twice_job *job, const char *queue, const char *body, size_t len, int delay_seconds,
         const char *group_id, const char *const *attrs)
{
    char why[400];
    if (dead_job(job, DEADJOB_SEND)) {
        return -1;
    }
    const char *url = sendcheck_resolve(queue, body, mock_queue_url, job->mock, why, sizeof(why));
    if (url == NULL) {
        job->send_refused = 1;
        mockapi_job_error(job, "%s", why); /* twiced's words: twice_mock_queue names the queues */
        return -1;
    }
    struct mock_sent s = {0};
    size_t n = len == (size_t) -1 ? strlen(body) : len;
    int rc = sendcheck_message(url, job->key != NULL ? job->key : "", job->nsent, body, n,
                               delay_seconds, group_id, attrs, &s.attrs_json, why, sizeof(why));
    s.url = rc == 0 ? strdup(url) : NULL;
    s.body = rc == 0 ? strndup(body, n) : NULL;
    s.group_id = rc == 0 && group_id != NULL ? strdup(group_id) : NULL;
    s.delay = delay_seconds;
    if (rc == 0 && job->nsent == job->capsent) {
        size_t cap = job->capsent ? 2 * job->capsent : 4;
        struct mock_sent *grown = realloc(job->sent, cap * sizeof(*grown));
        rc = grown != NULL ? 0 : -1;
        job->sent = grown != NULL ? grown : job->sent;
        job->capsent = grown != NULL ? cap : job->capsent;
    }
    if (rc == 0 && s.url != NULL && s.body != NULL && (group_id == NULL || s.group_id != NULL)) {
        job->sent[job->nsent++] = s;
        return 0;
    }
    free(s.url);
    free(s.body);
    free(s.group_id);
    free(s.attrs_json);
    job->send_refused = 1;
    mockapi_job_error(job, "send to queue %.200s: %s", queue != NULL ? queue : "",
                      rc == 0 ? "out of memory" : why);
    return -1;
}

static const twice_api mock_api = {
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

const twice_api *
mockapi_table(void)
{
    return &mock_api;
}
