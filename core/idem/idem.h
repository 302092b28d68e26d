/*
 * idem.h - the idempotency store: one PostgreSQL table of keys, each row
 * saying where the key's job is and how many times it has run.
 *
 * States and transitions (attempts = handler runs counted for the key):
 *
 *   (no row) --claim--> in_progress (owner, lease_until)
 *   in_progress --complete (DONE)-----------------------> completed
 *   in_progress --release, the run counted (RETRY)-----> released
 *   in_progress --release, no run counted (a job given
 *                 back before it ran, or cut short by a
 *                 drain or a failed commit)-------------> released, or no row when
 *                                                          it has never run
 *   in_progress --release after a dead letter----------> no row (the count starts
 *                                                          again: a fixed or redriven
 *                                                          message runs afresh)
 *   in_progress --its worker died, and this job crashed
 *                 it (the master)-----------------------> crashed (its run counted)
 *   in_progress --its worker went away otherwise: another
 *                 job crashed it, or it stopped holding
 *                 the key (the master)------------------> interrupted (not counted)
 *   released, crashed, interrupted --claim-------------> in_progress
 *   in_progress, lease expired --claim (taken over)----> in_progress
 *   completed, released, crashed, interrupted --janitor, after retention--> no row
 *
 * An attempt is a run of the handler, so the count is written when a run
 * ends (release, complete, or the master's record of a crash), never when a
 * message is delivered or claimed: a delivery twice hid, gave back or could
 * not claim costs nothing, and no statement is added to the common path. A
 * claim answers the runs so far; the job's run is attempts + 1. A lease that
 * expired without its run being recorded (its worker hung, lost the database
 * before it could say, or its whole host died with it) is taken over without
 * counting that run: the queue's max_receives, not the count, ends a message
 * whose runs never get recorded.
 * completed is final until the janitor removes it: the key's job is done and
 * attempts says how many runs it took. released, crashed and interrupted
 * keys are free: the next claim takes them at once and keeps their count.
 * lease_until matters only while a key is in progress; a completion leaves
 * it as it was (so that it is a HOT update: idem.c, the lease layout), and
 * release and the master set it to when the lease ended. A claim writes
 * processed_at up to a second early: the token that makes it idempotent
 * (idem.c, sql_claim).
 *
 * One struct idem_store is one libpq connection: not thread-safe, so each
 * thread that needs the store has its own. Every operation on a batch is
 * one round trip. SQL goes only through parameters; the table name from
 * the configuration is quoted as an identifier. The hot-path statements are
 * prepared statements named for a hash of their text and prepared where
 * they are missing (idem_stmt.c), so the store also works through a pooler
 * in transaction mode (pgbouncer); it keeps no other session state.
 * Functions return 0, or -1 with err (never containing the DSN's password)
 * and never log.
 *
 * The table keeps the classic column names (idempotency_key TEXT PRIMARY
 * KEY, processed_at TIMESTAMPTZ NOT NULL DEFAULT now()) so tables many
 * teams already have are migrated by adding columns; their rows count as
 * completed.
 */
#ifndef TWICE_IDEM_H
#define TWICE_IDEM_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct idem_store;

/*
 * Connect. owner identifies this process in leases (unique per worker
 * process and start, e.g. "host:pid:random"). The connection uses TCP
 * keepalives, a TCP user timeout and a connect timeout (defaults the dsn
 * may override: connect_dsn in idem.c). Returns 0 and *out, or -1 with err;
 * on -1 *out is still set when the store object exists but could not
 * connect (so idem_reconnect can be retried), else NULL.
 */
int idem_open(const char *dsn, const char *table, const char *owner, struct idem_store **out,
              char *err, size_t errlen);
void idem_close(struct idem_store *s);

/* 1 when dsn is a connection string or URI libpq parses, else 0: the
 * judge config_load uses (config_set_dsn_check), installed by each program
 * that links libpq. */
int idem_dsn_parses(const char *dsn);

/* Whether the connection is usable; after any -1, check and reconnect. A
 * connection whose socket was closed under it (a plugin that closes every
 * descriptor) is not, though libpq says CONNECTION_OK: one fstat tells, and
 * the reconnect puts a new connection in its place (idem_conn.c). */
