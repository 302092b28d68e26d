/*
 * sqsname.c - SQS's rules for a message attribute name and a queue URL's
 * shape (sqsname.h). Locale-free: ASCII classes only.
 */
#include "sqsname.h"

#include "ascii.h"

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

const char *
sqs_queue_url_problem(const char *url)
{
    size_t skip = strncmp(url, "https://", 8) == 0 ? 8 : strncmp(url, "http://", 7) == 0 ? 7 : 0;
    if (skip == 0) {
        return "must start with http:// or https://";
    }
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
    /* The authority: [user@]host[:port]; its host must not be empty. */
    const char *host = url + skip;
    size_t alen = strcspn(host, "/?#");
    const char *at = memchr(host, '@', alen);
    if (at != NULL) {
        alen -= (size_t) (at + 1 - host);
        host = at + 1;
    }
    return alen > 0 && host[0] != ':' ? NULL : "has no host";
}
