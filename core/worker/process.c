/*
 * process.c - a worker process from start to exit: read the configuration
 * snapshot the master validated, load and init the plugins, start the
 * acker, the handlers and a receiver per queue, tell the master it is
 * ready, and on SIGTERM drain: stop receiving, let running jobs finish up
 * to drain_timeout, give back the rest, exit 0. It never dlcloses a plugin.
 * Past worker_max_rss it asks the master for that TERM itself (recycle.h).
 */
#include "process.h"

#include "acker.h"
#include "advice.h"
#include "childargs.h"
#include "cnum.h"
#include "config.h"
#include "creds.h"
#include "fdguard.h"
#include "handler.h"
#include "hostapi.h"
#include "idem.h"
#include "initwatch.h"
#include "instance.h"
#include "jobspan.h"
#include "keying.h"
#include "leadership.h"
#include "log.h"
#include "plural.h"
#include "metrics.h"
#include "proctitle.h"
#include "ready.h"
#include "receiver.h"
#include "recycle.h"
#include "shm.h"
#include "signals.h"
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

/* exit() on a handler thread: plugin code (the worker itself leaves by
 * _exit, which runs no atexit handler). Lay the death at that thread's job,
 * as a fatal signal does, so that its run counts and no other's. */
static void
on_exit_call(void)
{
    int idx = shm_thread_job();
    if (idx >= 0) {
        shm_mark_job_crash(crash_slot, idx);
    }
}

static void
install_fatal_handlers(int slot)
{
    static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    crash_slot = slot;
    atexit(on_exit_call);
    for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_fatal;
        sa.sa_flags = SA_RESETHAND | SA_NODEFER;
        sigaction(fatal[i], &sa, NULL);
    }
}

/* Load the plugins from the files the master opened for this generation
 * (a->plugin_fds): what the generation checked, even when a file has been
 * replaced on disk since. The descriptors are closed once mapped. */
