/*
 * sqsname.c - SQS's rules for a message attribute name and a queue URL's
 * shape (sqsname.h). Locale-free: ASCII classes only.
 */
#include "sqsname.h"

#include "ascii.h"
#include "url.h"

#include <stdio.h>
#include <string.h>

/*
 * SQS's rule for a message attribute name (SendMessage's
 * MessageAttribute.N.Name; the SQS Developer Guide, "Amazon SQS message
 * attributes", and the API reference's MessageAttributeNames): up to 256
 * characters of A-Z a-z 0-9 '_' '-' '.'; case-sensitive; not starting with
 * the reserved prefixes "AWS." or "Amazon." in any case; not starting or
 * ending with '.', and no ".." in it.
 */
int
sqs_attr_name_ok(const char *name, size_t n)
{
    static const char allowed[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.";
    if (n == 0 || n > 256 || name[0] == '.' || name[n - 1] == '.') {
        return 0;
    }
    if ((n >= 4 && ascii_strncasecmp(name, "aws.", 4) == 0) ||
        (n >= 7 && ascii_strncasecmp(name, "amazon.", 7) == 0)) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (name[i] == '\0' || strchr(allowed, name[i]) == NULL ||
            (name[i] == '.' && i + 1 < n && name[i + 1] == '.')) {
            return 0;
        }
    }
    return 1;
}

/* A queue URL ends in the queue's name (ACCOUNT/NAME on AWS, and on the
 * emulators): 1-80 of A-Z a-z 0-9 _ -, a FIFO queue's with .fifo. */
const char *
sqs_queue_url_problem(const char *url)
{
    const char *why = url_problem(url, URL_NO_QUERY);
    if (why != NULL) {
        return why;
    }
    const char *host = strstr(url, "://") + 3;
    const char *path = host + strcspn(host, "/");
    const char *name = strrchr(path, '/');
    size_t n = name != NULL ? strlen(++name) : 0;
    if (n >= 5 && strcmp(name + n - 5, ".fifo") == 0) {
        n -= 5;
    }
    if (n == 0 || n > 80 ||
        strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != n) {
        return "does not end in a queue name (/NAME: 1-80 of A-Z a-z 0-9 _ -, and .fifo for "
               "a FIFO queue)";
    }
    return NULL;
}

/* url's scheme and host[:port] in the form sqs_queue_url_same compares, into
 * out (cap bytes): lowercase, without a default port, the legacy AWS host as
 * the current one. *path is set to the rest (from its first '/'). 0, or -1
 * when it has no scheme or does not fit (then compared as written: the
 * checks may compare a URL that was refused already). */
static int
queue_url_origin(const char *url, char *out, size_t cap, const char **path)
{
    const char *host = strstr(url, "://");
    if (host == NULL) {
        return -1;
    }
    host += 3;
    *path = host + strcspn(host, "/");
    size_t n = (size_t) (*path - url);
    if (n >= cap) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        out[i] = (char) ascii_tolower((unsigned char) url[i]);
    }
    out[n] = '\0';
    static const char *const defaults[] = {"http://", ":80", "https://", ":443"};
    for (size_t i = 0; i < 4; i += 2) {
        size_t s = strlen(defaults[i]), p = strlen(defaults[i + 1]);
        if (strncmp(out, defaults[i], s) == 0 && n > s + p &&
            strcmp(out + n - p, defaults[i + 1]) == 0) {
            out[n -= p] = '\0';
        }
    }
    const char *h = strstr(out, "://") + 3;
    static const char legacy[] = ".queue.amazonaws.com";
    size_t hl = strlen(h), ll = strlen(legacy);
    char region[64];
    if (strcmp(h, "queue.amazonaws.com") == 0) {
        snprintf(region, sizeof(region), "us-east-1");
    } else if (hl > ll && hl - ll < sizeof(region) && strcmp(h + hl - ll, legacy) == 0 &&
               memchr(h, '.', hl - ll) == NULL) {
        snprintf(region, sizeof(region), "%.*s", (int) (hl - ll), h);
    } else {
        return 0;
    }
    size_t scheme = (size_t) (h - out);
    if (snprintf(out + scheme, cap - scheme, "sqs.%s.amazonaws.com", region) >=
        (int) (cap - scheme)) {
        return -1;
    }
    return 0;
}

int
sqs_queue_url_same(const char *a, const char *b)
{
    char oa[512], ob[512];
    const char *pa, *pb;
    if (queue_url_origin(a, oa, sizeof(oa), &pa) != 0 ||
        queue_url_origin(b, ob, sizeof(ob), &pb) != 0) {
        return strcmp(a, b) == 0;
    }
    return strcmp(oa, ob) == 0 && strcmp(pa, pb) == 0;
}
