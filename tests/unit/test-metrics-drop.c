/*
 * test-metrics-drop.c - the series of queue and plugin names no live
 * configuration has are freed (metrics_drop_unnamed): they leave /metrics,
 * the series of live names are still found however their probe chains ran
 * through the freed slots, freed slots take new series, and an instance
 * renamed at every reload, far more names than the table holds, never
 * fills it, also while other processes make and update series. The slots
 * in use (twice_metric_series) are counted as a scan of the table finds
 * them, and the warning of a table nearly full has its hysteresis. A real
 * shared region (shm_create).
 */
#include "buf.h"
#include "check.h"
#include "metrics.h"
#include "series.h"
#include "shm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* Live names: those starting with the prefix arg points at (plugins and
 * queues alike). */
static int
live_prefix(void *arg, const char *name, int plugin)
{
    (void) plugin;
    const char *prefix = arg;
    return strncmp(name, prefix, strlen(prefix)) == 0;
}

static const char *
render(struct buf *out)
{
    buf_reset(out);
    CHECK_INT(metrics_render(out), 0);
    return buf_str(out);
}

static int
listed(void)
{
    return __atomic_load_n(&shm_region()->series_listed, __ATOMIC_ACQUIRE);
}

/* The slots a scan of the whole table finds in use: made and not freed
 * (ready, dropped, being written or abandoned), tombstones not. */
static long
scanned_in_use(void)
{
    const struct shm_region *r = shm_region();
    long n = 0;
    for (int i = 0; i < SHM_SERIES; i++) {
        int st = __atomic_load_n(&r->series[i].state, __ATOMIC_ACQUIRE);
        n += st != 0 && st != SHM_SLOT_FREED;
    }
    return n;
}

/* twice_metric_series as /metrics shows it; -1 when it does not. */
static long
shown_in_use(struct buf *out)
{
    static const char name[] = "\ntwice_metric_series ";
    const char *line = strstr(render(out), name);
    return line != NULL ? strtol(line + strlen(name), NULL, 10) : -1;
}

/* Most of the table full, a series of a name to keep and one of a name to
 * free taking turns, so that the chains of the kept ones run through slots
 * that are freed: after the drop every kept series is found with its value,
 * none of the freed shows, and the freed slots take new series: more than
 * the table had left unused fit, none unrecorded. */
static void
test_chains_survive(struct buf *out)
{
    enum { N = 3500 }; /* 7000 of the 8192 slots */
    char name[32];
    int warned = 0;
    CHECK_INT(shown_in_use(out), 0); /* a new region: rendering takes no slot */
    CHECK_CONTAINS(render(out), "\ntwice_metric_series_capacity 8192\n");
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof(name), "keep-%d", i);
        metrics_gauge_set(MET_DLQ_DEPTH, name, NULL, i + 1);
        snprintf(name, sizeof(name), "old-%d", i);
        metrics_gauge_set(MET_DLQ_DEPTH, name, NULL, i + 1);
    }
    CHECK_INT(shown_in_use(out), 2 * N);
    CHECK_INT(scanned_in_use(), 2 * N);
    CHECK_INT(metrics_series_alarm(&warned), -1); /* 85%: not yet */
    CHECK_INT(metrics_drop_unnamed(live_prefix, "keep-"), N);
    CHECK_INT(shown_in_use(out), N);
    CHECK_INT(scanned_in_use(), N);
    int lost = 0;
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof(name), "keep-%d", i);
        lost += metrics_gauge_get(MET_DLQ_DEPTH, name, NULL) != i + 1;
        snprintf(name, sizeof(name), "old-%d", i);
        lost += metrics_gauge_get(MET_DLQ_DEPTH, name, NULL) != 0;
    }
    CHECK_INT(lost, 0);
    const char *text = render(out);
    CHECK(strstr(text, "queue=\"old-") == NULL);
    CHECK_CONTAINS(text, "twice_dlq_depth{queue=\"keep-0\"} 1\n");
    enum { NEW = N + 1000 }; /* 1192 slots were never used */
    for (int i = 0; i < NEW; i++) {
        snprintf(name, sizeof(name), "new-%d", i);
        metrics_gauge_set(MET_DLQ_DEPTH, name, NULL, 7);
    }
    CHECK_CONTAINS(render(out), "\ntwice_metric_series_unrecorded_total 0\n");
    CHECK(listed() <= SHM_SERIES);
    CHECK_INT(shown_in_use(out), N + NEW); /* 8000: freed slots taken again */
    CHECK_INT(scanned_in_use(), N + NEW);
    CHECK_INT(metrics_series_alarm(&warned), N + NEW); /* past 90%: said */
    CHECK_INT(metrics_series_alarm(&warned), -1);      /* once */
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof(name), "keep-%d", i);
        lost += metrics_gauge_get(MET_DLQ_DEPTH, name, NULL) != i + 1;
        snprintf(name, sizeof(name), "new-%d", i);
        lost += metrics_gauge_get(MET_DLQ_DEPTH, name, NULL) != 7;
    }
    for (int i = N; i < NEW; i++) {
        snprintf(name, sizeof(name), "new-%d", i);
        lost += metrics_gauge_get(MET_DLQ_DEPTH, name, NULL) != 7;
    }
    CHECK_INT(lost, 0);
    CHECK_INT(metrics_drop_unnamed(live_prefix, "none"), N + NEW);
    CHECK(strstr(render(out), "twice_dlq_depth{") == NULL);
    CHECK_INT(shown_in_use(out), 0);
    CHECK_INT(scanned_in_use(), 0);
    CHECK_INT(metrics_series_alarm(&warned), -1);
    CHECK_INT(warned, 0); /* below 80% again: the next pass past 90% is said */
}

