/*
 * test-idem-text.c - the text the idempotency store makes of libpq's
 * messages: one line (libpq ends them in newlines and continues them on
 * lines that start with a tab), each run of white space one space, none at
 * either end. A log line or an alert never carries a libpq line break or
 * "refused  Is the server" with two spaces.
 */
#include "check.h"
#include "idem_internal.h"

#include <stdio.h>

static void
flat(const char *in, const char *want)
{
    char s[256];
    snprintf(s, sizeof(s), "%s", in);
    idem_flatten(s);
    CHECK_STR(s, want);
}

int
main(void)
{
    flat("connection to server at \"127.0.0.1\", port 1 failed: Connection refused\n"
         "\tIs the server running on that host and accepting TCP/IP connections?\n",
         "connection to server at \"127.0.0.1\", port 1 failed: Connection refused Is the "
         "server running on that host and accepting TCP/IP connections?");
    flat("ERROR:  relation \"t\" does not exist\r\n", "ERROR: relation \"t\" does not exist");
    flat("  \t\n", "");
    flat("", "");
    flat("\none", "one");
    flat("a\n\n\n\tb", "a b");
    flat("unchanged text", "unchanged text");
    return check_done("test-idem-text");
}
