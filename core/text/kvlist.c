/*
 * kvlist.c - parsing OpenTelemetry's key=value lists (see kvlist.h).
 * Values are refused rather than repaired: they end up in HTTP headers
 * and resource attributes, where a decoded line break would be a header
 * of its own.
 */
#include "kvlist.h"

#include "utf8.h"

#include <stdlib.h>
#include <string.h>

static int
blank(char c)
{
    return c == ' ' || c == '\t';
}

static int
hexdigit(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* s[0..n) percent-decoded into a new string; NULL with why. */
static char *
decode(const char *s, size_t n, const char **why)
{
    char *out = malloc(n + 1);
    size_t k = 0;
    if (out == NULL) {
        *why = "out of memory";
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            out[k++] = s[i];
            continue;
        }
        int hi = i + 2 < n ? hexdigit(s[i + 1]) : -1;
        int lo = i + 2 < n ? hexdigit(s[i + 2]) : -1;
        if (hi < 0 || lo < 0) {
            free(out);
            *why = "a '%' not followed by two hex digits";
            return NULL;
        }
        out[k++] = (char) (hi << 4 | lo);
        i += 2;
    }
    out[k] = '\0';
    for (size_t i = 0; i < k; i++) {
        if ((unsigned char) out[i] < 0x20 || out[i] == 0x7f) {
            free(out);
            *why = "a value holds a control character";
            return NULL;
        }
    }
    if (!utf8_valid(out, k)) {
        free(out);
        *why = "a value is not UTF-8";
        return NULL;
    }
    return out;
}

/* One member m[0..n) (blanks already trimmed) into *p. */
static int
member(const char *m, size_t n, struct kvlist_pair *p, const char **why)
{
    const char *eq = memchr(m, '=', n);
    if (eq == NULL) {
        *why = "a member without '='";
        return -1;
    }
    size_t klen = (size_t) (eq - m);
    while (klen > 0 && blank(m[klen - 1])) {
        klen--;
    }
    if (klen == 0) {
        *why = "an empty key";
        return -1;
    }
    for (size_t i = 0; i < klen; i++) {
        if ((unsigned char) m[i] <= 0x20 || m[i] == 0x7f) {
            *why = "a key holds a blank or a control character";
            return -1;
        }
    }
    const char *v = eq + 1, *end = m + n;
    while (v < end && blank(*v)) {
        v++;
    }
    p->key = strndup(m, klen);
    p->value = p->key != NULL ? decode(v, (size_t) (end - v), why) : NULL;
    if (p->key == NULL || p->value == NULL) {
        if (p->key == NULL) {
            *why = "out of memory";
        }
        free(p->key);
        p->key = NULL;
        return -1;
    }
    return 0;
}

int
kvlist_parse(const char *s, struct kvlist_pair **out, size_t *n, const char **why)
{
    size_t cap = 1, count = 0;
    *out = NULL;
    *n = 0;
    for (const char *c = s; *c; c++) {
        cap += *c == ',';
    }
    struct kvlist_pair *p = calloc(cap, sizeof(*p));
    if (p == NULL) {
        *why = "out of memory";
        return -1;
    }
    for (const char *at = s;;) {
        const char *end = strchr(at, ',');
        size_t len = end != NULL ? (size_t) (end - at) : strlen(at);
        const char *b = at, *e = at + len;
        while (b < e && blank(*b)) {
            b++;
        }
        while (e > b && blank(e[-1])) {
            e--;
        }
        if (e > b && member(b, (size_t) (e - b), &p[count], why) != 0) {
            kvlist_free(p, count);
            return -1;
        }
        count += e > b;
        if (end == NULL) {
            break;
        }
        at = end + 1;
    }
    *out = p;
    *n = count;
    return 0;
}

void
kvlist_free(struct kvlist_pair *p, size_t n)
{
    for (size_t i = 0; p != NULL && i < n; i++) {
        free(p[i].key);
        free(p[i].value);
    }
    free(p);
}

const char *
kvlist_get(const struct kvlist_pair *p, size_t n, const char *key)
{
    const char *v = NULL;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(p[i].key, key) == 0) {
            v = p[i].value;
        }
    }
    return v;
}
