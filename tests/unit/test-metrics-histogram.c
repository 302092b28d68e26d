/*
 * test-metrics-histogram.c - a histogram scraped while workers observe into
 * it stays a histogram: no bucket above +Inf, and +Inf equal to _count. One
 * thread observes as a worker's handlers do, the main thread renders /metrics
 * as the master's HTTP thread does, on a real shared region.
 */
#include "buf.h"
#include "check.h"
#include "metrics.h"
#include "shm.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SERIES "twice_handler_duration_seconds_bucket{queue=\"q\",plugin=\"p\",le=\""

static atomic_int stop;

static void *
observer(void *arg)
{
    (void) arg;
    while (!atomic_load(&stop)) {
        metrics_observe(MET_DURATION, "q", "p", 0.001); /* the first bucket */
    }
    return NULL;
}

/* The value after name in text, or -1 when it is not there. */
static long long
value_of(const char *text, const char *name)
{
    const char *p = strstr(text, name);
    return p != NULL ? strtoll(p + strlen(name), NULL, 10) : -1;
}

static void
test_scrapes_while_observing(void)
{
    metrics_observe(MET_DURATION, "q", "p", 0.001); /* the series exist */
    pthread_t t;
    CHECK_INT(pthread_create(&t, NULL, observer, NULL), 0);
    int bad = 0, scrapes = 0;
    for (; scrapes < 20000 && bad == 0; scrapes++) {
        struct buf out = BUF_INIT;
        CHECK_INT(metrics_render(&out), 0);
        const char *text = buf_str(&out);
        long long first = value_of(text, SERIES "0.005\"} ");
        long long inf = value_of(text, SERIES "+Inf\"} ");
        long long count = value_of(text, "twice_handler_duration_seconds_count{queue=\"q\","
                                         "plugin=\"p\"} ");
        if (first < 1 || first > inf || inf != count) {
            fprintf(stderr, "scrape %d: le=0.005 %lld, +Inf %lld, _count %lld\n", scrapes, first,
                    inf, count);
            bad++;
        }
        buf_free(&out);
    }
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    CHECK_INT(bad, 0);
}

int
main(void)
{
    if (shm_create() < 0) {
        perror("shm_create");
        return 1;
    }
    test_scrapes_while_observing();
    return check_done("test-metrics-histogram");
}
