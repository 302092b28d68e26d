/*
 * mockapi.c - the mock host's fake jobs and the twice_api table it hands
 * to plugins, with the semantics plugin.h documents. Not a simulation of
 * the job lifecycle: no claim, retry, DLQ or transaction happens here.
 */
#include "mock_internal.h"

#include "sqs_limits.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local struct twice_mock *current_mock;

void
twice_mock_set_current(struct twice_mock *m)
{
    current_mock = m;
}

/* ---- the API table ---- */

static const char *level_names[] = {"error", "warn", "info", "debug"};

static void
api_log(const twice_job *job, twice_log_level level, const char *fmt, ...)
{
    char *text = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&text, fmt, ap);
    va_end(ap);
    if (n < 0) {
        return;
    }
    if ((int) level < TWICE_LOG_ERROR || level > TWICE_LOG_DEBUG) {
        level = TWICE_LOG_INFO;
    }
    struct twice_mock *m = job != NULL ? job->mock : current_mock;
    if (m == NULL) {
        fprintf(stderr, "twice-mock: log line outside any plugin call: %s\n", text);
    } else if (job != NULL) {
        /* A job belongs to one thread at a time: its own log needs no lock. */
        twice_mock_log_add(&((struct twice_job *) job)->log, level, text);
    } else {
        pthread_mutex_lock(&m->lock);
        twice_mock_log_add(&m->log, level, text);
        pthread_mutex_unlock(&m->lock);
    }
    if (m != NULL && m->echo) {
        fprintf(stderr, "[%s] %s: %s\n", level_names[level], m->plugin->name, text);
    }
    free(text);
}

static const char *
api_body(const twice_job *job, size_t *len)
{
    if (len != NULL) {
        *len = job->body_len;
    }
    return job->body;
}

/* Keep a string alive until the job is freed or run again; the API hands
 * out borrowed pointers. Takes ownership of s (freed on failure). */
static const char *
keep(const twice_job *job, char *s, size_t *len)
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
        *len = strlen(s);
    }
    return s;
}

static const char *
api_field(const twice_job *job, const char *path, size_t *len)
{
    if (path == NULL) {
        return NULL;
    }
    json_t *v = twice_mock_json_path(job->root, path, strlen(path));
    return v != NULL ? keep(job, twice_mock_scalar_text(v), len) : NULL;
}

static const char *
api_field_json(const twice_job *job, const char *path, size_t *len)
{
    if (path == NULL) {
        return NULL;
    }
    json_t *v = twice_mock_json_path(job->root, path, strlen(path));
    if (v == NULL) {
        return NULL;
    }
    return keep(job, json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER), len);
}

static const char *
api_attr(const twice_job *job, const char *name, size_t *len)
{
    for (size_t i = 0; name != NULL && i < job->nattrs; i++) {
        const struct mock_attr *a = &job->attrs[i];
        if (strcmp(a->name, name) == 0 && strncmp(a->type, "Binary", 6) != 0) {
            if (len != NULL) {
                *len = strlen(a->value);
            }
            return a->value;
        }
    }
    return NULL;
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
    return job->message_id;
}

static const char *
api_group_id(const twice_job *job)
{
    return job->group_id;
}

static const char *
api_setting(const twice_settings *s, const char *name)
{
    if (s == NULL || name == NULL) {
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

static void *
api_db(const twice_job *job)
{
    return (job->mock->plugin->flags & TWICE_FLAG_TRANSACTIONAL) != 0 ? job->db : NULL;
}

static void
api_retry_after(twice_job *job, unsigned seconds)
{
    job->retry_after = seconds > SQS_VISIBILITY_MAX ? SQS_VISIBILITY_MAX : (int) seconds;
}

static void
api_error(twice_job *job, const char *fmt, ...)
{
    char *text = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&text, fmt, ap);
    va_end(ap);
    if (n >= 0) {
        free(job->error);
        job->error = text;
    }
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
};

const twice_api *
twice_mock_api(void)
{
    return &mock_api;
}

/* ---- jobs ---- */

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
    /* Parsed the way the host parses bodies: duplicates refused, a bare
     * scalar accepted (it simply has no fields). */
    j->root = json_loadb(j->body, j->body_len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, NULL);
    return (twice_mock_job *) j;
}

