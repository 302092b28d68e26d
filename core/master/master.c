/*
 * master.c - the master process: supervises generations of worker
 * processes and never loads plugin code. It validates the configuration
 * (and, in a probe child, its plugins) before anything starts; respawns a
 * dead worker with backoff and says why it died and which message it was
 * on; on SIGHUP builds a new generation, waits until it is ready and only
 * then lets the old one drain; on SIGTERM drains everything and exits 0.
 * Signal handlers only set flags; the loop below acts on them.
 */
#include "master.h"

#include "childargs.h"
#include "backoff.h"
#include "clock.h"
#include "cnum.h"
#include "config.h"
#include "envcheck.h"
#include "generation.h"
#include "gone.h"
#include "idem.h"
#include "jobnames.h"
#include "leader.h"
#include "httpd.h"
#include "log.h"
#include "plural.h"
#include "metrics.h"
#include "notify.h"
#include "oneshot.h"
#include "pidfile.h"
#include "probe.h"
#include "storehealth.h"
#include "proctable.h"
#include "proctitle.h"
#include "shm.h"
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#define RESPAWN_BASE_MS  500   /* first respawn delay */
#define RESPAWN_CAP_MS   30000 /* longest respawn delay */
#define RESPAWN_STABLE_S 60    /* a worker alive this long resets its backoff */

struct master {
    const char *path;
    char instance[17]; /* random: part of every worker's lease owner */
    struct spawn_user user;
    int shm_fd;
    struct proc procs[SHM_PROCS];
    struct generation *cur;
    struct generation *next; /* being started by a reload */
    int next_id;
    int reload_pending; /* a reload was asked for while `next` was starting */
    int stopping;       /* STOP_QUIT or STOP_TERM once asked to stop */
    int killed;         /* we had to SIGKILL someone on the way out */
    time_t stop_deadline;
    int ready_announced;
    int start_failed; /* the first generation never got ready: exit 1 */
    int early_stop;   /* the stop signal that came before the loop ran, or 0 */
    int series_due;   /* a worker of an older generation exited: drop_unnamed_series */
    int series_warn;  /* the series table's use was said past 90%: warn_series_use */
    int start_status; /* exit status of a start refused in prepare() */
    const struct master_opts *opts;
    struct pidfile *pidfile;
    char *pid_path; /* the pid file in use (owned), NULL: none */
    struct httpd *httpd;
};

/* How the master was asked to stop: quit lets every running job finish (no
 * deadline); stop (TERM, INT) gives running jobs drain_timeout. */
enum { STOP_QUIT = 1, STOP_TERM = 2 };

static volatile sig_atomic_t got_hup, got_term, got_quit, got_chld, got_usr1;

static void
on_signal(int sig)
{
    if (sig == SIGHUP) {
        got_hup = 1;
    } else if (sig == SIGCHLD) {
        got_chld = 1;
    } else if (sig == SIGQUIT) {
        got_quit = 1;
    } else if (sig == SIGUSR1) {
        got_usr1 = 1;
    } else {
        got_term++;
    }
}

