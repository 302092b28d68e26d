/*
 * fuzz-body.c - libFuzzer target: message bodies as twice reads them
 * (jsondoc_parse on jsonparse.c and yajl, jsonpath_get, the key and field
 * texts, the original text of values). Not for key templates (fuzz-keytmpl)
 * or SQS responses (fuzz-sqs-response).
 *
 * Input: the first line is a dotted path, the rest the body. Promises
 * checked: a refused body's error has no control byte (it goes into DLQ
 * attributes and logs); the values tile the text (each inside its parent,
 * in order, `next` consistent with the counts); the original text of every
 * value is itself JSON of the same type; jansson (the parser twice had
 * before, as the oracle; not for bodies with a raw NUL byte, some of which
 * it skips) never accepts what twice refuses, and wherever it
 * accepts, a scalar's key text is what jansson's reading gave (keys are
 * stored: they must not change); a real's key text reads back as the same
 * double; a string written back with jsonwrite reads back the same; the
 * empty path is the root.
 */
#include "fuzz.h"

#include "buf.h"
#include "jsondoc.h"
#include "jsonpath.h"
#include "jsonwrite.h"

#include <jansson.h>
#include <math.h>

/* The shortest %.*g of d that reads back the same: the old key text. */
static void
old_real_text(double d, struct buf *out)
{
    char text[64];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(text, sizeof(text), "%.*g", prec, d);
        if (strtod(text, NULL) == d) {
            break;
        }
    }
    buf_puts(out, text);
}

/* The key text twice gave a jansson value before: -1 for non-scalars. */
static int
old_key_text(const json_t *v, struct buf *out)
{
    switch (json_typeof(v)) {
    case JSON_STRING:
        return buf_append(out, json_string_value(v), json_string_length(v));
    case JSON_INTEGER:
        return buf_printf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    case JSON_REAL:
        old_real_text(json_real_value(v), out);
        return 0;
    case JSON_TRUE:
        return buf_puts(out, "true");
    case JSON_FALSE:
        return buf_puts(out, "false");
    default:
        return -1;
    }
}

/* jansson's value at a dotted path, walked as jsonpath walks (digits index
 * arrays, no leading zeros); NULL when missing. */
static json_t *
old_get(json_t *root, const char *path)
{
    json_t *cur = root;
    char *copy = strdup(path), *save = NULL;
    if (copy == NULL || *path == '\0') {
        free(copy);
        return *path == '\0' ? root : NULL;
    }
    size_t n = strlen(path);
    if (path[0] == '.' || path[n - 1] == '.' || strstr(path, "..") != NULL) {
        free(copy);
        return NULL;
    }
    for (char *c = strtok_r(copy, ".", &save); c != NULL && cur != NULL;
         c = strtok_r(NULL, ".", &save)) {
        if (json_is_object(cur)) {
            cur = json_object_get(cur, c);
        } else if (json_is_array(cur) && c[0] >= '0' && c[0] <= '9' &&
                   (c[0] != '0' || c[1] == '\0') && strspn(c, "0123456789") == strlen(c) &&
                   strlen(c) < 10) {
            cur = json_array_get(cur, (size_t) atol(c));
        } else {
            cur = NULL;
        }
    }
    free(copy);
    return cur;
}

/* The values tile the text: each one inside its parent, after its previous
 * sibling, and a container's children end where it does. */
static void
check_shape(const struct jsondoc *d)
{
    FUZZ_ASSERT(d->n >= 1 && d->v[0].next == d->n);
    for (uint32_t i = 0; i < d->n; i++) {
        const struct jsondoc_value *v = &d->v[i];
        FUZZ_ASSERT(v->start < v->end && v->end <= d->len);
        FUZZ_ASSERT(v->next > i && v->next <= d->n);
        if (v->type != JSONDOC_OBJECT && v->type != JSONDOC_ARRAY) {
            FUZZ_ASSERT(v->next == i + 1);
            continue;
        }
        uint32_t child = i + 1, prev_end = v->start + 1;
        for (uint32_t k = 0; k < v->count; k++) {
            FUZZ_ASSERT(child < v->next);
            const struct jsondoc_value *c = &d->v[child];
            FUZZ_ASSERT(c->start >= prev_end && c->end < v->end);
            FUZZ_ASSERT((c->name != NULL) == (v->type == JSONDOC_OBJECT));
            prev_end = c->end;
            child = c->next;
        }
        FUZZ_ASSERT(child == v->next);
    }
}

