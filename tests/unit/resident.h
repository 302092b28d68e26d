/*
 * resident.h - how many pages of a range are resident in memory (mincore),
 * for the unit tests that check what of the shared region costs RSS.
 */
#ifndef TWICE_TEST_RESIDENT_H
#define TWICE_TEST_RESIDENT_H

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* Pages of [p, p + len) resident in memory, or -1. */
static inline long
resident_pages(const void *p, size_t len)
{
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t start = (uintptr_t) p & ~((uintptr_t) page - 1);
    size_t n = ((uintptr_t) p + len - start + (size_t) page - 1) / (size_t) page;
    unsigned char *vec = malloc(n);
    if (vec == NULL || mincore((void *) start, n * (size_t) page, vec) != 0) {
        free(vec);
        return -1;
    }
    long count = 0;
    for (size_t i = 0; i < n; i++) {
        count += vec[i] & 1;
    }
    free(vec);
    return count;
}

#endif