static void
shm_reset_slot(int slot, pid_t pid)
{
    struct shm_proc *p = &shm_region()->procs[slot];
    struct shm_job *jobs = shm_region()->jobs[slot].job;
    for (int i = 0, n = shm_jobs_count(slot); i < n; i++) { /* what the last worker touched */
        __atomic_store_n(&jobs[i].used, 0, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&p->jobs, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&p->crashed_job, -1, __ATOMIC_RELEASE);
    __atomic_store_n(&p->stopped_by, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&p->replace, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&p->names, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&p->pid, pid, __ATOMIC_RELEASE);
}

static int
spawn_worker(struct master *m, struct generation *g, int index)
{
    char err[256];
    int slot = proc_free_slot(m->procs);
    int ctl[2];
    if (slot < 0) {
        log_error("no free worker slot (at most %d worker processes)", SHM_PROCS);
        return -1;
    }
    if (pipe2(ctl, O_CLOEXEC) != 0) {
        log_error("cannot start a worker: pipe: %s", cnum_strerror(errno));
        return -1;
    }
    struct childargs a = {CHILD_WORKER, g->config_fd,  m->path,        m->shm_fd,
                          ctl[1],       slot,          g->id,          getpid(),
                          m->instance,  g->plugin_fds, g->nplugin_fds, -1};
    shm_reset_slot(slot, -1);
    pid_t pid = spawn_child(&a, -1, &m->user, err, sizeof(err));
    close(ctl[1]);
    if (pid < 0) {
        close(ctl[0]);
        shm_reset_slot(slot, 0);
        log_error("cannot start a worker: %s", err);
        return -1;
    }
    shm_reset_slot(slot, pid);
    struct proc *p = &m->procs[slot];
    memset(p, 0, sizeof(*p));
    p->pid = pid;
    p->gen = g->id;
    p->index = index;
    p->ctl = ctl[0];
    p->started = time(NULL);
    p->names = jobnames_hold(g->names);
    g->respawn_at[index] = 0;
    log_debug("started worker %d (generation %d, slot %d)", (int) pid, g->id, slot);
    return 0;
}

static void
start_gen(struct master *m, struct generation *g)
{
    g->id = ++m->next_id;
    g->deadline = time(NULL) + g->cfg->ready_timeout;
    for (int i = 0; i < g->nworkers; i++) {
        if (spawn_worker(m, g, i) != 0) {
            g->respawn_at[i] = clock_mono_ms() + RESPAWN_BASE_MS;
        }
    }
}

/* The generation that runs (c is its configuration) is the one /readyz
 * judges, its queues and its idempotency store (not those of one a reload
 * is still starting, which may be abandoned: a reload that fails while SQS
 * is unreachable would otherwise name the new store or a queue that never
 * ran, not the outage), and the one whose workers run the host's duties
 * (leader.h): a worker of it takes them over from the last generation's.
 * Called on start, on every reload and at the switch. */
static void
follow_running(struct master *m, const struct config *c)
{
    if (httpd_set_queues(m->httpd, c) != 0) {
        log_error("metrics: out of memory for the queues of /readyz (it judges those before)");
    }
    if (m->cur != NULL) {
        leader_set_generation(m->cur->id);
    }
}

/* Master-owned settings take effect on start and on every reload. */
static void
apply_master_settings(struct master *m, const struct config *c)
{
    log_set_level(c->log.level);
    log_set_format(c->log.format);
    if (log_open(c->log.file) != 0) {
        /* Point the log at stderr first: the line that says so must not go to
         * the old file, which may be gone (its directory removed). */
        int why = errno;
        log_open(NULL);
        log_error("log.file %s: %s (logging to stderr)", c->log.file,
                  log_open_why(c->log.file, why));
    }
    char err[512];
    if (httpd_apply(&m->httpd, c, err, sizeof(err)) != 0) {
        log_error("metrics: %s", err);
    }
    follow_running(m, m->cur != NULL ? m->cur->cfg : c);
}

/* "killed by signal 11 (Segmentation fault) while running plugin crashy on
 * message 123 (queue jobs)" - what a dead worker was doing, from the
 * shared process table: the job whose thread faulted when the worker could
 * say, else every job it had inside handle(). names: the worker's
 * generation's, which its job records index. */
static void
describe_death(int slot, const struct jobnames *names, int status, char *out, size_t cap)
{
    struct shm_proc *p = &shm_region()->procs[slot];
    struct shm_job *jobs = shm_region()->jobs[slot].job;
    size_t n;
    if (WIFSIGNALED(status)) {
        n = (size_t) snprintf(out, cap, "killed by signal %d (%s)", WTERMSIG(status),
                              cnum_strsignal(WTERMSIG(status)));
    } else {
        n = (size_t) snprintf(out, cap, "exited with code %d", WEXITSTATUS(status));
    }
    int crashed = __atomic_load_n(&p->crashed_job, __ATOMIC_ACQUIRE);
    int listed = 0;
    for (int i = 0, count = shm_jobs_count(slot); i < count && n < cap; i++) {
        struct shm_job *j = &jobs[i];
        if (__atomic_load_n(&j->used, __ATOMIC_ACQUIRE) != 2 || (crashed >= 0 && i != crashed)) {
            continue;
        }
        const char *lead = crashed >= 0 ? " while running" : listed ? "," : " with in flight:";
        const char *queue, *plugin;
        jobnames_get(names, j->queue, j->plugin, __atomic_load_n(&p->names, __ATOMIC_ACQUIRE),
                     &queue, &plugin);
        n += (size_t) snprintf(out + n, cap - n, "%s plugin %s on message %s (queue %s)", lead,
                               plugin, j->message_id, queue);
        listed++;
    }
}

/* The jobs that crashed the worker in slot, their records in the shared
 * table (read, and queued, before the slot is reset): the job whose thread
 * faulted when the worker could say; else, when it died on its own, every
 * job it had inside handle(). On its own: a signal or any exit code, 0
 * included, that no stop signal asked for (stopped: the master's; stopped_by:
 * another process's, after which it drains and exits 0). A worker leaves
 * with 0 only when told to, so a 0 nobody asked for is plugin code's
 * _exit(0) (exit(0) on a job's thread names its job): not counting it would
 * run that message, and kill its worker, for ever. None when it was
 * stopped: its jobs were cut short, not at fault. Returns how many. */
static size_t
crash_culprits(int slot, int status, int stopped, int stopped_by,
               const struct shm_job *out[SHM_JOBS])
{
    struct shm_proc *p = &shm_region()->procs[slot];
    struct shm_job *jobs = shm_region()->jobs[slot].job;
    int crashed = __atomic_load_n(&p->crashed_job, __ATOMIC_ACQUIRE);
    int known = crashed >= 0 && crashed < SHM_JOBS &&
                __atomic_load_n(&jobs[crashed].used, __ATOMIC_ACQUIRE) == 2;
    int clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    int on_its_own = !stopped && !(clean && stopped_by > 0);
    size_t n = 0;
    for (int i = 0, count = shm_jobs_count(slot); i < count; i++) {
        struct shm_job *j = &jobs[i];
        int culprit = known ? i == crashed : on_its_own;
        if (culprit && __atomic_load_n(&j->used, __ATOMIC_ACQUIRE) == 2) {
            out[n++] = j;
        }
    }
    return n;
}

/* Queue a gone worker's owner and culprits for the janitor (proc/gone.h)
 * (the leader's janitor looks every 250 ms). Never blocks: a full queue loses the owner (its
 * leases lapse on their own, its crash uncounted), which is said. */
static void
hand_to_janitor(const char *owner, const struct shm_job *const *culprits, size_t n)
{
    int kept = gone_push(owner, clock_mono_ms(), culprits, n);
    if (kept < 0) {
        log_error("gone worker %s: %d gone workers wait for the janitor already (is PostgreSQL "
                  "down?): its keys wait out their leases%s",
                  owner, SHM_GONE,
                  n > 0 ? ", and the run of the job that crashed it is not counted "
                          "(max_receives still bounds its deliveries)"
                        : "");
    } else if ((size_t) kept < n) {
        log_error("gone worker %s: no room for %zu of the %zu jobs that crashed it: their runs "
                  "are not counted (max_receives still bounds their deliveries)",
                  owner, n - (size_t) kept, n);
    }
}

static void
schedule_respawn(struct generation *g, struct proc *p, const char *cause)
{
    int i = p->index;
    if (time(NULL) - p->started >= RESPAWN_STABLE_S) {
        g->failures[i] = 0;
    }
    g->failures[i]++;
    long long delay = (long long) backoff_ceiling(RESPAWN_BASE_MS, RESPAWN_CAP_MS, g->failures[i]);
    g->respawn_at[i] = clock_mono_ms() + delay;
    metrics_count(MET_RESTARTS, cause, NULL, NULL, 1);
    log_info("worker %d (generation %d) exited; starting another in its place in %.1fs",
             (int) p->pid, g->id, (double) delay / 1000);
}

/* A starting generation failed: its workers drain, the running one stays. */
static void
abandon_next(struct master *m, const char *why)
{
    log_error("reload failed: %s; generation %d keeps running", why,
              m->cur != NULL ? m->cur->id : 0);
    metrics_count(MET_RELOADS, "failed", NULL, NULL, 1);
    proc_signal(m->procs, m->next->id, SIGTERM, 1);
    gen_free(m->next);
    m->next = NULL;
    if (m->cur != NULL) {
        apply_master_settings(m, m->cur->cfg); /* the reload applied the new ones */
    }
    notify_ready("running (reload failed)");
}

/* Say, once per file, that a plugin file a running generation checked was
 * written in place since (a `cp` over a loaded .so; README, "Install"):
 * the likely cause of the crashes that follow, which the operator would
 * otherwise blame on the messages they took down. */
static void
say_written(struct master *m)
{
    struct generation *gens[2] = {m->cur, m->next};
    for (int k = 0; k < 2; k++) {
        int i;
        while (gens[k] != NULL && (i = gen_next_written(gens[k])) >= 0) {
            const struct config_plugin *cp = &gens[k]->cfg->plugins[i];
            log_error("plugin '%s': %s was written in place while generation %d runs it: its "
                      "workers may crash or misbehave, and one started now loads code no check "
                      "saw; install plugin files by rename (install, then mv, as packages do) "
                      "and reload",
                      cp->name, cp->path, gens[k]->id);
        }
    }
}

static void
reap(struct master *m)
{
    /* Only our workers: other children of this process (a probe, a
     * credential_process run by the DLQ monitor's credentials) are waited
     * for by whoever started them, and waitpid(-1) would steal them. */
    for (int slot = 0; slot < SHM_PROCS; slot++) {
        struct proc *p = &m->procs[slot];
        int status;
        pid_t pid = p->pid;
        if (pid <= 0 || waitpid(pid, &status, WNOHANG) != pid) {
            continue;
        }
        char what[1024];
        describe_death(slot, p->names, status, what, sizeof(what));
        int clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        int stopped_by = __atomic_load_n(&shm_region()->procs[slot].stopped_by, __ATOMIC_ACQUIRE);
        struct generation *g = m->cur != NULL && p->gen == m->cur->id     ? m->cur
                               : m->next != NULL && p->gen == m->next->id ? m->next
                                                                          : NULL;
        if (p->draining || m->stopping) {
            if (clean) {
                log_info("worker %d (generation %d) drained and exited", (int) pid, p->gen);
            } else {
                log_warn("worker %d (generation %d) %s while draining", (int) pid, p->gen, what);
            }
        } else if (clean && stopped_by > 0) {
            log_warn("worker %d (generation %d) drained and exited: pid %d, not the master, "
                     "sent it a stop signal; starting another in its place (to stop twiced, "
                     "signal the master: twiced -s stop, or systemctl stop)",
                     (int) pid, p->gen, stopped_by);
        } else {
            say_written(m);
            log_error("worker %d (generation %d) %s%s", (int) pid, p->gen, what,
                      g != NULL && WIFSIGNALED(status) && gen_any_written(g)
                          ? " (a plugin file of its generation was written in place: see above)"
                          : "");
        }
        if (p->ctl >= 0) {
            close(p->ctl);
        }
        free(p->waiting);
        char owner[CHILDARGS_OWNER_MAX];
        const struct shm_job *culprits[SHM_JOBS];
        childargs_owner(owner, sizeof(owner), pid, p->gen, m->instance);
        size_t nculprits =
            crash_culprits(slot, status, p->draining || m->stopping, stopped_by, culprits);
        hand_to_janitor(owner, culprits, nculprits);
        leader_gone(pid); /* if it ran the host's duties, another worker takes them */
        metrics_forget_proc(slot);
        if (g == NULL) {
            m->series_due = 1; /* its names' series may be freed once its peers are gone */
        }
        jobnames_drop(p->names);
        int was_ready = p->ready, draining = p->draining;
        struct proc dead = *p;
        memset(p, 0, sizeof(*p));
        shm_reset_slot(slot, 0);
        if (g == NULL || draining || m->stopping) {
            continue;
        }
        if (g == m->next && !was_ready) {
            abandon_next(m, "a worker of the new generation died while starting");
            continue;
        }
        if (clean && stopped_by > 0) {
            g->respawn_at[dead.index] = clock_mono_ms(); /* no failure: no backoff */
            metrics_count(MET_RESTARTS, "stopped", NULL, NULL, 1);
            continue;
        }
        schedule_respawn(g, &dead, WIFSIGNALED(status) ? "signal" : "exit");
    }
}

/* Tell whoever waits for the start (twiced -d's foreground process) how it
 * ended; once. */
static void
started(struct master *m, int ok, const char *why)
{
    if (m->opts->started != NULL) {
        m->opts->started(ok, why);
    }
}

static void
status_line(struct master *m, char *out, size_t cap)
{
    snprintf(out, cap, "generation %d: %d/%d workers ready", m->cur->id,
             proc_count(m->procs, m->cur->id, 1), m->cur->nworkers);
}

static void begin_stop(struct master *m);

/* The first generation did not get ready within ready_timeout: say why
 * (twiced -d's foreground process and systemd see the exit code) and stop. */
static void
fail_start(struct master *m, const char *why)
{
    char msg[1200];
    snprintf(msg, sizeof(msg), "generation %d was not ready within ready_timeout (%ds): %s",
             m->cur->id, m->cur->cfg->ready_timeout, why);
    log_error("not started: %s", msg);
    started(m, 0, msg);
    m->ready_announced = 1; /* never "ready" now */
    m->start_failed = 1;
    got_term = 1;
    begin_stop(m);
}

/* Progress of generations: the first one's readiness, a reload's switch. */
static void
check_generations(struct master *m)
{
    char status[128];
    if (m->next != NULL) {
        if (proc_count(m->procs, m->next->id, 1) == m->next->nworkers) {
            struct generation *old = m->cur;
            m->cur = m->next;
            m->next = NULL;
            proc_signal(m->procs, old->id, SIGTERM, 1);
            log_info("reload done: generation %d ready, generation %d draining", m->cur->id,
                     old->id);
            metrics_count(MET_RELOADS, "ok", NULL, NULL, 1);
            follow_running(m, m->cur->cfg);
            storehealth_relearn(); /* a new table's workers created it */
            gen_free(old);
            status_line(m, status, sizeof(status));
            notify_ready(status);
        } else if (time(NULL) > m->next->deadline) {
            char why[1024], msg[1200];
            proc_not_ready_why(m->procs, m->next->id, m->next->nworkers, why, sizeof(why));
            snprintf(msg, sizeof(msg), "generation %d was not ready within %ds (%s)", m->next->id,
                     m->next->cfg->ready_timeout, why);
            abandon_next(m, msg);
        }
    }
    int all_ready = m->cur != NULL && proc_count(m->procs, m->cur->id, 1) == m->cur->nworkers;
    char why[1024] = "";
    if (!all_ready && m->cur != NULL) {
        proc_not_ready_why(m->procs, m->cur->id, m->cur->nworkers, why, sizeof(why));
    }
    httpd_set_ready(m->httpd, all_ready, why);
    char store[600] = "";
    if (m->cur != NULL) {
        storehealth_ok(
            storehealth_key(m->cur->cfg->idempotency.dsn, m->cur->cfg->idempotency.table), store,
            sizeof(store));
    }
    httpd_set_store(m->httpd, store);
    if (!m->ready_announced && !all_ready && m->cur != NULL && time(NULL) > m->cur->deadline) {
        fail_start(m, why);
    }
    if (!m->ready_announced && all_ready) {
        m->ready_announced = 1;
        storehealth_relearn(); /* its workers created the keys table */
        status_line(m, status, sizeof(status));
        log_info("ready: %s", status);
        notify_ready(status);
        started(m, 1, NULL);
    }
}

/* The stop signals (TERM, INT, QUIT) in *set. */
static void
stop_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGQUIT);
}