static void
clear_results(struct twice_job *j)
{
    free(j->key);
    free(j->error);
    j->key = j->error = NULL;
    j->retry_after = -1;
    j->handled = 0;
    twice_mock_log_clear(&j->log);
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
    json_decref(j->root);
    free(j->body);
    free(j->message_id);
    free(j->group_id);
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
twice_mock_job_group(twice_mock_job *mj, const char *group_id)
{
    return replace(&((struct twice_job *) mj)->group_id, group_id, 1);
}

void
twice_mock_job_attempt(twice_mock_job *mj, int attempt)
{
    ((struct twice_job *) mj)->attempt = attempt;
}

void
twice_mock_job_db(twice_mock_job *mj, void *pgconn)
{
    ((struct twice_job *) mj)->db = pgconn;
}

/* ---- running a job ---- */

static int
set_error(struct twice_job *j, const char *prefix, const char *text)
{
    char *e = NULL;
    if (asprintf(&e, "%s%s", prefix, text) < 0) {
        return -1;
    }
    free(j->error);
    j->error = e;
    return -1;
}

/* The checks the host applies to a derive_key() result. */
static int
derive_with_plugin(struct twice_job *j, char *key, size_t cap)
{
    const struct twice_mock *m = j->mock;
    twice_mock_set_current(j->mock);
    int n = m->plugin->derive_key(m->state, j, key, cap);
    twice_mock_set_current(NULL);
    if (n < 0) {
        return set_error(j, "derive_key: ", j->error != NULL ? j->error : "no key");
    }
    if (n == 0 || n > TWICE_KEY_MAX) {
        return set_error(j, "derive_key: ", n == 0 ? "empty key" : "key too long");
    }
    for (int i = 0; i < n; i++) {
        if ((unsigned char) key[i] < 0x20 || key[i] == 0x7f) {
            return set_error(j, "derive_key: ", "a control character in the key");
        }
    }
    return n;
}

static int
derive(struct twice_job *j)
{
    char key[TWICE_KEY_MAX + 1], err[512];
    int n;
    if (j->mock->plugin->derive_key != NULL) {
        n = derive_with_plugin(j, key, sizeof(key));
    } else {
        n = twice_mock_expand_key((twice_mock_job *) j, j->mock->plugin->key_template, key,
                                  sizeof(key), err, sizeof(err));
        if (n < 0) {
            set_error(j, "", err);
        }
    }
    if (n < 0) {
        return -1;
    }
    j->key = strndup(key, (size_t) n);
    return j->key != NULL ? 0 : set_error(j, "", "out of memory");
}

twice_status
twice_mock_run(twice_mock_job *mj)
{
    struct twice_job *j = (struct twice_job *) mj;
    struct twice_mock *m = j->mock;
    clear_results(j);
    if (!m->initialized && m->plugin->init != NULL) {
        set_error(j, "", "twice_mock_run before a successful twice_mock_init");
        return TWICE_RETRY;
    }
    if (derive(j) != 0) {
        return TWICE_REJECT;
    }
    j->handled = 1;
    twice_mock_set_current(m);
    twice_status st = m->plugin->handle(m->state, j);
    twice_mock_set_current(NULL);
    if (st != TWICE_DONE && st != TWICE_RETRY && st != TWICE_REJECT) {
        api_error(j, "handle() returned %d, not DONE, RETRY or REJECT", (int) st);
        st = TWICE_RETRY;
    }
    return st;
}

const char *
twice_mock_job_key(const twice_mock_job *mj)
{
    return ((const struct twice_job *) mj)->key;
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
