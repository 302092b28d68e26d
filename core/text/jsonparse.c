/*
 * jsonparse.c - yajl's event parser with the checks twice adds (see
 * jsonparse.h): each yajl callback is bracketed here, which finds the
 * token's place in the text and checks its strings before the reader sees
 * them. Not a JSON lexer: every byte of the grammar is yajl's business.
 */
#include "jsonparse.h"

#include "cnum.h"
#include "utf8.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

/* The events, kept next to the parse (the public struct has room for one
 * pointer of ours: yajl's handle; the rest travels in this wrapper). */
struct parse {
    struct jsonparse p; /* first: yajl's ctx is a struct parse * */
    const struct jsonparse_events *ev;
};

int
jsonparse_fail(struct jsonparse *p, const char *fmt, ...)
{
    if (p->why[0] == '\0') {
        va_list ap;
        va_start(ap, fmt);
        cnum_vsnprintf(p->why, sizeof(p->why), fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Where yajl stands: just past the token it reports. Numbers at the very
 * end of the text are reported by yajl_complete_parse, which counts from
 * its own one-byte chunk: they end at the end of the text. */
static void
token_end(struct jsonparse *p)
{
    p->prev_end = p->end;
    p->end = p->finishing ? p->len : yajl_get_bytes_consumed(p->yajl);
}

/* The first byte of the token that ends at p->end and is not the previous
 * one: what lies between two tokens is whitespace, ',' and ':'. */
static size_t
token_start(const struct jsonparse *p)
{
    size_t i = p->prev_end;
    while (i < p->end && strchr(" \t\r\n,:", p->text[i]) != NULL) {
        i++;
    }
    return i;
}

static unsigned
hex4(const char *s)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        v = v * 16 + (unsigned) (c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    return v;
}

/*
 * Whether every \u escape of a raw string body (between its quotes) that
 * names a surrogate is one half of a proper pair. yajl turns a lone high
 * surrogate into '?' and joins a high one with whatever \u follows; either
 * would let two different texts spell the same key.
 */
static int
surrogates_pair(const char *s, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++) {
        if (s[i] != '\\') {
            continue;
        }
        if (s[++i] != 'u' || i + 4 >= n) {
            continue;
        }
        unsigned cp = hex4(s + i + 1);
        i += 4;
        if (cp >= 0xdc00 && cp <= 0xdfff) {
            return 0;
        }
        if (cp >= 0xd800 && cp <= 0xdbff) {
            if (i + 6 >= n || s[i + 1] != '\\' || s[i + 2] != 'u') {
                return 0;
            }
            unsigned lo = hex4(s + i + 3);
            if (lo < 0xdc00 || lo > 0xdfff) {
                return 0;
            }
            i += 6;
        }
    }
    return 1;
}

/* 1 when any byte of s is not ASCII; eight at a time. */
static int
has_high_byte(const char *s, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        if (w & 0x8080808080808080ull) {
            return 1;
        }
    }
    for (; i < n; i++) {
        if ((unsigned char) s[i] & 0x80) {
            return 1;
        }
    }
    return 0;
}

/* 1 when s holds a 4-byte UTF-8 sequence (what a surrogate pair decodes to). */
static int
has_four_byte(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if ((unsigned char) s[i] >= 0xf0) {
            return 1;
        }
    }
    return 0;
}

/*
 * Place a string token (a value or a name) and check it: strictly UTF-8,
 * and, when it had escapes, surrogates that pair. -1 with the reason set.
 */
static int
string_token(struct jsonparse *p, const char *s, size_t n)
{
    token_end(p);
    p->in_text = s >= p->text && s < p->text + p->len;
    p->start = p->in_text ? (size_t) (s - p->text) - 1 : token_start(p);
    int high = has_high_byte(s, n);
    if (high && !utf8_valid(s, n)) {
        return jsonparse_fail(p, "a string is not valid UTF-8 (or escapes a lone surrogate)");
    }
    if (!p->in_text && (memchr(s, '?', n) != NULL || (high && has_four_byte(s, n))) &&
        !surrogates_pair(p->text + p->start + 1, p->end - p->start - 2)) {
        return jsonparse_fail(p, "a \\u escape names half a surrogate pair");
    }
    return 0;
}

