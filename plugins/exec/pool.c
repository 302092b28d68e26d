/*
 * pool.c - the exec plugin's handler processes and the supervisor thread.
 *
 * Why a pool and not one process per handler thread: the plugin cannot
 * see the host's threads (a per-thread process behind a pthread key would
 * be found by nobody at fini, and would die with a thread that exits
 * during a drain while another thread still uses it), one plugin instance
 * may serve several queues, and `processes` may cap the count below the
 * concurrency (handler programs are often heavy). So processes live in
 * slots: a job takes an idle one, or has an empty slot started, or waits;
 * it gives it back after the answer. The pool grows to the number of jobs
 * running at once, at most `processes`.
 *
 * The supervisor thread starts every process (so PR_SET_PDEATHSIG ties
 * them to a thread that lives from init to fini), reads the stderr of
 * idle processes into the log (a handler logging between jobs never
 * blocks), notices an idle process that dies (its pidfd: a child it
 * started may keep its stdout open) or writes to stdout out of turn
 * (killed and reaped), and at fini ends them all. A slot's owner is
 * its state: the supervisor for EMPTY, STARTING and READING, the taker for
 * STARTED, FAILED and BUSY; IDLE slots are shared and change hands under
 * the mutex. A failed process is restarted after a growing delay.
 */
#include "exec.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define BACKOFF_FIRST_MS 100   /* the first restart after a failure */
#define BACKOFF_MAX_MS   10000 /* the longest */
#define READ_ROUND       65536 /* bytes read from one idle process per round */
#define GRACE_MS         1000  /* EOF, then SIGTERM, then SIGKILL at fini */

enum slot_state {
    SLOT_EMPTY,    /* no process */
    SLOT_STARTING, /* a taker waits for the supervisor to start one */
    SLOT_STARTED,  /* started: the taker's now */
    SLOT_FAILED,   /* could not start: the taker reads why, then empties it */
    SLOT_IDLE,     /* a process waits for a job */
    SLOT_READING,  /* idle, its output being read by the supervisor */
    SLOT_BUSY      /* a taker owns it */
};

struct exec_slot {
    enum slot_state state;
    struct exec_proc proc;
    int failures;               /* in a row; the restart delay grows with them */
    struct timespec not_before; /* CLOCK_MONOTONIC: no start before this */
    char error[256];            /* SLOT_FAILED: why */
};

static long long
now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long) t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static long long
ms_of(const struct timespec *t)
{
    return (long long) t->tv_sec * 1000 + t->tv_nsec / 1000000;
}

static void
wake(struct exec_pool *p)
{
    char b = 1;
    ssize_t rc = write(p->wake[1], &b, 1); /* full: a wake-up is pending anyway */
    (void) rc;
}

/* A failure of s's process: no new one before a delay that doubles with
 * each failure in a row. Under the mutex. */
static void
after_failure(struct exec_slot *s)
{
    long long delay = BACKOFF_FIRST_MS;
    for (int i = 1; i < s->failures && delay < BACKOFF_MAX_MS; i++) {
        delay *= 2;
    }
    s->failures++;
    delay = delay > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : delay;
    long long at = now_ms() + delay;
    s->not_before.tv_sec = at / 1000;
    s->not_before.tv_nsec = (at % 1000) * 1000000;
    s->state = SLOT_EMPTY;
}

static void
log_line(void *ctx, const char *line, size_t cut)
{
    const struct exec_pool *p = ((void **) ctx)[0];
    const struct exec_proc *proc = ((void **) ctx)[1];
    exec_log_stderr(p->api, NULL, proc->pid, line, cut);
}

/* Log what an idle process has written to stderr, without waiting (at
 * most READ_ROUND bytes a round). EOF only means the handler closed or
 * redirected it (`2>>own.log`): no death; the pipe is closed and no
 * longer watched. */
static void
idle_stderr(struct exec_pool *p, struct exec_proc *proc)
{
    char buf[4096];
    void *ctx[2] = {p, proc};
    size_t total = 0;
    ssize_t n = -1;
    while (proc->err >= 0 && total < READ_ROUND && (n = read(proc->err, buf, sizeof(buf))) > 0) {
        exec_lines_feed(&proc->lines, buf, (size_t) n, log_line, ctx);
        total += (size_t) n;
    }
    if (n == 0) {
        exec_lines_flush(&proc->lines, log_line, ctx);
        close(proc->err);
        proc->err = -1;
    }
}

