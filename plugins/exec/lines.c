/*
 * lines.c - a handler's stderr cut into lines for the log: at most
 * EXEC_LINE_MAX bytes of each (the rest dropped and counted, never
 * buffered: a megabyte without a newline costs one buffer), control bytes
 * made '?'. Not reading the pipe (exchange.c, pool.c).
 */
#include "exec.h"

#include <string.h>

/* The line so far to fn, then start the next. */
static void
emit(struct exec_lines *l, exec_line_fn fn, void *ctx)
{
    /* the CR of a CRLF; in a cut line the last byte kept is not the last */
    if (l->cut == 0 && l->len > 0 && l->buf[l->len - 1] == '\r') {
        l->len--;
    }
    for (size_t i = 0; i < l->len; i++) {
        unsigned char c = (unsigned char) l->buf[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f) {
            l->buf[i] = '?';
        }
    }
    l->buf[l->len] = '\0';
    fn(ctx, l->buf, l->cut);
    l->len = 0;
    l->cut = 0;
}

void
exec_lines_feed(struct exec_lines *l, const char *data, size_t n, exec_line_fn fn, void *ctx)
{
    while (n > 0) {
        const char *nl = memchr(data, '\n', n);
        size_t part = nl != NULL ? (size_t) (nl - data) : n;
        size_t room = EXEC_LINE_MAX - l->len, keep = part < room ? part : room;
        memcpy(l->buf + l->len, data, keep);
        l->len += keep;
        l->cut += part - keep;
        if (nl == NULL) {
            return;
        }
        emit(l, fn, ctx);
        data += part + 1;
        n -= part + 1;
    }
}

void
exec_lines_flush(struct exec_lines *l, exec_line_fn fn, void *ctx)
{
    if (l->len > 0 || l->cut > 0) {
        emit(l, fn, ctx);
    }
}
