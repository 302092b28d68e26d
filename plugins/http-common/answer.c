/*
 * answer.c - reading an HTTP answer for the plugins: the first bytes of
 * the body made safe for an error text, Retry-After and Twice-Retry-After
 * (seconds or an HTTP date). What a status means for a job is each
 * plugin's own (sync's verdict.c, http's mapping.c).
 */
#include "http_common.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
http_answer_init(struct http_answer *a)
{
    memset(a, 0, sizeof(*a));
    a->retry_after = -1;
    a->twice_retry_after = -1;
}

size_t
http_answer_body(char *buf, size_t size, size_t nitems, void *arg)
{
    struct http_answer *a = arg;
    size_t n = size * nitems, room = sizeof(a->body) - a->len;
    memcpy(a->body + a->len, buf, n < room ? n : room);
    a->len += n < room ? n : room;
    return n; /* the rest is read and dropped */
}

/* The value of header line buf[0..n) as seconds, when it is the header
 * called name (with its colon); else leave *out alone. */
static void
delay_header(const char *buf, size_t n, const char *name, long *out)
{
    size_t nl = strlen(name);
    if (n > nl && plugin_ascii_strncasecmp(buf, name, nl) == 0) {
        char *value = strndup(buf + nl, n - nl); /* all of it: a cut value reads wrong */
        *out = value != NULL ? http_retry_after(value, time(NULL)) : -1;
        free(value);
    }
}

size_t
http_answer_header(char *buf, size_t size, size_t nitems, void *arg)
{
    struct http_answer *a = arg;
    size_t n = size * nitems;
    if (n >= 5 && strncmp(buf, "HTTP/", 5) == 0) {
        a->retry_after = -1; /* a new response (after a 1xx, say) */
        a->twice_retry_after = -1;
    }
    delay_header(buf, n, "Retry-After:", &a->retry_after);
    delay_header(buf, n, "Twice-Retry-After:", &a->twice_retry_after);
    return n;
}

long
http_retry_after(const char *value, time_t now)
{
    const char *v = value + strspn(value, " \t");
    size_t len = strcspn(v, "\r\n");
    while (len > 0 && (v[len - 1] == ' ' || v[len - 1] == '\t')) {
        len--;
    }
    if (len == 0) {
        return -1;
    }
    if (strspn(v, "0123456789") == len) {
        size_t zeros = strspn(v, "0"); /* "0000000030" is 30 */
        return len - zeros > 9 ? 999999999L : strtol(v, NULL, 10);
    }
    char date[128];
    if (len >= sizeof(date)) {
        return -1; /* no HTTP date is that long: not one cut short to look like one */
    }
    memcpy(date, v, len);
    date[len] = '\0';
    time_t when = curl_getdate(date, NULL);
    if (when == (time_t) -1) {
        return -1;
    }
    return when > now ? (long) (when - now) : 0;
}

/* The length of the well-formed UTF-8 sequence at s (at most n bytes), or
 * 0 when it is not one (overlong forms and surrogates included). */
static size_t
utf8_len(const unsigned char *s, size_t n)
{
    size_t want = s[0] >= 0xc2 && s[0] <= 0xdf   ? 2
                  : s[0] >= 0xe0 && s[0] <= 0xef ? 3
                  : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4
                                                 : 0;
    if (want == 0 || want > n) {
        return 0;
    }
    for (size_t i = 1; i < want; i++) {
        if ((s[i] & 0xc0) != 0x80) {
            return 0;
        }
    }
    if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) ||
        (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90)) {
        return 0;
    }
    return want;
}

void
http_sanitize(const char *in, size_t len, char *out, size_t cap)
{
    const unsigned char *s = (const unsigned char *) in;
    size_t o = 0;
    if (cap == 0) {
        return;
    }
    for (size_t i = 0; i < len && o + 1 < cap;) {
        size_t u = s[i] >= 0x80 ? utf8_len(s + i, len - i) : 0;
        if (u > 0 && o + u < cap) {
            memcpy(out + o, s + i, u);
            o += u;
            i += u;
            continue;
        }
        char c = (char) s[i];
        if (s[i] == '\r' || s[i] == '\n' || s[i] == '\t') {
            c = ' ';
        } else if (s[i] < 0x20 || s[i] >= 0x7f) {
            c = '?';
        }
        out[o++] = c;
        i++;
    }
    out[o] = '\0';
}

void
http_body_shown(const char *in, size_t len, char *out, size_t cap)
{
    size_t start = 0;
    while (start < len && (in[start] == ' ' || (in[start] >= '\t' && in[start] <= '\r'))) {
        start++;
    }
    if (start == len) {
        snprintf(out, cap, " (empty body)");
        return;
    }
    snprintf(out, cap, ": ");
    http_sanitize(in, len, out + 2, cap - 2);
}
