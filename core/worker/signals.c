/*
 * signals.c - what a worker makes of the signals it gets (see signals.h).
 * Signals are blocked in every thread and taken with sigtimedwait on the
 * main thread, so the sender's pid (si_pid) is known.
 */
#include "signals.h"

#include "log.h"
#include "shm.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int
worker_signal_wait(const sigset_t *set, int timeout_ms, siginfo_t *si)
{
    memset(si, 0, sizeof(*si));
    for (;;) {
        int sig;
        if (timeout_ms < 0) {
            sig = sigwaitinfo(set, si);
        } else {
            struct timespec ts = {timeout_ms / 1000, (long) (timeout_ms % 1000) * 1000000L};
            sig = sigtimedwait(set, si, &ts);
        }
        if (sig > 0) {
            return sig;
        }
        if (errno != EINTR || timeout_ms >= 0) {
            return 0;
        }
    }
}

/* "pid 123 (kill)": the sender and, while it still runs, its command name. */
static void
describe_sender(pid_t pid, char *out, size_t cap)
{
    char path[64], comm[64] = "";
    snprintf(path, sizeof(path), "/proc/%d/comm", (int) pid);
    FILE *f = fopen(path, "re");
    if (f != NULL) {
        if (fgets(comm, sizeof(comm), f) != NULL) {
            comm[strcspn(comm, "\n")] = '\0';
        }
        fclose(f);
    }
    if (comm[0] != '\0') {
        snprintf(out, cap, "pid %d (%s)", (int) pid, comm);
    } else {
        snprintf(out, cap, "pid %d", (int) pid);
    }
}

enum worker_ask
worker_signal_judge(const siginfo_t *si, int slot, pid_t master)
{
    int sig = si->si_signo;
    if (sig == SIGUSR1) { /* the master's after a log rotation, or anyone's: harmless */
        if (log_reopen() != 0) {
            log_error("log.file %s: cannot open it again: %s (lines go where they went)",
                      log_file(), log_open_why(log_file(), errno));
        } else if (log_file() != NULL) {
            log_info("log file reopened");
        }
        return WORKER_IGNORE;
    }
    enum worker_ask ask = sig == SIGQUIT  ? WORKER_QUIT
                          : sig == SIGHUP ? WORKER_IGNORE
                                          : WORKER_STOP;
    int sent = si->si_code == SI_USER || si->si_code == SI_QUEUE; /* kill(), sigqueue() */
    if (!sent || si->si_pid == master || getppid() != master) {
        /* The master's wish; the terminal's (^C reaches the master too); or
         * the master is gone (our parent-death signal). */
        return ask;
    }
    char who[128];
    describe_sender(si->si_pid, who, sizeof(who));
    if (ask == WORKER_IGNORE) {
        log_warn("ignoring SIG%s from %s: reloading is the master's (twiced -s reload, or "
                 "systemctl reload)",
                 sigabbrev_np(sig), who);
        return ask;
    }
    log_warn("SIG%s from %s, not from the master: this worker drains and exits, and the master "
             "starts another in its place (to stop twiced, signal the master: twiced -s stop, "
             "or systemctl stop)",
             sigabbrev_np(sig), who);
    struct shm_region *r = shm_region();
    if (r != NULL && slot >= 0 && slot < SHM_PROCS && si->si_pid > 0) {
        __atomic_store_n(&r->procs[slot].stopped_by, (int) si->si_pid, __ATOMIC_RELEASE);
    }
    return ask;
}
