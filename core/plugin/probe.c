/*
 * probe.c - checking a configuration's plugins in a throwaway child, so a
 * plugin that crashes or misbehaves while being checked cannot hurt the
 * process that asked (the master on reload, or `twiced -t`). This is the
 * parent's side: the child started, its report read with its progress
 * (a plugin that hangs or crashes named), a stop signal honoured. The
 * child's side is probe_child.c, in twiced-worker: twiced, which links
 * this file, links no plugin host and no libpq or libcurl.
 */
#include "probe.h"

#include "buf.h"
#include "childargs.h"
#include "clock.h"
#include "cnum.h"
#include "config.h"
#include "hostapi.h"
#include "instance.h"
#include "keying.h"
#include "log.h"
#include "proctitle.h"
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define STOP_CHECK_MS 50 /* how often a wait looks for a pending stop signal */

/* Is one of stop_on (blocked by the caller, NULL: none) pending? It stays
 * pending: the caller takes it. */
static int
stop_pending(const sigset_t *stop_on)
{
    sigset_t pending, both;
    if (stop_on == NULL || sigpending(&pending) != 0) {
        return 0;
    }
    sigandset(&both, &pending, stop_on);
    return !sigisemptyset(&both);
}

/* A check that runs this long is said while it runs (half the limit when
 * that is less): a hanging init() otherwise held twiced -t, a start or a
 * reload for the whole limit without a word. */
#define PROBE_SLOW_MS 10000

/* How long the check may run, whether its slowness was said, and whether
 * the child is at the check of the store or SQS (after PROBE_CHECK_LINE: its own
 * time, check->timeout, and no plugin named when it is slow). */
struct probe_clock {
    int64_t start; /* clock_mono_ms */
    int timeout;   /* seconds */
    long slow_ms;  /* when to say it */
    int said;
    struct probe_check *check; /* NULL: none asked */
    int checking;
};

/* Once the check has run for slow_ms: which plugin it is at (current:
 * "NAME LINE FILE", the last progress line) and how long it is given. */
static void
say_slow(struct probe_clock *clk, const char *current)
{
    long ran = (long) (clock_mono_ms() - clk->start);
    if (clk->said || ran < clk->slow_ms || current[0] == '\0') {
        return;
    }
    clk->said = 1;
    int len = (int) strcspn(current, " ");
    log_warn("plugin '%.*s': its check (settings, init(), fini()) has run for %.1f s; it is given "
             "%d s before it is refused as hanging",
             len, current, (double) ran / 1000, clk->timeout);
}

/* The child's report as it is read: the unfinished last line, the problems
 * (d), the last "#plugin" progress line (current) and that plugin's time. */
struct report {
    char buf[4096];
    size_t used;
    struct probe_clock *clk;
    struct diag *d;
    char *current;
    size_t cap;
};

/* Take the complete lines read into r->buf. */
static void
take_lines(struct report *r)
{
    char *line = r->buf, *nl;
    while ((nl = strchr(line, '\n')) != NULL) {
        *nl = '\0';
        if (strncmp(line, "#plugin ", 8) == 0) {
            snprintf(r->current, r->cap, "%s", line + 8);
            r->clk->start = clock_mono_ms(); /* each plugin its own time */
            r->clk->said = 0;
        } else if (strcmp(line, PROBE_CHECK_LINE) == 0 && r->clk->check != NULL) {
            r->current[0] = '\0'; /* no plugin is slow from here */
            r->clk->start = clock_mono_ms();
            r->clk->timeout = r->clk->check->timeout;
            r->clk->checking = 1;
        } else if (line[0] != '\0') {
            diag_add(r->clk->checking ? r->clk->check->d : r->d, NULL, 0, "%s", line);
        }
        line = nl + 1;
    }
    r->used = strlen(line);
    memmove(r->buf, line, r->used);
    if (r->used == sizeof(r->buf) - 1) {
        diag_add(r->d, NULL, 0, "%s", r->buf); /* an overlong line, as it is */
        r->used = 0;
    }
}

