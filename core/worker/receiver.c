/*
 * receiver.c - one queue's receive loop in a worker: receive only what the
 * handlers have room for, prepare each message (route, key, payload hash),
 * claim the whole batch in one round trip, and send each job where its
 * claim says: to a handler, or straight to the acker (duplicates, dead
 * letters, keys held elsewhere). It never receives while the idempotency
 * store is unreachable or refuses claims: a message that cannot be claimed
 * is not taken.
 */
#include "receiver.h"

#include "acker.h"
#include "backoff.h"
#include "breaker.h"
#include "buf.h"
#include "clock.h"
#include "cnum.h"
#include "config.h"
#include "digest.h"
#include "hash.h"
#include "hostapi.h"
#include "keying.h"
#include "idem.h"
#include "instance.h"
#include "job.h"
#include "jsonpath.h"
#include "lifecycle.h"
#include "log.h"
#include "plural.h"
#include "jobspan.h"
#include "metrics.h"
#include "msgage.h"
#include "payloads.h"
#include "s3.h"
#include "sqs.h"
#include "sqs_limits.h"
#include "verdict.h"
#include "worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How often a paused queue's receiver looks at its pause again, ms. */
#define PAUSED_NAP_MS 500

/* How long a receiver waits after a short poll (wait_time = 0) that got
 * nothing, ms: SQS answers those at once and bills each one, so an empty
 * queue would otherwise be asked as fast as the network allows. */
#define EMPTY_SHORT_POLL_NAP_MS 1000

/* The most messages one claim gathers (receives_per_claim full batches). */
#define GATHER_MAX (RECEIVES_PER_CLAIM_MAX * SQS_RECEIVE_MAX)

/* How long a claim in flight when the drain begins may still wait for its
 * answer (ms): what a working server answers in time. */
#define RECEIVER_DRAIN_GRACE_MS 1000

/* The receive thread's own state. */
struct receiver {
    struct wqueue *q;
    struct sqs_client *sqs;
    struct s3_client *s3; /* payloads in S3; NULL when it could not be made */
    struct idem_store *store;
    int recv_failures;    /* consecutive failed receives */
    char recv_error[128]; /* the code of the last failure: a new one is logged */
    time_t recv_failing_since;
    int store_failures;      /* consecutive failed connections or claim checks */
    int refused;             /* the store refused a claim and its claim check while
                                connected: store_ok connects again and checks before the
                                next receive */
    char said[8];            /* what store_ok said keeps it from receiving: "" nothing,
                                "-" unreachable, else the refusal's SQLSTATE */
    struct buf key;          /* keys are expanded here (room for the longest, reserved once) */
    long long drain_seen_ms; /* when its store's tick first saw the drain (0: not yet) */
};

/* The queue is healthy (for /readyz): its last receive succeeded and it
 * is receiving, or only waiting for handler slots. */
static void
mark_healthy(struct receiver *r)
{
    if (r->recv_failures == 0) {
        metrics_gauge_set(MET_LAST_RECEIVE, r->q->cfg->name, NULL, (double) time(NULL));
    }
}

/* Reserve up to batch_size free handler slots, waiting for one when block
 * is set. Returns 0 when draining, or when none is free and !block. */
static int
reserve_slots(struct receiver *r, int block)
{
    struct wqueue *q = r->q;
    int n = 0;
    pthread_mutex_lock(&q->mu);
    while (block && !flag_is_up(&q->w->draining) && q->inflight >= q->cfg->max_inflight) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 1;
        pthread_cond_timedwait(&q->space_cv, &q->mu, &until);
        pthread_mutex_unlock(&q->mu);
        mark_healthy(r); /* busy is not broken */
        pthread_mutex_lock(&q->mu);
    }
    if (!flag_is_up(&q->w->draining) && q->inflight < q->cfg->max_inflight) {
        n = q->cfg->max_inflight - q->inflight;
        if (n > q->cfg->batch_size) {
            n = q->cfg->batch_size;
        }
        q->inflight += n;
        if (q->inflight < q->cfg->max_inflight) {
            pthread_cond_signal(&q->space_cv); /* room for another receiver */
        }
    }
    pthread_mutex_unlock(&q->mu);
    return n;
}

