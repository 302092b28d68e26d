/*
 * url.c - the shape of an http(s) URL (url.h): scheme, characters, host,
 * port. Locale-free; nothing is resolved or fetched.
 */
#include "url.h"

#include "ascii.h"

#include <string.h>

/* Why a character of the URL is refused, or NULL when none is. */
static const char *
url_char_problem(const char *url)
{
    for (const char *p = url; *p != '\0'; p++) {
        unsigned char c = (unsigned char) *p;
        if (c == ' ' || c == '\t') {
            return "contains a space";
        }
        if (c < 0x20 || c == 0x7f) {
            return "contains a control character";
        }
        if (c >= 0x80) {
            return "contains a character that is not ASCII";
        }
    }
    return NULL;
}

/* The port after a host, from its ':' to the authority's end (len bytes):
 * 1-65535 in decimal, as curl takes it. */
static int
url_port_ok(const char *p, size_t len)
{
    long v = 0;
    if (len < 2 || len > 6) {
        return 0;
    }
    for (size_t i = 1; i < len; i++) {
        if (p[i] < '0' || p[i] > '9') {
            return 0;
        }
        v = v * 10 + (p[i] - '0');
    }
    return v >= 1 && v <= 65535;
}

/* Why the authority ([user@]host[:port], len bytes) is refused, or NULL. */
static const char *
url_authority_problem(const char *a, size_t len)
{
    for (size_t i = len; i-- > 0;) { /* a password may hold an '@' */
        if (a[i] == '@') {
            a += i + 1;
            len -= i + 1;
            break;
        }
    }
    const char *port = NULL;
    if (len > 0 && a[0] == '[') {
        const char *close = memchr(a, ']', len);
        if (close == NULL || close == a + 1) {
            return "has an IPv6 host without its closing ']'";
        }
        port = close + 1 < a + len ? close + 1 : NULL;
        if (port != NULL && port[0] != ':') {
            return "has something other than :port after its IPv6 host";
        }
    } else {
        port = memchr(a, ':', len);
    }
    if (len == 0 || a == port) {
        return "has no host";
    }
    if (port != NULL && !url_port_ok(port, (size_t) (a + len - port))) {
        return "has a port that is not a number from 1 to 65535";
    }
    return NULL;
}

const char *
url_problem(const char *url, unsigned flags)
{
    /* the scheme in any case, as RFC 3986 and curl take it */
    const char *s = (flags & URL_SMTP) ? "smtp" : "http";
    size_t skip = ascii_strncasecmp(url, s, 4) != 0            ? 0
                  : ascii_strncasecmp(url + 4, "s://", 4) == 0 ? 8
                  : ascii_strncasecmp(url + 4, "://", 3) == 0  ? 7
                                                               : 0;
    if (skip == 0) {
        return (flags & URL_SMTP) ? URL_SMTP_SCHEME_PROBLEM : URL_SCHEME_PROBLEM;
    }
    const char *why = url_char_problem(url);
    if (why != NULL) {
        return why;
    }
    const char *rest = url + skip;
    size_t alen = strcspn(rest, "/?#");
    if ((why = url_authority_problem(rest, alen)) != NULL) {
        return why;
    }
    rest += alen;
    if ((flags & URL_NO_QUERY) && strpbrk(rest, "?#") != NULL) {
        return "has a query or fragment ('?' or '#')";
    }
    if ((flags & URL_NO_PATH) && rest[strspn(rest, "/")] != '\0') {
        return "has a path after host[:port]";
    }
    return NULL;
}
