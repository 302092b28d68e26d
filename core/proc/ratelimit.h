/*
 * ratelimit.h - a host's side of a shared rate limit: the bucket of tokens
 * its processes spend from, in the shared region, with atomics only. Tokens
 * come from PostgreSQL in chunks (idem/tokens.c); this file only says who
 * takes one and who fetches the next chunk. Waiting and the database are the
 * worker's (worker/throttle.c).
 */
#ifndef TWICE_RATELIMIT_H
#define TWICE_RATELIMIT_H

struct shm_limit;

/* The host's bucket of the limit `name`, created empty on first use. Without a
 * shared region, or when its table is full, a bucket of this process alone
 * (still correct: every token comes from the database; only more round trips).
 * Never NULL but out of memory; the bucket lives as long as the process. */
struct shm_limit *ratelimit_bucket(const char *name);

/* Take one token: 1 when taken, 0 when the bucket is empty. */
int ratelimit_take(struct shm_limit *l);
/* Whether the bucket holds a token now (a look: another may take it first). */
int ratelimit_has(const struct shm_limit *l);
/* Put back a token just taken for a job that does not start after all
 * (another of its limits was empty): it is the next taker's, never lost. */
void ratelimit_give(struct shm_limit *l);

/* Whether the caller is to fetch a chunk now (now: monotonic ms): 1 for one
 * caller on the machine at a time, and not before the bucket's next_lease. A
 * caller that got 1 must call ratelimit_lease_end; one that died meanwhile is
 * taken over after 5 s. */
int ratelimit_lease_begin(struct shm_limit *l, long long now);
/* Add what the database granted; next: when to ask again if it granted none. */
void ratelimit_lease_end(struct shm_limit *l, long long granted, long long next);

/* Monotonic ms from which asking again may be worth it (0: now). */
long long ratelimit_next_lease(const struct shm_limit *l);

#endif
