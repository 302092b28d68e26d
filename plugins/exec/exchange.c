/*
 * exchange.c - one job on one handler process: write the request line,
 * wait for the answer line within the job's time limit, and meanwhile log
 * the process's stderr with the job's context (so a handler that writes a
 * megabyte there before answering never blocks). A process that dies,
 * overruns or answers out of protocol is killed and reaped here; the pool
 * starts another. Not the meaning of an answer (exec.c) nor its syntax
 * (protocol.c).
 */
#include "exec.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

void
exec_log_stderr(const twice_api *api, const twice_job *job, pid_t pid, const char *line,
                size_t cut)
{
    if (cut > 0) {
        api->log(job, TWICE_LOG_INFO, "handler %d stderr: %s [%zu more bytes of this line cut]",
                 (int) pid, line, cut);
    } else {
        api->log(job, TWICE_LOG_INFO, "handler %d stderr: %s", (int) pid, line);
    }
}

/* The job and its process, for the line callback. */
struct xjob {
    const twice_api *api;
    twice_job *job;
    struct exec_proc *p;
    long long deadline; /* CLOCK_MONOTONIC ms */
    char *answer;       /* EXEC_ANSWER_MAX + 1 bytes */
    size_t alen;
    int err_open;  /* its stderr has not reached EOF */
    short revents; /* of the socket, at wait_io's last return of 1 */
};

static long long
now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long) t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void
job_line(void *ctx, const char *line, size_t cut)
{
    struct xjob *x = ctx;
    exec_log_stderr(x->api, x->job, x->p->pid, line, cut);
}

/* Log what is in its stderr now (without waiting). At EOF the pipe is
 * closed: the handler closed or redirected its stderr, which is no death
 * (its stdout socket says that), and nobody watches the pipe again. */
static void
drain_stderr(struct xjob *x)
{
    char buf[4096];
    ssize_t n;
    while (x->err_open && (n = read(x->p->err, buf, sizeof(buf))) != 0) {
        if (n < 0) {
            if (errno != EINTR) {
                return; /* EAGAIN: all read */
            }
            continue;
        }
        exec_lines_feed(&x->p->lines, buf, (size_t) n, job_line, x);
    }
    if (x->err_open) {
        exec_lines_flush(&x->p->lines, job_line, x);
        close(x->p->err);
        x->p->err = -1;
    }
    x->err_open = 0;
}

/* Wait until the socket is ready for `events` (or stderr has something),
 * logging stderr; which events it had goes to x->revents. 1 ready, 0 at the deadline, -1 on a poll
 * error or when the process has ended with nothing more to read: a child it started may hold its
 * stdout open, and no EOF would come before the deadline. */
static int
wait_io(struct xjob *x, short events)
{
    for (;;) {
        long long left = x->deadline - now_ms();
        if (left <= 0) {
            return 0;
        }
        struct pollfd fds[3] = {{x->p->io, events, 0},
                                {x->err_open ? x->p->err : -1, POLLIN, 0},
                                {x->p->pidfd, POLLIN, 0}};
        int rc = poll(fds, 3, (int) (left > 60000 ? 60000 : left));
        if (rc < 0 && errno != EINTR) {
            return -1;
        }
        if (rc > 0 && fds[1].revents != 0) {
            drain_stderr(x);
        }
        if (rc > 0 && fds[0].revents != 0) {
            x->revents = fds[0].revents;
            return 1;
        }
        if (rc > 0 && fds[2].revents != 0) {
            /* what it wrote before it ended is there now: read that first */
            struct pollfd io = {x->p->io, events, 0};
            return poll(&io, 1, 0) > 0 ? 1 : -1;
        }
    }
}

/* Kill the process and say why the job failed: what it did ("answered
 * garbage: ..."), or, what being NULL, how it ended and when ("handler 12
 * exited with status 1" and when, " before answering"). Returns -1. */
static int
failed_when(struct xjob *x, const char *what, const char *when, char *why, size_t cap)
{
    pid_t pid = x->p->pid;
    int status = 0, alive = 0;
    char how[128];
    drain_stderr(x);
    exec_lines_flush(&x->p->lines, job_line, x);
    if (what == NULL) {
        /* its stdout is closed: ended, or closed it and went on (then the
         * SIGKILL below is ours, not what it died of) */
        alive = !exec_proc_ends_within(x->p, EXEC_END_GRACE_MS);
    }
    exec_proc_kill(x->p, &status);
    if (why == NULL || cap == 0) {
        return -1;
    }
    if (what == NULL) {
        exec_proc_describe_exit(status, how, sizeof(how));
        if (alive) {
            snprintf(how, sizeof(how), "closed its stdout and went on running (killed)");
        }
        snprintf(why, cap, "handler %d %s%s", (int) pid, how, when);
    } else {
        snprintf(why, cap, "handler %d %s", (int) pid, what);
    }
    return -1;
}

