/*
 * outbox.h - the transactional outbox in PostgreSQL: follow-up messages that
 * handlers staged with api->send(), written in the transaction that completes
 * their job's key, claimed and deleted in batches by the relay
 * (duty/relay.c), listed and retried by `twicectl outbox`.
 *
 * The table is the idempotency table's name with "_outbox" appended. A row
 * is pending (waiting for the relay, or claimed by one until claimed_until)
 * or refused (SQS refused it for good: kept for `twicectl outbox retry`,
 * never dropped). A sent row is deleted. Functions return 0, or -1 with err
 * (never the DSN's password) and never log. Not the sending: relay.c.
 */
#ifndef TWICE_OUTBOX_H
#define TWICE_OUTBOX_H

#include <stddef.h>
#include <time.h>

struct idem_store;

/* The NOTIFY channel a committed insert (or retry) signals the relay on. */
#define OUTBOX_CHANNEL "twice_outbox"

/* One message a job staged. Every pointer is owned by the message. */
struct outbox_msg {
    char *queue;    /* as the plugin named it: a twice.conf queue name or a URL */
    char *url;      /* the queue's URL */
    char *body;     /* NUL-terminated (SQS bodies cannot contain NUL) */
    int delay;      /* DelaySeconds, 0 for the queue's own */
    char *group_id; /* FIFO MessageGroupId, or NULL */
    char *attrs;    /* JSON array ["name","value",...] of String attributes, or NULL */
};

/* A job's staged messages, in send() order (the index in twice-outbox-id). */
struct outbox_staged {
    struct outbox_msg *msgs; /* owned */
    size_t n, cap;
};

/* Append m (taken over: zeroed on success). 0, or -1 on ENOMEM (m untouched). */
int outbox_stage(struct outbox_staged *st, struct outbox_msg *m);
void outbox_msg_clear(struct outbox_msg *m);
/* Drop every staged message (RETRY, REJECT, a run that starts again). */
void outbox_staged_clear(struct outbox_staged *st);

/* A completed job's messages, as outbox_insert writes them. Borrowed. */
struct outbox_job {
    const char *key;          /* the job's idempotency key */
    const char *source_queue; /* the queue it came from (alerts name it) */
    const char *plugin;
    const struct outbox_staged *staged;
};

/*
 * Create the outbox table and its index of pending rows when missing
 * (idem_migrate calls it). table is the idempotency table's configured name.
 * Safe when several processes run it at once (an advisory lock).
 */
int outbox_migrate(struct idem_store *s, const char *table, char *err, size_t errlen);

/*
 * Write the staged messages of jobs[0..n) and signal the relay: inside the
 * caller's open transaction (a transactional plugin's, before its key is
 * completed), or on its own. Jobs without messages are skipped; nothing is
 * run when none has any, nor in a transaction that has already failed
 * (nothing of it can commit; the caller's completion reports the failure).
 */
int outbox_insert(struct idem_store *s, const char *table, const struct outbox_job *jobs, size_t n,
                  char *err, size_t errlen);

/*
 * idem_complete_batch for keys some of whose jobs staged messages: in one
 * transaction, complete the keys and write the messages of the jobs whose
 * key was completed (done[i] = 1); a key no longer ours writes nothing.
 * jobs[i] belongs to keys[i]. Returns 0; -1 when nothing was committed
 * (the COMMIT was never sent); -2 when the COMMIT went out and failed: its
 * answer may have been lost with the connection after it committed
 * (idem_completed_by then tells), so the messages may be in the outbox.
 */
int outbox_complete_batch(struct idem_store *s, const char *table, const char *const *keys,
                          const int *attempts, const struct outbox_job *jobs, size_t n, int *done,
                          char *err, size_t errlen);

/* A row of the outbox (relay and twicectl). Strings owned by the row. */
struct outbox_row {
    long long id;
    char *key; /* the source job's key */
    int idx;   /* the message's index within that job */
    char *source_queue;
    char *plugin;
    char *queue; /* as named */
    char *url;
    char *body; /* NULL in outbox_list's rows */
    size_t body_len;
    int delay;
    char *group_id; /* NULL when none */
    char *attrs;    /* JSON array text, NULL when none */
    char state[16]; /* pending or refused */
    char *error;    /* why the last send failed, NULL when none */
    int tries;
    time_t created_at;
};
void outbox_rows_free(struct outbox_row *rows, size_t n);

/* LISTEN on OUTBOX_CHANNEL on this connection (the relay's). */
int outbox_listen(struct idem_store *s, char *err, size_t errlen);

/*
 * Claim up to limit pending rows nobody has claimed (or whose claim lapsed),
 * oldest first, for lease seconds, FOR UPDATE SKIP LOCKED: relays of several
 * hosts never take the same row. owner: the claiming process's lease owner
 * (idem_open's), so that its claims end with it (outbox_release_owner).
 * One statement. *rows owned by the caller.
 */
int outbox_claim(struct idem_store *s, const char *table, int limit, int lease, const char *owner,
                 struct outbox_row **rows, size_t *n, char *err, size_t errlen);

/* The process owner is gone (a killed leading worker, whose relay it ran):
 * the rows it had claimed are free at once, not when the claim lapses, and
 * the relay is woken. *released gets their count. */
int outbox_release_owner(struct idem_store *s, const char *table, const char *owner,
                         long *released, char *err, size_t errlen);

/* What the relay did with claimed rows. Arrays borrowed. */
struct outbox_outcome {
    const long long *sent; /* SQS accepted: deleted */
    size_t nsent;
    const long long *refused; /* refused for good: kept as refused with why */
    const char *const *refused_why;
    size_t nrefused;
    const long long *later; /* failed for now: claimable again after later_seconds */
    const char *const *later_why;
    size_t nlater;
    int later_seconds;
};

/* Record an outcome, in one statement. */
int outbox_finish(struct idem_store *s, const char *table, const struct outbox_outcome *o,
                  char *err, size_t errlen);

/* Counts of pending and refused rows and the age of the oldest pending one
 * in seconds (0 when none), in one statement. */
int outbox_stats(struct idem_store *s, const char *table, long *pending, long *refused,
                 double *oldest, char *err, size_t errlen);

/* Rows in state (NULL: any), by id, at most limit (<= 0: no limit); their
 * bodies are not read. *rows owned by the caller. */
int outbox_list(struct idem_store *s, const char *table, const char *state, int limit,
                struct outbox_row **rows, size_t *n, char *err, size_t errlen);

/* Make refused rows pending again (ids[0..n), or every refused row when n
 * is 0) and signal the relay; *changed gets the count, missing (the
 * caller's, room for n ids; NULL when n is 0) the given ids that were not
 * refused rows, *nmissing their count. */
int outbox_retry(struct idem_store *s, const char *table, const long long *ids, size_t n,
                 long *changed, long long *missing, size_t *nmissing, char *err, size_t errlen);

/* Drop refused rows (ids[0..n), or every refused row when n is 0) once an
 * operator has decided they are not to be sent; pending rows are never
 * touched. *changed, missing and *nmissing as for outbox_retry. */
int outbox_delete(struct idem_store *s, const char *table, const long long *ids, size_t n,
                  long *changed, long long *missing, size_t *nmissing, char *err, size_t errlen);

#endif
