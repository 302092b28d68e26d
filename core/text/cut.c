/*
 * cut.c - the two cuts of cut.h: a dead letter's detail and a log line's
 * message. Pure: the caller says what fits (log.c formats its line, the
 * mock host the line twiced would write), this file where to cut.
 */
#include "cut.h"

#include "buf.h"
#include "utf8.h"

#include <string.h>

void
cut_error(struct buf *b)
{
    if (b->data == NULL || b->failed || b->len <= JOB_ERROR_MAX) {
        return;
    }
    /* text from a message (a route's value, a plugin's error quoting a
     * body) can be as long as the body; keep its start, cut between
     * characters */
    size_t cut = utf8_cut(b->data, JOB_ERROR_MAX);
    b->len = cut;
    b->data[cut] = '\0';
    buf_puts(b, "...");
}

/* text's first keep bytes and the note of what was left out, into out. */
static int
candidate(struct buf *out, const char *text, size_t keep, size_t total)
{
    buf_reset(out);
    buf_append(out, text, keep);
    buf_printf(out, " [... %zu bytes cut]", total - keep);
    return out->failed ? -1 : 0;
}

int
cut_message(const char *text, cut_fits_fn fits, void *ctx, struct buf *out)
{
    size_t total = strlen(text);
    size_t lo = 0, hi = total < LOG_LINE_MAX ? total : LOG_LINE_MAX; /* escaped >= raw */
    while (lo < hi) { /* the longest keep in [lo, hi] that fits */
        size_t keep = utf8_cut(text, lo + (hi - lo + 1) / 2);
        if (keep <= lo) {
            break;
        }
        if (candidate(out, text, keep, total) != 0) {
            return -1;
        }
        if (fits(buf_str(out), ctx)) {
            lo = keep;
        } else {
            hi = keep - 1;
        }
    }
    return candidate(out, text, lo, total);
}