/* One read of the child's output into r: bytes read (lines taken), 0 at
 * EOF, -1 on EINTR or an error (errno). */
static ssize_t
read_report(int fd, struct report *r)
{
    ssize_t n = read(fd, r->buf + r->used, sizeof(r->buf) - 1 - r->used);
    if (n > 0) {
        r->used += (size_t) n;
        r->buf[r->used] = '\0';
        take_lines(r);
    }
    return n;
}

/* How much of what the child wrote a stop still takes: a check's problems
 * are a few lines; a child that keeps writing does not hold the stop. */
#define TAKE_WRITTEN_READS 16

/* What the child has written so far, taken without waiting: a stop
 * abandons the check, but what it found by then is still said. */
static void
take_written(int fd, struct report *r)
{
    struct pollfd pfd = {fd, POLLIN, 0};
    for (int i = 0; i < TAKE_WRITTEN_READS && poll(&pfd, 1, 0) > 0 && read_report(fd, r) > 0;
         i++) {
    }
}

/* Read the child's lines until EOF (0), the deadline (-1) or a pending
 * signal of stop_on (1; what it had written by then taken). Problems go to
 * d; the last "#plugin" progress line is remembered in current, and starts
 * that plugin's time (clk). */
static int
collect(int fd, struct probe_clock *clk, const sigset_t *stop_on, struct diag *d, char *current,
        size_t cap)
{
    struct report r = {.used = 0, .clk = clk, .d = d, .current = current, .cap = cap};
    for (;;) {
        long left = (long) clk->timeout * 1000 - (long) (clock_mono_ms() - clk->start);
        if (left <= 0) {
            return -1;
        }
        if (stop_pending(stop_on)) {
            take_written(fd, &r);
            return 1;
        }
        say_slow(clk, current);
        struct pollfd pfd = {fd, POLLIN, 0};
        int rc = poll(&pfd, 1, stop_on != NULL ? STOP_CHECK_MS : left < 100 ? (int) left : 100);
        if (rc == 0 || (rc < 0 && errno == EINTR)) {
            continue;
        }
        if (rc < 0) {
            return -1;
        }
        ssize_t n = read_report(fd, &r);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return 0;
        }
    }
}

/* Wait for the child until the deadline (it may close its output and go on
 * running). 0 when it has exited (*status set), -1 at the deadline, 1 once
 * a signal of stop_on is pending. */
static int
reap_by(pid_t pid, time_t deadline, const sigset_t *stop_on, int *status)
{
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR)) {
            return 0;
        }
        if (time(NULL) >= deadline) {
            return -1;
        }
        if (stop_pending(stop_on)) {
            return 1;
        }
        struct timespec tick = {0, 20 * 1000000L};
        nanosleep(&tick, NULL);
    }
}

/* The plugin of the last progress line (current: "NAME LINE FILE", split
 * in place) and where its entry is; path and 0 when the line says no more. */
struct probe_at {
    const char *name, *file;
    int line;
};

static struct probe_at
probe_at(char *current, const char *path)
{
    struct probe_at at = {current, path, 0};
    char *sp = strchr(current, ' '), *end;
    if (sp != NULL) {
        *sp = '\0';
        long line = strtol(sp + 1, &end, 10);
        if (end != sp + 1 && *end == ' ' && line > 0 && line < 1000000000) {
            at.line = (int) line;
            at.file = end + 1;
        }
    }
    return at;
}

/* How the check of the store or SQS ended, the child having reached it
 * (waited and status as probe_run has them; before: check->d's lines when
 * the child started): check->result, and a crash, a hang or an exit that
 * said nothing in check->d. */
