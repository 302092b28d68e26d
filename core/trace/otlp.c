/*
 * otlp.c - encoding job spans for OTLP/HTTP (see otlp.h). The attribute
 * names are OpenTelemetry's messaging semantic conventions for a consumer's
 * "process" span (messaging.system aws_sqs, messaging.destination.name,
 * messaging.message.id, messaging.operation.type and .name) and twice's own
 * (twice.key, twice.plugin, twice.outcome, twice.attempt).
 */
#include "otlp.h"

#include "buf.h"
#include "escape.h"
#include "span.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPAN_KIND_CONSUMER 5
#define STATUS_CODE_ERROR  2

/* Text as a JSON string: as is when it is UTF-8, else escaped (a plugin's
 * error may hold any bytes). */
static json_t *
text_json(const char *s)
{
    json_t *v = json_string(s);
    if (v == NULL && s != NULL) {
        struct buf b = BUF_INIT;
        escape_unquoted(&b, s, strlen(s));
        v = b.failed ? NULL : json_string(buf_str(&b));
        buf_free(&b);
    }
    return v;
}

/* Digits, hex and the like: ASCII by construction, so jansson's UTF-8
 * check is skipped (encoding is the exporter's main cost). */
static json_t *
ascii_json(const char *s)
{
    return json_stringn_nocheck(s, strlen(s));
}

static json_t *
nanos_json(int64_t ns)
{
    char text[24];
    snprintf(text, sizeof(text), "%" PRId64, ns);
    return ascii_json(text);
}

static json_t *
hex_json(const uint8_t *b, size_t n)
{
    char text[33];
    tracectx_hex(b, n, text);
    return ascii_json(text);
}

/* Append {key, value: {type: v}} (v taken, even on failure). Built with the
 * object functions, not json_pack: it runs a dozen times per span. Returns
 * nonzero on ENOMEM (or a key that is not UTF-8). */
static int
add_attr(json_t *attrs, const char *key, const char *type, json_t *v)
{
    json_t *value = json_object(), *kv = json_object();
    int bad = value == NULL || kv == NULL || v == NULL;
    if (!bad) {
        bad |= json_object_set_new_nocheck(value, type, v);
        v = NULL;
        bad |= json_object_set_new_nocheck(kv, "key", json_string(key));
        bad |= json_object_set_new_nocheck(kv, "value", value);
        value = NULL;
        bad |= json_array_append_new(attrs, kv);
        kv = NULL;
    }
    json_decref(v);
    json_decref(value);
    json_decref(kv);
    return bad;
}

static int
add_str(json_t *attrs, const char *key, const char *value)
{
    return add_attr(attrs, key, "stringValue", text_json(value != NULL ? value : ""));
}

/* OTLP/JSON writes 64-bit integers in strings. */
static int
add_int(json_t *attrs, const char *key, long long value)
{
    char text[24];
    snprintf(text, sizeof(text), "%lld", value);
    return add_attr(attrs, key, "intValue", ascii_json(text));
}

json_t *
otlp_string_attrs(const char *const *names, const char *const *values, size_t n)
{
    json_t *attrs = json_array();
    int bad = attrs == NULL;
    for (size_t i = 0; i < n && !bad; i++) {
        bad = add_str(attrs, names[i], values[i]) != 0;
    }
    if (bad) {
        json_decref(attrs);
        return NULL;
    }
    return attrs;
}

static json_t *
span_attrs(const struct span *s)
{
    json_t *a = json_array();
    if (a == NULL) {
        return NULL;
    }
    int bad = add_str(a, "messaging.system", "aws_sqs");
    bad |= add_str(a, "messaging.operation.type", "process");
    bad |= add_str(a, "messaging.operation.name", "process");
    bad |= add_str(a, "messaging.destination.name", s->queue);
    bad |= add_str(a, "messaging.message.id", s->message_id);
    bad |= add_int(a, "messaging.message.body.size", s->body_size);
    if (s->key[0] != '\0') {
        bad |= add_str(a, "twice.key", s->key);
    }
    if (s->plugin[0] != '\0') {
        bad |= add_str(a, "twice.plugin", s->plugin);
    }
    bad |= add_str(a, "twice.outcome", s->outcome != NULL ? s->outcome : "unknown");
    bad |= add_int(a, "twice.attempt", s->attempt);
    if (s->error) {
        bad |= add_str(a, "error.type", s->outcome != NULL ? s->outcome : "unknown");
    }
    if (bad) {
        json_decref(a);
        return NULL;
    }
    return a;
}