int idem_connected(const struct idem_store *s);
/*
 * The one rule of every connection that is kept: use it as it is (1), or
 * reconnect first (0): it is not connected, or a statement on it failed
 * through the store's fault while it stayed up (a statement_timeout or
 * lock_timeout, a revoked grant, a server or role that takes no writes, a
 * full disk; not an error of the statement's own data). A new connection
 * takes up the role's and the database's settings as they are now, which an
 * old one keeps from its start (ALTER ROLE ... RESET statement_timeout reaches
 * only new connections). A reconnect (idem_reconnect, idem_reconnect_poll)
 * makes it usable again.
 */
int idem_usable(const struct idem_store *s);
/* After a call on s failed (or s is NULL: never connected): 1 when the store
 * could not be reached or was failing over (no connection, the connection
 * lost or ended by the server, a server gone read-only), so the same call
 * may succeed later; 0 for an SQL error that it would meet again. */
int idem_unreachable(const struct idem_store *s);
/* Ask the server something trivial (SELECT 1): whether it answers now, which
 * idem_connected cannot know of an idle connection. 0, or -1 with err. */
int idem_ping(struct idem_store *s, char *err, size_t errlen);
/* Reconnect s with its first connect's parameters, blocking; a store with a
 * tick (idem_set_wait) polls instead, asking its tick, and gives up when the
 * tick says so. 0, or -1 with err. */
int idem_reconnect(struct idem_store *s, char *err, size_t errlen);
/*
 * Reconnect s without being held up by a server that accepts and never
 * answers: the first call begins a reconnect (as idem_reconnect, with the
 * first connect's parameters), later calls carry it on; each call waits at
 * most wait_ms for the server (0: only what is there already). 1 once
 * connected, 0 while the reconnect is still on its way (s is not connected:
 * run nothing on it), -1 with err when it failed, or took longer than the
 * dsn's connect_timeout (10 s by default, for each host it names): the next
 * call begins again. For a thread whose other work must not wait for the
 * store (the acknowledger, whose heartbeat keeps messages hidden).
 */
int idem_reconnect_poll(struct idem_store *s, int wait_ms, char *err, size_t errlen);

/*
 * For a thread that must not be held by a statement whose server stopped
 * answering on an established connection (a frozen server or pooler, a host
 * gone while the statement's bytes are unacknowledged): from now on every
 * statement on s is sent without blocking and its answer waited for with
 * poll, calling tick(arg) about every tick_ms meanwhile (on the caller's
 * thread; it must not use s). When no answer came within answer_ms (0: no
 * limit), or when tick returns nonzero, the statement is given up: the
 * connection is ended, and the call fails as for a connection that dropped
 * (idem_unreachable is 1, what the statement did is unknown: a COMMIT's
 * outcome as outbox_complete_batch's -2 says), its error saying it was given
 * up; idem_connected is 0 until a reconnect. With a tick, idem_reconnect
 * waits the same way (tick asked, given up at its word). Without this call,
 * statements and reconnects wait as libpq does. arg is borrowed.
 */
void idem_set_wait(struct idem_store *s, long answer_ms, int tick_ms, int (*tick)(void *arg),
                   void *arg);

/* How a store's statements wait for their answers, as idem_set_wait's
 * arguments say. */
struct idem_wait {
    long answer_ms;
    int tick_ms;
    int (*tick)(void *arg);
    void *arg; /* borrowed */
};

/*
 * idem_open for a thread that must not be held by its very first connect
 * and statements either (a server or pooler that accepts the connection and
 * answers nothing): the store waits as idem_set_wait(w) says from the start,
 * and, with a tick, its connect is polled, the tick asked about every
 * tick_ms, given up when the tick says so or past the dsn's connect_timeout
 * (-1 with err, *out kept for idem_reconnect). w NULL: idem_open. 0, or -1.
 */
int idem_open_waiting(const char *dsn, const char *table, const char *owner,
                      const struct idem_wait *w, struct idem_store **out, char *err,
                      size_t errlen);
