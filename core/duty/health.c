/*
 * health.c - the store's health for /readyz (see health.h). One thread, one
 * connection (reopened when it breaks), SELECT 1 every HEALTH_EVERY_MS. A
 * check that hangs (a server that accepts but never answers) is caught too:
 * an answer older than HEALTH_STALE_MS counts as none. Changes of state are
 * logged once each. After each (re)connect it also learns, once, which keys
 * the connection reaches, for a reload's check of its dsn. What it finds
 * goes to the shared region (proc/storehealth.c), where /readyz and the
 * reload's check read it, whatever process they run in.
 */
#include "health.h"

#include "buf.h"
#include "clock.h"
#include "idem.h"
#include "log.h"
#include "shm.h"
#include "stopwait.h"
#include "storehealth.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HEALTH_EVERY_MS 3000 /* between checks; storehealth.h has when no answer is stale */

struct health {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    char *dsn;
    char *table;
    uint64_t key; /* storehealth_key(dsn, table): its record in the shared region */
    /* The thread's own. */
    int ok;                  /* the last check's outcome, for the log of its changes */
    struct idem_identity id; /* what the connection reached, once learned */
    struct idem_store *store;
    int id_asked; /* the identity was read on this connection */
    struct stopwait wait;
};

static int
stopping(struct health *h)
{
    pthread_mutex_lock(&h->mu);
    int stop = h->stop;
    pthread_mutex_unlock(&h->mu);
    return stop;
}

/* The store's tick (stopwait.h): a check in flight at a stop is given up at
 * once (it only reads), so that the stop's join is not held by a frozen
 * server. */
static int
health_wait_tick(void *arg)
{
    struct health *h = arg;
    return stopwait_over(&h->wait, stopping(h), 0);
}

/* Read what a new connection reaches and publish it (storehealth_identity).
 * 0, or -1 when it could not be read: what was known is kept, and the next
 * check asks again. */
static int
learn_identity(struct health *h)
{
    struct idem_identity id;
    char err[512];
    if (idem_identity(h->store, &id, err, sizeof(err)) != 0) {
        return -1;
    }
    _Static_assert(sizeof(id) <= SHM_STORE_ID_MAX, "the shared record holds an identity");
    h->id = id;
    storehealth_learned(h->key, &id, sizeof(id));
    return 0;
}

/* One check: 0 when the store answered, else -1 with why. A connection that
 * broke since the last check (a terminated backend, a pooler or proxy that
 * dropped it, a restart already over) says nothing about the store now: the
 * check is asked again once on a new connection, so that only a store that
 * does not answer a new connection either counts as down (not while
 * stopping: the check given up by the stop is not asked again). */
static int
check(struct health *h, char *why, size_t cap)
{
    char err[512];
    int rc;
    int reused = idem_connected(h->store); /* connected before this check */
    rc = stopwait_ensure(&h->store, h->dsn, h->table, "health", NULL, health_wait_tick, h, err,
                         sizeof(err));
    if (rc == 0) {
        rc = idem_ping(h->store, err, sizeof(err));
    }
    int fresh = !reused; /* a new connection may reach another server (failover) */
    if (rc != 0 && reused && !idem_connected(h->store) && !stopping(h) &&
        idem_reconnect(h->store, err, sizeof(err)) == 0) {
        rc = idem_ping(h->store, err, sizeof(err));
        fresh = 1;
    }
    if (storehealth_take_relearn() && h->id.table_oid[0] == '\0') {
        fresh = 1; /* a generation got ready: the keys table its workers made is known */
    }
    if (fresh) {
        h->id_asked = 0; /* a new connection may reach another server (failover) */
    }
    if (rc != 0) {
        snprintf(why, cap, "%s", err);
    } else if (!h->id_asked) {
        /* Once per connection, not at every check until the keys table exists
         * (the first workers create it after this connect, or never: a role
         * without CREATE, a standby); once more when a generation got ready
         * (storehealth_relearn), so that a table they created is known. */
        h->id_asked = learn_identity(h) == 0;
    }
    return rc;
}

static void
record(struct health *h, int ok, const char *why)
{
    int was = h->ok;
    h->ok = ok;
    storehealth_record(h->key, ok, why);
    if (was && !ok) {
        log_warn("the idempotency store does not answer: %s; /readyz says 503 until it does", why);
    } else if (!was && ok) {
        log_info("the idempotency store answers again: /readyz follows the workers again");
    }
}

static void *
health_main(void *arg)
{
    struct health *h = arg;
    char why[512];
    pthread_mutex_lock(&h->mu);
    while (!h->stop) {
        pthread_mutex_unlock(&h->mu);
        int ok = check(h, why, sizeof(why)) == 0;
        record(h, ok, why);
        pthread_mutex_lock(&h->mu);
        struct timespec until = clock_after_ms(CLOCK_REALTIME, HEALTH_EVERY_MS);
        while (!h->stop && pthread_cond_timedwait(&h->cv, &h->mu, &until) == 0) {
        }
    }
    pthread_mutex_unlock(&h->mu);
    idem_close(h->store);
    return NULL;
}

struct health *
health_start(const char *dsn, const char *table)
{
    struct health *h = calloc(1, sizeof(*h));
    if (h == NULL || (h->dsn = strdup(dsn)) == NULL ||
        (h->table = strdup(table != NULL ? table : "")) == NULL) {
        if (h != NULL) {
            buf_free_secret(h->dsn);
        }
        free(h);
        return NULL;
    }
    h->ok = 1; /* until a check says otherwise: the workers' readiness covers the start */
    h->key = storehealth_key(dsn, table);
    storehealth_begin(h->key);
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    if (pthread_create(&h->thread, NULL, health_main, h) != 0) {
        pthread_mutex_destroy(&h->mu);
        pthread_cond_destroy(&h->cv);
        buf_free_secret(h->dsn);
        free(h->table);
        free(h);
        return NULL;
    }
    return h;
}

int
health_is_for(const struct health *h, const char *dsn, const char *table)
{
    return h != NULL && strcmp(h->dsn, dsn) == 0 &&
           strcmp(h->table, table != NULL ? table : "") == 0;
}

void
health_ask_stop(struct health *h)
{
    if (h == NULL) {
        return;
    }
    pthread_mutex_lock(&h->mu);
    h->stop = 1;
    pthread_cond_signal(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

void
health_stop(struct health *h)
{
    if (h == NULL) {
        return;
    }
    health_ask_stop(h);
    pthread_join(h->thread, NULL);
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
    buf_free_secret(h->dsn); /* it may hold the password */
    free(h->table);
    free(h);
}
