/*
 * job.h - one received message on its way through a worker: routed to a
 * plugin, given its idempotency key, claimed, handled, acknowledged.
 *
 * struct twice_job is the SDK's opaque twice_job: plugins only reach it
 * through the API table (hostapi.c). A job is owned by exactly one thread
 * at a time: the receiver that made it, then the handler thread running it,
 * then the acknowledger that finishes it and frees it.
 */
#ifndef TWICE_JOB_H
#define TWICE_JOB_H

#include <stddef.h>
#include <time.h>

#include <twice/plugin.h>

#include "arena.h"
#include "cut.h"
#include "atomics.h"
#include "jsonpath.h"
#include "outbox.h"
#include "sqs.h"

struct config;
struct config_queue;
struct envelope;
struct log_job;
struct payload_pointer;
struct wqueue;
struct plugin_instance;
struct keytmpl;
struct idem_store;
struct span;

/* What the acknowledger must do with a finished job. */
enum job_action {
    JOB_ACT_NONE = 0,
    JOB_ACT_COMPLETE,   /* DONE: complete the key (unless done in a tx), delete */
    JOB_ACT_DELETE,     /* a duplicate of a completed key: delete only */
    JOB_ACT_RETRY,      /* release the key, hide for the backoff */
    JOB_ACT_DEADLETTER, /* send to the DLQ, delete, release the key if we hold one */
    JOB_ACT_HIDE,       /* someone else holds the key: hide until their lease ends */
    JOB_ACT_RETURN      /* give it back now (drain, store down): release, visibility 0 */
};

struct twice_job {
    struct wqueue *queue;                 /* borrowed: the worker's queue it came from */
    const struct config_queue *qcfg;      /* borrowed: that queue's configuration */
    struct sqs_message msg;               /* owned: moved out of the receive array */
    const struct plugin_instance *plugin; /* borrowed: the routed plugin, NULL until routed */

    /* The body handlers, templates and routes see (keying_shape): msg.body,
     * else the envelope's inner body, else the payload fetched from S3. The
     * dead-letter queue always gets msg.body. */
    const char *view; /* borrowed from env or payload; NULL: msg.body (job_view) */
    size_t view_len;
    struct envelope *env;            /* owned: the unwrapped envelope, or NULL */
    char *payload;                   /* owned: the body fetched from S3, or NULL */
    struct payload_pointer *pointer; /* owned: the S3 object it came from, or NULL */
    int msg_deleted;                 /* acker: SQS accepted the message's delete */

    struct jsondoc *body; /* owned: the parsed view, NULL until parsed or if not JSON */
    int body_parsed;      /* parsing was attempted */
    char body_error[JSONPATH_BODY_ERROR_LEN]; /* why the body is not JSON */

    char *key;                 /* owned: the idempotency key, NULL until derived */
    unsigned char sha256[32];  /* of the body: tells a conflict from a duplicate */
    int receives;              /* SQS's ApproximateReceiveCount (>= 1) */
    int attempt;               /* this run's number: the key's runs + 1 once claimed, else 0;
                                  FIFO retries in place count on (lifecycle.h) */
    int counted;               /* RETRY/RETURN: the release records this run as an attempt */
    int runs;                  /* DEADLETTER: the key's runs counted, for twice-attempts */
    struct shared_int claimed; /* we hold the key in the store (atomic: the heartbeat reads
                                  it while a transactional handler settles the key) */
    int key_completed;         /* the key is completed (by the acker or in the handler's tx) */
    int complete_unsure;       /* acker: a completion went out and failed: it may have
                                  committed, its answer lost with the connection */
    int outbox_unsure;         /* acker: such a completion's COMMIT went out: the follow-ups
                                  it wrote may be in the outbox (never sent directly then) */
    int done_unrecorded;       /* acker: DONE, its completion never written before a stop
                                  (lifecycle_on_stop_unwritten): its message deleted anyway */
    int dlq_sent;              /* the dead letter was accepted by the DLQ */
    int dlq_refused;           /* the DLQ did not take it (refused it for good, or kept failing):
                                  given back, its key released with runs */

    twice_status status;         /* handle()'s answer */
    char *error;                 /* owned: api->error() text, NULL if none */
    int retry_after;             /* api->retry_after() seconds, -1 if not asked */
    int downstream;              /* api->downstream_unavailable() was called */
    int downstream_secs;         /* its seconds, 0 when unknown */
    int probe;                   /* the breaker's probe job (worker/breaker.c) */
    int breaker_told;            /* atomic: this run's outcome went to the breaker (its
                                    handler's, or the heartbeat's past its timeout) */
    struct idem_store *db;       /* borrowed, transactional handle() only */
    const struct config *cfg;    /* borrowed: the worker's configuration (send() names) */
    struct outbox_staged outbox; /* owned: what api->send() staged in this run */
    int send_refused;            /* a send() of this run was refused: DONE counts as REJECT */