/* The stop signal (TERM, INT or QUIT) held pending, or 0: they are blocked
 * outside the loop's wait (and from the start: hold_early) until it takes
 * them. */
static int
pending_stop(void)
{
    sigset_t pending;
    if (sigpending(&pending) != 0) {
        return 0;
    }
    return sigismember(&pending, SIGTERM) == 1   ? SIGTERM
           : sigismember(&pending, SIGINT) == 1  ? SIGINT
           : sigismember(&pending, SIGQUIT) == 1 ? SIGQUIT
                                                 : 0;
}

/* Each of from's problems added to to, after to's own. */
static void
take_problems(struct diag *to, const struct diag *from)
{
    for (size_t i = 0; i < from->n; i++) {
        diag_add(to, NULL, 0, "%s", from->lines[i]);
    }
}

/*
 * Check g's plugins in the probe child (gen_probe) and then, kind not 0,
 * the store or SQS (oneshot.h; was, running and gen for a reload) in the
 * same child, so that the master runs no PostgreSQL or SQS code for them:
 * the check's outcome in chk->result, its problems in chk->d (set by the
 * caller). gen_probe's return value.
 */
static int
probe_and_check(struct generation *g, const char *path, int kind, const struct config *was,
                const struct idem_identity *running, int gen, const sigset_t *stop_on,
                struct diag *d, struct probe_check *chk)
{
    chk->fd = kind != 0 ? oneshot_request_fd(kind, was, running, gen) : -1;
    chk->timeout = kind != 0 ? oneshot_timeout(kind, g->cfg) : 0;
    int asked = chk->fd >= 0, why = errno;
    int rc = gen_probe(g, path, asked ? chk : NULL, stop_on, d);
    if (asked) {
        close(chk->fd);
    } else {
        chk->result = PROBE_CHECK_NOT_RUN;
    }
    if (kind != 0 && !asked && rc == 0) {
        diag_add(chk->d, path, 0, "cannot ask for the check of PostgreSQL and SQS: %s",
                 cnum_strerror(why));
        chk->result = PROBE_CHECK_REFUSED;
    }
    return rc;
}

