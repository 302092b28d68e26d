/*
 * heartbeat.c - extending visibility and leases of jobs in flight, and
 * giving them back at the drain deadline (see heartbeat.h). Registry jobs
 * belong to their handler threads: only fields fixed at claim time
 * (queue, receipt handle, key) are read here, plus extended_at, lease_owed,
 * held and given_back, which only the acker's thread writes (heartbeat_keep_hidden
 * runs on it too, inside the acker's waits for PostgreSQL), and claimed, which is
 * atomic (a transactional handler settles the key while the job is registered). A held
 * job is the acker's: its other fields are then the acker's thread's too.
 */
#include "heartbeat.h"

#include "advice.h"
#include "config.h"
#include "idem.h"
#include "instance.h"
#include "job.h"
#include "lifecycle.h"
#include "log.h"
#include "plural.h"
#include "metrics.h"
#include "registry.h"
#include "sqs.h"
#include "sqs_limits.h"
#include "timeout.h"
#include "worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* An outage is reported every HEARTBEAT_REPORT_EVERY seconds, not every
 * tick. */
#define HEARTBEAT_REPORT_EVERY 10

static int
report_now(struct heartbeat *hb)
{
    time_t now = time(NULL);
    if (now - hb->failure_logged < HEARTBEAT_REPORT_EVERY) {
        return 0;
    }
    hb->failure_logged = now;
    return 1;
}

/* Report the entries of a batch SQS refused (HTTP 200 with Failed entries:
 * a job past SQS's 12 hours of visibility gets InvalidParameterValue, a
 * handle received again elsewhere or purged ReceiptHandleIsInvalid), which
 * went unsaid: their messages may be received again meanwhile, and only the
 * keys' leases keep them from running twice. Once per report period. */
static void
refused_entries(struct heartbeat *hb, struct twice_job **jobs, size_t m,
                const struct sqs_batch_result *r)
{
    size_t refused = 0, first = 0;
    for (size_t i = 0; i < m; i++) {
        if (!r[i].ok) {
            metrics_count(MET_SQS_ERRORS, "ChangeMessageVisibilityBatch", r[i].code, NULL, 1);
            first = refused++ == 0 ? i : first;
        }
    }
    if (refused > 0 && report_now(hb)) {
        log_warn("queue %s: heartbeat: SQS refused to change the visibility of %zu of %zu "
                 "messages (%s: %s): they may be received again while their jobs run; the keys' "
                 "leases keep them from running twice",
                 jobs[0]->queue->cfg->name, refused, m, r[first].code, r[first].message);
    }
}

/* Set visibility for up to n jobs of one queue, a batch per call: vis, or
 * each[i] for jobs[i] when each is given. Returns how many calls failed as a
 * whole. */
static int
set_visibility(struct heartbeat *hb, struct twice_job **jobs, size_t n, int vis, const int *each)
{
    int failures = 0;
    for (size_t at = 0; at < n; at += SQS_BATCH_MAX) {
        size_t m = n - at < SQS_BATCH_MAX ? n - at : SQS_BATCH_MAX;
        struct sqs_batch_entry e[SQS_BATCH_MAX];
        struct sqs_batch_result r[SQS_BATCH_MAX];
        for (size_t i = 0; i < m; i++) {
            e[i].id = sqs_batch_id(i);
            e[i].receipt_handle = jobs[at + i]->msg.receipt_handle;
            e[i].visibility_timeout = each != NULL ? each[at + i] : vis;
        }
        struct sqs_error err;
        if (sqs_change_visibility_batch(hb->sqs, jobs[0]->queue->cfg->url, e, m, r, &err) != 0) {
            char desc[512];
            sqs_error_describe(&err, "ChangeMessageVisibilityBatch", desc, sizeof(desc));
            metrics_count(MET_SQS_ERRORS, "ChangeMessageVisibilityBatch", err.code, NULL, 1);
            if (report_now(hb)) {
                log_warn("queue %s: heartbeat: %s", jobs[0]->queue->cfg->name, desc);
            }
            failures++;
        } else {
            refused_entries(hb, jobs + at, m, r);
        }
    }
    return failures;
}