static void
check_ended(struct probe_check *check, const char *path, int waited, int status, size_t before)
{
    check->result = PROBE_CHECK_REFUSED;
    if (waited > 0) {
        check->result = PROBE_CHECK_CUT;
    } else if (waited < 0) {
        diag_add(check->d, path, 0, "the check of PostgreSQL and SQS did not finish within %d s",
                 check->timeout);
    } else if (WIFSIGNALED(status)) {
        diag_add(check->d, path, 0, "the check of PostgreSQL and SQS crashed with signal %d (%s)",
                 WTERMSIG(status), cnum_strsignal(WTERMSIG(status)));
    } else if (WEXITSTATUS(status) == 0) {
        check->result = PROBE_CHECK_PASSED;
    } else if (WEXITSTATUS(status) != PROBE_EXIT_REFUSED || check->d->n == before) {
        diag_add(check->d, path, 0, "the check of PostgreSQL and SQS failed with exit code %d",
                 WEXITSTATUS(status));
    }
}

int
probe_run(const char *path, const char *text, size_t len, const int *plugin_fds, size_t nfds,
          int timeout, struct probe_check *check, const sigset_t *stop_on, struct diag *d)
{
    int pipefd[2] = {-1, -1};
    int cfd = childargs_memfd(text, len);
    char err[256];
    if (cfd < 0 || pipe2(pipefd, O_CLOEXEC) != 0) {
        diag_add(d, NULL, 0, "cannot start the plugin check: %s", cnum_strerror(errno));
        if (cfd >= 0) {
            close(cfd);
        }
        return -1;
    }
    struct childargs a = {CHILD_PROBE, cfd,        path, -1,
                          -1,          0,          0,    getpid(),
                          "probe",     plugin_fds, nfds, check != NULL ? check->fd : -1};
    pid_t pid = spawn_child(&a, pipefd[1], NULL, err, sizeof(err));
    close(pipefd[1]);
    close(cfd);
    if (pid < 0) {
        close(pipefd[0]);
        diag_add(d, NULL, 0, "cannot start the plugin check: %s", err);
        return -1;
    }
    char current[4096 + 128] = "";
    size_t before = d->n;
    struct probe_clock clk = {.start = clock_mono_ms(), .timeout = timeout, .check = check};
    size_t check_before = check != NULL ? check->d->n : 0;
    if (check != NULL) {
        check->result = PROBE_CHECK_NOT_RUN;
    }
    clk.slow_ms = (long) timeout * 500 < PROBE_SLOW_MS ? (long) timeout * 500 : PROBE_SLOW_MS;
    int status = 0;
    int waited = collect(pipefd[0], &clk, stop_on, d, current, sizeof(current));
    if (waited == 0) {
        waited =
            reap_by(pid, time(NULL) + clk.timeout - (long) (clock_mono_ms() - clk.start) / 1000,
                    stop_on, &status);
    }
    close(pipefd[0]);
    if (waited != 0) { /* the deadline or a stop: the child goes, now */
        kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    if (clk.checking) {
        check_ended(check, path, waited, status, check_before);
        return waited > 0 ? 1 : d->n == before ? 0 : -1;
    }
    if (waited > 0) {
        return 1;
    }
    struct probe_at at = probe_at(current, path);
    if (waited < 0) {
        diag_add(d, at.file, at.line,
                 "plugin '%s': the check did not finish within %ds (init hangs?)", at.name,
                 timeout);
    } else if (WIFSIGNALED(status)) {
        diag_add(d, at.file, at.line, "plugin '%s': crashed the check with signal %d (%s)",
                 at.name, WTERMSIG(status), cnum_strsignal(WTERMSIG(status)));
    } else if (WEXITSTATUS(status) != 0 && d->n == before && current[0] != '\0') {
        diag_add(d, at.file, at.line,
                 "plugin '%s': exited the check with code %d (exit() in its init?)", at.name,
                 WEXITSTATUS(status));
    } else if (WEXITSTATUS(status) != 0 && d->n == before) {
        diag_add(d, path, 0, "plugin check failed with exit code %d", WEXITSTATUS(status));
    }
    return d->n == before ? 0 : -1;
}
