/*
 * process.c - a worker process from start to exit: read the configuration
 * snapshot the master validated, load and init the plugins, start the
 * acker, the handlers and a receiver per queue, tell the master it is
 * ready, and on SIGTERM drain: stop receiving, let running jobs finish up
 * to drain_timeout, give back the rest, exit 0. It never dlcloses a plugin.
 */
#include "process.h"

#include "acker.h"
#include "advice.h"
#include "childargs.h"
#include "config.h"
#include "creds.h"
#include "handler.h"
#include "hostapi.h"
#include "idem.h"
#include "instance.h"
#include "keying.h"
#include "log.h"
#include "metrics.h"
#include "receiver.h"
#include "shm.h"
#include "sqs.h"
#include "sqs_setup.h"
#include "throttle.h"
#include "worker.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static int crash_slot = -1;

/* A fatal signal in plugin code: say which job's thread it was (the master
 * logs it), then die of the same signal. Async-signal-safe only. */
static void
on_fatal(int sig)
{
    shm_mark_crash(crash_slot);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void
install_fatal_handlers(int slot)
{
    static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    crash_slot = slot;
    for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_fatal;
        sa.sa_flags = SA_RESETHAND | SA_NODEFER;
        sigaction(fatal[i], &sa, NULL);
    }
}

static int
load_plugins(struct worker *w, char *err, size_t errlen)
{
    const struct config *c = w->cfg;
    w->plugins = calloc(c->nplugins ? c->nplugins : 1, sizeof(*w->plugins));
    if (w->plugins == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < c->nplugins; i++) {
        struct plugin_instance *p = &w->plugins[i];
        p->cfg = &c->plugins[i];
        p->name = p->cfg->name;
        p->index = i;
        if (loader_open(p->cfg->path, &p->lp, err, errlen) != 0) {
            return -1;
        }
        w->nplugins++;
        p->transactional = (p->lp.desc->flags & TWICE_FLAG_TRANSACTIONAL) != 0;
        struct diag d = DIAG_INIT;
        if (loader_check_settings(&p->lp, p->cfg, c->file, &d) > 0 ||
            keying_check_queues(c, p->name, &p->lp, &d) > 0) {
            snprintf(err, errlen, "%s", d.lines[0]);
            diag_free(&d);
            return -1;
        }
        diag_free(&d);
        if (hostapi_init(p, err, errlen) != 0) {
            return -1;
        }
    }
    return 0;
}

static const struct plugin_instance *
find_plugin(const struct worker *w, const char *name)
{
    for (size_t i = 0; i < w->nplugins; i++) {
        if (strcmp(w->plugins[i].name, name) == 0) {
            return &w->plugins[i];
        }
    }
    return NULL;
}

static int
setup_queue(struct worker *w, struct wqueue *q, const struct config_queue *qc, char *err,
            size_t errlen)
{
    q->w = w;
    q->cfg = qc;
    q->policy = (struct lifecycle_queue){
        .max_attempts = qc->max_attempts,
        .max_receives = qc->max_receives,
        .backoff_base = qc->backoff_base,
        .backoff_cap = qc->backoff_cap,
        .fifo = qc->fifo,
        .reject_conflicts = w->cfg->idempotency.on_conflict == CONFIG_CONFLICT_REJECT,
        .timeout = qc->timeout,
        .timeout_grace = qc->timeout_grace,
    };
    q->advice = calloc(w->nplugins ? w->nplugins : 1, sizeof(*q->advice));
    if (q->advice == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->work_cv, NULL);
    pthread_cond_init(&q->space_cv, NULL);
    if (keying_queue_key(qc, &q->key, err, errlen) != 0) {
        return -1;
    }
    if (qc->plugin != NULL) {
        q->plugin = find_plugin(w, qc->plugin);
        if (q->plugin == NULL) {
            snprintf(err, errlen, "queue %s: plugin %s is not loaded", qc->name, qc->plugin);
            return -1;
        }
        return 0;
    }
    q->route_plugins = calloc(qc->nroutes ? qc->nroutes : 1, sizeof(*q->route_plugins));
    if (q->route_plugins == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < qc->nroutes; i++) {
        q->route_plugins[i] = find_plugin(w, qc->routes[i].plugin);
        if (q->route_plugins[i] == NULL) {
            snprintf(err, errlen, "queue %s: route plugin %s is not loaded", qc->name,
                     qc->routes[i].plugin);
            return -1;
        }
    }
    return 0;
}

/* Create the idempotency table if needed. A database that is down now is
 * not fatal: receivers wait for it, and the next worker start migrates. */
static void
migrate_store(struct worker *w)
{
    struct idem_store *s = NULL;
    char err[512];
    const struct config *c = w->cfg;
    if (idem_open(c->idempotency.dsn, c->idempotency.table, w->owner, &s, err, sizeof(err)) == 0 &&
        idem_migrate(s, err, sizeof(err)) == 0) {
        idem_close(s);
        return;
    }
    log_error("idempotency table %s: %s", c->idempotency.table, err);
    idem_close(s);
}

