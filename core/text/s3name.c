/*
 * s3name.c - S3's rule for a bucket name (s3name.h). Pure: libc and the
 * locale-free character classes of ascii.h.
 */
#include "s3name.h"

#include "ascii.h"

#include <string.h>

int
s3_valid_bucket(const char *b)
{
    size_t n = b != NULL ? strlen(b) : 0;
    int digits_and_dots = 1;
    if (n < 3 || n > 63 || !ascii_isalnum((unsigned char) b[0]) ||
        !ascii_isalnum((unsigned char) b[n - 1])) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char) b[i];
        int digit = ch >= '0' && ch <= '9';
        if (!(ascii_islower(ch) || digit || ch == '.' || ch == '-') ||
            (ch == '.' && b[i + 1] == '.')) {
            return 0;
        }
        digits_and_dots &= digit || ch == '.';
    }
    return !digits_and_dots; /* 192.168.5.4 is an address, not a bucket */
}
