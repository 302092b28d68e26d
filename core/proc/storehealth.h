/*
 * storehealth.h - the idempotency store's health as its check last saw it,
 * in the shared region (shm.h): written by the thread that checks
 * (duty/health.c), read by whoever serves /readyz and checks a reload's dsn
 * (the master), so that the two need not be one process. Not the check
 * itself, nor what /readyz makes of it.
 *
 * A record is for one store, named by storehealth_key of its dsn and table;
 * a reader asking about another store (a reload changed the dsn and the
 * check for it has not begun) learns nothing, as when no check runs.
 * Without a mapped region (tools, unit tests) nothing is known. The record
 * itself is struct storehealth_region in shm.h.
 */
#ifndef TWICE_STOREHEALTH_H
#define TWICE_STOREHEALTH_H

#include <stddef.h>
#include <stdint.h>

/* No answer for this long, three checks' time: not healthy. A store that
 * froze mid-run shows within it, about when the workers' claims on the
 * default queue (10 s: lifecycle_answer_ms) give up; a SELECT 1 or a
 * connect (connect_timeout is 10 s) that takes this long is not a server a
 * worker can do its job with. */
#define STOREHEALTH_STALE_MS 9000

/* The name of the store at dsn, table (never 0). */
uint64_t storehealth_key(const char *dsn, const char *table);

/* The checking thread: a check of store begins (healthy until a check says
 * otherwise, answered now, no identity); a check's outcome; the identity
 * learned (len <= SHM_STORE_ID_MAX); whether a relearn was asked (taken). */
void storehealth_begin(uint64_t store);
void storehealth_record(uint64_t store, int ok, const char *why);
void storehealth_learned(uint64_t store, const void *id, size_t len);
int storehealth_take_relearn(void);

/* 1 when store answered its last check, recently, or nothing is known of
 * it; else 0 and why in out ("idempotency store does not answer: ..."). */
int storehealth_ok(uint64_t store, char *out, size_t cap);

/* The identity learned of store: 0 with len bytes in out, or -1 when none
 * was (or another store is checked). */
int storehealth_identity(uint64_t store, void *out, size_t len);

/* A generation got ready, so its workers have created the keys table: the
 * check learns the identity again when it named no table. */
void storehealth_relearn(void);

#endif