/* The same without waiting at all: the store is made (w, may be NULL, set
 * as idem_set_wait says) and its connect begun, to be carried on by
 * idem_reconnect_poll (or idem_reconnect); not connected until then. 0, or
 * -1 with err (*out kept when it exists, for a reconnect). */
int idem_open_polled(const char *dsn, const char *table, const char *owner,
                     const struct idem_wait *w, struct idem_store **out, char *err, size_t errlen);

/*
 * idem_open for a command a person waits on (twicectl, `twiced -t
 * --connect`): its connect, and from then on every statement, given up when
 * PostgreSQL does not answer within limit_ms (0: the dsn's connect_timeout,
 * 10 s by default, for each host it names), so that a server that takes the
 * connection and says nothing fails the command with an error that says so
 * and after how long, instead of holding it until Ctrl-C. 0, or -1 with err
 * (*out may be set: idem_close it).
 */
int idem_open_bounded(const char *dsn, const char *table, const char *owner, long limit_ms,
                      struct idem_store **out, char *err, size_t errlen);

/* Where a connection looks for twice's tables: its database, the schema an
 * unqualified name resolves to (its search_path's first existing schema;
 * "" when none of them exists) and that search_path. */
struct idem_place {
    char database[128];
    char schema[128];
    char search_path[256];
};

/*
 * Whether the key table (suffix "") or one twice keeps next to it
 * ("_outbox", "_pause") is there for this connection, and where it looks
 * (*place, may be NULL). A tool that only reads twice's tables asks first,
 * so that a database where twiced never ran, or the wrong database or
 * schema, is named instead of answered with "relation ... does not exist".
 * 1 when it exists, 0 when it does not, -1 with err.
 */
int idem_table_exists(struct idem_store *s, const char *suffix, struct idem_place *place,
                      char *err, size_t errlen);

/*
 * Which keys a connection reaches: its cluster's system identifier ("" when
 * the role may not read it), its database, and the oid and name of the
 * table the store's name resolves to ("" when there is none). A promoted
 * replica keeps all three; another database, cluster or schema does not.
 */
struct idem_identity {
    char cluster[32];
    char database[128];
    char table_oid[16];
    char table[160];
};

/* Read s's identity into *out. 0, or -1 with err. */
int idem_identity(struct idem_store *s, struct idem_identity *out, char *err, size_t errlen);

/* Whether now reaches the keys was does: 1, or 0 with why (one clause, e.g.
 * "it reaches database 'b', not 'a'"). A cluster either does not name
 * is judged by the database and the table. */
int idem_identity_same(const struct idem_identity *was, const struct idem_identity *now, char *why,
                       size_t cap);

/* Why a dsn that reaches a standby is refused (a reload, twiced -t --connect)
 * or waited on (a worker's readiness): one clause for "FILE:LINE:
 * idempotency.dsn: ..." and for /readyz. */
#define IDEM_STANDBY_WHY                                                                          \
    "the server is a standby in recovery (read-only): twiced cannot write its keys there; "       \
    "point the dsn at the primary"

/* Whether s reaches a server in recovery (pg_is_in_recovery(): a hot standby,
 * which takes no writes until it is promoted): 1 when it does, 0 when it
 * takes writes, -1 with err. */
int idem_standby(struct idem_store *s, char *err, size_t errlen);

/* Why a store that takes no writes is waited for (a worker's receiver): one
 * clause, as IDEM_STANDBY_WHY. */
#define IDEM_READ_ONLY_WHY                                                                        \
    "the server takes no writes (transaction_read_only is on: a standby in recovery, or "         \
    "default_transaction_read_only set for the server, database or role): twiced cannot write "   \
    "its keys there; point the dsn at the primary, or reset the setting"

/* Whether a transaction s begins now takes writes (transaction_read_only:
 * off on a primary, on in a standby and where default_transaction_read_only
 * is on): 0 when it does; 1 when it does not, err then IDEM_READ_ONLY_WHY
 * and the store noted as failed as a read-only statement is (SQLSTATE
 * 25006: idem_unreachable); -1 with err when it was not answered. */
int idem_read_only(struct idem_store *s, char *err, size_t errlen);