static int
failed(struct xjob *x, const char *what, char *why, size_t cap)
{
    return failed_when(x, what, " before answering", why, cap);
}

/* Whether the request is still unread by the process (its end, at least):
 * bytes we sent wait in its socket. A process that ended with them there
 * never saw the job: it did not handle it. */
static int
unread(const struct exec_proc *p)
{
    int queued = 0;
    return ioctl(p->io, SIOCOUTQ, &queued) == 0 && queued > 0;
}

/* Send the request line: 1 when all of it was sent, 0 at the deadline, -1
 * when the process ended, -3 when it is gone with the request not (all)
 * sent, -4 when it wrote to its stdout before reading all of it: a handler
 * that never reads its stdin and answers (or writes a long line) at once
 * would otherwise wait, both sides writing, until the job's timeout, and
 * be said not to have answered. */
static int
send_request(struct xjob *x, const char *req, size_t len)
{
    size_t sent = 0;
    while (sent < len) {
        int ready = wait_io(x, POLLOUT | POLLIN);
        if (ready <= 0) {
            return ready == 0 ? 0 : -1;
        }
        char b;
        ssize_t peek = (x->revents & POLLIN) ? recv(x->p->io, &b, 1, MSG_PEEK | MSG_DONTWAIT) : -1;
        if (peek >= 0) {
            return peek > 0 ? -4 : -3; /* output, or EOF: it closed its end */
        }
        ssize_t n = send(x->p->io, req + sent, len - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno != EAGAIN && errno != EINTR) {
            return -3; /* EPIPE, ECONNRESET: it is gone, the request not (all) sent */
        }
        sent += n > 0 ? (size_t) n : 0;
    }
    return 1;
}

/* Read until the answer's newline: 1 with the line in x->answer (without
 * it), 0 at the deadline, -1 at EOF (or the process's end), -2 when it is
 * too long, -3 when the process ended without reading the request (its
 * socket reset: it was closed with our bytes unread); *extra set when
 * bytes follow the line. */
static int
read_answer(struct xjob *x, int *extra)
{
    for (;;) {
        char *nl = memchr(x->answer, '\n', x->alen);
        if (nl != NULL) {
            *extra = (size_t) (nl - x->answer) + 1 < x->alen;
            x->alen = (size_t) (nl - x->answer);
            return 1;
        }
        if (x->alen >= EXEC_ANSWER_MAX) {
            return -2;
        }
        int ready = wait_io(x, POLLIN);
        if (ready <= 0) {
            return ready;
        }
        ssize_t n = recv(x->p->io, x->answer + x->alen, EXEC_ANSWER_MAX - x->alen, MSG_DONTWAIT);
        if (n < 0 && errno == ECONNRESET) {
            return -3;
        }
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            return -1;
        }
        x->alen += n > 0 ? (size_t) n : 0;
    }
}

/* What its stdout holds before the request is sent: 1 output (the process
 * is out of step), -1 its end (it closed it: ended, or ending), 0 nothing. */
