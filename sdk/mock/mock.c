/*
 * mock.c - the mock host's life cycle: taking a plugin (linked or dlopen'ed)
 * through the host's load rule, checking settings as the host does, init
 * and fini, and the captured log. Jobs are in mockjob.c, the API table in
 * mockapi.c, keys in mockkey.c; nothing here talks to a server.
 */
#include "buf.h"
#include "deadjob.h"
#include "escape.h"
#include "keytmpl.h"
#include "mock_internal.h"
#include "mockapi.h"
#include "mockkey.h"
#include "plugdecl.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The host's load rule (plugin.h): magic, equal major, a minor not newer
 * than ours, and at least that minor's size; then the descriptor's fields
 * by the daemon's own check (text/plugdecl.c): name, flags, handle,
 * settings declaration, exactly one key source, a template that compiles.
 * 0 and *tmpl (NULL for derive_key and key_setting; the caller's), or -1
 * with err. */
static int
check_descriptor(const twice_plugin *d, struct keytmpl **tmpl, char *err, size_t errlen)
{
    *tmpl = NULL;
    if (d == NULL) {
        snprintf(err, errlen, "the entry point returned NULL");
    } else if (d->magic != TWICE_ABI_MAGIC) {
        snprintf(err, errlen, "not a twice plugin (bad magic 0x%08x)", (unsigned) d->magic);
    } else if (d->abi_major != TWICE_ABI_MAJOR || d->abi_minor > TWICE_ABI_MINOR) {
        snprintf(err, errlen, "built for ABI %u.%u, mock host supports %d.0-%d.%d",
                 (unsigned) d->abi_major, (unsigned) d->abi_minor, TWICE_ABI_MAJOR,
                 TWICE_ABI_MAJOR, TWICE_ABI_MINOR);
    } else if (d->size < plugdecl_min_size(d->abi_minor)) {
        snprintf(err, errlen, "descriptor of %u bytes is smaller than ABI 1.%u's %zu",
                 (unsigned) d->size, (unsigned) d->abi_minor, plugdecl_min_size(d->abi_minor));
    } else {
        return plugdecl_check(d, tmpl, err, errlen);
    }
    return -1;
}

/* A mock for a checked descriptor, taking tmpl (freed on failure). */
static twice_mock *
mock_alloc(const twice_plugin *plugin, struct keytmpl *tmpl)
{
    twice_mock *m = calloc(1, sizeof(*m));
    if (m == NULL || pthread_mutex_init(&m->lock, NULL) != 0) {
        free(m);
        keytmpl_free(tmpl);
        return NULL;
    }
    m->plugin = plugin;
    m->tmpl = tmpl;
    m->settings_view.mock = m;
    const char *echo = getenv("TWICE_MOCK_ECHO");
    m->echo = echo != NULL && strcmp(echo, "1") == 0;
    return m;
}

twice_mock *
twice_mock_new(const twice_plugin *plugin)
{
    char err[512];
    struct keytmpl *tmpl;
    if (check_descriptor(plugin, &tmpl, err, sizeof(err)) != 0) {
        /* no err argument here: said where a failing test shows it */
        fprintf(stderr, "twice-mock: twice_mock_new: %s\n", err);
        return NULL;
    }
    return mock_alloc(plugin, tmpl);
}

twice_mock *
twice_mock_open(const char *path, char *err, size_t errlen)
{
    char why[512];
    struct keytmpl *tmpl;
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        snprintf(err, errlen, "%s: %s", path, dlerror());
        return NULL;
    }
    /* POSIX allows converting dlsym's object pointer to a function pointer;
     * the union says so without a cast warning. */
    union {
        void *obj;
        twice_plugin_entry_fn fn;
    } entry;
    entry.obj = dlsym(lib, TWICE_PLUGIN_ENTRY);
    if (entry.obj == NULL) {
        snprintf(err, errlen, "%s: no %s symbol", path, TWICE_PLUGIN_ENTRY);
        goto fail;
    }
    const twice_plugin *d = entry.fn();
    if (check_descriptor(d, &tmpl, why, sizeof(why)) != 0) {
        snprintf(err, errlen, "%s: %s", path, why);
        goto fail;
    }
    twice_mock *m = mock_alloc(d, tmpl);
    if (m == NULL) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto fail;
    }
    m->lib = lib;
    return m;
