/*
 * metrics.c - series in the shared region (shm.h): found or created by
 * open addressing on (metric, labels, process), updated with atomics, and
 * rendered by the master in the Prometheus text format. Counters are
 * integers; gauges and sums are doubles stored as their bits.
 */
#include "metrics.h"

#include "buf.h"
#include "log.h"
#include "shm.h"
#include "utf8.h"
#include "version.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <twice/plugin.h>

static int this_proc = -1;

/* The master's threads walk the listed series (a scrape, /readyz,
 * metrics_gauge_only, metrics_forget_proc) under its read side, and
 * metrics_drop_unnamed frees series under its write side: a walker that
 * read a slot as ready reads it whole, as it is neither freed nor given to
 * another series before the walk ends (take_over's relabelling of a
 * one[m] gauge aside: copy_labels). Per process: only the master walks and
 * frees; workers only look up and make series. */
static pthread_rwlock_t walk = PTHREAD_RWLOCK_INITIALIZER;

/* Each histogram's bucket bounds (ending with -1) and their le labels, so
 * an observation formats nothing. */
static const double duration_buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                          2.5,   5,    10,    30,   60,  120,  300, -1};
static const char *const duration_labels[] = {"0.005", "0.01", "0.025", "0.05", "0.1",
                                              "0.25",  "0.5",  "1",     "2.5",  "5",
                                              "10",    "30",   "60",    "120",  "300"};
/* A message's age: from a healthy queue's fraction of a second to SQS's
 * 14 days of retention. */
static const double age_buckets[] = {0.1,  0.5,  1,     5,     10,    30,     60,      300, 600,
                                     1800, 3600, 10800, 43200, 86400, 345600, 1209600, -1};
static const char *const age_labels[] = {"0.1",   "0.5",   "1",      "5",      "10",   "30",
                                         "60",    "300",   "600",    "1800",   "3600", "10800",
                                         "43200", "86400", "345600", "1209600"};
_Static_assert(sizeof(duration_labels) / sizeof(duration_labels[0]) + 1 ==
                   sizeof(duration_buckets) / sizeof(duration_buckets[0]),
               "a label per duration bucket");
_Static_assert(sizeof(age_labels) / sizeof(age_labels[0]) + 1 ==
                   sizeof(age_buckets) / sizeof(age_buckets[0]),
               "a label per age bucket");

/* Each histogram's buckets: upper bounds ending with -1, and their le labels. */
static const struct {
    const double *bounds;
    const char *const *labels;
} hist[MET_COUNT_] = {
    [MET_DURATION] = {duration_buckets, duration_labels},
    [MET_MESSAGE_AGE] = {age_buckets, age_labels},
};

/* INTERNAL series are shared between processes but never rendered; SECONDS
 * are counters of (fractional) seconds. */
enum kind { COUNTER, GAUGE, PROC_GAUGE, HISTOGRAM, INTERNAL, SECONDS };

