/*
 * hash.c - FNV-1a 64 over C strings (hash.h).
 */
#include "hash.h"

uint64_t
hash_fnv1a(uint64_t h, const char *s)
{
    for (const unsigned char *p = (const unsigned char *) s; *p != '\0'; p++) {
        h = (h ^ *p) * UINT64_C(1099511628211);
    }
    return h;
}