    enum job_action action;
    char reason[32]; /* DLQ reason code ("rejected", "max-attempts", ...) */
    int delay;       /* RETRY/HIDE: visibility seconds */
    int act_tries;   /* acknowledgement attempts so far */
    int given_up;    /* acker: too many tries; left for redelivery, nothing more is done */
    int deferred;    /* acker: a step failed, try again in a later pass */
    int store_down;  /* acker: its completion last failed as the store was unreachable
                        (idem_unreachable): tried again while the worker runs */
    int held;        /* acker thread: deferred, in its list of later jobs (the heartbeat,
                        on the same thread, then knows the job is no longer running) */
    int given_back;  /* acker thread: the drain deadline gave it back while it ran
                        (heartbeat.c); a transactional run may commit after that */

    struct arena scratch; /* owned: strings handed to the plugin (api->field...) */
    struct span *span;    /* owned: its trace span (worker/jobspan.c), NULL with tracing off */

    struct timespec received_at; /* monotonic */
    struct timespec extended_at; /* monotonic: visibility last set (acker thread) */
    int lease_owed;     /* acker thread: its visibility was extended, its lease not yet: the
                           heartbeat extends it at its next look between the acker's passes */
    int sqs_limit_said; /* acker thread: the heartbeat said it reached SQS's 12 hours */
    struct timespec started_at; /* monotonic: handle() began */

    /* A run's time limit (worker/timeout.c). run_ms: atomic, the handler's thread
     * and the acker's compare-and-swap it: the monotonic ms this run began, 0 while
     * none runs, -1 once the acker acted on its overrun, -2 when a run it acted on
     * returned. The rest are the acker thread's. */
    long long run_ms;
    long long overrun_ms;  /* acker: when the overrun was noticed, 0: none */
    long long overrun_run; /* acker: that run's run_ms (a transactional run) */
    int replace_asked;     /* acker: this worker's replacement was asked for */
    int shm_idx;           /* the run's entry in the shared process table, -1 */

    int tracked;                /* in the acker's in-flight registry */
    int holds_slot;             /* counts against its queue's concurrency */
    struct twice_job *reg_prev; /* the registry's links (acker.c) */
    struct twice_job *reg_next;
    struct timespec not_before; /* acker: do not retry the acknowledgement earlier */

    struct twice_job *next;       /* in whichever list the job is on */
    struct twice_job *dups;       /* same key, same batch: decided with this one */
    struct twice_job *leader;     /* set on those dups: the job they wait on */
    struct twice_job *group_next; /* FIFO: the next job of this group, in order */
};

/* A new job of queue q (configured as qc) taking ownership of *m (which is
 * zeroed). NULL on ENOMEM. */
struct twice_job *job_new(struct wqueue *q, const struct config_queue *qc, struct sqs_message *m);
void job_free(struct twice_job *j);

/* Parse the body once (lazily); returns the document or NULL (see
 * body_error). */
struct jsondoc *job_body(struct twice_job *j);

/* The body the job shows (NUL-terminated, "" for none) and its length. */
const char *job_view(const struct twice_job *j, size_t *len);

/* Make text[0..len) (NUL-terminated, owned by env or payload) the body the
 * job shows; a body parsed before is forgotten. */
void job_set_view(struct twice_job *j, const char *text, size_t len);

/* A message attribute by name: the envelope's (SNS MessageAttributes)
 * first, then the SQS message's. NULL when absent. Borrowed from j. */
const struct sqs_attr *job_attr(const struct twice_job *j, const char *name);
/* The i-th of those attributes (the SQS message's, then the envelope's),
 * or NULL past the last. */
const struct sqs_attr *job_attr_at(const struct twice_job *j, size_t i);

/* JOB_ERROR_MAX, a dead letter's detail kept: cut.h (shared with the mock host) */

/* Set the job's outcome to dead-letter with a reason code and detail. */
void job_deadletter(struct twice_job *j, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Keep a string alive until the job ends and return it (for the API). */
const char *job_keep(struct twice_job *j, const char *s, size_t len);

/* The job's log context (queue, message, plugin, key, attempt); its
 * strings are borrowed from j. */
void job_log_ctx(const struct twice_job *j, struct log_job *ctx);

/* Log a line with the job's context. */
void job_log(twice_log_level level, const struct twice_job *j, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Seconds elapsed from a to b (monotonic). */
double job_elapsed(const struct timespec *a, const struct timespec *b);

#endif