/* A reload's configuration, checked: its plugins (in the probe child), what
 * a reload may not change (config_reload_refused), then, when that passed,
 * whether its store is the running one (storecheck_reload, in the same
 * child). NULL when refused or cut short by a stop; every problem in d, in
 * that order. *probed: the plugins passed (or the stop came after them,
 * during the store check: chk->result PROBE_CHECK_CUT). */
static struct generation *
reload_load(struct master *m, const sigset_t *stop_on, struct diag *d, struct probe_check *chk,
            int *probed)
{
    struct diag refused = DIAG_INIT;
    struct idem_identity running;
    int known = storehealth_identity(
                    storehealth_key(m->cur->cfg->idempotency.dsn, m->cur->cfg->idempotency.table),
                    &running, sizeof(running)) == 0;
    struct generation *g = gen_read(m->path, d);
    int bad = g != NULL && config_reload_refused(m->cur->cfg, g->cfg, &refused) > 0;
    int rc = g == NULL ? -1
                       : probe_and_check(g, m->path, bad ? 0 : ONESHOT_RELOAD, m->cur->cfg,
                                         known ? &running : NULL, m->cur->id, stop_on, d, chk);
    *probed = rc == 0 || chk->result == PROBE_CHECK_CUT;
    if (rc == 0) {
        take_problems(d, &refused);
        take_problems(d, chk->d);
    }
    if (rc != 0 || bad || chk->result != PROBE_CHECK_PASSED) {
        gen_free(g);
        g = NULL;
    }
    diag_free(&refused);
    return g;
}

/* What a reload's check found wrong (FILE:LINE: ...), one error line each:
 * logged whether the reload is refused or abandoned for a stop. */
static void
log_reload_problems(const struct diag *d)
{
    for (size_t i = 0; i < d->n; i++) {
        log_error("reload: %s", d->lines[i]);
    }
}

/* The start and a reload: config_warnings as warnings in the log. */
static void
log_config_warnings(const struct config *c, const char *pfx)
{
    struct diag warn = DIAG_INIT;
    config_warnings(c, &warn);
    for (size_t i = 0; i < warn.n; i++) {
        log_warn("%s%s", pfx, warn.lines[i]);
    }
    diag_free(&warn);
}

/* A reload: the new configuration checked (its plugins in a probe, cut
 * short by a stop signal, which the loop then takes: a stop does not wait
 * for a plugin's slow init), then started beside the running generation. */
static void
reload(struct master *m)
{
    notify_reloading();
    log_info("reloading %s", m->path);
    struct diag d = DIAG_INIT, store = DIAG_INIT;
    struct probe_check chk = {.d = &store};
    sigset_t stop_on;
    stop_signals(&stop_on);
    int probed = 0;
    struct generation *g = reload_load(m, &stop_on, &d, &chk, &probed);
    diag_free(&store); /* taken into d */
    if (!probed && pending_stop() != 0) {
        log_reload_problems(&d); /* a stop does not hide what was wrong */
        log_warn("reload abandoned: a stop signal came while its plugins were checked; "
                 "generation %d stops unchanged",
                 m->cur->id);
        diag_free(&d);
        return;
    }
    if (pending_stop() != 0) {
        log_reload_problems(&d);
        log_warn("reload abandoned: a stop signal came while it was checked; generation %d "
                 "stops unchanged",
                 m->cur->id);
        gen_free(g);
        diag_free(&d);
        return;
    }
    log_reload_problems(&d);
    if (g == NULL) {
        size_t n = diag_count(&d);
        log_error("reload refused (%zu problem%s); generation %d keeps running unchanged", n,
                  plural_s(n), m->cur->id);
        diag_free(&d);
        metrics_count(MET_RELOADS, "failed", NULL, NULL, 1);
        notify_ready("running (reload refused)");
        return;
    }
    diag_free(&d);
    log_config_warnings(g->cfg, "reload: ");
    if (config_restart_needed(m->cur->cfg, g->cfg, &d) > 0) {
        for (size_t i = 0; i < d.n; i++) {
            log_warn("reload: %s", d.lines[i]);
        }
    }
    diag_free(&d);
    char *want = g->cfg->pid_file != NULL ? pidfile_configured(m->path, g->cfg->pid_file) : NULL;
    const char *have = m->pid_path;
    int same = want == NULL ? have == NULL : have != NULL && strcmp(want, have) == 0;
    if (m->opts->pid_file == NULL && !same) {
        log_warn("reload: pid_file: changing it needs a restart (keeping %s)",
                 have != NULL ? have : "none");
    }
    free(want);
    apply_master_settings(m, g->cfg);
    m->next = g;
    start_gen(m, g);
}

