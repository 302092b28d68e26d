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
#include "dbdown.h"
#include "idem.h"
#include "log.h"
#include "plural.h"
#include "metrics.h"
#include "shm.h"
#include "stopwait.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define JANITOR_OWNERS        256      /* gone workers waiting for their leases to end */
#define JANITOR_CULPRITS      SHM_JOBS /* jobs of one worker counted for its crash */
/* A statement in flight at a stop, such as the last pass's expiries of gone
 * workers (their keys are freed now rather than when their leases lapse),
 * gets this long (ms) before it is given up. */
#define JANITOR_STOP_GRACE_MS 2000

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
        char *culprits;  /* owned: the jobs that crashed it, one a line ("RUN MESSAGE-ID");
                            NULL: none (it exited, or was stopped) */
        int64_t gone_ms; /* clock_mono_ms() when the master learnt it was gone */
    } owners[JANITOR_OWNERS];
    int nowners;

    /* The thread's own. */
    struct idem_store *store;
    int down;
    int refused; /* its purges are refused (read-only, a grant): logged once */
    struct stopwait wait;
};

static int
stopping(struct janitor *j)
{
    pthread_mutex_lock(&j->mu);
    int stop = j->stop;
    pthread_mutex_unlock(&j->mu);
    return stop;
}

/* The store's tick (stopwait.h): a statement in flight at a stop is given up
 * after JANITOR_STOP_GRACE_MS, so that the stop's join is not held by a
 * frozen server. */
static int
janitor_wait_tick(void *arg)
{
    return stopwait_over(&((struct janitor *) arg)->wait, stopping(arg), JANITOR_STOP_GRACE_MS);
}

/* The connection, or NULL while the database is unreachable. The stop's last
 * pass does not try again to connect to a database that was unreachable: a
 * server that accepts and never answers would hold it for its
 * connect_timeout. */
static struct idem_store *
store(struct janitor *j)
{
    char err[512];
    if (j->down && !idem_connected(j->store) && stopping(j)) {
        return NULL;
    }
    int rc = stopwait_ensure(&j->store, j->dsn, j->table, "janitor", NULL, janitor_wait_tick, j,
                             err, sizeof(err));
    if (dbdown_note(&j->down, rc, "janitor", "janitor", err, "will retry") != 0) {
        j->refused = 0; /* the outage's line says it; its end is said once */
        return NULL;
    }
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
    /* Completed keys, then free ones (a retried or cut short job's count,
     * whose message never came back). */
    for (int free_keys = 0; free_keys <= 1; free_keys++) {
        total = 0;
        do {
            int rc = (free_keys ? idem_purge_free : idem_purge_completed)(
                s, j->retention, j->batch, &deleted, err, sizeof(err));
            if (dbdown_note(&j->refused, rc, "janitor", "janitor", err, "will retry") != 0) {
                return;
            }
            total += deleted;
        } while (deleted == j->batch);
        if (total > 0) {
            log_info("janitor: deleted %ld %s keys older than %ds", total,
                     free_keys ? "released, crashed or interrupted" : "completed", j->retention);
        }
    }
}

