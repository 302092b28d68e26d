/*
 * janitor.c - the master's database chores (see janitor.h): deleting
 * expired completed keys every janitor_interval, and ending the leases of
 * worker processes that have gone, as soon as the master reaps them. One
 * connection, opened on demand; an unreachable database is logged when it
 * starts and stops being so, not on every try.
 */
#include "janitor.h"

#include "backoff.h"
#include "buf.h"
#include "clock.h"
#include "idem.h"
#include "log.h"
#include "metrics.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define JANITOR_OWNERS 256 /* gone workers waiting for their leases to end */

struct janitor {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    char *dsn;
    char *table;
    int retention;
    int interval;
    int batch;
    struct gone {
        char owner[160];
        char culprit[128]; /* message id of the job that crashed it; "" unknown */
    } owners[JANITOR_OWNERS];
    int nowners;

    /* The thread's own. */
    struct idem_store *store;
    int down;
};

/* The connection, or NULL while the database is unreachable. */
static struct idem_store *
store(struct janitor *j)
{
    char err[512];
    int rc = j->store == NULL ? idem_open(j->dsn, j->table, "janitor", &j->store, err, sizeof(err))
             : idem_connected(j->store) ? 0
                                        : idem_reconnect(j->store, err, sizeof(err));
    if (rc != 0) {
        metrics_count(MET_PG_ERRORS, "janitor", NULL, NULL, 1);
        if (!j->down) {
            log_warn("janitor: %s (will retry)", err);
        }
        j->down = 1;
        return NULL;
    }
    if (j->down) {
        log_info("janitor: database reachable again");
    }
    j->down = 0;
    return j->store;
}

static void
sweep(struct janitor *j)
{
    char err[512];
    long total = 0, deleted = 0;
    struct idem_store *s = store(j);
    if (s == NULL) {
        return;
    }
    do {
        if (idem_purge_completed(s, j->retention, j->batch, &deleted, err, sizeof(err)) != 0) {
            metrics_count(MET_PG_ERRORS, "janitor", NULL, NULL, 1);
            log_warn("janitor: %s", err);
            return;
        }
        total += deleted;
    } while (deleted == j->batch);
    if (total > 0) {
        log_info("janitor: deleted %ld completed keys older than %ds", total, j->retention);
    }
}

/* End the leases of one gone worker. Returns 0, or -1 to try again later. */
static int
expire(struct janitor *j, const struct gone *g)
{
    char err[512];
    long n = 0;
    struct idem_store *s = store(j);
    if (s == NULL) {
        return -1;
    }
    if (idem_expire_owner(s, g->owner, g->culprit, &n, err, sizeof(err)) != 0) {
        metrics_count(MET_PG_ERRORS, "expire", NULL, NULL, 1);
        log_warn("janitor: %s", err);
        return -1;
    }
    if (n > 0 && g->culprit[0] != '\0') {
        log_info("ended %ld leases of gone worker %s: their jobs are taken over on their next "
                 "delivery; only message %s's attempt counts (it crashed the worker)",
                 n, g->owner, g->culprit);
    } else if (n > 0) {
        log_info("ended %ld leases of gone worker %s: their jobs are taken over on their next "
                 "delivery",
                 n, g->owner);
    }
    return 0;
}

/* Work through the queued owners (the lock is dropped around each query).
 * Returns 0, or -1 when the database refused one (the rest wait). */
static int
expire_queued(struct janitor *j)
{
    int rc = 0;
    struct gone g;
    pthread_mutex_lock(&j->mu);
    while (j->nowners > 0) {
        g = j->owners[0];
        pthread_mutex_unlock(&j->mu);
        rc = expire(j, &g);
        pthread_mutex_lock(&j->mu);
        if (rc != 0) {
            break; /* the database is down: the next round tries again */
        }
        memmove(&j->owners[0], &j->owners[1], (size_t) (j->nowners - 1) * sizeof(j->owners[0]));
        j->nowners--;
    }
    pthread_mutex_unlock(&j->mu);
    return rc;
}

static void *
janitor_main(void *arg)
{
    struct janitor *j = arg;
    time_t next_sweep = time(NULL) + j->interval;
    int failures = 0; /* expiries refused in a row: they are retried with backoff */
    pthread_mutex_lock(&j->mu);
    for (;;) {
        if (!j->stop && (j->nowners == 0 || failures > 0)) {
            uint64_t ms = failures > 0 ? backoff_ceiling(1000, 30000, failures) : 1000;
            struct timespec until = clock_after_ms(CLOCK_REALTIME, (int64_t) ms);
            pthread_cond_timedwait(&j->cv, &j->mu, &until);
        }
        int stop = j->stop;
        pthread_mutex_unlock(&j->mu);
        failures = expire_queued(j) != 0 ? failures + 1 : 0;
        if (!stop && time(NULL) >= next_sweep) {
            sweep(j);
            next_sweep = time(NULL) + j->interval;
        }
        pthread_mutex_lock(&j->mu);
        if (stop) {
            break;
        }
    }
    pthread_mutex_unlock(&j->mu);
    idem_close(j->store);
    return NULL;
}

void
janitor_expire_owner(struct janitor *j, const char *owner, const char *culprit)
{
    if (j == NULL) {
        return;
    }
    pthread_mutex_lock(&j->mu);
    if (j->nowners < JANITOR_OWNERS) {
        struct gone *g = &j->owners[j->nowners++];
        snprintf(g->owner, sizeof(g->owner), "%s", owner);
        snprintf(g->culprit, sizeof(g->culprit), "%s", culprit != NULL ? culprit : "");
        pthread_cond_signal(&j->cv);
    }
    pthread_mutex_unlock(&j->mu);
}

struct janitor *
janitor_start(const char *dsn, const char *table, int retention, int interval, int batch)
{
    struct janitor *j = calloc(1, sizeof(*j));
    if (j == NULL) {
        return NULL;
    }
    j->dsn = strdup(dsn);
    j->table = strdup(table);
    j->retention = retention;
    j->interval = interval;
    j->batch = batch;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    if (j->dsn == NULL || j->table == NULL ||
        pthread_create(&j->thread, NULL, janitor_main, j) != 0) {
        log_error("janitor: cannot start");
        buf_free_secret(j->dsn);
        free(j->table);
        free(j);
        return NULL;
    }
    return j;
}

/* Hand queued owners over to a successor (a reload's new janitor). */
static void
hand_over(struct janitor *from, struct janitor *to)
{
    pthread_mutex_lock(&from->mu);
    for (int i = 0; i < from->nowners; i++) {
        janitor_expire_owner(to, from->owners[i].owner, from->owners[i].culprit);
    }
    from->nowners = 0;
    pthread_mutex_unlock(&from->mu);
}

void
janitor_stop(struct janitor *j, struct janitor *successor)
{
    if (j == NULL) {
        return;
    }
    pthread_mutex_lock(&j->mu);
    j->stop = 1;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
    pthread_join(j->thread, NULL);
    if (successor != NULL) {
        hand_over(j, successor);
    }
    pthread_cond_destroy(&j->cv);
    pthread_mutex_destroy(&j->mu);
    buf_free_secret(j->dsn);
    free(j->table);
    free(j);
}