/* Sleep up to ms, waking early when the worker starts draining. */
static void
nap(struct worker *w, uint64_t ms)
{
    while (ms > 0 && !flag_is_up(&w->draining)) {
        uint64_t step = ms < 100 ? ms : 100;
        struct timespec ts = {0, (long) step * 1000000L};
        nanosleep(&ts, NULL);
        ms -= step;
    }
}

/* The receiver's S3 client (keying_shape asks only for a pointer). */
static struct s3_client *
receiver_s3(void *arg)
{
    return ((struct receiver *) arg)->s3;
}

/* Unwrap, fetch, route, derive the key, hash the payload. On failure the
 * job's verdict is a dead letter with the reason, or (S3 failing for now)
 * giving it back. */
static void
prepare(struct receiver *r, struct twice_job *j)
{
    struct wqueue *q = r->q;
    if (keying_check_size(j, q->w->cfg->max_message_bytes) != 0) {
        return;
    }
    int shaped = keying_shape(j, receiver_s3, r, q->w->cfg->max_payload_bytes);
    if (shaped == KEYING_LATER) {
        struct lifecycle_verdict v;
        lifecycle_on_payload_failed(&q->policy, j->receives, j->error, &v);
        verdict_apply(j, &v);
    }
    if (shaped != KEYING_SHAPED) {
        return;
    }
    int route = keying_route(j);
    if (route == KEYING_NO_ROUTE) {
        return;
    }
    j->plugin = route == KEYING_QUEUE_PLUGIN ? q->plugin : q->route_plugins[route];
    buf_reset(&r->key);
    if (hostapi_derive_key(j->plugin, q->key, j, &r->key) == 0) {
        /* the job keeps the key's own length, not the expansion's room */
        j->key = r->key.failed ? NULL : strndup(buf_str(&r->key), r->key.len);
        if (j->key == NULL) {
            job_deadletter(j, "bad-key-field", "out of memory deriving the key");
        }
    }
    size_t len;
    const char *body = job_view(j, &len);
    digest_sha256(body, len, j->sha256); /* the job's, not its wrapper's */
}

/* Decide a leader from the store's answer (lifecycle.c). Runnable jobs keep
 * action NONE; claimed ones hold the key, even when dead-lettered, so that
 * the acker releases it. */
static void
on_claim(struct wqueue *q, struct twice_job *j, const struct idem_claim *c)
{
    struct lifecycle_claim in = {
        .state = c->state,
        .attempts = c->attempts,
        .receives = j->receives,
        .lease_left = c->lease_left,
        .key = j->key,
        .sha256 = j->sha256,
        .stored_sha256 = c->has_stored_sha256 ? c->stored_sha256 : NULL,
        .stored_message_id = c->stored_message_id,
    };
    struct lifecycle_verdict v;
    shared_int_set(&j->claimed, c->state != IDEM_COMPLETED && c->state != IDEM_BUSY); /* ours */
    lifecycle_on_claim(&q->policy, &in, &v);
    verdict_apply(j, &v);
}

/* Open addressing over a batch's keys: twice as many slots as keys, so a
 * probe is short; slot values are leader index + 1 (0: empty). */
#define DUPS_SLOTS 256
_Static_assert(DUPS_SLOTS >= 2 * GATHER_MAX, "DUPS_SLOTS must be at least twice GATHER_MAX");
_Static_assert(GATHER_MAX < 256, "a slot holds a leader index + 1 in a byte");

/* Jobs with the same key as an earlier job of the batch wait on it
 * (j->dups); they leave the handler slots at once. Returns the leaders. */