/* Free the keys of one gone worker. Returns 0, or -1 to try again later. */
static int
expire(struct janitor *j, const struct gone *g)
{
    char err[512];
    long n = 0;
    struct idem_store *s = store(j);
    if (s == NULL) {
        return -1;
    }
    /* Split the culprits into the array idem_expire_owner takes. */
    struct idem_culprit c[JANITOR_CULPRITS];
    size_t nids = 0;
    char *copy = g->culprits != NULL ? strdup(g->culprits) : NULL;
    for (char *save = NULL, *line = copy != NULL ? strtok_r(copy, "\n", &save) : NULL;
         line != NULL && nids < JANITOR_CULPRITS; line = strtok_r(NULL, "\n", &save)) {
        char *id = strchr(line, ' ');
        if (id != NULL) {
            c[nids].attempt = atoi(line);
            c[nids++].message_id = id + 1;
        }
    }
    int rc = 0;
    if (g->culprits != NULL && copy == NULL) {
        log_warn("janitor: out of memory");
        rc = -1;
    } else if (idem_expire_owner(s, g->owner, (int) ((clock_mono_ms() - g->gone_ms) / 1000), c,
                                 nids, &n, err, sizeof(err)) != 0) {
        metrics_count(MET_PG_ERRORS, "expire", NULL, NULL, 1);
        log_warn("janitor: %s", err);
        rc = -1;
    } else if (n > 0 && nids == 1) {
        log_info("freed %ld key%s of gone worker %s: their jobs run on their next delivery; "
                 "only the run of message %s counts (the worker crashed while running it)",
                 n, plural_s(n), g->owner, c[0].message_id);
    } else if (n > 0 && nids > 1) {
        log_info("freed %ld key%s of gone worker %s: their jobs run on their next delivery; "
                 "only the runs of the %zu messages then running count (%s, ...): the worker "
                 "crashed",
                 n, plural_s(n), g->owner, nids, c[0].message_id);
    } else if (n > 0) {
        log_info("freed %ld key%s of gone worker %s: their jobs run on their next delivery, "
                 "their cut-short runs not counted",
                 n, plural_s(n), g->owner);
    }
    free(copy);
    return rc;
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
        free(j->owners[0].culprits);
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

/* The culprits as one string, one "RUN MESSAGE-ID" a line (owned by the
 * caller); NULL when there are none, or out of memory (then counted as
 * none: logged). */
static char *
join_culprits(const struct idem_culprit *culprits, size_t n)
{
    struct buf b = BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        buf_printf(&b, "%s%d %s", i > 0 ? "\n" : "", culprits[i].attempt, culprits[i].message_id);
    }
    if (b.failed) {
        log_warn("janitor: out of memory: the crash is not counted");
        buf_free(&b);
    }
    return b.len > 0 ? buf_steal(&b) : NULL;
}

void
janitor_expire_owner(struct janitor *j, const char *owner, const struct idem_culprit *culprits,
                     size_t n)
{
    if (j == NULL) {
        return;
    }
    char *joined = join_culprits(culprits, n);
    pthread_mutex_lock(&j->mu);
    if (j->nowners < JANITOR_OWNERS) {
        struct gone *g = &j->owners[j->nowners++];
        snprintf(g->owner, sizeof(g->owner), "%s", owner);
        g->culprits = joined;
        g->gone_ms = clock_mono_ms();
        joined = NULL;
        pthread_cond_signal(&j->cv);
    }
    pthread_mutex_unlock(&j->mu);
    free(joined);
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

/* Hand queued owners over to a successor (a reload's new janitor), or drop
 * them (none: the master is stopping). */
static void
hand_over(struct janitor *from, struct janitor *to)
{
    pthread_mutex_lock(&from->mu);
    for (int i = 0; i < from->nowners; i++) {
        struct gone *g = &from->owners[i];
        if (to != NULL) {
            pthread_mutex_lock(&to->mu);
            if (to->nowners < JANITOR_OWNERS) {
                to->owners[to->nowners++] = *g;
                g->culprits = NULL;
                pthread_cond_signal(&to->cv);
            }
            pthread_mutex_unlock(&to->mu);
        }
        free(g->culprits);
    }
    from->nowners = 0;
    pthread_mutex_unlock(&from->mu);
}

void
janitor_ask_stop(struct janitor *j)
{
    if (j == NULL) {
        return;
    }
    pthread_mutex_lock(&j->mu);
    j->stop = 1;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

void
janitor_stop(struct janitor *j, struct janitor *successor)
{
    if (j == NULL) {
        return;
    }
    janitor_ask_stop(j);
    pthread_join(j->thread, NULL);
    hand_over(j, successor);
    pthread_cond_destroy(&j->cv);
    pthread_mutex_destroy(&j->mu);
    buf_free_secret(j->dsn);
    free(j->table);
    free(j);
}
