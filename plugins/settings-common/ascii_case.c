/*
 * ascii_case.c - plugin_ascii_strncasecmp and plugin_ascii_isspace
 * (settings_common.h): strncasecmp and isspace of ASCII text that no
 * setlocale() changes. The bundled plugins compare URL
 * schemes and HTTP header names with it; under tr_TR.UTF-8, which any
 * plugin of the worker may set, glibc's strncasecmp("HTTPS://", "https://")
 * and ("TWICE-RETRY-AFTER:", "Twice-Retry-After:") are not 0. The host's
 * own copy is core/text/ascii.h, which plugins cannot include.
 */
#include "settings_common.h"

/* 'A'..'Z' as 'a'..'z', every other byte as it is. */
static int
ascii_fold(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

int
plugin_ascii_strncasecmp(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int ca = ascii_fold((unsigned char) a[i]), cb = ascii_fold((unsigned char) b[i]);
        if (ca != cb || ca == '\0') {
            return ca - cb;
        }
    }
    return 0;
}

int
plugin_ascii_isspace(int c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}
