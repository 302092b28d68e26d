/*
 * fuzz-http-answer.c - libFuzzer target: what the HTTP plugins (sync,
 * http) read from an endpoint and from a message, as a hostile endpoint or
 * producer could write it: an answer's header lines (http_answer_header)
 * and first bytes (http_answer_body), Retry-After values
 * (http_retry_after), body text made safe for an error (http_sanitize),
 * and URL templates filled with body fields (http_url_check,
 * http_url_build). Not the requests or the pool (request.c, pool.c: the
 * plugins' integration tests).
 *
 * Input: the first byte chooses (mod 4): 0 the rest is header lines (each
 * given with its '\n', as libcurl does) and body chunks; 1 a Retry-After
 * value; 2 text to sanitize into a buffer of (first byte / 4 + 1) bytes;
 * 3 a URL template and the values of its fields, in order, cut at NUL
 * bytes.
 * Promises checked: a header line is taken whole; only a Retry-After
 * (Twice-Retry-After) line changes retry_after (twice_retry_after), to what
 * http_retry_after reads in its whole value, and a status line forgets
 * both; the body keeps the first HTTP_ANSWER_BODY_MAX bytes. A Retry-After
 * value is -1 whatever the time, delta-seconds their value (999999999 at
 * most) whatever the time, and a date the seconds until it (0 once past).
 * Sanitized text is terminated within its cap, UTF-8 without control bytes,
 * and with room byte for byte the input: line breaks and tabs ' ', other
 * control bytes and broken UTF-8 '?'. A filled URL is the template with
 * each field's value percent-encoded, nothing but [A-Za-z0-9-._~] and %XX
 * (so no '/', '?', '#', space or control byte of a value gets in); a
 * missing or empty field rejects the job with an error.
 */
#include "fuzz.h"

#include "http_common.h"

#include <stdarg.h>
#include <strings.h>

#define UNRESERVED "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"

static CURL *curl; /* for curl_easy_escape; made once */

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void) argc;
    (void) argv;
    curl = curl_easy_init();
    return curl != NULL ? 0 : -1;
}

static int
is_line(const char *line, size_t n, const char *name)
{
    size_t nl = strlen(name);
    return n > nl && strncasecmp(line, name, nl) == 0;
}

/* The delay got from header line[0..n) when it is the header called name:
 * what http_retry_after makes of its whole value (up to a NUL) at a time
 * between t0 and t1, when the line was read. */
static void
check_delay(const char *line, size_t n, const char *name, long got, time_t t0, time_t t1)
{
    if (!is_line(line, n, name)) {
        return;
    }
    char *value = strndup(line + strlen(name), n - strlen(name));
    if (value == NULL) {
        return;
    }
    long early = http_retry_after(value, t0), late = http_retry_after(value, t1);
    FUZZ_ASSERT(got == early || got == late || (got < early && got > late));
    free(value);
}

/* One header line as libcurl hands it over (not terminated), then the
 * same bytes as a piece of the body. */
static void
header_line(struct http_answer *a, const char *text, size_t n)
{
    char *line = malloc(n > 0 ? n : 1); /* exactly n bytes: ASan sees a read past them */
    if (line == NULL) {
        return;
    }
    memcpy(line, text, n);
    long ra = a->retry_after, tra = a->twice_retry_after;
    time_t t0 = time(NULL);
    FUZZ_ASSERT(http_answer_header(line, 1, n, a) == n);
    time_t t1 = time(NULL);
    FUZZ_ASSERT(a->retry_after >= -1 && a->twice_retry_after >= -1);
    if (n >= 5 && memcmp(line, "HTTP/", 5) == 0) {
        FUZZ_ASSERT(a->retry_after == -1 && a->twice_retry_after == -1);
    } else {
        FUZZ_ASSERT(is_line(line, n, "Retry-After:") || a->retry_after == ra);
        FUZZ_ASSERT(is_line(line, n, "Twice-Retry-After:") || a->twice_retry_after == tra);
    }
    check_delay(line, n, "Retry-After:", a->retry_after, t0, t1);
    check_delay(line, n, "Twice-Retry-After:", a->twice_retry_after, t0, t1);
    size_t had = a->len;
    FUZZ_ASSERT(http_answer_body(line, 1, n, a) == n);
    size_t want = had + n < HTTP_ANSWER_BODY_MAX ? had + n : HTTP_ANSWER_BODY_MAX;
    FUZZ_ASSERT(a->len == want && memcmp(a->body + had, line, want - had) == 0);
    free(line);
}

static void
headers(const char *text, size_t len)
{
    struct http_answer a;
    http_answer_init(&a);
    FUZZ_ASSERT(a.len == 0 && a.retry_after == -1 && a.twice_retry_after == -1);
    for (size_t o = 0; o < len;) {
        const char *nl = memchr(text + o, '\n', len - o);
        size_t n = nl != NULL ? (size_t) (nl - (text + o)) + 1 : len - o;
        header_line(&a, text + o, n);
        o += n;
    }
}

/* The number value holds when it is delta-seconds (digits between spaces
 * and tabs, up to a line end), capped at 999999999; -1 when it is not. */
static long
delta_seconds(const char *value)
{
    const char *p = value + strspn(value, " \t");
    size_t digits = strspn(p, "0123456789"), rest = strspn(p + digits, " \t");
    if (digits == 0 || strchr("\r\n", p[digits + rest]) == NULL) {
        return -1;
    }
    long v = 0;
    for (size_t i = 0; i < digits; i++) {
        v = v * 10 + (p[i] - '0');
        if (v > 999999999) {
            return 999999999;
        }
    }
    return v;
}

