/*
 * idem_internal.h - what idem.c shares with idem_schema.c, idem_janitor.c,
 * idem_keys.c, idem_stmt.c, idem_conn.c, idem_wait.c, idem_watch.c and outbox.c and nobody else:
 * the store itself, running SQL written against its table, errors in its words, array literals,
 * the hot-path statements prepared on demand, and the outbox's part of the migration. Not part of
 * the store's contract (idem.h); never include it outside idem*.c and outbox.c.
 */
#ifndef TWICE_IDEM_INTERNAL_H
#define TWICE_IDEM_INTERNAL_H

#include "fdguard.h"

#include <libpq-fe.h>
#include <stddef.h>

/* Why a statement's answer was not waited for (idem_wait.c). */
enum idem_gave_up {
    IDEM_ANSWERED = 0,     /* it was, or no statement was given up */
    IDEM_GAVE_UP_DEADLINE, /* no answer within the store's answer_ms */
    IDEM_GAVE_UP_TICK      /* its tick said to stop waiting */
};

/* The two sets of indexes a table may have (idem_schema.c says why). */
enum idem_layout {
    LAYOUT_UNKNOWN = 0,
    LAYOUT_PARTIAL, /* tables created before the lease layout: three partial indexes */
    LAYOUT_LEASE    /* tables created since: one index of lease_until */
};

struct idem_store {
    PGconn *conn;             /* never NULL once idem_open has returned a store */
    char *dsn;                /* as configured, for a new connection (idem_conn_replace) */
    char *name;               /* the table name as configured, for error texts */
    char *table;              /* quoted with PQescapeIdentifier */
    char *index;              /* quoted name of the janitor index */
    char *owner_index;        /* quoted name of the index of in-progress keys by owner */
    char *free_index;         /* quoted name of the janitor index of free keys */
    char *lease_index;        /* quoted name of the index of leases (the lease layout) */
    enum idem_layout layout;  /* known after the first purge or expiry; 0: not yet */
    char *pause_table;        /* quoted name of the queue pause table (pause.h) */
    char *owner;              /* this process in leases */
    struct idem_stmts *stmts; /* the hot-path statements (idem_stmt.c) */
    char failed_state[6];     /* the SQLSTATE of the last failed statement, "-" when it had
                                 none (no answer came), "" before any: idem_unreachable */
    int stale;                /* a statement failed through the store's fault on the live
                                 connection (idem_state_stale): idem_usable is 0 until a
                                 reconnect */
    /* The plugin's statements watched (idem_watch.c). */
    int watch_registered;       /* its libpq event callback is on the connection */
    int watching;               /* between idem_watch_begin and idem_watch_end */
    char watched_state[6];      /* the first SQLSTATE of a store fault among them, "" none */
    char watch_abort_state[6];  /* the last that failed but 25P02 (the one that aborted
                                   the transaction, if it ended aborted), "" none */
    char watch_abort_text[256]; /* ... as "SQLSTATE S: message", one line, cut */
    /* The socket of the connection made last (idem_socket_note), to tell it from
     * a descriptor a plugin closed, or closed and opened again (idem_socket_ours). */
    struct fdguard_id sock;
    /* A reconnect idem_reconnect_poll began and has not finished (idem_conn.c). */
    int connecting;
    int connect_wants_read;     /* what PQresetPoll last asked to wait for */
    long long connect_deadline; /* monotonic ms: the attempt is given up then */
    long long connect_ms;       /* ... that long after it began */
    /* How statements wait for their answers (idem_set_wait; all 0: as libpq does). */
    long answer_ms;            /* a statement unanswered this long is given up */
    int tick_ms;               /* tick is called about this often while one waits */
    int (*tick)(void *arg);    /* nonzero: give the statement up now */
    void *tick_arg;            /* tick's argument, borrowed */
    enum idem_gave_up gave_up; /* the last statement's: its failure is told so */
    char gave_up_text[160];    /* ... in these words */
    struct idem_lost *lost;    /* borrowed (idem_share_lost), or NULL */
};

