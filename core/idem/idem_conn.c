/*
 * idem_conn.c - connecting a store again when its connection dropped
 * without waiting as libpq does for the server: a reset (or a first connect:
 * idem_open_waiting, idem_open_polled) carried on by polls
 * (idem_reconnect_poll), the store's tick asked meanwhile; a connection whose
 * socket a plugin closed told from a live one, and replaced (idem_socket_ours);
 * whether a dsn parses at all (idem_dsn_parses). Not the connection itself:
 * idem.c.
 */
#include "idem.h"

#include "clock.h"
#include "fdguard.h"

#include <errno.h>
#include <libpq-fe.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "idem_internal.h"

/* Seconds one host may take, as libpq counts connect_timeout (values under 2
 * are 2; 0 or none, which libpq waits on forever, is our default 10 here: a
 * reconnect that never ends would leave the store down for good). */
#define CONN_DEFAULT_TIMEOUT_S 10

int
idem_dsn_parses(const char *dsn)
{
    char *msg = NULL; /* not shown: it can quote the dsn, password included */
    PQconninfoOption *opts = PQconninfoParse(dsn, &msg);
    PQconninfoFree(opts);
    PQfreemem(msg);
    return opts != NULL;
}

long long
idem_attempt_ms(PGconn *conn)
{
    long long secs = 0;
    int hosts = 1;
    PQconninfoOption *opts = PQconninfo(conn);
    for (PQconninfoOption *o = opts; o != NULL && o->keyword != NULL; o++) {
        if (o->val == NULL) {
            continue;
        }
        if (strcmp(o->keyword, "connect_timeout") == 0) {
            secs = strtoll(o->val, NULL, 10);
        } else if (strcmp(o->keyword, "host") == 0 || strcmp(o->keyword, "hostaddr") == 0) {
            int n = 1;
            for (const char *c = o->val; *c != '\0'; c++) {
                n += *c == ',';
            }
            hosts = n > hosts ? n : hosts;
        }
    }
    PQconninfoFree(opts);
    if (secs <= 0) {
        secs = CONN_DEFAULT_TIMEOUT_S;
    }
    return (secs < 2 ? 2 : secs) * 1000LL * hosts;
}

void
idem_connect_begun(struct idem_store *s)
{
    s->connecting = 1;
    s->sock = FDGUARD_ID_NONE; /* a new socket, noted when the connect succeeds */
    s->stale = 0;              /* a new connection: the settings as they are now */
    s->connect_wants_read = 0; /* libpq: first wait until the socket is writable */
    s->connect_ms = idem_attempt_ms(s->conn);
    s->connect_deadline = clock_mono_ms() + s->connect_ms;
}

void
idem_socket_note(struct idem_store *s)
{
    fdguard_note(&s->sock, PQsocket(s->conn));
}

int
idem_socket_ours(const struct idem_store *s)
{
    int fd = PQsocket(s->conn);
    if (s->sock.fd < 0 || fd < 0) {
        return 1; /* none noted, or libpq closed it itself: resetting it is safe */
    }
    return fdguard_same(&s->sock, fd);
}

int
idem_conn_replace(struct idem_store *s, int start_only, char *err, size_t errlen)
{
    PGconn *conn = idem_connect_dsn(s->dsn, start_only);
    if (conn == NULL) {
        idem_set_err(err, errlen, "cannot connect to PostgreSQL: out of memory");
        return -1;
    }
    fdguard_keep(s->conn); /* left alone: see idem_internal.h */
    s->conn = conn;
    s->sock = FDGUARD_ID_NONE;
    s->watch_registered = 0; /* its event callback was on the old one */
    PQsetNoticeProcessor(s->conn, idem_quiet_notices, NULL);
    if (PQstatus(s->conn) == CONNECTION_BAD) {
        return idem_connect_error(s, err, errlen);
    }
    return 0;
}

/* Begin a reconnect of s: 0, or -1 with err. A connection whose socket is
 * not ours is not reset (that would close another's descriptor) but replaced. */
static int
begin(struct idem_store *s, char *err, size_t errlen)
{
    idem_stmts_forget(s->stmts); /* the new server connection knows none of them */
    if (!idem_socket_ours(s)) {
        if (idem_conn_replace(s, 1, err, errlen) != 0) {
            return -1;
        }
    } else if (!PQresetStart(s->conn)) {
        return idem_connect_error(s, err, errlen);
    }
    idem_connect_begun(s);
    return 0;
}

int
idem_reconnect_ticking(struct idem_store *s, char *err, size_t errlen)
{
    for (;;) {
        int got = idem_reconnect_poll(s, s->tick_ms, err, errlen);
        if (got != 0) {
            return got == 1 ? 0 : -1;
        }
        if (s->tick(s->tick_arg) != 0) {
            idem_set_err(err, errlen,
                         "cannot connect to PostgreSQL: the connect was given up "
                         "unanswered (no more time to wait for it)");
            return -1;
        }
    }
}

int
idem_reconnect_poll(struct idem_store *s, int wait_ms, char *err, size_t errlen)
{
    if (!s->connecting && begin(s, err, errlen) != 0) {
        return -1;
    }
    long long until = clock_mono_ms() + (wait_ms > 0 ? wait_ms : 0);
    for (;;) {
        long long now = clock_mono_ms();
        if (now >= s->connect_deadline) {
            s->connecting = 0;
            idem_set_err(err, errlen, "cannot connect to PostgreSQL: no answer within %lld s",
                         (s->connect_ms + 999) / 1000);
            return -1;
        }
        long long left = (until < s->connect_deadline ? until : s->connect_deadline) - now;
        struct pollfd p = {.fd = PQsocket(s->conn),
                           .events = s->connect_wants_read ? POLLIN : POLLOUT};
        int ready = p.fd < 0 ? 1 : poll(&p, 1, left > 0 ? (int) left : 0);
        if (ready < 0 && errno == EINTR) {
            continue;
        }
        if (ready == 0) {
            return 0; /* the server has not answered yet */
        }
        PostgresPollingStatusType st = PQresetPoll(s->conn);
        if (st == PGRES_POLLING_OK) {
            s->connecting = 0;
            PQsetNoticeProcessor(s->conn, idem_quiet_notices, NULL);
            idem_socket_note(s);
            return 1;
        }
        if (st == PGRES_POLLING_FAILED) {
            s->connecting = 0;
            return idem_connect_error(s, err, errlen);
        }
        s->connect_wants_read = st == PGRES_POLLING_READING;
    }
}

int
idem_open_bounded(const char *dsn, const char *table, const char *owner, long limit_ms,
                  struct idem_store **out, char *err, size_t errlen)
{
    int rc = idem_open_polled(dsn, table, owner, NULL, out, err, errlen);
    if (rc != 0) {
        return rc;
    }
    struct idem_store *s = *out;
    if (limit_ms > 0) {
        s->connect_ms = limit_ms;
        s->connect_deadline = clock_mono_ms() + limit_ms;
    }
    idem_set_wait(s, (long) s->connect_ms, 0, NULL, NULL);
    for (;;) {
        int got = idem_reconnect_poll(s, (int) s->connect_ms, err, errlen);
        if (got != 0) {
            return got == 1 ? 0 : -1;
        }
    }
}
