/*
 * tracectx.c - parsing and formatting trace context headers (see
 * tracectx.h): W3C traceparent, strictly, and AWS X-Ray's trace header.
 * What a bad header leads to (a new trace, a note on the span) is the
 * caller's business; here a value is only good or not, and why.
 */
#include "tracectx.h"

#include <string.h>

/* The value of one hex digit, -1 if c is none; upper case only if allowed. */
static int
hexval(char c, int upper_ok)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (upper_ok && c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/* 2n hex digits at s into out[0..n); 0, or -1 when one is not a digit. */
static int
unhex(const char *s, size_t n, uint8_t *out, int upper_ok)
{
    for (size_t i = 0; i < n; i++) {
        int hi = hexval(s[2 * i], upper_ok), lo = hexval(s[2 * i + 1], upper_ok);
        if (hi < 0 || lo < 0) {
            return -1;
        }
        out[i] = (uint8_t) (hi << 4 | lo);
    }
    return 0;
}

static int
all_zero(const uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (b[i] != 0) {
            return 0;
        }
    }
    return 1;
}

static int
refuse(const char **why, const char *reason)
{
    if (why != NULL) {
        *why = reason;
    }
    return -1;
}

int
tracectx_parse_traceparent(const char *s, size_t len, struct tracectx *out, const char **why)
{
    uint8_t version, flags;
    struct tracectx c;
    if (s == NULL || len < TRACECTX_TRACEPARENT_LEN) {
        return refuse(why, "shorter than 55 characters");
    }
    if (unhex(s, 1, &version, 0) != 0 || s[2] != '-') {
        return refuse(why, "no version field (2 lower-case hex digits and '-')");
    }
    if (version == 0xff) {
        return refuse(why, "version ff is invalid");
    }
    if (version == 0 && len != TRACECTX_TRACEPARENT_LEN) {
        return refuse(why, "version 00 must be exactly 55 characters");
    }
    if (len > TRACECTX_TRACEPARENT_LEN && s[TRACECTX_TRACEPARENT_LEN] != '-') {
        return refuse(why, "extra characters after the flags");
    }
    if (unhex(s + 3, 16, c.trace_id, 0) != 0 || s[35] != '-') {
        return refuse(why, "the trace id is not 32 lower-case hex digits");
    }
    if (unhex(s + 36, 8, c.span_id, 0) != 0 || s[52] != '-') {
        return refuse(why, "the parent id is not 16 lower-case hex digits");
    }
    if (unhex(s + 53, 1, &flags, 0) != 0) {
        return refuse(why, "the flags are not 2 lower-case hex digits");
    }
    if (all_zero(c.trace_id, sizeof(c.trace_id))) {
        return refuse(why, "the trace id is all zeros");
    }
    if (all_zero(c.span_id, sizeof(c.span_id))) {
        return refuse(why, "the parent id is all zeros");
    }
    c.flags = flags;
    *out = c;
    return 0;
}

void
tracectx_hex(const uint8_t *b, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = '\0';
}

void
tracectx_format_traceparent(const struct tracectx *c, char *out)
{
    memcpy(out, "00-", 3);
    tracectx_hex(c->trace_id, 16, out + 3);
    out[35] = '-';
    tracectx_hex(c->span_id, 8, out + 36);
    out[52] = '-';
    tracectx_hex(&c->flags, 1, out + 53);
}

/* Root=1-xxxxxxxx-yyyyyyyyyyyyyyyyyyyyyyyy: 35 characters. */
static int
xray_root(const char *v, size_t n, struct tracectx *c)
{
    if (n != 35 || v[0] != '1' || v[1] != '-' || v[10] != '-') {
        return -1;
    }
    if (unhex(v + 2, 4, c->trace_id, 1) != 0 || unhex(v + 11, 12, c->trace_id + 4, 1) != 0) {
        return -1;
    }
    return all_zero(c->trace_id, 16) ? -1 : 0;
}

/* One "Key=Value" field; *seen has bit 1 for Root, 2 Parent, 4 Sampled. */
static int
xray_field(const char *f, size_t n, struct tracectx *c, unsigned *seen, const char **why)
{
    const char *eq = memchr(f, '=', n);
    if (eq == NULL) {
        return refuse(why, "a field without '='");
    }
    size_t klen = (size_t) (eq - f), vlen = n - klen - 1;
    const char *v = eq + 1;
    unsigned bit = klen == 4 && memcmp(f, "Root", 4) == 0      ? 1u
                   : klen == 6 && memcmp(f, "Parent", 6) == 0  ? 2u
                   : klen == 7 && memcmp(f, "Sampled", 7) == 0 ? 4u
                                                               : 0u;
    if (bit == 0) {
        return 0; /* Self, Lineage and later fields: not ours */
    }
    if (*seen & bit) {
        return refuse(why, "a field given twice");
    }
    *seen |= bit;
    if (bit == 1 && xray_root(v, vlen, c) != 0) {
        return refuse(why, "Root is not 1-<8 hex>-<24 hex>");
    }
    if (bit == 2 && (vlen != 16 || unhex(v, 8, c->span_id, 1) != 0 || all_zero(c->span_id, 8))) {
        return refuse(why, "Parent is not 16 hex digits");
    }
    if (bit == 4) {
        c->flags = vlen == 1 && v[0] == '1' ? TRACECTX_SAMPLED : 0;
    }
    return 0;
}

int
tracectx_parse_xray(const char *s, size_t len, struct tracectx *out, const char **why)
{
    struct tracectx c;
    unsigned seen = 0;
    memset(&c, 0, sizeof(c));
    if (s == NULL || len == 0 || len > 256) {
        return refuse(why, len == 0 ? "empty" : "longer than 256 bytes");
    }
    if (memchr(s, '\0', len) != NULL) {
        return refuse(why, "a NUL byte");
    }
    size_t at = 0;
    while (at < len) {
        size_t end = at;
        while (end < len && s[end] != ';') {
            end++;
        }
        size_t b = at, e = end;
        while (b < e && (s[b] == ' ' || s[b] == '\t')) {
            b++;
        }
        while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) {
            e--;
        }
        if (e > b && xray_field(s + b, e - b, &c, &seen, why) != 0) {
            return -1;
        }
        at = end + 1;
    }
    if ((seen & 3u) != 3u) {
        return refuse(why, (seen & 1u) ? "no Parent field" : "no Root field");
    }
    *out = c;
    return 0;
}