static size_t
split_dups(struct wqueue *q, struct twice_job **jobs, size_t n, struct twice_job **leaders)
{
    unsigned char slots[DUPS_SLOTS] = {0};
    size_t nl = 0;
    for (size_t i = 0; i < n; i++) {
        struct twice_job *j = jobs[i];
        if (j->action != JOB_ACT_NONE) {
            continue;
        }
        size_t s = (size_t) (hash_fnv1a(HASH_FNV1A_INIT, j->key) & (DUPS_SLOTS - 1));
        while (slots[s] != 0 && strcmp(leaders[slots[s] - 1]->key, j->key) != 0) {
            s = (s + 1) & (DUPS_SLOTS - 1);
        }
        if (slots[s] == 0) {
            leaders[nl++] = j;
            slots[s] = (unsigned char) nl;
            continue;
        }
        struct twice_job *leader = leaders[slots[s] - 1];
        j->action = JOB_ACT_HIDE; /* until the leader's fate settles it */
        j->leader = leader;
        j->dups = leader->dups;
        leader->dups = j;
        j->holds_slot = 0; /* it rides with its leader */
        wqueue_release_slot(q, 1);
    }
    return nl;
}

/* Whether a failed claim was the store's fault rather than its batch's: the
 * store unreachable (store_ok connects again), or refusing claims while
 * connected, as a claim check of a key no message has says (a revoked grant,
 * a server or role that takes no writes, a statement_timeout or lock_timeout,
 * a full disk: r->refused, and store_ok waits until a check passes). A check
 * that passes leaves the batch at fault: a message whose own data the claim
 * cannot take (a key the database's encoding cannot hold). Only after a
 * failed claim: the hot path asks nothing more. */
static int
claim_store_fault(struct receiver *r)
{
    char err[512];
    if (!idem_unreachable(r->store) && idem_claim_check(r->store, err, sizeof(err)) == 0) {
        return 0;
    }
    r->refused = idem_connected(r->store);
    return 1;
}

/* j's own claim failed while the store takes claims (its check passed):
 * its data is at fault, so it is given back for the RETRY backoff, not to
 * come straight back (or dead-lettered past max_receives: lifecycle.c). */
static void
own_claim_failed(struct receiver *r, struct twice_job *j, const char *err)
{
    struct lifecycle_verdict v;
    lifecycle_on_claim_failed(&r->q->policy, j->receives, backoff_random(), err, &v);
    if (v.action == JOB_ACT_RETURN) {
        job_log(TWICE_LOG_ERROR, j, "its claim failed alone, giving it back for %d s: %s", v.delay,
                err);
    } else {
        job_log(TWICE_LOG_ERROR, j, "its claim failed alone: %s", err);
    }
    verdict_apply(j, &v);
}

/* The batch's claim failed while the store takes claims (its check passed):
 * claim each key alone, so that only a message whose own claim fails is
 * given back (own_claim_failed), not the good ones received with it. One
 * round trip per key, on this path only. */
static void
claim_singly(struct receiver *r, struct twice_job **leaders, struct idem_claim *claims, size_t nl)
{
    for (size_t i = 0; i < nl; i++) {
        char err[512];
        if (idem_claim_batch(r->store, &claims[i], 1, err, sizeof(err)) == 0) {
            on_claim(r->q, leaders[i], &claims[i]);
            continue;
        }
        metrics_count(MET_PG_ERRORS, "claim", NULL, NULL, 1);
        if (!idem_unreachable(r->store)) {
            own_claim_failed(r, leaders[i], err);
            continue;
        }
        job_log(TWICE_LOG_ERROR, leaders[i], "its claim failed alone, giving it back: %s", err);
        struct lifecycle_verdict v;
        lifecycle_on_failure(LIFECYCLE_CLAIM_STORE, 0, err, &v);
        verdict_apply(leaders[i], &v);
    }
}

/* One round trip for the batch's keys. A failure gives every job back (the
 * store at fault: claim_store_fault), or claims each alone (claim_singly). */