struct buf;

/* Whether statements on s wait as idem_set_wait said (else as libpq does). */
int idem_waits(const struct idem_store *s);
/* A statement is about to go out on s: the monotonic ms its answer is given
 * up at (0: never), and, for a store that waits, the connection put in
 * nonblocking mode. */
long long idem_answer_deadline(struct idem_store *s);
/* Before each PQgetResult of a statement sent since idem_answer_deadline:
 * wait until a result can be read without blocking, flushing what is left to
 * send and calling the store's tick meanwhile; past deadline (0: none), or
 * when the tick says so, end the connection (the result read next is then
 * an error, as for a dropped connection). 0, or -1 when it gave up. Returns
 * at once for a store that does not wait. */
int idem_await(struct idem_store *s, long long deadline);
/* PQexecParams (PQexec when nparams is 0) and PQexecPrepared, waiting as
 * idem_set_wait said: the result is the caller's, NULL when none came. */
PGresult *idem_exec(struct idem_store *s, const char *sql, int nparams, const char *const *params);
PGresult *idem_exec_prepared(struct idem_store *s, const char *name, int nparams,
                             const char *const *params);
/* A new connection to dsn with twiced's parameters: begun (start_only: carried on
 * by idem_reconnect_poll) or made. NULL when out of memory. */
PGconn *idem_connect_dsn(const char *dsn, int start_only);
/* A connect of s has just succeeded: note which socket it has. */
void idem_socket_note(struct idem_store *s);
/* Whether s's connection still has the socket idem_socket_note saw (1 too
 * when none was noted): 0 when the descriptor was closed under it (a plugin
 * that closes every descriptor above 2), or closed and given since to
 * another file or socket. libpq does not notice the first (its reads fail
 * with EBADF, the connection stays CONNECTION_OK) and would talk to the
 * second. One fstat. */
int idem_socket_ours(const struct idem_store *s);
/* Put a new connection in place of s's, whose socket is not ours: begun
 * (start_only) or made. The old PGconn is left as it is, never reset nor
 * finished: both would write to and close its descriptor's number, which
 * may be another file's or socket's by now (a few kilobytes lost for each
 * time a plugin closed twiced's descriptors). 0, or -1 with err. */
int idem_conn_replace(struct idem_store *s, int start_only, char *err, size_t errlen);
/* How long one connect of conn may take (ms): its connect_timeout (10 s
 * when none) for each host it names, as a blocking connect would wait. */
long long idem_attempt_ms(PGconn *conn);
/* A connect of s was just started (PQconnectStartParams, PQresetStart): it is
 * carried on by idem_reconnect_poll, and given up past the dsn's
 * connect_timeout from now. */
void idem_connect_begun(struct idem_store *s);
/* idem_reconnect for a store with a tick: idem_reconnect_poll, the tick asked
 * about every tick_ms; given up (-1 with err) when the tick says so, the
 * reconnect carried on by the next call. 0 once connected. */
int idem_reconnect_ticking(struct idem_store *s, char *err, size_t errlen);
/* What a failed statement's error says (res may be NULL): that it was given
 * up, when it was, else its primary message, else the connection's. Borrowed
 * from s or res. */
const char *idem_failure_text(const struct idem_store *s, const PGresult *res);

/* Describe the connection's failed connect in err ("cannot connect to
 * PostgreSQL: ...", one line, never the password); -1. */
int idem_connect_error(struct idem_store *s, char *err, size_t errlen);

/* The notice processor of every connection: notices are dropped. */
void idem_quiet_notices(void *arg, const char *message);

/* Note why a statement failed (res: its result, NULL when none came), for
 * idem_unreachable; every failed statement's path calls it (idem_pg_fail
 * does). */
void idem_note_failure(struct idem_store *s, const PGresult *res);

/* Whether a statement that failed with SQLSTATE state ("-": no answer came,
 * "": no failure recorded) failed with the store's being unreachable, so that
 * it may pass when the store is back: the connection lost (class 08, or no
 * answer), the server ending it (57P01-03: shut down or restarted, as in a
 * failover) or gone read-only (25006: the old primary, now a standby). Not an
 * SQL error the same statement meets again. Pure. */