static void
retry_after(const char *value)
{
    const time_t now = 1445412480; /* Wed, 21 Oct 2015 07:28:00 GMT */
    long r = http_retry_after(value, now), earlier = http_retry_after(value, now - 1000);
    long delta = delta_seconds(value);
    FUZZ_ASSERT(r >= -1 && (r == -1) == (earlier == -1));
    if (delta >= 0) {
        FUZZ_ASSERT(r == delta && earlier == delta);
    } else if (r > 0) {
        FUZZ_ASSERT(earlier == r + 1000); /* a date: 1000 s more from 1000 s earlier */
    } else if (r == 0) {
        FUZZ_ASSERT(earlier >= 0 && earlier <= 1000);
    }
}

/* Terminated within cap, UTF-8, no control byte. */
static void
check_sanitized(const char *out, size_t cap)
{
    const char *end = memchr(out, '\0', cap);
    FUZZ_ASSERT(end != NULL);
    size_t n = (size_t) (end - out);
    FUZZ_ASSERT(fuzz_utf8_valid(out, n) && !fuzz_has_control(out, n, ""));
}

static void
sanitize(const char *in, size_t len, size_t cap)
{
    char *whole = malloc(len + 1), *out = malloc(cap);
    if (whole == NULL || out == NULL) {
        free(whole);
        free(out);
        return;
    }
    http_sanitize(in, len, whole, len + 1);
    check_sanitized(whole, len + 1);
    FUZZ_ASSERT(strlen(whole) == len); /* room for all: one byte out per byte in */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char) in[i];
        char want = c == '\r' || c == '\n' || c == '\t' ? ' '
                    : c < 0x20 || c == 0x7f             ? '?'
                                                        : (char) c;
        FUZZ_ASSERT(whole[i] == want || (c >= 0x80 && whole[i] == '?'));
    }
    http_sanitize(in, len, out, cap); /* exactly cap bytes: ASan sees a write past them */
    check_sanitized(out, cap);
    free(whole);
    free(out);
}

/* A job for http_url_build: the values of its fields in the order they are
 * asked for (NULL past the last one), and what was asked. */
struct url_job {
    const struct fuzz_pieces *f;
    size_t asked;
    char names[FUZZ_MAX_PIECES][129];
    int errors;
};

static const char *
field(const twice_job *job, const char *path, size_t *len)
{
    struct url_job *j = (struct url_job *) job;
    FUZZ_ASSERT(strlen(path) <= 128);
    const char *v = 1 + j->asked < j->f->n ? j->f->p[1 + j->asked] : NULL;
    if (j->asked < FUZZ_MAX_PIECES) {
        snprintf(j->names[j->asked], sizeof(j->names[0]), "%s", path);
    }
    j->asked++;
    if (len != NULL && v != NULL) {
        *len = strlen(v);
    }
    return v;
}

static void
error(twice_job *job, const char *fmt, ...)
{
    struct url_job *j = (struct url_job *) job;
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    FUZZ_ASSERT(text[0] != '\0');
    j->errors++;
}

/* url is tmpl with field k's value percent-encoded in place of {name}. */
static void
check_url(const char *tmpl, const char *url, const struct url_job *j)
{
    const char *u = url;
    size_t k = 0;
    for (const char *p = tmpl; *p != '\0'; p++) {
        if (*p != '{') {
            FUZZ_ASSERT(*u++ == *p);
            continue;
        }
        size_t n = strcspn(p + 1, "}");
        FUZZ_ASSERT(k < j->asked && k + 1 < j->f->n);
        FUZZ_ASSERT(strlen(j->names[k]) == n && memcmp(j->names[k], p + 1, n) == 0);
        for (const char *v = j->f->p[1 + k]; *v != '\0'; v++) {
            if (strchr(UNRESERVED, *v) != NULL) {
                FUZZ_ASSERT(*u++ == *v);
            } else {
                char hex[4];
                snprintf(hex, sizeof(hex), "%%%02X", (unsigned char) *v);
                FUZZ_ASSERT(strncmp(u, hex, 3) == 0);
                u += 3;
            }
        }
        k++;
        p += n + 1;
    }
    FUZZ_ASSERT(*u == '\0' && k == j->asked);
}

static void
url(const uint8_t *data, size_t size)
{
    struct fuzz_pieces f;
    if (fuzz_split(data, size, '\0', FUZZ_MAX_PIECES, &f) != 0) {
        return;
    }
    const char *why = http_url_check(f.p[0]);
    if (why != NULL) {
        FUZZ_ASSERT(why[0] != '\0');
        fuzz_pieces_free(&f);
        return;
    }
    twice_api api = {.size = sizeof(api), .field = field, .error = error};
    struct url_job j = {.f = &f};
    char *out = (char *) "not set";
    twice_status st = http_url_build(&api, (twice_job *) &j, curl, f.p[0], &out);
    if (st == TWICE_DONE) {
        FUZZ_ASSERT(out != NULL && j.errors == 0);
        check_url(f.p[0], out, &j);
    } else {
        FUZZ_ASSERT(st == TWICE_REJECT && out == NULL && j.errors == 1 && j.asked > 0);
        FUZZ_ASSERT(j.asked >= f.n || f.p[j.asked][0] == '\0'); /* the last one asked */
    }
    free(out);
    fuzz_pieces_free(&f);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) {
        return 0;
    }
    char *text = fuzz_rest(data, size);
    if (text == NULL) {
        return 0;
    }
    switch (data[0] % 4) {
    case 0:
        headers(text, size - 1);
        break;
    case 1:
        retry_after(text);
        break;
    case 2:
        sanitize(text, size - 1, (size_t) data[0] / 4 + 1);
        break;
    default:
        url(data + 1, size - 1);
        break;
    }
    free(text);
    return 0;
}