static void
claim(struct receiver *r, struct twice_job **jobs, size_t n)
{
    struct wqueue *q = r->q;
    struct twice_job *leaders[GATHER_MAX];
    struct idem_claim claims[GATHER_MAX];
    size_t nl = split_dups(q, jobs, n, leaders);
    if (nl == 0) {
        return;
    }
    int lease = q->cfg->visibility_timeout + q->w->cfg->idempotency.lease_margin;
    memset(claims, 0, nl * sizeof(claims[0]));
    for (size_t i = 0; i < nl; i++) {
        claims[i].key = leaders[i]->key;
        claims[i].sha256 = leaders[i]->sha256;
        claims[i].message_id = leaders[i]->msg.message_id;
        claims[i].lease_seconds = lease;
    }
    char err[512];
    if (idem_claim_batch(r->store, claims, nl, err, sizeof(err)) != 0) {
        metrics_count(MET_PG_ERRORS, "claim", NULL, NULL, 1);
        if (!claim_store_fault(r)) {
            if (nl == 1) {
                own_claim_failed(r, leaders[0], err);
                return;
            }
            log_warn("queue %s: claiming %zu keys failed though the store takes claims (its "
                     "claim check passed), claiming each alone: %s",
                     q->cfg->name, nl, err);
            claim_singly(r, leaders, claims, nl);
            return;
        }
        log_error("queue %s: claiming %zu key%s failed, giving the messages back: %s",
                  q->cfg->name, nl, plural_s(nl), err);
        for (size_t i = 0; i < nl; i++) {
            struct lifecycle_verdict v;
            lifecycle_on_failure(LIFECYCLE_CLAIM_STORE, 0, err, &v);
            verdict_apply(leaders[i], &v);
        }
        return;
    }
    for (size_t i = 0; i < nl; i++) {
        on_claim(q, leaders[i], &claims[i]);
    }
}

/* FIFO: jobs of one group run one at a time, in order, as a chain; once a
 * job of a group cannot run now, the rest of that group is held back. */
static void
dispatch_fifo(struct wqueue *q, struct twice_job **jobs, size_t n)
{
    struct twice_job *heads[GATHER_MAX], *tails[GATHER_MAX];
    const char *groups[GATHER_MAX];
    int blocked[GATHER_MAX];
    size_t ng = 0;
    for (size_t i = 0; i < n; i++) {
        struct twice_job *j = jobs[i];
        const char *g = j->msg.group_id != NULL ? j->msg.group_id : "";
        size_t k = 0;
        while (k < ng && strcmp(groups[k], g) != 0) {
            k++;
        }
        if (k == ng) {
            groups[ng] = g, heads[ng] = tails[ng] = NULL, blocked[ng] = 0, ng++;
        }
        if (blocked[k] && j->action == JOB_ACT_NONE) {
            struct lifecycle_verdict v;
            lifecycle_on_failure(LIFECYCLE_GROUP_BLOCKED, 0, NULL, &v);
            verdict_apply(j, &v);
        }
        if (j->action == JOB_ACT_NONE) {
            acker_track(q->w->acker, j);
            if (heads[k] == NULL) {
                heads[k] = j;
            } else {
                tails[k]->group_next = j;
            }
            tails[k] = j;
        } else {
            blocked[k] |= j->action == JOB_ACT_HIDE || j->action == JOB_ACT_RETURN;
            acker_submit(q->w->acker, j);
        }
    }
    for (size_t k = 0; k < ng; k++) {
        if (heads[k] != NULL) {
            wqueue_push(q, heads[k]);
        }
    }
}

/* Hand each job on: runnable ones to the handlers, the rest to the acker. */
static void
dispatch(struct wqueue *q, struct twice_job **jobs, size_t n)
{
    if (q->cfg->fifo) {
        dispatch_fifo(q, jobs, n);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        struct twice_job *j = jobs[i];
        if (j->action == JOB_ACT_NONE) {
            acker_track(q->w->acker, j);
            wqueue_push(q, j);
        } else {
            acker_submit(q->w->acker, j);
        }
    }
}