static int
load_plugins(struct worker *w, const struct childargs *a, struct initwatch *watch, char *err,
             size_t errlen)
{
    const struct config *c = w->cfg;
    w->plugins = calloc(c->nplugins ? c->nplugins : 1, sizeof(*w->plugins));
    if (w->plugins == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (a->nplugin_fds != c->nplugins) {
        snprintf(err, errlen, "%zu plugin files for %zu plugins", a->nplugin_fds, c->nplugins);
        return -1;
    }
    for (size_t i = 0; i < c->nplugins; i++) {
        struct plugin_instance *p = &w->plugins[i];
        int replaced = 0;
        p->cfg = &c->plugins[i];
        p->name = p->cfg->name;
        p->index = i;
        int rc = loader_open_fd(p->cfg->path, a->plugin_fds[i], &p->lp, &replaced, err, errlen);
        close(a->plugin_fds[i]);
        if (rc != 0) {
            return -1;
        }
        if (replaced) {
            log_warn("plugin '%s': %s was replaced or removed after generation %d loaded it: "
                     "running generation %d's copy (a reload runs the new file)",
                     p->name, p->cfg->path, w->generation, w->generation);
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
        initwatch_enter(watch, p->name);
        rc = hostapi_init(p, c->file, err, errlen);
        initwatch_enter(watch, NULL);
        if (rc != 0) {
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

/* prepare()'s work while the init watch runs: the SQS endpoint, the plugins
 * (their init() under the watch) and each queue's state. On failure err says
 * why, and the worker exits with what it set up. */
static int
prepare_watched(struct worker *w, const struct childargs *a, struct initwatch *watch, char *err,
                size_t errlen)
{
    const struct config *c = w->cfg;
    w->endpoint = calloc(1, sizeof(*w->endpoint));
    if (w->endpoint == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (sqs_setup(c, w->endpoint, &w->creds, err, errlen) != 0 ||
        load_plugins(w, a, watch, err, errlen) != 0) {
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
    return 0;
}

/* Everything that needs no server: endpoint, plugins (init, watched: a stop
 * signal ends the worker, a hanging init() is said and bounded), queues. */
static int
prepare(struct worker *w, const struct childargs *a, char *err, size_t errlen)
{
    sigset_t stops;
    sigemptyset(&stops);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGQUIT);
    struct initwatch *watch =
        initwatch_start(&stops, w->slot, a->master_pid, w->cfg->ready_timeout);
    int rc = prepare_watched(w, a, watch, err, errlen);
    initwatch_stop(watch);
    return rc;
}

/* The threads, once the store and the queues answer (ready_wait). */
static int
start(struct worker *w, char *err, size_t errlen)
{
    jobspan_start(w->cfg);
    if (throttle_setup(w, err, errlen) != 0) {
        return -1;
    }
    w->lost_claims = idem_lost_new();
    if (w->lost_claims == NULL) {
        snprintf(err, errlen, "out of memory");
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

static double
seconds_since(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double) (now.tv_sec - t0->tv_sec) + (double) (now.tv_nsec - t0->tv_nsec) / 1e9;
}

/* Seconds the acknowledgements get past the drain's deadline (the give-back
 * of what still runs then included; completions waiting for PostgreSQL get
 * about as long as their retries take), within the master's own limit of
 * drain_timeout + 15 s, after which it kills the worker. */
#define ACK_GRACE_SECONDS 10

/* When the acknowledgements must be done: ACK_GRACE_SECONDS after the drain's
 * deadline, t0 + limit (limit < 0: a quit with no deadline, so drain_timeout
 * from now). */
static void
ack_deadline(const struct worker *w, const struct timespec *t0, double limit, struct timespec *out)
{
    if (limit < 0) {
        clock_gettime(CLOCK_MONOTONIC, out);
        limit = w->cfg->drain_timeout;
    } else {
        *out = *t0;
    }
    out->tv_sec += (time_t) limit + ACK_GRACE_SECONDS;
}

/* Stop receiving, let running jobs finish within drain_timeout (a quit: for
 * as long as they take, until a stop signal sets the deadline), give back
 * what is left. Returns 1 when everything finished (threads joinable);
 * *ack_by: when the acknowledger must be done (acker_stop). */
static int
drain(struct worker *w, const sigset_t *set, enum worker_ask ask, pid_t master,
      struct timespec *ack_by)
{
    flag_raise(&w->draining);
    for (size_t i = 0; i < w->nqueues; i++) {
        receiver_join(&w->queues[i]);
        handlers_stop(&w->queues[i]);
    }
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    double limit = ask == WORKER_QUIT ? -1 : w->cfg->drain_timeout; /* -1: none */
    for (;;) {
        ack_deadline(w, &t0, limit, ack_by);
        if (all_idle(w) && !any_hung(w)) {
            return 1;
        }
        if (all_idle(w)) {
            log_warn("drained but for handlers past their timeout: leaving them behind");
            flag_raise(&w->abandon);
            acker_abandon_running(w->acker);
            return 0;
        }
        double left = limit < 0 ? 0.1 : limit - seconds_since(&t0);
        if (left <= 0) {
            break;
        }
        siginfo_t si;
        int sig = worker_signal_wait(set, left < 0.1 ? (int) (left * 1000) + 1 : 100, &si);
        if (sig == 0 || worker_signal_judge(&si, w->slot, master) != WORKER_STOP) {
            continue;
        }
        if (limit < 0) {
            log_info("stop signal while quitting: running jobs get drain_timeout (%ds)",
                     w->cfg->drain_timeout);
            limit = seconds_since(&t0) + w->cfg->drain_timeout;
            continue;
        }
        log_warn("second stop signal: giving back running jobs now");
        break;
    }
    log_warn("drain deadline: giving back the jobs still running");
    ack_deadline(w, &t0, seconds_since(&t0), ack_by);
    flag_raise(&w->abandon);
    acker_abandon_running(w->acker);
    return 0;
}

/* USR1, the master's "reopen the log file", arrives ignored (spawn.c) so
 * that it cannot kill a worker still starting. From here it is blocked and
 * taken by worker_signal_wait; one sent before log_open below is kept
 * pending and does no harm. */
static void
take_reopen_signal(void)
{
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &usr1, NULL);
    signal(SIGUSR1, SIG_DFL);
}

/* A plugin closed twiced's descriptors (hostapi_on_descriptors_closed): the
 * log file's among them, it is opened again by the main thread, which alone
 * opens it, as on the master's SIGUSR1 (log_reopen takes a number that is no
 * longer the file's without writing over it). */
static void
reopen_log_soon(void)
{
    kill(getpid(), SIGUSR1);
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
    proctitle_set("twiced: worker (generation %d)", a.generation);
    struct config *cfg = NULL;
    if (childargs_load_config(&a, &cfg, err, sizeof(err)) != 0) {
        log_error("%s", err);
        return 3;
    }
    log_set_level(cfg->log.level);
    log_set_format(cfg->log.format);
    take_reopen_signal();
    if (cfg->log.file != NULL && log_open(cfg->log.file) != 0) {
        log_error("log.file %s: %s", cfg->log.file, log_open_why(cfg->log.file, errno));
    }
    /* a plugin that closes twiced's descriptors is told from here on; the
     * log file is then opened again as on the master's SIGUSR1 */
    if (fdguard_open() != 0) {
        log_warn("cannot open the descriptor sentinel (%s): a plugin that closes twiced's "
                 "descriptors is not told",
                 cnum_strerror(errno));
    }
    hostapi_on_descriptors_closed(reopen_log_soon);
    if (a.shm_fd >= 0 && shm_attach(a.shm_fd) != 0) {
        log_error("cannot map the shared region: %s", cnum_strerror(errno));
        return 3;
    }
    metrics_set_proc(a.slot);
    install_fatal_handlers(a.slot);
    shm_proc_names(a.slot, shm_names_of(cfg)); /* before any job: how the master names them */
    prctl(PR_SET_PDEATHSIG, SIGTERM);

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGQUIT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* every thread inherits it */
    if (getppid() != a.master_pid) {
        return 0; /* the master died before we could ask it to die with us */
    }
    struct worker w;
    memset(&w, 0, sizeof(w));
    w.cfg = cfg;
    w.slot = a.slot;
    w.master_pid = a.master_pid;
    w.generation = a.generation;
    childargs_owner(w.owner, sizeof(w.owner), getpid(), w.generation, a.instance);
    /* From here (before the plugins load) a worker may lead the host's
     * duties, so they run while workers wait for their store or queues. Its
     * relay claims outbox rows as w.owner, which outlives the leadership. */
    struct leadership *lead = leadership_start(cfg, a.generation, w.owner);
    if (prepare(&w, &a, err, sizeof(err)) != 0) {
        log_error("worker not started: %s", err);
        _exit(3);
    }
    enum worker_ask early = ready_wait(&w, a.ctl_fd, &set, a.master_pid);
    if (early != WORKER_IGNORE) {
        idem_close(w.ready_store);
        leadership_stop(lead);
        log_info("stopped before it was ready");
        _exit(0); /* no thread runs; plugins were only initialised */
    }
    if (start(&w, err, sizeof(err)) != 0) {
        log_error("worker not started: %s", err);
        _exit(3);
    }
    log_info("worker ready: generation %d, %zu queue%s, %zu plugin%s", w.generation, w.nqueues,
             plural_s(w.nqueues), w.nplugins, plural_s(w.nplugins));
    notify_ready(a.ctl_fd);

    enum worker_ask ask = WORKER_IGNORE;
    siginfo_t si;
    struct recycle rc;
    recycle_start(&rc, &w);
    while (ask == WORKER_IGNORE) {
        if (worker_signal_wait(&set, recycle_wait_ms(&rc), &si) > 0) {
            ask = worker_signal_judge(&si, a.slot, a.master_pid);
        }
        if (ask == WORKER_IGNORE) {
            recycle_check(&rc, &w); /* past worker_max_rss: the master's TERM follows */
        }
    }
    log_info("%s (SIG%s)",
             ask == WORKER_QUIT ? "quitting: finishing every running job" : "draining",
             sigabbrev_np(si.si_signo));
    leadership_ask_stop(lead); /* the duties go to the next generation's worker, or stop */
    struct timespec ack_by;
    int clean = drain(&w, &set, ask, a.master_pid, &ack_by);
    leadership_stop(lead);
    /* The handlers first: the drain's idle test can pass while a handler,
     * its job popped or run, has yet to hand that job to the acker, which
     * must still be there (acker_stop frees it). */
    for (size_t i = 0; clean && i < w.nqueues; i++) {
        handlers_join(&w.queues[i]);
    }
    acker_stop(w.acker, &ack_by);
    jobspan_stop();
    if (!clean) {
        for (size_t i = 0; i < w.nqueues; i++) {
            handlers_detach(&w.queues[i]);
        }
        _exit(0); /* threads are still inside plugin code: do not run fini */
    }
    for (size_t i = 0; i < w.nplugins; i++) {
        hostapi_fini(&w.plugins[i]);
        loader_release(&w.plugins[i].lp);
    }
    throttle_free(&w);
    idem_lost_free(w.lost_claims); /* the receivers, its users, were joined in drain */
    log_info("worker stopped");
    _exit(0);
}
