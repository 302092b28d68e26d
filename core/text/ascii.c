/*
 * ascii.c - locale-free case-insensitive comparison of ASCII text (ascii.h):
 * the C locale's strcasecmp, whatever setlocale() a plugin called.
 */
#include "ascii.h"

/* Equal bytes are taken without folding: the common case (an MD5 checked
 * against the one SQS sent, both lower-case) costs a compare per byte. */
int
ascii_strncasecmp(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (a[i] == b[i]) {
            if (a[i] == '\0') {
                return 0;
            }
            continue;
        }
        int ca = ascii_tolower((unsigned char) a[i]);
        int cb = ascii_tolower((unsigned char) b[i]);
        if (ca != cb || ca == '\0') {
            return ca - cb;
        }
    }
    return 0;
}

int
ascii_strcasecmp(const char *a, const char *b)
{
    return ascii_strncasecmp(a, b, (size_t) -1);
}
