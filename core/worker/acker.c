/*
 * acker.c - the acknowledger thread of a worker (see acker.h).
 *
 * Each pass takes every submitted job and acts in this order, so that no
 * path loses a message or repeats an effect:
 *   1. dead letters are sent;
 *   2. keys of DONE jobs are completed in one statement;
 *   3. keys of retried, returned and dead-lettered jobs are released;
 *   4. messages are deleted and visibilities changed, ten per SQS call.
 * A step that fails defers the job to a later pass; steps already done are
 * remembered on the job (dlq_sent, key_completed, claimed), so a retried
 * pass never sends a second dead letter. A message is deleted only after
 * its key is completed or its dead letter accepted. A job is counted once,
 * for what happened: done when its key was completed (even if its message
 * could not be deleted), a retry when it was released to run again. Between
 * passes the heartbeat (heartbeat.c) extends what is still in flight, and
 * while a statement waits for PostgreSQL its visibility step goes on from
 * inside the wait (acker_wait_tick), which gives the statement up after
 * ACKER_ANSWER_MS or when a stop's time says so.
 *
 * A stop gives it until a deadline (acker_stop). While stopping, a completion
 * that keeps failing is not given up but tried again until the last call, a
 * few seconds before the deadline; then a DONE job whose completion is still
 * not written is settled as lifecycle_on_stop_unwritten says (deleted when it
 * staged no follow-ups, or when SQS took every one it staged, sent straight
 * to it as the relay would: send_follow_ups), so that its message does not
 * come back to run again.
 * While the worker runs, a completion that fails because the store cannot be
 * reached (a failover) is not given up either: it is tried again every few
 * seconds, its job still in flight (its message kept hidden by the heartbeat,
 * its handler slot held), until the store answers (lifecycle_completion_waits).
 */
#include "acker.h"

#include "clock.h"
#include "cnum.h"
#include "config.h"
#include "dlq.h"
#include "followup.h"
#include "heartbeat.h"
#include "idem.h"
#include "instance.h"
#include "job.h"
#include "jobspan.h"
#include "lifecycle.h"
#include "log.h"
#include "plural.h"
#include "metrics.h"
#include "outbox.h"
#include "payloads.h"
#include "registry.h"
#include "s3.h"
#include "shm.h"
#include "sqs.h"
#include "sqs_limits.h"
#include "verdict.h"
#include "worker.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How long a pass waits to gather more jobs into its batches. */
#define ACKER_GATHER_NS        (5 * 1000000L)
/* Keys per PostgreSQL statement. */
#define ACKER_BATCH            256
/* How long the first reconnect of an outage may hold the acker's thread (ms):
 * long enough for a server that is back (a restart, a failover's new primary)
 * to take the connection at once, well within the heartbeat's slack
 * (HEARTBEAT_SLACK_S). Later calls wait ACKER_CONNECT_STEP_MS at most: the
 * reconnect goes on between them. */
#define ACKER_CONNECT_WAIT_MS  250
/* How long each later call may wait for the server (ms): a round trip of a
 * server that answers, so that a reconnect's few (TLS, authentication) are
 * over within a call or two; a server that does not answer costs that. */
#define ACKER_CONNECT_STEP_MS  20
/* How long the first connect (at the worker's start, on its main thread,
 * just after the ready check reached the store) may wait (ms): a server that
 * took the ready check's connection answers a new one well within it; one
 * that does not is left to the acker's thread, so that the start, and the
 * stop signals it leaves pending, are not held for a connect_timeout. */
#define ACKER_FIRST_CONNECT_MS 2000
/* How long a reconnect may go unanswered before the store is said to be
 * unreachable (ms). Acknowledgements wait from the first failure, but a
 * server that takes its time over a new connection (a loaded one, TLS and
 * SCRAM over a long link: hundreds of ms) is not an outage, and an error line
 * for it would page someone for nothing. A connect that fails outright is
 * said at once. */
#define ACKER_QUIET_CONNECT_MS 2000
/* Seconds before a stop's deadline when the last pass settles what the store
 * could not take: time enough for its deletes before SQS calls are cut. */
#define ACKER_LAST_CALL        3
/* How long a statement of the acker's may go unanswered before its connection
 * is given up (ms): a server that froze on an established connection, or a
 * host gone while the statement's bytes are unacknowledged (TCP retries them
 * for about 15 minutes; keepalives do not fire meanwhile). Meanwhile the
 * heartbeat keeps the running jobs' messages hidden (acker_wait_tick), so this
 * bounds only how long acknowledgements wait before a reconnect: the worker's
 * longest (lifecycle.h says why). */
#define ACKER_ANSWER_MS        LIFECYCLE_ANSWER_MAX_MS
/* How often a statement's wait looks at the heartbeat and the stop (ms). */
#define ACKER_TICK_MS          100

struct acker {
    struct worker *w;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct twice_job *pending; /* submitted, not yet taken by a pass */
    size_t npending;
    struct registry reg; /* the jobs in flight, for the heartbeat */
    int stop;
    int abandon;              /* give back the running jobs */
    int exited;               /* the thread has left its loop (acker_stop waits for it) */
    pthread_cond_t exited_cv; /* signalled when exited is set; CLOCK_MONOTONIC, so a
                                 stop's deadline is waited for as it is given */
    struct flag cut;          /* a stop's time is up: SQS calls end now, deferred jobs are left */
    int has_deadline;         /* a stop with a deadline: last_call_at is set */
    struct timespec last_call_at; /* CLOCK_MONOTONIC: ACKER_LAST_CALL before it */

    /* Used by the thread only. */
    struct sqs_client *sqs;
    struct s3_client *s3; /* payloads to delete; made on first use */
    struct idem_store *store;
    struct twice_job *later; /* deferred jobs */
    int store_down;          /* the store is not usable: acknowledgements wait */
    int down_said;           /* ... and that was logged (acker_store_failed) */
    int64_t down_since_ms;   /* CLOCK_MONOTONIC: when it stopped being usable */
    time_t defer_logged;     /* when deferrals were last reported */
    time_t release_logged;   /* when failed releases were last reported */
    int deferrals;           /* deferrals since then */
    int stopping;            /* this pass runs during a stop ... */
    int deadline;            /* ... that has a deadline (a copy of has_deadline) */
    int last_call;           /* this pass is a stop's last call (or the drain gave up
                                on running jobs): completions are not deferred again */
    struct heartbeat hb;     /* its state; it runs between passes */
};

/* Seconds between two reports of failing acknowledgements: an outage gives a
 * line now and then, not one per request. */
#define ACKER_REPORT_EVERY 10

