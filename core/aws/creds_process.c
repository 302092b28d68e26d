/*
 * creds_process.c - a profile's credential_process: run the command
 * through the shell as the AWS SDKs do, with a timeout, and read the JSON
 * it prints. Not the profile's other keys (creds_profile.c). The secrets
 * come on standard output, which no message ever quotes; when the command
 * fails, the end of its standard error is shown (escaped, cut short): that
 * is where tools say what to do ("run aws sso login").
 */
#include "atomics.h"
#include "buf.h"
#include "clock.h"
#include "cnum.h"
#include "escape.h"
#include "creds.h"
#include "creds_provider.h"

#include <openssl/crypto.h>

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

extern char **environ;

/* How often a running command is checked for the cancel flag. */
#define PROCESS_POLL_MS 100
/* The end of stderr kept, and the characters of it a message shows. */
#define STDERR_KEEP     1024
#define STDERR_SHOW     160

/* In the child, before exec: only async-signal-safe calls. Its own
 * process group (so a timeout kills the whole pipeline), default signal
 * dispositions and mask, stdin from /dev/null, the pipes as stdout and
 * stderr. */
static void
exec_shell(char *const argv[], int out_fd, int err_fd)
{
    struct sigaction dfl;
    sigset_t none;

    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++) {
        sigaction(sig, &dfl, NULL); /* fails harmlessly for SIGKILL, SIGSTOP, RT */
    }
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    setpgid(0, 0);
    int in = open("/dev/null", O_RDONLY);
    if (in < 0 || dup2(in, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0) {
        _exit(127);
    }
    execve("/bin/sh", argv, environ);
    _exit(127);
}

/* Start /bin/sh -c command with stdout and stderr into the pipes' write
 * ends (both close-on-exec: dup2 makes the child's copies). The pid, or
 * -1 with errno. */
static pid_t
spawn_shell(const char *command, int out_fd, int err_fd)
{
    char *argv[] = {"/bin/sh", "-c", (char *) command, NULL};
    pid_t pid = fork();

    if (pid == 0) {
        exec_shell(argv, out_fd, err_fd);
    }
    if (pid > 0) {
        setpgid(pid, pid); /* also here: kill(-pid) must work at once */
    }
    return pid;
}

/* What collect() saw. */
struct process_io {
    int fds[2]; /* stdout, stderr read ends; -1 once at EOF */
    char *out;
    size_t cap, len;
    size_t err_bytes;
    int too_large;
    char err_tail[STDERR_KEEP]; /* the last bytes of stderr */
    size_t err_kept;
};

/* Keep the last STDERR_KEEP bytes of stderr. */
static void
keep_stderr(struct process_io *io, const char *p, size_t n)
{
    if (n >= STDERR_KEEP) {
        memcpy(io->err_tail, p + n - STDERR_KEEP, STDERR_KEEP);
        io->err_kept = STDERR_KEEP;
        return;
    }
    size_t drop = io->err_kept + n > STDERR_KEEP ? io->err_kept + n - STDERR_KEEP : 0;
    memmove(io->err_tail, io->err_tail + drop, io->err_kept - drop);
    memcpy(io->err_tail + io->err_kept - drop, p, n);
    io->err_kept += n - drop;
}

/* Read what is ready: stdout into out, the end of stderr kept. */
static void
drain_ready(struct process_io *io, const struct pollfd *pfd)
{
    char scratch[4096];

    for (int i = 0; i < 2; i++) {
        if (io->fds[i] < 0 || pfd[i].revents == 0) {
            continue;
        }
        char *dst = i == 0 ? io->out + io->len : scratch;
        size_t room = i == 0 ? io->cap - io->len : sizeof(scratch);
        ssize_t n = room > 0 ? read(io->fds[i], dst, room) : 0;
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
            continue;
        }
        if (i == 0 && room == 0) {
            io->too_large = 1;
        }
        if (n <= 0) {
            close(io->fds[i]);
            io->fds[i] = -1;
        } else if (i == 0) {
            io->len += (size_t) n;
        } else {
            io->err_bytes += (size_t) n;
            keep_stderr(io, scratch, (size_t) n);
        }
    }
    OPENSSL_cleanse(scratch, sizeof(scratch));
}

/* Read both pipes until they close. 0, or -1 at the deadline, on cancel
 * or when stdout outgrows the buffer (io->too_large). */
static int
collect(struct process_io *io, long deadline, const struct flag *cancel)
{
    while (io->fds[0] >= 0 || io->fds[1] >= 0) {
        struct pollfd pfd[2] = {{io->fds[0], POLLIN, 0}, {io->fds[1], POLLIN, 0}};
        long left = deadline - (long) clock_mono_ms();
        if (left <= 0 || flag_is_up(cancel) || io->too_large) {
            return -1;
        }
        int n = poll(pfd, 2, (int) (left < PROCESS_POLL_MS ? left : PROCESS_POLL_MS));
        if (n < 0 && errno != EINTR) {
            return -1;
        }
        if (n > 0) {
            drain_ready(io, pfd);
        }
    }
    return io->too_large ? -1 : 0;
}

/* Wait for the child until the deadline; kill its group if it is late.
 * The wait status, or -1 when it had to be killed. */