/*
 * Whether s reaches a server that takes writes: the one check of a dsn's
 * server before twiced relies on it (the start, a reload, `twiced -t
 * --connect`, a worker's readiness), so that all refuse the same servers.
 * 0 when it does; 1 when it is a standby in recovery (err IDEM_STANDBY_WHY)
 * or its transactions take no writes for another reason
 * (default_transaction_read_only: err IDEM_READ_ONLY_WHY); -1 with err when
 * it was not answered.
 */
int idem_takes_writes(struct idem_store *s, char *err, size_t errlen);

/*
 * Whether a claim can be written now (a claim check): the claim statement
 * run for a key no message has, inside a transaction that is rolled back,
 * so that everything a claim needs is asked at once (the role's grants, a
 * server or role that takes no writes, a statement_timeout or lock_timeout
 * it runs into, a full disk) and nothing is left behind. Three round trips:
 * for a receiver whose claim failed (was it the store, or the batch?) and
 * before it receives on a new connection, never per message. 0, or -1
 * with err (IDEM_READ_ONLY_WHY for a server that takes no writes) and the
 * store noted as failed as the claim failed (idem_failed_state).
 */
int idem_claim_check(struct idem_store *s, char *err, size_t errlen);

/*
 * The claim check of a start (the master's first, a reload's, `twiced -t
 * --connect`): whether s's role may write claims into the key table, asked
 * before any worker runs, so that a missing grant stops the start (refuses
 * the reload) with what to grant instead of leaving every worker not ready
 * until ready_timeout. Only a refused grant (42501) is judged: a table not
 * there yet (the workers create it), or a claim that fails otherwise (a
 * table of an older twice that the workers migrate first) is the workers'
 * to meet. 1 with err ("role R
 * may not write claims into table T (it lacks P on it; ...): GRANT P ON T TO
 * R"; the claim check's error when the role lacks none of them on the table);
 * 0 when a claim can be written or this cannot judge it; -1 with err when the
 * server did not answer. Up to five round trips.
 */
int idem_claim_allowed(struct idem_store *s, char *err, size_t errlen);

/* The SQLSTATE of the last failed statement on s: "-" when none came (the
 * connection lost, the answer given up), "" before any failure or for s
 * NULL. Borrowed from s. */
const char *idem_failed_state(const struct idem_store *s);

/*
 * Create the table or migrate a classic two-column one (or one of an older
 * twice, whose state check knew only in_progress and completed) in place,
 * and its indexes. Idempotent and safe when several processes run it at
 * once (advisory lock). Existing classic rows count as completed.
 */
int idem_migrate(struct idem_store *s, char *err, size_t errlen);

enum idem_state {
    IDEM_CLAIMED = 0, /* the key is ours now (new, or released): run the job */
    IDEM_TAKEN_OVER,  /* ours, after the previous holder's lease expired unrecorded (it
                         hung or lost the database): that run was not counted */
    IDEM_CRASHED,     /* ours; the previous run crashed its worker (counted) */
    IDEM_INTERRUPTED, /* ours; the previous run was cut short when its worker went away
                         (another job's crash, or it stopped): not counted */
    IDEM_COMPLETED,   /* done before: a duplicate (compare the hashes for a conflict) */
    IDEM_BUSY         /* someone else holds a live lease, or is changing the row now */
};

/* One key of a claim batch: inputs first, then what the store answered. */
struct idem_claim {
    const char *key;             /* in: distinct within the batch */
    const unsigned char *sha256; /* in: 32 bytes, SHA-256 of the payload */
    const char *message_id;      /* in */
    int lease_seconds;           /* in: lease length from now */

    enum idem_state state;           /* out */
    int attempts;                    /* out: the key's runs counted so far (not this one's;
                                        BUSY: the holder's earlier runs) */
    double lease_left;               /* out, BUSY: seconds until the holder's lease ends
                                        (lease_seconds when it already has) */
    unsigned char stored_sha256[32]; /* out: the completed (or held) payload's hash */
    int has_stored_sha256;           /* out: 0 for rows migrated without a hash */
    char stored_message_id[128];     /* out: the message that completed / holds / held it */
};

