/*
 * spawn.c - fork and exec of the master's children (see spawn.h). Their
 * executable, twiced-worker, is opened once, when
 * the master starts, and every child is exec'd from that descriptor: it
 * always runs the version the master started with, even if the package was
 * upgraded under it.
 */
#include "spawn.h"

#include "childargs.h"
#include "cnum.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

/* The children's executable (spawn_open_worker); -1: not opened. */
static int worker_exe = -1;

/* The directory of this process's own file, into dir: from the path it was
 * executed by (no /proc needed), else /proc/self/exe. 0, or -1 with errno. */
static int
own_directory(char dir[PATH_MAX])
{
    const char *self = (const char *) getauxval(AT_EXECFN);
    if (self == NULL || realpath(self, dir) == NULL) {
        ssize_t n = readlink("/proc/self/exe", dir, PATH_MAX - 1);
        if (n <= 0) {
            return -1;
        }
        dir[n] = '\0';
    }
    char *slash = strrchr(dir, '/');
    if (slash == NULL) {
        errno = ENOENT;
        return -1;
    }
    *slash = '\0';
    return 0;
}

/* Open dir/twiced-worker into *fd, judged (a regular executable file, not
 * writable by group or others). 0; -1 with errno ENOENT when it is not
 * there; else -1 with why. */
static int
open_worker_in(const char *dir, int *fd, const char **why)
{
    char path[PATH_MAX + sizeof("/" SPAWN_WORKER_NAME)];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s", dir, SPAWN_WORKER_NAME);
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0) {
        *why = cnum_strerror(errno);
        return -1;
    }
    *why = fstat(*fd, &st) != 0       ? cnum_strerror(errno)
           : !S_ISREG(st.st_mode)     ? "not a regular file"
           : (st.st_mode & 0111) == 0 ? "not executable"
           : (st.st_mode & 0022) != 0 ? "writable by group or others (chmod go-w)"
                                      : NULL;
    if (*why != NULL) {
        close(*fd);
        *fd = -1;
        errno = EACCES;
        return -1;
    }
    return 0;
}

int
spawn_open_worker(const char *installed, char *err, size_t errlen)
{
    char dir[PATH_MAX];
    const char *why = NULL;
    if (worker_exe >= 0) {
        return 0;
    }
    /* Next to twiced's own file first (a build tree, a tarball's bin/), then
     * where the packages install it. */
    int known = own_directory(dir) == 0;
    int rc = known ? open_worker_in(dir, &worker_exe, &why) : -1;
    if (rc != 0 && (!known || errno == ENOENT) && installed != NULL) {
        snprintf(dir, sizeof(dir), "%s", installed);
        known = 1;
        rc = open_worker_in(dir, &worker_exe, &why);
    }
    if (rc != 0 && !known) {
        snprintf(err, errlen, "cannot tell which directory twiced runs from (%s)",
                 cnum_strerror(errno));
        return -1;
    }
    if (rc != 0) {
        snprintf(err, errlen,
                 "%s/%s: %s (twiced runs its workers and plugin checks from it: it comes with "
                 "twiced, in the same package)",
                 dir, SPAWN_WORKER_NAME, why != NULL ? why : cnum_strerror(errno));
        return -1;
    }
    return 0;
}

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
    fexecve(worker_exe, argv, environ);
    _exit(127);
}

pid_t
spawn_child(const struct childargs *a, int stdout_fd, const struct spawn_user *user, char *err,
            size_t errlen)
{
    struct childargs_argv args;
    if (worker_exe < 0) {
        snprintf(err, errlen, "twiced-worker was not opened (spawn_open_worker)");
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
