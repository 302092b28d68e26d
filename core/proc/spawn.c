/*
 * spawn.c - fork and exec of the master's children (see spawn.h). The
 * binary is /proc/self/exe, so a child always runs the master's own
 * version even if the package was upgraded under it.
 */
#include "spawn.h"

#include "childargs.h"
#include "cnum.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int
spawn_resolve_user(const char *name, struct spawn_user *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    out->uid = (uid_t) -1;
    out->gid = (gid_t) -1;
    if (name == NULL || name[0] == '\0') {
        return 0;
    }
    errno = 0;
    struct passwd *pw = getpwnam(name);
    if (pw == NULL) {
        snprintf(err, errlen, "user %s: %s", name, errno ? cnum_strerror(errno) : "no such user");
        return -1;
    }
    out->uid = pw->pw_uid;
    out->gid = pw->pw_gid;
    snprintf(out->name, sizeof(out->name), "%s", name);
    return 0;
}

static void
keep_fd(int fd)
{
    if (fd >= 0) {
        int flags = fcntl(fd, F_GETFD);
        if (flags >= 0) {
            fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC);
        }
    }
}

/* In the child, between fork and exec: async-signal-safe calls only. */
static void
child_exec(const struct childargs *a, int stdout_fd, const struct spawn_user *user, char **argv)
{
    sigset_t none;
    sigemptyset(&none);
    for (int sig = 1; sig < 32; sig++) {
        if (sig != SIGKILL && sig != SIGSTOP) {
            signal(sig, SIG_DFL);
        }
    }
    /* The master sends USR1 (reopen the log file) to every worker, one only
     * just started too: ignored until the worker takes it (worker_main), it
     * never kills one; a worker opens its log file after that anyway. */
    signal(SIGUSR1, SIG_IGN);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (stdout_fd >= 0 && dup2(stdout_fd, 1) < 0) {
        _exit(126);
    }
    keep_fd(a->config_fd);
    keep_fd(a->shm_fd);
    keep_fd(a->ctl_fd);
    if (a->mode == CHILD_PROBE) {
        keep_fd(a->check_fd);
    }
    for (size_t i = 0; i < a->nplugin_fds; i++) {
        keep_fd(a->plugin_fds[i]);
    }
    if (user != NULL && user->uid != (uid_t) -1 && geteuid() == 0) {
        if (setgroups(1, &user->gid) != 0 || setgid(user->gid) != 0 || setuid(user->uid) != 0) {
            _exit(126);
        }
    }
    execv("/proc/self/exe", argv);
    _exit(127);
}

pid_t
spawn_child(const struct childargs *a, int stdout_fd, const struct spawn_user *user, char *err,
            size_t errlen)
{
    struct childargs_argv args;
    /* The child re-executes this very file through /proc: without /proc (a
     * chroot or container that did not mount it) it could only exit 127. */
    if (access("/proc/self/exe", X_OK) != 0) {
        snprintf(err, errlen,
                 "cannot re-execute twiced through /proc/self/exe (%s): is /proc mounted?",
                 cnum_strerror(errno));
        return -1;
    }
    if (childargs_build(a, &args) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", cnum_strerror(errno));
    } else if (pid == 0) {
        child_exec(a, stdout_fd, user, args.argv);
    }
    childargs_argv_free(&args);
    return pid;
}