/* Keys of the claimed jobs among jobs[0..n). */
static size_t
claimed_keys(struct twice_job **jobs, size_t n, const char **keys)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (shared_int_get(&jobs[i]->claimed)) {
            keys[k++] = jobs[i]->key;
        }
    }
    return k;
}

/* Extend the leases of one queue's jobs[0..n), whose visibility was extended
 * (at this look or, while the acker waited for the store, since the last
 * one): they owe no lease once the store has answered for them. A store that
 * is down, or a statement that fails, leaves them owing, for the next look. */
static void
extend_leases(struct heartbeat *hb, struct twice_job **jobs, size_t n)
{
    const struct config *cfg = hb->w->cfg;
    const struct config_queue *qc = jobs[0]->queue->cfg;
    const char **keys = malloc(n * sizeof(*keys));
    int *extended = malloc(n * sizeof(*extended));
    char err[512];
    if (keys == NULL || extended == NULL) {
        if (report_now(hb)) {
            log_error("queue %s: out of memory extending %zu leases", qc->name, n);
        }
        free(keys);
        free(extended);
        return;
    }
    size_t k = claimed_keys(jobs, n, keys);
    int answered = k == 0;
    struct idem_store *s = k > 0 ? hb->store(hb->store_arg) : NULL;
    if (s != NULL) {
        int lease = qc->visibility_timeout + cfg->idempotency.lease_margin;
        if (idem_extend_batch(s, keys, k, lease, extended, err, sizeof(err)) != 0) {
            metrics_count(MET_PG_ERRORS, "extend", NULL, NULL, 1);
            if (report_now(hb)) {
                log_warn("queue %s: extending %zu leases failed: %s", qc->name, k, err);
            }
        } else {
            answered = 1;
            for (size_t i = 0; i < k; i++) {
                if (!extended[i]) {
                    log_warn("queue %s: key %s: lease lost while running", qc->name, keys[i]);
                }
            }
        }
    }
    for (size_t i = 0; answered && i < n; i++) {
        jobs[i]->lease_owed = 0;
    }
    free(keys);
    free(extended);
}

/* A job whose message has been hidden for SQS's 12 hours: said once, as
 * nothing more can keep its message hidden. */
static void
at_sqs_limit(struct twice_job *j)
{
    if (!j->sqs_limit_said) {
        j->sqs_limit_said = 1;
        log_warn("queue %s: key %s: its job has kept message %s hidden for 12 hours, the most "
                 "SQS allows: the message may be received again while the job runs; the key's "
                 "lease keeps it from running twice",
                 j->queue->cfg->name, j->key, j->msg.message_id);
    }
}

/* Extend the visibility of one queue's jobs[0..n) chosen at this look, each
 * by as much as SQS's 12 hours leave it (heartbeat_capped_visibility; jobs
 * [0..n) are reordered, those at the limit last and left out of the call):
 * their leases are owed from now (extend_leases), at the limit too. */
static void
extend_visibility(struct heartbeat *hb, struct twice_job **jobs, size_t n,
                  const struct timespec *now)
{
    int vis = jobs[0]->queue->cfg->visibility_timeout;
    int *each = malloc(n * sizeof(*each));
    size_t m = 0;
    for (size_t i = 0; i < n && each != NULL; i++) {
        int v = heartbeat_capped_visibility(vis, job_elapsed(&jobs[i]->received_at, now));
        if (v == 0) {
            at_sqs_limit(jobs[i]);
            continue;
        }
        struct twice_job *t = jobs[m];
        jobs[m] = jobs[i];
        jobs[i] = t;
        each[m++] = v;
    }
    if (each == NULL) {
        m = n; /* no memory to cut with: the queue's timeout, as before */
    }
    if (m > 0) {
        set_visibility(hb, jobs, m, vis, each);
    }
    free(each);
    for (size_t i = 0; i < n; i++) {
        jobs[i]->extended_at = *now;
        jobs[i]->lease_owed = 1;
    }
    metrics_count(MET_EXTENSIONS, jobs[0]->queue->cfg->name, NULL, NULL, m);
}

/* The jobs in flight (see registry_snapshot); -1, reported, without memory. */
static int
snapshot(struct heartbeat *hb, struct twice_job ***all, size_t *n)
{
    if (registry_snapshot(hb->reg, all, n) == 0) {
        return 0;
    }
    if (report_now(hb)) {
        log_error("heartbeat: out of memory listing the jobs in flight");
    }
    return -1;
}

