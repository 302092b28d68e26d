/*
 * test-trace.c - the pure parts of tracing: OpenTelemetry's key=value
 * lists (text/kvlist.c), the tracing settings with the OTEL_* environment
 * and which wins (trace/tracecfg.c), a span as OTLP/JSON (trace/otlp.c:
 * hex ids, 64-bit numbers as strings, attributes, events in time order,
 * a status that stays valid JSON whatever bytes a plugin's error holds) and
 * a collector's partial success. Not the exporter's thread or HTTP
 * (tests/integration/test_tracing.py).
 */
#include "check.h"
#include "config.h"
#include "kvlist.h"
#include "otlp.h"
#include "span.h"
#include "tracecfg.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static void
test_kvlist(void)
{
    struct kvlist_pair *p;
    size_t n;
    const char *why = NULL;
    CHECK_INT(kvlist_parse(" a=1, b = x%2Cy ,,c=,a=2", &p, &n, &why), 0);
    CHECK_INT(n, 4);
    if (n == 4) {
        CHECK_STR(p[1].key, "b");
        CHECK_STR(p[1].value, "x,y");
        CHECK_STR(p[2].value, "");
        CHECK_STR(kvlist_get(p, n, "a"), "2"); /* the last one given */
        CHECK(kvlist_get(p, n, "z") == NULL);
    }
    kvlist_free(p, n);
    CHECK_INT(kvlist_parse("", &p, &n, &why), 0);
    CHECK_INT(n, 0);
    kvlist_free(p, n);
    static const char *const bad[][2] = {
        {"a", "a member without '='"},
        {"a=1,=2", "an empty key"},
        {"a b=1", "a key holds a blank or a control character"},
        {"a=%zz", "a '%' not followed by two hex digits"},
        {"a=%4", "a '%' not followed by two hex digits"},
        {"Authorization=Bearer%0d%0aX-Evil: 1", "a value holds a control character"},
        {"a=%ff", "a value is not UTF-8"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why = NULL;
        p = (struct kvlist_pair *) &n;
        CHECK_INT(kvlist_parse(bad[i][0], &p, &n, &why), -1);
        CHECK(p == NULL);
        CHECK_STR(why, bad[i][1]);
    }
}

static const char *
resource_value(const json_t *attrs, const char *key)
{
    size_t i;
    json_t *kv;
    json_array_foreach(attrs, i, kv)
    {
        if (strcmp(json_string_value(json_object_get(kv, "key")), key) == 0) {
            return json_string_value(json_object_get(json_object_get(kv, "value"), "stringValue"));
        }
    }
    return NULL;
}

static void
clear_env(void)
{
    unsetenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
    unsetenv("OTEL_SERVICE_NAME");
    unsetenv("OTEL_RESOURCE_ATTRIBUTES");
    unsetenv("OTEL_EXPORTER_OTLP_HEADERS");
    unsetenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS");
}

/* Resolve c and return the endpoint and service name in *t (freed by the caller). */
static int
resolve(const struct config *c, struct tracecfg *t, char *err, size_t errlen)
{
    return tracecfg_resolve(c, t, err, errlen);
}

/* A configuration with tracing on and nothing else; the environment cleared. */
static void
tracing_on(struct config *c)
{
    memset(c, 0, sizeof(*c));
    c->tracing.exporter = CONFIG_TRACING_OTLP;
    c->tracing.buffer_spans = 10, c->tracing.batch_spans = 5;
    c->tracing.export_interval_ms = 100, c->tracing.export_timeout = 2;
    clear_env();
}

static void
test_settings_precedence(void)
{
    struct config c;
    struct tracecfg t;
    char err[256];
    tracing_on(&c);

    CHECK_INT(resolve(&c, &t, err, sizeof(err)), 0);
    CHECK_STR(t.endpoint, "http://localhost:4318/v1/traces");
    CHECK_STR(t.service_name, "twiced");
    CHECK_STR(resource_value(t.resource, "service.name"), "twiced");
    CHECK(resource_value(t.resource, "service.version") != NULL);
    CHECK_INT(t.export_timeout_ms, 2000);
    CHECK_INT(t.nheaders, 0);
    tracecfg_free(&t);

    setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector:4318", 1);
    setenv("OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attrs,k8s.pod.name=p%201", 1);
    CHECK_INT(resolve(&c, &t, err, sizeof(err)), 0);
    CHECK_STR(t.endpoint, "https://collector:4318/v1/traces"); /* the signal path added */
    CHECK_STR(t.service_name, "from-attrs");
    CHECK_STR(resource_value(t.resource, "k8s.pod.name"), "p 1");
    tracecfg_free(&t);

    setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector:4318/base/", 1);
    setenv("OTEL_SERVICE_NAME", "from-env", 1);
    CHECK_INT(resolve(&c, &t, err, sizeof(err)), 0);
    CHECK_STR(t.endpoint, "https://collector:4318/base/v1/traces");
    CHECK_STR(t.service_name, "from-env"); /* over OTEL_RESOURCE_ATTRIBUTES */
    CHECK_STR(resource_value(t.resource, "service.name"), "from-env");
    tracecfg_free(&t);

    setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://traces:9999/custom", 1);
    CHECK_INT(resolve(&c, &t, err, sizeof(err)), 0);
    CHECK_STR(t.endpoint, "http://traces:9999/custom"); /* used as it is */
    tracecfg_free(&t);

    c.tracing.endpoint = "http://file:4318/v1/traces"; /* the file wins */
    c.tracing.service_name = "from-file";
    CHECK_INT(resolve(&c, &t, err, sizeof(err)), 0);
    CHECK_STR(t.endpoint, "http://file:4318/v1/traces");
    CHECK_STR(t.service_name, "from-file");
    tracecfg_free(&t);
    c.tracing.endpoint = NULL;
    c.tracing.service_name = NULL;
    clear_env();
}

static void
test_settings_refused(void)
{
    struct config c;
    struct tracecfg t;
    char err[256];
    tracing_on(&c);
    setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318", 1);
    CHECK_INT(resolve(&c, &t, err, sizeof(err)), -1);
    CHECK_STR(err, "OTEL_EXPORTER_OTLP_ENDPOINT: not a usable URL: must start with http:// or "
                   "https://");
    clear_env();
    setenv("OTEL_RESOURCE_ATTRIBUTES", "a=1,broken", 1);
    CHECK_INT(resolve(&c, &t, err, sizeof(err)), -1);
    CHECK_STR(err, "OTEL_RESOURCE_ATTRIBUTES: a member without '=' (expected key=value,"
                   "key=value)");
    clear_env();
    setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20s3cret,x-team=a", 1);
    CHECK_INT(resolve(&c, &t, err, sizeof(err)), 0);
    CHECK_INT(t.nheaders, 2);
    if (t.nheaders == 2) {
        CHECK_STR(t.headers[0], "Authorization: Bearer s3cret");
        CHECK_STR(t.headers[1], "x-team: a");
    }
    tracecfg_free(&t);
    setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "Bad(Name)=s3cret", 1); /* wins, and bad */
    CHECK_INT(resolve(&c, &t, err, sizeof(err)), -1);
    CHECK_STR(err, "OTEL_EXPORTER_OTLP_TRACES_HEADERS: header 1: the name is not an HTTP "
                   "header name");
    CHECK(strstr(err, "s3cret") == NULL);
    clear_env();
}

