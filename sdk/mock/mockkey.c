/*
 * mockkey.c - deriving a fake job's key: the plugin's template expanded,
 * or its derive_key() answer checked, by the daemon's own code (keytmpl.c
 * and jsonpath.c of core/text/), so keys and refusals are the host's to
 * the byte. What is here is only the glue: the job's attributes as keytmpl
 * sees them, and the results kept on the job.
 */
#include "mockkey.h"

#include "buf.h"
#include "keytmpl.h"
#include "mock_internal.h"
#include "mockapi.h"
#include "plugdecl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *
mockkey_setting(const twice_plugin *d)
{
    return plugdecl_key_setting(d);
}

/* The declaration of the setting name, or NULL. */
static const twice_setting *
declared(const twice_plugin *d, const char *name)
{
    for (const twice_setting *s = d->settings; s != NULL && s->name != NULL; s++) {
        if (strcmp(s->name, name) == 0) {
            return s;
        }
    }
    return NULL;
}

/* keytmpl's view of a fake job's attributes (ctx is the job). Binary ones
 * have no text, as SQS gives none. */
static int
job_attr(const void *ctx, const char *name, struct keytmpl_attr *out)
{
    const struct mock_attr *a = mockapi_attr(ctx, name);
    if (a == NULL) {
        return -1;
    }
    int binary = strncmp(a->type, "Binary", 6) == 0;
    *out = (struct keytmpl_attr){a->type, binary ? NULL : a->value};
    return 0;
}

/* Expand t for j into out, as hostapi_derive_key does. */
static enum keytmpl_result
expand(const struct keytmpl *t, const struct twice_job *j, struct buf *out, char *err,
       size_t errlen)
{
    struct keytmpl_input in = {
        .body = j->root,
        .body_error = j->body_error,
        .attr = job_attr,
        .attr_ctx = j,
        .group_id = j->group_id,
    };
    return keytmpl_expand(t, &in, out, err, errlen);
}

/* Call derive_key() and check its answer as the host does; the key or why
 * not is appended to out or why. */
static enum keytmpl_result
derive_with_plugin(struct twice_job *j, struct buf *out, struct buf *why)
{
    const struct twice_mock *m = j->mock;
    char key[TWICE_KEY_MAX + 1];
    mockapi_set_current(j->mock);
    mockapi_set_deriving(1);
    mockapi_set_job(j);
    int n = m->plugin->derive_key(m->state, j, key, sizeof(key));
    mockapi_set_job(NULL);
    mockapi_set_deriving(0);
    mockapi_set_current(NULL);
    enum keytmpl_result r = keytmpl_check_derived(key, n, j->error, why);
    if (r == KEYTMPL_OK && buf_append(out, key, (size_t) n) != 0) {
        r = KEYTMPL_BAD_VALUE;
        buf_puts(why, "out of memory deriving the key");
    }
    return r;
}

int
mockkey_compile_setting(struct twice_mock *m)
{
    const char *name = mockkey_setting(m->plugin), *text = NULL;
    char why[256];
    if (name == NULL) {
        return 0;
    }
    for (size_t i = 0; i < m->nsettings && text == NULL; i++) {
        text = strcmp(m->settings[i].name, name) == 0 ? m->settings[i].value : NULL;
    }
    if (text == NULL) {
        text = declared(m->plugin, name)->default_value;
    }
    keytmpl_free(m->tmpl);
    m->tmpl = NULL;
    if (text == NULL || keytmpl_compile(text, &m->tmpl, why, sizeof(why)) == 0) {
        return 0;
    }
    snprintf(m->error, sizeof(m->error), "plugin '%s': setting '%s': key template \"%s\": %s",
             m->plugin->name, name, text, why);
    return -1;
}

int
mockkey_derive(struct twice_job *j)
{
    struct buf key = BUF_INIT, why = BUF_INIT;
    char err[256];
    enum keytmpl_result r;
    const struct keytmpl *t = j->mock->queue_tmpl != NULL ? j->mock->queue_tmpl : j->mock->tmpl;
    if (t == NULL && j->mock->plugin->derive_key != NULL) {
        r = derive_with_plugin(j, &key, &why);
    } else if (t == NULL) {
        r = KEYTMPL_BAD_VALUE;
        buf_printf(&why,
                   "no key template: set the plugin's setting '%s' or a queue key "
                   "(twice_mock_queue_key)",
                   mockkey_setting(j->mock->plugin));
    } else {
        r = expand(t, j, &key, err, sizeof(err));
        if (r != KEYTMPL_OK) {
            buf_puts(&why, err);
        }
    }
    if (r == KEYTMPL_OK) {
        j->key = buf_steal(&key);
    }
    if (r != KEYTMPL_OK || j->key == NULL) {
        free(j->error);
        j->error = r != KEYTMPL_OK ? buf_steal(&why) : strdup("out of memory deriving the key");
        j->reason = keytmpl_reason(r != KEYTMPL_OK ? r : KEYTMPL_BAD_VALUE);
    }
    buf_free(&key);
    buf_free(&why);
    return j->key != NULL ? 0 : -1;
}

int
twice_mock_expand_key(const twice_mock_job *mj, const char *tmpl, char *buf, size_t cap, char *err,
                      size_t errlen)
{
    const struct twice_job *j = (const struct twice_job *) mj;
    struct keytmpl *t = NULL;
    struct buf key = BUF_INIT;
    int rc = -1;
    if (keytmpl_compile(tmpl, &t, err, errlen) != 0) {
        return -1;
    }
    if (expand(t, j, &key, err, errlen) == KEYTMPL_OK) {
        if (key.len + 1 > cap) {
            snprintf(err, errlen, "key of %zu bytes does not fit a buffer of %zu", key.len, cap);
        } else {
            memcpy(buf, buf_str(&key), key.len + 1);
            rc = (int) key.len;
        }
    }
    buf_free(&key);
    keytmpl_free(t);
    return rc;
}
