/*
 * tracecfg.c - the tracing settings of a worker from twice.conf and the
 * OTEL_* environment (see tracecfg.h). Read once, when a worker starts.
 */
#include "tracecfg.h"

#include "buf.h"
#include "config.h"
#include "kvlist.h"
#include "otlp.h"
#include "url.h"
#include "version.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* An environment variable, NULL when unset or empty. */
static const char *
env(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

static char *
resolve_endpoint(const struct config *c, char *err, size_t errlen)
{
    const char *v;
    if (c->tracing.endpoint != NULL) {
        return strdup(c->tracing.endpoint);
    }
    const char *name = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
    v = env(name);
    if (v == NULL && (v = env(name = "OTEL_EXPORTER_OTLP_ENDPOINT")) == NULL) {
        return strdup(TRACECFG_DEFAULT_ENDPOINT);
    }
    const char *why = url_problem(v, 0); /* not quoted: as tracing.endpoint */
    if (why != NULL) {
        snprintf(err, errlen, "%s: not a usable URL: %s", name, why);
        return NULL;
    }
    if (strcmp(name, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == 0) {
        return strdup(v);
    }
    struct buf b = BUF_INIT; /* the base URL: the signal's path is appended */
    buf_printf(&b, "%s%s", v, v[strlen(v) - 1] == '/' ? "v1/traces" : "/v1/traces");
    char *url = buf_steal(&b);
    buf_free(&b);
    return url;
}

/* OTEL_RESOURCE_ATTRIBUTES as pairs (none when unset). */
static int
env_pairs(const char *name, struct kvlist_pair **p, size_t *n, char *err, size_t errlen)
{
    const char *v = env(name), *why = NULL;
    *p = NULL;
    *n = 0;
    if (v != NULL && kvlist_parse(v, p, n, &why) != 0) {
        snprintf(err, errlen, "%s: %s (expected key=value,key=value)", name, why);
        return -1;
    }
    return 0;
}

static int
set_attr(json_t *attrs, const char *key, const char *value)
{
    size_t i;
    json_t *kv;
    json_array_foreach(attrs, i, kv)
    {
        if (strcmp(json_string_value(json_object_get(kv, "key")), key) == 0) {
            json_array_remove(attrs, i);
            break;
        }
    }
    json_t *one = otlp_string_attrs(&key, &value, 1);
    int rc = one != NULL ? json_array_extend(attrs, one) : -1;
    json_decref(one);
    return rc;
}

static json_t *
resource(const char *service, const struct kvlist_pair *p, size_t n)
{
    char host[256] = "", pid[24];
    gethostname(host, sizeof(host) - 1);
    snprintf(pid, sizeof(pid), "%ld", (long) getpid());
    const char *names[] = {"service.version", "host.name", "process.pid"};
    const char *values[] = {TWICE_VERSION, host, pid};
    json_t *attrs = otlp_string_attrs(names, values, host[0] != '\0' ? 3 : 1);
    int bad = attrs == NULL;
    for (size_t i = 0; i < n && !bad; i++) {
        bad = set_attr(attrs, p[i].key, p[i].value) != 0;
    }
    if (bad || set_attr(attrs, "service.name", service) != 0) {
        json_decref(attrs);
        return NULL;
    }
    return attrs;
}

/* Header names are HTTP tokens (values were checked by kvlist). */
static int
headers(struct tracecfg *t, char *err, size_t errlen)
{
    const char *name = env("OTEL_EXPORTER_OTLP_TRACES_HEADERS") != NULL
                           ? "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
                           : "OTEL_EXPORTER_OTLP_HEADERS";
    struct kvlist_pair *p;
    size_t n;
    if (env_pairs(name, &p, &n, err, errlen) != 0) {
        return -1;
    }
    static const char token[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                "!#$%&'*+-.^_`|~";
    t->headers = calloc(n ? n : 1, sizeof(*t->headers));
    int rc = t->headers != NULL ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (strspn(p[i].key, token) != strlen(p[i].key)) {
            snprintf(err, errlen, "%s: header %zu: the name is not an HTTP header name", name,
                     i + 1);
            rc = -1;
        } else if (asprintf(&t->headers[i], "%s: %s", p[i].key, p[i].value) < 0) {
            t->headers[i] = NULL;
            snprintf(err, errlen, "out of memory");
            rc = -1;
        } else {
            t->nheaders++;
        }
    }
    kvlist_free(p, n);
    return rc;
}

int
tracecfg_resolve(const struct config *c, struct tracecfg *out, char *err, size_t errlen)
{
    struct kvlist_pair *p = NULL;
    size_t n = 0;
    memset(out, 0, sizeof(*out));
    err[0] = '\0';
    out->buffer_spans = c->tracing.buffer_spans;
    out->batch_spans = c->tracing.batch_spans;
    out->export_interval_ms = c->tracing.export_interval_ms;
    out->export_timeout_ms = c->tracing.export_timeout * 1000;
    if ((out->endpoint = resolve_endpoint(c, err, errlen)) == NULL ||
        env_pairs("OTEL_RESOURCE_ATTRIBUTES", &p, &n, err, errlen) != 0 ||
        headers(out, err, errlen) != 0) {
        if (out->endpoint == NULL && err[0] == '\0') {
            snprintf(err, errlen, "out of memory");
        }
        tracecfg_free(out);
        return -1;
    }
    const char *service = c->tracing.service_name;
    service = service != NULL ? service : env("OTEL_SERVICE_NAME");
    service = service != NULL ? service : kvlist_get(p, n, "service.name");
    out->service_name = strdup(service != NULL ? service : "twiced");
    out->resource = out->service_name != NULL ? resource(out->service_name, p, n) : NULL;
    kvlist_free(p, n);
    if (out->resource == NULL) {
        snprintf(err, errlen, "out of memory");
        tracecfg_free(out);
        return -1;
    }
    return 0;
}

void
tracecfg_free(struct tracecfg *t)
{
    free(t->endpoint);
    free(t->service_name);
    json_decref(t->resource);
    for (size_t i = 0; i < t->nheaders; i++) {
        explicit_bzero(t->headers[i], strlen(t->headers[i]));
        free(t->headers[i]);
    }
    free(t->headers);
    memset(t, 0, sizeof(*t));
}