/* Read what an idle process wrote on fd, one of its stderr, stdout and
 * pidfd (the supervisor owns it: READING). Returns 0 to keep it, or -1
 * after killing it: it ended (its pidfd, or EOF on its stdout socket), or
 * wrote to stdout out of turn. Its last stderr lines (a traceback) are
 * logged before it is killed. */
static int
read_idle(struct exec_pool *p, struct exec_proc *proc, int fd)
{
    char buf[4096], shown[EXEC_SHOWN * 2], how[128];
    void *ctx[2] = {p, proc};
    ssize_t n = 0; /* bytes out of turn on stdout; 0: it ended */
    if (fd == proc->err) {
        idle_stderr(p, proc);
        return 0;
    }
    if (fd == proc->io) {
        n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            return 0; /* nothing after all */
        }
    }
    idle_stderr(p, proc);
    exec_lines_flush(&proc->lines, log_line, ctx);
    pid_t pid = proc->pid;
    int status;
    exec_proc_kill(proc, &status);
    if (n > 0) {
        exec_shown(buf, (size_t) n, shown, sizeof(shown));
        p->api->log(NULL, TWICE_LOG_WARN,
                    "exec handler %d wrote to stdout between jobs (killed; answer one line per "
                    "request): '%s'",
                    (int) pid, shown);
    } else {
        exec_proc_describe_exit(status, how, sizeof(how));
        p->api->log(NULL, TWICE_LOG_WARN, "exec handler %d %s while idle", (int) pid, how);
    }
    return -1;
}

/* Start s's process (STARTING, its time come); the lock is dropped while
 * the process starts. */
static void
start_slot(struct exec_pool *p, struct exec_slot *s)
{
    char err[256];
    pthread_mutex_unlock(&p->mu);
    int rc = exec_proc_start(&s->proc, p->cmd, err, sizeof(err));
    pthread_mutex_lock(&p->mu);
    if (rc == 0) {
        s->state = SLOT_STARTED;
    } else {
        snprintf(s->error, sizeof(s->error), "%s", err);
        s->state = SLOT_FAILED;
    }
    pthread_cond_broadcast(&p->cv);
}

/* Start what is due; the poll timeout until the next start (-1: none). */
static int
start_due(struct exec_pool *p)
{
    int timeout = -1;
    for (size_t i = 0; i < p->nslots; i++) {
        struct exec_slot *s = p->slots[i];
        if (s->state != SLOT_STARTING) {
            continue;
        }
        long long left = ms_of(&s->not_before) - now_ms();
        if (left <= 0) {
            start_slot(p, s);
        } else if (timeout < 0 || left < timeout) {
            timeout = (int) left;
        }
    }
    return timeout;
}

/* One round: start what is due, wait for output of idle processes (or a
 * wake-up), read it. Called and returns with the mutex held. */
static void
supervise_round(struct exec_pool *p, struct pollfd *fds, struct exec_slot **who, size_t cap)
{
    int timeout = start_due(p);
    size_t n = 1;
    fds[0] = (struct pollfd){p->wake[0], POLLIN, 0};
    for (size_t i = 0; i < p->nslots && n + 3 <= cap; i++) {
        struct exec_slot *s = p->slots[i];
        if (s->state == SLOT_IDLE && s->proc.err >= 0) {
            fds[n] = (struct pollfd){s->proc.err, POLLIN, 0};
            who[n++] = s;
        }
        if (s->state == SLOT_IDLE) {
            fds[n] = (struct pollfd){s->proc.io, POLLIN, 0};
            who[n++] = s;
        }
        if (s->state == SLOT_IDLE && s->proc.pidfd >= 0) {
            fds[n] = (struct pollfd){s->proc.pidfd, POLLIN, 0};
            who[n++] = s;
        }
    }
    pthread_mutex_unlock(&p->mu);
    int rc = poll(fds, (nfds_t) n, timeout);
    char drain[64];
    while (rc > 0 && (fds[0].revents & POLLIN) && read(p->wake[0], drain, sizeof(drain)) > 0) {
    }
    pthread_mutex_lock(&p->mu);
    for (size_t i = 1; rc > 0 && i < n; i++) {
        struct exec_slot *s = who[i];
        if (fds[i].revents == 0 || s->state != SLOT_IDLE || s->proc.pid == 0 ||
            (fds[i].fd != s->proc.err && fds[i].fd != s->proc.io && fds[i].fd != s->proc.pidfd)) {
            continue; /* taken or gone since the poll began */
        }
        s->state = SLOT_READING;
        pthread_mutex_unlock(&p->mu);
        int kept = read_idle(p, &s->proc, fds[i].fd) == 0;
        pthread_mutex_lock(&p->mu);
        if (kept) {
            s->state = SLOT_IDLE;
        } else {
            after_failure(s);
        }
        pthread_cond_broadcast(&p->cv);
    }
}

