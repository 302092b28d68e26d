/*
 * jsonwrite.c - the writer of jsonwrite.h: yajl_gen printing into a
 * struct buf, its failures latched so a request is checked once at the end.
 */
#include "jsonwrite.h"

#include "buf.h"

#include <string.h>
#include <yajl/yajl_gen.h>

static void
print(void *ctx, const char *s, size_t n)
{
    buf_append(ctx, s, n);
}

int
jsonwrite_begin(struct jsonwrite *w, struct buf *out)
{
    w->out = out;
    w->failed = 0;
    w->gen = yajl_gen_alloc(NULL);
    if (w->gen == NULL || !yajl_gen_config(w->gen, yajl_gen_print_callback, print, out) ||
        !yajl_gen_config(w->gen, yajl_gen_validate_utf8, 1)) {
        w->failed = 1;
        return -1;
    }
    return 0;
}

int
jsonwrite_end(struct jsonwrite *w)
{
    if (w->gen != NULL) {
        yajl_gen_free(w->gen);
        w->gen = NULL;
    }
    return w->failed || w->out->failed ? -1 : 0;
}

/* Latch a generator failure (bad UTF-8, a misplaced call, no memory). */
static void
check(struct jsonwrite *w, yajl_gen_status st)
{
    if (st != yajl_gen_status_ok) {
        w->failed = 1;
    }
}

void
jsonwrite_open(struct jsonwrite *w)
{
    if (!w->failed) {
        check(w, yajl_gen_map_open(w->gen));
    }
}

void
jsonwrite_close(struct jsonwrite *w)
{
    if (!w->failed) {
        check(w, yajl_gen_map_close(w->gen));
    }
}

void
jsonwrite_array(struct jsonwrite *w)
{
    if (!w->failed) {
        check(w, yajl_gen_array_open(w->gen));
    }
}

void
jsonwrite_end_array(struct jsonwrite *w)
{
    if (!w->failed) {
        check(w, yajl_gen_array_close(w->gen));
    }
}

void
jsonwrite_stringn(struct jsonwrite *w, const char *s, size_t n)
{
    if (s == NULL) {
        w->failed = 1;
    } else if (!w->failed) {
        check(w, yajl_gen_string(w->gen, (const unsigned char *) s, n));
    }
}

void
jsonwrite_string(struct jsonwrite *w, const char *s)
{
    jsonwrite_stringn(w, s, s != NULL ? strlen(s) : 0);
}

void
jsonwrite_int(struct jsonwrite *w, long long v)
{
    if (!w->failed) {
        /* yajl_gen_integer formats with sprintf; the text is the same. */
        char text[BUF_INT_MAX];
        size_t len = buf_int_text(text, v);
        check(w, yajl_gen_number(w->gen, text, len));
    }
}

void
jsonwrite_member_string(struct jsonwrite *w, const char *name, const char *value)
{
    jsonwrite_string(w, name);
    jsonwrite_string(w, value);
}

void
jsonwrite_member_int(struct jsonwrite *w, const char *name, long long value)
{
    jsonwrite_string(w, name);
    jsonwrite_int(w, value);
}