static json_t *
span_events(const struct span *s)
{
    json_t *list = json_array();
    for (int i = 0; list != NULL && i < s->nevents; i++) {
        const struct span_event *e = &s->events[i];
        json_t *attrs = json_array();
        if (attrs != NULL && e->key != NULL && add_str(attrs, e->key, e->value) != 0) {
            json_decref(attrs);
            attrs = NULL;
        }
        json_t *ev = json_pack("{s:o, s:s, s:o}", "timeUnixNano", nanos_json(e->at_ns), "name",
                               e->name, "attributes", attrs);
        if (ev == NULL || json_array_append_new(list, ev) != 0) {
            json_decref(list);
            return NULL;
        }
    }
    return list;
}

/* The AWSTraceHeader link: the X-Ray trace the message was sent in. */
static json_t *
span_links(const struct span *s)
{
    json_t *list = json_array();
    if (list == NULL || !s->has_link) {
        return list;
    }
    const char *names[] = {"twice.link.source"}, *values[] = {"AWSTraceHeader"};
    json_t *l =
        json_pack("{s:o, s:o, s:o}", "traceId", hex_json(s->link.trace_id, 16), "spanId",
                  hex_json(s->link.span_id, 8), "attributes", otlp_string_attrs(names, values, 1));
    if (l == NULL || json_array_append_new(list, l) != 0) {
        json_decref(list);
        return NULL;
    }
    return list;
}

static json_t *
span_json(const struct span *s)
{
    char name[SPAN_TEXT + 16];
    snprintf(name, sizeof(name), "process %s", s->queue);
    json_t *j = json_pack("{s:o, s:o, s:o, s:i, s:o, s:o, s:o, s:o, s:o, s:i}", "traceId",
                          hex_json(s->ctx.trace_id, 16), "spanId", hex_json(s->ctx.span_id, 8),
                          "name", text_json(name), "kind", SPAN_KIND_CONSUMER, "startTimeUnixNano",
                          nanos_json(s->start_ns), "endTimeUnixNano", nanos_json(s->end_ns),
                          "attributes", span_attrs(s), "events", span_events(s), "links",
                          span_links(s), "droppedEventsCount", s->events_dropped);
    if (j != NULL && s->has_parent &&
        json_object_set_new(j, "parentSpanId", hex_json(s->parent_id, 8)) != 0) {
        json_decref(j);
        return NULL;
    }
    if (j != NULL && s->error) {
        json_t *st = json_pack("{s:i, s:o}", "code", STATUS_CODE_ERROR, "message",
                               text_json(s->status_message));
        if (st == NULL || json_object_set_new(j, "status", st) != 0) {
            json_decref(j);
            return NULL;
        }
    }
    return j;
}

char *
otlp_encode(const json_t *resource_attrs, const char *version, struct span *const *spans, size_t n)
{
    json_t *list = json_array();
    for (size_t i = 0; list != NULL && i < n; i++) {
        json_t *s = span_json(spans[i]);
        if (s == NULL || json_array_append_new(list, s) != 0) {
            json_decref(list);
            list = NULL;
        }
    }
    json_t *req = json_pack("{s:[{s:{s:O}, s:[{s:{s:s, s:s}, s:o}]}]}", "resourceSpans",
                            "resource", "attributes", (json_t *) resource_attrs, "scopeSpans",
                            "scope", "name", "twice", "version", version, "spans", list);
    if (req == NULL) {
        return NULL;
    }
    char *text = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    return text;
}

long long
otlp_rejected(const char *body, size_t len)
{
    json_t *root = len > 0 ? json_loadb(body, len, 0, NULL) : NULL;
    json_t *v = json_object_get(json_object_get(root, "partialSuccess"), "rejectedSpans");
    long long n = 0;
    if (json_is_integer(v)) {
        n = json_integer_value(v);
    } else if (json_is_string(v)) {
        n = strtoll(json_string_value(v), NULL, 10);
    }
    json_decref(root);
    return n > 0 ? n : 0;
}
