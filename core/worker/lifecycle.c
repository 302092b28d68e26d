/*
 * lifecycle.c - the decision table of a message's life (the policy in words is
 * at the top of lifecycle.h). Pure: every input is a parameter, every output
 * goes into the verdict; the callers log, count and act.
 */
#include "lifecycle.h"

#include "backoff.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* What a BUSY duplicate waits past the holder's lease, seconds. */
#define LIFECYCLE_BUSY_MARGIN 2
/* Give-back delays of the failures that are not the job's fault. */
#define LIFECYCLE_STORE_DELAY 5 /* the store failed under a running job */
#define LIFECYCLE_TX_DEADLINE 3 /* a transactional job at the drain deadline (heartbeat.c) */

static void
text_clear(struct lifecycle_text *t)
{
    t->before[0] = '\0';
    t->arg = "";
    t->after[0] = '\0';
}

/* Format into one of a text's bounded parts. */
static void part(char *dst, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
part(char *dst, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, len, fmt, ap);
    va_end(ap);
}

/* A verdict with nothing decided yet: run it (or leave it), say nothing. */
static void
verdict_init(struct lifecycle_verdict *v)
{
    v->action = JOB_ACT_NONE;
    v->delay = 0;
    v->in_place = 0;
    v->reason = NULL;
    text_clear(&v->detail);
    v->has_log = 0;
    v->log_level = TWICE_LOG_INFO;
    text_clear(&v->log);
    v->duplicate = NULL;
    v->conflict = 0;
}

/* The verdict's log line; its parts are then filled by the caller. */
static struct lifecycle_text *
say(struct lifecycle_verdict *v, twice_log_level level)
{
    v->has_log = 1;
    v->log_level = level;
    return &v->log;
}

/* Dead-letter with reason; the detail's parts are then filled by the caller. */
static struct lifecycle_text *
dead_letter(struct lifecycle_verdict *v, const char *reason)
{
    v->action = JOB_ACT_DEADLETTER;
    v->reason = reason;
    return &v->detail;
}

static int
clamp_delay(long long s, int min)
{
    return s < min ? min : s > LIFECYCLE_MAX_DELAY ? LIFECYCLE_MAX_DELAY : (int) s;
}

/* Claimed, or taken over from a holder whose lease expired. A take-over with at
 * most one attempt counted is a bystander of another job's crash (its earlier
 * runs were taken back by idem_expire_owner): its receives do not count. */
static void
on_claimed(const struct lifecycle_queue *q, const struct lifecycle_claim *c,
           struct lifecycle_verdict *v)
{
    int crashed = c->state == IDEM_TAKEN_OVER;
    int spared = crashed && c->attempts <= 1;
    if (c->receives > q->max_attempts && !spared) {
        struct lifecycle_text *d = dead_letter(v, crashed ? "worker-crashed" : "max-attempts");
        part(d->before, sizeof(d->before), "received %d times (max_attempts %d)%s", c->receives,
             q->max_attempts,
             crashed ? "; the last attempt's worker died or hung while running it" : "");
    } else if (spared) {
        say(v, TWICE_LOG_WARN)->arg = "taking over: the previous attempt was cut short when "
                                      "another job crashed its worker (not counted against "
                                      "this one)";
    } else if (crashed) {
        say(v, TWICE_LOG_WARN)->arg = "taking over: the previous attempt's lease expired (its "
                                      "worker died or hung, or could not release the key)";
    }
}

/* A completed key seen again: a duplicate, or a conflict when the stored payload
 * is known and differs. */
static void
on_completed(const struct lifecycle_queue *q, const struct lifecycle_claim *c,
             struct lifecycle_verdict *v)
{
    if (c->stored_sha256 != NULL && memcmp(c->stored_sha256, c->sha256, 32) != 0) {
        v->conflict = 1;
        struct lifecycle_text *l = say(v, TWICE_LOG_WARN);
        part(l->before, sizeof(l->before),
             "payload conflict: key completed by message %s with a different payload; %s",
             c->stored_message_id, q->reject_conflicts ? "rejecting to the DLQ" : "skipping");
        if (q->reject_conflicts) {
            struct lifecycle_text *d = dead_letter(v, "payload-conflict");
            part(d->before, sizeof(d->before), "key ");
            d->arg = c->key;
            part(d->after, sizeof(d->after),
                 " was completed by message %s with a different payload", c->stored_message_id);
            return;
        }
    } else {
        struct lifecycle_text *l = say(v, TWICE_LOG_INFO);
        part(l->before, sizeof(l->before), "duplicate: key completed by message %s; deleting",
             c->stored_message_id[0] ? c->stored_message_id : "(migrated)");
    }
    v->duplicate = "completed";
    v->action = JOB_ACT_DELETE;
}

/* Someone else holds a live lease: hide the message until just past its end.
 * Huge, negative or NaN leases stay inside 1..LIFECYCLE_MAX_DELAY. */
