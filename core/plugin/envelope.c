/*
 * envelope.c - unwrapping SNS notifications and EventBridge events (see
 * envelope.h): recognising them by their fields, taking the inner body and
 * the fields templates may use. Copies what it keeps, so the result does
 * not depend on the outer document's lifetime.
 */
#include "envelope.h"

#include "jsondoc.h"
#include "jsonpath.h"

#include <stdio.h>
#include <string.h>

const char *
envelope_name(enum envelope_kind k)
{
    static const char *const names[] = {"none", "sns", "eventbridge", "auto"};
    return k <= ENVELOPE_AUTO ? names[k] : "?";
}

/* The string member `name` of the root object, or NULL (absent, not a
 * string, or holding a NUL byte). */
static const struct jsondoc_value *
root_string(const struct jsondoc *d, const char *name)
{
    const struct jsondoc_value *v = jsonpath_get(d, name);
    if (v == NULL || v->type != JSONDOC_STRING || memchr(v->str, '\0', v->len) != NULL) {
        return NULL;
    }
    return v;
}

static int
is_sns(const struct jsondoc *d)
{
    const struct jsondoc_value *t = root_string(d, "Type");
    return t != NULL && t->len == 12 && memcmp(t->str, "Notification", 12) == 0 &&
           root_string(d, "TopicArn") != NULL;
}

static int
is_eventbridge(const struct jsondoc *d)
{
    return root_string(d, "detail-type") != NULL && root_string(d, "source") != NULL;
}

/* Copy root member `name` (a string) into e->msg[m], when present. */
static int
keep_msg(struct envelope *e, const struct jsondoc *d, const char *name, enum keytmpl_msg m)
{
    const struct jsondoc_value *v = root_string(d, name);
    if (v != NULL && (e->msg[m] = arena_strndup(&e->strings, v->str, v->len)) == NULL) {
        return -1;
    }
    return 0;
}