/*
 * A reload request (SIGHUP). While a reload is still starting its generation,
 * the request waits for it to end (ready or abandoned) and then runs: it reads
 * the configuration again, so the newest file wins and a burst of requests
 * becomes one more reload. A request is never dropped, except by a stop.
 */
static void
request_reload(struct master *m)
{
    if (m->stopping) {
        log_info("reload requested while stopping; ignored");
        return;
    }
    if (m->next == NULL) {
        reload(m);
        return;
    }
    if (!m->reload_pending) {
        log_info("reload requested while generation %d is still starting: queued, it runs "
                 "with the newest configuration once generation %d is ready or abandoned",
                 m->next->id, m->next->id);
    }
    m->reload_pending = 1;
}

/* Whether a queue's or plugin's name is in the running generation's
 * configuration or in that of the one a reload starts. */
static int
live_name(void *arg, const char *name, int plugin)
{
    const struct master *m = arg;
    return jobnames_has(m->cur->names, name, plugin) ||
           (m->next != NULL && jobnames_has(m->next->names, name, plugin));
}

/* Once the workers of generations before the running one and the one a
 * reload starts have all exited (series_due: one did since the last time),
 * the metric series of queue and plugin names neither configuration has are
 * freed (metrics_drop_unnamed): nothing can update them any more, as the
 * master's threads run one of those two configurations. Not while a live
 * worker's names are not its generation's (a respawned worker read changed
 * @include files, or has not said yet): tried again on the next pass. */
static void
drop_unnamed_series(struct master *m)
{
    if (!m->series_due || m->cur == NULL || m->cur->names == NULL ||
        (m->next != NULL && m->next->names == NULL)) {
        return;
    }
    for (int slot = 0; slot < SHM_PROCS; slot++) {
        const struct proc *p = &m->procs[slot];
        uint32_t said = __atomic_load_n(&shm_region()->procs[slot].names, __ATOMIC_ACQUIRE);
        int ours = p->gen == m->cur->id || (m->next != NULL && p->gen == m->next->id);
        if (p->pid > 0 && (!ours || !jobnames_checks(p->names, said))) {
            return;
        }
    }
    int freed = metrics_drop_unnamed(live_name, m);
    if (freed >= 0) {
        m->series_due = 0;
    }
    if (freed > 0) {
        log_info("metrics: %d series of queues and plugins no longer configured freed", freed);
    }
}

/* The series table past 90% full, said once (again only after it fell
 * below 80%: metrics_series_alarm), while there is time to act: once it is
 * full, new series go unrecorded. What fills it is names: each queue and
 * plugin name takes its series, and an older generation's are freed only
 * once its workers have exited (drop_unnamed_series). */
static void
warn_series_use(struct master *m)
{
    int used = metrics_series_alarm(&m->series_warn);
    if (used >= 0) {
        log_warn("metrics: the series table is %d%% full (%d of %d series, "
                 "twice_metric_series): once full, updates of new series are not recorded; "
                 "configure fewer distinct queue and plugin names (a version in a name makes "
                 "new series at every deploy), or restart twiced if workers of an older "
                 "generation still run and keep their names' series",
                 (int) ((long long) used * 100 / SHM_SERIES), used, SHM_SERIES);
    }
}

/* Workers that asked to be replaced (a handler ran past its time limit and
 * grace, and a thread cannot be stopped; or one recycled, past worker_max_rss,
 * which said so itself): start the replacement now, not after a crash's
 * backoff, then let the old one drain as a reload does (draining: its exit is
 * no crash); its other jobs finish or are given back, not counted. */
static void
replace_asked(struct master *m)
{
    for (int slot = 0; slot < SHM_PROCS; slot++) {
        struct proc *p = &m->procs[slot];
        enum shm_replace why;
        if (p->pid <= 0 || (why = shm_take_replace(slot)) == SHM_REPLACE_NONE || p->draining) {
            continue;
        }
        struct generation *g = m->cur != NULL && p->gen == m->cur->id     ? m->cur
                               : m->next != NULL && p->gen == m->next->id ? m->next
                                                                          : NULL;
        if (why == SHM_REPLACE_RSS || why == SHM_REPLACE_JOBS) {
            log_info("worker %d (generation %d) recycles: starting another in its place",
                     (int) p->pid, p->gen);
            metrics_count(MET_RECYCLED, why == SHM_REPLACE_RSS ? "rss" : "jobs", NULL, NULL, 1);
        } else {
            log_warn("worker %d (generation %d): a handler ran past its timeout; replacing the "
                     "worker",
                     (int) p->pid, p->gen);
            metrics_count(MET_RESTARTS, "timeout", NULL, NULL, 1);
        }
        kill(p->pid, SIGTERM);
        p->draining = 1;
        if (g != NULL && spawn_worker(m, g, p->index) != 0) {
            g->respawn_at[p->index] = clock_mono_ms() + RESPAWN_BASE_MS;
        }
    }
}

static void
respawn_due(struct master *m)
{
    struct generation *gens[2] = {m->cur, m->next};
    long long now = clock_mono_ms();
    for (int k = 0; k < 2; k++) {
        struct generation *g = gens[k];
        for (int i = 0; g != NULL && i < g->nworkers; i++) {
            if (g->respawn_at[i] != 0 && g->respawn_at[i] <= now && spawn_worker(m, g, i) != 0) {
                g->respawn_at[i] = now + RESPAWN_CAP_MS;
            }
        }
    }
}

static int
next_timeout(const struct master *m)
{
    long long next = clock_mono_ms() + 1000;
    const struct generation *gens[2] = {m->cur, m->next};
    for (int k = 0; k < 2; k++) {
        for (int i = 0; gens[k] != NULL && i < gens[k]->nworkers; i++) {
            if (gens[k]->respawn_at[i] != 0 && gens[k]->respawn_at[i] < next) {
                next = gens[k]->respawn_at[i];
            }
        }
    }
    long long left = next - clock_mono_ms();
    return left < 0 ? 0 : (int) left;
}

/* quit (SIGQUIT, twiced -s quit): workers stop receiving and finish every
 * running job, however long that takes; a stop signal later cuts it short. */
