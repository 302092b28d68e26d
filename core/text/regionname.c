/*
 * regionname.c - the shape of an AWS region's name (regionname.h).
 * Locale-free.
 */
#include "regionname.h"

#include <string.h>

int
regionname_ok(const char *r)
{
    size_t n = strlen(r);
    return n > 0 && n < 64 && strspn(r, "abcdefghijklmnopqrstuvwxyz0123456789-") == n;
}
