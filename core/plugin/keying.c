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
#include "envelope.h"
#include "job.h"
#include "jsonpath.h"
#include "keytmpl.h"
#include "loader.h"
#include "payload.h"
#include "s3.h"

#include <stdio.h>
#include <stdlib.h>
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

/* The queue's envelope: j->env and the view, or a dead letter. */
static int
open_envelope(struct twice_job *j)
{
    char err[256], doc_err[JSONDOC_ERROR_LEN];
    struct envelope *e = calloc(1, sizeof(*e));
    if (e == NULL) {
        job_deadletter(j, "bad-envelope", "out of memory unwrapping the envelope");
        return KEYING_DEAD;
    }
    struct jsondoc *outer = jsondoc_parse(j->msg.body != NULL ? j->msg.body : "", j->msg.body_len,
                                          doc_err, sizeof(doc_err));
    int rc = envelope_open(j->qcfg->envelope, outer, doc_err, e, err, sizeof(err));
    jsondoc_free(outer);
    if (rc != 0) {
        envelope_free(e);
        free(e);
        job_deadletter(j, "bad-envelope", "%s", err);
        return KEYING_DEAD;
    }
    j->env = e;
    if (e->found != ENVELOPE_NONE) {
        job_set_view(j, e->body, e->body_len);
    }
    return KEYING_SHAPED;
}

/* S3's answer for a pointer that could not be fetched. */
static int
fetch_failed(struct twice_job *j, const struct s3_error *e, long max)
{
    const struct payload_pointer *p = j->pointer;
    if (e->too_large) {
        job_deadletter(j, "payload-too-large",
                       "the payload in S3 (%s/%s) exceeds max_payload_bytes (%ld)", p->bucket,
                       p->key, max);
    } else if (e->http_status == 404) {
        job_deadletter(j, "payload-missing", "no payload in S3 at %s/%s (%s)", p->bucket, p->key,
                       e->code);
    } else if (e->http_status == 403) {
        job_deadletter(j, "payload-denied", "reading the payload at %s/%s was denied (%s)",
                       p->bucket, p->key, e->code);
    } else if (!e->transient) {
        job_deadletter(j, "bad-payload-pointer", "the payload at %s/%s: %s", p->bucket, p->key,
                       e->message);
    } else {
        struct buf b = BUF_INIT; /* why, for the log line; the verdict is the caller's */
        buf_printf(&b, "fetching the payload at %s/%s: %s", p->bucket, p->key, e->message);
        free(j->error);
        j->error = buf_steal(&b);
        return KEYING_LATER;
    }
    return KEYING_DEAD;
}

/* The message's size attribute says it is a pointer. */
static int
claims_pointer(const struct twice_job *j)
{
    return job_attr(j, PAYLOAD_SIZE_ATTR) != NULL || job_attr(j, PAYLOAD_LEGACY_SIZE_ATTR) != NULL;
}

/* Follow an S3 pointer in the view, if it is one. */
static int
follow_pointer(struct twice_job *j, keying_s3_fn *get_s3, void *arg, long max)
{
    char err[256];
    size_t len;
    const char *view = job_view(j, &len);
    if (!claims_pointer(j) && !payload_looks_like_pointer(view, len)) {
        return KEYING_SHAPED; /* most bodies: not even parsed here */
    }
    struct payload_pointer *p = calloc(1, sizeof(*p));
    int rc = p == NULL ? -1
                       : payload_pointer_read(job_body(j), view, len, claims_pointer(j), p, err,
                                              sizeof(err));
    if (rc < 0) {
        job_deadletter(j, "bad-payload-pointer", "%s", p == NULL ? "out of memory" : err);
    }
    if (rc <= 0) {
        free(p);
        return rc < 0 ? KEYING_DEAD : KEYING_SHAPED;
    }
    j->pointer = p;
    const char *own = j->qcfg->payload_bucket;
    if (own != NULL && strcmp(p->bucket, own) != 0) {
        job_deadletter(j, "payload-denied",
                       "the pointer names bucket %s; this queue's payloads are in %s "
                       "(payload_bucket): no other bucket is read",
                       p->bucket, own);
        return KEYING_DEAD;
    }
    if (max <= 0) {
        job_deadletter(
            j, "bad-payload-pointer",
            "a payload in S3 (%s/%s), and max_payload_bytes is 0: payloads are not fetched",
            p->bucket, p->key);
        return KEYING_DEAD;
    }
    struct s3_error e;
    struct s3_client *s3 = get_s3(arg);
    if (s3 == NULL) {
        memset(&e, 0, sizeof(e));
        e.transient = 1;
        snprintf(e.message, sizeof(e.message), "no S3 client");
        return fetch_failed(j, &e, max);
    }
    char *body;
    size_t n;
    if (s3_get(s3, p->bucket, p->key, (size_t) max, &body, &n, &e) != 0) {
        return fetch_failed(j, &e, max);
    }
    j->payload = body;
    job_set_view(j, body, n);
    return KEYING_SHAPED;
}

int
keying_shape(struct twice_job *j, keying_s3_fn *get_s3, void *arg, long max_payload)
{
    if (j->qcfg->envelope != CONFIG_ENVELOPE_NONE && open_envelope(j) != KEYING_SHAPED) {
        return KEYING_DEAD;
    }
    return follow_pointer(j, get_s3, arg, max_payload);
}

/* Why a route_by value that is there names no route (a Binary attribute,
 * a body value with no text), for the dead letter: "(missing)" would send
 * the producer looking for a field it did send. */
static const char *
no_text_why(const struct jsondoc_value *v)
{
    static const char *const types[] = {"(null)",     "(false)",    "(true)",     "(a number)",
                                        "(a string)", "(an array)", "(an object)"};
    _Static_assert(JSONDOC_OBJECT == 6, "types[] follows enum jsondoc_type");
    if (v == NULL) {
        return "(missing)";
    }
    return v->type == JSONDOC_STRING ? "(a string holding a NUL character)" : types[v->type];
}

int
keying_route(struct twice_job *j)
{
    const struct config_queue *qc = j->qcfg;
    if (qc->plugin != NULL) {
        return KEYING_QUEUE_PLUGIN;
    }
    const char *value = NULL, *why = "(missing)";
    struct buf text = BUF_INIT;
    if (strncmp(qc->route_by, "attr:", 5) == 0) {
        const struct sqs_attr *a = job_attr(j, qc->route_by + 5);
        value = a != NULL ? a->string_value : NULL;
        why = a != NULL && value == NULL ? "(a Binary attribute)" : why;
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
        } else {
            why = no_text_why(v);
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
                       value != NULL ? value : why);
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