static json_t *
encode_one(struct span *s)
{
    json_t *res = otlp_string_attrs(NULL, NULL, 0);
    char *text = otlp_encode(res, "9.9.9", &s, 1);
    json_decref(res);
    CHECK(text != NULL);
    json_t *doc = text != NULL ? json_loads(text, 0, NULL) : NULL;
    CHECK(doc != NULL);
    free(text);
    return doc;
}

static const char *
attr_of(json_t *span, const char *key, const char *type)
{
    size_t i;
    json_t *kv;
    json_array_foreach(json_object_get(span, "attributes"), i, kv)
    {
        if (strcmp(json_string_value(json_object_get(kv, "key")), key) == 0) {
            return json_string_value(json_object_get(json_object_get(kv, "value"), type));
        }
    }
    return NULL;
}

static void
test_encode(void)
{
    struct tracectx parent;
    CHECK_INT(tracectx_parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                                         55, &parent, NULL),
              0);
    struct span *s = span_new(&parent, NULL);
    CHECK(s != NULL);
    if (s == NULL) {
        return;
    }
    CHECK_INT(s->ctx.flags, 1);
    CHECK(strncmp(s->traceparent, "00-4bf92f3577b34da6a3ce929d0e0e4736-", 36) == 0);
    span_copy(s->queue, sizeof(s->queue), "jobs");
    span_copy(s->message_id, sizeof(s->message_id), "m-1");
    span_copy(s->key, sizeof(s->key), "k\xc3\xa9y");
    s->outcome = "retry";
    s->attempt = 3;
    s->body_size = 42;
    s->error = 1;
    span_copy(s->status_message, sizeof(s->status_message), "bad \xff byte");
    s->end_ns = s->start_ns + 1000;
    span_event(s, s->start_ns + 500, "retry", "twice.retry.delay_seconds", "4");
    span_event(s, s->start_ns + 100, "handle", NULL, NULL); /* told late: sorted */
    json_t *doc = encode_one(s);
    json_t *rs = json_array_get(json_object_get(doc, "resourceSpans"), 0);
    json_t *ss = json_array_get(json_object_get(rs, "scopeSpans"), 0);
    CHECK_STR(json_string_value(json_object_get(json_object_get(ss, "scope"), "version")),
              "9.9.9");
    json_t *sp = json_array_get(json_object_get(ss, "spans"), 0);
    CHECK_STR(json_string_value(json_object_get(sp, "traceId")),
              "4bf92f3577b34da6a3ce929d0e0e4736");
    CHECK_STR(json_string_value(json_object_get(sp, "parentSpanId")), "00f067aa0ba902b7");
    CHECK_INT(strlen(json_string_value(json_object_get(sp, "spanId"))), 16);
    CHECK_STR(json_string_value(json_object_get(sp, "name")), "process jobs");
    CHECK_INT(json_integer_value(json_object_get(sp, "kind")), 5);
    CHECK(json_is_string(json_object_get(sp, "startTimeUnixNano")));
    CHECK_STR(attr_of(sp, "messaging.system", "stringValue"), "aws_sqs");
    CHECK_STR(attr_of(sp, "messaging.destination.name", "stringValue"), "jobs");
    CHECK_STR(attr_of(sp, "twice.key", "stringValue"), "k\xc3\xa9y");
    CHECK_STR(attr_of(sp, "twice.attempt", "intValue"), "3");
    CHECK_STR(attr_of(sp, "messaging.message.body.size", "intValue"), "42");
    CHECK_STR(attr_of(sp, "error.type", "stringValue"), "retry");
    CHECK(attr_of(sp, "twice.plugin", "stringValue") == NULL); /* none: not routed */
    json_t *ev = json_object_get(sp, "events");
    CHECK_STR(json_string_value(json_object_get(json_array_get(ev, 0), "name")), "handle");
    CHECK_STR(json_string_value(json_object_get(json_array_get(ev, 1), "name")), "retry");
    json_t *st = json_object_get(sp, "status");
    CHECK_INT(json_integer_value(json_object_get(st, "code")), 2);
    CHECK_STR(json_string_value(json_object_get(st, "message")), "bad \\xff byte");
    CHECK_INT(json_array_size(json_object_get(sp, "links")), 0);
    json_decref(doc);
    span_free(s);

    struct tracectx link = {.flags = 0};
    memset(link.trace_id, 0xab, 16);
    memset(link.span_id, 0xcd, 8);
    s = span_new(NULL, &link);
    CHECK(s != NULL && s->ctx.flags == TRACECTX_SAMPLED && !s->has_parent);
    s->end_ns = s->start_ns;
    doc = encode_one(s);
    sp = json_array_get(
        json_object_get(
            json_array_get(
                json_object_get(json_array_get(json_object_get(doc, "resourceSpans"), 0),
                                "scopeSpans"),
                0),
            "spans"),
        0);
    CHECK(json_object_get(sp, "parentSpanId") == NULL && json_object_get(sp, "status") == NULL);
    json_t *l = json_array_get(json_object_get(sp, "links"), 0);
    CHECK_STR(json_string_value(json_object_get(l, "traceId")),
              "abababababababababababababababab");
    CHECK_STR(json_string_value(json_object_get(l, "spanId")), "cdcdcdcdcdcdcdcd");
    json_decref(doc);
    span_free(s);
}

