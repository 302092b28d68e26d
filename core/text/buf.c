/*
 * buf.c - the growable byte buffer of buf.h. Growth doubles; a failed
 * allocation latches `failed` so callers may check once at the end.
 */
#include "buf.h"

#include "cnum.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
buf_reserve(struct buf *b, size_t extra)
{
    if (b->failed) {
        return -1;
    }
    if (b->len + extra + 1 <= b->cap) {
        return 0;
    }
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1) {
        if (cap > ((size_t) -1) / 2) {
            b->failed = 1;
            return -1;
        }
        cap *= 2;
    }
    char *p = realloc(b->data, cap);
    if (p == NULL) {
        b->failed = 1;
        return -1;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

int
buf_append_grow(struct buf *b, const void *data, size_t n)
{
    if (buf_reserve(b, n) != 0) {
        return -1;
    }
    if (n > 0) {
        memcpy(b->data + b->len, data, n);
    }
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int
buf_puts(struct buf *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

/* Formats straight into the free space when the text fits (one vsnprintf
 * instead of measuring first: most texts are short), else grows the buffer
 * to the size the first pass reported and formats again. Always in the C
 * locale (cnum.h): the log, /metrics and every text the host builds here
 * write "1.5" even after a plugin called setlocale(). */
int
buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
    va_list copy;
    if (buf_reserve(b, 63) != 0) {
        return -1;
    }
    size_t room = b->cap - b->len;
    va_copy(copy, ap);
    int n = cnum_vsnprintf(b->data + b->len, room, fmt, copy);
    va_end(copy);
    if (n >= 0 && (size_t) n >= room) {
        if (buf_reserve(b, (size_t) n) != 0) {
            b->data[b->len] = '\0';
            return -1;
        }
        cnum_vsnprintf(b->data + b->len, (size_t) n + 1, fmt, ap);
    }
    if (n < 0) {
        b->data[b->len] = '\0';
        b->failed = 1;
        return -1;
    }
    b->len += (size_t) n;
    return 0;
}

int
buf_cat(struct buf *b, ...)
{
    va_list ap;
    va_start(ap, b);
    for (const char *s = va_arg(ap, const char *); s != NULL; s = va_arg(ap, const char *)) {
        buf_append(b, s, strlen(s));
    }
    va_end(ap);
    return b->failed ? -1 : 0;
}

int
buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

void
buf_reset(struct buf *b)
{
    b->len = 0;
    b->failed = 0;
    if (b->data != NULL) {
        b->data[0] = '\0';
    }
}

const char *
buf_str(const struct buf *b)
{
    return b->data != NULL ? b->data : "";
}

char *
buf_steal(struct buf *b)
{
    if (b->failed) {
        buf_free(b);
        return NULL;
    }
    char *p = b->data;
    if (p == NULL) {
        p = strdup("");
    }
    b->data = NULL;
    b->len = b->cap = 0;
    return p;
}

void
buf_free(struct buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->failed = 0;
}

void
buf_free_wipe(struct buf *b)
{
    if (b->data != NULL) {
        explicit_bzero(b->data, b->cap);
    }
    buf_free(b);
}

void
buf_free_secret(char *s)
{
    if (s != NULL) {
        explicit_bzero(s, strlen(s));
    }
    free(s);
}

size_t
buf_int_text(char out[BUF_INT_MAX], long long v)
{
    char digits[BUF_INT_MAX];
    /* The magnitude as unsigned: -LLONG_MIN does not fit a long long. */
    unsigned long long m = v < 0 ? 0ULL - (unsigned long long) v : (unsigned long long) v;
    size_t nd = 0;
    do {
        digits[nd++] = (char) ('0' + m % 10);
        m /= 10;
    } while (m != 0);
    size_t len = 0;
    if (v < 0) {
        out[len++] = '-';
    }
    while (nd > 0) {
        out[len++] = digits[--nd];
    }
    out[len] = '\0';
    return len;
}

int
buf_put_int(struct buf *b, long long v)
{
    char text[BUF_INT_MAX];
    size_t len = buf_int_text(text, v);
    return buf_append(b, text, len);
}
