/*
 * janitor.c - the host's database chores (see janitor.h): deleting
 * expired completed keys every janitor_interval, and ending the leases of
 * worker processes that have gone (and their relay's outbox claims), within
 * JANITOR_POLL_MS of the master reaping them (it queues them in the shared
 * region, proc/gone.h). One connection, opened on demand; an unreachable
 * database is logged when it starts and stops being so, not on every try.
 */
#include "janitor.h"

#include "backoff.h"
#include "buf.h"
#include "clock.h"
#include "dbdown.h"
#include "gone.h"
#include "idem.h"
#include "log.h"
#include "plural.h"
#include "metrics.h"
#include "outbox.h"
#include "stopwait.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How often (ms) it looks at the queue of gone workers: the master, in
 * another process, cannot wake it; the look also takes over owners a
 * reload's old janitor left. */
#define JANITOR_POLL_MS       250
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

/* Free the keys of one gone worker, and the outbox rows its relay had
 * claimed (gone_drain's expire). Returns 0, or -1 to try again later. */
static int
expire(void *arg, const struct gone_owner *g)
{
    struct janitor *j = arg;
    char err[512];
    long n = 0;
    struct idem_store *s = store(j);
    if (s == NULL) {
        return -1;
    }
    struct idem_culprit c[SHM_GONE_CULPRITS];
    size_t nids = g->n < SHM_GONE_CULPRITS ? g->n : SHM_GONE_CULPRITS;
    for (size_t i = 0; i < nids; i++) {
        const struct shm_gone_culprit *k = gone_culprit(g, i);
        c[i] = (struct idem_culprit){.message_id = k->message_id, .attempt = k->attempt};
    }
    long released = 0; /* rows its relay had claimed, were it the leading worker */
    if (outbox_release_owner(s, j->table, g->owner, &released, err, sizeof(err)) != 0) {
        metrics_count(MET_PG_ERRORS, "expire", NULL, NULL, 1);
        log_warn("janitor: %s", err);
        return -1;
    }
    if (released > 0) {
        log_info("released %ld follow-up message%s the outbox relay of gone worker %s had "
                 "claimed: they are sent now, not when the claim lapses",
                 released, plural_s(released), g->owner);
    }
    if (idem_expire_owner(s, g->owner, (int) ((clock_mono_ms() - g->gone_ms) / 1000), c, nids, &n,
                          err, sizeof(err)) != 0) {
        metrics_count(MET_PG_ERRORS, "expire", NULL, NULL, 1);
        log_warn("janitor: %s", err);
        return -1;
    }
    if (n > 0 && nids == 1) {
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
    return 0;
}

static void *
janitor_main(void *arg)
{
    struct janitor *j = arg;
    time_t next_sweep = time(NULL) + j->interval;
    int failures = 0; /* expiries refused in a row: they are retried with backoff */
    int busy = 0;     /* another janitor (a reload's old one) was at the queue */
    pthread_mutex_lock(&j->mu);
    for (;;) {
        if (!j->stop && (failures > 0 || busy || !gone_pending())) {
            uint64_t ms = failures > 0 ? backoff_ceiling(1000, 30000, failures) : JANITOR_POLL_MS;
            struct timespec until = clock_after_ms(CLOCK_REALTIME, (int64_t) ms);
            pthread_cond_timedwait(&j->cv, &j->mu, &until);
        }
        int stop = j->stop;
        pthread_mutex_unlock(&j->mu);
        int rc = gone_drain(expire, j);
        failures = rc < 0 ? failures + 1 : 0;
        busy = rc > 0;
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
janitor_stop(struct janitor *j)
{
    if (j == NULL) {
        return;
    }
    janitor_ask_stop(j);
    pthread_join(j->thread, NULL);
    pthread_cond_destroy(&j->cv);
    pthread_mutex_destroy(&j->mu);
    buf_free_secret(j->dsn);
    free(j->table);
    free(j);
}
