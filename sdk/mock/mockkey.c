/*
 * mockkey.c - the mock host's reading of message bodies (dotted paths, the
 * text of a scalar) and its expansion of key templates, written to give
 * the keys and reasons the host gives. Not shared with the host's code:
 * the SDK depends on nothing but plugin.h and jansson.
 */
#include "mock_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An array index: digits, no sign, no leading zero. 0 and *out, or -1. */
static int
parse_index(const char *s, size_t n, size_t *out)
{
    size_t v = 0;
    if (n == 0 || n > 9 || (n > 1 && s[0] == '0')) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return -1;
        }
        v = v * 10 + (size_t) (s[i] - '0');
    }
    *out = v;
    return 0;
}

json_t *
twice_mock_json_path(const json_t *root, const char *path, size_t len)
{
    const json_t *cur = root;
    size_t i = 0, index;
    if (root == NULL || len == 0) {
        return (json_t *) root;
    }
    while (cur != NULL) {
        const char *dot = memchr(path + i, '.', len - i);
        size_t n = dot != NULL ? (size_t) (dot - (path + i)) : len - i;
        if (n == 0) {
            return NULL; /* "a..b", ".a", "a." */
        }
        if (json_is_object(cur)) {
            cur = json_object_getn(cur, path + i, n);
        } else if (json_is_array(cur) && parse_index(path + i, n, &index) == 0) {
            cur = json_array_get(cur, index);
        } else {
            return NULL;
        }
        if (dot == NULL) {
            break;
        }
        i += n + 1;
    }
    return (json_t *) cur;
}

char *
twice_mock_scalar_text(const json_t *v)
{
    char text[64], *out = NULL;
    switch (v != NULL ? json_typeof(v) : JSON_NULL) {
    case JSON_STRING:
        return strndup(json_string_value(v), json_string_length(v));
    case JSON_INTEGER:
        return asprintf(&out, "%" JSON_INTEGER_FORMAT, json_integer_value(v)) < 0 ? NULL : out;
    case JSON_REAL:
        /* the shortest %g that reads back as the same double: 0.1, not
         * 0.10000000000000001; 1.0 is "1" */
        for (int prec = 1; prec <= 17; prec++) {
            snprintf(text, sizeof(text), "%.*g", prec, json_real_value(v));
            if (strtod(text, NULL) == json_real_value(v)) {
                break;
            }
        }
        return strdup(text);
    case JSON_TRUE:
        return strdup("true");
    case JSON_FALSE:
        return strdup("false");
    default:
        return NULL;
    }
}

/* One expansion in progress. */
struct kx {
    const struct twice_job *job;
    const char *tmpl;
    char out[TWICE_KEY_MAX + 1];
    size_t len;
    char *err;
    size_t errlen;
};

