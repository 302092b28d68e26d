/*
 * backoff.h - retry delays: capped exponential backoff with full jitter,
 * delay = random in [0, min(cap, base * 2^(attempt-1))]. Pure functions
 * plus a thread-safe random source; used by the SQS client, the worker's
 * RETRY handling, reconnects and the master's respawn policy.
 */
#ifndef TWICE_BACKOFF_H
#define TWICE_BACKOFF_H

#include <stdint.h>

/* min(cap, base * 2^(attempt-1)) without overflow; attempt < 1 counts as 1. */
uint64_t backoff_ceiling(uint64_t base, uint64_t cap, int attempt);

/* A full-jitter delay for attempt, drawn with r (a uniform 64-bit value):
 * r mod (ceiling + 1). */
uint64_t backoff_full_jitter(uint64_t base, uint64_t cap, int attempt, uint64_t r);

/* A uniform 64-bit random value (getrandom-seeded, per thread). */
uint64_t backoff_random(void);

/* backoff_full_jitter with backoff_random(). */
uint64_t backoff_delay(uint64_t base, uint64_t cap, int attempt);

#endif
