/*
 * idem.h - the idempotency store: one PostgreSQL table of keys, each
 * in_progress (owner, lease_until) or completed.
 *
 *     in_progress (owner, lease_until)  ->  completed
 *           \-> released (row deleted) on RETRY/REJECT, or taken over
 *               by the next claim once the lease has expired
 *
 * One struct idem_store is one libpq connection: not thread-safe, so each
 * thread that needs the store has its own. Every operation on a batch is
 * one round trip. SQL goes only through parameters; the table name from
 * the configuration is quoted as an identifier. Functions return 0, or -1
 * with err (never containing the DSN's password) and never log.
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
 * keepalives and a connect timeout. Returns 0 and *out, or -1 with err;
 * on -1 *out is still set when the store object exists but could not
 * connect (so idem_reconnect can be retried), else NULL.
 */
int idem_open(const char *dsn, const char *table, const char *owner, struct idem_store **out,
              char *err, size_t errlen);
void idem_close(struct idem_store *s);

/* Whether the connection is usable; after any -1, check and reconnect. */
int idem_connected(const struct idem_store *s);
/* Ask the server something trivial (SELECT 1): whether it answers now, which
 * idem_connected cannot know of an idle connection. 0, or -1 with err. */
int idem_ping(struct idem_store *s, char *err, size_t errlen);
int idem_reconnect(struct idem_store *s, char *err, size_t errlen);

/*
 * Create the table or migrate a classic two-column one in place, and its
 * indexes. Idempotent and safe when several processes run it at once
 * (advisory lock). Existing rows count as completed.
 */
int idem_migrate(struct idem_store *s, char *err, size_t errlen);

enum idem_state {
    IDEM_CLAIMED = 0, /* the key is ours now: run the job */
    IDEM_TAKEN_OVER,  /* ours, after the previous holder's lease expired (it died or hung) */
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
    int attempts;                    /* out: claims of this key since it was last free,
                                        not counting those another job's crash cut short */
    double lease_left;               /* out, BUSY: seconds until the holder's lease ends
                                        (lease_seconds when it already has) */
    unsigned char stored_sha256[32]; /* out: the completed (or held) payload's hash */
    int has_stored_sha256;           /* out: 0 for rows migrated without a hash */
    char stored_message_id[128];     /* out: the message that completed / holds / held it */
};

/* Claim every key of the batch in one round trip (one statement). */
int idem_claim_batch(struct idem_store *s, struct idem_claim *claims, size_t n, char *err,
                     size_t errlen);

/*
 * Mark keys we hold as completed, in one round trip. done[i] (may be NULL)
 * is set to 1 when key i was ours and is now completed, 0 when we no longer
 * held it (the lease was lost: someone took it over).
 */
int idem_complete_batch(struct idem_store *s, const char *const *keys, size_t n, int *done,
                        char *err, size_t errlen);

/* Delete our in_progress rows for keys (RETRY, REJECT, drain); one round
 * trip. A key that a running transactional handler locks is skipped (never
 * waited for): its lease lapses, or the master expires it (idem_expire_owner). */
int idem_release_batch(struct idem_store *s, const char *const *keys, size_t n, char *err,
                       size_t errlen);

/* Extend our leases to now + lease_seconds; extended[i] (may be NULL) as for
 * idem_complete_batch. One round trip. */
int idem_extend_batch(struct idem_store *s, const char *const *keys, size_t n, int lease_seconds,
                      int *extended, char *err, size_t errlen);

/*
 * Transactional plugins. idem_tx_begin opens a transaction and locks the key's
 * row if it is still ours and in progress: returns 1 (locked, run the
 * handler with idem_pgconn), 0 (no longer ours: transaction ended), -1.
 * idem_tx_complete marks it completed and commits (0, or -1: not committed,
 * or - if the connection dropped during COMMIT - outcome unknown; the error
 * says so). idem_tx_rollback rolls back (the claim stays in progress). The
 * plugin must not end the transaction or drop prepared statements itself.
 */
int idem_tx_begin(struct idem_store *s, const char *key, char *err, size_t errlen);
int idem_tx_complete(struct idem_store *s, const char *key, char *err, size_t errlen);
int idem_tx_rollback(struct idem_store *s, char *err, size_t errlen);
/* The PGconn * for a transactional plugin. Borrowed. */
void *idem_pgconn(struct idem_store *s);

/* Janitor: delete at most `limit` completed keys older than retention
 * seconds; *deleted gets the count (repeat while it equals limit). */
int idem_purge_completed(struct idem_store *s, int retention, int limit, long *deleted, char *err,
                         size_t errlen);

/*
 * A worker process is gone: end the leases it held now (its claims are
 * taken over on the next delivery instead of waiting out the lease).
 * culprit (may be NULL: unknown) is the message whose job crashed the
 * process: only its attempt counts; the others were cut short through no
 * fault of their own, so their attempt is taken back (see idem_claim's
 * attempts). *expired gets the count. Uses the owner index.
 */
int idem_expire_owner(struct idem_store *s, const char *owner, const char *culprit, long *expired,
                      char *err, size_t errlen);

/* A row, for `twicectl key`. */
struct idem_record {
    char *key;
    char state[16]; /* "in_progress" or "completed" */
    char *owner;    /* NULL when completed */
    char *message_id;
    char sha256_hex[65]; /* "" when unknown */
    int attempts;
    time_t lease_until; /* 0 when none */
    time_t created_at;
    time_t processed_at;
};
void idem_record_clear(struct idem_record *r);

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