/* The SNS MessageAttributes: {"Name": {"Type": "String", "Value": "v"}}. */
static int
keep_sns_attrs(struct envelope *e, const struct jsondoc *d, char *err, size_t errlen)
{
    const struct jsondoc_value *o = jsonpath_get(d, "MessageAttributes");
    if (o == NULL || o->type == JSONDOC_NULL) {
        return 0;
    }
    if (o->type != JSONDOC_OBJECT) {
        snprintf(err, errlen, "SNS MessageAttributes is not an object");
        return -1;
    }
    e->attrs = arena_alloc(&e->strings, (o->count ? o->count : 1) * sizeof(*e->attrs));
    if (e->attrs == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    uint32_t i = (uint32_t) (o - d->v) + 1;
    for (uint32_t k = 0; k < o->count; k++, i = d->v[i].next) {
        const struct jsondoc_value *a = &d->v[i], *type = NULL, *value = NULL;
        uint32_t c = i + 1;
        for (uint32_t m = 0; a->type == JSONDOC_OBJECT && m < a->count; m++, c = d->v[c].next) {
            const struct jsondoc_value *f = &d->v[c];
            if (f->type == JSONDOC_STRING && f->name_len == 4 && memcmp(f->name, "Type", 4) == 0) {
                type = f;
            } else if (f->type == JSONDOC_STRING && f->name_len == 5 &&
                       memcmp(f->name, "Value", 5) == 0) {
                value = f;
            }
        }
        if (type == NULL || value == NULL || memchr(a->name, '\0', a->name_len) != NULL ||
            memchr(value->str, '\0', value->len) != NULL) {
            snprintf(err, errlen, "SNS message attribute %zu has no string Type and Value",
                     (size_t) k + 1);
            return -1;
        }
        struct sqs_attr *out = &e->attrs[e->nattrs++];
        memset(out, 0, sizeof(*out));
        out->name = arena_strndup(&e->strings, a->name, a->name_len);
        out->data_type = arena_strndup(&e->strings, type->str, type->len);
        if (!(type->len >= 6 && memcmp(type->str, "Binary", 6) == 0)) {
            out->string_value = arena_strndup(&e->strings, value->str, value->len);
        }
    }
    return 0;
}

static int
open_sns(struct envelope *e, const struct jsondoc *d, char *err, size_t errlen)
{
    const struct jsondoc_value *m = jsonpath_get(d, "Message");
    if (m == NULL || m->type != JSONDOC_STRING) {
        snprintf(err, errlen, "SNS notification's Message is %s, not a string",
                 m == NULL ? "missing" : "another JSON value");
        return -1;
    }
    if (memchr(m->str, '\0', m->len) != NULL) {
        snprintf(err, errlen, "SNS notification's Message holds a NUL byte");
        return -1;
    }
    e->found = ENVELOPE_SNS;
    e->body_len = m->len;
    if ((e->body = arena_strndup(&e->strings, m->str, m->len)) == NULL ||
        keep_msg(e, d, "MessageId", KEYTMPL_MSG_SNS_MESSAGE_ID) != 0 ||
        keep_msg(e, d, "TopicArn", KEYTMPL_MSG_TOPIC) != 0 ||
        keep_msg(e, d, "Subject", KEYTMPL_MSG_SUBJECT) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return keep_sns_attrs(e, d, err, errlen);
}

static int
open_eventbridge(struct envelope *e, const struct jsondoc *d, char *err, size_t errlen)
{
    const struct jsondoc_value *detail = jsonpath_get(d, "detail");
    static const char *const types[] = {"null",     "false",    "true",     "a number",
                                        "a string", "an array", "an object"};
    if (detail == NULL) {
        snprintf(err, errlen, "EventBridge event without detail");
        return -1;
    }
    _Static_assert(JSONDOC_OBJECT == 6, "types[] follows enum jsondoc_type");
    if (detail->type != JSONDOC_OBJECT) { /* EventBridge's detail is always an object */
        snprintf(err, errlen, "EventBridge detail is not an object (it is %s)",
                 types[detail->type]);
        return -1;
    }
    size_t n;
    const char *raw = jsondoc_raw(d, detail, &n);
    e->found = ENVELOPE_EVENTBRIDGE;
    e->body_len = n;
    if ((e->body = arena_strndup(&e->strings, raw, n)) == NULL ||
        keep_msg(e, d, "detail-type", KEYTMPL_MSG_DETAIL_TYPE) != 0 ||
        keep_msg(e, d, "source", KEYTMPL_MSG_SOURCE) != 0 ||
        keep_msg(e, d, "id", KEYTMPL_MSG_EVENT_ID) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* What auto unwraps: a notification or event with the member that holds
 * its job (Message, detail), which SNS and EventBridge always send. A body
 * that only shares their names (a job with "source" and "detail-type") is
 * a job of its own, not a broken envelope. */
static int
has_payload(const struct jsondoc *d, int sns)
{
    return jsonpath_get(d, sns ? "Message" : "detail") != NULL;
}

int
envelope_open(int want, const struct jsondoc *doc, const char *doc_error, struct envelope *e,
              char *err, size_t errlen)
{
    memset(e, 0, sizeof(*e));
    int sns = doc != NULL && is_sns(doc), eb = doc != NULL && !sns && is_eventbridge(doc);
    if (want == ENVELOPE_AUTO && ((!sns && !eb) || !has_payload(doc, sns))) {
        return 0; /* not wrapped: the body as it is */
    }
    if (doc == NULL) {
        snprintf(err, errlen, "expected an %s envelope, and the body is not JSON (%s)",
                 envelope_name(want), doc_error != NULL ? doc_error : "?");
        return -1;
    }
    if (want == ENVELOPE_SNS ? !sns : want == ENVELOPE_EVENTBRIDGE ? !eb : 0) {
        snprintf(err, errlen, "%s",
                 want == ENVELOPE_SNS
                     ? "not an SNS notification (no Type \"Notification\" with a TopicArn)"
                     : "not an EventBridge event (no detail-type and source strings)");
        return -1;
    }
    return sns ? open_sns(e, doc, err, errlen) : open_eventbridge(e, doc, err, errlen);
}

void
envelope_free(struct envelope *e)
{
    arena_free(&e->strings);
    memset(e, 0, sizeof(*e));
}