/* The queue was paused while its batch was being received: every job goes
 * back unclaimed (lifecycle.c), nothing runs. */
static void
give_back_paused(struct twice_job **jobs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct lifecycle_verdict v;
        lifecycle_on_failure(LIFECYCLE_PAUSED, 0, NULL, &v);
        verdict_apply(jobs[i], &v);
    }
}

/* The breaker's probe (probe nonzero: a batch of one) is the job that is to
 * run; 1 when there is one. */
static int
mark_probe(struct twice_job **jobs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (jobs[i]->action == JOB_ACT_NONE) {
            jobs[i]->probe = 1;
            job_log(TWICE_LOG_INFO, jobs[i], "running as the circuit breaker's probe");
            return 1;
        }
    }
    return 0;
}

/* Make jobs of one receive's messages (taking what they own) and prepare
 * each, appending to jobs[*nj]. */
static void
make_jobs(struct receiver *r, struct sqs_message *msgs, size_t n, struct twice_job **jobs,
          size_t *nj)
{
    struct wqueue *q = r->q;
    msgage_observe(q->cfg->name, msgs, n);
    for (size_t i = 0; i < n; i++) {
        struct twice_job *j = job_new(q, q->cfg, &msgs[i]);
        if (j == NULL) {
            /* Without memory we cannot even describe it; it comes back. */
            log_error("queue %s: out of memory for a received message", q->cfg->name);
            sqs_message_clear(&msgs[i]);
            wqueue_release_slot(q, 1);
            continue;
        }
        j->holds_slot = 1;
        jobspan_begin(j);
        j->cfg = q->w->cfg;
        prepare(r, j);
        jobs[(*nj)++] = j;
    }
    metrics_count(MET_RECEIVED, q->cfg->name, NULL, NULL, n);
}

/* Claim the gathered jobs in one statement and hand them on. *probe: in,
 * the batch is the breaker's probe; out, a probe job runs. */
static void
process_jobs(struct receiver *r, struct twice_job **jobs, size_t nj, int *probe)
{
    struct wqueue *q = r->q;
    if (!*probe && breaker_paused(q)) {
        give_back_paused(jobs, nj);
    } else {
        claim(r, jobs, nj);
    }
    /* Dups travel with their leader from here on. */
    size_t keep = 0;
    for (size_t i = 0; i < nj; i++) {
        if (jobs[i]->leader == NULL) {
            jobs[keep++] = jobs[i];
        }
    }
    *probe = *probe && mark_probe(jobs, keep);
    dispatch(q, jobs, keep);
}

/* The tick of the receiver's store (idem_set_wait): a claim, or a connect,
 * still unanswered RECEIVER_DRAIN_GRACE_MS after the drain began is given up
 * (the claim as one whose answer was lost: its messages are given back, and
 * keys it may have claimed are freed by the master once the worker is gone),
 * so that a server that takes the connection and says nothing does not hold
 * the drain, which joins the receivers. */
static int
receiver_wait_tick(void *arg)
{
    struct receiver *r = arg;
    if (!flag_is_up(&r->q->w->draining)) {
        return 0;
    }
    long long now = clock_mono_ms();
    if (r->drain_seen_ms == 0) {
        r->drain_seen_ms = now;
    }
    return now - r->drain_seen_ms >= RECEIVER_DRAIN_GRACE_MS;
}

/* Say once what keeps the receiver from receiving (err: why), and again
 * only when that changes: the store unreachable, or refusing claims with
 * another SQLSTATE. */
static void
store_say(struct receiver *r, const char *err)
{
    const char *state = r->refused ? idem_failed_state(r->store) : "-";
    if (strcmp(state, r->said) == 0) {
        return;
    }
    if (r->refused) {
        log_error("queue %s: the idempotency store refuses claims (SQLSTATE %s), not receiving "
                  "until one can be written: %s",
                  r->q->cfg->name, state, err);
    } else {
        log_error("queue %s: idempotency store unreachable, not receiving until it is back: "
                  "%s",
                  r->q->cfg->name, err);
    }
    snprintf(r->said, sizeof(r->said), "%s", state);
}