/* The original text of v parses alone, to the same type and size. */
static void
check_raw(const struct jsondoc *d, const struct jsondoc_value *v)
{
    char err[JSONDOC_ERROR_LEN];
    size_t n;
    const char *raw = jsondoc_raw(d, v, &n);
    struct jsondoc *again = jsondoc_parse(raw, n, err, sizeof(err));
    FUZZ_ASSERT(again != NULL);
    FUZZ_ASSERT(again->v[0].type == v->type && again->v[0].count == v->count);
    FUZZ_ASSERT(again->n == v->next - (uint32_t) (v - d->v));
    jsondoc_free(again);
}

/* A string written with jsonwrite (as requests are) reads back the same. */
static void
check_write(const struct jsondoc_value *v)
{
    struct buf out = BUF_INIT;
    struct jsonwrite w;
    char err[JSONDOC_ERROR_LEN];
    jsonwrite_begin(&w, &out);
    jsonwrite_stringn(&w, v->str, v->len);
    FUZZ_ASSERT(jsonwrite_end(&w) == 0);
    struct jsondoc *d = jsondoc_parse(buf_str(&out), out.len, err, sizeof(err));
    FUZZ_ASSERT(d != NULL && d->v[0].type == JSONDOC_STRING && d->v[0].len == v->len);
    FUZZ_ASSERT(memcmp(d->v[0].str, v->str, v->len) == 0);
    jsondoc_free(d);
    buf_free(&out);
}

/* The texts of the value at path, against jansson's reading of the body. */
static void
check_texts(const struct jsondoc *d, const struct jsondoc_value *v, const json_t *old)
{
    struct buf key = BUF_INIT, field = BUF_INIT, want = BUF_INIT;
    int rc = jsonpath_key_text(v, &key);
    FUZZ_ASSERT((rc == 0) == (jsonpath_field_text(v, &field) == 0));
    if (v == NULL || v->type == JSONDOC_NULL || v->type == JSONDOC_OBJECT ||
        v->type == JSONDOC_ARRAY) {
        FUZZ_ASSERT(rc == -1 && key.len == 0);
    } else {
        FUZZ_ASSERT(rc == 0);
        if (v->type == JSONDOC_STRING) {
            FUZZ_ASSERT(key.len == v->len && field.len == v->len);
        } else if (v->type == JSONDOC_NUMBER) {
            FUZZ_ASSERT(field.len == v->len && memcmp(field.data, v->str, v->len) == 0);
            double dv = strtod(buf_str(&field), NULL);
            if (strpbrk(buf_str(&field), ".eE") != NULL && !isinf(dv)) {
                FUZZ_ASSERT(strtod(buf_str(&key), NULL) == dv);
            }
        }
    }
    if (old != NULL && old_key_text(old, &want) == 0) {
        FUZZ_ASSERT(rc == 0 && key.len == want.len);
        FUZZ_ASSERT(memcmp(buf_str(&key), buf_str(&want), key.len) == 0);
    } else if (old != NULL) {
        FUZZ_ASSERT(rc == -1);
    }
    (void) d;
    buf_free(&key);
    buf_free(&field);
    buf_free(&want);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_pieces f;
    char err[256];

    if (fuzz_split(data, size, '\n', 2, &f) != 0) {
        return 0;
    }
    /* jansson skips some raw NUL bytes as if they were not there (its reader
     * uses NUL as "read more"): no oracle for a body that holds one. */
    json_error_t jerr;
    json_t *old = memchr(f.p[1], '\0', f.len[1]) != NULL
                      ? NULL
                      : json_loadb(f.p[1], f.len[1], JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    struct jsondoc *d = jsondoc_parse(f.p[1], f.len[1], err, sizeof(err));
    if (d == NULL) {
        FUZZ_ASSERT(old == NULL); /* what jansson read, twice reads */
        FUZZ_ASSERT(strncmp(err, "line ", 5) == 0);
        FUZZ_ASSERT(!fuzz_has_control(err, strlen(err), ""));
    } else {
        FUZZ_ASSERT(jsonpath_get(d, "") == &d->v[0]);
        check_shape(d);
        const struct jsondoc_value *v = jsonpath_get(d, f.p[0]);
        json_t *was = old != NULL ? old_get(old, f.p[0]) : NULL;
        FUZZ_ASSERT(old == NULL || (was == NULL) == (v == NULL));
        check_texts(d, v, was);
        if (v != NULL) {
            check_raw(d, v);
        }
        if (v != NULL && v->type == JSONDOC_STRING) {
            check_write(v);
        }
        jsondoc_free(d);
    }
    json_decref(old);
    FUZZ_ASSERT(jsonpath_get(NULL, f.p[0]) == NULL);
    fuzz_pieces_free(&f);
    return 0;
}
