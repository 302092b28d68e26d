/*
 * idem_watch.c - what a transactional plugin's own statements on the store's
 * connection (idem_pgconn) tell of the store (see idem.h, idem_watch_begin):
 * libpq's event callback sees every result the connection makes, the
 * plugin's error results included, with their SQLSTATE, which no statement
 * of twiced's after them could read (the next one in the aborted
 * transaction answers 25P02). A statement of the plugin that failed through
 * the store's fault marks the store as one of twiced's would (idem_usable).
 */
#include "idem.h"

#include <libpq-events.h>
#include <libpq-fe.h>
#include <stdio.h>

#include "idem_internal.h"

/* The name the callback is registered under (libpq's, for its messages). */
#define WATCH_NAME "twice store watch"

/* libpq's event callback, registered once per connection (it stays through
 * PQreset): while the store is watched, keep the first SQLSTATE of a result
 * that failed through the store's fault. Always succeeds: a failing
 * callback would turn the plugin's result into an error. */
static int
watch_event(PGEventId id, void *info, void *arg)
{
    struct idem_store *s = arg;
    if (id != PGEVT_RESULTCREATE || !s->watching || s->watched_state[0] != '\0') {
        return 1;
    }
    const PGresult *res = ((const PGEventResultCreate *) info)->result;
    const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    if (PQresultStatus(res) == PGRES_FATAL_ERROR && state != NULL && idem_state_stale(state)) {
        snprintf(s->watched_state, sizeof(s->watched_state), "%s", state);
    }
    return 1;
}

void
idem_watch_begin(struct idem_store *s)
{
    if (!s->watch_registered) {
        s->watch_registered = PQregisterEventProc(s->conn, watch_event, WATCH_NAME, s) != 0;
    }
    s->watched_state[0] = '\0';
    s->watching = s->watch_registered;
}

const char *
idem_watch_end(struct idem_store *s)
{
    s->watching = 0;
    if (s->watched_state[0] != '\0' && PQstatus(s->conn) == CONNECTION_OK) {
        s->stale = 1;
    }
    return s->watched_state;
}
