/*
 * diag.c - the problem list of diag.h.
 */
#include "diag.h"

#include "buf.h"

#include <stdarg.h>
#include <stdlib.h>

static void
diag_push(struct diag *d, char *line)
{
    if (line == NULL) {
        return;
    }
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 8;
        char **p = realloc(d->lines, cap * sizeof(*p));
        if (p == NULL) {
            free(line);
            return;
        }
        d->lines = p;
        d->cap = cap;
    }
    d->lines[d->n++] = line;
}

void
diag_add(struct diag *d, const char *file, int line, const char *fmt, ...)
{
    struct buf b = BUF_INIT;
    if (file != NULL && line > 0) {
        buf_printf(&b, "%s:%d: ", file, line);
    } else if (file != NULL) {
        buf_printf(&b, "%s: ", file);
    }
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&b, fmt, ap);
    va_end(ap);
    diag_push(d, buf_steal(&b));
}

void
diag_free(struct diag *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free(d->lines[i]);
    }
    free(d->lines);
    d->lines = NULL;
    d->n = d->cap = 0;
}
