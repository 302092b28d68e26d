/*
 * lifecycle.h - the life of a message as one pure decision table: from what
 * the store, the handler or a failure says, what happens to the message next.
 * No I/O, no threads, no clock, no allocation; the callers (receiver.c,
 * handler.c, acker.c, heartbeat.c) do the logging, counting and side effects
 * (verdict.c applies a verdict to a job).
 *
 * The policy, in words ("max" is the queue's max_attempts, "max receives" its
 * max_receives, "receives" SQS's ApproximateReceiveCount, "runs" the handler runs
 * counted with the key in the store). An attempt is a run of the handler: a
 * delivery that twice hid, gave back or could not claim is no attempt. Receives
 * are only a backstop (max receives, higher) for a message that never finishes.
 *
 * After the claim (lifecycle_on_claim); the job would run as attempt runs + 1:
 *   claimed (a new key, or one     run it; but runs >= max (max lowered since), dead-
 *   released after a retry)          letter "max-attempts" ("R attempts already
 *                                    (max_attempts M)")
 *   crashed (its last run crashed  runs >= max: dead-letter "worker-crashed" ("R attempts,
 *   its worker; that run counted)    the last one crashed its worker (max_attempts M)");
 *                                    else run it with a warning
 *   interrupted (its worker went   run it with a warning (that run is not counted against
 *   away mid-run: another job's      it); runs >= max as for claimed
 *   crash, or a stop)
 *   taken over (a lease expired    run it with a warning (that run is not counted);
 *   unrecorded: its worker hung,     runs >= max as for claimed
 *   lost the database, or its
 *   host died)
 *   any of these four, received    the backstop, unless runs >= max said otherwise:
 *     more than max receives         dead-letter "max-receives" ("received N times
 *                                    (max_receives X) without finishing (attempts
 *                                    counted: R)"): runs that were never recorded (a host
 *                                    that keeps dying), a count the janitor removed
 *   completed, same payload      a duplicate: delete it (also when the stored payload
 *   (or unknown: migrated row)     is unknown); never dead-lettered for its receives
 *   completed, other payload     a conflict: delete it (on_conflict skip) or
 *                                  dead-letter "payload-conflict" (on_conflict reject)
 *   busy (a live lease)          past max receives, dead-letter "max-receives"; else hide
 *                                  it for 2^(receives-1) s (1 s on the first delivery,
 *                                  doubling with each), never past the lease's end + 2 s,
 *                                  clamped to 1..43200: a duplicate of a job that ends
 *                                  soon is looked at again soon, and one behind a long job
 *                                  costs a receive per lease at most
 * A claim that failed through the message's own data (lifecycle_on_claim_failed: its
 * claim failed alone, and a claim check passed) gives the message back (not counted)
 * for the RETRY backoff below, receives standing for the attempt: it would fail again
 * at once, so it comes back after a growing wait, not in a tight loop of receives;
 * past max receives it is dead-lettered "max-receives" with the error.
 * When the store was at fault (LIFECYCLE_CLAIM_STORE: it could not be reached, or a
 * claim check failed as well: a revoked grant, a server or role that takes no
 * writes, a timeout, a full disk) it is given back at once whatever its receives:
 * the receiver stops receiving until claims can be written again, so an outage
 * costs each message one receive at most, and none is dead-lettered for it.
 * A claim PostgreSQL does not answer within lifecycle_answer_ms (a third of the
 * visibility timeout, 2..30 s) has failed: its connection is given up, so that the
 * message goes back well before SQS would show it again by itself.
 * A payload that S3 could not give for now (lifecycle_on_payload_failed, before any
 * claim) gives the message back for 2^(receives-1) s (at most 300), with a warning;
 * past max receives it is dead-lettered "max-receives" with the error.
 *
 * After the handler (lifecycle_on_handled), with attempt the run's number:
 *   DONE                         complete the key, delete the message
 *   REJECT                       dead-letter "rejected" (the plugin's error, else
 *                                  "rejected by the plugin")
 *   RETRY, the queue's breaker   give it back for the cooldown left (1..43200), the run
 *     open (an outage: breaker.c)  not counted, whatever its attempt: an outage spends
 *                                  no message's attempts, nothing goes to the DLQ for it
 *   RETRY, attempt >= max        dead-letter "max-attempts" ("attempt A of M failed: ...")
 *   RETRY, attempt < max         release the key with the run counted and wait: the
 *                                  plugin's retry_after (0..43200), else full jitter: a
 *                                  whole number of seconds drawn uniformly from 0 to
 *                                  min(backoff_cap, backoff_base * 2^(attempt-1)), then
 *                                  raised to at least 1 s, at most 43200. Standard queues
 *                                  hide the message for that long; FIFO queues retry in
 *                                  place (the handler waits, then runs it again as attempt
 *                                  + 1, its group waiting behind it)
 *   (any other status counts as RETRY)
 * A dead letter forgets the key (the release deletes its row): a fixed or redriven
 * message runs again from attempt 1.
 *
 * A run that outlives the queue's timeout (lifecycle_on_timeout), while its handler
 * still runs (its answer, if it ever comes, is then ignored), a transient failure
 * that the queue's breaker counts (breaker.c: a downstream that hangs is down):
 *   the queue's breaker open     give it back for the cooldown left, at least
 *                                  timeout_grace + 2 s, the run not counted, whatever
 *                                  its attempt (as a RETRY while it is open)
 *   attempt >= max               dead-letter "timeout" ("attempt A of M ran past its
 *                                  timeout (Ts)")
 *   attempt < max                release the key with the run counted and hide the message
 *                                  for the RETRY backoff (the plugin's retry_after is not
 *                                  asked), at least timeout_grace + 2 s: the next run is
 *                                  received after the hung one's worker stopped receiving
 *                                  and asked to be replaced. Never in place, FIFO queues
 *                                  too (the handler thread is not free)
 *   all three are logged as a warning naming the timeout
 *
 * A duplicate within one batch follows its leader (lifecycle_on_leader): deleted
 * when the leader's key was completed, else hidden for the leader's delay when the
 * leader was retried or hidden, or 0 (visible again) otherwise.
 *
 * Failures that are not the job's fault (lifecycle_on_failure) give the message back
 * (JOB_ACT_RETURN) without counting its run: FIFO group blocked 0 s, transaction could
 * not begin 5 s, store lost at commit 5 s, the queue's breaker opened before it started
 * (the cooldown left, at least 1 s), its queue paused while it was being received
 * (the wait given, 0 s), a transactional run that answered RETRY or REJECT after the
 * store dropped its connection 5 s (its statements failed with the connection: the
 * store's fault, not the job's, whatever the plugin answered), draining 0 s, drain
 * deadline 0 s (3 s for a transactional job, so that the master ends its lease first); a
 * drain during a FIFO retry's wait gives it back for the wait left, its last run counted.
 * A lease lost before a transactional handler started, or before a completion (another
 * worker took the key over), leaves the message alone for the key's new holder.
 *
 * A completion that finds its key no longer ours (lifecycle_on_complete_missed) after an
 * earlier completion of the job went out and failed (it may have committed, its answer
 * lost with the connection, or an error in its place when the server ended it): when
 * the key reads completed by this job's message, that completion committed: the job is
 * done (its message deleted, counted done), logged at info; otherwise the lease was lost,
 * as above. The same for a transactional job whose COMMIT lost its connection
 * (lifecycle_on_commit_unknown): completed by its message, it is done; otherwise (or when
 * the store cannot say) it is given back as "store lost at commit" above.
 * A transactional job whose completion the store refused on a connection that stayed
 * up (lifecycle_on_commit_refused: its COMMIT, its completion or its outbox rows failed
 * through the store's fault as idem_usable says, a statement_timeout, a server short
 * of disk, a revoked grant; or a statement of the plugin's did, aborting its
 * transaction) had its work rolled back with it, so nothing ran to effect: given back
 * for the RETRY backoff of its receives, the run not counted, with a warning; its
 * connection is made again first. One its own data fails (22, 23: a deferred
 * constraint at COMMIT; 40: a serialization failure) is the job's: a RETRY, counted,
 * logged as an error ("commit failed, nothing was applied").
 * A transactional run whose plugin answered RETRY or REJECT after a statement of its
 * own failed through the store's fault (idem_plugin_state_stale), aborting its
 * transaction (lifecycle_on_store_aborted), is the store's the same way: given back
 * for the RETRY backoff of its receives, not counted, with a warning naming the
 * statement's SQLSTATE. A statement of the plugin's that fails through its own fault
 * (its SQL: a syntax error, an undefined column or function; its data; a RAISE of
 * its function; contention) is the job's: a DONE after it is a RETRY, counted, the
 * job's error naming that statement's SQLSTATE and message, and its RETRY or REJECT
 * stand; its connection is kept.
 *
 * A DONE job whose completion cannot be written before its worker must exit
 * (lifecycle_on_stop_unwritten: a stop's or a reload's drain, the store unreachable
 * until the acknowledger's last call, a few seconds before its deadline):
 *   no follow-up messages staged  delete its message anyway, with a warning: its effect
 *                                   happened and nothing is lost by deleting it, whereas
 *                                   a message left would come back, meet its key still in
 *                                   progress once the lease lapsed, and run the job again.
 *                                   The key stays in progress, not completed, until its
 *                                   lease lapses (or the master frees it as interrupted,
 *                                   when it outlives the worker): a message sent again with
 *                                   the same key after that runs again
 *   follow-ups staged, none of    the acknowledger first sends them straight to SQS
 *     them in the outbox            (lifecycle_stop_sends: SQS may answer while the store
 *     (no COMMIT of its             does not), as the relay would: the same attributes,
 *     completion went out)          twice-outbox-id, delays, FIFO group and deduplication
 *                                   id. Every one accepted: delete its message, as with
 *                                   none staged, the warning saying how many were sent.
 *                                   Any not accepted: leave the message, with a warning
 *                                   and SQS's error: it comes back and, once its lease
 *                                   lapses, runs again (its effect twice), staging them
 *                                   again for the outbox; those SQS took are sent again
 *                                   then with the same twice-outbox-id, which a receiver
 *                                   keyed on it (and a FIFO queue, within its 5 minutes)
 *                                   dedupes, as for the relay's own resends
 *   follow-ups staged, and a      leave the message, with a warning: that COMMIT may have
 *     COMMIT of its completion      written them to the outbox, where the relay sends
 *     got no answer                 them; sent directly too they would go twice. When it
 *                                   comes back it is a duplicate if the COMMIT took, else
 *                                   it runs again once its lease lapsed
 * Until that last call a stopping worker keeps trying such a completion; the drain
 * deadline's give-back leaves a finished job alone (it is no running job).
 *
 * A DONE job whose completion fails while the worker runs on
 * (lifecycle_completion_waits) is tried again in later passes, every few seconds:
 *   the store unreachable (no        tried again for as long as the worker runs (a
 *   connection, the connection        failover takes minutes): its message stays hidden
 *   lost or ended by the server,      (the heartbeat extends its visibility, whatever the
 *   a server gone read-only)          lease's extension answers) and its handler slot
 *                                     stays held, so a full worker receives nothing more;
 *                                     when the store answers, the key is completed (its
 *                                     lease may have lapsed: a completion needs the key
 *                                     still ours, not a live lease) and the message
 *                                     deleted. Bounded by SQS: a message cannot stay
 *                                     hidden past LIFECYCLE_MAX_DELAY (12 h) from its
 *                                     receipt, so after that it is given up as below
 *   any other error (an SQL error     given up after the acknowledger's tries (about 20 s):
 *   that would fail again), or        the message comes back after its visibility timeout
 *   past those 12 h                   and meets its key's state then; a key still in
 *                                     progress is taken over once its lease lapsed, and
 *                                     the job runs again
 *
 * A dead letter the DLQ refuses for good (LIFECYCLE_DLQ_REFUSED: larger than the DLQ
 * accepts even without twice's optional attributes, or an error that sending again will
 * not fix) is not sent again in place: logged as an error with why, the message is given
 * back for an hour (it comes back then, is dead-lettered again and, once the DLQ takes
 * it, leaves the queue); its key is released keeping the runs the letter counted, so it
 * is neither left in progress nor run afresh.
 * A dead letter the DLQ keeps failing with errors worth retrying (LIFECYCLE_DLQ_UNAVAILABLE:
 * throttled, 5xx, unreachable, past the acknowledger's tries) is handled the same way, for
 * five minutes: its key is released keeping those runs, so that the message, when it comes
 * back, is claimed at once and met by the same decision (a spent max_attempts is
 * dead-lettered at its claim without running again), instead of meeting its own lease
 * and then being taken over, its last run uncounted and run once more.
 */
