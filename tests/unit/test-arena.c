/*
 * test-arena.c - the bump allocator under a batch's strings and a body's
 * values: aligned blocks that never move, copies that keep NUL bytes, big
 * blocks past the chunk size, and reuse after arena_free. Leaks and
 * overruns are the ASan build's to catch.
 */
#include "check.h"

#include "arena.h"

#include <stdint.h>
#include <stdlib.h>

static void
test_blocks(void)
{
    struct arena a = ARENA_INIT;
    char *first = arena_alloc(&a, 3);
    CHECK(first != NULL);
    memcpy(first, "ab", 3);
    void *blocks[200];
    for (size_t i = 0; i < 200; i++) {
        blocks[i] = arena_alloc(&a, i * 7 + 1);
        CHECK(blocks[i] != NULL && (uintptr_t) blocks[i] % 16 == 0);
        memset(blocks[i], (int) i, i * 7 + 1);
    }
    for (size_t i = 0; i < 200; i++) {
        const unsigned char *b = blocks[i];
        CHECK(b[0] == (unsigned char) i && b[i * 7] == (unsigned char) i);
    }
    CHECK_STR(first, "ab"); /* earlier blocks never move */
    void *big = arena_alloc(&a, 1u << 20);
    CHECK(big != NULL);
    memset(big, 1, 1u << 20);
    CHECK(arena_alloc(&a, 0) != NULL);
    CHECK(arena_alloc(&a, SIZE_MAX - 4) == NULL);
    arena_free(&a);
    CHECK(a.head == NULL);
    CHECK(arena_alloc(&a, 10) != NULL); /* usable again */
    arena_free(&a);
}

static void
test_strndup(void)
{
    struct arena a = ARENA_INIT;
    arena_hint(&a, 64 * 1024);
    char *s = arena_strndup(&a, "x\0y", 3);
    CHECK(s != NULL && memcmp(s, "x\0y", 4) == 0);
    char *e = arena_strndup(&a, NULL, 0);
    CHECK_STR(e, "");
    arena_free(&a);
}

int
main(void)
{
    test_blocks();
    test_strndup();
    return check_done("test-arena");
}
