/*
 * test-metrics-only.c - a gauge that shows one state per first label
 * (metrics_gauge_only, as twice_queue_paused{queue,reason}): setting one
 * reason drops the queue's other reasons from /metrics and from reads,
 * leaves other queues alone, and a dropped series comes back when set.
 * One process, a real shared region (shm_create).
 */
#include "buf.h"
#include "check.h"
#include "metrics.h"
#include "shm.h"

#include <stdio.h>
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
    buf_free(&out);
    return check_done("test-metrics-only");
}