static int
start(struct worker *w, char *err, size_t errlen)
{
    const struct config *c = w->cfg;
    w->endpoint = calloc(1, sizeof(*w->endpoint));
    if (w->endpoint == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (sqs_setup(c, w->endpoint, &w->creds, err, errlen) != 0 ||
        load_plugins(w, err, errlen) != 0) {
        return -1;
    }
    w->queues = calloc(c->nqueues, sizeof(*w->queues));
    if (w->queues == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < c->nqueues; i++, w->nqueues++) {
        if (setup_queue(w, &w->queues[i], &c->queues[i], err, errlen) != 0) {
            return -1;
        }
    }
    migrate_store(w);
    if (throttle_setup(w, err, errlen) != 0) {
        return -1;
    }
    w->acker = acker_start(w, err, errlen);
    if (w->acker == NULL) {
        return -1;
    }
    for (size_t i = 0; i < w->nqueues; i++) {
        if (handlers_start(&w->queues[i], err, errlen) != 0 ||
            receiver_start(&w->queues[i], err, errlen) != 0) {
            return -1;
        }
    }
    return 0;
}

/* Wait for a stop signal; the second one means "now". */
static int
wait_signal(const sigset_t *set, int timeout_ms)
{
    if (timeout_ms < 0) {
        int sig = 0;
        while (sigwait(set, &sig) != 0) {
        }
        return sig;
    }
    struct timespec ts = {timeout_ms / 1000, (long) (timeout_ms % 1000) * 1000000L};
    int sig = sigtimedwait(set, NULL, &ts);
    return sig < 0 ? 0 : sig;
}

static int
all_idle(struct worker *w)
{
    for (size_t i = 0; i < w->nqueues; i++) {
        if (!handlers_idle(&w->queues[i])) {
            return 0;
        }
    }
    return 1;
}

/* Handler threads still inside a run past its time limit (timeout.h): they
 * cannot be joined. */
static int
any_hung(struct worker *w)
{
    for (size_t i = 0; i < w->nqueues; i++) {
        if (handlers_hung(&w->queues[i])) {
            return 1;
        }
    }
    return 0;
}

/* Stop receiving, let running jobs finish within drain_timeout, give back
 * what is left. Returns 1 when everything finished (threads joinable). */
static int
drain(struct worker *w, const sigset_t *set)
{
    w->draining = 1;
    for (size_t i = 0; i < w->nqueues; i++) {
        receiver_join(&w->queues[i]);
        handlers_stop(&w->queues[i]);
    }
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        if (all_idle(w) && !any_hung(w)) {
            return 1;
        }
        if (all_idle(w)) {
            log_warn("drained but for handlers past their timeout: leaving them behind");
            w->abandon = 1;
            acker_abandon_running(w->acker);
            return 0;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        double left = w->cfg->drain_timeout - ((double) (now.tv_sec - t0.tv_sec) +
                                               (double) (now.tv_nsec - t0.tv_nsec) / 1e9);
        if (left <= 0) {
            break;
        }
        int sig = wait_signal(set, left < 0.1 ? (int) (left * 1000) + 1 : 100);
        if (sig == SIGTERM || sig == SIGINT || sig == SIGQUIT) {
            log_warn("second stop signal: giving back running jobs now");
            break;
        }
    }
    log_warn("drain deadline: giving back the jobs still running");
    w->abandon = 1;
    acker_abandon_running(w->acker);
    return 0;
}

static void
notify_ready(int fd)
{
    if (fd >= 0) {
        ssize_t rc;
        do {
            rc = write(fd, "R", 1);
        } while (rc < 0 && errno == EINTR);
    }
}

int
worker_main(int argc, char **argv)
{
    struct childargs a;
    char err[1024];
    if (childargs_parse(argc, argv, &a, err, sizeof(err)) != 0) {
        fprintf(stderr, "twiced worker: %s\n", err);
        return 2;
    }
    log_set_role("worker");
    struct config *cfg = NULL;
    if (childargs_load_config(&a, &cfg, err, sizeof(err)) != 0) {
        log_error("%s", err);
        return 3;
    }
    log_set_level(cfg->log.level);
    log_set_format(cfg->log.format);
    if (cfg->log.file != NULL && log_open(cfg->log.file) != 0) {
        log_error("log.file %s: %s", cfg->log.file, strerror(errno));
    }
    if (a.shm_fd >= 0 && shm_attach(a.shm_fd) != 0) {
        log_error("cannot map the shared region: %s", strerror(errno));
        return 3;
    }
    metrics_set_proc(a.slot);
    install_fatal_handlers(a.slot);
    prctl(PR_SET_PDEATHSIG, SIGTERM);

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGQUIT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* every thread inherits it */
    if (getppid() != a.master_pid) {
        return 0; /* the master died before we could ask it to die with us */
    }

    struct worker w;
    memset(&w, 0, sizeof(w));
    w.cfg = cfg;
    w.slot = a.slot;
    w.generation = a.generation;
    childargs_owner(w.owner, sizeof(w.owner), getpid(), w.generation, a.instance);
    if (start(&w, err, sizeof(err)) != 0) {
        log_error("worker not started: %s", err);
        _exit(3);
    }
    log_info("worker ready: generation %d, %zu queues, %zu plugins", w.generation, w.nqueues,
             w.nplugins);
    notify_ready(a.ctl_fd);

    int sig;
    do {
        sig = wait_signal(&set, -1);
    } while (sig == SIGHUP);
    log_info("draining (signal %d)", sig);
    int clean = drain(&w, &set);
    acker_stop(w.acker);
    if (!clean) {
        _exit(0); /* threads are still inside plugin code: do not run fini */
    }
    for (size_t i = 0; i < w.nqueues; i++) {
        handlers_join(&w.queues[i]);
    }
    for (size_t i = 0; i < w.nplugins; i++) {
        hostapi_fini(&w.plugins[i]);
        loader_release(&w.plugins[i].lp);
    }
    throttle_free(&w);
    log_info("worker stopped");
    _exit(0);
}
