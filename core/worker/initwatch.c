/*
 * initwatch.c - the watch over a starting worker's plugin init() calls (see
 * initwatch.h): a thread that waits for stop signals in 100 ms steps and
 * looks at how long the current init() has run.
 */
#include "initwatch.h"

#include "clock.h"
#include "log.h"
#include "signals.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

/* When a slow init() is said: after this long, or half the limit if less. */
#define INITWATCH_WARN_MS 10000
#define INITWATCH_STEP_MS 100

struct initwatch {
    pthread_t thread;
    pthread_mutex_t mu;
    sigset_t stops;
    int slot;
    pid_t master;
    long long limit_ms, warn_ms;
    const char *plugin; /* under mu: whose init() runs, NULL between calls */
    long long since;    /* under mu: when it began (CLOCK_MONOTONIC ms) */
    int warned;         /* under mu: its slowness was said */
    int done;           /* under mu */
};

/* A stop signal before the worker is ready: no job has run and no
 * connection is open, so the worker just ends (as ready_wait does). */
static void
take_signal(struct initwatch *w, const siginfo_t *si, const char *plugin)
{
    enum worker_ask ask = worker_signal_judge(si, w->slot, w->master);
    if (ask == WORKER_IGNORE) {
        return;
    }
    if (plugin != NULL) {
        log_info("stopped before it was ready, while plugin '%s' init() ran", plugin);
    } else {
        log_info("stopped before it was ready");
    }
    _exit(0);
}

/* Say a slow init() once; end the worker once it has run for the limit. */
static void
look(struct initwatch *w, const char *plugin, long long ran)
{
    if (ran >= w->limit_ms) {
        log_error("plugin '%s': init() did not return within ready_timeout (%lld s): this "
                  "worker exits, and the master starts another in its place",
                  plugin, w->limit_ms / 1000);
        _exit(3);
    }
    log_warn("plugin '%s': init() has not returned after %.1f s: this worker is not ready "
             "until it does (it exits at ready_timeout, %lld s)",
             plugin, (double) ran / 1000, w->limit_ms / 1000);
}

static void *
watch_main(void *arg)
{
    struct initwatch *w = arg;
    for (;;) {
        siginfo_t si;
        int sig = worker_signal_wait(&w->stops, INITWATCH_STEP_MS, &si);
        pthread_mutex_lock(&w->mu);
        const char *plugin = w->plugin;
        long long ran = plugin != NULL ? clock_mono_ms() - w->since : 0;
        int done = w->done,
            say = plugin != NULL && (ran >= w->limit_ms || (ran >= w->warn_ms && !w->warned));
        if (say) {
            w->warned = 1;
        }
        pthread_mutex_unlock(&w->mu);
        if (sig > 0) {
            take_signal(w, &si, plugin);
        }
        if (done) {
            return NULL;
        }
        if (say) {
            look(w, plugin, ran);
        }
    }
}

struct initwatch *
initwatch_start(const sigset_t *stops, int slot, pid_t master, int limit_s)
{
    struct initwatch *w = calloc(1, sizeof(*w));
    if (w == NULL) {
        return NULL;
    }
    pthread_mutex_init(&w->mu, NULL);
    w->stops = *stops;
    w->slot = slot;
    w->master = master;
    w->limit_ms = (long long) limit_s * 1000;
    w->warn_ms = w->limit_ms / 2 < INITWATCH_WARN_MS ? w->limit_ms / 2 : INITWATCH_WARN_MS;
    if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
        pthread_mutex_destroy(&w->mu);
        free(w);
        return NULL;
    }
    return w;
}

void
initwatch_enter(struct initwatch *w, const char *plugin)
{
    if (w == NULL) {
        return;
    }
    pthread_mutex_lock(&w->mu);
    w->plugin = plugin;
    w->since = clock_mono_ms();
    w->warned = 0;
    pthread_mutex_unlock(&w->mu);
}

void
initwatch_stop(struct initwatch *w)
{
    if (w == NULL) {
        return;
    }
    pthread_mutex_lock(&w->mu);
    w->done = 1;
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_mutex_destroy(&w->mu);
    free(w);
}