/* yajl's callbacks return 1 to go on; ours 0. */
static int
scalar(struct parse *x, enum jsonparse_kind kind, const char *s, size_t n)
{
    return x->ev->scalar == NULL || x->ev->scalar(&x->p, kind, s, n) == 0;
}

static int
on_null(void *ctx)
{
    struct parse *x = ctx;
    token_end(&x->p);
    x->p.start = x->p.end - 4;
    return scalar(x, JSONPARSE_NULL, NULL, 0);
}

static int
on_boolean(void *ctx, int value)
{
    struct parse *x = ctx;
    token_end(&x->p);
    x->p.start = x->p.end - (value ? 4 : 5);
    return scalar(x, value ? JSONPARSE_TRUE : JSONPARSE_FALSE, NULL, 0);
}

/* Numbers come verbatim: their text is the text's own. */
static int
on_number(void *ctx, const char *s, size_t n)
{
    struct parse *x = ctx;
    token_end(&x->p);
    x->p.start = x->p.end - n;
    x->p.in_text = 1;
    (void) s;
    return scalar(x, JSONPARSE_NUMBER, x->p.text + x->p.start, n);
}

static int
on_string(void *ctx, const unsigned char *s, size_t n)
{
    struct parse *x = ctx;
    if (string_token(&x->p, (const char *) s, n) != 0) {
        return 0;
    }
    return scalar(x, JSONPARSE_STRING, (const char *) s, n);
}

static int
on_key(void *ctx, const unsigned char *s, size_t n)
{
    struct parse *x = ctx;
    if (string_token(&x->p, (const char *) s, n) != 0) {
        return 0;
    }
    return x->ev->key == NULL || x->ev->key(&x->p, (const char *) s, n) == 0;
}

static int
on_open(struct parse *x, int object)
{
    token_end(&x->p);
    x->p.start = x->p.end - 1;
    if (x->p.depth >= JSONPARSE_MAX_DEPTH) {
        jsonparse_fail(&x->p, "maximum parsing depth (%d) exceeded", JSONPARSE_MAX_DEPTH);
        return 0;
    }
    int rc = x->ev->open == NULL || x->ev->open(&x->p, object) == 0;
    x->p.depth++;
    return rc;
}

static int
on_close(struct parse *x, int object)
{
    token_end(&x->p);
    x->p.start = x->p.end - 1;
    x->p.depth--;
    return x->ev->close == NULL || x->ev->close(&x->p, object) == 0;
}

static int
on_start_map(void *ctx)
{
    return on_open(ctx, 1);
}

static int
on_end_map(void *ctx)
{
    return on_close(ctx, 1);
}

static int
on_start_array(void *ctx)
{
    return on_open(ctx, 0);
}

static int
on_end_array(void *ctx)
{
    return on_close(ctx, 0);
}

static const yajl_callbacks callbacks = {
    .yajl_null = on_null,
    .yajl_boolean = on_boolean,
    .yajl_number = on_number,
    .yajl_string = on_string,
    .yajl_start_map = on_start_map,
    .yajl_map_key = on_key,
    .yajl_end_map = on_end_map,
    .yajl_start_array = on_start_array,
    .yajl_end_array = on_end_array,
};

