/*
 * storehealth.c - the store's health record in the shared region (see
 * storehealth.h): its lock, and copies in and out of it.
 */
#include "storehealth.h"

#include "clock.h"
#include "hash.h"
#include "shm.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

uint64_t
storehealth_key(const char *dsn, const char *table)
{
    uint64_t h = hash_fnv1a(hash_fnv1a(HASH_FNV1A_INIT, dsn), "\n");
    h = hash_fnv1a(h, table != NULL ? table : "");
    return h != 0 ? h : 1;
}

/* How long a reader or writer waits for the record's lock (ms). */
#define STOREHEALTH_LOCK_MS 50

/* The record, locked; NULL without a region or when its lock was not had
 * within about STOREHEALTH_LOCK_MS (a holder stopped by a signal, say).
 * Tried each millisecond rather than waited on with a deadline: the record
 * is held for a copy's time, and ThreadSanitizer does not see a lock that
 * pthread_mutex_timedlock took from a dead holder (EOWNERDEAD), where it
 * sees trylock's. */
static struct storehealth_region *
lock_record(void)
{
    struct shm_region *region = shm_region();
    if (region == NULL) {
        return NULL;
    }
    struct storehealth_region *r = &region->storehealth;
    int rc = pthread_mutex_trylock(&r->lock);
    for (int waited = 0; rc == EBUSY && waited < STOREHEALTH_LOCK_MS; waited++) {
        struct timespec ms = {0, 1000000L};
        nanosleep(&ms, NULL);
        rc = pthread_mutex_trylock(&r->lock);
    }
    if (rc == EOWNERDEAD) { /* its holder died mid-copy: the next write repairs it */
        rc = pthread_mutex_consistent(&r->lock);
    }
    return rc == 0 ? r : NULL;
}

static void
unlock_record(struct storehealth_region *r)
{
    pthread_mutex_unlock(&r->lock);
}

void
storehealth_begin(uint64_t store)
{
    struct storehealth_region *r = lock_record();
    if (r != NULL) {
        r->store = store;
        r->ok = 1; /* until a check says otherwise: the workers' readiness covers the start */
        r->answered_ms = clock_mono_ms();
        r->why[0] = '\0';
        r->id_len = 0;
        r->relearn = 0;
        unlock_record(r);
    }
}

void
storehealth_record(uint64_t store, int ok, const char *why)
{
    struct storehealth_region *r = lock_record();
    if (r != NULL) {
        if (r->store == store) {
            r->ok = ok;
            snprintf(r->why, sizeof(r->why), "%s", ok ? "" : why);
            if (ok) {
                r->answered_ms = clock_mono_ms();
            }
        }
        unlock_record(r);
    }
}

void
storehealth_learned(uint64_t store, const void *id, size_t len)
{
    struct storehealth_region *r = lock_record();
    if (r != NULL) {
        if (r->store == store && len > 0 && len <= sizeof(r->id)) {
            memcpy(r->id, id, len);
            r->id_len = len;
        }
        unlock_record(r);
    }
}

int
storehealth_take_relearn(void)
{
    struct storehealth_region *r = lock_record();
    int asked = 0;
    if (r != NULL) {
        asked = r->relearn;
        r->relearn = 0;
        unlock_record(r);
    }
    return asked;
}

int
storehealth_ok(uint64_t store, char *out, size_t cap)
{
    struct storehealth_region *r = lock_record();
    if (r == NULL) {
        return 1;
    }
    int ok = 1;
    if (r->store == store) {
        long long quiet = clock_mono_ms() - r->answered_ms;
        ok = r->ok && quiet < STOREHEALTH_STALE_MS;
        if (!r->ok) {
            snprintf(out, cap, "idempotency store does not answer: %s", r->why);
        } else if (!ok) {
            snprintf(out, cap, "idempotency store has not answered for %llds", quiet / 1000);
        }
    }
    unlock_record(r);
    return ok;
}

int
storehealth_identity(uint64_t store, void *out, size_t len)
{
    struct storehealth_region *r = lock_record();
    if (r == NULL) {
        return -1;
    }
    int known = r->store == store && r->id_len == len;
    if (known) {
        memcpy(out, r->id, len);
    }
    unlock_record(r);
    return known ? 0 : -1;
}

void
storehealth_relearn(void)
{
    struct storehealth_region *r = lock_record();
    if (r != NULL) {
        r->relearn = 1;
        unlock_record(r);
    }
}