/* Keep the store connected to a server that takes claims; 1 when usable.
 * Each new connection is asked first with a claim check (idem_claim_check),
 * and so is the store after a claim it refused while connected (r->refused):
 * a standby after a failover, default_transaction_read_only, a revoked grant,
 * a statement_timeout or lock_timeout set for the role, a full disk. Until a
 * check passes nothing is received, as while the store is unreachable: every
 * message received meanwhile would only be given back, a receive nearer its
 * max_receives each time. Each try connects again, which reaches the new
 * primary where the dsn can (target_session_attrs, a moved name) and takes
 * up settings changed for the role or database since. What is wrong is said
 * once (store_say), and that it works again once. Its claims wait for
 * PostgreSQL's answer as lifecycle_answer_ms says: one given up is a failed
 * claim (claim), its connection ended and made again here. */
static int
store_ok(struct receiver *r)
{
    struct worker *w = r->q->w;
    char err[512];
    if (r->store != NULL && idem_usable(r->store) && !r->refused) {
        return 1;
    }
    struct idem_wait wait = {.answer_ms = lifecycle_answer_ms(r->q->cfg->visibility_timeout),
                             .tick_ms = 100,
                             .tick = receiver_wait_tick,
                             .arg = r};
    int rc = r->store == NULL
                 ? idem_open_waiting(w->cfg->idempotency.dsn, w->cfg->idempotency.table, w->owner,
                                     &wait, &r->store, err, sizeof(err))
                 : idem_reconnect(r->store, err, sizeof(err));
    if (r->store != NULL) {
        idem_share_lost(r->store, w->lost_claims);
    }
    if (rc == 0 && (rc = idem_claim_check(r->store, err, sizeof(err))) != 0) {
        metrics_count(MET_PG_ERRORS, "claim_check", NULL, NULL, 1);
    }
    r->refused = rc != 0 && idem_connected(r->store);
    if (rc == 0) {
        if (strcmp(r->said, "-") == 0) {
            log_info("queue %s: idempotency store reachable again; receiving", r->q->cfg->name);
        } else if (r->said[0] != '\0') {
            log_info("queue %s: the idempotency store takes claims again; receiving",
                     r->q->cfg->name);
        }
        r->said[0] = '\0';
        r->store_failures = 0;
        return 1;
    }
    if (r->refused) { /* for /readyz: why the queue does not receive */
        metrics_gauge_max(MET_CLAIMS_REFUSED, r->q->cfg->name, idem_failed_state(r->store),
                          (double) time(NULL));
    }
    if (!flag_is_up(&w->draining)) {
        store_say(r, err);
    }
    nap(w, backoff_delay(500, 15000, ++r->store_failures));
    return 0;
}

/* Log a failing endpoint once per state (unreachable, 5xx, throttled...),
 * not once per request, and back off with jitter. */
static void
receive_failed(struct receiver *r, const struct sqs_error *e)
{
    char desc[1024], where[512];
    config_queue_where(r->q->cfg, "url", where, sizeof(where));
    sqs_error_describe_at(e, "ReceiveMessage", where, desc, sizeof(desc));
    metrics_count(MET_SQS_ERRORS, "ReceiveMessage", e->code, NULL, 1);
    metrics_gauge_max(MET_RECEIVE_FAILED, r->q->cfg->name, e->code, (double) time(NULL));
    if (r->recv_failures++ == 0) {
        r->recv_failing_since = time(NULL);
    }
    if (strcmp(r->recv_error, e->code) != 0) {
        log_error("queue %s: %s; backing off", r->q->cfg->name, desc);
        snprintf(r->recv_error, sizeof(r->recv_error), "%s", e->code);
    }
    nap(r->q->w, backoff_delay(1000, 20000, r->recv_failures));
}

