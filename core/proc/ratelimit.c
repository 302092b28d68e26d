/*
 * ratelimit.c - a host's buckets of rate-limit tokens in the shared region
 * (see ratelimit.h). Lock-free: a token is a compare-and-swap on the count, the
 * right to fetch a chunk one on a deadline.
 */
#include "ratelimit.h"

#include "shm.h"

#include <stdio.h>
#include <stdlib.h>

/* How long one process may hold the right to fetch a chunk (a database call
 * that hangs, or a process that died in it): then another takes it over. */
#define RATELIMIT_LEASE_MS 5000

struct shm_limit *
ratelimit_bucket(const char *name)
{
    struct shm_limit *l = shm_limit_slot(name);
    if (l == NULL) {
        l = calloc(1, sizeof(*l)); /* kept for the process's life */
        if (l != NULL) {
            snprintf(l->name, sizeof(l->name), "%s", name);
            l->state = 2;
        }
    }
    return l;
}

int
ratelimit_take(struct shm_limit *l)
{
    long long t = __atomic_load_n(&l->tokens, __ATOMIC_ACQUIRE);
    while (t > 0) {
        if (__atomic_compare_exchange_n(&l->tokens, &t, t - 1, 1, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            return 1;
        }
    }
    return 0;
}

int
ratelimit_has(const struct shm_limit *l)
{
    return __atomic_load_n(&l->tokens, __ATOMIC_ACQUIRE) > 0;
}

void
ratelimit_give(struct shm_limit *l)
{
    __atomic_add_fetch(&l->tokens, 1, __ATOMIC_ACQ_REL);
}

int
ratelimit_lease_begin(struct shm_limit *l, long long now)
{
    if (now < __atomic_load_n(&l->next_lease, __ATOMIC_ACQUIRE)) {
        return 0;
    }
    long long held = __atomic_load_n(&l->leasing, __ATOMIC_ACQUIRE);
    if (held != 0 && held > now) {
        return 0;
    }
    return __atomic_compare_exchange_n(&l->leasing, &held, now + RATELIMIT_LEASE_MS, 0,
                                       __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

void
ratelimit_lease_end(struct shm_limit *l, long long granted, long long next)
{
    if (granted > 0) {
        __atomic_add_fetch(&l->tokens, granted, __ATOMIC_ACQ_REL);
    }
    __atomic_store_n(&l->next_lease, granted > 0 ? 0 : next, __ATOMIC_RELEASE);
    __atomic_store_n(&l->leasing, 0, __ATOMIC_RELEASE);
}

long long
ratelimit_next_lease(const struct shm_limit *l)
{
    return __atomic_load_n(&l->next_lease, __ATOMIC_ACQUIRE);
}