static const struct {
    const char *name;
    enum kind kind;
    const char *labels[3];
    const char *help;
} defs[MET_COUNT_] = {
    [MET_RECEIVED] = {"twice_messages_received_total",
                      COUNTER,
                      {"queue"},
                      "Messages received from SQS."},
    [MET_FINISHED] = {"twice_jobs_finished_total",
                      COUNTER,
                      {"queue", "plugin", "outcome"},
                      "Jobs finished, by outcome (done, retry, rejected, deadlettered)."},
    [MET_DEADLETTERED] = {"twice_dead_lettered_total",
                          COUNTER,
                          {"queue", "plugin", "reason"},
                          "Messages twice sent to a dead-letter queue, by reason."},
    [MET_DUPLICATES] = {"twice_duplicates_skipped_total",
                        COUNTER,
                        {"queue", "plugin", "kind"},
                        "Duplicate deliveries absorbed: completed key or live lease."},
    [MET_CONFLICTS] = {"twice_payload_conflicts_total",
                       COUNTER,
                       {"queue", "plugin"},
                       "Completed keys seen again with a different payload."},
    [MET_EXTENSIONS] = {"twice_lease_extensions_total",
                        COUNTER,
                        {"queue"},
                        "Visibility and lease extensions by the heartbeat."},
    [MET_SQS_REQUESTS] = {"twice_sqs_requests_total",
                          COUNTER,
                          {"action", "result"},
                          "SQS requests by action and result."},
    [MET_SQS_ERRORS] = {"twice_sqs_errors_total",
                        COUNTER,
                        {"action", "code"},
                        "SQS errors by action and error code."},
    [MET_PG_ERRORS] = {"twice_pg_errors_total",
                       COUNTER,
                       {"operation"},
                       "PostgreSQL errors by operation."},
    [MET_DLQ_DEPTH] = {"twice_dlq_depth",
                       GAUGE,
                       {"queue"},
                       "ApproximateNumberOfMessages of each queue's DLQ."},
    [MET_ALERTS] = {"twice_alerts_total",
                    COUNTER,
                    {"sink", "result"},
                    "Alerts by sink and result (sent, failed)."},
    [MET_RESTARTS] = {"twice_worker_restarts_total",
                      COUNTER,
                      {"cause"},
                      "Worker processes restarted, by cause."},
    [MET_RECYCLED] = {"twice_worker_recycled_total",
                      COUNTER,
                      {"reason"},
                      "Workers recycled: replaced at once and drained, not crashed, by "
                      "reason (rss: past worker_max_rss; jobs: worker_max_jobs run)."},
    [MET_RELOADS] = {"twice_reloads_total",
                     COUNTER,
                     {"result"},
                     "Configuration reloads by result (ok, failed)."},
    [MET_INFLIGHT] = {"twice_jobs_in_flight",
                      PROC_GAUGE,
                      {"queue", "plugin"},
                      "Jobs inside handle() right now."},
    [MET_DURATION] = {"twice_handler_duration_seconds",
                      HISTOGRAM,
                      {"queue", "plugin"},
                      "Time spent in handle()."},
    [MET_P99] = {"twice_handler_p99_seconds",
                 GAUGE,
                 {"queue", "plugin"},
                 "p99 of handle() duration over the recent window."},
    [MET_LAST_RECEIVE] = {"twice_last_receive_timestamp_seconds",
                          GAUGE,
                          {"queue"},
                          "Unix time of the last successful ReceiveMessage."},
    [MET_SPANS_EXPORTED] = {"twice_spans_exported_total",
                            COUNTER,
                            {NULL},
                            "Job spans a collector accepted."},
    [MET_SPANS_DROPPED] = {"twice_spans_dropped_total",
                           COUNTER,
                           {"reason"},
                           "Job spans not exported: buffer_full (the collector is slow or "
                           "down), export_failed, rejected (by the collector), shutdown."},
    [MET_QUEUE_MESSAGES] = {"twice_queue_messages",
                            GAUGE,
                            {"queue", "state"},
                            "Messages in each queue (SQS's approximate counts), by state: "
                            "visible, in_flight, delayed."},
    [MET_MESSAGE_AGE] = {"twice_message_age_seconds",
                         HISTOGRAM,
                         {"queue"},
                         "Age of each message when received (now - SentTimestamp)."},
    [MET_QUEUE_OLDEST_AGE] = {"twice_queue_oldest_age_seconds",
                              GAUGE,
                              {"queue"},
                              "Age of the oldest message waiting, for autoscaling: the oldest "
                              "received in the last queue_stats_interval; when none was, 0 if "
                              "the queue is known empty (a long poll came back empty, or SQS "
                              "counts no visible message), else the last value grown by the "
                              "time since (messages wait unreceived: handler slots busy, the "
                              "queue paused or its breaker open)."},
    [MET_AGE_WINDOW] = {"twice_internal_age_window", INTERNAL, {"queue"}, ""},
    [MET_EMPTY_WINDOW] = {"twice_internal_empty_window", INTERNAL, {"queue"}, ""},
    [MET_OUTBOX_PENDING] = {"twice_outbox_pending",
                            GAUGE,
                            {NULL},
                            "Follow-up messages in the outbox waiting to be sent."},
    [MET_OUTBOX_OLDEST] = {"twice_outbox_oldest_pending_seconds",
                           GAUGE,
                           {NULL},
                           "Age of the oldest follow-up message waiting in the outbox."},
    [MET_OUTBOX_REFUSED_ROWS] = {"twice_outbox_refused",
                                 GAUGE,
                                 {NULL},
                                 "Follow-up messages SQS refused for good, kept in the outbox."},
    [MET_OUTBOX_SENT] = {"twice_outbox_sent_total",
                         COUNTER,
                         {"queue", "via"},
                         "Follow-up messages SQS took, by target queue and sender: via relay "
                         "(the outbox relay) or direct (a stopping worker whose completion "
                         "could not be written, straight to SQS)."},
    [MET_OUTBOX_REFUSED] = {"twice_outbox_refused_total",
                            COUNTER,
                            {"queue"},
                            "Follow-up messages SQS refused for good, by target queue."},
    [MET_RATE_LIMITED] = {"twice_rate_limited_seconds_total",
                          SECONDS,
                          {"limit"},
                          "Seconds jobs waited for a token of a rate limit (plugin:NAME, "
                          "queue:NAME)."},
    [MET_QUEUE_PAUSED] = {"twice_queue_paused",
                          GAUGE,
                          {"queue", "reason"},
                          "1 while the queue is paused (reason: the operator's, or breaker); "
                          "reason \"\" at 0 while it runs. One series per queue: the current "
                          "state only."},
    [MET_RECEIVE_FAILED] = {"twice_internal_receive_failed", INTERNAL, {"queue", "code"}, ""},
    [MET_CLAIMS_REFUSED] = {"twice_internal_claims_refused", INTERNAL, {"queue", "sqlstate"}, ""},
};

/* Gauges of one series per first label (metrics_gauge_only), whose other
 * labels change (a queue's pause reason, free text): their series hash on
 * the first label alone, so that each new value takes over the slot of one
 * dropped before rather than take a new slot for good. A table of its own,
 * designated, so that defs' rows need not each say 0. */
static const int one[MET_COUNT_] = {[MET_QUEUE_PAUSED] = 1};

void
metrics_set_proc(int proc_slot)
{
    this_proc = proc_slot;
}

/* The bytes of label value v the shared region keeps: at most SHM_LABEL - 1,
 * and a value cut there loses the whole UTF-8 character the cut would split
 * (an operator's pause reason can be long and in any script): /metrics must
 * be valid UTF-8, or Prometheus drops the whole scrape. */
static size_t
label_kept(const char *v)
{
    size_t n = strnlen(v, SHM_LABEL - 1);
    /* Cut inside a character: back to its first byte (at most 3 steps; a
     * longer run of continuation bytes is no UTF-8, which rendering shows). */
    for (int k = 0; k < 3 && n > 0 && ((unsigned char) v[n] & 0xc0) == 0x80; k++) {
        n--;
    }
    return n;
}

/* A series' three label values as they are stored: NULL as "", each cut
 * as label_kept says. Measured once per look-up, for the hash and every
 * comparison the probe makes. */
struct labels {
    const char *v[3];
    size_t n[3];
};