int idem_state_passes(const char *state);

/* Whether a statement that failed with SQLSTATE state on a connection that
 * stays up failed through the store's fault rather than its data: its
 * settings or grants (a statement_timeout or lock_timeout, a revoked grant,
 * default_transaction_read_only, a search_path), its resources (a full
 * disk), an administrator's cancel. Those a new connection may not meet (it
 * takes up the role's and database's settings as they are now), so the
 * connection is made again before its next use (idem_usable). Not a data
 * exception (22), an integrity violation (23), a transaction rolled back
 * for contention (40: serialization, deadlock), nor a statement in a
 * transaction an earlier error aborted (25P02: that error was the
 * caller's); "" and "-" (no answer: the connection is gone anyway) neither.
 * Pure. */
int idem_state_stale(const char *state);

/* Whether a transactional plugin's own statement (on idem_pgconn, watched by
 * idem_watch_begin) that failed with SQLSTATE state failed through the
 * store's or its operator's fault rather than the plugin's: the connection
 * or the server (08, 57: a cancel, statement_timeout, a shutdown; 58, XX),
 * its resources (53), its settings (55 but 55P02 and 55P04: lock_timeout,
 * an object in use; 25006 read-only, 25P03 and 25P04 the idle-in-transaction
 * and transaction timeouts, 72000 snapshot too old), its configuration
 * files (F0), a foreign server (HV), authorization (28, 3D000), and, on
 * purpose, a revoked grant (42501) and a missing table (42P01: a migration
 * window, a search_path) so that an operator's mistake dead-letters no good
 * message. Everything else is the plugin's: its SQL (42 but those two), its
 * data (22, 23), its functions' RAISE (P0), contention (40), ... Narrower
 * than idem_state_stale, which judges twiced's own statements, whose SQL
 * cannot be wrong unless the table changed under it. "" is no fault. Pure. */
int idem_plugin_state_stale(const char *state);

/* vsnprintf into err (nothing when err is NULL or errlen 0). */
void idem_set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Make libpq's text one line in place: its messages end in newlines and
 * continue on lines that start with a tab; each run of white space becomes
 * one space, and none is left at either end. */
void idem_flatten(char *s);

/* Describe a failed statement as "<what> (table T): <message><hint>" in
 * err (one line, never the password), clear res (may be NULL: the message
 * is then the connection's) and return -1. */
int idem_pg_fail(struct idem_store *s, PGresult *res, const char *what, char *err, size_t errlen);
/* The same for a table twice keeps next to the key table: T is the key
 * table's name + suffix ("_pause", "_rate_limits"), the table that failed. */
int idem_pg_fail_on(struct idem_store *s, const char *suffix, PGresult *res, const char *what,
                    char *err, size_t errlen);

/* A question whose answer is one boolean (one row, one column: whether the
 * server is a standby, a table exists...): 1 true, 0 false, -1 with err
 * (as idem_pg_fail says it) when it was not answered. */
int idem_ask(struct idem_store *s, const char *sql, int nparams, const char *const *params,
             const char *what, char *err, size_t errlen);

/* Append tmpl to out with its markers replaced: @T the quoted table, @I, @O,
 * @F and @E its indexes, @P the pause table, and extra's (NULL, or pairs of
 * a marker letter and its text ending in NULL). 0, or -1 out of memory. */
int idem_sql_expand(struct buf *out, const char *tmpl, const struct idem_store *s,
                    const char *const *extra);

/* Append one element to a PostgreSQL array literal being built in b (empty
 * at first): quoted, with double quotes and backslashes escaped by a
 * backslash; the bare word NULL for a null element. */
void idem_array_elem(struct buf *b, const char *v);
/* Close the literal; NULL when an allocation failed. Borrowed from b. */
const char *idem_array_end(struct buf *b);