static void
begin_quit(struct master *m)
{
    got_quit = 0;
    if (m->stopping) {
        return;
    }
    m->stopping = STOP_QUIT;
    notify_stopping();
    int n = proc_count(m->procs, -1, 0);
    log_info("quitting: %d worker%s finish%s %s running jobs, however long they take "
             "(twiced -s stop or TERM cuts it to drain_timeout)",
             n, plural_s(n), n == 1 ? "es" : "", n == 1 ? "its" : "their");
    proc_signal(m->procs, -1, SIGQUIT, 1);
}

static void
begin_stop(struct master *m)
{
    if (m->stopping != STOP_TERM) {
        m->stopping = STOP_TERM;
        m->stop_deadline = time(NULL) + m->cur->cfg->drain_timeout + 15;
        notify_stopping();
        int n = proc_count(m->procs, -1, 0);
        log_info("stopping: draining %d worker%s", n, plural_s(n));
        proc_signal(m->procs, -1, SIGTERM, 1);
    } else if (got_term > 1) {
        /* A second signal: workers give back what runs and leave at once. */
        log_warn("second stop signal: workers give back their jobs now");
        proc_signal(m->procs, -1, SIGTERM, 1);
        m->stop_deadline = time(NULL) + 5;
        got_term = 1;
    }
    if (time(NULL) > m->stop_deadline && proc_count(m->procs, -1, 0) > 0) {
        log_error("workers did not stop in time: killing them");
        proc_signal(m->procs, -1, SIGKILL, 1);
        m->killed = 1;
        m->stop_deadline = time(NULL) + 5;
    }
}

/* SIGUSR1 (twiced -s reopen), what logrotate sends once it moved the log
 * file away: the master opens log.file again by its name, then every
 * worker of every generation does (a worker not yet past its start holds
 * the signal until it is, see spawn.c). Nothing else changes: no reload. */
static void
reopen_logs(struct master *m)
{
    const struct generation *g = m->next != NULL ? m->next : m->cur; /* whose settings apply */
    const char *file = g != NULL ? g->cfg->log.file : NULL;
    if (file != NULL && log_open(file) != 0) {
        log_error("log.file %s: cannot open it again: %s (lines go where they went)", file,
                  log_open_why(file, errno));
    } else if (file != NULL) {
        log_info("log file reopened");
    }
    proc_signal(m->procs, -1, SIGUSR1, 0);
}

static void
loop_once(struct master *m, const sigset_t *wait_mask)
{
    struct pollfd pfd[SHM_PROCS];
    int slots[SHM_PROCS];
    nfds_t n = 0;
    for (int i = 0; i < SHM_PROCS; i++) {
        if (m->procs[i].pid > 0 && m->procs[i].ctl >= 0) {
            pfd[n].fd = m->procs[i].ctl;
            pfd[n].events = POLLIN;
            slots[n++] = i;
        }
    }
    int ms = next_timeout(m);
    struct timespec ts = {ms / 1000, (long) (ms % 1000) * 1000000L};
    int rc = ppoll(pfd, n, &ts, wait_mask);
    for (nfds_t i = 0; rc > 0 && i < n; i++) {
        if (pfd[i].revents != 0) {
            proc_read_ready(&m->procs[slots[i]]);
        }
    }
    if (got_chld) {
        got_chld = 0;
        reap(m);
    }
    if (got_quit) {
        begin_quit(m);
    }
    if (got_term) {
        begin_stop(m);
    }
    if (got_hup) {
        got_hup = 0;
        request_reload(m);
    }
    if (got_usr1) {
        got_usr1 = 0;
        reopen_logs(m);
    }
    if (!m->stopping) {
        replace_asked(m);
        respawn_due(m);
        check_generations(m);
        say_written(m);
        drop_unnamed_series(m);
        warn_series_use(m);
    }
    if (m->reload_pending && m->next == NULL && !m->stopping) {
        m->reload_pending = 0;
        log_info("running the reload requested while generation %d was starting", m->cur->id);
        reload(m);
    }
}

/* SIGHUP, SIGUSR1 and the stop signals from the very start (reading the
 * configuration, the probe of its plugins, detaching): held until the loop
 * takes them, instead of their default action, which would kill twiced for
 * a `kill -HUP` or a log rotation's USR1 sent while it starts, and for a
 * stop leave the pid file and an orphaned probe behind with nothing in the
 * log. Blocked, not caught, so that no call of the start is interrupted;
 * children get a clean mask (spawn.c). A stop is looked for while the probe
 * runs (it is cut short) and before anything more starts: stopped_early. */
static void
hold_early(void)
{
    sigset_t early;
    stop_signals(&early);
    sigaddset(&early, SIGHUP);
    sigaddset(&early, SIGUSR1);
    sigprocmask(SIG_BLOCK, &early, NULL);
}

/* A stop signal held since the start (hold_early) is pending: remember
 * which in m->early_stop (the loop never runs then) and return 1. */
static int
stopped_early(struct master *m)
{
    if (m->early_stop == 0) {
        m->early_stop = pending_stop();
    }
    return m->early_stop != 0;
}

static void
install_signals(sigset_t *wait_mask)
{
    sigset_t block;
    sigemptyset(&block);
    int sigs[] = {SIGHUP, SIGTERM, SIGINT, SIGQUIT, SIGCHLD, SIGUSR1};
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
        sigaddset(&block, sigs[i]);
    }
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_signal;
        sa.sa_mask = block; /* one handler at a time: got_term counts every signal */
        sigaction(sigs[i], &sa, NULL);
    }
    signal(SIGPIPE, SIG_IGN);
    sigprocmask(SIG_BLOCK, &block, wait_mask);
    sigdelset(wait_mask, SIGHUP);
    sigdelset(wait_mask, SIGTERM);
    sigdelset(wait_mask, SIGINT);
    sigdelset(wait_mask, SIGQUIT);
    sigdelset(wait_mask, SIGCHLD);
    sigdelset(wait_mask, SIGUSR1);
}

static void
print_problems(const struct diag *d)
{
    for (size_t i = 0; i < d->n; i++) {
        fprintf(stderr, "%s\n", d->lines[i]);
    }
}

/* log.file cannot be opened (err): the problem at the setting's FILE:LINE,
 * as twiced -t and a refused start print it. */
static void
log_file_problem(const struct config *c, int err, struct diag *d)
{
    diag_add(d, c->log.file_src != NULL ? c->log.file_src : c->file, c->log.file_line,
             "log.file %s: cannot be written: %s", c->log.file, log_open_why(c->log.file, err));
}

/* twiced -t: log.file must take lines, as twiced will not start without it;
 * asked without creating the file. 1 when it added a problem to d. */