static struct labels
labels_of(const char *l1, const char *l2, const char *l3)
{
    struct labels ls = {{l1 != NULL ? l1 : "", l2 != NULL ? l2 : "", l3 != NULL ? l3 : ""}, {0}};
    for (int i = 0; i < 3; i++) {
        ls.n[i] = label_kept(ls.v[i]);
    }
    return ls;
}

static uint64_t
hash_series(int m, int proc, const struct labels *ls)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t) (m * 31 + proc + 7);
    for (int i = 0; i < (one[m] ? 1 : 3); i++) {
        /* As stored: labels that differ only past what is kept are one series. */
        for (size_t k = 0; k < ls->n[i]; k++) {
            h = (h ^ (unsigned char) ls->v[i][k]) * 1099511628211ull;
        }
        h = (h ^ 0xff) * 1099511628211ull;
    }
    return h;
}

/* Whether a stored label is want as it would be stored: cut as label_kept
 * says. Every count and gauge call compares this way, so no copy of want is
 * made. */
static int
label_is(const char *stored, const char *want)
{
    size_t n = label_kept(want);
    return memcmp(stored, want, n) == 0 && stored[n] == '\0';
}

static inline __attribute__((always_inline)) int
same_series(const struct shm_series *s, int m, int proc, const struct labels *ls)
{
    if (__atomic_load_n(&s->metric, __ATOMIC_RELAXED) != m ||
        __atomic_load_n(&s->proc, __ATOMIC_RELAXED) != proc) {
        return 0;
    }
    for (int i = 0; i < 3; i++) {
        if (memcmp(s->labels[i], ls->v[i], ls->n[i]) != 0 || s->labels[i][ls->n[i]] != '\0') {
            return 0;
        }
    }
    return 1;
}

/* A series' labels written into its slot (state 1, its writer's alone).
 * Byte by byte as atomics: a render may read a one[m] gauge's labels
 * while take_over rewrites them (copy_labels), and both sides are then
 * atomic accesses, which the thread sanitizer can check. A series is made
 * once, so the cost does not matter. */
static void
put_labels(struct shm_series *s, const struct labels *ls)
{
    for (int i = 0; i < 3; i++) {
        for (size_t k = 0; k < ls->n[i]; k++) {
            __atomic_store_n(&s->labels[i][k], ls->v[i][k], __ATOMIC_RELAXED);
        }
        __atomic_store_n(&s->labels[i][ls->n[i]], '\0', __ATOMIC_RELAXED);
    }
}

/* The labels and value of a one[m] gauge's slot copied into out and
 * *v as a render reads them, while take_over may be rewriting them: 0 when
 * the copy is of one series (relabels even and unchanged around it), else -1. Acquire
 * loads keep the second read of relabels after every byte's (seqlock
 * readers usually take a fence there, which the thread sanitizer does not
 * model). */
static int
copy_labels(const struct shm_series *s, char out[3][SHM_LABEL], uint64_t *v)
{
    int seq = __atomic_load_n(&s->relabels, __ATOMIC_ACQUIRE);
    *v = __atomic_load_n(&s->value, __ATOMIC_ACQUIRE);
    for (int i = 0; i < 3; i++) {
        for (size_t k = 0; k < SHM_LABEL; k++) {
            out[i][k] = __atomic_load_n(&s->labels[i][k], __ATOMIC_ACQUIRE);
        }
        out[i][SHM_LABEL - 1] = '\0';
    }
    return (seq & 1) == 0 && __atomic_load_n(&s->relabels, __ATOMIC_ACQUIRE) == seq ? 0 : -1;
}

/* Whether s is a dropped series of m (a one[m] gauge) for proc and l1,
 * whatever its other labels: a slot the series of ls may take over. */
static int
dropped_sibling(const struct shm_series *s, int st, int m, int proc, const struct labels *ls)
{
    return one[m] && st == SHM_SLOT_DROPPED && s->metric == m && s->proc == proc &&
           memcmp(s->labels[0], ls->v[0], ls->n[0]) == 0 && s->labels[0][ls->n[0]] == '\0';
}

/* Give the dropped slot s (dropped_sibling) the labels ls, at 0: 1, or 0
 * when it is no longer dropped. Only m's single writer calls this (the
 * contract of metrics_gauge_only); relabels is odd meanwhile, so that a
 * render that found the slot ready before it was dropped can tell. */