#ifndef TWICE_LIFECYCLE_H
#define TWICE_LIFECYCLE_H

#include <stddef.h>
#include <stdint.h>

#include <twice/plugin.h>

#include "idem.h"
#include "job.h"
#include "sqs_limits.h"

/* SQS's longest visibility timeout (12 hours): the ceiling of every delay. */
#define LIFECYCLE_MAX_DELAY SQS_VISIBILITY_MAX
/* Room for the formatted parts of a text: a stored message id (at most 127 bytes,
 * idem_claim) and the words around it. Keys and plugin errors are never copied. */
#define LIFECYCLE_TEXT_MAX  256

/* A queue's policy, from its configuration (set once per queue, process.c). */
struct lifecycle_queue {
    int max_attempts;     /* runs before the DLQ */
    int max_receives;     /* receives of a message that cannot run before the DLQ */
    int backoff_base;     /* RETRY backoff, seconds */
    int backoff_cap;      /* seconds */
    int fifo;             /* retries happen in place, in order */
    int reject_conflicts; /* idempotency.on_conflict = reject */
    int timeout;          /* a run's time limit, seconds; 0: none */
    int timeout_grace;    /* seconds past it before the worker is replaced */
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
    int runs;                     /* DEADLETTER: the key's runs counted (twice-attempts) */
    int attempt;                  /* claim, NONE: the run's number (runs + 1); else 0 */
    int counted;                  /* RETRY, RETURN: the release records this run as an attempt */
    int has_log;                  /* log is a line to log with the job's context */
    twice_log_level log_level;
    struct lifecycle_text log;
    const char *duplicate; /* count a skipped duplicate of this kind, static; else NULL */
    int conflict;          /* count a payload conflict */
};

