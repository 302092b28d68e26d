/*
 * proc.c - one handler process of the exec plugin: started with its stdin
 * and stdout a socket to us (send() with MSG_NOSIGNAL: a dead handler is
 * an error, never a SIGPIPE in the worker) and its stderr a pipe; in its
 * own process group (a terminal's Ctrl-C is twiced's to handle, and a kill
 * reaches the handler's own children); killed by the kernel when the
 * thread that started it ends (the pool's supervisor, which outlives every
 * job) or the worker dies; and the helpers it started (its process group)
 * killed by its guard when the worker dies, even by SIGKILL or the OOM
 * killer, where PR_SET_PDEATHSIG reaches the handler alone. Killing and
 * reaping are here too, so no zombie is ever left. Its end is watched through a pidfd too: a child
 * it started may keep its stdout open after it died. Not which process runs which job (pool.c).
 */
#include "exec.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* What the child needs, prepared before fork: after it only
 * async-signal-safe calls are made. */
struct child_plan {
    const struct exec_cmd *cmd;
    int io, err, status; /* the child's ends: socket, stderr pipe, exec-status pipe */
    pid_t parent;
    int max_fd;
};

/* Tell the parent why exec failed (errno on the close-on-exec status
 * pipe), then exit. */
static void
child_fail(const struct child_plan *cp, int what)
{
    int e[2] = {what, errno};
    ssize_t rc = write(cp->status, e, sizeof(e));
    (void) rc;
    _exit(127);
}

static void
child_run(const struct child_plan *cp)
{
    struct sigaction dfl;
    sigset_t none;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++) {
        sigaction(sig, &dfl, NULL); /* fails harmlessly for SIGKILL, SIGSTOP */
    }
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != cp->parent) {
        _exit(127); /* the worker (or the supervisor) is gone already */
    }
    setpgid(0, 0);
    if (dup2(cp->io, 0) < 0 || dup2(cp->io, 1) < 0 || dup2(cp->err, 2) < 0) {
        child_fail(cp, 1);
    }
    for (int fd = 3; fd <= cp->max_fd; fd++) {
        if (fd != cp->status) {
            close(fd); /* the worker's sockets and files are not the handler's */
        }
    }
    if (cp->cmd->dir != NULL && chdir(cp->cmd->dir) != 0) {
        child_fail(cp, 2);
    }
    execve(cp->cmd->program, cp->cmd->argv, cp->cmd->envp);
    child_fail(cp, 3);
}

/* The name the guard shows in ps -e and /proc/PID/stat (its command line
 * is still the worker's). */
#define GUARD_NAME "twice-guard"

/* The guard of the process group `group`: joins it (so the group, and its
 * id, live while the guard does), then waits for EOF on rfd, which comes
 * when the worker closes the write end or dies however it dies, and kills
 * the group. Killed with the group when the worker ends the handler
 * itself. Async-signal-safe calls only (forked from a threaded process). */
static void
guard_run(pid_t group, int rfd, int max_fd)
{
    struct sigaction dfl;
    sigset_t none;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++) {
        sigaction(sig, &dfl, NULL);
    }
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (setpgid(0, group) != 0) {
        _exit(0); /* the group is gone already: nothing to guard, nothing to kill */
    }
    prctl(PR_SET_NAME, GUARD_NAME);
    for (int fd = 0; fd <= max_fd; fd++) {
        if (fd != rfd) {
            close(fd); /* the worker's files, the pipe's write end among them */
        }
    }
    char c;
    ssize_t n;
    do {
        n = read(rfd, &c, 1); /* nobody writes: EOF is the worker's end */
    } while (n > 0 || (n < 0 && errno == EINTR));
    kill(-group, SIGKILL); /* itself included */
    _exit(0);
}

/* Start the guard of pid's process group (guard_run): p->guard and
 * p->guard_pid. 0, or -1 with err. */
static int
start_guard(struct exec_proc *p, int max_fd, char *err, size_t errlen)
{
    int gp[2];
    if (pipe2(gp, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "cannot start the handler's guard: %s", strerror(errno));
        return -1;
    }
    setpgid(p->pid, p->pid); /* as the child does: whichever runs first makes the group */
    pid_t g = fork();
    if (g == 0) {
        guard_run(p->pid, gp[0], max_fd);
    }
    close(gp[0]);
    if (g < 0) {
        snprintf(err, errlen, "cannot start the handler's guard: fork: %s", strerror(errno));
        close(gp[1]);
        return -1;
    }
    p->guard = gp[1];
    p->guard_pid = g;
    return 0;
}

/* Wait for the child's exec: EOF on the status pipe means it happened. 0,
 * or -1 with err. */
static int
await_exec(int fd, const struct exec_cmd *c, char *err, size_t errlen)
{
    int e[2];
    ssize_t n;
    do {
        n = read(fd, e, sizeof(e));
    } while (n < 0 && errno == EINTR);
    if (n != (ssize_t) sizeof(e)) {
        return 0;
    }
    static const char *const steps[] = {"", "set up its stdin, stdout and stderr",
                                        "change to directory", "run"};
    snprintf(err, errlen, "cannot %s %s: %s", steps[e[0] >= 1 && e[0] <= 3 ? e[0] : 3],
             e[0] == 2 ? c->dir : c->program, strerror(e[1]));
    return -1;
}