/* Whether process pid has ended, left unreaped: its process group (a
 * helper it started) cannot be taken by another process before
 * exec_proc_kill kills what is left of it. */
static int
exited(pid_t pid)
{
    siginfo_t si;
    memset(&si, 0, sizeof(si));
    return waitid(P_PID, (id_t) pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid;
}

/* fini: EOF on every stdin, SIGTERM after a grace, SIGKILL after another;
 * all reaped, and what is left of each one's process group killed (a
 * helper it started, which would outlive the worker). */
static void
end_all(struct exec_pool *p)
{
    for (size_t i = 0; i < p->nslots; i++) {
        if (p->slots[i]->proc.pid > 0) {
            shutdown(p->slots[i]->proc.io, SHUT_WR);
        }
    }
    for (int phase = 0; phase < 2; phase++) {
        long long until = now_ms() + GRACE_MS;
        int left = 1;
        while (left && now_ms() < until) {
            left = 0;
            for (size_t i = 0; i < p->nslots; i++) {
                struct exec_proc *proc = &p->slots[i]->proc;
                left |= proc->pid > 0 && !exited(proc->pid);
            }
            struct timespec tick = {0, 20 * 1000000L};
            nanosleep(&tick, NULL);
        }
        for (size_t i = 0; phase == 0 && i < p->nslots; i++) {
            if (p->slots[i]->proc.pid > 0 && !exited(p->slots[i]->proc.pid)) {
                kill(p->slots[i]->proc.pid, SIGTERM);
            }
        }
    }
    for (size_t i = 0; i < p->nslots; i++) {
        exec_proc_kill(&p->slots[i]->proc, NULL); /* its group killed, it reaped, all closed */
    }
}

static void *
supervisor(void *arg)
{
    struct exec_pool *p = arg;
    struct pollfd *fds = NULL;
    struct exec_slot **who = NULL;
    size_t cap = 0;
    pthread_mutex_lock(&p->mu);
    while (!p->stop) {
        if (cap < 3 * p->nslots + 1) {
            cap = 3 * p->nslots + 16;
            struct pollfd *f = realloc(fds, cap * sizeof(*fds));
            struct exec_slot **w = f != NULL ? realloc(who, cap * sizeof(*who)) : NULL;
            fds = f != NULL ? f : fds;
            who = w != NULL ? w : who;
            if (f == NULL || w == NULL) {
                cap = 0; /* out of memory: try again next round */
                pthread_mutex_unlock(&p->mu);
                sleep(1);
                pthread_mutex_lock(&p->mu);
                continue;
            }
        }
        supervise_round(p, fds, who, cap);
    }
    pthread_mutex_unlock(&p->mu);
    end_all(p);
    free(fds);
    free(who);
    return NULL;
}

int
exec_pool_start(struct exec_pool *p, const twice_api *api, const struct exec_cmd *cmd, int max,
                char *err, size_t errlen)
{
    memset(p, 0, sizeof(*p));
    p->api = api;
    p->cmd = cmd;
    p->max = max;
    p->wake[0] = p->wake[1] = -1;
    if (pipe2(p->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        snprintf(err, errlen, "cannot start the supervisor: %s", strerror(errno));
        return -1;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    int rc = pthread_create(&p->thread, NULL, supervisor, p);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the supervisor: %s", strerror(rc));
        exec_pool_stop(p);
        return -1;
    }
    p->started = 1;
    return 0;
}

void
exec_pool_stop(struct exec_pool *p)
{
    if (p->started) {
        pthread_mutex_lock(&p->mu);
        p->stop = 1;
        pthread_mutex_unlock(&p->mu);
        wake(p);
        pthread_join(p->thread, NULL);
        p->started = 0;
    }
    for (size_t i = 0; i < p->nslots; i++) {
        free(p->slots[i]);
    }
    free(p->slots);
    p->slots = NULL;
    p->nslots = 0;
    if (p->wake[0] >= 0) {
        close(p->wake[0]);
        close(p->wake[1]);
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->cv);
        p->wake[0] = p->wake[1] = -1;
    }
}

/* An empty slot to start (the one whose delay ends first), or a new one
 * while under the cap; NULL when every slot is in use. Under the mutex. */
static struct exec_slot *
empty_slot(struct exec_pool *p)
{
    struct exec_slot *best = NULL;
    for (size_t i = 0; i < p->nslots; i++) {
        struct exec_slot *s = p->slots[i];
        if (s->state == SLOT_EMPTY &&
            (best == NULL || ms_of(&s->not_before) < ms_of(&best->not_before))) {
            best = s;
        }
    }
    if (best != NULL || (p->max > 0 && p->nslots >= (size_t) p->max)) {
        return best;
    }
    struct exec_slot **slots = realloc(p->slots, (p->nslots + 1) * sizeof(*slots));
    struct exec_slot *s = slots != NULL ? calloc(1, sizeof(*s)) : NULL;
    p->slots = slots != NULL ? slots : p->slots;
    if (s == NULL) {
        return NULL;
    }
    s->proc.io = s->proc.err = s->proc.pidfd = s->proc.guard = -1;
    p->slots[p->nslots++] = s;
    return s;
}

/* Whether the supervisor is reading an idle process's output. That
 * process is free for the next job when the round ends (or its slot
 * empty, if it died): a taker waits for it rather than starting one more,
 * so the processes never outnumber the jobs running at once. Under the
 * mutex. */
static int
any_reading(const struct exec_pool *p)
{
    for (size_t i = 0; i < p->nslots; i++) {
        if (p->slots[i]->state == SLOT_READING) {
            return 1;
        }
    }
    return 0;
}

struct exec_slot *
exec_pool_take(struct exec_pool *p, char *err, size_t errlen)
{
    pthread_mutex_lock(&p->mu);
    struct exec_slot *got = NULL;
    while (got == NULL && !p->stop) {
        for (size_t i = 0; i < p->nslots && got == NULL; i++) {
            got = p->slots[i]->state == SLOT_IDLE ? p->slots[i] : NULL;
        }
        if (got != NULL) {
            break;
        }
        if (any_reading(p)) {
            pthread_cond_wait(&p->cv, &p->mu); /* idle again in a moment: no new process */
            continue;
        }
        struct exec_slot *s = empty_slot(p);
        if (s == NULL) {
            pthread_cond_wait(&p->cv, &p->mu);
            continue;
        }
        s->state = SLOT_STARTING;
        wake(p);
        while (s->state == SLOT_STARTING && !p->stop) {
            pthread_cond_wait(&p->cv, &p->mu);
        }
        if (s->state == SLOT_STARTING) {
            break; /* stopping */
        }
        if (s->state == SLOT_FAILED) {
            snprintf(err, errlen, "%s", s->error);
            after_failure(s);
            pthread_cond_broadcast(&p->cv);
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        got = s;
    }
    if (got != NULL) {
        got->state = SLOT_BUSY;
    } else {
        snprintf(err, errlen, "the plugin is stopping");
    }
    pthread_mutex_unlock(&p->mu);
    return got;
}

struct exec_proc *
exec_slot_proc(struct exec_slot *s)
{
    return &s->proc;
}

void
exec_pool_give(struct exec_pool *p, struct exec_slot *s, int failed)
{
    pthread_mutex_lock(&p->mu);
    if (failed || s->proc.pid == 0) {
        after_failure(s);
    } else {
        s->failures = 0;
        s->state = SLOT_IDLE;
    }
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    wake(p); /* watch its output again, or start the next */
}