static void
now_mono(struct timespec *ts)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
}

void
acker_track(struct acker *a, struct twice_job *j)
{
    registry_add(&a->reg, j);
}

static void
push_pending_locked(struct acker *a, struct twice_job *j)
{
    j->next = a->pending;
    a->pending = j;
    a->npending++;
}

void
acker_submit(struct acker *a, struct twice_job *j)
{
    pthread_mutex_lock(&a->mu);
    push_pending_locked(a, j);
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

#define RELEASE_QUEUES 8

/* The slots finished jobs free, released per queue by release_flush: a
 * receiver is woken once for a pass's worth of free slots and fills them with
 * one receive (and one claim), instead of waking for each slot and receiving
 * one message. */
struct slot_release {
    struct wqueue *q[RELEASE_QUEUES];
    int n[RELEASE_QUEUES];
    int used;
};

static void
release_flush(struct slot_release *r)
{
    for (int i = 0; i < r->used; i++) {
        wqueue_release_slot(r->q[i], r->n[i]);
    }
    r->used = 0;
}

/* The end of a job: its queue slot is noted in r, free again at the next
 * release_flush. */
static void
finish(struct twice_job *j, struct slot_release *r)
{
    if (j->holds_slot) {
        int i = 0;
        while (i < r->used && r->q[i] != j->queue) {
            i++;
        }
        if (i == RELEASE_QUEUES) {
            release_flush(r);
            i = 0;
        }
        if (i == r->used) {
            r->q[i] = j->queue;
            r->n[i] = 0;
            r->used++;
        }
        r->n[i]++;
    }
    jobspan_end(j);
    job_free(j);
}

void
acker_abandon_running(struct acker *a)
{
    pthread_mutex_lock(&a->mu);
    a->abandon = 1;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

static const char *
qname(const struct twice_job *j)
{
    return j->queue->cfg->name;
}

static const char *
pname(const struct twice_job *j)
{
    return j->plugin != NULL ? j->plugin->name : "";
}

static int acker_wait_tick(void *arg);
static void acker_store_failed(struct acker *a, int pending, const char *err);

/* The acker's store connection, (re)connected on demand: when lost, and when
 * a statement failed on it through the store's fault (idem_usable: a
 * completion cut short by a statement_timeout the role no longer has is
 * tried again on a new connection). A reconnect never
 * holds the thread for longer than ACKER_CONNECT_WAIT_MS at the start of an
 * outage, and ACKER_CONNECT_STEP_MS a call while it lasts: it goes on
 * between the calls (idem_reconnect_poll; acker_main calls at every turn of
 * its loop while the store is down), so that the heartbeat keeps extending
 * the running jobs' visibility while a server that accepts and never
 * answers makes each connect last its connect_timeout. NULL while not
 * connected. An outage is logged once it is sure (acker_store_failed) and
 * when it ends, not on every failure. */
static struct idem_store *
acker_store(struct acker *a)
{
    char err[512];
    if (a->store != NULL && idem_usable(a->store)) {
        return a->store;
    }
    if (a->last_call && a->store_down) {
        return NULL; /* a connect could outlast the time left (connect_timeout) */
    }
    int rc = 0, wait_ms = a->store_down ? ACKER_CONNECT_STEP_MS : ACKER_CONNECT_WAIT_MS;
    if (a->store == NULL) {
        /* the first open (acker_start's), its connect polled as a reconnect's */
        const struct config *c = a->w->cfg;
        struct idem_wait wait = {ACKER_ANSWER_MS, ACKER_TICK_MS, acker_wait_tick, a};
        rc = idem_open_polled(c->idempotency.dsn, c->idempotency.table, a->w->owner, &wait,
                              &a->store, err, sizeof(err));
        wait_ms = ACKER_FIRST_CONNECT_MS;
    }
    int pending = 0; /* the new connection is still being made */
    if (a->store != NULL && rc == 0) {
        int got = idem_reconnect_poll(a->store, wait_ms, err, sizeof(err));
        pending = got == 0;
        rc = got == 1 ? 0 : -1;
    }
    if (rc != 0) {
        acker_store_failed(a, pending, err);
        return NULL;
    }
    if (a->down_said) {
        log_info("idempotency store reachable again");
    }
    a->store_down = 0;
    a->down_said = 0;
    return a->store;
}

/* The store is not usable (acker_store): acknowledgements wait. Said once an
 * outage is sure: at once when connecting failed, after
 * ACKER_QUIET_CONNECT_MS while the new connection is still unanswered
 * (pending). err: why it failed. */
static void
acker_store_failed(struct acker *a, int pending, const char *err)
{
    int64_t now = clock_mono_ms();
    if (!a->store_down) {
        a->down_since_ms = now;
    }
    a->store_down = 1;
    if (a->down_said || (pending && now - a->down_since_ms < ACKER_QUIET_CONNECT_MS)) {
        return;
    }
    if (pending) {
        log_error("idempotency store unreachable (acknowledgements wait): a new connection "
                  "is not answered after %lld ms (still trying)",
                  (long long) (now - a->down_since_ms));
    } else {
        log_error("idempotency store unreachable (acknowledgements wait): %s", err);
    }
    a->down_said = 1;
}

/* Whether the statement the acker waits for is to be given up: the stop's
 * time is up (cut), the drain gave up on the running jobs (the worker exits
 * after its last call), or a stop with a deadline reached its last call,
 * which must find the acker free to settle what the store could not take (a
 * statement of the last call itself gets a second, leaving two for its SQS
 * calls). */
static int
stop_gives_up(struct acker *a, const struct timespec *now)
{
    if (flag_is_up(&a->cut) || flag_is_up(&a->w->abandon)) {
        return 1;
    }
    pthread_mutex_lock(&a->mu);
    int timed = a->stop && a->has_deadline;
    struct timespec at = a->last_call_at;
    pthread_mutex_unlock(&a->mu);
    at.tv_sec += a->last_call;
    return timed && job_elapsed(&at, now) >= 0;
}

/* The heartbeat's visibility extensions, when a look is due (their leases
 * wait for the end of the pass): from inside the acker's waits for
 * PostgreSQL (acker_wait_tick) and before each SQS call of a pass. Each SQS
 * call is bounded (heartbeat_call_budget_ms), but a pass makes many (a dead
 * letter is a call of its own, deletes and visibility changes one per ten
 * messages and queue): calls each slow yet within the bound added up and held
 * the heartbeat past the running jobs' visibility timeouts, so their messages
 * came back and, once their leases lapsed, ran a second time beside them.
 * With a look between the calls, a pass holds the heartbeat for one call at
 * the most. *now is set to the time after the look. */
static void
acker_keep_hidden(struct acker *a, struct timespec *now)
{
    now_mono(now);
    if (job_elapsed(&a->hb.last_look, now) >= a->hb.interval) {
        heartbeat_keep_hidden(&a->hb, now);
        now_mono(now);
    }
}

/* Called every ACKER_TICK_MS while the acker waits for PostgreSQL to answer
 * (idem_set_wait), on its thread: the heartbeat's visibility extensions go on
 * (acker_keep_hidden), so that a server that stopped answering on an
 * established connection does not let the running jobs' messages come back.
 * Nonzero: give the statement up (stop_gives_up). */
static int
acker_wait_tick(void *arg)
{
    struct acker *a = arg;
    struct timespec now;
    acker_keep_hidden(a, &now);
    return stop_gives_up(a, &now);
}

/* The heartbeat's way to the same connection. */
static struct idem_store *
heartbeat_store(void *arg)
{
    return acker_store(arg);
}

/* Whether j is a DONE job whose completion is not written yet: the last call
 * settles it at once, without waiting for its turn (stop_unwritten). */
static int
unwritten(const struct twice_job *j)
{
    return j->action == JOB_ACT_COMPLETE && !j->key_completed;
}

/* Whether a failing step of j is tried again however often it failed: a
 * completion during a stop with a deadline (or once the drain gave up on the
 * running jobs, just before that stop) waits for the last call instead of
 * being given up (stop_unwritten then settles it); while the worker runs, a
 * completion the store was unreachable for waits for the store
 * (lifecycle_completion_waits): given up, its message would come back, meet
 * its key in progress once the lease lapsed, and run the job again. */
static int
keeps_trying(const struct acker *a, const struct twice_job *j)
{
    if (!unwritten(j)) {
        return 0;
    }
    if ((a->stopping && a->deadline) || flag_is_up(&a->w->abandon)) {
        return 1;
    }
    struct timespec now;
    now_mono(&now);
    return lifecycle_completion_waits(j->store_down, job_elapsed(&j->received_at, &now));
}

/* A step failed: try the job again in a later pass (at most 4 s later), or
 * give it up after too many tries unless keeps_trying (its message comes back
 * after its visibility timeout and meets its key's state then: nothing is
 * lost). */
static void
defer(struct acker *a, struct twice_job *j, const char *what, const char *why)
{
    struct log_job ctx;
    job_log_ctx(j, &ctx);
    j->act_tries++;
    if (j->act_tries >= j->queue->cfg->ack_tries && !keeps_trying(a, j)) {
        log_job(TWICE_LOG_ERROR, &ctx,
                "%s failed %d times, giving up (the message will be redelivered after its "
                "visibility timeout): %s",
                what, j->act_tries, why);
        j->given_up = 1; /* what was done stays counted (count_finished) */
        return;
    }
    log_job(TWICE_LOG_DEBUG, &ctx, "%s failed, will retry: %s", what, why);
    time_t now = time(NULL);
    a->deferrals++;
    if (now - a->defer_logged >= ACKER_REPORT_EVERY) {
        log_warn("%d acknowledgement steps failed in the last %ds and will be retried "
                 "(latest: %s: %s)",
                 a->deferrals, now - a->defer_logged > 3600 ? 0 : (int) (now - a->defer_logged),
                 what, why);
        a->defer_logged = now;
        a->deferrals = 0;
    }
    j->deferred = 1;
    now_mono(&j->not_before);
    j->not_before.tv_sec += j->act_tries < 4 ? j->act_tries : 4;
}

/* j's completion (or the look-up after one) failed on s (NULL: no
 * connection): note whether the store was unreachable, then defer j. */
static void
defer_completion(struct acker *a, struct twice_job *j, const struct idem_store *s,
                 const char *what, const char *err)
{
    j->store_down = idem_unreachable(s);
    if (j->store_down && j->act_tries + 1 == j->queue->cfg->ack_tries) {
        struct log_job ctx;
        job_log_ctx(j, &ctx);
        log_job(TWICE_LOG_WARN, &ctx,
                "%s failed %d times, the idempotency store unreachable: trying again every few "
                "seconds while the worker runs (its message stays hidden, its handler slot "
                "held): %s",
                what, j->act_tries + 1, err);
    }
    defer(a, j, what, err);
}

/* Message i of j's staged follow-ups as the relay would send it (followup.h):
 * borrowed from j. Its index is its place in send() order, as the outbox
 * writes it, so twice-outbox-id is the one a later run's relay would give. */
static struct followup
staged_followup(const struct twice_job *j, size_t i)
{
    const struct outbox_msg *m = &j->outbox.msgs[i];
    return (struct followup){
        .key = j->key,
        .idx = (int) i,
        .url = m->url,
        .body = m->body,
        .body_len = strlen(m->body),
        .delay = m->delay,
        .group_id = m->group_id,
        .attrs = m->attrs,
    };
}

/* One SendMessageBatch of f[0..n) for send_follow_ups, counted as a request
 * and, each message SQS took, as a follow-up sent (via direct: the relay's
 * counter, so /metrics shows every follow-up delivered): 0 when SQS accepted
 * every message, else -1 with why (naming queue). */
static int
send_follow_up_batch(struct acker *a, const char *queue, const struct followup *const *f, size_t n,
                     char *why, size_t whylen)
{
    struct sqs_batch_result res[SQS_BATCH_MAX];
    struct sqs_error e;
    struct timespec now;
    acker_keep_hidden(a, &now);
    int rc = followup_send_batch(a->sqs, f, n, res, &e);
    metrics_count(MET_SQS_REQUESTS, "SendMessageBatch", rc == 0 ? "ok" : "error", NULL, 1);
    if (rc != 0) {
        char desc[768];
        sqs_error_describe(&e, "SendMessageBatch", desc, sizeof(desc));
        metrics_count(MET_SQS_ERRORS, "SendMessageBatch", e.code, NULL, 1);
        snprintf(why, whylen, "queue %s: %s", queue, desc);
        return -1;
    }
    size_t took = 0, refused = n;
    for (size_t i = 0; i < n; i++) {
        if (res[i].ok) {
            took++;
        } else if (refused == n) {
            refused = i;
        }
    }
    if (took > 0) {
        metrics_count(MET_OUTBOX_SENT, queue, "direct", NULL, took);
    }
    if (refused < n) {
        snprintf(why, whylen, "queue %s: SendMessageBatch: message %d: %s: %s", queue,
                 f[refused]->idx, res[refused].code, res[refused].message);
        return -1;
    }
    return 0;
}

/* j's staged follow-ups in the order they are sent, into f (n of them, as
 * staged_followup gives them) and order, queue (each one's queue as named)
 * and bytes (followup_bytes): by queue, in the order each was first named,
 * each queue's in send() order, as the relay sends a claim's rows. */
static void
order_by_queue(const struct twice_job *j, struct followup *f, const struct followup **order,
               const char **queue, size_t *bytes)
{
    size_t n = j->outbox.n, k = 0;
    for (size_t i = 0; i < n; i++) {
        f[i] = staged_followup(j, i);
    }
    for (size_t i = 0; i < n; i++) {
        int seen = 0;
        for (size_t p = 0; p < i && !seen; p++) {
            seen = strcmp(f[p].url, f[i].url) == 0;
        }
        for (size_t m = i; !seen && m < n; m++) {
            if (strcmp(f[m].url, f[i].url) == 0) {
                queue[k] = j->outbox.msgs[m].queue;
                bytes[k] = followup_bytes(&f[m]);
                order[k++] = &f[m];
            }
        }
    }
}

/*
 * Send the DONE job j's staged follow-ups straight to SQS, at a stop's last
 * call when the store cannot take them (lifecycle_stop_sends): the messages
 * the relay would send, in its order and batches. A batch SQS did not take
 * whole ends it (what follows is not sent: the job runs again and stages
 * them anew, so anything sent here goes again then, with the same
 * twice-outbox-id). No retry beyond the SQS client's own in-call retries,
 * as for the relay. 0 when SQS accepted every message, else -1 with why.
 */
static int
send_follow_ups(struct acker *a, const struct twice_job *j, char *why, size_t whylen)
{
    size_t n = j->outbox.n;
    struct followup *f = calloc(n, sizeof(*f));
    const struct followup **order = calloc(n, sizeof(*order));
    const char **queue = calloc(n, sizeof(*queue));
    size_t *bytes = calloc(n, sizeof(*bytes));
    int rc = 0;
    if (f == NULL || order == NULL || queue == NULL || bytes == NULL) {
        snprintf(why, whylen, "out of memory");
        rc = -1;
    } else {
        order_by_queue(j, f, order, queue, bytes);
    }
    for (size_t start = 0; rc == 0 && start < n;) {
        size_t same = start;
        while (same < n && strcmp(order[same]->url, order[start]->url) == 0) {
            same++;
        }
        size_t len = followup_batch_len(&bytes[start], same - start);
        rc = send_follow_up_batch(a, queue[start], &order[start], len, why, whylen);
        start += len;
    }
    free(bytes);
    free(queue);
    free(order);
    free(f);
    return rc;
}

/* A stop's last call, and the DONE job j's completion failed again (err):
 * settle it as lifecycle.c says - its message deleted when it staged no
 * follow-ups (its effect happened: left, it would come back, meet its key in
 * progress once the lease lapsed and run again), or when it staged some,
 * none of them can be in the outbox, and SQS took every one sent straight
 * to it; else left as it is (the job runs again). */
static void
stop_unwritten(struct acker *a, struct twice_job *j, const char *err)
{
    struct lifecycle_unwritten u = {
        .staged = j->outbox.n,
        .outbox_unsure = j->outbox_unsure,
        .error = err,
    };
    char why[1024] = "";
    if (lifecycle_stop_sends(u.staged, u.outbox_unsure) &&
        send_follow_ups(a, j, why, sizeof(why)) != 0) {
        u.send_failed = 1;
        u.send_error = why;
    }
    struct lifecycle_verdict v;
    if (lifecycle_on_stop_unwritten(&u, &v) == JOB_ACT_DELETE) {
        j->done_unrecorded = 1;
    }
    verdict_apply(j, &v);
}

/* Whether a failed SQS call is worth making again in a later pass: a
 * failure that passes (sqs_error_passes: throttling, 5xx, the credentials or
 * the clock, TLS), or a call cancelled because a stop's time ran out (the
 * pass is then the last one; its jobs are left, not failed for good). */
static int
try_again(const struct sqs_error *e)
{
    return sqs_error_passes(e) || strcmp(e->code, "Cancelled") == 0;
}

/* Send the job's dead letter to its queue's DLQ, built to fit its size
 * limit (fit: what is known of it). */
static int
send_letter(struct sqs_client *c, const struct twice_job *j, struct dlq_fit *fit,
            struct sqs_error *e)
{
    const struct config_queue *qc = j->queue->cfg;
    struct dlq_reason why = {
        .reason = j->reason[0] != '\0' ? j->reason : "rejected",
        .error = j->error,
        .plugin = j->plugin != NULL ? j->plugin->name : NULL,
        .attempts = j->runs,
        .queue_url = qc->url,
        .key = j->key,
    };
    return dlq_send(c, qc->dlq_url, qc->fifo, &j->msg, &why, fit, e);
}

/* The DLQ did not take j's dead letter: refused it for good (too large for
 * it, or an error that sending again will not fix), or kept failing it past
 * the acker's tries (failure says which): say why once and give the message
 * back for a while (lifecycle.h), its key released with the runs the letter
 * counted (runs_to_record), rather than trying again in place or leaving
 * the key in progress until its lease lapses. */
static void
give_back_unsent(struct twice_job *j, enum lifecycle_failure failure, const char *desc)
{
    char why[1400];
    snprintf(why, sizeof(why), "(%s) %s", j->reason, desc);
    struct lifecycle_verdict v;
    lifecycle_on_failure(failure, 0, why, &v);
    verdict_apply(j, &v);
    j->dlq_refused = 1;
}

/* Log what of twice's own attributes a letter left out to fit its DLQ. */
static void
log_trimmed(const struct twice_job *j, const struct dlq_fit *fit)
{
    struct log_job ctx;
    job_log_ctx(j, &ctx);
    log_job(TWICE_LOG_WARN, &ctx,
            "the dead letter (%zu bytes) was cut to fit the %zu bytes its DLQ accepts:%s%s%s%s%s",
            fit->bytes, fit->max_bytes > 0 ? fit->max_bytes : (size_t) SQS_MESSAGE_MAX_BYTES,
            fit->trimmed & DLQ_TRIM_ERROR_CUT ? " twice-error shortened" : "",
            fit->trimmed & DLQ_TRIM_ERROR ? " twice-error left out" : "",
            fit->trimmed & DLQ_TRIM_KEY ? " twice-key left out" : "",
            fit->trimmed & DLQ_TRIM_ATTEMPTS ? " twice-attempts left out" : "",
            fit->trimmed & DLQ_TRIM_PLUGIN ? " twice-plugin left out" : "");
}

/* 1. Dead letters. */
static void
send_dead_letters(struct acker *a, struct twice_job *list)
{
    for (struct twice_job *j = list; j != NULL; j = j->next) {
        if (j->action != JOB_ACT_DEADLETTER || j->dlq_sent || j->deferred || j->given_up) {
            continue;
        }
        struct sqs_error e;
        struct dlq_fit fit = {.max_bytes = j->queue->dlq_max_bytes};
        struct timespec now;
        acker_keep_hidden(a, &now);
        int rc = send_letter(a->sqs, j, &fit, &e);
        j->queue->dlq_max_bytes = fit.max_bytes;
        int failed = fit.calls - (rc == 0);
        if (failed > 0) {
            metrics_count(MET_SQS_REQUESTS, "SendMessage", "error", NULL, failed);
        }
        if (rc != 0) {
            char desc[1280], where[512];
            if (strcmp(e.code, DLQ_TOO_LARGE_CODE) == 0) {
                snprintf(desc, sizeof(desc), "%s", e.message);
            } else {
                config_queue_where(j->queue->cfg, "dlq_url", where, sizeof(where));
                sqs_error_describe_at(&e, "SendMessage", where, desc, sizeof(desc));
            }
            if (!try_again(&e)) {
                give_back_unsent(j, LIFECYCLE_DLQ_REFUSED, desc);
            } else if (j->act_tries + 1 < j->queue->cfg->ack_tries ||
                       strcmp(e.code, "Cancelled") == 0) {
                defer(a, j, "sending to the DLQ", desc);
            } else {
                give_back_unsent(j, LIFECYCLE_DLQ_UNAVAILABLE, desc);
            }
            continue;
        }
        metrics_count(MET_SQS_REQUESTS, "SendMessage", "ok", NULL, 1);
        j->dlq_sent = 1;
        if (fit.trimmed != 0) {
            log_trimmed(j, &fit);
        }
        struct log_job ctx;
        job_log_ctx(j, &ctx);
        log_job(TWICE_LOG_WARN, &ctx, "dead-lettered (%s): %s", j->reason,
                j->error != NULL ? j->error : "");
        metrics_count(MET_DEADLETTERED, qname(j), pname(j), j->reason, 1);
        metrics_count(MET_FINISHED, qname(j), pname(j),
                      strcmp(j->reason, "rejected") == 0 ? "rejected" : "deadlettered", 1);
        shm_dlq_event(qname(j), pname(j), j->reason, j->msg.message_id, j->key);
    }
}

static int
needs_complete(const struct twice_job *j)
{
    return j->action == JOB_ACT_COMPLETE && shared_int_get(&j->claimed) && !j->key_completed &&
           !j->deferred && !j->given_up;
}

static int
needs_release(const struct twice_job *j)
{
    if (!shared_int_get(&j->claimed) || j->deferred || j->given_up) {
        return 0;
    }
    return j->action == JOB_ACT_RETRY || j->action == JOB_ACT_RETURN ||
           (j->action == JOB_ACT_DEADLETTER && j->dlq_sent);
}

/* The runs a completion or release records for j (idem.h): this run when it
 * counts, else the runs before it; none after a dead letter (the key is
 * forgotten, so that a fixed or redriven message runs afresh); those its
 * letter counted when the DLQ refused it. */
static int
runs_to_record(const struct twice_job *j)
{
    if (j->action == JOB_ACT_DEADLETTER) {
        return 0;
    }
    if (j->dlq_refused) {
        return j->runs; /* given back: the runs its letter counted stay */
    }
    return j->action == JOB_ACT_COMPLETE || j->counted ? j->attempt : j->attempt - 1;
}

static size_t
collect_keys(struct twice_job *list, int (*want)(const struct twice_job *),
             struct twice_job **jobs, const char **keys, int *runs)
{
    size_t n = 0;
    for (struct twice_job *j = list; j != NULL && n < ACKER_BATCH; j = j->next) {
        if (want(j)) {
            jobs[n] = j;
            keys[n] = j->key;
            runs[n] = runs_to_record(j);
            n++;
        }
    }
    return n;
}

/* Complete keys[0..n) of jobs; when any job staged messages, they are
 * written in the same transaction (outbox.h). 0, or -1 (nothing committed),
 * or -2 (a COMMIT went out unanswered: outbox_complete_batch). */
static int
complete_batch(struct acker *a, struct idem_store *s, struct twice_job **jobs, const char **keys,
               const int *runs, size_t n, int *done, char *err, size_t errlen)
{
    struct outbox_job oj[ACKER_BATCH];
    size_t staged = 0;
    for (size_t i = 0; i < n; i++) {
        oj[i] =
            (struct outbox_job){jobs[i]->key, qname(jobs[i]), pname(jobs[i]), &jobs[i]->outbox};
        staged += jobs[i]->outbox.n;
    }
    if (staged == 0) {
        return idem_complete_batch(s, keys, runs, n, done, err, errlen);
    }
    return outbox_complete_batch(s, a->w->cfg->idempotency.table, keys, runs, oj, n, done, err,
                                 errlen);
}

/* Whether the key of each of jobs[0..n) is completed by its job's message
 * (completed[i]), for jobs whose earlier completion lost its answer: -1 when
 * the store could not say (err). */
static int
completed_by_them(struct idem_store *s, struct twice_job **jobs, size_t n, int *completed,
                  char *err, size_t errlen)
{
    const char *keys[ACKER_BATCH], *ids[ACKER_BATCH];
    for (size_t i = 0; i < n; i++) {
        keys[i] = jobs[i]->key;
        ids[i] = jobs[i]->msg.message_id;
    }
    return idem_completed_by(s, keys, ids, n, completed, err, errlen);
}

/* Settle the jobs whose completion just found their key no longer ours
 * (lifecycle_on_complete_missed): those whose earlier completion failed are
 * looked up first, as that one may have committed; when the
 * look-up fails they are deferred, still holding the key, to complete (and
 * look) again in a later pass. */
static void
settle_missed(struct acker *a, struct idem_store *s, struct twice_job **jobs, size_t n)
{
    int completed[ACKER_BATCH] = {0};
    char err[512] = "";
    int unsure = 0, looked = 0;
    for (size_t i = 0; i < n; i++) {
        unsure |= jobs[i]->complete_unsure;
    }
    if (unsure && (looked = completed_by_them(s, jobs, n, completed, err, sizeof(err))) != 0) {
        metrics_count(MET_PG_ERRORS, "complete", NULL, NULL, 1);
    }
    for (size_t i = 0; i < n; i++) {
        struct twice_job *j = jobs[i];
        if (looked != 0 && j->complete_unsure) {
            defer_completion(a, j, s, "looking up the key after a lost completion", err);
            continue;
        }
        shared_int_set(&j->claimed, 0);
        struct lifecycle_verdict v;
        if (lifecycle_on_complete_missed(j->complete_unsure, completed[i], &v) ==
            JOB_ACT_COMPLETE) {
            j->key_completed = 1;
        }
        verdict_apply(j, &v);
    }
}

/* 2. Complete the keys of DONE jobs, in one statement per ACKER_BATCH. A key
 * another worker took over is not ours to complete: its job is not counted
 * done here, and its message is left to the key's new holder (lifecycle.c),
 * unless an earlier completion of it failed and the key reads completed by
 * its message (settle_missed). */
static void
complete_keys(struct acker *a, struct twice_job *list)
{
    struct twice_job *jobs[ACKER_BATCH], *missed[ACKER_BATCH];
    const char *keys[ACKER_BATCH];
    int runs[ACKER_BATCH], done[ACKER_BATCH];
    char err[512] = "idempotency store unreachable";
    size_t n;
    while ((n = collect_keys(list, needs_complete, jobs, keys, runs)) > 0) {
        struct idem_store *s = acker_store(a);
        int rc =
            s != NULL ? complete_batch(a, s, jobs, keys, runs, n, done, err, sizeof(err)) : -1;
        if (rc != 0) {
            metrics_count(MET_PG_ERRORS, "complete", NULL, NULL, 1);
            for (size_t i = 0; i < n; i++) {
                /* sent: it may have committed, its answer lost (a connection
                 * ended after the commit can answer with an error too) */
                jobs[i]->complete_unsure |= s != NULL;
                jobs[i]->outbox_unsure |= rc == -2; /* its COMMIT went out */
                if (a->last_call) {
                    stop_unwritten(a, jobs[i], err);
                } else {
                    defer_completion(a, jobs[i], s, "completing the key", err);
                }
            }
            continue;
        }
        size_t nm = 0;
        for (size_t i = 0; i < n; i++) {
            if (done[i]) {
                shared_int_set(&jobs[i]->claimed, 0);
                jobs[i]->key_completed = 1;
            } else {
                missed[nm++] = jobs[i];
            }
        }
        if (nm > 0) {
            settle_missed(a, s, missed, nm);
        }
    }
}

/* 3. Release keys. A failure only delays the key: its lease runs out. */
static void
release_keys(struct acker *a, struct twice_job *list)
{
    struct twice_job *jobs[ACKER_BATCH];
    const char *keys[ACKER_BATCH];
    int runs[ACKER_BATCH];
    char err[512] = "idempotency store unreachable";
    size_t n;
    while ((n = collect_keys(list, needs_release, jobs, keys, runs)) > 0) {
        struct idem_store *s = acker_store(a);
        if (s == NULL || idem_release_batch(s, keys, runs, n, NULL, err, sizeof(err)) != 0) {
            metrics_count(MET_PG_ERRORS, "release", NULL, NULL, 1);
            time_t now = time(NULL);
            if (now - a->release_logged >= ACKER_REPORT_EVERY) {
                log_warn("releasing %zu key%s failed (they stay claimed until their leases "
                         "end): %s",
                         n, plural_s(n), err);
                a->release_logged = now;
            }
        }
        for (size_t i = 0; i < n; i++) {
            shared_int_set(&jobs[i]->claimed, 0);
        }
    }
}

/* While the store's new connection is still being made and no outage is
 * said yet (acker_store_failed's quiet window), the jobs whose next step
 * needs the store wait for it in a later pass, with no try counted and no
 * failure reported: a server slow to take a connection is not failing. The
 * last call settles what it can at once. */
static void
wait_for_connect(struct acker *a, struct twice_job *list)
{
    int needs = 0;
    for (const struct twice_job *j = list; j != NULL && !needs; j = j->next) {
        needs = needs_complete(j) || needs_release(j);
    }
    if (!needs || a->last_call || acker_store(a) != NULL || a->down_said) {
        return;
    }
    for (struct twice_job *j = list; j != NULL; j = j->next) {
        if (needs_complete(j) || needs_release(j)) {
            j->deferred = 1;
            now_mono(&j->not_before);
        }
    }
}

/* What step 4 does with a job's message: delete it (-1), set its
 * visibility (>= 0), or nothing (-2). */
static int
visibility_for(const struct twice_job *j)
{
    if (j->deferred || j->given_up) {
        return -2;
    }
    switch (j->action) {
    case JOB_ACT_COMPLETE:
        return j->key_completed || !shared_int_get(&j->claimed) ? -1 : -2;
    case JOB_ACT_DELETE:
        return -1;
    case JOB_ACT_DEADLETTER:
        return j->dlq_sent ? -1 : -2;
    case JOB_ACT_RETRY:
    case JOB_ACT_HIDE:
    case JOB_ACT_RETURN:
        return j->delay > 0 ? j->delay : 0;
    default:
        return -2;
    }
}

/* One SQS batch call for up to SQS_BATCH_MAX jobs of one queue. */
static void
sqs_batch(struct acker *a, struct twice_job **jobs, size_t n, int del)
{
    struct sqs_batch_entry e[SQS_BATCH_MAX];
    struct sqs_batch_result r[SQS_BATCH_MAX];
    const char *action = del ? "DeleteMessageBatch" : "ChangeMessageVisibilityBatch";
    for (size_t i = 0; i < n; i++) {
        e[i].id = sqs_batch_id(i);
        e[i].receipt_handle = jobs[i]->msg.receipt_handle;
        e[i].visibility_timeout = del ? 0 : visibility_for(jobs[i]);
    }
    struct sqs_error err;
    const char *url = jobs[0]->queue->cfg->url;
    struct timespec now;
    acker_keep_hidden(a, &now);
    int rc = del ? sqs_delete_batch(a->sqs, url, e, n, r, &err)
                 : sqs_change_visibility_batch(a->sqs, url, e, n, r, &err);
    metrics_count(MET_SQS_REQUESTS, action, rc == 0 ? "ok" : "error", NULL, 1);
    char desc[768] = "";
    if (rc != 0) {
        sqs_error_describe(&err, action, desc, sizeof(desc));
        metrics_count(MET_SQS_ERRORS, action, err.code, NULL, 1);
    }
    for (size_t i = 0; i < n; i++) {
        struct twice_job *j = jobs[i];
        struct log_job ctx;
        job_log_ctx(j, &ctx);
        if (rc != 0 && try_again(&err)) {
            defer(a, j, action, desc);
        } else if (rc != 0) {
            log_job(TWICE_LOG_ERROR, &ctx, "queue %s: %s", qname(j), desc);
        } else if (!r[i].ok && !r[i].sender_fault) {
            defer(a, j, action, r[i].message);
        } else if (r[i].ok) {
            j->msg_deleted = del; /* its payload in S3 may go now (payloads.c) */
        } else {
            /* A stale receipt handle: the message was received again and
             * will meet its key's state then. Nothing is lost. */
            log_job(TWICE_LOG_WARN, &ctx, "%s: %s: %s", action, r[i].code, r[i].message);
        }
    }
}

/* 4. Deletes, then visibility changes, by queue, a batch per call. */
static void
sqs_acks(struct acker *a, struct twice_job *list)
{
    for (int del = 1; del >= 0; del--) {
        for (size_t qi = 0; qi < a->w->nqueues; qi++) {
            struct wqueue *q = &a->w->queues[qi];
            struct twice_job *batch[SQS_BATCH_MAX];
            size_t n = 0;
            for (struct twice_job *j = list; j != NULL; j = j->next) {
                int vis = visibility_for(j);
                if (j->queue != q || vis == -2 || (del ? vis != -1 : vis < 0)) {
                    continue;
                }
                batch[n++] = j;
                if (n == SQS_BATCH_MAX) {
                    sqs_batch(a, batch, n, del);
                    n = 0;
                }
            }
            if (n > 0) {
                sqs_batch(a, batch, n, del);
            }
        }
    }
}

/* Jobs that carried the same key in the same batch follow the fate of the
 * one that ran (lifecycle.c): deleted as duplicates once its key is
 * completed, else hidden like it (a retry) or given back (anything else). */
static void
settle_dups(struct acker *a, struct twice_job *j)
{
    struct twice_job *d = j->dups;
    if (d == NULL) {
        return;
    }
    j->dups = NULL;
    struct lifecycle_leader leader = {
        .key_completed = j->key_completed || j->done_unrecorded, /* its effect happened */
        .action = j->given_up ? JOB_ACT_NONE : j->action,
        .delay = j->delay,
        .message_id = j->msg.message_id,
    };
    struct lifecycle_verdict v;
    lifecycle_on_leader(&leader, &v);
    pthread_mutex_lock(&a->mu);
    while (d != NULL) {
        struct twice_job *next = d->dups;
        d->dups = NULL;
        d->leader = NULL;
        verdict_apply(d, &v);
        push_pending_locked(a, d);
        d = next;
    }
    pthread_mutex_unlock(&a->mu);
}

/* Count j's one fate. A transactional job the drain deadline gave back
 * (heartbeat.c) whose transaction then committed is done, not given back:
 * said once, so that the deadline's "gave back N" is not the last word on it. */
static void
count_finished(const struct twice_job *j)
{
    if (j->given_back && j->key_completed && j->plugin != NULL && j->plugin->transactional) {
        struct log_job ctx;
        job_log_ctx(j, &ctx);
        log_job(TWICE_LOG_WARN, &ctx,
                "done after all: its transaction committed after the drain deadline gave it "
                "back (its message, should it come back, is a duplicate of its completed key)");
    }
    if (j->key_completed || j->done_unrecorded) {
        if (log_enabled(TWICE_LOG_DEBUG)) {
            struct log_job ctx;
            struct timespec now;
            job_log_ctx(j, &ctx);
            clock_gettime(CLOCK_MONOTONIC, &now);
            log_job(TWICE_LOG_DEBUG, &ctx, "done (%.3fs after it was received)",
                    job_elapsed(&j->received_at, &now));
        }
        metrics_count(MET_FINISHED, qname(j), pname(j), "done", 1);
    } else if (j->action == JOB_ACT_RETRY) {
        metrics_count(MET_FINISHED, qname(j), pname(j), "retry", 1);
    }
}

/* The heartbeat's way to act on a run past its time limit (timeout.h): carry
 * out v on the message of j, whose handler still runs and still owns j: dead
 * letter, key release and visibility now, on a copy of j, so that nothing the
 * plugin may still touch is written. A failed step is not retried: the message
 * then comes back after its visibility timeout, the key after its lease. */
static void
act_overrun(void *arg, struct twice_job *j, const struct lifecycle_verdict *v)
{
    struct acker *a = arg;
    /* Only what was fixed before the run began: the handler's thread may be
     * writing the rest. The copy borrows j's message and key, owns its error. */
    struct twice_job copy;
    memset(&copy, 0, sizeof(copy));
    copy.queue = j->queue;
    copy.qcfg = j->qcfg;
    copy.msg = j->msg;
    copy.plugin = j->plugin;
    copy.key = j->key;
    copy.receives = j->receives;
    copy.attempt = j->attempt;
    copy.retry_after = -1;
    copy.shm_idx = -1;
    shared_int_set(&copy.claimed, shared_int_get(&j->claimed));
    verdict_apply(&copy, v);
    send_dead_letters(a, &copy); /* a failed step defers the copy: the later ones skip it */
    release_keys(a, &copy);
    sqs_acks(a, &copy);
    if (copy.deferred || copy.given_up) {
        job_log(TWICE_LOG_WARN, j,
                "acting on the timeout failed: the message comes back after its visibility "
                "timeout");
    } else {
        count_finished(&copy);
    }
    shared_int_set(&j->claimed, shared_int_get(&copy.claimed));
    free(copy.error);
}

/* Run the steps over a list; deferred jobs go to a->later, the rest are
 * finished and freed. */
static void
pass(struct acker *a, struct twice_job *list)
{
    send_dead_letters(a, list);
    wait_for_connect(a, list);
    complete_keys(a, list);
    release_keys(a, list);
    sqs_acks(a, list);
    payloads_delete(a->w, &a->s3, list);

    struct twice_job *next;
    struct slot_release freed = {.used = 0};
    for (struct twice_job *j = list; j != NULL; j = next) {
        next = j->next;
        if (j->deferred) {
            j->deferred = 0;
            j->held = 1;
            j->next = a->later;
            a->later = j;
            continue;
        }
        count_finished(j);
        settle_dups(a, j);
        registry_remove(&a->reg, j);
        finish(j, &freed);
    }
    release_flush(&freed);
}

/* Deferred jobs whose time has come (or that the last call settles). */
static struct twice_job *
due_later(struct acker *a, struct twice_job *list, const struct timespec *now)
{
    struct twice_job **pp = &a->later;
    while (*pp != NULL) {
        struct twice_job *j = *pp;
        if (flag_is_up(&a->w->abandon) || job_elapsed(&j->not_before, now) >= 0 ||
            (a->last_call && unwritten(j))) {
            *pp = j->next;
            j->held = 0;
            j->next = list;
            list = j;
        } else {
            pp = &j->next;
        }
    }
    return list;
}

/* Wait for work (or a heartbeat tick), then take everything pending.
 * Called and returns with a->mu held. */
static struct twice_job *
take_pending(struct acker *a)
{
    if (a->pending == NULL && !a->abandon && (!a->stop || a->later != NULL)) {
        struct timespec until = clock_after_ms(CLOCK_REALTIME, 250);
        pthread_cond_timedwait(&a->cv, &a->mu, &until);
    }
    if (a->pending != NULL && a->npending < SQS_BATCH_MAX && !a->stop) {
        pthread_mutex_unlock(&a->mu);
        struct timespec gather = {0, ACKER_GATHER_NS};
        nanosleep(&gather, NULL);
        pthread_mutex_lock(&a->mu);
    }
    struct twice_job *list = a->pending;
    a->pending = NULL;
    a->npending = 0;
    return list;
}

static void *
acker_main(void *arg)
{
    struct acker *a = arg;
    pthread_mutex_lock(&a->mu);
    for (;;) {
        struct twice_job *list = take_pending(a);
        int stopping = a->stop;
        int abandon = a->abandon;
        a->abandon = 0;
        a->deadline = a->has_deadline;
        struct timespec last_call_at = a->last_call_at;
        pthread_mutex_unlock(&a->mu);

        struct timespec now;
        now_mono(&now);
        a->stopping = stopping;
        a->last_call = stopping && (flag_is_up(&a->w->abandon) ||
                                    (a->deadline && job_elapsed(&last_call_at, &now) >= 0));
        if (a->store_down) {
            acker_store(a); /* the reconnect goes on, whether or not a step needs it now */
        }
        list = due_later(a, list, &now);
        if (list != NULL) {
            pass(a, list);
        }
        if (abandon) {
            heartbeat_give_back(&a->hb);
        }
        if (job_elapsed(&a->hb.last_look, &now) >= a->hb.interval) {
            heartbeat_run(&a->hb, &now);
        }
        pthread_mutex_lock(&a->mu);
        if (stopping && a->pending == NULL &&
            (a->later == NULL || flag_is_up(&a->w->abandon) || flag_is_up(&a->cut))) {
            break;
        }
    }
    pthread_mutex_unlock(&a->mu);
    if (a->later != NULL && flag_is_up(&a->cut)) {
        log_warn("stopping: acknowledgements still failing; their messages come back after "
                 "their visibility timeouts (completed keys make them duplicates)");
    }
    /* What could not be acknowledged comes back after its visibility timeout. */
    struct twice_job *next;
    struct slot_release freed = {.used = 0};
    for (struct twice_job *j = a->later; j != NULL; j = next) {
        next = j->next;
        finish(j, &freed);
    }
    release_flush(&freed);
    a->later = NULL;
    pthread_mutex_lock(&a->mu);
    a->exited = 1;
    pthread_cond_broadcast(&a->exited_cv);
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

struct acker *
acker_start(struct worker *w, char *err, size_t errlen)
{
    struct acker *a = calloc(1, sizeof(*a));
    if (a == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    a->w = w;
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    pthread_condattr_t mono;
    pthread_condattr_init(&mono);
    pthread_condattr_setclock(&mono, CLOCK_MONOTONIC);
    pthread_cond_init(&a->exited_cv, &mono);
    pthread_condattr_destroy(&mono);
    registry_init(&a->reg);
    a->sqs = sqs_client_new(w->endpoint, w->creds);
    if (a->sqs == NULL) {
        snprintf(err, errlen, "acknowledger: cannot create an SQS client");
        goto fail;
    }
    sqs_client_set_cancel(a->sqs, &a->cut);
    /* a call that hangs must not hold up the heartbeat past the leases */
    sqs_client_set_timeout(a->sqs, heartbeat_call_budget_ms(w));
    a->hb = (struct heartbeat){
        .w = w,
        .reg = &a->reg,
        .sqs = a->sqs,
        .store = heartbeat_store,
        .store_arg = a,
        .act_overrun = act_overrun,
        .interval = heartbeat_interval(w),
    };
    now_mono(&a->hb.last_look);
    if (w->ready_store != NULL) { /* the readiness check's connection (ready.c) */
        a->store = w->ready_store;
        w->ready_store = NULL;
        idem_set_wait(a->store, ACKER_ANSWER_MS, ACKER_TICK_MS, acker_wait_tick, a);
    }
    acker_store(a); /* a failure is logged and retried on use */
    int rc = pthread_create(&a->thread, NULL, acker_main, a);
    if (rc != 0) {
        snprintf(err, errlen, "acknowledger: pthread_create: %s", cnum_strerror(rc));
        goto fail;
    }
    return a;
fail:
    sqs_client_free(a->sqs);
    idem_close(a->store);
    registry_destroy(&a->reg);
    pthread_cond_destroy(&a->exited_cv);
    pthread_cond_destroy(&a->cv);
    pthread_mutex_destroy(&a->mu);
    free(a);
    return NULL;
}

void
acker_stop(struct acker *a, const struct timespec *deadline)
{
    if (a == NULL) {
        return;
    }
    pthread_mutex_lock(&a->mu);
    a->stop = 1;
    if (deadline != NULL) {
        a->last_call_at = *deadline;
        a->last_call_at.tv_sec -= ACKER_LAST_CALL;
        a->has_deadline = 1;
    }
    pthread_cond_signal(&a->cv);
    /* Until the thread leaves its loop or the deadline passes, whichever comes
     * first: a stop ends as soon as the acknowledgements are done. */
    int rc = 0;
    while (!a->exited && deadline != NULL && rc == 0) { /* ETIMEDOUT: the deadline */
        rc = pthread_cond_timedwait(&a->exited_cv, &a->mu, deadline);
    }
    int exited = a->exited;
    pthread_mutex_unlock(&a->mu);
    if (!exited && deadline != NULL) {
        flag_raise(&a->cut); /* ends a hung SQS call within about a second */
    }
    pthread_join(a->thread, NULL);
    if (flag_is_up(&a->w->abandon)) {
        return; /* handler threads may still submit: the process exits now */
    }
    sqs_client_free(a->sqs);
    s3_client_free(a->s3);
    idem_close(a->store);
    registry_destroy(&a->reg);
    pthread_cond_destroy(&a->exited_cv);
    pthread_cond_destroy(&a->cv);
    pthread_mutex_destroy(&a->mu);
    free(a);
}