static int
before_request(struct exec_proc *p)
{
    char b;
    struct pollfd fd = {p->io, POLLIN, 0};
    if (poll(&fd, 1, 0) <= 0) {
        return 0;
    }
    ssize_t n = recv(p->io, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n > 0 ? 1 : n == 0 ? -1 : 0;
}

/* Bytes waiting on its stdout now (not EOF): right after an answer line,
 * a second line for one request. */
static int
pending(struct exec_proc *p)
{
    char b;
    struct pollfd fd = {p->io, POLLIN, 0};
    return poll(&fd, 1, 0) > 0 && recv(p->io, &b, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

/* What an overrun of the limit is called in the job's error. */
static void
describe_limit(struct exec_limit l, char *out, size_t cap)
{
    if (l.start > 0) {
        snprintf(out, cap,
                 "did not answer within %d s (timeout %d s + start_timeout %d s of a new "
                 "process; killed)",
                 l.timeout + l.start, l.timeout, l.start);
    } else {
        snprintf(out, cap, "did not answer within %d s (killed)", l.timeout);
    }
}

/* Why a job failed that got no answer line, in what: the overrun (limit)
 * or NULL (how it ended, said by failed_when), and what it wrote without
 * the newline that ends an answer, when it wrote something: a handler
 * that answers with write(json) and no "\n" is told so, not only that it
 * never answered. */
static int
no_answer(struct xjob *x, const char *limit, char *why, size_t cap)
{
    char shown[EXEC_SHOWN * 2], what[EXEC_SHOWN * 2 + 256], when[EXEC_SHOWN * 2 + 300];
    if (x->alen == 0) {
        return failed(x, limit, why, cap);
    }
    exec_shown(x->answer, x->alen, shown, sizeof(shown));
    snprintf(what, sizeof(what), "%s; it wrote '%s' without the newline that ends an answer",
             limit != NULL ? limit : "", shown);
    snprintf(when, sizeof(when), " before answering%s", what);
    return limit != NULL ? failed(x, what, why, cap) : failed_when(x, NULL, when, why, cap);
}

/* The answer line read is this job's, or the process is out of step:
 * killed and the job failed (-1 with why). It echoed another message id:
 * a stray line of an earlier job. More output follows the line (extra)
 * without an echo to tell which line is this job's: taking the first
 * could delete a message never handled, so neither is trusted. With this
 * job's id echoed, the answer stands and the process is restarted. */
static int
accept_answer(struct xjob *x, const struct exec_answer *a, int extra, char *why, size_t cap)
{
    const char *mine = x->api->message_id(x->job);
    char what[700], theirs[EXEC_SHOWN * 2], ours[EXEC_SHOWN * 2];
    if (!exec_answer_for(a, mine)) {
        exec_shown(a->message_id, strlen(a->message_id), theirs, sizeof(theirs));
        exec_shown(mine, strlen(mine), ours, sizeof(ours));
        snprintf(what, sizeof(what),
                 "answered for another job (message_id '%s', not this job's '%s'; restarted)",
                 theirs, ours);
        return failed(x, what, why, cap);
    }
    if (extra && !a->echoed) {
        return failed(x,
                      "wrote more than one line for one request (which one answers this job "
                      "is unknown; echo message_id; restarted)",
                      why, cap);
    }
    x->p->answered++;
    drain_stderr(x); /* what it logged right before answering is this job's */
    exec_lines_flush(&x->p->lines, job_line, x);
    if (extra) {
        x->api->log(x->job, TWICE_LOG_WARN,
                    "handler %d wrote more than one line for one request (restarted)",
                    (int) x->p->pid);
        exec_proc_kill(x->p, NULL);
    }
    return 0;
}

int
exec_exchange(const twice_api *api, twice_job *job, struct exec_proc *p, const char *req,
              size_t len, struct exec_limit l, struct exec_answer *a, char *why, size_t cap)
{
    if (p->answered > 0) {
        l.start = 0; /* started long ago */
    }
    long long seconds = (long long) l.timeout + l.start;
    struct xjob x = {api, job, p, now_ms() + seconds * 1000, NULL, 0, p->err >= 0, 0};
    int extra = 0, rc;
    char limit[160], what[EXEC_SHOWN * 2 + 160];
    /* A process that ended (or closed its stdout) before the request is
     * said as one that ends while it is sent: which of the two a fast exit
     * meets is only timing. */
    int early = exec_proc_ended(p) ? -1 : before_request(p);
    if (early < 0) {
        failed_when(&x, NULL, " before reading the request (restarted)", why, cap);
        return -2;
    }
    if (early > 0) {
        failed(&x, "was out of step (output before the request; restarted)", why, cap);
        return -2;
    }
    if ((x.answer = malloc(EXEC_ANSWER_MAX + 1)) == NULL) {
        snprintf(why, cap, "out of memory");
        return -1;
    }
    describe_limit(l, limit, sizeof(limit));
    rc = send_request(&x, req, len);
    if (rc == 1) {
        rc = read_answer(&x, &extra);
    }
    if (rc == -4) {
        rc = failed(&x,
                    "wrote to its stdout before reading its whole request (a handler reads "
                    "the request's line, then answers; restarted)",
                    why, cap);
    } else if (rc == -3 || (rc == -1 && unread(p))) {
        /* it never saw the job (a child of its may still hold the socket) */
        failed_when(&x, NULL, " before reading the request (restarted)", why, cap);
        rc = -2;
    } else if (rc == 1 && exec_parse_answer(x.answer, x.alen, a, what, sizeof(what)) != 0) {
        rc = failed(&x, what, why, cap); /* "handler PID answered ...", as every other */
    } else if (rc == -2) {
        rc = failed(&x, "answered a line longer than 64 KiB", why, cap);
    } else if (rc != 1) {
        rc = no_answer(&x, rc == 0 ? limit : NULL, why, cap);
    } else {
        rc = accept_answer(&x, a, extra || pending(p), why, cap);
    }
    free(x.answer);
    return rc;
}
