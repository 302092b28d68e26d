/*
 * metrics.h - counters, gauges and histograms shared by all processes.
 *
 * The master maps one shared memory region before it starts workers; every
 * process adds to it with atomic operations, so counting costs no IPC and
 * the totals survive a worker's death and a reload (counters never go
 * backwards). Series are created on first use, keyed by metric and labels.
 * The master renders them in the Prometheus text format (metrics_render).
 */
#ifndef TWICE_METRICS_H
#define TWICE_METRICS_H

#include <stddef.h>
#include <stdint.h>

struct buf;

enum metric {
    MET_RECEIVED = 0,        /* counter: queue */
    MET_FINISHED,            /* counter: queue, plugin, outcome done|retry|rejected|deadlettered */
    MET_DEADLETTERED,        /* counter: queue, plugin, reason */
    MET_DUPLICATES,          /* counter: queue, plugin, kind completed|lease */
    MET_CONFLICTS,           /* counter: queue, plugin */
    MET_EXTENSIONS,          /* counter: queue */
    MET_SQS_REQUESTS,        /* counter: action, result ok|error|cancelled */
    MET_SQS_ERRORS,          /* counter: action, code */
    MET_PG_ERRORS,           /* counter: operation */
    MET_DLQ_DEPTH,           /* gauge (master): queue */
    MET_ALERTS,              /* counter: sink, result sent|failed */
    MET_RESTARTS,            /* counter: cause */
    MET_RECYCLED,            /* counter (master): reason rss|jobs */
    MET_RELOADS,             /* counter: result ok|failed */
    MET_INFLIGHT,            /* gauge, per process: queue, plugin */
    MET_DURATION,            /* histogram: queue, plugin */
    MET_P99,                 /* gauge (worker-published): queue, plugin */
    MET_LAST_RECEIVE,        /* gauge: queue; unix time of the last successful receive */
    MET_SPANS_EXPORTED,      /* counter: spans a collector accepted */
    MET_SPANS_DROPPED,       /* counter: reason buffer_full|export_failed|rejected|shutdown */
    MET_QUEUE_MESSAGES,      /* gauge (master): queue, state visible|in_flight|delayed */
    MET_MESSAGE_AGE,         /* histogram: queue; now - SentTimestamp at receive */
    MET_QUEUE_OLDEST_AGE,    /* gauge (master): queue; oldest waiting, as qstats.h estimates it */
    MET_AGE_WINDOW,          /* not rendered: queue; largest age since the master last took it */
    MET_EMPTY_WINDOW,        /* not rendered: queue; 1 when a long poll came back empty since */
    MET_OUTBOX_PENDING,      /* gauge (master): outbox rows waiting to be sent */
    MET_OUTBOX_OLDEST,       /* gauge (master): age of the oldest pending row, seconds */
    MET_OUTBOX_REFUSED_ROWS, /* gauge (master): rows SQS refused for good, kept */
    MET_OUTBOX_SENT,         /* counter: queue (the target as named), via relay|direct */
    MET_OUTBOX_REFUSED,      /* counter: queue; refused for good */
    MET_RATE_LIMITED,        /* counter of seconds: limit; jobs' waits for a rate-limit token */
    MET_QUEUE_PAUSED,        /* gauge (master): queue, reason; 1 while paused */
    MET_RECEIVE_FAILED,      /* not rendered: queue, code; unix time of the last failed receive */
    MET_CLAIMS_REFUSED,      /* not rendered: queue, SQLSTATE; unix time of the last claim check
                                the store refused (the receiver waits) */
    MET_COUNT_
};

/* Series live in the shared region of shm.h (shm_create / shm_attach);
 * before it is mapped every call is a no-op. proc_slot identifies this
 * process for per-process gauges (-1 in the master). */
void metrics_set_proc(int proc_slot);

/* Add n to a counter. Labels may be NULL where the metric has fewer. */
void metrics_count(enum metric m, const char *l1, const char *l2, const char *l3, uint64_t n);
/* Add seconds to a counter of seconds (MET_RATE_LIMITED). */
void metrics_count_seconds(enum metric m, const char *l1, double seconds);
/* Set / add to a gauge. Per-process gauges (MET_INFLIGHT) are summed over
 * live processes at render time. */
void metrics_gauge_set(enum metric m, const char *l1, const char *l2, double v);
void metrics_gauge_add(enum metric m, const char *l1, const char *l2, double delta);
/* Observe a value in seconds (a handler's duration, a message's age) in a
 * histogram; each histogram has its own buckets. */
void metrics_observe(enum metric m, const char *l1, const char *l2, double seconds);
/* The same for values[0..n) at once: a batch costs one update per bucket touched. */
void metrics_observe_many(enum metric m, const char *l1, const char *l2, const double *values,
                          size_t n);
/* Set the gauge (l1, l2) to v and drop every other series of m with that
 * l1 from the exposition: a gauge that shows one state per l1 (a queue's
 * pause reason), not every state it ever had. A dropped series is back
 * when set again; a new l2 takes over a dropped series' slot, so an l1
 * holds at most two slots whatever l2 values it shows over time (free
 * text, such as an operator's pause reason, included). Only for metrics
 * declared as such in metrics.c, and for the single writer of m's series. */
void metrics_gauge_only(enum metric m, const char *l1, const char *l2, double v);
/* Raise a gauge to v if it is below (any process; atomic). */
void metrics_gauge_max(enum metric m, const char *l1, const char *l2, double v);
/* A gauge's value, setting it to 0 in the same atomic step (0 when absent):
 * the master reads a window that workers fill with metrics_gauge_max. */
double metrics_gauge_take(enum metric m, const char *l1, const char *l2);

/* The second label of the series of m with first label l1 whose value is
 * the largest (the latest, for a gauge of times), into l2 (cap bytes), and
 * that value: 1, or 0 when there is none. For /readyz: why a queue's
 * receives fail (MET_RECEIVE_FAILED), or why it does not receive
 * (MET_CLAIMS_REFUSED). */
int metrics_gauge_latest(enum metric m, const char *l1, char *l2, size_t cap, double *value);

/* Whether a name is one some live configuration has: a plugin's when
 * plugin, else a queue's (metrics_drop_unnamed). */
typedef int (*metrics_live_fn)(void *arg, const char *name, int plugin);

/* Master: free the series whose queue or plugin label (a rate limit's
 * "plugin:NAME" or "queue:NAME" too) names a name live() does not know:
 * they leave /metrics and their slots take new series, so an instance
 * whose names change at each reload does not fill the table. Only once no
 * process can update such a series any more: every process whose
 * configuration had the name is gone (the master's threads are restarted
 * with the running configuration, workers of older generations exited).
 * A name configured again later starts its counters from 0, as after a
 * restart. Returns how many were freed, or -1 (the lock was not taken). */
int metrics_drop_unnamed(metrics_live_fn live, void *arg);

/* Master, each pass of its loop: the series table's slots in use (series
 * made and not freed, twice_metric_series) when that passed 90% of its
 * SHM_SERIES and the warning is due, else -1: due once, and again only after
 * use fell below 80%. *warned is the caller's state (0 at the start). */
int metrics_series_alarm(int *warned);

/* Master: forget a dead process's per-process gauges. */
void metrics_forget_proc(int proc_slot);
/* A gauge's current value (0 when absent): for readiness checks and tests. */
double metrics_gauge_get(enum metric m, const char *l1, const char *l2);
/* Render every series in the Prometheus text exposition format. */
int metrics_render(struct buf *out);

#endif