/* A receive cut at the drain while its answer was still arriving (a
 * trickle, see sqs_client_set_cancel): the messages SQS put in it stay
 * hidden, and come back once their visibility timeout ends. Said once per
 * receive, as it is the one case where a stop leaves messages hidden. */
static void
receive_cut(struct receiver *r, const struct sqs_error *e)
{
    if (sqs_error_cut_mid_answer(e)) {
        log_warn("queue %s: ReceiveMessage: its answer was still arriving at the stop; the "
                 "messages in it come back after their visibility timeout (%d s)",
                 r->q->cfg->name, r->q->cfg->visibility_timeout);
    }
}

static void
random_attempt_id(char out[33])
{
    static const char hex[] = "0123456789abcdef";
    uint64_t a = backoff_random(), b = backoff_random();
    for (int i = 0; i < 16; i++) {
        out[i] = hex[(a >> (i * 4)) & 0xf];
        out[16 + i] = hex[(b >> (i * 4)) & 0xf];
    }
    out[32] = '\0';
}

/* Reserve handler slots for a receive: up to batch_size, one for the
 * breaker's probe (*probe set), none while the queue is paused or its
 * breaker open (then nap). */
static int
reserve(struct receiver *r, int *probe)
{
    struct wqueue *q = r->q;
    int may = breaker_receivable(q);
    *probe = may == 1;
    if (may == 0) {
        mark_healthy(r); /* paused is not broken */
        nap(q->w, PAUSED_NAP_MS);
        return 0;
    }
    int n = reserve_slots(r, 1);
    if (*probe && n > 1) {
        wqueue_release_slot(q, n - 1);
        n = 1;
    }
    if (*probe && n == 0) {
        breaker_probe_unused(q);
    }
    return n;
}

/* One ReceiveMessage into n reserved slots, long-polling up to wait
 * seconds; the slots it did not fill are released at once. Returns 0 with
 * the messages (the caller frees the array), or -1 with *e. */
static int
receive_call(struct receiver *r, int n, int wait, struct sqs_message **msgs, size_t *got,
             struct sqs_error *e)
{
    struct wqueue *q = r->q;
    char attempt_id[33];
    random_attempt_id(attempt_id);
    struct sqs_receive_opts o = {
        .max_messages = n,
        .wait_time = wait,
        .visibility_timeout = q->cfg->visibility_timeout,
        .attempt_id = q->cfg->fifo ? attempt_id : NULL,
    };
    *msgs = NULL;
    *got = 0;
    int rc = sqs_receive(r->sqs, q->cfg->url, &o, msgs, got, e);
    /* A long poll cut short by a drain or reload is not an error: alerts on the
     * error ratio would fire at every deploy. */
    const char *result = rc == 0                             ? "ok"
                         : strcmp(e->code, "Cancelled") == 0 ? "cancelled"
                                                             : "error";
    metrics_count(MET_SQS_REQUESTS, "ReceiveMessage", result, NULL, 1);
    wqueue_release_slot(q, n - (int) *got);
    return rc;
}

/* receives_per_claim: after a receive that filled every slot it asked for,
 * more messages are likely waiting; ask again without waiting while slots
 * are free, so that one claim covers them all. A failure here only ends the
 * gathering (it is counted); the next long poll meets it and backs off. */
static void
gather_more(struct receiver *r, struct twice_job **jobs, size_t *nj)
{
    struct wqueue *q = r->q;
    for (int k = 1; k < q->cfg->receives_per_claim; k++) {
        int n = reserve_slots(r, 0);
        if (n == 0) {
            return;
        }
        struct sqs_message *msgs;
        size_t got;
        struct sqs_error e;
        if (receive_call(r, n, 0, &msgs, &got, &e) != 0) {
            receive_cut(r, &e);
            return;
        }
        make_jobs(r, msgs, got, jobs, nj);
        free(msgs);
        if (got < (size_t) n) {
            return;
        }
    }
}

