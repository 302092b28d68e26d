/*
 * leadership.c - a worker leading the host's duties (see leadership.h).
 */
#include "leadership.h"

#include "clock.h"
#include "duties.h"
#include "leader.h"
#include "log.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct leadership {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop; /* under mu */
    const struct config *cfg;
    const char *owner; /* the worker's lease owner, which the relay claims as */
    int generation;
    pid_t self;
    struct duties *duties; /* the thread's: running while this worker leads */
};

/* One look at the place: start or stop the duties as leader_poll says. */
static void
tick(struct leadership *l)
{
    int lead = leader_poll(l->generation, l->self);
    if (lead && l->duties == NULL) {
        log_info("leading this host's duties (key janitor, store health check, DLQ monitor, "
                 "pause watch, outbox relay)");
        l->duties = duties_start(l->cfg, l->owner);
        if (l->duties == NULL) {
            leader_release(l->self); /* another worker may manage */
        }
    } else if (!lead && l->duties != NULL) {
        log_info("generation %d no longer runs: handing this host's duties over", l->generation);
        duties_stop(l->duties);
        l->duties = NULL;
        leader_release(l->self);
    } else if (!lead && leader_holder() == l->self) {
        leader_release(l->self); /* held for an older generation, with nothing running */
    }
}

static void *
leadership_main(void *arg)
{
    struct leadership *l = arg;
    pthread_mutex_lock(&l->mu);
    while (!l->stop) {
        pthread_mutex_unlock(&l->mu);
        tick(l);
        pthread_mutex_lock(&l->mu);
        struct timespec until = clock_after_ms(CLOCK_REALTIME, LEADERSHIP_EVERY_MS);
        while (!l->stop && pthread_cond_timedwait(&l->cv, &l->mu, &until) == 0) {
        }
    }
    pthread_mutex_unlock(&l->mu);
    duties_stop(l->duties);
    l->duties = NULL;
    leader_release(l->self);
    return NULL;
}

struct leadership *
leadership_start(const struct config *cfg, int gen, const char *owner)
{
    struct leadership *l = calloc(1, sizeof(*l));
    if (l == NULL) {
        log_error("this worker cannot lead the host's duties: out of memory");
        return NULL;
    }
    l->cfg = cfg;
    l->owner = owner;
    l->generation = gen;
    l->self = getpid();
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    if (pthread_create(&l->thread, NULL, leadership_main, l) != 0) {
        log_error("this worker cannot lead the host's duties: no thread");
        pthread_mutex_destroy(&l->mu);
        pthread_cond_destroy(&l->cv);
        free(l);
        return NULL;
    }
    return l;
}

void
leadership_ask_stop(struct leadership *l)
{
    if (l != NULL) {
        pthread_mutex_lock(&l->mu);
        l->stop = 1;
        pthread_cond_signal(&l->cv);
        pthread_mutex_unlock(&l->mu);
    }
}

void
leadership_stop(struct leadership *l)
{
    if (l == NULL) {
        return;
    }
    leadership_ask_stop(l);
    pthread_join(l->thread, NULL);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    free(l);
}
