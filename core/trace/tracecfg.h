/*
 * tracecfg.h - where a worker's spans go and what they say about it: the
 * tracing group of twice.conf, completed from OpenTelemetry's environment
 * variables. The file wins over the environment, as aws.region and
 * aws.endpoint do over AWS_*: it is what `twiced -t` checked, while a
 * service's environment is easy to inherit by accident.
 */
#ifndef TWICE_TRACECFG_H
#define TWICE_TRACECFG_H

#include <jansson.h>
#include <stddef.h>

struct config;

#define TRACECFG_DEFAULT_ENDPOINT "http://localhost:4318/v1/traces"

struct tracecfg {
    char *endpoint;     /* owned: the OTLP/HTTP traces URL */
    char *service_name; /* owned */
    json_t *resource;   /* owned: the resource's attribute list */
    char **headers;     /* owned: "Name: value" lines; secrets, never logged */
    size_t nheaders;
    int buffer_spans, batch_spans, export_interval_ms, export_timeout_ms;
};

/*
 * Resolve c->tracing (exporter otlp) with the environment:
 *   endpoint      tracing.endpoint, else OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
 *                 as it is, else OTEL_EXPORTER_OTLP_ENDPOINT + "/v1/traces",
 *                 else TRACECFG_DEFAULT_ENDPOINT
 *   service name  tracing.service_name, else OTEL_SERVICE_NAME, else
 *                 service.name of OTEL_RESOURCE_ATTRIBUTES, else "twiced"
 *   resource      service.name, service.version, host.name, process.pid,
 *                 then OTEL_RESOURCE_ATTRIBUTES' pairs over them
 *   headers       OTEL_EXPORTER_OTLP_TRACES_HEADERS, else
 *                 OTEL_EXPORTER_OTLP_HEADERS
 * Returns 0 with *out (tracecfg_free), or -1 with err naming the variable
 * and what is wrong with it (never a header's value).
 */
int tracecfg_resolve(const struct config *c, struct tracecfg *out, char *err, size_t errlen);
void tracecfg_free(struct tracecfg *t);

#endif