double
heartbeat_interval(const struct worker *w)
{
    double interval = 1.0;
    for (size_t qi = 0; qi < w->nqueues; qi++) {
        double quarter = w->queues[qi].cfg->visibility_timeout / 4.0;
        interval = quarter < interval ? quarter : interval;
    }
    return interval < 0.25 ? 0.25 : interval;
}

double
heartbeat_due_after(int visibility_timeout, double interval)
{
    double half = visibility_timeout / 2.0;
    double latest = visibility_timeout - interval - HEARTBEAT_SLACK_S;
    double due = latest < half ? latest : half;
    return due > 0 ? due : 0;
}

int
heartbeat_capped_visibility(int visibility_timeout, double since_receive)
{
    double left = SQS_VISIBILITY_MAX - HEARTBEAT_LIMIT_MARGIN_S - since_receive;
    if (left < 1) {
        return 0;
    }
    return left < visibility_timeout ? (int) left : visibility_timeout;
}

long
heartbeat_budget_ms(int visibility_timeout, int lease_margin, double interval)
{
    double left = visibility_timeout + lease_margin -
                  heartbeat_due_after(visibility_timeout, interval) - interval;
    long ms = (long) (left * 1000.0 / 2);
    return ms > 1000 ? ms : 1000;
}

long
heartbeat_call_budget_ms(const struct worker *w)
{
    double interval = heartbeat_interval(w);
    long least = 0;
    for (size_t qi = 0; qi < w->nqueues; qi++) {
        long ms = heartbeat_budget_ms(w->queues[qi].cfg->visibility_timeout,
                                      w->cfg->idempotency.lease_margin, interval);
        least = least == 0 || ms < least ? ms : least;
    }
    return least;
}

double
heartbeat_must_after(int visibility_timeout, double interval)
{
    double due = heartbeat_due_after(visibility_timeout, interval);
    double latest = visibility_timeout - 2 * interval - HEARTBEAT_SLACK_S;
    return latest > due ? due + (latest - due) / 2 : due;
}

size_t
heartbeat_quota(const double *elapsed, size_t m, double must_after, size_t room)
{
    size_t pressing = 0;
    while (pressing < m && elapsed[pressing] >= must_after) {
        pressing++;
    }
    size_t k = m < room ? m : room;
    return pressing > k ? pressing : k;
}

void
heartbeat_shares(const size_t *due, size_t nq, size_t room, size_t *share)
{
    size_t open = 0;
    for (size_t i = 0; i < nq; i++) {
        share[i] = 0;
        open += due[i] > 0;
    }
    /* Rounds of equal parts until the room or the wants run out; a part is
     * at least one job, so every round gives something. */
    while (room > 0 && open > 0) {
        size_t part = room / open > 0 ? room / open : 1;
        open = 0;
        for (size_t i = 0; i < nq && room > 0; i++) {
            size_t want = due[i] - share[i];
            size_t give = want < part ? want : part;
            give = give < room ? give : room;
            share[i] += give;
            room -= give;
            open += share[i] < due[i];
        }
    }
}

/* Oldest extension first. */
static int
by_extended_at(const void *a, const void *b)
{
    const struct timespec *x = &(*(struct twice_job *const *) a)->extended_at;
    const struct timespec *y = &(*(struct twice_job *const *) b)->extended_at;
    if (x->tv_sec != y->tv_sec) {
        return x->tv_sec < y->tv_sec ? -1 : 1;
    }
    return (x->tv_nsec > y->tv_nsec) - (x->tv_nsec < y->tv_nsec);
}

/* How many of a queue's m due jobs this look extends (heartbeat_quota); when
 * that is fewer than m, due is sorted so that they are its first ones. */
static size_t
choose(struct twice_job **due, size_t m, double must_after, size_t room,
       const struct timespec *now)
{
    if (m <= room) {
        return m;
    }
    qsort(due, m, sizeof(*due), by_extended_at);
    double *elapsed = malloc(m * sizeof(*elapsed));
    if (elapsed == NULL) {
        return m; /* no memory to choose with: every due job, as is safe */
    }
    for (size_t i = 0; i < m; i++) {
        elapsed[i] = job_elapsed(&due[i]->extended_at, now);
    }
    size_t k = heartbeat_quota(elapsed, m, must_after, room);
    free(elapsed);
    return k;
}

