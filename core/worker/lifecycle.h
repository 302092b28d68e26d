/*
 * lifecycle.h - the life of a message as one pure decision table: from what
 * the store, the handler or a failure says, what happens to the message next.
 * No I/O, no threads, no clock, no allocation; the callers (receiver.c,
 * handler.c, acker.c, heartbeat.c) do the logging, counting and side effects
 * (verdict.c applies a verdict to a job).
 *
 * The policy, in words ("max" is the queue's max_attempts, "receives" SQS's
 * ApproximateReceiveCount, "attempts" the key's claims counted in the store):
 *
 * After the claim (lifecycle_on_claim):
 *   claimed                      run the handler; but past max receives, dead-letter
 *                                "max-attempts" ("received R times (max_attempts M)")
 *   taken over (the holder's     attempts <= 1 (every earlier run was cut short by
 *   lease expired)                 another job crashing the worker): spared, run it
 *                                  whatever the receive count, with a warning;
 *                                otherwise run it with a warning, but past max receives
 *                                  dead-letter "worker-crashed" (the culprit)
 *   completed, same payload      a duplicate: delete it (also when the stored payload
 *   (or unknown: migrated row)     is unknown); never dead-lettered for its receives
 *   completed, other payload     a conflict: delete it (on_conflict skip) or
 *                                  dead-letter "payload-conflict" (on_conflict reject)
 *   busy (a live lease)          hide it until the lease ends: lease left + 2 s,
 *                                  clamped to 1..43200
 *
 * After the handler (lifecycle_on_handled), with attempt the run's number:
 *   DONE                         complete the key, delete the message
 *   REJECT                       dead-letter "rejected" (the plugin's error, else
 *                                  "rejected by the plugin")
 *   RETRY, attempt >= max        dead-letter "max-attempts" ("attempt A of M failed: ...")
 *   RETRY, attempt < max         release the key and wait: the plugin's retry_after
 *                                  (0..43200), else full-jitter backoff between 0 and
 *                                  min(backoff_cap, backoff_base * 2^(attempt-1)),
 *                                  clamped to 1..43200. Standard queues hide the message
 *                                  for that long; FIFO queues retry in place (the handler
 *                                  waits, then runs it again as attempt + 1, its group
 *                                  waiting behind it)
 *   (any other status counts as RETRY)
 *
 * A duplicate within one batch follows its leader (lifecycle_on_leader): deleted
 * when the leader's key was completed, else hidden for the leader's delay when the
 * leader was retried or hidden, or 0 (visible again) otherwise.
 *
 * Failures that are not the job's fault (lifecycle_on_failure) give the message back
 * (JOB_ACT_RETURN) without counting against it: claim failed 0 s, FIFO group blocked
 * 0 s, transaction could not begin 5 s, store lost at commit 5 s, draining 0 s, drain
 * during a FIFO retry's wait the wait left, drain deadline 0 s (3 s for a transactional
 * job, so that the master ends its lease first). A lease lost before a transactional
 * handler started leaves the message alone for its new holder.
 */
#ifndef TWICE_LIFECYCLE_H
#define TWICE_LIFECYCLE_H

#include <stdint.h>

#include <twice/plugin.h>

#include "idem.h"
#include "job.h"

/* SQS's longest visibility timeout (12 hours): the ceiling of every delay. */
#define LIFECYCLE_MAX_DELAY 43200
/* Room for the formatted parts of a text: a stored message id (at most 127 bytes,
 * idem_claim) and the words around it. Keys and plugin errors are never copied. */
#define LIFECYCLE_TEXT_MAX  256

/* A queue's policy, from its configuration (set once per queue, process.c). */
struct lifecycle_queue {
    int max_attempts;     /* runs before the DLQ */
    int backoff_base;     /* RETRY backoff, seconds */
    int backoff_cap;      /* seconds */
    int fifo;             /* retries happen in place, in order */
    int reject_conflicts; /* idempotency.on_conflict = reject */
};

/* A line of text: a bounded part formatted here (before), then a borrowed string
 * that is never copied nor cut (arg: a plugin's error, a message id, a store
 * error), then another formatted part (after). Print it with "%s%s%s". */
