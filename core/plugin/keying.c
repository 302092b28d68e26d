/*
 * keying.c - a message's way to its plugin and the source of its key, for
 * the receivers and `twicectl key derive` alike: the size limit, routing
 * by a body path or an attribute, the order in which key sources win, and
 * the check that no queue is left without a key. Not the expansion of a
 * template (text/keytmpl.c) nor calls into plugins (hostapi.c).
 */
#include "keying.h"

#include "buf.h"
#include "config.h"
#include "diag.h"
#include "job.h"
#include "jsonpath.h"
#include "keytmpl.h"
#include "loader.h"

#include <stdio.h>
#include <string.h>

int
keying_check_size(struct twice_job *j, long max)
{
    if ((long) j->msg.body_len <= max) {
        return 0;
    }
    job_deadletter(j, "too-large", "body of %zu bytes exceeds max_message_bytes (%ld)",
                   j->msg.body_len, max);
    return -1;
}

int
keying_route(struct twice_job *j)
{
    const struct config_queue *qc = j->qcfg;
    if (qc->plugin != NULL) {
        return KEYING_QUEUE_PLUGIN;
    }
    const char *value = NULL;
    struct buf text = BUF_INIT;
    if (strncmp(qc->route_by, "attr:", 5) == 0) {
        const struct sqs_attr *a = sqs_attr_find(j->msg.attrs, j->msg.nattrs, qc->route_by + 5);
        value = a != NULL ? a->string_value : NULL;
    } else {
        struct jsondoc *body = job_body(j);
        if (body == NULL) {
            job_deadletter(j, "invalid-json", "routing by %s: %s", qc->route_by, j->body_error);
            return KEYING_NO_ROUTE;
        }
        /* the text a key would have; a value holding NUL names no route */
        const struct jsondoc_value *v = jsonpath_get(body, qc->route_by);
        if (v != NULL && jsonpath_key_text(v, &text) == 0 && strlen(buf_str(&text)) == text.len) {
            value = buf_str(&text);
        }
    }
    int route = KEYING_NO_ROUTE;
    for (size_t i = 0; value != NULL && i < qc->nroutes; i++) {
        if (strcmp(qc->routes[i].value, value) == 0) {
            route = (int) i;
        }
    }
    if (route == KEYING_NO_ROUTE) {
        job_deadletter(j, "unknown-route", "no route for %s = %s", qc->route_by,
                       value != NULL ? value : "(missing)");
    }
    buf_free(&text);
    return route;
}

const char *
keying_route_plugin(const struct config_queue *qc, int route)
{
    return route == KEYING_QUEUE_PLUGIN ? qc->plugin : qc->routes[route].plugin;
}

enum keying_source
keying_source(const struct loaded_plugin *lp, const struct keytmpl *queue_key)
{
    if (queue_key != NULL) {
        return KEYING_QUEUE;
    }
    switch (lp->key) {
    case LOADER_KEY_TEMPLATE:
        return KEYING_TEMPLATE;
    case LOADER_KEY_SETTING:
        return KEYING_SETTING;
    case LOADER_KEY_DERIVE:
        return KEYING_DERIVE;
    case LOADER_KEY_NONE:
        break;
    }
    return KEYING_NONE;
}

const char *
keying_source_name(enum keying_source s)
{
    static const char *const names[] = {"queue key", "plugin setting", "plugin template",
                                        "derive_key", "none"};
    return names[s];
}

int
keying_queue_key(const struct config_queue *qc, struct keytmpl **out, char *err, size_t errlen)
{
    char why[256];
    *out = NULL;
    if (qc->key == NULL || keytmpl_compile(qc->key, out, why, sizeof(why)) == 0) {
        return 0;
    }
    snprintf(err, errlen, "queue %s: key: %s", qc->name, why);
    return -1;
}

/* Does queue q hand messages to the plugin called name? */
static int
uses_plugin(const struct config_queue *q, const char *name)
{
    if (q->plugin != NULL) {
        return strcmp(q->plugin, name) == 0;
    }
    for (size_t i = 0; i < q->nroutes; i++) {
        if (strcmp(q->routes[i].plugin, name) == 0) {
            return 1;
        }
    }
    return 0;
}

int
keying_check_queues(const struct config *c, const char *name, const struct loaded_plugin *lp,
                    struct diag *d)
{
    int added = 0;
    if (lp->key != LOADER_KEY_NONE) {
        return 0;
    }
    const char *setting = loader_key_setting(lp->desc);
    for (size_t i = 0; i < c->nqueues; i++) {
        const struct config_queue *q = &c->queues[i];
        if (q->key == NULL && uses_plugin(q, name)) {
            diag_add(d, q->file != NULL ? q->file : c->file, q->line,
                     "queue '%s': no key for plugin '%s': set key in this queue, or the "
                     "plugin's setting '%s'",
                     q->name, name, setting != NULL ? setting : "?");
            added++;
        }
    }
    return added;
}
