/*
 * lifecycle.c - the decision table of a message's life (the policy in words is
 * at the top of lifecycle.h). Pure: every input is a parameter, every output
 * goes into the verdict; the callers log, count and act.
 */
#include "lifecycle.h"
#include "cnum.h"
#include "plural.h"

#include "backoff.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* What a BUSY duplicate waits past the holder's lease, seconds. */
#define LIFECYCLE_BUSY_MARGIN    2
/* What a timed-out run's retry waits past timeout_grace, seconds: by then its
 * worker has asked to be replaced and stopped receiving (heartbeat.c ticks once
 * a second), so the next run is another worker's. */
#define LIFECYCLE_TIMEOUT_MARGIN 2
/* Give-back delays of the failures that are not the job's fault. */
#define LIFECYCLE_STORE_DELAY    5 /* the store failed under a running job */
#define LIFECYCLE_TX_DEADLINE    3 /* a transactional job at the drain deadline (heartbeat.c) */

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
    cnum_vsnprintf(dst, len, fmt, ap);
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
    v->runs = 0;
    v->attempt = 0;
    v->counted = 0;
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

/* Dead-letter with reason, reporting runs; the detail's parts are then filled
 * by the caller. */
static struct lifecycle_text *
dead_letter(struct lifecycle_verdict *v, const char *reason, int runs)
{
    v->action = JOB_ACT_DEADLETTER;
    v->reason = reason;
    v->runs = runs;
    return &v->detail;
}

static int
clamp_delay(long long s, int min)
{
    return s < min ? min : s > LIFECYCLE_MAX_DELAY ? LIFECYCLE_MAX_DELAY : (int) s;
}

/* The warning of a claim that takes over an unfinished run, NULL for none. */
static const char *
take_over_warning(enum idem_state state)
{
    switch (state) {
    case IDEM_CRASHED:
        return "taking over: the previous run crashed its worker (counted against this job)";
    case IDEM_INTERRUPTED:
        return "taking over: the previous run was cut short when its worker went away (another "
               "job crashed it, or it stopped); not counted against this job";
    case IDEM_TAKEN_OVER:
        return "taking over: the previous holder's lease expired before it recorded its run (its "
               "worker hung or lost the database); that run is not counted";
    default:
        return NULL;
    }
}

/* The key is ours (claimed, or taken over from a run that did not end): run
 * it as attempt runs + 1, unless its attempts are spent, or the message has
 * been received too often without finishing (the backstop: runs that were
 * never recorded, a count the janitor removed). */