/* "line L column C: why", counting from 1 in bytes, off clamped to len. */
static void
say_where(const char *text, size_t len, size_t off, const char *why, char *err, size_t errlen)
{
    size_t line = 1, col = 1;
    if (off > len) {
        off = len;
    }
    for (size_t i = 0; i < off; i++) {
        if (text[i] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    snprintf(err, errlen, "line %zu column %zu: %s", line, col, why);
}

/* yajl's own words ("lexical error: invalid char in json text.\n"),
 * without the line break, into why. They quote none of the input. */
static void
yajl_reason(yajl_handle h, char *why, size_t len)
{
    unsigned char *text = yajl_get_error(h, 0, NULL, 0);
    if (text == NULL) {
        snprintf(why, len, "invalid JSON");
        return;
    }
    size_t n = strcspn((const char *) text, "\n");
    while (n > 0 && text[n - 1] == '.') {
        n--;
    }
    snprintf(why, len, "%.*s", (int) n, (const char *) text);
    yajl_free_error(h, text);
}

/*
 * yajl allocates a handle, a lexer and buffers for every parse, and a body
 * is parsed per message: those come from a scratch area on the stack of
 * jsonparse_run (malloc past it), which saves a dozen mallocs and frees a
 * parse. Each block has its size in front (realloc must copy it).
 */
#define SCRATCH_SIZE 6144
#define SCRATCH_HEAD 16

struct scratch {
    size_t used;
    _Alignas(16) unsigned char mem[SCRATCH_SIZE];
};

static size_t
round16(size_t n)
{
    return (n + 15) & ~(size_t) 15;
}

static int
in_scratch(const struct scratch *s, const void *p)
{
    const unsigned char *c = p;
    return c >= s->mem && c < s->mem + SCRATCH_SIZE;
}

static void *
scratch_malloc(void *ctx, size_t n)
{
    struct scratch *s = ctx;
    if (n <= SCRATCH_SIZE && SCRATCH_SIZE - s->used >= SCRATCH_HEAD + round16(n)) {
        unsigned char *p = s->mem + s->used;
        memcpy(p, &n, sizeof(n));
        s->used += SCRATCH_HEAD + round16(n);
        return p + SCRATCH_HEAD;
    }
    return malloc(n);
}

static void *
scratch_realloc(void *ctx, void *ptr, size_t n)
{
    struct scratch *s = ctx;
    if (ptr == NULL) {
        return scratch_malloc(ctx, n);
    }
    if (!in_scratch(s, ptr)) {
        return realloc(ptr, n);
    }
    unsigned char *p = ptr;
    size_t old;
    memcpy(&old, p - SCRATCH_HEAD, sizeof(old));
    size_t at = (size_t) (p - s->mem);
    if (at + round16(old) == s->used && n <= SCRATCH_SIZE - at) {
        s->used = at + round16(n); /* the last block grows in place */
        memcpy(p - SCRATCH_HEAD, &n, sizeof(n));
        return p;
    }
    void *q = scratch_malloc(ctx, n);
    if (q != NULL) {
        memcpy(q, p, old < n ? old : n);
    }
    return q;
}

static void
scratch_free(void *ctx, void *ptr)
{
    if (ptr != NULL && !in_scratch(ctx, ptr)) {
        free(ptr);
    }
}

/* JSON's whitespace is space, tab, CR and LF; yajl also skips \v and \f,
 * which are control characters anywhere else: a text holding one is not
 * JSON. The offset of the first, or len. */
static size_t
bad_whitespace(const char *text, size_t len)
{
    const char *v = memchr(text, '\v', len), *f = memchr(text, '\f', len);
    if (v == NULL && f == NULL) {
        return len;
    }
    const char *first = v == NULL ? f : f == NULL ? v : v < f ? v : f;
    return (size_t) (first - text);
}

int
jsonparse_run(const char *text, size_t len, const struct jsonparse_events *ev, void *ctx,
              char *err, size_t errlen)
{
    struct parse x;
    memset(&x, 0, sizeof(x));
    x.p.ctx = ctx;
    x.p.text = text != NULL ? text : "";
    x.p.len = text != NULL ? len : 0;
    x.ev = ev;
    size_t bad = bad_whitespace(x.p.text, x.p.len);
    if (bad < x.p.len) {
        say_where(x.p.text, x.p.len, bad, "control character \\v or \\f outside a string", err,
                  errlen);
        return -1;
    }
    struct scratch scratch;
    scratch.used = 0;
    yajl_alloc_funcs funcs = {scratch_malloc, scratch_realloc, scratch_free, &scratch};
    yajl_handle h = yajl_alloc(&callbacks, &funcs, &x);
    if (h == NULL) {
        snprintf(err, errlen, "line 1 column 1: out of memory");
        return -1;
    }
    x.p.yajl = h;
    yajl_status st = yajl_parse(h, (const unsigned char *) x.p.text, x.p.len);
    size_t where = yajl_get_bytes_consumed(h);
    if (st == yajl_status_ok) {
        x.p.finishing = 1;
        st = yajl_complete_parse(h);
        where = x.p.len;
    }
    if (st != yajl_status_ok) {
        if (st == yajl_status_client_canceled && x.p.why[0] != '\0') {
            where = x.p.start; /* the token a check refused */
        } else {
            yajl_reason(h, x.p.why, sizeof(x.p.why));
        }
        say_where(x.p.text, x.p.len, where, x.p.why, err, errlen);
    }
    yajl_free(h);
    return st == yajl_status_ok ? 0 : -1;
}
