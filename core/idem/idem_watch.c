/*
 * idem_watch.c - what a transactional plugin's own statements on the store's
 * connection (idem_pgconn) tell of the store and of the run (see idem.h,
 * idem_watch_begin): libpq's event callback sees every result the
 * connection makes, the plugin's error results included, with their
 * SQLSTATE, which no statement of twiced's after them could read (the next
 * one in the aborted transaction answers 25P02). A statement of the plugin
 * that failed through the store's fault (idem_plugin_state_stale) marks the
 * store as one of twiced's would (idem_usable); the one that aborted the
 * transaction is kept with its message, so that the run's outcome can be
 * laid at the store's door or the job's, and the job's error name it.
 */
#include "idem.h"

#include <libpq-events.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <string.h>

#include "idem_internal.h"
#include "utf8.h"

/* The name the callback is registered under (libpq's, for its messages). */
#define WATCH_NAME "twice store watch"

/* Whether state (a SQLSTATE) starts with class (its first two characters). */
static int
in_class(const char *state, const char *class)
{
    return strncmp(state, class, 2) == 0;
}

int
idem_plugin_state_stale(const char *state)
{
    static const char *const classes[] = {"08", "53", "57", "58", "XX", "F0", "HV", "28", "72"};
    static const char *const states[] = {"3D000", "25006", "25P03", "25P04", "42501", "42P01"};
    for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
        if (in_class(state, classes[i])) {
            return 1;
        }
    }
    for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
        if (strcmp(state, states[i]) == 0) {
            return 1;
        }
    }
    /* class 55 but what only the plugin's own statement can be at fault for:
     * a setting it cannot change now, an enum value it added and used */
    return in_class(state, "55") && strcmp(state, "55P02") != 0 && strcmp(state, "55P04") != 0;
}

/* Keep a failed statement of the plugin's as the one that aborted its
 * transaction (the last that failed, since one rolled back to a savepoint
 * no longer counts): its SQLSTATE and "SQLSTATE S: message", one line, cut
 * between characters to the field's size. */
static void
watch_note_failure(struct idem_store *s, const char *state, const char *message)
{
    snprintf(s->watch_abort_state, sizeof(s->watch_abort_state), "%s", state);
    int n = snprintf(s->watch_abort_text, sizeof(s->watch_abort_text), "SQLSTATE %s: %s", state,
                     message != NULL ? message : "(no message)");
    utf8_mark_cut(s->watch_abort_text, sizeof(s->watch_abort_text), n);
    idem_flatten(s->watch_abort_text);
}

/* libpq's event callback, registered once per connection (it stays through
 * PQreset): while the store is watched, keep the first SQLSTATE of a result
 * that failed through the store's fault, and the last failure but 25P02 (a
 * statement in a transaction already aborted says nothing new). Always
 * succeeds: a failing callback would turn the plugin's result into an
 * error. */
static int
watch_event(PGEventId id, void *info, void *arg)
{
    struct idem_store *s = arg;
    if (id != PGEVT_RESULTCREATE || !s->watching) {
        return 1;
    }
    const PGresult *res = ((const PGEventResultCreate *) info)->result;
    const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    if (PQresultStatus(res) != PGRES_FATAL_ERROR || state == NULL || state[0] == '\0' ||
        strcmp(state, "25P02") == 0) {
        return 1;
    }
    watch_note_failure(s, state, PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY));
    if (s->watched_state[0] == '\0' && idem_plugin_state_stale(state)) {
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
    s->watch_abort_state[0] = '\0';
    s->watch_abort_text[0] = '\0';
    s->watching = s->watch_registered;
}

void
idem_watch_end(struct idem_store *s, struct idem_watched *out)
{
    s->watching = 0;
    int live = PQstatus(s->conn) == CONNECTION_OK;
    if (s->watched_state[0] != '\0' && live) {
        s->stale = 1;
    }
    out->store_fault = s->watched_state;
    out->aborted =
        live && PQtransactionStatus(s->conn) == PQTRANS_INERROR && s->watch_abort_state[0] != '\0';
    out->by_store = out->aborted && idem_plugin_state_stale(s->watch_abort_state);
    out->error = out->aborted ? s->watch_abort_text : "";
}