static void
on_claimed(const struct lifecycle_queue *q, const struct lifecycle_claim *c,
           struct lifecycle_verdict *v)
{
    if (c->attempts >= q->max_attempts && c->state == IDEM_CRASHED) {
        part(dead_letter(v, "worker-crashed", c->attempts)->before, LIFECYCLE_TEXT_MAX,
             "%d attempt%s, the last one crashed its worker (max_attempts %d)", c->attempts,
             plural_s(c->attempts), q->max_attempts);
    } else if (c->attempts >= q->max_attempts) {
        part(dead_letter(v, "max-attempts", c->attempts)->before, LIFECYCLE_TEXT_MAX,
             "%d attempt%s already (max_attempts %d)", c->attempts, plural_s(c->attempts),
             q->max_attempts);
    } else if (c->receives > q->max_receives) {
        part(dead_letter(v, "max-receives", c->attempts)->before, LIFECYCLE_TEXT_MAX,
             "received %d times (max_receives %d) without finishing (attempts counted: %d)%s",
             c->receives, q->max_receives, c->attempts,
             c->state == IDEM_TAKEN_OVER ? "; the last holder's lease expired before it "
                                           "recorded its run"
                                         : "");
    } else {
        v->attempt = c->attempts + 1;
        const char *warning = take_over_warning(c->state);
        if (warning != NULL) {
            say(v, TWICE_LOG_WARN)->arg = warning;
        }
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
            struct lifecycle_text *d = dead_letter(v, "payload-conflict", 0);
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

/* The hide of a duplicate that meets a live lease: 2^(receives-1) seconds,
 * never past the lease's end + LIFECYCLE_BUSY_MARGIN; huge, negative or NaN
 * leases stay inside 1..LIFECYCLE_MAX_DELAY. */
static int
busy_delay(const struct lifecycle_claim *c)
{
    double left = c->lease_left;
    long long cap = 0; /* NaN and far past: as short as allowed */
    if (left >= LIFECYCLE_MAX_DELAY) {
        cap = LIFECYCLE_MAX_DELAY;
    } else if (left > -LIFECYCLE_MAX_DELAY) {
        cap = (long long) left + LIFECYCLE_BUSY_MARGIN;
    }
    long long grow = c->receives <= 1 ? 1 : c->receives > 17 ? 65536 : 1LL << (c->receives - 1);
    return clamp_delay(grow < cap ? grow : cap, 1);
}

/* Someone else holds a live lease: hide the message for a short, growing
 * delay, so that it comes back soon after the holder ends; a message that
 * has met it too often goes to the DLQ (the key may never be free). */
static void
on_busy(const struct lifecycle_queue *q, const struct lifecycle_claim *c,
        struct lifecycle_verdict *v)
{
    const char *holder = c->stored_message_id[0] ? c->stored_message_id : "?";
    if (c->receives > q->max_receives) {
        part(dead_letter(v, "max-receives", 0)->before, LIFECYCLE_TEXT_MAX,
             "received %d times (max_receives %d) while its key stayed held by message %s",
             c->receives, q->max_receives, holder);
        return;
    }
    v->action = JOB_ACT_HIDE;
    v->delay = busy_delay(c);
    v->duplicate = "lease";
    part(say(v, TWICE_LOG_INFO)->before, LIFECYCLE_TEXT_MAX,
         "key held by a live lease (message %s): hidden for %ds", holder, v->delay);
}

enum job_action
lifecycle_on_claim(const struct lifecycle_queue *q, const struct lifecycle_claim *c,
                   struct lifecycle_verdict *out)
{
    verdict_init(out);
    switch (c->state) {
    case IDEM_CLAIMED:
    case IDEM_TAKEN_OVER:
    case IDEM_CRASHED:
    case IDEM_INTERRUPTED:
        on_claimed(q, c, out);
        break;
    case IDEM_COMPLETED:
        on_completed(q, c, out);
        break;
    case IDEM_BUSY:
        on_busy(q, c, out);
        break;
    }
    return out->action;
}

long
lifecycle_answer_ms(int visibility_timeout)
{
    long ms = (long) visibility_timeout * 1000 / 3;
    return ms < LIFECYCLE_ANSWER_MIN_MS   ? LIFECYCLE_ANSWER_MIN_MS
           : ms > LIFECYCLE_ANSWER_MAX_MS ? LIFECYCLE_ANSWER_MAX_MS
                                          : ms;
}

/* The RETRY backoff's wait for attempt (or receives, for a message that
 * cannot run): full jitter drawn with random, at least one second. */
static int
backoff_wait(const struct lifecycle_queue *q, int attempt, uint64_t random)
{
    uint64_t d = backoff_full_jitter((uint64_t) q->backoff_base, (uint64_t) q->backoff_cap,
                                     attempt, random);
    return d > LIFECYCLE_MAX_DELAY ? LIFECYCLE_MAX_DELAY : clamp_delay((long long) d, 1);
}

enum job_action
lifecycle_on_claim_failed(const struct lifecycle_queue *q, int receives, uint64_t random,
                          const char *error, struct lifecycle_verdict *out)
{
    verdict_init(out);
    if (receives > q->max_receives) {
        struct lifecycle_text *d = dead_letter(out, "max-receives", 0);
        part(d->before, sizeof(d->before),
             "received %d times (max_receives %d) and its claim failed: ", receives,
             q->max_receives);
        d->arg = error != NULL ? error : "";
    } else {
        /* its own data fails the claim: it would fail again at once, so not
         * in a tight loop of receives, but after the RETRY backoff */
        out->action = JOB_ACT_RETURN;
        out->delay = backoff_wait(q, receives, random);
    }
    return out->action;
}

/* The longest wait for a payload S3 could not give. */
#define LIFECYCLE_PAYLOAD_DELAY_MAX 300

enum job_action
lifecycle_on_payload_failed(const struct lifecycle_queue *q, int receives, const char *error,
                            struct lifecycle_verdict *out)
{
    verdict_init(out);
    if (receives > q->max_receives) {
        struct lifecycle_text *d = dead_letter(out, "max-receives", 0);
        part(d->before, sizeof(d->before),
             "received %d times (max_receives %d) and its payload could not be fetched: ",
             receives, q->max_receives);
        d->arg = error != NULL ? error : "";
        return out->action;
    }
    int shift = receives > 9 ? 9 : receives - 1;
    out->action = JOB_ACT_RETURN;
    out->delay = clamp_delay(1LL << (shift > 0 ? shift : 0), 1);
    if (out->delay > LIFECYCLE_PAYLOAD_DELAY_MAX) {
        out->delay = LIFECYCLE_PAYLOAD_DELAY_MAX;
    }
    struct lifecycle_text *t = say(out, TWICE_LOG_WARN);
    t->arg = error != NULL ? error : "";
    part(t->after, sizeof(t->after), "; giving the message back for %d s", out->delay);
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
    return backoff_wait(q, r->attempt, r->random);
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
        dead_letter(out, "rejected", r->attempt)->arg =
            r->error != NULL ? r->error : "rejected by the plugin";
    } else if (r->breaker_open) {
        out->action = JOB_ACT_RETURN;
        out->delay = clamp_delay(r->open_delay, 1);
        struct lifecycle_text *l = say(out, TWICE_LOG_INFO);
        part(l->before, sizeof(l->before),
             "the queue's breaker is open: given back for %ds, attempt %d not counted: ",
             out->delay, r->attempt);
        l->arg = why;
    } else if (r->attempt >= q->max_attempts) {
        struct lifecycle_text *d = dead_letter(out, "max-attempts", r->attempt);
        part(d->before, sizeof(d->before), "attempt %d of %d failed: ", r->attempt,
             q->max_attempts);
        d->arg = why;
    } else {
        out->action = JOB_ACT_RETRY;
        out->counted = 1;
        out->delay = retry_delay(q, r);
        out->in_place = q->fifo;
        struct lifecycle_text *l = say(out, TWICE_LOG_INFO);
        if (r->retry_after >= 0) {
            /* the plugin's delay, not the backoff: naming the ceiling would
             * leave a reader asking why 60 s when the ceiling says 2 */
            part(l->before, sizeof(l->before),
                 "retry in %ds (attempt %d of %d, the plugin's retry_after): ", out->delay,
                 r->attempt, q->max_attempts);
        } else {
            uint64_t ceiling =
                backoff_ceiling((uint64_t) q->backoff_base, (uint64_t) q->backoff_cap, r->attempt);
            part(l->before, sizeof(l->before),
                 "retry in %ds (attempt %d of %d, backoff ceiling %llus): ", out->delay,
                 r->attempt, q->max_attempts, (unsigned long long) ceiling);
        }
        l->arg = why;
    }
    return out->action;
}

enum job_action
lifecycle_on_timeout(const struct lifecycle_queue *q, int attempt, int open_delay, uint64_t random,
                     struct lifecycle_verdict *out)
{
    verdict_init(out);
    struct lifecycle_text *l = say(out, TWICE_LOG_WARN);
    long long least = (long long) q->timeout_grace + LIFECYCLE_TIMEOUT_MARGIN;
    if (open_delay > 0) {
        out->action = JOB_ACT_RETURN;
        out->delay = open_delay > least ? open_delay : clamp_delay(least, 1);
        part(l->before, sizeof(l->before),
             "ran past its timeout (%ds) on attempt %d: the queue's breaker is open: given "
             "back for %ds, attempt %d not counted",
             q->timeout, attempt, out->delay, attempt);
        return out->action;
    }
    if (attempt >= q->max_attempts) {
        part(dead_letter(out, "timeout", attempt)->before, LIFECYCLE_TEXT_MAX,
             "attempt %d of %d ran past its timeout (%ds)", attempt, q->max_attempts, q->timeout);
        part(l->before, sizeof(l->before),
             "ran past its timeout (%ds) on attempt %d of %d: dead-lettering", q->timeout, attempt,
             q->max_attempts);
        return out->action;
    }
    struct lifecycle_run run = {.attempt = attempt, .retry_after = -1, .random = random};
    int delay = retry_delay(q, &run);
    out->action = JOB_ACT_RETRY;
    out->counted = 1;
    out->delay = delay > least ? delay : clamp_delay(least, 1);
    part(l->before, sizeof(l->before),
         "ran past its timeout (%ds) on attempt %d of %d: retry in %ds", q->timeout, attempt,
         q->max_attempts, out->delay);
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

/* A statement that completes the key lost its answer with the connection,
 * and the key reads completed by this job's message: it did commit. */
static enum job_action
done_after_lost_answer(const char *line, struct lifecycle_verdict *out)
{
    verdict_init(out);
    out->action = JOB_ACT_COMPLETE;
    say(out, TWICE_LOG_INFO)->arg = line;
    return out->action;
}

enum job_action
lifecycle_on_complete_missed(int answer_lost, int completed_by_it, struct lifecycle_verdict *out)
{
    if (!answer_lost || !completed_by_it) {
        return lifecycle_on_failure(LIFECYCLE_COMPLETE_LOST, 0, NULL, out);
    }
    return done_after_lost_answer("the completion's answer was lost with the connection, and "
                                  "the key reads completed by this message: done",
                                  out);
}

enum job_action
lifecycle_on_commit_unknown(int completed_by_it, const char *error, struct lifecycle_verdict *out)
{
    if (!completed_by_it) {
        return lifecycle_on_failure(LIFECYCLE_COMMIT_LOST, 0, error, out);
    }
    return done_after_lost_answer("the commit's answer was lost with the connection, and the "
                                  "key reads completed by this message: done",
                                  out);
}

/* A transactional run whose work the store rolled back: given back, not
 * counted, after the RETRY backoff of its receives (it grows while the store
 * keeps failing; max_receives ends it at its claim). The warning's parts are
 * then filled by the caller. */
static struct lifecycle_text *
store_rolled_back(const struct lifecycle_queue *q, int receives, uint64_t random,
                  struct lifecycle_verdict *out)
{
    verdict_init(out);
    out->action = JOB_ACT_RETURN;
    out->delay = backoff_wait(q, receives, random);
    return say(out, TWICE_LOG_WARN);
}

enum job_action
lifecycle_on_commit_refused(const struct lifecycle_queue *q, int receives, int attempt,
                            uint64_t random, const char *error, struct lifecycle_verdict *out)
{
    struct lifecycle_text *t = store_rolled_back(q, receives, random, out);
    part(t->before, sizeof(t->before), "the store refused its completion (");
    t->arg = error != NULL ? error : "";
    part(t->after, sizeof(t->after),
         "): its work was rolled back with it; given back for %ds, attempt %d not counted",
         out->delay, attempt);
    return out->action;
}

enum job_action
lifecycle_on_store_aborted(const struct lifecycle_queue *q, twice_status status, int receives,
                           int attempt, uint64_t random, const char *error,
                           struct lifecycle_verdict *out)
{
    struct lifecycle_text *t = store_rolled_back(q, receives, random, out);
    part(t->before, sizeof(t->before),
         "a statement of the plugin failed through the store's fault (");
    t->arg = error != NULL ? error : "";
    part(t->after, sizeof(t->after),
         "), aborting its transaction, so its %s is not the job's: given back for %ds, "
         "attempt %d not counted",
         status == TWICE_REJECT ? "REJECT" : "RETRY", out->delay, attempt);
    return out->action;
}

int
lifecycle_stop_sends(size_t staged, int outbox_unsure)
{
    return staged > 0 && !outbox_unsure;
}

enum job_action
lifecycle_on_stop_unwritten(const struct lifecycle_unwritten *u, struct lifecycle_verdict *out)
{
    verdict_init(out);
    struct lifecycle_text *t = say(out, TWICE_LOG_WARN);
    part(t->before, sizeof(t->before), "stopping before its completion could be written (");
    t->arg = u->error != NULL ? u->error : "";
    if (u->staged > 0 && u->outbox_unsure) {
        part(t->after, sizeof(t->after),
             "): a COMMIT of it got no answer, so its %zu follow-up message%s may be in the "
             "outbox; its message is left: a duplicate when it comes back if that COMMIT took, "
             "else it runs again once its lease lapses",
             u->staged, plural_s(u->staged));
    } else if (u->staged > 0 && u->send_failed) {
        part(t->before, sizeof(t->before),
             "stopping before its completion could be written, sending its %zu follow-up "
             "message%s directly to SQS failed (",
             u->staged, plural_s(u->staged));
        t->arg = u->send_error != NULL ? u->send_error : "";
        part(t->after, sizeof(t->after),
             "), so its message is left: it comes back after its visibility timeout and, once "
             "its lease lapses, runs again (its follow-ups then go through the outbox, with the "
             "same twice-outbox-id)");
    } else {
        if (u->staged > 0) {
            part(t->before, sizeof(t->before),
                 "sent its %zu follow-up message%s directly to SQS (the outbox could not take "
                 "them), stopping before its completion could be written (",
                 u->staged, plural_s(u->staged));
        }
        out->action = JOB_ACT_DELETE;
        part(t->after, sizeof(t->after),
             "): its effect happened, so its message is deleted; its key stays in progress, "
             "not completed, until its lease lapses (or the master frees it as interrupted): a "
             "message sent again with this key after that would run again");
    }
    return out->action;
}

int
lifecycle_completion_waits(int unreachable, double received_ago)
{
    return unreachable && received_ago < LIFECYCLE_MAX_DELAY;
}

enum job_action
lifecycle_on_failure(enum lifecycle_failure f, int wait_left, const char *error,
                     struct lifecycle_verdict *out)
{
    verdict_init(out);
    out->action = JOB_ACT_RETURN;
    switch (f) {
    case LIFECYCLE_GROUP_BLOCKED:
    case LIFECYCLE_CLAIM_STORE:
    case LIFECYCLE_DRAINING:
    case LIFECYCLE_DRAIN_DEADLINE:
        break;
    case LIFECYCLE_TX_BEGIN_FAILED:
        out->delay = LIFECYCLE_STORE_DELAY;
        break;
    case LIFECYCLE_BREAKER_OPEN:
        out->delay = clamp_delay(wait_left, 1);
        part(say(out, TWICE_LOG_INFO)->before, LIFECYCLE_TEXT_MAX,
             "the queue's breaker is open: given back for %ds before it ran (not counted)",
             out->delay);
        break;
    case LIFECYCLE_PAUSED:
        out->delay = clamp_delay(wait_left, 0);
        break;
    case LIFECYCLE_LEASE_LOST:
        out->action = JOB_ACT_NONE;
        say(out, TWICE_LOG_WARN)->arg = "lease lost before the handler started; leaving the "
                                        "message to its new holder";
        break;
    case LIFECYCLE_COMPLETE_LOST:
        out->action = JOB_ACT_NONE;
        say(out, TWICE_LOG_WARN)->arg = "lease lost before completion: another worker took the "
                                        "key over; leaving the message to it";
        break;
    case LIFECYCLE_COMMIT_LOST: {
        out->delay = LIFECYCLE_STORE_DELAY;
        struct lifecycle_text *t = say(out, TWICE_LOG_WARN);
        part(t->before, sizeof(t->before), "commit failed with the connection (");
        t->arg = error != NULL ? error : "";
        part(t->after, sizeof(t->after), "); giving the message back");
        break;
    }
    case LIFECYCLE_TX_LOST: {
        out->delay = LIFECYCLE_STORE_DELAY;
        struct lifecycle_text *t = say(out, TWICE_LOG_WARN);
        part(t->before, sizeof(t->before), "transaction lost with the connection (");
        t->arg = error != NULL ? error : "";
        part(t->after, sizeof(t->after), "); giving the message back (not counted)");
        break;
    }
    case LIFECYCLE_DRAIN_IN_BACKOFF:
        out->delay = clamp_delay(wait_left, 0);
        out->counted = 1; /* the run before the wait */
        break;
    case LIFECYCLE_DRAIN_DEADLINE_TX:
        out->delay = LIFECYCLE_TX_DEADLINE;
        break;
    case LIFECYCLE_DLQ_REFUSED: {
        out->delay = LIFECYCLE_DLQ_REFUSED_DELAY;
        struct lifecycle_text *t = say(out, TWICE_LOG_ERROR);
        part(t->before, sizeof(t->before), "the dead-letter queue refused the dead letter: ");
        t->arg = error != NULL ? error : "";
        part(t->after, sizeof(t->after),
             "; giving the message back for %ds instead of retrying now", out->delay);
        break;
    }
    case LIFECYCLE_DLQ_UNAVAILABLE: {
        out->delay = LIFECYCLE_DLQ_UNAVAILABLE_DELAY;
        struct lifecycle_text *t = say(out, TWICE_LOG_ERROR);
        part(t->before, sizeof(t->before),
             "the dead-letter queue could not take the dead letter for now: ");
        t->arg = error != NULL ? error : "";
        part(t->after, sizeof(t->after),
             "; giving the message back for %ds, its key released with its runs", out->delay);
        break;
    }
    }
    return out->action;
}