/* What the store answered for a key, and what is known of the delivery. */
struct lifecycle_claim {
    enum idem_state state;
    int attempts;      /* the key's runs counted so far (idem_claim.attempts) */
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
    int breaker_open;  /* the queue's breaker is open (breaker.c): an outage */
    int open_delay;    /* then: seconds until it may close */
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
    LIFECYCLE_GROUP_BLOCKED,     /* FIFO: an earlier job of its group cannot run now */
    LIFECYCLE_TX_BEGIN_FAILED,   /* the handler's transaction could not begin */
    LIFECYCLE_LEASE_LOST,        /* the lease ended before the handler started */
    LIFECYCLE_COMPLETE_LOST,     /* DONE, but the lease was lost before the completion */
    LIFECYCLE_COMMIT_LOST,       /* the store went away at commit (error: why) */
    LIFECYCLE_TX_LOST,           /* the store went away during a transactional run that did
                                    not end DONE (error: the plugin's) */
    LIFECYCLE_BREAKER_OPEN,      /* the queue's breaker opened: not started */
    LIFECYCLE_PAUSED,            /* received as its queue was paused: not claimed */
    LIFECYCLE_CLAIM_STORE,       /* its claim failed through the store's fault (unreachable,
                                    or refusing claims: its claim check failed too) */
    LIFECYCLE_DRAINING,          /* the worker drains: not started */
    LIFECYCLE_DRAIN_IN_BACKOFF,  /* the drain began during a FIFO retry's wait */
    LIFECYCLE_DRAIN_DEADLINE,    /* still running at the drain deadline */
    LIFECYCLE_DRAIN_DEADLINE_TX, /* the same, a transactional job (holds its row lock) */
    LIFECYCLE_DLQ_REFUSED,       /* the DLQ refused its dead letter for good (error: why) */
    LIFECYCLE_DLQ_UNAVAILABLE    /* the DLQ kept failing its dead letter with errors worth
                                    retrying, past the acknowledger's tries (error: the last) */
};

