/*
 * ctl_child.c - running plugin code in a forked child for twicectl
 * (`plugin check`, `key derive`): a plugin that crashes or hangs while
 * loading (constructors run at dlopen) or deriving cannot take twicectl
 * with it. The child writes its report to a pipe; the parent collects it
 * with a deadline. Not the daemon's probe (plugin/probe.c), which re-executes
 * twiced.
 */
#include "buf.h"
#include "cnum.h"
#include "ctl.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Everything the child wrote, until EOF or the deadline (-1). */
static int
read_all(int fd, int timeout, struct buf *out)
{
    time_t deadline = time(NULL) + timeout;
    char chunk[4096];
    for (;;) {
        int left = (int) (deadline - time(NULL));
        struct pollfd pfd = {fd, POLLIN, 0};
        int rc = left > 0 ? poll(&pfd, 1, left * 1000) : 0;
        if (rc < 0 && errno == EINTR) {
            continue;
        }
        if (rc <= 0) {
            return -1;
        }
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return 0;
        }
        buf_append(out, chunk, (size_t) n);
    }
}

int
ctl_child(void (*fn)(void *arg), void *arg, int timeout, struct buf *out, int *failed)
{
    int fds[2], status = 0;
    *failed = 0;
    fflush(NULL);
    if (pipe(fds) != 0) {
        *failed = ctl_fail("pipe: %s", cnum_strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        *failed = ctl_fail("fork: %s", cnum_strerror(errno));
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        if (dup2(fds[1], STDOUT_FILENO) < 0) {
            _exit(127);
        }
        close(fds[1]);
        fn(arg);
        fflush(stdout);
        _exit(0);
    }
    close(fds[1]);
    int timed_out = read_all(fds[0], timeout, out) != 0;
    close(fds[0]);
    if (timed_out) {
        kill(pid, SIGKILL);
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return timed_out ? -1 : status;
}