/*
 * Claim every key of the batch in one round trip (one statement). When the
 * connection is lost on the way (not an SQL error on a live one), the claim
 * reconnects and sends the same statement once more at once: it is
 * idempotent, so keys the lost one claimed (it may have committed) are
 * answered as claimed, not as held by a live lease of ours. -1 when that
 * fails too (the store is then left to reconnect); a statement that may
 * have committed is then noted in the store's shared idem_lost, so that the
 * worker's next claim of those messages takes their keys back at once.
 */
int idem_claim_batch(struct idem_store *s, struct idem_claim *claims, size_t n, char *err,
                     size_t errlen);

/*
 * A worker's claims whose answers were lost for good (idem_claim_batch): the
 * keys such a claim may have taken are in progress under the worker's owner
 * with no job of it running them, and their messages were given back. Shared
 * by the stores of the worker's receivers (idem_share_lost), so that
 * whichever receives a message again takes its key back at once, not after
 * its lease. Thread-safe; the worker owns it and frees it after its stores.
 */
struct idem_lost;
struct idem_lost *idem_lost_new(void); /* NULL when out of memory */
void idem_lost_free(struct idem_lost *l);
/* s's claims use l (borrowed; NULL: none). */
void idem_share_lost(struct idem_store *s, struct idem_lost *l);

/*
 * Mark keys we hold as completed, in one round trip, recording attempts[i]
 * (the runs it took, this one included; attempts may be NULL: keep the
 * count). done[i] (may be NULL) is set to 1 when key i was ours and is now
 * completed, 0 when we no longer held it (the lease was lost: someone took
 * it over).
 */
int idem_complete_batch(struct idem_store *s, const char *const *keys, const int *attempts,
                        size_t n, int *done, char *err, size_t errlen);

/*
 * After a completion whose answer was lost with its connection (it may have
 * committed): completed[i] = 1 when key i is completed by message
 * message_ids[i], the message whose job completed it (the row no longer
 * names its owner: a completion clears it), else 0. One round trip.
 */
int idem_completed_by(struct idem_store *s, const char *const *keys,
                      const char *const *message_ids, size_t n, int *completed, char *err,
                      size_t errlen);

/*
 * Let go of keys we hold (RETRY, dead letter, a job given back), in one
 * round trip, recording attempts[i]: the key's runs counted so far (> 0:
 * the row stays, released, with that count), 0 (forget the key: its row is
 * deleted, as after a dead letter), or < 0 (keep the row's count; attempts
 * may be NULL for all). A row left with no run counted is deleted. A key
 * that a running transactional handler locks is skipped (never waited
 * for): its lease lapses, or the master ends it (idem_expire_owner).
 * released[i] (may be NULL) as done[] for idem_complete_batch.
 */
int idem_release_batch(struct idem_store *s, const char *const *keys, const int *attempts,
                       size_t n, int *released, char *err, size_t errlen);

/* Extend our leases to now + lease_seconds; extended[i] (may be NULL) as for
 * idem_complete_batch. One round trip. */
int idem_extend_batch(struct idem_store *s, const char *const *keys, size_t n, int lease_seconds,
                      int *extended, char *err, size_t errlen);

/*
 * Transactional plugins. idem_tx_begin opens a transaction and locks the key's
 * row if it is still ours and in progress: returns 1 (locked, run the
 * handler with idem_pgconn), 0 (no longer ours: transaction ended), -1.
 * idem_tx_complete marks it completed with attempts runs and commits (0, or -1: not committed,
 * or - if the connection dropped during COMMIT - outcome unknown; the error
 * says so). idem_tx_rollback rolls back (the claim stays in progress). The
 * plugin must not end the transaction or drop prepared statements itself.
 */
int idem_tx_begin(struct idem_store *s, const char *key, char *err, size_t errlen);
int idem_tx_complete(struct idem_store *s, const char *key, int attempts, char *err,
                     size_t errlen);
int idem_tx_rollback(struct idem_store *s, char *err, size_t errlen);
/* The PGconn * for a transactional plugin, in blocking mode (as libpq's
 * callers expect, whatever idem_set_wait did). Its statements are the
 * plugin's: no answer limit applies to them. Borrowed. */
