/*
 * pid1.c - twiced as a container's PID 1 (see pid1.h).
 *
 * In a container started without an init (docker run without --init, a
 * Kubernetes pod, etc/kubernetes/deployment.yaml) twiced is PID 1, and the
 * kernel makes PID 1 the parent of every orphan: the handler processes of a
 * worker that was killed, their guards, a handler's background child. The
 * master waits only for its own children (master.c, reap: the probe's and a
 * credential_process's starters wait for theirs), so those orphans would stay
 * zombies until the pod's PID limit stopped every fork. As PID 1 the first
 * process therefore stays behind as a minimal init, as tini does: it reaps
 * every child that ends, passes the signals twiced acts on to the master
 * (its only child), and exits with the master's status.
 */
#include "pid1.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "cnum.h"
#include "proctitle.h"

/* What the master acts on (master.c) and a terminal's resize, passed on. */
static const int forwarded[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGWINCH};

static void
forwarded_set(sigset_t *set)
{
    sigemptyset(set);
    for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++) {
        sigaddset(set, forwarded[i]);
    }
    sigaddset(set, SIGCHLD);
}

/* The exit status PID 1 gives for the master's wait status, as a shell does. */
static int
exit_code(int status)
{
    if (WIFEXITED(status)) {
        return WEXITSTATUS(status);
    }
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

/* Reaps every child that has ended; returns the master's exit code once it
 * is among them, -1 while it runs. */
static int
reap_all(pid_t master)
{
    int code = -1, status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0 || (pid < 0 && errno == EINTR)) {
        if (pid == master) {
            code = exit_code(status);
        }
    }
    return code;
}

/* PID 1's whole life once the master runs: never returns. */
static void
init_loop(pid_t master)
{
    sigset_t set;
    forwarded_set(&set);
    for (;;) {
        siginfo_t info;
        int sig = sigwaitinfo(&set, &info);
        if (sig < 0) {
            continue; /* EINTR */
        }
        if (sig != SIGCHLD) {
            kill(master, sig);
            continue;
        }
        int code = reap_all(master);
        if (code >= 0) {
            /* Whatever the master left is killed with this namespace. */
            _exit(code);
        }
    }
}

int
pid1_init_if_needed(char *err, size_t errlen)
{
    if (getpid() != 1) {
        return 0;
    }
    sigset_t set, old;
    forwarded_set(&set);
    sigprocmask(SIG_BLOCK, &set, &old); /* none lost between fork and the wait */
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen,
                 "twiced is PID 1 and cannot start the master beside its init: "
                 "fork: %s",
                 cnum_strerror(errno));
        sigprocmask(SIG_SETMASK, &old, NULL);
        return -1;
    }
    if (pid == 0) {
        /* The master leads its own process group and, if PID 1 had the
         * terminal (docker run -it), takes it over: a Ctrl-C then reaches the
         * master once, from the terminal, and not a second time through
         * PID 1 (a second stop signal stops at once). */
        sigset_t ttou;
        sigemptyset(&ttou);
        sigaddset(&ttou, SIGTTOU); /* tcsetpgrp from the new, background, group */
        sigprocmask(SIG_BLOCK, &ttou, NULL);
        pid_t init_group = getpgrp();
        if (setpgid(0, 0) == 0 && isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == init_group) {
            tcsetpgrp(STDIN_FILENO, getpid());
        }
        sigprocmask(SIG_SETMASK, &old, NULL);
        return 0;
    }
    proctitle_set("twiced: init (PID 1), master %d", (int) pid);
    init_loop(pid);
    return -1; /* not reached */
}