fail:
    dlclose(lib);
    return NULL;
}

void
twice_mock_free(twice_mock *m)
{
    if (m == NULL) {
        return;
    }
    if (m->initialized && m->plugin->fini != NULL) {
        mockapi_set_current(m);
        m->plugin->fini(m->state);
        mockapi_set_current(NULL);
    }
    mockapi_forget(m);
    for (size_t i = 0; i < m->nsettings; i++) {
        free(m->settings[i].name);
        free(m->settings[i].value);
    }
    free(m->settings);
    for (size_t i = 0; i < m->nqueues; i++) {
        free(m->queues[i].name);
        free(m->queues[i].value);
    }
    free(m->queues);
    mocklog_clear(&m->log);
    keytmpl_free(m->tmpl);
    keytmpl_free(m->queue_tmpl);
    pthread_mutex_destroy(&m->lock);
    if (m->lib != NULL) {
        dlclose(m->lib);
    }
    free(m);
}

const twice_plugin *
twice_mock_plugin(const twice_mock *m)
{
    return m->plugin;
}

int
twice_mock_set(twice_mock *m, const char *name, const char *value)
{
    char *v = strdup(value != NULL ? value : "");
    if (v == NULL) {
        return -1;
    }
    for (size_t i = 0; i < m->nsettings; i++) {
        if (strcmp(m->settings[i].name, name) == 0) {
            free(m->settings[i].value);
            m->settings[i].value = v;
            return 0;
        }
    }
    struct mock_kv *kv = realloc(m->settings, (m->nsettings + 1) * sizeof(*kv));
    char *n = strdup(name);
    if (kv == NULL || n == NULL) {
        m->settings = kv != NULL ? kv : m->settings;
        free(n);
        free(v);
        return -1;
    }
    m->settings = kv;
    m->settings[m->nsettings++] = (struct mock_kv){n, v};
    return 0;
}

static const twice_setting *
find_decl(const twice_plugin *p, const char *name)
{
    for (const twice_setting *s = p->settings; s != NULL && s->name != NULL; s++) {
        if (strcmp(s->name, name) == 0) {
            return s;
        }
    }
    return NULL;
}

/* A given value must read as its declared type, as libconfig would type it
 * in twice.conf. */
static int
valid_value(const twice_setting *s, const char *v)
{
    char *end;
    if (s->type == TWICE_SETTING_BOOL) {
        return strcmp(v, "true") == 0 || strcmp(v, "false") == 0;
    }
    if (s->type == TWICE_SETTING_INT) {
        errno = 0;
        (void) strtoll(v, &end, 10);
        return errno == 0 && end != v && *end == '\0';
    }
    return 1;
}

static int
check_settings(twice_mock *m)
{
    for (size_t i = 0; i < m->nsettings; i++) {
        const twice_setting *s = find_decl(m->plugin, m->settings[i].name);
        if (s == NULL) {
            snprintf(m->error, sizeof(m->error), "plugin '%s': unknown setting '%s'",
                     m->plugin->name, m->settings[i].name);
            return -1;
        }
        if (!valid_value(s, m->settings[i].value)) {
            snprintf(m->error, sizeof(m->error), "plugin '%s': setting '%s' must be %s",
                     m->plugin->name, s->name,
                     s->type == TWICE_SETTING_INT ? "an integer" : "true or false");
            return -1;
        }
    }
    for (const twice_setting *s = m->plugin->settings; s != NULL && s->name != NULL; s++) {
        int given = 0;
        for (size_t i = 0; i < m->nsettings && !given; i++) {
            given = strcmp(m->settings[i].name, s->name) == 0;
        }
        if (s->required && !given) {
            snprintf(m->error, sizeof(m->error), "plugin '%s': missing required setting '%s'",
                     m->plugin->name, s->name);
            return -1;
        }
    }
    return 0;
}

/* Why init() failed, in twiced's words (less its FILE:LINE): its last
 * error (else warning) line, escaped for one line, or that it gave none. */
