/*
 * test-shm-pages.c - what the shared region costs in memory: a fresh region,
 * the master's walks over its worker slots and a scrape or a worker's exit
 * (which walk every metric series) keep resident only the pages of what
 * exists, not the whole 92 MB region; what those walks return is right; and
 * labels longer than what is kept name one series, cut at a whole UTF-8
 * character, and render as UTF-8 whatever their bytes.
 * One process, a real shared region (shm_create), residency from mincore.
 */
#include "buf.h"
#include "check.h"
#include "resident.h"
#include "metrics.h"
#include "shm.h"
#include "utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static void
test_fresh_region(const struct shm_region *r)
{
    /* 600 slots of 148 KB of jobs each: none resident before a worker runs
     * (but the page the jobs share with the end of the slots' flags). */
    CHECK(resident_pages(r->jobs, sizeof(r->jobs)) <= 1);
    CHECK(resident_pages(r->series, sizeof(r->series)) == 0);
    /* Every slot starts with no crashed job. */
    CHECK_INT(r->procs[0].crashed_job, -1);
    CHECK_INT(r->procs[SHM_PROCS - 1].crashed_job, -1);
}

static void
test_jobs_of_one_slot(const struct shm_region *r)
{
    /* One record per handler thread, as many as a worker may have. */
    CHECK_INT(shm_jobs_count(7), 0);
    CHECK_INT(shm_jobs_grow(7, 3), 0);
    CHECK_INT(shm_jobs_grow(7, 2), 0); /* never shrinks while the worker lives */
    CHECK_INT(shm_jobs_count(7), 3);
    CHECK_INT(shm_jobs_grow(7, SHM_JOBS + 1), -1);
    CHECK_INT(shm_jobs_count(7), 3);
    int idx = shm_job_begin(7, 2, 0, 0, "m-1", 1);
    CHECK_INT(idx, 2);
    CHECK_STR(r->jobs[7].job[2].message_id, "m-1");
    CHECK_INT(r->jobs[7].job[2].used, 2);
    CHECK_INT(r->jobs[7].job[0].used, 0);
    shm_job_end(7, idx);
    CHECK_INT(r->jobs[7].job[2].used, 0);
    CHECK_INT(shm_job_begin(7, SHM_JOBS, 0, 0, "m-2", 1), -1);
    CHECK_INT(shm_job_begin(7, SHM_JOBS - 1, 0, 0, "m-3", 1), SHM_JOBS - 1);
    shm_job_end(7, SHM_JOBS - 1);
    /* Only the pages of slot 7's two records (the last may straddle two), and
     * the one the jobs share with the flags. */
    CHECK(resident_pages(r->jobs, sizeof(r->jobs)) <= 4);
}

static void
test_walks_touch_what_exists(const struct shm_region *r)
{
    char code[32];
    for (int i = 0; i < 40; i++) {
        snprintf(code, sizeof(code), "Code%d", i);
        metrics_count(MET_SQS_ERRORS, "ReceiveMessage", code, NULL, (uint64_t) i + 1);
    }
    metrics_set_proc(3);
    metrics_gauge_set(MET_INFLIGHT, "q", "p", 5);
    metrics_set_proc(4);
    metrics_gauge_set(MET_INFLIGHT, "q", "p", 2);
    metrics_set_proc(-1);
    CHECK_INT(r->series_listed, 42);

    struct buf out = BUF_INIT;
    CHECK_INT(metrics_render(&out), 0);
    const char *text = buf_str(&out);
    CHECK(strstr(text, "twice_sqs_errors_total{action=\"ReceiveMessage\",code=\"Code0\"} 1\n") !=
          NULL);
    CHECK(strstr(text, "twice_sqs_errors_total{action=\"ReceiveMessage\",code=\"Code39\"} 40\n") !=
          NULL);
    /* Per-process gauges are summed over the processes, printed once. */
    CHECK(strstr(text, "twice_jobs_in_flight{queue=\"q\",plugin=\"p\"} 7\n") != NULL);
    buf_free(&out);

    /* A worker's exit zeroes its own gauges only. */
    metrics_forget_proc(3);
    out = (struct buf) BUF_INIT;
    CHECK_INT(metrics_render(&out), 0);
    CHECK(strstr(buf_str(&out), "twice_jobs_in_flight{queue=\"q\",plugin=\"p\"} 2\n") != NULL);
    buf_free(&out);

    /* 42 series (312 bytes each, hashed over 610 pages): at most a page
     * each, where a walk of the whole table would make all 610 resident. */
    long pages = resident_pages(r->series, sizeof(r->series));
    CHECK(pages > 0 && pages <= 42);
    if (pages > 42) {
        fprintf(stderr, "  series table: %ld pages resident\n", pages);
    }
}

