/*
 * kvlist.h - "key1=value1,key2=value2" lists as OpenTelemetry's
 * environment variables write them (OTEL_RESOURCE_ATTRIBUTES,
 * OTEL_EXPORTER_OTLP_HEADERS: W3C Baggage without properties). Pure.
 */
#ifndef TWICE_KVLIST_H
#define TWICE_KVLIST_H

#include <stddef.h>

struct kvlist_pair {
    char *key;   /* owned */
    char *value; /* owned, percent-decoded */
};

/*
 * Parse s: members separated by ',', blanks around keys, '=' and values
 * ignored, empty members skipped, values percent-decoded (%2C is a comma).
 * A member without '=', an empty key, a key with a blank or control byte,
 * a bad %XX, or a decoded value with a control byte or that is not UTF-8
 * refuses the whole list (as OpenTelemetry asks: a half-read list is worse
 * than none). Returns 0 with *out (free with kvlist_free) and *n, or -1
 * with why (static text) and nothing allocated.
 */
int kvlist_parse(const char *s, struct kvlist_pair **out, size_t *n, const char **why);
void kvlist_free(struct kvlist_pair *p, size_t n);

/* The value of key in p[0..n), the last one given; NULL when absent. */
const char *kvlist_get(const struct kvlist_pair *p, size_t n, const char *key);

#endif