static int
check_log_file(const struct config *c, struct diag *d)
{
    if (c->log.file == NULL || log_can_open(c->log.file) == 0) {
        return 0;
    }
    log_file_problem(c, errno, d);
    return 1;
}

/* twiced -t: the user the workers run as must exist, as twiced will not
 * start without it (master_start resolves it the same way). 1 when it added
 * a problem to d. */
static int
check_user(const struct config *c, struct diag *d)
{
    struct spawn_user u;
    char err[256];
    if (spawn_resolve_user(c->user, &u, err, sizeof(err)) == 0) {
        return 0;
    }
    diag_add(d, c->user_file != NULL ? c->user_file : c->file, c->user_line, "%s", err);
    return 1;
}

/* twiced -t: pid_file must be one the start can use (pidfile_check: a
 * directory or a symbolic link is refused there). 1 when it added a problem
 * to d. */
static int
check_pid_file(const struct config *c, struct diag *d)
{
    char err[PATH_MAX + 256];
    char *path = c->pid_file != NULL ? pidfile_configured(c->file, c->pid_file) : NULL;
    int bad = path != NULL && pidfile_check(path, err, sizeof(err)) != 0;
    if (bad) {
        diag_add(d, c->pid_file_src != NULL ? c->pid_file_src : c->file, c->pid_file_line, "%s",
                 err);
    }
    free(path);
    return bad;
}

/* twiced -t: aws.ca_file must be a file twiced can read; with a missing one
 * (or a directory) every https call to AWS fails its certificate check and
 * the workers never become ready. Checked here, not at every load: a bundle
 * being replaced as a worker starts must not stop it. 1 when it added a
 * problem to d. */
static int
check_ca_file(const struct config *c, struct diag *d)
{
    const char *path = c->aws.ca_file;
    if (path == NULL) {
        return 0;
    }
    const char *why = NULL;
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        why = cnum_strerror(errno);
    } else if (fstat(fd, &st) != 0) {
        why = cnum_strerror(errno);
    } else if (!S_ISREG(st.st_mode)) {
        why = "not a regular file";
    }
    if (fd >= 0) {
        close(fd);
    }
    if (why != NULL) {
        diag_add(d, c->aws.ca_file_src != NULL ? c->aws.ca_file_src : c->file, c->aws.ca_file_line,
                 "aws.ca_file %s: %s (no https endpoint could be verified)", path, why);
    }
    return why != NULL;
}

/* twiced -t: what does not fail the check but would surprise the operator
 * (tracing off in every worker, a queue that polls another's DLQ), on
 * stderr as "warning: ...". */
static void
print_warnings(const struct config *c)
{
    char why[768];
    struct diag warn = DIAG_INIT; /* escaped for the terminal by diag_add */
    config_warnings(c, &warn);
    if (envcheck_tracing(c, why, sizeof(why)) != 0) {
        diag_add(&warn, NULL, 0, "%s", why);
    }
    for (size_t i = 0; i < warn.n; i++) {
        fprintf(stderr, "warning: %s\n", warn.lines[i]);
    }
    diag_free(&warn);
}

int
master_check(const char *path, int connect)
{
    struct diag d = DIAG_INIT, conn = DIAG_INIT;
    struct probe_check chk = {.d = &conn};
    struct generation *g = gen_read(path, &d);
    if (g != NULL && probe_and_check(g, path, connect ? ONESHOT_CONNECT : 0, NULL, NULL, 0, NULL,
                                     &d, &chk) != 0) {
        gen_free(g);
        g = NULL;
    }
    int rc = g != NULL ? 0 : 1;
    if (g != NULL && check_log_file(g->cfg, &d)) {
        rc = 1;
    }
    if (g != NULL && check_user(g->cfg, &d)) {
        rc = 1;
    }
    if (g != NULL && check_pid_file(g->cfg, &d)) {
        rc = 1;
    }
    if (g != NULL && check_ca_file(g->cfg, &d)) {
        rc = 1;
    }
    if (g != NULL && envcheck_aws(g->cfg, &d) > 0) {
        rc = 1;
    }
    if (g != NULL && connect && chk.result != PROBE_CHECK_PASSED) {
        take_problems(&d, &conn); /* preflight_connect's, in the probe child */
        rc = 1;
    }
    print_problems(&d);
    if (g != NULL) {
        print_warnings(g->cfg);
    }
    if (g != NULL && rc == 0) {
        diag_print_line(stdout, "%s: configuration and %zu plugin%s OK", path, g->cfg->nplugins,
                        plural_s(g->cfg->nplugins));
        if (connect) {
            size_t buckets = 0;
            for (size_t i = 0; i < g->cfg->nqueues; i++) {
                buckets += g->cfg->queues[i].payload_bucket != NULL;
            }
            printf("%s: PostgreSQL and %zu queue%s with their dead-letter queues answer", path,
                   g->cfg->nqueues, plural_s(g->cfg->nqueues));
            if (buckets > 0) {
                printf(", and %zu payload bucket%s", buckets, plural_s(buckets));
            }
            putchar('\n');
        }
    }
    diag_free(&conn);
    diag_free(&d);
    gen_free(g);
    return rc;
}

/* The first generation's configuration and plugins, the environment's AWS
 * settings, and whether its store takes writes (the plugins and the store
 * in the probe child). NULL (the problems printed)
 * when twiced must not start; m->start_status is MASTER_EXIT_CONFIG then
 * unless the store was the cause (a standby may be promoted: retried). */
static struct generation *
load_first(struct master *m)
{
    struct diag d = DIAG_INIT, env = DIAG_INIT, store = DIAG_INIT;
    struct probe_check chk = {.d = &store};
    sigset_t stop_on;
    stop_signals(&stop_on);
    struct generation *g = gen_read(m->path, &d);
    /* The environment is asked first (said after the plugins' problems): the
     * store is checked, in the probe child, only when it has none. */
    int env_bad = g != NULL && envcheck_aws(g->cfg, &env) > 0;
    if (g != NULL && probe_and_check(g, m->path, env_bad ? 0 : ONESHOT_START, NULL, NULL, 0,
                                     &stop_on, &d, &chk) != 0) {
        gen_free(g);
        g = NULL;
    }
    if (g == NULL || env_bad) {
        m->start_status = MASTER_EXIT_CONFIG;
        if (g != NULL) {
            take_problems(&d, &env);
        }
        gen_free(g);
        g = NULL;
    } else if (chk.result != PROBE_CHECK_PASSED) { /* retried: a standby may be promoted */
        take_problems(&d, &store);
        gen_free(g);
        g = NULL;
    }
    print_problems(&d);
    diag_free(&store);
    diag_free(&env);
    diag_free(&d);
    return g;
}

