/*
 * fuzz.h - what every fuzz target shares: carving one libFuzzer input into
 * NUL-terminated pieces, and FUZZ_ASSERT, which turns a broken promise of
 * the code under test into a crash that libFuzzer reports and keeps. Not a
 * test framework: each target stays one LLVMFuzzerTestOneInput.
 */
#ifndef TWICE_FUZZ_H
#define TWICE_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The entry points libFuzzer (or replay.c) calls. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_MAX_PIECES 8

#define FUZZ_ASSERT(cond)                                                                         \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            fprintf(stderr, "%s:%d: broken promise: %s\n", __FILE__, __LINE__, #cond);            \
            abort();                                                                              \
        }                                                                                         \
    } while (0)

/* An input cut into pieces; every piece is NUL-terminated and may itself
 * hold NUL bytes (len says how long it really is). */
struct fuzz_pieces {
    char *mem; /* one allocation for all pieces; owned */
    const char *p[FUZZ_MAX_PIECES];
    size_t len[FUZZ_MAX_PIECES];
    size_t n;
};

/*
 * Cut data at the first (max - 1) sep bytes: piece max-1 is all the rest,
 * sep bytes included. Pieces the input does not reach are "" (n says how
 * many were present). Returns 0, or -1 when out of memory.
 */
static inline int
fuzz_split(const uint8_t *data, size_t size, char sep, size_t max, struct fuzz_pieces *f)
{
    size_t start = 0, o = 0;

    memset(f, 0, sizeof(*f));
    if (max > FUZZ_MAX_PIECES) {
        max = FUZZ_MAX_PIECES;
    }
    f->mem = malloc(size + max); /* the bytes plus one NUL per piece */
    if (f->mem == NULL) {
        return -1;
    }
    for (size_t k = 0; k < max; k++) {
        size_t end = start;
        if (k + 1 < max) {
            while (end < size && data[end] != (uint8_t) sep) {
                end++;
            }
        } else {
            end = size;
        }
        if (start <= size) {
            f->n++;
        }
        size_t n = start <= size ? end - start : 0;
        if (n > 0) {
            memcpy(f->mem + o, data + start, n);
        }
        f->p[k] = f->mem + o;
        f->len[k] = n;
        f->mem[o + n] = '\0';
        o += n + 1;
        start = end + 1;
    }
    return 0;
}

static inline void
fuzz_pieces_free(struct fuzz_pieces *f)
{
    free(f->mem);
    memset(f, 0, sizeof(*f));
}

/* For targets whose first byte picks a mode: the rest of the input (size - 1
 * bytes, size > 0) as a malloc'd string, terminated after it, since the
 * parsers take lengths and the checks read strings. NULL without memory. */
static inline char *
fuzz_rest(const uint8_t *data, size_t size)
{
    char *text = malloc(size);
    if (text != NULL) {
        memcpy(text, data + 1, size - 1);
        text[size - 1] = '\0';
    }
    return text;
}

/* 1 when s (n bytes) holds an ASCII control byte other than those in allow. */
static inline int
fuzz_has_control(const char *s, size_t n, const char *allow)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char) s[i];
        if ((c < 0x20 || c == 0x7f) && (c == 0 || strchr(allow, c) == NULL)) {
            return 1;
        }
    }
    return 0;
}

/* 1 when s (n bytes) is well-formed UTF-8: no overlong forms, surrogates or
 * code points past U+10FFFF (for targets that do not link core's utf8.c). */
static inline int
fuzz_utf8_valid(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *) s;
    for (size_t i = 0; i < n;) {
        unsigned char c = u[i], d = i + 1 < n ? u[i + 1] : 0;
        size_t want = c < 0x80                 ? 1
                      : c >= 0xc2 && c <= 0xdf ? 2
                      : c >= 0xe0 && c <= 0xef ? 3
                      : c >= 0xf0 && c <= 0xf4 ? 4
                                               : 0;
        if (want == 0 || want > n - i || (c == 0xe0 && d < 0xa0) || (c == 0xed && d > 0x9f) ||
            (c == 0xf0 && d < 0x90) || (c == 0xf4 && d > 0x8f)) {
            return 0;
        }
        for (size_t k = 1; k < want; k++) {
            if ((u[i + k] & 0xc0) != 0x80) {
                return 0;
            }
        }
        i += want;
    }
    return 1;
}

#endif
