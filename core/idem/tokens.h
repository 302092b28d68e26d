/*
 * tokens.h - the database side of shared rate limits: one row per limit in
 * the table <table>_rate_limits next to the idempotency table, a token bucket
 * that every twiced host sharing the database leases chunks of tokens from,
 * one statement per chunk (the refill is computed from the time in SQL). The
 * host's share is spent from shared memory (proc/ratelimit.c).
 */
#ifndef TWICE_TOKENS_H
#define TWICE_TOKENS_H

#include <stddef.h>

struct idem_store;

/*
 * Lease up to want tokens of the limit `name` (per_second and burst as
 * configured: the bucket refills at per_second up to burst). *granted gets how
 * many were granted, 0 when the bucket is empty now. Creates the table and the
 * limit's row when missing. Returns 0, or -1 with err (the store's error; see
 * idem_connected for an outage).
 */
int tokens_lease(struct idem_store *s, const char *name, int per_second, int burst, int want,
                 int *granted, char *err, size_t errlen);

#endif
