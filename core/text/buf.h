/*
 * buf.h - a growable byte buffer, always NUL-terminated.
 *
 * Used wherever core builds text of unknown length (request bodies, log
 * lines, SQL arrays). Not a string library: it only appends.
 */
#ifndef TWICE_BUF_H
#define TWICE_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <string.h>

struct buf {
    char *data; /* NUL-terminated; NULL until the first append */
    size_t len;
    size_t cap;
    int failed; /* an allocation failed: every later append is a no-op */
};

#define BUF_INIT                                                                                  \
    {                                                                                             \
        NULL, 0, 0, 0                                                                             \
    }

/* Append n bytes / a C string / printf output. They return 0, or -1 once an
 * allocation has failed (the buffer keeps what it had and stays failed). */
static inline int buf_append(struct buf *b, const void *data, size_t n);
int buf_puts(struct buf *b, const char *s);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int buf_vprintf(struct buf *b, const char *fmt, va_list ap);

/* Append each C string up to the NULL that ends the list: what a printf
 * of "%s%s..." appends, without parsing a format. 0, or -1 as above. */
int buf_cat(struct buf *b, ...) __attribute__((sentinel));

/* Room for any long long in decimal, with its sign and the NUL. */
#define BUF_INT_MAX 21

/* v in decimal into out (NUL-terminated); returns its length. No printf: the
 * hot paths write many small integers (array literals, JSON requests). */
size_t buf_int_text(char out[BUF_INT_MAX], long long v);

/* Append v in decimal. 0, or -1 as above. */
int buf_put_int(struct buf *b, long long v);

/* Make sure `extra` more bytes fit without another allocation. */
int buf_reserve(struct buf *b, size_t extra);

/* buf_append's path that grows the buffer (or finds it failed). */
int buf_append_grow(struct buf *b, const void *data, size_t n);

/* Inline: JSON writers and escapes append many short pieces; the copy into
 * room the buffer already has costs less than the call. */
static inline int
buf_append(struct buf *b, const void *data, size_t n)
{
    if (b->failed || b->data == NULL || n >= b->cap - b->len) {
        return buf_append_grow(b, data, n);
    }
    memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

/* One byte: inline, as encoders call it for every character they write. */
static inline int
buf_putc(struct buf *b, char c)
{
    if (b->failed || b->data == NULL || b->len + 2 > b->cap) {
        if (buf_reserve(b, 1) != 0) {
            return -1;
        }
    }
    b->data[b->len++] = c;
    b->data[b->len] = '\0';
    return 0;
}

/* Forget the contents but keep the memory. */
void buf_reset(struct buf *b);

/* The contents as a C string ("" when empty). Borrowed from b. */
const char *buf_str(const struct buf *b);

/* Hand the contents over to the caller (who frees them) and reset b.
 * Returns NULL if an allocation failed; never NULL otherwise. */
char *buf_steal(struct buf *b);

void buf_free(struct buf *b);
/* buf_free, after overwriting all the memory with zeros: for buffers that
 * held a secret (a signature, a token, credentials in a response). */
void buf_free_wipe(struct buf *b);

/* Overwrite a NUL-terminated string that holds a secret (a password, a
 * DSN, a webhook URL) with zeros, then free it. NULL is fine. */
void buf_free_secret(char *s);

#endif