static int
take_over(struct shm_series *s, const struct labels *ls)
{
    int expected = SHM_SLOT_DROPPED;
    if (!__atomic_compare_exchange_n(&s->state, &expected, 1, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        return 0;
    }
    __atomic_add_fetch(&s->relabels, 1, __ATOMIC_ACQ_REL);
    put_labels(s, ls);
    __atomic_store_n(&s->value, 0, __ATOMIC_RELAXED);
    __atomic_add_fetch(&s->relabels, 1, __ATOMIC_ACQ_REL);
    __atomic_store_n(&s->state, 2, __ATOMIC_RELEASE);
    return 1;
}

/* A new series found no slot: counted, and said once for the whole
 * instance (by the process that counted first). The table holds the series
 * of the names some live configuration has (metrics_drop_unnamed frees the
 * others once their generations are gone) and the dropped ones
 * metrics_gauge_only reuses: only that many series fill it. */
static void
table_full(struct shm_region *r)
{
    if (__atomic_fetch_add(&r->series_unrecorded, 1, __ATOMIC_RELAXED) == 0) {
        log_warn("metrics: the series table is full (%d series): updates of new series are "
                 "not recorded (twice_metric_series_unrecorded_total counts them): more series "
                 "are in use at once than it holds",
                 SHM_SERIES);
    }
}

/*
 * How the table is shared (every process maps it, none waits on a lookup):
 *
 * - A lookup of a series that exists takes no lock: it probes from the
 *   series' hash to its slot, past slots of other series, dropped ones and
 *   freed ones (SHM_SLOT_FREED, tombstones), and stops at the first slot
 *   never used (state 0): nothing is ever made past one. A freed slot goes
 *   back to 0 only where no chain to a series passes it (clear_tombstones),
 *   so freeing a series breaks no other's probe chain.
 * - Making a series and freeing series take series_lock. A maker probes the
 *   chain again under it and takes the first freed or never-used slot on it:
 *   with frees and other makes excluded, two processes making one series
 *   agree on that slot, so a series is never made twice.
 * - A freed slot is given to a new series while lookups may still be
 *   comparing its old labels: the maker holds relabels odd while it writes
 *   them, and a lookup counts a match only when relabels was even and the
 *   same around its comparison (lookup_match), so no torn mix of old and new
 *   labels is ever taken for a series.
 * - A series is freed only when no process can update it any more
 *   (metrics_drop_unnamed's contract): an updater holds a slot's pointer
 *   only between its lookup and its update, so no update lands in a slot
 *   after it was given to another series.
 */

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define METRICS_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define METRICS_TSAN 1
#endif

/* relabels read again after a lookup compared a slot's labels, the compare
 * ordered before it. ThreadSanitizer does not model fences (GCC refuses
 * them under -fsanitize=thread): its builds read it with a read-modify-write
 * of 0, which orders the same reads, a store only those builds pay. */
static inline __attribute__((always_inline)) int
relabels_after(const struct shm_series *s)
{
#ifdef METRICS_TSAN
    return __atomic_fetch_add((int *) &s->relabels, 0, __ATOMIC_ACQ_REL);
#else
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return __atomic_load_n(&s->relabels, __ATOMIC_RELAXED);
#endif
}

/* Whether s, read as ready, is the series (m, proc, ls): its labels compared
 * between two reads of relabels, which a maker giving the slot new labels
 * holds odd meanwhile (above). Plain reads of the labels: those of a ready
 * slot change only after it was freed, which this check catches. */
static inline __attribute__((always_inline)) int
lookup_match(const struct shm_series *s, int m, int proc, const struct labels *ls)
{
    int seq = __atomic_load_n(&s->relabels, __ATOMIC_ACQUIRE);
    if (!same_series(s, m, proc, ls)) {
        return 0;
    }
    return (seq & 1) == 0 && relabels_after(s) == seq;
}

/* probe, lookup_match and same_series are forced inline: they are every
 * update's path, and out of line (probe has two callers) they cost ~70
 * instructions more per update than the single loop they replaced (~520);
 * inline, ~18 (valgrind, 400,000 counts of 500 series). */

/* Where a probe chain ended: the first free or freed slot met (where the
 * series would be made), and the first dropped sibling (take_over). */
struct probe_end {
    struct shm_series *hole;
    struct shm_series *sibling;
};

/* The series (m, proc, ls) on its probe chain from h, or NULL when absent
 * (*end says where it would go). A series metrics_gauge_only dropped is
 * absent for a read, and ready again when create. */
static inline __attribute__((always_inline)) struct shm_series *
probe(struct shm_region *r, uint64_t h, int m, int proc, const struct labels *ls, int create,
      struct probe_end *end)
{
    for (size_t i = 0; i < SHM_SERIES; i++) {
        struct shm_series *s = &r->series[(h + i) % SHM_SERIES];
        int st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
        if (st == 0 || st == SHM_SLOT_FREED) {
            end->hole = end->hole != NULL ? end->hole : s;
            if (st == 0) {
                return NULL; /* probing stops at the first slot never used: absent */
            }
            continue;
        }
        if (st == 1) { /* another process is writing its labels */
            st = shm_slot_state(&s->state);
        }
        if (st == 2 && lookup_match(s, m, proc, ls)) {
            return s;
        }
        if (st == SHM_SLOT_DROPPED && same_series(s, m, proc, ls)) {
            /* metrics_gauge_only dropped it: absent when read, back when set. */
            if (!create) {
                return NULL;
            }
            int expected = SHM_SLOT_DROPPED;
            if (__atomic_compare_exchange_n(&s->state, &expected, 2, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE) ||
                expected == 2) {
                return s;
            }
            continue; /* freed meanwhile (metrics_drop_unnamed): not this series' any more */
        }
        if (end->sibling == NULL && create && dropped_sibling(s, st, m, proc, ls)) {
            end->sibling = s; /* taken over if the series turns out absent */
        }
    }
    return NULL;
}

/* series_lock, taken from a holder that died if need be (its half-made
 * slot, state 1, is marked abandoned by whoever meets it). 0, or -1. */
static int
lock_series(struct shm_region *r)
{
    int rc = pthread_mutex_lock(&r->series_lock);
    if (rc == EOWNERDEAD) {
        rc = pthread_mutex_consistent(&r->series_lock);
    }
    return rc == 0 ? 0 : -1;
}

/* The series (m, proc, ls) written into hole, a free or freed slot, under
 * series_lock. A slot used for the first time is listed; a freed one keeps
 * its place in the list. */
static struct shm_series *
make_series(struct shm_region *r, struct shm_series *hole, int m, int proc,
            const struct labels *ls)
{
    int was = __atomic_load_n(&hole->state, __ATOMIC_ACQUIRE);
    if (!__atomic_compare_exchange_n(&hole->state, &was, 1, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        return NULL; /* not possible under the lock; said as a full table */
    }
    /* Never made before: relabels still 0 (clear_tombstones may have set a
     * used slot's state back to 0, and it is listed already). */
    int fresh = __atomic_fetch_add(&hole->relabels, 1, __ATOMIC_ACQ_REL) == 0;
    __atomic_store_n(&hole->metric, m, __ATOMIC_RELAXED); /* a lookup may compare them */
    __atomic_store_n(&hole->proc, proc, __ATOMIC_RELAXED);
    put_labels(hole, ls);
    __atomic_store_n(&hole->value, 0, __ATOMIC_RELAXED); /* a name back: counters from 0 */
    __atomic_add_fetch(&hole->relabels, 1, __ATOMIC_ACQ_REL);
    if (fresh) {
        /* Listed before it is ready: a writer dying in between leaves a
         * listed slot that readers skip, never a ready one unlisted. */
        int k = __atomic_fetch_add(&r->series_listed, 1, __ATOMIC_ACQ_REL);
        __atomic_store_n(&r->series_order[k], (int) (hole - r->series) + 1, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&hole->state, 2, __ATOMIC_RELEASE);
    return hole;
}

/* An absent series made: probed again under series_lock (another process
 * may have made it, or freed slots, since), then a dropped sibling taken
 * over or the first hole of the chain taken. NULL when the table is full. */
static struct shm_series *
create_series(struct shm_region *r, uint64_t h, int m, int proc, const struct labels *ls)
{
    if (lock_series(r) != 0) {
        table_full(r);
        return NULL;
    }
    struct probe_end end = {NULL, NULL};
    struct shm_series *s = probe(r, h, m, proc, ls, 1, &end);
    if (s == NULL && end.sibling != NULL && take_over(end.sibling, ls)) {
        s = end.sibling;
    }
    if (s == NULL && end.hole != NULL) {
        s = make_series(r, end.hole, m, proc, ls);
    }
    pthread_mutex_unlock(&r->series_lock);
    if (s == NULL) {
        table_full(r);
    }
    return s;
}

/* The series for (m, labels, proc), created when absent if create; NULL
 * when absent (and not created), the table is full or not mapped. A new
 * series of a one[m] gauge takes over a dropped one of its first label
 * met on the way, so each of those holds at most two slots (the value shown
 * and the one before, dropped), however many values it shows over time.
 * A series that exists is found without a lock (How the table is shared). */
static struct shm_series *
find_series(int m, int proc, const char *l1, const char *l2, const char *l3, int create)
{
    struct shm_region *r = shm_region();
    if (r == NULL) {
        return NULL;
    }
    struct labels ls = labels_of(l1, l2, l3);
    uint64_t h = hash_series(m, proc, &ls);
    struct probe_end end = {NULL, NULL};
    struct shm_series *s = probe(r, h, m, proc, &ls, create, &end);
    if (s != NULL || !create) {
        return s;
    }
    if (end.sibling != NULL && take_over(end.sibling, &ls)) {
        return end.sibling; /* absent: it takes the dropped sibling's slot */
    }
    return create_series(r, h, m, proc, &ls);
}

static struct shm_series *
series(int m, int proc, const char *l1, const char *l2, const char *l3)
{
    return find_series(m, proc, l1, l2, l3, 1);
}

static double
bits_to_double(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof(d));
    return d;
}

static uint64_t
double_to_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof(u));
    return u;
}

