/*
 * metrics.c - the metrics twiced exports: their definitions, the updates
 * every process makes with atomics on their series in the shared region,
 * and the master's rendering in the Prometheus text format. Counters are
 * integers; gauges and sums are doubles stored as their bits. Where a series
 * lives, and how processes share the table, is series.c's.
 */
#include "metrics.h"

#include "buf.h"
#include "series.h"
#include "shm.h"
#include "utf8.h"
#include "version.h"

#include <stdio.h>
#include <string.h>

#include <twice/plugin.h>

static int this_proc = -1;

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

/* The series (m, labels, proc), made when absent (series.h). */
static struct shm_series *
series(int m, int proc, const char *l1, const char *l2, const char *l3)
{
    return series_find(m, one[m], proc, l1, l2, l3, 1);
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
    struct shm_series *s =
        series_find(m, one[m], -1, l1, l2, NULL, 0); /* reading creates nothing */
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
    struct shm_series *s = series_find(m, one[m], -1, l1, l2, NULL, 0);
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

void
metrics_forget_proc(int proc_slot)
{
    series_forget_proc(proc_slot);
}

void
metrics_gauge_only(enum metric m, const char *l1, const char *l2, double v)
{
    metrics_gauge_set(m, l1, l2, v);
    series_drop_siblings(m, l1, l2);
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

/* metrics_drop_unnamed's live() and its argument, for names_dead. */
struct live_names {
    metrics_live_fn live;
    void *arg;
};

/* series_free_if's dead(): whether the ready or dropped series s names a
 * queue or plugin ln's live() does not know. Its labels are copied as a
 * render copies them: a one[m] gauge's may be relabelled meanwhile (kept
 * then, until the next call). */
static int
names_dead(void *ln_, const struct shm_series *s)
{
    const struct live_names *ln = ln_;
    metrics_live_fn live = ln->live;
    void *arg = ln->arg;
    char labels[3][SHM_LABEL];
    uint64_t v;
    int m = s->metric;
    if (m < 0 || m >= MET_COUNT_ || series_copy_labels(s, labels, &v) != 0) {
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

int
metrics_drop_unnamed(metrics_live_fn live, void *arg)
{
    struct live_names ln = {live, arg};
    return series_free_if(names_dead, &ln);
}

int
metrics_series_alarm(int *warned)
{
    int used = series_in_use();
    return series_use_alarm(warned, used, SHM_SERIES) ? used : -1;
}

int
metrics_gauge_latest(enum metric m, const char *l1, char *l2, size_t cap, double *value)
{
    struct shm_region *r = shm_region();
    int found = 0;
    series_walk_begin();
    for (int k = 0, n = r != NULL ? series_listed(r) : 0; k < n; k++) {
        int slot = series_ready_slot(r, k);
        const struct shm_series *s = slot >= 0 ? &r->series[slot] : NULL;
        if (s == NULL || s->metric != (int) m || s->proc != -1 ||
            !series_label_is(s->labels[0], l1 != NULL ? l1 : "")) {
            continue;
        }
        double v = bits_to_double(__atomic_load_n(&s->value, __ATOMIC_RELAXED));
        if (!found || v > *value) {
            *value = v;
            snprintf(l2, cap, "%s", s->labels[1]);
            found = 1;
        }
    }
    series_walk_end();
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
    int slot = series_ready_slot(r, k);
    return slot >= 0 && r->series[slot].metric == m ? &r->series[slot] : NULL;
}

/* Per-process gauges: the sum over processes of the series with the same
 * labels, printed once (at the first such series). */
static void
render_proc_gauge(struct buf *out, const struct shm_region *r, int m)
{
    int n = series_listed(r);
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
    for (int k = 0, n = series_listed(r); k < n; k++) {
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
    for (int i = 0, n = series_listed(r); i < n; i++) {
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
 * are copied first (series_copy_labels), and the line is left out when the copy
 * was torn, as the series was being dropped. */
static void
render_plain(struct buf *out, const struct shm_region *r, int m)
{
    char copy[3][SHM_LABEL];
    for (int i = 0, n = series_listed(r); i < n; i++) {
        const struct shm_series *s = ready_at(r, i, m);
        uint64_t v = 0;
        if (s == NULL || s->proc != -1 || (one[m] && series_copy_labels(s, copy, &v) != 0)) {
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

/* The series table's own gauges and counter, from the region's counters:
 * they take no slot, so they show even when the table is full. */
static void
render_table_use(struct buf *out, const struct shm_region *r)
{
    static const char unrecorded[] = "twice_metric_series_unrecorded_total";
    static const char used[] = "twice_metric_series";
    static const char capacity[] = "twice_metric_series_capacity";
    buf_printf(out,
               "# HELP %s Updates of new metric series not recorded: the instance's series "
               "table (%d) is full.\n# TYPE %s counter\n%s %llu\n",
               unrecorded, SHM_SERIES, unrecorded, unrecorded,
               (unsigned long long) __atomic_load_n(&r->series_unrecorded, __ATOMIC_RELAXED));
    buf_printf(out,
               "# HELP %s Slots of the instance's series table in use: series made and not "
               "freed.\n# TYPE %s gauge\n%s %d\n",
               used, used, used, series_in_use());
    buf_printf(out,
               "# HELP %s Slots the instance's series table has: past it, new series go "
               "unrecorded.\n# TYPE %s gauge\n%s %d\n",
               capacity, capacity, capacity, SHM_SERIES);
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
        render_table_use(out, r);
    }
    series_walk_begin();
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
    series_walk_end();
    return out->failed ? -1 : 0;
}