static void
on_busy(const struct lifecycle_claim *c, struct lifecycle_verdict *v)
{
    double left = c->lease_left;
    long long wait = 0; /* NaN and far past: as short as allowed */
    if (left >= LIFECYCLE_MAX_DELAY) {
        wait = LIFECYCLE_MAX_DELAY;
    } else if (left > -LIFECYCLE_MAX_DELAY) {
        wait = (long long) left + LIFECYCLE_BUSY_MARGIN;
    }
    v->action = JOB_ACT_HIDE;
    v->delay = clamp_delay(wait, 1);
    v->duplicate = "lease";
    struct lifecycle_text *l = say(v, TWICE_LOG_INFO);
    part(l->before, sizeof(l->before), "key held by a live lease (message %s): hidden for %ds",
         c->stored_message_id[0] ? c->stored_message_id : "?", v->delay);
}

enum job_action
lifecycle_on_claim(const struct lifecycle_queue *q, const struct lifecycle_claim *c,
                   struct lifecycle_verdict *out)
{
    verdict_init(out);
    switch (c->state) {
    case IDEM_CLAIMED:
    case IDEM_TAKEN_OVER:
        on_claimed(q, c, out);
        break;
    case IDEM_COMPLETED:
        on_completed(q, c, out);
        break;
    case IDEM_BUSY:
        on_busy(c, out);
        break;
    }
    return out->action;
}

/* The wait before the next attempt: the plugin's wish, else capped exponential
 * backoff with full jitter, at least one second. */
static int
retry_delay(const struct lifecycle_queue *q, const struct lifecycle_run *r)
{
    if (r->retry_after >= 0) {
        return clamp_delay(r->retry_after, 0);
    }
    uint64_t d = backoff_full_jitter((uint64_t) q->backoff_base, (uint64_t) q->backoff_cap,
                                     r->attempt, r->random);
    return d > LIFECYCLE_MAX_DELAY ? LIFECYCLE_MAX_DELAY : clamp_delay((long long) d, 1);
}

enum job_action
lifecycle_on_handled(const struct lifecycle_queue *q, const struct lifecycle_run *r,
                     struct lifecycle_verdict *out)
{
    verdict_init(out);
    const char *why = r->error != NULL && r->error[0] ? r->error : "the plugin asked to retry";
    if (r->status == TWICE_DONE) {
        out->action = JOB_ACT_COMPLETE;
    } else if (r->status == TWICE_REJECT) {
        dead_letter(out, "rejected")->arg = r->error != NULL ? r->error : "rejected by the plugin";
    } else if (r->attempt >= q->max_attempts) {
        struct lifecycle_text *d = dead_letter(out, "max-attempts");
        part(d->before, sizeof(d->before), "attempt %d of %d failed: ", r->attempt,
             q->max_attempts);
        d->arg = why;
    } else {
        out->action = JOB_ACT_RETRY;
        out->delay = retry_delay(q, r);
        out->in_place = q->fifo;
        uint64_t ceiling =
            backoff_ceiling((uint64_t) q->backoff_base, (uint64_t) q->backoff_cap, r->attempt);
        struct lifecycle_text *l = say(out, TWICE_LOG_INFO);
        part(l->before, sizeof(l->before),
             "retry in %ds (attempt %d of %d, backoff ceiling %llus): ", out->delay, r->attempt,
             q->max_attempts, (unsigned long long) ceiling);
        l->arg = why;
    }
    return out->action;
}

enum job_action
lifecycle_on_leader(const struct lifecycle_leader *l, struct lifecycle_verdict *out)
{
    verdict_init(out);
    if (l->key_completed) {
        out->action = JOB_ACT_DELETE;
        out->duplicate = "completed";
        struct lifecycle_text *t = say(out, TWICE_LOG_INFO);
        part(t->before, sizeof(t->before), "duplicate of ");
        t->arg = l->message_id != NULL ? l->message_id : "";
        part(t->after, sizeof(t->after), " in the same batch: deleted");
    } else {
        out->action = JOB_ACT_HIDE;
        out->delay = l->action == JOB_ACT_RETRY || l->action == JOB_ACT_HIDE ? l->delay : 0;
    }
    return out->action;
}

enum job_action
lifecycle_on_failure(enum lifecycle_failure f, int wait_left, const char *error,
                     struct lifecycle_verdict *out)
{
    verdict_init(out);
    out->action = JOB_ACT_RETURN;
    switch (f) {
    case LIFECYCLE_CLAIM_FAILED:
    case LIFECYCLE_GROUP_BLOCKED:
    case LIFECYCLE_DRAINING:
    case LIFECYCLE_DRAIN_DEADLINE:
        break;
    case LIFECYCLE_TX_BEGIN_FAILED:
        out->delay = LIFECYCLE_STORE_DELAY;
        break;
    case LIFECYCLE_LEASE_LOST:
        out->action = JOB_ACT_NONE;
        say(out, TWICE_LOG_WARN)->arg = "lease lost before the handler started; leaving the "
                                        "message to its new holder";
        break;
    case LIFECYCLE_COMMIT_LOST: {
        out->delay = LIFECYCLE_STORE_DELAY;
        struct lifecycle_text *t = say(out, TWICE_LOG_WARN);
        part(t->before, sizeof(t->before), "commit failed with the connection (");
        t->arg = error != NULL ? error : "";
        part(t->after, sizeof(t->after), "); giving the message back");
        break;
    }
    case LIFECYCLE_DRAIN_IN_BACKOFF:
        out->delay = clamp_delay(wait_left, 0);
        break;
    case LIFECYCLE_DRAIN_DEADLINE_TX:
        out->delay = LIFECYCLE_TX_DEADLINE;
        break;
    }
    return out->action;
}