static void
add_double(struct shm_series *s, double delta)
{
    uint64_t old = __atomic_load_n(&s->value, __ATOMIC_RELAXED);
    uint64_t new_;
    do {
        new_ = double_to_bits(bits_to_double(old) + delta);
    } while (!__atomic_compare_exchange_n(&s->value, &old, new_, 1, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
}

void
metrics_count(enum metric m, const char *l1, const char *l2, const char *l3, uint64_t n)
{
    struct shm_series *s = series(m, -1, l1, l2, l3);
    if (s != NULL) {
        __atomic_fetch_add(&s->value, n, __ATOMIC_RELAXED);
    }
}

void
metrics_count_seconds(enum metric m, const char *l1, double seconds)
{
    struct shm_series *s = series(m, -1, l1, NULL, NULL);
    if (s != NULL) {
        add_double(s, seconds);
    }
}

void
metrics_gauge_set(enum metric m, const char *l1, const char *l2, double v)
{
    struct shm_series *s = series(m, defs[m].kind == PROC_GAUGE ? this_proc : -1, l1, l2, NULL);
    if (s != NULL) {
        __atomic_store_n(&s->value, double_to_bits(v), __ATOMIC_RELAXED);
    }
}

void
metrics_gauge_add(enum metric m, const char *l1, const char *l2, double delta)
{
    struct shm_series *s = series(m, defs[m].kind == PROC_GAUGE ? this_proc : -1, l1, l2, NULL);
    if (s != NULL) {
        add_double(s, delta);
    }
}

double
metrics_gauge_get(enum metric m, const char *l1, const char *l2)
{
    struct shm_series *s = find_series(m, -1, l1, l2, NULL, 0); /* reading creates nothing */
    return s != NULL ? bits_to_double(__atomic_load_n(&s->value, __ATOMIC_RELAXED)) : 0;
}

void
metrics_gauge_max(enum metric m, const char *l1, const char *l2, double v)
{
    struct shm_series *s = series(m, -1, l1, l2, NULL);
    if (s == NULL) {
        return;
    }
    uint64_t old = __atomic_load_n(&s->value, __ATOMIC_RELAXED);
    while (bits_to_double(old) < v &&
           !__atomic_compare_exchange_n(&s->value, &old, double_to_bits(v), 1, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
    }
}

double
metrics_gauge_take(enum metric m, const char *l1, const char *l2)
{
    struct shm_series *s = find_series(m, -1, l1, l2, NULL, 0);
    if (s == NULL) {
        return 0;
    }
    return bits_to_double(__atomic_exchange_n(&s->value, double_to_bits(0), __ATOMIC_RELAXED));
}

#define MAX_BUCKETS 32

/* Buckets are counter series with le in the third label; the sum is a
 * double series with le "sum", the count an integer series "count". The
 * values are counted here first, so a batch costs one update per bucket it
 * touches (a series lookup each), not one per value. The count goes up
 * before the buckets, whose increments release it: a scrape reads the
 * buckets (acquire, hist_value) and then the count, so it never shows a
 * bucket above +Inf and _count. (Fences would do the same, but TSan cannot
 * check them.) */
void
metrics_observe_many(enum metric m, const char *l1, const char *l2, const double *values, size_t n)
{
    const double *b = hist[m].bounds;
    uint64_t counts[MAX_BUCKETS] = {0};
    double total = 0;
    for (size_t i = 0; i < n; i++) {
        total += values[i];
        for (size_t k = 0; b != NULL && k < MAX_BUCKETS && b[k] >= 0; k++) {
            if (values[i] <= b[k]) {
                counts[k]++;
                break;
            }
        }
    }
    metrics_count(m, l1, l2, "count", n);
    for (size_t k = 0; b != NULL && k < MAX_BUCKETS && b[k] >= 0; k++) {
        struct shm_series *bucket =
            counts[k] > 0 ? series(m, -1, l1, l2, hist[m].labels[k]) : NULL;
        if (bucket != NULL) { /* release: the count's increment is seen with it */
            __atomic_fetch_add(&bucket->value, counts[k], __ATOMIC_RELEASE);
        }
    }
    struct shm_series *sum = series(m, -1, l1, l2, "sum");
    if (sum != NULL) {
        add_double(sum, total);
    }
}

void
metrics_observe(enum metric m, const char *l1, const char *l2, double seconds)
{
    metrics_observe_many(m, l1, l2, &seconds, 1);
}

/* How many series are listed, and the slot of the k-th when it is ready
 * (-1 while it is being listed or written): walks in creation order, over
 * the series that exist. */
static int
listed(const struct shm_region *r)
{
    int n = __atomic_load_n(&r->series_listed, __ATOMIC_ACQUIRE);
    return n < SHM_SERIES ? n : SHM_SERIES;
}

static int
ready_slot(const struct shm_region *r, int k)
{
    int slot = __atomic_load_n(&r->series_order[k], __ATOMIC_ACQUIRE) - 1;
    return slot >= 0 && __atomic_load_n(&r->series[slot].state, __ATOMIC_ACQUIRE) == 2 ? slot : -1;
}

void
metrics_forget_proc(int proc_slot)
{
    struct shm_region *r = shm_region();
    if (r == NULL) {
        return;
    }
    pthread_rwlock_rdlock(&walk);
    for (int k = 0, n = listed(r); k < n; k++) {
        int slot = ready_slot(r, k);
        if (slot >= 0 && r->series[slot].proc == proc_slot) {
            __atomic_store_n(&r->series[slot].value, double_to_bits(0), __ATOMIC_RELAXED);
        }
    }
    pthread_rwlock_unlock(&walk);
}

void
metrics_gauge_only(enum metric m, const char *l1, const char *l2, double v)
{
    metrics_gauge_set(m, l1, l2, v);
    struct shm_region *r = shm_region();
    if (r == NULL) {
        return;
    }
    struct labels keep = labels_of(l1, l2, NULL);
    pthread_rwlock_rdlock(&walk);
    for (int k = 0, n = listed(r); k < n; k++) {
        int slot = ready_slot(r, k);
        struct shm_series *s = slot >= 0 ? &r->series[slot] : NULL;
        if (s != NULL && s->metric == (int) m && s->proc == -1 &&
            label_is(s->labels[0], l1 != NULL ? l1 : "") && !same_series(s, m, -1, &keep)) {
            int expected = 2;
            __atomic_compare_exchange_n(&s->state, &expected, SHM_SLOT_DROPPED, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
        }
    }
    pthread_rwlock_unlock(&walk);
}

/* What label i of metric m names, for metrics_drop_unnamed: a configured
 * queue, a plugin, or a rate limit ("plugin:NAME", "queue:NAME"); nothing
 * for other labels, and for the target of a follow-up message, which may be
 * any queue, configured or not. */
enum names { NAMES_NOTHING, NAMES_QUEUE, NAMES_PLUGIN, NAMES_LIMIT };

static enum names
label_names(int m, int i)
{
    const char *l = defs[m].labels[i];
    if (l == NULL || m == MET_OUTBOX_SENT || m == MET_OUTBOX_REFUSED) {
        return NAMES_NOTHING;
    }
    return strcmp(l, "queue") == 0    ? NAMES_QUEUE
           : strcmp(l, "plugin") == 0 ? NAMES_PLUGIN
           : strcmp(l, "limit") == 0  ? NAMES_LIMIT
                                      : NAMES_NOTHING;
}

/* Whether the ready or dropped series s names a queue or plugin live()
 * does not know. Its labels are copied as a render copies them: a one[m]
 * gauge's may be relabelled meanwhile (kept then, until the next call). */
static int
names_dead(const struct shm_series *s, metrics_live_fn live, void *arg)
{
    char labels[3][SHM_LABEL];
    uint64_t v;
    int m = s->metric;
    if (m < 0 || m >= MET_COUNT_ || copy_labels(s, labels, &v) != 0) {
        return 0;
    }
    for (int i = 0; i < 3; i++) {
        const char *l = labels[i];
        switch (label_names(m, i)) {
        case NAMES_QUEUE:
            if (!live(arg, l, 0)) {
                return 1;
            }
            break;
        case NAMES_PLUGIN:
            if (!live(arg, l, 1)) {
                return 1;
            }
            break;
        case NAMES_LIMIT:
            if ((strncmp(l, "plugin:", 7) == 0 && !live(arg, l + 7, 1)) ||
                (strncmp(l, "queue:", 6) == 0 && !live(arg, l + 6, 0))) {
                return 1;
            }
            break;
        case NAMES_NOTHING:
            break;
        }
    }
    return 0;
}

/* Freed slots no probe chain needs any more set back to never used, so
 * that lookups of absent series and makers stop early again after many
 * frees: a run of freed slots right before a slot never used is on no
 * chain that leads to a series (a series is made in the first hole of its
 * chain, so none lies past a slot never used), and is cleared backward from
 * that slot, so a lookup meets the 0 no later than it would have ended
 * anyway. Under series_lock. */
static void
clear_tombstones(struct shm_region *r)
{
    for (size_t i = 0; i < SHM_SERIES; i++) {
        if (__atomic_load_n(&r->series[i].state, __ATOMIC_ACQUIRE) != 0) {
            continue;
        }
        for (size_t k = 1; k < SHM_SERIES; k++) {
            int expected = SHM_SLOT_FREED;
            if (!__atomic_compare_exchange_n(&r->series[(i + SHM_SERIES - k) % SHM_SERIES].state,
                                             &expected, 0, 0, __ATOMIC_ACQ_REL,
                                             __ATOMIC_ACQUIRE)) {
                break;
            }
        }
    }
}

int
metrics_drop_unnamed(metrics_live_fn live, void *arg)
{
    struct shm_region *r = shm_region();
    int freed = 0;
    if (r == NULL) {
        return 0;
    }
    pthread_rwlock_wrlock(&walk); /* no walker reads a slot freed under it */
    if (lock_series(r) != 0) {    /* no series made meanwhile (How the table is shared) */
        pthread_rwlock_unlock(&walk);
        return -1;
    }
    for (int k = 0, n = listed(r); k < n; k++) {
        int slot = __atomic_load_n(&r->series_order[k], __ATOMIC_ACQUIRE) - 1;
        struct shm_series *s = slot >= 0 ? &r->series[slot] : NULL;
        int st = s != NULL ? __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) : 0;
        if ((st == 2 || st == SHM_SLOT_DROPPED) && names_dead(s, live, arg) &&
            __atomic_compare_exchange_n(&s->state, &st, SHM_SLOT_FREED, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            freed++;
        }
    }
    clear_tombstones(r);
    pthread_mutex_unlock(&r->series_lock);
    pthread_rwlock_unlock(&walk);
    return freed;
}

int
metrics_gauge_latest(enum metric m, const char *l1, char *l2, size_t cap, double *value)
{
    struct shm_region *r = shm_region();
    int found = 0;
    pthread_rwlock_rdlock(&walk);
    for (int k = 0, n = r != NULL ? listed(r) : 0; k < n; k++) {
        int slot = ready_slot(r, k);
        const struct shm_series *s = slot >= 0 ? &r->series[slot] : NULL;
        if (s == NULL || s->metric != (int) m || s->proc != -1 ||
            !label_is(s->labels[0], l1 != NULL ? l1 : "")) {
            continue;
        }
        double v = bits_to_double(__atomic_load_n(&s->value, __ATOMIC_RELAXED));
        if (!found || v > *value) {
            *value = v;
            snprintf(l2, cap, "%s", s->labels[1]);
            found = 1;
        }
    }
    pthread_rwlock_unlock(&walk);
    return found;
}

/* Prometheus label values escape backslash, double quote and newline, and
 * are UTF-8: a byte that is not (an SQS error code is the server's text)
 * shows as U+FFFD rather than spoil the whole body. */
static void
put_label_value(struct buf *out, const char *v)
{
    size_t left = strlen(v);
    while (left > 0) {
        size_t len = utf8_seq_len((const unsigned char *) v, left);
        if (len == 0) {
            buf_puts(out, "\xef\xbf\xbd");
            len = 1;
        } else if (*v == '\\' || *v == '"') {
            buf_putc(out, '\\');
            buf_putc(out, *v);
        } else if (*v == '\n') {
            buf_puts(out, "\\n");
        } else {
            buf_append(out, v, len);
        }
        v += len;
        left -= len;
    }
}

/* name{l1="v1",l2="v2"[,extra]} with only the metric's declared labels. */
static void
put_series_name(struct buf *out, const char *name, int m, const char labels[3][SHM_LABEL],
                const char *extra)
{
    int first = 1;
    buf_puts(out, name);
    for (int i = 0; i < 3 && defs[m].labels[i] != NULL; i++) {
        buf_printf(out, "%s%s=\"", first ? "{" : ",", defs[m].labels[i]);
        put_label_value(out, labels[i]);
        buf_putc(out, '"');
        first = 0;
    }
    if (extra != NULL) {
        buf_printf(out, "%s%s", first ? "{" : ",", extra);
        first = 0;
    }
    if (!first) {
        buf_putc(out, '}');
    }
}

static int
labels_equal(const struct shm_series *a, const struct shm_series *b, int n)
{
    for (int i = 0; i < n; i++) {
        if (strcmp(a->labels[i], b->labels[i]) != 0) {
            return 0;
        }
    }
    return 1;
}

/* The k-th listed series when it is ready and of metric m, else NULL. */
static const struct shm_series *
ready_at(const struct shm_region *r, int k, int m)
{
    int slot = ready_slot(r, k);
    return slot >= 0 && r->series[slot].metric == m ? &r->series[slot] : NULL;
}

/* Per-process gauges: the sum over processes of the series with the same
 * labels, printed once (at the first such series). */
static void
render_proc_gauge(struct buf *out, const struct shm_region *r, int m)
{
    int n = listed(r);
    for (int i = 0; i < n; i++) {
        const struct shm_series *s = ready_at(r, i, m);
        if (s == NULL) {
            continue;
        }
        int seen = 0;
        double sum = 0;
        for (int k = 0; k < n && !seen; k++) {
            const struct shm_series *o = ready_at(r, k, m);
            if (o != NULL && labels_equal(o, s, 3)) {
                if (k < i) {
                    seen = 1;
                }
                sum += bits_to_double(__atomic_load_n(&o->value, __ATOMIC_RELAXED));
            }
        }
        if (!seen) {
            put_series_name(out, defs[m].name, m, s->labels, NULL);
            buf_printf(out, " %.17g\n", sum);
        }
    }
}

static uint64_t
hist_value(const struct shm_region *r, int m, const struct shm_series *group, const char *le)
{
    for (int k = 0, n = listed(r); k < n; k++) {
        const struct shm_series *o = ready_at(r, k, m);
        if (o != NULL && labels_equal(o, group, 2) && strcmp(o->labels[2], le) == 0) {
            return __atomic_load_n(&o->value, __ATOMIC_ACQUIRE); /* metrics_observe_many */
        }
    }
    return 0;
}

static void
render_histogram(struct buf *out, const struct shm_region *r, int m)
{
    char name[128], le[48];
    for (int i = 0, n = listed(r); i < n; i++) {
        const struct shm_series *s = ready_at(r, i, m);
        if (s == NULL || strcmp(s->labels[2], "count") != 0) {
            continue; /* one group per "count" series */
        }
        uint64_t cumulative = 0;
        snprintf(name, sizeof(name), "%s_bucket", defs[m].name);
        for (size_t b = 0; hist[m].bounds[b] >= 0; b++) {
            const char *bound = hist[m].labels[b];
            cumulative += hist_value(r, m, s, bound);
            snprintf(le, sizeof(le), "le=\"%s\"", bound);
            put_series_name(out, name, m, s->labels, le);
            buf_printf(out, " %llu\n", (unsigned long long) cumulative);
        }
        uint64_t count = __atomic_load_n(&s->value, __ATOMIC_RELAXED);
        put_series_name(out, name, m, s->labels, "le=\"+Inf\"");
        buf_printf(out, " %llu\n", (unsigned long long) count);
        snprintf(name, sizeof(name), "%s_sum", defs[m].name);
        put_series_name(out, name, m, s->labels, NULL);
        buf_printf(out, " %.17g\n", bits_to_double(hist_value(r, m, s, "sum")));
        snprintf(name, sizeof(name), "%s_count", defs[m].name);
        put_series_name(out, name, m, s->labels, NULL);
        buf_printf(out, " %llu\n", (unsigned long long) count);
    }
}

/* Counters and gauges, a line per series. A one[m] gauge's slot may
 * be given other labels (take_over) while its line is written: its labels
 * are copied first (copy_labels), and the line is left out when the copy
 * was torn, as the series was being dropped. */
static void
render_plain(struct buf *out, const struct shm_region *r, int m)
{
    char copy[3][SHM_LABEL];
    for (int i = 0, n = listed(r); i < n; i++) {
        const struct shm_series *s = ready_at(r, i, m);
        uint64_t v = 0;
        if (s == NULL || s->proc != -1 || (one[m] && copy_labels(s, copy, &v) != 0)) {
            continue;
        }
        if (!one[m]) {
            v = __atomic_load_n(&s->value, __ATOMIC_RELAXED);
        }
        put_series_name(out, defs[m].name, m, one[m] ? copy : s->labels, NULL);
        if (defs[m].kind == COUNTER) {
            buf_printf(out, " %llu\n", (unsigned long long) v);
        } else {
            buf_printf(out, " %.17g\n", bits_to_double(v));
        }
    }
}

int
metrics_render(struct buf *out)
{
    static const char *const type_names[] = {"counter",   "gauge", "gauge",
                                             "histogram", "",      "counter"};
    struct shm_region *r = shm_region();
    buf_printf(out,
               "# HELP twice_build_info Version of twiced and of its plugin ABI.\n"
               "# TYPE twice_build_info gauge\n"
               "twice_build_info{version=\"%s\",abi=\"%d.%d\"} 1\n",
               TWICE_VERSION, TWICE_ABI_MAJOR, TWICE_ABI_MINOR);
    if (r != NULL) {
        static const char unrecorded[] = "twice_metric_series_unrecorded_total";
        buf_printf(out,
                   "# HELP %s Updates of new metric series not recorded: the instance's series "
                   "table (%d) is full.\n# TYPE %s counter\n%s %llu\n",
                   unrecorded, SHM_SERIES, unrecorded, unrecorded,
                   (unsigned long long) __atomic_load_n(&r->series_unrecorded, __ATOMIC_RELAXED));
    }
    pthread_rwlock_rdlock(&walk);
    for (int m = 0; m < MET_COUNT_ && r != NULL; m++) {
        if (defs[m].kind == INTERNAL) {
            continue;
        }
        buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", defs[m].name, defs[m].help, defs[m].name,
                   type_names[defs[m].kind]);
        if (defs[m].kind == PROC_GAUGE) {
            render_proc_gauge(out, r, m);
        } else if (defs[m].kind == HISTOGRAM) {
            render_histogram(out, r, m);
        } else {
            render_plain(out, r, m);
        }
    }
    pthread_rwlock_unlock(&walk);
    return out->failed ? -1 : 0;
}
