/*
 * check.h - the few assertions the C tests need. A failed check prints
 * FILE:LINE and the values, counts, and the test goes on; check_done()
 * returns the exit status (1 when anything failed) and prints a summary.
 * Checks may run on several threads.
 */
#ifndef TWICE_CHECK_H
#define TWICE_CHECK_H

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* Atomic: a test may check from several threads at once. */
static atomic_int check_failures;
static atomic_int check_count;

#define CHECK(cond)                                                                               \
    do {                                                                                          \
        check_count++;                                                                            \
        if (!(cond)) {                                                                            \
            check_failures++;                                                                     \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);              \
        }                                                                                         \
    } while (0)

#define CHECK_INT(a, b)                                                                           \
    do {                                                                                          \
        long long check_a_ = (long long) (a), check_b_ = (long long) (b);                         \
        check_count++;                                                                            \
        if (check_a_ != check_b_) {                                                               \
            check_failures++;                                                                     \
            fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", __FILE__, __LINE__, #a, #b, \
                    check_a_, check_b_);                                                          \
        }                                                                                         \
    } while (0)

#define CHECK_STR(a, b)                                                                           \
    do {                                                                                          \
        const char *check_a_ = (a), *check_b_ = (b);                                              \
        check_count++;                                                                            \
        if (check_a_ == NULL || check_b_ == NULL || strcmp(check_a_, check_b_) != 0) {            \
            check_failures++;                                                                     \
            fprintf(stderr, "%s:%d: %s == %s failed:\n  got:  \"%s\"\n  want: \"%s\"\n",          \
                    __FILE__, __LINE__, #a, #b, check_a_ ? check_a_ : "(null)",                   \
                    check_b_ ? check_b_ : "(null)");                                              \
        }                                                                                         \
    } while (0)

/* a contains b as a substring */
#define CHECK_CONTAINS(a, b)                                                                      \
    do {                                                                                          \
        const char *check_a_ = (a), *check_b_ = (b);                                              \
        check_count++;                                                                            \
        if (check_a_ == NULL || strstr(check_a_, check_b_) == NULL) {                             \
            check_failures++;                                                                     \
            fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", __FILE__, __LINE__,        \
                    check_a_ ? check_a_ : "(null)", check_b_);                                    \
        }                                                                                         \
    } while (0)

static inline int
check_done(const char *name)
{
    int failures = atomic_load(&check_failures);
    printf("%s: %d checks, %d failed\n", name, atomic_load(&check_count), failures);
    return failures ? 1 : 0;
}

#endif