/* What a label names: a plugin's series go with the plugin, a rate limit's
 * with its plugin or queue; the target queue of a follow-up message is any
 * queue and stays; a name back starts its counter from 0. */
static void
test_what_is_named(struct buf *out)
{
    metrics_count(MET_FINISHED, "live-q", "gone-p", "done", 5);
    metrics_count(MET_FINISHED, "live-q", "live-p", "done", 2);
    metrics_count_seconds(MET_RATE_LIMITED, "plugin:gone-p", 1.5);
    metrics_count_seconds(MET_RATE_LIMITED, "queue:live-q", 2.5);
    metrics_count(MET_OUTBOX_SENT, "gone-target", "relay", NULL, 3);
    metrics_observe(MET_DURATION, "gone-q", "live-p", 0.2);
    CHECK(metrics_drop_unnamed(live_prefix, "live-") >= 4);
    const char *text = render(out);
    CHECK(strstr(text, "gone-p") == NULL);
    CHECK(strstr(text, "gone-q") == NULL);
    CHECK_CONTAINS(text, "{queue=\"live-q\",plugin=\"live-p\",outcome=\"done\"} 2\n");
    CHECK_CONTAINS(text, "twice_rate_limited_seconds_total{limit=\"queue:live-q\"} 2.5\n");
    CHECK_CONTAINS(text, "twice_outbox_sent_total{queue=\"gone-target\",via=\"relay\"} 3\n");
    metrics_count(MET_FINISHED, "live-q", "gone-p", "done", 1);
    CHECK_CONTAINS(render(out), "{queue=\"live-q\",plugin=\"gone-p\",outcome=\"done\"} 1\n");
    CHECK_INT(shown_in_use(out), scanned_in_use());
}

/* An instance whose queue and plugin carry a version that changes at every
 * deploy: 60 reloads of ~30 series each (a histogram's included) make twice
 * as many series as the table holds, and none goes unrecorded. */
static void
test_renames_never_fill(struct buf *out)
{
    char queue[32], plugin[32], live[32];
    for (int v = 0; v < 600; v++) {
        snprintf(queue, sizeof(queue), "jobs-v%d", v);
        snprintf(plugin, sizeof(plugin), "jobs-v%d-handler", v);
        metrics_count(MET_RECEIVED, queue, NULL, NULL, 1);
        metrics_count(MET_FINISHED, queue, plugin, "done", 1);
        metrics_observe(MET_DURATION, queue, plugin, 0.01 * (v % 300));
        metrics_observe(MET_MESSAGE_AGE, queue, NULL, 0.1 * (v % 100));
        metrics_gauge_set(MET_LAST_RECEIVE, queue, NULL, v);
        snprintf(live, sizeof(live), "jobs-v%d", v);
        CHECK(metrics_drop_unnamed(live_prefix, live) >= 0);
    }
    const char *text = render(out);
    CHECK_CONTAINS(text, "\ntwice_metric_series_unrecorded_total 0\n");
    CHECK_CONTAINS(text, "twice_messages_received_total{queue=\"jobs-v599\"} 1\n");
    CHECK(strstr(text, "jobs-v598\"") == NULL);
    CHECK(listed() < SHM_SERIES);
    long used = shown_in_use(out);
    CHECK_INT(used, scanned_in_use());
    CHECK(used > 0 && used < 100); /* v599's and test_what_is_named's live series */
}

enum { KIDS = 3, CYCLES = 300, LIVE = 20 };

/* Each child's cycles done (shared): its churn names of earlier cycles are
 * no longer updated, and only those may be freed (metrics_drop_unnamed's
 * contract). */
static int *progress;

static int
live_or_done(void *arg, const char *name, int plugin)
{
    (void) arg;
    (void) plugin;
    int kid, cycle;
    if (sscanf(name, "churn-%d-%d", &kid, &cycle) == 2) {
        return cycle >= __atomic_load_n(&progress[kid], __ATOMIC_ACQUIRE);
    }
    return strncmp(name, "live-", 5) == 0 || strncmp(name, "keep-", 5) == 0;
}

