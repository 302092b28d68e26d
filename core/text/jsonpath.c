/*
 * jsonpath.c - dotted paths into a parsed message body and the texts of its
 * scalars. Not a query language: no wildcards, filters or escapes for dots
 * inside keys.
 */
#include "jsonpath.h"

#include "buf.h"
#include "cnum.h"

#include <errno.h>
#include <math.h>
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

/* One step from the value at index cur: the last member of an object named
 * comp, or an element of an array. The index, or 0 (the root is never a
 * child) when there is none. */
static uint32_t
step(const struct jsondoc *d, uint32_t cur, const char *comp, size_t n)
{
    const struct jsondoc_value *v = &d->v[cur];
    uint32_t child = cur + 1, found = 0;
    size_t index;

    if (v->type == JSONDOC_OBJECT) {
        for (uint32_t k = 0; k < v->count; k++, child = d->v[child].next) {
            const struct jsondoc_value *c = &d->v[child];
            if (c->name_len == n && memcmp(c->name, comp, n) == 0) {
                found = child; /* and go on: the last one wins */
            }
        }
        return found;
    }
    if (v->type == JSONDOC_ARRAY && parse_index(comp, n, &index) == 0 && index < v->count) {
        for (size_t k = 0; k < index; k++) {
            child = d->v[child].next;
        }
        return child;
    }
    return 0;
}

const struct jsondoc_value *
jsonpath_get(const struct jsondoc *d, const char *path)
{
    uint32_t cur = 0;
    const char *p = path;

    if (d == NULL || path == NULL) {
        return NULL;
    }
    if (*path == '\0') {
        return &d->v[0];
    }
    for (;;) {
        const char *dot = strchr(p, '.');
        size_t n = dot != NULL ? (size_t) (dot - p) : strlen(p);
        if (n == 0) {
            return NULL; /* "a..b", ".a" or "a.": never a valid path */
        }
        cur = step(d, cur, p, n);
        if (cur == 0) {
            return NULL;
        }
        if (dot == NULL) {
            return &d->v[cur];
        }
        p = dot + 1;
    }
}

/*
 * The shortest %.*g form of d that strtod reads back as the same double,
 * in the C locale whatever locale a plugin set (cnum.h): a key is the same
 * bytes in every process and thread.
 * %.17g always round-trips; shorter precisions are tried first so that 0.1
 * is "0.1", not "0.10000000000000001".
 */
static int
append_real(double d, struct buf *out)
{
    char text[64];

    for (int prec = 1; prec <= 17; prec++) {
        cnum_snprintf(text, sizeof(text), "%.*g", prec, d);
        if (cnum_strtod(text, NULL) == d) {
            break;
        }
    }
    return buf_puts(out, text);
}

/*
 * A number's key text (see jsonpath.h). The forms are those of jansson,
 * which read bodies when keys were first stored: strtoll for integers,
 * strtod and append_real for reals. s is the number's JSON text (not
 * NUL-terminated), which strtoll and strtod read exactly as JSON means it.
 */
static int
number_key_text(const char *s, size_t n, struct buf *out)
{
    char small[64];
    int real = memchr(s, '.', n) != NULL || memchr(s, 'e', n) != NULL || memchr(s, 'E', n) != NULL;
    if (!real) {
        if (n >= sizeof(small)) {
            return buf_append(out, s, n); /* far past 64 bits: as written */
        }
        memcpy(small, s, n);
        small[n] = '\0';
        errno = 0;
        long long v = strtoll(small, NULL, 10);
        if (errno == ERANGE) {
            return buf_append(out, s, n); /* past 64 bits: as written */
        }
        return buf_printf(out, "%lld", v);
    }
    char *text = n < sizeof(small) ? small : malloc(n + 1);
    if (text == NULL) {
        out->failed = 1;
        return -1;
    }
    memcpy(text, s, n);
    text[n] = '\0';
    double d = cnum_strtod(text, NULL);
    if (text != small) {
        free(text);
    }
    if (isinf(d)) {
        return buf_append(out, s, n); /* past the double range: as written */
    }
    return append_real(d, out);
}

/* The text of a string, true or false, or (number_as_written) a number's
 * own text; -1 for the rest. */
static int
scalar_text(const struct jsondoc_value *v, struct buf *out, int number_as_written)
{
    if (v == NULL) {
        return -1;
    }
    switch (v->type) {
    case JSONDOC_STRING:
        return buf_append(out, v->str, v->len);
    case JSONDOC_NUMBER:
        return number_as_written ? buf_append(out, v->str, v->len)
                                 : number_key_text(v->str, v->len, out);
    case JSONDOC_TRUE:
        return buf_puts(out, "true");
    case JSONDOC_FALSE:
        return buf_puts(out, "false");
    default:
        return -1;
    }
}

int
jsonpath_key_text(const struct jsondoc_value *v, struct buf *out)
{
    return scalar_text(v, out, 0);
}

int
jsonpath_field_text(const struct jsondoc_value *v, struct buf *out)
{
    return scalar_text(v, out, 1);
}