static int kx_fail(struct kx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int
kx_fail(struct kx *x, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->err, x->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* The 1-based column (in UTF-8 characters) of byte offset off. */
static size_t
column(const char *s, size_t off)
{
    size_t col = 1;
    for (size_t i = 0; i < off; i++) {
        col += ((unsigned char) s[i] & 0xc0) != 0x80;
    }
    return col;
}

static int
is_control(unsigned char c)
{
    return c < 0x20 || c == 0x7f;
}

static int
append(struct kx *x, const char *s, size_t n, const char *field)
{
    if (n > TWICE_KEY_MAX - x->len) {
        return field != NULL
                   ? kx_fail(x, "key longer than %d bytes at key field %s", TWICE_KEY_MAX, field)
                   : kx_fail(x, "key longer than %d bytes", TWICE_KEY_MAX);
    }
    memcpy(x->out + x->len, s, n);
    x->len += n;
    return 0;
}

/* A field's value: not empty, no control characters. field is the name as
 * written ("attr:Tenant"); the value itself is never quoted in err. */
static int
append_value(struct kx *x, const char *s, size_t n, const char *field)
{
    if (n == 0) {
        return kx_fail(x, "bad key field %s: empty", field);
    }
    for (size_t i = 0; i < n && i <= TWICE_KEY_MAX; i++) {
        if (is_control((unsigned char) s[i])) {
            return kx_fail(x, "bad key field %s: contains a control character", field);
        }
    }
    return append(x, s, n, field);
}

static int
expand_attr(struct kx *x, const char *name, const char *field)
{
    for (size_t i = 0; i < x->job->nattrs; i++) {
        const struct mock_attr *a = &x->job->attrs[i];
        if (strcmp(a->name, name) != 0) {
            continue;
        }
        if (strncmp(a->type, "String", 6) != 0 && strncmp(a->type, "Number", 6) != 0) {
            return kx_fail(x, "bad key field %s: a binary attribute (need String or Number)",
                           field);
        }
        return append_value(x, a->value, strlen(a->value), field);
    }
    return kx_fail(x, "missing key field %s", field);
}

static int
expand_path(struct kx *x, const char *path)
{
    if (x->job->root == NULL) {
        return kx_fail(x, "key field %s needs a JSON body: the body is not JSON", path);
    }
    const json_t *v = twice_mock_json_path(x->job->root, path, strlen(path));
    if (v == NULL || json_is_null(v)) {
        return kx_fail(x, "missing key field %s%s", path, v != NULL ? " (null)" : "");
    }
    if (!json_is_string(v) && !json_is_number(v)) {
        const char *what = json_is_object(v)  ? "an object"
                           : json_is_array(v) ? "an array"
                                              : "a boolean";
        return kx_fail(x, "bad key field %s: %s (need a string or number)", path, what);
    }
    char *text = twice_mock_scalar_text(v);
    if (text == NULL) {
        return kx_fail(x, "out of memory");
    }
    int rc = append_value(x, text, strlen(text), path);
    free(text);
    return rc;
}

/* The field between tmpl[open] ('{') and tmpl[close] ('}'). */
static int
expand_field(struct kx *x, size_t open, size_t close)
{
    char field[TWICE_KEY_MAX + 1];
    size_t n = close - open - 1;
    if (n == 0) {
        return kx_fail(x, "column %zu: empty field {}", column(x->tmpl, open));
    }
    if (n > TWICE_KEY_MAX) {
        return kx_fail(x, "column %zu: field name too long", column(x->tmpl, open));
    }
    memcpy(field, x->tmpl + open + 1, n);
    field[n] = '\0';
    if (strncmp(field, "attr:", 5) == 0 && n > 5) {
        return expand_attr(x, field + 5, field);
    }
    if (strncmp(field, "msg:", 4) == 0) {
        if (strcmp(field, "msg:group") != 0) {
            return kx_fail(x, "column %zu: unknown message field {%s} (only {msg:group} exists)",
                           column(x->tmpl, open), field);
        }
        if (x->job->group_id == NULL) {
            return kx_fail(x, "missing key field msg:group (not a FIFO queue)");
        }
        return append_value(x, x->job->group_id, strlen(x->job->group_id), field);
    }
    if (strncmp(field, "attr:", 5) == 0 || field[0] == '.' || field[n - 1] == '.' ||
        strstr(field, "..") != NULL) {
        return kx_fail(x, "column %zu: bad field {%s}", column(x->tmpl, open), field);
    }
    return expand_path(x, field);
}

/* Walk the template: literal text (with "{{" and "}}" unescaped) and
 * fields. Returns the number of fields, or -1. */
static int
expand_all(struct kx *x)
{
    const char *t = x->tmpl;
    int fields = 0;
    for (size_t i = 0; t[i] != '\0';) {
        if ((t[i] == '{' || t[i] == '}') && t[i + 1] == t[i]) {
            if (append(x, &t[i], 1, NULL) != 0) {
                return -1;
            }
            i += 2;
        } else if (t[i] == '}') {
            return kx_fail(x, "column %zu: stray '}' (write '}}' for a literal brace)",
                           column(t, i));
        } else if (t[i] == '{') {
            size_t j = i + 1 + strcspn(t + i + 1, "{}");
            if (t[j] != '}') {
                return kx_fail(x, "column %zu: %s", column(t, t[j] == '{' ? j : i),
                               t[j] == '{' ? "'{' inside a field" : "unterminated field");
            }
            if (expand_field(x, i, j) != 0) {
                return -1;
            }
            fields++;
            i = j + 1;
        } else if (is_control((unsigned char) t[i])) {
            return kx_fail(x, "column %zu: control character in template", column(t, i));
        } else if (append(x, &t[i++], 1, NULL) != 0) {
            return -1;
        }
    }
    return fields;
}

int
twice_mock_expand_key(const twice_mock_job *mj, const char *tmpl, char *buf, size_t cap, char *err,
                      size_t errlen)
{
    struct kx *x = calloc(1, sizeof(*x));
    int rc = -1;
    if (x == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    *x = (struct kx){
        .job = (const struct twice_job *) mj, .tmpl = tmpl, .err = err, .errlen = errlen};
    int fields = expand_all(x);
    if (fields == 0) {
        snprintf(err, errlen,
                 "column 1: no field: a constant key would make every message a "
                 "duplicate (use {path}, {attr:Name} or {msg:group})");
    } else if (fields > 0 && x->len + 1 > cap) {
        snprintf(err, errlen, "key of %zu bytes does not fit a buffer of %zu", x->len, cap);
    } else if (fields > 0) {
        memcpy(buf, x->out, x->len);
        buf[x->len] = '\0';
        rc = (int) x->len;
    }
    free(x);
    return rc;
}