static void
test_long_labels(const struct shm_region *r)
{
    /* A label is kept cut to SHM_LABEL - 1 bytes: values that differ only
     * past that are one series; a value and its prefix are two. */
    char a[200], b[200];
    memset(a, 'x', sizeof(a) - 1);
    a[sizeof(a) - 1] = '\0';
    memcpy(b, a, sizeof(b));
    b[150] = 'y';
    int before = r->series_listed;
    metrics_count(MET_SQS_ERRORS, "SendMessage", a, NULL, 1);
    metrics_count(MET_SQS_ERRORS, "SendMessage", b, NULL, 1);
    CHECK_INT(r->series_listed, before + 1);
    a[SHM_LABEL - 2] = '\0'; /* one byte shorter than what is kept */
    metrics_count(MET_SQS_ERRORS, "SendMessage", a, NULL, 1);
    CHECK_INT(r->series_listed, before + 2);
    struct buf out = BUF_INIT;
    CHECK_INT(metrics_render(&out), 0);
    char want[300];
    snprintf(want, sizeof(want), "code=\"%.*s\"} 2\n", SHM_LABEL - 1, b);
    CHECK(strstr(buf_str(&out), want) != NULL);
    buf_free(&out);
}

/* A label cut where it would split a UTF-8 character keeps none of that
 * character, and bytes that are no UTF-8 (an SQS error code is the
 * server's text) render as U+FFFD: /metrics stays UTF-8, which Prometheus
 * requires of a whole scrape. */
static void
test_labels_stay_utf8(const struct shm_region *r)
{
    char euro[200] = "e";
    for (size_t i = 1; i + 3 < sizeof(euro); i += 3) {
        memcpy(euro + i, "\xe2\x82\xac", 3); /* 1 + 3k bytes: SHM_LABEL - 1 splits one */
        euro[i + 3] = '\0';
    }
    CHECK((SHM_LABEL - 1 - 1) % 3 != 0);
    int before = r->series_listed;
    metrics_count(MET_SQS_ERRORS, "Utf8Cut", euro, NULL, 1);
    metrics_count(MET_SQS_ERRORS, "Utf8Cut", euro, NULL, 1); /* the same series */
    CHECK_INT(r->series_listed, before + 1);
    metrics_count(MET_SQS_ERRORS, "NotUtf8", "bad\xff\xc3(", NULL, 1);
    struct buf out = BUF_INIT;
    CHECK_INT(metrics_render(&out), 0);
    const char *text = buf_str(&out);
    CHECK(utf8_valid(text, out.len));
    char want[300];
    int whole = (SHM_LABEL - 1 - 1) / 3;
    snprintf(want, sizeof(want), "action=\"Utf8Cut\",code=\"%.*s\"} 2\n", 1 + 3 * whole, euro);
    CHECK(strstr(text, want) != NULL);
    CHECK(strstr(text, "code=\"bad\xef\xbf\xbd\xef\xbf\xbd(\"} 1\n") != NULL);
    buf_free(&out);
}

int
main(void)
{
    if (shm_create() < 0) {
        perror("shm_create");
        return 1;
    }
    const struct shm_region *r = shm_region();
    test_fresh_region(r);
    test_jobs_of_one_slot(r);
    test_walks_touch_what_exists(r);
    test_long_labels(r);
    test_labels_stay_utf8(r);
    return check_done("test-shm-pages");
}