static void
receive_once(struct receiver *r)
{
    struct wqueue *q = r->q;
    int probe = 0;
    int n = reserve(r, &probe);
    if (n == 0) {
        return;
    }
    struct sqs_message *msgs;
    size_t got;
    struct sqs_error e;
    int rc = receive_call(r, n, q->cfg->wait_time, &msgs, &got, &e);
    int probe_ran = probe && got > 0;
    if (rc != 0) {
        if (probe) {
            breaker_probe_unused(q);
        }
        if (!flag_is_up(&q->w->draining)) {
            receive_failed(r, &e);
        } else {
            receive_cut(r, &e);
        }
        return;
    }
    if (r->recv_failures > 0) {
        log_info("queue %s: receiving again after %d failed attempts in %lds", q->cfg->name,
                 r->recv_failures, (long) (time(NULL) - r->recv_failing_since));
        r->recv_failures = 0;
        r->recv_error[0] = '\0';
    }
    mark_healthy(r);
    if (got == 0 && q->cfg->wait_time > 0 && !q->cfg->fifo) {
        msgage_empty(q->cfg->name);
    }
    struct twice_job *jobs[GATHER_MAX];
    size_t nj = 0;
    make_jobs(r, msgs, got, jobs, &nj);
    free(msgs);
    if (!probe && !q->cfg->fifo && got == (size_t) n) {
        gather_more(r, jobs, &nj);
    }
    /* A store that failed the claim (claim_store_fault) is store_ok's to wait
     * for, check and log before the next receive. */
    if (nj > 0) {
        process_jobs(r, jobs, nj, &probe_ran);
    }
    if (probe && !probe_ran) {
        breaker_probe_unused(q);
    }
    if (got == 0 && q->cfg->wait_time == 0) {
        nap(q->w, EMPTY_SHORT_POLL_NAP_MS);
    }
}

static void *
receiver_main(void *arg)
{
    struct receiver *r = arg;
    struct worker *w = r->q->w;
    while (!flag_is_up(&w->draining)) {
        if (!store_ok(r)) {
            continue;
        }
        receive_once(r);
    }
    sqs_client_free(r->sqs);
    s3_client_free(r->s3);
    idem_close(r->store);
    buf_free(&r->key);
    free(r);
    return NULL;
}

/* Start one receive thread of q. */
static int
start_one(struct wqueue *q, char *err, size_t errlen)
{
    struct receiver *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        snprintf(err, errlen, "queue %s: out of memory", q->cfg->name);
        return -1;
    }
    r->q = q;
    r->sqs = sqs_client_new(q->w->endpoint, q->w->creds);
    if (r->sqs == NULL) {
        snprintf(err, errlen, "queue %s: cannot create an SQS client", q->cfg->name);
        free(r);
        return -1;
    }
    sqs_client_set_cancel(r->sqs, &q->w->draining);
    r->s3 = payloads_client(q->w);
    int rc = pthread_create(&q->receivers[q->nreceivers], NULL, receiver_main, r);
    if (rc != 0) {
        snprintf(err, errlen, "queue %s: pthread_create: %s", q->cfg->name, cnum_strerror(rc));
        sqs_client_free(r->sqs);
        s3_client_free(r->s3);
        free(r);
        return -1;
    }
    q->nreceivers++;
    return 0;
}

int
receiver_start(struct wqueue *q, char *err, size_t errlen)
{
    size_t n = (size_t) q->cfg->receivers;
    q->receivers = calloc(n, sizeof(*q->receivers));
    if (q->receivers == NULL) {
        snprintf(err, errlen, "queue %s: out of memory", q->cfg->name);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (start_one(q, err, errlen) != 0) {
            return -1;
        }
    }
    return 0;
}

void
receiver_join(struct wqueue *q)
{
    for (size_t i = 0; i < q->nreceivers; i++) {
        pthread_join(q->receivers[i], NULL);
    }
    q->nreceivers = 0;
    free(q->receivers);
    q->receivers = NULL;
}
