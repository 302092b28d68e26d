/*
 * arena.h - a bump allocator: many small allocations that all end together
 * (the strings of one received batch, the values of one parsed body), for
 * one malloc where there were dozens and one free at the end. Not for
 * memory that is freed piece by piece, and not thread-safe: one owner.
 */
#ifndef TWICE_ARENA_H
#define TWICE_ARENA_H

#include <stddef.h>

struct arena_chunk;

struct arena {
    struct arena_chunk *head; /* the chunk being filled; older ones follow */
    size_t next;              /* the size of the next chunk */
};

#define ARENA_INIT                                                                                \
    {                                                                                             \
        NULL, 0                                                                                   \
    }

/* Make the first chunk hold at least `bytes` (a hint: later chunks grow).
 * Call before the first allocation; nothing is allocated until then. */
void arena_hint(struct arena *a, size_t bytes);

/* n bytes aligned for any scalar type, valid until arena_free(); NULL when
 * out of memory. n == 0 gives a valid pointer. */
void *arena_alloc(struct arena *a, size_t n);

/* A NUL-terminated copy of s[0..n) (which may hold NUL bytes). */
char *arena_strndup(struct arena *a, const char *s, size_t n);

/* Free every chunk; the arena may be used again. */
void arena_free(struct arena *a);

#endif