static int
reap(pid_t pid, long deadline, int kill_now)
{
    int status = 0;

    while (!kill_now) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR)) {
            return r == pid ? status : -1;
        }
        if ((long) clock_mono_ms() >= deadline) {
            break;
        }
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return -1;
}

/* "; stderr: TEXT" for the end of what the command wrote on stderr: its
 * last STDERR_SHOW characters, blanks at the ends dropped, escaped for one
 * line; nothing when it wrote none. */
static void
stderr_excerpt(const struct process_io *io, char *out, size_t cap)
{
    const unsigned char *p = (const unsigned char *) io->err_tail;
    size_t start = 0, end = io->err_kept, chars = 0;
    out[0] = '\0';
    while (end > 0 && strchr(" \t\r\n", p[end - 1]) != NULL && p[end - 1] != '\0') {
        end--;
    }
    for (start = end; start > 0 && chars < STDERR_SHOW; start--) {
        chars += (p[start - 1] & 0xc0) != 0x80; /* count characters, not bytes */
    }
    while (start < end && strchr(" \t\r\n", p[start]) != NULL && p[start] != '\0') {
        start++;
    }
    if (start == end) {
        return;
    }
    struct buf b = BUF_INIT;
    int cut = start > 0 || io->err_bytes > io->err_kept;
    buf_printf(&b, "; stderr: %s", cut ? "..." : "");
    escape_unquoted(&b, io->err_tail + start, end - start);
    snprintf(out, cap, "%s", b.failed ? "" : buf_str(&b));
    buf_free_wipe(&b);
}

/* The outcome as a reason: why the run failed, or "" when it did not. */
static int
explain(const struct process_io *io, int status, int late, long timeout_ms,
        const struct flag *cancel, char *why, size_t whylen)
{
    if (io->too_large) {
        snprintf(why, whylen, "printed more than %zu bytes", io->cap);
    } else if (late && flag_is_up(cancel)) {
        snprintf(why, whylen, "cancelled");
    } else if (late) {
        snprintf(why, whylen, "did not finish within %ld ms (killed)", timeout_ms);
    } else if (WIFSIGNALED(status)) {
        snprintf(why, whylen, "killed by signal %d", WTERMSIG(status));
    } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        snprintf(why, whylen, "exited with status %d", WEXITSTATUS(status));
    } else {
        return 0;
    }
    size_t n = strlen(why);
    stderr_excerpt(io, why + n, whylen - n);
    return -1;
}

int
creds_process_run(const char *command, long timeout_ms, const struct flag *cancel, char *out,
                  size_t cap, size_t *len, char *why, size_t whylen)
{
    int outp[2] = {-1, -1}, errp[2] = {-1, -1};
    long deadline = (long) clock_mono_ms() + timeout_ms;

    *len = 0;
    out[0] = '\0';
    if (pipe2(outp, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0) {
        snprintf(why, whylen, "cannot make a pipe: %s", cnum_strerror(errno));
        goto fail;
    }
    pid_t pid = spawn_shell(command, outp[1], errp[1]);
    if (pid < 0) {
        snprintf(why, whylen, "cannot start /bin/sh: %s", cnum_strerror(errno));
        goto fail;
    }
    close(outp[1]);
    close(errp[1]);
    struct process_io io = {{outp[0], errp[0]}, out, cap, 0, 0, 0, "", 0};
    int late = collect(&io, deadline, cancel) != 0;
    for (int i = 0; i < 2; i++) {
        if (io.fds[i] >= 0) {
            close(io.fds[i]);
        }
    }
    int status = reap(pid, deadline, late);
    late |= status == -1;
    out[io.len] = '\0';
    *len = io.len;
    int rc = explain(&io, status, late, timeout_ms, cancel, why, whylen);
    OPENSSL_cleanse(io.err_tail, sizeof(io.err_tail));
    return rc;
fail:
    for (int i = 0; i < 2; i++) {
        if (outp[i] >= 0) {
            close(outp[i]);
        }
        if (errp[i] >= 0) {
            close(errp[i]);
        }
    }
    return -1;
}

int
creds_process_resolve(const char *command, const char *profile, const struct creds_ctx *ctx,
                      struct creds *out, char *why, size_t whylen)
{
    char provider[sizeof(out->provider)], reason[448];
    size_t len = 0;
    char *text = malloc(CREDS_PROCESS_MAX_OUTPUT + 1);
    int rc = -1;

    if (text == NULL) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    snprintf(provider, sizeof(provider), "process:%.*s", (int) sizeof(provider) - 9, profile);
    if (creds_process_run(command, CREDS_PROCESS_TIMEOUT_MS, ctx->cancel, text,
                          CREDS_PROCESS_MAX_OUTPUT, &len, reason, sizeof(reason)) != 0) {
        snprintf(why, whylen, "credential_process %s", reason);
        goto out;
    }
    rc = creds_from_json(text, len, "SessionToken", CREDS_JSON_VERSION_1, provider, out, reason,
                         sizeof(reason));
    if (rc != 1) {
        snprintf(why, whylen, "credential_process printed no credentials: %s", reason);
        rc = -1;
    }
out:
    OPENSSL_cleanse(text, CREDS_PROCESS_MAX_OUTPUT + 1);
    free(text);
    return rc;
}