/* Whether job j is due for an extension at now. */
static int
is_due(const struct twice_job *j, double interval, const struct timespec *now)
{
    double due_after = heartbeat_due_after(j->queue->cfg->visibility_timeout, interval);
    return !timeout_overrun(j) && job_elapsed(&j->extended_at, now) >= due_after;
}

void
heartbeat_plan(const struct worker *w, struct twice_job *const *all, size_t n, double interval,
               const struct timespec *now, struct twice_job **out, size_t *first, size_t *due,
               size_t *take)
{
    size_t nq = w->nqueues;
    for (size_t qi = 0; qi < nq; qi++) {
        due[qi] = 0;
    }
    for (size_t i = 0; i < n; i++) {
        due[all[i]->queue - w->queues] += is_due(all[i], interval, now);
    }
    /* out: the due jobs grouped by queue, each group in the snapshot's order;
     * take counts how many each group has so far. A handler can end its run
     * between the two passes (timeout_overrun): due is what was placed. */
    for (size_t qi = 0, at = 0; qi < nq; qi++) {
        first[qi] = at;
        take[qi] = 0;
        at += due[qi];
    }
    for (size_t i = 0; i < n; i++) {
        size_t qi = (size_t) (all[i]->queue - w->queues);
        if (take[qi] < due[qi] && is_due(all[i], interval, now)) {
            out[first[qi] + take[qi]++] = all[i];
        }
    }
    for (size_t qi = 0; qi < nq; qi++) {
        due[qi] = take[qi];
    }
    /* each queue's share of the room, then its pressing jobs beyond it */
    heartbeat_shares(due, nq, HEARTBEAT_PER_LOOK, take);
    for (size_t qi = 0; qi < nq; qi++) {
        double must_after = heartbeat_must_after(w->queues[qi].cfg->visibility_timeout, interval);
        take[qi] = choose(out + first[qi], due[qi], must_after, take[qi], now);
    }
}

/* Extend the visibility of what heartbeat_plan chooses among all[0..n) (the
 * snapshot, with room for n more after it). 0, or -1 (reported) without
 * memory. */
static int
look(struct heartbeat *hb, struct twice_job **all, size_t n, const struct timespec *now)
{
    struct worker *w = hb->w;
    size_t *first = calloc(3 * (w->nqueues + 1), sizeof(*first));
    if (first == NULL) {
        if (report_now(hb)) {
            log_error("heartbeat: out of memory planning the extensions");
        }
        return -1;
    }
    size_t *due = first + w->nqueues + 1, *take = due + w->nqueues + 1;
    struct twice_job **chosen = all + n;
    heartbeat_plan(w, all, n, hb->interval, now, chosen, first, due, take);
    for (size_t qi = 0; qi < w->nqueues; qi++) {
        if (take[qi] > 0) {
            extend_visibility(hb, chosen + first[qi], take[qi], now);
        }
    }
    free(first);
    return 0;
}

/* Each queue's jobs that owe a lease among all[0..n) get it, a statement per
 * queue (the snapshot's room for n more holds them). */
static void
pay_leases(struct heartbeat *hb, struct twice_job **all, size_t n)
{
    struct worker *w = hb->w;
    struct twice_job **owing = all + n;
    for (size_t qi = 0; qi < w->nqueues; qi++) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            if (all[i]->queue == &w->queues[qi] && all[i]->lease_owed) {
                owing[m++] = all[i];
            }
        }
        if (m > 0) {
            extend_leases(hb, owing, m);
        }
    }
}

void
heartbeat_keep_hidden(struct heartbeat *hb, const struct timespec *now)
{
    hb->last_look = *now;
    struct twice_job **all;
    size_t n;
    if (snapshot(hb, &all, &n) != 0 || n == 0) {
        return; /* nothing in flight: all is NULL */
    }
    look(hb, all, n, now);
    free(all);
}

/* Visibility first, for every queue: what keeps the messages hidden never
 * waits for the store (a lease lapses later, by lease_margin); then the
 * leases. */