struct lifecycle_text {
    char before[LIFECYCLE_TEXT_MAX];
    const char *arg; /* borrowed from the inputs, or static; never NULL */
    char after[LIFECYCLE_TEXT_MAX];
};

/* What to do with a message, and what to say about it. */
struct lifecycle_verdict {
    enum job_action action;       /* NONE: run the handler (claim), or leave the message alone */
    int delay;                    /* RETRY, HIDE, RETURN: its visibility, seconds */
    int in_place;                 /* RETRY: the handler waits delay and runs it again (FIFO) */
    const char *reason;           /* DEADLETTER: the DLQ reason code, static; else NULL */
    struct lifecycle_text detail; /* DEADLETTER: the detail sent with it */
    int has_log;                  /* log is a line to log with the job's context */
    twice_log_level log_level;
    struct lifecycle_text log;
    const char *duplicate; /* count a skipped duplicate of this kind, static; else NULL */
    int conflict;          /* count a payload conflict */
};

/* What the store answered for a key, and what is known of the delivery. */
struct lifecycle_claim {
    enum idem_state state;
    /* The row's claims since the key was last free, not counting those another
     * job's crash cut short (idem_claim.attempts). */
    int attempts;
    int receives;      /* this delivery's ApproximateReceiveCount (>= 1) */
    double lease_left; /* BUSY: seconds left on the holder's lease */
    const char *key;
    const unsigned char *sha256; /* 32 bytes: this message's payload */
    /* COMPLETED: the completed payload's (32 bytes), NULL when unknown (a
     * migrated row). */
    const unsigned char *stored_sha256;
    const char *stored_message_id; /* that completed or holds the key; "" when unknown */
};

/* One run of the handler. */
struct lifecycle_run {
    twice_status status;
    int attempt;       /* this run's number, from 1 */
    int retry_after;   /* RETRY: the plugin's wish in seconds, -1 when it has none */
    const char *error; /* the plugin's error text, NULL when none; borrowed */
    uint64_t random;   /* a uniform draw for the backoff's jitter (backoff_random()) */
};

/* The job a duplicate within the batch followed, as it ended. */
struct lifecycle_leader {
    int key_completed;
    enum job_action action;
    int delay;
    const char *message_id; /* borrowed */
};

/* Failures that are not the job's fault. */
enum lifecycle_failure {
    LIFECYCLE_CLAIM_FAILED,     /* the batch's claim did not reach the store */
    LIFECYCLE_GROUP_BLOCKED,    /* FIFO: an earlier job of its group cannot run now */
    LIFECYCLE_TX_BEGIN_FAILED,  /* the handler's transaction could not begin */
    LIFECYCLE_LEASE_LOST,       /* the lease ended before the handler started */
    LIFECYCLE_COMMIT_LOST,      /* the store went away at commit (error: why) */
    LIFECYCLE_DRAINING,         /* the worker drains: not started */
    LIFECYCLE_DRAIN_IN_BACKOFF, /* the drain began during a FIFO retry's wait */
    LIFECYCLE_DRAIN_DEADLINE,   /* still running at the drain deadline */
    LIFECYCLE_DRAIN_DEADLINE_TX /* the same, a transactional job (holds its row lock) */
};

/* Each fills *out and returns out->action. Borrowed strings in *out point into
 * the inputs (or are static): keep the inputs alive while *out is used. */
enum job_action lifecycle_on_claim(const struct lifecycle_queue *q,
                                   const struct lifecycle_claim *c, struct lifecycle_verdict *out);
enum job_action lifecycle_on_handled(const struct lifecycle_queue *q,
                                     const struct lifecycle_run *r, struct lifecycle_verdict *out);
enum job_action lifecycle_on_leader(const struct lifecycle_leader *l,
                                    struct lifecycle_verdict *out);
/* wait_left: LIFECYCLE_DRAIN_IN_BACKOFF's seconds still to wait; error:
 * LIFECYCLE_COMMIT_LOST's store error (may be NULL). */
enum job_action lifecycle_on_failure(enum lifecycle_failure f, int wait_left, const char *error,
                                     struct lifecycle_verdict *out);

#endif
