/*
 * otlp.h - job spans as an OTLP/HTTP request body, JSON encoding
 * (ExportTraceServiceRequest in the OTLP specification's JSON mapping: ids
 * as hex, 64-bit numbers as decimal strings). JSON rather than protobuf:
 * collectors accept both on /v1/traces, and protobuf would need generated
 * code or a library twice does not otherwise use. Pure: no I/O.
 */
#ifndef TWICE_OTLP_H
#define TWICE_OTLP_H

#include <jansson.h>
#include <stddef.h>

struct span;

/* The attribute list [{key, value: {stringValue}}] of n name/value pairs,
 * for the resource. A new reference, NULL on ENOMEM. */
json_t *otlp_string_attrs(const char *const *names, const char *const *values, size_t n);

/*
 * The request body for spans[0..n) of one resource (resource_attrs, an
 * attribute list, borrowed), with the instrumentation scope "twice" at
 * version. Returns malloc'd JSON text (the caller frees), NULL on ENOMEM.
 */
char *otlp_encode(const json_t *resource_attrs, const char *version, struct span *const *spans,
                  size_t n);

/* How many spans a collector's 2xx answer says it rejected
 * (partialSuccess.rejectedSpans, a number or a decimal string); 0 when
 * the body says nothing of it or is not JSON. */
long long otlp_rejected(const char *body, size_t len);

#endif