void
heartbeat_run(struct heartbeat *hb, const struct timespec *now)
{
    hb->last_look = *now;
    if (now->tv_sec - hb->last_advice >= hb->w->cfg->metrics.p99_interval) {
        hb->last_advice = now->tv_sec;
        advice_tick(hb->w);
    }
    struct twice_job **all;
    size_t n;
    if (snapshot(hb, &all, &n) != 0 || n == 0) {
        return; /* nothing in flight: all is NULL */
    }
    timeout_check(hb->w, all, n, hb->act_overrun, hb->store_arg);
    if (look(hb, all, n, now) == 0) {
        pay_leases(hb, all, n);
    }
    free(all);
}

/* The visibility a running job is given back with at the drain deadline
 * (lifecycle.c). A transactional job holds its key under its handler's lock
 * until the process exits, so its message comes back a little later, once the
 * master has ended the gone worker's leases: it is taken over, not hidden. */
static int
deadline_delay(int transactional)
{
    struct lifecycle_verdict v;
    lifecycle_on_failure(transactional ? LIFECYCLE_DRAIN_DEADLINE_TX : LIFECYCLE_DRAIN_DEADLINE, 0,
                         NULL, &v);
    return v.delay;
}

/* Give back one queue's jobs: release what can be released, then set the
 * visibility. jobs is the caller's selection: it is reordered. */
static void
give_back_queue(struct heartbeat *hb, struct wqueue *q, struct twice_job **jobs, size_t n)
{
    /* Partition: the jobs that can be released first, transactional ones after. */
    size_t nn = 0;
    for (size_t i = 0; i < n; i++) {
        if (jobs[i]->plugin == NULL || !jobs[i]->plugin->transactional) {
            struct twice_job *t = jobs[nn];
            jobs[nn++] = jobs[i];
            jobs[i] = t;
        }
    }
    /* Without memory for the keys, as many as nn of them are not released. */
    const char **keys = malloc(n * sizeof(*keys)); /* n > 0: the caller's selection */
    size_t k = keys != NULL ? claimed_keys(jobs, nn, keys) : nn;
    struct idem_store *s = hb->store(hb->store_arg);
    char err[512];
    /* Their runs are cut short by the drain: not counted (the rows keep the
     * count they had when claimed). */
    if (k > 0 && (keys == NULL || s == NULL ||
                  idem_release_batch(s, keys, NULL, k, NULL, err, sizeof(err)) != 0)) {
        log_warn("queue %s: drain deadline: releasing %zu key%s failed (their leases "
                 "will be ended when this worker has gone)",
                 q->cfg->name, k, plural_s(k));
    }
    free(keys);
    if (nn > 0) {
        set_visibility(hb, jobs, nn, deadline_delay(0), NULL);
    }
    if (n > nn) {
        set_visibility(hb, jobs + nn, n - nn, deadline_delay(1), NULL);
    }
    for (size_t i = 0; i < n; i++) {
        jobs[i]->given_back = 1; /* for the acker's count, should it finish after all */
    }
    log_warn("queue %s: drain deadline: gave back %zu unfinished job%s", q->cfg->name, n,
             plural_s((long long) n));
}

/* Whether j finished DONE and waits in the acker for its completion (held:
 * the acker's, so its action may be read): no running job to give back. Made
 * visible, its message would come back and, once its lease lapsed, run again;
 * the acker settles it (lifecycle_on_stop_unwritten). */
static int
done_in_acker(const struct twice_job *j)
{
    return j->held && j->action == JOB_ACT_COMPLETE;
}

void
heartbeat_give_back(struct heartbeat *hb)
{
    struct twice_job **all;
    size_t n;
    if (snapshot(hb, &all, &n) != 0) {
        return;
    }
    struct twice_job **mine = all + n;
    struct worker *w = hb->w;
    for (size_t qi = 0; qi < w->nqueues; qi++) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            if (all[i]->queue == &w->queues[qi] && !timeout_overrun(all[i]) &&
                !done_in_acker(all[i])) {
                mine[m++] = all[i];
            }
        }
        if (m > 0) {
            give_back_queue(hb, &w->queues[qi], mine, m);
        }
    }
    free(all);
}