/* How long a message whose dead letter the DLQ refused is given back, seconds. */
#define LIFECYCLE_DLQ_REFUSED_DELAY     3600
/* ... and one whose DLQ kept failing for now. */
#define LIFECYCLE_DLQ_UNAVAILABLE_DELAY 300

/* Each fills *out and returns out->action. Borrowed strings in *out point into
 * the inputs (or are static): keep the inputs alive while *out is used. */
enum job_action lifecycle_on_claim(const struct lifecycle_queue *q,
                                   const struct lifecycle_claim *c, struct lifecycle_verdict *out);
/* The message's claim failed through its own data (error: why, may be NULL);
 * receives: the message's ApproximateReceiveCount; random: a draw for the
 * backoff's jitter (backoff_random()). */
enum job_action lifecycle_on_claim_failed(const struct lifecycle_queue *q, int receives,
                                          uint64_t random, const char *error,
                                          struct lifecycle_verdict *out);
enum job_action lifecycle_on_payload_failed(const struct lifecycle_queue *q, int receives,
                                            const char *error, struct lifecycle_verdict *out);
enum job_action lifecycle_on_handled(const struct lifecycle_queue *q,
                                     const struct lifecycle_run *r, struct lifecycle_verdict *out);
enum job_action lifecycle_on_leader(const struct lifecycle_leader *l,
                                    struct lifecycle_verdict *out);
