/*
 * idem_wait.c - running a statement on a store whose thread must not be held
 * by it (idem_set_wait in idem.h: the acknowledger's): sent without blocking,
 * its answer waited for with poll, a tick called now and then meanwhile, and
 * given up, the connection ended, when it does not come in time. Stores
 * without a wait run their statements as libpq does, blocking. Not the
 * statements themselves (idem.c, idem_stmt.c, outbox.c) nor reconnecting
 * (idem_conn.c).
 */
#include "idem.h"

#include "clock.h"

#include <errno.h>
#include <libpq-fe.h>
#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>

#include "idem_internal.h"

void
idem_set_wait(struct idem_store *s, long answer_ms, int tick_ms, int (*tick)(void *arg), void *arg)
{
    s->answer_ms = answer_ms > 0 ? answer_ms : 0;
    s->tick_ms = tick_ms > 0 ? tick_ms : 100;
    s->tick = tick;
    s->tick_arg = arg;
}

int
idem_waits(const struct idem_store *s)
{
    return s->answer_ms > 0 || s->tick != NULL;
}

long long
idem_answer_deadline(struct idem_store *s)
{
    s->gave_up = IDEM_ANSWERED;
    if (idem_waits(s) && !PQisnonblocking(s->conn)) {
        /* Sends queue what the socket does not take now; idem_await flushes. A
         * new connection (a reconnect) starts blocking: set at every statement. */
        PQsetnonblocking(s->conn, 1);
    }
    return s->answer_ms > 0 ? clock_mono_ms() + s->answer_ms : 0;
}

/* End the connection under the statement in flight, without waiting for the
 * server: the socket is shut down, and libpq, reading its end, marks the
 * connection bad; PQgetResult then answers at once with an error (no
 * SQLSTATE: idem_unreachable), as for a connection that dropped. Whatever
 * the server does with the statement is unknown. -1. */
static int
give_up(struct idem_store *s, enum idem_gave_up why)
{
    s->gave_up = why;
    if (why == IDEM_GAVE_UP_DEADLINE) {
        snprintf(s->gave_up_text, sizeof(s->gave_up_text),
                 "no answer from PostgreSQL within %ld s: the connection is given up (what the "
                 "statement did is unknown)",
                 (s->answer_ms + 999) / 1000);
    } else {
        snprintf(s->gave_up_text, sizeof(s->gave_up_text),
                 "the statement was given up unanswered (no more time to wait for it): the "
                 "connection is closed (what the statement did is unknown)");
    }
    int fd = PQsocket(s->conn);
    if (fd < 0 || !idem_socket_ours(s)) {
        return -1; /* closed under libpq: its number is not to be touched (idem_conn.c) */
    }
    shutdown(fd, SHUT_RDWR);
    /* Reads what was there, then the end; never blocks once shut down. */
    while (PQstatus(s->conn) != CONNECTION_BAD && PQconsumeInput(s->conn) == 1) {
    }
    return -1;
}

int
idem_await(struct idem_store *s, long long deadline)
{
    if (!idem_waits(s)) {
        return 0; /* PQgetResult blocks as libpq does */
    }
    PGconn *c = s->conn;
    long long next_tick = clock_mono_ms() + s->tick_ms;
    for (;;) {
        int unsent = PQflush(c); /* 0 all sent, 1 some left, -1 failed */
        if (unsent < 0 || PQconsumeInput(c) == 0 || PQstatus(c) == CONNECTION_BAD) {
            return 0; /* the connection failed: PQgetResult says so at once */
        }
        if (unsent == 0 && !PQisBusy(c)) {
            return 0;
        }
        long long now = clock_mono_ms();
        if (now >= next_tick) {
            if (s->tick != NULL && s->tick(s->tick_arg) != 0) {
                return give_up(s, IDEM_GAVE_UP_TICK);
            }
            now = clock_mono_ms();
            next_tick = now + s->tick_ms;
        }
        if (deadline > 0 && now >= deadline) {
            return give_up(s, IDEM_GAVE_UP_DEADLINE);
        }
        long long until = deadline > 0 && deadline < next_tick ? deadline : next_tick;
        struct pollfd p = {.fd = PQsocket(c), .events = POLLIN | (unsent ? POLLOUT : 0)};
        if (p.fd < 0) {
            return 0;
        }
        if (poll(&p, 1, (int) (until - now)) < 0 && errno != EINTR) {
            return 0;
        }
    }
}

/* The results of the statement just sent, waited for as idem_await does:
 * the first that failed, else the last (as PQexec answers); NULL when
 * none came. */
static PGresult *
collect(struct idem_store *s, long long deadline)
{
    PGresult *keep = NULL;
    for (;;) {
        idem_await(s, deadline);
        PGresult *r = PQgetResult(s->conn);
        if (r == NULL) {
            return keep;
        }
        if (keep != NULL && PQresultStatus(keep) == PGRES_FATAL_ERROR) {
            PQclear(r);
        } else {
            PQclear(keep);
            keep = r;
        }
    }
}

PGresult *
idem_exec(struct idem_store *s, const char *sql, int nparams, const char *const *params)
{
    if (!idem_waits(s)) {
        return nparams > 0 ? PQexecParams(s->conn, sql, nparams, NULL, params, NULL, NULL, 0)
                           : PQexec(s->conn, sql);
    }
    long long deadline = idem_answer_deadline(s);
    int sent = nparams > 0 ? PQsendQueryParams(s->conn, sql, nparams, NULL, params, NULL, NULL, 0)
                           : PQsendQuery(s->conn, sql);
    return sent == 1 ? collect(s, deadline) : NULL;
}

PGresult *
idem_exec_prepared(struct idem_store *s, const char *name, int nparams, const char *const *params)
{
    if (!idem_waits(s)) {
        return PQexecPrepared(s->conn, name, nparams, params, NULL, NULL, 0);
    }
    long long deadline = idem_answer_deadline(s);
    int sent = PQsendQueryPrepared(s->conn, name, nparams, params, NULL, NULL, 0);
    return sent == 1 ? collect(s, deadline) : NULL;
}

const char *
idem_failure_text(const struct idem_store *s, const PGresult *res)
{
    if (s->gave_up != IDEM_ANSWERED) {
        return s->gave_up_text;
    }
    const char *msg = res != NULL ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    if (msg == NULL) {
        msg = PQerrorMessage(s->conn);
    }
    if (msg == NULL || *msg == '\0') {
        msg = res != NULL ? PQresStatus(PQresultStatus(res)) : "unknown error";
    }
    return msg;
}
