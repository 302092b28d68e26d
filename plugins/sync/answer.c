/*
 * answer.c - what the sync endpoint's answer means for the job: status
 * classes, Retry-After (seconds or an HTTP date), and the first bytes of
 * the body made safe for an error text. Not the request (sync.c).
 */
#include "sync.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void
answer_init(struct answer *a)
{
    memset(a, 0, sizeof(*a));
    a->retry_after = -1;
}

size_t
answer_body(char *buf, size_t size, size_t nitems, void *arg)
{
    struct answer *a = arg;
    size_t n = size * nitems, room = sizeof(a->body) - a->len;
    memcpy(a->body + a->len, buf, n < room ? n : room);
    a->len += n < room ? n : room;
    return n; /* the rest is read and dropped */
}

size_t
answer_header(char *buf, size_t size, size_t nitems, void *arg)
{
    struct answer *a = arg;
    size_t n = size * nitems;
    char value[128];
    if (n >= 5 && strncmp(buf, "HTTP/", 5) == 0) {
        a->retry_after = -1; /* a new response (after a 1xx, say) */
    } else if (n > 12 && strncasecmp(buf, "Retry-After:", 12) == 0) {
        size_t len = n - 12 < sizeof(value) - 1 ? n - 12 : sizeof(value) - 1;
        memcpy(value, buf + 12, len);
        value[len] = '\0';
        a->retry_after = answer_retry_after(value, time(NULL));
    }
    return n;
}

long
answer_retry_after(const char *value, time_t now)
{
    char v[128];
    size_t start = strspn(value, " \t"), len = strcspn(value + start, "\r\n");
    snprintf(v, sizeof(v), "%.*s", (int) len, value + start);
    len = strlen(v);
    while (len > 0 && (v[len - 1] == ' ' || v[len - 1] == '\t')) {
        v[--len] = '\0';
    }
    if (len == 0) {
        return -1;
    }
    if (strspn(v, "0123456789") == len) {
        return len > 9 ? 999999999L : strtol(v, NULL, 10);
    }
    time_t when = curl_getdate(v, NULL);
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
answer_sanitize(const char *in, size_t len, char *out, size_t cap)
{
    const unsigned char *s = (const unsigned char *) in;
    size_t o = 0;
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
    out[o < cap ? o : cap - 1] = '\0';
}

twice_status
answer_verdict(const twice_api *api, twice_job *job, long status, const struct answer *a)
{
    char body[ANSWER_BODY_MAX * 4 + 1];
    answer_sanitize(a->body, a->len, body, sizeof(body));
    if (status >= 200 && status <= 299) {
        api->log(job, TWICE_LOG_DEBUG, "HTTP %ld", status);
        return TWICE_DONE;
    }
    if (status == 409) {
        api->log(job, TWICE_LOG_INFO, "HTTP 409: the endpoint has this record already (done)");
        return TWICE_DONE;
    }
    if (status == 408 || status == 429 || (status >= 500 && status <= 599)) {
        api->error(job, "HTTP %ld: %s", status, body);
        if (a->retry_after >= 0) {
            api->retry_after(job, (unsigned) (a->retry_after > 43200 ? 43200 : a->retry_after));
        }
        return TWICE_RETRY;
    }
    if (status >= 400 && status <= 499) {
        api->error(job, "HTTP %ld: %s", status, body);
        return TWICE_REJECT;
    }
    api->error(job, "HTTP %ld: unexpected answer (redirects are not followed: check the url)",
               status);
    return TWICE_RETRY;
}