static void
init_failed(twice_mock *m, int rc)
{
    struct buf cause = BUF_INIT;
    escape_unquoted(&cause, m->init_cause, strlen(m->init_cause));
    if (m->init_cause[0] != '\0' && !cause.failed) {
        snprintf(m->error, sizeof(m->error), "plugin '%s': init failed: %s", m->plugin->name,
                 buf_str(&cause));
    } else {
        snprintf(m->error, sizeof(m->error),
                 "plugin '%s': init failed (returned %d and logged no reason)", m->plugin->name,
                 rc);
    }
    buf_free(&cause);
}

int
twice_mock_init(twice_mock *m)
{
    m->error[0] = '\0';
    if (m->initialized) {
        snprintf(m->error, sizeof(m->error), "init already ran");
        return -1;
    }
    if (check_settings(m) != 0 || mockkey_compile_setting(m) != 0) {
        return -1;
    }
    int rc = 0;
    m->setting_error[0] = '\0';
    m->init_cause[0] = '\0';
    m->init_cause_level = TWICE_LOG_WARN;
    if (m->plugin->init != NULL) {
        mockapi_set_current(m);
        rc = m->plugin->init(mockapi_table(), &m->settings_view, &m->state);
        mockapi_set_current(NULL);
    }
    if (rc != 0 && m->setting_error[0] != '\0') {
        snprintf(m->error, sizeof(m->error), "plugin '%s': %s", m->plugin->name, m->setting_error);
        return rc;
    }
    if (rc != 0) {
        init_failed(m, rc);
        return rc;
    }
    if (m->setting_error[0] != '\0') {
        /* blamed, yet init() went on: a warning, as the host logs it */
        pthread_mutex_lock(&m->lock);
        mocklog_add(&m->log, TWICE_LOG_WARN, m->setting_error);
        pthread_mutex_unlock(&m->lock);
    }
    m->initialized = 1;
    return 0;
}

int
twice_mock_queue_key(twice_mock *m, const char *tmpl)
{
    struct keytmpl *t = NULL;
    char why[256];
    m->error[0] = '\0';
    if (tmpl != NULL && keytmpl_compile(tmpl, &t, why, sizeof(why)) != 0) {
        snprintf(m->error, sizeof(m->error), "queue key \"%s\": %s", tmpl, why);
        return -1;
    }
    keytmpl_free(m->queue_tmpl);
    m->queue_tmpl = t;
    return 0;
}

int
twice_mock_queue(twice_mock *m, const char *name, const char *url)
{
    struct mock_kv *grown = realloc(m->queues, (m->nqueues + 1) * sizeof(*grown));
    if (grown == NULL) {
        return -1;
    }
    m->queues = grown;
    struct mock_kv *q = &m->queues[m->nqueues];
    q->name = strdup(name);
    q->value = strdup(url);
    if (q->name == NULL || q->value == NULL) {
        free(q->name);
        free(q->value);
        return -1;
    }
    m->nqueues++;
    return 0;
}

const char *
twice_mock_error(const twice_mock *m)
{
    return m->error;
}

size_t
twice_mock_log_count(const twice_mock *m)
{
    twice_mock *mm = (twice_mock *) m; /* the lock is bookkeeping, not state */
    pthread_mutex_lock(&mm->lock);
    size_t n = m->log.n;
    pthread_mutex_unlock(&mm->lock);
    return n;
}

const char *
twice_mock_log_text(const twice_mock *m, size_t i, twice_log_level *level)
{
    twice_mock *mm = (twice_mock *) m;
    const char *text = NULL;
    pthread_mutex_lock(&mm->lock);
    if (i < m->log.n) {
        text = m->log.lines[i].text;
        if (level != NULL) {
            *level = m->log.lines[i].level;
        }
    }
    pthread_mutex_unlock(&mm->lock);
    return text;
}

size_t
twice_mock_refused(const twice_mock *m, const char *fn)
{
    twice_mock *mm = (twice_mock *) m;
    int only = fn != NULL ? deadjob_fn_find(fn) : -1;
    size_t n = 0;
    if (fn != NULL && only < 0) {
        return 0; /* not a function that takes a job */
    }
    pthread_mutex_lock(&mm->lock);
    for (int i = 0; i < DEADJOB_NFNS; i++) {
        n += only < 0 || i == only ? m->refused[i] : 0;
    }
    pthread_mutex_unlock(&mm->lock);
    return n;
}

void
twice_mock_echo(twice_mock *m, int on)
{
    m->echo = on;
}
