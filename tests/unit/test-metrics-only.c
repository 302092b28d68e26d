/*
 * test-metrics-only.c - a gauge that shows one state per first label
 * (metrics_gauge_only, as twice_queue_paused{queue,reason}): setting one
 * reason drops the queue's other reasons from /metrics and from reads,
 * leaves other queues alone, and a dropped series comes back when set;
 * however many reasons a queue shows over time, it holds two series slots;
 * a full table counts what it could not record.
 * One process, a real shared region (shm_create).
 */
#include "buf.h"
#include "check.h"
#include "metrics.h"
#include "shm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How many twice_queue_paused samples /metrics shows. */
static int
paused_lines(struct buf *out)
{
    int n = 0;
    buf_reset(out);
    CHECK_INT(metrics_render(out), 0);
    for (const char *p = buf_str(out); (p = strstr(p, "\ntwice_queue_paused{")) != NULL; p++) {
        n++;
    }
    return n;
}

/* A long-lived instance whose operators pause and resume a queue with a
 * new free-text reason each time: the queue keeps at most two series slots
 * of the 8192 (each reason once took a slot for good, and when they were
 * spent no new series, of any metric, could be made), and /metrics still
 * shows its one series. */
static void
test_reasons_bounded(struct buf *out)
{
    const struct shm_region *r = shm_region();
    int before = __atomic_load_n(&r->series_listed, __ATOMIC_ACQUIRE);
    char reason[64];
    for (int i = 0; i < SHM_SERIES + 100; i++) {
        snprintf(reason, sizeof(reason), "deploy %d", i);
        metrics_gauge_only(MET_QUEUE_PAUSED, "jobs", reason, 1);
        metrics_gauge_only(MET_QUEUE_PAUSED, "jobs", "", 0);
    }
    CHECK(__atomic_load_n(&r->series_listed, __ATOMIC_ACQUIRE) <= before + 2);
    metrics_gauge_only(MET_QUEUE_PAUSED, "jobs", "the last", 1);
    CHECK_INT(paused_lines(out), 2);
    CHECK_CONTAINS(buf_str(out), "twice_queue_paused{queue=\"jobs\",reason=\"the last\"} 1\n");
    CHECK_INT(metrics_gauge_get(MET_QUEUE_PAUSED, "jobs", "the last"), 1);
    CHECK_INT(metrics_gauge_get(MET_QUEUE_PAUSED, "jobs", "deploy 7"), 0);
    /* Room is left for the series of everything else. */
    metrics_count(MET_RECEIVED, "jobs", NULL, NULL, 3);
    buf_reset(out);
    CHECK_INT(metrics_render(out), 0);
    CHECK_CONTAINS(buf_str(out), "twice_messages_received_total{queue=\"jobs\"} 3\n");
}

/* A table with no slot left: a new series is not made, each update of one
 * is counted on /metrics (twice_metric_series_unrecorded_total), and the
 * series that exist still count. Last: it fills the region. */
static void
test_full_table_is_counted(struct buf *out)
{
    char queue[32];
    for (int i = 0; i < SHM_SERIES; i++) {
        snprintf(queue, sizeof(queue), "q%d", i);
        metrics_count(MET_RECEIVED, queue, NULL, NULL, 1);
    }
    buf_reset(out);
    CHECK_INT(metrics_render(out), 0);
    static const char name[] = "\ntwice_metric_series_unrecorded_total ";
    const char *line = strstr(buf_str(out), name);
    CHECK(line != NULL);
    long before = line != NULL ? strtol(line + strlen(name), NULL, 10) : -1;
    CHECK(before > 0); /* the series made before this test took some of the slots */
    metrics_count(MET_RECEIVED, "one more", NULL, NULL, 1);
    metrics_count(MET_RECEIVED, "one more", NULL, NULL, 1);
    metrics_count(MET_RECEIVED, "jobs", NULL, NULL, 1);
    buf_reset(out);
    CHECK_INT(metrics_render(out), 0);
    char want[96];
    snprintf(want, sizeof(want), "\ntwice_metric_series_unrecorded_total %ld\n", before + 2);
    CHECK_CONTAINS(buf_str(out), want);
    CHECK(strstr(buf_str(out), "queue=\"one more\"") == NULL);
    CHECK_CONTAINS(buf_str(out), "twice_messages_received_total{queue=\"jobs\"} 4\n");
}

int
main(void)
{
    if (shm_create() < 0) {
        perror("shm_create");
        return 1;
    }
    struct buf out = BUF_INIT;
    metrics_gauge_only(MET_QUEUE_PAUSED, "jobs", "", 0);
    metrics_gauge_only(MET_QUEUE_PAUSED, "other", "maintenance", 1);
    CHECK_INT(paused_lines(&out), 2);

    metrics_gauge_only(MET_QUEUE_PAUSED, "jobs", "first", 1);
    CHECK_INT(paused_lines(&out), 2);
    CHECK_CONTAINS(buf_str(&out), "twice_queue_paused{queue=\"jobs\",reason=\"first\"} 1\n");
    CHECK(strstr(buf_str(&out), "reason=\"\"") == NULL);
    CHECK_INT(metrics_gauge_get(MET_QUEUE_PAUSED, "jobs", ""), 0);

    metrics_gauge_only(MET_QUEUE_PAUSED, "jobs", "second", 1);
    CHECK_INT(paused_lines(&out), 2);
    CHECK(strstr(buf_str(&out), "reason=\"first\"") == NULL);
    CHECK_CONTAINS(buf_str(&out), "twice_queue_paused{queue=\"jobs\",reason=\"second\"} 1\n");
    /* The other queue is not touched. */
    CHECK_CONTAINS(buf_str(&out),
                   "twice_queue_paused{queue=\"other\",reason=\"maintenance\"} 1\n");

    /* Back to one seen before: the dropped series returns, with the new value. */
    metrics_gauge_only(MET_QUEUE_PAUSED, "jobs", "", 0);
    CHECK_INT(paused_lines(&out), 2);
    CHECK_CONTAINS(buf_str(&out), "twice_queue_paused{queue=\"jobs\",reason=\"\"} 0\n");
    CHECK(strstr(buf_str(&out), "reason=\"second\"") == NULL);
    metrics_gauge_only(MET_QUEUE_PAUSED, "jobs", "first", 1);
    CHECK_INT(metrics_gauge_get(MET_QUEUE_PAUSED, "jobs", "first"), 1);
    CHECK_INT(paused_lines(&out), 2);
    test_reasons_bounded(&out);
    test_full_table_is_counted(&out);
    buf_free(&out);
    return check_done("test-metrics-only");
}