/*
 * Run SQL built from tmpl ("@T" is the quoted table, "@I" the janitor
 * index, "@P" the pause table of pause.h) with text parameters. Returns the result (owned by the
 * caller, PQclear it) when its status is `want`, else NULL with err ("WHAT (table T): message",
 * never the DSN's password).
 */
PGresult *idem_run_sql(struct idem_store *s, const char *tmpl, int nparams,
                       const char *const *params, ExecStatusType want, const char *what, char *err,
                       size_t errlen);

/* The same with more markers, for a statement on the key table's name +
 * suffix ("" the key table itself; errors name that table): extra is NULL or
 * pairs of a marker letter and its text, ending in NULL (as the migration's
 * @L). */
PGresult *idem_run_sql_with(struct idem_store *s, const char *suffix, const char *tmpl,
                            const char *const *extra, int nparams, const char *const *params,
                            ExecStatusType want, const char *what, char *err, size_t errlen);

/* The advisory lock of a migration: FNV-1a 64 of kind ("twice:idem:") and
 * the table's name, the same in every process and PostgreSQL version (unlike
 * hashtext); positive. */
long long idem_lock_key(const char *kind, const char *table);

/* The configured table's name + suffix, quoted as an identifier (malloc'd: the
 * caller frees it), for the tables another idem file keeps next to it
 * (tokens.c); NULL when out of memory. */
char *idem_quote_table(struct idem_store *s, const char *suffix);

/* One row about the configured table + suffix: sql, with the quoted name as
 * $1, run and checked (what names it in err). The result (the caller clears
 * it), or NULL with err. */
PGresult *idem_ask_about_table(struct idem_store *s, const char *suffix, const char *sql,
                               const char *what, char *err, size_t errlen);

/* Room for a statement's name: "twice_", a tag, "_" and 24 hex digits. */
#define IDEM_STMT_NAME_MAX 48

/*
 * The hot-path statements of one connection (idem_stmt.c): named
 * "twice_<tag>_<hash of the text>" and prepared on demand, so that they work
 * through a pooler in transaction mode. Not thread-safe (one per store).
 */
struct idem_stmts;

/* Takes tags[i] (borrowed, static) and sql[i] (malloc'd; ownership moves in,
 * each set to NULL, also on failure) for i < n. NULL when out of memory. */
struct idem_stmts *idem_stmts_new(const char *const *tags, char **sql, size_t n);
void idem_stmts_free(struct idem_stmts *st);
/* The connection is new (a reconnect): nothing is prepared on it. */
void idem_stmts_forget(struct idem_stmts *st);
/*
 * Run statement i with text parameters: by its name, preparing it first on
 * the server connection that runs it when it is missing there; unnamed
 * inside a transaction (a missing name there would abort the caller's
 * work). The result is the caller's (NULL: connection lost or no memory).
 */
PGresult *idem_stmts_exec(struct idem_store *s, size_t i, int nparams, const char *const *params);

/* idem_lost (idem_lost.c): a claim with this token, whose keys' leases are
 * lease_s long, may have committed and its answer is lost for good. */
void idem_lost_note(struct idem_lost *l, int token, int lease_s);
/* A new claim's token, 1 to 999999: the next in turn of l that is not a live
 * one of it, so that no two claims of the worker hold the same token at once
 * (random when l is NULL). */
int idem_lost_token(struct idem_lost *l);
/* The live tokens as a PostgreSQL int[] literal ("{}" when none, or l NULL). */
#define IDEM_LOST_TEXT 512
void idem_lost_text(struct idem_lost *l, char out[IDEM_LOST_TEXT]);

/* The pause table's name, quoted (for to_regclass). Borrowed from s. */
const char *idem_pause_table(const struct idem_store *s);

/* The pause table's DDL (pause.c; pause.h says more), for idem_migrate. */
int idem_pause_migrate(struct idem_store *s, char *err, size_t errlen);

/* Create the outbox table when missing (outbox.c; outbox.h says more):
 * the one hook of the outbox in idem_migrate. */
int outbox_migrate(struct idem_store *s, const char *table, char *err, size_t errlen);

#endif
