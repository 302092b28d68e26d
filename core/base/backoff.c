/*
 * backoff.c - capped exponential backoff with full jitter (backoff.h) and
 * the per-thread random source behind it. Not a timer: callers sleep.
 */
#include "backoff.h"

#include <pthread.h>
#include <stdint.h>
#include <sys/random.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* splitmix64 state, one per thread; reseeded in a forked child (the fork
 * handler clears the flag of the one thread a child has) so that children of
 * one process do not draw the same jitter. A flag, not a getpid() per draw:
 * that is a system call on every receive. */
static _Thread_local uint64_t backoff_state;
static _Thread_local int backoff_seeded;
static pthread_once_t backoff_once = PTHREAD_ONCE_INIT;

static void
backoff_forked(void)
{
    backoff_seeded = 0;
}

static void
backoff_register(void)
{
    (void) pthread_atfork(NULL, NULL, backoff_forked);
}

uint64_t
backoff_ceiling(uint64_t base, uint64_t cap, int attempt)
{
    if (attempt < 1) {
        attempt = 1;
    }
    uint64_t c = base < cap ? base : cap;
    for (int i = 1; i < attempt && c < cap; i++) {
        if (c == 0) {
            return 0;
        }
        if (c > cap / 2) {
            return cap;
        }
        c *= 2;
    }
    return c;
}

uint64_t
backoff_full_jitter(uint64_t base, uint64_t cap, int attempt, uint64_t r)
{
    uint64_t ceiling = backoff_ceiling(base, cap, attempt);
    if (ceiling == UINT64_MAX) {
        return r; /* ceiling + 1 would wrap to 0 */
    }
    return r % (ceiling + 1);
}

/* Seed from getrandom(2); if that fails (very old kernel, seccomp), mix the
 * clock, the pid and a stack address: jitter needs spread, not secrecy. */
static void
backoff_seed(void)
{
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) != (ssize_t) sizeof seed) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        seed = (uint64_t) ts.tv_nsec ^ ((uint64_t) ts.tv_sec << 32) ^ ((uint64_t) getpid() << 16) ^
               (uint64_t) (uintptr_t) &ts;
    }
    backoff_state = seed;
    backoff_seeded = 1;
}

uint64_t
backoff_random(void)
{
    if (!backoff_seeded) {
        pthread_once(&backoff_once, backoff_register);
        backoff_seed();
    }
    uint64_t z = (backoff_state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

uint64_t
backoff_delay(uint64_t base, uint64_t cap, int attempt)
{
    return backoff_full_jitter(base, cap, attempt, backoff_random());
}
