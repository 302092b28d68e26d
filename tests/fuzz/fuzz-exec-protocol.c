/*
 * fuzz-exec-protocol.c - libFuzzer target: what a handler program of the
 * exec plugin writes back, as a broken or hostile handler could write it:
 * its answer line (exec_parse_answer), the start of a bad one quoted in the
 * job's error (exec_shown), and its stderr cut into log lines
 * (exec_lines_feed, exec_lines_flush). Not the request line, the processes
 * or the pipes (exchange.c, pool.c: tests/integration).
 *
 * Input: the first byte chooses (mod 2). Even: the rest is an answer line,
 * parsed, then quoted with several buffer sizes. Odd: the next four bytes
 * are the sizes of the reads the stream arrives in (cycled; 0 is an empty
 * read), the rest is the text of the stream, repeated (first byte >> 1) %
 * 64 + 1 times so that short inputs make lines longer than EXEC_LINE_MAX.
 * Promises checked: an answer read has a known status, a terminated error,
 * a retry_after of -1 or 0..43200 and a terminated message_id when echoed
 * (any job's answer when not); a refused one a reason of printable
 * ASCII that quotes the line as exec_shown shows it; exec_shown writes
 * printable ASCII terminated within its cap, at most EXEC_SHOWN bytes of
 * the text and "...", a smaller cap a prefix of it; every byte of the
 * stream is accounted for: each line is its text up to the newline, the
 * first EXEC_LINE_MAX bytes kept (control bytes but tab made '?') and the
 * rest counted as cut, a CR dropped only as the last byte of a line that
 * was not cut, one line per newline and one for a partial last line.
 */
#include "fuzz.h"

#include "exec.h"

/* Printable ASCII only, up to the NUL that must come within cap. */
static void
check_printable(const char *s, size_t cap)
{
    const char *end = memchr(s, '\0', cap);
    FUZZ_ASSERT(end != NULL);
    for (const char *p = s; p < end; p++) {
        FUZZ_ASSERT(*p >= 0x20 && *p < 0x7f);
    }
}

static void
answer(const char *line, size_t len)
{
    struct exec_answer a;
    char why[512], shown[EXEC_SHOWN * 2];
    memset(why, 'X', sizeof(why));
    if (exec_parse_answer(line, len, &a, why, sizeof(why)) == 0) {
        FUZZ_ASSERT(a.status == TWICE_DONE || a.status == TWICE_RETRY || a.status == TWICE_REJECT);
        FUZZ_ASSERT(memchr(a.error, '\0', sizeof(a.error)) != NULL);
        FUZZ_ASSERT(a.retry_after == -1 || (a.retry_after >= 0 && a.retry_after <= 43200));
        FUZZ_ASSERT(a.echoed ? memchr(a.message_id, '\0', sizeof(a.message_id)) != NULL
                             : exec_answer_for(&a, "any"));
        return;
    }
    check_printable(why, sizeof(why));
    FUZZ_ASSERT(why[0] != '\0');
    exec_shown(line, len, shown, sizeof(shown));
    char quoted[sizeof(shown) + 3];
    snprintf(quoted, sizeof(quoted), "'%s'", shown);
    FUZZ_ASSERT(strlen(why) >= strlen(quoted) &&
                strcmp(why + strlen(why) - strlen(quoted), quoted) == 0);
    /* a short buffer: cut, still terminated */
    memset(why, 'X', sizeof(why));
    FUZZ_ASSERT(exec_parse_answer(line, len, &a, why, 40) == -1);
    check_printable(why, 40);
}

/* exec_shown with a cap big enough for everything: EXEC_SHOWN bytes at
 * most, each the text's byte when printable ASCII, else '?'; "..." when
 * cut. */
static void
check_shown_whole(const char *s, size_t len, const char *out)
{
    size_t n = len < EXEC_SHOWN ? len : EXEC_SHOWN;
    FUZZ_ASSERT(strlen(out) == n + (n < len ? 3 : 0));
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char) s[i];
        FUZZ_ASSERT(out[i] == (c >= 0x20 && c < 0x7f ? s[i] : '?'));
    }
    FUZZ_ASSERT(n == len || memcmp(out + n, "...", 4) == 0);
}