/* Run number attempt ran past q->timeout; open_delay: the cooldown left when
 * the queue's breaker is open (breaker_after_timeout), 0 when it is closed;
 * random: a draw for the backoff's jitter (backoff_random()). */
enum job_action lifecycle_on_timeout(const struct lifecycle_queue *q, int attempt, int open_delay,
                                     uint64_t random, struct lifecycle_verdict *out);
/* A DONE job's completion found its key no longer ours; answer_lost: an
 * earlier completion of it failed, so may have committed;
 * completed_by_it: the key reads completed by this job's message. */
enum job_action lifecycle_on_complete_missed(int answer_lost, int completed_by_it,
                                             struct lifecycle_verdict *out);
/* A transactional job's COMMIT lost its connection (error: why);
 * completed_by_it: on a new connection the key reads completed by the job's
 * message. */
enum job_action lifecycle_on_commit_unknown(int completed_by_it, const char *error,
                                            struct lifecycle_verdict *out);
/*
 * A transactional job that ended DONE, whose completion failed in its
 * transaction through the store's fault on a connection that stayed up (the
 * COMMIT, the completion or the outbox's statement refused as idem_usable
 * says: a statement_timeout, a server short of disk, a revoked grant; or a
 * statement of the plugin's that did, aborting the transaction: idem_watch_end):
 * the plugin's work was rolled back with it, so nothing ran to effect. Not the
 * job's fault: given back after the RETRY backoff for its receives (as a claim
 * its own data fails: it grows while the store keeps refusing, and
 * max_receives ends it at its claim), run number attempt not counted (error:
 * why, may be NULL). A completion its own data fails (22, 23: a deferred
 * constraint at COMMIT; 40) is the job's: lifecycle_on_handled with RETRY.
 */
enum job_action lifecycle_on_commit_refused(const struct lifecycle_queue *q, int receives,
                                            int attempt, uint64_t random, const char *error,
                                            struct lifecycle_verdict *out);
