/*
 * jsonpath.c - dotted paths into a parsed message body, the text of a JSON
 * scalar, and the one strict way twice parses bodies. Not a query language:
 * no wildcards, filters or escapes for dots inside keys.
 */
#include "jsonpath.h"

#include "buf.h"
#include "escape.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Parse an array index: digits only, no sign, no leading zero (so "01" and
 * "1" never name the same element), no overflow. 0 and *out, or -1.
 */
static int
parse_index(const char *s, size_t n, size_t *out)
{
    size_t v = 0;

    if (n == 0 || (n > 1 && s[0] == '0')) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return -1;
        }
        size_t digit = (size_t) (s[i] - '0');
        if (v > (SIZE_MAX - digit) / 10) {
            return -1;
        }
        v = v * 10 + digit;
    }
    *out = v;
    return 0;
}

/* One step: a key of an object, or an index of an array. Borrowed. */
static json_t *
step(const json_t *cur, const char *comp, size_t n)
{
    size_t index;

    if (json_is_object(cur)) {
        return json_object_getn(cur, comp, n);
    }
    if (json_is_array(cur) && parse_index(comp, n, &index) == 0) {
        return json_array_get(cur, index);
    }
    return NULL;
}

json_t *
jsonpath_get(const json_t *root, const char *path)
{
    const json_t *cur = root;
    const char *p = path;

    if (root == NULL || path == NULL) {
        return NULL;
    }
    if (*path == '\0') {
        return (json_t *) root;
    }
    for (;;) {
        const char *dot = strchr(p, '.');
        size_t n = dot != NULL ? (size_t) (dot - p) : strlen(p);
        if (n == 0) {
            return NULL; /* "a..b", ".a" or "a.": never a valid path */
        }
        cur = step(cur, p, n);
        if (cur == NULL) {
            return NULL;
        }
        if (dot == NULL) {
            return (json_t *) cur;
        }
        p = dot + 1;
    }
}

/*
 * The shortest %.*g form of d that strtod reads back as the same double.
 * %.17g always round-trips; shorter precisions are tried first so that 0.1
 * is "0.1", not "0.10000000000000001".
 */
static int
append_real(double d, struct buf *out)
{
    char text[64];

    for (int prec = 1; prec <= 17; prec++) {
        snprintf(text, sizeof(text), "%.*g", prec, d);
        if (strtod(text, NULL) == d) {
            break;
        }
    }
    return buf_puts(out, text);
}

int
jsonpath_scalar_text(const json_t *v, struct buf *out)
{
    if (v == NULL) {
        return -1;
    }
    switch (json_typeof(v)) {
    case JSON_STRING:
        return buf_append(out, json_string_value(v), json_string_length(v));
    case JSON_INTEGER:
        return buf_printf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    case JSON_REAL:
        return append_real(json_real_value(v), out);
    case JSON_TRUE:
        return buf_puts(out, "true");
    case JSON_FALSE:
        return buf_puts(out, "false");
    default:
        return -1;
    }
}

/*
 * jansson's error text can quote the offending input ("invalid token near
 * 'x'"), which is untrusted: it goes into err escaped, so a DLQ reason or a
 * log line never carries raw control bytes or invalid UTF-8.
 */
json_t *
jsonpath_parse_body(const char *body, size_t len, char *err, size_t errlen)
{
    json_error_t jerr;
    struct buf text = BUF_INIT;

    /* JSON_DECODE_ANY: a bare scalar is valid JSON (RFC 8259); it simply has
     * no fields. No JSON_ALLOW_NUL: "\u0000" inside a string is refused. */
    json_t *root = json_loadb(body != NULL ? body : "", body != NULL ? len : 0,
                              JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (root != NULL) {
        return root;
    }
    escape_unquoted(&text, jerr.text, strnlen(jerr.text, sizeof(jerr.text)));
    snprintf(err, errlen, "line %d column %d: %s", jerr.line, jerr.column,
             text.failed ? "invalid JSON" : buf_str(&text));
    buf_free(&text);
    return NULL;
}