static void
shown(const char *s, size_t len)
{
    static const size_t caps[] = {1, 2, 5, 6, 17, EXEC_SHOWN, EXEC_SHOWN + 4, EXEC_SHOWN * 2};
    char whole[EXEC_SHOWN * 2];
    exec_shown(s, len, whole, sizeof(whole));
    check_printable(whole, sizeof(whole));
    check_shown_whole(s, len, whole);
    for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
        char *out = malloc(caps[i]); /* exactly cap bytes: ASan sees a write past it */
        if (out == NULL) {
            return;
        }
        exec_shown(s, len, out, caps[i]);
        check_printable(out, caps[i]);
        FUZZ_ASSERT(strncmp(out, whole, strlen(out)) == 0);
        free(out);
    }
}

/* The stream as fed, and where the next line must start in it. */
struct stream {
    const char *s;
    size_t len, pos, lines;
    int flushing;
};

static void
check_line(void *ctx, const char *line, size_t cut)
{
    struct stream *st = ctx;
    FUZZ_ASSERT(st->pos <= st->len);
    const char *seg = st->s + st->pos, *nl = memchr(seg, '\n', st->len - st->pos);
    FUZZ_ASSERT(nl != NULL || st->flushing); /* only flush emits a line without a newline */
    size_t seglen = nl != NULL ? (size_t) (nl - seg) : st->len - st->pos;
    size_t kept = strlen(line);
    FUZZ_ASSERT(kept <= EXEC_LINE_MAX && kept + cut <= seglen);
    int cr = cut == 0 && seglen > 0 && seg[seglen - 1] == '\r';
    FUZZ_ASSERT(kept + cut + (size_t) cr == seglen);
    for (size_t i = 0; i < kept; i++) {
        unsigned char c = (unsigned char) seg[i];
        FUZZ_ASSERT(line[i] == ((c < 0x20 && c != '\t') || c == 0x7f ? '?' : seg[i]));
    }
    st->pos += seglen + 1;
    st->lines++;
}

static void
lines(const uint8_t *data, size_t size, unsigned repeat)
{
    uint8_t sizes[4] = {0, 0, 0, 0};
    size_t head = size < 4 ? size : 4;
    memcpy(sizes, data, head);
    if ((sizes[0] | sizes[1] | sizes[2] | sizes[3]) == 0) {
        sizes[0] = 1; /* reads that never move on would never end */
    }
    size_t tlen = size - head, len = tlen * repeat, newlines = 0;
    char *s = malloc(len + 1);
    if (s == NULL) {
        return;
    }
    for (unsigned r = 0; r < repeat; r++) {
        memcpy(s + r * tlen, data + head, tlen);
    }
    for (size_t i = 0; i < len; i++) {
        newlines += s[i] == '\n';
    }
    struct exec_lines l = {.len = 0};
    struct stream st = {.s = s, .len = len};
    for (size_t o = 0, j = 0; o < len; j++) {
        size_t n = sizes[j % 4] < len - o ? sizes[j % 4] : len - o;
        exec_lines_feed(&l, s + o, n, check_line, &st);
        o += n;
    }
    st.flushing = 1;
    exec_lines_flush(&l, check_line, &st);
    int partial = len > 0 && s[len - 1] != '\n';
    FUZZ_ASSERT(st.lines == newlines + (size_t) partial);
    FUZZ_ASSERT(st.pos == len + (size_t) partial);
    free(s);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) {
        return 0;
    }
    if (data[0] % 2 == 1) {
        lines(data + 1, size - 1, (unsigned) (data[0] >> 1) % 64 + 1);
        return 0;
    }
    if (size == 1) {
        answer("", 0);
        shown("", 0);
        return 0;
    }
    /* a copy of exactly the line's bytes: ASan sees a read past its end */
    char *line = malloc(size - 1);
    if (line == NULL) {
        return 0;
    }
    memcpy(line, data + 1, size - 1);
    answer(line, size - 1);
    shown(line, size - 1);
    free(line);
    return 0;
}