static void
close_all(int *fds, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (fds[i] >= 0) {
            close(fds[i]);
            fds[i] = -1;
        }
    }
}

/* fd moved to 3 or above (close-on-exec kept), so that the child's dup2
 * onto 0, 1 and 2 never overwrites another of its fds: a worker started
 * with a closed stdin gets fd 0 back from socketpair. */
static int
above_stdio(int fd)
{
    if (fd < 0 || fd > 2) {
        return fd;
    }
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    close(fd);
    return moved;
}

/* A pidfd of pid, close-on-exec, readable once pid has ended; -1 on a
 * kernel without them (before Linux 5.3), where only EOF on its stdout
 * tells. */
static int
open_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
    return (int) syscall(SYS_pidfd_open, pid, 0);
#else
    (void) pid;
    return -1;
#endif
}

int
exec_proc_ended(const struct exec_proc *p)
{
    struct pollfd fd = {p->pidfd, POLLIN, 0};
    return p->pid > 0 && p->pidfd >= 0 && poll(&fd, 1, 0) > 0;
}

int
exec_proc_ends_within(const struct exec_proc *p, int ms)
{
    for (int waited = 0; p->pid > 0; waited += 10) {
        siginfo_t si;
        memset(&si, 0, sizeof(si));
        int rc = waitid(P_PID, p->pid, &si, WEXITED | WNOHANG | WNOWAIT);
        if ((rc == 0 && si.si_pid == p->pid) || (rc < 0 && errno != EINTR)) {
            return 1; /* ended (or not ours to wait for: said as before) */
        }
        if (waited >= ms) {
            return 0;
        }
        struct timespec t = {0, 10 * 1000 * 1000};
        nanosleep(&t, NULL);
    }
    return 1;
}

int
exec_proc_start(struct exec_proc *p, const struct exec_cmd *c, char *err, size_t errlen)
{
    int sv[2] = {-1, -1}, ep[2] = {-1, -1}, st[2] = {-1, -1};
    struct rlimit rl;
    memset(p, 0, sizeof(*p));
    p->io = p->err = p->pidfd = p->guard = -1;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 || pipe2(ep, O_CLOEXEC) != 0 ||
        pipe2(st, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "cannot start the handler: %s", strerror(errno));
        int all[] = {sv[0], sv[1], ep[0], ep[1], st[0], st[1]};
        close_all(all, 6);
        return -1;
    }
    sv[1] = above_stdio(sv[1]);
    ep[1] = above_stdio(ep[1]);
    st[1] = above_stdio(st[1]);
    struct child_plan cp = {c, sv[1], ep[1], st[1], getpid(), 1023};
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        cp.max_fd = rl.rlim_cur > 65536 ? 65535 : (int) rl.rlim_cur - 1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        child_run(&cp);
    }
    int theirs[] = {sv[1], ep[1], st[1]};
    close_all(theirs, 3);
    if (pid < 0) {
        snprintf(err, errlen, "cannot start the handler: fork: %s", strerror(errno));
        int ours[] = {sv[0], ep[0], st[0]};
        close_all(ours, 3);
        return -1;
    }
    p->pid = pid;
    p->io = sv[0];
    p->err = ep[0];
    p->pidfd = open_pidfd(pid);
    fcntl(p->err, F_SETFL, O_NONBLOCK);
    int rc = start_guard(p, cp.max_fd, err, errlen);
    if (rc == 0) {
        rc = await_exec(st[0], c, err, errlen);
    }
    close(st[0]);
    if (rc != 0) {
        exec_proc_kill(p, NULL);
    }
    return rc;
}

void
exec_proc_kill(struct exec_proc *p, int *status)
{
    int st = 0;
    if (p->pid > 0) {
        kill(-p->pid, SIGKILL); /* its group: the handler's own children too */
        kill(p->pid, SIGKILL);  /* in case it left its group */
        while (waitpid(p->pid, &st, 0) < 0 && errno == EINTR) {
        }
    }
    if (p->guard_pid > 0) { /* killed with the group, unless it never joined it */
        kill(p->guard_pid, SIGKILL);
        while (waitpid(p->guard_pid, NULL, 0) < 0 && errno == EINTR) {
        }
    }
    if (status != NULL) {
        *status = st;
    }
    int fds[] = {p->io, p->err, p->pidfd, p->guard};
    close_all(fds, 4);
    p->io = p->err = p->pidfd = p->guard = -1;
    p->pid = p->guard_pid = 0;
    p->lines.len = p->lines.cut = 0;
}

void
exec_proc_describe_exit(int status, char *out, size_t cap)
{
    if (WIFEXITED(status)) {
        snprintf(out, cap, "exited with status %d", WEXITSTATUS(status));
    } else if (WIFSIGNALED(status)) {
        snprintf(out, cap, "was killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    } else {
        snprintf(out, cap, "ended (wait status %d)", status);
    }
}
