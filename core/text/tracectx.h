/*
 * tracectx.h - trace context as text: the W3C `traceparent` value (parsed
 * strictly, formatted as version 00) and the AWS X-Ray header SQS keeps in
 * the AWSTraceHeader system attribute (converted to the same ids). Pure:
 * no I/O, no clock, no random numbers; making ids is the tracer's.
 */
#ifndef TWICE_TRACECTX_H
#define TWICE_TRACECTX_H

#include <stddef.h>
#include <stdint.h>

/* "00-" 32 hex "-" 16 hex "-" 2 hex, and its NUL. */
#define TRACECTX_TRACEPARENT_LEN 55

/* One span's context: which trace, which span, the W3C trace flags. */
struct tracectx {
    uint8_t trace_id[16];
    uint8_t span_id[8];
    uint8_t flags; /* bit 0: sampled */
};

#define TRACECTX_SAMPLED 0x01

/*
 * A W3C traceparent value (s, len bytes, no NUL needed). Version 00 must be
 * exactly 55 characters; a later version (01-fe) at least 55, and then only
 * a '-' may follow them (its extra fields are ignored). Hex is lower case;
 * version ff, an all-zero trace id or span id, and anything else are
 * refused. 0 and *out, or -1 with why (a static string) when why is not NULL.
 */
int tracectx_parse_traceparent(const char *s, size_t len, struct tracectx *out, const char **why);

/* c as a version 00 traceparent into out (TRACECTX_TRACEPARENT_LEN + 1 bytes). */
void tracectx_format_traceparent(const struct tracectx *c, char *out);

/*
 * An X-Ray trace header, "Root=1-5759e988-bd862e3fe1be46a994272793;
 * Parent=53995c3f42cd8ad8;Sampled=1" (fields in any order, separated by
 * ';' with optional blanks; other fields such as Lineage ignored). Root and
 * Parent are required: the trace id is Root's 8 + 24 hex digits, the span
 * id Parent's 16; Sampled=1 sets the sampled flag. Hex in either case; a
 * field given twice, a zero id or more than 256 bytes is refused. 0 and
 * *out, or -1 with why when why is not NULL.
 */
int tracectx_parse_xray(const char *s, size_t len, struct tracectx *out, const char **why);

/* n bytes as 2n lower-case hex digits and a NUL into out. */
void tracectx_hex(const uint8_t *b, size_t n, char *out);

#endif
