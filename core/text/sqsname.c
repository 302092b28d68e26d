/*
 * sqsname.c - SQS's rules for a message attribute name and a queue URL's
 * shape (sqsname.h). Locale-free: ASCII classes only.
 */
#include "sqsname.h"

#include "ascii.h"
#include "url.h"

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
