/*
 * jsondoc.c - building a body's value list from jsonparse.c's events: one
 * array of values (grown by doubling) and one arena for the strings that
 * had escapes; everything else points into the body itself.
 */
#include "jsondoc.h"

#include "jsonparse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The parse in progress. */
struct builder {
    struct jsondoc *d;
    uint32_t open[JSONPARSE_MAX_DEPTH]; /* the indices of the containers open */
    const char *name;                   /* the pending member name, or NULL */
    size_t name_len;
};

/* A value's string: the body's own bytes when it had no escapes, else a
 * copy (jsonparse's decoded bytes last only for the call). */
static const char *
keep(struct jsonparse *p, struct jsondoc *d, const char *s, size_t n)
{
    if (p->in_text) {
        return s;
    }
    const char *copy = arena_strndup(&d->strings, s, n);
    if (copy == NULL) {
        jsonparse_fail(p, "out of memory");
    }
    return copy;
}

/* Append a value of type t for the token p is at; NULL on ENOMEM. */
static struct jsondoc_value *
add(struct jsonparse *p, struct builder *b, enum jsondoc_type t)
{
    struct jsondoc *d = b->d;
    if (d->n == d->cap) {
        uint32_t cap = d->cap * 2;
        int inline_v = d->v == d->inline_v;
        struct jsondoc_value *v = cap <= d->cap ? NULL
                                  : inline_v    ? malloc(cap * sizeof(*v))
                                                : realloc(d->v, cap * sizeof(*v));
        if (v == NULL) {
            jsonparse_fail(p, "out of memory");
            return NULL;
        }
        if (inline_v) {
            memcpy(v, d->inline_v, sizeof(d->inline_v));
        }
        d->v = v;
        d->cap = cap;
    }
    struct jsondoc_value *v = &d->v[d->n];
    memset(v, 0, sizeof(*v));
    v->type = (uint8_t) t;
    v->start = (uint32_t) p->start;
    v->end = (uint32_t) p->end;
    v->next = ++d->n;
    if (p->depth > 0) {
        d->v[b->open[p->depth - 1]].count++;
        v->name = b->name;
        v->name_len = (uint32_t) b->name_len;
        b->name = NULL;
    }
    return v;
}

static int
on_scalar(struct jsonparse *p, enum jsonparse_kind kind, const char *s, size_t n)
{
    struct builder *b = p->ctx;
    static const enum jsondoc_type types[] = {
        [JSONPARSE_NULL] = JSONDOC_NULL,     [JSONPARSE_FALSE] = JSONDOC_FALSE,
        [JSONPARSE_TRUE] = JSONDOC_TRUE,     [JSONPARSE_NUMBER] = JSONDOC_NUMBER,
        [JSONPARSE_STRING] = JSONDOC_STRING,
    };
    struct jsondoc_value *v = add(p, b, types[kind]);
    if (v == NULL) {
        return -1;
    }
    if (s != NULL) {
        v->str = keep(p, b->d, s, n);
        v->len = (uint32_t) n;
        if (v->str == NULL) {
            return -1;
        }
    }
    return 0;
}

static int
on_key(struct jsonparse *p, const char *s, size_t n)
{
    struct builder *b = p->ctx;
    b->name = keep(p, b->d, s, n);
    b->name_len = n;
    return b->name != NULL ? 0 : -1;
}

static int
on_open(struct jsonparse *p, int object)
{
    struct builder *b = p->ctx;
    if (add(p, b, object ? JSONDOC_OBJECT : JSONDOC_ARRAY) == NULL) {
        return -1;
    }
    b->open[p->depth] = b->d->n - 1;
    return 0;
}

/* A container ends: its text and its `next` now take in what it holds. */
static int
on_close(struct jsonparse *p, int object)
{
    struct builder *b = p->ctx;
    struct jsondoc_value *v = &b->d->v[b->open[p->depth]];
    (void) object;
    v->end = (uint32_t) p->end;
    v->next = b->d->n;
    return 0;
}

static const struct jsonparse_events events = {
    .scalar = on_scalar,
    .key = on_key,
    .open = on_open,
    .close = on_close,
};

struct jsondoc *
jsondoc_parse(const char *text, size_t len, char *err, size_t errlen)
{
    if (text == NULL) {
        text = "";
        len = 0;
    }
    if (len >= UINT32_MAX) {
        snprintf(err, errlen, "line 1 column 1: a body of 4 GiB or more");
        return NULL;
    }
    struct jsondoc *d = malloc(sizeof(*d));
    if (d == NULL) {
        snprintf(err, errlen, "line 1 column 1: out of memory");
        return NULL;
    }
    d->text = text;
    d->len = len;
    d->v = d->inline_v;
    d->n = 0;
    d->cap = JSONDOC_INLINE;
    d->strings = (struct arena) ARENA_INIT;
    struct builder b; /* 8 KiB of stack, set as containers open */
    b.d = d;
    b.name = NULL;
    int rc = jsonparse_run(text, len, &events, &b, err, errlen);
    if (rc != 0) {
        jsondoc_free(d);
        return NULL;
    }
    return d;
}

void
jsondoc_free(struct jsondoc *d)
{
    if (d == NULL) {
        return;
    }
    if (d->v != d->inline_v) {
        free(d->v);
    }
    arena_free(&d->strings);
    free(d);
}

const char *
jsondoc_raw(const struct jsondoc *d, const struct jsondoc_value *v, size_t *len)
{
    *len = v->end - v->start;
    return d->text + v->start;
}
