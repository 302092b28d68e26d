/*
 * janitor.c - deleting expired completed keys (see janitor.h). One
 * connection, opened on demand; an unreachable database is logged when it
 * starts and stops being so.
 */
#include "janitor.h"

#include "idem.h"
#include "log.h"
#include "metrics.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
};

/* Sleep up to seconds; returns 1 when asked to stop. */
static int
wait_or_stop(struct janitor *j, int seconds)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += seconds;
    pthread_mutex_lock(&j->mu);
    while (!j->stop) {
        if (pthread_cond_timedwait(&j->cv, &j->mu, &until) != 0) {
            break;
        }
    }
    int stop = j->stop;
    pthread_mutex_unlock(&j->mu);
    return stop;
}

static int
stopping(struct janitor *j)
{
    pthread_mutex_lock(&j->mu);
    int stop = j->stop;
    pthread_mutex_unlock(&j->mu);
    return stop;
}

/* One sweep: batches until a short one. Returns rows deleted, -1 on error. */
static long
sweep(struct janitor *j, struct idem_store *s, char *err, size_t errlen)
{
    long total = 0, deleted = 0;
    do {
        if (idem_purge_completed(s, j->retention, j->batch, &deleted, err, errlen) != 0) {
            return -1;
        }
        total += deleted;
    } while (deleted == j->batch && !stopping(j));
    return total;
}

static void *
janitor_main(void *arg)
{
    struct janitor *j = arg;
    struct idem_store *s = NULL;
    int down = 0;
    char err[512];
    while (!wait_or_stop(j, j->interval)) {
        int rc = s == NULL ? idem_open(j->dsn, j->table, "janitor", &s, err, sizeof(err))
                 : idem_connected(s) ? 0
                                     : idem_reconnect(s, err, sizeof(err));
        long n = rc == 0 ? sweep(j, s, err, sizeof(err)) : -1;
        if (n < 0) {
            metrics_count(MET_PG_ERRORS, "janitor", NULL, NULL, 1);
            if (!down) {
                log_warn("janitor: %s (will retry every %ds)", err, j->interval);
            }
            down = 1;
            continue;
        }
        if (down) {
            log_info("janitor: database reachable again");
        }
        down = 0;
        if (n > 0) {
            log_info("janitor: deleted %ld completed keys older than %ds", n, j->retention);
        }
    }
    idem_close(s);
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
        free(j->dsn);
        free(j->table);
        free(j);
        return NULL;
    }
    return j;
}

void
janitor_stop(struct janitor *j)
{
    if (j == NULL) {
        return;
    }
    pthread_mutex_lock(&j->mu);
    j->stop = 1;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
    pthread_join(j->thread, NULL);
    pthread_cond_destroy(&j->cv);
    pthread_mutex_destroy(&j->mu);
    explicit_bzero(j->dsn, strlen(j->dsn));
    free(j->dsn);
    free(j->table);
    free(j);
}
