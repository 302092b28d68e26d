/*
 * diag.c - the problem list of diag.h.
 */
#include "diag.h"

#include "ascii.h"
#include "buf.h"
#include "escape.h"

#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

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

/* One more problem past DIAG_MAX_LINES: the last line counts them. */
static void
diag_more(struct diag *d)
{
    struct buf b = BUF_INIT;
    d->more++;
    buf_printf(&b, "... %zu more problem%s not shown", d->more, d->more == 1 ? "" : "s");
    char *line = buf_steal(&b);
    if (line == NULL) {
        return;
    }
    if (d->n > DIAG_MAX_LINES) {
        free(d->lines[--d->n]);
    }
    diag_push(d, line);
}

/* b's text escaped as escape_unquoted does, as a new string (NULL: out of
 * memory); b is freed. */
static char *
escaped_line(struct buf *b)
{
    struct buf out = BUF_INIT;
    if (!b->failed) {
        escape_unquoted(&out, b->data != NULL ? b->data : "", b->len);
    }
    int failed = b->failed;
    buf_free(b);
    if (failed) {
        buf_free(&out);
        return NULL;
    }
    return buf_steal(&out);
}

void
diag_add(struct diag *d, const char *file, int line, const char *fmt, ...)
{
    if (d->n >= DIAG_MAX_LINES) {
        diag_more(d);
        return;
    }
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
    diag_push(d, escaped_line(&b));
}

void
diag_print_line(FILE *f, const char *fmt, ...)
{
    struct buf b = BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&b, fmt, ap);
    va_end(ap);
    char *line = escaped_line(&b);
    fprintf(f, "%s\n", line != NULL ? line : "(out of memory)");
    free(line);
}

void
diag_free(struct diag *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free(d->lines[i]);
    }
    free(d->lines);
    d->lines = NULL;
    d->n = d->cap = d->more = 0;
}

size_t
diag_count(const struct diag *d)
{
    return d->more > 0 ? d->n - 1 + d->more : d->n;
}

static int
same_char(char a, char b, int fold_case)
{
    return fold_case ? ascii_tolower((unsigned char) a) == ascii_tolower((unsigned char) b)
                     : a == b;
}

int
diag_edit_distance(const char *a, const char *b, int fold_case)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > DIAG_NAME_MAX || lb > DIAG_NAME_MAX) {
        return INT_MAX;
    }
    int d[DIAG_NAME_MAX + 1][DIAG_NAME_MAX + 1];
    for (size_t i = 0; i <= la; i++) {
        for (size_t j = 0; j <= lb; j++) {
            if (i == 0 || j == 0) {
                d[i][j] = (int) (i + j);
                continue;
            }
            int v = d[i - 1][j - 1] + !same_char(a[i - 1], b[j - 1], fold_case);
            v = d[i - 1][j] + 1 < v ? d[i - 1][j] + 1 : v;
            v = d[i][j - 1] + 1 < v ? d[i][j - 1] + 1 : v;
            if (i > 1 && j > 1 && same_char(a[i - 1], b[j - 2], fold_case) &&
                same_char(a[i - 2], b[j - 1], fold_case) && d[i - 2][j - 2] + 1 < v) {
                v = d[i - 2][j - 2] + 1;
            }
            d[i][j] = v;
        }
    }
    return d[la][lb];
}