void *idem_pgconn(struct idem_store *s);
/*
 * Watch the statements run on idem_pgconn(s) from now (a transactional
 * plugin's handle()), which twiced does not see: their results go to the
 * plugin, and a statement after one that failed answers only that the
 * transaction is aborted (25P02). libpq's event callback sees each result as
 * the connection makes it. idem_watch_end stops watching and says what they
 * told in *out (its strings borrowed from s until the next idem_watch_begin).
 * After one that failed through the store's fault (a statement_timeout, a
 * revoked grant, a full disk: idem_plugin_state_stale), s is no longer
 * idem_usable, as after such a failure of twiced's own, so that it is made
 * again before its next use; a failure of the plugin's own (its SQL, its
 * data, a RAISE) leaves it usable.
 */
struct idem_watched {
    const char *store_fault; /* the SQLSTATE of the first that failed through the store's
                                fault, "" none */
    int aborted;             /* the transaction ended aborted by a statement of the plugin's
                                (the last that failed: not rolled back to a savepoint) */
    int by_store;            /* aborted, and that statement failed through the store's fault */
    const char *error;       /* aborted: that statement's "SQLSTATE S: message", else "" */
};
void idem_watch_begin(struct idem_store *s);
void idem_watch_end(struct idem_store *s, struct idem_watched *out);

/* Janitor: delete at most `limit` completed keys (idem_purge_completed) or
 * free ones (released, crashed, interrupted: idem_purge_free) whose state
 * last changed more than retention seconds ago; *deleted gets the count
 * (repeat while it equals limit). */
int idem_purge_completed(struct idem_store *s, int retention, int limit, long *deleted, char *err,
                         size_t errlen);
int idem_purge_free(struct idem_store *s, int retention, int limit, long *deleted, char *err,
                    size_t errlen);

/* A job that crashed its worker: its message and the number of the run that
 * crashed (> the key's count when a FIFO retry in place ran it again; <= 0:
 * unknown, the count + 1). */
struct idem_culprit {
    const char *message_id;
    int attempt;
};

/*
 * A worker process is gone: free the keys it held now (they are claimed on
 * the next delivery instead of waiting out the lease). culprits[0..n) are
 * the jobs that crashed it (none when it exited, or was stopped): their keys
 * become crashed with their run counted; the others' runs were cut short
 * through no fault of their own, so their keys become interrupted, not
 * counted. *expired gets the count. gone_seconds: how long ago the worker
 * went (the lease layout looks only at leases that had not ended by then;
 * one that had is taken over by the next claim anyway).
 */
int idem_expire_owner(struct idem_store *s, const char *owner, int gone_seconds,
                      const struct idem_culprit *culprits, size_t n, long *expired, char *err,
                      size_t errlen);

/* A row, for `twicectl key`. */
struct idem_record {
    char *key;
    char state[16]; /* in_progress, released, crashed, interrupted or completed */
    char *owner;    /* NULL unless in_progress */
    char *message_id;
    char sha256_hex[65]; /* "" when unknown */
    int attempts;        /* runs counted (while in_progress: before the current one) */
    time_t lease_until;  /* 0 unless in progress */
    time_t created_at;
    time_t processed_at;
};
void idem_record_clear(struct idem_record *r);

/* Whether state is one of the states above (for `twicectl key list --state`). */
int idem_state_name_ok(const char *state);

/* 1 and *out when found, 0 when not, -1 on error. */
int idem_key_show(struct idem_store *s, const char *key, struct idem_record *out, char *err,
                  size_t errlen);
/* Up to limit rows (<= 0: no limit) whose key starts with prefix (NULL:
 * any) in state (NULL: any), ordered by key; *out is owned by the caller (idem_records_free). */
int idem_key_list(struct idem_store *s, const char *prefix, const char *state, int limit,
                  struct idem_record **out, size_t *n, char *err, size_t errlen);
void idem_records_free(struct idem_record *r, size_t n);
/* 1 when a row was deleted, 0 when there was none, -1 on error. */
int idem_key_forget(struct idem_store *s, const char *key, char *err, size_t errlen);

#endif