/* The workers' user and the pid file, for the start. 0, or -1 with err and
 * m->start_status: MASTER_EXIT_CONFIG for what twiced -t reports (no such
 * user, a pid_file that is a directory or a symbolic link), 1 for a pid file
 * a running twiced holds (it may be stopping: a restart may take it). */
static int
take_user_and_pid_file(struct master *m, const struct config *c, char *err, size_t cap)
{
    if (spawn_resolve_user(c->user, &m->user, err, cap) != 0 ||
        (m->pid_path != NULL && pidfile_check(m->pid_path, err, cap) != 0)) {
        m->start_status = MASTER_EXIT_CONFIG;
        return -1;
    }
    if (m->pid_path != NULL && pidfile_acquire(m->pid_path, &m->pidfile, err, cap) != 0) {
        return -1;
    }
    return 0;
}

/* Everything before the first generation: the configuration and plugins,
 * the workers' user, the pid file, detaching, the shared region. Returns the
 * generation to start, or NULL (logged, m->start_status the exit status)
 * when twiced must not start; NULL with m->early_stop set when a stop
 * signal came first (not logged). */
static struct generation *
prepare(struct master *m)
{
    char err[512];
    struct diag d = DIAG_INIT;
    struct generation *g = load_first(m);
    if (g == NULL && stopped_early(m)) {
        return NULL; /* the probe was cut short, or its problems no longer matter */
    }
    if (g == NULL) {
        log_error("not starting: %s has problems (listed above)", m->path);
        return NULL;
    }
    const char *given = m->opts->pid_file, *set = g->cfg->pid_file;
    if ((given != NULL || set != NULL) &&
        (m->pid_path = given != NULL ? strdup(given) : pidfile_configured(m->path, set)) == NULL) {
        log_error("not starting: out of memory");
        gen_free(g);
        return NULL;
    }
    /* Before detaching: a daemon that cannot write its log would say nothing
     * at all, not even why. */
    if (g->cfg->log.file != NULL && log_open(g->cfg->log.file) != 0) {
        int why = errno;
        log_file_problem(g->cfg, why, &d); /* its FILE:LINE, as twiced -t says it */
        print_problems(&d);
        diag_free(&d);
        m->start_status = MASTER_EXIT_CONFIG;
        log_error("not starting: log.file %s: %s", g->cfg->log.file,
                  log_open_why(g->cfg->log.file, why));
        gen_free(g);
        return NULL;
    }
    if (take_user_and_pid_file(m, g->cfg, err, sizeof(err)) != 0) {
        log_error("not starting: %s", err);
        gen_free(g);
        return NULL;
    }
    if (stopped_early(m)) { /* before detaching: a stop sent to this pid is not lost */
        gen_free(g);
        return NULL;
    }
    char why[768]; /* in log.file, and on the terminal before -d; the log escapes it */
    if (envcheck_tracing(g->cfg, why, sizeof(why)) != 0) {
        log_warn("%s", why);
    }
    log_config_warnings(g->cfg, "");
    if (m->opts->detach != NULL && g->cfg->log.file == NULL) {
        /* said while stderr is still the terminal: after it, nothing is */
        log_warn("log.file is not set: the daemon's log lines (-d) are discarded; set "
                 "log.file in %s, or run twiced in the foreground under a supervisor",
                 m->path);
    }
    if (m->opts->detach != NULL && m->opts->detach() != 0) {
        gen_free(g);
        return NULL;
    }
    if (m->pidfile != NULL && pidfile_write(m->pidfile, err, sizeof(err)) != 0) {
        log_error("not starting: %s", err);
        gen_free(g);
        return NULL;
    }
    m->shm_fd = shm_create();
    if (m->shm_fd < 0) {
        log_error("not starting: shared memory: %s", cnum_strerror(errno));
        gen_free(g);
        return NULL;
    }
    return g;
}

/* A stop signal came while twiced started (m->early_stop): no worker ran,
 * the probe (if any) is gone, so the stop is done. Says so, tells whoever
 * waits for the start (twiced -d's foreground process), removes the pid
 * file; exit status 0, that of any stop asked for. */
static int
stop_while_starting(struct master *m)
{
    const char *name = m->early_stop == SIGINT    ? "SIGINT"
                       : m->early_stop == SIGQUIT ? "SIGQUIT"
                                                  : "SIGTERM";
    char why[64];
    snprintf(why, sizeof(why), "stopped by %s while starting", name);
    log_info("%s while starting: stopping before any worker started", name);
    signal(SIGPIPE, SIG_IGN); /* that process may have gone with the same Ctrl-C */
    started(m, 0, why);
    pidfile_release(m->pidfile);
    free(m->pid_path);
    log_info("stopped");
    return 0;
}

int
master_run(const char *path, const struct master_opts *o)
{
    struct master m;
    memset(&m, 0, sizeof(m));
    m.path = path;
    m.opts = o;
    m.start_status = 1; /* prepare says when the configuration is the cause */
    childargs_instance(m.instance, sizeof(m.instance));
    log_set_role("master");
    hold_early();
    struct generation *g = prepare(&m);
    if (g != NULL && stopped_early(&m)) {
        gen_free(g);
        g = NULL;
    }
    if (g == NULL && m.early_stop != 0) {
        return stop_while_starting(&m);
    }
    if (g == NULL) {
        started(&m, 0, "configuration, plugins or pid file (see the log)");
        pidfile_release(m.pidfile);
        free(m.pid_path);
        return m.start_status;
    }
    proctitle_set("twiced: master");
    metrics_set_proc(-1);
    sigset_t wait_mask;
    install_signals(&wait_mask);
    apply_master_settings(&m, g->cfg);
    log_info("twiced starting: %d worker%s, %zu queue%s, %zu plugin%s", g->cfg->workers,
             plural_s(g->cfg->workers), g->cfg->nqueues, plural_s(g->cfg->nqueues),
             g->cfg->nplugins, plural_s(g->cfg->nplugins));
    m.cur = g;
    start_gen(&m, g);
    leader_set_generation(g->id); /* one of its workers runs the host's duties */
    while (!m.stopping || proc_count(m.procs, -1, 0) > 0) {
        loop_once(&m, &wait_mask);
    }
    httpd_stop(m.httpd);
    gen_free(m.cur);
    gen_free(m.next);
    log_info("stopped");
    pidfile_release(m.pidfile);
    free(m.pid_path);
    return m.killed || m.start_failed ? 1 : 0;
}