/* Processes that count the same live series and make new ones, the same
 * ones at once too, while the master frees the old: no count is lost or
 * split between two series of one name, and each shows once. */
static void
test_concurrent_makers_and_frees(struct buf *out)
{
    progress =
        mmap(NULL, sizeof(int) * KIDS, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(progress != MAP_FAILED);
    memset(progress, 0, sizeof(int) * KIDS);
    pid_t kids[KIDS];
    char name[32];
    for (int k = 0; k < KIDS; k++) {
        kids[k] = fork();
        if (kids[k] == 0) {
            for (int c = 0; c < CYCLES; c++) {
                for (int i = 0; i < LIVE; i++) {
                    snprintf(name, sizeof(name), "live-%d", i);
                    metrics_count(MET_RECEIVED, name, NULL, NULL, 1);
                }
                snprintf(name, sizeof(name), "keep-%d", c); /* made by all at once */
                metrics_count(MET_RECEIVED, name, NULL, NULL, 1);
                for (int i = 0; i < 10; i++) {
                    snprintf(name, sizeof(name), "churn-%d-%d", k, c);
                    metrics_count(MET_FINISHED, name, "p", i % 2 ? "done" : "retry", 1);
                }
                __atomic_store_n(&progress[k], c + 1, __ATOMIC_RELEASE);
            }
            _exit(0);
        }
    }
    int running = KIDS;
    while (running > 0) {
        CHECK(metrics_drop_unnamed(live_or_done, NULL) >= 0);
        running = 0;
        for (int k = 0; k < KIDS; k++) {
            running += __atomic_load_n(&progress[k], __ATOMIC_ACQUIRE) < CYCLES;
        }
    }
    for (int k = 0; k < KIDS; k++) {
        int status;
        CHECK(waitpid(kids[k], &status, 0) == kids[k] && WIFEXITED(status) &&
              WEXITSTATUS(status) == 0);
    }
    const char *text = render(out);
    CHECK_CONTAINS(text, "\ntwice_metric_series_unrecorded_total 0\n");
    char want[96];
    for (int i = 0; i < LIVE; i++) {
        snprintf(want, sizeof(want), "twice_messages_received_total{queue=\"live-%d\"} ", i);
        const char *line = strstr(text, want);
        CHECK(line != NULL && strstr(line + 1, want) == NULL); /* one series */
        CHECK(line != NULL && strtol(line + strlen(want), NULL, 10) == KIDS * CYCLES);
    }
    int split = 0;
    for (int c = 0; c < CYCLES; c++) {
        snprintf(want, sizeof(want), "twice_messages_received_total{queue=\"keep-%d\"} ", c);
        const char *line = strstr(text, want);
        split += line == NULL || strstr(line + 1, want) != NULL ||
                 strtol(line + strlen(want), NULL, 10) != KIDS;
    }
    CHECK_INT(split, 0);
    CHECK_INT(shown_in_use(out), scanned_in_use());       /* made and freed by four processes */
    CHECK(metrics_drop_unnamed(live_or_done, NULL) >= 0); /* every churn name done */
    CHECK_INT(shown_in_use(out), scanned_in_use());
    munmap(progress, sizeof(int) * KIDS);
}

/* The warning of a table nearly full: past 90% once, again only after use
 * fell below 80%, so that a use hovering around the mark is said once. */
static void
test_use_alarm(void)
{
    int warned = 0;
    CHECK_INT(series_use_alarm(&warned, 90, 100), 0); /* at 90%, not past it */
    CHECK_INT(series_use_alarm(&warned, 91, 100), 1);
    CHECK_INT(warned, 1);
    CHECK_INT(series_use_alarm(&warned, 100, 100), 0); /* said already */
    CHECK_INT(series_use_alarm(&warned, 80, 100), 0);  /* not below 80% */
    CHECK_INT(series_use_alarm(&warned, 95, 100), 0);
    CHECK_INT(warned, 1);
    CHECK_INT(series_use_alarm(&warned, 79, 100), 0);
    CHECK_INT(warned, 0);
    CHECK_INT(series_use_alarm(&warned, 91, 100), 1); /* past 90% again: said again */
    warned = 0;
    CHECK_INT(series_use_alarm(&warned, 7372, SHM_SERIES), 0); /* 89.99% of the table */
    CHECK_INT(series_use_alarm(&warned, 7373, SHM_SERIES), 1);
}

int
main(void)
{
    if (shm_create() < 0) {
        perror("shm_create");
        return 1;
    }
    struct buf out = BUF_INIT;
    test_chains_survive(&out);
    test_what_is_named(&out);
    test_renames_never_fill(&out);
    test_concurrent_makers_and_frees(&out);
    test_use_alarm();
    buf_free(&out);
    return check_done("test-metrics-drop");
}