/*
 * A transactional job that answered anything but DONE (status: RETRY, REJECT)
 * after a statement of the plugin's failed through the store's fault
 * (idem_plugin_state_stale: a statement_timeout, a lock_timeout, a server
 * gone read-only or short of disk, a revoked grant) and aborted its
 * transaction (idem_watch_end's by_store): nothing it did landed, and its
 * answer was most likely to that failure, so the run is the store's, as a
 * DONE whose COMMIT the store refused (lifecycle_on_commit_refused): given
 * back after the RETRY backoff for its receives, run number attempt not
 * counted, with a warning naming error (the statement's "SQLSTATE S:
 * message", may be NULL). A REJECT too: dead-lettering at once what a
 * store's incident failed would walk good messages to the DLQ. A failure of
 * the plugin's own statement (its SQL, its data, a RAISE) is the job's:
 * lifecycle_on_handled.
 */
enum job_action lifecycle_on_store_aborted(const struct lifecycle_queue *q, twice_status status,
                                           int receives, int attempt, uint64_t random,
                                           const char *error, struct lifecycle_verdict *out);
/* A DONE job whose completion could not be written before its worker must
 * exit, and what became of its follow-ups. */
struct lifecycle_unwritten {
    size_t staged;          /* the follow-up messages its run staged with send() */
    int outbox_unsure;      /* a COMMIT of its completion went out and got no answer: they
                               may be in the outbox */
    int send_failed;        /* sent straight to SQS (lifecycle_stop_sends), not every one was
                               accepted */
    const char *error;      /* the store's last error, may be NULL */
    const char *send_error; /* send_failed: SQS's error, may be NULL */
};
/* The longest any statement of a running worker waits for PostgreSQL's answer
 * (ms): the acknowledger's, the handlers' and the rate limits' (their jobs' messages
 * are kept hidden meanwhile by the heartbeat). Far above what a statement takes on a
 * server that works, even a loaded one behind a row lock (a second or two), as a
 * statement given up leaves its outcome unknown. */
#define LIFECYCLE_ANSWER_MAX_MS 30000
/* ... and the least a claim waits: a claim of a queue whose visibility timeout is
 * a few seconds still gets two. */
#define LIFECYCLE_ANSWER_MIN_MS 2000
/* How long a receiver's claim may go unanswered before it is given up as a
 * failed claim (ms): a third of the queue's visibility timeout (seconds), its
 * messages received and hidden meanwhile with no heartbeat to keep them so,
 * within LIFECYCLE_ANSWER_MIN_MS..LIFECYCLE_ANSWER_MAX_MS. Pure. */
long lifecycle_answer_ms(int visibility_timeout);
/* Whether the acknowledger sends such a job's staged follow-ups straight to
 * SQS before asking lifecycle_on_stop_unwritten: when it staged some and
 * none can be in the outbox (outbox_unsure 0). */
int lifecycle_stop_sends(size_t staged, int outbox_unsure);
enum job_action lifecycle_on_stop_unwritten(const struct lifecycle_unwritten *u,
                                            struct lifecycle_verdict *out);
/* Whether a DONE job's completion that failed while the worker runs is tried
 * again however often it failed (1), or given up after the acknowledger's
 * tries (0): unreachable, the store could not be reached (idem_unreachable);
 * received_ago, seconds since its message was received. */
int lifecycle_completion_waits(int unreachable, double received_ago);
/* wait_left: LIFECYCLE_DRAIN_IN_BACKOFF's seconds still to wait (and the
 * cooldown left of LIFECYCLE_BREAKER_OPEN, the wait of LIFECYCLE_PAUSED); error:
 * LIFECYCLE_COMMIT_LOST's store error, LIFECYCLE_DLQ_REFUSED's refusal and
 * LIFECYCLE_DLQ_UNAVAILABLE's last error (may be NULL). */
enum job_action lifecycle_on_failure(enum lifecycle_failure f, int wait_left, const char *error,
                                     struct lifecycle_verdict *out);

#endif
