/*
 * arena.c - the bump allocator of arena.h: chunks that double in size, each
 * filled front to back, all freed at once.
 */
#include "arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_ALIGN     16
#define ARENA_MIN_CHUNK 1024

struct arena_chunk {
    struct arena_chunk *next;
    size_t cap, used;
    _Alignas(ARENA_ALIGN) unsigned char data[];
};

void
arena_hint(struct arena *a, size_t bytes)
{
    if (a->head == NULL && bytes > a->next) {
        a->next = bytes;
    }
}

/* A new chunk of at least n bytes in front of the others. */
static struct arena_chunk *
arena_grow(struct arena *a, size_t n)
{
    size_t cap = a->next > ARENA_MIN_CHUNK ? a->next : ARENA_MIN_CHUNK;
    if (cap < n) {
        cap = n;
    }
    if (cap > SIZE_MAX - sizeof(struct arena_chunk)) {
        return NULL;
    }
    struct arena_chunk *c = malloc(sizeof(*c) + cap);
    if (c == NULL) {
        return NULL;
    }
    c->next = a->head;
    c->cap = cap;
    c->used = 0;
    a->head = c;
    a->next = cap <= SIZE_MAX / 2 ? cap * 2 : cap;
    return c;
}

void *
arena_alloc(struct arena *a, size_t n)
{
    if (n > SIZE_MAX - ARENA_ALIGN) {
        return NULL;
    }
    size_t need = (n + ARENA_ALIGN - 1) & ~(size_t) (ARENA_ALIGN - 1);
    struct arena_chunk *c = a->head;
    if (c == NULL || c->cap - c->used < need) {
        if ((c = arena_grow(a, need)) == NULL) {
            return NULL;
        }
    }
    void *p = c->data + c->used;
    c->used += need;
    return p;
}

char *
arena_strndup(struct arena *a, const char *s, size_t n)
{
    char *p = n < SIZE_MAX ? arena_alloc(a, n + 1) : NULL;
    if (p != NULL) {
        if (n > 0) {
            memcpy(p, s, n);
        }
        p[n] = '\0';
    }
    return p;
}

void
arena_free(struct arena *a)
{
    struct arena_chunk *c = a->head;
    while (c != NULL) {
        struct arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->next = 0;
}