static void
test_span_pieces(void)
{
    char small[6];
    span_copy(small, sizeof(small), "abcd\xc3\xa9"); /* é would be cut in two */
    CHECK_STR(small, "abcd");
    span_copy(small, sizeof(small), NULL);
    CHECK_STR(small, "");
    struct span *s = span_new(NULL, NULL);
    for (int i = 0; s != NULL && i < SPAN_EVENTS + 3; i++) {
        span_event(s, 0, "claimed", NULL, NULL);
    }
    CHECK(s != NULL && s->nevents == SPAN_EVENTS && s->events_dropped == 3);
    struct span *t = span_new(NULL, NULL);
    CHECK(s != NULL && t != NULL && memcmp(s->ctx.trace_id, t->ctx.trace_id, 16) != 0);
    span_free(s);
    span_free(t);
    const char *r3 = "{\"partialSuccess\":{\"rejectedSpans\":\"3\"}}";
    const char *r2 = "{\"partialSuccess\":{\"rejectedSpans\":2},\"x\":1}";
    CHECK_INT(otlp_rejected(r3, strlen(r3)), 3);
    CHECK_INT(otlp_rejected(r2, strlen(r2)), 2);
    CHECK_INT(otlp_rejected("{}", 2), 0);
    CHECK_INT(otlp_rejected("not json", 8), 0);
    CHECK_INT(otlp_rejected("", 0), 0);
}

int
main(void)
{
    test_kvlist();
    test_settings_precedence();
    test_settings_refused();
    test_encode();
    test_span_pieces();
    return check_done("test-trace");
}
